//! Segment files: immutable, series-major, columnar, one table and one time partition each.
//!
//! ```text
//! file    := header chunk* footer trailer
//! header  := "SDSEG\0\0\0" version:u32 flags:u32                        (16 bytes; flags: FLAG_QUICK)
//! chunk   := encoded timestamps or one encoded column of one block (see codec/)
//! footer  := db:u32 table:u32 partition_start:i64 partition_ns:i64 generation:u64
//!            gen_min:u64 tombstones_applied:u64
//!            n_blocks:uvarint block*
//! block   := series_delta:uvarint head:uvarint                      (head = n_rows << 1 | packed)
//!            [packed = 0: ts_min_off:uvarint ts_span:uvarint ts_chunk n_cols:uvarint (col:uvarint type:u8 chunk stats)*
//!                         [version ≥ 6: hours]]
//!            [packed = 1, no pack open: pack]
//! pack    := pack_rows:uvarint ts_min_off:uvarint ts_span:uvarint ts_chunk n_cols:uvarint (col:uvarint type:u8 chunk)*
//! chunk   := len:uvarint crc32c:u32                                     (a chunk reference)
//! hours   := len:uvarint [len > 0: crc32c:u32]     (version 6: the block's hour statistics, see crate::hours)
//! stats   := count:uvarint [if count > 0: first_ts_off:uvarint last_ts_off:uvarint values]
//! values  := by type: Integer  min:ivarint (max−min):uvarint (first−min):uvarint (last−min):uvarint
//!                              sum_ok:u8 [sum_ok = 1: sum:ivarint]
//!                     UInteger the same with min and sum as uvarint
//!                     Float    min:u64 max:u64 sum:u64 first:u64 last:u64 (f64 bits)
//!                     Boolean  trues:uvarint first:u8 last:u8
//!                     String   nothing
//! trailer := footer_offset:u64 footer_len:u32 footer_crc:u32 n_blocks:u32 version:u32 "SDSEGEND"   (32 bytes)
//! ```
//! In a block, `series_delta` is the series id minus the previous block's (the first block's minus 0),
//! `ts_min_off = ts_min − partition_start`, `ts_span = ts_max − ts_min`; in stats,
//! `first_ts_off = first_ts − ts_min` and `last_ts_off = ts_max − last_ts`; differences wrap (two's
//! complement) and are never negative in a valid file. A chunk reference has no offset: chunks are
//! written back to back in footer order (each block's timestamp chunk, its column chunks, then its hour statistics) from byte
//! 16, so a chunk starts where the previous one ended, and the last one ends where the footer starts
//! (checked at open). Booleans' `min`/`max` are derived: `min = (trues == count)`, `max = (trues > 0)`.
//! Integer and float `sum_ok` is 0 when the sum overflowed (floats: always 1, not stored).
//!
//! **Packs** (version 4). A series whose only block in the segment has at most [`PACK_BLOCK_ROWS_MAX`]
//! rows is written into a pack: the rows of consecutive such series, one series after the other, in
//! one timestamp chunk and one chunk per column (columns by ascending id, those with no value left out).
//! The first packed block after a complete pack (or at the start) carries the pack's header; each packed
//! block takes the next `n_rows` rows of the open pack, and a pack's rows must be taken exactly before a
//! block that is not packed, or the footer's end. A packed block stores no time range and no statistics:
//! a reader gets them from the decoded pack when it decodes the footer group (a group never ends inside
//! a pack). At a million series of a few rows, that takes the block index from ~25 bytes per value to
//! two varints per series, and lets the codecs compress across series. In version 2 and 3, `head` is
//! just `n_rows`.
//!
//! Version 1 (still read) had no `gen_min`/`tombstones_applied`, and wrote blocks as
//! `series:uvarint n_rows:uvarint ts_min:i64 ts_max:i64 ts_chunk n_cols:uvarint (col:uvarint type:u8
//! chunk stats)*` with `chunk := offset:uvarint len:uvarint crc32c:u32` and
//! `stats := count:uvarint [count > 0 and not String: min:u64 max:u64 sum:u64 sum_ok:u8 first:u64
//! last:u64] [count > 0: first_ts:i64 last_ts:i64]`.
//!
//! Integers are little-endian. Statistic values are 8 raw bytes interpreted by the column type: f64 bits,
//! i64 or u64 as is, booleans 0/1 (for booleans `sum` counts the `true`s). `sum_ok` is 0 when an integer
//! sum overflowed. `first`/`last` are the values at `first_ts`/`last_ts`, the earliest and latest rows
//! where the column is not null.
//!
//! Version history: **1** (foundation); **2** (storage v2) adds `gen_min` and `tombstones_applied` to
//! the footer (compaction, see [`crate::compaction`]) and shrinks the block index about fourfold
//! (varint statistics, implicit chunk offsets); **3** keeps version 2's layout but lets float chunks use
//! the Alp and Gorilla codecs (a version-2 reader would fail on them block by block, as "corrupt");
//! **4** adds packs (above); **5** keeps version 4's layout but lets a block's numeric columns use the
//! PcoPaged codec (pco pages that decode on their own, so a read of a time range decodes only the pages
//! holding it; see [`crate::codec`]); **6** ends each unpacked block entry with a reference to its hour
//! statistics ([`crate::hours`]), a chunk written after its column chunks, present when the block touches
//! two clock hours or more. Header and trailer carry the version. This build writes 6 and reads 1 to 6: a version-1 file reads
//! as `gen_min = generation`, `tombstones_applied = 0`; a version-1 or 2 file using Alp or Gorilla, or a
//! version-1 to 4 file using PcoPaged, is corrupt.
//!
//! A segment holds the rows of flush generations `gen_min..=generation` (one generation for a flush,
//! a contiguous run for a compaction output), and has had every tombstone with id
//! `<= tombstones_applied` applied to it (0: none).
//!
//! Blocks are sorted by (series, ts_min); blocks of one series never overlap in time; a block holds at
//! most [`BLOCK_ROWS_MAX`] rows with strictly increasing timestamps, all inside the partition. Every chunk
//! and the footer carry a CRC32C checked when read, and the writer checks each block's invariants right
//! before encoding it while the reader checks them again right after decoding (paired assertions).
//!
//! **In memory** (not part of the format, which this does not change): [`Segment::open`] reads the
//! footer, checks its CRC and decodes it once, streaming, checking every block, then drops it. What an
//! open segment keeps is a sparse index, one `Group` entry per [`FOOTER_GROUP_BLOCKS`] consecutive blocks:
//! the first and last series, the time range, where the group's blocks are in the footer, where its
//! first chunk starts (the state a version-2 block decoder carries: previous series and next chunk
//! offset), and a CRC32C of the group's bytes taken at open. That is under a byte per block, against
//! about 1 KB per block of ten columns for decoded [`BlockMeta`]s, which at one block per series was the
//! bulk of the memory per series. A read finds the groups of a series by binary search, and the group's
//! blocks come from the engine's [`BlockIndexCache`] (bounded in bytes) or are read again from the footer
//! region of the file, checked against the group CRC (a change after open is `Corrupt`), decoded by the
//! same per-block decoder and checked again.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::catalog::{ColId, DbId, SeriesId, TableId};
use crate::codec;
use crate::encoding::{Reader, put_i64, put_ivarint, put_u8, put_u32, put_u64, put_uvarint};
use crate::error::{Error, Result};
use crate::frame;
use crate::hours::{self, HourStats};
use crate::block_cache::BlockIndexCache;
use crate::fifo::FifoCache;
use crate::limits::{
    BLOCK_ROWS_MAX, COLUMNS_PER_TABLE_MAX, DECODED_PACKS_BYTES_MAX, FOOTER_GROUP_BLOCKS, HOUR_CHUNKS_BYTES_MAX, PACK_BLOCK_ROWS_MAX, PACK_ROWS_MAX,
    PACK_ROWS_TARGET, PACK_SERIES_MAX,
};
use crate::rows::{ColsRef, RowsRef, SeriesRows};
use crate::throttle::TokenBucket;
use crate::types::{Column, ColumnValues, FieldType, Value};

pub const MAGIC: &[u8; 8] = b"SDSEG\0\0\0";
pub const TRAILER_MAGIC: &[u8; 8] = b"SDSEGEND";
/// First version whose blocks may carry an hour-statistics chunk ([`crate::hours`]).
pub const HOURS_SEGMENT_VERSION: u32 = 6;
/// Format version this build writes. 3 has the same layout as 2, but float column chunks may use the
/// Alp and Gorilla codecs; the bump makes a version-2 build refuse such files at start-up (a clear
/// "newer version" error) instead of failing queries on them as "corrupt". 4 adds packs. 5 adds the
/// PcoPaged column codec (a block's numeric column in pages that decode on their own, see
/// [`codec`](crate::codec)); the layout is 4's. 6 adds a block's hour statistics ([`crate::hours`]):
/// a chunk after its column chunks, referenced from its footer entry.
pub const VERSION: u32 = 6;

/// Header flag (the header's last `u32`, zero before it existed): some of the file's column chunks were
/// encoded at [`codec::Effort::Quick`] (a flush's rows that compaction will merge, a merge of a partition
/// still written to). Compaction rewrites such a file at full effort once its partition is cold, alone if
/// it is the partition's only file. Readers need not look at it: a quick chunk decodes like any other.
/// The header is not checksummed: a damaged flag only changes how hard a later merge encodes.
pub const FLAG_QUICK: u32 = 1;
/// Where the flags are in the header.
const HEADER_FLAGS_OFFSET: u64 = 12;
/// Oldest format version this build still reads.
pub const VERSION_MIN: u32 = 1;
pub const TRAILER_BYTES: usize = 32;

/// Average rows per series below which a pack's value columns skip pco's delta search (see
/// `SegmentWriter::close_pack`). 2: at one row per series no value has a same-series neighbour; at
/// scenario 4's three rows per series two in three do, and the search is kept.
const PACK_DELTA_ROWS_PER_SERIES_MIN: usize = 2;

/// Where a chunk is in the file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChunkRef {
    pub offset: u64,
    pub len: u32,
    pub crc: u32,
}

/// Per-block, per-column statistics; see the module doc for the meaning of the raw values.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct ColStats {
    pub count: u32,
    pub min: u64,
    pub max: u64,
    pub sum: u64,
    pub sum_ok: bool,
    pub first: u64,
    pub last: u64,
    pub first_ts: i64,
    pub last_ts: i64,
}

/// Turns a raw statistic value into a typed one (`None` for strings, which keep no value statistics).
pub fn stat_value(ty: FieldType, raw: u64) -> Option<Value> {
    Some(match ty {
        FieldType::Float => Value::Float(f64::from_bits(raw)),
        FieldType::Integer => Value::Integer(raw as i64),
        FieldType::UInteger => Value::UInteger(raw),
        FieldType::Boolean => Value::Boolean(raw != 0),
        FieldType::String => return None,
    })
}

#[derive(Clone, Debug, PartialEq)]
pub struct ColMeta {
    pub col: ColId,
    pub ty: FieldType,
    pub chunk: ChunkRef,
    pub stats: ColStats,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BlockMeta {
    pub series: SeriesId,
    pub n_rows: u32,
    pub ts_min: i64,
    pub ts_max: i64,
    /// The block's timestamp chunk; for a packed block, the pack's (all its series' rows).
    pub ts_chunk: ChunkRef,
    /// Columns with at least one value in the block. A packed block's chunks are the pack's, its
    /// statistics those of its own rows (computed when the group holding it is decoded). Shared: before
    /// that, every packed block of a pack has the pack's columns, one allocation for all of them.
    pub cols: Arc<[ColMeta]>,
    /// `Some` for a block stored in a pack (version 4): where its rows are among the pack's.
    pub pack: Option<PackSlice>,
    /// The block's hour statistics (version 6, see [`crate::hours`]): `None` for a block within one
    /// hour, a packed block, or an older file.
    pub hours: Option<ChunkRef>,
}

/// Where a packed block's rows are: rows `row_off..row_off + n_rows` of a pack of `rows` rows, whose
/// timestamp chunk and column chunks hold those of several consecutive series, one after the other.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PackSlice {
    pub row_off: u32,
    pub rows: u32,
}

impl BlockMeta {
    pub fn col(&self, col: ColId) -> Option<&ColMeta> {
        self.cols.iter().find(|c| c.col == col)
    }

    /// A packed block's rows among its pack's (`None` for a block of its own).
    fn pack_rows(&self) -> Option<std::ops::Range<usize>> {
        self.pack.map(|p| p.row_off as usize..(p.row_off + self.n_rows) as usize)
    }
}

/// Identity of a segment, stored in its footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentId {
    pub db: DbId,
    pub table: TableId,
    pub partition_start: i64,
    pub partition_ns: i64,
    /// Newest flush generation whose rows the segment holds: a higher generation holds newer writes
    /// (wins on duplicates). Segments of one table and partition are ordered by it.
    pub generation: u64,
    /// Oldest flush generation whose rows the segment holds (`== generation` for a flush output).
    pub gen_min: u64,
    /// Every tombstone with an id up to this one has been applied to the rows (0: none).
    pub tombstones_applied: u64,
}

/// The first nanosecond of the partition holding `ts`.
pub fn partition_start(ts: i64, partition_ns: i64) -> i64 {
    let p = i128::from(partition_ns);
    let start = i128::from(ts).div_euclid(p) * p;
    start.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Statistics of rows `range` of `c`, whose timestamps are `ts` (`ts[k]` is row `range.start + k`).
/// Reads the column in place: a pack's blocks are slices of its columns.
fn stats_of(ts: &[i64], c: &Column, range: std::ops::Range<usize>) -> ColStats {
    let mut s = ColStats { sum_ok: true, ..ColStats::default() };
    let validity = &c.validity[range.clone()];
    let (Some(fk), Some(lk)) = (validity.iter().position(|v| *v), validity.iter().rposition(|v| *v)) else { return s };
    s.count = validity.iter().filter(|v| **v).count() as u32;
    s.first_ts = ts[fk];
    s.last_ts = ts[lk];
    let (fi, li) = (range.start + fk, range.start + lk);
    let valid = |i: &usize| c.validity[*i];
    // A column without nulls (the usual case) is read as a slice: no validity test per value.
    let dense = s.count as usize == validity.len();
    match &c.values {
        ColumnValues::Float(v) => {
            let (min, max, sum) = if dense {
                float_min_max_sum(v[range].iter().copied())
            } else {
                float_min_max_sum(range.filter(valid).map(|i| v[i]))
            };
            (s.min, s.max, s.sum) = (min.to_bits(), max.to_bits(), sum.to_bits());
            (s.first, s.last) = (v[fi].to_bits(), v[li].to_bits());
        }
        ColumnValues::Integer(v) => {
            let (min, max, sum) = if dense {
                int_min_max_sum(v[range].iter().copied())
            } else {
                int_min_max_sum(range.filter(valid).map(|i| v[i]))
            };
            (s.min, s.max) = (min as u64, max as u64);
            (s.sum, s.sum_ok) = (sum.unwrap_or(0) as u64, sum.is_some());
            (s.first, s.last) = (v[fi] as u64, v[li] as u64);
        }
        ColumnValues::UInteger(v) => {
            let mut it = range.clone().filter(valid).map(|i| v[i]);
            s.min = it.clone().min().unwrap_or(0);
            s.max = it.clone().max().unwrap_or(0);
            let sum = it.try_fold(0u64, u64::checked_add);
            (s.sum, s.sum_ok) = (sum.unwrap_or(0), sum.is_some());
            (s.first, s.last) = (v[fi], v[li]);
        }
        ColumnValues::Boolean(v) => {
            let trues = range.clone().filter(valid).filter(|i| v[*i]).count() as u64;
            s.min = u64::from(trues == u64::from(s.count));
            s.max = u64::from(trues > 0);
            s.sum = trues;
            (s.first, s.last) = (u64::from(v[fi]), u64::from(v[li]));
        }
        ColumnValues::String(_) => {}
    }
    s
}

/// The minimum, maximum and sum of `vals` (non-empty), the sum `None` where a running sum overflows an
/// `i64`, as `checked_add` from the first value on would find. When no running sum can overflow (every
/// value within `i64::MAX / n` of zero) the sum is a plain one, which the compiler vectorises: every
/// flushed and merged block's statistics and hour statistics come through here, and the checked sum
/// of each value was most of their cost.
pub(crate) fn int_min_max_sum(vals: impl Iterator<Item = i64> + Clone) -> (i64, i64, Option<i64>) {
    let (mut min, mut max, mut n) = (i64::MAX, i64::MIN, 0usize);
    for x in vals.clone() {
        (min, max, n) = (min.min(x), max.max(x), n + 1);
    }
    let bound = i64::MAX / i64::try_from(n.max(1)).unwrap_or(i64::MAX);
    let sum = if -bound <= min && max <= bound {
        Some(vals.fold(0i64, i64::wrapping_add))
    } else {
        vals.fold(Some(0i64), |a, x| a?.checked_add(x))
    };
    (min, max, sum)
}

/// The minimum, maximum (`f64::min`/`max`: a NaN is passed over) and sum of `vals`, in one pass (the sum
/// starts at −0.0, as `Iterator::sum` does, so that −0.0 values sum to −0.0).
fn float_min_max_sum(vals: impl Iterator<Item = f64>) -> (f64, f64, f64) {
    let (mut min, mut max, mut sum) = (f64::INFINITY, f64::NEG_INFINITY, -0.0);
    for x in vals {
        (min, max, sum) = (min.min(x), max.max(x), sum + x);
    }
    (min, max, sum)
}

/// Writes one segment file. Blocks must be added in (series, time) order.
pub struct SegmentWriter {
    id: SegmentId,
    tmp_path: PathBuf,
    path: PathBuf,
    out: BufWriter<File>,
    offset: u64,
    /// The footer's block entries, encoded as each block is written ([`encode_block_entry`]), and how
    /// many. Why not the blocks themselves until [`SegmentWriter::finish`]: a [`BlockMeta`] is about
    /// 100 bytes, an entry 2 for a packed block; a merge of TSBS's 10 M one-row series held a gigabyte of
    /// them, pages the kernel zeroed first (9 % of the server's CPU loading it, in flushes and merges).
    entries: Vec<u8>,
    block_count: u32,
    /// The last block written: its series and last timestamp, for the order checks.
    last: Option<(SeriesId, i64)>,
    /// Every block as written, for tests to compare with what a reader decodes.
    #[cfg(test)]
    written: Vec<BlockMeta>,
    scratch: Vec<u8>,
    /// Compaction's bandwidth cap (`None` for flushes, which must keep up with ingest).
    throttle: Option<Arc<TokenBucket>>,
    /// Small blocks waiting to be written as one pack (see [`PACK_BLOCK_ROWS_MAX`]).
    pack: PackBuilder,
    /// Format version written: [`VERSION`], or 3 (no packs) for tests of older layouts.
    version: u32,
    /// pco's delta choices carried from block to block ([`SegmentWriter::with_delta_hints`]).
    delta_hints: Option<DeltaHints>,
    /// The same from pack to pack: a pack's columns (runs of many series' few rows each) are another
    /// shape of numbers than a block's, so they keep choices of their own.
    pack_hints: Option<DeltaHints>,
    /// Series written at [`codec::Effort::Quick`], ascending ([`SegmentWriter::with_rewritten`]).
    rewritten: Vec<SeriesId>,
    /// The effort of every block and pack ([`SegmentWriter::with_effort`]); `Full` leaves it to
    /// `rewritten`.
    effort: codec::Effort,
    /// A chunk was written at [`codec::Effort::Quick`], or a pack copied from a [`FLAG_QUICK`] file:
    /// [`SegmentWriter::finish`] sets the flag.
    quick_written: bool,
}

/// Blocks of a column that share one search of pco's delta ([`SegmentWriter::with_delta_hints`]): the
/// first searches, the other 15 reuse its choice. A column whose series differ in kind (a walk in one,
/// noise in the next) gets a worse delta on at most 15 blocks between searches.
const DELTA_HINT_BLOCKS: u32 = 16;

/// Per column: the delta pco's last search chose, and how many blocks have reused it since.
#[derive(Default)]
struct DeltaHints {
    by_col: crate::FastMap<ColId, (codec::Delta, u32)>,
}

impl DeltaHints {
    /// The delta to ask pco for in the next block of `col`.
    fn next(&mut self, col: ColId) -> codec::Delta {
        match self.by_col.get_mut(&col) {
            Some((delta, uses)) if *delta != codec::Delta::Auto && *uses + 1 < DELTA_HINT_BLOCKS => {
                *uses += 1;
                *delta
            }
            _ => codec::Delta::Auto,
        }
    }

    /// Records what a block of `col` asked for and what pco then said to ask for next.
    fn record(&mut self, col: ColId, asked: codec::Delta, next: codec::Delta) {
        if asked == codec::Delta::Auto {
            self.by_col.insert(col, (next, 0));
        }
    }
}

/// Which of a writer's delta hints a column chunk uses ([`SegmentWriter::put_column_hinted`]).
#[derive(Clone, Copy)]
enum Hints {
    Block,
    Pack,
}

/// The rows of the small blocks of consecutive series, gathered until the pack is closed.
#[derive(Default)]
struct PackBuilder {
    /// One entry per series: its block without chunks or statistics (the pack's, filled at close).
    members: Vec<BlockMeta>,
    ts: Vec<i64>,
    /// Columns by id, each `ts.len()` rows long (nulls where a series has no value).
    cols: Vec<(ColId, Column)>,
}

impl PackBuilder {
    fn push(&mut self, rows: &SeriesRows, range: std::ops::Range<usize>, col_ids: &[ColId]) -> Result<()> {
        let off = self.ts.len();
        let ts = &rows.ts[range.clone()];
        self.ts.extend_from_slice(ts);
        for (k, (id, c)) in col_ids.iter().zip(&rows.cols).enumerate() {
            let Some(c) = c else { continue };
            // A table's series mostly have the same columns in the same order: the pack's column at the
            // series' position is usually the one, found without a search per value (a pack of a million
            // one-row series asked ten million times).
            let found = if self.cols.get(k).is_some_and(|(i, _)| i == id) {
                Some(k)
            } else {
                self.cols.iter().position(|(i, _)| i == id)
            };
            let at = match found {
                Some(at) => at,
                None => {
                    self.cols.push((*id, Column::nulls(c.field_type(), off)));
                    self.cols.len() - 1
                }
            };
            let pc = &mut self.cols[at].1;
            if pc.field_type() != c.field_type() {
                return Err(Error::internal(format!("column {id} is {:?} in one series and {:?} in another", pc.field_type(), c.field_type())));
            }
            pc.extend_range(c, range.clone());
        }
        for (_, pc) in self.cols.iter_mut().filter(|(_, pc)| pc.len() < self.ts.len()) {
            pc.push_nulls(self.ts.len() - pc.len());
        }
        self.members.push(BlockMeta {
            series: rows.series,
            n_rows: ts.len() as u32,
            ts_min: ts[0],
            ts_max: ts[ts.len() - 1],
            ts_chunk: ChunkRef { offset: 0, len: 0, crc: 0 },
            cols: Arc::default(),
            pack: Some(PackSlice { row_off: off as u32, rows: 0 }),
            hours: None,
        });
        Ok(())
    }

    /// Takes the last series back out of the pack: its rows and the column ids they are under.
    fn pop(&mut self) -> Option<(SeriesRows, Vec<ColId>)> {
        let m = self.members.pop()?;
        let off = m.pack_rows()?.start;
        let ts = self.ts.split_off(off);
        let mut cols = Vec::with_capacity(self.cols.len());
        for (_, c) in &mut self.cols {
            let tail = c.slice(off..c.len());
            *c = c.slice(0..off);
            cols.push(Some(tail));
        }
        let ids = self.cols.iter().map(|(i, _)| *i).collect();
        Some((SeriesRows { series: m.series, ts, cols }, ids))
    }
}

/// A segment's series and packs, as a compaction plans its merge ([`Segment::layout`]).
#[derive(Default)]
pub struct Layout {
    /// Every series with a block, ascending.
    pub series: Vec<SeriesId>,
    /// Every pack, in file order (so by series).
    pub packs: Vec<PackSpan>,
    /// Every packed block's series and row count, pack after pack.
    members: Vec<(SeriesId, u32)>,
}

impl Layout {
    /// The series of pack `p` and their row counts, in the pack's order.
    pub fn members(&self, p: &PackSpan) -> &[(SeriesId, u32)] {
        &self.members[p.members.clone()]
    }

    /// True when this segment has a block of some series in `first..=last`.
    pub fn has_series_in(&self, first: SeriesId, last: SeriesId) -> bool {
        let i = self.series.partition_point(|s| *s < first);
        self.series.get(i).is_some_and(|s| *s <= last)
    }
}

/// One pack of a segment as its footer describes it: its members' series range, its rows, time range
/// and chunks (timestamps, then columns in header order).
#[derive(Clone, Debug)]
pub struct PackSpan {
    pub first: SeriesId,
    pub last: SeriesId,
    /// Its entries in [`Layout::members`].
    members: std::ops::Range<usize>,
    pub rows: u32,
    pub ts_min: i64,
    pub ts_max: i64,
    ts_chunk: ChunkRef,
    /// The pack's columns (statistics empty).
    cols: Arc<[ColMeta]>,
}

/// A pack as the footer describes it, at its first series.
struct PackMeta {
    rows: u32,
    ts_min: i64,
    ts_max: i64,
    ts_chunk: ChunkRef,
    cols: Vec<(ColId, FieldType, ChunkRef)>,
}

impl SegmentWriter {
    /// Starts `path` (written as `path.tmp` and renamed by [`SegmentWriter::finish`]).
    pub fn create(path: &Path, id: SegmentId) -> Result<SegmentWriter> {
        Self::create_version(path, id, VERSION)
    }

    /// [`SegmentWriter::create`] writing format `version`: [`VERSION`], 4 (no PcoPaged), or 3 (every
    /// block on its own, as before packs), which tests use to compare them and to read older layouts.
    pub fn create_version(path: &Path, id: SegmentId, version: u32) -> Result<SegmentWriter> {
        assert!((3..=VERSION).contains(&version), "this build writes segment versions 3 to {VERSION}");
        let tmp_path = path.with_extension("seg.tmp");
        let f = File::create(&tmp_path).map_err(|e| Error::io(&tmp_path, e))?;
        let mut w = SegmentWriter {
            id,
            tmp_path,
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(1 << 20, f),
            offset: 0,
            entries: Vec::new(),
            block_count: 0,
            last: None,
            #[cfg(test)]
            written: Vec::new(),
            scratch: Vec::new(),
            throttle: None,
            pack: PackBuilder::default(),
            version,
            delta_hints: None,
            pack_hints: None,
            rewritten: Vec::new(),
            effort: codec::Effort::Full,
            quick_written: false,
        };
        w.put(&frame::header(MAGIC, version))?;
        Ok(w)
    }

    /// Paces every later write through `throttle` (compaction's rate limit, see [`crate::throttle`]).
    pub fn with_throttle(mut self, throttle: Option<Arc<TokenBucket>>) -> SegmentWriter {
        self.throttle = throttle;
        self
    }

    /// Makes room for the footer entries of `n` series up front (a series has at least one block, a
    /// packed one [`ENTRY_BYTES_HINT`] bytes). Why: grown by doubling, each step copied the entries and had
    /// the kernel zero fresh pages for them (3 % of the server's CPU loading TSBS's 10 M hosts, from
    /// compaction alone, when they were 100-byte [`BlockMeta`]s); room reserved and not used is never
    /// touched.
    pub fn with_series_hint(mut self, n: usize) -> SegmentWriter {
        self.entries.reserve(n.saturating_mul(ENTRY_BYTES_HINT));
        self
    }

    /// Writes the field columns of `series` (ascending) at [`codec::Effort::Quick`]: a flush's rows of
    /// series the partition's files already hold, which compaction merges with those rows (decoding and
    /// writing them again at full effort) rather than copying them. A pack is written quick only when
    /// every one of its series is, as compaction copies a pack whose series no other input holds.
    /// Timestamps keep their usual encoding.
    pub fn with_rewritten(mut self, series: Vec<SeriesId>) -> SegmentWriter {
        debug_assert!(series.windows(2).all(|w| w[0] < w[1]), "rewritten series must be ascending");
        self.rewritten = series;
        self
    }

    /// Writes every block and pack at `effort`: a compaction of a partition still written to, whose
    /// output a later merge rewrites (see [`FLAG_QUICK`]).
    pub fn with_effort(mut self, effort: codec::Effort) -> SegmentWriter {
        self.effort = effort;
        self
    }

    fn effort_of(&self, series: SeriesId) -> codec::Effort {
        if self.effort == codec::Effort::Quick || self.rewritten.binary_search(&series).is_ok() {
            codec::Effort::Quick
        } else {
            codec::Effort::Full
        }
    }

    /// Carries pco's delta choice for a column from block to block, searching again every
    /// [`DELTA_HINT_BLOCKS`] blocks ([`codec::encode_column_hinted`]): what a flush does, whose files
    /// compaction rewrites with a search per block. Every series of a table usually has the same kind of
    /// values in a column (TSBS: the search picks order 1 for every block), so the choice rarely
    /// changes, and a flush of thousands of small blocks spends a third of the time it did. Packs carry
    /// their own choices the same way (`pack_hints`).
    pub fn with_delta_hints(mut self) -> SegmentWriter {
        self.delta_hints = Some(DeltaHints::default());
        self.pack_hints = Some(DeltaHints::default());
        self
    }

    /// Writes the chunk `encode` appends to an empty buffer (the writer's reused scratch).
    fn put_encoded(&mut self, encode: impl FnOnce(&mut Vec<u8>)) -> Result<ChunkRef> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        encode(&mut scratch);
        let chunk = self.put(&scratch);
        self.scratch = scratch;
        chunk
    }

    fn put(&mut self, b: &[u8]) -> Result<ChunkRef> {
        self.put_parts(&[b])
    }

    /// Writes `parts` back to back as one chunk.
    fn put_parts(&mut self, parts: &[&[u8]]) -> Result<ChunkRef> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let crc = parts.iter().fold(0, |crc, p| crc32c::crc32c_append(crc, p));
        let r = ChunkRef { offset: self.offset, len: len as u32, crc };
        if let Some(t) = &self.throttle {
            t.acquire(len as u64);
        }
        for p in parts {
            self.out.write_all(p).map_err(|e| Error::io(&self.tmp_path, e))?;
        }
        self.offset += len as u64;
        Ok(r)
    }

    /// Appends `b`'s footer entry (`pack`: the pack it opens, at a pack's first member) and makes it
    /// the last block.
    fn push_entry(&mut self, b: &BlockMeta, pack: Option<&PackMeta>) {
        let prev_series = self.last.map_or(0, |(s, _)| s);
        encode_block_entry(&mut self.entries, self.id.partition_start, self.version, prev_series, b, pack);
        self.block_count += 1;
        self.last = Some((b.series, b.ts_max));
        #[cfg(test)]
        self.written.push(b.clone());
    }

    fn check_block(&self, rows: &SeriesRows, range: &std::ops::Range<usize>) -> Result<()> {
        let ts = &rows.ts[range.clone()];
        let bad = |what: String| Err(Error::internal(format!("block of series {} rejected: {what}", rows.series)));
        if ts.is_empty() || ts.len() > BLOCK_ROWS_MAX {
            return bad(format!("{} rows", ts.len()));
        }
        if ts.windows(2).any(|w| w[0] >= w[1]) {
            return bad("timestamps not strictly increasing".into());
        }
        let p = self.id.partition_start;
        if ts[0] < p || (ts[ts.len() - 1] - p) >= self.id.partition_ns {
            return bad("timestamps outside the partition".into());
        }
        if let Some((series, ts_max)) = self.pack.members.last().map(|m| (m.series, m.ts_max)).or(self.last)
            && (series > rows.series || (series == rows.series && ts_max >= ts[0]))
        {
            return bad("blocks out of (series, time) order".into());
        }
        Ok(())
    }

    /// Writes rows `range` of `rows` as one block. `cols` gives the id of each column in `rows.cols`.
    ///
    /// A block of at most [`PACK_BLOCK_ROWS_MAX`] rows goes into the open pack, unless its series turns
    /// out to have another block (a packed series has exactly one block in the segment: the footer
    /// knows a packed block's time range only once its pack is decoded, so it cannot order two blocks
    /// of one series): then that series' earlier block leaves the pack and both are written on their own.
    pub fn add_block(&mut self, rows: &SeriesRows, range: std::ops::Range<usize>, cols: &[ColId]) -> Result<()> {
        self.check_block(rows, &range)?;
        if self.pack.members.last().is_some_and(|m| m.series == rows.series) {
            let (prev, prev_cols) = self.pack.pop().expect("a member was just seen");
            self.close_pack()?;
            self.write_block(&prev, 0..prev.len(), &prev_cols)?;
            return self.write_block(rows, range, cols);
        }
        let first_of_series = self.last.is_none_or(|(series, _)| series != rows.series);
        if self.version >= 4 && range.len() <= PACK_BLOCK_ROWS_MAX && first_of_series {
            if self.pack.ts.len() >= PACK_ROWS_TARGET || self.pack.members.len() >= PACK_SERIES_MAX {
                self.close_pack()?;
            }
            return self.pack.push(rows, range, cols);
        }
        self.close_pack()?;
        self.write_block(rows, range, cols)
    }

    /// Copies pack `p` of `src` (a segment of this format version and partition), with `members` (its
    /// entry in `src`'s [`Layout`]), without decoding it: its chunks' bytes are read, their checksums
    /// checked, and written as they are; the footer describes it as `src`'s did. A compaction does this
    /// with a pack whose series no other input has (every pack of a flush of new series): merging
    /// re-encoded its rows into the same pack, after decoding it and computing every member's statistics.
    /// Its members must come after every series written so far.
    pub fn copy_pack(&mut self, src: &Segment, p: &PackSpan, members: &[(SeriesId, u32)]) -> Result<()> {
        let bad = |what: &str| Err(Error::internal(format!("pack of series {}..={} of {} not copied: {what}", p.first, p.last, src.path.display())));
        if src.version != self.version || src.id.partition_start != self.id.partition_start || src.id.partition_ns != self.id.partition_ns {
            return bad("another format version or partition");
        }
        if src.quick && self.effort == codec::Effort::Full {
            // Its chunks may be quick ones, which a full-effort file exists to replace.
            return bad("a file written quick copied into one written at full effort");
        }
        if members.first().map(|m| m.0) != Some(p.first)
            || members.last().map(|m| m.0) != Some(p.last)
            || members.windows(2).any(|w| w[0].0 >= w[1].0)
            || members.iter().map(|m| u64::from(m.1)).sum::<u64>() != u64::from(p.rows)
        {
            return bad("members disagree with the pack");
        }
        self.close_pack()?;
        if self.last.is_some_and(|(series, _)| series >= p.first) {
            return bad("blocks out of series order");
        }
        // The pack's chunks are back to back: one read, each chunk's checksum checked.
        let chunks: Vec<&ChunkRef> = std::iter::once(&p.ts_chunk).chain(p.cols.iter().map(|m| &m.chunk)).collect();
        let bytes = src.read_chunks(&chunks)?;
        let refs = (0..chunks.len()).map(|i| self.put(bytes.get(i))).collect::<Result<Vec<ChunkRef>>>()?;
        let ts_chunk = refs[0];
        let cols = p.cols.iter().zip(&refs[1..]).map(|(m, chunk)| (m.col, m.ty, *chunk)).collect();
        let meta = PackMeta { rows: p.rows, ts_min: p.ts_min, ts_max: p.ts_max, ts_chunk, cols };
        self.quick_written |= src.quick;
        let no_cols: Arc<[ColMeta]> = Arc::default();
        let mut row_off = 0;
        for &(series, n_rows) in members {
            let b = BlockMeta {
                series,
                n_rows,
                ts_min: p.ts_min,
                ts_max: p.ts_max,
                ts_chunk,
                cols: Arc::clone(&no_cols),
                pack: Some(PackSlice { row_off, rows: p.rows }),
                hours: None,
            };
            self.push_entry(&b, (row_off == 0).then_some(&meta));
            row_off += n_rows;
        }
        Ok(())
    }

    /// Writes the open pack's chunks (timestamps, then each column with a value, by column id) and
    /// moves its series to the block list.
    fn close_pack(&mut self) -> Result<()> {
        if self.pack.members.is_empty() {
            return Ok(());
        }
        let mut pack = std::mem::take(&mut self.pack);
        pack.cols.sort_unstable_by_key(|(id, _)| *id);
        let ts_chunk = self.put_encoded(|out| codec::encode_timestamps(&pack.ts, out))?;
        // A pack whose series have fewer than two rows each on average (the first flush of new series,
        // one row each) holds mostly neighbours from different series: pco's delta search finds nothing
        // there and costs a sample compression per candidate. With more rows per series, runs of one
        // series' values are what delta exploits: searched as in any block, and the choice carried from
        // pack to pack as from block to block (TSBS's 1 M hosts, three rows each: the search was half
        // of the packs' encoding).
        let unrelated = pack.ts.len() < PACK_DELTA_ROWS_PER_SERIES_MIN * pack.members.len();
        let quick = pack.members.iter().all(|m| self.effort_of(m.series) == codec::Effort::Quick);
        let effort = if quick { codec::Effort::Quick } else { codec::Effort::Full };
        self.quick_written |= quick;
        let mut cols = Vec::with_capacity(pack.cols.len());
        for (id, c) in &pack.cols {
            if c.validity.iter().all(|v| !*v) {
                continue;
            }
            let chunk = if unrelated {
                self.put_encoded(|out| {
                    codec::encode_column_hinted(c, codec::Delta::Off, false, effort, out);
                })?
            } else {
                self.put_column_hinted(*id, c, Hints::Pack, false, effort)?
            };
            cols.push((*id, c.field_type(), chunk));
        }
        let rows = pack.ts.len() as u32;
        let (ts_min, ts_max) = (pack.ts.iter().copied().min().unwrap_or(0), pack.ts.iter().copied().max().unwrap_or(0));
        let meta = PackMeta { rows, ts_min, ts_max, ts_chunk, cols };
        for (k, mut m) in pack.members.into_iter().enumerate() {
            m.ts_chunk = ts_chunk;
            if let Some(p) = m.pack.as_mut() {
                p.rows = rows;
            }
            self.push_entry(&m, (k == 0).then_some(&meta));
        }
        Ok(())
    }

    /// Writes column `col`'s chunk `c` with pco's delta as the `which` hints carry it (a search when
    /// there are none, or when they say so), and records what pco chose: a block's columns and a pack's
    /// (of series of a few rows each) keep their own choices.
    fn put_column_hinted(&mut self, col: ColId, c: &Column, which: Hints, paged: bool, effort: codec::Effort) -> Result<ChunkRef> {
        let asked = self.hints(which).map_or(codec::Delta::Auto, |h| h.next(col));
        let mut next = codec::Delta::Auto;
        let chunk = self.put_encoded(|out| next = codec::encode_column_hinted(c, asked, paged, effort, out))?;
        if let Some(h) = self.hints(which) {
            h.record(col, asked, next);
        }
        Ok(chunk)
    }

    fn hints(&mut self, which: Hints) -> Option<&mut DeltaHints> {
        match which {
            Hints::Block => self.delta_hints.as_mut(),
            Hints::Pack => self.pack_hints.as_mut(),
        }
    }

    /// Writes rows `range` of `rows` as a block of its own.
    fn write_block(&mut self, rows: &SeriesRows, range: std::ops::Range<usize>, cols: &[ColId]) -> Result<()> {
        let ts = &rows.ts[range.clone()];
        let ts_chunk = self.put_encoded(|out| codec::encode_timestamps(ts, out))?;
        let effort = self.effort_of(rows.series);
        self.quick_written |= effort == codec::Effort::Quick;
        let mut metas = Vec::new();
        let mut sliced = Vec::new();
        for (col, c) in cols.iter().zip(&rows.cols) {
            let Some(c) = c else { continue };
            let stats = stats_of(ts, c, range.clone());
            if stats.count == 0 {
                continue;
            }
            let paged = self.version >= codec::PAGED_SEGMENT_VERSION;
            let c = c.slice(range.clone());
            let chunk = self.put_column_hinted(*col, &c, Hints::Block, paged, effort)?;
            metas.push(ColMeta { col: *col, ty: c.field_type(), chunk, stats });
            sliced.push((*col, c));
        }
        let hours = if self.version >= HOURS_SEGMENT_VERSION && hours::wanted(ts[0], ts[ts.len() - 1]) {
            Some(self.put_encoded(|out| hours::encode(ts, &sliced, out))?)
        } else {
            None
        };
        let b = BlockMeta {
            hours,
            series: rows.series,
            n_rows: ts.len() as u32,
            ts_min: ts[0],
            ts_max: ts[ts.len() - 1],
            ts_chunk,
            cols: metas.into(),
            pack: None,
        };
        self.push_entry(&b, None);
        Ok(())
    }

    /// Writes all of `rows` (already inside this partition) as blocks of at most [`BLOCK_ROWS_MAX`] rows.
    pub fn add_series(&mut self, rows: &SeriesRows, cols: &[ColId]) -> Result<()> {
        let mut start = 0;
        while start < rows.len() {
            let end = (start + BLOCK_ROWS_MAX).min(rows.len());
            self.add_block(rows, start..end, cols)?;
            start = end;
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.block_count == 0 && self.pack.members.is_empty()
    }

    /// Gives up: removes the temporary file (a leftover would also be removed at the next start).
    pub fn abandon(self) {
        let tmp = self.tmp_path.clone();
        drop(self.out);
        let _ = std::fs::remove_file(tmp);
    }

    /// Writes footer and trailer, fsyncs, and renames the file into place. The caller fsyncs the directory.
    pub fn finish(mut self) -> Result<PathBuf> {
        self.close_pack()?;
        let head = encode_footer_head(&self.id, self.block_count);
        let entries = std::mem::take(&mut self.entries);
        let footer_ref = self.put_parts(&[&head, &entries])?;
        let mut t = Vec::with_capacity(TRAILER_BYTES);
        put_u64(&mut t, footer_ref.offset);
        put_u32(&mut t, footer_ref.len);
        put_u32(&mut t, footer_ref.crc);
        put_u32(&mut t, self.block_count);
        put_u32(&mut t, self.version);
        t.extend_from_slice(TRAILER_MAGIC);
        self.put(&t)?;
        let io = |e| Error::io(&self.tmp_path, e);
        let f = self.out.into_inner().map_err(|e| io(e.into_error()))?;
        if self.quick_written {
            // Known only now; the header was the file's first write.
            f.write_all_at(&FLAG_QUICK.to_le_bytes(), HEADER_FLAGS_OFFSET).map_err(io)?;
        }
        f.sync_all().map_err(io)?;
        std::fs::rename(&self.tmp_path, &self.path).map_err(io)?;
        Ok(self.path)
    }
}

/// Footer entries a packed block takes (series delta, rows and flag: a byte each for short packs of
/// series numbered in turn), for [`SegmentWriter::with_series_hint`].
const ENTRY_BYTES_HINT: usize = 2;

/// The footer up to its block entries: the segment's identity and the number of blocks.
fn encode_footer_head(id: &SegmentId, blocks: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    put_u32(&mut out, id.db);
    put_u32(&mut out, id.table);
    put_i64(&mut out, id.partition_start);
    put_i64(&mut out, id.partition_ns);
    put_u64(&mut out, id.generation);
    put_u64(&mut out, id.gen_min);
    put_u64(&mut out, id.tombstones_applied);
    put_uvarint(&mut out, u64::from(blocks));
    out
}

/// Block `b`'s footer entry, after a block of series `prev_series` (0 for the first): the series as a
/// delta, rows, and either its time range, chunks and statistics, or, for a packed block, only the
/// pack's description at its first member (`pack`, `Some` exactly there).
fn encode_block_entry(out: &mut Vec<u8>, partition_start: i64, version: u32, prev_series: SeriesId, b: &BlockMeta, pack: Option<&PackMeta>) {
    put_uvarint(out, u64::from(b.series - prev_series));
    if version >= 4 {
        put_uvarint(out, u64::from(b.n_rows) << 1 | u64::from(b.pack.is_some()));
    } else {
        put_uvarint(out, u64::from(b.n_rows));
    }
    if let Some(slice) = b.pack {
        debug_assert_eq!(slice.row_off == 0, pack.is_some(), "a pack is described at its first member, only there");
        if let Some(p) = pack {
            put_uvarint(out, u64::from(p.rows));
            put_uvarint(out, p.ts_min.wrapping_sub(partition_start) as u64);
            put_uvarint(out, p.ts_max.wrapping_sub(p.ts_min) as u64);
            put_chunk(out, &p.ts_chunk);
            put_uvarint(out, p.cols.len() as u64);
            for (col, ty, chunk) in &p.cols {
                put_uvarint(out, u64::from(*col));
                put_u8(out, *ty as u8);
                put_chunk(out, chunk);
            }
        }
        return;
    }
    put_uvarint(out, b.ts_min.wrapping_sub(partition_start) as u64);
    put_uvarint(out, b.ts_max.wrapping_sub(b.ts_min) as u64);
    put_chunk(out, &b.ts_chunk);
    put_uvarint(out, b.cols.len() as u64);
    for c in b.cols.iter() {
        put_uvarint(out, u64::from(c.col));
        put_u8(out, c.ty as u8);
        put_chunk(out, &c.chunk);
        put_stats(out, c.ty, &c.stats, b);
    }
    if version >= HOURS_SEGMENT_VERSION {
        match &b.hours {
            Some(h) => put_chunk(out, h),
            None => put_uvarint(out, 0),
        }
    }
}

/// Version-2 statistics: small values as varints, relative to the block or to the minimum.
fn put_stats(out: &mut Vec<u8>, ty: FieldType, s: &ColStats, b: &BlockMeta) {
    put_uvarint(out, u64::from(s.count));
    if s.count == 0 {
        return;
    }
    put_uvarint(out, s.first_ts.wrapping_sub(b.ts_min) as u64);
    put_uvarint(out, b.ts_max.wrapping_sub(s.last_ts) as u64);
    match ty {
        FieldType::Integer | FieldType::UInteger => {
            if ty == FieldType::Integer {
                put_ivarint(out, s.min as i64);
            } else {
                put_uvarint(out, s.min);
            }
            for v in [s.max, s.first, s.last] {
                put_uvarint(out, v.wrapping_sub(s.min));
            }
            put_u8(out, u8::from(s.sum_ok));
            if s.sum_ok {
                if ty == FieldType::Integer { put_ivarint(out, s.sum as i64) } else { put_uvarint(out, s.sum) }
            }
        }
        FieldType::Float => {
            for v in [s.min, s.max, s.sum, s.first, s.last] {
                put_u64(out, v);
            }
        }
        FieldType::Boolean => {
            put_uvarint(out, s.sum);
            put_u8(out, s.first as u8);
            put_u8(out, s.last as u8);
        }
        FieldType::String => {}
    }
}

fn get_stats(r: &mut Reader<'_>, ty: FieldType, ts_min: i64, ts_max: i64) -> Option<ColStats> {
    let mut s = ColStats { count: u32::try_from(r.uvarint()?).ok()?, sum_ok: true, ..ColStats::default() };
    if s.count == 0 {
        return Some(s);
    }
    s.first_ts = ts_min.wrapping_add(r.uvarint()? as i64);
    s.last_ts = ts_max.wrapping_sub(r.uvarint()? as i64);
    match ty {
        FieldType::Integer | FieldType::UInteger => {
            s.min = if ty == FieldType::Integer { r.ivarint()? as u64 } else { r.uvarint()? };
            s.max = s.min.wrapping_add(r.uvarint()?);
            s.first = s.min.wrapping_add(r.uvarint()?);
            s.last = s.min.wrapping_add(r.uvarint()?);
            s.sum_ok = match r.u8()? {
                0 => false,
                1 => true,
                _ => return None,
            };
            if s.sum_ok {
                s.sum = if ty == FieldType::Integer { r.ivarint()? as u64 } else { r.uvarint()? };
            }
        }
        FieldType::Float => {
            (s.min, s.max, s.sum, s.first, s.last) = (r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?);
        }
        FieldType::Boolean => {
            s.sum = r.uvarint()?;
            (s.first, s.last) = (u64::from(r.u8()?), u64::from(r.u8()?));
            if s.sum > u64::from(s.count) || s.first > 1 || s.last > 1 {
                return None;
            }
            s.min = u64::from(s.sum == u64::from(s.count));
            s.max = u64::from(s.sum > 0);
        }
        FieldType::String => {}
    }
    Some(s)
}

/// Writes a version-2 chunk reference (read by [`get_chunk`]): length and checksum, no offset.
fn put_chunk(out: &mut Vec<u8>, c: &ChunkRef) {
    put_uvarint(out, u64::from(c.len));
    put_u32(out, c.crc);
}

/// A version-2 chunk reference: the length and checksum; the offset is where the previous chunk ended
/// (chunks are written back to back, in footer order, from the end of the header).
fn get_chunk(r: &mut Reader<'_>, next_offset: &mut u64) -> Option<ChunkRef> {
    let len = u32::try_from(r.uvarint()?).ok()?;
    take_chunk(r, len, next_offset)
}

/// The rest of a version-2 chunk reference whose length was read: its checksum, at `next_offset`.
fn take_chunk(r: &mut Reader<'_>, len: u32, next_offset: &mut u64) -> Option<ChunkRef> {
    let c = ChunkRef { offset: *next_offset, len, crc: r.u32()? };
    *next_offset = next_offset.checked_add(u64::from(len))?;
    Some(c)
}

/// The footer's fixed part: the segment's identity, then the block count.
fn decode_footer_head(r: &mut Reader<'_>, version: u32) -> Option<(SegmentId, usize)> {
    let (db, table, partition_start, partition_ns, generation) = (r.u32()?, r.u32()?, r.i64()?, r.i64()?, r.u64()?);
    // Version 3 has version 2's footer; only the codecs allowed in chunks differ.
    let (gen_min, tombstones_applied) = if version >= 2 { (r.u64()?, r.u64()?) } else { (generation, 0) };
    let id = SegmentId { db, table, partition_start, partition_ns, generation, gen_min, tombstones_applied };
    if id.gen_min > id.generation {
        return None;
    }
    let n = r.len(r.remaining())?;
    Some((id, n))
}

/// Decodes a footer's blocks one at a time. A version-2 block depends on the blocks before it only
/// through two values, carried here: the previous block's series (ids are deltas) and where the next
/// chunk starts (offsets are implicit). Starting from the state saved for a group of blocks at open, a
/// reader decodes that group alone (see [`Segment`]).
#[derive(Clone, Debug)]
struct BlockDecoder {
    version: u32,
    partition_start: i64,
    /// Series of the previous block (0 before the first).
    series: SeriesId,
    /// Where the next chunk starts (version 2 and later; version 1 stores offsets).
    next_offset: u64,
    /// The pack whose rows the next packed blocks take (version 4). A footer group never starts inside
    /// a pack, so a group decodes alone from `series` and `next_offset` as before.
    pack: Option<OpenPack>,
}

/// A pack being decoded: its header, and how many of its rows earlier blocks took.
#[derive(Clone, Debug)]
struct OpenPack {
    rows: u32,
    taken: u32,
    ts_min: i64,
    ts_max: i64,
    ts_chunk: ChunkRef,
    /// The pack's columns, statistics empty (a packed block's own are computed from the decoded pack).
    cols: Arc<[ColMeta]>,
}

impl BlockDecoder {
    fn new(version: u32, partition_start: i64) -> BlockDecoder {
        BlockDecoder { version, partition_start, series: 0, next_offset: frame::HEADER_BYTES as u64, pack: None }
    }

    /// True while a pack has rows no block has taken yet.
    fn inside_pack(&self) -> bool {
        self.pack.as_ref().is_some_and(|p| p.taken < p.rows)
    }

    /// A pack header (version 4): `rows ts_min_off ts_span ts_chunk n_cols (col type chunk)*`, column ids
    /// strictly ascending.
    fn decode_pack(&mut self, r: &mut Reader<'_>) -> Option<OpenPack> {
        let rows = u32::try_from(r.len(PACK_ROWS_MAX)?).ok().filter(|n| *n > 0)?;
        let ts_min = self.partition_start.wrapping_add(r.uvarint()? as i64);
        let ts_max = ts_min.wrapping_add(r.uvarint()? as i64);
        let ts_chunk = get_chunk(r, &mut self.next_offset)?;
        let nc = r.len(COLUMNS_PER_TABLE_MAX)?;
        let mut cols: Vec<ColMeta> = Vec::with_capacity(nc);
        for _ in 0..nc {
            let col = ColId::try_from(r.uvarint()?).ok()?;
            if cols.last().is_some_and(|c| c.col >= col) {
                return None;
            }
            let ty = FieldType::from_u8(r.u8()?)?;
            let chunk = get_chunk(r, &mut self.next_offset)?;
            cols.push(ColMeta { col, ty, chunk, stats: ColStats::default() });
        }
        Some(OpenPack { rows, taken: 0, ts_min, ts_max, ts_chunk, cols: cols.into() })
    }

    fn decode(&mut self, r: &mut Reader<'_>) -> Option<BlockMeta> {
        if self.version < 2 {
            let b = v1::decode_block(r)?;
            self.series = b.series;
            return Some(b);
        }
        let series = self.series.checked_add(u32::try_from(r.uvarint()?).ok()?)?;
        let head = r.uvarint()?;
        // Version 4 keeps a "packed" flag in the row count's low bit.
        let (n_rows, packed) = if self.version >= 4 { (head >> 1, head & 1 == 1) } else { (head, false) };
        let n_rows = u32::try_from(n_rows).ok()?;
        if packed {
            if !self.inside_pack() {
                self.pack = Some(self.decode_pack(r)?);
            }
            let p = self.pack.as_mut()?;
            if n_rows == 0 || n_rows > p.rows - p.taken {
                return None;
            }
            let slice = PackSlice { row_off: p.taken, rows: p.rows };
            p.taken += n_rows;
            self.series = series;
            // Time range and statistics are the pack's until the pack is decoded (`Segment::resolve_packs`).
            let (ts_min, ts_max, ts_chunk, cols) = (p.ts_min, p.ts_max, p.ts_chunk, Arc::clone(&p.cols));
            return Some(BlockMeta { series, n_rows, ts_min, ts_max, ts_chunk, cols, pack: Some(slice), hours: None });
        }
        if self.inside_pack() {
            return None;
        }
        let ts_min = self.partition_start.wrapping_add(r.uvarint()? as i64);
        let ts_max = ts_min.wrapping_add(r.uvarint()? as i64);
        let ts_chunk = get_chunk(r, &mut self.next_offset)?;
        let nc = r.len(COLUMNS_PER_TABLE_MAX)?;
        let mut cols = Vec::with_capacity(nc);
        for _ in 0..nc {
            let col = ColId::try_from(r.uvarint()?).ok()?;
            let ty = FieldType::from_u8(r.u8()?)?;
            let chunk = get_chunk(r, &mut self.next_offset)?;
            let stats = get_stats(r, ty, ts_min, ts_max)?;
            cols.push(ColMeta { col, ty, chunk, stats });
        }
        // Version 6: the hour statistics' chunk follows the column chunks (length 0: none, no CRC).
        let hours = match self.version >= HOURS_SEGMENT_VERSION {
            true => match u32::try_from(r.uvarint()?).ok()? {
                0 => None,
                len => Some(take_chunk(r, len, &mut self.next_offset)?),
            },
            false => None,
        };
        self.series = series;
        Some(BlockMeta { series, n_rows, ts_min, ts_max, ts_chunk, cols: cols.into(), pack: None, hours })
    }
}

/// The invariants of block `i` that readers rely on, given the previous block's (series, ts_max):
/// checked on every block at open and again on every group decoded later (the reader's half of the
/// paired assertions; the writer's half is `SegmentWriter::check_block`).
///
/// A packed block is its series' only block in the segment: before its pack is decoded its time range
/// is the pack's, which cannot order it against another block of the same series.
fn check_block(id: &SegmentId, data_end: u64, prev: Option<&BlockMeta>, i: usize, b: &BlockMeta) -> std::result::Result<(), String> {
    let in_file = |c: &ChunkRef| c.offset >= frame::HEADER_BYTES as u64 && c.offset.saturating_add(u64::from(c.len)) <= data_end;
    if b.n_rows == 0 || b.n_rows as usize > BLOCK_ROWS_MAX || b.ts_min > b.ts_max {
        return Err(format!("block {i}: bad row count or time range"));
    }
    // A packed block after another of its pack, as decoded (before `resolve_packs`), has the pack's
    // chunks, checked at the pack's first block: not again for each of its series (a pack holds up to
    // 1,024; this loop was a tenth of a count over TSBS's 10 M one-row series).
    let same_pack = prev.is_some_and(|p| p.pack.is_some() && b.pack.is_some() && p.ts_chunk == b.ts_chunk && Arc::ptr_eq(&p.cols, &b.cols));
    if !same_pack && (!in_file(&b.ts_chunk) || !b.cols.iter().all(|c| in_file(&c.chunk)) || !b.hours.as_ref().is_none_or(in_file)) {
        return Err(format!("block {i}: chunk outside the data area"));
    }
    let p = id.partition_start;
    if b.ts_min < p || b.ts_max.checked_sub(p).is_none_or(|d| d >= id.partition_ns) {
        return Err(format!("block {i}: rows outside the partition"));
    }
    if let Some(prev) = prev
        && (prev.series > b.series
            || (prev.series == b.series && (prev.ts_max >= b.ts_min || prev.pack.is_some() || b.pack.is_some())))
    {
        return Err(format!("block {i}: out of (series, time) order"));
    }
    Ok(())
}

/// One entry of a segment's in-memory index: [`FOOTER_GROUP_BLOCKS`] consecutive blocks (fewer in the
/// last group, more when a pack would straddle the boundary), described well enough to find a series or
/// a time range without decoding, and to decode the group alone, from the file, when a read needs its
/// blocks. 56 bytes for 64 blocks.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Group {
    first_series: SeriesId,
    last_series: SeriesId,
    /// The group's encoded blocks: `footer_len` bytes from byte `footer_off` of the footer.
    footer_off: u32,
    footer_len: u32,
    /// Where the group's first chunk starts (a version-2 chunk's offset is where the previous ended).
    data_off: u64,
    ts_min: i64,
    ts_max: i64,
    /// CRC32C of the group's encoded blocks, computed at open: the footer's own CRC is only checked
    /// then, and a group is read again from the file each time the cache lost it.
    crc: u32,
    /// Column entries of the group's blocks, for the decoded size estimate.
    n_cols: u32,
    /// Index of the group's first block in the footer, and its block count: [`FOOTER_GROUP_BLOCKS`],
    /// more when the group would otherwise end inside a pack, fewer in the last group.
    first_block: u32,
    n_blocks: u32,
}

/// Decodes the whole footer once, streaming, checking every block's invariants, and keeps one [`Group`]
/// per [`FOOTER_GROUP_BLOCKS`] blocks. Returns the segment's identity, its block count and the groups.
fn index_footer(buf: &[u8], version: u32, data_end: u64) -> std::result::Result<(SegmentId, usize, Vec<Group>), String> {
    let undecodable = || "footer does not decode".to_string();
    let mut r = Reader::new(buf);
    let (id, n) = decode_footer_head(&mut r, version).ok_or_else(undecodable)?;
    let mut dec = BlockDecoder::new(version, id.partition_start);
    let mut groups = Vec::with_capacity(n.div_ceil(FOOTER_GROUP_BLOCKS));
    let mut prev: Option<BlockMeta> = None;
    let mut g = Group { first_series: 0, last_series: 0, footer_off: 0, footer_len: 0, data_off: 0, ts_min: 0, ts_max: 0, crc: 0, n_cols: 0, first_block: 0, n_blocks: 0 };
    for i in 0..n {
        let start = (r.pos(), dec.next_offset);
        let b = dec.decode(&mut r).ok_or_else(undecodable)?;
        check_block(&id, data_end, prev.as_ref(), i, &b)?;
        if g.n_blocks == 0 {
            // The footer's length is a u32 (trailer), so are offsets inside it.
            g = Group {
                first_series: b.series,
                last_series: b.series,
                footer_off: start.0 as u32,
                footer_len: 0,
                data_off: start.1,
                ts_min: b.ts_min,
                ts_max: b.ts_max,
                crc: 0,
                n_cols: 0,
                first_block: i as u32,
                n_blocks: 0,
            };
        }
        g.last_series = b.series;
        g.ts_min = g.ts_min.min(b.ts_min);
        g.ts_max = g.ts_max.max(b.ts_max);
        g.n_cols += b.cols.len() as u32;
        g.n_blocks += 1;
        // A group ends after FOOTER_GROUP_BLOCKS blocks, or later if a pack is still open: a group must
        // decode alone, and a packed block needs its pack's header.
        if (g.n_blocks as usize >= FOOTER_GROUP_BLOCKS && !dec.inside_pack()) || i == n - 1 {
            let bytes = &buf[g.footer_off as usize..r.pos()];
            g.footer_len = bytes.len() as u32;
            g.crc = crc32c::crc32c(bytes);
            groups.push(g);
            g.n_blocks = 0;
        }
        prev = Some(b);
    }
    if dec.inside_pack() {
        return Err("the footer ends inside a pack".into());
    }
    if version >= 2 && dec.next_offset != data_end {
        return Err("chunks do not end where the footer starts".into());
    }
    if !r.is_empty() {
        return Err(undecodable());
    }
    Ok((id, n, groups))
}

/// The version-1 footer's block encoding: fixed-width statistics and explicit chunk offsets.
mod v1 {
    use super::*;

    fn decode_chunk(r: &mut Reader<'_>) -> Option<ChunkRef> {
        Some(ChunkRef { offset: r.uvarint()?, len: u32::try_from(r.uvarint()?).ok()?, crc: r.u32()? })
    }

    fn decode_col(r: &mut Reader<'_>) -> Option<ColMeta> {
        let col = ColId::try_from(r.uvarint()?).ok()?;
        let ty = FieldType::from_u8(r.u8()?)?;
        let chunk = decode_chunk(r)?;
        let mut s = ColStats { count: u32::try_from(r.uvarint()?).ok()?, ..ColStats::default() };
        if s.count > 0 && ty != FieldType::String {
            (s.min, s.max, s.sum) = (r.u64()?, r.u64()?, r.u64()?);
            s.sum_ok = r.u8()? != 0;
            (s.first, s.last) = (r.u64()?, r.u64()?);
        }
        if s.count > 0 {
            (s.first_ts, s.last_ts) = (r.i64()?, r.i64()?);
        }
        Some(ColMeta { col, ty, chunk, stats: s })
    }

    pub(super) fn decode_block(r: &mut Reader<'_>) -> Option<BlockMeta> {
        let series = SeriesId::try_from(r.uvarint()?).ok()?;
        let n_rows = u32::try_from(r.uvarint()?).ok()?;
        let (ts_min, ts_max) = (r.i64()?, r.i64()?);
        let ts_chunk = decode_chunk(r)?;
        let nc = r.len(COLUMNS_PER_TABLE_MAX)?;
        let cols = (0..nc).map(|_| decode_col(r)).collect::<Option<Arc<[_]>>>()?;
        Some(BlockMeta { series, n_rows, ts_min, ts_max, ts_chunk, cols, pack: None, hours: None })
    }
}

/// An open segment: a sparse index of its footer in memory, the footer's blocks decoded group by group
/// into the shared [`BlockIndexCache`] when a read needs them, the blocks' chunks read on demand.
///
/// At open the footer is read, its CRC checked, and it is decoded once, streaming, checking every block
/// (a damaged file fails to open, as before); what stays resident is one `Group` entry per
/// [`FOOTER_GROUP_BLOCKS`] blocks (under a byte per block, see [`Segment::resident_bytes`]) instead of
/// every block's metadata (about 1 KB per block with ten columns). The file format is unchanged.
pub struct Segment {
    pub path: PathBuf,
    pub id: SegmentId,
    /// Format version from the header (and trailer): decides the footer layout and the codecs allowed.
    pub version: u32,
    /// The header's [`FLAG_QUICK`]: compaction rewrites this file at full effort once its partition is cold.
    pub quick: bool,
    pub file_bytes: u64,
    file: File,
    pub ts_min: i64,
    pub ts_max: i64,
    n_blocks: usize,
    /// Where the footer starts, which is also where the data area ends.
    footer_offset: u64,
    groups: Box<[Group]>,
    cache: Arc<BlockIndexCache>,
    /// This segment's part of the cache's keys ([`crate::block_cache::next_segment_no`]).
    number: u64,
    /// When this process opened the file (after the flush or compaction that wrote it, or at start-up):
    /// a partition whose files are all older than `EngineConfig::compact_full_write_cold` is merged whole.
    pub opened: std::time::Instant,
}

/// The packs decoded last, across all open segments, newest first, within [`DECODED_PACKS_BYTES_MAX`]:
/// reading the series of a pack one after another (every scan in series order) decodes it once, not
/// once per series. Process-wide so that its memory does not grow with the number of open segments.
static DECODED_PACKS: std::sync::LazyLock<parking_lot::Mutex<DecodedPacks>> = std::sync::LazyLock::new(Default::default);

#[derive(Default)]
struct DecodedPacks {
    /// Newest first; a handful of entries (the byte bound over ~400 KB packs), so a scan finds one.
    list: std::collections::VecDeque<Arc<DecodedPack>>,
    bytes: usize,
}

impl DecodedPacks {
    fn position(&self, segment: u64, ts_offset: u64) -> Option<usize> {
        self.list.iter().position(|p| p.segment == segment && p.ts_offset == ts_offset)
    }

    fn get(&mut self, segment: u64, ts_offset: u64) -> Option<Arc<DecodedPack>> {
        let at = self.position(segment, ts_offset)?;
        let p = self.list.remove(at)?;
        self.list.push_front(Arc::clone(&p));
        Some(p)
    }

    /// Keeps `p` (replacing an older decode of the same pack), then drops the oldest beyond the bound;
    /// the newest always stays.
    fn put(&mut self, p: Arc<DecodedPack>) {
        if let Some(at) = self.position(p.segment, p.ts_offset) {
            let old = self.list.remove(at).expect("position is in range");
            self.bytes -= old.bytes;
        }
        self.bytes += p.bytes;
        self.list.push_front(p);
        while self.bytes > DECODED_PACKS_BYTES_MAX && self.list.len() > 1 {
            let old = self.list.pop_back().expect("more than one entry");
            self.bytes -= old.bytes;
        }
    }

    fn forget_segment(&mut self, segment: u64) {
        let bytes = &mut self.bytes;
        self.list.retain(|p| {
            let keep = p.segment != segment;
            if !keep {
                *bytes -= p.bytes;
            }
            keep
        });
    }
}

/// Blocks' hour-statistics chunks read last, across all open segments, by (segment number, chunk offset),
/// within [`HOUR_CHUNKS_BYTES_MAX`], checksummed when read. Why: an hourly rollup over 4,000 hosts read
/// 4,000 chunks of a few KB with one `pread` each, a system call and a copy out of the page cache that
/// were an eighth of the statement's CPU. Oldest out first: the rollups that use these re-read the same
/// hours, and a scan that reads many blocks once does not come here (only rollups read hour statistics).
static HOUR_CHUNKS: std::sync::LazyLock<parking_lot::Mutex<FifoCache<(u64, u64), Arc<[u8]>>>> =
    std::sync::LazyLock::new(|| parking_lot::Mutex::new(FifoCache::new(HOUR_CHUNKS_BYTES_MAX)));

/// A decoded pack: its timestamps and the columns read so far, each by its chunk's offset.
struct DecodedPack {
    /// The segment's number ([`crate::block_cache::next_segment_no`]) and the pack's timestamp chunk.
    segment: u64,
    ts_offset: u64,
    ts: Arc<[i64]>,
    cols: Vec<(u64, Arc<Column>)>,
    /// Estimated heap bytes, for [`DECODED_PACKS_BYTES_MAX`].
    bytes: usize,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("path", &self.path)
            .field("id", &self.id)
            .field("version", &self.version)
            .field("file_bytes", &self.file_bytes)
            .field("blocks", &self.n_blocks)
            .field("ts_min", &self.ts_min)
            .field("ts_max", &self.ts_max)
            .finish_non_exhaustive()
    }
}

impl Drop for Segment {
    /// Nobody can ask for this segment's groups any more: free their cache space now rather than when
    /// the clock hand gets to them.
    fn drop(&mut self) {
        self.cache.forget_segment(self.number, self.groups.len() as u32);
        DECODED_PACKS.lock().forget_segment(self.number);
        HOUR_CHUNKS.lock().forget(|k| k.0 == self.number);
        codec::page_cache::forget_segment(self.number);
        crate::last_values::forget_segment(self.number);
    }
}

/// The blocks of one series in one segment, in time order: shares the decoded groups holding them (a
/// series with more than [`FOOTER_GROUP_BLOCKS`] blocks, or one straddling a group boundary, spans
/// several), so it stays valid whatever the cache evicts meanwhile.
#[derive(Clone, Debug, Default)]
pub struct SeriesBlocks {
    parts: Vec<(Arc<[BlockMeta]>, std::ops::Range<usize>)>,
    len: usize,
}

impl SeriesBlocks {
    /// The blocks, oldest first (double-ended: `.rev()` walks newest first).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &BlockMeta> + '_ {
        self.parts.iter().flat_map(|(g, r)| g[r.clone()].iter())
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `i`-th block in time order.
    pub fn get(&self, mut i: usize) -> Option<&BlockMeta> {
        for (g, r) in &self.parts {
            if i < r.len() {
                return g.get(r.start + i);
            }
            i -= r.len();
        }
        None
    }
}

impl<'a> IntoIterator for &'a SeriesBlocks {
    type Item = &'a BlockMeta;
    type IntoIter = Box<dyn DoubleEndedIterator<Item = &'a BlockMeta> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// The block index group a walk over a segment's series last looked in (its number and blocks), kept
/// so that the next series, usually in the same group, needs no trip to the cache.
pub(crate) type LastGroup = Option<(usize, Arc<[BlockMeta]>)>;

/// Looks up the blocks of series in ascending order (a compaction's walk), keeping the last group it
/// decoded: each group is decoded about once per walk even when the cache is too small to keep it.
pub struct SeriesWalker<'a> {
    seg: &'a Segment,
    last: LastGroup,
}

impl SeriesWalker<'_> {
    pub fn series_blocks(&mut self, series: SeriesId) -> Result<SeriesBlocks> {
        self.seg.series_blocks_in(series, &mut self.last)
    }
}

/// Reads the blocks of series in ascending order for a scan of many series
/// (`TableSnapshot::scan`), and their rows without copying them.
///
/// Without `cache_groups` (a scan of many series, [`crate::limits::SCAN_CACHED_SERIES_MAX`]), a
/// group that is not in the block-index cache is decoded without reading its packs and is not cached:
/// a scan of 10 M one-row series would otherwise compute ten columns' statistics per block (to answer
/// nothing: a scan reads the rows) and push every other group out of the cache. Such packed blocks
/// keep their pack's time range (a superset of their own) and columns; [`SegmentScan::read`] handles
/// both kinds.
pub struct SegmentScan<'a> {
    seg: &'a Segment,
    cache_groups: bool,
    at: ScanAt,
}

/// Where a [`SegmentScan`] is, without the segment: kept between two parts of a scan that stops and goes
/// on ([`Segment::scan_at`]), so the second finds the group and the pack the first had decoded.
#[derive(Default)]
pub struct ScanAt {
    /// The group the cursor is in, its blocks once decoded, and the first block not handed out yet.
    group: usize,
    blocks: Option<Arc<[BlockMeta]>>,
    pos: usize,
    /// The pack read last, which the next series' block is most likely in.
    pack: Option<Arc<DecodedPack>>,
    /// Per requested column, its index in `pack.cols` for the block read last.
    pack_cols: Vec<Option<usize>>,
}

impl<'a> SegmentScan<'a> {
    /// Where the cursor is, to go on from with [`Segment::scan_at`] on the same segment.
    pub fn into_at(self) -> ScanAt {
        self.at
    }

    /// Replaces `out` with the blocks of `series` (calls in ascending series order).
    ///
    /// The cursor only moves forward: from one series to the next it looks at the group and block it
    /// stopped at, which in a dense scan already holds the next series, and searches (binary) only
    /// past a gap.
    pub fn blocks_into(&mut self, series: SeriesId, out: &mut SeriesBlocks) -> Result<()> {
        out.parts.clear();
        out.len = 0;
        let groups = &self.seg.groups;
        loop {
            let Some(grp) = groups.get(self.at.group) else { return Ok(()) };
            if grp.last_series < series {
                self.at.group += groups[self.at.group..].partition_point(|g| g.last_series < series);
                self.at.blocks = None;
                continue;
            }
            if grp.first_series > series {
                return Ok(());
            }
            self.load_group()?;
            let blocks = self.at.blocks.as_ref().expect("loaded");
            if blocks.get(self.at.pos).is_some_and(|b| b.series < series) {
                self.at.pos += blocks[self.at.pos..].partition_point(|b| b.series < series);
            }
            let start = self.at.pos;
            while blocks.get(self.at.pos).is_some_and(|b| b.series == series) {
                self.at.pos += 1;
            }
            if start < self.at.pos {
                out.len += self.at.pos - start;
                out.parts.push((Arc::clone(blocks), start..self.at.pos));
            }
            if self.at.pos < blocks.len() {
                return Ok(()); // the next block is a later series'
            }
            // The group ends here; the series may go on in the next.
            self.at.group += 1;
            self.at.blocks = None;
        }
    }

    /// Loads the blocks of the group the cursor is in, decoded (or from the cache), if not yet.
    fn load_group(&mut self) -> Result<()> {
        if self.at.blocks.is_none() {
            let b = match self.seg.cache.get((self.seg.number, self.at.group as u32)) {
                Some(b) => b,
                None if self.cache_groups => self.seg.group(self.at.group)?,
                None => self.seg.decode_group(self.at.group, false)?.into(),
            };
            self.at.pos = 0;
            self.at.blocks = Some(b);
        }
        Ok(())
    }

    /// The first series at or after `series` with a block in this segment (`None`: no more), moving the
    /// cursor forward to it without handing its blocks out: a later [`SegmentScan::blocks_into`] of it
    /// still finds them.
    pub fn next_series(&mut self, series: SeriesId) -> Result<Option<SeriesId>> {
        let groups = &self.seg.groups;
        loop {
            let Some(grp) = groups.get(self.at.group) else { return Ok(None) };
            if grp.last_series < series {
                self.at.group += groups[self.at.group..].partition_point(|g| g.last_series < series);
                self.at.blocks = None;
                continue;
            }
            if self.at.blocks.is_none() && grp.first_series >= series {
                return Ok(Some(grp.first_series)); // known without decoding the group
            }
            self.load_group()?;
            let blocks = self.at.blocks.as_ref().expect("loaded");
            self.at.pos += blocks[self.at.pos..].partition_point(|b| b.series < series);
            // `grp.last_series >= series`: a block of the group is at or after `series`.
            return Ok(Some(blocks[self.at.pos].series));
        }
    }

    /// After [`SegmentScan::blocks_into`] handed out `series`' one block, a packed one: that block and
    /// those after it in its pack that `take` accepts, in order until the first it refuses, consumed
    /// (the next `blocks_into` goes past them). `None` when the cursor no longer holds the block (it
    /// ended its group, and so its pack: a group never ends inside a pack).
    pub fn pack_run(&mut self, series: SeriesId, mut take: impl FnMut(&BlockMeta) -> bool) -> Option<PackRun> {
        let blocks = self.at.blocks.as_ref()?;
        let first = self.at.pos.checked_sub(1)?;
        let b = &blocks[first];
        if b.series != series || b.pack.is_none() {
            return None;
        }
        while let Some(next) = blocks.get(self.at.pos) {
            if next.pack.is_none() || next.ts_chunk != b.ts_chunk || !take(next) {
                break;
            }
            self.at.pos += 1;
        }
        let run = PackRun { blocks: Arc::clone(blocks), range: first..self.at.pos };
        if self.at.pos == blocks.len() {
            self.at.group += 1;
            self.at.blocks = None;
        }
        Some(run)
    }

    /// The rows of a [`PackRun`] (blocks each wholly inside the range read), for the requested columns,
    /// borrowed from the decoded pack: one [`RowsRef`] over all of them (series after series), and into
    /// `members` each block's series and its rows within it. The checks [`SegmentScan::read`] makes
    /// of one block, made of each.
    pub fn read_pack<'s>(
        &'s mut self,
        run: &PackRun,
        cols: &[(ColId, FieldType)],
        members: &mut Vec<(SeriesId, std::ops::Range<usize>)>,
    ) -> Result<RowsRef<'s>> {
        let seg = self.seg;
        let blocks = &run.blocks[run.range.clone()];
        let first = &blocks[0];
        // A resolved packed block lists only the columns its own rows have: the run's are their union.
        let mut stored: Vec<Option<&ColMeta>> = vec![None; cols.len()];
        for b in blocks {
            for (slot, c) in stored.iter_mut().zip(cols) {
                if slot.is_none() {
                    *slot = seg.stored_col(b, c)?;
                }
            }
        }
        let pack = self.pack_with(first, &stored)?;
        let base = first.pack_rows().expect("a packed block").start;
        members.clear();
        let mut end = base;
        for b in blocks {
            let rows = b.pack_rows().expect("a packed block");
            // The blocks of a run follow each other in the pack (`pack_run` took them in order).
            debug_assert_eq!(rows.start, end);
            check_packed_rows(seg, b, pack.ts.get(rows.clone()).unwrap_or_default())?;
            members.push((b.series, rows.start - base..rows.end - base));
            end = rows.end;
        }
        self.at.pack = Some(pack);
        let pack = self.at.pack.as_ref().expect("just set");
        Ok(RowsRef { series: first.series, ts: &pack.ts[base..end], offset: base, cols: ColsRef::Pack(&pack.cols, &self.at.pack_cols) })
    }

    /// The decoded pack of packed block `b` holding the `stored` columns: the one read last when it is
    /// that pack and holds them, else from [`Segment::decoded_pack`]. Sets `pack_cols` for `stored`
    /// (each requested column's index in the pack's columns); the caller keeps the pack in `pack`.
    fn pack_with(&mut self, b: &BlockMeta, stored: &[Option<&ColMeta>]) -> Result<Arc<DecodedPack>> {
        let seg = self.seg;
        let current = self.at.pack.as_ref().filter(|p| {
            p.segment == seg.number && p.ts_offset == b.ts_chunk.offset && stored.iter().flatten().all(|m| p.col(m.chunk.offset).is_some())
        });
        let pack = match current {
            Some(p) => Arc::clone(p),
            None => seg.decoded_pack(b, stored.iter().flatten().copied())?,
        };
        self.at.pack_cols.clear();
        self.at.pack_cols.extend(stored.iter().map(|m| m.and_then(|m| pack.cols.iter().position(|(o, _)| *o == m.chunk.offset))));
        Ok(pack)
    }

    /// The rows of block `b` (from [`SegmentScan::blocks_into`]) with `ts_min <= ts <= ts_max`, for the
    /// requested columns: borrowed from the decoded pack for a packed block, decoded into `owned`
    /// otherwise.
    pub fn read<'s>(
        &'s mut self,
        b: &BlockMeta,
        ts_min: i64,
        ts_max: i64,
        cols: &[(ColId, FieldType)],
        owned: &'s mut SeriesRows,
    ) -> Result<RowsRef<'s>> {
        let seg = self.seg;
        let Some(rows) = b.pack_rows() else {
            *owned = seg.read_block(b, ts_min, ts_max, cols)?;
            return Ok(RowsRef::of(owned));
        };
        let stored = seg.stored_cols(b, cols)?;
        let pack = self.pack_with(b, &stored)?;
        let ts = pack.ts.get(rows.clone()).unwrap_or_default();
        check_packed_rows(seg, b, ts)?;
        let start = ts.partition_point(|t| *t < ts_min);
        let end = ts.partition_point(|t| *t <= ts_max).max(start); // an empty range: no rows
        self.at.pack = Some(pack);
        let pack = self.at.pack.as_ref().expect("just set");
        Ok(RowsRef {
            series: b.series,
            ts: &pack.ts[rows.start + start..rows.start + end],
            offset: rows.start + start,
            cols: ColsRef::Pack(&pack.cols, &self.at.pack_cols),
        })
    }
}

/// The reader's half of the writer's checks for what is returned of packed block `b`, its rows' times
/// `ts` in the decoded pack: strictly increasing, as many as the block has, inside the range its index
/// entry gives (its own once the group was resolved, its pack's otherwise). A fold without early exit,
/// which vectorises.
fn check_packed_rows(seg: &Segment, b: &BlockMeta, ts: &[i64]) -> Result<()> {
    let increasing = ts.iter().zip(ts.iter().skip(1)).fold(true, |ok, (x, y)| ok & (x < y));
    if ts.len() != b.n_rows as usize || !increasing || ts[0] < b.ts_min || ts[ts.len() - 1] > b.ts_max {
        let what = "decoded pack timestamps disagree with the block index".to_string();
        return Err(Error::Corrupt { path: seg.path.clone(), offset: b.ts_chunk.offset, what });
    }
    Ok(())
}

/// After `cursors[i].blocks_into(series[*k - 1])` handed out that series' packed block, wholly in
/// `[ts_min, ts_max]` and its only source: the run of it and the pack's next blocks of the series asked
/// next (`series[*k..]`), each wholly in the range, with no block in another segment of `cursors` and
/// none elsewhere (`unwritten`: no memtable holds the series), `*k` moved past those taken. `None`
/// unless the run has two series or more. Why one function: a scan's pieces
/// (`TableSnapshot::scan_folds`) and a summary (`Engine::summarize`) sum such a run as their series'
/// only rows, so both must take exactly the series these conditions allow.
pub(crate) fn alone_in_pack(
    cursors: &mut [SegmentScan<'_>],
    i: usize,
    series: &[SeriesId],
    k: &mut usize,
    (ts_min, ts_max): (i64, i64),
    mut unwritten: impl FnMut(SeriesId) -> bool,
) -> Result<Option<PackRun>> {
    let s = series[*k - 1];
    // No block in another segment before `bound`: each such cursor moved forward to its next series.
    let mut bound = SeriesId::MAX;
    for (c, cursor) in cursors.iter_mut().enumerate() {
        if c != i
            && let Some(next) = cursor.next_series(s.saturating_add(1))?
        {
            bound = bound.min(next);
        }
    }
    let run = cursors[i].pack_run(s, |b| {
        let alone = series.get(*k) == Some(&b.series) && b.series < bound && b.ts_min >= ts_min && b.ts_max <= ts_max && unwritten(b.series);
        *k += usize::from(alone);
        alone
    });
    Ok(run.filter(|r| r.len() > 1))
}

/// Consecutive blocks of one pack, one per series, from [`SegmentScan::pack_run`].
pub struct PackRun {
    blocks: Arc<[BlockMeta]>,
    range: std::ops::Range<usize>,
}

impl PackRun {
    /// Series (blocks) in the run.
    pub fn len(&self) -> usize {
        self.range.len()
    }

    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }
}

/// Fixed cost of one cached group besides its blocks and columns (the slot, the `Arc`, the map entry).
const GROUP_OVERHEAD_BYTES: usize = 64;

/// Largest span of a block's chunks [`Segment::read_chunks`] reads at once (a 17,280-row block of ten
/// TSBS columns is about 60 KiB).
const COALESCED_READ_BYTES_MAX: u64 = 1 << 20;

/// Chunks read by [`Segment::read_chunks`]: chunk `i` is `bufs[at[i].0][at[i].1]`.
struct ChunkBytes {
    bufs: Vec<Vec<u8>>,
    at: Vec<(usize, std::ops::Range<usize>)>,
}

impl ChunkBytes {
    fn get(&self, i: usize) -> &[u8] {
        let (b, r) = &self.at[i];
        &self.bufs[*b][r.clone()]
    }
}

impl Segment {
    /// Opens `path` with the process-wide block-index cache ([`BlockIndexCache::shared_default`]): for
    /// tests, examples and tools. The engine opens with its own configured cache.
    pub fn open(path: &Path) -> Result<Segment> {
        Segment::open_with_cache(path, BlockIndexCache::shared_default())
    }

    /// Opens `path`; its footer groups are decoded into `cache` when read.
    pub fn open_with_cache(path: &Path, cache: &Arc<BlockIndexCache>) -> Result<Segment> {
        let io = |e| Error::io(path, e);
        let corrupt = |offset: u64, what: &str| Error::Corrupt { path: path.to_path_buf(), offset, what: what.to_string() };
        let file = File::open(path).map_err(io)?;
        let file_bytes = file.metadata().map_err(io)?.len();
        if file_bytes < (frame::HEADER_BYTES + TRAILER_BYTES) as u64 {
            return Err(corrupt(0, "file too short to be a segment"));
        }
        let mut head = [0u8; frame::HEADER_BYTES];
        file.read_exact_at(&mut head, 0).map_err(io)?;
        let version = match frame::check_header(&head, MAGIC) {
            None => return Err(corrupt(0, "not a Sundial segment (bad magic)")),
            Some(v) if (VERSION_MIN..=VERSION).contains(&v) => v,
            Some(v) => {
                return Err(Error::UnsupportedVersion {
                    path: path.to_path_buf(),
                    version: v,
                    supported: format!("{VERSION_MIN} to {VERSION}"),
                    fix: "run a Sundial version that reads this format (a newer one wrote this file)",
                });
            }
        };
        let mut t = [0u8; TRAILER_BYTES];
        let t_off = file_bytes - TRAILER_BYTES as u64;
        file.read_exact_at(&mut t, t_off).map_err(io)?;
        let mut r = Reader::new(&t);
        let (f_off, f_len, f_crc) = (r.u64().unwrap_or(0), r.u32().unwrap_or(0), r.u32().unwrap_or(0));
        let head_version = version;
        let (_n_blocks, version, magic) = (r.u32(), r.u32(), r.take(8));
        if magic != Some(&TRAILER_MAGIC[..]) || version != Some(head_version) {
            return Err(corrupt(t_off, "bad trailer (incomplete write?)"));
        }
        if f_off.checked_add(u64::from(f_len)) != Some(t_off) {
            return Err(corrupt(t_off, "footer location does not match the trailer"));
        }
        let mut footer = vec![0u8; f_len as usize];
        file.read_exact_at(&mut footer, f_off).map_err(io)?;
        if crc32c::crc32c(&footer) != f_crc {
            return Err(corrupt(f_off, "footer checksum mismatch"));
        }
        let (id, n_blocks, groups) = index_footer(&footer, head_version, f_off).map_err(|what| corrupt(f_off, &what))?;
        drop(footer);
        Ok(Segment {
            path: path.to_path_buf(),
            id,
            version: head_version,
            quick: u32::from_le_bytes(head[HEADER_FLAGS_OFFSET as usize..][..4].try_into().expect("4 bytes")) & FLAG_QUICK != 0,
            file_bytes,
            file,
            ts_min: groups.iter().map(|g| g.ts_min).min().unwrap_or(0),
            ts_max: groups.iter().map(|g| g.ts_max).max().unwrap_or(-1),
            n_blocks,
            footer_offset: f_off,
            groups: groups.into_boxed_slice(),
            cache: Arc::clone(cache),
            number: crate::block_cache::next_segment_no(),
            opened: std::time::Instant::now(),
        })
    }

    /// Blocks in the segment.
    pub fn n_blocks(&self) -> usize {
        self.n_blocks
    }

    /// Bytes this open segment keeps in memory, cached groups excluded (they are the cache's, bounded by
    /// its capacity): the struct, its path and its group index.
    pub fn resident_bytes(&self) -> usize {
        std::mem::size_of::<Segment>() + self.path.as_os_str().len() + std::mem::size_of_val(&*self.groups)
    }

    /// Groups of the footer's sparse index (see [`Segment::warm_group`]).
    pub(crate) fn n_groups(&self) -> usize {
        self.groups.len()
    }

    /// Loads group `g` into the block-index cache, if it is not there (warming it after open).
    pub(crate) fn warm_group(&self, g: usize) -> Result<()> {
        self.group(g).map(drop)
    }

    /// The decoded blocks of group `g`, from the cache or the file.
    fn group(&self, g: usize) -> Result<Arc<[BlockMeta]>> {
        let bytes = self.groups[g].n_blocks as usize * std::mem::size_of::<BlockMeta>()
            + self.groups[g].n_cols as usize * std::mem::size_of::<ColMeta>()
            + GROUP_OVERHEAD_BYTES;
        self.cache.get_or_load((self.number, g as u32), bytes, || self.decode_group(g, true).map(Arc::from))
    }

    /// Reads group `g`'s bytes from the footer, checks them against the CRC taken at open, decodes them
    /// and checks the blocks' invariants again, and that they agree with the index entry.
    ///
    /// Without `resolve`, packed blocks keep their pack's time range and columns without statistics
    /// (what the footer says; enough for their series ids, and for a scan: [`SegmentScan`]) and no pack is read.
    fn decode_group(&self, g: usize, resolve: bool) -> Result<Vec<BlockMeta>> {
        let grp = &self.groups[g];
        let offset = self.footer_offset + u64::from(grp.footer_off);
        let corrupt = |what: String| Error::Corrupt { path: self.path.clone(), offset, what };
        let buf = self.read_at(offset, grp.footer_len as usize)?;
        if crc32c::crc32c(&buf) != grp.crc {
            return Err(corrupt(format!("block index group {g} checksum mismatch (the footer changed after open)")));
        }
        let mut dec = BlockDecoder::new(self.version, self.id.partition_start);
        dec.series = if g == 0 { 0 } else { self.groups[g - 1].last_series };
        dec.next_offset = grp.data_off;
        let mut r = Reader::new(&buf);
        let first = grp.first_block as usize;
        let n = grp.n_blocks as usize;
        let mut blocks: Vec<BlockMeta> = Vec::with_capacity(n);
        for i in first..first + n {
            let b = dec.decode(&mut r).ok_or_else(|| corrupt(format!("block {i} does not decode")))?;
            check_block(&self.id, self.footer_offset, blocks.last(), i, &b).map_err(corrupt)?;
            blocks.push(b);
        }
        let next_data_off = self.groups.get(g + 1).map_or(self.footer_offset, |next| next.data_off);
        let agrees = r.is_empty()
            && blocks.first().map(|b| b.series) == Some(grp.first_series)
            && blocks.last().map(|b| b.series) == Some(grp.last_series)
            && blocks.iter().map(|b| b.ts_min).min() == Some(grp.ts_min)
            && blocks.iter().map(|b| b.ts_max).max() == Some(grp.ts_max)
            && blocks.iter().map(|b| b.cols.len()).sum::<usize>() == grp.n_cols as usize
            && !dec.inside_pack()
            && (self.version < 2 || dec.next_offset == next_data_off);
        if !agrees {
            return Err(corrupt(format!("block index group {g} disagrees with the index built at open")));
        }
        if resolve {
            self.resolve_packs(&mut blocks, first)?;
        }
        Ok(blocks)
    }

    /// Gives each packed block of a decoded group its own time range and statistics, from its rows in
    /// the decoded pack, and checks the pack (the reader's half of what `SegmentWriter::close_pack`
    /// wrote): every column decodes to the pack's rows, the pack's time range is its rows', and each
    /// block's rows are strictly increasing.
    fn resolve_packs(&self, blocks: &mut [BlockMeta], first: usize) -> Result<()> {
        let mut i = 0;
        while i < blocks.len() {
            let Some(slice) = blocks[i].pack else {
                i += 1;
                continue;
            };
            // A group starts at a pack's first block (the decoder saw its header).
            debug_assert_eq!(slice.row_off, 0);
            let ts_chunk = blocks[i].ts_chunk;
            let end = i + blocks[i..].iter().take_while(|b| b.pack.is_some() && b.ts_chunk == ts_chunk).count();
            let (pack_min, pack_max) = (blocks[i].ts_min, blocks[i].ts_max);
            let pack_cols = blocks[i].cols.clone();
            let decoded = self.decoded_pack(&blocks[i], pack_cols.iter())?;
            let corrupt = |what: String| Error::Corrupt { path: self.path.clone(), offset: ts_chunk.offset, what };
            if decoded.ts.iter().min() != Some(&pack_min) || decoded.ts.iter().max() != Some(&pack_max) {
                return Err(corrupt(format!("pack of block {}: timestamps outside the range its header gives", first + i)));
            }
            for (k, b) in blocks[i..end].iter_mut().enumerate() {
                let rows = b.pack_rows().expect("a block of the pack");
                let ts = &decoded.ts[rows.clone()];
                if ts.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(corrupt(format!("packed block {}: timestamps not strictly increasing", first + i + k)));
                }
                (b.ts_min, b.ts_max) = (ts[0], ts[ts.len() - 1]);
                let mut own = Vec::with_capacity(pack_cols.len());
                for m in pack_cols.iter() {
                    let c = decoded.col(m.chunk.offset).expect("every pack column was decoded");
                    let stats = stats_of(ts, c, rows.clone());
                    if stats.count > 0 {
                        own.push(ColMeta { stats, ..m.clone() });
                    }
                }
                b.cols = own.into();
            }
            i = end;
        }
        // Again with the real time ranges; pairs of unpacked blocks did not change since `decode_group`.
        for k in 1..blocks.len() {
            if blocks[k - 1].pack.is_none() && blocks[k].pack.is_none() {
                continue;
            }
            check_block(&self.id, self.footer_offset, Some(&blocks[k - 1]), first + k, &blocks[k])
                .map_err(|what| Error::Corrupt { path: self.path.clone(), offset: self.footer_offset, what })?;
        }
        Ok(())
    }

    /// The pack holding packed block `b`, with at least the columns `wanted` (of `b`'s) decoded: from
    /// the last decoded packs ([`DECODED_PACKS`]), or read, checked and decoded now.
    fn decoded_pack<'a>(&self, b: &BlockMeta, wanted: impl Iterator<Item = &'a ColMeta> + Clone) -> Result<Arc<DecodedPack>> {
        let Some(slice) = b.pack else { return Err(Error::internal("decoded_pack of a block that is not packed")) };
        let n = slice.rows as usize;
        let cached = DECODED_PACKS.lock().get(self.number, b.ts_chunk.offset);
        if let Some(p) = &cached
            && wanted.clone().all(|m| p.col(m.chunk.offset).is_some())
        {
            return Ok(Arc::clone(p));
        }
        let corrupt = |offset: u64, what: String| Error::Corrupt { path: self.path.clone(), offset, what };
        let ts: Arc<[i64]> = match &cached {
            Some(p) => Arc::clone(&p.ts),
            None => {
                let ts = codec::decode_timestamps(&self.read_chunk(&b.ts_chunk)?, n)
                    .map_err(|e| corrupt(b.ts_chunk.offset, format!("pack timestamps: {e}")))?;
                if ts.len() != n {
                    return Err(corrupt(b.ts_chunk.offset, "pack timestamps disagree with the block index".into()));
                }
                ts.into()
            }
        };
        let mut decoded = cached.as_ref().map_or_else(Vec::new, |p| p.cols.clone());
        for m in wanted {
            if decoded.iter().any(|(o, _)| *o == m.chunk.offset) {
                continue;
            }
            let c = codec::decode_column_in(&self.read_chunk(&m.chunk)?, m.ty, n, self.version)
                .map_err(|e| corrupt(m.chunk.offset, format!("pack column {} (segment version {}): {e}", m.col, self.version)))?;
            if c.len() != n || c.values.len() != n {
                return Err(corrupt(m.chunk.offset, format!("pack column {} disagrees with the block index", m.col)));
            }
            decoded.push((m.chunk.offset, Arc::new(c)));
        }
        let bytes = std::mem::size_of_val(&*ts) + decoded.iter().map(|(_, c)| c.heap_bytes()).sum::<usize>();
        let p = Arc::new(DecodedPack { segment: self.number, ts_offset: b.ts_chunk.offset, ts, cols: decoded, bytes });
        DECODED_PACKS.lock().put(Arc::clone(&p));
        Ok(p)
    }

    /// The groups that may hold blocks of `series`.
    fn groups_of(&self, series: SeriesId) -> std::ops::Range<usize> {
        let start = self.groups.partition_point(|g| g.last_series < series);
        let end = self.groups.partition_point(|g| g.first_series <= series);
        start..end.max(start)
    }

    /// Each series' newest block's last row ([`crate::last_values::LastValues`]): from the process-wide
    /// cache, or built now (decoding every group) when `build`. `None` when neither, or when it would not
    /// fit [`crate::limits::LAST_VALUES_BYTES_MAX`].
    pub(crate) fn last_values(&self, build: bool) -> Result<Option<Arc<crate::last_values::LastValues>>> {
        crate::last_values::get_or_build(self.number, build, || self.decoded_groups())
    }

    /// Every group's decoded blocks in turn, through the block-index cache.
    pub(crate) fn decoded_groups(&self) -> impl Iterator<Item = Result<Arc<[BlockMeta]>>> + '_ {
        (0..self.groups.len()).map(|g| self.group(g))
    }

    /// Calls `f` on every block, in file order (series, then time), decoding group by group.
    pub fn for_each_block(&self, mut f: impl FnMut(&BlockMeta)) -> Result<()> {
        for g in 0..self.groups.len() {
            self.group(g)?.iter().for_each(&mut f);
        }
        Ok(())
    }

    /// True when some block of a series matched by `t` overlaps `t`'s time range. Decodes only the
    /// groups whose series and time ranges leave the answer open.
    pub fn has_rows_hidden_by(&self, t: &crate::tombstone::Tombstone) -> Result<bool> {
        if !t.overlaps(self.ts_min, self.ts_max) {
            return Ok(false);
        }
        match &t.series {
            None => {
                for (g, grp) in self.groups.iter().enumerate() {
                    if !t.overlaps(grp.ts_min, grp.ts_max) {
                        continue;
                    }
                    // Every block lies inside the group's range and holds a row.
                    if (t.ts_min <= grp.ts_min && grp.ts_max <= t.ts_max) || self.group(g)?.iter().any(|b| t.overlaps(b.ts_min, b.ts_max)) {
                        return Ok(true);
                    }
                }
            }
            Some(list) => {
                for &s in list {
                    for g in self.groups_of(s) {
                        if !t.overlaps(self.groups[g].ts_min, self.groups[g].ts_max) {
                            continue;
                        }
                        if self.group(g)?.iter().any(|b| b.series == s && t.overlaps(b.ts_min, b.ts_max)) {
                            return Ok(true);
                        }
                    }
                }
            }
        }
        Ok(false)
    }

    /// The blocks of `series`, in time order.
    pub fn series_blocks(&self, series: SeriesId) -> Result<SeriesBlocks> {
        self.series_blocks_in(series, &mut None)
    }

    /// A [`SeriesWalker`] for looking up series in ascending order.
    pub fn walker(&self) -> SeriesWalker<'_> {
        SeriesWalker { seg: self, last: None }
    }

    /// A [`SegmentScan`] for reading series in ascending order.
    pub fn scan(&self, cache_groups: bool) -> SegmentScan<'_> {
        self.scan_at(cache_groups, ScanAt::default())
    }

    /// A [`SegmentScan`] going on from where one of this segment stopped ([`SegmentScan::into_at`]).
    pub fn scan_at(&self, cache_groups: bool, at: ScanAt) -> SegmentScan<'_> {
        SegmentScan { seg: self, cache_groups, at }
    }

    fn series_blocks_in(&self, series: SeriesId, last: &mut LastGroup) -> Result<SeriesBlocks> {
        let mut out = SeriesBlocks::default();
        self.series_blocks_into(series, last, &mut out)?;
        Ok(out)
    }

    /// [`Self::series_blocks_in`] into `out`, whose room is kept: a read of every series' last row looks up
    /// thousands of series without an allocation each.
    pub(crate) fn series_blocks_into(&self, series: SeriesId, last: &mut LastGroup, out: &mut SeriesBlocks) -> Result<()> {
        out.parts.clear();
        out.len = 0;
        for g in self.groups_of(series) {
            let blocks = match last {
                Some((lg, b)) if *lg == g => Arc::clone(b),
                _ => {
                    let b = self.group(g)?;
                    *last = Some((g, Arc::clone(&b)));
                    b
                }
            };
            let start = blocks.partition_point(|b| b.series < series);
            let end = blocks.partition_point(|b| b.series <= series);
            if start < end {
                out.len += end - start;
                out.parts.push((blocks, start..end));
            }
        }
        Ok(())
    }

    /// The lowest and highest series with a block here (`None` for a file without blocks), from the
    /// group directory: nothing is read.
    pub fn series_range(&self) -> Option<(SeriesId, SeriesId)> {
        Some((self.groups.first()?.first_series, self.groups.last()?.last_series))
    }

    /// The distinct series in this segment, ascending. A group whose first and last blocks have the same
    /// series holds only that one and is not decoded; an uncached group is decoded without reading its
    /// packs (a compaction lists the series of inputs whose groups it reads later, one at a time).
    pub fn series(&self) -> Result<Vec<SeriesId>> {
        self.layout_of(false).map(|l| l.series)
    }

    /// The distinct series in this segment, ascending, and its packs with their members: what a
    /// compaction needs to copy a pack whole ([`SegmentWriter::copy_pack`]). A cached group holding
    /// packed blocks is decoded again without reading its packs (the cache keeps each member's own
    /// statistics, not the pack's column list).
    pub fn layout(&self) -> Result<Layout> {
        self.layout_of(true)
    }

    fn layout_of(&self, with_packs: bool) -> Result<Layout> {
        let mut out = Layout::default();
        for (g, grp) in self.groups.iter().enumerate() {
            // One series only: a pack of one member alone in its group (the last) is not listed as a
            // pack, and its series is merged like any other.
            if grp.first_series == grp.last_series {
                if out.series.last() != Some(&grp.first_series) {
                    out.series.push(grp.first_series);
                }
                continue;
            }
            let blocks: Arc<[BlockMeta]> = match self.cache.get((self.number, g as u32)) {
                Some(b) if !with_packs || b.iter().all(|b| b.pack.is_none()) => b,
                _ => self.decode_group(g, false)?.into(),
            };
            for b in blocks.iter() {
                if out.series.last() != Some(&b.series) {
                    out.series.push(b.series);
                }
                let Some(slice) = b.pack.filter(|_| with_packs) else { continue };
                if slice.row_off == 0 {
                    let at = out.members.len();
                    out.packs.push(PackSpan {
                        first: b.series,
                        last: b.series,
                        members: at..at,
                        rows: slice.rows,
                        ts_min: b.ts_min,
                        ts_max: b.ts_max,
                        ts_chunk: b.ts_chunk,
                        cols: Arc::clone(&b.cols),
                    });
                }
                let p = out.packs.last_mut().expect("a pack starts at its first member's block");
                debug_assert_eq!(p.ts_chunk, b.ts_chunk, "members of one pack are consecutive blocks");
                out.members.push((b.series, b.n_rows));
                (p.last, p.members.end) = (b.series, out.members.len());
            }
        }
        Ok(out)
    }

    /// `len` bytes of the file from `offset`.
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.file.read_exact_at(&mut buf, offset).map_err(|e| Error::io(&self.path, e))?;
        Ok(buf)
    }

    fn read_chunk(&self, c: &ChunkRef) -> Result<Vec<u8>> {
        let buf = self.read_at(c.offset, c.len as usize)?;
        self.check_chunk(c, &buf)?;
        Ok(buf)
    }

    fn check_chunk(&self, c: &ChunkRef, bytes: &[u8]) -> Result<()> {
        if crc32c::crc32c(bytes) != c.crc {
            return Err(Error::Corrupt { path: self.path.clone(), offset: c.offset, what: "chunk checksum mismatch".into() });
        }
        Ok(())
    }

    /// The bytes of `chunks` (of one block): in one read of the span from the first to the last when that
    /// span is at most [`COALESCED_READ_BYTES_MAX`] and at most twice their own bytes, else one read each.
    /// A block's chunks are written back to back (timestamps, then its columns), so a read of several of
    /// its columns is one system call rather than one per chunk: 11 a block for TSBS's `SELECT *`, where
    /// `pread` and its copies were a tenth of a 4,000-host read's CPU. Each chunk's checksum is checked.
    fn read_chunks(&self, chunks: &[&ChunkRef]) -> Result<ChunkBytes> {
        let lo = chunks.iter().map(|c| c.offset).min().unwrap_or(0);
        let hi = chunks.iter().map(|c| c.offset + u64::from(c.len)).max().unwrap_or(0);
        let own: u64 = chunks.iter().map(|c| u64::from(c.len)).sum();
        if chunks.len() < 2 || hi - lo > COALESCED_READ_BYTES_MAX || hi - lo > own.saturating_mul(2) {
            let bufs = chunks.iter().map(|c| self.read_chunk(c)).collect::<Result<Vec<_>>>()?;
            let at = bufs.iter().enumerate().map(|(i, b)| (i, 0..b.len())).collect();
            return Ok(ChunkBytes { bufs, at });
        }
        let span = self.read_at(lo, (hi - lo) as usize)?;
        let mut at = Vec::with_capacity(chunks.len());
        for c in chunks {
            let from = (c.offset - lo) as usize;
            let range = from..from + c.len as usize;
            self.check_chunk(c, &span[range.clone()])?;
            at.push((0, range));
        }
        Ok(ChunkBytes { bufs: vec![span], at })
    }

    /// Decodes the rows of block `b` with `ts_min <= ts <= ts_max`, for the requested columns.
    pub fn read_block(&self, b: &BlockMeta, ts_min: i64, ts_max: i64, cols: &[(ColId, FieldType)]) -> Result<SeriesRows> {
        if b.pack.is_some() {
            return self.read_packed_block(b, ts_min, ts_max, cols);
        }
        let mut out = Vec::with_capacity(1);
        self.read_block_spans(b, &[(ts_min, ts_max)], cols, &mut out, None)?;
        Ok(out.pop().expect("one span, one piece"))
    }

    /// [`Segment::read_block`] of each of `spans` (ascending and disjoint time ranges) of a block that is
    /// not packed, into `out` (one piece per span, in span order, possibly without rows): its chunks are
    /// read, and its timestamps decoded, once. A paged column decodes just the pages holding a span's
    /// rows, so spans skip the pages between them (see [`crate::engine::HourFilter`]). With `pages` (a
    /// read of hours and its budget of bytes, see [`codec::page_cache`]) the pages are looked for in the
    /// decoded-page cache, and those decoded kept there while the budget lasts.
    pub fn read_block_spans(
        &self,
        b: &BlockMeta,
        spans: &[(i64, i64)],
        cols: &[(ColId, FieldType)],
        out: &mut Vec<SeriesRows>,
        mut pages: Option<&mut usize>,
    ) -> Result<()> {
        assert!(b.pack.is_none(), "spans of a packed block");
        assert!(spans.windows(2).all(|w| w[0].0 <= w[0].1 && w[0].1 < w[1].0), "spans ascending and disjoint");
        let (Some(first), Some(last)) = (spans.first(), spans.last()) else { return Ok(()) };
        let corrupt = |offset: u64, what: String| Error::Corrupt { path: self.path.clone(), offset, what };
        let n = b.n_rows as usize;
        let stored = self.stored_cols(b, cols)?;
        // The timestamps' chunk, then the stored columns', in one read where they are close.
        let refs: Vec<&ChunkRef> = std::iter::once(&b.ts_chunk).chain(stored.iter().flatten().map(|m| &m.chunk)).collect();
        let bytes = self.read_chunks(&refs)?;
        // The timestamps from the first span's start to the last one's end: rows `base..` of the block.
        let (mut all_ts, base, _) = self.block_ts(b, bytes.get(0), first.0, last.1)?;
        for &(lo, hi) in spans {
            let (a, z) = (all_ts.partition_point(|t| *t < lo), all_ts.partition_point(|t| *t <= hi));
            let z = z.max(a);
            let (start, end) = (base + a, base + z);
            let mut piece = Vec::with_capacity(cols.len());
            let mut k = 0;
            for (col, m) in cols.iter().map(|c| c.0).zip(&stored) {
                let Some(m) = m else {
                    piece.push(None);
                    continue;
                };
                k += 1;
                // Only the rows in range: a paged column decodes just the pages holding them, or finds
                // them decoded by an earlier span or read of hours ([`codec::page_cache`]).
                let cached = pages.as_mut().map(|budget| ((self.number, m.chunk.offset), &mut **budget));
                let (c, valid) = codec::decode_column_rows_cached(bytes.get(k), m.ty, n, self.version, start..end, cached)
                    .map_err(|e| corrupt(m.chunk.offset, format!("column {col} (segment version {}): {e}", self.version)))?;
                if c.len() != end - start || c.values.len() != end - start || valid != m.stats.count as usize {
                    return Err(corrupt(m.chunk.offset, format!("column {col} disagrees with the block index")));
                }
                piece.push(Some(c));
            }
            // One span is all of them (rows `a..z` = every one): moved, not copied.
            let ts = if spans.len() == 1 { std::mem::take(&mut all_ts) } else { all_ts[a..z].to_vec() };
            out.push(SeriesRows { series: b.series, ts, cols: piece });
        }
        Ok(())
    }

    /// Block `b`'s hour statistics ([`crate::hours`]) for `hours` (hour numbers, inside the block's) and
    /// the columns `cols`, into `out` (reused from block to block). `b` must have them (`b.hours`).
    pub fn read_hours(&self, b: &BlockMeta, cols: &[(ColId, FieldType)], hours: std::ops::Range<i64>, out: &mut HourStats) -> Result<()> {
        let c = b.hours.as_ref().expect("a block with hour statistics");
        for col in cols {
            self.stored_col(b, col)?;
        }
        let key = (self.number, c.offset);
        let cached = HOUR_CHUNKS.lock().get(&key).cloned();
        let bytes = match cached {
            Some(bytes) => bytes,
            None => {
                let bytes: Arc<[u8]> = self.read_chunk(c)?.into();
                HOUR_CHUNKS.lock().put(key, Arc::clone(&bytes), bytes.len());
                bytes
            }
        };
        hours::decode(&bytes, b, cols, hours, out).map_err(|what| Error::Corrupt { path: self.path.clone(), offset: c.offset, what })
    }

    /// The timestamps of block `b` (not packed) in `[ts_min, ts_max]`, and the rows `start..end` they
    /// are. A regular block (ConstDelta: first timestamp and step) is not decoded: its rows in range
    /// are computed, and only theirs made. Either way the block's timestamps are checked against its
    /// index entry (count, first, last, strictly increasing).
    /// `chunk` is the block's timestamp chunk, read and checksummed.
    fn block_ts(&self, b: &BlockMeta, chunk: &[u8], ts_min: i64, ts_max: i64) -> Result<(Vec<i64>, usize, usize)> {
        let n = b.n_rows as usize;
        if let Some((first, step)) = codec::timestamps_const_delta(chunk, n) {
            // i128: `first + (n − 1)·step` of a corrupt chunk may overflow i64.
            let at = |i: usize| i128::from(first) + i as i128 * i128::from(step);
            if first != b.ts_min || at(n - 1) != i128::from(b.ts_max) || (n > 1 && step <= 0) {
                let what = "decoded timestamps disagree with the block index".to_string();
                return Err(Error::Corrupt { path: self.path.clone(), offset: b.ts_chunk.offset, what });
            }
            // Rows before `t`: those with `first + i·step < t`, i.e. ⌈(t − first) / step⌉ of them.
            let before = |t: i128| match t - i128::from(first) {
                d if d <= 0 => 0,
                _ if n == 1 => 1,
                d => ((d + i128::from(step) - 1) / i128::from(step)).min(n as i128) as usize,
            };
            let (start, end) = (before(i128::from(ts_min)), before(i128::from(ts_max) + 1));
            let end = end.max(start);
            // In i64: every `first + i·step` for `i < n` is between the block's `ts_min` and `ts_max`
            // (checked above), so wrapping arithmetic gives it exactly (`i·step` alone may pass i64 when
            // `first` is far below zero), and the loop vectorises (in i128 it was 7 % of a 100-host
            // rollup's CPU).
            return Ok(((start..end).map(|i| first.wrapping_add((i as i64).wrapping_mul(step))).collect(), start, end));
        }
        let ts = codec::decode_timestamps(chunk, n)
            .map_err(|e| Error::Corrupt { path: self.path.clone(), offset: b.ts_chunk.offset, what: format!("timestamps: {e}") })?;
        self.check_block_ts(b, &ts, "decoded timestamps")?;
        let start = ts.partition_point(|t| *t < ts_min);
        let end = ts.partition_point(|t| *t <= ts_max).max(start);
        let ts = if start == 0 && end == n { ts } else { ts[start..end].to_vec() };
        Ok((ts, start, end))
    }

    /// The stored column of `b` for each requested `(column, catalog type)`, `None` where `b` has no
    /// value; a stored type other than the catalog's is corrupt.
    fn stored_cols<'b>(&self, b: &'b BlockMeta, cols: &[(ColId, FieldType)]) -> Result<Vec<Option<&'b ColMeta>>> {
        cols.iter().map(|c| self.stored_col(b, c)).collect()
    }

    /// [`Segment::stored_cols`] of one column.
    fn stored_col<'b>(&self, b: &'b BlockMeta, (col, ty): &(ColId, FieldType)) -> Result<Option<&'b ColMeta>> {
        match b.col(*col) {
            Some(m) if m.ty != *ty => Err(Error::Corrupt {
                path: self.path.clone(),
                offset: m.chunk.offset,
                what: format!("column {col} stored as {:?}, catalog says {ty:?}", m.ty),
            }),
            m => Ok(m),
        }
    }

    /// Block `b`'s decoded timestamps are what its index entry says: `n_rows` of them, strictly
    /// increasing, from `ts_min` to `ts_max` (the reader's half of the writer's `check_block`).
    fn check_block_ts(&self, b: &BlockMeta, ts: &[i64], what: &str) -> Result<()> {
        // Increasing: a fold without early exit, which vectorises (this runs on every block read).
        let increasing = ts.iter().zip(ts.iter().skip(1)).fold(true, |ok, (a, b)| ok & (a < b));
        if ts.len() != b.n_rows as usize || ts.first() != Some(&b.ts_min) || ts.last() != Some(&b.ts_max) || !increasing {
            let what = format!("{what} disagree with the block index");
            return Err(Error::Corrupt { path: self.path.clone(), offset: b.ts_chunk.offset, what });
        }
        Ok(())
    }

    /// [`Segment::read_block`] of a packed block: its rows of the decoded pack.
    fn read_packed_block(&self, b: &BlockMeta, ts_min: i64, ts_max: i64, cols: &[(ColId, FieldType)]) -> Result<SeriesRows> {
        let corrupt = |offset: u64, what: String| Error::Corrupt { path: self.path.clone(), offset, what };
        let stored = self.stored_cols(b, cols)?;
        let pack = self.decoded_pack(b, stored.iter().flatten().copied())?;
        let rows = b.pack_rows().expect("a packed block");
        let off = rows.start;
        let ts = pack.ts.get(rows.clone()).unwrap_or_default();
        self.check_block_ts(b, ts, "decoded pack timestamps")?;
        let start = off + ts.partition_point(|t| *t < ts_min);
        let end = off + ts.partition_point(|t| *t <= ts_max);
        let mut out = Vec::with_capacity(cols.len());
        for (col, m) in cols.iter().map(|c| c.0).zip(stored) {
            let Some(m) = m else {
                out.push(None);
                continue;
            };
            let c = pack.col(m.chunk.offset).expect("decoded_pack decodes the block's requested columns");
            if c.validity[rows.clone()].iter().filter(|v| **v).count() != m.stats.count as usize {
                return Err(corrupt(m.chunk.offset, format!("pack column {col} disagrees with the block index")));
            }
            out.push(Some(c.slice(start..end)));
        }
        Ok(SeriesRows { series: b.series, ts: pack.ts[start..end].to_vec(), cols: out })
    }

    /// All rows of `series` in `[ts_min, ts_max]` in this segment.
    pub fn read_series(&self, series: SeriesId, ts_min: i64, ts_max: i64, cols: &[(ColId, FieldType)]) -> Result<Vec<SeriesRows>> {
        let mut out = Vec::new();
        for b in self.series_blocks(series)?.iter() {
            if b.ts_max < ts_min || b.ts_min > ts_max {
                continue;
            }
            out.push(self.read_block(b, ts_min, ts_max, cols)?);
        }
        Ok(out)
    }
}

impl DecodedPack {
    fn col(&self, chunk_offset: u64) -> Option<&Column> {
        self.cols.iter().find(|(o, _)| *o == chunk_offset).map(|(_, c)| &**c)
    }
}

/// Groups of segment writers, one per partition, for one table of one flush.
pub struct PartitionedWriter {
    placement: crate::placement::Placement,
    db: DbId,
    table: TableId,
    partition_ns: i64,
    generation: u64,
    writers: HashMap<i64, SegmentWriter>,
    /// Blocks the first partition's file reserves room for ([`PartitionedWriter::expect_series`]).
    series_hint: usize,
    /// The table's files and the flush's series (ascending), from which each partition's file learns
    /// which series it writes quick ([`PartitionedWriter::with_rewritten`]).
    held: Vec<Arc<Segment>>,
    flushed: Vec<SeriesId>,
}

/// Those of `flushed` (ascending) that a file of the partition starting at `partition_start` among
/// `held` (a table's files) already holds: a flush writes their rows there quick, as compaction will merge
/// them with that file's rows and write them again at full effort ([`SegmentWriter::with_rewritten`]).
/// Only files of that partition are looked at, and of those only one whose series range meets
/// `flushed`'s (not a flush of new series: TSBS's 10 M hosts) and which has at most
/// [`REWRITTEN_LISTED_PER_FLUSHED`] times as many blocks as `flushed` has series: a larger file's listing
/// would cost more than the quick encoding saves, and the flush writes those series at full effort, as
/// any other. A file whose series cannot be listed (a read error) is passed over with a warning: the
/// choice only sets how hard the flush encodes, and must not fail it.
pub(crate) fn rewritten_series(held: &[Arc<Segment>], flushed: &[SeriesId], partition_start: i64) -> Vec<SeriesId> {
    let mut out = Vec::new();
    let (Some(&lo), Some(&hi)) = (flushed.first(), flushed.last()) else { return out };
    for s in held.iter().filter(|s| s.id.partition_start == partition_start) {
        let overlaps = s.series_range().is_some_and(|(first, last)| first <= hi && lo <= last);
        if !overlaps || s.n_blocks() > flushed.len().saturating_mul(REWRITTEN_LISTED_PER_FLUSHED) {
            continue;
        }
        let listed = match s.series() {
            Ok(listed) => listed,
            Err(e) => {
                let path = s.path.display();
                tracing::warn!(error = %e, segment = %path, "listing a file's series for a flush failed; they are written at full effort");
                continue;
            }
        };
        // Both ascending: the series of `flushed` that the file holds, by a merge of the two lists.
        let mut i = 0;
        for sid in listed {
            i += flushed[i..].partition_point(|f| *f < sid);
            if flushed.get(i) == Some(&sid) {
                out.push(sid);
            }
        }
    }
    // Listed from several files, series interleave and repeat; from one (the usual flush) they are
    // already ascending, which the sort passes in linear time.
    out.sort_unstable();
    out.dedup();
    out
}

/// See [`rewritten_series`]: a partition's file is listed only when it has at most this many blocks per
/// flushed series.
const REWRITTEN_LISTED_PER_FLUSHED: usize = 16;

/// Directory of a partition of a database: `<data>/db<id>/p<start_ns>`.
pub fn partition_dir(data: &Path, db: DbId, partition_start: i64) -> PathBuf {
    data.join(format!("db{db}")).join(format!("p{partition_start}"))
}

/// File name of a segment holding generations `gen_min..=gen_max` inside its partition directory:
/// `t<table>-g<gen_min>-<gen_max>.seg`. Two files with the same range have the same name, so a rewrite of
/// one file (tombstones applied) replaces it atomically by rename. Version-1 files were named
/// `t<table>-g<generation>.seg`; they are still read, and [`is_canonical_name`] tells them apart.
pub fn segment_file_name(table: TableId, gen_min: u64, gen_max: u64) -> String {
    format!("t{table}-g{gen_min:012}-{gen_max:012}.seg")
}

/// True when `path`'s file name is the one this build gives the segment `id`.
pub fn is_canonical_name(path: &Path, id: &SegmentId) -> bool {
    path.file_name().and_then(|n| n.to_str()) == Some(&segment_file_name(id.table, id.gen_min, id.generation))
}

impl PartitionedWriter {
    /// Writes every partition under one data directory.
    pub fn new(dir: &Path, db: DbId, table: TableId, partition_ns: i64, generation: u64) -> Self {
        Self::with_placement(&crate::placement::Placement::new(vec![dir.to_path_buf()]), db, table, partition_ns, generation)
    }

    /// Writes each partition in the data directory `placement` chooses for it.
    pub fn with_placement(placement: &crate::placement::Placement, db: DbId, table: TableId, partition_ns: i64, generation: u64) -> Self {
        PartitionedWriter {
            placement: placement.clone(),
            db,
            table,
            partition_ns,
            generation,
            writers: HashMap::new(),
            series_hint: 0,
            held: Vec::new(),
            flushed: Vec::new(),
        }
    }

    /// A flush's writer: `held` are the table's files, `flushed` the series (ascending) the flush
    /// writes. Each partition's file writes quick ([`SegmentWriter::with_rewritten`]) the rows of those
    /// series that a file of that partition among `held` already holds ([`rewritten_series`]).
    pub fn with_rewritten(mut self, held: Vec<Arc<Segment>>, flushed: Vec<SeriesId>) -> Self {
        debug_assert!(flushed.windows(2).all(|w| w[0] < w[1]), "flushed series must be ascending");
        (self.held, self.flushed) = (held, flushed);
        self
    }

    /// Tells the writer about how many series will come: the first partition's file reserves a block
    /// for each, where its list of blocks grew by doubling (a million series per flush at TSBS's 10 M
    /// hosts: 3.6 % of the server's CPU in copies and the page faults of each new copy). Only the first:
    /// a flush usually covers one partition, and a backfill over many would reserve for every series in
    /// each of them.
    pub fn expect_series(mut self, n: usize) -> Self {
        self.series_hint = n;
        self
    }

    /// Splits `rows` by partition and writes them.
    pub fn add_series(&mut self, rows: &SeriesRows, cols: &[ColId]) -> Result<()> {
        let mut start = 0;
        while start < rows.len() {
            let p = partition_start(rows.ts[start], self.partition_ns);
            let p_end = p.saturating_add(self.partition_ns);
            let end = start + rows.ts[start..].partition_point(|t| *t < p_end);
            // Most series of a flush lie in one partition: those are written without a copy.
            let whole = start == 0 && end == rows.len();
            let part = if whole {
                std::borrow::Cow::Borrowed(rows)
            } else {
                std::borrow::Cow::Owned(SeriesRows {
                    series: rows.series,
                    ts: rows.ts[start..end].to_vec(),
                    cols: rows.cols.iter().map(|c| c.as_ref().map(|c| c.slice(start..end))).collect(),
                })
            };
            let w = match self.writers.entry(p) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    let dir = self.placement.partition_dir(self.db, p);
                    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                    let id = SegmentId {
                        db: self.db,
                        table: self.table,
                        partition_start: p,
                        partition_ns: self.partition_ns,
                        generation: self.generation,
                        gen_min: self.generation,
                        tombstones_applied: 0,
                    };
                    let name = segment_file_name(self.table, self.generation, self.generation);
                    let w = SegmentWriter::create(&dir.join(name), id)?
                        .with_delta_hints()
                        .with_rewritten(rewritten_series(&self.held, &self.flushed, p));
                    v.insert(w.with_series_hint(std::mem::take(&mut self.series_hint)))
                }
            };
            w.add_series(&part, cols)?;
            start = end;
        }
        Ok(())
    }

    /// Finishes every file; returns their paths.
    pub fn finish(self) -> Result<Vec<PathBuf>> {
        let mut paths = Vec::new();
        for (_, w) in self.writers {
            paths.push(w.finish()?);
        }
        Ok(paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectorised sum gives what a `checked_add` from the first value gives, `None` included, on
    /// both sides of its bound (every value within `i64::MAX / n` of zero) and far past it.
    #[test]
    fn int_min_max_sum_is_the_checked_sum() {
        let reference = |v: &[i64]| {
            let (min, max) = (*v.iter().min().unwrap(), *v.iter().max().unwrap());
            (min, max, v.iter().try_fold(0i64, |a, x| a.checked_add(*x)))
        };
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in [1usize, 2, 3, 7, 64, 1000] {
            let bound = i64::MAX / n as i64;
            for scale in [10, bound / 2, bound, bound.saturating_add(1), i64::MAX / 2, i64::MAX] {
                for _ in 0..50 {
                    let v: Vec<i64> = (0..n)
                        .map(|_| match next() % 4 {
                            0 => scale,
                            1 => -scale,
                            _ => (next() % (scale as u64).max(1)) as i64 * if next() % 2 == 0 { 1 } else { -1 },
                        })
                        .collect();
                    assert_eq!(int_min_max_sum(v.iter().copied()), reference(&v), "{v:?}");
                }
            }
        }
        // Overflow in a running sum whose total would fit: still `None`, as the format has always said.
        assert_eq!(int_min_max_sum([i64::MAX, 1, -1].into_iter()).2, None);
        assert_eq!(int_min_max_sum([i64::MIN, -1, 1].into_iter()).2, None);
        assert_eq!(int_min_max_sum([i64::MIN].into_iter()), (i64::MIN, i64::MIN, Some(i64::MIN)));
    }

    /// A column without nulls (read as a slice) gets the statistics the value-by-value path gives the
    /// same values with a null among them, NaN, −0.0 and infinities included.
    #[test]
    fn dense_stats_equal_sparse_stats() {
        let floats = [
            vec![1.5, -2.0, 3.25],
            vec![-0.0, -0.0],
            vec![0.0, -0.0, f64::NAN, 2.0],
            vec![f64::INFINITY, 1.0, f64::NEG_INFINITY],
            vec![f64::NAN],
        ];
        let ints = [vec![5i64, -3, 9], vec![i64::MAX, 1, -1], vec![i64::MIN, i64::MAX], vec![7]];
        let cases = floats
            .iter()
            .map(|v| v.iter().map(|x| Value::Float(*x)).collect::<Vec<_>>())
            .chain(ints.iter().map(|v| v.iter().map(|x| Value::Integer(*x)).collect()));
        for values in cases {
            let ty = values[0].field_type();
            let (mut dense, mut sparse) = (Column::new(ty), Column::new(ty));
            sparse.push_null();
            for v in &values {
                dense.push_value(v);
                sparse.push_value(v);
            }
            sparse.push_null();
            let n = values.len();
            let ts: Vec<i64> = (0..n as i64 + 2).collect();
            let d = stats_of(&ts[1..], &dense, 0..n);
            let s = stats_of(&ts, &sparse, 0..n + 2);
            assert_eq!(d, s, "{values:?}");
            assert_eq!(d.count as usize, n);
        }
    }

    /// A column's delta is searched for in its first block and again every `DELTA_HINT_BLOCKS` blocks;
    /// in between the last search's order is asked for; a search that found no order to carry (or a
    /// column never searched) means searching again at the next block.
    #[test]
    fn delta_hints_search_once_per_run_of_blocks() {
        use codec::Delta::{Auto, Order};
        let mut h = DeltaHints::default();
        let mut asked = Vec::new();
        for block in 0..(2 * DELTA_HINT_BLOCKS + 1) {
            let a = h.next(7);
            asked.push(a);
            h.record(7, a, if block < DELTA_HINT_BLOCKS { Order(1) } else { Order(2) });
        }
        let searched: Vec<usize> = asked.iter().enumerate().filter(|(_, a)| **a == Auto).map(|(i, _)| i).collect();
        let d = DELTA_HINT_BLOCKS as usize;
        assert_eq!(searched, [0, d, 2 * d]);
        assert_eq!(asked[1], Order(1));
        assert_eq!(asked[d + 1], Order(2));
        // Another column is searched on its own; a search that chose nothing to carry is repeated.
        assert_eq!(h.next(8), Auto);
        h.record(8, Auto, Auto);
        assert_eq!(h.next(8), Auto);
    }

    fn sample(series: SeriesId, ts: Vec<i64>) -> SeriesRows {
        let n = ts.len();
        let mut f = Column::new(FieldType::Float);
        let mut i = Column::new(FieldType::Integer);
        let mut s = Column::new(FieldType::String);
        for k in 0..n {
            f.push_value(&Value::Float(k as f64 * 0.5));
            if k % 3 == 0 { i.push_null() } else { i.push_value(&Value::Integer(k as i64 - 5)); }
            s.push_value(&Value::String(format!("v{}", k % 4)));
        }
        SeriesRows { series, ts, cols: vec![Some(f), Some(i), Some(s), None] }
    }

    const COLS: [(ColId, FieldType); 4] =
        [(1, FieldType::Float), (2, FieldType::Integer), (3, FieldType::String), (4, FieldType::Boolean)];

    /// A segment in `dir` holding [`sample`] `series` at times `0..n` (one partition of 1 ms).
    fn sample_segment(dir: &Path, series: SeriesId, n: i64) -> PathBuf {
        let mut w = PartitionedWriter::new(dir, 1, 2, 1_000_000, 1);
        let ids: Vec<ColId> = COLS.iter().map(|c| c.0).collect();
        w.add_series(&sample(series, (0..n).collect()), &ids).unwrap();
        w.finish().unwrap().pop().unwrap()
    }

    #[test]
    fn segments_round_trip_with_statistics_and_time_ranges() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = PartitionedWriter::new(dir.path(), 1, 2, 1000, 7);
        let ids: Vec<ColId> = COLS.iter().map(|c| c.0).collect();
        let a = sample(0, (0..2500).collect());
        let b = sample(5, vec![-3, 10, 999, 1000, 1001]);
        w.add_series(&a, &ids).unwrap();
        w.add_series(&b, &ids).unwrap();
        let mut paths = w.finish().unwrap();
        paths.sort();
        assert_eq!(paths.len(), 4, "partitions -1000, 0, 1000, 2000");
        let segs: Vec<Segment> = paths.iter().map(|p| Segment::open(p).unwrap()).collect();
        let p0 = segs.iter().find(|s| s.id.partition_start == 0).unwrap();
        assert_eq!(p0.series().unwrap(), vec![0, 5]);
        let got = p0.read_series(0, 100, 199, &COLS).unwrap();
        assert_eq!(got.len(), 1);
        let g = &got[0];
        g.check().unwrap();
        assert_eq!(g.ts, (100..200).collect::<Vec<_>>());
        assert_eq!(g.cols[0].as_ref().unwrap().get(0), Some(Value::Float(50.0)));
        assert_eq!(g.cols[1].as_ref().unwrap().get(2), None, "row 102 is null");
        assert!(g.cols[3].is_none());
        let blocks = p0.series_blocks(0).unwrap();
        let m = blocks.get(0).unwrap().col(2).unwrap();
        assert_eq!(m.stats.count, 666);
        assert_eq!(stat_value(FieldType::Integer, m.stats.min), Some(Value::Integer(-4)));
        assert_eq!(stat_value(FieldType::Integer, m.stats.last), Some(Value::Integer(993)));
        let mut all: Vec<i64> = Vec::new();
        for s in &segs {
            for r in s.read_series(5, i64::MIN, i64::MAX, &COLS).unwrap() {
                all.extend(r.ts);
            }
        }
        all.sort();
        assert_eq!(all, vec![-3, 10, 999, 1000, 1001]);
    }

    /// A block's chunks are read in one system call when they are close (`read_chunks`), one by one when
    /// not (a column far from the timestamps): every subset of the columns reads as the whole does. Here
    /// column 1 alone is read with the timestamps in one call; column 3 alone spans columns 1 and 2, more
    /// than twice its own bytes, and is read on its own.
    #[test]
    fn any_subset_of_columns_reads_as_the_whole() {
        let dir = tempfile::tempdir().unwrap();
        let seg = Segment::open(&sample_segment(dir.path(), 0, 2500)).unwrap();
        let whole = seg.read_series(0, 100, 2399, &COLS).unwrap().pop().unwrap();
        for mask in 1..1u32 << COLS.len() {
            let picked: Vec<usize> = (0..COLS.len()).filter(|i| mask >> i & 1 == 1).collect();
            let subset: Vec<(ColId, FieldType)> = picked.iter().map(|&i| COLS[i]).collect();
            let got = seg.read_series(0, 100, 2399, &subset).unwrap().pop().unwrap();
            assert_eq!(got.ts, whole.ts, "columns {subset:?}");
            let want: Vec<_> = picked.iter().map(|&i| whole.cols[i].clone()).collect();
            assert_eq!(got.cols, want, "columns {subset:?}");
        }
    }

    /// A block as readers see it, without where its chunks are: what must not depend on the layout.
    type Logical = (SeriesId, u32, i64, i64, Vec<(ColId, FieldType, ColStats)>);

    fn logical(b: &BlockMeta) -> Logical {
        (b.series, b.n_rows, b.ts_min, b.ts_max, b.cols.iter().map(|c| (c.col, c.ty, c.stats)).collect())
    }

    /// Every statistic of every type survives the version-2 footer, extreme values included; in version
    /// 4 a packed block reads with the same time range and statistics (computed from its pack).
    #[test]
    fn block_index_round_trips_exactly() {
        let mut v3 = Vec::new();
        for version in [3, VERSION] {
            let read = round_trip_blocks(version);
            if version == 3 {
                v3 = read.iter().map(logical).collect();
                assert!(read.iter().all(|b| b.pack.is_none()));
            } else {
                assert_eq!(read.iter().map(logical).collect::<Vec<_>>(), v3);
                // Series 3 has two blocks, so neither is packed; series 700 has one small block.
                assert_eq!(read.iter().map(|b| b.pack.is_some()).collect::<Vec<_>>(), [false, false, true]);
            }
        }
    }

    fn round_trip_blocks(version: u32) -> Vec<BlockMeta> {
        let dir = tempfile::tempdir().unwrap();
        let id = SegmentId { db: 1, table: 2, partition_start: -1000, partition_ns: 1_000_000, generation: 9, gen_min: 3, tombstones_applied: 4 };
        let mut w = SegmentWriter::create_version(&dir.path().join("x.seg"), id, version).unwrap();
        let mut cols = [Column::new(FieldType::Integer), Column::new(FieldType::UInteger), Column::new(FieldType::Float),
            Column::new(FieldType::Boolean), Column::new(FieldType::String)];
        let values = [i64::MIN, -1, 0, 7, i64::MAX];
        for (k, v) in values.iter().enumerate() {
            if k == 0 {
                cols.iter_mut().for_each(Column::push_null);
                continue;
            }
            cols[0].push_value(&Value::Integer(*v));
            cols[1].push_value(&Value::UInteger(*v as u64));
            cols[2].push_value(&Value::Float(*v as f64 / 3.0));
            cols[3].push_value(&Value::Boolean(k % 2 == 0));
            cols[4].push_value(&Value::String(format!("s{k}")));
        }
        let ids: Vec<ColId> = (0..5).collect();
        for (k, series) in [3, 3, 700].into_iter().enumerate() {
            let base = -990 + k as i64 * 100;
            let ts: Vec<i64> = (0..5).map(|i| base + i * 11).collect();
            let rows = SeriesRows { series, ts, cols: cols.iter().cloned().map(Some).collect() };
            w.add_block(&rows, 0..5, &ids).unwrap();
        }
        let written = w.written.clone();
        let path = w.finish().unwrap();
        let seg = Segment::open(&path).unwrap();
        assert_eq!(seg.id, id);
        let mut read = Vec::new();
        seg.for_each_block(|b| read.push(b.clone())).unwrap();
        if version == 3 {
            assert_eq!(read, written);
        }
        let sum = read[0].col(0).unwrap().stats;
        assert!(!sum.sum_ok, "i64::MIN + ... + i64::MAX overflows");
        for series in [3, 700] {
            let ints = seg.read_series(series, i64::MIN, i64::MAX, &[(0, FieldType::Integer), (4, FieldType::String)]).unwrap();
            let last = ints.last().unwrap();
            assert_eq!(last.cols[0].as_ref().unwrap().get(4), Some(Value::Integer(i64::MAX)));
            assert_eq!(last.cols[1].as_ref().unwrap().get(1), Some(Value::String("s1".into())));
            assert_eq!(last.cols[0].as_ref().unwrap().get(0), None);
        }
        read
    }

    /// Writes one block of a decimal float column (which the writer stores as Alp) and an integer
    /// column, and returns the file's path and bytes.
    fn alp_segment(dir: &Path) -> (PathBuf, Vec<u8>) {
        let id = SegmentId { db: 1, table: 2, partition_start: 0, partition_ns: 1_000_000, generation: 1, gen_min: 1, tombstones_applied: 0 };
        let mut w = SegmentWriter::create_version(&dir.join("alp.seg"), id, 3).unwrap();
        let mut f = Column::new(FieldType::Float);
        let mut i = Column::new(FieldType::Integer);
        for k in 0..500 {
            f.push_value(&Value::Float(((k * 7919) % 1000) as f64 / 10.0));
            i.push_value(&Value::Integer(k));
        }
        let rows = SeriesRows { series: 3, ts: (0..500).collect(), cols: vec![Some(f), Some(i)] };
        w.add_series(&rows, &[1, 2]).unwrap();
        let path = w.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        (path, bytes)
    }

    /// Rewrites the version in the header and the trailer (neither is checksummed).
    fn set_version(path: &Path, bytes: &[u8], version: u32) {
        let mut b = bytes.to_vec();
        b[8..12].copy_from_slice(&version.to_le_bytes());
        let t = b.len() - TRAILER_BYTES + 20;
        b[t..t + 4].copy_from_slice(&version.to_le_bytes());
        std::fs::write(path, b).unwrap();
    }

    /// Version 3 (issue 5's float codecs) has version 2's layout: a version-2 file without the new codecs
    /// still reads, a version-2 file holding an Alp chunk is refused when that column is read (naming
    /// the file and both versions), and a version newer than this build's is refused at open.
    #[test]
    fn version_3_float_codecs_and_older_and_newer_files() {
        const FLOAT: [(ColId, FieldType); 1] = [(1, FieldType::Float)];
        const INT: [(ColId, FieldType); 1] = [(2, FieldType::Integer)];
        let dir = tempfile::tempdir().unwrap();
        let (path, bytes) = alp_segment(dir.path());
        assert_eq!(bytes[8..12], 3u32.to_le_bytes());
        let seg = Segment::open(&path).unwrap();
        assert_eq!(seg.version, 3);
        let blocks = seg.series_blocks(3).unwrap();
        let b = blocks.get(0).unwrap();
        let chunk = seg.read_chunk(&b.col(1).unwrap().chunk).unwrap();
        assert_eq!(codec::column_codecs(&chunk, 500).map(|c| c.1), Some(codec::Codec::Alp));
        let rows = seg.read_series(3, i64::MIN, i64::MAX, &FLOAT).unwrap();
        assert_eq!(rows[0].cols[0].as_ref().unwrap().get(1), Some(Value::Float(91.9)));

        set_version(&path, &bytes, 2);
        let seg = Segment::open(&path).unwrap();
        assert_eq!(seg.version, 2);
        assert_eq!(seg.read_series(3, i64::MIN, i64::MAX, &INT).unwrap()[0].ts.len(), 500);
        let err = seg.read_series(3, i64::MIN, i64::MAX, &FLOAT).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains("needs segment version 3 or newer, this file is version 2"), "{err}");

        let newer = VERSION + 1;
        set_version(&path, &bytes, newer);
        let err = Segment::open(&path).unwrap_err();
        assert!(matches!(err, Error::UnsupportedVersion { version, .. } if version == newer), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(&format!("unsupported format version {newer}")) && msg.contains(&format!("this build reads 1 to {VERSION}")), "{msg}");
        assert!(msg.contains(&path.display().to_string()), "{msg}");
    }

    /// Version 6's hour statistics of a block read back as the rows' own per-hour count, sum, min and
    /// max, for any run of the block's hours and any set of columns: an integer column with nulls, a
    /// dense float column, a float column holding a NaN (no exact statistics: the reader is told), a
    /// column the block does not store, and a string column (none kept). A block within one hour gets no
    /// chunk (nor does a packed one), and a damaged chunk is corrupt, not read.
    #[test]
    fn hour_statistics_read_as_the_rows_say() {
        use crate::hours::{HOUR_NS, hour_of};
        let dir = tempfile::tempdir().unwrap();
        let day = 24 * HOUR_NS;
        let id = SegmentId { db: 1, table: 2, partition_start: 0, partition_ns: day, generation: 1, gen_min: 1, tombstones_applied: 0 };
        let mut w = SegmentWriter::create(&dir.path().join("h.seg"), id).unwrap();
        // A minute apart from 00:13 for about 5.5 hours (more rows than a pack takes), a gap in the third
        // hour; and 200 rows in one hour.
        let ts: Vec<i64> = (0..330i64).filter(|k| !(150..200).contains(k)).map(|k| (13 + k) * 60_000_000_000).collect();
        let mut rows = sample(1, ts.clone());
        let mut nan = Column::new(FieldType::Float);
        for k in 0..ts.len() {
            nan.push_value(&Value::Float(if k == 200 { f64::NAN } else { k as f64 }));
        }
        rows.cols[3] = Some(nan);
        let cols = [(1, FieldType::Float), (2, FieldType::Integer), (3, FieldType::String), (4, FieldType::Float), (5, FieldType::Integer)];
        w.add_series(&rows, &[1, 2, 3, 4]).unwrap();
        let short = SeriesRows { series: 2, ts: (0..200).map(|k| 10 * HOUR_NS + k * 1000).collect(), ..sample(2, vec![0; 200]) };
        w.add_series(&short, &[1, 2, 3, 4]).unwrap();
        let seg = Segment::open(&w.finish().unwrap()).unwrap();
        assert!(seg.series_blocks(2).unwrap().get(0).unwrap().hours.is_none(), "a block within one hour");
        let b = seg.series_blocks(1).unwrap().get(0).unwrap().clone();
        assert!(b.hours.is_some());
        let (h0, h1) = (hour_of(ts[0]), hour_of(ts[ts.len() - 1]));
        assert_eq!(h1 - h0, 5);
        let mut got = crate::hours::HourStats::default();
        for (lo, hi) in [(h0, h1 + 1), (h0, h0 + 1), (h0 + 2, h0 + 4), (h1, h1 + 1)] {
            seg.read_hours(&b, &cols, lo..hi, &mut got).unwrap();
            assert_eq!((got.series, got.first_hour, got.rows.len()), (1, lo * HOUR_NS, (hi - lo) as usize));
            for (k, h) in (lo..hi).enumerate() {
                let in_hour: Vec<usize> = (0..ts.len()).filter(|r| hour_of(ts[*r]) == h).collect();
                assert_eq!(got.rows[k] as usize, in_hour.len(), "hour {h}");
                for (c, (col, ty)) in cols.iter().enumerate() {
                    let hc = &got.cols[c];
                    let Some(column) = rows.cols.get(*col as usize - 1).and_then(|c| c.as_ref()).filter(|_| *ty != FieldType::String) else {
                        // The string column keeps none (the block stores it: not exact); column 5 has no value.
                        assert_eq!(hc.exact, *col == 5, "column {col}");
                        assert_eq!(hc.count[k], 0);
                        continue;
                    };
                    if *col == 4 {
                        assert!(!hc.exact, "a NaN: no exact statistics");
                        continue;
                    }
                    assert!(hc.exact, "column {col}");
                    let vals: Vec<Value> = in_hour.iter().filter_map(|r| column.get(*r)).collect();
                    assert_eq!(hc.count[k] as usize, vals.len(), "column {col} hour {h}");
                    if vals.is_empty() {
                        continue;
                    }
                    match ty {
                        FieldType::Integer => {
                            let v: Vec<i64> = vals.iter().map(|v| if let Value::Integer(x) = v { *x } else { unreachable!() }).collect();
                            let want = (*v.iter().min().unwrap(), *v.iter().max().unwrap(), v.iter().sum::<i64>());
                            assert_eq!((hc.min[k] as i64, hc.max[k] as i64, hc.sum[k] as i64), want, "hour {h}");
                        }
                        _ => {
                            let v: Vec<f64> = vals.iter().map(|v| if let Value::Float(x) = v { *x } else { unreachable!() }).collect();
                            let want = (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(f64::NEG_INFINITY, f64::max), v.iter().sum::<f64>());
                            assert_eq!((f64::from_bits(hc.min[k]), f64::from_bits(hc.max[k]), f64::from_bits(hc.sum[k])), want, "hour {h}");
                        }
                    }
                }
                // Rows with one of the columns set: the float column is dense, but the string and NaN
                // columns' statistics are not exact (so nothing is told); without them, every row.
                assert_eq!(got.rows_set(k), None);
            }
            seg.read_hours(&b, &cols[..2], lo..hi, &mut got).unwrap();
            assert!((0..got.rows.len()).all(|k| got.rows_set(k) == Some(got.rows[k])));
            seg.read_hours(&b, &cols[1..2], lo..hi, &mut got).unwrap();
            assert!((0..got.rows.len()).all(|k| got.rows_set(k).is_none() || got.cols[0].count[k] == 0));
        }
        // Whatever the chunk's bytes (past its checksum: a damaged disk whose CRC still matched, or a
        // bug), decoding fails with an error or reads some statistics; it never panics.
        let c = b.hours.unwrap();
        let chunk = seg.read_at(c.offset, c.len as usize).unwrap();
        let (all, h) = (h0..h1 + 1, h0 + 2..h0 + 3);
        for i in 0..chunk.len() {
            for (k, bytes) in [chunk[..i].to_vec(), { let mut x = chunk.clone(); x[i] ^= 0xff; x }, { let mut x = chunk.clone(); x[i] = 0x80; x }].into_iter().enumerate() {
                let range = if k == 0 { all.clone() } else { h.clone() };
                let _ = crate::hours::decode(&bytes, &b, &cols, range, &mut got);
            }
        }
        // A flipped byte of the chunk is a checksum mismatch.
        let mut bytes = std::fs::read(&seg.path).unwrap();
        bytes[c.offset as usize + 1] ^= 1;
        std::fs::write(&seg.path, &bytes).unwrap();
        let damaged = Segment::open(&seg.path).unwrap();
        let err = damaged.read_hours(&b, &cols, h0..h1 + 1, &mut got).unwrap_err().to_string();
        assert!(err.contains("checksum"), "{err}");
    }

    /// Version 5 writes a long block's numeric columns in pco pages (PcoPaged), version 4 in one page:
    /// any time range of the block reads the same rows from both, and what the data says; the paged
    /// file costs a few bytes more; a version-4 reader (the file's version set back) refuses the pages.
    #[test]
    fn paged_columns_read_any_time_range_as_version_4() {
        let dir = tempfile::tempdir().unwrap();
        let id = SegmentId { db: 1, table: 2, partition_start: 0, partition_ns: 1 << 40, generation: 1, gen_min: 1, tombstones_applied: 0 };
        let n = BLOCK_ROWS_MAX;
        let rows = sample(4, (0..n as i64).map(|i| 1000 + i * 10).collect());
        let mut walk = Column::new(FieldType::Integer);
        for k in 0..n {
            walk.push_value(&Value::Integer(50 + (k * 7919 % 5) as i64 + k as i64 / 300));
        }
        let rows = SeriesRows { cols: vec![rows.cols[0].clone(), rows.cols[1].clone(), rows.cols[2].clone(), Some(walk)], ..rows };
        let cols = [(1, FieldType::Float), (2, FieldType::Integer), (3, FieldType::String), (4, FieldType::Integer)];
        let write = |version: u32| {
            let mut w = SegmentWriter::create_version(&dir.path().join(format!("v{version}.seg")), id, version).unwrap();
            w.add_series(&rows, &[1, 2, 3, 4]).unwrap();
            w.finish().unwrap()
        };
        let (p4, p5) = (write(4), write(5));
        let (s4, s5) = (Segment::open(&p4).unwrap(), Segment::open(&p5).unwrap());
        let b5 = s5.series_blocks(4).unwrap().get(0).unwrap().clone();
        let codec_of = |s: &Segment, c: &ColMeta| codec::column_codecs(&s.read_chunk(&c.chunk).unwrap(), n).map(|c| c.1);
        assert_eq!(codec_of(&s5, b5.col(4).unwrap()), Some(codec::Codec::PcoPaged), "the walk");
        assert_eq!(codec_of(&s5, b5.col(1).unwrap()), Some(codec::Codec::PcoPaged), "k / 2 as floats");
        assert_eq!(codec_of(&s5, b5.col(2).unwrap()), Some(codec::Codec::PcoPaged), "integers, every third null");
        let b4 = s4.series_blocks(4).unwrap().get(0).unwrap().clone();
        assert_eq!(codec_of(&s4, b4.col(4).unwrap()), Some(codec::Codec::Pco));
        let t = |row: usize| 1000 + row as i64 * 10;
        // Row bounds, and times between rows or outside the block (the timestamps are regular, so their
        // rows in range are computed rather than decoded: checked against the rows' own times).
        let mut ranges: Vec<(i64, i64)> = [(0, n - 1), (0, 0), (2047, 2048), (2048, 4095), (5000, 5359), (n - 1, n - 1), (100, 2 * n), (3000, 2999)]
            .iter()
            .map(|(lo, hi)| (t(*lo), t(*hi)))
            .collect();
        ranges.extend([(i64::MIN, i64::MAX), (i64::MIN, 999), (i64::MIN, 1000), (1001, 1009), (1001, 1010), (995, 1025), (t(n - 1), i64::MAX), (t(n - 1) + 1, i64::MAX)]);
        for (lo_t, hi_t) in ranges {
            let got = s5.read_block(&b5, lo_t, hi_t, &cols).unwrap();
            assert_eq!(got, s4.read_block(&b4, lo_t, hi_t, &cols).unwrap(), "times {lo_t}..={hi_t}");
            let want: Vec<usize> = (0..n).filter(|r| lo_t <= t(*r) && t(*r) <= hi_t).collect();
            assert_eq!(got.ts, want.iter().map(|r| t(*r)).collect::<Vec<_>>(), "times {lo_t}..={hi_t}");
            let walk = got.cols[3].as_ref().unwrap();
            assert!(want.iter().enumerate().all(|(j, r)| walk.get(j) == rows.cols[3].as_ref().unwrap().get(*r)));
        }
        let (l4, l5) = (std::fs::metadata(&p4).unwrap().len(), std::fs::metadata(&p5).unwrap().len());
        assert!(l5 > l4 && l5 < l4 + l4 / 10, "paged {l5} bytes, one page {l4}");
        set_version(&p5, &std::fs::read(&p5).unwrap(), 4);
        let old = Segment::open(&p5).unwrap();
        let err = old.read_block(&b5, t(0), t(10), &cols).unwrap_err().to_string();
        assert!(err.contains("needs segment version 5 or newer, this file is version 4"), "{err}");
        // A block index entry that disagrees with its regular timestamps is corrupt, not read.
        for bad in [BlockMeta { ts_max: b5.ts_max + 1, ..b5.clone() }, BlockMeta { ts_min: b5.ts_min - 10, ..b5.clone() }, BlockMeta { n_rows: b5.n_rows - 1, ..b5.clone() }] {
            let err = s5.read_block(&bad, i64::MIN, i64::MAX, &cols).unwrap_err().to_string();
            assert!(err.contains("disagree with the block index"), "{err}");
        }
    }

    #[test]
    fn corruption_is_detected_not_returned() {
        let dir = tempfile::tempdir().unwrap();
        let path = sample_segment(dir.path(), 3, 300);
        let good = std::fs::read(&path).unwrap();
        for i in (0..good.len()).step_by(7) {
            let mut bad = good.clone();
            bad[i] ^= 0x41;
            std::fs::write(&path, &bad).unwrap();
            let r = Segment::open(&path).and_then(|s| s.read_series(3, i64::MIN, i64::MAX, &COLS));
            match r {
                Err(_) => {}
                Ok(rows) => {
                    // A flip in unused header padding may go unnoticed, but the data must be intact.
                    assert_eq!(rows[0], sample(3, (0..300).collect()), "byte {i} flipped silently changed data");
                }
            }
        }
    }

    /// A byte flipped anywhere in a segment of packed series (pack headers, pack chunks, the two varints
    /// per series) is refused at open or when read, or leaves every series' rows intact: never silently
    /// different rows, whichever series is read first.
    #[test]
    fn corruption_in_packs_is_detected_not_returned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("packed.seg");
        let id = SegmentId { db: 1, table: 2, partition_start: 0, partition_ns: 1_000_000, generation: 1, gen_min: 1, tombstones_applied: 0 };
        let mut w = SegmentWriter::create(&path, id).unwrap();
        let ids: Vec<ColId> = COLS.iter().map(|c| c.0).collect();
        let series: Vec<SeriesRows> = (0..40).map(|s| sample(s * 3 + 1, (0..3).map(|i| 100 + i * 10 + i64::from(s)).collect())).collect();
        for rows in &series {
            w.add_series(rows, &ids).unwrap();
        }
        w.finish().unwrap();
        let good = std::fs::read(&path).unwrap();
        let seg = Segment::open(&path).unwrap();
        let mut packed = 0;
        seg.for_each_block(|b| packed += usize::from(b.pack.is_some())).unwrap();
        assert_eq!(packed, 40);
        drop(seg);
        for i in (0..good.len()).step_by(3) {
            let mut bad = good.clone();
            bad[i] ^= 0x41;
            std::fs::write(&path, &bad).unwrap();
            let Ok(seg) = Segment::open_with_cache(&path, &Arc::new(BlockIndexCache::new(0))) else { continue };
            for (k, want) in series.iter().enumerate().rev() {
                match seg.read_series(want.series, i64::MIN, i64::MAX, &COLS) {
                    Err(_) => {}
                    Ok(rows) => assert_eq!(rows, vec![want.clone()], "byte {i} flipped silently changed series {k}"),
                }
            }
        }
    }

    /// The decoded-pack cache stays within its byte bound (keeping at least the newest), hands back what
    /// it holds, and forgets a closed segment's packs.
    #[test]
    fn decoded_packs_stay_within_their_bound() {
        let pack = |segment: u64, ts_offset: u64, bytes: usize| {
            Arc::new(DecodedPack { segment, ts_offset, ts: Arc::from(vec![1i64]), cols: Vec::new(), bytes })
        };
        let mut c = DecodedPacks::default();
        let third = DECODED_PACKS_BYTES_MAX / 3;
        for i in 0..10 {
            c.put(pack(i % 2, i, third));
            assert!(c.bytes <= DECODED_PACKS_BYTES_MAX, "{} bytes", c.bytes);
            assert_eq!(c.bytes, c.list.iter().map(|p| p.bytes).sum::<usize>());
        }
        assert_eq!(c.list.len(), 3);
        assert!(c.get(1, 9).is_some() && c.get(0, 8).is_some() && c.get(1, 7).is_some());
        assert!(c.get(0, 6).is_none(), "evicted");
        c.put(pack(0, 8, third));
        assert_eq!(c.list.len(), 3, "a pack decoded again replaces its entry");
        c.forget_segment(1);
        assert_eq!((c.list.len(), c.bytes), (1, third));
        c.put(pack(2, 0, DECODED_PACKS_BYTES_MAX * 2));
        assert_eq!(c.list.len(), 1, "the newest stays even above the bound");
        assert!(c.get(2, 0).is_some());
    }

    /// Everything a reader can learn from a segment's block index, through every lookup path.
    #[derive(Debug, PartialEq)]
    struct IndexView {
        series: Vec<SeriesId>,
        per_series: Vec<(SeriesId, Vec<BlockMeta>, Vec<BlockMeta>)>,
        all: Vec<BlockMeta>,
        rows: Vec<Vec<SeriesRows>>,
        hidden: Vec<bool>,
    }

    fn view(seg: &Segment, cols: &[(ColId, FieldType)]) -> IndexView {
        let series = seg.series().unwrap();
        let mut per_series = Vec::new();
        let mut rows = Vec::new();
        let mut hidden = Vec::new();
        for &s in series.iter().chain(&[u32::MAX - 1]) {
            let b = seg.series_blocks(s).unwrap();
            assert_eq!(b.len(), b.iter().count());
            assert_eq!(b.is_empty(), b.iter().next().is_none());
            let fwd: Vec<BlockMeta> = b.iter().cloned().collect();
            let mut back: Vec<BlockMeta> = b.iter().rev().cloned().collect();
            back.reverse();
            per_series.push((s, fwd, back));
            rows.push(seg.read_series(s, 40, 1_000_000, cols).unwrap());
            rows.push(seg.read_series(s, i64::MIN, i64::MAX, cols).unwrap());
            let t = |series: Option<Vec<SeriesId>>, ts_min, ts_max| crate::tombstone::Tombstone {
                id: 1,
                db: 1,
                table: 2,
                series,
                ts_min,
                ts_max,
                generation: 1,
                wal_seq: 0,
            };
            for (lo, hi) in [(i64::MIN, i64::MAX), (5, 5), (60, 61), (100_000, 100_000)] {
                hidden.push(seg.has_rows_hidden_by(&t(Some(vec![s]), lo, hi)).unwrap());
                hidden.push(seg.has_rows_hidden_by(&t(None, lo, hi)).unwrap());
            }
        }
        let mut all = Vec::new();
        seg.for_each_block(|b| all.push(b.clone())).unwrap();
        IndexView { series, per_series, all, rows, hidden }
    }

    const INT: [(ColId, FieldType); 1] = [(1, FieldType::Integer)];

    /// The identity of the many-series files below: one partition wide enough for every timestamp.
    const WIDE: SegmentId = SegmentId { db: 1, table: 2, partition_start: 0, partition_ns: 1 << 40, generation: 5, gen_min: 5, tombstones_applied: 0 };

    /// A segment whose series straddle group boundaries: series k has `k % 5 + 1` blocks of 1 to 3
    /// rows, series 7 has 150 one-row blocks (three groups), and series 9999 a full-size series
    /// (BLOCK_ROWS_MAX + 5 rows, two blocks). Returns the path and the blocks as written.
    fn many_series_segment(dir: &Path, version: u32) -> (PathBuf, Vec<BlockMeta>) {
        let mut w = SegmentWriter::create_version(&dir.join(format!("many-v{version}.seg")), WIDE, version).unwrap();
        let series_rows = |series: SeriesId, n: usize, step: i64| {
            let mut c = Column::new(FieldType::Integer);
            for i in 0..n {
                c.push_value(&Value::Integer(i as i64 * 3 - i64::from(series)));
            }
            SeriesRows { series, ts: (0..n as i64).map(|i| 10 + i * step).collect(), cols: vec![Some(c)] }
        };
        for s in 0..400u32 {
            let s = s * 2 + 1;
            let (blocks, per) = if s == 7 { (150, 1) } else { (s as usize % 5 + 1, s as usize % 3 + 1) };
            let rows = series_rows(s, blocks * per, 7);
            for b in 0..blocks {
                w.add_block(&rows, b * per..(b + 1) * per, &[1]).unwrap();
            }
        }
        w.add_series(&series_rows(9999, BLOCK_ROWS_MAX + 5, 1), &[1]).unwrap();
        let written = w.written.clone();
        (w.finish().unwrap(), written)
    }

    /// The lazy index answers exactly as the blocks written, whether the cache keeps nothing (every
    /// lookup decodes its groups again) or everything, in version 3 and in version 2 (same layout).
    #[test]
    fn lazy_block_index_reads_identically_with_tiny_and_large_caches() {
        let dir = tempfile::tempdir().unwrap();
        let (path, written) = many_series_segment(dir.path(), 3);
        let bytes = std::fs::read(&path).unwrap();
        for version in [3, 2] {
            set_version(&path, &bytes, version);
            let tiny = Arc::new(BlockIndexCache::new(1));
            let large = Arc::new(BlockIndexCache::new(64 << 20));
            let a = Segment::open_with_cache(&path, &tiny).unwrap();
            let b = Segment::open_with_cache(&path, &large).unwrap();
            assert_eq!(a.n_blocks(), written.len());
            assert!(a.groups.len() > 10, "{} groups", a.groups.len());
            let va = view(&a, &INT);
            assert_eq!(va, view(&b, &INT), "version {version}");
            assert_eq!(va.all, written);
            assert_eq!(va.series.len(), 401);
            let s7 = &va.per_series.iter().find(|p| p.0 == 7).unwrap().1;
            assert_eq!(s7.len(), 150, "series 7 spans three groups");
            assert_eq!(va.per_series.iter().find(|p| p.0 == 9999).unwrap().1.len(), 2);
            assert!(va.per_series.last().unwrap().1.is_empty(), "an absent series has no blocks");
            assert_eq!(va.rows[2 * va.series.iter().position(|s| *s == 9999).unwrap()][0].ts[0], 40);
            let (ts, ls) = (tiny.stats(), large.stats());
            assert_eq!((ts.entries, ts.bytes, ts.hits), (0, 0, 0), "nothing fits in one byte: {ts:?}");
            assert!(ts.misses > a.groups.len() as u64 * 4, "{ts:?}");
            assert_eq!(ls.misses, a.groups.len() as u64, "each group decoded once: {ls:?}");
            assert!(ls.hits > ls.misses && ls.bytes <= ls.capacity, "{ls:?}");
        }
    }

    /// A flush's writer carries pco's delta choice from pack to pack: packs of series of a few rows
    /// each (delta searched, then reused) and of one row each (no delta) read back as written.
    #[test]
    fn packs_with_carried_delta_choices_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SegmentWriter::create(&dir.path().join("hinted.seg"), WIDE).unwrap().with_delta_hints();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut written = Vec::new();
        // 40 packs of 1,024 three-row series, then 9,040 one-row series (9 packs).
        for s in 0..50_000u32 {
            let n = if s < 40 * PACK_SERIES_MAX as u32 { 3 } else { 1 };
            let (mut walk, mut f) = (Column::new(FieldType::Integer), Column::new(FieldType::Float));
            let mut v = (s % 100) as i64;
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                v = (v + (x % 5) as i64 - 2).clamp(0, 100);
                walk.push_value(&Value::Integer(v));
                f.push_value(&Value::Float((x >> 11) as f64 / 1e6));
            }
            let rows = SeriesRows { series: s, ts: (0..n as i64).map(|i| 10 + 10 * i).collect(), cols: vec![Some(walk), Some(f)] };
            w.add_series(&rows, &[1, 2]).unwrap();
            written.push(rows);
        }
        let seg = Segment::open(&w.finish().unwrap()).unwrap();
        let cols = [(1, FieldType::Integer), (2, FieldType::Float)];
        for rows in &written {
            assert!(seg.series_blocks(rows.series).unwrap().iter().all(|b| b.pack.is_some()), "series {} packed", rows.series);
            assert_eq!(seg.read_series(rows.series, i64::MIN, i64::MAX, &cols).unwrap(), std::slice::from_ref(rows), "series {}", rows.series);
        }
    }

    /// A pack of series whose columns come in different orders, with some missing (a series without a
    /// column reads it as nulls) and one all-null, reads back each series' values under their own ids.
    #[test]
    fn packed_series_with_columns_in_any_order_read_back_under_their_ids() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SegmentWriter::create(&dir.path().join("shapes.seg"), WIDE).unwrap();
        let int = |vals: &[Option<i64>]| {
            let mut c = Column::new(FieldType::Integer);
            for v in vals {
                match v {
                    Some(v) => assert!(c.push_value(&Value::Integer(*v))),
                    None => c.push_null(),
                }
            }
            Some(c)
        };
        // A series, its column ids in its own order, and each column's values by row.
        type Shape = (SeriesId, &'static [ColId], Vec<Vec<Option<i64>>>);
        let shapes: [Shape; 5] = [
            (1, &[1, 2], vec![vec![Some(10), Some(11)], vec![Some(20), Some(21)]]),
            (2, &[2, 1], vec![vec![Some(-22)], vec![Some(-12)]]),
            (3, &[2], vec![vec![Some(32), None]]),
            (4, &[3, 1], vec![vec![Some(43)], vec![Some(41)]]),
            (5, &[1, 2, 3], vec![vec![Some(51)], vec![None], vec![Some(53)]]),
        ];
        for (series, ids, vals) in &shapes {
            let n = vals[0].len() as i64;
            let rows = SeriesRows { series: *series, ts: (0..n).map(|i| 100 + i).collect(), cols: vals.iter().map(|v| int(v)).collect() };
            w.add_series(&rows, ids).unwrap();
        }
        let seg = Segment::open(&w.finish().unwrap()).unwrap();
        let all = [(1, FieldType::Integer), (2, FieldType::Integer), (3, FieldType::Integer)];
        for (series, ids, vals) in &shapes {
            assert!(seg.series_blocks(*series).unwrap().iter().all(|b| b.pack.is_some()), "series {series} packed");
            let read = seg.read_series(*series, i64::MIN, i64::MAX, &all).unwrap();
            let n = vals[0].len();
            for (k, (col, _)) in all.iter().enumerate() {
                let want = ids.iter().position(|c| c == col).map_or(vec![None; n], |j| vals[j].clone());
                let got: Vec<Option<i64>> = match &read[0].cols[k] {
                    None => vec![None; n],
                    Some(c) => (0..n).map(|i| c.get(i).map(|v| match v {
                        Value::Integer(x) => x,
                        other => panic!("{other:?}"),
                    })).collect(),
                };
                assert_eq!(got, want, "series {series}, column {col}");
            }
        }
    }

    /// Version 4 packs the series that have one small block: the same data as a version-3 file reads
    /// back as the same blocks (time ranges, statistics) and rows, through caches that keep nothing or
    /// everything, and takes fewer bytes.
    #[test]
    fn packed_segment_reads_as_the_unpacked_one() {
        let dir = tempfile::tempdir().unwrap();
        let (p3, written) = many_series_segment(dir.path(), 3);
        let (p4, _) = many_series_segment(dir.path(), VERSION);
        // Sizes from version 5 (packs without version 6's byte per unpacked block for its hour statistics).
        let (p5, _) = many_series_segment(dir.path(), 5);
        let s3 = Segment::open(&p3).unwrap();
        let v3 = view(&s3, &INT);
        assert_eq!(v3.all, written);
        let strip = |v: &IndexView| (v.all.iter().map(logical).collect::<Vec<_>>(), v.rows.clone(), v.hidden.clone(), v.series.clone());
        for cache in [0, 64 << 20] {
            let s4 = Segment::open_with_cache(&p4, &Arc::new(BlockIndexCache::new(cache))).unwrap();
            assert_eq!(s4.version, VERSION);
            let v4 = view(&s4, &INT);
            assert_eq!(strip(&v4), strip(&v3), "cache {cache}");
            let packed = v4.all.iter().filter(|b| b.pack.is_some()).count();
            assert!(packed >= 80, "{packed} packed blocks (every series with one block has one)");
            assert!(v4.all.iter().filter(|b| b.pack.is_some()).all(|b| v4.all.iter().filter(|o| o.series == b.series).count() == 1));
        }
        let (l3, l5) = (std::fs::metadata(&p3).unwrap().len(), std::fs::metadata(&p5).unwrap().len());
        assert!(l5 < l3, "packed {l5} bytes, unpacked {l3}");
    }

    /// A walk in series order (compaction's) decodes each group about once even with no cache at all.
    #[test]
    fn series_walker_decodes_each_group_once_without_a_cache() {
        let dir = tempfile::tempdir().unwrap();
        let (path, written) = many_series_segment(dir.path(), 3);
        let cache = Arc::new(BlockIndexCache::new(0));
        let seg = Segment::open_with_cache(&path, &cache).unwrap();
        let series = seg.series().unwrap();
        let before = cache.stats().misses;
        let mut walker = seg.walker();
        let mut seen = Vec::new();
        for s in series {
            seen.extend(walker.series_blocks(s).unwrap().iter().cloned());
        }
        assert_eq!(seen, written);
        let decoded = cache.stats().misses - before;
        assert!(decoded <= seg.groups.len() as u64 + 2, "{decoded} decodes for {} groups", seg.groups.len());
    }

    /// A small cache keeps at most its capacity, and repeated reads of a working set that fits hit it.
    #[test]
    fn block_index_cache_hits_on_repeated_reads_and_stays_within_capacity() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = many_series_segment(dir.path(), 3);
        let cache = Arc::new(BlockIndexCache::new(40 << 10));
        let seg = Segment::open_with_cache(&path, &cache).unwrap();
        let series = seg.series().unwrap();
        for _ in 0..3 {
            for &s in &series {
                seg.series_blocks(s).unwrap();
                let st = cache.stats();
                assert!(st.bytes <= st.capacity, "{st:?}");
            }
        }
        let st = cache.stats();
        assert!(st.evictions > 0, "the segment's index does not fit: {st:?}");
        let before = st.hits;
        for _ in 0..5 {
            seg.series_blocks(series[0]).unwrap();
        }
        assert!(cache.stats().hits >= before + 4, "{:?}", cache.stats());
        drop(seg);
        assert_eq!(cache.stats().entries, 0, "a closed segment's groups are dropped");
    }

    /// The footer is checked (CRC) only at open; a footer byte changed on disk afterwards is caught by
    /// the group's own checksum when the group is next decoded, as `Corrupt` naming file and offset.
    #[test]
    fn footer_byte_flipped_after_open_is_corrupt_at_the_next_group_read() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = many_series_segment(dir.path(), 3);
        let seg = Segment::open_with_cache(&path, &Arc::new(BlockIndexCache::new(0))).unwrap();
        let g = &seg.groups[3];
        let at = seg.footer_offset + u64::from(g.footer_off) + u64::from(g.footer_len) / 2;
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let mut byte = [0u8];
        seg.file.read_exact_at(&mut byte, at).unwrap();
        f.write_all_at(&[byte[0] ^ 0x10], at).unwrap();
        let victim = g.first_series + 1;
        let err = seg.series_blocks(victim).unwrap_err();
        let Error::Corrupt { path: p, offset, what } = &err else { panic!("{err}") };
        assert_eq!((p, *offset), (&path, seg.footer_offset + u64::from(g.footer_off)), "{err}");
        assert!(what.contains("block index group 3 checksum mismatch"), "{err}");
        assert!(err.to_string().contains(&path.display().to_string()), "{err}");
        assert!(seg.read_series(victim, i64::MIN, i64::MAX, &INT).is_err());
        assert!(seg.series().is_err() || seg.groups[3].first_series == seg.groups[3].last_series);
        assert!(seg.for_each_block(|_| {}).is_err());
        // Other groups still read.
        assert!(!seg.series_blocks(seg.groups[0].first_series).unwrap().is_empty());
        // Reopening fails at open, on the footer's own CRC.
        assert!(matches!(Segment::open(&path), Err(Error::Corrupt { .. })));
    }

    /// 100,000 single-block series: the index an open segment keeps is under 2 bytes per block (it was
    /// over 100 with one integer column, ~1 KB with ten float columns, before the lazy index).
    #[test]
    fn resident_index_is_under_two_bytes_per_block() {
        let dir = tempfile::tempdir().unwrap();
        let id = SegmentId { db: 1, table: 2, partition_start: 0, partition_ns: 1 << 40, generation: 1, gen_min: 1, tombstones_applied: 0 };
        let mut w = SegmentWriter::create(&dir.path().join("wide.seg"), id).unwrap();
        let mut c = Column::new(FieldType::Integer);
        c.push_value(&Value::Integer(7));
        let n = 100_000u32;
        for s in 0..n {
            w.add_block(&SeriesRows { series: s, ts: vec![1000 + i64::from(s)], cols: vec![Some(c.clone())] }, 0..1, &[1]).unwrap();
        }
        let path = w.finish().unwrap();
        let cache = Arc::new(BlockIndexCache::new(1 << 20));
        let seg = Segment::open_with_cache(&path, &cache).unwrap();
        assert_eq!(seg.n_blocks(), n as usize);
        let per_block = seg.resident_bytes() as f64 / f64::from(n);
        eprintln!("resident index: {} bytes for {n} blocks = {per_block:.3} bytes/block", seg.resident_bytes());
        assert!(per_block < 2.0, "{per_block} bytes per block");
        assert_eq!(cache.stats().entries, 0, "open decodes nothing into the cache");
        assert_eq!(seg.series_blocks(54_321).unwrap().get(0).unwrap().ts_min, 1000 + 54_321);
        assert_eq!(seg.series().unwrap().len(), n as usize);
    }

    /// The version-1 fixture (absolute series ids, explicit chunk offsets) reads the same through a
    /// cache that keeps nothing and one that keeps everything.
    #[test]
    fn version_1_fixture_reads_identically_with_tiny_and_large_caches() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-datadir/db0/p1699920000000000000/t0-g000000000001.seg");
        let a = Segment::open_with_cache(&root, &Arc::new(BlockIndexCache::new(0))).unwrap();
        let b = Segment::open_with_cache(&root, &Arc::new(BlockIndexCache::new(1 << 20))).unwrap();
        assert_eq!(a.version, 1);
        let mut cols = Vec::new();
        a.for_each_block(|b| cols.extend(b.cols.iter().map(|c| (c.col, c.ty)))).unwrap();
        cols.sort_by_key(|c| c.0);
        cols.dedup();
        let va = view(&a, &cols);
        assert!(!va.all.is_empty() && va.rows.iter().flatten().count() > 0);
        assert_eq!(va, view(&b, &cols));
    }

    /// A flush's series that a file of the same partition already holds are listed for quick encoding
    /// (`rewritten_series`, per partition the flush writes); new series, files of other partitions
    /// and files whose series range misses the flush's are not.
    #[test]
    fn flushed_series_a_partition_file_holds_are_written_quick() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(BlockIndexCache::new(1 << 20));
        let file = |name: &str, partition_start: i64, series: &[SeriesId]| {
            let id = SegmentId {
                db: 1,
                table: 1,
                partition_start,
                partition_ns: 1_000,
                generation: 1,
                gen_min: 1,
                tombstones_applied: 0,
            };
            let mut w = SegmentWriter::create(&dir.path().join(name), id).unwrap();
            for &s in series {
                let mut c = Column::new(FieldType::Integer);
                assert!(c.push_value(&Value::Integer(i64::from(s))));
                w.add_series(&SeriesRows { series: s, ts: vec![partition_start + 1], cols: vec![Some(c)] }, &[0]).unwrap();
            }
            Arc::new(Segment::open_with_cache(&w.finish().unwrap(), &cache).unwrap())
        };
        let held = [file("a.seg", 0, &[1, 3, 5, 7]), file("b.seg", 0, &[5, 9]), file("c.seg", 1_000, &[2, 3]), file("d.seg", 0, &[50, 60])];
        let listed = |flushed: &[SeriesId], p: i64| rewritten_series(&held, flushed, p);
        assert_eq!(listed(&[2, 3, 4, 5, 9, 10], 0), vec![3, 5, 9]);
        assert_eq!(listed(&[2, 3, 4, 5, 9, 10], 1_000), vec![2, 3]);
        assert!(listed(&[2, 3, 4, 5, 9, 10], 2_000).is_empty());
        assert!(listed(&[100, 200], 0).is_empty());
        assert!(listed(&[], 0).is_empty());
    }
}
