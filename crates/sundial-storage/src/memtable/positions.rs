//! Where each series' buffer is in a [`super::SeriesMap`]'s vector: a vector indexed by series id while
//! the ids written are dense, a hash map once they are not.
//!
//! Why: a table's series get ascending ids as they are created, and a memtable mostly holds a range of
//! them (all of a table's series when they report in turn; a million new ones, one after another, while
//! TSBS's 10 M hosts load). A hash map probed each new series at a random place of a table of a million
//! entries, a cache miss per series, plus one more to insert it; ascending ids in a vector are
//! neighbours in memory. Loading TSBS's 10 M hosts (scenario 5's file), the write path's CPU fell from
//! 41.5–42.5 s to 38.0–38.8 s, the server's from 51.5–52.7 s to 48.1–48.9 s (four alternating pairs,
//! `bench/results/2026-11-29-xeon-densepos/`).

use crate::FastMap as HashMap;
use crate::catalog::SeriesId;

/// A slot of the dense vector that no series holds.
const NONE: u32 = u32::MAX;

/// Ids spanned (from the lowest to the highest held) per series held, at most, for the dense vector:
/// four bytes a slot, so at most 16 bytes per series, about what the map costs with its slack and what
/// [`super::SERIES_OVERHEAD_BYTES`] counts for it (ids in a row, the usual case, cost 4 to 8; room made
/// below the lowest id for ids coming in descending order can double the worst case). Past it (a
/// memtable of scattered series of a large table) the positions move to the map, for good.
const DENSE_SPAN_PER_SERIES_MAX: usize = 4;

/// A span the dense vector may reach whatever the count: a few series of ids close together.
const DENSE_SPAN_MIN: usize = 1024;

#[derive(Debug)]
pub(super) enum Positions {
    /// `pos[id − base]` is the position of series `id`, or [`NONE`]; the last slot is held, and `len`
    /// counts the held slots. `base` may be below the lowest id held (room made below it).
    Dense { base: SeriesId, pos: Vec<u32>, len: usize },
    Sparse(HashMap<SeriesId, u32>),
}

impl Default for Positions {
    fn default() -> Self {
        Positions::Dense { base: 0, pos: Vec::new(), len: 0 }
    }
}

impl Positions {
    /// Room for `n` series (a dense vector of `n` slots, the usual case of ids in a row).
    pub(super) fn with_capacity(n: usize) -> Positions {
        Positions::Dense { base: 0, pos: Vec::with_capacity(n), len: 0 }
    }

    pub(super) fn get(&self, series: SeriesId) -> Option<u32> {
        match self {
            Positions::Dense { base, pos, .. } => {
                let i = series.checked_sub(*base)? as usize;
                pos.get(i).copied().filter(|p| *p != NONE)
            }
            Positions::Sparse(m) => m.get(&series).copied(),
        }
    }

    /// Records `series` at position `at`; it must not be held yet.
    pub(super) fn insert(&mut self, series: SeriesId, at: u32) {
        debug_assert!(self.get(series).is_none(), "series {series} inserted twice");
        debug_assert_ne!(at, NONE, "a position past u32::MAX − 1");
        if let Positions::Dense { base, pos, len } = self {
            let fits = |lo: SeriesId, hi: SeriesId, n: usize| {
                ((hi - lo) as usize) < (n * DENSE_SPAN_PER_SERIES_MAX).max(DENSE_SPAN_MIN)
            };
            if *len == 0 {
                *base = series;
                pos.clear();
            }
            let hi = if pos.is_empty() { series } else { (*base + pos.len() as u32 - 1).max(series) };
            let lo = (*base).min(series);
            if fits(lo, hi, *len + 1) {
                if series < *base {
                    // Room below as well, as much as is held, so that ids coming in descending order
                    // cost a copy of the vector per doubling, not one per id.
                    let new_base = series.saturating_sub(pos.len() as u32);
                    let mut moved = Vec::with_capacity(pos.len() + (*base - new_base) as usize);
                    moved.resize((*base - new_base) as usize, NONE);
                    moved.extend_from_slice(pos);
                    *pos = moved;
                    *base = new_base;
                }
                let i = (series - *base) as usize;
                if i >= pos.len() {
                    pos.resize(i + 1, NONE);
                }
                pos[i] = at;
                *len += 1;
                return;
            }
            let map = HashMap::from_iter(
                pos.iter().enumerate().filter(|(_, p)| **p != NONE).map(|(i, p)| (*base + i as u32, *p)),
            );
            *self = Positions::Sparse(map);
        }
        match self {
            Positions::Sparse(m) => {
                m.insert(series, at);
            }
            Positions::Dense { .. } => unreachable!("made sparse above"),
        }
    }

    /// Series the positions have room for without growing.
    #[cfg(test)]
    pub(super) fn capacity(&self) -> usize {
        match self {
            Positions::Dense { pos, .. } => pos.capacity(),
            Positions::Sparse(m) => m.capacity(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every order of ids a memtable sees (ascending, descending, a range then a far one, scattered)
    /// gives back the positions given, answers `None` for the others, and stays dense only while the
    /// span is within its bound.
    #[test]
    fn positions_are_what_was_inserted_in_any_order() {
        let far = 10_000_000;
        let orders: Vec<(&str, Vec<SeriesId>)> = vec![
            ("ascending", (100..3_000).collect()),
            ("descending", (0..3_000).rev().collect()),
            ("a range then a far id", (0..2_000).chain([far]).chain(2_000..2_100).collect()),
            ("scattered", (0..500).map(|i| i * 7_919 % 1_000_003).collect()),
            ("down then up", [500, 400, 300].into_iter().chain(501..1_500).chain([0]).collect()),
        ];
        for (what, ids) in orders {
            let mut p = Positions::default();
            for (at, s) in ids.iter().enumerate() {
                p.insert(*s, at as u32);
                assert_eq!(p.get(*s), Some(at as u32), "{what}: {s} just inserted");
            }
            for (at, s) in ids.iter().enumerate() {
                assert_eq!(p.get(*s), Some(at as u32), "{what}: {s}");
            }
            let held: std::collections::HashSet<_> = ids.iter().copied().collect();
            let (lo, hi) = (*ids.iter().min().unwrap(), *ids.iter().max().unwrap());
            for s in [0, lo.saturating_sub(1), lo + 1, hi - 1, hi + 1, hi + 5_000, far - 1, far + 1, u32::MAX] {
                if !held.contains(&s) {
                    assert_eq!(p.get(s), None, "{what}: {s} never inserted");
                }
            }
            let dense = ((hi - lo) as usize) < (ids.len() * DENSE_SPAN_PER_SERIES_MAX).max(DENSE_SPAN_MIN);
            assert_eq!(matches!(p, Positions::Dense { .. }), dense, "{what}");
        }
    }
}
