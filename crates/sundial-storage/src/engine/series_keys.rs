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

use crate::FastMap;
use crate::catalog::{DbId, SeriesId, TableId};
use crate::limits::SERIES_KEY_CACHE_BYTES_MAX;

/// What an entry costs beyond its key's text: the map slot (key box, value, hash control byte) and the
/// box's allocation header, roughly.
const ENTRY_BYTES: usize = 48;

#[derive(Default)]
pub(super) struct SeriesKeys {
    by_db: FastMap<DbId, FastMap<Box<str>, (TableId, SeriesId)>>,
    bytes: usize,
    limit: usize,
}

impl SeriesKeys {
    pub(super) fn new() -> SeriesKeys {
        SeriesKeys { limit: SERIES_KEY_CACHE_BYTES_MAX, ..Default::default() }
    }

    /// The (table, series) `key` named when it was inserted: the table may have been dropped since.
    pub(super) fn get(&self, db: DbId, key: &str) -> Option<(TableId, SeriesId)> {
        self.by_db.get(&db)?.get(key).copied()
    }

    /// Records that `key` names `series` of `table` (replacing what it named before: a table dropped
    /// since).
    pub(super) fn insert(&mut self, db: DbId, key: &str, table: TableId, series: SeriesId) {
        let cost = key.len() + ENTRY_BYTES;
        if self.bytes + cost > self.limit {
            self.by_db.clear();
            self.bytes = 0;
            if cost > self.limit {
                return;
            }
        }
        let keys = self.by_db.entry(db).or_default();
        if keys.insert(key.into(), (table, series)).is_none() {
            self.bytes += cost;
        }
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
        k.insert(0, "cpu,host=a", 1, 7);
        k.insert(1, "cpu,host=a", 2, 9);
        assert_eq!(k.get(0, "cpu,host=a"), Some((1, 7)));
        assert_eq!(k.get(1, "cpu,host=a"), Some((2, 9)));
        assert_eq!(k.get(0, "cpu,host=b"), None);
        // Overwritten (its table was dropped), not counted twice.
        k.insert(0, "cpu,host=a", 3, 0);
        assert_eq!(k.get(0, "cpu,host=a"), Some((3, 0)));
        assert_eq!(k.bytes(), 2 * (ENTRY_BYTES + 10));
        k.insert(0, "cpu,host=b", 3, 1);
        assert_eq!(k.bytes(), 3 * (ENTRY_BYTES + 10));
        // A fourth does not fit: everything goes, then it goes in.
        k.insert(0, "cpu,host=c", 3, 2);
        assert_eq!(k.bytes(), ENTRY_BYTES + 10);
        assert_eq!(k.get(0, "cpu,host=a"), None);
        assert_eq!(k.get(0, "cpu,host=c"), Some((3, 2)));
        // A key larger than the whole cache is not kept.
        k.insert(0, &"x".repeat(4 * (ENTRY_BYTES + 10)), 3, 3);
        assert_eq!(k.bytes(), 0);
    }
}
