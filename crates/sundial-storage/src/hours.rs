//! Hour statistics (segment version 6): inside a block, the row count of each clock hour it touches,
//! and per Integer or Float column the count, sum, minimum and maximum of its values in each hour.
//!
//! Why: a block holds a series' rows for up to a day (a partition), and its footer statistics
//! (`ColStats`) cover the whole block, so they answer `count/sum/mean/min/max` only over ranges that
//! hold whole blocks. The commonest dashboard and TSBS rollups are by hour (`GROUP BY time(1h)` over
//! 12 hours of 4,000 hosts: TSBS's double-groupby), and without these every value of every block was
//! decoded to fold twelve hourly means. With them such a rollup reads a few bytes per series and hour
//! instead of 360 values. TDengine keeps a small aggregate per block of a few thousand rows for the
//! same reason; fixing the unit to the clock hour makes them line up with the buckets instead.
//!
//! The chunk is written after the block's column chunks; the block's footer entry references it. Its
//! layout (all integers as in [`crate::encoding`]):
//!
//! ```text
//! hours   := n_hours:uvarint  rows:uvarint*n_hours  section*
//! section := col:uvarint  type:u8  len:uvarint  body (len bytes)
//! body    := dense:u8  [dense = 0: count:uvarint*n_hours]  stat*   (one per hour whose count > 0)
//! stat    := Integer  min:ivarint  (max − min):uvarint  sum:ivarint    (sum wrapping, never overflowed)
//!            Float    min:u64  max:u64  sum:u64                        (f64 bits; min/max in IEEE total order)
//! ```
//!
//! Hour `k` is `[(h0 + k)·H, (h0 + k + 1)·H)` with `H` = [`HOUR_NS`] and `h0 = ⌊ts_min / H⌋`;
//! `n_hours = ⌊ts_max / H⌋ − h0 + 1`, and the `rows` add up to the block's row count. `dense = 1` means
//! every row of the block has the column set (each hour's count is its row count). Sections come in the
//! block's column order, one per Integer or Float column whose statistics are exact: a column holding a
//! NaN, or an integer column whose sum in some hour overflows `i64`, has none (a reader then decodes).
//! Other column types have none. A block lying within one hour has no chunk (its footer statistics are
//! its hour's).

use crate::catalog::{ColId, SeriesId};
use crate::segment::BlockMeta;
use crate::encoding::{Reader, put_ivarint, put_u8, put_u64, put_uvarint};
use crate::types::{Column, ColumnValues, FieldType};

/// The unit of hour statistics: one hour in nanoseconds.
pub const HOUR_NS: i64 = 3_600_000_000_000;

/// The hour holding `ts` (hours since the epoch; negative before it).
pub fn hour_of(ts: i64) -> i64 {
    ts.div_euclid(HOUR_NS)
}

/// The hours `[ts_min, ts_max]` touches, as hour numbers.
pub fn touched(ts_min: i64, ts_max: i64) -> std::ops::Range<i64> {
    hour_of(ts_min)..hour_of(ts_max) + 1
}

/// The hours lying wholly inside `[ts_min, ts_max]`, as hour numbers (empty when there is none).
pub fn whole(ts_min: i64, ts_max: i64) -> std::ops::Range<i64> {
    let first = hour_of(ts_min) + i64::from(ts_min.rem_euclid(HOUR_NS) != 0);
    let end = hour_of(ts_max) + i64::from(ts_max.rem_euclid(HOUR_NS) == HOUR_NS - 1);
    first..end.max(first)
}

/// Whether a block from `ts_min` to `ts_max` gets an hour-statistics chunk: it touches two hours or more.
pub(crate) fn wanted(ts_min: i64, ts_max: i64) -> bool {
    hour_of(ts_min) != hour_of(ts_max)
}

/// Hours of a block whose row and value counts [`decode`] keeps on the stack: a day and a half, more
/// than a partition's block touches (more go to the heap).
const HOURS_ON_STACK: usize = 36;

/// Per-hour statistics of one column, decoded for a run of hours.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HourCol {
    /// False when the block has values of the column but no exact hour statistics for it (see the
    /// module doc): the block must be decoded.
    pub exact: bool,
    /// Per hour: values set, and (raw as [`crate::segment::ColStats`]: f64 bits or i64) min, max and sum;
    /// 0 where `count` is 0.
    pub count: Vec<u32>,
    pub min: Vec<u64>,
    pub max: Vec<u64>,
    pub sum: Vec<u64>,
}

/// One block's hour statistics for a run of whole hours and the requested columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HourStats {
    pub series: SeriesId,
    /// The start of the first hour (ns since the epoch); hour `k` starts `k · HOUR_NS` later.
    pub first_hour: i64,
    /// The block's rows in each hour.
    pub rows: Vec<u32>,
    /// Per requested column, in the order asked. A column the block has no value of is `exact` with
    /// every count 0.
    pub cols: Vec<HourCol>,
}

/// Encodes the hour statistics of `ts` (a block's timestamps) and its columns `cols` (each `ts.len()`
/// rows; those of other types are left out) into `out`.
pub(crate) fn encode(ts: &[i64], cols: &[(ColId, Column)], out: &mut Vec<u8>) {
    let hours = touched(ts[0], ts[ts.len() - 1]);
    let (h0, n) = (hours.start, (hours.end - hours.start) as usize);
    // Row ranges of each hour.
    let mut bounds = Vec::with_capacity(n + 1);
    bounds.push(0);
    for k in 1..=n as i64 {
        let limit = (h0 + k).saturating_mul(HOUR_NS);
        let from = *bounds.last().expect("pushed");
        bounds.push(from + ts[from..].partition_point(|t| *t < limit));
    }
    put_uvarint(out, n as u64);
    for w in bounds.windows(2) {
        put_uvarint(out, (w[1] - w[0]) as u64);
    }
    let mut body = Vec::new();
    for (col, c) in cols {
        body.clear();
        let ty = c.field_type();
        let written = match &c.values {
            ColumnValues::Integer(v) => encode_section(&bounds, &c.validity, v, &mut body, |vals, body| {
                let (min, max, sum) = crate::segment::int_min_max_sum(vals.iter().copied());
                let sum = sum?;
                put_ivarint(body, min);
                put_uvarint(body, max.wrapping_sub(min) as u64);
                put_ivarint(body, sum);
                Some(())
            }),
            ColumnValues::Float(v) => encode_section(&bounds, &c.validity, v, &mut body, |vals, body| {
                let (mut min, mut max, mut sum) = (vals[0], vals[0], 0.0);
                for &x in vals {
                    if x.is_nan() {
                        return None;
                    }
                    if x.total_cmp(&min).is_lt() {
                        min = x;
                    }
                    if x.total_cmp(&max).is_gt() {
                        max = x;
                    }
                    sum += x;
                }
                for x in [min, max, sum] {
                    put_u64(body, x.to_bits());
                }
                Some(())
            }),
            _ => None,
        };
        if written.is_some() {
            put_uvarint(out, u64::from(*col));
            put_u8(out, ty as u8);
            put_uvarint(out, body.len() as u64);
            out.extend_from_slice(&body);
        }
    }
}

/// One column's section body; `None` (nothing to write) when `stat` finds an hour inexact.
fn encode_section<T: Copy>(
    bounds: &[usize],
    validity: &[bool],
    values: &[T],
    body: &mut Vec<u8>,
    mut stat: impl FnMut(&[T], &mut Vec<u8>) -> Option<()>,
) -> Option<()> {
    let dense = validity.iter().all(|v| *v);
    put_u8(body, u8::from(dense));
    if !dense {
        for w in bounds.windows(2) {
            put_uvarint(body, validity[w[0]..w[1]].iter().filter(|v| **v).count() as u64);
        }
    }
    let mut vals: Vec<T> = Vec::new();
    for w in bounds.windows(2) {
        let hour = if dense {
            &values[w[0]..w[1]]
        } else {
            vals.clear();
            vals.extend((w[0]..w[1]).filter(|r| validity[*r]).map(|r| values[r]));
            &vals
        };
        if !hour.is_empty() {
            stat(hour, body)?;
        }
    }
    Some(())
}

/// Decodes `chunk` (block `b`'s hour statistics) into `out` for the hours `hours` (absolute hour
/// numbers, inside the block's) and the columns `want`. Errors say what disagrees.
pub(crate) fn decode(
    chunk: &[u8],
    b: &BlockMeta,
    want: &[(ColId, FieldType)],
    hours: std::ops::Range<i64>,
    out: &mut HourStats,
) -> Result<(), String> {
    let bad = || "hour statistics do not decode".to_string();
    let touched = touched(b.ts_min, b.ts_max);
    let (h0, n) = (touched.start, (touched.end - touched.start) as usize);
    assert!(h0 <= hours.start && hours.start < hours.end && hours.end <= touched.end, "hours inside the block's");
    let (from, to) = ((hours.start - h0) as usize, (hours.end - h0) as usize);
    let mut r = Reader::new(chunk);
    // Each hour's row count takes a byte at least: a block index claiming more hours than the chunk has
    // bytes is refused before anything is allocated for them.
    if n > chunk.len() || r.uvarint().ok_or_else(bad)? != n as u64 {
        return Err(format!("hour statistics cover the wrong number of hours (the block touches {n})"));
    }
    // Per hour of the block: its rows, then (per section read) the column's values. On the stack for a
    // block of up to a day and a half, as a partition's are, rather than two allocations per block (an
    // hourly rollup of 4,000 hosts decodes 4,000 blocks; not measured on its own).
    let (mut rows_stack, mut counts_stack) = ([0u32; HOURS_ON_STACK], [0u32; HOURS_ON_STACK]);
    let (mut rows_heap, mut counts_heap) = (Vec::new(), Vec::new());
    let (rows, counts): (&mut [u32], &mut [u32]) = if n <= HOURS_ON_STACK {
        (&mut rows_stack[..n], &mut counts_stack[..n])
    } else {
        rows_heap.resize(n, 0);
        counts_heap.resize(n, 0);
        (&mut rows_heap, &mut counts_heap)
    };
    for x in rows.iter_mut() {
        *x = u32::try_from(r.uvarint().ok_or_else(bad)?).map_err(|_| bad())?;
    }
    if rows.iter().map(|x| u64::from(*x)).sum::<u64>() != u64::from(b.n_rows) || rows[0] == 0 || rows[n - 1] == 0 {
        return Err("hour statistics' row counts disagree with the block index".into());
    }
    out.series = b.series;
    out.first_hour = hours.start.saturating_mul(HOUR_NS);
    out.rows.clear();
    out.rows.extend_from_slice(&rows[from..to]);
    out.cols.resize_with(want.len(), HourCol::default);
    // Wanted columns the block stores whose section is still to come.
    let mut unread = 0;
    for (c, (col, _)) in out.cols.iter_mut().zip(want) {
        // A column without values in the block: exact, and empty.
        c.exact = b.col(*col).is_none();
        unread += usize::from(!c.exact);
        c.count.clear();
        c.count.resize(to - from, 0);
        for v in [&mut c.min, &mut c.max, &mut c.sum] {
            v.clear();
            v.resize(to - from, 0);
        }
    }
    // Sections after the last wanted one are left unread, and those before it are only stepped over:
    // the chunk was checksummed when read, and an hourly rollup of one column (TSBS's double-groupby-1)
    // looked up every section's column in the block index, ten per block.
    while unread > 0 && !r.is_empty() {
        let col = ColId::try_from(r.uvarint().ok_or_else(bad)?).map_err(|_| bad())?;
        let ty = FieldType::from_u8(r.u8().ok_or_else(bad)?).ok_or_else(bad)?;
        let len = usize::try_from(r.uvarint().ok_or_else(bad)?).map_err(|_| bad())?;
        let body = r.take(len).ok_or_else(bad)?;
        let Some(k) = want.iter().position(|(id, _)| *id == col) else { continue };
        let Some((stored_ty, count)) = b.col(col).map(|m| (m.ty, m.stats.count)) else {
            return Err(format!("hour statistics of column {col}, which the block does not store"));
        };
        if stored_ty != ty || !matches!(ty, FieldType::Integer | FieldType::Float) {
            return Err(format!("hour statistics of column {col} as {ty:?}, the block stores {stored_ty:?}"));
        }
        if out.cols[k].exact {
            return Err(format!("hour statistics of column {col} given twice"));
        }
        let mut r = Reader::new(body);
        match r.u8().ok_or_else(bad)? {
            1 => counts.copy_from_slice(rows),
            0 => {
                for (count, &rows) in counts.iter_mut().zip(rows.iter()) {
                    let c = u32::try_from(r.uvarint().ok_or_else(bad)?).map_err(|_| bad())?;
                    if c > rows {
                        return Err(format!("hour statistics of column {col} count more values than rows"));
                    }
                    *count = c;
                }
            }
            _ => return Err(bad()),
        }
        if counts.iter().map(|x| u64::from(*x)).sum::<u64>() != u64::from(count) {
            return Err(format!("hour statistics of column {col} disagree with the block index's count"));
        }
        let c = &mut out.cols[k];
        for (h, &n) in counts.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let (min, max, sum) = if ty == FieldType::Integer {
                let min = r.ivarint().ok_or_else(bad)?;
                let max = min.wrapping_add(r.uvarint().ok_or_else(bad)? as i64);
                (min as u64, max as u64, r.ivarint().ok_or_else(bad)? as u64)
            } else {
                (r.u64().ok_or_else(bad)?, r.u64().ok_or_else(bad)?, r.u64().ok_or_else(bad)?)
            };
            if (from..to).contains(&h) {
                let i = h - from;
                (c.count[i], c.min[i], c.max[i], c.sum[i]) = (n, min, max, sum);
            }
        }
        if !r.is_empty() {
            return Err(bad());
        }
        c.exact = true;
        unread -= 1;
    }
    Ok(())
}

impl HourStats {
    /// Rows of hour `k` with at least one of the requested columns set, when the statistics tell: some
    /// column is set in every row of the hour, or none in any. `None` otherwise, or when a column's
    /// statistics are not exact (the block must then be decoded).
    pub fn rows_set(&self, k: usize) -> Option<u32> {
        if self.cols.iter().any(|c| !c.exact) {
            return None;
        }
        if self.cols.iter().any(|c| c.count[k] == self.rows[k]) {
            return Some(self.rows[k]);
        }
        self.cols.iter().all(|c| c.count[k] == 0).then_some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `whole` gives exactly the hours `k` with `[k·H, (k+1)·H − 1]` inside the range, at the extremes of
    /// `i64` too, and `touched` those holding either end or between.
    #[test]
    fn whole_and_touched_hours_are_those_of_the_definition() {
        let h = HOUR_NS;
        let inside = |k: i64, lo: i64, hi: i64| i128::from(k) * i128::from(h) >= i128::from(lo) && (i128::from(k) + 1) * i128::from(h) - 1 <= i128::from(hi);
        for (lo, hi) in [(0, h - 1), (0, h - 2), (1, 2 * h - 1), (-1, h - 1), (-h, -1), (5, 7), (h, 3 * h), (i64::MIN, i64::MAX), (i64::MIN, 0), (0, i64::MAX)] {
            let w = whole(lo, hi);
            assert!(w.start <= w.end, "{lo}..={hi}");
            for k in [w.start - 1, w.start, w.end - 1, w.end] {
                assert_eq!(w.contains(&k), inside(k, lo, hi), "hour {k} of {lo}..={hi}");
            }
            let t = touched(lo, hi);
            assert_eq!((t.start, t.end - 1), (lo.div_euclid(h), hi.div_euclid(h)));
        }
        assert!(whole(0, h - 2).is_empty() && whole(5, 7).is_empty());
        assert_eq!(whole(-1, h - 1), 0..1);
    }
}
