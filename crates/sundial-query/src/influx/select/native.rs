//! InfluxQL aggregates answered straight from storage, without DataFusion.
//!
//! Why by hand: the TSBS queries (and most dashboard panels) are `count/sum/mean/min/max/first/last`
//! of float and integer fields, grouped by tags and a `time()` bucket, over a tag condition and a time
//! range. Through DataFusion each costs a SQL parse, a session, logical and physical planning and a two-phase hash
//! aggregate: about 2 ms before the first row is read, which is the whole latency of a one-host rollup
//! (360 rows). Here the series are chosen from the tag index, each series' rows are read once, and
//! rows are folded into per-(group, bucket) accumulators run by run (rows are time-sorted, so a bucket
//! is a run). This is Sundial's edge over a general SQL engine, so it is ours to write.
//!
//! The answer is the very rows the SQL of [`super::Ctx::aggregate`] would return (same columns, same
//! values; float sums may differ in the last bits from the order of addition), so everything after it,
//! InfluxQL's shaping, is shared. Raw statements whose condition is on tags and on numeric fields
//! compared with numbers (TSBS's lastpoint and high-cpu, `SELECT * ... WHERE host = 'a' AND
//! usage > 90`) are read here too ([`plan_raw`]): the tags decide per series, the field comparisons
//! per row. A statement outside this shape (an aggregate with a field in the condition, another
//! function, an unsigned, string or boolean field) gets `None` from [`plan`] and takes the SQL path.
//! The differential test in `tests` runs random statements both ways.

use std::cmp::Ordering;
use std::sync::Arc;

use regex::Regex;
use sundial_storage::Engine;
use sundial_storage::engine::{HourFilter, LastRow, Piece, TailSnapshot};
use sundial_storage::hours::{HOUR_NS, HourCol, HourStats};
use sundial_storage::catalog::{Catalog, ColId, ColumnKind, DbId, SeriesId, TableCatalog, TableId};
use sundial_storage::rows::RowsRef;
use sundial_storage::segment::BlockMeta;
use sundial_storage::types::{Column, ColumnValues, FieldType, Value};

use super::{Call, FlatRows, Func, bucket_start, compile};
use crate::influx::{RESULT_ROWS_MAX, too_many_rows};
use crate::influx::cell::{ArcStr, Cell};
use crate::influx::values::{Chunk, NO_CODE};
use crate::influx::cond::{ColKind, TableInfo, TimeRange, flip};
use crate::influxql::{BinaryOp, Expr};

/// A statement's read whose rest, projected from its first series ([`in_parts`]), would take less than
/// this runs on the calling task alone: another thread is woken only for work that outlasts its waking.
/// Waking an idle thread on this machine (a virtual one, whose idle cores sleep in the host) and
/// joining it cost 0.1–0.25 ms: TSBS's 8-host one-hour rollup (2,880 rows) took 0.62 ms split over two
/// threads and 0.40 ms on one.
const PARALLEL_MIN_WORK: std::time::Duration = std::time::Duration::from_micros(300);
/// The share of the series read first, on the calling task, to project the rest's time from.
const PROBE_SHARE: usize = 16;
/// Statements planned here (the differential test checks it answered them, not the SQL path).
#[cfg(test)]
pub(super) static PLANNED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Statements whose read was narrowed to their first buckets ([`head_bound`]).
#[cfg(test)]
pub(super) static NARROWED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Hours folded from blocks' hour statistics instead of their rows.
#[cfg(test)]
pub(super) static HOURS_FOLDED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Runs of a pack's series folded as one (`merge_members` in [`fold`]), and runs folded series by
/// series from a pack piece.
#[cfg(test)]
pub(super) static PACK_RUNS_MERGED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
#[cfg(test)]
pub(super) static PACK_RUNS_ALONE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Hours of blocks a raw read left unread, their statistics ruling out the condition (tests).
#[cfg(test)]
pub(super) static HOURS_SKIPPED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// `GROUP BY time()` answers written from the accumulators (`Ctx::folded_series`), not from rows.
#[cfg(test)]
pub(super) static WRITTEN_FROM_FOLDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Of those, answers made by two threads, half the groups each (`FOLDED_PARALLEL_ROWS_MIN`).
#[cfg(test)]
pub(super) static WRITTEN_IN_HALVES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Raw statements answered as a [`SeriesTable`](crate::influx::SeriesTable) ([`run_last_table`]).
#[cfg(test)]
pub(super) static TABLED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Narrowed statements whose answer did not start at the bound, read again whole.
#[cfg(test)]
pub(super) static WIDENED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The most (group, bucket) slots a fold reserves room for up front (more grow as they come). TSBS's
/// double-groupby at 4,000 hosts is 52,000 slots (12 hours and a partial one each): at 2^14 their vectors
/// grew twice, copied into fresh pages (5 % of double-groupby-1's CPU). Room reserved and not written
/// costs address space only.
const FOLD_SLOTS_RESERVED_MAX: usize = 1 << 17;
/// The most (group, bucket) pairs of a bounded range whose slots are found by position rather than
/// hashed ([`SlotIndex::Dense`]): 4 MiB of index.
const FOLD_DENSE_SLOTS_MAX: usize = 1 << 20;
/// Blocking tasks per statement: the cores of the machine the benchmarks run on. More would only
/// queue behind each other; concurrent statements already share the cores.
const TASKS: usize = 2;

/// What the statement needs, resolved against the catalog: which series, in which group, and how to
/// fold their rows.
pub(super) struct Plan {
    /// The fields are those the calls read, in the order of the SQL's guard columns (`fields_used`).
    scope: Scope,
    bucket: Option<(i64, i64)>,
    need: Vec<Need>,
    /// Per call: its function and the index of its field in `fields`.
    calls: Vec<(Func, usize)>,
    /// The single-selector form: min/max/first/last also answer the time of the selected point.
    with_time: bool,
    /// No `GROUP BY`: one group that exists even with no rows; its guard is one count per field.
    global: bool,
    /// Parallel to `scope.series`: the group of each series, and its rank among the series by the tags not
    /// grouped on (ascending, a missing tag last), which breaks first()/last() ties between series.
    group_of: Vec<u32>,
    rank: Vec<u32>,
    /// Per group: the cells of the grouped tags (a string, or null for a series without the tag).
    groups: Vec<Vec<Cell>>,
    /// Blocks' hour statistics can stand for their rows ([`TableSnapshot::scan_folds`]): no call needs
    /// a point's time or the first/last row, and every hour lies inside one bucket.
    hourly: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct Need {
    sum: bool,
    mean: bool,
    min: bool,
    max: bool,
    first: bool,
    last: bool,
}

/// What a statement reads, whatever it computes: one measurement, its `WHERE` and the time range
/// taken out of it.
pub(super) struct Source<'a> {
    pub db: &'a str,
    pub table: &'a str,
    pub info: &'a TableInfo,
    pub condition: Option<&'a Expr>,
    pub range: TimeRange,
}

/// What [`Source`] resolves to against the catalog: the series to read, the time bounds and the field
/// columns, in the storage's terms.
struct Scope {
    db: DbId,
    table: TableId,
    lo: i64,
    hi: i64,
    fields: Vec<(ColId, FieldType)>,
    /// Ascending.
    series: Vec<SeriesId>,
}

/// The statement's parts that decide the rows, as [`super::Ctx::aggregate`] has them.
pub(super) struct Shape<'a> {
    pub source: Source<'a>,
    pub bucket: Option<(i64, i64)>,
    pub present_tags: &'a [&'a String],
    pub group_tags: &'a [String],
    pub fields_used: &'a [&'a str],
    pub calls: &'a [Call],
    pub with_time: bool,
}

/// The plan of a statement this module answers, or `None` when it must go through SQL.
pub(super) fn plan(engine: &Engine, shape: &Shape) -> Option<Plan> {
    let foldable = |c: &Call| {
        matches!(c.func, Func::Count | Func::Sum | Func::Mean | Func::Min | Func::Max | Func::First | Func::Last)
            && c.field.as_ref().is_some_and(|f| matches!(shape.source.info.fields.get(f), Some(FieldType::Float | FieldType::Integer)))
    };
    if !shape.calls.iter().all(foldable) {
        return None;
    }
    let cat = engine.catalog();
    let (scope, t, _) = resolve(&cat, &shape.source, shape.fields_used, false)?;
    let series = &scope.series;
    let mut need = vec![Need::default(); scope.fields.len()];
    let mut calls = Vec::with_capacity(shape.calls.len());
    for c in shape.calls {
        let i = shape.fields_used.iter().position(|f| Some(*f) == c.field.as_deref())?;
        let n = &mut need[i];
        match c.func {
            Func::Sum => n.sum = true,
            Func::Mean => n.mean = true,
            Func::Min => n.min = true,
            Func::Max => n.max = true,
            Func::First => n.first = true,
            Func::Last => n.last = true,
            _ => {}
        }
        calls.push((c.func, i));
    }

    let group_cols: Vec<ColId> = shape.present_tags.iter().map(|n| t.column(n).map(|c| c.id)).collect::<Option<_>>()?;
    let tie_cols: Vec<ColId> = shape
        .source
        .info
        .tags
        .iter()
        .filter(|n| !shape.group_tags.contains(n))
        .map(|n| t.column(n).map(|c| c.id))
        .collect::<Option<_>>()?;
    let global = group_cols.is_empty() && shape.bucket.is_none();
    // Groups found by the tags' dictionary codes (a series' tags cost no string hashing: 4,000 hosts'
    // keys hashed as strings with SipHash were a tenth of an hourly rollup's planning), the strings
    // looked up once per group.
    let dicts: Vec<_> = group_cols.iter().map(|c| t.tag_dict(*c)).collect();
    let mut index: foldhash::HashMap<Vec<Option<u32>>, u32> = foldhash::HashMap::default();
    let mut groups: Vec<Vec<Cell>> = Vec::new();
    if global {
        groups.push(Vec::new());
    }
    let mut group_of = Vec::with_capacity(series.len());
    let mut key: Vec<Option<u32>> = Vec::with_capacity(group_cols.len());
    if group_cols.is_empty() {
        // No GROUP BY tags: every series in one group, without hashing an empty key per series (7 % of
        // a count over 10 M series).
        if groups.is_empty() && !series.is_empty() {
            groups.push(Vec::new());
        }
        group_of.resize(series.len(), 0);
    } else {
        for s in series {
            key.clear();
            key.extend(group_cols.iter().map(|c| t.series_tag_code(*s, *c)));
            let g = match index.get(key.as_slice()) {
                Some(g) => *g,
                None => {
                    let g = index.len() as u32;
                    let cells = key.iter().zip(&dicts).map(|(code, dict)| match code.zip(*dict).and_then(|(code, d)| d.value(code)) {
                        Some(v) => Cell::String(v.into()),
                        None => Cell::Null,
                    });
                    groups.push(cells.collect());
                    index.insert(key.clone(), g);
                    g
                }
            };
            group_of.push(g);
        }
    }
    let mut rank = vec![0u32; series.len()];
    if need.iter().any(|n| n.first || n.last) && !tie_cols.is_empty() {
        let keys: Vec<Vec<Option<&str>>> =
            series.iter().map(|s| tie_cols.iter().map(|c| t.series_tag_value(*s, *c)).collect()).collect();
        let mut order: Vec<usize> = (0..series.len()).collect();
        order.sort_by(|a, b| nulls_last(&keys[*a], &keys[*b]));
        for (r, i) in order.into_iter().enumerate() {
            rank[i] = r as u32;
        }
    }
    let hourly = !shape.with_time
        && need.iter().all(|n| !n.first && !n.last)
        && shape.bucket.is_none_or(|(interval, offset)| interval % HOUR_NS == 0 && offset.rem_euclid(HOUR_NS) == 0);
    #[cfg(test)]
    PLANNED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Some(Plan {
        hourly,
        scope,
        bucket: shape.bucket,
        need,
        calls,
        with_time: shape.with_time,
        global,
        group_of,
        rank,
        groups,
    })
}

/// For a plan grouped by `time()`: its first `buckets` buckets, counted from the earliest row the
/// storage knows of (see `Ctx::head_buckets`), as (where they start, the last time in them). `None`:
/// nothing to narrow.
fn head_bound(engine: &Engine, plan: &Plan, buckets: u64) -> Option<(i64, i64)> {
    let (interval, offset) = plan.bucket?;
    let sc = &plan.scope;
    let t = engine.earliest_bound(sc.db, sc.table, &sc.series, sc.lo, sc.hi).ok()??;
    let first = bucket_start(t, interval, offset);
    let end = first.checked_add(interval.checked_mul(i64::try_from(buckets).ok()?)?)?;
    Some((first, sc.hi.min(end - 1)))
}

/// Resolves what both kinds of plan read: the series the condition selects, the time bounds and the
/// named fields' ids and types, with the table for the caller's own lookups and the condition. With
/// `field_conditions`, comparisons of a float or integer field with a number are kept for the rows
/// (their fields appended to `Scope::fields` after `fields`); without, a condition on a field gives
/// `None`, as does a measurement that is gone.
fn resolve<'c>(cat: &'c Catalog, src: &Source, fields: &[&str], field_conditions: bool) -> Option<(Scope, &'c TableCatalog, Pred)> {
    let d = cat.db(src.db)?;
    let t = d.table(src.table)?;
    let mut names: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
    let mut cx = CondFields { allowed: field_conditions, names: &mut names };
    let pred = match src.condition {
        Some(e) => split(e, src.info, t, &mut cx)?,
        None => Pred::Const(true),
    };
    let fields = names
        .iter()
        .map(|f| {
            let c = t.column(f)?;
            match c.kind {
                ColumnKind::Field(ty) => Some((c.id, ty)),
                ColumnKind::Tag => None,
            }
        })
        .collect::<Option<Vec<_>>>()?;
    let mut series = candidates(&pred, t);
    // Without a condition every series is in: not asked one by one (10 M series at TSBS's largest
    // scenario, 3 % of a count).
    if !matches!(pred, Pred::Const(true)) {
        series.retain(|s| pred.eval(&|c| t.series_tag_value(*s, c)) != Some(false));
    }
    let (lo, hi) = (src.range.min.unwrap_or(i64::MIN), src.range.max.unwrap_or(i64::MAX));
    Some((Scope { db: d.id, table: t.id, lo, hi, fields, series }, t, pred))
}

/// SQL's `ORDER BY a ASC, b ASC` on strings: a missing value sorts after every value.
fn nulls_last(a: &[Option<&str>], b: &[Option<&str>]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x, y) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

// ---------------------------------------------------------------------- the condition, per series

/// A condition, evaluated once per series on its tags (the SQL path's predicate, `cond::predicate`,
/// read the same way: a missing tag is `''`), and for raw reads per row on field comparisons.
#[derive(Clone)]
enum Pred {
    Const(bool),
    And(Box<Pred>, Box<Pred>),
    Or(Box<Pred>, Box<Pred>),
    /// `tag = 'v'` with `v` not empty.
    Eq(ColId, String),
    /// `tag != 'v'` with `v` not empty: true for a series without the tag.
    NotEq(ColId, String),
    /// `tag = ''` (`true`: the series lacks the tag) or `tag != ''`.
    Missing(ColId, bool),
    /// `tag < 'v'` and friends, comparing the tag (`''` when missing) as a string.
    Cmp(ColId, BinaryOp, String),
    /// `tag =~ /re/` (or `!~` when negated); `None`: a name that is no tag of the table (`''`).
    Regex(Option<ColId>, Regex, bool),
    /// `field <op> number`, per row: the field at this index of `Scope::fields`; false where it is null.
    Field(usize, BinaryOp, Number),
}

/// Whether `field <op> n` may hold for some value between `min` and `max` (a column's statistics, raw:
/// i64, or f64 bits in IEEE total order, NaNs left out), as [`Pred::mask`] compares.
fn bounds_may_hold(ty: FieldType, min: u64, max: u64, op: BinaryOp, n: Number) -> bool {
    let (lo, hi) = match (ty, n) {
        (FieldType::Integer, Number::Int(n)) => ((min as i64).cmp(&n), (max as i64).cmp(&n)),
        // `as f64` keeps the order: the bounds stay bounds.
        (FieldType::Integer, Number::Float(n)) => ((min as i64 as f64).total_cmp(&n), (max as i64 as f64).total_cmp(&n)),
        (FieldType::Float, n) => {
            let n = match n {
                Number::Int(i) => i as f64,
                Number::Float(x) => x,
            };
            // The mask compares in total order, where -0 is below +0; statistics may keep either zero:
            // both zeros are taken as in range.
            let (mut lo, mut hi) = (f64::from_bits(min), f64::from_bits(max));
            if lo == 0.0 {
                lo = -0.0;
            }
            if hi == 0.0 {
                hi = 0.0;
            }
            (lo.total_cmp(&n), hi.total_cmp(&n))
        }
        _ => return true,
    };
    match op {
        BinaryOp::Gt => hi.is_gt(),
        BinaryOp::GtEq => hi.is_ge(),
        BinaryOp::Lt => lo.is_lt(),
        BinaryOp::LtEq => lo.is_le(),
        BinaryOp::Eq => lo.is_le() && hi.is_ge(),
        BinaryOp::NotEq => !(lo.is_eq() && hi.is_eq()),
        _ => true,
    }
}

/// A number literal a field is compared with.
#[derive(Clone, Copy, Debug)]
enum Number {
    Int(i64),
    Float(f64),
}

/// Where a condition's field comparisons go while it is read (see [`resolve`]).
struct CondFields<'a> {
    allowed: bool,
    /// The fields read: the selected ones, then those only the condition names.
    names: &'a mut Vec<String>,
}

impl CondFields<'_> {
    fn slot(&mut self, name: &str) -> usize {
        match self.names.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                self.names.push(name.to_string());
                self.names.len() - 1
            }
        }
    }
}

impl Pred {
    /// The value for a series with these tags; `None` when it depends on its rows' fields. AND and OR
    /// over NULL as SQL has them: a comparison with a null field is never true and there is no NOT,
    /// so "unknown" may be read as false once rows are looked at.
    fn eval<'t>(&self, tag: &dyn Fn(ColId) -> Option<&'t str>) -> Option<bool> {
        Some(match self {
            Pred::Const(b) => *b,
            Pred::And(a, b) => match (a.eval(tag), b.eval(tag)) {
                (Some(false), _) | (_, Some(false)) => false,
                (Some(true), Some(true)) => true,
                _ => return None,
            },
            Pred::Or(a, b) => match (a.eval(tag), b.eval(tag)) {
                (Some(true), _) | (_, Some(true)) => true,
                (Some(false), Some(false)) => false,
                _ => return None,
            },
            Pred::Eq(c, v) => tag(*c) == Some(v.as_str()),
            Pred::NotEq(c, v) => tag(*c) != Some(v.as_str()),
            Pred::Missing(c, missing) => tag(*c).is_none() == *missing,
            Pred::Cmp(c, op, v) => holds(*op, tag(*c).unwrap_or("").cmp(v.as_str())),
            Pred::Regex(c, re, negate) => re.is_match(c.and_then(tag).unwrap_or("")) != *negate,
            Pred::Field(..) => return None,
        })
    }

    /// What is left to test on each row of a series with these tags: field comparisons and constants.
    fn residual<'t>(&self, tag: &dyn Fn(ColId) -> Option<&'t str>) -> Pred {
        match self {
            Pred::Field(..) => self.clone(),
            Pred::And(a, b) => match (a.residual(tag), b.residual(tag)) {
                (Pred::Const(false), _) | (_, Pred::Const(false)) => Pred::Const(false),
                (Pred::Const(true), x) | (x, Pred::Const(true)) => x,
                (x, y) => Pred::And(Box::new(x), Box::new(y)),
            },
            Pred::Or(a, b) => match (a.residual(tag), b.residual(tag)) {
                (Pred::Const(true), _) | (_, Pred::Const(true)) => Pred::Const(true),
                (Pred::Const(false), x) | (x, Pred::Const(false)) => x,
                (x, y) => Pred::Or(Box::new(x), Box::new(y)),
            },
            other => Pred::Const(other.eval(tag).unwrap_or(false)),
        }
    }

    /// Per row of `range` of the columns `col` gives (by index of `Scope::fields`): does it pass?
    /// `self` is a residual (no tag tests left).
    fn mask<'c>(&self, col: &dyn Fn(usize) -> Option<&'c Column>, range: std::ops::Range<usize>) -> Vec<bool> {
        match self {
            Pred::And(a, b) => {
                let mut m = a.mask(col, range.clone());
                m.iter_mut().zip(b.mask(col, range)).for_each(|(x, y)| *x &= y);
                m
            }
            Pred::Or(a, b) => {
                let mut m = a.mask(col, range.clone());
                m.iter_mut().zip(b.mask(col, range)).for_each(|(x, y)| *x |= y);
                m
            }
            Pred::Field(f, op, n) => match col(*f) {
                None => vec![false; range.len()],
                Some(c) => {
                    let test = |o: Ordering| holds(*op, o);
                    let valid = &c.validity[range.clone()];
                    match (&c.values, *n) {
                        (ColumnValues::Integer(v), Number::Int(n)) => {
                            v[range].iter().zip(valid).map(|(x, ok)| *ok && test(x.cmp(&n))).collect()
                        }
                        (ColumnValues::Integer(v), Number::Float(n)) => {
                            v[range].iter().zip(valid).map(|(x, ok)| *ok && test((*x as f64).total_cmp(&n))).collect()
                        }
                        (ColumnValues::Float(v), n) => {
                            let n = match n {
                                Number::Int(i) => i as f64,
                                Number::Float(x) => x,
                            };
                            v[range].iter().zip(valid).map(|(x, ok)| *ok && test(x.total_cmp(&n))).collect()
                        }
                        _ => vec![false; range.len()],
                    }
                }
            },
            other => vec![other.eval(&|_| None).unwrap_or(false); range.len()],
        }
    }

    /// Whether any row of block `b` may pass this residual, from the block's statistics: `false` only
    /// when none can, as [`Pred::mask`] would find (a field the block lacks is null in its rows; a
    /// minimum above, or a maximum below, what a comparison needs). `fields`: `Scope::fields`.
    fn may_hold(&self, b: &BlockMeta, fields: &[(ColId, FieldType)]) -> bool {
        match self {
            Pred::Const(v) => *v,
            Pred::And(x, y) => x.may_hold(b, fields) && y.may_hold(b, fields),
            Pred::Or(x, y) => x.may_hold(b, fields) || y.may_hold(b, fields),
            Pred::Field(f, op, n) => {
                let Some(m) = fields.get(*f).and_then(|(c, _)| b.col(*c)) else { return false };
                if m.stats.count == 0 {
                    return false;
                }
                // The statistics skip NaNs (which pass `> n` in the mask's total order); a NaN makes
                // the sum NaN, so a block whose sum is not NaN has none.
                if m.ty == FieldType::Float && f64::from_bits(m.stats.sum).is_nan() {
                    return true;
                }
                bounds_may_hold(m.ty, m.stats.min, m.stats.max, *op, *n)
            }
            _ => true,
        }
    }

    /// [`Pred::may_hold`] over hour `k` of a block's hour statistics `h`, whose columns are the fields
    /// `hour_col[f]` of `Scope::fields` (`None`: not asked for, nothing known). An hour whose column
    /// statistics are not exact may hold anything; one where the field has no value holds no row.
    fn may_hold_hour(&self, h: &HourStats, k: usize, fields: &[(ColId, FieldType)], hour_col: &[Option<usize>]) -> bool {
        match self {
            Pred::Const(v) => *v,
            Pred::And(x, y) => x.may_hold_hour(h, k, fields, hour_col) && y.may_hold_hour(h, k, fields, hour_col),
            Pred::Or(x, y) => x.may_hold_hour(h, k, fields, hour_col) || y.may_hold_hour(h, k, fields, hour_col),
            Pred::Field(f, op, n) => {
                let (Some(c), Some((_, ty))) = (hour_col.get(*f).copied().flatten().map(|i| &h.cols[i]), fields.get(*f)) else { return true };
                if !c.exact {
                    return true;
                }
                c.count[k] > 0 && bounds_may_hold(*ty, c.min[k], c.max[k], *op, *n)
            }
            _ => true,
        }
    }

    /// The fields (indexes into `Scope::fields`) this condition compares, once each, ascending.
    fn compared_fields(&self, out: &mut Vec<usize>) {
        match self {
            Pred::And(x, y) | Pred::Or(x, y) => {
                x.compared_fields(out);
                y.compared_fields(out);
            }
            Pred::Field(f, _, _) => {
                if let Err(at) = out.binary_search(f) {
                    out.insert(at, *f);
                }
            }
            _ => {}
        }
    }
}

/// Whether `a <op> b` holds for `a.cmp(b) == o` (`op` a comparison other than a regex match).
fn holds(op: BinaryOp, o: Ordering) -> bool {
    match op {
        BinaryOp::Eq => o.is_eq(),
        BinaryOp::NotEq => o.is_ne(),
        BinaryOp::Lt => o.is_lt(),
        BinaryOp::LtEq => o.is_le(),
        BinaryOp::Gt => o.is_gt(),
        _ => o.is_ge(),
    }
}

/// The series to test: those the tag index gives for the equalities every match must satisfy, or all.
fn candidates(pred: &Pred, t: &TableCatalog) -> Vec<SeriesId> {
    fn conjuncts<'p>(p: &'p Pred, out: &mut Vec<&'p Pred>) {
        match p {
            Pred::And(a, b) => {
                conjuncts(a, out);
                conjuncts(b, out);
            }
            other => out.push(other),
        }
    }
    /// `tag = 'a' OR tag = 'b' ...` on one tag: that tag and its values.
    fn equalities<'p>(p: &'p Pred, out: &mut Vec<(ColId, &'p str)>) -> bool {
        match p {
            Pred::Eq(c, v) => {
                out.push((*c, v));
                out.iter().all(|(x, _)| x == c)
            }
            Pred::Or(a, b) => equalities(a, out) && equalities(b, out),
            _ => false,
        }
    }
    let mut parts = Vec::new();
    conjuncts(pred, &mut parts);
    let constraints: Vec<(ColId, Vec<&str>)> = parts
        .into_iter()
        .filter_map(|p| {
            let mut eqs = Vec::new();
            equalities(p, &mut eqs).then(|| (eqs[0].0, eqs.into_iter().map(|(_, v)| v).collect()))
        })
        .collect();
    t.series_with_tags(constraints)
}

/// The non-time part of the `WHERE` as a tag predicate, as `cond::split` reads it: time comparisons
/// in the top-level `AND`s are the range (already taken out). `None` when it involves a field.
fn split(e: &Expr, info: &TableInfo, t: &TableCatalog, cx: &mut CondFields) -> Option<Pred> {
    match e {
        Expr::Binary { op: BinaryOp::And, lhs, rhs } => {
            Some(Pred::And(Box::new(split(lhs, info, t, cx)?), Box::new(split(rhs, info, t, cx)?)))
        }
        Expr::Binary { op, lhs, rhs } if op.is_comparison() && (lhs.is_time_ref() || rhs.is_time_ref()) => {
            Some(Pred::Const(true))
        }
        other => predicate(other, info, t, cx),
    }
}

fn predicate(e: &Expr, info: &TableInfo, t: &TableCatalog, cx: &mut CondFields) -> Option<Pred> {
    match e {
        Expr::Binary { op: BinaryOp::And, lhs, rhs } => {
            Some(Pred::And(Box::new(predicate(lhs, info, t, cx)?), Box::new(predicate(rhs, info, t, cx)?)))
        }
        Expr::Binary { op: BinaryOp::Or, lhs, rhs } => {
            Some(Pred::Or(Box::new(predicate(lhs, info, t, cx)?), Box::new(predicate(rhs, info, t, cx)?)))
        }
        Expr::Binary { op, lhs, rhs } if op.is_comparison() => {
            // The column on the left, as `cond::comparison` puts it.
            let (op, lhs, rhs) = match (lhs.as_ref(), rhs.as_ref()) {
                (l, r @ Expr::VarRef { .. }) if !matches!(l, Expr::VarRef { .. }) => (flip(*op), r, l),
                (l, r) => (*op, l, r),
            };
            let Expr::VarRef { name, data_type } = lhs else { return None };
            let kind = info.kind(name, *data_type);
            if let ColKind::Field(ty) = kind {
                return field_comparison(op, name, ty, rhs, cx);
            }
            let col = if kind == ColKind::Tag { Some(t.column(name)?.id) } else { None };
            tag_comparison(op, col, rhs)
        }
        Expr::BooleanLit(b) => Some(Pred::Const(*b)),
        _ => None,
    }
}

/// `field <op> number` for a float or integer field, as the SQL path's comparison answers it (an
/// integer field with an integral literal compares as integers, otherwise as floats, in Arrow's total
/// order); anything else (strings, booleans, unsigned, arithmetic, regexes) is left to SQL.
fn field_comparison(op: BinaryOp, name: &str, ty: FieldType, rhs: &Expr, cx: &mut CondFields) -> Option<Pred> {
    if !cx.allowed || !matches!(ty, FieldType::Float | FieldType::Integer) {
        return None;
    }
    if !matches!(op, BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq) {
        return None;
    }
    let n = match rhs {
        Expr::IntegerLit(v) => Number::Int(*v),
        Expr::NumberLit(v) => Number::Float(*v),
        Expr::Neg(inner) => match inner.as_ref() {
            Expr::IntegerLit(v) => Number::Int(v.checked_neg()?),
            Expr::NumberLit(v) => Number::Float(-v),
            _ => return None,
        },
        _ => return None,
    };
    let n = match n {
        Number::Float(x) if ty == FieldType::Integer && x.fract() == 0.0 && x.abs() < 9.0e18 => Number::Int(x as i64),
        other => other,
    };
    Some(Pred::Field(cx.slot(name), op, n))
}

/// `cond::tag_comparison`, as a predicate on the series' tag (`col`: `None` for an unknown name).
fn tag_comparison(op: BinaryOp, col: Option<ColId>, rhs: &Expr) -> Option<Pred> {
    Some(match (op, rhs) {
        (BinaryOp::EqRegex | BinaryOp::NotEqRegex, Expr::RegexLit(re)) => {
            Pred::Regex(col, compile(re).ok()?, op == BinaryOp::NotEqRegex)
        }
        (BinaryOp::Eq | BinaryOp::NotEq, Expr::StringLit(v)) => {
            let eq = op == BinaryOp::Eq;
            match (col, v.is_empty()) {
                (None, _) => Pred::Const(v.is_empty() == eq),
                (Some(c), true) => Pred::Missing(c, eq),
                (Some(c), false) if eq => Pred::Eq(c, v.clone()),
                (Some(c), false) => Pred::NotEq(c, v.clone()),
            }
        }
        (BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq, Expr::StringLit(v)) if col.is_some() => {
            Pred::Cmp(col?, op, v.clone())
        }
        _ => Pred::Const(false),
    })
}

// ---------------------------------------------------------------------- folding rows

/// A field value the fold works on: floats (ordered as Arrow orders them, NaN largest) and integers
/// (summed wrapping, as DataFusion's `sum` on Int64).
trait Num: Copy + std::fmt::Debug {
    fn total(&self, other: &Self) -> Ordering;
    fn add(self, other: Self) -> Self;
    fn as_f64(self) -> f64;
    fn cell(self) -> Cell;
    /// A value from a raw statistic (f64 bits, or the i64's).
    fn from_raw(raw: u64) -> Self;
    const ZERO: Self;

    /// `acc` plus each value as a double, added in order (the sum `avg(CAST(f AS DOUBLE))` takes).
    fn sum_f64(acc: f64, vals: &[Self]) -> f64 {
        vals.iter().fold(acc, |s, v| s + v.as_f64())
    }

    /// The index of the first smallest value (`vals` is not empty).
    fn first_min(vals: &[Self]) -> usize {
        first_best(vals, |a, b| a.total(b).is_lt())
    }

    /// The index of the first largest value (`vals` is not empty).
    fn first_max(vals: &[Self]) -> usize {
        first_best(vals, |a, b| a.total(b).is_gt())
    }
}

/// The index of the first value no other is `better` than (`vals` is not empty).
fn first_best<T>(vals: &[T], better: impl Fn(&T, &T) -> bool) -> usize {
    let mut i = 0;
    for (j, v) in vals.iter().enumerate().skip(1) {
        if better(v, &vals[i]) {
            i = j;
        }
    }
    i
}

impl Num for f64 {
    fn total(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
    fn add(self, other: Self) -> Self {
        self + other
    }
    fn as_f64(self) -> f64 {
        self
    }
    fn cell(self) -> Cell {
        Cell::Float(self)
    }
    fn from_raw(raw: u64) -> Self {
        f64::from_bits(raw)
    }
    const ZERO: Self = 0.0;
}

impl Num for i64 {
    fn total(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }
    fn add(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
    fn as_f64(self) -> f64 {
        self as f64
    }
    fn cell(self) -> Cell {
        Cell::Integer(self)
    }
    fn from_raw(raw: u64) -> Self {
        raw as i64
    }
    const ZERO: Self = 0;

    /// Integers add exactly as doubles while every partial sum stays below 2^53. When the bound holds
    /// for the whole run, one integer sum (which the compiler vectorises; adding doubles one by one
    /// cannot be reordered) added once gives the same double as adding the values one by one. The
    /// bound: every |v| is at most the OR of all the values' bits (negatives' ones' complement) + 1.
    fn sum_f64(acc: f64, vals: &[Self]) -> f64 {
        const EXACT: f64 = (1u64 << 52) as f64;
        let bits = vals.iter().fold(0u64, |a, v| a | (v ^ (v >> 63)) as u64);
        if acc.fract() == 0.0 && acc.abs() + (bits as f64 + 1.0) * vals.len() as f64 <= EXACT {
            acc + vals.iter().sum::<i64>() as f64
        } else {
            vals.iter().fold(acc, |s, v| s + *v as f64)
        }
    }

    /// The smallest value first (a pass that vectorises), then its first position.
    fn first_min(vals: &[Self]) -> usize {
        let best = vals.iter().copied().min().expect("a value");
        vals.iter().position(|v| *v == best).expect("the best is a value")
    }

    fn first_max(vals: &[Self]) -> usize {
        let best = vals.iter().copied().max().expect("a value");
        vals.iter().position(|v| *v == best).expect("the best is a value")
    }
}

/// A selected point: (value, time, series rank), compared as the SQL's `ORDER BY` would.
type Point<T> = (T, i64, u32);

/// `min(f)` with the earliest time among equal values (`ORDER BY f ASC, time ASC`).
fn better_min<T: Num>(new: Point<T>, old: Point<T>) -> bool {
    new.0.total(&old.0).then(new.1.cmp(&old.1)).then(new.2.cmp(&old.2)).is_lt()
}

/// `max(f)` with the earliest time among equal values (`ORDER BY f DESC, time ASC`).
fn better_max<T: Num>(new: Point<T>, old: Point<T>) -> bool {
    old.0.total(&new.0).then(new.1.cmp(&old.1)).then(new.2.cmp(&old.2)).is_lt()
}

/// `first(f)`: the earliest time, ties to the lowest series rank.
fn earlier<T: Num>(new: Point<T>, old: Point<T>) -> bool {
    (new.1, new.2) < (old.1, old.2)
}

/// `last(f)`: the latest time, ties to the highest series rank.
fn later<T: Num>(new: Point<T>, old: Point<T>) -> bool {
    (new.1, new.2) > (old.1, old.2)
}

fn keep<T: Num>(slot: &mut Option<Point<T>>, new: Point<T>, better: fn(Point<T>, Point<T>) -> bool) {
    if slot.is_none_or(|old| better(new, old)) {
        *slot = Some(new);
    }
}

/// One field's aggregate state in one (group, bucket).
#[derive(Clone, Copy, Debug)]
struct Acc<T: Num> {
    count: u64,
    /// `sum(f)` in the field's type.
    sum: T,
    /// `avg(CAST(f AS DOUBLE))`'s sum.
    fsum: f64,
    min: Option<Point<T>>,
    max: Option<Point<T>>,
    first: Option<Point<T>>,
    last: Option<Point<T>>,
}

impl<T: Num> Acc<T> {
    fn new() -> Self {
        Acc { count: 0, sum: T::ZERO, fsum: 0.0, min: None, max: None, first: None, last: None }
    }

    /// Folds one run of rows (time-sorted, one series).
    fn fold(&mut self, need: Need, ts: &[i64], vals: &[T], valid: &[bool], rank: u32) {
        if valid.iter().all(|v| *v) {
            return self.fold_dense(need, ts, vals, rank);
        }
        let mut first = None;
        let mut last = None;
        for ((&t, &v), &ok) in ts.iter().zip(vals).zip(valid) {
            if !ok {
                continue;
            }
            self.count += 1;
            if need.sum {
                self.sum = self.sum.add(v);
            }
            if need.mean {
                self.fsum += v.as_f64();
            }
            if need.min {
                keep(&mut self.min, (v, t, rank), better_min);
            }
            if need.max {
                keep(&mut self.max, (v, t, rank), better_max);
            }
            if first.is_none() {
                first = Some((v, t, rank));
            }
            last = Some((v, t, rank));
        }
        if let (true, Some(p)) = (need.first, first) {
            keep(&mut self.first, p, earlier);
        }
        if let (true, Some(p)) = (need.last, last) {
            keep(&mut self.last, p, later);
        }
    }

    /// [`Acc::fold`] of a run with every value set (the common case): one pass per statistic, each
    /// selected point compared with the state once per run instead of once per row.
    fn fold_dense(&mut self, need: Need, ts: &[i64], vals: &[T], rank: u32) {
        if vals.is_empty() {
            return;
        }
        self.count += vals.len() as u64;
        if need.sum {
            self.sum = vals.iter().fold(self.sum, |s, v| s.add(*v));
        }
        if need.mean {
            self.fsum = T::sum_f64(self.fsum, vals);
        }
        // Strict comparisons keep the earliest of equal values (the run is time-sorted).
        let point = |i: usize| (vals[i], ts[i], rank);
        if need.min {
            keep(&mut self.min, point(T::first_min(vals)), better_min);
        }
        if need.max {
            keep(&mut self.max, point(T::first_max(vals)), better_max);
        }
        if need.first {
            keep(&mut self.first, (vals[0], ts[0], rank), earlier);
        }
        if need.last {
            let n = vals.len() - 1;
            keep(&mut self.last, (vals[n], ts[n], rank), later);
        }
    }

    /// Folds hour `k` of a block's hour statistics (`c.count[k] > 0`), which starts at `t`: its
    /// minimum and maximum stand at `t`, as the plan never shows a point's time (`Plan::hourly`).
    fn fold_hour(&mut self, need: Need, c: &HourCol, k: usize, t: i64, rank: u32) {
        let sum = T::from_raw(c.sum[k]);
        self.count += u64::from(c.count[k]);
        if need.sum {
            self.sum = self.sum.add(sum);
        }
        if need.mean {
            self.fsum += sum.as_f64();
        }
        if need.min {
            keep(&mut self.min, (T::from_raw(c.min[k]), t, rank), better_min);
        }
        if need.max {
            keep(&mut self.max, (T::from_raw(c.max[k]), t, rank), better_max);
        }
    }

    fn merge(&mut self, o: &Acc<T>) {
        self.count += o.count;
        self.sum = self.sum.add(o.sum);
        self.fsum += o.fsum;
        for (slot, other, better) in [
            (&mut self.min, o.min, better_min as fn(Point<T>, Point<T>) -> bool),
            (&mut self.max, o.max, better_max),
            (&mut self.first, o.first, earlier),
            (&mut self.last, o.last, later),
        ] {
            if let Some(p) = other {
                keep(slot, p, better);
            }
        }
    }

    /// The SQL columns of `func` over this state: its value, then with `with_time` a selector's
    /// point's time.
    fn cells(&self, func: Func, with_time: bool, row: &mut Vec<Cell>) {
        row.push(self.value(func));
        if let (true, Func::Min | Func::Max | Func::First | Func::Last) = (with_time, func) {
            row.push(self.point(func).map_or(Cell::Null, |p| Cell::Time(p.1)));
        }
    }

    /// The value of `func` over this state (its first SQL column).
    fn value(&self, func: Func) -> Cell {
        let any = self.count > 0;
        match func {
            Func::Count => Cell::Integer(self.count as i64),
            Func::Sum => if any { self.sum.cell() } else { Cell::Null },
            Func::Mean => if any { Cell::Float(self.fsum / self.count as f64) } else { Cell::Null },
            Func::Min | Func::Max | Func::First | Func::Last => self.point(func).map_or(Cell::Null, |p| p.0.cell()),
            other => unreachable!("{other:?} is not planned natively"),
        }
    }

    /// The point a selector selected.
    fn point(&self, func: Func) -> Option<Point<T>> {
        match func {
            Func::Min => self.min,
            Func::Max => self.max,
            Func::First => self.first,
            Func::Last => self.last,
            _ => None,
        }
    }
}

/// A field's state, in the field's type.
#[derive(Clone, Copy, Debug)]
enum FieldAcc {
    Float(Acc<f64>),
    Integer(Acc<i64>),
}

impl FieldAcc {
    fn new(ty: FieldType) -> Self {
        match ty {
            FieldType::Integer => FieldAcc::Integer(Acc::new()),
            _ => FieldAcc::Float(Acc::new()),
        }
    }

    fn count(&self) -> u64 {
        match self {
            FieldAcc::Float(a) => a.count,
            FieldAcc::Integer(a) => a.count,
        }
    }

    /// Folds `run` of `col`; `dense` says every value of the column is set.
    fn fold(&mut self, need: Need, ts: &[i64], col: &sundial_storage::types::Column, run: std::ops::Range<usize>, dense: bool, rank: u32) {
        let valid = &col.validity[run.clone()];
        match (self, &col.values) {
            (FieldAcc::Float(a), ColumnValues::Float(v)) if dense => a.fold_dense(need, ts, &v[run], rank),
            (FieldAcc::Integer(a), ColumnValues::Integer(v)) if dense => a.fold_dense(need, ts, &v[run], rank),
            (FieldAcc::Float(a), ColumnValues::Float(v)) => a.fold(need, ts, &v[run], valid, rank),
            (FieldAcc::Integer(a), ColumnValues::Integer(v)) => a.fold(need, ts, &v[run], valid, rank),
            (acc, values) => debug_assert!(false, "{acc:?} folded with {values:?}"),
        }
    }

    fn fold_hour(&mut self, need: Need, c: &HourCol, k: usize, t: i64, rank: u32) {
        match self {
            FieldAcc::Float(a) => a.fold_hour(need, c, k, t, rank),
            FieldAcc::Integer(a) => a.fold_hour(need, c, k, t, rank),
        }
    }

    fn merge(&mut self, other: &FieldAcc) {
        match (self, other) {
            (FieldAcc::Float(a), FieldAcc::Float(b)) => a.merge(b),
            (FieldAcc::Integer(a), FieldAcc::Integer(b)) => a.merge(b),
            _ => unreachable!("one field, one type"),
        }
    }

    fn cells(&self, func: Func, with_time: bool, row: &mut Vec<Cell>) {
        match self {
            FieldAcc::Float(a) => a.cells(func, with_time, row),
            FieldAcc::Integer(a) => a.cells(func, with_time, row),
        }
    }

    fn value(&self, func: Func) -> Cell {
        match self {
            FieldAcc::Float(a) => a.value(func),
            FieldAcc::Integer(a) => a.value(func),
        }
    }
}

/// A field's state when the statement only counts or averages it: the count and the sum as a double
/// that [`Acc`] keeps for the same calls, in a tenth of its bytes (16 against 160).
#[derive(Clone, Copy, Debug, Default)]
struct Moments {
    count: u64,
    fsum: f64,
}

impl Moments {
    /// [`Acc::fold`] and [`Acc::fold_dense`] for count() and mean(), to the same double.
    fn fold<T: Num>(&mut self, vals: &[T], valid: &[bool], dense: bool) {
        if dense {
            self.count += vals.len() as u64;
            self.fsum = T::sum_f64(self.fsum, vals);
            return;
        }
        for (v, _) in vals.iter().zip(valid).filter(|(_, ok)| **ok) {
            self.count += 1;
            self.fsum += v.as_f64();
        }
    }

    fn fold_hour<T: Num>(&mut self, c: &HourCol, k: usize) {
        self.count += u64::from(c.count[k]);
        self.fsum += T::from_raw(c.sum[k]).as_f64();
    }

    fn merge(&mut self, o: &Moments) {
        self.count += o.count;
        self.fsum += o.fsum;
    }

    fn value(&self, func: Func) -> Cell {
        match func {
            Func::Count => Cell::Integer(self.count as i64),
            Func::Mean => if self.count > 0 { Cell::Float(self.fsum / self.count as f64) } else { Cell::Null },
            other => unreachable!("{other:?} is not kept in moments"),
        }
    }
}

/// One field's accumulators, one per slot of a [`Folded`], only as wide as the statement's calls on
/// the field need. Why two widths: a 4,000-host hourly rollup of the mean of 10 fields over 12 hours
/// holds 480,000 of them, and as [`FieldAcc`]s (with the sum, min, max, first and last points mean()
/// never reads) that was 77 MB faulted in and copied as it grew: 44 % of the statement's CPU.
enum FieldAccs {
    Full { template: FieldAcc, accs: Vec<FieldAcc> },
    /// `integer`: the field's values are integers (as [`FieldAcc::new`] types them).
    Moments { integer: bool, accs: Vec<Moments> },
}

impl FieldAccs {
    fn new(ty: FieldType, need: Need, slots: usize) -> Self {
        if need.sum || need.min || need.max || need.first || need.last {
            FieldAccs::Full { template: FieldAcc::new(ty), accs: Vec::with_capacity(slots) }
        } else {
            FieldAccs::Moments { integer: ty == FieldType::Integer, accs: Vec::with_capacity(slots) }
        }
    }

    /// A new slot's state, at the end.
    fn push(&mut self) {
        match self {
            FieldAccs::Full { template, accs } => accs.push(*template),
            FieldAccs::Moments { accs, .. } => accs.push(Moments::default()),
        }
    }

    fn count(&self, s: usize) -> u64 {
        match self {
            FieldAccs::Full { accs, .. } => accs[s].count(),
            FieldAccs::Moments { accs, .. } => accs[s].count,
        }
    }

    /// [`FieldAcc::fold`] into slot `s`.
    #[allow(clippy::too_many_arguments)]
    fn fold(&mut self, s: usize, need: Need, ts: &[i64], col: &Column, run: std::ops::Range<usize>, dense: bool, rank: u32) {
        match self {
            FieldAccs::Full { accs, .. } => accs[s].fold(need, ts, col, run, dense, rank),
            FieldAccs::Moments { accs, .. } => {
                let valid = &col.validity[run.clone()];
                match &col.values {
                    ColumnValues::Float(v) => accs[s].fold(&v[run], valid, dense),
                    ColumnValues::Integer(v) => accs[s].fold(&v[run], valid, dense),
                    values => debug_assert!(false, "moments folded with {values:?}"),
                }
            }
        }
    }

    fn fold_hour(&mut self, s: usize, need: Need, c: &HourCol, k: usize, t: i64, rank: u32) {
        match self {
            FieldAccs::Full { accs, .. } => accs[s].fold_hour(need, c, k, t, rank),
            FieldAccs::Moments { integer: true, accs } => accs[s].fold_hour::<i64>(c, k),
            FieldAccs::Moments { integer: false, accs } => accs[s].fold_hour::<f64>(c, k),
        }
    }

    /// Merges `other`'s slot `j` into slot `i`.
    fn merge(&mut self, i: usize, other: &FieldAccs, j: usize) {
        match (self, other) {
            (FieldAccs::Full { accs, .. }, FieldAccs::Full { accs: o, .. }) => accs[i].merge(&o[j]),
            (FieldAccs::Moments { accs, .. }, FieldAccs::Moments { accs: o, .. }) => accs[i].merge(&o[j]),
            _ => unreachable!("one plan, one width"),
        }
    }

    fn cells(&self, s: usize, func: Func, with_time: bool, row: &mut Vec<Cell>) {
        match self {
            FieldAccs::Full { accs, .. } => accs[s].cells(func, with_time, row),
            FieldAccs::Moments { accs, .. } => row.push(accs[s].value(func)),
        }
    }

    /// Slot `s`'s value of `func` (its first SQL column).
    fn value(&self, s: usize, func: Func) -> Cell {
        match self {
            FieldAccs::Full { accs, .. } => accs[s].value(func),
            FieldAccs::Moments { accs, .. } => accs[s].value(func),
        }
    }
}

/// Accumulators of one task: per (group, bucket) a slot holding "rows with a used field set" and one
/// state per field ([`FieldAccs`]).
struct Folded {
    index: SlotIndex,
    keys: Vec<(u32, i64)>,
    rows: Vec<u64>,
    fields: Vec<FieldAccs>,
}

impl Folded {
    fn new(plan: &Plan) -> Self {
        let (lo, hi) = (plan.scope.lo, plan.scope.hi);
        // The buckets, from the one holding `lo` to the one holding `hi`, when the range is bounded
        // (first bucket, interval, count); one bucket without GROUP BY time().
        let buckets = match plan.bucket {
            None => Some((0, 1, 1)),
            Some((interval, offset)) if lo != i64::MIN && hi != i64::MAX => {
                let base = bucket_start(lo, interval, offset);
                let span = bucket_start(hi, interval, offset).checked_sub(base);
                span.and_then(|d| usize::try_from(d / interval + 1).ok()).map(|n| (base, interval, n))
            }
            Some(_) => None,
        };
        let groups = plan.groups.len().max(1);
        let all_slots = buckets.map_or(1, |(_, _, n)| n).saturating_mul(groups);
        // Room for the (group, bucket)s a bounded range can have, up to a cap: a rollup of 720 buckets
        // otherwise grows its index through seven rehashes.
        let slots = all_slots.min(FOLD_SLOTS_RESERVED_MAX);
        let index = match buckets {
            Some((base, interval, buckets)) if all_slots <= FOLD_DENSE_SLOTS_MAX => {
                SlotIndex::Dense { base, interval, buckets, at: vec![u32::MAX; all_slots], spill: Default::default() }
            }
            _ => SlotIndex::Hash(foldhash::HashMap::with_capacity_and_hasher(slots, Default::default())),
        };
        let fields = plan.scope.fields.iter().zip(&plan.need).map(|((_, ty), need)| FieldAccs::new(*ty, *need, slots)).collect();
        let mut f = Folded { index, keys: Vec::with_capacity(slots), rows: Vec::with_capacity(slots), fields };
        if plan.global {
            f.slot(0, 0);
        }
        f
    }

    fn slot(&mut self, group: u32, bucket: i64) -> usize {
        let next = self.keys.len();
        let i = self.index.get_or_insert(group, bucket, next);
        if i == next {
            self.keys.push((group, bucket));
            self.rows.push(0);
            self.fields.iter_mut().for_each(FieldAccs::push);
        }
        i
    }

    /// The earliest bucket holding a row with one of the fields set (the first the answer shows).
    fn first_bucket(&self) -> Option<i64> {
        self.keys.iter().zip(&self.rows).filter(|(_, rows)| **rows > 0).map(|((_, bucket), _)| *bucket).min()
    }

    fn merge(&mut self, other: Folded) {
        for (j, (g, b)) in other.keys.iter().enumerate() {
            let i = self.slot(*g, *b);
            self.rows[i] += other.rows[j];
            for (mine, theirs) in self.fields.iter_mut().zip(&other.fields) {
                mine.merge(i, theirs, j);
            }
        }
    }
}

/// Where each (group, bucket)'s slot is in a [`Folded`].
enum SlotIndex {
    /// A slot number per group and bucket of a bounded range (`u32::MAX`: none yet), group-major:
    /// a 4,000-host hourly rollup looks up 48,000 slots, and a hash map's random probes into a
    /// megabyte missed cache on most of them (a fifth of that query's CPU). A bucket outside the range
    /// (none should be) goes to `spill`.
    Dense { base: i64, interval: i64, buckets: usize, at: Vec<u32>, spill: foldhash::HashMap<(u32, i64), usize> },
    Hash(foldhash::HashMap<(u32, i64), usize>),
}

/// Where `(group, bucket)` is in a [`SlotIndex::Dense`]'s `at`, if in its range.
fn dense_at(base: i64, interval: i64, buckets: usize, group: u32, bucket: i64) -> Option<usize> {
    let k = bucket.checked_sub(base).map(|d| d / interval).and_then(|k| usize::try_from(k).ok()).filter(|k| *k < buckets)?;
    Some(group as usize * buckets + k)
}

impl SlotIndex {
    /// The slot of `(group, bucket)`, or `next` (recorded as its slot) when it has none.
    fn get_or_insert(&mut self, group: u32, bucket: i64, next: usize) -> usize {
        match self {
            SlotIndex::Dense { base, interval, buckets, at, spill } => {
                let cell = dense_at(*base, *interval, *buckets, group, bucket).and_then(|i| at.get_mut(i));
                match cell {
                    Some(c) if *c != u32::MAX => *c as usize,
                    Some(c) => {
                        *c = u32::try_from(next).expect("dense slots number under FOLD_DENSE_SLOTS_MAX");
                        next
                    }
                    None => *spill.entry((group, bucket)).or_insert(next),
                }
            }
            SlotIndex::Hash(h) => *h.entry((group, bucket)).or_insert(next),
        }
    }

    /// The slot of `(group, bucket)`, if it has one.
    fn get(&self, group: u32, bucket: i64) -> Option<usize> {
        match self {
            SlotIndex::Dense { base, interval, buckets, at, spill } => match dense_at(*base, *interval, *buckets, group, bucket) {
                Some(i) => Some(at[i]).filter(|c| *c != u32::MAX).map(|c| c as usize),
                None => spill.get(&(group, bucket)).copied(),
            },
            SlotIndex::Hash(h) => h.get(&(group, bucket)).copied(),
        }
    }
}

/// A read of a plan's rows up to `hi` (its range's end, or the end of its first buckets).
struct Read {
    plan: Arc<Plan>,
    hi: i64,
}

/// Folds the series `plan.scope.series[range]` (one task's share).
fn fold(engine: &Engine, read: &Read, range: std::ops::Range<usize>) -> Result<Folded, String> {
    let (plan, hi) = (&*read.plan, read.hi);
    let mut out = Folded::new(plan);
    let sc = &plan.scope;
    let series = &sc.series[range.clone()];
    let snap = engine.snapshot(sc.db, sc.table, series, sc.lo, hi, &sc.fields);
    let mut dense: Vec<bool> = Vec::with_capacity(sc.fields.len());
    // A pack's series of one group fold as one run (the scan took each one's rows whole, all in the
    // range) when the run's order does not matter: no buckets to cut it by time, no call selecting a
    // point (min, max, first and last compare rows in time order and break ties by series).
    let merge_members = plan.bucket.is_none() && plan.need.iter().all(|n| !(n.min || n.max || n.first || n.last));
    // The scan hands out series in ascending order, as they are in `series`: follow along for the index.
    let mut i = range.start;
    let mut each = |piece: Piece<'_>| {
        while sc.series[i] != piece.series() {
            i += 1;
        }
        match piece {
            Piece::Hours(h) => fold_hours(plan, &mut out, h, plan.group_of[i], plan.rank[i]),
            Piece::Rows(rows) => fold_rows(plan, hi, &mut out, &mut dense, rows, plan.group_of[i], plan.rank[i]),
            Piece::Pack(p) => {
                // The members are the scan's next series: `sc.series[i..]`.
                let n = p.members.len();
                let mut m = 0;
                while m < n {
                    debug_assert_eq!(sc.series[i + m], p.members[m].0);
                    let group = plan.group_of[i + m];
                    let mut end = m + 1;
                    while merge_members && end < n && plan.group_of[i + end] == group {
                        end += 1;
                    }
                    #[cfg(test)]
                    if end - m > 1 { &PACK_RUNS_MERGED } else { &PACK_RUNS_ALONE }.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let rows = p.rows.slice(p.members[m].0, p.members[m].1.start..p.members[end - 1].1.end);
                    fold_rows(plan, hi, &mut out, &mut dense, rows, group, plan.rank[i + m]);
                    m = end;
                }
            }
        }
    };
    let result = if plan.hourly {
        snap.scan_folds(series, Some(&mut |h: &HourStats| (0..h.rows.len()).all(|k| h.rows_set(k).is_some())), &mut each)
    } else {
        snap.scan_folds(series, None, &mut each)
    };
    result.map_err(|e| e.to_string())?;
    Ok(out)
}

/// Folds rows of one series (time-sorted), or of several series of one group (see `merge_members` in
/// [`fold`]: all their rows in the range, no buckets), into `out`: the rows in `sc.lo..=hi` per bucket.
#[allow(clippy::too_many_arguments)]
fn fold_rows(plan: &Plan, hi: i64, out: &mut Folded, dense: &mut Vec<bool>, rows: RowsRef<'_>, group: u32, rank: u32) {
    let sc = &plan.scope;
    let nf = sc.fields.len();
    let ts = rows.ts;
    // Several series' rows are not sorted as one, but lie wholly in the range: both searches then
    // answer the ends whatever the order.
    let start = ts.partition_point(|t| *t < sc.lo);
    let end = ts.partition_point(|t| *t <= hi);
    // These rows are `rows.offset..` of each column.
    let at = |r: std::ops::Range<usize>| rows.offset + r.start..rows.offset + r.end;
    // Columns with every value set (the common case), checked once per run of rows rather than per
    // bucket (a fold without early exit, which vectorises).
    dense.clear();
    dense.extend((0..nf).map(|f| rows.col(f).is_some_and(|c| c.validity[at(0..ts.len())].iter().fold(true, |a, v| a & v))));
    let any_dense = dense.contains(&true);
    let cols = || (0..nf).filter_map(|f| rows.col(f));
    let mut a = start;
    while a < end {
        let (bucket, b) = match plan.bucket {
            None => (0, end),
            Some((interval, offset)) => {
                let first = bucket_start(ts[a], interval, offset);
                let limit = first.saturating_add(interval);
                (first, a + partition_near(&ts[a..end], limit))
            }
        };
        // Rows with at least one of the fields set: the SQL's `count(*)` under its WHERE.
        let set = if any_dense || cols().any(|c| c.validity[at(a..b)].iter().all(|x| *x)) {
            (b - a) as u64
        } else {
            (a..b).filter(|r| cols().any(|c| c.validity[rows.offset + *r])).count() as u64
        };
        if set > 0 || plan.global {
            let s = out.slot(group, bucket);
            out.rows[s] += set;
            for (f, &dense) in dense.iter().enumerate() {
                if let Some(col) = rows.col(f) {
                    out.fields[f].fold(s, plan.need[f], &ts[a..b], col, at(a..b), dense, rank);
                }
            }
        }
        a = b;
    }
}

/// Folds a block's hour statistics (accepted: every hour's [`HourStats::rows_set`] is known) as
/// [`fold`] folds rows: each hour into the (group, bucket) holding it.
fn fold_hours(plan: &Plan, out: &mut Folded, h: &HourStats, group: u32, rank: u32) {
    for k in 0..h.rows.len() {
        #[cfg(test)]
        HOURS_FOLDED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let set = h.rows_set(k).expect("accepted statistics tell");
        if set == 0 && !plan.global {
            continue;
        }
        let t = h.first_hour + k as i64 * HOUR_NS;
        let bucket = plan.bucket.map_or(0, |(interval, offset)| bucket_start(t, interval, offset));
        let s = out.slot(group, bucket);
        out.rows[s] += u64::from(set);
        for (f, c) in h.cols.iter().enumerate() {
            if c.count[k] > 0 {
                out.fields[f].fold_hour(s, plan.need[f], c, k, t, rank);
            }
        }
    }
}

/// `ts.partition_point(|t| *t < limit)` for a sorted `ts` whose answer is likely near its start (a
/// bucket's rows among the rest of the series'): galloping from the start, so a bucket of six rows
/// costs three comparisons rather than a search over every row after it.
fn partition_near(ts: &[i64], limit: i64) -> usize {
    let mut end = 1;
    while end < ts.len() && ts[end - 1] < limit {
        end *= 2;
    }
    let start = end / 2;
    let end = end.min(ts.len());
    start + ts[start..end].partition_point(|t| *t < limit)
}

/// Runs `work` over the series `0..n` of `table`, first over a [`PROBE_SHARE`]th of them on the calling task,
/// timed. When the rest, at that pace, would take [`PARALLEL_MIN_WORK`] or more and no other statement
/// is being answered ([`crate::busy::alone`]), it is split over [`TASKS`]: one share stays on the
/// calling task, the others go to blocking tasks; else the calling task reads it too. The parts, in
/// series order.
///
/// Why timed rather than by series count: a series costs from a microsecond (its last row, from block
/// statistics) to milliseconds (days of rows), and only the read itself knows which. The calling task's
/// shares hold its runtime thread meanwhile, as a statement's whole read did before when it had few
/// series; the runtime's other thread takes the queued requests.
///
/// The engine is told first that `n` series will be read ([`Engine::prepare_read`]): the parts' reads
/// are each smaller, and the probe's alone would copy its series' rows out of a memtable that the whole
/// read should rather freeze and share (a fifth of a count over a memtable of a million series).
async fn in_parts<P: Send + Sync + 'static, T: Send + 'static>(
    engine: Arc<Engine>,
    table: (DbId, TableId),
    plan: Arc<P>,
    n: usize,
    work: fn(&Engine, &P, std::ops::Range<usize>) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    engine.prepare_read(table.0, table.1, n);
    let probe = (n / PROBE_SHARE).max(1).min(n);
    let started = std::time::Instant::now();
    let mut parts = vec![work(&engine, &plan, 0..probe)?];
    let rest = n - probe;
    if rest == 0 {
        return Ok(parts);
    }
    let projected = started.elapsed().mul_f64(rest as f64 / probe as f64);
    if rest < TASKS || projected < PARALLEL_MIN_WORK || !crate::busy::alone() {
        parts.push(work(&engine, &plan, probe..n)?);
        return Ok(parts);
    }
    let share = |i: usize| probe + i * rest / TASKS..probe + (i + 1) * rest / TASKS;
    let tasks: Vec<_> = (1..TASKS)
        .map(|i| {
            let (engine, plan, range) = (engine.clone(), plan.clone(), share(i));
            tokio::task::spawn_blocking(move || work(&engine, &plan, range))
        })
        .collect();
    parts.push(work(&engine, &plan, share(0))?);
    for t in tasks {
        parts.push(t.await.map_err(|e| format!("a read task of the statement failed: {e}"))??);
    }
    Ok(parts)
}

/// Runs the plan: the rows the SQL of `Ctx::aggregate` would return. With `head` (see
/// `Ctx::head_buckets`), only the first `head` buckets from the earliest row the storage knows of are
/// read; the whole range is read when the answer does not start at that bucket (the bound can be
/// early: rows deleted, or without the fields).
pub(super) async fn run(engine: Arc<Engine>, plan: Plan, head: Option<u64>) -> Result<Folds, String> {
    let plan = Arc::new(plan);
    let folds = |folded: Folded| {
        if folded.keys.len() > RESULT_ROWS_MAX {
            return Err(too_many_rows());
        }
        Ok(Folds { plan: plan.clone(), folded })
    };
    if let Some((first, hi)) = head.and_then(|n| head_bound(&engine, &plan, n)) {
        #[cfg(test)]
        NARROWED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let folded = fold_to(engine.clone(), &plan, hi).await?;
        if folded.first_bucket() == Some(first) {
            return folds(folded);
        }
        #[cfg(test)]
        WIDENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    folds(fold_to(engine, &plan, plan.scope.hi).await?)
}

/// A plan's answer as folded: per (group, bucket) slot, the accumulators the SQL's row is made of.
/// Read as those rows ([`Folds::into_rows`]), or group by group and bucket by bucket, which is how
/// `Ctx::aggregate` writes a `GROUP BY time()` answer without making the rows first.
pub(super) struct Folds {
    plan: Arc<Plan>,
    folded: Folded,
}

impl Folds {
    /// The rows the SQL of `Ctx::aggregate` would return.
    pub(super) fn into_rows(self) -> FlatRows {
        rows(&self.plan, self.folded)
    }

    /// The grouped tags' cells of each group (`0..` is the group's number).
    pub(super) fn groups(&self) -> &[Vec<Cell>] {
        &self.plan.groups
    }

    /// Per group: whether it exists, a row of one of its buckets having one of the fields set (the
    /// SQL's `count(*)` guard above 0). Not for a plan without `GROUP BY` (`Plan::global`), whose one
    /// group always exists.
    pub(super) fn live_groups(&self) -> Vec<bool> {
        let mut live = vec![false; self.plan.groups.len()];
        for ((g, _), rows) in self.folded.keys.iter().zip(&self.folded.rows) {
            live[*g as usize] |= *rows > 0;
        }
        live
    }

    /// The earliest bucket holding a row with one of the fields set.
    pub(super) fn first_bucket(&self) -> Option<i64> {
        self.folded.first_bucket()
    }

    /// The slot of `bucket` of `group`, if a row of it has one of the fields set.
    pub(super) fn slot(&self, group: u32, bucket: i64) -> Option<usize> {
        self.folded.index.get(group, bucket).filter(|s| self.folded.rows[*s] > 0)
    }

    /// Slot `s`'s value of call `call` (the call's first cell in a row of [`Folds::into_rows`]).
    pub(super) fn call_value(&self, s: usize, call: usize) -> Cell {
        let (func, f) = self.plan.calls[call];
        self.folded.fields[f].value(s, func)
    }
}

/// The plan's rows up to `hi`, folded over [`in_parts`] and merged.
async fn fold_to(engine: Arc<Engine>, plan: &Arc<Plan>, hi: i64) -> Result<Folded, String> {
    let read = Arc::new(Read { plan: plan.clone(), hi });
    let mut parts = in_parts(engine, (plan.scope.db, plan.scope.table), read, plan.scope.series.len(), fold).await?.into_iter();
    let mut total = parts.next().expect("at least one part");
    for part in parts {
        total.merge(part);
    }
    Ok(total)
}

fn rows(plan: &Plan, folded: Folded) -> FlatRows {
    let nf = folded.fields.len();
    // The group's cells, the bucket, the guard counts, each call's value (and time).
    let width = plan.groups.first().map_or(0, Vec::len)
        + usize::from(plan.bucket.is_some())
        + if plan.global { nf } else { 1 }
        + plan.calls.len() * (1 + usize::from(plan.with_time));
    let mut out = FlatRows::with_capacity(width, folded.keys.len());
    for (s, (g, bucket)) in folded.keys.iter().enumerate() {
        let group = &plan.groups[*g as usize];
        let row = out.cells();
        let start = row.len();
        row.extend_from_slice(group);
        if plan.bucket.is_some() {
            row.push(Cell::Integer(*bucket));
        }
        if plan.global {
            row.extend(folded.fields.iter().map(|a| Cell::Integer(a.count(s) as i64)));
        } else {
            row.push(Cell::Integer(folded.rows[s] as i64));
        }
        for (func, f) in &plan.calls {
            folded.fields[*f].cells(s, *func, plan.with_time, row);
        }
        debug_assert_eq!(row.len() - start, width, "every row {width} cells");
    }
    out
}

// ---------------------------------------------------------------------- raw rows

/// A raw statement (`SELECT * FROM cpu WHERE host = 'a' AND time > ...`, TSBS's lastpoint and
/// high-cpu) whose condition is on tags and on float or integer fields compared with numbers: the
/// rows the SQL of [`super::Ctx::raw`] would return.
pub(super) struct RawShape<'a> {
    pub source: Source<'a>,
    /// Every tag of the table, in the SQL's column order.
    pub tags: &'a [&'a String],
    pub fields: &'a [&'a str],
    /// Only the last `n` rows of each series (`ORDER BY time DESC LIMIT n`, see `Ctx::tail_rows`).
    pub tail: Option<usize>,
}

pub(super) struct RawPlan {
    /// `scope.fields` holds the selected fields, then those only the condition reads.
    scope: Scope,
    selected: usize,
    tail: Option<usize>,
    /// The condition, for the field comparisons left after a series' tags are known.
    pred: Pred,
    /// The tags' columns, in `RawShape::tags` order.
    tag_cols: Vec<ColId>,
}

pub(super) fn plan_raw(engine: &Engine, shape: &RawShape) -> Option<RawPlan> {
    let cat = engine.catalog();
    let (scope, t, pred) = resolve(&cat, &shape.source, shape.fields, shape.tail.is_none())?;
    let tag_cols: Vec<ColId> = shape.tags.iter().map(|n| t.column(n).map(|c| c.id)).collect::<Option<_>>()?;
    #[cfg(test)]
    PLANNED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Some(RawPlan { scope, selected: shape.fields.len(), tail: shape.tail, pred, tag_cols })
}

/// The tags' cells of each of `series`. One shared string per distinct value: a region's name is one
/// allocation, not one per host, and a dictionary's values are shared from query to query
/// ([`TagDict::shared_values`](sundial_storage::catalog::TagDict::shared_values)). Found by the value's
/// dictionary code (dense from 0), so that a series' tags cost no string hashing.
fn tag_cells(engine: &Engine, sc: &Scope, tag_cols: &[ColId], series: &[SeriesId]) -> Vec<Vec<Cell>> {
    let cat = engine.catalog();
    let Some(t) = cat.db_by_id(sc.db).and_then(|d| d.table_by_id(sc.table)) else {
        // Dropped since planning: no series has tags (nor, in the snapshot, rows).
        return vec![vec![Cell::Null; tag_cols.len()]; series.len()];
    };
    let dicts: Vec<_> = tag_cols.iter().map(|c| t.tag_dict(*c)).collect();
    // Per tag, its dictionary's shared values, or this part's own: for a dictionary too large to keep
    // them, and for a tag of few values among the part's series (a region among thousands of hosts).
    // Every series clones those, and a string shared with the other part's thread, and with the thread
    // freeing the last answer, has its count's cache line pulled between cores at each clone and drop.
    let mut values: Vec<TagValues> = dicts
        .iter()
        .map(|d| match d.filter(|d| d.len().saturating_mul(2) > series.len()).and_then(|d| d.shared_values()) {
            Some(v) => TagValues::Shared(v),
            None => TagValues::Made(vec![None; d.map_or(0, |d| d.len())]),
        })
        .collect();
    series
        .iter()
        .map(|s| {
            tag_cols
                .iter()
                .zip(&dicts)
                .zip(&mut values)
                .map(|((c, dict), values)| {
                    let Some((dict, code)) = dict.zip(t.series_tag_code(*s, *c)) else { return Cell::Null };
                    match values {
                        TagValues::Shared(v) => v.get(code as usize).map_or(Cell::Null, |v| Cell::String(v.clone())),
                        TagValues::Made(made) => {
                            let Some(slot) = made.get_mut(code as usize) else { return Cell::Null };
                            match slot {
                                Some(v) => Cell::String(v.clone()),
                                None => match dict.value(code) {
                                    Some(v) => Cell::String(slot.insert(v.into()).clone()),
                                    None => Cell::Null,
                                },
                            }
                        }
                    }
                })
                .collect()
        })
        .collect()
}

/// A tag's values for [`tag_cells`]: its dictionary's shared strings, or those made by this query so
/// far (by code).
enum TagValues {
    Shared(Arc<[ArcStr]>),
    Made(Vec<Option<ArcStr>>),
}

/// The rows of `plan.scope.series[range]`, a chunk per series with rows (its tags, and per row the
/// time and the selected fields, see [`Chunk`]); rows with none of those fields set, or failing the
/// condition's field comparisons, are left out, as the SQL's `WHERE (cond) AND (f1 IS NOT NULL OR ...)`
/// does.
fn raw_rows(engine: &Engine, plan: &RawPlan, range: std::ops::Range<usize>) -> Result<Vec<Chunk>, String> {
    let sc = &plan.scope;
    let series = &sc.series[range];
    // Built per part (in parallel), before the snapshot: the catalog's lock is not held while reading.
    let series_tags = tag_cells(engine, sc, &plan.tag_cols, series);
    let Some(n) = plan.tail else {
        let snap = engine.snapshot(sc.db, sc.table, series, sc.lo, sc.hi, &sc.fields);
        return full_rows(plan, &snap, series, series_tags);
    };
    let tail = engine.snapshot_tail(sc.db, sc.table, series, sc.lo, sc.hi, &sc.fields, n);
    let mut out = Vec::with_capacity(series.len());
    let mut n_rows = 0usize;
    let mut last = LastRow { ts: 0, values: Vec::new() };
    for (sid, tags) in series.iter().zip(series_tags) {
        let residual = plan.pred.residual(&|c| tag_value(plan, &tags, c));
        if matches!(residual, Pred::Const(false)) {
            continue;
        }
        let mut cells = Vec::new();
        if n == 1 && matches!(residual, Pred::Const(true)) {
            // The last row alone (TSBS's lastpoint): no columns built, mostly from block statistics.
            if !push_last_row(&tail, plan, *sid, &mut last, &mut cells)? {
                continue;
            }
            if n_rows == RESULT_ROWS_MAX {
                return Err(too_many_rows());
            }
            n_rows += 1;
        } else {
            let Some(r) = tail.read_series(*sid).map_err(|e| e.to_string())? else { continue };
            if !run_rows(plan, &residual, RowsRef::of(&r), &mut cells, &mut n_rows) {
                return Err(too_many_rows());
            }
        }
        if cells.is_empty() {
            continue;
        }
        out.push(Chunk { tags, cells });
    }
    Ok(out)
}

/// The rows of a raw statement's [`SeriesTable`](crate::influx::SeriesTable): per row, a code per tag of
/// the plan and the cells (time and selected fields) of one series' last row.
pub(super) struct LastTable {
    /// Per tag of the plan (`RawShape::tags`), its values by code.
    pub tag_values: Vec<Arc<[ArcStr]>>,
    pub codes: Vec<u32>,
    pub cells: Vec<Cell>,
}

/// A [`RawPlan`] of the last row of each series, with the series in answer order.
struct TablePlan {
    raw: RawPlan,
    order: Vec<SeriesId>,
}

/// The last row of each series of `plan` (`ORDER BY time DESC LIMIT 1`), each series its own group of
/// the `GROUP BY` tags `group` (indexes of the plan's tags, in key order), in the groups' order
/// (descending when `desc`): the answer [`super::Ctx::raw`] would make, as one table. `None` when it
/// cannot be one: two series in one group, a condition left on fields, or a tag whose dictionary is
/// too large to share its values (10 M hostnames).
///
/// The series are ordered by their group's values before reading, from the catalog's dictionaries,
/// and then read in halves on two threads, each half's rows in that order: nothing is sorted after.
pub(super) async fn run_last_table(engine: Arc<Engine>, plan: RawPlan, group: &[usize], desc: bool) -> Result<Option<LastTable>, String> {
    if plan.tail != Some(1) || group.is_empty() {
        return Ok(None);
    }
    let (tag_values, order) = {
        let cat = engine.catalog();
        let sc = &plan.scope;
        let Some(t) = cat.db_by_id(sc.db).and_then(|d| d.table_by_id(sc.table)) else { return Ok(None) };
        let mut tag_values: Vec<Arc<[ArcStr]>> = Vec::with_capacity(plan.tag_cols.len());
        for c in &plan.tag_cols {
            match t.tag_dict(*c).map(|d| d.shared_values()) {
                Some(Some(v)) => tag_values.push(v),
                Some(None) => return Ok(None),
                None => tag_values.push(Arc::from(Vec::new())),
            }
        }
        let tag = |s: SeriesId, i: usize| t.series_tag_code(s, plan.tag_cols[i]).and_then(|c| tag_values[i].get(c as usize)).map(|v| &**v);
        // Tag conditions keep or drop whole series; one left on fields leaves rows to filter.
        let mut keyed: Vec<(u128, SeriesId)> = Vec::with_capacity(sc.series.len());
        for s in &sc.series {
            match plan.pred.residual(&|c| plan.tag_cols.iter().position(|x| *x == c).and_then(|i| tag(*s, i))) {
                Pred::Const(true) => keyed.push((super::text_prefix(tag(*s, group[0]).unwrap_or("")), *s)),
                Pred::Const(false) => {}
                _ => return Ok(None),
            }
        }
        // A missing tag groups as '' (as `Ctx::raw` has it).
        let key = |s: SeriesId| group.iter().map(move |g| tag(s, *g).unwrap_or(""));
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| key(a.1).cmp(key(b.1))));
        if keyed.windows(2).any(|w| w[0].0 == w[1].0 && key(w[0].1).eq(key(w[1].1))) {
            return Ok(None);
        }
        let mut order: Vec<SeriesId> = keyed.into_iter().map(|(_, s)| s).collect();
        if desc {
            order.reverse();
        }
        (tag_values, order)
    };
    #[cfg(test)]
    TABLED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let n = order.len();
    let table = (plan.scope.db, plan.scope.table);
    let parts = in_parts(engine, table, Arc::new(TablePlan { raw: plan, order }), n, last_rows).await?;
    // Sized once: grown part by part, the 1 MB of cells of 4,000 hosts' last rows were copied again.
    let mut out = LastTable {
        tag_values,
        codes: Vec::with_capacity(parts.iter().map(|p| p.0.len()).sum()),
        cells: Vec::with_capacity(parts.iter().map(|p| p.1.len()).sum()),
    };
    for (codes, cells) in parts {
        out.codes.extend(codes);
        out.cells.extend(cells);
    }
    Ok(Some(out))
}

/// The rows of `plan.order[range]` for [`run_last_table`]: per series with a row, its tags' codes and
/// the cells of its last row.
fn last_rows(engine: &Engine, plan: &TablePlan, range: std::ops::Range<usize>) -> Result<(Vec<u32>, Vec<Cell>), String> {
    let (raw, series) = (&plan.raw, &plan.order[range]);
    let sc = &raw.scope;
    let tail = engine.snapshot_tail(sc.db, sc.table, series, sc.lo, sc.hi, &sc.fields, 1);
    let width = 1 + raw.selected;
    let mut read: Vec<SeriesId> = Vec::with_capacity(series.len());
    let mut cells = Vec::with_capacity(series.len() * width);
    // Where every segment has its table of last rows, a lookup costs the same in any order: read in the
    // answer's, with no copy after (the copy was 8 % of 4,000 hosts' lastpoint).
    if tail.from_tables() {
        let mut last = LastRow { ts: 0, values: Vec::new() };
        for sid in series {
            if !push_last_row(&tail, raw, *sid, &mut last, &mut cells)? {
                continue;
            }
            if read.len() == RESULT_ROWS_MAX {
                return Err(too_many_rows());
            }
            read.push(*sid);
        }
        drop(tail);
        return Ok((tag_codes(engine, raw, &read), cells));
    }
    // Else read by series id, then put in the answer's order: ids follow the storage's order (a segment's
    // block index lists series by id), the answer's the tag values', so reading in the answer's order went
    // from one block index group, and one allocation of column statistics, to another at random.
    let mut by_id: Vec<u32> = (0..series.len() as u32).collect();
    by_id.sort_unstable_by_key(|i| series[*i as usize]);
    let mut rows = Vec::with_capacity(series.len() * width);
    // Per series of the part, where its row starts in `rows` (`u32::MAX`: no row).
    let mut row_at = vec![u32::MAX; series.len()];
    let mut n_rows = 0;
    let mut last = LastRow { ts: 0, values: Vec::new() };
    for i in by_id {
        let start = rows.len();
        if !push_last_row(&tail, raw, series[i as usize], &mut last, &mut rows)? {
            continue;
        }
        debug_assert_eq!(rows.len() - start, width);
        if n_rows == RESULT_ROWS_MAX {
            return Err(too_many_rows());
        }
        n_rows += 1;
        row_at[i as usize] = u32::try_from(start).map_err(|_| too_many_rows())?;
    }
    drop(tail);
    for (sid, at) in series.iter().zip(&row_at) {
        if *at != u32::MAX {
            read.push(*sid);
            cells.extend_from_slice(&rows[*at as usize..*at as usize + width]);
        }
    }
    Ok((tag_codes(engine, raw, &read), cells))
}

/// The tags' dictionary codes of the series `read`, a row each, for [`last_rows`]: taken after the reads,
/// so that the catalog's lock is not held while reading. A series' codes never change, and were in the
/// dictionaries when the statement was planned.
fn tag_codes(engine: &Engine, raw: &RawPlan, read: &[SeriesId]) -> Vec<u32> {
    let sc = &raw.scope;
    let cat = engine.catalog();
    let t = cat.db_by_id(sc.db).and_then(|d| d.table_by_id(sc.table));
    let mut codes = Vec::with_capacity(read.len() * raw.tag_cols.len());
    // Each series' tag set looked up once, and the plan's tags found in its columns once per shape (a
    // table's series mostly share one): a lookup per tag and series was 7 % of 4,000 hosts' lastpoint.
    let mut shape: (&[ColId], Vec<Option<usize>>) = (&[], Vec::new());
    for s in read {
        let Some(tags) = t.and_then(|t| t.series_tags(*s)) else {
            codes.extend(std::iter::repeat_n(NO_CODE, raw.tag_cols.len()));
            continue;
        };
        if !std::ptr::eq(tags.cols, shape.0) {
            shape = (tags.cols, raw.tag_cols.iter().map(|c| tags.cols.binary_search(c).ok()).collect());
        }
        codes.extend(shape.1.iter().map(|at| at.map_or(NO_CODE, |i| tags.vals[i])));
    }
    codes
}

/// Reads the last row of `sid` in the range into `last` ([`TailSnapshot::read_last_into`]) and adds its time
/// and the plan's selected fields to `cells`; `false`, adding nothing, when the series has no row there or
/// none of the selected fields set in it (the SQL's `f1 IS NOT NULL OR ...`).
fn push_last_row(tail: &TailSnapshot, plan: &RawPlan, sid: SeriesId, last: &mut LastRow, cells: &mut Vec<Cell>) -> Result<bool, String> {
    if !tail.read_last_into(sid, last).map_err(|e| e.to_string())? {
        return Ok(false);
    }
    let selected = &last.values[..plan.selected];
    if selected.iter().all(Option::is_none) {
        return Ok(false);
    }
    cells.reserve_exact(1 + selected.len());
    cells.push(Cell::Time(last.ts));
    cells.extend(selected.iter().map(|v| v.as_ref().map_or(Cell::Null, value_cell)));
    Ok(true)
}

/// Adds to `cells` the rows (time, selected fields) of the run `r` of one series that are in the
/// statement's range, pass `residual` and have a selected field set; `n_rows` counts the part's rows.
/// `false` when one more would pass [`RESULT_ROWS_MAX`].
fn run_rows(plan: &RawPlan, residual: &Pred, r: RowsRef<'_>, cells: &mut Vec<Cell>, n_rows: &mut usize) -> bool {
    let sc = &plan.scope;
    let (start, end) = (r.ts.partition_point(|t| *t < sc.lo), r.ts.partition_point(|t| *t <= sc.hi));
    // Rows `start..end` of the run are rows `off + start..off + end` of its columns.
    let off = r.offset;
    let mask = match residual {
        Pred::Const(true) => None,
        p => Some(p.mask(&|f| if f < r.n_cols() { r.col(f) } else { None }, off + start..off + end)),
    };
    // The selected columns, looked up and matched on their type once per run rather than per cell (a
    // tenth of TSBS high-cpu-all's CPU went to finding and matching them per cell).
    let cols: Vec<ColumnRead<'_>> = (0..plan.selected).map(|f| ColumnRead::of(r.col(f))).collect();
    let kept = |i: usize| mask.as_ref().is_none_or(|m| m[i - start]) && cols.iter().any(|c| c.is_set(off + i));
    // Counted first, and room made for exactly them: grown by doubling instead, the cells of TSBS's
    // high-cpu-all at 4,000 hosts (1.6 M rows of 11, 24 bytes each) were copied at each doubling into
    // fresh pages, a fifth of its CPU.
    let n = (start..end).filter(|i| kept(*i)).count();
    cells.reserve_exact(n.min(RESULT_ROWS_MAX.saturating_sub(*n_rows)) * (1 + cols.len()));
    for i in start..end {
        if !kept(i) {
            continue;
        }
        if *n_rows == RESULT_ROWS_MAX {
            return false;
        }
        *n_rows += 1;
        cells.push(Cell::Time(r.ts[i]));
        cells.extend(cols.iter().map(|c| c.cell(off + i)));
    }
    true
}

/// A column's values by type, for reading cell after cell (see [`run_rows`]).
enum ColumnRead<'a> {
    Missing,
    Float(&'a [f64], &'a [bool]),
    Integer(&'a [i64], &'a [bool]),
    Other(&'a sundial_storage::types::Column),
}

impl<'a> ColumnRead<'a> {
    fn of(c: Option<&'a sundial_storage::types::Column>) -> Self {
        match c {
            None => ColumnRead::Missing,
            Some(c) => match &c.values {
                ColumnValues::Float(v) => ColumnRead::Float(v, &c.validity),
                ColumnValues::Integer(v) => ColumnRead::Integer(v, &c.validity),
                _ => ColumnRead::Other(c),
            },
        }
    }

    fn is_set(&self, r: usize) -> bool {
        match self {
            ColumnRead::Missing => false,
            ColumnRead::Float(_, valid) | ColumnRead::Integer(_, valid) => valid[r],
            ColumnRead::Other(c) => c.validity[r],
        }
    }

    fn cell(&self, r: usize) -> Cell {
        match self {
            ColumnRead::Missing => Cell::Null,
            ColumnRead::Float(v, valid) => if valid[r] { Cell::Float(v[r]) } else { Cell::Null },
            ColumnRead::Integer(v, valid) => if valid[r] { Cell::Integer(v[r]) } else { Cell::Null },
            ColumnRead::Other(c) => column_cell(c, r),
        }
    }
}

/// The value of tag `c` among a series' `tags` (the plan's tag columns' cells).
fn tag_value<'t>(plan: &RawPlan, tags: &'t [Cell], c: ColId) -> Option<&'t str> {
    match plan.tag_cols.iter().position(|x| *x == c).map(|i| &tags[i]) {
        Some(Cell::String(v)) => Some(v),
        _ => None,
    }
}

/// [`raw_rows`] over a whole snapshot: the series read through one scan, which hands a block's rows
/// out where they were decoded and leaves out the blocks whose statistics show no row can meet the
/// series' field conditions (TSBS's high-cpu: `usage_user > 90`).
fn full_rows(
    plan: &RawPlan,
    snap: &sundial_storage::engine::TableSnapshot,
    series: &[SeriesId],
    series_tags: Vec<Vec<Cell>>,
) -> Result<Vec<Chunk>, String> {
    let sc = &plan.scope;
    // Per series (by position in `series`): what is left of the condition once its tags are known.
    let mut residuals: Vec<Pred> = Vec::with_capacity(series.len());
    let mut wanted: Vec<SeriesId> = Vec::with_capacity(series.len());
    for (sid, tags) in series.iter().zip(&series_tags) {
        let residual = plan.pred.residual(&|c| tag_value(plan, tags, c));
        if !matches!(residual, Pred::Const(false)) {
            wanted.push(*sid);
        }
        residuals.push(residual);
    }
    // `series` is ascending (the scan's order too): a series' position by binary search.
    let at = |s: SeriesId| series.binary_search(&s).expect("a scanned series is one of the part's");
    let mut out: Vec<Chunk> = Vec::new();
    let mut n_rows = 0usize;
    let mut too_many = false;
    // Hours too, for the fields the condition compares: a block of a day holds a threshold's rows in a
    // few of its hours (TSBS's `usage_user > 90`: about a fifth of a host's hours), whose pages alone
    // are decoded then.
    let mut compared = Vec::new();
    plan.pred.compared_fields(&mut compared);
    compared.retain(|f| matches!(sc.fields[*f].1, FieldType::Integer | FieldType::Float));
    let hour_cols: Vec<(ColId, FieldType)> = compared.iter().map(|f| sc.fields[*f]).collect();
    let mut hour_col = vec![None; sc.fields.len()];
    for (i, f) in compared.iter().enumerate() {
        hour_col[*f] = Some(i);
    }
    let mut keep_hour = |s: SeriesId, h: &HourStats, k: usize| {
        let keep = residuals[at(s)].may_hold_hour(h, k, &sc.fields, &hour_col);
        #[cfg(test)]
        HOURS_SKIPPED.fetch_add(usize::from(!keep), std::sync::atomic::Ordering::Relaxed);
        keep
    };
    let hours = (!hour_cols.is_empty()).then(|| HourFilter { cols: &hour_cols, keep: &mut keep_hour });
    snap.scan_blocks_where(
        &wanted,
        |s, b| residuals[at(s)].may_hold(b, &sc.fields),
        hours,
        |r| {
            if too_many {
                return;
            }
            // A chunk per run (a series comes in one or more: blocks, spans of hours, memtables), each
            // made at its size (see `run_rows`): a series' runs appended to one vector grew it by
            // doubling. The answer groups a series' chunks again (`Ctx::raw`).
            let k = at(r.series);
            let mut cells = Vec::new();
            too_many = !run_rows(plan, &residuals[k], r, &mut cells, &mut n_rows);
            if !cells.is_empty() {
                out.push(Chunk { tags: series_tags[k].clone(), cells });
            }
        },
    )
    .map_err(|e| e.to_string())?;
    if too_many {
        return Err(too_many_rows());
    }
    Ok(out)
}

fn value_cell(v: &Value) -> Cell {
    match v {
        Value::Float(v) => Cell::Float(*v),
        Value::Integer(v) => Cell::Integer(*v),
        Value::UInteger(v) => Cell::UInteger(*v),
        Value::String(v) => Cell::String(v.as_str().into()),
        Value::Boolean(v) => Cell::Boolean(*v),
    }
}

fn column_cell(c: &sundial_storage::types::Column, r: usize) -> Cell {
    if !c.validity[r] {
        return Cell::Null;
    }
    match &c.values {
        ColumnValues::Float(v) => Cell::Float(v[r]),
        ColumnValues::Integer(v) => Cell::Integer(v[r]),
        ColumnValues::UInteger(v) => Cell::UInteger(v[r]),
        ColumnValues::String(v) => Cell::String(v[r].as_str().into()),
        ColumnValues::Boolean(v) => Cell::Boolean(v[r]),
    }
}

/// The statement's rows, a [`Chunk`] per series (or part of one) with rows, each row its time and the
/// selected fields.
pub(super) async fn run_raw(engine: Arc<Engine>, plan: RawPlan) -> Result<Vec<Chunk>, String> {
    let n = plan.scope.series.len();
    let width = 1 + plan.selected;
    let mut out = Vec::new();
    let mut n_rows = 0usize;
    let table = (plan.scope.db, plan.scope.table);
    for part in in_parts(engine, table, Arc::new(plan), n, raw_rows).await? {
        n_rows += part.iter().map(|c| c.cells.len() / width).sum::<usize>();
        if n_rows > RESULT_ROWS_MAX {
            return Err(too_many_rows());
        }
        out.extend(part);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    //! Differential: random statements over random data, answered natively and through DataFusion.

    use std::sync::Arc;

    use sundial_storage::engine::WritePoint;
    use sundial_storage::types::Value;
    use sundial_storage::{Engine, EngineConfig};

    use crate::QueryEngine;
    use crate::influx::{Cell, InfluxQl, StatementResult};
    use super::partition_near;

    /// splitmix64: reproducible without a dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
            xs[self.below(xs.len() as u64) as usize]
        }
    }

    const T0: i64 = 1_451_606_400_000_000_000; // 2016-01-01T00:00:00Z

    /// The integer fast paths (one integer sum; best value then its position) give exactly what the
    /// one-by-one folds give, including near and past the 2^53 bound where doubles start rounding.
    #[test]
    fn partition_near_answers_as_partition_point() {
        for len in 0..40i64 {
            for step in [1, 2, 3] {
                // Distinct times (step 1) and runs of equal ones (a bucket of several rows at one time).
                let ts: Vec<i64> = (0..len).map(|i| i * 2 / step).collect();
                for limit in -1..=len * 2 + 1 {
                    assert_eq!(partition_near(&ts, limit), ts.partition_point(|t| *t < limit), "{ts:?} below {limit}");
                }
            }
        }
    }

    /// A dense slot index numbers (group, bucket) pairs as the hashed one does, in first-seen order,
    /// including buckets outside its range (spilled) and both ends of it.
    #[test]
    fn dense_slots_number_as_hashed_ones() {
        use super::SlotIndex;
        let mut rng = Rng(11);
        let (base, interval, buckets, groups) = (-35, 10, 7, 5);
        let mut dense = SlotIndex::Dense { base, interval, buckets, at: vec![u32::MAX; buckets * groups], spill: Default::default() };
        let mut hashed = SlotIndex::Hash(Default::default());
        let mut next = 0;
        for _ in 0..400 {
            let group = rng.below(groups as u64) as u32;
            // Buckets from two before the range to two past it.
            let bucket = base + (rng.below(buckets as u64 + 4) as i64 - 2) * interval;
            let (d, h) = (dense.get_or_insert(group, bucket, next), hashed.get_or_insert(group, bucket, next));
            assert_eq!(d, h, "group {group} bucket {bucket}");
            if d == next {
                next += 1;
            }
        }
        assert!(next > groups * buckets / 2, "most pairs seen: {next}");
    }

    #[test]
    fn integer_fast_paths_match_the_plain_folds() {
        use super::Num;
        let mut rng = Rng(7);
        for round in 0..2000 {
            let n = 1 + rng.below(300) as usize;
            let scale: i64 = [3, 1000, 1 << 40, 1 << 46, 1 << 52, i64::MAX / 2][round % 6];
            let vals: Vec<i64> = (0..n).map(|_| (rng.next() % (2 * scale as u64 + 1)) as i64 - scale).collect();
            let acc = [0.0, 12345.0, (1u64 << 52) as f64, -3.0, 0.5][round % 5];
            let plain = vals.iter().fold(acc, |s, v| s + *v as f64);
            assert_eq!(i64::sum_f64(acc, &vals).to_bits(), plain.to_bits(), "{vals:?} from {acc}");
            let plain = |better: fn(&i64, &i64) -> bool| (1..n).fold(0, |i, j| if better(&vals[j], &vals[i]) { j } else { i });
            assert_eq!(i64::first_min(&vals), plain(|a, b| a < b));
            assert_eq!(i64::first_max(&vals), plain(|a, b| a > b));
        }
        let extremes = [i64::MIN, i64::MAX, 1, -1];
        assert_eq!(i64::sum_f64(0.0, &extremes).to_bits(), extremes.iter().fold(0.0, |s, v| s + *v as f64).to_bits());
        // Equal values: the first wins.
        assert_eq!(i64::first_max(&[1, 5, 5, 2, 5]), 1);
        assert_eq!(i64::first_min(&[4, 1, 5, 1]), 1);
    }

    const SEC: i64 = 1_000_000_000;

    /// Six hosts, some without `region` or `dc`; fields `a` and `b` (floats, sometimes unset; `a` always
    /// set on h0 and h3) and `n`, an integer. Rows on a 10 s grid so series share timestamps
    /// (first()/last() ties), some written twice (the later value wins), half flushed to a segment.
    /// Data that takes every read path of a scan: series found in one segment block of their own, in
    /// blocks of two segments that do not overlap in time (two runs) and that do (merged), packed
    /// with other series (one-row to three-row series), and partly in the memtable.
    fn load(engine: &Engine, rng: &mut Rng) {
        engine.create_database("db", 0, false).unwrap();
        let tags = |i: usize, prefix: &str| {
            let region = [Some("r0"), Some("r1"), None][i % 3];
            let dc = if i % 2 == 0 { Some("d0") } else { None };
            (format!("{prefix}{i}"), region, dc)
        };
        let hosts: Vec<(String, Option<&str>, Option<&str>)> = (0..6).map(|i| tags(i, "h")).collect();
        let packed: Vec<(String, Option<&str>, Option<&str>)> = (0..40).map(|i| tags(i, "p")).collect();
        let write = |rng: &mut Rng, hosts: &[(String, Option<&str>, Option<&str>)], steps: &dyn Fn(usize) -> std::ops::Range<i64>| {
            let mut points = Vec::new();
            for (i, (host, region, dc)) in hosts.iter().enumerate() {
                for step in steps(i) {
                    if rng.below(10) < 2 {
                        continue;
                    }
                    let mut tags = vec![("host", host.as_str())];
                    tags.extend(region.map(|r| ("region", r)));
                    tags.extend(dc.map(|d| ("dc", d)));
                    let mut fields = Vec::new();
                    let value = |rng: &mut Rng| (rng.below(64) as f64 - 32.0) / 8.0; // few values: min/max ties
                    // h0 and h3 always have `a`: runs with every value set take `fold_dense`.
                    if host == "h0" || host == "h3" || rng.below(10) < 8 {
                        fields.push(("a", Value::Float(value(rng))));
                    }
                    if rng.below(10) < 6 {
                        fields.push(("b", Value::Float(value(rng))));
                    }
                    if fields.is_empty() || rng.below(10) < 5 {
                        fields.push(("n", Value::Integer(rng.below(100) as i64)));
                    }
                    points.push(WritePoint { line: 1, table: "m", key: None, known: None, tags: tags.into(), fields: fields.into(), ts: T0 + step * 10 * SEC });
                }
            }
            engine.write("db", &points).unwrap();
        };
        write(rng, &hosts, &|_| 0..720);
        engine.flush().unwrap();
        // Even hosts overwrite the second hour (overlapping blocks), odd ones go on for two more hours.
        write(rng, &hosts, &|i| if i % 2 == 0 { 360..720 } else { 720..1440 });
        engine.flush().unwrap();
        write(rng, &packed, &|i| (100 + i as i64 * 7)..(100 + i as i64 * 7 + 1 + i as i64 % 3));
        engine.flush().unwrap();
        // A host whose `a` and `n` stay low in its even hours (their hour statistics rule them out of
        // `a > 1.5` or `n > 90`: `HourFilter`) and not in its odd ones, flushed; its own generator, so
        // the statements drawn after are those of the data above.
        let mut own = Rng(1234);
        let mut points = Vec::new();
        for step in 0..1800i64 {
            let low = (step / 360) % 2 == 0;
            let a = if low { own.below(40) as f64 / 8.0 - 4.0 } else { own.below(64) as f64 / 8.0 - 4.0 };
            let n = if low { own.below(50) as i64 } else { own.below(100) as i64 };
            let fields = vec![("a", Value::Float(a)), ("n", Value::Integer(n))];
            points.push(WritePoint { line: 1, table: "m", key: None, known: None, tags: vec![("host", "hz")].into(), fields: fields.into(), ts: T0 + step * 10 * SEC });
        }
        engine.write("db", &points).unwrap();
        engine.flush().unwrap();
        write(rng, &hosts[1..2], &|_| 50..60); // the memtable over a flushed block
        // The earliest row of all has neither `a` nor `b`: reads of their first buckets must not stop there.
        let early = WritePoint { line: 1, table: "m", key: None, known: None, tags: vec![("host", "h9")].into(), fields: vec![("n", Value::Integer(1))].into(), ts: T0 - 3600 * SEC };
        engine.write("db", &[early]).unwrap();
    }

    fn statement(rng: &mut Rng) -> String {
        let funcs = ["count", "sum", "mean", "min", "max", "first", "last"];
        let fields = ["a", "b", "n"];
        let select = match rng.below(6) {
            0 => format!("{}({})", rng.pick(&funcs), rng.pick(&fields)),
            1 => "max(a) - min(a), count(b)".to_string(),
            2 => format!("{}(*)", rng.pick(&funcs)),
            _ => (0..1 + rng.below(3))
                .map(|_| format!("{}({})", rng.pick(&funcs), rng.pick(&fields)))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let select = if rng.below(20) == 0 { format!("{select}, median(n)") } else { select };
        let conds = [
            "",
            "host = 'h1'",
            "host = 'h1' OR host = 'h4'",
            "region != 'r0'",
            "dc = ''",
            "dc != ''",
            "region =~ /r[01]/",
            "host !~ /h[12]/",
            "nope = 'x'",
            "nope = ''",
            "host > 'h2' AND region = 'r1'",
            "(host = 'h0' OR host = 'h3') AND dc = 'd0'",
            "a > 10",
            // Field comparisons: raw statements read them natively, aggregates through SQL.
            "a > 0.5",
            "n >= 50",
            "n > 49.5",
            "n = 7",
            "0 < a",
            "a > -1.5 AND b != 1",
            "a < 0 OR host = 'h2'",
            "(a > 1 OR b < -1) AND region = 'r0'",
            "host = 'h1' AND n <= 20",
            "b <= n",
        ];
        let lo = T0 + rng.below(7200) as i64 * SEC;
        let hi = lo + (1 + rng.below(7200)) as i64 * SEC;
        let mut wh = match rng.below(4) {
            0 => Vec::new(),
            1 => vec![format!("time >= {lo}")],
            _ => vec![format!("time >= {lo}"), format!("time < {hi}")],
        };
        let c = rng.pick(&conds);
        if !c.is_empty() {
            wh.push(format!("({c})"));
        }
        let group = ["", "time(5m)", "time(7m, 2m)", "host", "region", "*", "time(10m), host", "dc, time(1h)"];
        let mut g = rng.pick(&group).to_string();
        if g.contains("time(") && wh.len() < 2 {
            g = g.replace("time(5m)", "host"); // buckets need a bounded range here
            if g.contains("time(") {
                wh = vec![format!("time >= {lo}"), format!("time < {hi}")];
            }
        }
        // The first buckets only (no lower bound, in time order): `head_bound`.
        if g.contains("time(") && rng.below(3) == 0 {
            wh.retain(|c| !c.starts_with("time >="));
            wh.insert(0, format!("time < {hi}"));
            g.push_str(rng.pick(&["", " fill(previous)", " fill(0)", " fill(none)", " fill(linear)"]));
            g.push_str(rng.pick(&[" LIMIT 3", " LIMIT 2 OFFSET 1", " LIMIT 1", " ORDER BY time DESC LIMIT 2"]));
        }
        let raw = rng.below(4) == 0;
        let select = if raw { rng.pick(&["*", "a, b", "a", "b, host", "*, a + b", "n, a"]).to_string() } else { select };
        if raw {
            g = rng.pick(&["", "host", "region", "*"]).to_string();
        }
        let mut q = format!("SELECT {select} FROM m");
        if !wh.is_empty() {
            q.push_str(&format!(" WHERE {}", wh.join(" AND ")));
        }
        if !g.is_empty() {
            q.push_str(&format!(" GROUP BY {g}"));
        }
        if raw {
            q.push_str(rng.pick(&["", " ORDER BY time DESC LIMIT 1", " ORDER BY time DESC LIMIT 3 OFFSET 1", " LIMIT 4"]));
        }
        q
    }

    fn close(a: &Cell, b: &Cell) -> bool {
        match (a, b) {
            (Cell::Float(x), Cell::Float(y)) => x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
            _ => a == b,
        }
    }

    fn same(a: &[StatementResult], b: &[StatementResult]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| {
                x.error == y.error
                    && x.series.len() == y.series.len()
                    && x.series.iter().zip(&y.series).all(|(s, t)| {
                        s.name == t.name
                            && s.tags == t.tags
                            && s.columns == t.columns
                            && match (&s.values, &t.values) {
                                (Some(u), Some(v)) => {
                                    let (u, v) = (u.rows(), v.rows());
                                    u.len() == v.len()
                                        && u.iter().zip(v.iter()).all(|(r, q)| r.len() == q.len() && r.iter().zip(q).all(|(c, d)| close(c, d)))
                                }
                                (u, v) => u == v,
                            }
                    })
            })
    }

    /// Enough series for a table's reads to be split over two threads (`in_parts`), some flushed, some
    /// in the memtable, some without a row in the range: the table answers as the SQL path does, under
    /// conditions on time and tags and SLIMIT.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_table_of_a_thousand_series_answers_as_the_sql_path_does() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Arc::new(Engine::open(EngineConfig::new(dir.path())).unwrap());
        engine.create_database("db", 0, false).unwrap();
        let hosts: Vec<String> = (0..1100).map(|i| format!("host_{i}")).collect();
        for (round, steps) in [(0, 0..3), (1, 3..5)] {
            let mut points = Vec::new();
            for (i, h) in hosts.iter().enumerate() {
                for step in steps.clone() {
                    let fields = vec![("a", Value::Float(i as f64 + step as f64 / 4.0)), ("n", Value::Integer((i * 7 + step) as i64))];
                    // A tenth of the hosts stop early: their last row is older than the others'.
                    if i % 10 == 3 && step > 1 {
                        continue;
                    }
                    let tags = vec![("host", h.as_str()), ("region", ["r0", "r1", "r2"][i % 3])];
                    points.push(WritePoint { line: 1, table: "m", key: None, known: None, tags: tags.into(), fields: fields.into(), ts: T0 + step as i64 * SEC });
                }
            }
            engine.write("db", &points).unwrap();
            if round == 0 {
                engine.flush().unwrap();
            }
        }
        let native = InfluxQl::new(Arc::new(QueryEngine::new(engine.clone())));
        let sql = InfluxQl::new(Arc::new(QueryEngine::new(engine.clone()).with_influxql_native(false)));
        for q in [
            "SELECT * FROM m GROUP BY host ORDER BY time DESC LIMIT 1".to_string(),
            format!("SELECT * FROM m WHERE time > {} GROUP BY host ORDER BY time DESC LIMIT 1 SLIMIT 600 SOFFSET 300", T0 + 2 * SEC),
            "SELECT * FROM m WHERE region != 'r1' GROUP BY region, host ORDER BY time DESC LIMIT 1".to_string(),
        ] {
            let before = super::TABLED.load(std::sync::atomic::Ordering::Relaxed);
            let a = native.execute(Some("db"), &q, T0 + 86_400 * SEC).await.unwrap();
            assert!(super::TABLED.load(std::sync::atomic::Ordering::Relaxed) > before, "{q} was not answered as a table");
            let b = sql.execute(Some("db"), &q, T0 + 86_400 * SEC).await.unwrap();
            assert!(a[0].series.len() > 500, "{q}: {} series", a[0].series.len());
            assert!(same(&a, &b), "{q}\nnative: {a:?}\nsql:    {b:?}");
        }
    }

    /// A raw answer of more rows than `Ctx::raw` sorts by comparison (it radix-sorts them by time, the
    /// series' chunks taken in series-key order): rows ordered by time, then by series key, as InfluxDB
    /// orders them, with series in several chunks (rows flushed, rows in the memtable) and every time
    /// shared by all series; grouped by a tag, each group ordered so too.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn large_raw_answers_order_rows_by_time_then_series() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Arc::new(Engine::open(EngineConfig::new(dir.path())).unwrap());
        engine.create_database("db", 0, false).unwrap();
        let (n_hosts, n_steps) = (70usize, 1_000i64);
        // Hosts written in an order that is neither their ids' nor their keys'.
        let hosts: Vec<String> = (0..n_hosts).rev().map(|i| format!("host_{}", (i * 37) % n_hosts)).collect();
        for steps in [0..600, 600..n_steps] {
            let mut points = Vec::new();
            for (i, host) in hosts.iter().enumerate() {
                for step in steps.clone() {
                    let tags = vec![("host", host.as_str()), ("region", ["r0", "r1"][i % 2])];
                    let fields = vec![("a", Value::Float(step as f64)), ("n", Value::Integer(i as i64))];
                    points.push(WritePoint { line: 1, table: "m", key: None, known: None, tags: tags.into(), fields: fields.into(), ts: T0 + step * 10 * SEC });
                }
            }
            engine.write("db", &points).unwrap();
            engine.flush().unwrap();
        }
        let native = InfluxQl::new(Arc::new(QueryEngine::new(engine.clone())));
        for (q, groups) in [("SELECT * FROM m", 1), ("SELECT * FROM m GROUP BY region", 2)] {
            let a = native.execute(Some("db"), q, T0 + 86_400 * SEC).await.unwrap();
            assert_eq!(a[0].series.len(), groups, "{q}");
            let mut total = 0;
            for s in &a[0].series {
                let host = s.columns.iter().position(|c| c == "host").unwrap();
                let rows = s.values.as_ref().unwrap().rows();
                total += rows.len();
                let keys: Vec<(i64, String)> = rows
                    .iter()
                    .map(|r| match (&r[0], &r[host]) {
                        (Cell::Time(t), Cell::String(h)) => (*t, h.to_string()),
                        other => panic!("{q}: row {other:?}"),
                    })
                    .collect();
                assert!(keys.windows(2).all(|w| w[0] < w[1]), "{q}: rows out of (time, host) order");
            }
            assert_eq!(total, n_hosts * n_steps as usize, "{q}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn native_aggregates_answer_as_the_sql_path_does() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Arc::new(Engine::open(EngineConfig::new(dir.path())).unwrap());
        let mut rng = Rng(7);
        load(&engine, &mut rng);
        let native = InfluxQl::new(Arc::new(QueryEngine::new(engine.clone())));
        let sql = InfluxQl::new(Arc::new(QueryEngine::new(engine.clone()).with_influxql_native(false)));
        let now = T0 + 86_400 * SEC;
        let (mut answered, mut rows) = (0, 0);
        // Selectors with their point's time over whole series (ties among equal values go to the
        // earliest), then random statements.
        let fixed = ["min", "max", "first", "last"]
            .iter()
            .flat_map(|f| {
                [format!("SELECT {f}(a) FROM m WHERE host = 'h0'"), format!("SELECT {f}(a) FROM m GROUP BY host"), format!("SELECT {f}(n) FROM m")]
            })
            // TSBS's groupby-orderby-limit: the first buckets of a range without a lower bound; `b` is
            // unset on some first rows, so its narrowed read must notice and read on.
            .chain(["max(a)", "max(b)", "count(b), min(n)", "first(b)"].iter().flat_map(|f| {
                [
                    format!("SELECT {f} FROM m WHERE time < {} GROUP BY time(1m) LIMIT 5", T0 + 3600 * SEC),
                    format!("SELECT {f} FROM m WHERE time < {} AND host = 'h1' GROUP BY time(30s) fill(previous) LIMIT 4 OFFSET 2", T0 + 3600 * SEC),
                    format!("SELECT {f} FROM m WHERE host = 'h5' GROUP BY time(10s, 5s) LIMIT 3"),
                ]
            }))
            // Whole hours answered from blocks' hour statistics (`Plan::hourly`), with ranges starting
            // on the hour and between hours (the rows around the whole hours are read), and buckets of
            // one hour, of two hours on odd hours, and none.
            .chain(
                [(0, 4 * 3600), (1234, 3 * 3600 + 17), (3599, 7201)]
                    .iter()
                    .flat_map(|(lo, hi)| {
                        ["time(1h), host", "time(2h, 1h)", "host", "*"].iter().map(move |g| {
                            format!(
                                "SELECT mean(a), max(n), count(b), sum(n), min(a), mean(n) FROM m WHERE time >= {} AND time < {} GROUP BY {g}",
                                T0 + lo * SEC,
                                T0 + hi * SEC
                            )
                        })
                    })
                    .collect::<Vec<_>>(),
            )
            // TSBS's high-cpu shapes: a field condition, alone and with a tag.
            .chain(["SELECT * FROM m WHERE a > 1.5".to_string(), "SELECT * FROM m WHERE n > 90.0 AND host = 'h1'".to_string()])
            // TSBS's lastpoint and its kin, answered as one table (`run_last_table`) where each series
            // is its own group, else as series: conditions on tags and time, tags some series lack,
            // SLIMIT and SOFFSET, groups of several series, a condition on a field.
            .chain(
                [
                    "GROUP BY host".to_string(),
                    "GROUP BY *".to_string(),
                    "WHERE region = 'r0' GROUP BY host".to_string(),
                    format!("WHERE host != 'h1' AND time >= {} GROUP BY dc, host", T0 + 1800 * SEC),
                    "WHERE time < 0 GROUP BY host".to_string(),
                    "GROUP BY host SLIMIT 3 SOFFSET 2".to_string(),
                    "GROUP BY host SLIMIT 5".to_string(),
                    "GROUP BY region".to_string(),
                    "WHERE a > 0 GROUP BY host".to_string(),
                    "GROUP BY host, nope".to_string(),
                ]
                .map(|w| {
                    let (w, s) = w.split_once(" SLIMIT").map_or((w.as_str(), String::new()), |(w, s)| (w, format!(" SLIMIT{s}")));
                    format!("SELECT * FROM m {w} ORDER BY time DESC LIMIT 1{s}")
                }),
            )
            .chain(["SELECT n, a, region, b, host FROM m GROUP BY host, dc ORDER BY time DESC LIMIT 1".to_string()])
            // Answers of more rows than one thread makes (groups × buckets ≥ FOLDED_PARALLEL_ROWS_MIN):
            // written by two, in halves, in the same order.
            .chain(["fill(null)", "fill(none)", "fill(previous)"].map(|f| {
                format!("SELECT mean(a), count(n), max(b) FROM m WHERE time >= {T0} AND time < {} GROUP BY time(1s), host {f}", T0 + 400 * SEC)
            }));
        let random: Vec<String> = (0..500).map(|_| statement(&mut rng)).collect();
        for q in fixed.chain(random) {
            let before = super::PLANNED.load(std::sync::atomic::Ordering::Relaxed);
            let a = native.execute(Some("db"), &q, now).await.unwrap();
            let planned = super::PLANNED.load(std::sync::atomic::Ordering::Relaxed) > before;
            let b = sql.execute(Some("db"), &q, now).await.unwrap();
            assert!(same(&a, &b), "{q}\nnative: {a:?}\nsql:    {b:?}");
            if q.starts_with("SELECT * FROM m WHERE ") && !q.contains('(') {
                assert!(planned, "{q} took the SQL path");
            }
            if planned {
                answered += 1;
                rows += a.iter().flat_map(|r| &r.series).map(|s| s.values.as_ref().map_or(0, |v| v.len())).sum::<usize>();
            }
        }
        // Most statements have the native shape, and they answer rows (not just empty results).
        assert!(answered > 300, "only {answered} of 526 statements were answered natively");
        let narrowed = super::NARROWED.load(std::sync::atomic::Ordering::Relaxed);
        let widened = super::WIDENED.load(std::sync::atomic::Ordering::Relaxed);
        assert!(narrowed >= 12 && widened >= 4 && narrowed - widened >= 4, "first-buckets reads: {narrowed} narrowed, {widened} read again");
        assert!(rows > 5_000, "native answers held only {rows} rows");
        let hours = super::HOURS_FOLDED.load(std::sync::atomic::Ordering::Relaxed);
        assert!(hours > 20, "only {hours} hours were folded from hour statistics");
        let skipped = super::HOURS_SKIPPED.load(std::sync::atomic::Ordering::Relaxed);
        assert!(skipped > 10, "only {skipped} hours were left unread by raw reads' conditions");
        let from_folds = super::WRITTEN_FROM_FOLDS.load(std::sync::atomic::Ordering::Relaxed);
        assert!(from_folds > 50, "only {from_folds} answers were written from the accumulators");
        let tabled = super::TABLED.load(std::sync::atomic::Ordering::Relaxed);
        assert!(tabled >= 7, "only {tabled} statements were answered as a table");
        let halves = super::WRITTEN_IN_HALVES.load(std::sync::atomic::Ordering::Relaxed);
        assert!(halves >= 2, "only {halves} answers were written by two threads");
        let merged = super::PACK_RUNS_MERGED.load(std::sync::atomic::Ordering::Relaxed);
        let alone = super::PACK_RUNS_ALONE.load(std::sync::atomic::Ordering::Relaxed);
        assert!(merged >= 5 && alone >= 100, "runs of packs' series folded as one: {merged}, series by series: {alone}");
    }
}
