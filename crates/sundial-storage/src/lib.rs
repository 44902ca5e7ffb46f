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

pub mod batch;
pub mod catalog;
pub mod catalog_log;
pub mod codec;
pub mod compaction;
pub mod encoding;
pub mod engine;
pub mod error;
pub mod frame;
pub mod limits;
pub mod memtable;
pub mod rows;
pub mod segment;
pub mod tombstone;
pub mod types;
pub mod wal;

pub use engine::{Clock, CompactionReport, Engine, EngineConfig};

/// The hash maps of the write path (catalog names, tag values, memtables). foldhash is several times
/// faster than std's SipHash on short keys, and its per-process random seed keeps tag values sent by a
/// client from being chosen to collide.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub use error::{Error, Result};
