//! Series keys as clients wrote them (line protocol's `measurement,tag=value,...` text), each mapped to
//! the series it named, kept from one write to the next.
//!
//! Why: a write request resolves each row's measurement and tags to a (table, series) pair. Within a
//! request, rows of a series seen earlier skip the catalog, but a request holds only a few rows of each
//! series when many devices report at once (TSBS at 4,000 hosts: 10,000 rows hold 2.5 rows per host), so
//! 40 % of rows took the full lookup (a dictionary lookup per tag, the series' tag-set search). A hit here
//! is one hash of the key text and one comparison.
//!
//! Exact: a key text always parses to the same measurement and tags, so it names the same series for as
//! long as the series exists. Series are never removed from a live table, and table and database ids are
//! never reused, so an entry is valid exactly while its table exists in its database: the caller uses an
//! entry only for a table it has just resolved through the catalog (`Inner::resolve`), and overwrites an
//! entry whose table is gone.
//! Bounded by [`SERIES_KEY_CACHE_BYTES_MAX`]: when an insert would pass it, the cache starts again empty
//! (scenario-5-like loads, where every row is a new series, gain nothing from any policy).

use std::hash::BuildHasher;

use crate::catalog::{DbId, SeriesId, TableId};
use crate::limits::SERIES_KEY_CACHE_BYTES_MAX;

/// What an entry costs beyond its key's text: its slot (hash, offset, length, ids: 24 bytes) at the
/// table's load factor, roughly.
const ENTRY_BYTES: usize = 32;

/// The keys' text, one arena for all of them, and a table of slots into it that keeps each key's hash.
///
/// Why not a map of boxed strings: at high cardinality (TSBS's 1 M and 10 M hosts, every row a new
/// series) the cache was 7.6 % of the server's CPU while loading, nearly all of it allocating a box per
/// key, rehashing every key's ~200 bytes of text as the map grew, and freeing the boxes one by one when
/// the cache started again. Here a key is one copy into the arena, growth moves slots by their stored
/// hash, and starting again empties two allocations and keeps their room.
#[derive(Default)]
pub(super) struct SeriesKeys {
    text: String,
    slots: hashbrown::HashTable<Slot>,
    hasher: foldhash::fast::RandomState,
    bytes: usize,
    limit: usize,
}

/// A key: its hash, its database and its text (`text[start..start + len]`), and what it names.
#[derive(Clone, Copy)]
struct Slot {
    hash: u64,
    start: u32,
    len: u32,
    db: DbId,
    table: TableId,
    series: SeriesId,
}

impl Slot {
    fn is(&self, text: &str, h: KeyHash, db: DbId, key: &str) -> bool {
        self.hash == h.0 && self.db == db && &text[self.start as usize..(self.start + self.len) as usize] == key
    }
}

/// A key's hash, computed once for a [`SeriesKeys::get`] and the [`SeriesKeys::insert`] after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct KeyHash(u64);

impl SeriesKeys {
    pub(super) fn new() -> SeriesKeys {
        SeriesKeys { limit: SERIES_KEY_CACHE_BYTES_MAX, ..Default::default() }
    }

    pub(super) fn hash(&self, db: DbId, key: &str) -> KeyHash {
        KeyHash(self.hasher.hash_one((db, key)))
    }

    /// The (table, series) `key` (hash `h`) named when it was inserted: the table may have been dropped
    /// since.
    pub(super) fn get(&self, h: KeyHash, db: DbId, key: &str) -> Option<(TableId, SeriesId)> {
        self.slots.find(h.0, |s| s.is(&self.text, h, db, key)).map(|s| (s.table, s.series))
    }

    /// Records that `key` (hash `h`) names `series` of `table` (replacing what it named before: a table
    /// dropped since).
    pub(super) fn insert(&mut self, h: KeyHash, db: DbId, key: &str, table: TableId, series: SeriesId) {
        let text = &self.text;
        if let Some(s) = self.slots.find_mut(h.0, |s| s.is(text, h, db, key)) {
            (s.table, s.series) = (table, series);
            return;
        }
        let cost = key.len() + ENTRY_BYTES;
        // Offsets are u32: the limit keeps the text far below 4 GiB.
        if self.bytes + cost > self.limit || self.text.len() + key.len() > u32::MAX as usize {
            // Emptied, their room kept: a load of new series (every row of TSBS's 10 M hosts) restarts
            // the cache every ~1.3 M keys, and fresh room cost a page fault per 4 KiB of keys and the
            // table's growth again (4.6 % of such a load).
            self.text.clear();
            self.slots.clear();
            self.bytes = 0;
            if cost > self.limit {
                return;
            }
        }
        if self.text.capacity() == 0 {
            // The arena at its limit at once: doubling copied it (2.7 % of a 10 M-host load), and pages
            // never written take no memory.
            self.text.reserve(self.limit);
        }
        let slot = Slot { hash: h.0, start: self.text.len() as u32, len: key.len() as u32, db, table, series };
        self.text.push_str(key);
        self.slots.insert_unique(h.0, slot, |s| s.hash);
        self.bytes += cost;
    }

    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_series_per_database_and_the_cache_restarts_when_full() {
        let mut k = SeriesKeys { limit: 3 * (ENTRY_BYTES + 10), ..Default::default() };
        k.insert(k.hash(0, "cpu,host=a"), 0, "cpu,host=a", 1, 7);
        k.insert(k.hash(1, "cpu,host=a"), 1, "cpu,host=a", 2, 9);
        assert_eq!(k.get(k.hash(0, "cpu,host=a"), 0, "cpu,host=a"), Some((1, 7)));
        assert_eq!(k.get(k.hash(1, "cpu,host=a"), 1, "cpu,host=a"), Some((2, 9)));
        assert_eq!(k.get(k.hash(0, "cpu,host=b"), 0, "cpu,host=b"), None);
        // Overwritten (its table was dropped), not counted twice.
        k.insert(k.hash(0, "cpu,host=a"), 0, "cpu,host=a", 3, 0);
        assert_eq!(k.get(k.hash(0, "cpu,host=a"), 0, "cpu,host=a"), Some((3, 0)));
        assert_eq!(k.bytes(), 2 * (ENTRY_BYTES + 10));
        k.insert(k.hash(0, "cpu,host=b"), 0, "cpu,host=b", 3, 1);
        assert_eq!(k.bytes(), 3 * (ENTRY_BYTES + 10));
        // A fourth does not fit: everything goes, then it goes in.
        k.insert(k.hash(0, "cpu,host=c"), 0, "cpu,host=c", 3, 2);
        assert_eq!(k.bytes(), ENTRY_BYTES + 10);
        assert_eq!(k.get(k.hash(0, "cpu,host=a"), 0, "cpu,host=a"), None);
        assert_eq!(k.get(k.hash(0, "cpu,host=c"), 0, "cpu,host=c"), Some((3, 2)));
        // A key larger than the whole cache is not kept.
        let big = "x".repeat(4 * (ENTRY_BYTES + 10));
        k.insert(k.hash(0, &big), 0, &big, 3, 3);
        assert_eq!(k.bytes(), 0);
    }
}
