//! `SELECT`: per measurement, one SQL statement over the DataFusion table, then InfluxQL's shaping.
//!
//! Two kinds of statement, as in InfluxDB:
//! - **raw** (no function call): the SQL selects `time`, every tag (for series keys and grouping) and the
//!   fields referenced, keeping rows where at least one referenced field is set; rows are split into
//!   series by the `GROUP BY` tags, ordered by time (ties by series key) and limited per series.
//! - **aggregate**: every distinct call (`max(usage_user)`) becomes one or two SQL aggregates grouped by
//!   the `GROUP BY` tags and the `time()` bucket (integer arithmetic on nanoseconds, aligned to the epoch
//!   plus the offset); buckets are then completed from the first to the last of the range and empty ones
//!   filled per `fill()`. Field expressions (`max(a) - min(a)`, `mean(x) * 2`) are evaluated on the
//!   aggregated row with InfluxQL's arithmetic rules.
//!
//! The SQL is planned and run by DataFusion over [`crate::provider::SundialTable`], so time bounds and
//! tag equality reach the scan's pushdown.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use regex::Regex;
use sundial_storage::catalog::ColumnKind;
use sundial_storage::types::FieldType;

use super::cell::{ArcStr, Cell, CellColumn, arithmetic, negate};
use super::cond::{self, ColKind, TableInfo, TimeRange, ident};
use super::values::{self, Chunk, Gathered};
use super::{BUCKETS_PER_SERIES_MAX, FlatRows, RESULT_ROWS_MAX, Series, SeriesTable, StatementResult, TOP_N_MAX, Values, database, too_many_rows};
use crate::QueryEngine;
use crate::influxql::{Dimension, Expr, Fill, MeasurementName, SelectStatement, Source, TimeOffset, WildcardType};

mod native;

pub async fn run(qe: &QueryEngine, db: Option<&str>, s: &SelectStatement, now_ns: i64) -> Result<StatementResult, String> {
    if s.into.is_some() {
        return Err("SELECT ... INTO is not supported".into());
    }
    if s.timezone.is_some() {
        return Err("tz() is not supported yet: times are UTC".into());
    }
    let sources = sources(qe, db, s)?;
    let skip = s.soffset.unwrap_or(0) as usize;
    let take = s.slimit.filter(|n| *n > 0).map_or(usize::MAX, |n| n as usize);
    let mut series = Vec::new();
    for (db_name, table, info) in &sources {
        let Some(ctx) = Ctx::new(qe, db_name, table, info, s, now_ns)? else { continue };
        if sources.len() == 1 {
            if let Some(mut t) = ctx.last_table().await? {
                let n = t.len();
                t.keep(skip.min(n)..skip.saturating_add(take).min(n));
                return Ok(StatementResult { series: Vec::new(), table: Some(t), error: None });
            }
        }
        series.extend(ctx.run().await?);
    }
    series.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.tags.cmp(&b.tags)));
    if s.order_desc {
        series.reverse();
    }
    let series: Vec<Series> = series.into_iter().skip(skip).take(take).collect();
    Ok(StatementResult::series(series))
}

/// The measurements of `FROM` that exist, with their columns, sorted by name.
fn sources(qe: &QueryEngine, db: Option<&str>, s: &SelectStatement) -> Result<Vec<(String, String, TableInfo)>, String> {
    let cat = qe.storage().catalog();
    let mut out: Vec<(String, String, TableInfo)> = Vec::new();
    for src in &s.from {
        let m = match src {
            Source::Measurement(m) => m,
            Source::Subquery(_) => return Err("subqueries are not supported yet".into()),
        };
        let db_name = database(m.database.as_deref(), db)?;
        let d = cat.db(db_name).ok_or_else(|| format!("database not found: {db_name}"))?;
        let matches: Vec<_> = match &m.name {
            MeasurementName::Name(n) => d.table(n).into_iter().collect(),
            MeasurementName::Regex(re) => {
                let re = compile(re)?;
                d.tables().into_iter().filter(|t| re.is_match(&t.name)).collect()
            }
        };
        for t in matches {
            if out.iter().any(|(dn, tn, _)| dn == db_name && **tn == *t.name) {
                continue;
            }
            let mut info = TableInfo::default();
            for c in t.columns() {
                match c.kind {
                    ColumnKind::Tag => {
                        info.tags.insert(c.name.to_string());
                    }
                    ColumnKind::Field(ty) => {
                        info.fields.insert(c.name.to_string(), ty);
                    }
                }
            }
            out.push((db_name.to_string(), t.name.to_string(), info));
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(out)
}

fn compile(re: &str) -> Result<Regex, String> {
    regex::RegexBuilder::new(re).size_limit(1 << 20).build().map_err(|e| format!("invalid regular expression /{re}/: {e}"))
}

/// One output column: an expression over fields/tags (raw) or calls (aggregate), and its name.
#[derive(Clone, Debug)]
struct OutField {
    expr: Expr,
    name: String,
}

/// The `GROUP BY` tags (sorted, deduplicated) and the `time()` bucket (interval, offset) in ns.
fn dimensions(s: &SelectStatement, info: &TableInfo, now_ns: i64) -> Result<(Vec<String>, Option<(i64, i64)>), String> {
    let mut tags = Vec::new();
    let mut bucket = None;
    for d in &s.dimensions {
        match d {
            Dimension::Tag(t) => tags.push(t.clone()),
            Dimension::Wildcard => tags.extend(info.tags.iter().cloned()),
            Dimension::Regex(re) => {
                let re = compile(re)?;
                tags.extend(info.tags.iter().filter(|t| re.is_match(t)).cloned());
            }
            Dimension::Time { interval_ns, offset } => {
                let off = match offset {
                    None => 0,
                    Some(TimeOffset::Duration(d)) => *d,
                    Some(TimeOffset::Now) => now_ns,
                };
                bucket = Some((*interval_ns, off.rem_euclid(*interval_ns)));
            }
        }
    }
    tags.sort();
    tags.dedup();
    Ok((tags, bucket))
}

/// Expands wildcards and regexes in the field list and names every column as InfluxDB does.
fn out_fields(s: &SelectStatement, info: &TableInfo, group_tags: &[String]) -> Result<Vec<OutField>, String> {
    let mut exprs: Vec<(Expr, Option<String>)> = Vec::new();
    let raw_columns = |filter: &dyn Fn(&str, bool) -> bool| -> Vec<Expr> {
        let mut names: Vec<(&String, bool)> = info
            .tags
            .iter()
            .filter(|t| !group_tags.contains(t))
            .map(|t| (t, true))
            .chain(info.fields.keys().map(|f| (f, false)))
            .filter(|(n, is_tag)| filter(n, *is_tag))
            .collect();
        names.sort();
        names.dedup_by(|a, b| a.0 == b.0);
        names.into_iter().map(|(n, _)| Expr::var(n.clone())).collect()
    };
    for f in &s.fields {
        match &f.expr {
            Expr::Wildcard(kind) => {
                let keep = |_: &str, is_tag: bool| match kind {
                    None => true,
                    Some(WildcardType::Tag) => is_tag,
                    Some(WildcardType::Field) => !is_tag,
                };
                exprs.extend(raw_columns(&keep).into_iter().map(|e| (e, None)));
            }
            Expr::RegexLit(re) => {
                let re = compile(re)?;
                exprs.extend(raw_columns(&|n: &str, _| re.is_match(n)).into_iter().map(|e| (e, None)));
            }
            Expr::Call { name, args } if matches!(args.first(), Some(Expr::Wildcard(_) | Expr::RegexLit(_))) => {
                let re = match &args[0] {
                    Expr::RegexLit(re) => Some(compile(re)?),
                    _ => None,
                };
                for (field, ty) in &info.fields {
                    if re.as_ref().is_some_and(|r| !r.is_match(field)) || !Func::accepts(name, *ty) {
                        continue;
                    }
                    let mut new_args = args.clone();
                    new_args[0] = Expr::var(field.clone());
                    exprs.push((Expr::Call { name: name.clone(), args: new_args }, Some(format!("{name}_{field}"))));
                }
            }
            Expr::VarRef { name, .. } if name.eq_ignore_ascii_case("time") => {}
            e => exprs.push((e.clone(), f.alias.clone())),
        }
    }
    Ok(column_names(exprs))
}

/// InfluxDB's `SelectStatement.ColumnNames`: aliases first, then generated names, repeats suffixed `_1`, `_2`.
fn column_names(exprs: Vec<(Expr, Option<String>)>) -> Vec<OutField> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for (_, alias) in &exprs {
        if let Some(a) = alias {
            counts.insert(a.clone(), 1);
        }
    }
    exprs
        .into_iter()
        .map(|(expr, alias)| {
            let name = match alias {
                Some(a) => a,
                None => {
                    let base = expr_name(&expr);
                    let mut name = base.clone();
                    if let Some(&count) = counts.get(&base) {
                        let mut n = count;
                        loop {
                            let candidate = format!("{base}_{n}");
                            if !counts.contains_key(&candidate) {
                                counts.insert(base.clone(), n + 1);
                                name = candidate;
                                break;
                            }
                            n += 1;
                        }
                    }
                    *counts.entry(name.clone()).or_insert(0) += 1;
                    name
                }
            };
            OutField { expr, name }
        })
        .collect()
}

fn expr_name(e: &Expr) -> String {
    match e {
        Expr::Call { name, .. } => name.clone(),
        Expr::VarRef { name, .. } => name.clone(),
        Expr::Binary { .. } | Expr::Neg(_) => {
            let mut names = Vec::new();
            collect_names(e, &mut names);
            names.join("_")
        }
        _ => String::new(),
    }
}

fn collect_names(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Call { name, .. } => out.push(name.clone()),
        Expr::VarRef { name, .. } => out.push(name.clone()),
        Expr::Binary { lhs, rhs, .. } => {
            collect_names(lhs, out);
            collect_names(rhs, out);
        }
        Expr::Neg(inner) => collect_names(inner, out),
        _ => {}
    }
}

struct Ctx<'a> {
    qe: &'a QueryEngine,
    db: &'a str,
    table: &'a str,
    info: &'a TableInfo,
    s: &'a SelectStatement,
    now_ns: i64,
    group_tags: Vec<String>,
    bucket: Option<(i64, i64)>,
    fields: Vec<OutField>,
    range: TimeRange,
    cond_sql: Option<String>,
}

impl<'a> Ctx<'a> {
    /// The statement over one measurement; `None` when it selects nothing (no field, an empty range).
    fn new(qe: &'a QueryEngine, db: &'a str, table: &'a str, info: &'a TableInfo, s: &'a SelectStatement, now_ns: i64) -> Result<Option<Self>, String> {
        let (group_tags, bucket) = dimensions(s, info, now_ns)?;
        let fields = out_fields(s, info, &group_tags)?;
        let (range, cond_sql) = cond::split(s.condition.as_ref(), info, now_ns)?;
        if fields.is_empty() || range.is_empty() {
            return Ok(None);
        }
        Ok(Some(Ctx { qe, db, table, info, s, now_ns, group_tags, bucket, fields, range, cond_sql }))
    }

    /// The statement's series from this measurement.
    async fn run(&self) -> Result<Vec<Series>, String> {
        if !self.s.is_raw_query() {
            return self.aggregate().await;
        }
        if self.bucket.is_some() {
            return Err("GROUP BY requires at least one aggregate function".into());
        }
        self.raw().await
    }

    /// Runs `sql` on the database and returns its rows as cells.
    async fn query(&self, sql: &str) -> Result<Vec<Vec<Cell>>, String> {
        tracing::debug!(sql, "InfluxQL translated");
        let out = self.qe.sql(Some(self.db), sql).await.map_err(|e| e.to_string())?;
        let mut rows = Vec::new();
        for b in &out.batches {
            if rows.len() + b.num_rows() > RESULT_ROWS_MAX {
                return Err(too_many_rows());
            }
            let cols = b.columns().iter().map(CellColumn::new).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
            for r in 0..b.num_rows() {
                rows.push(cols.iter().map(|c| c.get(r)).collect());
            }
        }
        Ok(rows)
    }

    /// What the statement reads, for the native path (`native`).
    fn source(&self) -> native::Source<'_> {
        native::Source {
            db: self.db,
            table: self.table,
            info: self.info,
            condition: self.s.condition.as_ref(),
            range: self.range,
        }
    }

    /// The WHERE clause: time bounds, the condition, and "one of these fields is set".
    fn where_sql(&self, fields: &[&str]) -> String {
        let mut conj = self.range.sql();
        if let Some(c) = &self.cond_sql {
            conj.push(format!("({c})"));
        }
        if !fields.is_empty() {
            let any: Vec<String> = fields.iter().map(|f| format!("{} IS NOT NULL", ident(f))).collect();
            conj.push(format!("({})", any.join(" OR ")));
        }
        if conj.is_empty() { String::new() } else { format!(" WHERE {}", conj.join(" AND ")) }
    }

    fn series(&self, key: Vec<String>, columns: &std::sync::Arc<[String]>, values: Values) -> Series {
        let tags = (!self.s.dimensions.iter().all(|d| matches!(d, Dimension::Time { .. })))
            .then(|| self.group_tags.iter().cloned().zip(key).collect());
        Series { name: self.table.to_string(), tags, columns: columns.clone(), values: Some(values) }
    }

    fn columns(&self) -> std::sync::Arc<[String]> {
        std::iter::once("time".to_string()).chain(self.fields.iter().map(|f| f.name.clone())).collect()
    }

    fn limit_offset<T>(&self, mut rows: Vec<T>) -> Vec<T> {
        let kept = self.kept(rows.len());
        rows.truncate(kept.end);
        rows.drain(..kept.start);
        rows
    }

    /// The rows of `n` that `LIMIT` and `OFFSET` keep.
    fn kept(&self, n: usize) -> std::ops::Range<usize> {
        let skip = (self.s.offset.unwrap_or(0) as usize).min(n);
        let take = self.s.limit.filter(|n| *n > 0).map_or(usize::MAX, |n| n as usize);
        skip..n.min(skip.saturating_add(take))
    }

    // ------------------------------------------------------------------ raw

    /// A raw statement's columns: the fields it reads, every tag of the table (series key and grouping),
    /// and where each output column after the time comes from when every one is a plain tag or field
    /// reference, a chunk's tag or a row's cell (rows are `[time, fields]`); `None` when some are
    /// evaluated per row.
    fn raw_columns(&self) -> (Vec<&str>, Vec<&String>, Option<Vec<values::Column>>) {
        let mut field_cols: Vec<&str> = Vec::new();
        for f in &self.fields {
            f.expr.walk(&mut |e| {
                if let Expr::VarRef { name, data_type } = e {
                    if matches!(self.info.kind(name, *data_type), ColKind::Field(_)) && !field_cols.contains(&name.as_str()) {
                        field_cols.push(name);
                    }
                }
            });
        }
        let tags: Vec<&String> = self.info.tags.iter().collect();
        let direct: Option<Vec<values::Column>> = self
            .fields
            .iter()
            .map(|f| match &f.expr {
                Expr::VarRef { name, data_type } => match self.info.kind(name, *data_type) {
                    ColKind::Tag => tags.iter().position(|t| *t == name).map(values::Column::Tag),
                    ColKind::Field(_) => field_cols.iter().position(|c| *c == name).map(|i| values::Column::Cell(1 + i)),
                    ColKind::Unknown => None,
                },
                _ => None,
            })
            .collect();
        (field_cols, tags, direct)
    }

    /// The answer as one [`SeriesTable`] when it can be one: each series' last row (`ORDER BY time
    /// DESC LIMIT 1`), every column a plain tag or field, grouped by tags of the table so that each
    /// series is its own group (see [`native::run_last_table`]). `None`: answer it as `raw` does.
    async fn last_table(&self) -> Result<Option<SeriesTable>, String> {
        if !self.s.is_raw_query() || !self.qe.influxql_native() || self.group_tags.is_empty() || self.bucket.is_some() {
            return Ok(None);
        }
        let (field_cols, tags, direct) = self.raw_columns();
        let (Some(direct), Some(1)) = (direct, self.tail_rows(&field_cols)) else { return Ok(None) };
        let Some(group) = self.group_tags.iter().map(|g| tags.iter().position(|t| *t == g)).collect::<Option<Vec<usize>>>() else {
            return Ok(None);
        };
        if field_cols.is_empty() {
            return Ok(None);
        }
        let shape = native::RawShape { source: self.source(), tags: &tags, fields: &field_cols, tail: Some(1) };
        let Some(plan) = native::plan_raw(self.qe.storage(), &shape) else { return Ok(None) };
        let Some(t) = native::run_last_table(self.qe.storage().clone(), plan, &group, self.s.order_desc).await? else { return Ok(None) };
        Ok(Some(SeriesTable {
            name: self.table.to_string(),
            group: self.group_tags.iter().cloned().zip(group).collect(),
            columns: self.columns(),
            sources: direct.into(),
            tag_values: t.tag_values,
            width: 1 + field_cols.len(),
            codes: t.codes,
            cells: t.cells,
        }))
    }

    async fn raw(&self) -> Result<Vec<Series>, String> {
        let (field_cols, tags, direct) = self.raw_columns();
        if field_cols.is_empty() {
            // InfluxDB answers a query of tags only (`SELECT host FROM m`) with no series, not an error.
            return Ok(Vec::new());
        }
        let tail = self.tail_rows(&field_cols);
        let n_tags = tags.len();
        let shape = native::RawShape { source: self.source(), tags: &tags, fields: &field_cols, tail };
        let native = if self.qe.influxql_native() { native::plan_raw(self.qe.storage(), &shape) } else { None };
        let chunks: Arc<[Chunk]> = match native {
            Some(plan) => native::run_raw(self.qe.storage().clone(), plan).await?,
            None => {
                let mut select = vec!["CAST(\"time\" AS BIGINT)".to_string()];
                select.extend(tags.iter().map(|t| format!("CAST({} AS VARCHAR)", ident(t))));
                select.extend(field_cols.iter().map(|f| ident(f)));
                let from = match tail {
                    Some(n) => format!("last_rows({}, {n})", cond::string(self.table)),
                    None => ident(self.table),
                };
                let sql = format!("SELECT {} FROM {from}{}", select.join(", "), self.where_sql(&field_cols));
                series_chunks(self.query(&sql).await?, n_tags)
            }
        }
        .into();
        let width = 1 + field_cols.len();

        let group_at: Vec<Option<usize>> = self.group_tags.iter().map(|g| tags.iter().position(|t| t.as_str() == g)).collect();
        // Chunks are series, or runs of one (`native::full_rows`). Grouped by sorting their indexes by
        // group key, compared in place (a missing or null tag is '', see `group_of`): no key is built per
        // chunk, only one per group. The sort is stable, so a group's chunks stay in chunk order.
        let key_of = |c: u32| group_of(&chunks[c as usize].tags, &group_at);
        let mut by_group: Vec<u32> = (0..chunks.len() as u32).collect();
        if let [one] = group_at[..] {
            // One tag (TSBS's lastpoint, by host): its values gathered next to their chunk's index and
            // sorted there, not looked up through each chunk's tags at every comparison (4,000 chunks
            // scattered over the heap: cache misses were most of the sort). Index ties keep chunk order.
            let value = |c: u32| match one.map(|i| &chunks[c as usize].tags[i]) {
                Some(Cell::String(v)) => &**v,
                _ => "",
            };
            let mut keyed: Vec<(u128, &str, u32)> = by_group.iter().map(|c| (text_prefix(value(*c)), value(*c), *c)).collect();
            keyed.sort_unstable();
            by_group.clear();
            by_group.extend(keyed.iter().map(|(_, _, c)| *c));
        } else if !group_at.is_empty() {
            by_group.sort_by(|a, b| key_of(*a).cmp(key_of(*b)));
        }
        let groups: Vec<&[u32]> = by_group.chunk_by(|a, b| key_of(*a).eq(key_of(*b))).collect();
        // For groups of several series: rows of equal time sort by series key. Each series' key is
        // ranked once, and rows sort by (time, rank): at 4,000 hosts TSBS's high-cpu-all sorts ~860,000
        // rows whose times tie across hosts, and comparing key strings (long shared prefixes) per tie was
        // most of the sort.
        let series_rank: Vec<u32> = if groups.iter().any(|g| g.len() > 1) {
            let series_keys: Vec<String> = chunks
                .iter()
                .map(|chunk| {
                    let mut series_key = String::new();
                    for (t, cell) in tags.iter().zip(&chunk.tags) {
                        if let Cell::String(v) = cell {
                            series_key.push_str(t);
                            series_key.push('=');
                            series_key.push_str(v);
                            series_key.push(',');
                        }
                    }
                    series_key
                })
                .collect();
            let mut order: Vec<u32> = (0..series_keys.len() as u32).collect();
            order.sort_by(|a, b| series_keys[*a as usize].cmp(&series_keys[*b as usize]));
            let mut rank = vec![0u32; order.len()];
            // Equal keys (the same series in two chunks) share a rank: the stable sort below then keeps
            // their rows in chunk order, as comparing the strings did.
            let mut r = 0;
            for (i, s) in order.iter().enumerate() {
                if i > 0 && series_keys[*s as usize] != series_keys[order[i - 1] as usize] {
                    r = i as u32;
                }
                rank[*s as usize] = r;
            }
            rank
        } else {
            Vec::new()
        };
        let columns = self.columns();
        let gathered_columns: Option<Arc<[values::Column]>> = direct.map(Into::into);
        let mut out = Vec::with_capacity(groups.len());
        // Per group, its rows: (time, chunk, row in the chunk); one vector for them all.
        let mut rows: Vec<(i64, u32, u32)> = Vec::new();
        let mut scratch: Vec<(i64, u32, u32)> = Vec::new();
        let mut in_rank_order: Vec<u32> = Vec::new();
        for group in groups {
            rows.clear();
            let n_rows: usize = group.iter().map(|c| chunks[*c as usize].cells.len() / width).sum();
            rows.reserve(n_rows);
            // A large group of several series: its chunks taken in rank order (chunk order within a
            // rank), so that sorting the rows by time alone, stably, orders them by (time, rank) as the
            // comparison sort below does.
            let by_rank = group.len() > 1 && n_rows >= RADIX_SORT_ROWS_MIN;
            let group = if by_rank {
                in_rank_order.clear();
                in_rank_order.extend_from_slice(group);
                in_rank_order.sort_by_key(|c| (series_rank[*c as usize], *c));
                &in_rank_order[..]
            } else {
                group
            };
            for &c in group {
                for (r, row) in chunks[c as usize].cells.chunks_exact(width).enumerate() {
                    let Cell::Time(t) = row[0] else { continue };
                    rows.push((t, c, r as u32));
                }
            }
            if by_rank {
                sort_by_time_radix(&mut rows, &mut scratch);
            } else if group.len() > 1 {
                rows.sort_by_key(|r| (r.0, series_rank[r.1 as usize]));
            } else {
                rows.sort_by_key(|r| r.0);
            }
            let key = group_key(&chunks[group[0] as usize].tags, &group_at);
            if self.s.order_desc {
                rows.reverse();
            }
            let rows = &rows[self.kept(rows.len())];
            if rows.is_empty() {
                continue;
            }
            let values = match &gathered_columns {
                // Every output column a tag or a field: the rows stay where they were read.
                Some(cols) => Values::Gathered(Gathered {
                    chunks: chunks.clone(),
                    width,
                    columns: cols.clone(),
                    order: rows.iter().map(|(_, c, r)| (*c, *r)).collect(),
                }),
                None => Values::Rows(
                    rows.iter()
                        .map(|&(t, c, r)| {
                            let chunk = &chunks[c as usize];
                            let row = chunk.row(r as usize, width);
                            let tag_value = |name: &str| -> Cell {
                                tags.iter().position(|t| t.as_str() == name).map_or(Cell::Null, |i| chunk.tags[i].clone())
                            };
                            let field_value =
                                |name: &str| -> Cell { field_cols.iter().position(|f| *f == name).map_or(Cell::Null, |i| row[1 + i].clone()) };
                            std::iter::once(Cell::Time(t))
                                .chain(self.fields.iter().map(|f| eval_raw(&f.expr, self.info, &tag_value, &field_value)))
                                .collect()
                        })
                        .collect(),
                ),
            };
            out.push(self.series(key, &columns, values));
        }
        Ok(out)
    }

    /// For `ORDER BY time DESC LIMIT n [OFFSET m]`: each series needs only its last `n + m` rows, which
    /// `last_rows()` reads without scanning the series. Exact only when no row a series holds can be
    /// dropped after the tail is taken: no condition on a field, and every field selected (a stored row
    /// has at least one field set, so none is dropped for having all selected fields null). Tag
    /// conditions are fine: they keep or drop whole series.
    fn tail_rows(&self, field_cols: &[&str]) -> Option<usize> {
        if !self.s.order_desc {
            return None;
        }
        let limit = self.s.limit.filter(|n| *n > 0)?;
        let n = usize::try_from(limit.checked_add(self.s.offset.unwrap_or(0))?).ok()?;
        let every_field = self.info.fields.keys().all(|f| field_cols.contains(&f.as_str()));
        let field_condition = self.s.condition.as_ref().is_some_and(|c| {
            c.any(&mut |e| matches!(e, Expr::VarRef { name, data_type } if matches!(self.info.kind(name, *data_type), ColKind::Field(_))))
        });
        (every_field && !field_condition && n <= crate::provider::LAST_ROWS_MAX).then_some(n)
    }

    /// For `GROUP BY time(...) LIMIT n [OFFSET m]` in time order with no lower time bound (TSBS's
    /// groupby-orderby-limit): the answer is the first `n + m` buckets from the earliest row, so only
    /// their rows need reading. Not when a group could exist only later (`GROUP BY` a tag), when
    /// `fill(none)` drops empty buckets (later ones move up) or `fill(linear)` looks past them.
    fn head_buckets(&self, present_tags: &[&String]) -> Option<u64> {
        let limit = self.s.limit.filter(|n| *n > 0)?;
        let fill = self.s.fill.unwrap_or(Fill::Null);
        let plain = self.bucket.is_some()
            && !self.s.order_desc
            && self.range.min.is_none()
            && present_tags.is_empty()
            && !matches!(fill, Fill::None | Fill::Linear);
        plain.then(|| limit.checked_add(self.s.offset.unwrap_or(0))).flatten()
    }

    // ------------------------------------------------------------------ aggregate

    async fn aggregate(&self) -> Result<Vec<Series>, String> {
        let mut calls: Vec<Call> = Vec::new();
        for f in &self.fields {
            collect_calls(&f.expr, self.info, &mut calls)?;
        }
        if let Some(c) = calls.iter().find(|c| c.func.is_multi_row()) {
            if calls.len() > 1 || self.fields.len() > 1 {
                return Err(format!("{}() cannot be combined with other functions or fields", c.func.name()));
            }
        }
        let single_selector = self.bucket.is_none()
            && self.fields.len() == 1
            && calls.len() == 1
            && calls[0].func.is_selector()
            && matches!(self.fields[0].expr, Expr::Call { .. });
        let mut fields_used: Vec<&str> = calls.iter().filter_map(|c| c.field.as_deref()).collect();
        fields_used.sort();
        fields_used.dedup();
        if fields_used.is_empty() {
            return Ok(Vec::new());
        }

        let mut select: Vec<String> = Vec::new();
        let mut group_by: Vec<String> = Vec::new();
        let present_tags: Vec<&String> = self.group_tags.iter().filter(|t| self.info.tags.contains(*t)).collect();
        // Group on the dictionary-encoded tag itself (no string per row); a series without the tag groups
        // under NULL, which reads as '' below, as InfluxDB has it.
        for t in &present_tags {
            select.push(ident(t));
            group_by.push(ident(t));
        }
        if let Some((interval, offset)) = self.bucket {
            let t = "CAST(\"time\" AS BIGINT)";
            let e = format!("({t} - ((({t} - {offset}) % {interval}) + {interval}) % {interval})");
            select.push(e.clone());
            group_by.push(e);
        }
        // Which groups exist. With GROUP BY, a group exists if a row has one of the fields set (the WHERE
        // below keeps only such rows). Without, there is one group, and it exists if one of the fields has
        // a value: counting them, with no row filter, keeps the query answerable from block statistics.
        let guard_start = select.len();
        if group_by.is_empty() {
            select.extend(fields_used.iter().map(|f| format!("count({})", ident(f))));
        } else {
            select.push("count(*)".into());
        }
        let first_agg = select.len();
        // Rows of several series sharing a timestamp: first() takes the lowest series key, last() the
        // highest (as InfluxDB, whose iterators merge series in key order). Ordering by the tags not
        // grouped on, in key order, is that order whenever every series has every tag.
        let tie_tags: Vec<String> = self
            .info
            .tags
            .iter()
            .filter(|t| !self.group_tags.contains(t))
            .map(|t| format!("CAST({} AS VARCHAR)", ident(t)))
            .collect();
        let mut slots = Vec::with_capacity(calls.len());
        for c in &calls {
            slots.push(select.len());
            select.extend(c.sql(single_selector, &tie_tags));
        }
        let select: Vec<String> = select.into_iter().enumerate().map(|(i, e)| format!("{e} AS \"_c{i}\"")).collect();
        let set_fields: &[&str] = if group_by.is_empty() { &[] } else { &fields_used };
        let mut sql = format!("SELECT {} FROM {}{}", select.join(", "), ident(self.table), self.where_sql(set_fields));
        if !group_by.is_empty() {
            sql.push_str(&format!(" GROUP BY {}", group_by.join(", ")));
        }
        let shape = native::Shape {
            source: self.source(),
            bucket: self.bucket,
            present_tags: &present_tags,
            group_tags: &self.group_tags,
            fields_used: &fields_used,
            calls: &calls,
            with_time: single_selector,
        };
        let native = if self.qe.influxql_native() { native::plan(self.qe.storage(), &shape) } else { None };
        let outs: Vec<AggOut> = self.fields.iter().map(|f| AggOut::new(&f.expr, self.info, &calls)).collect();
        let key_at: Vec<Option<usize>> = self.group_tags.iter().map(|g| present_tags.iter().position(|t| *t == g)).collect();
        let rows = match native {
            Some(plan) => {
                let folds = native::run(self.qe.storage().clone(), plan, self.head_buckets(&present_tags)).await?;
                match self.folded_series(folds, &calls, &outs, &key_at)? {
                    Ok(series) => return Ok(series),
                    Err(folds) => folds.into_rows(),
                }
            }
            None => FlatRows::from_rows(self.query(&sql).await?),
        };

        // group key → its buckets
        let mut groups: BTreeMap<Vec<String>, GroupRows> = BTreeMap::new();
        // Cells of an output row: the time, then one per output field.
        let stride = outs.len() + 1;
        let n_tags = present_tags.len();
        // Rows of a group mostly arrive together (the native path returns them group by group): the key
        // is built, and the group looked up, when the row's tag cells differ from the previous row's.
        let mut open: Option<(Vec<Cell>, Vec<String>, GroupRows)> = None;
        let mut values: Vec<(Cell, Option<i64>)> = Vec::with_capacity(calls.len());
        for (i, row) in rows.iter().enumerate() {
            if row[guard_start..first_agg].iter().all(|c| matches!(c, Cell::Integer(0))) {
                continue; // no value of any field: the group does not exist
            }
            let bucket = match self.bucket {
                Some(_) => match row[n_tags] {
                    Cell::Integer(b) => b,
                    _ => continue,
                },
                None => 0,
            };
            if open.as_ref().is_none_or(|(tags, _, _)| !same_cells(tags, &row[..n_tags])) {
                let key = group_key(row, &key_at);
                // Room for the run of rows with these tags (up to a cap), so that the group's vectors are
                // allocated once rather than grown through doublings.
                let run = rows.iter().skip(i).take(GROUP_ROWS_RESERVED_MAX).take_while(|r| same_cells(&r[..n_tags], &row[..n_tags])).count();
                if let Some((_, key, g)) = open.replace((row[..n_tags].to_vec(), key, GroupRows::with_capacity(run, stride))) {
                    add_buckets(&mut groups, key, g);
                }
            }
            values.clear();
            values.extend(calls.iter().zip(&slots).map(|(c, &i)| c.value(&row[i..], single_selector)));
            let point_time = if single_selector { values[0].1 } else { None };
            // The output row, the time in front: the bucket's start (without GROUP BY time(), set below).
            if let Some((_, _, g)) = open.as_mut() {
                g.push(bucket, point_time, outs.iter().map(|o| o.eval(&values)));
            }
        }
        drop(rows);
        if let Some((_, key, g)) = open {
            add_buckets(&mut groups, key, g);
        }
        if groups.is_empty() {
            return Ok(Vec::new());
        }
        groups.values_mut().for_each(|g| sort_buckets(&mut g.buckets));
        let columns = self.columns();
        let counts = self.count_outputs();
        let multi_row = calls[0].func.is_multi_row();

        let Some((interval, offset)) = self.bucket else {
            let t0 = self.range.min.unwrap_or(0);
            let mut out = Vec::new();
            for (key, mut g) in groups {
                let mut rows = Vec::new();
                for (_, at, point_time) in std::mem::take(&mut g.buckets) {
                    let mut cells: Vec<Cell> = g.row_mut(at).iter_mut().map(take_cell).collect();
                    cells[0] = Cell::Time(point_time.unwrap_or(t0));
                    if multi_row {
                        rows.extend(multi_rows(&cells[0], &cells[1]));
                    } else {
                        rows.push(cells);
                    }
                }
                let rows = self.limit_offset(rows);
                if !rows.is_empty() {
                    out.push(self.series(key, &columns, Values::Rows(rows)));
                }
            }
            return Ok(out);
        };

        let seen_first = groups.values().filter_map(|g| g.buckets.first().map(|b| b.0)).min();
        let Some(times) = self.bucket_times(interval, offset, seen_first)? else { return Ok(Vec::new()) };
        let fill = self.s.fill.unwrap_or(Fill::Null);
        let mut out = Vec::new();
        for (key, mut g) in groups {
            let values = if multi_row {
                // Buckets without points have nothing to list: they are left out whatever fill() says.
                let mut rows: Vec<Vec<Cell>> = g
                    .buckets
                    .iter()
                    .filter(|b| times.binary_search(&b.0).is_ok())
                    .flat_map(|(t, at, _)| multi_rows(&Cell::Time(*t), &g.row(*at)[1]))
                    .collect();
                if self.s.order_desc {
                    rows.reverse();
                }
                Values::Rows(self.limit_offset(rows))
            } else {
                let mut rows = fill_buckets(&times, &mut g, fill, &counts);
                if self.s.order_desc {
                    rows.reverse();
                }
                rows.keep(self.kept(rows.len()));
                Values::Flat(rows)
            };
            if !values.is_empty() {
                out.push(self.series(key, &columns, values));
            }
        }
        Ok(out)
    }

    /// The start of every bucket from the first to the last of the range (`GROUP BY time(interval,
    /// offset)`), the first being the range's or else `seen_first`, the earliest bucket with a row;
    /// `None` when the range holds none.
    fn bucket_times(&self, interval: i64, offset: i64, seen_first: Option<i64>) -> Result<Option<Vec<i64>>, String> {
        let floor = |t: i64| bucket_start(t, interval, offset);
        let first = match self.range.min {
            Some(t) => floor(t),
            None => seen_first.unwrap_or(0),
        };
        let last = floor(self.range.max.unwrap_or(self.now_ns));
        if last < first {
            return Ok(None);
        }
        let n_buckets = ((last - first) / interval) as u64 + 1;
        if n_buckets > BUCKETS_PER_SERIES_MAX {
            return Err(format!(
                "max-select-buckets limit exceeded: ({n_buckets}/{BUCKETS_PER_SERIES_MAX}); narrow the time range or use a larger GROUP BY time() interval"
            ));
        }
        Ok(Some((0..n_buckets as i64).map(|i| first + i * interval).collect()))
    }

    /// Per output field: whether it is a `count()`, which reads 0 where there was nothing to count.
    fn count_outputs(&self) -> Vec<bool> {
        self.fields.iter().map(|f| matches!(&f.expr, Expr::Call { name, .. } if name == "count")).collect()
    }

    /// A `GROUP BY time()` answer written straight from the native path's accumulators: group by
    /// group in key order, bucket by bucket, each output row made once, where the SQL path's rows
    /// (group cells, bucket, guard and calls per (group, bucket)) are made, regrouped under their key
    /// and then filled. The same answer: groups and buckets as those rows would make them. `folds`
    /// back when the statement is outside this shape (no `GROUP BY time()`, `fill(linear)`, a
    /// function of several rows) or two groups show the same key (a series without a grouped tag and
    /// one with it empty), which the rows' path merges.
    ///
    /// Why: a 4,000-host hourly rollup (TSBS's double-groupby) is 48,000 rows, and making the SQL's
    /// rows, regrouping and filling them was half of that statement's CPU.
    fn folded_series(
        &self,
        folds: native::Folds,
        calls: &[Call],
        outs: &[AggOut],
        key_at: &[Option<usize>],
    ) -> Result<Result<Vec<Series>, native::Folds>, String> {
        let fill = self.s.fill.unwrap_or(Fill::Null);
        let Some((interval, offset)) = self.bucket else { return Ok(Err(folds)) };
        if matches!(fill, Fill::Linear) || calls.iter().any(|c| c.func.is_multi_row()) {
            return Ok(Err(folds));
        }
        let live = folds.live_groups();
        let mut keyed: Vec<(Vec<String>, u32)> =
            folds.groups().iter().enumerate().filter(|(g, _)| live[*g]).map(|(g, cells)| (group_key(cells, key_at), g as u32)).collect();
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if keyed.windows(2).any(|w| w[0].0 == w[1].0) {
            return Ok(Err(folds));
        }
        if keyed.is_empty() {
            return Ok(Ok(Vec::new()));
        }
        let Some(times) = self.bucket_times(interval, offset, folds.first_bucket())? else { return Ok(Ok(Vec::new())) };
        let columns = self.columns();
        let counts = self.count_outputs();
        let stride = outs.len() + 1;
        #[cfg(test)]
        native::WRITTEN_FROM_FOLDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let write = |keyed: Vec<(Vec<String>, u32)>| {
            let mut values = Vec::with_capacity(calls.len());
            let mut out = Vec::with_capacity(keyed.len());
            for (key, g) in keyed {
                let mut rows = fill_walk(&times, stride, fill, &counts, |t, row| {
                    let Some(s) = folds.slot(g, t) else { return false };
                    // Each call's value straight from its state: what `Call::value` takes from a row's
                    // cells for the calls planned natively, without a point's time (no lone selector
                    // under `GROUP BY time()`). Making the cells first was most of this loop's time.
                    values.clear();
                    values.extend((0..calls.len()).map(|i| (folds.call_value(s, i), None)));
                    row.push(Cell::Time(t));
                    row.extend(outs.iter().map(|o| o.eval(&values)));
                    true
                });
                if self.s.order_desc {
                    rows.reverse();
                }
                rows.keep(self.kept(rows.len()));
                if !rows.is_empty() {
                    out.push(self.series(key, &columns, Values::Flat(rows)));
                }
            }
            out
        };
        if keyed.len().saturating_mul(times.len()) < FOLDED_PARALLEL_ROWS_MIN || !crate::busy::alone() {
            return Ok(Ok(write(keyed)));
        }
        // Two threads, the groups in halves (the second half's series follow the first's, as one
        // thread would make them): a 4,000-host hourly rollup's 48,000 rows took 2.3–3.9 ms, more than
        // half as long as its read (5–6 ms on two threads), on one core while the other idled. Not while
        // other statements are answered: they keep the other core busy.
        #[cfg(test)]
        native::WRITTEN_IN_HALVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut head = keyed;
        let tail = head.split_off(head.len() / 2);
        let (mut out, rest) = std::thread::scope(|scope| {
            let other = scope.spawn(|| write(tail));
            (write(head), other.join())
        });
        match rest {
            Ok(rest) => out.extend(rest),
            Err(panic) => std::panic::resume_unwind(panic),
        }
        Ok(Ok(out))
    }
}

/// `GROUP BY time()` answers of at least this many rows (groups × buckets) are made from the folds by
/// two threads ([`Ctx::folded_series`]): at about 70 ns a row that is 0.6 ms of work or more, where
/// starting and joining a thread costs 0.1–0.25 ms here.
const FOLDED_PARALLEL_ROWS_MIN: usize = 8_192;

/// One bucket of a group: its start (0 without `GROUP BY time()`), which of the group's output rows
/// ([`GroupRows::row`]) is its, and the selected point's time (a lone selector's answer shows it).
type Bucket = (i64, usize, Option<i64>);

/// A group's buckets and their output rows (the time, then a cell per output field), one after the
/// other in one vector: a 4,000-host hourly rollup is 48,000 rows, once made, written and freed one
/// vector each. In the common case the rows are the answer's as they are ([`fill_buckets`]).
struct GroupRows {
    /// Cells per row.
    stride: usize,
    buckets: Vec<Bucket>,
    cells: Vec<Cell>,
}

/// The most rows a group reserves room for up front (more grow as they come).
const GROUP_ROWS_RESERVED_MAX: usize = 1024;

impl GroupRows {
    fn with_capacity(rows: usize, stride: usize) -> GroupRows {
        GroupRows { stride, buckets: Vec::with_capacity(rows), cells: Vec::with_capacity(rows * stride) }
    }

    /// Rows held (a bucket's row is one of `0..rows()`).
    fn rows(&self) -> usize {
        self.cells.len() / self.stride
    }

    fn row(&self, at: usize) -> &[Cell] {
        &self.cells[at * self.stride..(at + 1) * self.stride]
    }

    fn row_mut(&mut self, at: usize) -> &mut [Cell] {
        &mut self.cells[at * self.stride..(at + 1) * self.stride]
    }

    /// Adds bucket `bucket`'s row: its time, then `fields` (`stride - 1` cells).
    fn push(&mut self, bucket: i64, point_time: Option<i64>, fields: impl Iterator<Item = Cell>) {
        self.buckets.push((bucket, self.rows(), point_time));
        self.cells.push(Cell::Time(bucket));
        self.cells.extend(fields);
        debug_assert_eq!(self.cells.len() % self.stride, 0, "rows of {} cells", self.stride);
    }
}

/// Whether two rows' cells are equal, strings first by pointer: the native path's rows of one group
/// share their tag strings, and comparing those by content was a twentieth of a 4,000-host rollup's
/// CPU (`Arc<str>`'s equality compares the text).
fn same_cells(a: &[Cell], b: &[Cell]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Cell::String(x), Cell::String(y)) => ArcStr::ptr_eq(x, y) || x == y,
            (x, y) => x == y,
        })
}

/// A cell moved out (a null left in its place).
fn take_cell(c: &mut Cell) -> Cell {
    std::mem::replace(c, Cell::Null)
}

/// Adds a group's buckets to `groups`: moved in whole when the group is new (the common case, rows
/// arrive group by group), appended when part of it came earlier ([`sort_buckets`] orders them).
fn add_buckets(groups: &mut BTreeMap<Vec<String>, GroupRows>, key: Vec<String>, mut g: GroupRows) {
    match groups.entry(key) {
        std::collections::btree_map::Entry::Vacant(e) => {
            e.insert(g);
        }
        std::collections::btree_map::Entry::Occupied(mut e) => {
            let into = e.get_mut();
            let had = into.rows();
            into.buckets.extend(g.buckets.iter().map(|&(t, at, p)| (t, had + at, p)));
            into.cells.append(&mut g.cells);
        }
    }
}

/// A group's buckets in time order, one per start (a later one replacing an earlier: two source rows
/// whose tags read the same, null and '', are one group). Usually already so: then nothing moves.
fn sort_buckets(buckets: &mut Vec<Bucket>) {
    if buckets.windows(2).all(|w| w[0].0 < w[1].0) {
        return;
    }
    buckets.sort_by_key(|b| b.0);
    let mut out: Vec<Bucket> = Vec::with_capacity(buckets.len());
    for b in buckets.drain(..) {
        match out.last_mut() {
            Some(last) if last.0 == b.0 => *last = b,
            _ => out.push(b),
        }
    }
    *buckets = out;
}

/// SQL rows `[time, tags, fields]` as chunks of one series each, rows `[time, fields]` (see [`Chunk`]):
/// a new chunk wherever the tags change (a series met twice apart is two chunks, which only its rows'
/// order among equal times tells). A row without a time is left out.
fn series_chunks(rows: Vec<Vec<Cell>>, n_tags: usize) -> Vec<Chunk> {
    let mut chunks: Vec<Chunk> = Vec::new();
    for row in rows {
        let (Cell::Integer(t) | Cell::Time(t)) = row[0] else { continue };
        let tags = &row[1..1 + n_tags];
        if chunks.last().is_none_or(|c| c.tags[..] != *tags) {
            chunks.push(Chunk { tags: tags.to_vec(), cells: Vec::new() });
        }
        let chunk = chunks.last_mut().expect("a chunk for the row");
        chunk.cells.push(Cell::Time(t));
        chunk.cells.extend(row.into_iter().skip(1 + n_tags));
    }
    chunks
}

/// A group key, borrowed from `cells` (a row, or a chunk's tags): the value of each grouped tag at its
/// cell (`None`: a tag the measurement does not have); a missing or null tag is '', as InfluxDB has it.
fn group_of<'c>(cells: &'c [Cell], at: &'c [Option<usize>]) -> impl Iterator<Item = &'c str> + 'c {
    at.iter().map(|i| match i.map(|i| &cells[i]) {
        Some(Cell::String(v)) => &**v,
        _ => "",
    })
}

/// The first 16 bytes of `s` as a big-endian integer, zero-padded: a key that sorts as `s` does up to
/// ties (`text_prefix(a) < text_prefix(b)` implies `a < b`), so that `(text_prefix(s), s)` pairs sort as
/// the strings and most comparisons are of one integer. Sorting 4,000 hostnames (TSBS's lastpoint) by
/// their strings was 0.38 ms of the 4.8 ms the statement took, each comparison following two pointers.
fn text_prefix(s: &str) -> u128 {
    let mut b = [0u8; 16];
    let n = s.len().min(16);
    b[..n].copy_from_slice(&s.as_bytes()[..n]);
    u128::from_be_bytes(b)
}

/// [`group_of`], owned.
fn group_key(row: &[Cell], at: &[Option<usize>]) -> Vec<String> {
    group_of(row, at).map(str::to_string).collect()
}

/// The start of the `time(interval, offset)` bucket holding `t`: buckets are aligned to the epoch plus
/// the offset, as InfluxDB has them.
fn bucket_start(t: i64, interval: i64, offset: i64) -> i64 {
    t - (t - offset).rem_euclid(interval)
}

/// The rows of a function that answers several per group: `distinct()` (values, at `time`, sorted) or
/// `top()`/`bottom()` (`[point time, value]` pairs, in time order).
fn multi_rows(time: &Cell, values: &Cell) -> Vec<Vec<Cell>> {
    let Cell::List(vs) = values else { return Vec::new() };
    if vs.iter().all(|v| matches!(v, Cell::List(_))) && !vs.is_empty() {
        let mut rows: Vec<Vec<Cell>> = vs.iter().filter_map(|v| if let Cell::List(p) = v { Some(p.to_vec()) } else { None }).collect();
        rows.sort_by_key(|r| match r.first() {
            Some(Cell::Time(t)) => *t,
            _ => 0,
        });
        return rows;
    }
    let mut vs = vs.clone();
    vs.sort_by(|a, b| a.total_cmp(b));
    vs.into_iter().map(|v| vec![time.clone(), v]).collect()
}

/// Every bucket of `times` for one series: present buckets as computed (their rows moved out of
/// `g`), empty ones (and empty cells) per `fill`. `counts[i]` marks `count()`
/// columns, which read 0 where there was nothing to count. When `g` holds exactly the buckets of
/// `times` in order (a group with a row in every bucket), its rows are the answer, filled in place.
/// `fill(linear)`, which reads the neighbours, goes through [`fill_linear`]. `g.buckets` are in time
/// order.
fn fill_buckets(times: &[i64], g: &mut GroupRows, fill: Fill, counts: &[bool]) -> FlatRows {
    if matches!(fill, Fill::Linear) {
        return fill_linear(times, g);
    }
    let stride = g.stride;
    let mut previous: Vec<Cell> = if matches!(fill, Fill::Previous) { vec![Cell::Null; stride - 1] } else { Vec::new() };
    let complete = g.buckets.len() == times.len()
        && g.rows() == times.len()
        && g.buckets.iter().zip(times).enumerate().all(|(i, (b, t))| b.0 == *t && b.1 == i);
    if complete && !matches!(fill, Fill::None) {
        for row in g.cells.chunks_exact_mut(stride) {
            fill_row(&mut row[1..], fill, counts, &mut previous);
        }
        return FlatRows::from_cells(stride, std::mem::take(&mut g.cells));
    }
    // Both are in time order: one walk instead of a lookup per bucket.
    let buckets = std::mem::take(&mut g.buckets);
    let mut present = buckets.iter().peekable();
    fill_walk(times, stride, fill, counts, |t, row| {
        while present.next_if(|b| b.0 < t).is_some() {}
        match present.next_if(|b| b.0 == t) {
            Some(&(_, at, _)) => {
                row.extend(g.row_mut(at).iter_mut().map(take_cell));
                true
            }
            None => false,
        }
    })
}

/// The rows of every bucket of `times` (`stride` cells each, the time first): `row(t, cells)` adds
/// bucket `t`'s row to `cells` when it has one and says so; an empty one is filled per `fill`
/// (`fill(none)` leaves it out), as are the empty cells of the others.
fn fill_walk(times: &[i64], stride: usize, fill: Fill, counts: &[bool], mut row: impl FnMut(i64, &mut Vec<Cell>) -> bool) -> FlatRows {
    let mut previous: Vec<Cell> = if matches!(fill, Fill::Previous) { vec![Cell::Null; stride - 1] } else { Vec::new() };
    let mut out = FlatRows::with_capacity(stride, times.len());
    for &t in times {
        let cells = out.cells();
        let start = cells.len();
        if !row(t, cells) {
            cells.push(Cell::Time(t));
            cells.resize(start + stride, Cell::Null);
        }
        debug_assert_eq!(cells.len() - start, stride, "rows of {stride} cells");
        let row = &mut cells[start + 1..];
        if matches!(fill, Fill::None) && row.iter().all(Cell::is_null) {
            cells.truncate(start);
            continue;
        }
        fill_row(row, fill, counts, &mut previous);
    }
    out
}

/// Fills the empty cells of one output row (its fields, the time left off) per `fill`; `previous`
/// holds, for `fill(previous)`, each field's last value so far.
fn fill_row(row: &mut [Cell], fill: Fill, counts: &[bool], previous: &mut [Cell]) {
    for (c, cell) in row.iter_mut().enumerate() {
        if cell.is_null() {
            *cell = match fill {
                Fill::Null | Fill::None if counts[c] => Cell::Integer(0),
                Fill::Null | Fill::None | Fill::Linear => Cell::Null,
                Fill::Integer(v) => Cell::Integer(v),
                Fill::Float(v) => Cell::Float(v),
                Fill::Previous => previous[c].clone(),
            };
        } else if matches!(fill, Fill::Previous) {
            previous[c] = cell.clone();
        }
    }
}

/// [`fill_buckets`] for `fill(linear)`: an empty cell is interpolated between the nearest buckets around
/// it that have one.
fn fill_linear(times: &[i64], g: &GroupRows) -> FlatRows {
    let stride = g.stride;
    // Rows as cells of the output fields only (the time left off).
    let empty_row = vec![Cell::Null; stride - 1];
    let mut present = g.buckets.iter().peekable();
    let cells: Vec<&[Cell]> = times
        .iter()
        .map(|t| {
            while present.next_if(|b| b.0 < *t).is_some() {}
            present.next_if(|b| b.0 == *t).map_or(&empty_row[..], |b| &g.row(b.1)[1..])
        })
        .collect();
    let mut out = FlatRows::with_capacity(stride, times.len());
    for (i, (&t, row)) in times.iter().zip(&cells).enumerate() {
        let out = out.cells();
        out.push(Cell::Time(t));
        out.extend(row.iter().enumerate().map(|(c, cell)| if cell.is_null() { linear(times, &cells, i, c) } else { cell.clone() }));
    }
    out
}

/// Linear interpolation of column `c` at bucket `i` between the nearest non-empty buckets around it.
fn linear(times: &[i64], cells: &[&[Cell]], i: usize, c: usize) -> Cell {
    let before = (0..i).rev().find(|&j| !cells[j][c].is_null());
    let after = (i + 1..cells.len()).find(|&j| !cells[j][c].is_null());
    let (Some(a), Some(b)) = (before, after) else { return Cell::Null };
    let frac = (times[i] - times[a]) as f64 / (times[b] - times[a]) as f64;
    match (&cells[a][c], &cells[b][c]) {
        (Cell::Integer(x), Cell::Integer(y)) => Cell::Integer(x + ((y - x) as f64 * frac) as i64),
        (Cell::Float(x), Cell::Float(y)) => Cell::Float(x + (y - x) * frac),
        (x, y) => match (num(x), num(y)) {
            (Some(x), Some(y)) => Cell::Float(x + (y - x) * frac),
            _ => Cell::Null,
        },
    }
}

fn num(c: &Cell) -> Option<f64> {
    match c {
        Cell::Float(v) => Some(*v),
        Cell::Integer(v) => Some(*v as f64),
        Cell::UInteger(v) => Some(*v as f64),
        _ => None,
    }
}

/// A raw row's value of a field expression.
fn eval_raw(e: &Expr, info: &TableInfo, tag: &dyn Fn(&str) -> Cell, field: &dyn Fn(&str) -> Cell) -> Cell {
    match e {
        Expr::VarRef { name, data_type } => match info.kind(name, *data_type) {
            ColKind::Field(_) => field(name),
            ColKind::Tag => tag(name),
            ColKind::Unknown => Cell::Null,
        },
        Expr::Binary { op, lhs, rhs } if op.is_arithmetic() => {
            arithmetic(*op, &eval_raw(lhs, info, tag, field), &eval_raw(rhs, info, tag, field))
        }
        Expr::Neg(inner) => negate(&eval_raw(inner, info, tag, field)),
        other => literal(other),
    }
}

fn literal(e: &Expr) -> Cell {
    match e {
        Expr::IntegerLit(v) => Cell::Integer(*v),
        Expr::UnsignedLit(v) => Cell::UInteger(*v),
        Expr::NumberLit(v) => Cell::Float(*v),
        Expr::StringLit(s) => Cell::String(s.as_str().into()),
        Expr::BooleanLit(b) => Cell::Boolean(*b),
        Expr::DurationLit(v) => Cell::Integer(*v),
        _ => Cell::Null,
    }
}

/// An output field of an aggregate statement, resolved once per statement: the call whose value it
/// shows, or how it combines calls' values. (Resolving the expression per row looked the calls up by
/// name in the measurement's field map each time: 18 % of a 720-row answer's CPU.)
enum AggOut {
    /// The value of `calls[i]`; `None` for a call of no field of the measurement (null).
    Call(Option<usize>),
    Arith(crate::influxql::BinaryOp, Box<AggOut>, Box<AggOut>),
    Neg(Box<AggOut>),
    Literal(Cell),
}

impl AggOut {
    fn new(e: &Expr, info: &TableInfo, calls: &[Call]) -> AggOut {
        match e {
            Expr::Call { .. } => AggOut::Call(match Call::from_expr(e, info) {
                Ok(Some(c)) => calls.iter().position(|x| *x == c),
                _ => None,
            }),
            Expr::Binary { op, lhs, rhs } if op.is_arithmetic() => {
                AggOut::Arith(*op, Box::new(AggOut::new(lhs, info, calls)), Box::new(AggOut::new(rhs, info, calls)))
            }
            Expr::Neg(inner) => AggOut::Neg(Box::new(AggOut::new(inner, info, calls))),
            other => AggOut::Literal(literal(other)),
        }
    }

    /// The value in a row whose calls gave `values`.
    fn eval(&self, values: &[(Cell, Option<i64>)]) -> Cell {
        match self {
            AggOut::Call(i) => i.map_or(Cell::Null, |i| values[i].0.clone()),
            AggOut::Arith(op, lhs, rhs) => arithmetic(*op, &lhs.eval(values), &rhs.eval(values)),
            AggOut::Neg(inner) => negate(&inner.eval(values)),
            AggOut::Literal(c) => c.clone(),
        }
    }
}

fn collect_calls(e: &Expr, info: &TableInfo, out: &mut Vec<Call>) -> Result<(), String> {
    match e {
        Expr::Call { .. } => {
            if let Some(c) = Call::from_expr(e, info)? {
                if !out.contains(&c) {
                    out.push(c);
                }
            }
            Ok(())
        }
        Expr::Binary { lhs, rhs, op } if op.is_arithmetic() => {
            collect_calls(lhs, info, out)?;
            collect_calls(rhs, info, out)
        }
        Expr::Neg(inner) => collect_calls(inner, info, out),
        Expr::VarRef { .. } => Err("mixing aggregate and non-aggregate queries is not supported".into()),
        Expr::Wildcard(_) | Expr::RegexLit(_) => Err("mixing aggregate and non-aggregate queries is not supported".into()),
        _ => Ok(()),
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Func {
    Count,
    CountDistinct,
    Sum,
    Mean,
    Min,
    Max,
    First,
    Last,
    Median,
    Stddev,
    Spread,
    Percentile(f64),
    Distinct,
    Top(usize),
    Bottom(usize),
}

impl Func {
    /// Functions answering several rows per group.
    fn is_multi_row(self) -> bool {
        matches!(self, Func::Distinct | Func::Top(_) | Func::Bottom(_))
    }

    fn name(self) -> &'static str {
        match self {
            Func::Count | Func::CountDistinct => "count",
            Func::Sum => "sum",
            Func::Mean => "mean",
            Func::Min => "min",
            Func::Max => "max",
            Func::First => "first",
            Func::Last => "last",
            Func::Median => "median",
            Func::Stddev => "stddev",
            Func::Spread => "spread",
            Func::Percentile(_) => "percentile",
            Func::Distinct => "distinct",
            Func::Top(_) => "top",
            Func::Bottom(_) => "bottom",
        }
    }

    fn is_selector(self) -> bool {
        matches!(self, Func::Min | Func::Max | Func::First | Func::Last | Func::Percentile(_))
    }

    /// Whether `max(*)` and friends include a field of type `ty`.
    fn accepts(name: &str, ty: FieldType) -> bool {
        let numeric = matches!(ty, FieldType::Float | FieldType::Integer | FieldType::UInteger);
        match name {
            "count" | "first" | "last" | "distinct" => true,
            "min" | "max" => numeric || ty == FieldType::Boolean,
            _ => numeric,
        }
    }
}

/// One distinct aggregate call over one field.
#[derive(Clone, Debug, PartialEq)]
struct Call {
    func: Func,
    /// `None` when the field does not exist in this measurement (the call is then null).
    field: Option<String>,
}

impl Call {
    fn from_expr(e: &Expr, info: &TableInfo) -> Result<Option<Call>, String> {
        let Expr::Call { name, args } = e else { return Ok(None) };
        let arity = |n: usize| {
            if args.len() == n {
                Ok(())
            } else {
                Err(format!("invalid number of arguments for {name}, expected {n}, got {}", args.len()))
            }
        };
        let func = match name.as_str() {
            "count" => {
                arity(1)?;
                match &args[0] {
                    Expr::Call { name: inner, args: inner_args } if inner == "distinct" => {
                        return Ok(Some(Call { func: Func::CountDistinct, field: field_arg(inner_args.first(), info, name)? }));
                    }
                    _ => Func::Count,
                }
            }
            "sum" => Func::Sum,
            "mean" => Func::Mean,
            "min" => Func::Min,
            "max" => Func::Max,
            "first" => Func::First,
            "last" => Func::Last,
            "median" => Func::Median,
            "stddev" => Func::Stddev,
            "spread" => Func::Spread,
            "distinct" => Func::Distinct,
            "percentile" => {
                arity(2)?;
                let p = match &args[1] {
                    Expr::IntegerLit(v) => *v as f64,
                    Expr::NumberLit(v) => *v,
                    other => return Err(format!("expected float argument in percentile(), got {other}")),
                };
                Func::Percentile(p)
            }
            "top" | "bottom" => {
                arity(2)?;
                let n = match &args[1] {
                    Expr::IntegerLit(v) if *v > 0 && *v <= TOP_N_MAX as i64 => *v as usize,
                    other => {
                        return Err(format!("expected an integer from 1 to {TOP_N_MAX} as the last argument of {name}(), got {other}"));
                    }
                };
                if name == "top" { Func::Top(n) } else { Func::Bottom(n) }
            }
            other => return Err(format!("unsupported function: {other}()")),
        };
        if !matches!(func, Func::Percentile(_) | Func::Top(_) | Func::Bottom(_)) {
            arity(1)?;
        }
        Ok(Some(Call { func, field: field_arg(args.first(), info, name)? }))
    }

    /// The SQL aggregates of this call (value, then the selected point's time if `with_time`).
    fn sql(&self, with_time: bool, tie_tags: &[String]) -> Vec<String> {
        let Some(field) = &self.field else { return vec!["NULL".into()] };
        let f = ident(field);
        let ties = |dir: &str| tie_tags.iter().map(|t| format!(", {t} {dir}")).collect::<String>();
        let nn = format!("FILTER (WHERE {f} IS NOT NULL)");
        let time_of = |order: &str| format!("first_value(\"time\" ORDER BY {order}) {nn}");
        match self.func {
            Func::Count => vec![format!("count({f})")],
            Func::CountDistinct => vec![format!("count(DISTINCT {f})")],
            Func::Sum => vec![format!("sum({f})")],
            Func::Mean => vec![format!("avg(CAST({f} AS DOUBLE))")],
            Func::Median => vec![format!("median(CAST({f} AS DOUBLE))")],
            Func::Stddev => vec![format!("stddev(CAST({f} AS DOUBLE))")],
            Func::Spread => vec![format!("max({f})"), format!("min({f})")],
            Func::Distinct => vec![format!("array_agg(DISTINCT {f}) {nn}")],
            Func::Min | Func::Max => {
                let agg = if self.func == Func::Min { "min" } else { "max" };
                let dir = if self.func == Func::Min { "ASC" } else { "DESC" };
                let mut v = vec![format!("{agg}({f})")];
                if with_time {
                    v.push(time_of(&format!("{f} {dir}, \"time\" ASC")));
                }
                v
            }
            Func::First | Func::Last => {
                let dir = if self.func == Func::First { "ASC" } else { "DESC" };
                let mut v = vec![format!("first_value({f} ORDER BY \"time\" {dir}{}) {nn}", ties(dir))];
                if with_time {
                    v.push(time_of(&format!("\"time\" {dir}")));
                }
                v
            }
            Func::Top(_) | Func::Bottom(_) => {
                let dir = if matches!(self.func, Func::Top(_)) { "DESC" } else { "ASC" };
                let order = format!("{f} {dir}, \"time\" ASC{}", ties("ASC"));
                vec![format!("array_agg({f} ORDER BY {order}) {nn}"), format!("array_agg(\"time\" ORDER BY {order}) {nn}")]
            }
            Func::Percentile(_) => {
                let mut v = vec![format!("array_agg({f} ORDER BY {f}, \"time\") {nn}")];
                if with_time {
                    v.push(format!("array_agg(\"time\" ORDER BY {f}, \"time\") {nn}"));
                }
                v
            }
        }
    }

    /// The call's value (and selected time) from its SQL columns, which start at `cols[0]`.
    fn value(&self, cols: &[Cell], with_time: bool) -> (Cell, Option<i64>) {
        if self.field.is_none() {
            return (Cell::Null, None);
        }
        let time_at = |i: usize| match cols.get(i) {
            Some(Cell::Time(t)) if with_time => Some(*t),
            _ => None,
        };
        match self.func {
            Func::Spread => (arithmetic(crate::influxql::BinaryOp::Sub, &cols[0], &cols[1]), None),
            Func::Top(n) | Func::Bottom(n) => {
                let (Cell::List(values), Some(Cell::List(times))) = (&cols[0], cols.get(1)) else { return (Cell::Null, None) };
                let pairs = times.iter().zip(values.iter()).take(n).map(|(t, v)| Cell::List(Box::new(vec![t.clone(), v.clone()]))).collect();
                (Cell::List(Box::new(pairs)), None)
            }
            Func::Min | Func::Max | Func::First | Func::Last => (cols[0].clone(), time_at(1)),
            Func::Percentile(p) => {
                let Cell::List(values) = &cols[0] else { return (Cell::Null, None) };
                let n = values.len();
                let idx = ((n as f64) * p / 100.0 + 0.5).floor() as i64 - 1;
                if idx < 0 || idx as usize >= n {
                    return (Cell::Null, None);
                }
                let idx = idx as usize;
                let time = match cols.get(1) {
                    Some(Cell::List(times)) if with_time => match times.get(idx) {
                        Some(Cell::Time(t)) => Some(*t),
                        _ => None,
                    },
                    _ => None,
                };
                (values[idx].clone(), time)
            }
            _ => (cols[0].clone(), None),
        }
    }
}

/// The field a call aggregates: a field of the measurement, or `None` if it has no such field.
fn field_arg(arg: Option<&Expr>, info: &TableInfo, func: &str) -> Result<Option<String>, String> {
    match arg {
        Some(Expr::VarRef { name, data_type }) => match info.kind(name, *data_type) {
            ColKind::Field(_) => Ok(Some(name.clone())),
            ColKind::Tag => Err(format!("cannot use tag {name} as the argument of {func}()")),
            ColKind::Unknown => Ok(None),
        },
        Some(Expr::Call { name, .. }) if name == "distinct" && func != "count" => {
            Err(format!("{func}(distinct()) is not supported"))
        }
        Some(other) => Err(format!("expected field argument in {func}(), got {other}")),
        None => Err(format!("invalid number of arguments for {func}, expected 1, got 0")),
    }
}

/// Groups of at least this many rows are sorted by [`sort_by_time_radix`]: TSBS's high-cpu-all at 4,000
/// hosts sorts 1.6 M rows of 10,000 chunks by (time, series), a seventh of its CPU and all on one thread
/// with a comparison sort. Smaller groups keep the comparison sort they had; the bound is chosen, not
/// measured.
const RADIX_SORT_ROWS_MIN: usize = 65_536;

/// Bits of a time sorted per pass of [`sort_by_time_radix`]: 4,096 counters, 32 KiB, stay in L1.
const RADIX_BITS: u32 = 12;

/// Sorts `rows` by time, stably (rows of one time keep their order), by a least-significant-digit radix
/// sort of their times' offsets from the earliest, [`RADIX_BITS`] a pass. Low bits that are the same in
/// every offset are not sorted (TSBS's times are 10 s apart: their 10 low bits are zero), nor are passes
/// whose digit is the same in every row. `scratch` is reused memory.
///
/// Written by hand: a stable sort of a few million (time, chunk, row) triples by an integer key is a few
/// lines here, where a comparison sort costs log₂ n comparisons per row.
fn sort_by_time_radix(rows: &mut Vec<(i64, u32, u32)>, scratch: &mut Vec<(i64, u32, u32)>) {
    let Some(lo) = rows.iter().map(|r| r.0).min() else { return };
    let offset = |r: &(i64, u32, u32)| r.0.wrapping_sub(lo) as u64;
    let set_bits = rows.iter().fold(0u64, |acc, r| acc | offset(r));
    if set_bits == 0 {
        return; // one time: already in order
    }
    let (mut shift, top) = (set_bits.trailing_zeros(), 64 - set_bits.leading_zeros());
    let mask = (1u64 << RADIX_BITS) - 1;
    let mut counts = vec![0usize; 1 << RADIX_BITS];
    while shift < top {
        let digit = |r: &(i64, u32, u32)| ((offset(r) >> shift) & mask) as usize;
        counts.fill(0);
        for r in rows.iter() {
            counts[digit(r)] += 1;
        }
        if !counts.contains(&rows.len()) {
            let mut at = 0;
            for c in counts.iter_mut() {
                (*c, at) = (at, at + *c);
            }
            scratch.clear();
            scratch.resize(rows.len(), (0, 0, 0));
            for r in rows.iter() {
                let d = digit(r);
                scratch[counts[d]] = *r;
                counts[d] += 1;
            }
            std::mem::swap(rows, scratch);
        }
        shift += RADIX_BITS;
    }
}

#[cfg(test)]
mod tests {
    use super::{sort_by_time_radix, text_prefix};

    /// The radix sort orders rows as a stable comparison sort by time does: times far apart and close
    /// together, negative, at both ends of `i64`, on a grid (low bits all zero), all equal, many ties.
    #[test]
    fn radix_sort_by_time_is_a_stable_sort_by_time() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let spans: [Box<dyn Fn(u64) -> i64>; 6] = [
            Box::new(|x| (x % 4_320) as i64 * 10_000_000_000 + 1_451_606_400_000_000_000),
            Box::new(|x| (x % 7) as i64 - 3),
            Box::new(|x| x as i64),
            Box::new(|x| if x % 2 == 0 { i64::MIN } else { i64::MAX }),
            Box::new(|_| 42),
            Box::new(|x| (x % 100_000) as i64 * -1_000),
        ];
        let mut scratch = Vec::new();
        for (k, time) in spans.iter().enumerate() {
            for n in [0, 1, 2, 1_000, 70_000] {
                let mut rows: Vec<(i64, u32, u32)> = (0..n).map(|i| (time(next()), (i % 97) as u32, i as u32)).collect();
                let mut want = rows.clone();
                want.sort_by_key(|r| r.0);
                sort_by_time_radix(&mut rows, &mut scratch);
                assert!(rows == want, "span {k}, {n} rows");
            }
        }
    }

    /// Strings sorted by `(text_prefix, string)` come out in the strings' own order: proper prefixes,
    /// NUL bytes (a padding byte's value), ties past 16 bytes, multi-byte characters and the empty string.
    #[test]
    fn text_prefix_sorts_as_the_strings() {
        let mut words: Vec<String> = ["", "a", "a\0", "a\0\0b", "a\u{1}", "ab", "host_1", "host_10", "host_100", "host_9", "é", "z\u{7f}"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        words.extend((0..40).map(|i| format!("a_sixteen_bytes_{i}")));
        words.extend((0..40).map(|i| format!("host_{}", i * 997 % 4000)));
        let mut x: u64 = 7;
        for _ in 0..2000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = (x >> 60) as usize + 12;
            words.push((0..len).map(|i| char::from(b"\0ab"[((x >> (i * 3 % 58)) % 3) as usize])).collect());
        }
        for (a, b) in words.iter().zip(words.iter().skip(1)) {
            if text_prefix(a) != text_prefix(b) {
                assert_eq!(text_prefix(a) < text_prefix(b), a < b, "{a:?} against {b:?}");
            }
        }
        let mut by_key: Vec<(u128, &str)> = words.iter().map(|w| (text_prefix(w), w.as_str())).collect();
        by_key.sort_unstable();
        let mut plain: Vec<&str> = words.iter().map(String::as_str).collect();
        plain.sort_unstable();
        assert_eq!(by_key.iter().map(|(_, w)| *w).collect::<Vec<_>>(), plain);
    }
}
