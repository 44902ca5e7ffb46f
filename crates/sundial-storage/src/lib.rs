//! Sundial's storage engine: rows, series and time. No SQL, no HTTP.
//!
//! Principal types and how they compose:
//! - [`Engine`] owns a data directory: the [`catalog::Catalog`] (databases, tables, columns, series and
//!   the tag index), the [`wal::Wal`] (durability), the memtable generations ([`memtable::MemGen`],
//!   visibility of recent writes) and the open [`segment::Segment`] files (everything flushed).
//! - A write arrives as parsed lines, is resolved against the catalog into a [`batch::WriteBatch`]
//!   (ids, not names), appended to the WAL, applied to the active memtable and acknowledged once durable.
//! - A background thread flushes full or old memtables into segment files, one per table and time
//!   partition, series-major and columnar, with per-block statistics ([`segment`], [`codec`]).
//! - Reads ask for a table, a set of series, a time range and columns, and get each series' rows merged
//!   from segments and memtables with last-write-wins ([`rows::merge`]).
//!
//! ```text
//!  lines ──resolve──▶ WriteBatch ──▶ WAL (group commit) ──▶ active MemGen ──flush──▶ segments/
//!                        │                                        │                      │
//!                    catalog entries ───(at flush)──▶ catalog.log  └────── scan ◀─────────┘
//! ```
//!
//! # Late and duplicate rows
//! Each series buffer in a memtable ([`memtable::SeriesBuf`]) has an append-only in-order part, read by
//! slicing, and, only once a row arrives at or before its last timestamp, a staging area for such late
//! or duplicate rows, sorted once when first read. Reads and the flush merge the two linearly with last
//! write wins per column ([`memtable::merge_staged`]); a series without late rows pays nothing extra.
//! Late rows for an already flushed partition become a small segment there, which compaction merges.
//!
//! # Compaction
//! Each flush leaves one small file per (table, partition). Background threads
//! (`EngineConfig::compaction_threads`, default 1, also the cap on concurrent merges) merge them:
//! [`compaction::picker`] (a pure function) chooses a contiguous run of files — a file with deleted
//! rows, a whole cold partition, a size-tiered run of the newest files, or the newest files once a
//! partition holds [`limits::COMPACTION_FILES_PER_PARTITION_MAX`] — and [`compaction::task`] merges
//! them series by series, one block per input in memory, last write wins by generation. The output is
//! written as `.tmp`, fsynced, renamed, published, then the inputs are deleted; its footer records the
//! generation range it covers, so a restart after a crash deletes inputs an output supersedes (the
//! protocol and its case analysis are in [`compaction`]). [`Engine::compact_now`] runs compactions
//! synchronously until none is left (tests, tools).
//!
//! Compaction's write bandwidth can be capped: `EngineConfig::compaction_bytes_per_sec_max` (`None`,
//! unlimited, by default; `sundial serve --compaction-max-mib-per-sec`) feeds one
//! [`throttle::TokenBucket`] shared by every merge, which each [`segment::SegmentWriter`] of a merge
//! draws from before writing a chunk; flushes are never limited. Its clock is injectable
//! (`EngineConfig::compaction_throttle_clock`), so tests check the exact pacing without sleeping.
//!
//! # Retention
//! `CatalogEntry::CreateDb::retention_ns` ([`Engine::create_database`]; 0 = forever), changed by
//! [`Engine::set_retention`] (a durable `SetRetention` entry; InfluxQL `ALTER RETENTION POLICY`, SQL
//! `ALTER DATABASE … SET RETENTION`). Partitions that end at or before `now − retention` are deleted at
//! open, every `EngineConfig::retention_check_interval` (default 60 s), on
//! [`Engine::enforce_retention_now`], and by `set_retention` before it returns.
//! Reads clamp their range to `now − retention`, so rows older than that are never served, even from a
//! memtable or a partially expired partition; the flush does not write them. A write of a row older
//! than that is refused for its line with [`Error::BeyondRetention`] ("points beyond retention
//! policy", as InfluxDB says); the other lines of the request are kept.
//!
//! # Deletes
//! [`Engine::delete`]`(db, table, series, ts_min, ts_max)` (and [`Engine::drop_series`]) appends a
//! [`tombstone::Tombstone`] to `catalog.log` and fsyncs it before returning. Reads hide matching rows
//! at once; rows written later, even at the same timestamps, stay visible (tombstones are ordered
//! against flush generations and WAL sequence numbers, see [`tombstone`]); WAL replay filters them;
//! compaction rewrites the files holding them, which frees the disk, and then retires the tombstone
//! from memory. [`Engine::summarize`] (block statistics) declines ranges a tombstone touches and
//! [`Engine::snapshot_tail`] reads such sources whole, so both stay exact; both also honour retention.
//!
//! # The catalog log and its rewrite
//! `catalog.log` ([`catalog_log`]) is appended to by catalog statements, deletes and flushes. Once it is
//! at least `EngineConfig::catalog_log_rewrite_bytes_min` (default
//! [`limits::CATALOG_LOG_REWRITE_BYTES_MIN`], 256 KiB) and more than half dead — drops, superseded
//! retentions, tombstones nothing needs any more, entries each restart appended again — it is rewritten as
//! a snapshot (a [`catalog::Counters`] record so that no id is ever reused, the live catalog, and the
//! drops and tombstones the WAL on disk may still need), through `catalog.log.tmp`, fsync, rename and a
//! directory fsync. It is checked at open and by the flush thread; [`Engine::rewrite_catalog_log_now`]
//! forces one. Which entries are still needed, and why that is safe against WAL replay, is in
//! `engine/catalog_rewrite.rs`.
//!
//! # Backpressure
//! A flush starts when the active memtable reaches `EngineConfig::memtable_bytes_max` (X: by default an
//! eighth of the memory, 64 MiB to 1 GiB, [`limits::MEMTABLE_MEMORY_DIVISOR`]), or a quarter
//! of it when its series are few and long ([`limits::MEMTABLE_FEW_SERIES_ROWS`]). Writers
//! stall while all memtables together hold `memory_bytes_reject` (default 2X) or `frozen_max` frozen
//! generations wait, and get [`Error::Overloaded`] (HTTP 503 + `Retry-After`) if the flush does not
//! catch up within `write_stall_timeout`.
//!
//! # Several data directories
//! `EngineConfig::extra_data_dirs` adds directories (disks) for segment files; each new partition goes
//! to the one with the most free space, ties broken by fewest partitions ([`placement`]).
//!
//! # Format versions
//! Segment files are version 6 ([`segment::VERSION`]): version 3's layout (version 2's footer, which
//! gained `gen_min` and `tombstones_applied`, plus the float codecs Alp and Gorilla) plus *packs*
//! (version 4), which store the small blocks of consecutive series together, plus paged pco columns
//! (version 5), whose time ranges decode page by page, plus a block's per-hour statistics (version 6,
//! [`hours`]). Version-1 to 5 files are read (and rewritten as version 6 when compacted); a newer
//! version is refused with [`Error::UnsupportedVersion`]. `catalog.log` gained record kind 8
//! (tombstone), then kind 9 (counters, written by the rewrite). `tests/fixtures/v1-datadir` is a data
//! directory written by version 1, opened by a test.
//!
//! # Example
//! ```
//! use sundial_storage::engine::WritePoint;
//! use sundial_storage::types::Value;
//! use sundial_storage::{Engine, EngineConfig};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let engine = Engine::open(EngineConfig::new(dir.path())).unwrap();
//! engine.create_database("metrics", 0, false).unwrap();
//! let row = |host, ts, v| WritePoint {
//!     line: 1,
//!     table: "cpu",
//!     key: None,
//!     known: None,
//!     tags: vec![("host", host)].into(),
//!     fields: vec![("usage", Value::Float(v))].into(),
//!     ts,
//! };
//! engine.write("metrics", &[row("a", 10, 1.5), row("a", 20, 2.5), row("b", 10, 9.0)]).unwrap();
//! engine.flush().unwrap();
//! engine.delete("metrics", "cpu", None, 15, 25).unwrap(); // every series, 15 <= ts <= 25
//! engine.compact_now().unwrap();
//!
//! let (db, table, usage) = {
//!     let cat = engine.catalog();
//!     let d = cat.db("metrics").unwrap();
//!     let t = d.table("cpu").unwrap();
//!     (d.id, t.id, t.column("usage").unwrap().id)
//! };
//! let cols = [(usage, sundial_storage::types::FieldType::Float)];
//! let snap = engine.snapshot(db, table, &[0, 1], i64::MIN, i64::MAX, &cols);
//! let a = snap.read_series(0).unwrap().unwrap();
//! assert_eq!(a.ts, vec![10]); // the row at 20 is deleted
//! ```

pub mod batch;
pub mod block_cache;
pub mod catalog;
pub mod catalog_log;
pub mod codec;
pub mod compaction;
pub mod encoding;
pub mod engine;
pub mod error;
mod fifo;
#[cfg(test)]
mod test_util;
pub mod frame;
pub mod hours;
pub mod last_values;
pub mod limits;
pub mod memtable;
pub mod placement;
pub mod rows;
pub mod segment;
pub mod sysmem;
pub mod throttle;
pub mod tombstone;
pub mod types;
pub mod wal;

pub use engine::{Clock, CompactionReport, CompactionStatus, Engine, EngineConfig, KeyCache, KeyProbe, KnownKey, WriteWaits};

/// The hash maps of the write path (catalog names, tag values, memtables). foldhash is several times
/// faster than std's SipHash on short keys, and its per-process random seed keeps tag values sent by a
/// client from being chosen to collide.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub use error::{Error, Result};
