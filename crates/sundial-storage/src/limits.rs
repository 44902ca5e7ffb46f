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

/// Blocks per group of a segment's in-memory footer index (see `segment.rs`): an open segment keeps one
/// small entry (series range, time range, where the group's blocks are in the footer, a checksum) per
/// group, and decodes a group's blocks into the block-index cache when a read needs them. 64 keeps the
/// resident index under a byte per block while a group decode (64 blocks' metadata, ~64 KB with ten
/// columns) stays cheap next to reading one chunk.
pub const FOOTER_GROUP_BLOCKS: usize = 64;

/// A block of at most this many rows is written into a *pack* (segment version 4) when it is its
/// series' only block in the segment: the rows of many consecutive small series share one timestamp
/// chunk and one chunk per column, and each series costs two varints in the footer instead of a block
/// entry with per-column statistics (about 25 bytes per column). At a million series of a few rows each
/// the per-block overhead was 15 bytes per stored value; packed, a few rows compress together.
pub const PACK_BLOCK_ROWS_MAX: usize = 128;

/// A pack is closed once it holds this many rows (so a pack holds at most
/// `PACK_ROWS_TARGET + PACK_BLOCK_ROWS_MAX - 1` rows): a reader decodes a whole pack to read one of its
/// series, so this bounds that cost (~40 µs per column) while leaving enough values for the codecs.
pub const PACK_ROWS_TARGET: usize = 4096;

/// Series per pack at most. A footer group never ends inside a pack, so a group holds up to
/// `FOOTER_GROUP_BLOCKS + PACK_SERIES_MAX` blocks; this bounds a group decode.
pub const PACK_SERIES_MAX: usize = 1024;

/// Memory for decoded packs, all open segments together (`segment.rs`, `DECODED_PACKS`): the last
/// packs read, so that reading a pack's series one after another decodes it once. A pack of 4,096 rows
/// of ten numeric columns is about 400 KB decoded, so this keeps some 40 of them.
pub const DECODED_PACKS_BYTES_MAX: usize = 16 * 1024 * 1024;

/// Memory for blocks' hour-statistics chunks, all open segments together (`segment.rs`, `HOUR_CHUNKS`):
/// the chunks read last, checksummed, so that a rollup asked again reads no file. A 12-hour block of
/// ten float columns has a chunk of about 3 KB: this keeps some 20,000 blocks' (TSBS's 4,000 hosts
/// over 5 days).
pub const HOUR_CHUNKS_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Default memory for decoded pages of paged numeric columns, all open segments of the process together
/// (`codec/page_cache.rs`, `EngineConfig::decoded_pages_bytes`, `--decoded-pages-mib`): this share of the
/// memory ([`crate::sysmem`]), within [`DECODED_PAGES_BYTES_DEFAULT_MIN`]..=[`DECODED_PAGES_BYTES_DEFAULT_MAX`]
/// (384 MiB on a machine of 24 GiB). The pages a read of some hours of blocks decoded (TSBS's high-cpu),
/// packed to the bytes their values' spread needs: at one byte a value (TSBS's integer fields) a page of
/// 2,048 is about 2 KiB. All ten fields of 100 hosts over 4 days (scenario 1) take some 16 MiB, 4,000
/// hosts' 12 hours (scenario 2) 86 MiB, which the 64 MiB of before could not hold: every high-cpu-all
/// there decoded 40 % of its pages again (`bench/results/2026-12-01-xeon-pagecap/NOTES.md`). A
/// dashboard's panel asked again, or a window moved by a step, decodes nothing twice. (ClickHouse's
/// uncompressed cache and IoTDB's chunk cache are sized in gigabytes for the same reason.)
pub const DECODED_PAGES_MEMORY_DIVISOR: u64 = 64;

/// See [`DECODED_PAGES_MEMORY_DIVISOR`]; also the default where the memory cannot be read.
pub const DECODED_PAGES_BYTES_DEFAULT_MIN: usize = 64 * 1024 * 1024;

/// See [`DECODED_PAGES_MEMORY_DIVISOR`].
pub const DECODED_PAGES_BYTES_DEFAULT_MAX: usize = 1024 * 1024 * 1024;

/// The share of the decoded pages' memory one read of hours fills with new pages at most (a scan of a
/// snapshot, `engine.rs`; a statement read in two parts has two): a read of more leaves the pages it kept
/// first to the next statements rather than pushing them out with the rest. 100 hosts' 12 hours of TSBS
/// keep about 6 MiB.
pub const DECODED_PAGES_SCAN_DIVISOR: usize = 4;

/// Memory for the segments' tables of each series' last row (`last_values.rs`), all open segments
/// together: 20 bytes per series and 9 per column, so about 110 bytes a series of ten columns, and this
/// keeps those of some 600,000 series. A segment whose table would be larger is read through its block
/// index, as before.
pub const LAST_VALUES_BYTES_MAX: usize = 64 * 1024 * 1024;

/// A read of the last row of many series builds a segment's table of last rows (`last_values.rs`,
/// decoding every group of its block index) when it asks for at least one series per this many blocks
/// of the segment: a read of a few series looks them up in the block index instead. Chosen, not
/// measured: TSBS's lastpoint asks for every series, a segment of a day holds one to three blocks of
/// each.
pub const LAST_VALUES_BUILD_BLOCKS_PER_SERIES: usize = 8;

/// Rows of one pack a reader accepts (the writer stays below `PACK_ROWS_TARGET + PACK_BLOCK_ROWS_MAX`).
pub const PACK_ROWS_MAX: usize = 1 << 16;

/// Default capacity of the engine's block-index cache (`EngineConfig::block_index_cache_bytes`): decoded
/// footer groups of all open segments, about 1 KB per block with ten float columns.
pub const BLOCK_INDEX_CACHE_BYTES_DEFAULT: usize = 64 * 1024 * 1024;

/// Bytes the engine's cache of series keys (`engine/series_keys.rs`: a series key as a client wrote it
/// → its series) may hold, key text and per-entry overhead counted; it starts again empty when full.
/// 256 MiB holds about 1.3 M TSBS keys (~170 bytes of text each); a write of a series not in it costs
/// a catalog lookup (a dictionary lookup per tag, the tag set's), as it did before the cache.
///
/// Sized for a million devices writing in turn (TSBS scenario 4): at 32 MiB (160 K keys) two rows
/// in three missed, and the catalog lookups were 14 % of the server's CPU. 256 MiB took 13 % off the
/// server's CPU for that load, for 270 MiB more peak memory (1.09 → 1.37 GB); the memory is only
/// touched as keys come, so a server with fewer series pays for what it has.
pub const SERIES_KEY_CACHE_BYTES_MAX: usize = 256 * 1024 * 1024;

/// Tag dictionaries of at most this many values keep them as shared strings for queries once asked
/// (`TagDict::shared_values`): 64 K values of TSBS's host names are about 3 MiB. Larger ones (a tag of
/// millions of device ids) make a query's strings per query, as the memory would grow with the tag.
pub const TAG_DICT_SHARED_VALUES_MAX: usize = 1 << 16;

/// A scan (`TableSnapshot::scan`) of more series than this decodes the block-index groups it does not
/// find in the cache without adding them: at a block per series and segment and ~1 KB per block, 16 K
/// series fill a quarter of the default cache, and a scan of millions would evict what smaller reads
/// keep there while computing per-block statistics of packed blocks that it never uses (it reads the
/// rows). Smaller scans cache groups as every other read does.
pub const SCAN_CACHED_SERIES_MAX: usize = 16 * 1024;

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

/// Bytes of the distinct values of one tag column, all together: the catalog keeps them in one arena
/// with `u32` offsets (see `catalog.rs`). Reaching it means a tag holds unbounded values.
pub const TAG_VALUE_BYTES_PER_COLUMN_MAX: usize = u32::MAX as usize;

/// Bytes of one string field value.
pub const STRING_VALUE_BYTES_MAX: usize = 1024 * 1024;

/// Bytes of one catalog log record.
pub const CATALOG_RECORD_BYTES_MAX: usize = 16 * 1024 * 1024;

/// Databases per engine.
pub const DATABASES_MAX: usize = 100_000;

/// Default memtable budget before a flush is started (`EngineConfig::memtable_bytes_max`): the
/// machine's memory (or its cgroup's limit, when lower) divided by this, within
/// [`MEMTABLE_BYTES_DEFAULT_MIN`]..=[`MEMTABLE_BYTES_DEFAULT_MAX`] — GreptimeDB's default for its write
/// buffer, and InfluxDB 1.x's cache is 1 GiB. Each flush costs per series (a block, an index entry), so a
/// budget that holds more rows of each series when series are many (a million devices filled 256 MiB
/// after two rows each: two flushes and a merge for three rows) saves that work, and at most two
/// budgets are held before writes stall (see [`crate::engine::EngineConfig::memory_bytes_reject`]).
pub const MEMTABLE_MEMORY_DIVISOR: u64 = 8;

/// Slots (8 bytes each) in one chunk of a memtable series' row buffer (`memtable/slots.rs`): a series'
/// first chunk grows by doubling to this size, and each later one is allocated at it and never moves.
/// Why chunks: growing one vector by doubling copied every row once more on average, and each copy landed
/// in pages never touched before, so that loading TSBS's 4,000 hosts spent 8 % of the server's CPU zeroing
/// those pages and 5 % copying, with twice the rows' bytes allocated at the peak. 16 KiB: a partly filled
/// last chunk wastes at most that per series (64 MiB at 4,000 series), and a chunk of 200 TSBS rows is
/// far more than one allocation's worth of work.
pub const MEMTABLE_CHUNK_SLOTS: usize = 2048;

/// See [`MEMTABLE_MEMORY_DIVISOR`].
pub const MEMTABLE_BYTES_DEFAULT_MAX: usize = 1024 * 1024 * 1024;

/// See [`MEMTABLE_MEMORY_DIVISOR`]; also the default where the memory cannot be read.
pub const MEMTABLE_BYTES_DEFAULT_MIN: usize = 64 * 1024 * 1024;

/// A memtable whose series average at least this many rows is flushed once it holds
/// `memtable_bytes_max / MEMTABLE_FEW_SERIES_DIVISOR` bytes: each series' flushed block is long already
/// (and compaction merges a partition's into one), so holding more rows only costs memory. A half, not
/// the quarter `ac7576c` chose when the allocator's huge pages made first touches dear (1–2 ms per MiB):
/// with 4 KiB pages (`4eae165`) the quarter no longer lowered the peak of TSBS's 100 hosts × 4 days (a
/// flush of the first 256 MiB while the rest was written peaked as high as holding all ~300 MiB) and cost
/// the load that flush, a fifth of the server's CPU until every row was committed (BENCHMARKS.md, "Few
/// long series flushed at half the budget"). At 4,000 hosts and more the budget holds far fewer rows per
/// series than this, and the flush waits for the whole budget.
pub const MEMTABLE_FEW_SERIES_ROWS: u64 = 2048;

/// See [`MEMTABLE_FEW_SERIES_ROWS`].
pub const MEMTABLE_FEW_SERIES_DIVISOR: usize = 2;

/// Default series of one table, held by the active memtable and wanted by a read, from which the read
/// freezes the memtable (when writes let it) instead of copying their rows
/// (`EngineConfig::freeze_for_read_series_min`). A copy costs ~1.5 µs a series (a count over 1 M series
/// just written: 1.5 s, 0.17 s once they were flushed), so ~0.1 s here; a freeze costs a WAL rotation
/// and the flush of a memtable that holds at least this many series.
pub const FREEZE_FOR_READ_SERIES_MIN: usize = 65_536;

/// Default age after which a memtable is flushed even if it is not full (`storage.flush_interval_ms`).
pub const FLUSH_INTERVAL_MS_DEFAULT: u64 = 5 * 60 * 1000;

/// Default time without writes after which the memtable is flushed (`storage.flush_idle_ms`).
pub const FLUSH_IDLE_MS_DEFAULT: u64 = 60 * 1000;

/// Default time after the last file of a partition was written (flushed or merged) at which the
/// partition is merged whole like a past one (InfluxDB's `compact-full-write-cold-duration`, also 4 h):
/// data at rest ends as one file per partition, and a partition still written to is not rewritten whole
/// after every flush.
pub const COMPACT_FULL_WRITE_COLD_MS_DEFAULT: u64 = 4 * 3600 * 1000;

/// Default time partition (`storage.partition_duration`): one day, in nanoseconds.
pub const PARTITION_NS_DEFAULT: i64 = 24 * 3600 * 1_000_000_000;

/// Series named by one delete (`Engine::delete`); a larger set is deleted in several calls, or by
/// dropping the table.
pub const TOMBSTONE_SERIES_MAX: usize = 1 << 20;

/// Tombstones kept per table. Each delete adds one (kept in memory and in `catalog.log`); reads check
/// the ones overlapping what they read, so an unbounded number would slow every read.
pub const TOMBSTONES_PER_TABLE_MAX: usize = 10_000;

/// Concurrent compactions (background threads plus `Engine::compact_now` callers), default of
/// `EngineConfig::compaction_threads`. One keeps a 2-core machine free for ingest and queries.
pub const COMPACTIONS_CONCURRENT_DEFAULT: usize = 1;

/// Hard cap on `EngineConfig::compaction_threads`.
pub const COMPACTIONS_CONCURRENT_MAX: usize = 16;

/// A partition still written to is compacted (size-tiered) from this many segment files of one table.
///
/// Why 8 and not fewer: every merge of a partition still written to is paid again, since the partition
/// ends as one file merged at full effort once it turns cold, whatever happened before. TSBS's 4,000
/// hosts × 12 hours flush 8 times, the last at the end of the load: from 4 files, 11 flushes' worth of rows
/// were decoded and written again during the load (merges at the 4th and 7th flush); from 8, none. The
/// server's CPU until the rows were committed fell by 12 % (23.2/23.5/24.2 → 20.6/19.8/20.9 s, alternating
/// pairs, `bench/results/2026-11-28-epyc-tiers/`), until settled a little. The price is read
/// amplification while a partition is written: up to [`COMPACTION_FILES_PER_PARTITION_MAX`] files.
pub const COMPACTION_TRIGGER_FILES: usize = 8;

/// Read amplification bound: the picker keeps the files of one table in one partition at or below this
/// (when compaction keeps up), by merging the newest files regardless of their sizes once it is reached.
pub const COMPACTION_FILES_PER_PARTITION_MAX: usize = 16;

/// An older file joins a merge of newer files while it is at most this many times their total size
/// (size-tiered, like RocksDB's universal compaction): each byte is rewritten O(log(partition size)) times.
pub const COMPACTION_SIZE_RATIO: u64 = 2;

/// Input files of one compaction. With [`BLOCK_ROWS_MAX`] rows buffered per input, this bounds the
/// memory of a merge (about 16 x 17280 rows x columns).
pub const COMPACTION_INPUT_FILES_MAX: usize = 16;

/// Input bytes of one compaction, so one merge never rewrites an unbounded amount of data at once.
pub const COMPACTION_INPUT_BYTES_MAX: u64 = 4 << 30;

const _: () = assert!(COMPACTION_TRIGGER_FILES >= 2);
const _: () = assert!(COMPACTION_TRIGGER_FILES <= COMPACTION_FILES_PER_PARTITION_MAX);
const _: () = assert!(COMPACTION_FILES_PER_PARTITION_MAX <= COMPACTION_INPUT_FILES_MAX);
const _: () = assert!(COMPACTIONS_CONCURRENT_DEFAULT <= COMPACTIONS_CONCURRENT_MAX);

/// A failed background compaction of a partition is retried after this long (the error is logged);
/// `Engine::compact_now` returns the error instead.
pub const COMPACTION_RETRY_MS: u64 = 60_000;

/// How often the flush thread drops partitions past their database's retention.
pub const RETENTION_CHECK_MS_DEFAULT: u64 = 60_000;

/// Credit a compaction rate limit lets through at full speed after an idle period
/// (`EngineConfig::compaction_bytes_per_sec_max`; see `throttle.rs`): a tenth of a second of the rate.
/// Small enough that a merge never bursts for long, large enough that one block's chunks rarely sleep.
pub const COMPACTION_THROTTLE_BURST_MS: u64 = 100;

/// `catalog.log` is rewritten (a snapshot of the live catalog, see `engine/catalog_rewrite.rs`) only once
/// it is at least this large (`EngineConfig::catalog_log_rewrite_bytes_min`) *and* more than half of its
/// records are dead. Below it, replaying the whole log at start-up takes about a millisecond and a rewrite
/// (two fsyncs and a rename) would cost more than it saves.
pub const CATALOG_LOG_REWRITE_BYTES_MIN: u64 = 256 * 1024;

/// The dead-weight trigger of the `catalog.log` rewrite: rewrite when the log holds more than this many
/// times the records a snapshot would write (i.e. more than half of them are dead).
pub const CATALOG_LOG_REWRITE_RECORDS_RATIO: u64 = 2;

/// Series in one `catalog.log` series batch record (kind 10, see `catalog_log.rs`): a run of new series
/// of one table stored column-wise. 16,384 TSBS-like series make a record of about 100 KB; larger
/// batches gain little (the dictionaries are already amortised) and would make a decode hold more.
pub const CATALOG_BATCH_SERIES_MAX: usize = 16_384;

/// Tag cells (series × tag columns of the batch, nulls included) in one series batch: what its decode
/// holds in memory besides the strings. 2²⁰ cells are about 26 MiB of `String` headers and flags.
pub const CATALOG_BATCH_CELLS_MAX: usize = 1 << 20;

/// Bytes of tag values in one series batch, all together: bounds what a decode may expand a small
/// record into (a constant chunk stands for every row). A series whose own tags are larger is written
/// as a single-series record instead.
pub const CATALOG_BATCH_TAG_BYTES_MAX: usize = 8 * 1024 * 1024;

// A full batch encodes to at most its tag bytes plus, per cell, a length prefix of at most 3 bytes (a
// value is at most `NAME_BYTES_MAX`) and a validity bit, plus per-column headers: well under a record.
// The writer still checks the encoded size and falls back to single-series records if it is not.
const _: () = assert!(CATALOG_BATCH_TAG_BYTES_MAX + 4 * CATALOG_BATCH_CELLS_MAX + 16 * COLUMNS_PER_TABLE_MAX < CATALOG_RECORD_BYTES_MAX);
const _: () = assert!(CATALOG_BATCH_SERIES_MAX <= CODEC_ROWS_MAX);
const _: () = assert!(CATALOG_BATCH_SERIES_MAX <= CATALOG_BATCH_CELLS_MAX);
const _: () = assert!(NAME_BYTES_MAX <= CATALOG_BATCH_TAG_BYTES_MAX);
