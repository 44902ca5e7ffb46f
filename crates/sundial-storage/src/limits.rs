//! Every bound of the storage engine, in one place.
//!
//! Anything that grows with input has a limit here (or a config field whose default lives here), so that a
//! hostile or buggy client meets a clear error instead of exhausting memory or disk.

/// Largest WAL record (one write request, encoded). A request body is bounded by the server's body limit
/// (default 64 MiB of line protocol); its encoded rows are far smaller than the text.
pub const WAL_RECORD_BYTES_MAX: usize = 256 * 1024 * 1024;

/// A WAL file is rotated (a new file started) when it grows past this, even without a memtable flush, so
/// that no single file is unbounded.
pub const WAL_FILE_BYTES_MAX: u64 = 1024 * 1024 * 1024;

const _: () = assert!((WAL_RECORD_BYTES_MAX as u64) < WAL_FILE_BYTES_MAX);

/// Rows in one block of a segment file. A day of 10 s samples (8640 rows) fits one block, which is what
/// makes per-block statistics answer whole-day aggregates without decoding.
pub const BLOCK_ROWS_MAX: usize = 8640 * 2;

/// Codecs refuse to decode blocks claiming more rows than this; protects against corrupt headers.
pub const CODEC_ROWS_MAX: usize = 1 << 20;

const _: () = assert!(BLOCK_ROWS_MAX <= CODEC_ROWS_MAX);

/// Columns (tags + fields) per table. InfluxDB has no hard limit; a table with thousands of columns is
/// almost always a schema mistake (a value written as a key), so refuse it with a clear error.
pub const COLUMNS_PER_TABLE_MAX: usize = 4096;

/// Series per table. Series ids are `u32`; the limit stays well below so ids never wrap.
pub const SERIES_PER_TABLE_MAX: u32 = 1 << 30;

/// Bytes of one tag key, tag value, field key, table or database name.
pub const NAME_BYTES_MAX: usize = 64 * 1024;

/// Bytes of one string field value.
pub const STRING_VALUE_BYTES_MAX: usize = 1024 * 1024;

/// Bytes of one catalog log record.
pub const CATALOG_RECORD_BYTES_MAX: usize = 16 * 1024 * 1024;

/// Databases per engine.
pub const DATABASES_MAX: usize = 100_000;

/// Default memtable budget before a flush is started (`storage.memtable_bytes_max`).
pub const MEMTABLE_BYTES_DEFAULT: usize = 256 * 1024 * 1024;

/// Default age after which a memtable is flushed even if it is not full (`storage.flush_interval_ms`).
pub const FLUSH_INTERVAL_MS_DEFAULT: u64 = 5 * 60 * 1000;

/// Default time without writes after which the memtable is flushed (`storage.flush_idle_ms`).
pub const FLUSH_IDLE_MS_DEFAULT: u64 = 60 * 1000;

/// Default time partition (`storage.partition_duration`): one day, in nanoseconds.
pub const PARTITION_NS_DEFAULT: i64 = 24 * 3600 * 1_000_000_000;
