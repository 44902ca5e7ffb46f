//! Compaction: the small segment files that flushes leave in a partition are merged into large sorted
//! ones, so that read amplification (files per table and partition) stays bounded as data grows, and
//! deleted rows leave the disk.
//!
//! - [`picker`] (pure) decides which files of one (database, table, partition) to merge.
//! - [`task`] (I/O) merges them series by series, streaming, into one file: last write wins per
//!   (series, timestamp) by generation order ([`crate::rows::merge`]), tombstones applied per input.
//!   A pack (the small blocks of consecutive series, see the format doc) whose series range holds no
//!   other input's series and no deleted row is copied as bytes instead ([`crate::segment::SegmentWriter::copy_pack`]):
//!   flushes of new series (10 M devices of one row each) are such packs, and decoding them,
//!   computing each member's statistics and encoding them again was a third of that load's CPU.
//! - The engine (`engine/maintenance.rs`) schedules jobs: background threads woken by each flush,
//!   at most `EngineConfig::compaction_threads` at a time (default
//!   [`crate::limits::COMPACTIONS_CONCURRENT_DEFAULT`]), and [`crate::Engine::compact_now`] for tests
//!   and tools, which runs jobs in the caller's thread until the picker finds nothing.
//!
//! Budget (sketch): a TSBS day of one host is 8640 rows × 10 fields ≈ 25 KB compressed; a flush every
//! few minutes leaves files of a few hundred rows per series. Merging reads and writes each byte about
//! log₃(partition bytes / flush bytes) times (≈ 5 for 300 flushes a day), at codec speed (hundreds of
//! MB/s), far below ingest's cost. Memory per merge: ≤ 16 inputs × one block of ≤ 17280 rows × columns.
//!
//! # The swap protocol
//!
//! A segment's footer records the generations it holds, `gen_min..=generation` (a flush writes one
//! generation; a merge of a contiguous run writes the run's range), and its file name is
//! `t<table>-g<gen_min>-<gen_max>.seg`. A merge:
//! 1. writes `<name>.seg.tmp`, fsyncs it, renames it to `<name>.seg`, fsyncs the directory;
//! 2. publishes: under the segment-set lock, replaces the inputs by the output (only if every input is
//!    still live: a drop or a retention run in the meantime wins, and the output is deleted);
//! 3. deletes the input files (readers holding one keep reading it through their open descriptor).
//!
//! Recovery (`load_segments`) removes `*.tmp` files and, within one table and partition, every file
//! whose generation range lies inside another file's range (when the ranges are equal, the file with
//! the canonical name wins: it is the newer rewrite of a version-1 file). Case analysis of a crash:
//! - before the rename: the `.tmp` is removed; the inputs are intact; nothing happened.
//! - after the rename, before or during the deletions: output and some inputs coexist; the inputs'
//!   ranges lie inside the output's, so they are deleted at startup. Even if they were read, the answer
//!   would be the same: the output holds, for every (series, ts), the last write among the inputs'
//!   generations and sorts after them, and the tombstones that hid rows of an input still hide them.
//! - a single file rewritten (rule 1 of the picker) keeps its range and so its name: the rename
//!   replaces it atomically; the disk holds either version, both correct.
//! - the output is empty (every row deleted): nothing is written, the inputs are unpublished and
//!   deleted; after a crash the remaining inputs are still hidden by the tombstones.
//!
//! Two outputs never partially overlap, because the picker only merges runs of whole live files that
//! are contiguous in generation order, and runs are claimed per partition (one merge at a time per
//! partition). A partial overlap found at startup is reported and both files are kept (reads stay
//! correct, see above).

pub mod picker;
pub mod task;

pub use picker::{FileInfo, pick};
pub use task::MergeStats;
