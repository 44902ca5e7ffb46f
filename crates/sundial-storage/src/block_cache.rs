//! The block-index cache: decoded groups of segment footers, bounded in bytes.
//!
//! A segment keeps only a sparse index of its footer in memory (one entry per
//! [`FOOTER_GROUP_BLOCKS`](crate::limits::FOOTER_GROUP_BLOCKS) blocks, see [`crate::segment`]); the
//! blocks' metadata (chunk references and per-column statistics, about 100 bytes per column) is decoded
//! from the file when a read needs it and kept here. Decoding every footer at open cost about 1 KB per
//! block resident with ten columns, i.e. per series at one block per series: at 10 M series that alone
//! was 10 GB. With this cache the resident cost is the capacity, whatever the number of series.
//!
//! Eviction is CLOCK (second chance): a hit only sets a flag, so the lock is held for a map lookup, and
//! a group read again since the hand last passed survives one more turn, while groups read once (a
//! compaction's or a full scan's) go first. Entries are shared (`Arc`), so an evicted group stays alive
//! for the readers still holding it; the capacity bounds what the cache itself keeps.

use std::collections::HashMap;
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
    key: GroupKey,
    blocks: Arc<[BlockMeta]>,
    bytes: usize,
    /// Read since the clock hand last passed: spared once.
    referenced: bool,
}

#[derive(Default)]
struct State {
    map: HashMap<GroupKey, usize, foldhash::fast::RandomState>,
    slots: Vec<Slot>,
    hand: usize,
    bytes: usize,
}

impl State {
    /// Removes slot `i` (the last slot moves into its place).
    fn remove(&mut self, i: usize) -> Slot {
        let slot = self.slots.swap_remove(i);
        self.map.remove(&slot.key);
        if let Some(moved) = self.slots.get(i) {
            self.map.insert(moved.key, i);
        }
        self.bytes -= slot.bytes;
        slot
    }
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
            entries: s.slots.len(),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }

    /// The group `key`, decoded by `load` on a miss and then kept if `bytes` (its estimated decoded
    /// size) fits the capacity. `load` runs without the lock held: two threads missing the same group
    /// at once both decode it, and the second insert replaces the first (same content).
    pub fn get_or_load(&self, key: GroupKey, bytes: usize, load: impl FnOnce() -> Result<Arc<[BlockMeta]>>) -> Result<Arc<[BlockMeta]>> {
        {
            let mut s = self.state.lock();
            if let Some(&i) = s.map.get(&key) {
                let slot = &mut s.slots[i];
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
        if let Some(i) = s.map.get(&key).copied() {
            s.remove(i);
        }
        let mut evicted = 0;
        while s.bytes + bytes > self.capacity && !s.slots.is_empty() {
            if s.hand >= s.slots.len() {
                s.hand = 0;
            }
            let hand = s.hand;
            if s.slots[hand].referenced {
                s.slots[hand].referenced = false;
                s.hand += 1;
            } else {
                // The last slot moves under the hand, which therefore stays put.
                s.remove(hand);
                evicted += 1;
            }
        }
        s.bytes += bytes;
        let i = s.slots.len();
        s.slots.push(Slot { key, blocks, bytes, referenced: false });
        s.map.insert(key, i);
        drop(s);
        self.evictions.fetch_add(evicted, Ordering::Relaxed);
    }

    /// Drops every group of segment `segment_no` (closed: its groups can never be asked for again).
    pub fn forget_segment(&self, segment_no: u64, n_groups: u32) {
        let mut s = self.state.lock();
        if s.slots.is_empty() {
            return;
        }
        if (n_groups as usize) <= s.slots.len() {
            for g in 0..n_groups {
                if let Some(i) = s.map.get(&(segment_no, g)).copied() {
                    s.remove(i);
                }
            }
        } else {
            let mut i = 0;
            while i < s.slots.len() {
                if s.slots[i].key.0 == segment_no {
                    s.remove(i);
                } else {
                    i += 1;
                }
            }
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
            cols: Vec::new(),
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

    #[test]
    fn a_load_error_is_returned_and_nothing_cached() {
        let c = BlockIndexCache::new(1000);
        let e = c.get_or_load((2, 0), 10, || Err(crate::error::Error::internal("boom"))).unwrap_err();
        assert!(e.to_string().contains("boom"));
        assert_eq!(c.stats().entries, 0);
    }
}
