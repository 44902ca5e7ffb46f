//! Exact summaries of a time range (row count; per column non-null count, min, max) without decoding
//! blocks of their own.
//!
//! Segment blocks fully inside the range contribute their footer statistics; a packed block's rows in
//! the range are read from its decoded pack (one decode serves a thousand series; the footer holds no
//! statistics of packed blocks until their group is resolved); memtable rows are counted in place. A
//! summary is only given when it is exact: every block of its own of a selected series that touches the
//! range lies wholly inside it, no memtable staging area (late rows) needs sorting, no two sources of one
//! series overlap in time (overlapping sources may hold the same row twice, which only the
//! last-write-wins merge resolves), and no tombstone may hide rows of a block or buffer used (statistics
//! count deleted rows; see [`crate::tombstone`]). The range starts no earlier than the retention cutoff.
//! Otherwise the answer is `None` and the caller reads the data. This is what lets a query engine answer
//! `count`, `min` and `max` over whole blocks from the footers alone.

use super::Engine;
use crate::catalog::{ColId, DbId, SeriesId, TableId};
use crate::segment::stat_value;
use crate::types::{ColumnValues, FieldType, Value};

/// One column of a [`RangeSummary`].
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnSummary {
    /// Rows where the column is not null.
    pub count: u64,
    /// Smallest and largest non-null value; `None` when the column has none, and always for strings
    /// (blocks keep no string value statistics).
    pub min: Option<Value>,
    pub max: Option<Value>,
}

/// Rows of the selected series in a range, and a [`ColumnSummary`] per requested column.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeSummary {
    pub rows: u64,
    /// Rows per series (series without rows in the range are absent), for per-series facts such as tags.
    pub series_rows: Vec<(SeriesId, u64)>,
    pub cols: Vec<ColumnSummary>,
}

impl Engine {
    /// The exact summary of `series` in `[ts_min, ts_max]` for `cols`, or `None` if it cannot be known
    /// without reading rows (see the module doc).
    pub fn summarize(
        &self,
        db: DbId,
        table: TableId,
        series: &[SeriesId],
        ts_min: i64,
        ts_max: i64,
        cols: &[(ColId, FieldType)],
    ) -> Option<RangeSummary> {
        self.summarize_with(db, table, series, ts_min, ts_max, cols, series.len() <= crate::limits::SCAN_CACHED_SERIES_MAX)
    }

    /// [`Engine::summarize`], caching the block-index groups it decodes (their packs resolved) or not;
    /// tests take both ways on a few series.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn summarize_with(
        &self,
        db: DbId,
        table: TableId,
        series: &[SeriesId],
        ts_min: i64,
        ts_max: i64,
        cols: &[(ColId, FieldType)],
        cache: bool,
    ) -> Option<RangeSummary> {
        // Rows past retention are not served: a block straddling the cutoff is "cut by the range".
        let ts_min = ts_min.max(self.inner.retention_cutoff(db));
        if ts_min > ts_max {
            // e.g. a range wholly before the retention cutoff: no rows, exactly.
            return Some(RangeSummary { rows: 0, series_rows: Vec::new(), cols: cols.iter().map(|_| ColumnSummary { count: 0, min: None, max: None }).collect() });
        }
        self.inner.sort_active(db, table, series);
        let mem = self.inner.mem.read();
        let tombstones = self.inner.table_tombstones(db, table, ts_min, ts_max);
        let segments = self.inner.segments.read();
        let segs = segments.get(&(db, table)).map(Vec::as_slice).unwrap_or(&[]);
        let mut acc = Acc { rows: 0, series_rows: Vec::new(), cols: cols.iter().map(|_| Col::default()).collect() };
        // (memtable, generation): the active one is already free of deleted rows (u64::MAX: no tombstone
        // hides it).
        let mut mems: Vec<(crate::memtable::SeriesCursor<'_>, u64)> = mem
            .frozen
            .iter()
            .map(|f| (&f.memtable, f.generation))
            .chain([(&mem.active, u64::MAX)])
            .filter_map(|(m, generation)| Some((m.table(db, table)?.series.cursor(), generation)))
            .collect();
        // Statistics count deleted rows too: a block or buffer a tombstone may hide needs decoding.
        let hidden = |s: SeriesId, gen_max: u64, applied: u64, lo: i64, hi: i64| {
            tombstones
                .iter()
                .any(|t| t.id > applied && t.hides_generation(gen_max) && t.matches_series(s) && t.overlaps(lo, hi))
        };
        // The block index walked in series order, one forward cursor per segment, as a scan walks it
        // (`TableSnapshot::scan`): a lookup per series and segment decoded, resolved and cached every
        // group of packs it met, which at TSBS's 10 M hosts took 14 s of a SQL `count(*)`. Above
        // `SCAN_CACHED_SERIES_MAX` series the groups are decoded without their packs: a packed block's
        // statistics are then read from its rows (its decoded pack, one per thousand series).
        let sorted: Vec<SeriesId>;
        let series = if series.windows(2).all(|w| w[0] < w[1]) {
            series
        } else {
            sorted = series.iter().copied().collect::<std::collections::BTreeSet<_>>().into_iter().collect();
            &sorted
        };
        let mut cursors: Vec<crate::segment::SegmentScan<'_>> = segs.iter().map(|seg| seg.scan(cache)).collect();
        let mut blocks = crate::segment::SeriesBlocks::default();
        let mut owned = crate::rows::SeriesRows::default();
        // Time spans of a series' sources, to prove they are disjoint.
        let mut spans: Vec<(i64, i64)> = Vec::new();
        let mut members: Vec<(SeriesId, std::ops::Range<usize>)> = Vec::new();
        let mut k = 0;
        while k < series.len() {
            let s = series[k];
            k += 1;
            spans.clear();
            let before = acc.rows;
            // The segment whose packed block, wholly in the range, held rows of `s`.
            let mut packed_in: Option<usize> = None;
            for (i, (seg, cursor)) in segs.iter().zip(&mut cursors).enumerate() {
                // An unreadable block index: the caller's fallback (decoding rows) reports the error.
                cursor.blocks_into(s, &mut blocks).ok()?;
                for b in &blocks {
                    if b.ts_max < ts_min || b.ts_min > ts_max {
                        continue;
                    }
                    if b.pack.is_some() && b.ts_min >= ts_min && b.ts_max <= ts_max {
                        packed_in = Some(i);
                    }
                    // A packed block whose own time range or statistics may not be known (its group
                    // decoded without its pack): its rows in the range, from the decoded pack. Without
                    // columns and inside the range its row count is known.
                    if b.pack.is_some() && (!cols.is_empty() || b.ts_min < ts_min || b.ts_max > ts_max) {
                        let r = cursor.read(b, ts_min, ts_max, cols, &mut owned).ok()?;
                        let Some((&lo, &hi)) = r.ts.first().zip(r.ts.last()) else { continue };
                        if hidden(s, seg.id.generation, seg.id.tombstones_applied, lo, hi) {
                            return None;
                        }
                        spans.push((lo, hi));
                        acc.rows += r.ts.len() as u64;
                        for (i, c) in acc.cols.iter_mut().enumerate() {
                            if let Some(col) = r.col(i) {
                                c.add_rows(&col.values, &col.validity[r.offset..r.offset + r.ts.len()], r.offset);
                            }
                        }
                        continue;
                    }
                    if b.ts_min < ts_min || b.ts_max > ts_max {
                        return None; // cut by the range: only decoding can tell
                    }
                    if hidden(s, seg.id.generation, seg.id.tombstones_applied, b.ts_min, b.ts_max) {
                        return None;
                    }
                    spans.push((b.ts_min, b.ts_max));
                    acc.rows += u64::from(b.n_rows);
                    for ((col, ty), c) in cols.iter().zip(&mut acc.cols) {
                        let Some(m) = b.col(*col).filter(|m| m.ty == *ty && m.stats.count > 0) else { continue };
                        c.count += u64::from(m.stats.count);
                        if *ty != FieldType::String {
                            c.add(stat_value(*ty, m.stats.min)?, stat_value(*ty, m.stats.max)?);
                        }
                    }
                }
            }
            for (bufs, generation) in &mut mems {
                let Some(buf) = bufs.get(s) else { continue };
                // The in-order part and the staging area count as two sources: staged rows that share a
                // time span with in-order rows make the spans overlap, and staged rows not sorted yet
                // (a frozen memtable) may hold duplicates.
                let parts = buf.sorted_parts()?;
                for part in parts {
                    let start = part.ts.partition_point(|t| *t < ts_min);
                    let end = part.ts.partition_point(|t| *t <= ts_max);
                    if start == end {
                        continue;
                    }
                    if hidden(s, *generation, 0, part.ts[start], part.ts[end - 1]) {
                        return None;
                    }
                    spans.push((part.ts[start], part.ts[end - 1]));
                    acc.rows += (end - start) as u64;
                    for ((col, _), c) in cols.iter().zip(&mut acc.cols) {
                        if let Some(column) = part.column_range(*col, start..end) {
                            c.add_rows(&column.values, &column.validity, 0);
                        }
                    }
                }
            }
            spans.sort_unstable();
            if spans.windows(2).any(|w| w[1].0 <= w[0].1) {
                return None;
            }
            if acc.rows > before {
                acc.series_rows.push((s, acc.rows - before));
            }
            // `s`'s only source a packed block: the series after it in its pack that are the next
            // asked for, each with all its rows in the range and no other source (no block in another
            // segment before `bound`, none in a memtable, no tombstone), summed together as the fold's
            // scan takes them (`TableSnapshot::scan_folds`).
            let Some(i) = packed_in.filter(|_| spans.len() == 1 && tombstones.is_empty()) else { continue };
            let unwritten = |x: SeriesId| mems.iter_mut().all(|(bufs, _)| bufs.get(x).is_none());
            let Some(run) = crate::segment::alone_in_pack(&mut cursors, i, series, &mut k, (ts_min, ts_max), unwritten).ok()? else { continue };
            #[cfg(test)]
            PACK_RUNS_SUMMED.with(|n| n.set(n.get() + 1));
            let r = cursors[i].read_pack(&run, cols, &mut members).ok()?;
            // `s`'s own rows, the first member's, were summed above.
            let (from, n) = (members[0].1.end, r.ts.len() - members[0].1.end);
            acc.rows += n as u64;
            for (j, c) in acc.cols.iter_mut().enumerate() {
                if let Some(col) = r.col(j) {
                    c.add_rows(&col.values, &col.validity[r.offset + from..r.offset + from + n], r.offset + from);
                }
            }
            acc.series_rows.extend(members[1..].iter().map(|(m, rows)| (*m, rows.len() as u64)));
        }
        let cols = acc.cols.into_iter().map(|c| ColumnSummary { count: c.count, min: c.min, max: c.max }).collect();
        Some(RangeSummary { rows: acc.rows, series_rows: acc.series_rows, cols })
    }
}

#[cfg(test)]
thread_local! {
    /// Runs of a pack's series summed together (tests check the path is taken).
    pub(crate) static PACK_RUNS_SUMMED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

struct Acc {
    rows: u64,
    series_rows: Vec<(SeriesId, u64)>,
    cols: Vec<Col>,
}

#[derive(Default)]
struct Col {
    count: u64,
    min: Option<Value>,
    max: Option<Value>,
}

impl Col {
    fn add(&mut self, min: Value, max: Value) {
        if self.min.as_ref().is_none_or(|m| less(&min, m)) {
            self.min = Some(min);
        }
        if self.max.as_ref().is_none_or(|m| less(m, &max)) {
            self.max = Some(max);
        }
    }

    /// Folds in the valid values of `values[offset..offset + valid.len()]`.
    fn add_rows(&mut self, values: &ColumnValues, valid: &[bool], offset: usize) {
        let n = valid.iter().filter(|v| **v).count();
        self.count += n as u64;
        if n == 0 {
            return;
        }
        let idx = || valid.iter().enumerate().filter(|(_, v)| **v).map(|(i, _)| i + offset);
        let (lo, hi) = match values {
            ColumnValues::Float(v) => {
                let it = idx().map(|i| v[i]);
                (Value::Float(it.clone().fold(f64::INFINITY, f64::min)), Value::Float(it.fold(f64::NEG_INFINITY, f64::max)))
            }
            ColumnValues::Integer(v) => {
                let it = idx().map(|i| v[i]);
                (Value::Integer(it.clone().min().unwrap_or(0)), Value::Integer(it.max().unwrap_or(0)))
            }
            ColumnValues::UInteger(v) => {
                let it = idx().map(|i| v[i]);
                (Value::UInteger(it.clone().min().unwrap_or(0)), Value::UInteger(it.max().unwrap_or(0)))
            }
            ColumnValues::Boolean(v) => {
                let it = idx().map(|i| v[i]);
                (Value::Boolean(it.clone().all(|b| b)), Value::Boolean(it.into_iter().any(|b| b)))
            }
            ColumnValues::String(_) => return,
        };
        self.add(lo, hi);
    }
}

fn less(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x < y,
        (Value::Integer(x), Value::Integer(y)) => x < y,
        (Value::UInteger(x), Value::UInteger(y)) => x < y,
        (Value::Boolean(x), Value::Boolean(y)) => !x & y,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::engine::{EngineConfig, WritePoint};

    /// Hosts `a` and `b` have 200 rows each in a segment (blocks of their own), `p0`..`p2` and
    /// `q0`..`q3` 40 rows each there (packed, `PACK_BLOCK_ROWS_MAX`), then all but the `q`s 50 more in the
    /// memtable.
    #[test]
    fn summaries_equal_what_reading_the_rows_gives_or_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = EngineConfig::new(dir.path());
        // Nothing kept: a read decodes every group it meets, resolved (`cache`) or not.
        config.block_index_cache_bytes = 0;
        let e = Engine::open(config).unwrap();
        e.create_database("db", 0, false).unwrap();
        let write = |hosts: &[&'static str], from: i64, to: i64| {
            let points: Vec<WritePoint> = (from..to)
                .flat_map(|i| {
                    hosts.iter().map(move |h| {
                        let mut fields = vec![("v", Value::Integer((i * 37) % 101 - 50))];
                        if i % 4 == 0 {
                            fields.push(("f", Value::Float(i as f64 * 0.5)));
                        }
                        WritePoint { line: 1, table: "cpu", key: None, known: None, tags: vec![("host", *h)].into(), fields: fields.into(), ts: i }
                    })
                })
                .collect();
            e.write("db", &points).unwrap();
        };
        let (own, packed, quiet) = (["a", "b"], ["p0", "p1", "p2"], ["q0", "q1", "q2", "q3"]);
        write(&own, 0, 200);
        write(&packed, 150, 190);
        write(&quiet, 150, 190); // packed, and nothing in the memtable: summed together
        e.flush().unwrap();
        write(&own, 200, 250); // memtable, disjoint from the segment
        write(&packed, 200, 250);
        let (db, t, cols, series) = {
            let cat = e.catalog();
            let d = cat.db("db").unwrap();
            let t = d.table("cpu").unwrap();
            let cols = vec![(t.column("v").unwrap().id, FieldType::Integer), (t.column("f").unwrap().id, FieldType::Float)];
            (d.id, t.id, cols, (0..t.series_count() as u32).collect::<Vec<_>>())
        };
        // Reference from the rows themselves.
        let reference = |series: &[SeriesId], lo: i64, hi: i64| {
            let snap = e.snapshot(db, t, series, lo, hi, &cols);
            let mut rows = 0u64;
            let mut per_col: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
            for s in series {
                let Some(r) = snap.read_series(*s).unwrap() else { continue };
                rows += r.len() as u64;
                for (i, c) in r.cols.iter().enumerate() {
                    let vals = per_col.entry(i).or_default();
                    if let Some(c) = c {
                        for j in 0..c.len() {
                            match c.get(j) {
                                Some(Value::Integer(x)) => vals.push(x as f64),
                                Some(Value::Float(x)) => vals.push(x),
                                _ => {}
                            }
                        }
                    }
                }
            }
            (rows, per_col)
        };
        let as_f64 = |v: &Option<Value>| match v {
            Some(Value::Integer(x)) => Some(*x as f64),
            Some(Value::Float(x)) => Some(*x),
            _ => None,
        };
        let check = |series: &[SeriesId], lo: i64, hi: i64, cache: bool, cols: &[(ColId, FieldType)]| {
            let got = e.summarize_with(db, t, series, lo, hi, cols, cache).expect("whole blocks and disjoint sources");
            let (rows, per_col) = reference(series, lo, hi);
            assert_eq!(got.rows, rows, "[{lo}, {hi}], cache {cache}");
            for (i, c) in got.cols.iter().enumerate() {
                let vals = &per_col[&i];
                assert_eq!(c.count, vals.len() as u64, "[{lo}, {hi}], cache {cache}");
                assert_eq!(as_f64(&c.min), vals.iter().copied().reduce(f64::min), "[{lo}, {hi}], cache {cache}");
                assert_eq!(as_f64(&c.max), vals.iter().copied().reduce(f64::max), "[{lo}, {hi}], cache {cache}");
            }
        };
        // Uncached first: the packs' groups are then decoded without their packs.
        for cache in [false, true] {
            for (lo, hi) in [(i64::MIN, i64::MAX), (0, 249), (-5, 220), (200, 249)] {
                check(&series, lo, hi, cache, &cols);
                check(&series, lo, hi, cache, &[]);
            }
            // A range cutting the packs (not the blocks of their own) is read from the packs' rows.
            check(&series[2..], 160, 249, cache, &cols);
            check(&series[2..], 160, 175, cache, &[]);
        }
        assert!(PACK_RUNS_SUMMED.with(|n| n.get()) > 0, "the packed hosts were summed together");
        // A range cutting a block of its own, and overlapping sources, are refused.
        assert_eq!(e.summarize(db, t, &series, 50, 249, &cols), None);
        write(&own, 190, 195); // overwrites rows of the segment from the memtable
        assert_eq!(e.summarize(db, t, &series, i64::MIN, i64::MAX, &cols), None);
        write(&packed, 170, 171);
        assert_eq!(e.summarize(db, t, &series[2..], i64::MIN, i64::MAX, &cols), None, "a packed row overwritten");
    }
}
