//! Background and on-demand upkeep of the data directory: compaction scheduling, retention, deletes.
//!
//! # Compaction scheduling
//! Each flush wakes the compaction threads. A thread claims one job — a (database, table, partition)
//! nobody is compacting and the [`crate::compaction::picker`] finds work in — runs the merge
//! ([`crate::compaction::task`]) and publishes it (see [`crate::compaction`] for the swap protocol).
//! At most `max(1, compaction_threads)` jobs run at once, counting [`Engine::compact_now`] callers. A
//! failed background job is logged and its partition skipped for [`limits::COMPACTION_RETRY_MS`].
//! A partition is *cold* once the table has files in a later partition ("yesterday, once today has
//! data"), or once its newest file is `compact_full_write_cold` old (default 4 h: "written to no more",
//! InfluxDB's full compaction of a write-cold shard); cold partitions are merged into one file. Late
//! rows for a cold partition therefore cost a rewrite of that partition per flush that carries them
//! (bounded by the input limits).
//!
//! # Retention
//! A database with `retention_ns > 0` keeps rows with `ts >= now − retention_ns`. Whole partitions
//! ending at or before that point are unpublished and their files deleted: at open, every
//! `retention_check_interval` on the flush thread, and on [`Engine::enforce_retention_now`]. Reads clamp
//! their time range to the same point, so rows older than the retention are never served, whether in a
//! memtable or a partition that is not yet wholly expired; writes of such rows are refused per line
//! ([`Error::BeyondRetention`]). [`Engine::set_retention`] changes it (a durable catalog entry) and
//! deletes the partitions a shorter retention expires before returning.
//!
//! # Deletes
//! [`Engine::delete`] writes a tombstone to `catalog.log` (fsynced), removes matching rows from the
//! active memtable, and publishes the tombstone for reads, all under the write lock; see
//! [`crate::tombstone`] for why every row written before the call is hidden and every row written
//! after it is not. Compaction rewrites files holding hidden rows (picker rule 1), which frees the disk;
//! then the tombstone is retired from memory (`retire_tombstones`), so that the per-table limit counts
//! only deletes whose rows are still on disk.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::{Engine, Inner, io, sync_dir};
use crate::catalog::{CatalogEntry, ColId, DbId, SeriesId, TableId};
use crate::codec::Effort;
use crate::compaction::{self, FileInfo};
use crate::error::{Error, Result};
use crate::limits;
use crate::segment::{Segment, SegmentId, segment_file_name};
use crate::tombstone::Tombstone;
use crate::types::FieldType;

/// (database, table, partition start).
type PartKey = (DbId, TableId, i64);

/// Whether a partition is merged whole (picker rule 2), and why, or whether it will be.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cold {
    /// The table has files in a later partition ("yesterday, once today has data").
    Past,
    /// Every file of the partition is older than `EngineConfig::compact_full_write_cold`.
    WriteCold,
    /// Not cold yet: it turns write-cold if no newer file comes first.
    Later,
    /// Not cold, and write-cold merging is off (`compact_full_write_cold` zero).
    No,
}

impl Cold {
    fn now(self) -> bool {
        matches!(self, Cold::Past | Cold::WriteCold)
    }
}

#[derive(Default)]
pub(super) struct CompactionState {
    claims: Mutex<Claims>,
    cv: Condvar,
}

#[derive(Default)]
struct Claims {
    running: HashSet<PartKey>,
    failed: HashMap<PartKey, Instant>,
}

impl Claims {
    /// Whether the picker passes over `k`: it is being merged, or (`background`) its last job failed
    /// less than [`limits::COMPACTION_RETRY_MS`] ago.
    fn skips(&self, k: &PartKey, background: bool) -> bool {
        let retry = Duration::from_millis(limits::COMPACTION_RETRY_MS);
        self.running.contains(k) || (background && self.failed.get(k).is_some_and(|at| at.elapsed() < retry))
    }
}

impl CompactionState {
    /// Wakes compaction threads and `compact_now` callers (new files, a finished job, shutdown).
    pub(super) fn wake_all(&self) {
        let _g = self.claims.lock();
        self.cv.notify_all();
    }
}

/// What [`Engine::compact_now`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactionReport {
    pub jobs: usize,
    pub files_in: usize,
    pub files_out: usize,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub rows_deleted: u64,
}

/// Whether compaction is busy or has work waiting ([`Engine::compaction_status`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactionStatus {
    /// Jobs merging now (background threads and `compact_now` callers).
    pub running: usize,
    /// Partitions the picker would merge next, not counting those running or backing off after a failure.
    /// Counting stops at [`COMPACTION_STATUS_PENDING_MAX`].
    pub pending: usize,
    /// Partitions of several files that nothing merges now but that will be merged whole once their
    /// newest file is `EngineConfig::compact_full_write_cold` old (if no write comes first).
    pub write_cold_later: usize,
}

/// Where [`Engine::compaction_status`] stops counting waiting partitions: the figure says "idle or not"
/// and "roughly how far behind".
pub const COMPACTION_STATUS_PENDING_MAX: usize = 64;

struct Job {
    key: PartKey,
    inputs: Vec<Arc<Segment>>,
    tombstones: Vec<Arc<Tombstone>>,
    tombstones_applied: u64,
    cols: Vec<(ColId, FieldType)>,
    /// Quick for a size-tiered merge of a partition that turns write-cold if no write comes
    /// ([`Cold::Later`]): it will be merged again at full effort (picker rule 2 at the latest), so its
    /// rows are not worth full effort now. Full for the partition's merge once cold, for a rewrite that
    /// frees deleted rows, and where write-cold merging is off (no later merge is sure to come).
    effort: Effort,
}

enum Claim {
    Job(Job),
    /// Nothing to claim now, but running jobs may change that.
    Busy,
    Idle,
}

impl Engine {
    /// What compaction is doing now and has scheduled, without claiming anything: a benchmark waits for
    /// every figure to be 0 (with the memtables flushed) before it measures settled disk or queries.
    pub fn compaction_status(&self) -> CompactionStatus {
        // Held while the partitions are walked, as `claim` holds it, so that no job starts or ends between.
        let claims = self.inner.compaction.claims.lock();
        let tombstones = self.inner.tombstones.read().clone();
        let (mut pending, mut write_cold_later) = (0, 0);
        let skip = |k: &PartKey| claims.skips(k, true);
        let _: Option<()> = self.inner.find_in_partitions(&tombstones, &skip, |_, _, infos, cold| {
            if compaction::pick(infos, cold.now()).is_some() {
                pending += 1;
            } else if cold == Cold::Later && compaction::pick(infos, true).is_some() {
                write_cold_later += 1;
            }
            (pending >= COMPACTION_STATUS_PENDING_MAX).then_some(())
        });
        CompactionStatus { running: claims.running.len(), pending, write_cold_later }
    }

    /// Runs compactions in this thread until the picker finds no work and none is running elsewhere.
    /// Deterministic for tests: afterwards every partition is as compacted as the picker wants it.
    pub fn compact_now(&self) -> Result<CompactionReport> {
        let mut report = CompactionReport::default();
        loop {
            match self.inner.claim(false) {
                Claim::Job(job) => {
                    let key = job.key;
                    let r = self.inner.run_job(job);
                    self.inner.release(key, r.is_err());
                    let r = r?;
                    report.jobs += 1;
                    report.files_in += r.files_in;
                    report.files_out += r.files_out;
                    report.bytes_in += r.bytes_in;
                    report.bytes_out += r.bytes_out;
                    report.rows_deleted += r.rows_deleted;
                }
                Claim::Busy => {
                    let mut g = self.inner.compaction.claims.lock();
                    if !g.running.is_empty() {
                        self.inner.compaction.cv.wait_for(&mut g, Duration::from_millis(100));
                    }
                }
                Claim::Idle => {
                    self.inner.retire_tombstones();
                    if self.inner.catalog_log_check_due.swap(false, Ordering::SeqCst) {
                        self.inner.maybe_rewrite_catalog_log(false);
                    }
                    return Ok(report);
                }
            }
        }
    }

    /// Drops the partitions past their database's retention now; returns the number of files deleted.
    pub fn enforce_retention_now(&self) -> Result<usize> {
        self.inner.enforce_retention()
    }

    /// Changes a database's retention (nanoseconds; 0 keeps data forever): durable (a `SetRetention`
    /// entry in `catalog.log`, fsynced) when this returns. Reads and writes honour it at once, and the
    /// partitions it expires are deleted before this returns.
    pub fn set_retention(&self, db: &str, retention_ns: i64) -> Result<()> {
        if retention_ns < 0 {
            return Err(Error::InvalidArgument {
                what: format!("retention of database \"{db}\" is negative ({retention_ns} ns)"),
                fix: "use 0 to keep data forever, or a positive duration",
            });
        }
        let _w = self.inner.lock_writes();
        let mut cat = self.inner.catalog.write();
        let id = cat.db(db).ok_or_else(|| Error::DatabaseNotFound { name: db.to_string() })?.id;
        let e = CatalogEntry::SetRetention { db: id, retention_ns };
        self.inner.catalog_log.lock().log.append(std::slice::from_ref(&e))?;
        cat.apply(&e)?;
        drop(cat);
        drop(_w);
        // A shorter retention frees the disk now, not at the next periodic run: whoever shortens it
        // usually does so because the disk is filling up.
        self.inner.enforce_retention()?;
        self.inner.catalog_log_check_due.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Deletes the rows of `table` with `ts_min <= ts <= ts_max` (inclusive), of every series when
    /// `series` is `None`, else of the listed ones. Durable when this returns (a tombstone in
    /// `catalog.log`); reads stop returning the rows at once; compaction later frees their disk space.
    /// Rows written after this call returns are visible, also at deleted timestamps.
    ///
    /// An unknown table, an empty `series` list or `ts_min > ts_max` delete nothing (`Ok`); an unknown
    /// database is [`Error::DatabaseNotFound`]. Limits: [`limits::TOMBSTONE_SERIES_MAX`] series per call,
    /// [`limits::TOMBSTONES_PER_TABLE_MAX`] deletes per table.
    pub fn delete(&self, db: &str, table: &str, series: Option<&[SeriesId]>, ts_min: i64, ts_max: i64) -> Result<()> {
        self.inner.check_poisoned()?;
        let _w = self.inner.lock_writes();
        let (db_id, table_id) = {
            let cat = self.inner.catalog.read();
            let d = cat.db(db).ok_or_else(|| Error::DatabaseNotFound { name: db.to_string() })?;
            match d.table(table) {
                Some(t) => (d.id, t.id),
                None => return Ok(()),
            }
        };
        let series = series.map(|s| {
            let mut v = s.to_vec();
            v.sort_unstable();
            v.dedup();
            v
        });
        if ts_min > ts_max || series.as_ref().is_some_and(Vec::is_empty) {
            return Ok(());
        }
        check_tombstone_limits(&self.inner, db_id, table_id, series.as_ref().map_or(0, Vec::len))?;
        let t = Tombstone {
            id: self.inner.next_tombstone_id.fetch_add(1, Ordering::SeqCst),
            db: db_id,
            table: table_id,
            series,
            ts_min,
            ts_max,
            generation: self.inner.next_generation.load(Ordering::SeqCst) - 1,
            wal_seq: self.inner.wal.next_seq(),
        };
        // A failed append may leave a torn record that a later append would follow: stop accepting
        // changes until a restart truncates it.
        {
            let mut log = self.inner.catalog_log.lock();
            log.log.append(&[CatalogEntry::Tombstone(t.clone())]).inspect_err(|e| self.inner.poison(e))?;
            log.tombstones.push(t.clone());
        }
        {
            let mut mem = self.inner.mem.write();
            mem.active.delete(db_id, table_id, t.series.as_deref(), ts_min, ts_max);
            self.inner.tombstones.write().entry((db_id, table_id)).or_default().push(Arc::new(t));
        }
        self.inner.compaction.wake_all();
        Ok(())
    }

    /// Deletes every row of the given series (`DROP SERIES`). The series stay in the catalog (their ids
    /// are never reused); they simply have no rows, and a later write to the same tag set reuses the id.
    pub fn drop_series(&self, db: &str, table: &str, series: &[SeriesId]) -> Result<()> {
        self.delete(db, table, Some(series), i64::MIN, i64::MAX)
    }

    /// Deletes of a table still kept in memory (see `retire_tombstones`): the ones reads may still
    /// have to apply.
    pub fn live_tombstones(&self, db: DbId, table: TableId) -> usize {
        self.inner.tombstones.read().get(&(db, table)).map_or(0, Vec::len)
    }

    /// Segment files per partition start of one table: the read amplification a scan of that
    /// partition pays.
    pub fn partition_files(&self, db: DbId, table: TableId) -> BTreeMap<i64, usize> {
        let mut out = BTreeMap::new();
        for s in self.inner.segments.read().get(&(db, table)).into_iter().flatten() {
            *out.entry(s.id.partition_start).or_insert(0) += 1;
        }
        out
    }

    /// Bytes of every file under the data directories (what `du` would count, without block rounding).
    pub fn data_dir_bytes(&self) -> Result<u64> {
        self.inner.placement.roots().iter().map(|r| dir_bytes(r)).sum()
    }
}

fn dir_bytes(dir: &std::path::Path) -> Result<u64> {
    let mut total = 0;
    for e in std::fs::read_dir(dir).map_err(io(dir))? {
        let e = e.map_err(io(dir))?;
        let meta = match e.metadata() {
            Ok(m) => m,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => return Err(Error::io(e.path(), err)),
        };
        total += if meta.is_dir() { dir_bytes(&e.path())? } else { meta.len() };
    }
    Ok(total)
}

fn check_tombstone_limits(inner: &Inner, db: DbId, table: TableId, n_series: usize) -> Result<()> {
    if n_series > limits::TOMBSTONE_SERIES_MAX {
        return Err(Error::LimitExceeded {
            what: "series in one delete",
            actual: n_series as u64,
            limit: limits::TOMBSTONE_SERIES_MAX as u64,
            fix: "delete in several statements, or without a series filter",
        });
    }
    let n = inner.tombstones.read().get(&(db, table)).map_or(0, Vec::len);
    if n >= limits::TOMBSTONES_PER_TABLE_MAX {
        return Err(Error::LimitExceeded {
            what: "deletes per table",
            actual: n as u64 + 1,
            limit: limits::TOMBSTONES_PER_TABLE_MAX as u64,
            fix: "delete wider ranges at once, or copy the data to a new table and drop this one",
        });
    }
    Ok(())
}

/// What one job did.
struct JobReport {
    files_in: usize,
    files_out: usize,
    bytes_in: u64,
    bytes_out: u64,
    rows_deleted: u64,
}

impl Inner {
    /// The oldest timestamp database `db` still serves.
    pub(super) fn retention_cutoff(&self, db: DbId) -> i64 {
        let retention = self.catalog.read().db_by_id(db).map_or(0, |d| d.retention_ns);
        if retention <= 0 { i64::MIN } else { self.config.clock.now_ns().saturating_sub(retention) }
    }

    pub(super) fn enforce_retention(&self) -> Result<usize> {
        *self.last_retention_run.lock() = Instant::now();
        let now = self.config.clock.now_ns();
        let cutoffs: HashMap<DbId, i64> = self
            .catalog
            .read()
            .dbs()
            .iter()
            .filter(|d| d.retention_ns > 0)
            .map(|d| (d.id, now.saturating_sub(d.retention_ns)))
            .collect();
        if cutoffs.is_empty() {
            return Ok(0);
        }
        let mut expired = Vec::new();
        {
            let mut segs = self.segments.write();
            for ((db, _), v) in segs.iter_mut() {
                let Some(cutoff) = cutoffs.get(db) else { continue };
                v.retain(|s| {
                    let gone = s.id.partition_start.saturating_add(s.id.partition_ns) <= *cutoff;
                    if gone {
                        expired.push(s.path.clone());
                    }
                    !gone
                });
            }
        }
        for path in &expired {
            remove_file_if_exists(path)?;
        }
        self.retire_tombstones();
        if !expired.is_empty() {
            tracing::info!(files = expired.len(), "retention: deleted expired partitions");
        }
        Ok(expired.len())
    }

    pub(super) fn compaction_loop(self: Arc<Self>) {
        while !self.shutdown.load(Ordering::SeqCst) {
            match self.claim(true) {
                Claim::Job(job) => {
                    let key = job.key;
                    let r = self.run_job(job);
                    if let Err(e) = &r {
                        tracing::error!(error = %e, db = key.0, table = key.1, partition = key.2, "compaction failed; retrying later");
                    }
                    self.release(key, r.is_err());
                }
                Claim::Busy | Claim::Idle => {
                    let mut g = self.compaction.claims.lock();
                    if !self.shutdown.load(Ordering::SeqCst) {
                        // Flushes, deletes and finished jobs wake this at once; the timeout only
                        // retries partitions whose last job failed.
                        self.compaction.cv.wait_for(&mut g, Duration::from_secs(5));
                    }
                }
            }
        }
    }

    /// Forgets, in memory, the tombstones that can no longer hide anything: no live segment holds rows
    /// they hide that were not already removed, and no frozen memtable is old enough for them (the active
    /// memtable was cleaned by the delete itself). They stay in `catalog.log` while WAL replay may need
    /// them (see `catalog_rewrite.rs`); the limit [`limits::TOMBSTONES_PER_TABLE_MAX`] counts the ones in
    /// memory.
    pub(super) fn retire_tombstones(&self) {
        let mem = self.mem.read();
        let oldest_frozen = mem.frozen.iter().map(|f| f.generation).min().unwrap_or(u64::MAX);
        let mut tombstones = self.tombstones.write();
        let segs = self.segments.read();
        let mut retired = 0;
        for (key, list) in tombstones.iter_mut() {
            let files = segs.get(key).map(Vec::as_slice).unwrap_or(&[]);
            list.retain(|t| {
                let needed = oldest_frozen <= t.generation
                    || files.iter().any(|s| t.id > s.id.tombstones_applied && t.hides_generation(s.id.generation) && hides_rows_of(s, t, true));
                retired += usize::from(!needed);
                needed
            });
        }
        tombstones.retain(|_, list| !list.is_empty());
        if retired > 0 {
            self.catalog_log_check_due.store(true, Ordering::SeqCst);
            tracing::debug!(retired, "tombstones no longer needed in memory");
        }
    }

    fn release(&self, key: PartKey, failed: bool) {
        let mut g = self.compaction.claims.lock();
        g.running.remove(&key);
        if failed {
            g.failed.insert(key, Instant::now());
        } else {
            g.failed.remove(&key);
        }
        self.compaction.cv.notify_all();
    }

    /// Finds and claims the next job. `background` skips partitions whose last job failed recently.
    fn claim(&self, background: bool) -> Claim {
        let mut claims = self.compaction.claims.lock();
        let limit = self.config.compaction_threads.clamp(1, limits::COMPACTIONS_CONCURRENT_MAX);
        if claims.running.len() >= limit {
            return Claim::Busy;
        }
        let retry = Duration::from_millis(limits::COMPACTION_RETRY_MS);
        claims.failed.retain(|_, at| at.elapsed() < retry);
        let skip = |k: &PartKey| claims.skips(k, background);
        match self.find_job(&skip) {
            Some(job) => {
                claims.running.insert(job.key);
                Claim::Job(job)
            }
            None if claims.running.is_empty() => Claim::Idle,
            None => Claim::Busy,
        }
    }

    fn find_job(&self, skip: &dyn Fn(&PartKey) -> bool) -> Option<Job> {
        let tombstones = self.tombstones.read().clone();
        self.find_in_partitions(&tombstones, skip, |key, part, infos, cold| {
            let run = compaction::pick(infos, cold.now())?;
            let later = cold == Cold::Later && !infos[run.clone()].iter().any(|f| f.dead);
            let effort = if later { Effort::Quick } else { Effort::Full };
            let (db, table, _) = key;
            let mut cols: Vec<(ColId, FieldType)> = self.table_field_types(db, table)?.into_iter().collect();
            cols.sort_unstable_by_key(|c| c.0);
            let table_tombs = tombstones.get(&(db, table)).map(Vec::as_slice).unwrap_or(&[]);
            Some(Job {
                key,
                inputs: part[run].iter().map(|s| Arc::clone(s)).collect(),
                tombstones_applied: table_tombs.iter().map(|t| t.id).max().unwrap_or(0),
                tombstones: table_tombs.to_vec(),
                cols,
                effort,
            })
        })
    }

    /// Calls `f` with each partition not skipped and not past retention (its files in generation order,
    /// what the picker knows of them, and whether and why it counts as cold), in (table, partition) order,
    /// until `f` returns something.
    fn find_in_partitions<R>(
        &self,
        tombstones: &HashMap<(DbId, TableId), Vec<Arc<Tombstone>>>,
        skip: &dyn Fn(&PartKey) -> bool,
        mut f: impl FnMut(PartKey, &[&Arc<Segment>], &[FileInfo], Cold) -> Option<R>,
    ) -> Option<R> {
        let segs = self.segments.read();
        let mut tables: Vec<_> = segs.iter().collect();
        tables.sort_by_key(|(k, _)| **k);
        for (&(db, table), files) in tables {
            let cutoff = self.retention_cutoff(db);
            let table_tombs = tombstones.get(&(db, table)).map(Vec::as_slice).unwrap_or(&[]);
            let newest = files.iter().map(|s| s.id.partition_start).max().unwrap_or(i64::MIN);
            let mut parts: BTreeMap<i64, Vec<&Arc<Segment>>> = BTreeMap::new();
            for s in files {
                parts.entry(s.id.partition_start).or_default().push(s);
            }
            for (p, mut part) in parts {
                let key = (db, table, p);
                let p_ns = part[0].id.partition_ns;
                if skip(&key) || p.saturating_add(p_ns) <= cutoff {
                    continue;
                }
                part.sort_by_key(|s| s.id.generation);
                let infos: Vec<FileInfo> = part.iter().map(|s| file_info(s, table_tombs)).collect();
                let write_cold = self.config.compact_full_write_cold;
                let cold = if p.saturating_add(p_ns) <= newest {
                    Cold::Past
                } else if write_cold.is_zero() {
                    Cold::No
                } else if part.iter().all(|s| s.opened.elapsed() >= write_cold) {
                    Cold::WriteCold
                } else {
                    Cold::Later
                };
                if let Some(r) = f(key, &part, &infos, cold) {
                    return Some(r);
                }
            }
        }
        None
    }

    /// Merges, publishes and deletes the inputs (see the swap protocol in [`crate::compaction`]).
    fn run_job(&self, job: Job) -> Result<JobReport> {
        let (db, table, partition_start) = job.key;
        let (first, last) = (&job.inputs[0].id, &job.inputs[job.inputs.len() - 1].id);
        let id = SegmentId {
            db,
            table,
            partition_start,
            partition_ns: first.partition_ns,
            generation: last.generation,
            gen_min: first.gen_min,
            tombstones_applied: job.tombstones_applied.max(job.inputs.iter().map(|s| s.id.tombstones_applied).max().unwrap_or(0)),
        };
        let dir = job.inputs[0].path.parent().map(std::path::Path::to_path_buf).ok_or_else(|| Error::internal("segment without a directory"))?;
        let path = dir.join(segment_file_name(table, id.gen_min, id.generation));
        let started = Instant::now();
        let (out, stats) = compaction::task::merge(&path, id, &job.inputs, &job.tombstones, &job.cols, self.compaction_throttle.clone(), job.effort)?;
        if out.is_some() {
            sync_dir(&dir)?;
        }
        let output = out.map(|p| Segment::open_with_cache(&p, &self.block_index_cache).map(Arc::new)).transpose()?;
        if !self.publish(&job, output.as_ref()) {
            if let Some(o) = &output {
                remove_file_if_exists(&o.path)?;
            }
            return Ok(JobReport { files_in: 0, files_out: 0, bytes_in: 0, bytes_out: 0, rows_deleted: 0 });
        }
        for s in &job.inputs {
            if output.as_ref().is_none_or(|o| o.path != s.path) {
                remove_file_if_exists(&s.path)?;
            }
        }
        sync_dir(&dir)?;
        self.retire_tombstones();
        let report = JobReport {
            files_in: job.inputs.len(),
            files_out: usize::from(output.is_some()),
            bytes_in: job.inputs.iter().map(|s| s.file_bytes).sum(),
            bytes_out: output.as_ref().map_or(0, |o| o.file_bytes),
            rows_deleted: stats.rows_deleted,
        };
        tracing::debug!(db, table, partition_start, files_in = report.files_in, bytes_in = report.bytes_in,
            bytes_out = report.bytes_out, rows_out = stats.rows_out, ms = started.elapsed().as_millis() as u64, "compacted");
        // The inputs' groups leave the cache with the inputs (once no reader holds them); the output's are
        // loaded now, so the first queries after a compaction do not decode its footer (TSBS's queries
        // run on the segments compaction left).
        drop(job);
        if let Some(o) = output.filter(|_| self.config.warm_block_index) {
            self.warm_groups(std::slice::from_ref(&o));
        }
        Ok(report)
    }

    /// Replaces the inputs by the output in the live set; false (changing nothing) when the table was
    /// dropped or an input is no longer live (retention, drop) while the merge ran.
    fn publish(&self, job: &Job, output: Option<&Arc<Segment>>) -> bool {
        let (db, table, _) = job.key;
        let mut segs = self.segments.write();
        let cat = self.catalog.read();
        if cat.db_by_id(db).is_none_or(|d| d.table_by_id(table).is_none()) {
            return false;
        }
        let Some(v) = segs.get_mut(&(db, table)) else { return false };
        let is_input = |s: &Arc<Segment>| job.inputs.iter().any(|i| Arc::ptr_eq(i, s));
        if v.iter().filter(|s| is_input(s)).count() != job.inputs.len() {
            return false;
        }
        v.retain(|s| !is_input(s));
        if let Some(o) = output {
            v.push(Arc::clone(o));
        }
        v.sort_by_key(|s| s.id.generation);
        true
    }
}

fn file_info(s: &Segment, tombstones: &[Arc<Tombstone>]) -> FileInfo {
    let dead = tombstones
        .iter()
        .any(|t| t.id > s.id.tombstones_applied && t.hides_generation(s.id.generation) && hides_rows_of(s, t, false));
    FileInfo { gen_min: s.id.gen_min, gen_max: s.id.generation, bytes: s.file_bytes, dead, quick: s.quick }
}

/// [`Segment::has_rows_hidden_by`], or `on_error` (logged) when the segment's block index can no longer
/// be read: the caller picks the answer that is safe for it (a tombstone is kept; a file is not
/// scheduled for a rewrite that would fail the same way). Reads of the damaged part report the error.
fn hides_rows_of(s: &Segment, t: &Tombstone, on_error: bool) -> bool {
    s.has_rows_hidden_by(t).unwrap_or_else(|e| {
        tracing::error!(error = %e, segment = %s.path.display(), "segment block index unreadable");
        on_error
    })
}

fn remove_file_if_exists(path: &std::path::Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(path, e)),
        _ => Ok(()),
    }
}
