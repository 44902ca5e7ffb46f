//! Decoded pages of paged numeric columns ([`super::Codec::PcoPaged`]), kept for the reads of a few
//! hours of a block that come back to them.
//!
//! Why: a read of the hours whose statistics may meet a threshold (TSBS's high-cpu: `usage_user > 90`,
//! about a fifth of a host's hours; [`crate::engine::HourFilter`]) decodes, for every column, the pco
//! pages holding those hours: from each page's start, as pco has no random access inside a page, so
//! twice the rows wanted, and a page again for every span of hours in it. That decoding was a third of
//! the statement's CPU at 100 hosts × 4 days. Dashboards and TSBS's query files ask overlapping windows
//! again and again; a page decoded once is copied out after. (ClickHouse's uncompressed cache and
//! IoTDB's chunk cache keep decoded data for the same reason.)
//!
//! Only the reads of hours come here ([`super::decode_column_rows_cached`] from
//! `Segment::read_block_spans` under an `HourFilter`): other reads of blocks (scans, compaction) neither
//! pay the copy nor push those pages out. And a read keeps at most a
//! [`DECODED_PAGES_SCAN_DIVISOR`](crate::limits::DECODED_PAGES_SCAN_DIVISOR)th of the cache in new pages
//! ([`scan_budget`]; then it decodes as without the cache, from a page's start to the rows it wants): a
//! read asking for more pages than the cache holds would push out each page before the next statement
//! asks for it again, every page decoded whole and packed for nothing (ClickHouse's
//! `merge_tree_max_bytes_to_use_cache` bounds its uncompressed cache the same way). TSBS's threshold over
//! 4,000 hosts × 12 hours asks for some 46,600 pages a statement, 86 MiB packed: at the default size on
//! a machine of 24 GiB (a 64th of the memory, [`crate::limits::DECODED_PAGES_MEMORY_DIVISOR`]) the first
//! statement keeps them all.
//!
//! A page is kept frame-of-reference packed: each value's [`Word::to_key`] less the page's smallest,
//! in the fewest whole bytes (1, 2, 4 or 8) that hold the largest. TSBS's integer fields (0–100) take
//! one byte a value, 2 KiB a page of 2,048 rather than 16; full-precision floats take eight.
//! Bounded in all by [`set_capacity`] (`EngineConfig::decoded_pages_bytes`: one cache per process, sized
//! by the engine opened last), oldest page out first; a segment's pages are dropped with it
//! ([`forget_segment`]).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use super::numeric::Word;
use crate::fifo::FifoCache;
use crate::limits::{DECODED_PAGES_BYTES_DEFAULT_MIN, DECODED_PAGES_SCAN_DIVISOR};

/// A column chunk, named by its segment's number ([`crate::block_cache::next_segment_no`], never reused
/// in a process) and its offset in the segment's file.
pub type ChunkKey = (u64, u64);

/// Bytes counted for a page besides its values: the map's entry (key, `Arc` and count, 40 bytes, at
/// the map's load), the queue's key (24, at the deque's growth), the `Arc`'s allocation (its counts and
/// the `Page`, 56, in a 64-byte class).
const PAGE_OVERHEAD_BYTES: usize = 160;

/// One decoded page: value `i` is `base + offset_i` (wrapping) in key space, each offset `width` bytes
/// little-endian at `bytes[i·width..]`.
pub(super) struct Page {
    base: u64,
    width: usize,
    bytes: Box<[u8]>,
}

impl Page {
    pub(super) fn pack<T: Word>(vals: &[T]) -> Page {
        let (lo, hi) = vals.iter().fold((u64::MAX, 0u64), |(lo, hi), v| {
            let k = v.to_key();
            (lo.min(k), hi.max(k))
        });
        let span = hi.wrapping_sub(lo);
        let width = match span {
            _ if vals.is_empty() => 1,
            0..=0xff => 1,
            0x100..=0xffff => 2,
            0x1_0000..=0xffff_ffff => 4,
            _ => 8,
        };
        let bytes = match width {
            1 => pack_as::<1, T>(vals, lo),
            2 => pack_as::<2, T>(vals, lo),
            4 => pack_as::<4, T>(vals, lo),
            _ => pack_as::<8, T>(vals, lo),
        };
        Page { base: lo, width, bytes }
    }

    pub(super) fn len(&self) -> usize {
        self.bytes.len() / self.width
    }

    fn bytes_counted(&self) -> usize {
        self.bytes.len() + PAGE_OVERHEAD_BYTES
    }

    /// Appends values `range` (within `0..len`) to `out`.
    pub(super) fn unpack_into<T: Word>(&self, range: std::ops::Range<usize>, out: &mut Vec<T>) {
        assert!(range.start <= range.end && range.end <= self.len(), "values {range:?} of a page of {}", self.len());
        let bytes = &self.bytes[range.start * self.width..range.end * self.width];
        let base = self.base;
        // A loop per width, so that each is a fixed-size load the compiler can vectorise.
        match self.width {
            1 => out.extend(bytes.iter().map(|b| T::from_key(base.wrapping_add(u64::from(*b))))),
            2 => out.extend(bytes.chunks_exact(2).map(|c| T::from_key(base.wrapping_add(u64::from(u16::from_le_bytes([c[0], c[1]])))))),
            4 => out.extend(bytes.chunks_exact(4).map(|c| T::from_key(base.wrapping_add(u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))))),
            _ => out.extend(bytes.chunks_exact(8).map(|c| {
                T::from_key(base.wrapping_add(u64::from_le_bytes(c.try_into().expect("eight bytes"))))
            })),
        }
    }
}

/// `vals`' offsets from `lo`, `W` bytes each, little-endian. A loop per width, as in
/// [`Page::unpack_into`]: with the width a run-time value each offset was a call to `memcpy`, which with
/// the loop was half of a threshold read's keeping of pages (TSBS's high-cpu-all at 4,000 hosts: 14 % of
/// its server CPU, `bench/results/2026-12-01-epyc-pack/NOTES.md`).
fn pack_as<const W: usize, T: Word>(vals: &[T], lo: u64) -> Box<[u8]> {
    let mut bytes = vec![0u8; vals.len() * W].into_boxed_slice();
    for (to, v) in bytes.chunks_exact_mut(W).zip(vals) {
        let le = v.to_key().wrapping_sub(lo).to_le_bytes();
        to.copy_from_slice(&le[..W]);
    }
    bytes
}

/// A snapshot of the cache's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecodedPagesStats {
    pub entries: usize,
    /// Bytes counted for the pages kept (their values and [`PAGE_OVERHEAD_BYTES`] each).
    pub bytes: usize,
    pub capacity: usize,
    pub hits: u64,
    /// Pages decoded for a read of rows because they were not kept.
    pub misses: u64,
}

/// Until an engine sets the size ([`set_capacity`]), the smallest default.
static CAPACITY: AtomicUsize = AtomicUsize::new(DECODED_PAGES_BYTES_DEFAULT_MIN);
static PAGES: LazyLock<Mutex<FifoCache<(u64, u64, u32), Arc<Page>>>> =
    LazyLock::new(|| Mutex::new(FifoCache::new(CAPACITY.load(Ordering::Relaxed))));
static HITS: AtomicU64 = AtomicU64::new(0);
static MISSES: AtomicU64 = AtomicU64::new(0);

/// Page `page` of chunk `chunk`, if kept (counted as a hit or a miss).
pub(super) fn get(chunk: ChunkKey, page: u32) -> Option<Arc<Page>> {
    let got = PAGES.lock().get(&(chunk.0, chunk.1, page)).cloned();
    match got {
        Some(_) => HITS.fetch_add(1, Ordering::Relaxed),
        None => MISSES.fetch_add(1, Ordering::Relaxed),
    };
    got
}

/// Keeps `vals`, page `page` of chunk `chunk` decoded whole; returns the bytes it is counted at.
pub(super) fn put<T: Word>(chunk: ChunkKey, page: u32, vals: &[T]) -> usize {
    let p = Page::pack(vals);
    let bytes = p.bytes_counted();
    PAGES.lock().put((chunk.0, chunk.1, page), Arc::new(p), bytes);
    bytes
}

/// Bounds the pages kept to `bytes` in all, dropping the oldest beyond it (the cache is the process's:
/// [`crate::Engine::open`] sets it from its config).
pub fn set_capacity(bytes: usize) {
    let mut pages = PAGES.lock();
    CAPACITY.store(bytes, Ordering::Relaxed);
    pages.set_max_bytes(bytes);
}

/// New pages one read of hours may keep: a [`DECODED_PAGES_SCAN_DIVISOR`]th of the cache.
pub fn scan_budget() -> usize {
    CAPACITY.load(Ordering::Relaxed) / DECODED_PAGES_SCAN_DIVISOR
}

/// Drops the pages of a segment that is closing (its number is never used again).
pub fn forget_segment(segment: u64) {
    PAGES.lock().forget(|k| k.0 == segment);
}

pub fn stats() -> DecodedPagesStats {
    let (entries, bytes) = PAGES.lock().usage();
    DecodedPagesStats {
        entries,
        bytes,
        capacity: CAPACITY.load(Ordering::Relaxed),
        hits: HITS.load(Ordering::Relaxed),
        misses: MISSES.load(Ordering::Relaxed),
    }
}

/// Whether page `page` of chunk `chunk` is kept, without counting a lookup (tests).
#[cfg(test)]
pub(crate) fn holds(chunk: ChunkKey, page: u32) -> bool {
    PAGES.lock().get(&(chunk.0, chunk.1, page)).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Word + std::fmt::Debug>(vals: &[T], width: usize) {
        let p = Page::pack(vals);
        assert_eq!((p.width, p.len(), p.bytes.len()), (width, vals.len(), vals.len() * width), "{vals:?}");
        for range in [0..vals.len(), 0..0, vals.len() / 3..vals.len(), 1.min(vals.len())..vals.len() / 2] {
            let mut out = vec![T::default()];
            p.unpack_into(range.clone(), &mut out);
            let want: Vec<u64> = vals[range.clone()].iter().map(|v| v.to_bits()).collect();
            let got: Vec<u64> = out[1..].iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "{range:?} of {vals:?}");
        }
    }

    /// Values come back bit for bit (negative integers, NaN payloads, the sign of zero) in the narrowest
    /// width their spread allows, whatever the range asked.
    #[test]
    fn pages_pack_and_unpack_exactly() {
        round_trip::<i64>(&[0, 100, 42, 7], 1);
        round_trip::<i64>(&[-3, 2, -1, 0], 1);
        round_trip::<i64>(&[-200, 100, 0], 2);
        round_trip::<i64>(&[i64::MIN, 0, 70_000], 8);
        round_trip::<i64>(&[1 << 40, (1 << 40) + 70_000], 4);
        round_trip::<i64>(&[i64::MIN, i64::MAX], 8);
        round_trip::<u64>(&[u64::MAX, u64::MAX - 255], 1);
        round_trip::<u64>(&[0, u64::MAX], 8);
        round_trip::<f64>(&[0.0, -0.0, f64::NAN, f64::from_bits(0x7ff8_0000_dead_beef), 1e300], 8);
        round_trip::<f64>(&[1.5, 1.5], 1);
        round_trip::<u32>(&[3, 70_000, u32::MAX], 4);
        round_trip::<i64>(&[], 1);
    }

    /// A kept page is found by its chunk and number, counted as a hit; a segment's pages go with it.
    #[test]
    fn pages_are_found_by_chunk_and_forgotten_with_their_segment() {
        // A segment number no real segment of this test process reaches.
        let (seg, other) = (u64::MAX - 17, u64::MAX - 18);
        put::<i64>((seg, 40), 1, &[5, 6, 7]);
        put::<i64>((other, 40), 1, &[8]);
        assert!(get((seg, 40), 0).is_none());
        let hits = stats().hits;
        let p = get((seg, 40), 1).expect("kept");
        assert!(stats().hits > hits);
        let mut out: Vec<i64> = Vec::new();
        p.unpack_into(0..3, &mut out);
        assert_eq!(out, [5, 6, 7]);
        forget_segment(seg);
        assert!(!holds((seg, 40), 1));
        assert!(holds((other, 40), 1));
        forget_segment(other);
    }
}
