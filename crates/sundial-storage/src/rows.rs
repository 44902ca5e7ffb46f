//! Runs of one series' rows as read from a source (memtable or segment block), and the merge of several
//! sources with last-write-wins.

use crate::catalog::SeriesId;
use crate::types::{Column, FieldType};

/// Rows of one series, sorted by strictly increasing timestamp. `cols` is parallel to the columns the
/// reader asked for; `None` means the source has no value for that column in these rows (all null).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesRows {
    pub series: SeriesId,
    pub ts: Vec<i64>,
    pub cols: Vec<Option<Column>>,
}

impl SeriesRows {
    pub fn len(&self) -> usize {
        self.ts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }

    /// Rows `range` as a new run.
    pub fn slice(&self, range: std::ops::Range<usize>) -> SeriesRows {
        SeriesRows {
            series: self.series,
            ts: self.ts[range.clone()].to_vec(),
            cols: self.cols.iter().map(|c| c.as_ref().map(|c| c.slice(range.clone()))).collect(),
        }
    }

    /// Removes the rows with `ts_min <= ts <= ts_max` (a contiguous run, timestamps being sorted);
    /// returns how many were removed.
    pub fn remove_time_range(&mut self, ts_min: i64, ts_max: i64) -> usize {
        let start = self.ts.partition_point(|t| *t < ts_min);
        let end = self.ts.partition_point(|t| *t <= ts_max);
        if start >= end {
            return 0;
        }
        if start == 0 && end == self.ts.len() {
            self.ts.clear();
            for c in self.cols.iter_mut() {
                *c = None;
            }
            return end;
        }
        let mut head = self.slice(0..start);
        let tail = self.slice(end..self.len());
        head.ts.extend_from_slice(&tail.ts);
        for (h, t) in head.cols.iter_mut().zip(tail.cols) {
            if let (Some(h), Some(t)) = (h.as_mut(), t) {
                h.extend(&t);
            }
        }
        *self = head;
        end - start
    }

    /// Splits off and returns the rows with `ts <= ts_max`, keeping the later ones in `self`.
    ///
    /// Splitting off all or none of the rows moves or makes an empty value instead of copying: in
    /// compaction a series' block is usually split off whole (its input is the only one holding the
    /// series), and the two copies were 9 % of the server's CPU while loading 10 M series.
    pub fn split_through(&mut self, ts_max: i64) -> SeriesRows {
        let end = self.ts.partition_point(|t| *t <= ts_max);
        let empty = |r: &SeriesRows| SeriesRows { series: r.series, ts: Vec::new(), cols: vec![None; r.cols.len()] };
        if end == self.len() {
            let rest = empty(self);
            return std::mem::replace(self, rest);
        }
        if end == 0 {
            return empty(self);
        }
        let head = self.slice(0..end);
        *self = self.slice(end..self.len());
        head
    }

    /// Checks the invariants every producer promises: timestamps strictly increasing, every column as
    /// long as the timestamps.
    pub fn check(&self) -> Result<(), String> {
        if let Some(w) = self.ts.windows(2).find(|w| w[0] >= w[1]) {
            return Err(format!("timestamps not strictly increasing: {} then {}", w[0], w[1]));
        }
        for c in self.cols.iter().flatten() {
            if c.len() != self.ts.len() || c.values.len() != self.ts.len() {
                return Err(format!("column of {} rows next to {} timestamps", c.len(), self.ts.len()));
            }
        }
        Ok(())
    }
}

/// One series' rows from one source, borrowed from where they were decoded: the timestamps, and each
/// requested column as the column holding them, rows `offset..offset + ts.len()` of it (a packed
/// block's rows are a slice of its pack's columns). What `TableSnapshot::scan` hands out.
#[derive(Clone, Copy, Debug)]
pub struct RowsRef<'a> {
    pub series: SeriesId,
    pub ts: &'a [i64],
    pub offset: usize,
    pub(crate) cols: ColsRef<'a>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum ColsRef<'a> {
    /// Columns of a [`SeriesRows`], in request order.
    Rows(&'a [Option<Column>]),
    /// A decoded pack's columns (keyed by chunk offset), and per requested column its index there.
    Pack(&'a [(u64, std::sync::Arc<Column>)], &'a [Option<usize>]),
}

impl<'a> RowsRef<'a> {
    /// All rows of `rows`.
    pub fn of(rows: &'a SeriesRows) -> RowsRef<'a> {
        RowsRef { series: rows.series, ts: &rows.ts, offset: 0, cols: ColsRef::Rows(&rows.cols) }
    }

    /// Rows `range` of these (indexes into `ts`), as the rows of `series`.
    pub fn slice(&self, series: SeriesId, range: std::ops::Range<usize>) -> RowsRef<'a> {
        RowsRef { series, ts: &self.ts[range.clone()], offset: self.offset + range.start, cols: self.cols }
    }

    /// The column holding requested column `i` (`None`: no value in these rows); these rows are
    /// `offset..offset + ts.len()` of it.
    pub fn col(&self, i: usize) -> Option<&'a Column> {
        match self.cols {
            ColsRef::Rows(cols) => cols[i].as_ref(),
            ColsRef::Pack(cols, index) => index[i].map(|k| &*cols[k].1),
        }
    }

    /// Requested columns.
    pub fn n_cols(&self) -> usize {
        match self.cols {
            ColsRef::Rows(cols) => cols.len(),
            ColsRef::Pack(_, index) => index.len(),
        }
    }
}

/// Merges runs of the same series, ordered oldest to newest: for rows with the same timestamp, each
/// column takes the newest non-null value (InfluxDB's rule: the field sets are unioned, ties go to the
/// newer write). `types` gives the type of each requested column.
pub fn merge(mut sources: Vec<SeriesRows>, types: &[FieldType]) -> Option<SeriesRows> {
    sources.retain(|s| !s.is_empty());
    match sources.len() {
        0 => return None,
        1 => return sources.pop(),
        _ => {}
    }
    let disjoint = sources.windows(2).all(|w| w[0].ts.last() < w[1].ts.first());
    if disjoint {
        return Some(concat(sources, types));
    }
    Some(merge_overlapping(&sources, types))
}

fn concat(sources: Vec<SeriesRows>, types: &[FieldType]) -> SeriesRows {
    let n: usize = sources.iter().map(SeriesRows::len).sum();
    let mut out = SeriesRows { series: sources[0].series, ts: Vec::with_capacity(n), cols: vec![None; types.len()] };
    for s in &sources {
        append(&mut out, s, types);
    }
    out
}

/// Appends `src`'s rows after `dst`'s (the caller has checked that they come later): a column only one
/// side has gets nulls on the other.
fn append(dst: &mut SeriesRows, src: &SeriesRows, types: &[FieldType]) {
    let filled = dst.ts.len();
    for (i, (d, c)) in dst.cols.iter_mut().zip(&src.cols).enumerate() {
        match (d, c) {
            (Some(d), Some(c)) => d.extend(c),
            (Some(d), None) => d.push_nulls(src.ts.len()),
            (d @ None, Some(c)) => {
                let mut col = Column::nulls(types[i], filled);
                col.extend(c);
                *d = Some(col);
            }
            (None, None) => {}
        }
    }
    dst.ts.extend_from_slice(&src.ts);
    debug_assert!(dst.cols.iter().flatten().all(|c| c.len() == dst.ts.len()));
}

/// [`merge`] of `older` and `newer` into `older`, in place when every row of `newer` comes after
/// `older`'s (a compaction's time windows arrive in that order): the rows so far are not copied again.
pub fn merge_into(older: &mut SeriesRows, newer: SeriesRows, types: &[FieldType]) {
    if newer.is_empty() {
        return;
    }
    if older.is_empty() {
        *older = newer;
    } else if older.ts.last() < newer.ts.first() {
        append(older, &newer, types);
    } else {
        let series = older.series;
        let o = std::mem::replace(older, SeriesRows { series, ts: Vec::new(), cols: Vec::new() });
        *older = merge(vec![o, newer], types).expect("two non-empty sources");
    }
}

fn merge_overlapping(sources: &[SeriesRows], types: &[FieldType]) -> SeriesRows {
    // (ts, source, row): a stable sort keeps sources in age order within one timestamp.
    let mut order: Vec<(i64, u32, u32)> = Vec::with_capacity(sources.iter().map(SeriesRows::len).sum());
    for (si, s) in sources.iter().enumerate() {
        order.extend(s.ts.iter().enumerate().map(|(ri, t)| (*t, si as u32, ri as u32)));
    }
    order.sort_by_key(|(t, si, _)| (*t, *si));
    let mut ts: Vec<i64> = Vec::with_capacity(order.len());
    let mut cols: Vec<Option<Column>> = types
        .iter()
        .enumerate()
        .map(|(i, ty)| sources.iter().any(|s| s.cols[i].is_some()).then(|| Column::new(*ty)))
        .collect();
    let mut start = 0;
    while start < order.len() {
        let t = order[start].0;
        let end = start + order[start..].iter().take_while(|o| o.0 == t).count();
        ts.push(t);
        for (ci, dst) in cols.iter_mut().enumerate() {
            let Some(dst) = dst else { continue };
            // The newest source with a value for this column at this timestamp wins.
            let winner = order[start..end].iter().rev().find_map(|(_, si, ri)| {
                let c = sources[*si as usize].cols[ci].as_ref()?;
                c.validity[*ri as usize].then_some((c, *ri as usize))
            });
            match winner {
                Some((c, ri)) => dst.push_from(c, ri),
                None => dst.push_null(),
            }
        }
        start = end;
    }
    SeriesRows { series: sources[0].series, ts, cols }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ColumnValues, Value};

    fn rows(ts: &[i64], v: &[Option<i64>]) -> SeriesRows {
        let mut c = Column::new(FieldType::Integer);
        for x in v {
            match x {
                Some(x) => assert!(c.push_value(&Value::Integer(*x))),
                None => c.push_null(),
            }
        }
        SeriesRows { series: 7, ts: ts.to_vec(), cols: vec![Some(c)] }
    }

    #[test]
    fn disjoint_sources_concatenate_and_missing_columns_become_nulls() {
        let a = rows(&[1, 2], &[Some(1), Some(2)]);
        let b = SeriesRows { series: 7, ts: vec![3], cols: vec![None] };
        let m = merge(vec![a, b], &[FieldType::Integer]).unwrap();
        m.check().unwrap();
        assert_eq!(m.ts, vec![1, 2, 3]);
        let c = m.cols[0].as_ref().unwrap();
        assert_eq!(c.validity, vec![true, true, false]);
    }

    /// `merge_into` gives `merge`'s rows: appended in place when the newer rows come later (a column
    /// only one side has padded with nulls), merged last-write-wins when they overlap.
    #[test]
    fn merge_into_appends_later_rows_in_place_and_merges_overlaps() {
        let types = [FieldType::Integer, FieldType::Integer];
        let two = |ts: &[i64], a: Option<SeriesRows>, b: Option<SeriesRows>| SeriesRows {
            series: 7,
            ts: ts.to_vec(),
            cols: vec![a.and_then(|r| r.cols[0].clone()), b.and_then(|r| r.cols[0].clone())],
        };
        let cases = [
            (two(&[1, 2], Some(rows(&[1, 2], &[Some(1), None])), None), two(&[3], None, Some(rows(&[3], &[Some(30)])))),
            (two(&[1, 5], Some(rows(&[1, 5], &[Some(1), Some(5)])), None), two(&[2, 5], Some(rows(&[2, 5], &[Some(2), Some(50)])), None)),
            (two(&[], None, None), two(&[4], Some(rows(&[4], &[Some(4)])), None)),
            (two(&[4], Some(rows(&[4], &[Some(4)])), None), two(&[], None, None)),
        ];
        for (older, newer) in cases {
            let want = merge(vec![older.clone(), newer.clone()], &types);
            let mut got = older.clone();
            merge_into(&mut got, newer, &types);
            got.check().unwrap();
            assert_eq!(Some(got), want.or(Some(older)));
        }
    }

    #[test]
    fn time_ranges_are_removed_and_split_off() {
        let mut r = rows(&[1, 2, 3, 4, 5], &[Some(1), None, Some(3), Some(4), Some(5)]);
        assert_eq!(r.remove_time_range(2, 3), 2);
        r.check().unwrap();
        assert_eq!(r.ts, vec![1, 4, 5]);
        assert_eq!(r.cols[0].as_ref().unwrap().values, ColumnValues::Integer(vec![1, 4, 5]));
        assert_eq!(r.remove_time_range(6, 9), 0);
        let head = r.split_through(4);
        assert_eq!((head.ts.clone(), r.ts.clone()), (vec![1, 4], vec![5]));
        head.check().unwrap();
        // Nothing, then everything: the first is empty, the second moves the rows out.
        let none = r.split_through(4);
        assert!(none.is_empty() && none.cols.len() == 1 && r.len() == 1);
        let mut all = r.clone();
        let whole = all.split_through(i64::MAX);
        assert_eq!((whole, all.is_empty(), all.cols.len()), (r.clone(), true, 1));
        assert_eq!(r.remove_time_range(i64::MIN, i64::MAX), 1);
        assert!(r.is_empty());
        r.check().unwrap();
    }

    #[test]
    fn overlapping_sources_resolve_last_write_wins_per_column() {
        let old = rows(&[1, 2, 3], &[Some(10), Some(20), Some(30)]);
        let new = rows(&[2, 4], &[None, Some(40)]);
        let newest = rows(&[3], &[Some(33)]);
        let m = merge(vec![old, new, newest], &[FieldType::Integer]).unwrap();
        m.check().unwrap();
        assert_eq!(m.ts, vec![1, 2, 3, 4]);
        let c = m.cols[0].as_ref().unwrap();
        assert_eq!(c.values, ColumnValues::Integer(vec![10, 20, 33, 40]));
        assert_eq!(c.validity, vec![true; 4]);
    }
}
