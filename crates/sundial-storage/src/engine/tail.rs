//! The newest rows of each series: "last point per series" without reading whole series.
//!
//! A [`TailSnapshot`] answers, per series, the last `n` rows (by time) inside its time range, merged over
//! every source with last-write-wins, while reading only what can hold them:
//! - `n == 1` (the "lastpoint" query): from each segment, the statistics of the series' newest block give
//!   its last row without decoding anything (a column's value at the block's `ts_max` is `stats.last`
//!   when `stats.last_ts == ts_max`, else null). Strings keep no value statistics, and a block running
//!   past the range's end cannot say what its last row *inside* the range is; both fall back to decoding.
//!   A segment whose newest block ends before the newest block of another segment (one without deleted
//!   rows, ending inside the range) cannot hold the last row and is not read: a series over many day
//!   partitions reads one segment. Where the segment has its table of last rows
//!   ([`crate::last_values`]), the newest block's span and last values come from there, without a
//!   lookup in the block index.
//! - otherwise: from each segment only the newest blocks that together hold `n` rows inside the range.
//! - memtables: only the last `n` rows of each series buffer's in-order part and staging area are
//!   copied (binary search), then merged.
//! - a source with rows hidden by a delete (see [`crate::tombstone`]) is read whole and filtered, since
//!   its last rows may all be deleted; the range starts no earlier than the retention cutoff.
//!
//! - [`TailSnapshot::read_last`] answers `n == 1` as one `(time, values)` row folded from the same sources,
//!   without building a column per source.
//!
//! Why the merge stays exact: a timestamp among the last `n` distinct timestamps of the union is among the
//! last `n` of every source holding it, so each source's tail carries every row the answer needs, and the
//! last-write-wins merge of the tails agrees with that of the whole sources on those timestamps.

use std::sync::Arc;

use parking_lot::Mutex;

use super::{Engine, TableSnapshot};
use crate::catalog::{ColId, DbId, SeriesId, TableId};
use crate::error::Result;
use crate::last_values::{self, LastValues};
use crate::limits::LAST_VALUES_BUILD_BLOCKS_PER_SERIES;
use crate::rows::{self, SeriesRows};
use crate::segment::{BlockMeta, ColMeta, LastGroup, Segment, SeriesBlocks, stat_value};
use crate::tombstone;
use crate::types::{Column, FieldType, Value};

/// A [`TableSnapshot`] that reads only the last `n` rows of each series.
pub struct TailSnapshot {
    snap: TableSnapshot,
    n: usize,
    /// Whether segments' tables of last rows can answer (`n == 1`, no string column), and whether a
    /// segment's is built when missing (many series asked for: see [`LAST_VALUES_BUILD_BLOCKS_PER_SERIES`]).
    tables: bool,
    wanted: usize,
    walk: Mutex<Walk>,
}

/// What a [`TailSnapshot`] keeps from series to series, per segment: nothing that changes an answer,
/// only lookups and room saved (the last row of 4,000 series is a few microseconds each).
struct Walk {
    /// The block index group it last looked a series up in: series read in ascending order (as scans
    /// read them) find theirs without a trip to the block index cache.
    groups: Vec<LastGroup>,
    /// The series' blocks, when the segment hides none of its rows.
    blocks: Vec<SeriesBlocks>,
    /// Whether the segment hides none of the series' rows (then `blocks` holds them), and the end of
    /// its newest block touching the range when that ends inside it.
    clean: Vec<Option<Option<i64>>>,
    /// The segments by their newest time, newest first (`n == 1`: see [`TailSnapshot::sources`]).
    by_end: Vec<usize>,
    /// Whether the series' blocks in the segment were left unread, all of them older than its last row.
    passed: Vec<bool>,
    /// `n == 1`: the segment's table of last rows ([`LastValues`]) when it has one, with the requested
    /// columns' positions in it (looked for when a series first needs the segment: a segment every
    /// series passes, older than their last rows, is not built); the row the last lookup ended at; and
    /// the series' row when its newest block answers from there (its statistics would: see
    /// [`TailSnapshot::sources`]).
    lasts: Vec<Option<Lasts>>,
    tried: Vec<bool>,
    cursors: Vec<usize>,
    rows: Vec<Option<usize>>,
}

/// A segment's table of last rows and where the requested columns are in it.
type Lasts = (Arc<LastValues>, Vec<Option<usize>>);

impl Engine {
    /// Like [`Engine::snapshot`], for reading the last `n` rows of each series with
    /// [`TailSnapshot::read_series`]; copies only the tail of each active series buffer.
    #[allow(clippy::too_many_arguments)]
    pub fn snapshot_tail(
        &self,
        db: DbId,
        table: TableId,
        series: &[SeriesId],
        ts_min: i64,
        ts_max: i64,
        cols: &[(ColId, FieldType)],
        n: usize,
    ) -> TailSnapshot {
        assert!(n > 0, "a tail of zero rows");
        let snap = self.snapshot_rows(db, table, series, ts_min, ts_max, cols, n);
        let k = snap.segments.len();
        let mut by_end: Vec<usize> = (0..k).collect();
        by_end.sort_by_key(|i| std::cmp::Reverse(snap.segments[*i].ts_max));
        // A segment's table of last rows is only of use where block statistics answer (no strings).
        let tables = n == 1 && snap.cols.iter().all(|(_, ty)| *ty != FieldType::String);
        let walk = Walk {
            groups: vec![None; k],
            blocks: vec![SeriesBlocks::default(); k],
            clean: vec![None; k],
            by_end,
            passed: vec![false; k],
            lasts: vec![None; k],
            tried: vec![false; k],
            cursors: vec![0; k],
            rows: vec![None; k],
        };
        let tail = TailSnapshot { snap, n, tables, wanted: series.len(), walk: Mutex::new(walk) };
        // The newest segment's, looked for now: [`TailSnapshot::from_tables`] goes by it.
        let newest = tail.walk.lock().by_end.first().copied();
        if let Some(newest) = newest {
            let table = tail.table_of(&tail.snap.segments[newest]);
            let mut walk = tail.walk.lock();
            walk.tried[newest] = true;
            walk.lasts[newest] = table;
        }
        tail
    }
}

/// The last row of a series inside a range ([`TailSnapshot::read_last`]): its time and, per requested
/// column, its value (`None`: null).
#[derive(Clone, Debug, PartialEq)]
pub struct LastRow {
    pub ts: i64,
    pub values: Vec<Option<Value>>,
}

/// Where the last rows of a series may be: rows read from a source, or (`n == 1`) the newest block of a
/// segment whose statistics tell its last row, from the block index or the segment's table of last rows
/// (a row of it, the requested columns' positions in it).
enum Source<'b> {
    Rows(SeriesRows),
    Stats(&'b BlockMeta),
    Last(&'b LastValues, usize, &'b [Option<usize>]),
}

impl TailSnapshot {
    /// Whether the newest segment of the snapshot (where most series' last rows are, the older ones then
    /// passed) answers last rows from its table ([`LastValues`]), or there is no segment: then a series
    /// costs about the same whatever order they are read in, not only in ascending ids (the block
    /// index's order).
    pub fn from_tables(&self) -> bool {
        let walk = self.walk.lock();
        walk.by_end.first().is_none_or(|i| walk.lasts[*i].is_some())
    }

    /// Segment `seg`'s table of last rows with the requested columns' positions in it, if it has one or
    /// (enough series asked for) one is built now; a failure to build one leaves the block index to
    /// read (and to report it).
    fn table_of(&self, seg: &Segment) -> Option<Lasts> {
        if !self.tables {
            return None;
        }
        let build = self.wanted.saturating_mul(LAST_VALUES_BUILD_BLOCKS_PER_SERIES) >= seg.n_blocks();
        let t = seg.last_values(build).ok().flatten()?;
        let at = t.positions(&self.snap.cols);
        Some((t, at))
    }

    /// The last `n` rows of `series` in the range (fewer if it has fewer), or `None` if it has none.
    pub fn read_series(&self, series: SeriesId) -> Result<Option<SeriesRows>> {
        let s = &self.snap;
        let mut sources: Vec<SeriesRows> = Vec::new();
        self.sources(series, &mut |src| {
            sources.push(match src {
                Source::Rows(r) => r,
                Source::Stats(b) => stats_rows(b, series, &s.cols),
                Source::Last(t, row, at) => last_rows(t, row, at, series, &s.cols),
            })
        })?;
        newest_covering(&mut sources, self.n);
        let types: Vec<FieldType> = s.cols.iter().map(|c| c.1).collect();
        let Some(mut merged) = rows::merge(sources, &types) else { return Ok(None) };
        let len = merged.len();
        if len > self.n {
            let keep = len - self.n..len;
            merged.ts = merged.ts[keep.clone()].to_vec();
            for c in merged.cols.iter_mut().flatten() {
                *c = c.slice(keep.clone());
            }
        }
        debug_assert_eq!(merged.check(), Ok(()));
        Ok(Some(merged))
    }

    /// The last row of `series` in the range, or `None` if it has none: what [`Self::read_series`]
    /// answers for `n == 1`, without building columns. The "lastpoint" query asks this of every series,
    /// and most answers come from block statistics alone, so a column pair per source per series was
    /// most of its cost.
    pub fn read_last(&self, series: SeriesId) -> Result<Option<LastRow>> {
        let mut last = LastRow { ts: 0, values: Vec::new() };
        Ok(self.read_last_into(series, &mut last)?.then_some(last))
    }

    /// [`Self::read_last`] into `last` (its vector reused from series to series: the "lastpoint" query
    /// reads 4,000 of them); `false`, and `last` unspecified, when the series has no row in the range.
    pub fn read_last_into(&self, series: SeriesId, last: &mut LastRow) -> Result<bool> {
        assert_eq!(self.n, 1, "read_last is a tail of one row");
        let cols = &self.snap.cols;
        let mut found = false;
        // Sources come oldest write first, as `rows::merge` takes them: at the newest time, each column
        // takes the newest source's non-null value.
        self.sources(series, &mut |src| {
            let (ts, at) = match &src {
                Source::Rows(r) => match r.ts.last() {
                    Some(t) => (*t, r.len() - 1),
                    None => return,
                },
                Source::Stats(b) => (b.ts_max, 0),
                Source::Last(t, row, _) => (t.span(*row).1, 0),
            };
            let value = |j: usize| -> Option<Value> {
                match &src {
                    Source::Rows(r) => r.cols[j].as_ref()?.get(at),
                    Source::Stats(b) => stats_value(b, cols[j]),
                    Source::Last(t, row, at) => t.value(*row, at[j]),
                }
            };
            if found && ts < last.ts {
                return;
            }
            if found && ts == last.ts {
                for (j, slot) in last.values.iter_mut().enumerate() {
                    if let Some(v) = value(j) {
                        *slot = Some(v);
                    }
                }
                return;
            }
            found = true;
            last.ts = ts;
            last.values.clear();
            last.values.extend((0..cols.len()).map(value));
        })?;
        Ok(found)
    }

    /// Calls `found` with every source that may hold the series' last `n` rows in the range, oldest
    /// write first.
    fn sources(&self, series: SeriesId, found: &mut dyn FnMut(Source<'_>)) -> Result<()> {
        let s = &self.snap;
        let mut walk = self.walk.lock();
        let Walk { groups, blocks, clean, by_end, passed, lasts, tried, cursors, rows } = &mut *walk;
        // Segments without deleted rows: their blocks of the series, and the end of the newest one
        // touching the range when it ends inside it (the newest row the segment surely holds there).
        // For one row, newest segments first: the last row is at or after that end (a row of the
        // range no delete hides), so a segment whose whole file ends before the newest such end found
        // so far is passed without looking the series up in it (a series over many day partitions
        // looks up one segment, not all).
        let mut floor: Option<i64> = None;
        for k in 0..s.segments.len() {
            let i = if self.n == 1 { by_end[k] } else { k };
            let seg = &s.segments[i];
            passed[i] = false;
            rows[i] = None;
            if !s.hiding(series, seg.id.generation, seg.id.tombstones_applied).is_empty() {
                clean[i] = None;
                continue;
            }
            if floor.is_some_and(|f| seg.ts_max < f) {
                passed[i] = true;
                clean[i] = Some(None);
                continue;
            }
            // From the segment's table of last rows: the series' newest block, when that is the newest
            // touching the range and ends inside it (its statistics then tell the last row); else the
            // block index, as below.
            if !tried[i] {
                tried[i] = true;
                lasts[i] = self.table_of(seg);
            }
            if let Some((t, _)) = &lasts[i] {
                match t.find(series, &mut cursors[i]) {
                    None => {
                        passed[i] = true;
                        clean[i] = Some(None);
                        continue;
                    }
                    Some(row) => {
                        let (lo, hi) = t.span(row);
                        if self.touches_span(lo, hi) && hi <= s.ts_max {
                            rows[i] = Some(row);
                            clean[i] = Some(Some(hi));
                            floor = floor.max(Some(hi));
                            continue;
                        }
                    }
                }
            }
            seg.series_blocks_into(series, &mut groups[i], &mut blocks[i])?;
            let known = blocks[i].iter().rev().find(|b| self.touches(b)).map(|b| b.ts_max).filter(|t| *t <= s.ts_max);
            clean[i] = Some(known);
            if self.n == 1 {
                floor = floor.max(known);
            }
        }
        // A source with rows hidden by a delete is read whole and filtered: its tail may be all deleted.
        for (i, seg) in s.segments.iter().enumerate() {
            if clean[i].is_some() {
                continue;
            }
            let hiding = s.hiding(series, seg.id.generation, seg.id.tombstones_applied);
            for mut r in seg.read_series(series, s.ts_min, s.ts_max, &s.cols)? {
                tombstone::apply(&mut r, hiding.iter().copied());
                found(Source::Rows(r));
            }
        }
        // The last row is at or after the newest row a clean segment surely holds in the range (its
        // newest block ending inside it): a segment whose newest block ends before that has no part
        // in it.
        for (i, seg) in s.segments.iter().enumerate() {
            let Some(known) = clean[i] else { continue };
            if passed[i] || floor.is_some_and(|f| known.is_some_and(|t| t < f)) {
                continue;
            }
            if let (Some(row), Some((t, at))) = (rows[i], &lasts[i]) {
                found(Source::Last(t, row, at));
                continue;
            }
            self.segment_tail(seg, &blocks[i], found)?;
        }
        drop(walk);
        for f in &s.frozen {
            if let Some(buf) = f.memtable.table(s.db, s.table).and_then(|t| t.series.get(&series)) {
                let hiding = s.hiding(series, f.generation, 0);
                if hiding.is_empty() {
                    found(Source::Rows(buf.read_tail(series, s.ts_min, s.ts_max, &s.cols, self.n)));
                } else {
                    let mut r = buf.read(series, s.ts_min, s.ts_max, &s.cols);
                    tombstone::apply(&mut r, hiding);
                    found(Source::Rows(r));
                }
            }
        }
        if let Some(r) = s.active.get(&series) {
            found(Source::Rows(r.clone()));
        }
        Ok(())
    }

    /// Whether a block holds times inside the range.
    fn touches(&self, b: &BlockMeta) -> bool {
        self.touches_span(b.ts_min, b.ts_max)
    }

    /// Whether a block from `lo` to `hi` holds times inside the range.
    fn touches_span(&self, lo: i64, hi: i64) -> bool {
        hi >= self.snap.ts_min && lo <= self.snap.ts_max
    }

    /// The sources of `seg` that can hold the last `n` rows of its series in the range, oldest first,
    /// from `all` its blocks of the series.
    fn segment_tail(&self, seg: &Segment, all: &SeriesBlocks, found: &mut dyn FnMut(Source<'_>)) -> Result<()> {
        let s = &self.snap;
        let Some(newest) = all.iter().rev().find(|b| self.touches(b)) else { return Ok(()) };
        if self.n == 1 && stats_tell_last_row(newest, s.ts_max, &s.cols) {
            found(Source::Stats(newest));
            return Ok(());
        }
        let blocks: Vec<&BlockMeta> = all.iter().filter(|b| self.touches(b)).collect();
        // Newest blocks first until they surely hold `n` rows inside the range (a block cut by the range
        // counts for nothing, so reading goes on past it).
        let mut rows_inside = 0usize;
        let mut first = blocks.len();
        while first > 0 && rows_inside < self.n {
            first -= 1;
            let b = blocks[first];
            if b.ts_min >= s.ts_min && b.ts_max <= s.ts_max {
                rows_inside += b.n_rows as usize;
            }
        }
        for b in &blocks[first..] {
            found(Source::Rows(seg.read_block(b, s.ts_min, s.ts_max, &s.cols)?));
        }
        Ok(())
    }
}

/// Whether a block's statistics give its last row inside a range ending at `ts_max`: not when the block
/// runs past `ts_max` (its last row inside is unknown) or a string column is asked for (strings keep
/// no value statistics).
fn stats_tell_last_row(b: &BlockMeta, ts_max: i64, cols: &[(ColId, FieldType)]) -> bool {
    b.ts_max <= ts_max && cols.iter().all(|(_, ty)| *ty != FieldType::String)
}

/// The value of column `col` in the last row of block `b` (at `b.ts_max`), from its statistics: the
/// column's last value when that is at `ts_max`, else null; null too for a column the block lacks or
/// holds with another type, as the decoder answers.
fn stats_value(b: &BlockMeta, (col, ty): (ColId, FieldType)) -> Option<Value> {
    last_stat(b, b.col(col).filter(|m| m.ty == ty)?)
}

/// Column `m`'s value at block `b`'s last time, if it has one there.
fn last_stat(b: &BlockMeta, m: &ColMeta) -> Option<Value> {
    (m.stats.count > 0 && m.stats.last_ts == b.ts_max).then(|| stat_value(m.ty, m.stats.last)).flatten()
}

/// The last row of block `b` as rows (see [`stats_value`]): a column the block has is a column, null
/// where it has no value at `ts_max`.
fn stats_rows(b: &BlockMeta, series: SeriesId, cols: &[(ColId, FieldType)]) -> SeriesRows {
    one_row(series, b.ts_max, cols, |j| {
        let (col, ty) = cols[j];
        b.col(col).filter(|m| m.ty == ty).map(|m| last_stat(b, m))
    })
}

/// The last row of row `row` of a segment's table of last rows, as [`stats_rows`] makes it from the same
/// block (`at`: the columns' positions in the table).
fn last_rows(t: &LastValues, row: usize, at: &[Option<usize>], series: SeriesId, cols: &[(ColId, FieldType)]) -> SeriesRows {
    one_row(series, t.span(row).1, cols, |j| (t.cell(row, at[j]) != last_values::Cell::Absent).then(|| t.value(row, at[j])))
}

/// A row at `ts` as rows: column `j` is `value(j)`, `None` for no column (the block lacks it), `Some(None)`
/// for a null.
fn one_row(series: SeriesId, ts: i64, cols: &[(ColId, FieldType)], value: impl Fn(usize) -> Option<Option<Value>>) -> SeriesRows {
    let cols = cols
        .iter()
        .enumerate()
        .map(|(j, (_, ty))| {
            let v = value(j)?;
            let mut c = Column::with_capacity(*ty, 1);
            match v {
                Some(v) => assert!(c.push_value(&v), "a statistic of the column's own type"),
                None => c.push_null(),
            }
            Some(c)
        })
        .collect();
    SeriesRows { series, ts: vec![ts], cols }
}

/// When no two sources overlap in time (so none can overwrite another's rows), keeps only the newest
/// sources that together hold `n` rows, in time order: a series spread over many partitions has one
/// tail source per segment, and merging them all only to keep the last row cost more than reading them.
/// Overlapping sources are left as they are (their order decides which write wins).
fn newest_covering(sources: &mut Vec<SeriesRows>, n: usize) {
    sources.retain(|r| !r.is_empty());
    if sources.len() < 2 {
        return;
    }
    let mut order: Vec<usize> = (0..sources.len()).collect();
    order.sort_by_key(|i| sources[*i].ts[0]);
    let disjoint = order.windows(2).all(|w| sources[w[0]].ts.last() < sources[w[1]].ts.first());
    if !disjoint {
        return;
    }
    let (mut rows, mut from) = (0, order.len());
    while from > 0 && rows < n {
        from -= 1;
        rows += sources[order[from]].len();
    }
    let mut taken: Vec<Option<SeriesRows>> = std::mem::take(sources).into_iter().map(Some).collect();
    sources.extend(order[from..].iter().filter_map(|i| taken[*i].take()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineConfig, WritePoint};
    use crate::types::Value;

    /// Reference: the whole series through the ordinary snapshot, cut to its last `n` rows.
    #[allow(clippy::too_many_arguments)] // a test reference taking the scan's own arguments
    fn tail_of_full(e: &Engine, db: DbId, t: TableId, series: &[SeriesId], lo: i64, hi: i64, cols: &[(ColId, FieldType)], n: usize) -> Vec<Option<SeriesRows>> {
        let snap = e.snapshot(db, t, series, lo, hi, cols);
        series
            .iter()
            .map(|s| {
                snap.read_series(*s).unwrap().map(|mut r| {
                    let len = r.len();
                    let keep = len.saturating_sub(n)..len;
                    r.ts = r.ts[keep.clone()].to_vec();
                    for c in r.cols.iter_mut().flatten() {
                        *c = c.slice(keep.clone());
                    }
                    r
                })
            })
            .collect()
    }

    /// Rows of three hosts over four rounds (overlapping by 10 rows: overwrites across segments; `f`
    /// sparse), the first three rounds flushed; the table's ids, columns and series.
    fn load(e: &Engine) -> (DbId, TableId, Vec<(ColId, FieldType)>, Vec<SeriesId>) {
        e.create_database("db", 0, false).unwrap();
        let hosts = ["a", "b", "c"];
        for round in 0..4i64 {
            let mut points = Vec::new();
            for (h, host) in hosts.iter().enumerate() {
                for i in 0..50i64 {
                    let ts = round * 40 + i + h as i64 * 7; // rounds overlap by 10 rows
                    let mut fields = vec![("v", Value::Integer(round * 1000 + i + h as i64))];
                    if i % 3 == 0 {
                        fields.push(("f", Value::Float(i as f64 / 2.0)));
                    }
                    points.push(WritePoint { line: 1, table: "cpu", key: None, known: None, tags: vec![("host", *host)].into(), fields: fields.into(), ts });
                }
            }
            e.write("db", &points).unwrap();
            if round < 3 {
                e.flush().unwrap();
            }
        }
        let (db, t, cols) = cpu_ids(e);
        let n = e.catalog().db("db").unwrap().table("cpu").unwrap().series_count();
        (db, t, cols, (0..n as u32).collect::<Vec<_>>())
    }

    /// The ids of `db.cpu` and of its columns `v` (integers) and `f` (floats).
    fn cpu_ids(e: &Engine) -> (DbId, TableId, Vec<(ColId, FieldType)>) {
        let cat = e.catalog();
        let d = cat.db("db").unwrap();
        let t = d.table("cpu").unwrap();
        (d.id, t.id, vec![(t.column("v").unwrap().id, FieldType::Integer), (t.column("f").unwrap().id, FieldType::Float)])
    }

    /// An engine in `dir` with database `db` and no background compaction (it may merge flushes' files
    /// before a snapshot is taken).
    fn engine_without_compaction(dir: &std::path::Path) -> Engine {
        let mut config = EngineConfig::new(dir);
        config.compaction_threads = 0;
        let e = Engine::open(config).unwrap();
        e.create_database("db", 0, false).unwrap();
        e
    }

    /// A one-row tail as [`TailSnapshot::read_last`] answers it.
    fn as_last(rows: &Option<SeriesRows>) -> Option<LastRow> {
        let r = rows.as_ref()?;
        assert_eq!(r.len(), 1, "a tail of one row");
        Some(LastRow { ts: r.ts[0], values: r.cols.iter().map(|c| c.as_ref().and_then(|c| c.get(0))).collect() })
    }

    /// Every tail length and several ranges answer exactly what the full read's tail does, and so does
    /// `read_last` for one row.
    fn check_tails(e: &Engine, db: DbId, t: TableId, cols: &[(ColId, FieldType)], series: &[SeriesId], what: &str) {
        for (lo, hi) in [(i64::MIN, i64::MAX), (0, 100), (35, 129), (121, 129), (200, 300)] {
            for n in [1, 2, 7, 60, 500] {
                let tail = e.snapshot_tail(db, t, series, lo, hi, cols, n);
                let got: Vec<_> = series.iter().map(|s| tail.read_series(*s).unwrap()).collect();
                let want = tail_of_full(e, db, t, series, lo, hi, cols, n);
                assert_eq!(got, want, "{what}: range [{lo}, {hi}], n = {n}");
                if n == 1 {
                    let last: Vec<_> = series.iter().map(|s| tail.read_last(*s).unwrap()).collect();
                    assert_eq!(last, want.iter().map(as_last).collect::<Vec<_>>(), "{what}: last row in [{lo}, {hi}]");
                }
            }
        }
    }

    #[test]
    fn tails_equal_the_tail_of_a_full_read() {
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::open(EngineConfig::new(dir.path())).unwrap();
        let (db, t, cols, series) = load(&e);
        check_tails(&e, db, t, &cols, &series, "three segments and a memtable");
        // Everything flushed: n = 1 comes from block statistics alone and still agrees.
        e.flush().unwrap();
        check_tails(&e, db, t, &cols, &series, "four segments");
        let tail = e.snapshot_tail(db, t, &series, i64::MIN, i64::MAX, &cols, 1);
        assert_eq!(tail.read_series(series[0]).unwrap().unwrap().ts, vec![169]);
        // The newest rows of the newest write (round 3, from 120) deleted: the last rows come from
        // older segments, which a delete makes read whole.
        e.delete("db", "cpu", None, 160, 200).unwrap();
        check_tails(&e, db, t, &cols, &series, "after a delete");
        let last = e.snapshot_tail(db, t, &series, i64::MIN, i64::MAX, &cols, 1).read_last(series[0]).unwrap().unwrap();
        assert_eq!(last.ts, 159);
    }

    /// At a time written twice (rounds overlap), the last row unions both writes' fields, the newer
    /// write's value winning: `v` from round 3, `f` (which round 3 lacks there) from round 2.
    #[test]
    fn last_row_unions_writes_at_its_time() {
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::open(EngineConfig::new(dir.path())).unwrap();
        let (db, t, cols, series) = load(&e);
        // Host a at 123: round 2 wrote i = 43 (no f), round 3 wrote i = 3 (f = 1.5). At 120: round 2
        // i = 40 (no f), round 3 i = 0 (f = 0.0). At 122: round 2 i = 42 (f = 21.0), round 3 i = 2 (no f).
        let last = |hi| e.snapshot_tail(db, t, &series, 0, hi, &cols, 1).read_last(series[0]).unwrap().unwrap();
        assert_eq!(last(122), LastRow { ts: 122, values: vec![Some(Value::Integer(3002)), Some(Value::Float(21.0))] });
        assert_eq!(last(123), LastRow { ts: 123, values: vec![Some(Value::Integer(3003)), Some(Value::Float(1.5))] });
        e.flush().unwrap();
        assert_eq!(last(122), LastRow { ts: 122, values: vec![Some(Value::Integer(3002)), Some(Value::Float(21.0))] });
    }

    /// Segments ending at the same time as the last row are not passed over: at 100, written by
    /// three flushes, the last row unions them (`v` from the newest, `f` from the oldest), and a
    /// segment ending before 100 is passed without changing it.
    #[test]
    fn last_row_at_segments_ending_together() {
        let dir = tempfile::tempdir().unwrap();
        let e = engine_without_compaction(dir.path());
        let point = |ts, fields: Vec<(&'static str, Value)>| WritePoint {
            line: 1,
            table: "cpu",
            key: None,
            known: None,
            tags: vec![("host", "a")].into(),
            fields: fields.into(),
            ts,
        };
        let writes = [
            vec![point(40, vec![("v", Value::Integer(1)), ("f", Value::Float(0.5))])],
            vec![point(90, vec![("v", Value::Integer(2))]), point(100, vec![("v", Value::Integer(3)), ("f", Value::Float(1.5))])],
            vec![point(100, vec![("v", Value::Integer(4))])],
            vec![point(100, vec![("v", Value::Integer(5))])],
        ];
        for w in &writes {
            e.write("db", w).unwrap();
            e.flush().unwrap();
        }
        let (db, t, cols) = cpu_ids(&e);
        let tail = e.snapshot_tail(db, t, &[0], i64::MIN, i64::MAX, &cols, 1);
        assert_eq!(tail.snap.segments.len(), 4);
        let want = LastRow { ts: 100, values: vec![Some(Value::Integer(5)), Some(Value::Float(1.5))] };
        assert_eq!(tail.read_last(0).unwrap(), Some(want.clone()));
        assert_eq!(as_last(&tail.read_series(0).unwrap()), Some(want));
        assert_eq!(tail.walk.lock().passed, vec![true, false, false, false], "the segment ending at 40 is passed");
        assert_eq!(tail.walk.lock().tried, vec![false, true, true, true], "and its table of last rows not looked for");
        assert!(tail.walk.lock().lasts[1..].iter().all(Option::is_some), "the others answer from theirs");
        let before = e.snapshot_tail(db, t, &[0], i64::MIN, 99, &cols, 1).read_last(0).unwrap();
        assert_eq!(before, Some(LastRow { ts: 90, values: vec![Some(Value::Integer(2)), None] }));
    }

    /// The last row of series with several blocks in a segment, from the segments' tables of last rows
    /// where their newest block answers and from the block index where it does not (cut by the range's
    /// end, or after it): the same as a full read's in every range. Host b lacks `f` in its newest
    /// block, host c has `f` there but not at its last time.
    #[test]
    fn last_rows_from_segment_tables_agree_with_full_reads() {
        let dir = tempfile::tempdir().unwrap();
        let e = engine_without_compaction(dir.path());
        let rows = crate::limits::BLOCK_ROWS_MAX as i64 * 2 + 100;
        let mut points = Vec::new();
        for (h, host) in ["a", "b", "c"].into_iter().enumerate() {
            for i in 0..rows {
                let mut fields = vec![("v", Value::Integer(i * 10 + h as i64))];
                let f = match host {
                    "a" => true,
                    "b" => i < rows - 200,
                    _ => i != rows - 1,
                };
                if f {
                    fields.push(("f", Value::Float(i as f64 / 4.0)));
                }
                points.push(WritePoint { line: 1, table: "cpu", key: None, known: None, tags: vec![("host", host)].into(), fields: fields.into(), ts: i });
            }
        }
        e.write("db", &points).unwrap();
        e.flush().unwrap();
        let (db, t, cols) = cpu_ids(&e);
        let series = [0, 1, 2];
        let last_block = crate::limits::BLOCK_ROWS_MAX as i64 * 2;
        for (lo, hi) in [(i64::MIN, i64::MAX), (0, rows - 1), (0, rows - 50), (0, last_block - 1), (0, 10), (last_block, rows + 5), (rows, i64::MAX)] {
            let tail = e.snapshot_tail(db, t, &series, lo, hi, &cols, 1);
            assert!(tail.walk.lock().lasts.iter().all(Option::is_some), "every segment has its table");
            let want = tail_of_full(&e, db, t, &series, lo, hi, &cols, 1);
            let want: Vec<_> = want.iter().map(as_last).collect();
            // Compared as values: a column a newest block lacks is no column, a full read's a null.
            let got: Vec<_> = series.iter().map(|s| as_last(&tail.read_series(*s).unwrap())).collect();
            assert_eq!(got, want, "[{lo}, {hi}]");
            let last: Vec<_> = series.iter().map(|s| tail.read_last(*s).unwrap()).collect();
            assert_eq!(last, want, "last row in [{lo}, {hi}]");
            // A series read alone takes the cached table too.
            let one = e.snapshot_tail(db, t, &[2], lo, hi, &cols, 1);
            assert_eq!(one.read_last(2).unwrap(), want[2], "host c alone in [{lo}, {hi}]");
        }
        let tail = e.snapshot_tail(db, t, &series, i64::MIN, i64::MAX, &cols, 1);
        assert_eq!(
            tail.read_last(1).unwrap(),
            Some(LastRow { ts: rows - 1, values: vec![Some(Value::Integer((rows - 1) * 10 + 1)), None] }),
            "host b: no f in its newest block"
        );
        assert_eq!(tail.walk.lock().rows, vec![Some(1)], "host b's row of the table answered");
        assert_eq!(tail.read_last(2).unwrap().unwrap().values[1], None, "host c: f set in its newest block, not at its last time");
    }

    /// One row per source (a series over day partitions, one point each): the last row skips the
    /// older segments, longer tails still need them.
    #[test]
    fn tails_of_one_row_sources() {
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::open(EngineConfig::new(dir.path())).unwrap();
        e.create_database("db", 0, false).unwrap();
        for (ts, flush) in [(50, true), (100, true), (20, true), (75, false)] {
            let p = WritePoint { line: 1, table: "cpu", key: None, known: None, tags: vec![("host", "a")].into(), fields: vec![("v", Value::Integer(ts))].into(), ts };
            e.write("db", &[p]).unwrap();
            if flush {
                e.flush().unwrap();
            }
        }
        let (db, t, col) = {
            let cat = e.catalog();
            let d = cat.db("db").unwrap();
            let t = d.table("cpu").unwrap();
            (d.id, t.id, vec![(t.column("v").unwrap().id, FieldType::Integer)])
        };
        for (lo, hi) in [(i64::MIN, i64::MAX), (0, 99), (0, 60)] {
            for n in 1..=4 {
                let tail = e.snapshot_tail(db, t, &[0], lo, hi, &col, n);
                assert_eq!(vec![tail.read_series(0).unwrap()], tail_of_full(&e, db, t, &[0], lo, hi, &col, n), "[{lo}, {hi}], n = {n}");
            }
        }
    }

    /// The earliest-row bound, over segments and memtables, for each series alone and all together:
    /// never after the first row a full read finds, and here (no deletes) exactly it.
    #[test]
    fn earliest_bound_is_the_first_row_without_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::open(EngineConfig::new(dir.path())).unwrap();
        let (db, t, cols, series) = load(&e);
        let first = |series: &[SeriesId], lo: i64, hi: i64| {
            let snap = e.snapshot(db, t, series, lo, hi, &cols);
            series.iter().filter_map(|s| snap.read_series(*s).unwrap().map(|r| r.ts[0])).min()
        };
        for (lo, hi) in [(i64::MIN, i64::MAX), (3, 100), (35, 129), (125, 300), (200, 300), (5, 6)] {
            for set in [vec![series[0]], vec![series[1]], vec![series[2]], series.clone()] {
                assert_eq!(e.earliest_bound(db, t, &set, lo, hi).unwrap(), first(&set, lo, hi), "{set:?} in [{lo}, {hi}]");
            }
        }
        // Rows in the memtable only (host c's last round is 134..=183), and none.
        assert_eq!(e.earliest_bound(db, t, &[series[2]], 170, i64::MAX).unwrap(), Some(170));
        assert_eq!(e.earliest_bound(db, t, &[series[2]], 184, i64::MAX).unwrap(), None);
        // A delete leaves it a bound: no later than the first row left.
        e.delete("db", "cpu", None, 0, 20).unwrap();
        let bound = e.earliest_bound(db, t, &series, i64::MIN, i64::MAX).unwrap().unwrap();
        assert!(bound <= first(&series, i64::MIN, i64::MAX).unwrap());
    }
}
