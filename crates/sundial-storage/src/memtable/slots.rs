//! A series' row slots ([`super::RowBuf`]) in chunks that never move once they are full.
//!
//! Rows of `w` slots each (`w` is the buffer's width, passed in by the buffer: it is the same for every
//! row, and a new column lays all rows out again). With `per = rows_per_chunk(w)`, row `i` is row
//! `i % per` of chunk `i / per`; a row never straddles two chunks, so it is one slice. The first chunk
//! grows by doubling up to `per` rows, as a vector would, so that a series of a few rows costs one small
//! allocation and no more; each later chunk is allocated at `per` rows and never grows.
//!
//! Why by hand rather than one vector: a vector grown by doubling copies every row once more on
//! average, into pages never touched before, and holds twice the rows' bytes while it copies (see
//! [`MEMTABLE_CHUNK_SLOTS`]).
//!
//! Why the chunk being written is the one kept inline (`cur`), the full ones behind a pointer: a row is
//! appended, and its growth counted ([`Slots::push_row`]), from the buffer's own words, without first
//! loading a list of chunks that is elsewhere in memory: a cache miss per row when series are many and
//! each gets a row per round (TSBS's 4,000 hosts: the memtable's append, all it calls included, went
//! from 22.7 % of the server's samples to 19.6–20.6 %, `bench/results/2026-11-29-xeon-prefetch/NOTES.md`).

use crate::limits::MEMTABLE_CHUNK_SLOTS;

use super::ALLOC_BYTES;

/// Rows of `w` slots held by one chunk.
pub(super) fn rows_per_chunk(w: usize) -> usize {
    (MEMTABLE_CHUNK_SLOTS / w.max(1)).max(1)
}

#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Slots {
    /// The chunk rows are appended to: the first, growing, while there are fewer than `per` rows;
    /// then the one after the full ones.
    cur: Vec<u64>,
    /// The full chunks before `cur`, each of capacity `per * w`, in row order; `None` (a pointer, not a
    /// vector's three words, in every series' buffer) until the first chunk is full.
    #[allow(clippy::box_collection)] // boxed for that: one word in a million series' buffers
    full: Option<Box<Vec<Vec<u64>>>>,
}

impl Slots {
    /// Room for `rows` rows of `w` slots, up to a chunk's worth.
    pub(super) fn with_rows(rows: usize, w: usize) -> Slots {
        Slots { cur: Vec::with_capacity(rows.min(rows_per_chunk(w)) * w), full: None }
    }

    /// Bytes allocated, as [`super::RowBuf::heap_bytes`] counts them (capacity plus a header per
    /// allocation), for rows of `w` slots.
    pub(super) fn heap_bytes(&self, w: usize) -> usize {
        let bytes = |slots: usize| if slots == 0 { 0 } else { slots * 8 + ALLOC_BYTES };
        let full = self.full.as_deref().map_or(0, |m| {
            // Every full chunk holds exactly `per * w` slots (the first grows to exactly that, capped;
            // each later one is made at it, `Vec::with_capacity` allocating exactly the capacity asked
            // for) and never grows: counted without visiting them. The newest is checked here, at every
            // count, as each earlier one was while it was the newest.
            debug_assert!(m.last().is_none_or(|c| c.capacity() == rows_per_chunk(w) * w));
            std::mem::size_of::<Vec<Vec<u64>>>() + ALLOC_BYTES + m.capacity() * std::mem::size_of::<Vec<u64>>() + m.len() * bytes(rows_per_chunk(w) * w)
        });
        bytes(self.cur.capacity()) + full
    }

    /// The chunk row `rows` (the next one, after `rows` rows) goes into, with room for its `w` slots,
    /// made or grown as needed: push the row's slots onto it, in column order.
    pub(super) fn room(&mut self, rows: usize, w: usize) -> &mut Vec<u64> {
        if !self.has_room(w) {
            self.make_room(rows, w);
        }
        debug_assert_eq!(self.cur.len(), rows % rows_per_chunk(w) * w);
        &mut self.cur
    }

    /// Appends row `rows` (the next one): its `w` slots `vals`, in column order. Returns the growth of
    /// [`Slots::heap_bytes`], found without reading the full chunks' list unless a chunk is made.
    pub(super) fn push_row(&mut self, rows: usize, w: usize, vals: impl Iterator<Item = u64>) -> usize {
        let before = (!self.has_room(w)).then(|| self.heap_bytes(w));
        self.room(rows, w).extend(vals);
        debug_assert_eq!(self.cur.len(), (rows % rows_per_chunk(w) + 1) * w, "a row is {w} slots");
        before.map_or(0, |b| self.heap_bytes(w) - b)
    }

    /// Whether `cur` has room for a row of `w` slots without growing.
    fn has_room(&self, w: usize) -> bool {
        self.cur.capacity() - self.cur.len() >= w
    }

    /// Makes room in `cur` for row `rows`' `w` slots, which it lacks: the first chunk grown, or the
    /// full chunk moved to `full` and a new one made.
    #[cold]
    fn make_room(&mut self, rows: usize, w: usize) {
        let per = rows_per_chunk(w);
        if rows < per {
            debug_assert_eq!(self.cur.len(), rows * w);
            let h = &mut self.cur;
            // A vector's growth (twice, at least what is needed, at least 4 slots: `Vec::reserve`),
            // so that narrow series allocate as they did before chunks; capped at a chunk.
            let want = (h.capacity() * 2).max(h.len() + w).max(4).min(per * w);
            h.reserve_exact(want - h.len());
            return;
        }
        // A chunk lacks room only when it holds `per` rows.
        debug_assert!(rows.is_multiple_of(per) && self.cur.len() == per * w);
        let done = std::mem::replace(&mut self.cur, Vec::with_capacity(per * w));
        let full = self.full.get_or_insert_with(Box::default);
        debug_assert_eq!(full.len(), rows / per - 1);
        full.push(done);
    }

    /// The chunk holding chunk index `c`'s rows.
    fn chunk(&self, c: usize) -> &Vec<u64> {
        match self.full.as_deref() {
            Some(full) if c < full.len() => &full[c],
            _ => &self.cur,
        }
    }

    /// Row `i`'s slots (none when `w` is 0: rows of no columns have none, in no chunk).
    pub(super) fn row(&self, i: usize, w: usize) -> &[u64] {
        if w == 0 {
            return &[];
        }
        let per = rows_per_chunk(w);
        let (c, r) = (i / per, i % per);
        &self.chunk(c)[r * w..(r + 1) * w]
    }

    /// Row `i`'s slots, to set.
    pub(super) fn row_mut(&mut self, i: usize, w: usize) -> &mut [u64] {
        let per = rows_per_chunk(w);
        let (c, r) = (i / per, i % per);
        let chunk = match self.full.as_deref_mut() {
            Some(full) if c < full.len() => &mut full[c],
            _ => &mut self.cur,
        };
        &mut chunk[r * w..(r + 1) * w]
    }

    /// Rows `range`, in order, in runs: one slice per chunk the range touches, holding its rows of `w`
    /// slots each (`w > 0`; a run may be empty). A caller copying a column out takes each run's rows with
    /// `chunks_exact(w)`, whose exact length lets the copy go without a capacity check per row: through
    /// an iterator of single rows over all the chunks (a `flat_map`), the flush's gather of columns was 4 %
    /// of the server's CPU loading TSBS's 100 hosts.
    pub(super) fn runs(&self, range: std::ops::Range<usize>, w: usize) -> impl Iterator<Item = &[u64]> {
        assert!(w > 0, "rows of no slots are not iterated");
        let per = rows_per_chunk(w);
        let chunks = self.full.iter().flat_map(|m| m.iter()).chain(std::iter::once(&self.cur));
        chunks.enumerate().skip(range.start / per).take_while(move |(c, _)| c * per < range.end).map(move |(c, chunk)| {
            let lo = range.start.saturating_sub(c * per);
            let hi = (range.end - c * per).min(per);
            &chunk[lo * w..hi * w]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows pushed past several chunks read back the same one by one, by range (starting and ending
    /// inside chunks and on their edges) and set in place; only the first chunk ever grows, and the count of
    /// bytes is the allocations' sizes.
    #[test]
    fn rows_across_chunks_read_back_as_pushed() {
        for w in [1, 3, 10, MEMTABLE_CHUNK_SLOTS + 1] {
            let per = rows_per_chunk(w);
            let n = 3 * per + per / 2 + 1;
            let mut s = Slots::default();
            let value = |i: usize, k: usize| (i * 1000 + k) as u64;
            for i in 0..n {
                let c = s.room(i, w);
                let cap = c.capacity();
                for k in 0..w {
                    c.push(value(i, k));
                }
                assert_eq!(c.capacity(), cap, "room made before the row's slots");
            }
            for i in 0..n {
                assert_eq!(s.row(i, w), (0..w).map(|k| value(i, k)).collect::<Vec<_>>());
            }
            for range in [0..n, 0..0, 1..per, per - 1..per + 1, per..2 * per, per + 1..n - 1, n..n] {
                let got: Vec<u64> = s.runs(range.clone(), w).flatten().copied().collect();
                assert!(s.runs(range.clone(), w).all(|r| r.len() % w == 0), "runs of whole rows");
                let want: Vec<u64> = range.flat_map(|i| (0..w).map(move |k| value(i, k))).collect();
                assert_eq!(got, want, "w {w}");
            }
            s.row_mut(per, w)[w - 1] = 7;
            assert_eq!(s.row(per, w)[w - 1], 7);
            let chunks = 1 + s.full.as_ref().map_or(0, |m| m.len());
            assert_eq!(chunks, n.div_ceil(per));
            let full = s.full.as_ref().expect("several chunks");
            let want = per * w * 8 + ALLOC_BYTES + full.len() * (per * w * 8 + ALLOC_BYTES) + 24 + ALLOC_BYTES + full.capacity() * 24;
            assert_eq!(s.heap_bytes(w), want);
        }
    }

    /// [`Slots::push_row`] puts each row where [`Slots::row`] finds it, and returns the growth of
    /// [`Slots::heap_bytes`]: none unless the first chunk grew or a chunk was made.
    #[test]
    fn push_row_counts_its_growth() {
        for w in [1, 3, 10] {
            let per = rows_per_chunk(w);
            let mut s = Slots::default();
            for i in 0..2 * per + 3 {
                let (cap_before, bytes_before) = (s.cur.capacity(), s.heap_bytes(w));
                let grown = s.push_row(i, w, (0..w).map(|k| (i * w + k) as u64));
                assert_eq!(grown, s.heap_bytes(w) - bytes_before, "w {w}, row {i}");
                let made = if i < per { s.cur.capacity() != cap_before } else { i % per == 0 };
                assert_eq!(grown > 0, made, "w {w}, row {i}");
            }
            for i in 0..2 * per + 3 {
                assert_eq!(s.row(i, w), (0..w).map(|k| (i * w + k) as u64).collect::<Vec<_>>(), "w {w}, row {i}");
            }
        }
    }

    /// A series of a few rows is one allocation grown as a vector grows (a row's room, then twice it;
    /// never fewer than 4 slots).
    #[test]
    fn a_few_rows_are_one_allocation_growing_by_doubling() {
        let mut narrow = Slots::default();
        for (i, cap) in [4, 4, 8, 8, 16].into_iter().enumerate() {
            narrow.room(i, 2).extend([0; 2]);
            assert_eq!(narrow.cur.capacity(), cap, "row {i}");
        }
        let mut s = Slots::default();
        assert_eq!(s.heap_bytes(10), 0);
        s.room(0, 10).extend([0; 10]);
        assert_eq!(s.cur.capacity(), 10);
        s.room(1, 10).extend([0; 10]);
        s.room(2, 10).extend([0; 10]);
        assert_eq!(s.cur.capacity(), 40);
        assert!(s.full.is_none());
        assert_eq!(s.heap_bytes(10), 40 * 8 + ALLOC_BYTES);
    }
}
