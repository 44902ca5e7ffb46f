//! The block-index cache: decoded groups of segment footers, bounded in bytes.
//!
//! A segment keeps only a sparse index of its footer in memory (one entry per
//! [`FOOTER_GROUP_BLOCKS`](crate::limits::FOOTER_GROUP_BLOCKS) blocks, see [`crate::segment`]); the
//! blocks' metadata (chunk references and per-column statistics, about 100 bytes per column) is decoded
//! from the file when a read needs it and kept here. Decoding every footer at open cost about 1 KB per
//! block resident with ten columns, i.e. per series at one block per series: at 10 M series that alone
//! was 10 GB. With this cache the resident cost is the capacity, whatever the number of series.
//!
//! Eviction is CLOCK (second chance), kept as a queue: a hit only sets a flag, so the lock is held for a
//! map lookup; a group read again since it last reached the head of the queue goes round once more,
//! while groups read once (a compaction's or a full scan's) go first. Entries are shared (`Arc`), so an
//! evicted group stays alive for the readers still holding it; the capacity bounds what the cache keeps.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::error::Result;
use crate::segment::BlockMeta;

/// Identifies a decoded group: (the segment's number, assigned at open and never reused in this
/// process; the group's index in that segment).
pub type GroupKey = (u64, u32);

/// A snapshot of the cache's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockIndexCacheStats {
    /// Estimated bytes of the decoded groups held (see [`BlockIndexCache::get_or_load`]).
    pub bytes: usize,
    pub capacity: usize,
    /// Groups held.
    pub entries: usize,
    pub hits: u64,
    /// Lookups that decoded the group from the file.
    pub misses: u64,
    pub evictions: u64,
}

struct Slot {
    blocks: Arc<[BlockMeta]>,
    bytes: usize,
    /// Read since it last passed the head of the queue: spared once.
    referenced: bool,
}

/// CLOCK kept as a queue: eviction looks at the head; a referenced group loses its flag and goes to the
/// back, an unreferenced one is dropped; a new group enters at the back, so it is looked at last. (A
/// slot array with `swap_remove` would move the newest group under the hand, making it the next victim:
/// two interleaved scans then evicted each other's groups before their second read.)
#[derive(Default)]
struct State {
    map: HashMap<GroupKey, Slot, foldhash::fast::RandomState>,
    /// Keys in eviction order; may hold keys already gone from `map` (forgotten segments), skipped.
    queue: VecDeque<GroupKey>,
    bytes: usize,
}

/// Decoded footer groups of every open segment, at most `capacity` (estimated) bytes. Thread-safe;
/// one per engine ([`crate::EngineConfig::block_index_cache_bytes`]).
pub struct BlockIndexCache {
    capacity: usize,
    state: Mutex<State>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

impl std::fmt::Debug for BlockIndexCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockIndexCache").field("stats", &self.stats()).finish()
    }
}

/// Segment numbers: unique per process, so a group of a closed segment can never be mistaken for one of
/// a segment opened later (even from the same path, e.g. a same-range rewrite).
static NEXT_SEGMENT_NO: AtomicU64 = AtomicU64::new(1);

/// A fresh segment number for [`GroupKey`]s.
pub fn next_segment_no() -> u64 {
    NEXT_SEGMENT_NO.fetch_add(1, Ordering::Relaxed)
}

/// Capacity of the process-wide cache behind [`crate::segment::Segment::open`] (tests, examples, tools);
/// the engine uses its own, configured one.
pub const DEFAULT_SHARED_CACHE_BYTES: usize = 16 * 1024 * 1024;

impl BlockIndexCache {
    /// A cache holding at most `capacity` bytes of decoded groups (0: none, every read decodes).
    pub fn new(capacity: usize) -> BlockIndexCache {
        BlockIndexCache {
            capacity,
            state: Mutex::new(State::default()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    /// The process-wide cache of [`DEFAULT_SHARED_CACHE_BYTES`] used by `Segment::open`.
    pub fn shared_default() -> &'static Arc<BlockIndexCache> {
        static SHARED: OnceLock<Arc<BlockIndexCache>> = OnceLock::new();
        SHARED.get_or_init(|| Arc::new(BlockIndexCache::new(DEFAULT_SHARED_CACHE_BYTES)))
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn stats(&self) -> BlockIndexCacheStats {
        let s = self.state.lock();
        BlockIndexCacheStats {
            bytes: s.bytes,
            capacity: self.capacity,
            entries: s.map.len(),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }

    /// The group `key` if it is cached (a hit), else `None` without counting a miss: for a caller
    /// that can make do with less than a full decode (a segment's series list).
    pub fn get(&self, key: GroupKey) -> Option<Arc<[BlockMeta]>> {
        let mut s = self.state.lock();
        let slot = s.map.get_mut(&key)?;
        slot.referenced = true;
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(Arc::clone(&slot.blocks))
    }

    /// The group `key`, decoded by `load` on a miss and then kept if `bytes` (its estimated decoded
    /// size) fits the capacity. `load` runs without the lock held: two threads missing the same group
    /// at once both decode it, and the second insert replaces the first (same content).
    pub fn get_or_load(&self, key: GroupKey, bytes: usize, load: impl FnOnce() -> Result<Arc<[BlockMeta]>>) -> Result<Arc<[BlockMeta]>> {
        {
            let mut s = self.state.lock();
            if let Some(slot) = s.map.get_mut(&key) {
                slot.referenced = true;
                self.hits.fetch_add(1, Ordering::Relaxed);
                return Ok(Arc::clone(&slot.blocks));
            }
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let blocks = load()?;
        if bytes <= self.capacity {
            self.insert(key, Arc::clone(&blocks), bytes);
        }
        Ok(blocks)
    }

    fn insert(&self, key: GroupKey, blocks: Arc<[BlockMeta]>, bytes: usize) {
        let mut s = self.state.lock();
        if let Some(old) = s.map.remove(&key) {
            s.bytes -= old.bytes; // its queue entry stays and now stands for the new slot
        } else {
            s.queue.push_back(key);
        }
        let mut evicted = 0;
        while s.bytes + bytes > self.capacity {
            let Some(k) = s.queue.pop_front() else { break };
            if k == key {
                s.queue.push_back(k);
                if s.queue.len() == 1 {
                    break;
                }
                continue;
            }
            match s.map.get_mut(&k) {
                None => {} // forgotten
                Some(slot) if slot.referenced => {
                    slot.referenced = false;
                    s.queue.push_back(k);
                }
                Some(_) => {
                    let slot = s.map.remove(&k).expect("present");
                    s.bytes -= slot.bytes;
                    evicted += 1;
                }
            }
        }
        s.bytes += bytes;
        s.map.insert(key, Slot { blocks, bytes, referenced: false });
        drop(s);
        self.evictions.fetch_add(evicted, Ordering::Relaxed);
    }

    /// Drops every group of segment `segment_no` (closed: its groups can never be asked for again).
    pub fn forget_segment(&self, segment_no: u64, n_groups: u32) {
        let mut s = self.state.lock();
        if s.map.is_empty() {
            s.queue.clear();
            return;
        }
        for g in 0..n_groups {
            if let Some(slot) = s.map.remove(&(segment_no, g)) {
                s.bytes -= slot.bytes;
            }
        }
        // Keep the queue's stale keys bounded by the live ones.
        if s.queue.len() > 2 * s.map.len() + 64 {
            let State { map, queue, .. } = &mut *s;
            queue.retain(|k| map.contains_key(k));
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn group(n: usize) -> Arc<[BlockMeta]> {
        let b = BlockMeta {
            series: 1,
            n_rows: 1,
            ts_min: 0,
            ts_max: 0,
            ts_chunk: crate::segment::ChunkRef { offset: 16, len: 1, crc: 0 },
            pack: None,
            cols: Arc::default(),
            hours: None,
        };
        vec![b; n].into()
    }

    #[test]
    fn clock_keeps_bytes_under_capacity_and_spares_referenced_groups() {
        let c = BlockIndexCache::new(300);
        let load = |n| move || Ok(group(n));
        for g in 0..3 {
            c.get_or_load((1, g), 100, load(1)).unwrap();
        }
        // Group 0 is read again: the next insert passes over it and evicts group 1.
        c.get_or_load((1, 0), 100, || panic!("a hit must not load")).unwrap();
        c.get_or_load((1, 3), 100, load(1)).unwrap();
        let s = c.stats();
        assert_eq!((s.bytes, s.entries, s.hits, s.misses, s.evictions), (300, 3, 1, 4, 1), "{s:?}");
        c.get_or_load((1, 0), 100, || panic!("group 0 was referenced, so it must have been spared")).unwrap();
        let mut loaded = false;
        c.get_or_load((1, 1), 100, || {
            loaded = true;
            Ok(group(1))
        })
        .unwrap();
        assert!(loaded, "group 1 was the victim");
        assert!(c.stats().bytes <= 300);
        // Larger than the capacity: returned, not kept.
        c.get_or_load((1, 9), 301, load(2)).unwrap();
        assert!(c.stats().bytes <= 300);
        c.forget_segment(1, 10);
        assert_eq!((c.stats().bytes, c.stats().entries), (0, 0));
    }

    /// Two scans walking their own segments side by side, each reading a group several times in a row
    /// (consecutive series share a group): every group is decoded once, though the cache holds only a
    /// few.
    #[test]
    fn interleaved_scans_decode_each_group_once() {
        let c = BlockIndexCache::new(400);
        for g in 0..100 {
            for _ in 0..3 {
                for seg in [1, 2] {
                    c.get_or_load((seg, g), 100, || Ok(group(1))).unwrap();
                }
            }
        }
        let s = c.stats();
        assert_eq!((s.misses, s.hits), (200, 400), "{s:?}");
        assert!(s.bytes <= 400 && s.entries == 4, "{s:?}");
        // The same at scale, in passes: the cache full of groups read many times (all referenced).
        let c = BlockIndexCache::new(555 * 100);
        let mut before = 0;
        for pass in 1..=3 {
            for g in 0..1563 {
                for _ in 0..64 {
                    for seg in [1, 2] {
                        c.get_or_load((seg, g), 100, || Ok(group(1))).unwrap();
                    }
                }
            }
            let misses = c.stats().misses - before;
            before += misses;
            // Each wrap of the queue costs a few groups read once more (they reach the head unflagged).
            assert!((2 * 1563..2 * 1563 + 40).contains(&misses), "pass {pass}: {misses} misses, {:?}", c.stats());
        }
    }

    #[test]
    fn a_load_error_is_returned_and_nothing_cached() {
        let c = BlockIndexCache::new(1000);
        let e = c.get_or_load((2, 0), 10, || Err(crate::error::Error::internal("boom"))).unwrap_err();
        assert!(e.to_string().contains("boom"));
        assert_eq!(c.stats().entries, 0);
    }
}
