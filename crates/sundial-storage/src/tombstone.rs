//! Tombstones: durable records of deletes, honoured by reads at once and applied by compaction.
//!
//! A delete ([`crate::Engine::delete`]) must hide rows written *before* it and leave visible the rows
//! written *after* it, even at the same timestamps. Rows live in four kinds of places, each ordered
//! against the delete by its own clock:
//!
//! | where the row is                         | the tombstone hides it when                     |
//! |------------------------------------------|-------------------------------------------------|
//! | a segment holding generations `..=g`     | `g <= generation` (the segment's newest one)    |
//! | a frozen memtable of generation `g`      | `g <= generation`                               |
//! | the active memtable                      | always: the delete removes its rows in place    |
//! | a WAL record numbered `s` (at replay)    | `s < wal_seq`                                   |
//!
//! `generation` is the newest flush generation allocated when the delete ran (every segment and frozen
//! memtable then existing has one at most as large; the active memtable gets a larger one when frozen),
//! and `wal_seq` is the first WAL sequence number not yet used (every row of the active memtable came
//! from a record numbered below it). Both are read under the engine's write lock, so no write
//! interleaves. After a restart the next generation starts above every tombstone's `generation`, so
//! later flushes are never hidden.
//!
//! A compaction output holds generations `gen_min..=gen_max` mixed together. The merge applies to each
//! input the tombstones that hide that input's rows and records in the footer the largest tombstone id
//! it considered (`tombstones_applied`). Reads skip tombstones with ids up to that. A newer tombstone
//! with `generation >= gen_max` hides rows of the whole output, as it would have hidden each input's;
//! one with `generation < gen_max` cannot exist, since the output's newest input already existed when
//! it would have been created (its generation would be at least `gen_max`).
//!
//! Tombstones are catalog entries (`catalog.log`, appended and fsynced before the delete returns), kept
//! in memory per table. A tombstone applies whole: its time range is inclusive at both ends and `series`
//! is either every series of the table or a sorted list.

use crate::catalog::{DbId, SeriesId, TableId};
use crate::rows::SeriesRows;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tombstone {
    /// Unique and increasing in creation order (1, 2, …).
    pub id: u64,
    pub db: DbId,
    pub table: TableId,
    /// `None`: every series of the table. Otherwise sorted, without duplicates.
    pub series: Option<Vec<SeriesId>>,
    pub ts_min: i64,
    pub ts_max: i64,
    /// Hides rows of sources whose newest generation is at most this.
    pub generation: u64,
    /// Hides rows of WAL records numbered below this (at replay).
    pub wal_seq: u64,
}

impl Tombstone {
    pub fn matches_series(&self, series: SeriesId) -> bool {
        self.series.as_ref().is_none_or(|s| s.binary_search(&series).is_ok())
    }

    pub fn overlaps(&self, ts_min: i64, ts_max: i64) -> bool {
        self.ts_min <= ts_max && ts_min <= self.ts_max
    }

    /// True when the rows of a source whose newest generation is `gen_max` were written before the delete.
    pub fn hides_generation(&self, gen_max: u64) -> bool {
        gen_max <= self.generation
    }

    /// True when `(series, ts)` of a row written before the delete is hidden.
    pub fn hides_row(&self, series: SeriesId, ts: i64) -> bool {
        self.ts_min <= ts && ts <= self.ts_max && self.matches_series(series)
    }
}

/// Removes from `rows` every row hidden by one of `tombstones` (the caller has already chosen the ones
/// that apply to the source the rows came from). Returns the number of rows removed.
pub fn apply<'a>(rows: &mut SeriesRows, tombstones: impl IntoIterator<Item = &'a Tombstone>) -> usize {
    let mut removed = 0;
    for t in tombstones {
        if rows.is_empty() {
            break;
        }
        if t.matches_series(rows.series) {
            removed += rows.remove_time_range(t.ts_min, t.ts_max);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tombstones_match_series_time_and_generation() {
        let t = Tombstone { id: 1, db: 0, table: 0, series: Some(vec![2, 5]), ts_min: 10, ts_max: 20, generation: 7, wal_seq: 3 };
        assert!(t.hides_row(5, 10) && t.hides_row(2, 20));
        assert!(!t.hides_row(5, 21) && !t.hides_row(3, 15));
        assert!(t.hides_generation(7) && !t.hides_generation(8));
        let all = Tombstone { series: None, ..t.clone() };
        assert!(all.hides_row(3, 15));
        let mut rows = SeriesRows { series: 5, ts: vec![5, 10, 15, 25], cols: vec![None] };
        assert_eq!(apply(&mut rows, [&t]), 2);
        assert_eq!(rows.ts, vec![5, 25]);
    }
}
