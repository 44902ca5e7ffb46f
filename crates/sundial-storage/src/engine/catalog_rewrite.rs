//! Rewriting `catalog.log` as a snapshot of what is still live.
//!
//! The log only grows: every drop, every `SetRetention`, every tombstone (also after compaction has
//! applied it and the engine has forgotten it) and, at each start, the catalog entries replayed from the
//! WAL again. All of it is replayed at every start. Once the log is at least
//! `EngineConfig::catalog_log_rewrite_bytes_min` bytes and more than half of its records are dead
//! ([`limits::CATALOG_LOG_REWRITE_RECORDS_RATIO`]), it is replaced (see [`crate::catalog_log`] for
//! the tmp + fsync + rename + directory fsync protocol and its crash cases) by:
//!
//! 1. a [`CatalogEntry::Counters`]: the next database, table and tombstone id, flush generation and WAL
//!    sequence number. The highest ids may belong to dropped objects or retired tombstones that the
//!    snapshot leaves out, and none may ever be reused (a segment skips tombstones up to its
//!    `tombstones_applied`; ids name files);
//! 2. the live catalog ([`Catalog::snapshot_entries`]): databases with their current retention, tables,
//!    columns and series in id order;
//! 3. the `DropTable` of each dropped table whose creation a WAL record still on disk may replay: such a
//!    record is older than the drop, i.e. numbered below the WAL's next sequence number at the drop
//!    (`drop_seqs`). Without the drop, replay would bring the table back;
//! 4. the tombstones still needed: those the engine keeps in memory (a segment or frozen memtable still
//!    holds rows they hide), and those a WAL record still on disk was written before (`wal_seq` above the
//!    oldest WAL file's first sequence number): replay filters that record's rows with them.
//!
//! Everything else is dead: dropped databases (`CreateDb` never travels in the WAL, and entries of an
//! absent database are ignored), superseded `SetRetention`s, duplicates, tombstones of dropped tables
//! and retired ones no WAL record needs.
//!
//! Interplay with the WAL: catalog entries also travel in WAL records and sit in memtables until the
//! flush appends them to the log. The snapshot is taken from the in-memory catalog, which already holds
//! them, so it is a superset of the log; those entries, appended again later, are idempotent. Every
//! entry still pending in a memtable came from a WAL record still on disk, so rule 3 keeps the drop of
//! any table such an entry creates. The rewrite holds the write lock (no write, drop, delete or freeze
//! interleaves) and the log's mutex (no flush appends meanwhile); it reads the oldest WAL file first,
//! and WAL files only ever disappear, so the answer errs on the side of keeping.
//!
//! Cost: the snapshot is O(series) and is built with writers blocked; it is streamed to the new file
//! entry by entry, so its memory does not grow with the catalog. The trigger keeps it rare (the log
//! must have doubled over its live size), and background checks never wait for the write lock: a writer
//! that holds it while stalled for the flush would otherwise wait on the very thread doing the check.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

use super::{Engine, Inner};
use crate::catalog::{Catalog, CatalogEntry, Counters, DbId, TableId};
use crate::catalog_log::{CatalogLog, RewriteError};
use crate::error::Result;
use crate::limits;
use crate::tombstone::Tombstone;
use crate::wal;

/// `catalog.log` and what the engine tracks about its entries, under one mutex.
pub(super) struct LogState {
    pub(super) log: CatalogLog,
    /// Every tombstone in the log, including those the engine has retired from memory.
    pub(super) tombstones: Vec<Tombstone>,
    /// For each dropped table in the log: WAL records numbered below this may create it again.
    pub(super) drop_seqs: HashMap<(DbId, TableId), u64>,
}

impl LogState {
    /// `wal_next_seq` is the WAL's next sequence number right after replay: every record on disk is
    /// numbered below it, so it bounds (from above) the drop sequence of every drop already logged.
    pub(super) fn new(log: CatalogLog, catalog: &Catalog, tombstones: Vec<Tombstone>, wal_next_seq: u64) -> LogState {
        let drop_seqs = catalog.kept_drops(&|_, _| true).into_iter().map(|k| (k, wal_next_seq)).collect();
        LogState { log, tombstones, drop_seqs }
    }
}

/// What [`Engine::rewrite_catalog_log_now`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CatalogLogRewrite {
    /// Entries of the log before (a series batch record counts each of its series).
    pub entries_before: u64,
    pub bytes_before: u64,
    pub entries_after: u64,
    pub bytes_after: u64,
}

impl Engine {
    /// Rewrites `catalog.log` as a snapshot now, whatever its dead weight (tests, tools).
    pub fn rewrite_catalog_log_now(&self) -> Result<CatalogLogRewrite> {
        self.inner.check_poisoned()?;
        let w = self.inner.lock_writes();
        self.inner.rewrite_catalog_log(&w)
    }

    /// Entries (a series batch record counts each of its series) and bytes of `catalog.log`.
    pub fn catalog_log_size(&self) -> (u64, u64) {
        self.inner.catalog_log.lock().log.size()
    }
}

/// The entries of the log still needed (rules 3 and 4 of the module doc).
struct Kept {
    tombstones: Vec<Tombstone>,
    drops: HashSet<(DbId, TableId)>,
}

impl Inner {
    /// The first sequence number of the oldest WAL file on disk (the next one when there is none):
    /// no record on disk is numbered below it.
    fn oldest_wal_seq(&self) -> Result<u64> {
        let next = self.wal.next_seq();
        Ok(wal::list_files(self.wal.dir())?.first().map_or(next, |(first, _)| (*first).min(next)))
    }

    fn kept(&self, cat: &Catalog, state: &LogState, oldest_wal_seq: u64) -> Kept {
        let in_memory: HashSet<u64> = self.tombstones.read().values().flatten().map(|t| t.id).collect();
        let live_table = |db: DbId, t: TableId| cat.db_by_id(db).is_some_and(|d| d.table_by_id(t).is_some());
        let tombstones = state
            .tombstones
            .iter()
            .filter(|t| live_table(t.db, t.table) && (in_memory.contains(&t.id) || t.wal_seq > oldest_wal_seq))
            .cloned()
            .collect();
        let drops = cat
            .kept_drops(&|db, t| state.drop_seqs.get(&(db, t)).is_some_and(|seq| *seq > oldest_wal_seq))
            .into_iter()
            .collect();
        Kept { tombstones, drops }
    }

    /// Rewrites the log if it is large enough and mostly dead. `wait` blocks for the write lock (at
    /// open); otherwise a busy lock postpones the check to the next flush-loop turn.
    pub(super) fn maybe_rewrite_catalog_log(&self, wait: bool) {
        let w = if wait {
            self.lock_writes()
        } else {
            match self.try_lock_writes() {
                Some(w) => w,
                None => {
                    self.catalog_log_check_due.store(true, Ordering::SeqCst);
                    return;
                }
            }
        };
        if self.check_poisoned().is_err() {
            return;
        }
        match self.rewrite_due() {
            Ok(false) => {}
            Ok(true) => match self.rewrite_catalog_log(&w) {
                Ok(r) => tracing::info!(
                    entries_before = r.entries_before,
                    entries_after = r.entries_after,
                    bytes_before = r.bytes_before,
                    bytes_after = r.bytes_after,
                    "rewrote catalog.log without its dead entries"
                ),
                Err(e) => tracing::warn!(error = %e, "catalog.log rewrite failed; the old log stays in use"),
            },
            Err(e) => tracing::warn!(error = %e, "could not check whether catalog.log needs a rewrite"),
        }
    }

    /// True when the log holds at least `catalog_log_rewrite_bytes_min` bytes and more than
    /// [`limits::CATALOG_LOG_REWRITE_RECORDS_RATIO`] times the entries a snapshot would write. Entries,
    /// not records: both the log and a snapshot batch runs of series, so counting each batch's series
    /// compares like with like whatever the batching (a log appended flush by flush holds more, smaller
    /// batches than a snapshot).
    fn rewrite_due(&self) -> Result<bool> {
        let (entries, bytes) = self.catalog_log.lock().log.size();
        if bytes < self.config.catalog_log_rewrite_bytes_min {
            return Ok(false);
        }
        let oldest = self.oldest_wal_seq()?;
        let cat = self.catalog.read();
        let state = self.catalog_log.lock();
        let kept = self.kept(&cat, &state, oldest);
        let live = 1 + cat.live_entry_count() + kept.drops.len() + kept.tombstones.len();
        Ok(entries > (live as u64).saturating_mul(limits::CATALOG_LOG_REWRITE_RECORDS_RATIO))
    }

    /// The rewrite itself; the caller holds the write lock (proved by the guard).
    pub(super) fn rewrite_catalog_log(&self, _w: &parking_lot::MutexGuard<'_, ()>) -> Result<CatalogLogRewrite> {
        let oldest = self.oldest_wal_seq()?;
        let cat = self.catalog.read();
        let mut state = self.catalog_log.lock();
        let (entries_before, bytes_before) = state.log.size();
        let kept = self.kept(&cat, &state, oldest);
        let counters = Counters {
            next_db: cat.next_db_id(),
            next_table: cat.next_table_id(),
            next_tombstone_id: self.next_tombstone_id.load(Ordering::SeqCst),
            next_generation: self.next_generation.load(Ordering::SeqCst),
            next_wal_seq: self.wal.next_seq(),
        };
        let written = state.log.rewrite_with(&mut |put| {
            put(&CatalogEntry::Counters(counters))?;
            cat.for_each_snapshot_entry(&|db, t| kept.drops.contains(&(db, t)), &mut |e| put(&e))?;
            kept.tombstones.iter().try_for_each(|t| put(&CatalogEntry::Tombstone(t.clone())))
        });
        drop(cat);
        match written {
            Ok(()) => {}
            Err(RewriteError::Before(e)) => return Err(e),
            Err(RewriteError::AfterRename(e)) => {
                self.poison(&e);
                return Err(e);
            }
        }
        state.tombstones = kept.tombstones;
        state.drop_seqs.retain(|k, _| kept.drops.contains(k));
        let (entries_after, bytes_after) = state.log.size();
        Ok(CatalogLogRewrite { entries_before, bytes_before, entries_after, bytes_after })
    }
}
