//! A map bounded by the bytes its values hold, oldest insertion out first: the process-wide caches of
//! what open segments give (blocks' hour-statistics chunks in `segment.rs`, tables of last rows in
//! `last_values.rs`), each forgotten with its segment.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

pub(crate) struct FifoCache<K, V> {
    /// Each value with the bytes it was counted at.
    map: HashMap<K, (V, usize)>,
    /// Keys oldest first; may hold keys already gone from `map` (forgotten), skipped.
    queue: VecDeque<K>,
    bytes: usize,
    max_bytes: usize,
}

impl<K: Eq + Hash + Copy, V> FifoCache<K, V> {
    pub(crate) fn new(max_bytes: usize) -> Self {
        FifoCache { map: HashMap::new(), queue: VecDeque::new(), bytes: 0, max_bytes }
    }

    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key).map(|(v, _)| v)
    }

    /// Entries kept, and the bytes they were counted at (at most the bound).
    pub(crate) fn usage(&self) -> (usize, usize) {
        (self.map.len(), self.bytes)
    }

    /// Keeps `value` (counted at `bytes`) under `key`, replacing what it held, then drops the oldest
    /// entries beyond the bound. A value larger than the bound alone is not kept.
    pub(crate) fn put(&mut self, key: K, value: V, bytes: usize) {
        if bytes > self.max_bytes {
            return;
        }
        self.bytes += bytes;
        match self.map.insert(key, (value, bytes)) {
            Some((_, old)) => self.bytes -= old,
            None => self.queue.push_back(key),
        }
        self.evict();
    }

    /// Sets the bound, dropping the oldest entries beyond it.
    pub(crate) fn set_max_bytes(&mut self, max_bytes: usize) {
        self.max_bytes = max_bytes;
        self.evict();
    }

    fn evict(&mut self) {
        while self.bytes > self.max_bytes {
            let Some(k) = self.queue.pop_front() else { break };
            if let Some((_, old)) = self.map.remove(&k) {
                self.bytes -= old;
            }
        }
        debug_assert!(self.bytes <= self.max_bytes);
    }

    /// Drops every entry whose key `gone` matches (those of a closed segment).
    pub(crate) fn forget(&mut self, gone: impl Fn(&K) -> bool) {
        let bytes = &mut self.bytes;
        self.map.retain(|k, (_, b)| {
            let keep = !gone(k);
            if !keep {
                *bytes -= *b;
            }
            keep
        });
        let map = &self.map;
        self.queue.retain(|k| map.contains_key(k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The oldest entries go first past the bound, a replaced value is counted once, a value larger than
    /// the bound is not kept, and forgetting a segment's keys frees their bytes.
    #[test]
    fn oldest_out_first_within_the_bound() {
        let mut c: FifoCache<(u64, u64), &str> = FifoCache::new(10);
        c.put((1, 0), "a", 4);
        c.put((2, 0), "b", 4);
        c.put((1, 0), "a2", 5);
        assert_eq!(c.usage(), (2, 9));
        c.put((3, 0), "c", 3);
        assert_eq!(c.get(&(1, 0)), None, "the oldest key out first, though replaced since");
        assert_eq!(c.usage(), (2, 7));
        c.put((4, 0), "huge", 11);
        assert_eq!(c.get(&(4, 0)), None);
        c.put((3, 1), "d", 1);
        c.forget(|k| k.0 == 3);
        assert_eq!(c.usage(), (1, 4));
        assert_eq!(c.get(&(2, 0)), Some(&"b"));
    }

    /// A lowered bound drops the oldest entries at once and holds the later puts; a raised one keeps
    /// values the old bound refused.
    #[test]
    fn a_new_bound_applies_at_once() {
        let mut c: FifoCache<u64, ()> = FifoCache::new(10);
        for k in 0..5 {
            c.put(k, (), 2);
        }
        c.set_max_bytes(5);
        assert_eq!(c.usage(), (2, 4));
        assert!(c.get(&2).is_none() && c.get(&3).is_some() && c.get(&4).is_some());
        c.put(5, (), 2);
        assert_eq!(c.usage(), (2, 4));
        c.set_max_bytes(20);
        c.put(6, (), 12);
        assert_eq!(c.usage(), (3, 16));
    }
}
