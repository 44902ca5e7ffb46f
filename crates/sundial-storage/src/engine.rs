//! The engine: one data directory, its catalog, WAL, memtables and segments, and the flush thread.
//!
//! Directory layout:
//! ```text
//! <data>/LOCK                      held (flock) while an engine has the directory open (also in every
//!                                  extra data directory, which holds only db<id>/ partitions)
//! <data>/catalog.log               catalog entries (catalog_log.rs); rewritten through
//!                                  catalog.log.tmp when mostly dead (engine/catalog_rewrite.rs)
//! <data>/wal/<first_seq>.wal       write-ahead log files (wal.rs)
//! <data>/db<id>/p<start_ns>/t<table>-g<gen_min>-<gen_max>.seg    segment files (segment.rs; format
//!                                  version 1 named them t<table>-g<generation>.seg)
//! ```
//!
//! Concurrency: writers look their rows' series up under read locks (`Inner::prelookup`), then resolve
//! the rest of the names (and create series) one at a time under `write_lock`, each taking
//! a ticket there; they encode their WAL record outside every lock, append it to the WAL and apply it to
//! the active memtable at their ticket's turn (`engine/turns.rs`: in the order of the resolves), and
//! then wait for durability, so concurrent requests share fsyncs. Everything else that changes the
//! catalog, the WAL or the memtables takes `write_lock` and waits for the issued turns to end
//! (`Inner::lock_writes`).
//! Readers never take `write_lock`: they snapshot the segment list and memtables under short read locks.
//!
//! Flush protocol (crash-safe in every order of partial completion):
//! 1. at a write's turn, or under `write_lock` with every turn ended: rotate the WAL and freeze the
//!    active memtable (it now covers exactly the WAL files before the rotation point);
//! 2. append the generation's catalog entries to `catalog.log` and fsync;
//! 3. write one segment per (table, partition) as `*.seg.tmp`, fsync, rename, fsync the directories;
//! 4. publish the segments, then drop the frozen memtable;
//! 5. delete the WAL files before the rotation point.
//!
//! A crash before 5 replays the WAL over segments that may already hold the same rows: replay re-applies
//! identical values, and last-write-wins makes the duplicates harmless until compaction removes them.
//!
//! Storage v2 adds, each with its own section in `engine/maintenance.rs`:
//! - **compaction** ([`crate::compaction`]): background merges of a partition's files, and
//!   [`Engine::compact_now`];
//! - **retention**: partitions wholly older than `now − retention` are deleted
//!   ([`Engine::enforce_retention_now`], and every `retention_check_interval` on the flush thread);
//!   reads never return rows older than `now − retention`, wherever they are;
//! - **deletes** ([`Engine::delete`], [`Engine::drop_series`]): durable tombstones
//!   ([`crate::tombstone`]) honoured by reads at once and applied by compaction.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock, RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard};

use crate::batch::{ColRun, WriteBatch};
use crate::catalog::{Catalog, CatalogEntry, ColId, ColumnKind, Counters, DbCatalog, DbId, Lookup, NewSeries, Resolver, RowShape, SeriesId, TableId, validate_name};
use crate::catalog_log::CatalogLog;
use crate::error::{Error, Result};
use crate::hours::{self, HourStats};
use crate::limits;
use crate::memtable::{MemGen, SeriesBuf};
use crate::rows::{self, RowsRef, SeriesRows};
use crate::placement::Placement;
use crate::block_cache::{BlockIndexCache, BlockIndexCacheStats};
use crate::segment::{BlockMeta, PartitionedWriter, Segment, SegmentScan, SeriesBlocks, is_canonical_name};
use crate::throttle::{SystemThrottleClock, ThrottleClock, TokenBucket};
use crate::tombstone::{self, Tombstone};
use crate::types::{FieldType, Value};
use crate::wal::{self, SyncPolicy, Wal};

/// Series a write request's map of already-resolved series is sized for before its first row (see
/// `Inner::resolve`).
const KNOWN_SERIES_PRESIZE: usize = 1024;

/// Rows a [`Inner::prelookup`] looks up between yields of its read locks to a waiting writer (another
/// request's resolve adding series): at most about 0.3 ms of lookups.
const PRELOOKUP_BUMP_ROWS: usize = 256;

/// Rows a write's resolve handles under the catalog's exclusive lock, once it took it to add a series,
/// before it lets readers in again. Why not the lock per new series, as before: another request's
/// [`Inner::prelookup`] holds the catalog's read lock for [`PRELOOKUP_BUMP_ROWS`] rows at a time, so each
/// new series waited for one such stretch (at 10 M hosts, 10,000 new series a request: the request resolving
/// crawled while the other looked up, and one core idled in a quarter of a thread sampler's samples).
const RESOLVE_EXCLUSIVE_ROWS: usize = 1024;

/// The catalog as a write's resolve holds it: shared with readers (upgradable), or exclusive for a run of
/// at most [`RESOLVE_EXCLUSIVE_ROWS`] rows once a row adds to it.
struct ResolveGuard<'a> {
    held: Option<Held<'a>>,
    exclusive_rows: usize,
}

enum Held<'a> {
    Shared(RwLockUpgradableReadGuard<'a, Catalog>),
    Exclusive(RwLockWriteGuard<'a, Catalog>),
}

impl<'a> ResolveGuard<'a> {
    fn new(g: RwLockUpgradableReadGuard<'a, Catalog>) -> Self {
        ResolveGuard { held: Some(Held::Shared(g)), exclusive_rows: 0 }
    }

    fn cat(&self) -> &Catalog {
        match self.held.as_ref().expect("a resolve guard holds the catalog") {
            Held::Shared(g) => g,
            Held::Exclusive(g) => g,
        }
    }

    /// The catalog to change, upgrading the lock if it is shared (waiting for readers to leave).
    fn exclusive(&mut self) -> &mut Catalog {
        if matches!(self.held, Some(Held::Shared(_)))
            && let Some(Held::Shared(g)) = self.held.take()
        {
            self.held = Some(Held::Exclusive(RwLockUpgradableReadGuard::upgrade(g)));
            self.exclusive_rows = 0;
        }
        match self.held.as_mut() {
            Some(Held::Exclusive(g)) => g,
            _ => unreachable!("upgraded just above"),
        }
    }

    /// A row done: after [`RESOLVE_EXCLUSIVE_ROWS`] rows held exclusive, shared again (readers in).
    fn row_done(&mut self) {
        if !matches!(self.held, Some(Held::Exclusive(_))) {
            return;
        }
        self.exclusive_rows += 1;
        if self.exclusive_rows >= RESOLVE_EXCLUSIVE_ROWS
            && let Some(Held::Exclusive(g)) = self.held.take()
        {
            self.held = Some(Held::Shared(RwLockWriteGuard::downgrade_to_upgradable(g)));
        }
    }
}

/// Engine settings. Every field has a documented default (see [`EngineConfig::new`]).
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// The primary directory: lock, `catalog.log`, WAL, and segment files.
    pub data_dir: PathBuf,
    /// More directories for segment files (other disks). A new partition goes to the directory with the
    /// most free space (see [`crate::placement`]). Default: none. Each one is locked like `data_dir`; all
    /// must be given again at every open (a partition in a directory left out is not served).
    pub extra_data_dirs: Vec<PathBuf>,
    /// When writes are acknowledged. Default: [`SyncPolicy::Batch`].
    pub wal_sync: SyncPolicy,
    /// Bytes of the active memtable that start a flush (half of it while its series are few and long:
    /// [`crate::memtable::MemGen::full`]). Default: an eighth of the memory, 64 MiB to 1 GiB
    /// ([`limits::MEMTABLE_MEMORY_DIVISOR`], [`crate::sysmem`]).
    pub memtable_bytes_max: usize,
    /// Age of the oldest unflushed write that starts a flush. Default 5 minutes.
    pub flush_interval: Duration,
    /// Time without any write after which the memtable is flushed (InfluxDB's "cache snapshot write cold
    /// duration"): data at rest ends up compressed in segments and the WAL is emptied. Default 60 s.
    pub flush_idle: Duration,
    /// Time since a partition's newest file was written after which the partition is merged whole into
    /// one file, as a past partition is (InfluxDB's "compact full write cold duration"). Zero: never (the
    /// newest partition stays size-tiered). Default 4 h ([`limits::COMPACT_FULL_WRITE_COLD_MS_DEFAULT`]).
    pub compact_full_write_cold: Duration,
    /// Time partition length in nanoseconds. Default one day.
    pub partition_ns: i64,
    /// Frozen memtables waiting for flush before writers stall. Default 2.
    pub frozen_max: usize,
    /// A read of at least this many series of a table that the active memtable holds at least this
    /// many series of freezes the memtable and reads it where it is, instead of copying the series'
    /// rows into the snapshot; only when `write_lock` is free (the read then waits for the writes
    /// already in their turn) and fewer than `frozen_max` memtables wait for flush. Default
    /// [`limits::FREEZE_FOR_READ_SERIES_MIN`].
    pub freeze_for_read_series_min: usize,
    /// Bytes of all memtables (active + frozen, waiting for flush) at which writes stall and, if the
    /// flush does not bring them below within `write_stall_timeout`, are refused with
    /// [`Error::Overloaded`] (HTTP 503 + `Retry-After`). `None` (the default): twice
    /// `memtable_bytes_max` — a flush starts at X, writes are refused at 2X.
    pub memory_bytes_reject: Option<usize>,
    /// How long a stalled writer waits for the flush before its write is refused. Default 30 s.
    pub write_stall_timeout: Duration,
    /// Background compaction threads, also the bound on concurrent compactions (at least one is always
    /// allowed, for [`Engine::compact_now`]). 0 disables background compaction (tests drive it
    /// themselves). Default [`limits::COMPACTIONS_CONCURRENT_DEFAULT`], at most
    /// [`limits::COMPACTIONS_CONCURRENT_MAX`].
    pub compaction_threads: usize,
    /// How often the flush thread drops partitions past retention. Default 60 s
    /// ([`limits::RETENTION_CHECK_MS_DEFAULT`]).
    pub retention_check_interval: Duration,
    /// The wall clock, for retention. Default: the system clock; tests use [`Clock::manual`].
    pub clock: Clock,
    /// Cap on the bytes per second all compactions together write (a token bucket, see
    /// [`crate::throttle`]); flushes are never limited, since ingest waits on them. `None` (the
    /// default): unlimited — merges run at codec speed on `compaction_threads` threads (default one),
    /// which on a dedicated disk costs little next to ingest, and too low a cap lets files pile up in
    /// hot partitions (read amplification). Set it when the disk is shared with latency-sensitive work.
    pub compaction_bytes_per_sec_max: Option<u64>,
    /// Where the compaction rate limit reads time and sleeps. Default: the real clock; tests use
    /// [`crate::throttle::ManualThrottleClock`].
    pub compaction_throttle_clock: Arc<dyn ThrottleClock>,
    /// `catalog.log` is rewritten as a snapshot only once it holds at least this many bytes (and more
    /// than half of its records are dead). Default [`limits::CATALOG_LOG_REWRITE_BYTES_MIN`] (256 KiB).
    pub catalog_log_rewrite_bytes_min: u64,
    /// Capacity of the block-index cache: segment footers' block metadata (chunk references and
    /// per-column statistics, about 1 KB per block with ten columns), decoded group by group when reads
    /// need it (see [`crate::block_cache`]). Open segments keep only a sparse index resident (under a
    /// byte per block), so this bounds the memory of block metadata whatever the number of series.
    /// Default [`limits::BLOCK_INDEX_CACHE_BYTES_DEFAULT`] (64 MiB).
    pub block_index_cache_bytes: usize,
    /// Most series per database (0: no limit); see [`Catalog::set_series_per_database_max`].
    pub series_per_database_max: u64,
    /// Memory for decoded pages of paged numeric columns that reads of hours keep (TSBS's high-cpu; see
    /// [`crate::codec::page_cache`]). One cache serves the whole process: the engine opened last sets
    /// its size. Default: a 64th of the memory, 64 MiB to 1 GiB
    /// ([`limits::DECODED_PAGES_MEMORY_DIVISOR`], [`crate::sysmem`]).
    pub decoded_pages_bytes: usize,
    /// After open, decode the segments' block-index groups into the cache in the background (newest
    /// partitions first) until it holds half its capacity ([`Engine::open`]). Default on.
    pub warm_block_index: bool,
}

/// Where the engine reads the time (nanoseconds since the Unix epoch).
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> i64 + Send + Sync>);

impl Clock {
    pub fn system() -> Clock {
        Clock(Arc::new(|| {
            let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
        }))
    }

    /// A clock that reads `now`; the test moves time by storing into it.
    pub fn manual(now: Arc<std::sync::atomic::AtomicI64>) -> Clock {
        Clock(Arc::new(move || now.load(Ordering::SeqCst)))
    }

    pub fn now_ns(&self) -> i64 {
        (self.0)()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Clock(now={})", self.now_ns())
    }
}

impl EngineConfig {
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        EngineConfig {
            data_dir: data_dir.into(),
            extra_data_dirs: Vec::new(),
            wal_sync: SyncPolicy::Batch,
            memtable_bytes_max: crate::sysmem::memtable_bytes_default(crate::sysmem::memory_bytes()),
            flush_interval: Duration::from_millis(limits::FLUSH_INTERVAL_MS_DEFAULT),
            flush_idle: Duration::from_millis(limits::FLUSH_IDLE_MS_DEFAULT),
            compact_full_write_cold: Duration::from_millis(limits::COMPACT_FULL_WRITE_COLD_MS_DEFAULT),
            partition_ns: limits::PARTITION_NS_DEFAULT,
            frozen_max: 2,
            freeze_for_read_series_min: limits::FREEZE_FOR_READ_SERIES_MIN,
            memory_bytes_reject: None,
            write_stall_timeout: Duration::from_secs(30),
            compaction_threads: limits::COMPACTIONS_CONCURRENT_DEFAULT,
            retention_check_interval: Duration::from_millis(limits::RETENTION_CHECK_MS_DEFAULT),
            clock: Clock::system(),
            compaction_bytes_per_sec_max: None,
            compaction_throttle_clock: SystemThrottleClock::shared(),
            catalog_log_rewrite_bytes_min: limits::CATALOG_LOG_REWRITE_BYTES_MIN,
            block_index_cache_bytes: limits::BLOCK_INDEX_CACHE_BYTES_DEFAULT,
            decoded_pages_bytes: crate::sysmem::decoded_pages_bytes_default(crate::sysmem::memory_bytes()),
            series_per_database_max: 0,
            warm_block_index: true,
        }
    }
}

/// One row to write, with names (the engine resolves them to ids).
///
/// Tags and fields are borrowed or owned ([`Cow`]): the HTTP write path hands out slices of one vector
/// for all the rows of a request (no allocation per row); tests and small callers pass vectors.
#[derive(Clone, Debug)]
pub struct WritePoint<'a> {
    /// Where the row came from (1-based line number), for error reports.
    pub line: usize,
    pub table: &'a str,
    /// The series key as the client wrote it, when there is one (line protocol's `measurement,tags`
    /// text): the same text must always stand for the same `table` and `tags`. Rows with one are found
    /// in the engine's cache of series keys, from one request to the next (`engine/series_keys.rs`).
    pub key: Option<&'a str>,
    /// Set when the caller left `tags` out (empty): what [`KeyProbe::get`] answered for `key` just
    /// before (set only with a `key`). The row is written to that series without its tags being
    /// looked at. If the engine finds it needs them after all (the table was dropped since, or a
    /// field has no column of its type yet), the write fails with [`Error::TagsNeeded`] and changes
    /// nothing: write the rows again with their tags.
    pub known: Option<KnownKey>,
    /// In any order, each key once.
    pub tags: Cow<'a, [(&'a str, &'a str)]>,
    pub fields: Cow<'a, [(&'a str, Value)]>,
    /// Nanoseconds since the Unix epoch.
    pub ts: i64,
}

/// What writes have waited for ([`Engine::write_waits`]), summed over writes since the engine opened.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WriteWaits {
    /// Writes that reached the memtable (and, under the sync policy, the disk).
    pub writes: u64,
    /// Waiting for another write's resolve (`write_lock`) and for the writes resolved before it to
    /// take their turn at the WAL and the memtable.
    pub lock_secs: f64,
    /// Writes held back because the flush was behind (backpressure), and for how long in all.
    pub stalled_writes: u64,
    pub stall_secs: f64,
    /// Waiting for the WAL to be durable (the fsync of the sync policy) after the memtable was applied.
    pub durable_secs: f64,
}

/// [`WriteWaits`] as the writes add to it.
#[derive(Debug, Default)]
struct WaitCounters {
    writes: AtomicU64,
    lock_nanos: AtomicU64,
    stalled_writes: AtomicU64,
    stall_nanos: AtomicU64,
    durable_nanos: AtomicU64,
}

fn nanos_since(t: Instant) -> u64 {
    u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Whether a write looks its rows' keys ([`WritePoint::key`]) up in the engine's cache of series keys
/// before the catalog ([`Engine::write_with`]). Keys new to the cache are added to it either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyCache {
    Probe,
    /// Straight to the catalog: the caller asked the cache ([`KeyProbe::get`]) for these keys just
    /// before, and those it knew are [`WritePoint::known`], or it found that the cache rarely knows its
    /// keys. Every row a new series (TSBS's 10 M hosts), each probe was a cache miss at a random place
    /// of the table for nothing, two per row (4 % of the server's CPU); the insert's own probe still
    /// takes one, so the write path's CPU fell by about 2 % (five alternating loads,
    /// `bench/results/2026-11-29-xeon-densepos/ab-s5-keyskip.txt`).
    Skip,
}

/// What the engine's cache of series keys named for a key text, from [`KeyProbe::get`]: for
/// [`WritePoint::known`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownKey {
    db: DbId,
    hash: series_keys::KeyHash,
    table: TableId,
    series: SeriesId,
}

/// Looks series keys up in the engine's cache of them, for one database ([`Engine::key_probe`]).
///
/// Why: a row whose series the cache knows is written by its key alone, so a line-protocol parser
/// can skip its tags ([`WritePoint::known`]); splitting and checking a TSBS line's ten tags was half
/// of its parse. Each lookup takes the cache's lock on its own, so a long parse does not hold it.
pub struct KeyProbe<'e> {
    inner: &'e Inner,
    db: DbId,
    /// Where the cache held the key last found: the next key is tried after it first
    /// (`series_keys.rs`: devices reporting in turn).
    prev: std::cell::Cell<Option<u32>>,
}

impl KeyProbe<'_> {
    /// What the cache holds for `key` now: the series it named when it was written.
    pub fn get(&self, key: &str) -> Option<KnownKey> {
        let keys = self.inner.series_keys.read();
        let f = keys.find_near(self.prev.get(), self.db, key).ok()?;
        self.prev.set(Some(f.at));
        Some(KnownKey { db: self.db, hash: f.hash, table: f.table, series: f.series })
    }
}

/// What happened to a write: rows applied, and the lines rejected with why.
#[derive(Debug, Default)]
pub struct WriteOutcome {
    pub rows_written: usize,
    pub rejected: Vec<(usize, Error)>,
}

/// A frozen memtable waiting to be flushed.
#[derive(Debug)]
pub struct Frozen {
    pub memtable: MemGen,
    /// The generation's catalog entries, one vector per write that made any (see `MemState`).
    entries: Vec<Vec<CatalogEntry>>,
    /// First WAL sequence number not covered by this memtable.
    wal_end: u64,
    pub generation: u64,
}

/// [`Inner::prelookup`] of a request's points, for database `db`: per point, its key's hash (`None`
/// without a key) and the series it named then (`None` where neither the cache of series keys nor the
/// catalog had it, or the catalog was not asked).
struct Prelookup<'a> {
    db: DbId,
    rows: Vec<(Option<series_keys::KeyHash>, Option<(TableId, SeriesId)>)>,
    /// The rows the catalog had every name of but not the series (ascending), with what their lookup
    /// resolved ([`Lookup::NewSeries`]): the resolve checks only what may have changed since
    /// ([`Resolver::lookup_again`]) instead of looking them up again under `write_lock`.
    new: Vec<(usize, NewSeries<'a>)>,
    /// Keys whose series the catalog had and the cache of series keys did not (it was not asked, or it
    /// lost them), with their hashes and series: for the cache ([`NewKeys`]), so that a key the cache
    /// lost (it started again, or the server did) is known again after one write, not only a new
    /// series' key.
    found: Vec<KeyEntry<'a>>,
    /// Rows the cache answered (their [`WritePoint::known`], or found there).
    cache_hits: usize,
}

#[derive(Default)]
struct MemState {
    active: MemGen,
    /// Catalog entries created by writes in `active`, persisted to catalog.log when it is flushed: each
    /// write's vector kept whole, not copied into one that doubles as it grows (a million new series'
    /// entries per memtable at TSBS's 10 M hosts: 2.7 % of the server's CPU, with the page faults).
    active_entries: Vec<Vec<CatalogEntry>>,
    frozen: VecDeque<Arc<Frozen>>,
}

type SegmentSet = HashMap<(DbId, TableId), Vec<Arc<Segment>>>;
type TombstoneSet = HashMap<(DbId, TableId), Vec<Arc<Tombstone>>>;

struct Inner {
    config: EngineConfig,
    /// One per data directory, held (flock) while the engine is open.
    _locks: Vec<File>,
    placement: Placement,
    catalog: RwLock<Catalog>,
    /// `catalog.log` and what the engine knows about its entries (for the rewrite).
    catalog_log: Mutex<catalog_rewrite::LogState>,
    /// Something may have made `catalog.log` entries dead (a flush deleted WAL files, tombstones were
    /// retired, a drop): the flush thread checks whether a rewrite is due.
    catalog_log_check_due: AtomicBool,
    wal: Wal,
    write_lock: Mutex<()>,
    /// The order of writes between `write_lock` and their WAL append and memtable apply.
    turns: turns::Turns,
    /// What writes waited for ([`Engine::write_waits`]).
    waits: WaitCounters,
    /// Series keys as clients wrote them → their series: read before `write_lock` (a write's lookups,
    /// [`Inner::prelookup`]), written after it (the keys a write's resolve found, `Engine::write_with`).
    series_keys: RwLock<series_keys::SeriesKeys>,
    /// Rows whose series the cache of series keys answered, all writes together (their
    /// [`WritePoint::known`] and their prelookup's finds there): how the cache knows it is of use
    /// (`series_keys.rs`, admission). Added to once per write, outside the cache's lock.
    key_cache_hits: AtomicU64,
    /// `series_keys`' hasher, for a write that hashes its keys without asking the cache
    /// ([`KeyCache::Skip`]): it takes no lock then, and waits for no other write's inserts.
    key_hasher: series_keys::KeyHasher,
    /// The database the last [`Inner::prelookup`] asked the catalog for, and its id then (a database
    /// dropped and made again since has another: the resolve drops a prelookup of the wrong id).
    prelookup_db: Mutex<Option<(Box<str>, DbId)>>,
    mem: RwLock<MemState>,
    /// Flushed memtables a reader still held when their flush ended, freed by the flush thread once none
    /// does ([`Inner::free_retired`]). Why: the last holder frees it, and that was a query's snapshot
    /// whenever a read overlapped the flush: the count that sees a load's last rows freed the frozen
    /// memtable it had frozen to read in place (3.9 M series after TSBS's 10 M hosts: about 1 s of the
    /// count's 2.7 s, in the query's answer time).
    retired: Mutex<Vec<Arc<Frozen>>>,
    segments: RwLock<SegmentSet>,
    next_generation: AtomicU64,
    /// Signals the flush thread (work or shutdown) and stalled writers (a flush finished).
    flush_mx: Mutex<()>,
    flush_cv: Condvar,
    shutdown: AtomicBool,
    poisoned: Mutex<Option<String>>,
    /// Live tombstones per table. Lock order: `mem` before `tombstones` (a delete changes the active
    /// memtable and publishes its tombstone under both, so a snapshot sees both or neither).
    tombstones: RwLock<TombstoneSet>,
    next_tombstone_id: AtomicU64,
    compaction: maintenance::CompactionState,
    last_retention_run: Mutex<Instant>,
    /// The compaction rate limit, shared by every compaction (`None`: unlimited).
    compaction_throttle: Option<Arc<TokenBucket>>,
    /// Tests: stop flushing (a stand-in for a disk slower than ingest).
    flush_paused: AtomicBool,
    /// Decoded footer groups of every open segment, bounded by `config.block_index_cache_bytes`.
    block_index_cache: Arc<BlockIndexCache>,
}

pub struct Engine {
    inner: Arc<Inner>,
    flusher: Option<JoinHandle<()>>,
    compactors: Vec<JoinHandle<()>>,
    warmer: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("data_dir", &self.inner.config.data_dir).finish_non_exhaustive()
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

impl Engine {
    /// Opens (creating if needed) the data directory and recovers: catalog log, segments, then the WAL.
    pub fn open(config: EngineConfig) -> Result<Engine> {
        let dir = config.data_dir.clone();
        let placement = Placement::new(std::iter::once(&dir).chain(&config.extra_data_dirs).cloned().collect());
        let mut locks = Vec::new();
        for root in placement.roots() {
            std::fs::create_dir_all(root).map_err(io(root))?;
            let lock_path = root.join("LOCK");
            let lock = File::create(&lock_path).map_err(io(&lock_path))?;
            lock.try_lock().map_err(|_| Error::Io {
                path: lock_path.clone(),
                source: std::io::Error::other("the data directory is in use by another Sundial process"),
            })?;
            locks.push(lock);
        }

        let mut catalog = Catalog::default();
        let mut counters = Counters::default();
        let mut tombstones = TombstoneSet::new();
        let catalog_log = CatalogLog::open_with(&dir.join("catalog.log"), |e| {
            catalog.apply(&e)?;
            match e {
                CatalogEntry::Counters(c) => counters = counters.max(c),
                CatalogEntry::Tombstone(t) => tombstones.entry((t.db, t.table)).or_default().push(Arc::new(t)),
                _ => {}
            }
            Ok(())
        })?;
        crate::codec::page_cache::set_capacity(config.decoded_pages_bytes);
        let block_index_cache = Arc::new(BlockIndexCache::new(config.block_index_cache_bytes));
        let segments = load_segments(placement.roots(), &catalog, &block_index_cache)?;
        let logged_tombstones: Vec<Tombstone> = tombstones.values().flatten().map(|t| (**t).clone()).collect();
        // Tombstone ids must never be reused: a segment skips tombstones up to its `tombstones_applied`.
        // The rewritten log may no longer hold the highest one, hence the segments and the counters.
        let max_tombstone_id = tombstones
            .values()
            .flatten()
            .map(|t| t.id)
            .chain(segments.values().flatten().map(|s| s.id.tombstones_applied))
            .chain(std::iter::once(counters.next_tombstone_id.saturating_sub(1)))
            .max()
            .unwrap_or(0);
        // Generations hidden by a tombstone must never be reused by a later flush.
        let max_gen = segments
            .values()
            .flatten()
            .map(|s| s.id.generation)
            .chain(tombstones.values().flatten().map(|t| t.generation))
            .chain(std::iter::once(counters.next_generation.saturating_sub(1)))
            .max()
            .unwrap_or(0);

        let mut mem = MemState::default();
        let mut replayed = 0u64;
        let next_seq = wal::replay(&dir.join("wal"), |seq, payload| {
            let mut b = WriteBatch::decode(payload).ok_or_else(|| Error::Corrupt {
                path: dir.join("wal"),
                offset: seq,
                what: format!("WAL record {seq} is checksummed but does not decode (written by a newer version?)"),
            })?;
            // The entries go to the generation as they are (applying rows does not read them).
            let entries = std::mem::take(&mut b.entries);
            for e in &entries {
                catalog.apply(e)?;
            }
            if !entries.is_empty() {
                mem.active_entries.push(entries);
            }
            mem.active.apply(&filter_replayed(&catalog, &tombstones, seq, b));
            replayed += 1;
            Ok(())
        })?;
        tracing::info!(records = replayed, rows = mem.active.rows, "WAL replayed");
        // The arenas grew by doubling during the replays; give back what they will not use.
        catalog.shrink_to_fit();
        catalog.set_series_per_database_max(config.series_per_database_max);
        // Sequence numbers must never go below a tombstone's `wal_seq`, or a replay would hide rows
        // written after the delete (the WAL restarts at 1 when it lost every file).
        let max_wal_seq = tombstones.values().flatten().map(|t| t.wal_seq).max().unwrap_or(0);
        let wal = Wal::open(&dir.join("wal"), next_seq.max(max_wal_seq).max(counters.next_wal_seq), config.wal_sync)?;
        // Every WAL record on disk is older than the drops and tombstones already in the log.
        let log_state = catalog_rewrite::LogState::new(catalog_log, &catalog, logged_tombstones, wal.next_seq());
        tombstones.retain(|(db, t), _| catalog.db_by_id(*db).is_some_and(|d| d.table_by_id(*t).is_some()));
        let compaction_threads = config.compaction_threads.min(limits::COMPACTIONS_CONCURRENT_MAX);
        let config_throttle =
            config.compaction_bytes_per_sec_max.map(|r| Arc::new(TokenBucket::new(r, config.compaction_throttle_clock.clone())));

        let series_keys = series_keys::SeriesKeys::new();
        let key_hasher = series_keys.hasher();
        let inner = Arc::new(Inner {
            config,
            _locks: locks,
            placement,
            catalog: RwLock::new(catalog),
            catalog_log: Mutex::new(log_state),
            catalog_log_check_due: AtomicBool::new(true),
            wal,
            write_lock: Mutex::new(()),
            turns: turns::Turns::default(),
            waits: WaitCounters::default(),
            series_keys: RwLock::new(series_keys),
            key_cache_hits: AtomicU64::new(0),
            key_hasher,
            prelookup_db: Mutex::new(None),
            mem: RwLock::new(mem),
            retired: Mutex::new(Vec::new()),
            segments: RwLock::new(segments),
            next_generation: AtomicU64::new(max_gen + 1),
            flush_mx: Mutex::new(()),
            flush_cv: Condvar::new(),
            shutdown: AtomicBool::new(false),
            poisoned: Mutex::new(None),
            tombstones: RwLock::new(tombstones),
            next_tombstone_id: AtomicU64::new(max_tombstone_id + 1),
            compaction: maintenance::CompactionState::default(),
            last_retention_run: Mutex::new(Instant::now()),
            compaction_throttle: config_throttle,
            flush_paused: AtomicBool::new(false),
            block_index_cache,
        });
        // Retention first, so that nothing expired is compacted or served.
        inner.enforce_retention()?;
        inner.retire_tombstones();
        // Each start appends the replayed WAL entries again and may find many tombstones retired: the
        // place where a log full of dead records is most likely, and no writer waits yet.
        inner.maybe_rewrite_catalog_log(true);
        let worker = inner.clone();
        let flusher = std::thread::Builder::new()
            .name("sundial-flush".into())
            .spawn(move || worker.flush_loop())
            .map_err(io(&dir))?;
        let mut compactors = Vec::new();
        for i in 0..compaction_threads {
            let worker = inner.clone();
            let t = std::thread::Builder::new()
                .name(format!("sundial-compact-{i}"))
                .spawn(move || worker.compaction_loop())
                .map_err(io(&dir))?;
            compactors.push(t);
        }
        let warmer = if inner.config.warm_block_index && inner.segments.read().values().any(|v| !v.is_empty()) {
            let worker = inner.clone();
            Some(std::thread::Builder::new().name("sundial-warm".into()).spawn(move || worker.warm_block_index()).map_err(io(&dir))?)
        } else {
            None
        };
        Ok(Engine { inner, flusher: Some(flusher), compactors, warmer })
    }

    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    /// Shared access to the catalog (schemas, series, tag index). Hold it briefly.
    pub fn catalog(&self) -> RwLockReadGuard<'_, Catalog> {
        self.inner.catalog.read()
    }

    pub fn create_database(&self, name: &str, retention_ns: i64, if_not_exists: bool) -> Result<()> {
        validate_name(name)?;
        let _w = self.inner.lock_writes();
        let mut cat = self.inner.catalog.write();
        if cat.db(name).is_some() {
            return if if_not_exists { Ok(()) } else { Err(Error::DatabaseExists { name: name.to_string() }) };
        }
        if cat.dbs().len() >= limits::DATABASES_MAX {
            return Err(Error::LimitExceeded {
                what: "databases",
                actual: cat.dbs().len() as u64 + 1,
                limit: limits::DATABASES_MAX as u64,
                fix: "drop unused databases",
            });
        }
        let e = CatalogEntry::CreateDb { db: cat.next_db_id(), name: name.to_string(), retention_ns };
        self.inner.catalog_log.lock().log.append(std::slice::from_ref(&e))?;
        cat.apply(&e)
    }

    /// Drops a database and deletes its files. Unknown names are an error unless `if_exists`.
    pub fn drop_database(&self, name: &str, if_exists: bool) -> Result<()> {
        let _w = self.inner.lock_writes();
        let mut cat = self.inner.catalog.write();
        let Some(db) = cat.db(name).map(|d| d.id) else {
            return if if_exists { Ok(()) } else { Err(Error::DatabaseNotFound { name: name.to_string() }) };
        };
        let e = CatalogEntry::DropDb { db };
        self.inner.catalog_log.lock().log.append(std::slice::from_ref(&e))?;
        cat.apply(&e)?;
        drop(cat);
        self.inner.segments.write().retain(|(d, _), _| *d != db);
        self.inner.tombstones.write().retain(|(d, _), _| *d != db);
        self.inner.catalog_log_check_due.store(true, Ordering::SeqCst);
        for root in self.inner.placement.roots() {
            remove_dir_if_exists(&root.join(format!("db{db}")))?;
        }
        Ok(())
    }

    /// Drops a table (measurement) of a database and deletes its segment files.
    pub fn drop_table(&self, db_name: &str, table: &str) -> Result<()> {
        let _w = self.inner.lock_writes();
        let mut cat = self.inner.catalog.write();
        let db = cat.db(db_name).ok_or_else(|| Error::DatabaseNotFound { name: db_name.to_string() })?;
        let Some(t) = db.table(table).map(|t| t.id) else { return Ok(()) };
        let e = CatalogEntry::DropTable { db: db.id, table: t };
        let db = db.id;
        {
            let mut log = self.inner.catalog_log.lock();
            log.log.append(std::slice::from_ref(&e))?;
            // WAL records before this sequence number may create the table again at replay.
            log.drop_seqs.insert((db, t), self.inner.wal.next_seq());
        }
        cat.apply(&e)?;
        drop(cat);
        self.inner.catalog_log_check_due.store(true, Ordering::SeqCst);
        self.inner.tombstones.write().remove(&(db, t));
        let removed = self.inner.segments.write().remove(&(db, t)).unwrap_or_default();
        for s in removed {
            std::fs::remove_file(&s.path).map_err(io(&s.path))?;
        }
        Ok(())
    }

    /// A [`KeyProbe`] of database `db`, or `None` if there is no such database.
    pub fn key_probe(&self, db: &str) -> Option<KeyProbe<'_>> {
        let db = self.inner.catalog.read().db(db)?.id;
        Some(KeyProbe { inner: &self.inner, db, prev: Default::default() })
    }

    /// Writes rows to database `db`. Lines that conflict with the schema are rejected one by one; the
    /// others are applied and durable (under the sync policy) when this returns.
    pub fn write(&self, db: &str, points: &[WritePoint<'_>]) -> Result<WriteOutcome> {
        self.write_with(db, points, KeyCache::Probe)
    }

    /// [`Engine::write`], the rows' keys looked up in the cache of series keys first or not as `cache`
    /// says.
    pub fn write_with(&self, db: &str, points: &[WritePoint<'_>], cache: KeyCache) -> Result<WriteOutcome> {
        self.inner.check_poisoned()?;
        let pre = self.inner.prelookup(db, points, cache);
        if let Some(n) = pre.as_ref().map(|c| c.cache_hits).filter(|n| *n > 0) {
            self.inner.key_cache_hits.fetch_add(n as u64, Ordering::Relaxed);
        }
        let waits = &self.inner.waits;
        let t = Instant::now();
        let w = self.inner.write_lock.lock();
        waits.lock_nanos.fetch_add(nanos_since(t), Ordering::Relaxed);
        self.inner.stall_if_behind()?;
        let (batch, rejected, new_keys) = self.inner.resolve(db, points, pre)?;
        if batch.rows.is_empty() && batch.entries.is_empty() {
            return Ok(WriteOutcome { rows_written: 0, rejected });
        }
        let ticket = self.inner.turns.ticket(&w);
        drop(w);
        // The keys of the series the resolve found through the catalog go to the cache only now, beside
        // the next write's resolve: under `write_lock` they made 10,000 new series' request hold it a
        // tenth longer, and the resolve is the one part of a write that two cannot do at once. An entry
        // may name a table dropped by now: the cache's users check its table (`series_keys.rs`).
        insert_keys(&self.inner.series_keys, new_keys, self.inner.key_cache_hits.load(Ordering::Relaxed));
        let mut payload = Vec::with_capacity(batch.encoded_len_hint());
        batch.encode(&mut payload);
        let t = Instant::now();
        let turn = ticket.wait();
        waits.lock_nanos.fetch_add(nanos_since(t), Ordering::Relaxed);
        let seq = self.inner.wal.append(&payload).inspect_err(|e| self.inner.poison(e))?;
        let rows_written = batch.rows.len();
        let full = {
            let mut mem = self.inner.mem.write();
            mem.active.apply(&batch);
            if !batch.entries.is_empty() {
                mem.active_entries.push(batch.entries);
            }
            mem.active.full(self.inner.config.memtable_bytes_max)
        };
        if full {
            self.inner.freeze(Quiet::Turn(&turn))?;
        }
        drop(turn);
        let t = Instant::now();
        self.inner.wal.wait(seq).inspect_err(|e| self.inner.poison(e))?;
        waits.durable_nanos.fetch_add(nanos_since(t), Ordering::Relaxed);
        waits.writes.fetch_add(1, Ordering::Relaxed);
        Ok(WriteOutcome { rows_written, rejected })
    }

    /// What writes have waited for since the engine opened: a write-heavy load that leaves the cores
    /// idle is waiting on one of these.
    pub fn write_waits(&self) -> WriteWaits {
        let w = &self.inner.waits;
        let secs = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 / 1e9;
        WriteWaits {
            writes: w.writes.load(Ordering::Relaxed),
            lock_secs: secs(&w.lock_nanos),
            stalled_writes: w.stalled_writes.load(Ordering::Relaxed),
            stall_secs: secs(&w.stall_nanos),
            durable_secs: secs(&w.durable_nanos),
        }
    }

    /// Flushes everything written so far into segment files and waits for it.
    pub fn flush(&self) -> Result<()> {
        {
            let w = self.inner.lock_writes();
            self.inner.freeze(Quiet::Lock(&w))?;
        }
        self.inner.flush_pending()
    }

    /// Prepares a read of `series` series of a table that will come as several smaller snapshots (a
    /// statement read in parts): the active memtable is frozen for it when [`Engine::snapshot`] would
    /// freeze it for a snapshot of them all (see [`EngineConfig::freeze_for_read_series_min`]), so that
    /// no part copies its series' rows out of it.
    pub fn prepare_read(&self, db: DbId, table: TableId, series: usize) {
        self.inner.freeze_for_read(db, table, series);
    }

    /// A consistent view of one table for reading: the segments overlapping `[ts_min, ts_max]` and the
    /// memtables, with the active memtable's rows for `series` copied out.
    ///
    /// Rows older than the database's retention (`now − retention_ns`) are never returned, wherever they
    /// are; rows hidden by a delete neither.
    pub fn snapshot(&self, db: DbId, table: TableId, series: &[SeriesId], ts_min: i64, ts_max: i64, cols: &[(ColId, FieldType)]) -> TableSnapshot {
        self.snapshot_rows(db, table, series, ts_min, ts_max, cols, usize::MAX)
    }

    /// [`Engine::snapshot`], copying at most the last `tail` rows of each active series buffer (all of
    /// them for `usize::MAX`; [`TailSnapshot`] needs only its tail).
    #[allow(clippy::too_many_arguments)]
    fn snapshot_rows(
        &self,
        db: DbId,
        table: TableId,
        series: &[SeriesId],
        ts_min: i64,
        ts_max: i64,
        cols: &[(ColId, FieldType)],
        tail: usize,
    ) -> TableSnapshot {
        let ts_min = ts_min.max(self.inner.retention_cutoff(db));
        self.inner.freeze_for_read(db, table, series.len());
        self.inner.sort_active(db, table, series);
        let mem = self.inner.mem.read();
        let tombstones = self.inner.table_tombstones(db, table, ts_min, ts_max);
        let segments = self.segments_overlapping(db, table, ts_min, ts_max);
        let frozen: Vec<Arc<Frozen>> = mem.frozen.iter().cloned().collect();
        let mut active = HashMap::new();
        if let Some(t) = mem.active.table(db, table) {
            let mut bufs = t.series.cursor();
            for s in series {
                if let Some(buf) = bufs.get(*s) {
                    let r = buf.read_tail(*s, ts_min, ts_max, cols, tail);
                    if !r.is_empty() {
                        active.insert(*s, r);
                    }
                }
            }
        }
        TableSnapshot { db, table, ts_min, ts_max, cols: cols.to_vec(), segments, frozen, active, tombstones }
    }

    /// A time no later than the earliest row of any of `series` in `[ts_min, ts_max]`, from block
    /// metadata and memtable bounds, decoding and copying nothing; `None` when no source has rows
    /// there (`series` ascending). Only a bound: rows a delete hides, or whose columns are all null,
    /// count too. For reads that want only the first rows (InfluxQL's `GROUP BY time(...) LIMIT n`
    /// without a lower time bound): read up to a bound derived from it, then check the answer starts
    /// where it said.
    pub fn earliest_bound(&self, db: DbId, table: TableId, series: &[SeriesId], ts_min: i64, ts_max: i64) -> Result<Option<i64>> {
        let ts_min = ts_min.max(self.inner.retention_cutoff(db));
        let mut best: Option<i64> = None;
        let mut see = |lo: i64, hi: i64| {
            if hi >= ts_min && lo <= ts_max {
                let t = lo.max(ts_min);
                best = Some(best.map_or(t, |b| b.min(t)));
            }
        };
        let mem = self.inner.mem.read();
        let segments = self.segments_overlapping(db, table, ts_min, ts_max);
        let mems = mem.frozen.iter().map(|f| &f.memtable).chain([&mem.active]).filter_map(|m| m.table(db, table));
        for t in mems {
            let mut bufs = t.series.cursor();
            for s in series {
                if let Some((lo, hi)) = bufs.get(*s).and_then(|b| b.ts_range()) {
                    see(lo, hi);
                }
            }
        }
        drop(mem);
        for seg in &segments {
            let mut walker = seg.walker();
            for s in series {
                for b in walker.series_blocks(*s)?.iter() {
                    see(b.ts_min, b.ts_max);
                }
            }
        }
        Ok(best)
    }

    /// The table's segments holding times in `[ts_min, ts_max]`, oldest first.
    fn segments_overlapping(&self, db: DbId, table: TableId, ts_min: i64, ts_max: i64) -> Vec<Arc<Segment>> {
        self.inner
            .segments
            .read()
            .get(&(db, table))
            .map(|v| v.iter().filter(|s| s.ts_max >= ts_min && s.ts_min <= ts_max).cloned().collect())
            .unwrap_or_default()
    }

    /// Tests: stops (or resumes) flushing, as if the disk could not keep up with ingest.
    #[cfg(test)]
    pub(crate) fn pause_flushes(&self, paused: bool) {
        self.inner.flush_paused.store(paused, Ordering::SeqCst);
        let _g = self.inner.flush_mx.lock();
        self.inner.flush_cv.notify_all();
    }

    /// Bytes of segment files currently live, and the number of files.
    pub fn disk_usage(&self) -> (u64, usize) {
        let segs = self.inner.segments.read();
        let all = segs.values().flatten();
        (all.clone().map(|s| s.file_bytes).sum(), all.count())
    }

    /// The block-index cache's size and counters (decoded segment footer groups, see
    /// [`crate::block_cache`]).
    pub fn block_index_cache_stats(&self) -> BlockIndexCacheStats {
        self.inner.block_index_cache.stats()
    }

    /// Rows and bytes in memtables not yet flushed.
    pub fn memtable_usage(&self) -> (u64, usize) {
        let mem = self.inner.mem.read();
        let rows = mem.active.rows + mem.frozen.iter().map(|f| f.memtable.rows).sum::<u64>();
        let bytes = mem.active.bytes + mem.frozen.iter().map(|f| f.memtable.bytes).sum::<usize>();
        (rows, bytes)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.inner.shutdown.store(true, Ordering::SeqCst);
        {
            let _g = self.inner.flush_mx.lock();
            self.inner.flush_cv.notify_all();
        }
        self.inner.compaction.wake_all();
        if let Some(t) = self.flusher.take() {
            let _ = t.join();
        }
        for t in self.compactors.drain(..) {
            let _ = t.join();
        }
        if let Some(t) = self.warmer.take() {
            let _ = t.join();
        }
    }
}

fn remove_dir_if_exists(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(dir, e)),
        _ => Ok(()),
    }
}

/// Whether two rows name the same table, tags (in the same order) and fields with the same types: then
/// their names resolve to the same columns.
fn same_names(a: &WritePoint<'_>, b: &WritePoint<'_>) -> bool {
    same_str(a.table, b.table)
        && a.tags.len() == b.tags.len()
        && a.tags.iter().zip(b.tags.iter()).all(|((x, _), (y, _))| same_str(x, y))
        && same_fields(&a.fields, &b.fields)
}

/// `Resolver::lookup` of `points[i]` in `d`: with `shape` when it was made from an earlier row with the
/// same names ([`same_names`]), else through [`Resolver::shape`], whose answer then becomes `shape` (a
/// request's rows usually share their names, so they are shaped once). `field_types` is left holding the
/// row's field names and types, which `Resolver::create` takes.
fn lookup_row<'a>(
    d: &DbCatalog,
    points: &[WritePoint<'a>],
    i: usize,
    field_types: &mut Vec<(&'a str, FieldType)>,
    shape: &mut Option<(usize, RowShape)>,
) -> Result<Lookup<'a>> {
    let p = &points[i];
    field_types_of(p, field_types);
    if let Some((j, s)) = shape.as_ref().filter(|(j, _)| same_names(&points[*j], p)) {
        debug_assert!(*j < i);
        return Ok(Resolver::lookup_shaped(d, s, &p.tags));
    }
    let s = Resolver::shape(d, p.table, &p.tags, field_types)?;
    *shape = s.map(|s| (i, s));
    Ok(shape.as_ref().map_or(Lookup::Missing, |(_, s)| Resolver::lookup_shaped(d, s, &p.tags)))
}

/// A key for the cache of series keys: its hash, its text, and the series it names.
type KeyEntry<'a> = (series_keys::KeyHash, &'a str, TableId, SeriesId);

/// Keys of database `db` a write resolved through the catalog (new series', and those the cache had
/// lost), with their hashes and what they name, for the cache of series keys.
struct NewKeys<'p> {
    db: DbId,
    keys: Vec<KeyEntry<'p>>,
}

/// Adds `new` to the cache of series keys under one write lock, telling it first how many rows it has
/// answered so far (`hits`, [`Inner::key_cache_hits`]).
fn insert_keys(keys: &RwLock<series_keys::SeriesKeys>, new: NewKeys<'_>, hits: u64) {
    if new.keys.is_empty() {
        return;
    }
    let mut k = keys.write();
    k.note_hits(hits);
    for (h, key, table, series) in new.keys {
        k.insert(h, new.db, key, table, series);
    }
}

/// `p`'s field names and types, in its order, into `out` (cleared first).
fn field_types_of<'a>(p: &WritePoint<'a>, out: &mut Vec<(&'a str, FieldType)>) {
    out.clear();
    out.extend(p.fields.iter().map(|(k, v)| (*k, v.field_type())));
}

/// Checks that every row whose tags were left out ([`WritePoint::known`]) can be written without
/// them: its key looked up in database `db` (`d`), its table still the one named so, each field a
/// column of its type. Else [`Error::TagsNeeded`], before the write changes anything. Rows with the
/// table and field names of the row checked before them are not checked again.
fn check_known(d: &DbCatalog, db: DbId, points: &[WritePoint<'_>]) -> Result<()> {
    let mut field_types: Vec<(&str, FieldType)> = Vec::new();
    let mut checked: Option<&WritePoint<'_>> = None;
    for p in points {
        let Some(k) = p.known else { continue };
        let as_checked = checked.is_some_and(|c| {
            c.known.is_some_and(|ck| ck.db == k.db && ck.table == k.table) && same_fields(&c.fields, &p.fields)
        });
        // A row without a key is checked, and refused, whatever came before it.
        if as_checked && p.key.is_some() {
            continue;
        }
        field_types_of(p, &mut field_types);
        // The shape is of the live table named `p.table`: the key's table is that one, alive, if the ids match.
        let fits = k.db == db
            && p.key.is_some()
            && matches!(Resolver::shape(d, p.table, &[], &field_types), Ok(Some(s)) if s.table == k.table);
        if !fits {
            return Err(Error::TagsNeeded { line: p.line });
        }
        checked = Some(p);
    }
    Ok(())
}

/// Whether two rows' fields have the same names and types, in the same order.
fn same_fields(a: &[(&str, Value)], b: &[(&str, Value)]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|((x, u), (y, v))| same_str(x, y) && u.field_type() == v.field_type())
}

/// `x == y`, first by address: the line-protocol parser hands out a name equal to the previous line's
/// as that line's very text, so a request's rows mostly share their names' addresses, and comparing
/// ten field names' bytes per row was a fifth of the write's own time (TSBS at 100 hosts).
#[inline]
fn same_str(x: &str, y: &str) -> bool {
    std::ptr::eq(x, y) || x == y
}

/// Appends a row of `fields`' values to `batch`, borrowed, under the column ids of `run` (one per field,
/// in order; a row's values past the run's length, which a resolver giving fewer columns than fields
/// would leave, are not written, as a zip of the two did).
fn push_borrowed<'a>(batch: &mut WriteBatch<'a>, table: TableId, series: SeriesId, ts: i64, run: ColRun, fields: &'a [(&'a str, Value)]) {
    let n = run.len().min(fields.len());
    batch.push_row_of(table, series, ts, run.prefix(n), &fields[..n]);
}

/// Drops, from WAL record `seq`, rows of tables that no longer exist (dropped after the record was
/// written) and rows hidden by a tombstone written after the record (`seq < wal_seq`).
fn filter_replayed(cat: &Catalog, tombstones: &TombstoneSet, seq: u64, mut b: WriteBatch<'static>) -> WriteBatch<'static> {
    let db = b.db;
    let live = |t: TableId| cat.db_by_id(db).is_some_and(|d| d.table_by_id(t).is_some());
    let hidden = |t: TableId, s: SeriesId, ts: i64| {
        tombstones.get(&(db, t)).is_some_and(|v| v.iter().any(|x| seq < x.wal_seq && x.hides_row(s, ts)))
    };
    // A row keeps its values where they are: dropping others moves none.
    b.rows.retain(|r| live(r.table) && !hidden(r.table, r.series, r.ts));
    b
}

/// Opens every segment file of live tables; deletes leftovers (temp files, dropped tables); quarantines
/// files that fail to open so the server can still start (the error is logged loudly).
fn load_segments(roots: &[PathBuf], cat: &Catalog, cache: &Arc<BlockIndexCache>) -> Result<SegmentSet> {
    let mut set: SegmentSet = HashMap::new();
    for dir in roots {
        load_root(dir, cat, cache, &mut set)?;
    }
    for v in set.values_mut() {
        remove_superseded(v)?;
        v.sort_by_key(|s| s.id.generation);
    }
    Ok(set)
}

fn load_root(dir: &Path, cat: &Catalog, cache: &Arc<BlockIndexCache>, set: &mut SegmentSet) -> Result<()> {
    for db_entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let db_path = db_entry.map_err(io(dir))?.path();
        let Some(db_id) = dir_id(&db_path, "db") else { continue };
        if cat.db_by_id(db_id as DbId).is_none() {
            tracing::info!(path = %db_path.display(), "removing files of a dropped database");
            remove_dir_if_exists(&db_path)?;
            continue;
        }
        for p_entry in std::fs::read_dir(&db_path).map_err(io(&db_path))? {
            let p_path = p_entry.map_err(io(&db_path))?.path();
            if dir_id(&p_path, "p").is_none() {
                continue;
            }
            for f in std::fs::read_dir(&p_path).map_err(io(&p_path))? {
                let path = f.map_err(io(&p_path))?.path();
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if name.ends_with(".tmp") {
                    std::fs::remove_file(&path).map_err(io(&path))?;
                    continue;
                }
                if !name.ends_with(".seg") {
                    continue;
                }
                match Segment::open_with_cache(&path, cache) {
                    Ok(s) => {
                        let live = cat.db_by_id(s.id.db).is_some_and(|d| d.table_by_id(s.id.table).is_some());
                        if live {
                            set.entry((s.id.db, s.id.table)).or_default().push(Arc::new(s));
                        } else {
                            std::fs::remove_file(&path).map_err(io(&path))?;
                        }
                    }
                    // A newer format is not damage: quarantining it would hide data after a downgrade.
                    Err(e @ Error::UnsupportedVersion { .. }) => return Err(e),
                    Err(e) => {
                        let q = path.with_extension("seg.corrupt");
                        tracing::error!(error = %e, quarantined = %q.display(), "segment file failed to open; its rows are NOT served");
                        std::fs::rename(&path, &q).map_err(io(&path))?;
                    }
                }
            }
            // Partitions emptied by retention or compaction: fails (harmlessly) unless empty.
            let _ = std::fs::remove_dir(&p_path);
        }
    }
    Ok(())
}

/// Deletes the files of one table that a compaction output covers (a crash between the output's rename
/// and the inputs' deletion leaves both; see [`crate::compaction`]).
fn remove_superseded(v: &mut Vec<Arc<Segment>>) -> Result<()> {
    let covers = |a: &Segment, b: &Segment| {
        a.id.partition_start == b.id.partition_start
            && a.id.gen_min <= b.id.gen_min
            && b.id.generation <= a.id.generation
            && (a.id.gen_min, a.id.generation) != (b.id.gen_min, b.id.generation)
    };
    let same_range_newer = |a: &Segment, b: &Segment| {
        a.id.partition_start == b.id.partition_start
            && (a.id.gen_min, a.id.generation) == (b.id.gen_min, b.id.generation)
            && is_canonical_name(&a.path, &a.id)
            && !is_canonical_name(&b.path, &b.id)
    };
    let mut superseded = vec![false; v.len()];
    for (i, b) in v.iter().enumerate() {
        for a in v.iter() {
            if covers(a, b) || same_range_newer(a, b) {
                superseded[i] = true;
            } else if a.id.partition_start == b.id.partition_start
                && !std::ptr::eq(&**a, &**b)
                && a.id.gen_min <= b.id.generation
                && b.id.gen_min <= a.id.generation
                && !covers(b, a)
                && !same_range_newer(b, a)
            {
                tracing::error!(a = %a.path.display(), b = %b.path.display(), "segment files with partially overlapping generations (a bug); keeping both");
            }
        }
    }
    let mut gone = Vec::new();
    let mut i = 0;
    v.retain(|s| {
        i += 1;
        if superseded[i - 1] {
            gone.push(s.path.clone());
        }
        !superseded[i - 1]
    });
    for path in gone {
        tracing::info!(path = %path.display(), "removing a segment file superseded by a compaction output");
        std::fs::remove_file(&path).map_err(io(&path))?;
    }
    Ok(())
}

fn dir_id(path: &Path, prefix: &str) -> Option<i64> {
    path.is_dir().then_some(())?;
    path.file_name()?.to_str()?.strip_prefix(prefix)?.parse().ok()
}

/// Proof that no other write appends to the WAL or applies to the memtable while it lives: the caller's
/// own turn ([`turns::Turn`]), or `write_lock` taken through [`Inner::lock_writes`].
enum Quiet<'a> {
    Turn(#[allow(dead_code)] &'a turns::Turn<'a>),
    Lock(#[allow(dead_code)] &'a parking_lot::MutexGuard<'a, ()>),
}

impl Inner {
    /// Sorts the active memtable's unsorted staging areas (late rows) of `series` in place (see
    /// `MemGen::sort_staging`); the read lock answers the common case, where there is nothing to sort.
    fn sort_active(&self, db: DbId, table: TableId, series: &[SeriesId]) {
        if self.mem.read().active.has_unsorted_staging(db, table, series) {
            self.mem.write().active.sort_staging(db, table, series);
        }
    }

    /// Freezes the active memtable for a read of `wanted` series of table `(db, table)`, when both
    /// hold at least `freeze_for_read_series_min` series, `write_lock` is free (then the writes already
    /// in their turn are waited for, as every freeze does) and fewer than `frozen_max` memtables wait
    /// for flush: the snapshot then shares the memtable, and the scan reads
    /// each series into one reused buffer, where the snapshot copied every series' rows, a new
    /// vector per column each, for the whole read (a count right after a load of 1 M series spent
    /// 1.5 s there, against 0.17 s over the same rows flushed). Otherwise, or if the freeze fails,
    /// the rows are copied as before.
    fn freeze_for_read(&self, db: DbId, table: TableId, wanted: usize) {
        let min = self.config.freeze_for_read_series_min;
        if wanted < min {
            return;
        }
        {
            let mem = self.mem.read();
            let held = mem.active.table(db, table).map_or(0, |t| t.series.len());
            if held < min || mem.frozen.len() >= self.config.frozen_max {
                return;
            }
        }
        let Some(w) = self.try_lock_writes() else { return };
        if let Err(e) = self.freeze(Quiet::Lock(&w)) {
            tracing::warn!(error = %e, "freezing the memtable for a read failed; its rows are copied");
        }
    }

    /// Tombstones of a table overlapping `[ts_min, ts_max]`. Take them while holding `mem` (read), so
    /// that they agree with the active memtable (a delete changes both under `mem` written).
    fn table_tombstones(&self, db: DbId, table: TableId, ts_min: i64, ts_max: i64) -> Vec<Arc<Tombstone>> {
        self.tombstones
            .read()
            .get(&(db, table))
            .map(|v| v.iter().filter(|t| t.overlaps(ts_min, ts_max)).cloned().collect())
            .unwrap_or_default()
    }

    fn check_poisoned(&self) -> Result<()> {
        match &*self.poisoned.lock() {
            Some(why) => Err(Error::Poisoned(why.clone())),
            None => Ok(()),
        }
    }

    fn poison(&self, e: &Error) {
        self.poisoned.lock().get_or_insert_with(|| e.to_string());
    }

    /// The series each of `points` names, looked up before the write takes `write_lock`: in the cache
    /// of series keys, and where a keyed row misses it (or has no key), in the catalog. `None` when `db`
    /// does not exist.
    ///
    /// Why before: at 100 K hosts (TSBS scenario 3) a cache lookup is a cache miss or two (the slot, the
    /// key's text), 8 % of the server's CPU while loading; at 1 M hosts (scenario 4) the cache holds too
    /// few of the keys, and two rows in three were found through the catalog (a dictionary lookup per
    /// tag, the series' tag set): all of it serial under `write_lock`, with a core idle. Here they run
    /// beside the other request's resolve, and in a loop of lookups alone the processor overlaps the
    /// misses of several rows. [`Inner::resolve`] uses an answer as it used the cache's: a series lives
    /// as long as its table, and a row's series is taken from here only for a table the request resolved
    /// through the catalog under `write_lock`, with that row's columns.
    ///
    /// A row of a new series is what the catalog does not have yet: its lookup ([`Lookup::NewSeries`]) is
    /// kept, and the resolve checks again only what may have changed since ([`Resolver::lookup_again`]:
    /// the values it lacked, at 10 M hosts each row's host name). The locks are yielded every
    /// [`PRELOOKUP_BUMP_ROWS`] rows to a resolve waiting to add series.
    ///
    /// A row whose key is an earlier row's very text (the same address and length, as the line-protocol
    /// parser gives a line repeating an earlier line's key) takes that row's answer without hashing and
    /// comparing the key again: at 100 hosts nearly every row of a TSBS body, and a key is ~150 bytes.
    /// Keys at rising addresses (each line's own, in body order) are kept in `firsts`; only a key at an
    /// address not above the last one's is searched for there, so a body without repeats pays a push.
    fn prelookup<'a>(&self, db: &str, points: &[WritePoint<'a>], cache: KeyCache) -> Option<Prelookup<'a>> {
        // The catalog is asked only while no other write holds it to add series (its resolve's
        // stretches, [`RESOLVE_EXCLUSIVE_ROWS`]): its lock is taken with `try_read`, at the start and
        // again every [`PRELOOKUP_BUMP_ROWS`] rows, and once refused the rest of the rows are left to the
        // resolve. Waited for at the start only when the write asks the cache or the database's id is
        // not known from the write before. The cache's lock is not taken when the write skips the cache
        // (its hasher is a copy). Why: the resolve, under `write_lock`, is the one part of a write that
        // two cannot do at once, and this lookup moves what it can of it (a row's lookup, all of it for
        // a row whose series exists, most of it for a new one: [`Resolver::lookup_again`]) beside the
        // other write's resolve, without waiting for it (`bench/results/2026-11-30-xeon-unlocked/NOTES.md`).
        let (mut cat, db_id) = match (self.catalog.try_read(), cache) {
            (Some(c), _) => {
                let id = c.db(db)?.id;
                (Some(c), id)
            }
            (None, KeyCache::Skip) if let Some(id) = self.prelookup_db.lock().as_ref().filter(|(n, _)| **n == *db).map(|(_, id)| *id) => (None, id),
            (None, _) => {
                let c = self.catalog.read();
                let id = c.db(db)?.id;
                (Some(c), id)
            }
        };
        if cat.is_some() {
            let mut last = self.prelookup_db.lock();
            if last.as_ref().is_none_or(|(n, id)| **n != *db || *id != db_id) {
                *last = Some((db.into(), db_id));
            }
        }
        let mut keys = (cache == KeyCache::Probe).then(|| self.series_keys.read());
        let mut rows = Vec::with_capacity(points.len());
        let mut field_types: Vec<(&str, FieldType)> = Vec::new();
        let mut shape: Option<(usize, RowShape)> = None;
        let mut new = Vec::new();
        let mut firsts: Vec<(usize, usize)> = Vec::new();
        let (mut from_catalog, mut cache_hits) = (Vec::new(), 0);
        // Where the cache held the last key found (`series_keys.rs`: devices reporting in turn).
        let mut prev: Option<u32> = None;
        for (i, p) in points.iter().enumerate() {
            if i > 0 && i % PRELOOKUP_BUMP_ROWS == 0 {
                if cat.take().is_some() {
                    cat = self.catalog.try_read();
                }
                keys.as_mut().map(RwLockReadGuard::bump);
            }
            if let Some(k) = p.known.filter(|k| k.db == db_id) {
                rows.push((Some(k.hash), Some((k.table, k.series))));
                cache_hits += 1;
                continue;
            }
            if let Some(key) = p.key {
                let at = key.as_ptr() as usize;
                if firsts.last().is_none_or(|(last, _)| at > *last) {
                    firsts.push((at, i));
                } else if let Ok(k) = firsts.binary_search_by_key(&at, |(a, _)| *a) {
                    let j = firsts[k].1;
                    if points[j].key.is_some_and(|first| first.len() == key.len()) {
                        rows.push(rows[j]);
                        continue;
                    }
                }
            }
            let found = p.key.map(|key| match &keys {
                Some(k) => k.find_near(prev, db_id, key),
                None => Err(self.key_hasher.hash(db_id, key)),
            });
            let (h, mut seen) = match found {
                None => (None, None),
                Some(Ok(f)) => {
                    prev = Some(f.at);
                    cache_hits += 1;
                    (Some(f.hash), Some((f.table, f.series)))
                }
                Some(Err(h)) => (Some(h), None),
            };
            if let (None, Some(c)) = (seen, &cat) {
                let Some(d) = c.db_by_id(db_id) else { break };
                // A row the catalog refuses (a type conflict) is the resolve's to report.
                match lookup_row(d, points, i, &mut field_types, &mut shape) {
                    Ok(Lookup::Found(r)) => {
                        seen = Some((r.table, r.series));
                        if let (Some(h), Some(key)) = (h, p.key) {
                            from_catalog.push((h, key, r.table, r.series));
                        }
                    }
                    Ok(Lookup::NewSeries(n)) => new.push((i, n)),
                    _ => {}
                }
            }
            rows.push((h, seen));
        }
        rows.resize(points.len(), (None, None));
        Some(Prelookup { db: db_id, rows, new, found: from_catalog, cache_hits })
    }

    /// Resolves names to ids, creating catalog entries as needed; returns the batch and rejected lines.
    /// `pre` is [`Inner::prelookup`] of the same points, or `None`.
    fn resolve<'p, 'a>(&self, db: &str, points: &'p [WritePoint<'a>], pre: Option<Prelookup<'a>>) -> Result<(WriteBatch<'p>, Vec<(usize, Error)>, NewKeys<'p>)> {
        let mut guard = ResolveGuard::new(self.catalog.upgradable_read());
        let (db_id, retention_ns) = {
            let d = guard.cat().db(db).ok_or_else(|| Error::DatabaseNotFound { name: db.to_string() })?;
            (d.id, d.retention_ns)
        };
        // Looked up for the database of that name then: one dropped and created again since has
        // another id, and its keys other hashes.
        let mut pre = pre.filter(|c| c.db == db_id);
        if let Some(c) = &pre {
            assert_eq!(c.rows.len(), points.len(), "a lookup per point");
        }
        let mut new_series = pre.as_mut().map(|c| std::mem::take(&mut c.new)).unwrap_or_default().into_iter().peekable();
        // Keys this request resolved through the catalog (new series', and those the cache had lost), and
        // where each is by its hash (a later row of the same series finds it here): for the cache, which
        // the write adds them to once it has let go of `write_lock` (see `Engine::write_with`). The
        // prelookup's finds are the first; a row among them needs no finding here (it has its series).
        let mut new_keys: Vec<KeyEntry<'_>> =
            pre.as_mut().map(|c| std::mem::take(&mut c.found)).unwrap_or_default();
        let pre = pre.as_ref();
        if points.iter().any(|p| p.known.is_some()) {
            let d = guard.cat().db_by_id(db_id).ok_or_else(|| Error::internal("database vanished under write lock"))?;
            check_known(d, db_id, points)?;
        }
        let mut new_key_at: crate::FastMap<series_keys::KeyHash, usize> = crate::FastMap::default();
        let new_key = |new_keys: &[KeyEntry<'_>], at: &crate::FastMap<series_keys::KeyHash, usize>, h, key: &str| {
            let (_, k, table, series) = new_keys[*at.get(&h)?];
            (k == key).then_some((table, series))
        };
        // Rows older than the retention would never be returned: refuse them per line, as InfluxDB does.
        let cutoff = if retention_ns > 0 { self.config.clock.now_ns().saturating_sub(retention_ns) } else { i64::MIN };
        // The rows' values stay in the points: the batch borrows them.
        let mut batch = WriteBatch::with_rows(db_id, points.len());
        let mut rejected = Vec::new();
        let mut field_types: Vec<(&str, FieldType)> = Vec::new();
        // A row's series is found without the catalog's per-name lookups when its key text is in the
        // engine's cache of series keys (rows from line protocol) or, for rows without one, when a row
        // of the same (table, tags) came earlier in this request; then a field set equal to the previous
        // row's (names and types; TSBS and most agents send the same fields every row) reuses its column
        // ids. Both only repeat answers the catalog gave for identical names, so a conflict still takes
        // the full path below.
        type SeriesKey<'a> = (&'a str, &'a [(&'a str, &'a str)]);
        // The previous resolved row's table, its columns' ids in the batch (shared by the rows after it
        // with the same fields) and its index.
        type FieldSet = (TableId, ColRun, usize);
        // Sized for up to 1,024 series once a row without a key comes: grown from empty, the map rehashed
        // ~10 times per 10,000-row request of new series; not sized to the request, since a request of
        // 100 series' rows would then allocate for 10,000.
        let mut known: crate::FastMap<SeriesKey<'_>, (TableId, SeriesId)> = crate::FastMap::default();
        // Locked per use, not throughout: another request's prelookup reads it meanwhile.
        let keys = &self.series_keys;
        let mut last_fields: Option<FieldSet> = None;
        // The columns the names of row `.0` resolved to, reused for a later row with the same names
        // (`same_names`): the catalog's lock is held throughout and a write only adds to it.
        let mut shape: Option<(usize, RowShape)> = None;
        for (i, p) in points.iter().enumerate() {
            guard.row_done();
            if p.ts < cutoff {
                rejected.push((p.line, Error::BeyondRetention { db: db.to_string(), ts: p.ts, cutoff, retention_ns }));
                continue;
            }
            let (key, seen) = match (p.key, p.known, pre) {
                // Checked by `check_known` under this lock: its table is live, its fields have columns.
                (Some(key), Some(k), _) => (Some((key, k.hash)), Some((k.table, k.series))),
                (Some(key), None, Some(c)) => {
                    let (h, found) = c.rows[i];
                    let h = h.expect("a keyed point's hash");
                    let found = found.or_else(|| if new_key_at.is_empty() { None } else { new_key(&new_keys, &new_key_at, h, key) });
                    (Some((key, h)), found)
                }
                (Some(key), None, None) => {
                    let k = keys.read();
                    let h = k.hash(db_id, key);
                    (Some((key, h)), k.get(h, db_id, key))
                }
                // `check_known` refused a `known` without a key.
                (None, _, c) => (None, c.and_then(|c| c.rows[i].1).or_else(|| known.get(&(p.table, &p.tags[..])).copied())),
            };
            // A cached key, or a prelookup, names a table that may have been dropped since
            // (`series_keys.rs`); the field set is reused only from a row this request resolved through
            // the catalog, under the lock it still holds, and table ids are never reused: a table equal
            // to that row's is live.
            if let (Some((table, series)), Some((t, run, prev))) = (seen, last_fields) {
                if t == table && same_fields(&points[prev].fields, &p.fields) {
                    push_borrowed(&mut batch, table, series, p.ts, run, &p.fields);
                    continue;
                }
            }
            let db_cat = guard.cat().db_by_id(db_id).ok_or_else(|| Error::internal("database vanished under write lock"))?;
            if let (Some(k), Some(_)) = (p.known, p.key) {
                // Without its tags: the series is the key's, the columns its table's (`check_known`).
                field_types_of(p, &mut field_types);
                let s = Resolver::shape(db_cat, p.table, &[], &field_types)?
                    .ok_or_else(|| Error::internal("a checked row's columns vanished"))?;
                let r = s.row(k.series);
                let run = batch.push_cols(r.fields.iter().map(|(c, _)| *c));
                push_borrowed(&mut batch, r.table, r.series, p.ts, run, &p.fields);
                last_fields = Some((r.table, run, i));
                continue;
            }
            while new_series.next_if(|(j, _)| *j < i).is_some() {}
            let again = new_series.next_if(|(j, _)| *j == i).and_then(|(_, n)| Resolver::lookup_again(db_cat, n));
            let found = match again {
                Some(l) => Ok(l),
                None => lookup_row(db_cat, points, i, &mut field_types, &mut shape),
            };
            let resolved = match found {
                Ok(Lookup::Found(r)) => Ok(r),
                Ok(found) => {
                    let w = guard.exclusive();
                    match found {
                        Lookup::NewSeries(new) => Resolver::create_series(w, db_id, new, &mut batch.entries),
                        _ => Resolver::create(w, db_id, p.table, &p.tags, &field_types, &mut batch.entries),
                    }
                }
                Err(e) => Err(e),
            };
            match resolved {
                Ok(r) => {
                    let run = batch.push_cols_or(last_fields.map(|(_, run, _)| run), r.fields.iter().map(|(c, _)| *c));
                    push_borrowed(&mut batch, r.table, r.series, p.ts, run, &p.fields);
                    match key {
                        // Its key named this very series (the cache, or the prelookup's finds): nothing new.
                        Some(_) if seen == Some((r.table, r.series)) => {}
                        Some((key, h)) => {
                            if new_key_at.is_empty() {
                                // Kept for the whole request now: grown from empty, a request of new
                                // series rehashed it every doubling up to 10,000 keys.
                                new_key_at.reserve(points.len());
                            }
                            new_key_at.insert(h, new_keys.len());
                            new_keys.push((h, key, r.table, r.series));
                        }
                        None => {
                            if known.is_empty() {
                                known.reserve(points.len().min(KNOWN_SERIES_PRESIZE));
                            }
                            known.insert((p.table, &p.tags[..]), (r.table, r.series));
                        }
                    }
                    last_fields = Some((r.table, run, i));
                }
                Err(e) if e.is_user_error() => rejected.push((p.line, e)),
                Err(e) => return Err(e),
            }
        }
        drop(guard);
        Ok((batch, rejected, NewKeys { db: db_id, keys: new_keys }))
    }

    /// Waits while too many memtables, or too many memtable bytes, are waiting for flush
    /// (backpressure); refuses after the timeout.
    fn stall_if_behind(&self) -> Result<()> {
        let start = Instant::now();
        let stalled = self.stall_loop(start);
        // An error comes only after waiting (the deadline passed, or the engine failed meanwhile).
        if !matches!(stalled, Ok(false)) {
            self.waits.stalled_writes.fetch_add(1, Ordering::Relaxed);
            self.waits.stall_nanos.fetch_add(nanos_since(start), Ordering::Relaxed);
        }
        stalled.map(|_| ())
    }

    /// [`Inner::stall_if_behind`]: `Ok(true)` when it had to wait.
    fn stall_loop(&self, start: Instant) -> Result<bool> {
        let deadline = start + self.config.write_stall_timeout;
        let mut waited = false;
        let reject_bytes = self.config.memory_bytes_reject.unwrap_or(self.config.memtable_bytes_max.saturating_mul(2));
        loop {
            let (frozen, bytes) = {
                let mem = self.mem.read();
                (mem.frozen.len(), mem.active.bytes + mem.frozen.iter().map(|f| f.memtable.bytes).sum::<usize>())
            };
            if frozen < self.config.frozen_max && bytes < reject_bytes {
                return Ok(waited);
            }
            waited = true;
            self.check_poisoned()?;
            let mut g = self.flush_mx.lock();
            if Instant::now() >= deadline {
                let reason = if bytes >= reject_bytes {
                    format!(
                        "memtables hold {bytes} bytes, at or over the {reject_bytes}-byte limit (memory_bytes_reject, default 2 × memtable_bytes_max), and the flush did not catch up within {:?}",
                        self.config.write_stall_timeout
                    )
                } else {
                    format!("{frozen} memtables are waiting for flush (frozen_max {}); the flush is behind", self.config.frozen_max)
                };
                return Err(Error::Overloaded { reason });
            }
            self.flush_cv.notify_all();
            self.flush_cv.wait_for(&mut g, Duration::from_millis(50));
        }
    }

    /// `write_lock`, once no write is between its ticket and the end of its turn (none can take one
    /// while the lock is held): what every change other than a write's takes.
    fn lock_writes(&self) -> parking_lot::MutexGuard<'_, ()> {
        let w = self.write_lock.lock();
        self.turns.drain(&w);
        w
    }

    /// [`Inner::lock_writes`] if `write_lock` is free now, else `None`.
    fn try_lock_writes(&self) -> Option<parking_lot::MutexGuard<'_, ()>> {
        let w = self.write_lock.try_lock()?;
        self.turns.drain(&w);
        Some(w)
    }

    /// Rotates the WAL and freezes the active memtable. Requires that no other write appends or
    /// applies meanwhile (proved by `_quiet`).
    fn freeze(&self, _quiet: Quiet<'_>) -> Result<()> {
        {
            let mem = self.mem.read();
            if mem.active.is_empty() && mem.active_entries.is_empty() {
                return Ok(());
            }
        }
        let wal_end = self.wal.rotate().inspect_err(|e| self.poison(e))?;
        let generation = self.next_generation.fetch_add(1, Ordering::SeqCst);
        {
            let mut mem = self.mem.write();
            let sizes = mem.active.series_counts();
            let memtable = std::mem::take(&mut mem.active);
            mem.active.sizes = sizes;
            let entries = std::mem::take(&mut mem.active_entries);
            mem.frozen.push_back(Arc::new(Frozen { memtable, entries, wal_end, generation }));
        }
        let _g = self.flush_mx.lock();
        self.flush_cv.notify_all();
        Ok(())
    }

    fn flush_loop(self: Arc<Self>) {
        while !self.shutdown.load(Ordering::SeqCst) {
            if let Err(e) = self.flush_pending().and_then(|()| self.flush_if_old()) {
                tracing::error!(error = %e, "flush failed; writes are refused until restart");
                self.poison(&e);
            }
            self.free_retired();
            if self.catalog_log_check_due.swap(false, Ordering::SeqCst) {
                self.maybe_rewrite_catalog_log(false);
            }
            if self.last_retention_run.lock().elapsed() >= self.config.retention_check_interval
                && let Err(e) = self.enforce_retention()
            {
                tracing::error!(error = %e, "retention run failed; retrying at the next interval");
            }
            let mut g = self.flush_mx.lock();
            if self.mem.read().frozen.is_empty() && !self.shutdown.load(Ordering::SeqCst) {
                self.flush_cv.wait_for(&mut g, Duration::from_millis(500));
            }
        }
    }

    /// Frees the flushed memtables in [`Inner::retired`] that no reader holds any more (on this thread,
    /// outside the list's lock).
    fn free_retired(&self) {
        let free: Vec<Arc<Frozen>> = {
            let mut retired = self.retired.lock();
            if retired.is_empty() {
                return;
            }
            let (free, held) = std::mem::take(&mut *retired).into_iter().partition(|f| Arc::strong_count(f) == 1);
            *retired = held;
            free
        };
        drop(free);
    }

    /// Decodes the open segments' block-index groups into the cache, newest partitions first, until it
    /// holds half its capacity (the rest is left to what queries read) or the engine stops. Why: after
    /// a restart every group is cold, and the first queries paid for reading and decoding footers; at
    /// 4,000 hosts TSBS's first 20 single-groupby-1-8-1 queries averaged 0.80 and 0.99 ms against 0.53
    /// and 0.59 ms once a count over every series had loaded the groups. Reads go on meanwhile; a group
    /// both decode is decoded twice, harmlessly. A segment replaced meanwhile (compaction) is still
    /// read from its `Arc`, and its groups forgotten when that is dropped.
    fn warm_block_index(&self) {
        let mut segments: Vec<Arc<Segment>> = self.segments.read().values().flatten().cloned().collect();
        segments.sort_by_key(|s| std::cmp::Reverse((s.id.partition_start, s.id.generation)));
        let started = Instant::now();
        let groups = self.warm_groups(&segments);
        tracing::info!(groups, ms = started.elapsed().as_millis() as u64, "block-index cache warmed");
    }

    /// Loads the block-index groups of `segments`, in order, into the cache until it holds half its
    /// capacity or the engine stops (after open, and for a compaction's output); the groups loaded.
    fn warm_groups(&self, segments: &[Arc<Segment>]) -> usize {
        let budget = self.block_index_cache.stats().capacity / 2;
        let mut groups = 0;
        for seg in segments {
            for g in 0..seg.n_groups() {
                if self.shutdown.load(Ordering::Relaxed) || self.block_index_cache.stats().bytes >= budget {
                    return groups;
                }
                if let Err(e) = seg.warm_group(g) {
                    tracing::warn!(error = %e, segment = %seg.path.display(), "warming the block-index cache stopped; reads decode groups as they need them");
                    return groups;
                }
                groups += 1;
            }
        }
        groups
    }

    fn flush_if_old(&self) -> Result<()> {
        let old = {
            let active = &self.mem.read().active;
            active.created.is_some_and(|c| c.elapsed() >= self.config.flush_interval)
                || active.last_write.is_some_and(|w| w.elapsed() >= self.config.flush_idle)
        };
        if old {
            let w = self.lock_writes();
            self.freeze(Quiet::Lock(&w))?;
        }
        Ok(())
    }

    /// Flushes every frozen memtable, oldest first. Only one flush runs at a time.
    fn flush_pending(&self) -> Result<()> {
        static FLUSHING: Mutex<()> = Mutex::new(());
        let _one = FLUSHING.lock();
        loop {
            self.check_poisoned()?;
            if self.flush_paused.load(Ordering::SeqCst) {
                return Ok(());
            }
            let Some(f) = self.mem.read().frozen.front().cloned() else { return Ok(()) };
            let start = Instant::now();
            let n = self.flush_one(&f)?;
            let popped = {
                let mut mem = self.mem.write();
                mem.frozen.front().is_some_and(|x| Arc::ptr_eq(x, &f)) && mem.frozen.pop_front().is_some()
            };
            self.wal.delete_before(f.wal_end)?;
            // Drops and tombstones only the deleted WAL files needed are dead in catalog.log now.
            self.catalog_log_check_due.store(true, Ordering::SeqCst);
            tracing::debug!(rows = f.memtable.rows, segments = n, ms = start.elapsed().as_millis() as u64, "flushed");
            {
                let _g = self.flush_mx.lock();
                self.flush_cv.notify_all();
            }
            // Freed here unless a reader still holds it; then by this thread once none does.
            if popped && Arc::strong_count(&f) > 1 {
                self.retired.lock().push(f);
            }
        }
    }

    /// Writes one frozen memtable to segment files and publishes them; returns the number of files.
    fn flush_one(&self, f: &Frozen) -> Result<usize> {
        self.catalog_log.lock().log.append(f.entries.iter().flatten())?;
        let mut published = Vec::new();
        let mut tables: Vec<_> = f.memtable.tables.iter().collect();
        tables.sort_by_key(|(k, _)| **k);
        for (&(db, table), mt) in tables {
            let Some(col_types) = self.table_field_types(db, table) else { continue };
            // Rows already past retention are not written (reads would never return them).
            let cutoff = self.retention_cutoff(db);
            // Sorted by a copy of each id: sorting by the id behind the map's reference read a random
            // slot of the map at every comparison (5 % of the server's CPU loading TSBS's 10 M hosts,
            // a million series per flush).
            let mut series: Vec<_> = mt.series.iter().map(|(s, b)| (*s, b)).collect();
            series.sort_unstable_by_key(|(s, _)| *s);
            let held = self.segments.read().get(&(db, table)).cloned().unwrap_or_default();
            let ids: Vec<SeriesId> = series.iter().map(|(s, _)| *s).collect();
            let mut w = PartitionedWriter::with_placement(&self.placement, db, table, self.config.partition_ns, f.generation)
                .expect_series(mt.series.len())
                .with_rewritten(held, ids);
            // One set of buffers for every series (see `SeriesBuf::read_into`).
            let (mut rows, mut cols, mut col_ids) = (SeriesRows::default(), Vec::new(), Vec::new());
            for (sid, buf) in series {
                buf.columns_into(&mut cols);
                col_ids.clear();
                col_ids.extend(cols.iter().map(|(c, _)| *c));
                debug_assert!(col_ids.iter().all(|c| col_types.contains_key(c)));
                // The in-order part merged with the staged late rows (a linear merge), from the cutoff on.
                buf.read_into(&mut rows, sid, cutoff, i64::MAX, &cols);
                w.add_series(&rows, &col_ids)?;
            }
            for path in w.finish()? {
                published.push(path);
            }
        }
        let mut dirs: Vec<PathBuf> = published.iter().filter_map(|p| p.parent().map(Path::to_path_buf)).collect();
        dirs.sort();
        dirs.dedup();
        let mut roots = Vec::new();
        for d in &dirs {
            sync_dir(d)?;
            if let Some(db_dir) = d.parent() {
                sync_dir(db_dir)?;
                roots.extend(db_dir.parent().map(Path::to_path_buf));
            }
        }
        roots.sort();
        roots.dedup();
        for r in &roots {
            sync_dir(r)?;
        }
        let opened =
            published.iter().map(|p| Segment::open_with_cache(p, &self.block_index_cache).map(Arc::new)).collect::<Result<Vec<_>>>()?;
        let n = opened.len();
        let mut segs = self.segments.write();
        let cat = self.catalog.read();
        for s in opened {
            // A table dropped while this flush ran must not come back.
            let live = cat.db_by_id(s.id.db).is_some_and(|d| d.table_by_id(s.id.table).is_some());
            if live {
                let v = segs.entry((s.id.db, s.id.table)).or_default();
                v.push(s);
                v.sort_by_key(|s| s.id.generation);
            } else {
                std::fs::remove_file(&s.path).map_err(io(&s.path))?;
            }
        }
        drop(cat);
        drop(segs);
        self.compaction.wake_all();
        Ok(n)
    }

    fn table_field_types(&self, db: DbId, table: TableId) -> Option<HashMap<ColId, FieldType>> {
        let cat = self.catalog.read();
        let t = cat.db_by_id(db)?.table_by_id(table)?;
        Some(
            t.columns()
                .iter()
                .filter_map(|c| match c.kind {
                    ColumnKind::Field(ty) => Some((c.id, ty)),
                    ColumnKind::Tag => None,
                })
                .collect(),
        )
    }
}

/// Where [`TableSnapshot::scan`] finds a run of a series' rows: block `.1` of segment cursor `.0`'s
/// blocks of the series, frozen memtable `.0`, or the active memtable's copy.
#[derive(Clone, Copy, Debug)]
enum Source {
    Block(usize, usize),
    Frozen(usize),
    Active,
}

/// The hours of `range` (hour numbers: the whole hours of a scan's range) that block `b` touches, when
/// it has hour statistics and there is one: those its statistics stand for.
fn block_hours(b: &BlockMeta, range: &std::ops::Range<i64>) -> Option<std::ops::Range<i64>> {
    b.hours?;
    let touched = hours::touched(b.ts_min, b.ts_max);
    let r = range.start.max(touched.start)..range.end.min(touched.end);
    (!r.is_empty()).then_some(r)
}

/// Which hours of a block [`TableSnapshot::scan_blocks_where`] reads: those whose statistics show a row
/// may meet the scan's condition (TSBS's `usage_user > 90` over an hour whose maximum is 85 is skipped).
pub struct HourFilter<'a> {
    /// The columns whose hour statistics `keep` reads, in the order [`HourStats::cols`] holds them.
    pub cols: &'a [(ColId, FieldType)],
    /// Whether hour `k` of `stats` (a block of the series) may hold a row the scan wants. A column's
    /// statistics that are not `exact` tell nothing: such an hour must be kept.
    pub keep: &'a mut dyn FnMut(SeriesId, &HourStats, usize) -> bool,
}

/// A piece of a series' rows from [`TableSnapshot::scan_folds`].
pub enum Piece<'a> {
    /// Rows, as [`TableSnapshot::scan`] hands them out.
    Rows(RowsRef<'a>),
    /// A block's statistics for whole hours of the range, standing for its rows there.
    Hours(&'a HourStats),
    /// The rows of several series at once: consecutive series of the scan, consecutive in one pack.
    Pack(PackRows<'a>),
}

/// Series consecutive both in a scan and in one pack of a segment, each with all its rows in the range
/// there and in no other source ([`TableSnapshot::scan_folds`]): their rows, series after series, each
/// series' time-sorted, as one run of the pack's columns. Why: after TSBS's load of 10 M hosts a count
/// reads 10 M one-row series, and a series handed out alone cost a block lookup, a read and a fold call
/// each (two seconds a count); a pack's thousand series come in one piece.
pub struct PackRows<'a> {
    /// `rows.series` is the first member's.
    pub rows: RowsRef<'a>,
    /// Each series (ascending) and its rows, indexes into `rows.ts`: adjoining, in order, covering it.
    pub members: &'a [(SeriesId, std::ops::Range<usize>)],
}

impl Piece<'_> {
    /// The piece's (first) series.
    pub fn series(&self) -> SeriesId {
        match self {
            Piece::Rows(r) => r.series,
            Piece::Hours(h) => h.series,
            Piece::Pack(p) => p.rows.series,
        }
    }
}

/// Where a [`TableSnapshot::scan_on`] stopped: the index of the next series to read, and each source's
/// cursor. Made fresh ([`ScanCursor::default`]) for a scan's first part; used with one snapshot and one
/// list of series throughout.
#[derive(Default)]
pub struct ScanCursor {
    next: usize,
    /// One per segment of the snapshot, and one per frozen memtable holding the table (empty: at the start).
    segments: Vec<crate::segment::ScanAt>,
    frozen: Vec<usize>,
}

/// See [`Engine::snapshot`].
pub struct TableSnapshot {
    pub db: DbId,
    pub table: TableId,
    pub ts_min: i64,
    pub ts_max: i64,
    cols: Vec<(ColId, FieldType)>,
    segments: Vec<Arc<Segment>>,
    frozen: Vec<Arc<Frozen>>,
    active: HashMap<SeriesId, SeriesRows>,
    /// Tombstones of the table overlapping the time range; the active memtable is already free of them.
    tombstones: Vec<Arc<Tombstone>>,
}

impl TableSnapshot {
    /// The rows of one series in the snapshot's time range, merged from every source (oldest first) with
    /// last-write-wins. `None` if the series has no rows there.
    pub fn read_series(&self, series: SeriesId) -> Result<Option<SeriesRows>> {
        let mut sources = Vec::new();
        for s in &self.segments {
            let hiding = self.hiding(series, s.id.generation, s.id.tombstones_applied);
            for mut r in s.read_series(series, self.ts_min, self.ts_max, &self.cols)? {
                tombstone::apply(&mut r, hiding.iter().copied());
                sources.push(r);
            }
        }
        for f in &self.frozen {
            if let Some(buf) = f.memtable.table(self.db, self.table).and_then(|t| t.series.get(&series)) {
                let mut r = buf.read(series, self.ts_min, self.ts_max, &self.cols);
                tombstone::apply(&mut r, self.hiding(series, f.generation, 0));
                sources.push(r);
            }
        }
        if let Some(r) = self.active.get(&series) {
            sources.push(r.clone());
        }
        let types: Vec<FieldType> = self.cols.iter().map(|c| c.1).collect();
        let merged = rows::merge(sources, &types);
        if let Some(m) = &merged {
            debug_assert_eq!(m.check(), Ok(()));
        }
        Ok(merged)
    }

    /// Calls `f` with the rows of each of `series` (ascending) in the snapshot's range, series after
    /// series: a series' rows in one or more runs, in time order and disjoint; a series without rows is
    /// skipped. The answer is [`TableSnapshot::read_series`]'s, in pieces.
    ///
    /// Why: `read_series` costs, per series, a block-index lookup in every segment, a copy of its rows
    /// and a merge; over a million series of a few rows each that is most of a query (a count over 10 M
    /// one-row series took 20 s). Here each segment's block index is walked once in series order and a
    /// series whose sources (blocks, memtables) hold disjoint time ranges is handed out source by
    /// source where it was decoded (a pack's rows are a slice of the pack). A series under a tombstone,
    /// or with sources that overlap in time, takes `read_series`' merge.
    pub fn scan(&self, series: &[SeriesId], f: impl FnMut(RowsRef<'_>)) -> Result<()> {
        self.scan_with(series, series.len() <= limits::SCAN_CACHED_SERIES_MAX, |_, _| true, None, f)
    }

    /// [`TableSnapshot::scan`] in parts: hands out the series of `series` from where `at` stopped, as
    /// `scan` does, or a pack's series together ([`Piece::Pack`], as [`TableSnapshot::scan_folds`]
    /// does; never [`Piece::Hours`]), until `f` answers `false`; the scan then stops once that piece's
    /// series are done (their later pieces still come) and `at` keeps where it is. `true` while series
    /// are left. Each part goes on with the sources' cursors where the part before left them.
    ///
    /// Why: a DataFusion scan is pulled a batch at a time, and read series by series
    /// ([`TableSnapshot::read_series`]) a scan of scenario 5's 10 M one-row series took 10 s; one `scan`
    /// call per batch would search every segment's block index and decode the group and pack it stopped
    /// in again at each batch.
    pub fn scan_on(&self, series: &[SeriesId], at: &mut ScanCursor, f: impl FnMut(Piece<'_>) -> bool) -> Result<bool> {
        let cache = series.len() <= limits::SCAN_CACHED_SERIES_MAX;
        self.scan_pieces(series, cache, Some(&mut *at), |_, _| true, None, None, true, f)?;
        Ok(at.next < series.len())
    }

    /// [`TableSnapshot::scan`] for folds, in larger pieces:
    ///
    /// - With `accept`, a block's [hour statistics](crate::hours) instead of its rows in the whole hours
    ///   of the range where `accept` takes them ([`Piece::Hours`]); the block's rows outside those hours
    ///   come as rows. Only a block that alone holds the series' rows over its time range is offered (as
    ///   in [`TableSnapshot::scan_blocks_where`]): its hours' statistics are then those of the answer's
    ///   rows there. `accept` sees the statistics first and refuses those it cannot use (inexact ones:
    ///   see [`HourStats::rows_set`]); the block is then read as rows. Pieces of one series then come in
    ///   no particular time order: a fold of `count/sum/mean/min/max` does not need one, `first/last`
    ///   would.
    /// - The series of a pack together where it can ([`Piece::Pack`]): series consecutive in `series`
    ///   and in one pack, each with no rows in another source, no tombstone on the table in the range,
    ///   and all its rows in the range. A fold takes every row of such a piece as its series' rows.
    pub fn scan_folds(&self, series: &[SeriesId], accept: Option<&mut dyn FnMut(&HourStats) -> bool>, mut f: impl FnMut(Piece<'_>)) -> Result<()> {
        let cache = series.len() <= limits::SCAN_CACHED_SERIES_MAX;
        self.scan_pieces(series, cache, None, |_, _| true, accept, None, true, |p| {
            f(p);
            true
        })
    }

    /// [`TableSnapshot::scan`] without the rows of the blocks `keep` refuses, from their statistics
    /// (a condition on a field no row of the block can meet: TSBS's `usage_user > 90` over a block whose
    /// maximum is 85). Only a block that alone holds the series' rows over its time range is offered
    /// (no other source overlaps it, no tombstone hides rows of the series): its rows there are the
    /// answer's rows, so its statistics are theirs (over the whole block, a superset of the range).
    /// Other sources are read as `scan` reads them.
    ///
    /// With `hours`, such a block with [hour statistics](crate::hours) is read only in the hours of the
    /// range that `hours.keep` takes from them (the pages between skipped, not decoded): the rows of the
    /// other hours are left out as a refused block's are.
    pub fn scan_blocks_where(
        &self,
        series: &[SeriesId],
        keep: impl FnMut(SeriesId, &BlockMeta) -> bool,
        hours: Option<HourFilter<'_>>,
        f: impl FnMut(RowsRef<'_>),
    ) -> Result<()> {
        self.scan_with(series, series.len() <= limits::SCAN_CACHED_SERIES_MAX, keep, hours, f)
    }

    /// [`TableSnapshot::scan_blocks_where`], caching the block-index groups it decodes or not.
    pub(crate) fn scan_with(
        &self,
        series: &[SeriesId],
        cache_groups: bool,
        keep: impl FnMut(SeriesId, &BlockMeta) -> bool,
        hours: Option<HourFilter<'_>>,
        mut f: impl FnMut(RowsRef<'_>),
    ) -> Result<()> {
        self.scan_pieces(series, cache_groups, None, keep, None, hours, false, |p| match p {
            Piece::Rows(r) => {
                f(r);
                true
            }
            Piece::Hours(_) => unreachable!("no hour statistics without `accept`"),
            Piece::Pack(_) => unreachable!("no pack pieces without `packs`"),
        })
    }

    /// [`TableSnapshot::scan_blocks_where`], [`TableSnapshot::scan_folds`] (`accept`, `packs`) and
    /// [`TableSnapshot::scan_on`] (`resume`, and `f` answering whether to go on) in one, caching the
    /// block-index groups it decodes or not (see [`limits::SCAN_CACHED_SERIES_MAX`]); tests take both
    /// ways on a few series.
    #[allow(clippy::too_many_arguments)]
    fn scan_pieces(
        &self,
        series: &[SeriesId],
        cache_groups: bool,
        mut resume: Option<&mut ScanCursor>,
        mut keep: impl FnMut(SeriesId, &BlockMeta) -> bool,
        mut accept: Option<&mut dyn FnMut(&HourStats) -> bool>,
        mut hour_filter: Option<HourFilter<'_>>,
        packs: bool,
        mut f_on: impl FnMut(Piece<'_>) -> bool,
    ) -> Result<()> {
        assert!(accept.is_none() || hour_filter.is_none(), "hour statistics are handed out or filter rows, not both");
        assert!(!packs || hour_filter.is_none(), "pack pieces are not filtered by hour");
        if self.ts_min > self.ts_max {
            if let Some(at) = resume {
                at.next = series.len();
            }
            return Ok(()); // e.g. a range wholly before the retention cutoff
        }
        let mut k = 0;
        let (mut at_segments, mut at_frozen) = (Vec::new().into_iter(), Vec::new().into_iter());
        if let Some(at) = resume.as_deref_mut() {
            k = at.next;
            at_segments = std::mem::take(&mut at.segments).into_iter();
            at_frozen = std::mem::take(&mut at.frozen).into_iter();
        }
        let mut cursors: Vec<SegmentScan<'_>> =
            self.segments.iter().map(|s| s.scan_at(cache_groups, at_segments.next().unwrap_or_default())).collect();
        let mut found: Vec<SeriesBlocks> = vec![SeriesBlocks::default(); cursors.len()];
        let mut frozen: Vec<_> = self
            .frozen
            .iter()
            .filter_map(|f| f.memtable.table(self.db, self.table).map(|t| (f.generation, t, t.series.cursor_at(at_frozen.next().unwrap_or(0)))))
            .collect();
        // Whether the scan goes on after the series it is in: `f_on`'s last answer.
        let go_on = std::cell::Cell::new(true);
        let mut f = |p: Piece<'_>| {
            if !f_on(p) {
                go_on.set(false);
            }
        };
        let mut frozen_bufs: Vec<Option<&SeriesBuf>> = vec![None; frozen.len()];
        // (ts_min, ts_max, source): the sources of one series overlapping the range; a memtable's range
        // covers all of the series' rows there.
        let mut runs: Vec<(i64, i64, Source)> = Vec::new();
        let mut owned = SeriesRows::default();
        let mut hour_stats = HourStats::default();
        let (mut spans, mut pieces): (Vec<(i64, i64)>, Vec<SeriesRows>) = (Vec::new(), Vec::new());
        let range_hours = hours::whole(self.ts_min, self.ts_max);
        // New decoded pages this read of hours may keep (`codec::page_cache`).
        let mut page_budget = crate::codec::page_cache::scan_budget();
        let mut members: Vec<(SeriesId, std::ops::Range<usize>)> = Vec::new();
        while k < series.len() && go_on.get() {
            let s = series[k];
            debug_assert!(k == 0 || series[k - 1] < s, "series ascending");
            k += 1;
            runs.clear();
            for (i, cursor) in cursors.iter_mut().enumerate() {
                cursor.blocks_into(s, &mut found[i])?;
                for (j, b) in found[i].iter().enumerate() {
                    if b.ts_max >= self.ts_min && b.ts_min <= self.ts_max {
                        runs.push((b.ts_min, b.ts_max, Source::Block(i, j)));
                    }
                }
            }
            for (i, (_, t, bufs)) in frozen.iter_mut().enumerate() {
                // Kept for the read below: a second lookup in a map of a million series is a cache miss.
                frozen_bufs[i] = if t.may_hold(s) { bufs.get(s) } else { None };
                if let Some((lo, hi)) = frozen_bufs[i].and_then(|b| b.ts_range())
                    && hi >= self.ts_min
                    && lo <= self.ts_max
                {
                    runs.push((lo, hi, Source::Frozen(i)));
                }
            }
            // Kept for the read below, as `frozen_bufs` are.
            let active = self.active.get(&s);
            if let Some(r) = active {
                runs.push((r.ts[0], r.ts[r.ts.len() - 1], Source::Active)); // never empty (`snapshot_rows`)
            }
            runs.sort_unstable_by_key(|r| (r.0, r.1));
            let hidden = !self.tombstones.is_empty()
                && runs.iter().any(|r| match r.2 {
                    Source::Block(i, _) => {
                        let id = &self.segments[i].id;
                        !self.hiding(s, id.generation, id.tombstones_applied).is_empty()
                    }
                    Source::Frozen(i) => !self.hiding(s, frozen[i].0, 0).is_empty(),
                    Source::Active => false,
                });
            if packs
                && self.tombstones.is_empty()
                && let [(lo, hi, Source::Block(i, 0))] = runs[..]
                && found[i].len() == 1
                && lo >= self.ts_min
                && hi <= self.ts_max
                && found[i].get(0).is_some_and(|b| b.pack.is_some())
            {
                // The series after `s` in this pack, while they are the scan's next and have no other
                // source (no block elsewhere, none in a memtable; no tombstone, checked above).
                let unwritten = |x: SeriesId| {
                    !self.active.contains_key(&x) && frozen.iter_mut().all(|(_, t, bufs)| !t.may_hold(x) || bufs.get(x).is_none())
                };
                // A run of `s` alone is read as any block is, below.
                if let Some(run) = crate::segment::alone_in_pack(&mut cursors, i, series, &mut k, (self.ts_min, self.ts_max), unwritten)? {
                    let rows = cursors[i].read_pack(&run, &self.cols, &mut members)?;
                    f(Piece::Pack(PackRows { rows, members: &members }));
                    continue;
                }
            }
            if hidden || runs.windows(2).any(|w| w[1].0 <= w[0].1) {
                if let Some(rows) = self.read_series(s)? {
                    f(Piece::Rows(RowsRef::of(&rows)));
                }
                continue;
            }
            for &(_, _, source) in &runs {
                let r = match source {
                    Source::Block(i, j) => {
                        let b = found[i].get(j).expect("a block found above");
                        if !keep(s, b) {
                            continue;
                        }
                        if let Some(hf) = hour_filter.as_mut()
                            && b.hours.is_some()
                            && b.pack.is_none()
                            && !self.kept_hours(&self.segments[i], b, hf, &mut hour_stats, &mut spans)?
                        {
                            pieces.clear();
                            self.segments[i].read_block_spans(b, &spans, &self.cols, &mut pieces, Some(&mut page_budget))?;
                            for r in pieces.iter().filter(|r| !r.ts.is_empty()) {
                                f(Piece::Rows(RowsRef::of(r)));
                            }
                            continue;
                        }
                        if let Some(accept) = accept.as_mut()
                            && let Some(whole) = block_hours(b, &range_hours)
                        {
                            self.segments[i].read_hours(b, &self.cols, whole.clone(), &mut hour_stats)?;
                            if accept(&hour_stats) {
                                f(Piece::Hours(&hour_stats));
                                // The block's rows before and after those hours, in the range.
                                let (a, z) = (whole.start.saturating_mul(hours::HOUR_NS), whole.end.saturating_mul(hours::HOUR_NS));
                                for (lo, hi) in [(self.ts_min, a.saturating_sub(1)), (z, self.ts_max)] {
                                    if lo.max(b.ts_min) <= hi.min(b.ts_max) {
                                        let r = cursors[i].read(b, lo, hi, &self.cols, &mut owned)?;
                                        if !r.ts.is_empty() {
                                            f(Piece::Rows(r));
                                        }
                                    }
                                }
                                continue;
                            }
                        }
                        cursors[i].read(b, self.ts_min, self.ts_max, &self.cols, &mut owned)?
                    }
                    Source::Frozen(i) => {
                        let buf = frozen_bufs[i].expect("a frozen memtable's series found above");
                        buf.read_into(&mut owned, s, self.ts_min, self.ts_max, &self.cols);
                        RowsRef::of(&owned)
                    }
                    Source::Active => RowsRef::of(active.expect("the series' active rows found above")),
                };
                if !r.ts.is_empty() {
                    f(Piece::Rows(r));
                }
            }
        }
        if let Some(at) = resume {
            at.next = k;
            at.segments = cursors.into_iter().map(SegmentScan::into_at).collect();
            at.frozen = frozen.iter().map(|(_, _, c)| c.position()).collect();
        }
        Ok(())
    }

    /// Into `spans`, the time spans (merged, ascending) of block `b` inside the range made of the hours
    /// `hf` keeps, from the block's hour statistics; `true` when it keeps every hour the block touches
    /// there (the block is then read as usual). An hour's statistics cover all of the block's rows in
    /// that hour, more than the range's when it cuts the hour: keeping an hour is a "may hold".
    fn kept_hours(&self, seg: &Segment, b: &BlockMeta, hf: &mut HourFilter<'_>, stats: &mut HourStats, spans: &mut Vec<(i64, i64)>) -> Result<bool> {
        let (lo, hi) = (b.ts_min.max(self.ts_min), b.ts_max.min(self.ts_max));
        let touched = hours::touched(lo, hi);
        seg.read_hours(b, hf.cols, touched.clone(), stats)?;
        spans.clear();
        let mut all = true;
        for (k, h) in touched.enumerate() {
            if !(hf.keep)(b.series, stats, k) {
                all = false;
                continue;
            }
            let start = h.saturating_mul(hours::HOUR_NS).max(lo);
            let end = h.saturating_add(1).saturating_mul(hours::HOUR_NS).saturating_sub(1).min(hi);
            match spans.last_mut() {
                Some(last) if last.1.saturating_add(1) >= start => last.1 = end,
                _ => spans.push((start, end)),
            }
        }
        Ok(all)
    }

    /// Every series with rows in this snapshot (in any source), ascending. Used when no tag filter
    /// narrows the scan. Fails when a segment's block index can no longer be read (see
    /// [`Segment::series`]).
    pub fn series(&self) -> Result<Vec<SeriesId>> {
        let mut out: Vec<SeriesId> = Vec::new();
        for s in &self.segments {
            out.extend(s.series()?);
        }
        for f in &self.frozen {
            if let Some(t) = f.memtable.table(self.db, self.table) {
                out.extend(t.series.keys());
            }
        }
        out.extend(self.active.keys());
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    pub fn segments(&self) -> &[Arc<Segment>] {
        &self.segments
    }

    /// The tombstones that hide rows of `series` in a source holding generations up to `gen_max`
    /// that has had the tombstones up to `applied` applied already.
    fn hiding(&self, series: SeriesId, gen_max: u64, applied: u64) -> Vec<&Tombstone> {
        self.tombstones
            .iter()
            .filter(|t| t.id > applied && t.hides_generation(gen_max) && t.matches_series(series))
            .map(|t| &**t)
            .collect()
    }

    /// True when the only sources of `series` are segment blocks fully inside the time range and no
    /// memtable has rows for it: block statistics then answer aggregates exactly.
    pub fn only_in_segments(&self, series: SeriesId) -> bool {
        let hidden = self.segments.iter().any(|s| !self.hiding(series, s.id.generation, s.id.tombstones_applied).is_empty());
        !hidden
            && !self.active.contains_key(&series)
            && self.frozen.iter().all(|f| f.memtable.table(self.db, self.table).is_none_or(|t| !t.series.contains_key(&series)))
    }
}

mod catalog_rewrite;
mod maintenance;
mod series_keys;
mod summary;
mod tail;
mod turns;
pub use catalog_rewrite::CatalogLogRewrite;
pub use maintenance::{COMPACTION_STATUS_PENDING_MAX, CompactionReport, CompactionStatus};
pub use summary::{ColumnSummary, RangeSummary};
pub use tail::{LastRow, TailSnapshot};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod maintenance_tests;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod catalog_rewrite_tests;
