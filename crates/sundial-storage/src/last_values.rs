//! Each series' newest block's last row, per segment, as one compact table: what the "last point per
//! series" read ([`crate::engine::TailSnapshot::read_last`]) takes from block statistics, without
//! looking each series up in the block index.
//!
//! Why by hand: the block index holds about 1 KB of statistics per block (ten columns), so the last row
//! of 4,000 series was 4 MB of scattered reads, a fifth of TSBS lastpoint's server CPU (finding each
//! series' blocks, then each column's entry among them). Here a series is 20 bytes and 9 per column,
//! column after column, read in series order. TDengine keeps a last-row cache for the same query.
//!
//! A table is built from a segment's block index when a read of many series' last rows first needs it
//! (see [`crate::limits::LAST_VALUES_BUILD_BLOCKS_PER_SERIES`]) and kept in a process-wide cache within
//! [`LAST_VALUES_BYTES_MAX`], oldest out first, forgotten with its segment. Segments never change, so
//! a table never goes stale.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use crate::catalog::{ColId, SeriesId};
use crate::error::Result;
use crate::fifo::FifoCache;
use crate::limits::LAST_VALUES_BYTES_MAX;
use crate::segment::{BlockMeta, stat_value};
use crate::types::{FieldType, Value};

/// Per series with a block in a segment: the span of its newest block and, per (column, type) found in
/// newest blocks, that block's value of it at its last time.
#[derive(Debug, Default)]
pub struct LastValues {
    /// Series with a block in the segment, ascending.
    series: Vec<SeriesId>,
    /// Per series, its newest block's first and last times.
    spans: Vec<(i64, i64)>,
    /// The (column, type) pairs of the newest blocks (strings left out: they keep no value statistics).
    cols: Vec<(ColId, FieldType)>,
    /// Per column, per series: the raw statistic ([`stat_value`]) and its [`Cell`] state.
    values: Vec<Vec<u64>>,
    states: Vec<Vec<Cell>>,
}

/// What a newest block says of a column at its last time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Cell {
    /// The block has no such column (of that type): the decoder answers no column.
    Absent,
    /// The block has the column, without a value at its last time.
    Null,
    /// The block's value at its last time is in `values`.
    Set,
}

impl LastValues {
    /// Builds the table from a segment's blocks, group by group in file order (series, then time);
    /// `None` once it would pass `max_bytes`.
    fn build(groups: impl Iterator<Item = Result<Arc<[BlockMeta]>>>, max_bytes: usize) -> Result<Option<LastValues>> {
        let mut t = LastValues::default();
        for group in groups {
            for b in group?.iter() {
                t.put(b);
            }
            if t.bytes() > max_bytes {
                return Ok(None);
            }
        }
        t.check();
        Ok(Some(t))
    }

    /// Takes block `b` as its series' newest so far (blocks come oldest first within a series).
    fn put(&mut self, b: &BlockMeta) {
        let n = self.series.len();
        let row = match self.series.last() {
            Some(s) if *s == b.series => n - 1,
            last => {
                assert!(last.is_none_or(|s| *s < b.series), "blocks in series order");
                self.series.push(b.series);
                self.spans.push((b.ts_min, b.ts_max));
                for (v, s) in self.values.iter_mut().zip(&mut self.states) {
                    v.push(0);
                    s.push(Cell::Absent);
                }
                n
            }
        };
        self.spans[row] = (b.ts_min, b.ts_max);
        for s in &mut self.states {
            s[row] = Cell::Absent;
        }
        for m in b.cols.iter().filter(|m| m.ty != FieldType::String) {
            let c = match self.cols.iter().position(|c| *c == (m.col, m.ty)) {
                Some(c) => c,
                None => {
                    self.cols.push((m.col, m.ty));
                    self.values.push(vec![0; self.series.len()]);
                    self.states.push(vec![Cell::Absent; self.series.len()]);
                    self.cols.len() - 1
                }
            };
            let at_end = m.stats.count > 0 && m.stats.last_ts == b.ts_max;
            self.states[c][row] = if at_end { Cell::Set } else { Cell::Null };
            self.values[c][row] = if at_end { m.stats.last } else { 0 };
        }
    }

    fn check(&self) {
        assert_eq!(self.spans.len(), self.series.len(), "a span per series");
        assert!(self.values.iter().all(|v| v.len() == self.series.len()), "a value per series per column");
        assert!(self.states.iter().all(|s| s.len() == self.series.len()), "a state per series per column");
    }

    /// Heap bytes, for [`LAST_VALUES_BYTES_MAX`].
    pub fn bytes(&self) -> usize {
        self.series.capacity() * 4
            + self.spans.capacity() * 16
            + self.values.iter().map(|v| v.capacity() * 8).sum::<usize>()
            + self.states.iter().map(|s| s.capacity()).sum::<usize>()
    }

    /// Where each of `cols` is among the table's columns (`None`: no newest block has it).
    pub fn positions(&self, cols: &[(ColId, FieldType)]) -> Vec<Option<usize>> {
        cols.iter().map(|c| self.cols.iter().position(|x| x == c)).collect()
    }

    /// The row of `series`, if it has a block in the segment. `cursor` is where the previous lookup
    /// ended: series looked up in ascending order find theirs at or just after it.
    pub fn find(&self, series: SeriesId, cursor: &mut usize) -> Option<usize> {
        let from = if self.series.get(*cursor).is_some_and(|s| *s <= series) { *cursor } else { 0 };
        let at = from + self.series[from..].partition_point(|s| *s < series);
        *cursor = at;
        (self.series.get(at) == Some(&series)).then_some(at)
    }

    /// The first and last times of row `row`'s newest block.
    pub fn span(&self, row: usize) -> (i64, i64) {
        self.spans[row]
    }

    /// What the newest block of row `row` says of column `col` (a position from [`Self::positions`]).
    pub fn cell(&self, row: usize, col: Option<usize>) -> Cell {
        col.map_or(Cell::Absent, |c| self.states[c][row])
    }

    /// The value of column `col` at the last time of row `row`'s newest block, if it has one there.
    pub fn value(&self, row: usize, col: Option<usize>) -> Option<Value> {
        let c = col?;
        (self.states[c][row] == Cell::Set).then(|| stat_value(self.cols[c].1, self.values[c][row])).flatten()
    }
}

/// The tables of all open segments, by segment number, within [`LAST_VALUES_BYTES_MAX`].
static CACHE: LazyLock<Mutex<Cache>> =
    LazyLock::new(|| Mutex::new(Cache { tables: FifoCache::new(LAST_VALUES_BYTES_MAX), too_large: HashSet::new(), building: HashSet::new() }));

struct Cache {
    tables: FifoCache<u64, Arc<LastValues>>,
    /// Segments whose table would not fit the bound: not built again at every read (a build stops at
    /// the bound, after decoding that much of the block index).
    too_large: HashSet<u64>,
    /// Segments whose table a reader is building: another reader goes through the block index meanwhile
    /// rather than build it too (eight concurrent first reads of a large segment would hold eight).
    building: HashSet<u64>,
}

/// Segment `segment`'s table: from the cache, or built from `groups` when `build` (and kept when it
/// fits). `None` when neither.
pub(crate) fn get_or_build<I: Iterator<Item = Result<Arc<[BlockMeta]>>>>(segment: u64, build: bool, groups: impl FnOnce() -> I) -> Result<Option<Arc<LastValues>>> {
    {
        let mut c = CACHE.lock();
        if let Some(t) = c.tables.get(&segment) {
            return Ok(Some(Arc::clone(t)));
        }
        if !build || c.too_large.contains(&segment) || !c.building.insert(segment) {
            return Ok(None);
        }
    }
    // Built outside the lock, by one reader at a time.
    let built = LastValues::build(groups(), LAST_VALUES_BYTES_MAX);
    let mut c = CACHE.lock();
    c.building.remove(&segment);
    match built? {
        None => {
            c.too_large.insert(segment);
            Ok(None)
        }
        Some(t) => {
            let t = Arc::new(t);
            let bytes = t.bytes();
            c.tables.put(segment, Arc::clone(&t), bytes);
            Ok(Some(t))
        }
    }
}

/// The tables kept now, all segments together: how many, and their heap bytes (within
/// [`LAST_VALUES_BYTES_MAX`]), for `/debug/vars`.
pub fn stats() -> (usize, usize) {
    CACHE.lock().tables.usage()
}

/// Drops segment `segment`'s table (the segment is closed).
pub(crate) fn forget_segment(segment: u64) {
    let mut c = CACHE.lock();
    c.too_large.remove(&segment);
    c.tables.forget(|k| *k == segment);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, EngineConfig, WritePoint};
    use crate::segment::Segment;

    /// A segment of three hosts (b without `f`, c with a block past its last `f`): the table holds each
    /// host's newest block and what it says of each column; a bound below its size builds nothing.
    #[test]
    fn a_table_holds_each_series_newest_block() {
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::open(EngineConfig::new(dir.path())).unwrap();
        e.create_database("db", 0, false).unwrap();
        let rows = crate::limits::BLOCK_ROWS_MAX as i64 + 10;
        let mut points = Vec::new();
        for (h, host) in ["a", "b", "c"].into_iter().enumerate() {
            for i in 0..rows {
                let mut fields = vec![("v", Value::Integer(i + h as i64 * 1000))];
                if host == "a" || (host == "c" && i < rows - 1) {
                    fields.push(("f", Value::Float(i as f64 / 2.0)));
                }
                points.push(WritePoint { line: 1, table: "m", key: None, known: None, tags: vec![("host", host)].into(), fields: fields.into(), ts: i });
            }
        }
        e.write("db", &points).unwrap();
        e.flush().unwrap();
        let (v, f) = {
            let cat = e.catalog();
            let t = cat.db("db").unwrap().table("m").unwrap();
            (t.column("v").unwrap().id, t.column("f").unwrap().id)
        };
        let path = crate::test_util::walk(dir.path()).into_iter().find(|p| p.extension().is_some_and(|x| x == "seg")).expect("a segment file");
        let seg = Segment::open(&path).unwrap();
        let t = LastValues::build(seg.decoded_groups(), usize::MAX).unwrap().expect("no bound");
        let at = t.positions(&[(v, FieldType::Integer), (f, FieldType::Float), (v, FieldType::Float)]);
        assert_eq!(at[2], None, "no block has v as a float");
        let last_block_start = crate::limits::BLOCK_ROWS_MAX as i64;
        let mut cursor = 0;
        for (s, want_v, want_f) in [(0, rows - 1, Cell::Set), (1, rows - 1 + 1000, Cell::Absent), (2, rows - 1 + 2000, Cell::Null)] {
            let row = t.find(s, &mut cursor).expect("a row per series");
            assert_eq!(t.span(row), (last_block_start, rows - 1), "series {s}: its newest block");
            assert_eq!(t.value(row, at[0]), Some(Value::Integer(want_v)));
            assert_eq!(t.cell(row, at[1]), want_f, "series {s}: f");
            assert_eq!(t.value(row, at[1]), (want_f == Cell::Set).then(|| Value::Float((rows - 1) as f64 / 2.0)));
        }
        assert_eq!(t.find(3, &mut cursor), None);
        assert_eq!(t.find(1, &mut cursor), Some(1), "looked up out of order");
        assert!(LastValues::build(seg.decoded_groups(), t.bytes() - 1).unwrap().is_none(), "over the bound");
    }
}
