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
//! Bounded by [`SERIES_KEY_CACHE_BYTES_MAX`]: when an insert would pass it, the cache starts again empty.
//!
//! Admission: a cache that filled up while writes found almost none of its keys (fewer than one hit per
//! [`USELESS_KEYS_PER_HIT`] keys held) admits only one new key in [`SAMPLE_EVERY`] from then on, chosen
//! by its hash (the same keys each time, so that a key admitted is found again if it comes again), until
//! the keys it admits are found again [`RECOVER_HITS_PER_KEY`] times each on average. Why: at TSBS's
//! 10 M hosts every row is a new series, written once; copying every key into the cache (and its slot
//! into the table, a cache miss at a random place) was about 2 % of the machine's CPU over the load for
//! nothing (7 % over its first 2 M rows, with the first fill's page faults), and the cache started again
//! every 1.3 M keys (`bench/results/2026-11-30-xeon-admit`). A working set too large for the cache, written round after
//! round, gets no hit from a cache that starts again empty either; a sample of it does get found.

use std::hash::BuildHasher;

use crate::catalog::{DbId, SeriesId, TableId};
use crate::limits::SERIES_KEY_CACHE_BYTES_MAX;

/// While sampling, one new key in this many is admitted (see the module's doc).
const SAMPLE_EVERY: u64 = 16;
/// A cache that filled up with fewer hits than one per this many keys samples from then on.
const USELESS_KEYS_PER_HIT: u64 = 16;
/// A sampling cache admits every key again once its keys were found this many times each on average.
const RECOVER_HITS_PER_KEY: u64 = 2;

/// What an entry costs beyond its key's text: its [`Entry`] (hash, text's offset and length, ids: 32
/// bytes with padding) and its position in the table (4 bytes, about 5 at the table's load factor).
const ENTRY_BYTES: usize = 37;

/// The keys' text, one arena for all of them, the keys' entries in the order they came, and a table of
/// their positions that finds a key by its hash.
///
/// Why not a map of boxed strings: at high cardinality (TSBS's 1 M and 10 M hosts, every row a new
/// series) the cache was 7.6 % of the server's CPU while loading, nearly all of it allocating a box per
/// key, rehashing every key's ~200 bytes of text as the map grew, and freeing the boxes one by one when
/// the cache started again. Here a key is one copy into the arena, growth moves slots by their stored
/// hash, and starting again empties three allocations and keeps their room.
///
/// Why the entries in arrival order: devices that report in turn send their keys in the same order each
/// round (TSBS at 100,000 hosts: every row of a request a different host, host after host), so the key
/// after the one just found is most often the next entry ([`SeriesKeys::next_after`]), checked by its
/// text, which lies next to the previous key's. Found through the table, a key cost two cache misses
/// (its control bytes, its slot) at random places: 10.8 % of the server's CPU loading 100,000 hosts.
#[derive(Default)]
pub(super) struct SeriesKeys {
    text: String,
    entries: Vec<Entry>,
    /// Positions in `entries`.
    slots: hashbrown::HashTable<u32>,
    hasher: KeyHasher,
    bytes: usize,
    limit: usize,
    /// Whether only sampled keys are admitted ([`sampled`]). Only set when the cache starts again, so
    /// while it is, every key held is a sampled one.
    sampling: bool,
    /// The writes' running count of rows this cache answered, as last told ([`SeriesKeys::note_hits`]),
    /// and what it was when the cache last started again or changed how it admits.
    hits: u64,
    hits_mark: u64,
}

/// Whether a key of hash `h` is admitted while sampling. From bits 32 and up: hashbrown takes a slot's
/// position from the low bits and its control byte from the top seven, so the sampled keys still spread
/// over the whole table.
fn sampled(h: KeyHash) -> bool {
    (h.0 >> 32).is_multiple_of(SAMPLE_EVERY)
}

/// A key: its hash, its database and its text (`text[start..start + len]`), and what it names.
#[derive(Clone, Copy)]
struct Entry {
    hash: u64,
    start: u32,
    len: u32,
    db: DbId,
    table: TableId,
    series: SeriesId,
}

impl Entry {
    fn is(&self, text: &str, db: DbId, key: &str) -> bool {
        self.db == db && &text[self.start as usize..(self.start + self.len) as usize] == key
    }
}

/// A key's hash, computed once for a [`SeriesKeys::get`] and the [`SeriesKeys::insert`] after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct KeyHash(u64);

/// A key found in the cache: its hash, what it names, and where its entry is (for
/// [`SeriesKeys::next_after`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Found {
    pub hash: KeyHash,
    pub table: TableId,
    pub series: SeriesId,
    pub at: u32,
}

/// How a cache hashes its keys, copied out of it: the same for the cache's whole life (it starts again
/// empty with the same hasher), so a hash made with a copy, the cache's lock released, is the hash the
/// cache would make.
#[derive(Clone, Default)]
pub(super) struct KeyHasher(foldhash::fast::RandomState);

impl KeyHasher {
    pub(super) fn hash(&self, db: DbId, key: &str) -> KeyHash {
        KeyHash(self.0.hash_one((db, key)))
    }
}

impl SeriesKeys {
    pub(super) fn new() -> SeriesKeys {
        SeriesKeys { limit: SERIES_KEY_CACHE_BYTES_MAX, ..Default::default() }
    }

    pub(super) fn hasher(&self) -> KeyHasher {
        self.hasher.clone()
    }

    pub(super) fn hash(&self, db: DbId, key: &str) -> KeyHash {
        self.hasher.hash(db, key)
    }

    /// The (table, series) `key` (hash `h`) named when it was inserted: the table may have been dropped
    /// since.
    pub(super) fn get(&self, h: KeyHash, db: DbId, key: &str) -> Option<(TableId, SeriesId)> {
        self.find(h, db, key).map(|f| (f.table, f.series))
    }

    /// [`Self::get`], with where the key's entry is.
    pub(super) fn find(&self, h: KeyHash, db: DbId, key: &str) -> Option<Found> {
        let (text, entries) = (&self.text, &self.entries);
        let at = *self.slots.find(h.0, |&i| {
            let e = &entries[i as usize];
            e.hash == h.0 && e.is(text, db, key)
        })?;
        let e = &entries[at as usize];
        Some(Found { hash: h, table: e.table, series: e.series, at })
    }

    /// `key`, if it is the entry that came after the one at `prev` (a [`Found::at`], maybe from
    /// before the cache started again: then it is any entry, or none, and is checked all the same).
    /// No hash is computed: the entry keeps its key's.
    pub(super) fn next_after(&self, prev: u32, db: DbId, key: &str) -> Option<Found> {
        let at = prev.checked_add(1)?;
        let e = self.entries.get(at as usize).filter(|e| e.is(&self.text, db, key))?;
        Some(Found { hash: KeyHash(e.hash), table: e.table, series: e.series, at })
    }

    /// [`Self::next_after`] `prev` if given and `key` is there, else [`Self::find`] (hashing `key`).
    pub(super) fn find_near(&self, prev: Option<u32>, db: DbId, key: &str) -> Result<Found, KeyHash> {
        if let Some(f) = prev.and_then(|p| self.next_after(p, db, key)) {
            return Ok(f);
        }
        let h = self.hash(db, key);
        self.find(h, db, key).ok_or(h)
    }

    /// Takes the writes' running count of rows the cache answered (`total`: it only grows, but two
    /// writes read it before taking this lock, so the later reading may come first): a sampling cache
    /// whose keys are found often enough admits every key again.
    pub(super) fn note_hits(&mut self, total: u64) {
        self.hits = self.hits.max(total);
        let found = self.hits - self.hits_mark;
        if self.sampling && found >= (self.entries.len() as u64).max(1) * RECOVER_HITS_PER_KEY {
            self.sampling = false;
            self.hits_mark = self.hits;
        }
    }

    /// Whether new keys are only sampled now (see the module's doc).
    #[cfg(test)]
    pub(super) fn sampling(&self) -> bool {
        self.sampling
    }

    /// Records that `key` (hash `h`) names `series` of `table` (replacing what it named before: a table
    /// dropped since), if the cache admits it.
    pub(super) fn insert(&mut self, h: KeyHash, db: DbId, key: &str, table: TableId, series: SeriesId) {
        if self.sampling && !sampled(h) {
            // Not held: only sampled keys came in since sampling began, with the cache emptied.
            return;
        }
        if let Some(f) = self.find(h, db, key) {
            let e = &mut self.entries[f.at as usize];
            (e.table, e.series) = (table, series);
            return;
        }
        let cost = key.len() + ENTRY_BYTES;
        // Offsets are u32: the limit keeps the text far below 4 GiB.
        if self.bytes + cost > self.limit || self.text.len() + key.len() > u32::MAX as usize {
            // Emptied, their room kept: a load of new series (every row of TSBS's 10 M hosts) restarted
            // the cache every ~1.3 M keys before it sampled (and a working set too large for it still
            // does), and fresh room cost a page fault per 4 KiB of keys and the table's growth again
            // (4.6 % of such a load).
            self.sampling = (self.hits - self.hits_mark).saturating_mul(USELESS_KEYS_PER_HIT) < self.entries.len() as u64;
            self.hits_mark = self.hits;
            self.text.clear();
            self.entries.clear();
            self.slots.clear();
            self.bytes = 0;
            if cost > self.limit || (self.sampling && !sampled(h)) {
                return;
            }
        }
        if self.text.capacity() == 0 {
            // The arena at its limit at once: doubling copied it (2.7 % of a 10 M-host load), and pages
            // never written take no memory.
            self.text.reserve(self.limit);
        }
        let at = u32::try_from(self.entries.len()).expect("the byte limit keeps entries below 2^32");
        self.entries.push(Entry { hash: h.0, start: self.text.len() as u32, len: key.len() as u32, db, table, series });
        self.text.push_str(key);
        let entries = &self.entries;
        self.slots.insert_unique(h.0, at, |&i| entries[i as usize].hash);
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
        assert_eq!(std::mem::size_of::<Entry>(), 32, "ENTRY_BYTES counts an entry at 32 bytes");
        k.insert(k.hash(0, "cpu,host=a"), 0, "cpu,host=a", 1, 7);
        k.insert(k.hash(1, "cpu,host=a"), 1, "cpu,host=a", 2, 9);
        assert_eq!(k.get(k.hash(0, "cpu,host=a"), 0, "cpu,host=a"), Some((1, 7)));
        assert_eq!(k.get(k.hash(1, "cpu,host=a"), 1, "cpu,host=a"), Some((2, 9)));
        assert_eq!(k.get(k.hash(0, "cpu,host=b"), 0, "cpu,host=b"), None);
        // Two keys found (as the writes count them): a cache of use, which admits every key after it
        // starts again.
        k.note_hits(2);
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

    /// A cache that fills up with keys nobody asks for again admits one new key in [`SAMPLE_EVERY`] (the
    /// same ones by their hash) until its keys are found again; one whose keys were found admits all.
    #[test]
    fn a_cache_filled_without_hits_samples_new_keys_until_they_are_found() {
        let key = |i: usize| format!("cpu,host=h{i:05}");
        let mut k = SeriesKeys { limit: 100 * (ENTRY_BYTES + key(0).len()), ..Default::default() };
        let insert = |k: &mut SeriesKeys, i: usize| {
            let s = key(i);
            k.insert(k.hash(0, &s), 0, &s, 1, i as SeriesId);
        };
        let held = |k: &SeriesKeys, i: usize| k.get(k.hash(0, &key(i)), 0, &key(i)).is_some();
        let is_sampled = |k: &SeriesKeys, i: usize| sampled(k.hash(0, &key(i)));
        // Full with ten hits for a hundred keys (one per ten, more than one per 16): all admitted after.
        (0..100).for_each(|i| insert(&mut k, i));
        k.note_hits(10);
        insert(&mut k, 100);
        assert!(!k.sampling() && held(&k, 100) && !held(&k, 0), "started again, admitting every key");
        // Full again without a hit: sampling.
        (101..200).for_each(|i| insert(&mut k, i));
        assert!(!k.sampling());
        (200..1000).for_each(|i| insert(&mut k, i));
        assert!(k.sampling());
        let kept: Vec<usize> = (200..1000).filter(|i| held(&k, *i)).collect();
        let expected: Vec<usize> = (200..1000).filter(|i| is_sampled(&k, *i)).collect();
        assert_eq!(kept, expected, "exactly the sampled keys are held");
        assert!((20..=90).contains(&kept.len()), "about one in 16 of 800: {}", kept.len());
        // A key left out is left out again.
        let out = (200..1000).find(|i| !is_sampled(&k, *i)).unwrap();
        insert(&mut k, out);
        assert!(!held(&k, out));
        // Found twice each on average: every key admitted again.
        let n = kept.len() as u64;
        k.note_hits(10 + 2 * n - 1);
        assert!(k.sampling());
        k.note_hits(10 + 2 * n);
        assert!(!k.sampling());
        // A count read before another write's (the lock taken in the other order) changes nothing.
        k.note_hits(10);
        assert!(!k.sampling());
        insert(&mut k, out);
        assert!(held(&k, out));
    }

    #[test]
    fn the_entry_after_the_last_found_is_tried_first_and_checked_by_its_text() {
        let mut k = SeriesKeys::new();
        let keys = ["cpu,host=a", "cpu,host=b", "cpu,host=c"];
        for (i, key) in keys.iter().enumerate() {
            k.insert(k.hash(0, key), 0, key, 1, i as SeriesId);
        }
        // In arrival order: each found next to the previous, with the hash a lookup would compute.
        let mut prev = None;
        for (i, key) in keys.iter().enumerate() {
            let f = k.find_near(prev, 0, key).unwrap();
            assert_eq!(f, k.find(k.hash(0, key), 0, key).unwrap());
            assert_eq!((f.series, f.at), (i as SeriesId, i as u32));
            prev = Some(f.at);
        }
        assert_eq!(k.next_after(0, 0, "cpu,host=b").map(|f| f.series), Some(1));
        // Not the next entry, another database's, past the end, or absent: the table answers.
        assert_eq!(k.next_after(0, 0, "cpu,host=c"), None);
        assert_eq!(k.find_near(Some(0), 0, "cpu,host=c").unwrap().series, 2);
        assert_eq!(k.next_after(0, 1, "cpu,host=b"), None);
        assert_eq!(k.find_near(Some(0), 1, "cpu,host=b"), Err(k.hash(1, "cpu,host=b")));
        assert_eq!(k.next_after(2, 0, "cpu,host=a"), None);
        assert_eq!(k.next_after(u32::MAX, 0, "cpu,host=a"), None);
        assert_eq!(k.find_near(Some(2), 0, "cpu,host=d"), Err(k.hash(0, "cpu,host=d")));
        // After the cache starts again, a position from before names whatever is there now.
        let mut k2 = SeriesKeys { limit: 2 * (ENTRY_BYTES + 10), ..Default::default() };
        for (i, key) in keys.iter().enumerate() {
            k2.insert(k2.hash(0, key), 0, key, 1, i as SeriesId);
        }
        assert_eq!(k2.next_after(0, 0, "cpu,host=b"), None);
        assert_eq!(k2.find_near(Some(0), 0, "cpu,host=b"), Err(k2.hash(0, "cpu,host=b")));
        // Overwritten in place: the next entry answers with the new table.
        k.insert(k.hash(0, "cpu,host=b"), 0, "cpu,host=b", 5, 9);
        assert_eq!(k.next_after(0, 0, "cpu,host=b").map(|f| (f.table, f.series)), Some((5, 9)));
    }
}
