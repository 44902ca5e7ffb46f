//! In-memory rows not yet in segment files: per table, per series, append-only columns.
//!
//! Rows are appended in arrival order. A series whose timestamps only grow (the common case) stays
//! `sorted` and is read by slicing; late or duplicate rows clear the flag and the read path sorts a copy
//! and merges duplicates (last write wins per column). The flush does the same once, when it writes the
//! series out.


use crate::FastMap as HashMap;
use crate::batch::WriteBatch;
use crate::catalog::{ColId, DbId, SeriesId, TableId};
use crate::rows::SeriesRows;
use crate::types::{Column, FieldType, Value};

#[derive(Debug, Default)]
pub struct SeriesBuf {
    pub ts: Vec<i64>,
    /// (column, values) for every column any row of this series had; all as long as `ts`.
    pub cols: Vec<(ColId, Column)>,
    /// Timestamps strictly increasing.
    pub sorted: bool,
}

impl SeriesBuf {
    fn new() -> Self {
        SeriesBuf { ts: Vec::new(), cols: Vec::new(), sorted: true }
    }

    /// Appends one row; returns the approximate bytes added.
    fn push(&mut self, ts: i64, values: &[(ColId, Value)]) -> usize {
        if self.ts.last().is_some_and(|last| *last >= ts) {
            self.sorted = false;
        }
        let n = self.ts.len();
        self.ts.push(ts);
        let mut bytes = 8;
        // Columns present in this row get their value; then every column shorter than `ts` gets a null.
        for (col, v) in values {
            let i = match self.cols.iter().position(|(c, _)| c == col) {
                Some(i) => i,
                None => {
                    self.cols.push((*col, Column::nulls(v.field_type(), n)));
                    self.cols.len() - 1
                }
            };
            let c = &mut self.cols[i].1;
            if c.len() == n {
                c.push_value(v);
            } else {
                // The same column twice in one row: the later value wins.
                c.set_value(n, v);
            }
            bytes += 9 + if let Value::String(s) = v { s.len() + 24 } else { 0 };
        }
        for (_, c) in &mut self.cols {
            if c.len() == n {
                c.push_null();
                bytes += 1;
            }
        }
        bytes
    }

    /// The rows with `ts_min <= ts <= ts_max`, sorted and deduplicated, for the requested columns.
    pub fn read(&self, series: SeriesId, ts_min: i64, ts_max: i64, cols: &[(ColId, FieldType)]) -> SeriesRows {
        self.read_tail(series, ts_min, ts_max, cols, usize::MAX)
    }

    /// Like [`SeriesBuf::read`], but only the last `n` of those rows.
    pub fn read_tail(&self, series: SeriesId, ts_min: i64, ts_max: i64, cols: &[(ColId, FieldType)], n: usize) -> SeriesRows {
        if self.sorted {
            let end = self.ts.partition_point(|t| *t <= ts_max);
            let start = self.ts.partition_point(|t| *t < ts_min).max(end.saturating_sub(n)).min(end);
            let pick = |(col, _): &(ColId, FieldType)| {
                self.cols.iter().find(|(c, _)| c == col).map(|(_, c)| c.slice(start..end))
            };
            return SeriesRows { series, ts: self.ts[start..end].to_vec(), cols: cols.iter().map(pick).collect() };
        }
        let sorted = self.sorted_dedup();
        sorted.read_tail(series, ts_min, ts_max, cols, n)
    }

    /// A copy sorted by timestamp with duplicates merged: per column, the last non-null value wins.
    pub fn sorted_dedup(&self) -> SeriesBuf {
        let mut order: Vec<u32> = (0..self.ts.len() as u32).collect();
        order.sort_by_key(|i| self.ts[*i as usize]); // stable: arrival order within one timestamp
        let mut out = SeriesBuf::new();
        out.cols = self.cols.iter().map(|(c, col)| (*c, Column::new(col.field_type()))).collect();
        let mut start = 0;
        while start < order.len() {
            let t = self.ts[order[start] as usize];
            let end = start + order[start..].iter().take_while(|i| self.ts[**i as usize] == t).count();
            out.ts.push(t);
            for ((_, src), (_, dst)) in self.cols.iter().zip(out.cols.iter_mut()) {
                let last = order[start..end].iter().rev().find(|i| src.validity[**i as usize]);
                match last {
                    Some(i) => dst.push_from(src, *i as usize),
                    None => dst.push_null(),
                }
            }
            start = end;
        }
        out
    }

    /// Removes the rows with `ts_min <= ts <= ts_max` (a delete); returns how many.
    fn remove_time_range(&mut self, ts_min: i64, ts_max: i64) -> usize {
        let keep: Vec<bool> = self.ts.iter().map(|t| *t < ts_min || *t > ts_max).collect();
        let removed = keep.iter().filter(|k| !**k).count();
        if removed == 0 {
            return 0;
        }
        let idx: Vec<usize> = (0..keep.len()).filter(|i| keep[*i]).collect();
        self.ts = idx.iter().map(|i| self.ts[*i]).collect();
        for (_, c) in self.cols.iter_mut() {
            let mut out = Column::with_capacity(c.field_type(), idx.len());
            for i in &idx {
                out.push_from(c, *i);
            }
            *c = out;
        }
        removed
    }

    pub fn ts_range(&self) -> Option<(i64, i64)> {
        if self.sorted {
            return Some((*self.ts.first()?, *self.ts.last()?));
        }
        Some((*self.ts.iter().min()?, *self.ts.iter().max()?))
    }
}

/// One table's rows in one memtable generation.
#[derive(Debug, Default)]
pub struct MemTable {
    pub series: HashMap<SeriesId, SeriesBuf>,
}

/// All rows written between two flushes. Frozen generations are immutable and shared with readers.
#[derive(Debug, Default)]
pub struct MemGen {
    pub tables: HashMap<(DbId, TableId), MemTable>,
    pub bytes: usize,
    pub rows: u64,
    /// Oldest write in this generation, for the age-based flush.
    pub created: Option<std::time::Instant>,
    /// Newest write in this generation, for the idle flush.
    pub last_write: Option<std::time::Instant>,
}

impl MemGen {
    pub fn apply(&mut self, b: &WriteBatch) {
        if b.rows.is_empty() {
            return;
        }
        let now = std::time::Instant::now();
        self.created.get_or_insert(now);
        self.last_write = Some(now);
        for (i, r) in b.rows.iter().enumerate() {
            let table = self.tables.entry((b.db, r.table)).or_default();
            // Not `or_default()`: `new()` starts with `sorted: true`, the derived `Default` does not.
            #[allow(clippy::unwrap_or_default)]
            let s = table.series.entry(r.series).or_insert_with(SeriesBuf::new);
            self.bytes += s.push(r.ts, b.row_values(i));
        }
        self.rows += b.rows.len() as u64;
    }

    /// Removes the rows of `table` with `ts_min <= ts <= ts_max`, of every series or of `series` (a
    /// delete); returns how many. Bytes stay counted until the flush (an over-estimate, never an under-).
    pub fn delete(&mut self, db: DbId, table: TableId, series: Option<&[SeriesId]>, ts_min: i64, ts_max: i64) -> u64 {
        let Some(t) = self.tables.get_mut(&(db, table)) else { return 0 };
        let mut removed = 0u64;
        for (sid, buf) in t.series.iter_mut() {
            if series.is_none_or(|s| s.binary_search(sid).is_ok()) {
                removed += buf.remove_time_range(ts_min, ts_max) as u64;
            }
        }
        t.series.retain(|_, b| !b.ts.is_empty());
        self.rows -= removed;
        removed
    }

    pub fn table(&self, db: DbId, table: TableId) -> Option<&MemTable> {
        self.tables.get(&(db, table))
    }

    /// True if any of `series` of the table has an unsorted buffer (a late or duplicate row arrived).
    pub fn has_unsorted(&self, db: DbId, table: TableId, series: &[SeriesId]) -> bool {
        self.table(db, table).is_some_and(|t| series.iter().any(|s| t.series.get(s).is_some_and(|b| !b.sorted)))
    }

    /// Sorts (and merges duplicates of) the unsorted buffers of `series` in place, so reads slice them
    /// instead of sorting a copy every time: concurrent writers deliver batches slightly out of order,
    /// and without this every query of such a series paid a sort.
    pub fn sort_series(&mut self, db: DbId, table: TableId, series: &[SeriesId]) {
        let Some(t) = self.tables.get_mut(&(db, table)) else { return };
        for s in series {
            if let Some(b) = t.series.get_mut(s).filter(|b| !b.sorted) {
                let before = b.ts.len();
                *b = b.sorted_dedup();
                self.rows -= (before - b.ts.len()) as u64;
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ColumnValues;

    #[test]
    fn out_of_order_and_duplicate_rows_read_sorted_with_last_write_wins() {
        let mut g = MemGen::default();
        let mut b = WriteBatch::new(0);
        b.push_row(0, 1, 30, [(0, Value::Integer(3))]);
        b.push_row(0, 1, 10, [(0, Value::Integer(1)), (1, Value::Float(0.5))]);
        b.push_row(0, 1, 30, [(1, Value::Float(3.5))]);
        b.push_row(0, 1, 20, [(0, Value::Integer(2))]);
        b.push_row(0, 1, 10, [(0, Value::Integer(11))]);
        g.apply(&b);
        let s = &g.table(0, 0).unwrap().series[&1];
        assert!(!s.sorted);
        let cols = [(0, FieldType::Integer), (1, FieldType::Float), (2, FieldType::Boolean)];
        let r = s.read(1, i64::MIN, i64::MAX, &cols);
        r.check().unwrap();
        assert_eq!(r.ts, vec![10, 20, 30]);
        assert_eq!(r.cols[0].as_ref().unwrap().values, ColumnValues::Integer(vec![11, 2, 3]));
        let f = r.cols[1].as_ref().unwrap();
        assert_eq!(f.validity, vec![true, false, true]);
        assert_eq!(f.get(2), Some(Value::Float(3.5)));
        assert_eq!(f.get(0), Some(Value::Float(0.5)));
        assert!(r.cols[2].is_none());
        let r = s.read(1, 15, 30, &cols);
        assert_eq!(r.ts, vec![20, 30]);
        // Sorting in place gives the same rows, keeps the row count true, and reads then slice.
        let before = s.read(1, i64::MIN, i64::MAX, &cols);
        assert!(g.has_unsorted(0, 0, &[1]));
        g.sort_series(0, 0, &[1]);
        assert!(!g.has_unsorted(0, 0, &[1]));
        assert_eq!(g.rows, 3);
        let s = &g.table(0, 0).unwrap().series[&1];
        assert!(s.sorted);
        assert_eq!(s.read(1, i64::MIN, i64::MAX, &cols), before);
    }

    #[test]
    fn deletes_remove_rows_of_the_chosen_series_and_time_range() {
        let mut g = MemGen::default();
        let mut b = WriteBatch::new(0);
        for t in [5, 1, 3, 2, 4] {
            b.push_row(0, 1, t, [(0, Value::Integer(t))]);
            b.push_row(0, 2, t, [(0, Value::Integer(-t))]);
        }
        g.apply(&b);
        assert_eq!(g.delete(0, 0, Some(&[1]), 2, 4), 3);
        assert_eq!(g.rows, 7);
        let r = g.table(0, 0).unwrap().series[&1].read(1, i64::MIN, i64::MAX, &[(0, FieldType::Integer)]);
        assert_eq!(r.ts, vec![1, 5]);
        assert_eq!(r.cols[0].as_ref().unwrap().values, ColumnValues::Integer(vec![1, 5]));
        assert_eq!(g.delete(0, 0, None, i64::MIN, i64::MAX), 7);
        assert!(g.is_empty());
        assert!(g.table(0, 0).unwrap().series.is_empty());
    }

    #[test]
    fn sorted_series_are_sliced_by_time() {
        let mut g = MemGen::default();
        let mut b = WriteBatch::new(0);
        for t in 0..100 {
            b.push_row(0, 0, t * 10, [(0, Value::Boolean(t % 2 == 0))]);
        }
        g.apply(&b);
        let s = &g.table(0, 0).unwrap().series[&0];
        assert!(s.sorted);
        let r = s.read(0, 95, 200, &[(0, FieldType::Boolean)]);
        assert_eq!(r.ts, (10..=20).map(|t| t * 10).collect::<Vec<_>>());
    }
}
