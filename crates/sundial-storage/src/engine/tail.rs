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
//!   partitions reads one segment.
//! - otherwise: from each segment only the newest blocks that together hold `n` rows inside the range.
//! - memtables: only the last `n` rows of each series buffer's in-order part and staging area are
//!   copied (binary search), then merged.
//! - a source with rows hidden by a delete (see [`crate::tombstone`]) is read whole and filtered, since
//!   its last rows may all be deleted; the range starts no earlier than the retention cutoff.
//!
//! Why the merge stays exact: a timestamp among the last `n` distinct timestamps of the union is among the
//! last `n` of every source holding it, so each source's tail carries every row the answer needs, and the
//! last-write-wins merge of the tails agrees with that of the whole sources on those timestamps.

use super::{Engine, TableSnapshot};
use crate::catalog::{ColId, DbId, SeriesId, TableId};
use crate::error::Result;
use crate::rows::{self, SeriesRows};
use crate::segment::{BlockMeta, Segment, SeriesBlocks, stat_value};
use crate::tombstone;
use crate::types::{Column, FieldType};

/// A [`TableSnapshot`] that reads only the last `n` rows of each series.
pub struct TailSnapshot {
    snap: TableSnapshot,
    n: usize,
}

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
        TailSnapshot { snap, n }
    }
}

impl TailSnapshot {
    /// The last `n` rows of `series` in the range (fewer if it has fewer), or `None` if it has none.
    pub fn read_series(&self, series: SeriesId) -> Result<Option<SeriesRows>> {
        let s = &self.snap;
        let mut sources = Vec::new();
        // Segments without deleted rows: their blocks of the series, and the end of the newest one
        // touching the range when it ends inside it (the newest row the segment surely holds there).
        let mut clean: Vec<(&Segment, SeriesBlocks, Option<i64>)> = Vec::new();
        // A source with rows hidden by a delete is read whole and filtered: its tail may be all deleted.
        for seg in &s.segments {
            let hiding = s.hiding(series, seg.id.generation, seg.id.tombstones_applied);
            if hiding.is_empty() {
                let blocks = seg.series_blocks(series)?;
                let known = blocks.iter().rev().find(|b| self.touches(b)).map(|b| b.ts_max).filter(|t| *t <= s.ts_max);
                clean.push((seg, blocks, known));
                continue;
            }
            for mut r in seg.read_series(series, s.ts_min, s.ts_max, &s.cols)? {
                tombstone::apply(&mut r, hiding.iter().copied());
                sources.push(r);
            }
        }
        // The last row is at or after the newest row a clean segment surely holds in the range (its
        // newest block ending inside it): a segment whose newest block ends before that has no part
        // in it (a series over many day partitions reads one segment, not all).
        let floor = if self.n == 1 { clean.iter().filter_map(|(_, _, known)| *known).max() } else { None };
        for (seg, blocks, known) in &clean {
            if floor.is_some_and(|f| known.is_some_and(|t| t < f)) {
                continue;
            }
            sources.extend(self.segment_tail(seg, series, blocks)?);
        }
        for f in &s.frozen {
            if let Some(buf) = f.memtable.table(s.db, s.table).and_then(|t| t.series.get(&series)) {
                let hiding = s.hiding(series, f.generation, 0);
                if hiding.is_empty() {
                    sources.push(buf.read_tail(series, s.ts_min, s.ts_max, &s.cols, self.n));
                } else {
                    let mut r = buf.read(series, s.ts_min, s.ts_max, &s.cols);
                    tombstone::apply(&mut r, hiding);
                    sources.push(r);
                }
            }
        }
        if let Some(r) = s.active.get(&series) {
            sources.push(r.clone());
        }
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

    /// Whether a block holds times inside the range.
    fn touches(&self, b: &BlockMeta) -> bool {
        b.ts_max >= self.snap.ts_min && b.ts_min <= self.snap.ts_max
    }

    /// The rows of `seg` that can be among the last `n` of `series` in the range, oldest first, from
    /// `all` its blocks of the series.
    fn segment_tail(&self, seg: &Segment, series: SeriesId, all: &SeriesBlocks) -> Result<Vec<SeriesRows>> {
        let s = &self.snap;
        let blocks: Vec<&BlockMeta> = all.iter().filter(|b| self.touches(b)).collect();
        let Some(newest) = blocks.last() else { return Ok(Vec::new()) };
        if self.n == 1
            && let Some(row) = last_row_from_stats(newest, series, s.ts_max, &s.cols)
        {
            return Ok(vec![row]);
        }
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
        blocks[first..].iter().map(|b| seg.read_block(b, s.ts_min, s.ts_max, &s.cols)).collect()
    }
}

/// The last row of a block inside a range ending at `ts_max`, built from the block's statistics; `None`
/// when statistics cannot tell (the block runs past `ts_max`, or a string column is asked for).
fn last_row_from_stats(b: &BlockMeta, series: SeriesId, ts_max: i64, cols: &[(ColId, FieldType)]) -> Option<SeriesRows> {
    if b.ts_max > ts_max || cols.iter().any(|(_, ty)| *ty == FieldType::String) {
        return None;
    }
    let mut out = Vec::with_capacity(cols.len());
    for (col, ty) in cols {
        // As the decoder answers: a column the block has is a column (null where it has no value).
        let Some(m) = b.col(*col).filter(|m| m.ty == *ty) else {
            out.push(None);
            continue;
        };
        let mut c = Column::with_capacity(*ty, 1);
        if m.stats.count > 0 && m.stats.last_ts == b.ts_max {
            c.push_value(&stat_value(*ty, m.stats.last)?);
        } else {
            c.push_null();
        }
        out.push(Some(c));
    }
    Some(SeriesRows { series, ts: vec![b.ts_max], cols: out })
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
                    points.push(WritePoint { line: 1, table: "cpu", tags: vec![("host", *host)], fields, ts });
                }
            }
            e.write("db", &points).unwrap();
            if round < 3 {
                e.flush().unwrap();
            }
        }
        let cat = e.catalog();
        let d = cat.db("db").unwrap();
        let t = d.table("cpu").unwrap();
        let cols = vec![(t.column("v").unwrap().id, FieldType::Integer), (t.column("f").unwrap().id, FieldType::Float)];
        (d.id, t.id, cols, (0..t.series_count() as u32).collect::<Vec<_>>())
    }

    /// Every tail length and several ranges answer exactly what the full read's tail does.
    #[test]
    fn tails_equal_the_tail_of_a_full_read() {
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::open(EngineConfig::new(dir.path())).unwrap();
        let (db, t, cols, series) = load(&e);
        for (lo, hi) in [(i64::MIN, i64::MAX), (0, 100), (35, 129), (200, 300)] {
            for n in [1, 2, 7, 60, 500] {
                let tail = e.snapshot_tail(db, t, &series, lo, hi, &cols, n);
                let got: Vec<_> = series.iter().map(|s| tail.read_series(*s).unwrap()).collect();
                assert_eq!(got, tail_of_full(&e, db, t, &series, lo, hi, &cols, n), "range [{lo}, {hi}], n = {n}");
            }
        }
        // Everything flushed: n = 1 comes from block statistics alone and still agrees.
        e.flush().unwrap();
        let tail = e.snapshot_tail(db, t, &series, i64::MIN, i64::MAX, &cols, 1);
        let got: Vec<_> = series.iter().map(|s| tail.read_series(*s).unwrap()).collect();
        assert_eq!(got, tail_of_full(&e, db, t, &series, i64::MIN, i64::MAX, &cols, 1));
        assert_eq!(got[0].as_ref().unwrap().ts, vec![169]);
    }

    /// One row per source (a series over day partitions, one point each): the last row skips the
    /// older segments, longer tails still need them.
    #[test]
    fn tails_of_one_row_sources() {
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::open(EngineConfig::new(dir.path())).unwrap();
        e.create_database("db", 0, false).unwrap();
        for (ts, flush) in [(50, true), (100, true), (20, true), (75, false)] {
            let p = WritePoint { line: 1, table: "cpu", tags: vec![("host", "a")], fields: vec![("v", Value::Integer(ts))], ts };
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
