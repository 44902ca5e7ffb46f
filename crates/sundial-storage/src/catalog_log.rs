//! `catalog.log`: the durable record of catalog entries, append-only.
//!
//! Framed with [`crate::frame`] (magic `SDCATLOG`, version 1). Each record's payload is one encoded
//! [`CatalogEntry`], or a batch of new series:
//! ```text
//! kind:u8 then, by kind (ids are u32 LE unless noted; strings are uvarint length + UTF-8):
//! 1 CreateDb     db name retention_ns:i64
//! 2 DropDb       db
//! 3 CreateTable  db table name
//! 4 DropTable    db table
//! 5 AddColumn    db table col:u16 kind:u8 (0 = tag, else FieldType) name
//! 6 AddSeries    db table series n:uvarint (col:u16 value)*n
//! 7 SetRetention db retention_ns:i64
//! 8 Tombstone    id:u64 db table all:u8 [all = 0: n:uvarint series:uvarint*n (ascending)]
//!                ts_min:i64 ts_max:i64 gen:u64 wal_seq:u64
//! 9 Counters     next_db next_table next_tombstone_id:u64 next_generation:u64 next_wal_seq:u64
//! 10 AddSeriesBatch db table first_series n:uvarint n_cols:uvarint (col:u16 len:uvarint chunk)*n_cols
//! ```
//! Kind 8 was added with segment format 2 (storage v2), kind 9 with the log rewrite, kind 10 for high
//! series cardinality; the log's own version stays 1 because each change only adds a kind: an older
//! build meets it as "a checksummed catalog record does not decode".
//!
//! # Series batches (kind 10)
//! One `AddSeries` record per series cost ~115 bytes per TSBS series (10 tags), more than the rows'
//! own segment bytes at TSBS scenario 4 (1 M series × 3 rows). A series batch ([`SeriesBatch`]) stores
//! series `first..first + n` of one table column-wise: per tag column, ascending, one String field
//! column chunk of `n` rows exactly as segments write them ([`crate::codec`]: a null row is a series
//! without that tag; Constant, dictionary with pco indexes or plain, byte blocks zstd-compressed). Reusing
//! the codec gives dictionaries and compression for free, and a decoder already bounded and fuzzed.
//! Applying a batch is applying its `n` `AddSeries` in order; [`CatalogLog::open_with`] expands it one
//! series at a time. A decode refuses `n` outside 1..=[`CATALOG_BATCH_SERIES_MAX`], more than
//! [`COLUMNS_PER_TABLE_MAX`] columns or [`CATALOG_BATCH_CELLS_MAX`] cells, column ids not strictly
//! ascending, a chunk that is not `n` rows or holds more than [`CATALOG_BATCH_TAG_BYTES_MAX`] bytes of
//! values (all chunks together), a value above [`NAME_BYTES_MAX`], ids past `u32`, trailing bytes.
//!
//! Batches are a record kind only: entries stay what the catalog and the WAL know ([`CatalogEntry`],
//! [`encode_entry`]; WAL records are per write and deleted after the flush, so they gain nothing).
//! Every writer of the log (append, rewrite, [`encode_log`]) goes through [`RecordWriter`], which
//! coalesces adjacent `AddSeries` with consecutive ids; a lone series stays a kind-6 record. The log
//! counts entries, not records ([`CatalogLog::size`]), so that the rewrite trigger compares it with the
//! entries of a snapshot.
//!
//! # Rewrite
//! The log only grows: drops, superseded retentions, tombstones that compaction has applied and the
//! entries each restart appends again from the WAL all stay. [`CatalogLog::rewrite`] replaces it with a
//! snapshot (the engine decides what is live, see `engine/catalog_rewrite.rs`):
//! 1. write the snapshot to `catalog.log.tmp` (created fresh) and fsync it;
//! 2. rename it over `catalog.log` (atomic), and append from then on through the new file;
//! 3. fsync the directory.
//!
//! A crash before 2 leaves the old log whole, and [`CatalogLog::open`] deletes the leftover `.tmp`; a
//! crash after 2 leaves one of the two logs, which describe the same catalog. An error in 1 or 2 changes
//! nothing; an error in 3 leaves unknown which log a power loss would keep, while later appends go to
//! the new one: the engine stops accepting changes ([`RewriteError::AfterRename`]).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use std::collections::BTreeSet;

use crate::catalog::{CatalogEntry, ColId, ColumnKind, Counters, DbId, SeriesId, SeriesTags, TableId, arena_span};
use crate::codec;
use crate::encoding::{Reader, put_i64, put_str, put_u8, put_u16, put_u32, put_u64, put_uvarint};
use crate::error::{Error, Result};
use crate::frame;
use crate::limits::{
    CATALOG_BATCH_CELLS_MAX, CATALOG_BATCH_SERIES_MAX, CATALOG_BATCH_TAG_BYTES_MAX, CATALOG_RECORD_BYTES_MAX,
    COLUMNS_PER_TABLE_MAX, NAME_BYTES_MAX, TOMBSTONE_SERIES_MAX,
};
use crate::tombstone::Tombstone;
use crate::types::{ColumnValues, FieldType};

pub const MAGIC: &[u8; 8] = b"SDCATLOG";
pub const VERSION: u32 = 1;

pub fn encode_entry(out: &mut Vec<u8>, e: &CatalogEntry) {
    match e {
        CatalogEntry::CreateDb { db, name, retention_ns } => {
            put_u8(out, 1);
            put_u32(out, *db);
            put_str(out, name);
            put_i64(out, *retention_ns);
        }
        CatalogEntry::DropDb { db } => {
            put_u8(out, 2);
            put_u32(out, *db);
        }
        CatalogEntry::CreateTable { db, table, name } => {
            put_u8(out, 3);
            put_u32(out, *db);
            put_u32(out, *table);
            put_str(out, name);
        }
        CatalogEntry::DropTable { db, table } => {
            put_u8(out, 4);
            put_u32(out, *db);
            put_u32(out, *table);
        }
        CatalogEntry::AddColumn { db, table, col, name, kind } => {
            put_u8(out, 5);
            put_u32(out, *db);
            put_u32(out, *table);
            put_u16(out, *col);
            put_u8(out, match kind {
                ColumnKind::Tag => 0,
                ColumnKind::Field(t) => *t as u8,
            });
            put_str(out, name);
        }
        CatalogEntry::AddSeries { db, table, series, tags } => {
            put_u8(out, 6);
            put_u32(out, *db);
            put_u32(out, *table);
            put_u32(out, *series);
            put_uvarint(out, tags.len() as u64);
            for (c, v) in tags.iter() {
                put_u16(out, c);
                put_str(out, v);
            }
        }
        CatalogEntry::SetRetention { db, retention_ns } => {
            put_u8(out, 7);
            put_u32(out, *db);
            put_i64(out, *retention_ns);
        }
        CatalogEntry::Tombstone(t) => {
            put_u8(out, 8);
            put_u64(out, t.id);
            put_u32(out, t.db);
            put_u32(out, t.table);
            match &t.series {
                None => put_u8(out, 1),
                Some(s) => {
                    put_u8(out, 0);
                    put_uvarint(out, s.len() as u64);
                    for id in s {
                        put_uvarint(out, u64::from(*id));
                    }
                }
            }
            put_i64(out, t.ts_min);
            put_i64(out, t.ts_max);
            put_u64(out, t.generation);
            put_u64(out, t.wal_seq);
        }
        CatalogEntry::Counters(c) => {
            put_u8(out, 9);
            put_u32(out, c.next_db);
            put_u32(out, c.next_table);
            put_u64(out, c.next_tombstone_id);
            put_u64(out, c.next_generation);
            put_u64(out, c.next_wal_seq);
        }
    }
}

/// Decodes one entry; `None` if the bytes are not a valid entry.
pub fn decode_entry(r: &mut Reader<'_>) -> Option<CatalogEntry> {
    let name = |r: &mut Reader<'_>| r.str(NAME_BYTES_MAX).map(str::to_string);
    Some(match r.u8()? {
        1 => CatalogEntry::CreateDb { db: r.u32()?, name: name(r)?, retention_ns: r.i64()? },
        2 => CatalogEntry::DropDb { db: r.u32()? },
        3 => CatalogEntry::CreateTable { db: r.u32()?, table: r.u32()?, name: name(r)? },
        4 => CatalogEntry::DropTable { db: r.u32()?, table: r.u32()? },
        5 => {
            let (db, table, col) = (r.u32()?, r.u32()?, r.u16()?);
            let kind = match r.u8()? {
                0 => ColumnKind::Tag,
                t => ColumnKind::Field(FieldType::from_u8(t)?),
            };
            CatalogEntry::AddColumn { db, table, col, kind, name: name(r)? }
        }
        6 => {
            let (db, table, series) = (r.u32()?, r.u32()?, r.u32()?);
            let n = r.len(COLUMNS_PER_TABLE_MAX)?;
            let mut tags = SeriesTags::with_capacity(n, 0);
            for _ in 0..n {
                let col = r.u16()?;
                tags.push(col, &name(r)?);
            }
            CatalogEntry::AddSeries { db, table, series, tags }
        }
        7 => CatalogEntry::SetRetention { db: r.u32()?, retention_ns: r.i64()? },
        8 => {
            let (id, db, table) = (r.u64()?, r.u32()?, r.u32()?);
            let series = match r.u8()? {
                1 => None,
                0 => {
                    let n = r.len(TOMBSTONE_SERIES_MAX.min(r.remaining()))?;
                    let ids = (0..n).map(|_| u32::try_from(r.uvarint()?).ok()).collect::<Option<Vec<_>>>()?;
                    if !ids.windows(2).all(|w| w[0] < w[1]) {
                        return None;
                    }
                    Some(ids)
                }
                _ => return None,
            };
            let (ts_min, ts_max, generation, wal_seq) = (r.i64()?, r.i64()?, r.u64()?, r.u64()?);
            CatalogEntry::Tombstone(Tombstone { id, db, table, series, ts_min, ts_max, generation, wal_seq })
        }
        9 => CatalogEntry::Counters(Counters {
            next_db: r.u32()?,
            next_table: r.u32()?,
            next_tombstone_id: r.u64()?,
            next_generation: r.u64()?,
            next_wal_seq: r.u64()?,
        }),
        _ => return None,
    })
}

/// Kind byte of a series batch record. A record kind, not an entry kind: [`decode_entry`] (shared with
/// the WAL, whose records are per write and never batched) refuses it.
pub const KIND_SERIES_BATCH: u8 = 10;

/// A run of new series of one table, stored as one record (kind 10): series `first`, `first + 1`, …,
/// the `i`-th with `tags[i]` (sorted by column id, no duplicates). Applying it is applying the
/// `AddSeries` entries of [`SeriesBatch::into_entries`] in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesBatch {
    pub db: DbId,
    pub table: TableId,
    pub first: SeriesId,
    pub tags: Vec<SeriesTags>,
}

impl SeriesBatch {
    /// Series in the batch.
    pub fn len(&self) -> usize {
        self.tags.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tags.is_empty()
    }

    /// The batch as the `AddSeries` entries it stands for, in id order.
    pub fn into_entries(self) -> impl Iterator<Item = CatalogEntry> {
        let SeriesBatch { db, table, first, tags } = self;
        (first..).zip(tags).map(move |(series, tags)| CatalogEntry::AddSeries { db, table, series, tags })
    }

    /// Appends the record payload: `kind=10 db:u32 table:u32 first:u32 n:uvarint n_cols:uvarint`, then
    /// per tag column some series has, ascending, `col:u16 len:uvarint chunk` where `chunk` is a String
    /// field column chunk of `n` rows (`crate::codec`; a series without that tag is a null row).
    ///
    /// # Panics
    /// If the batch breaks what [`decode_record`] checks (empty, too many series, cells or bytes, ids
    /// past `u32`, tags not strictly ascending): the writer builds batches within those bounds.
    pub fn encode(&self, out: &mut Vec<u8>) {
        assert!(self.tags.iter().all(SeriesTags::strictly_ascending), "series batch tags not sorted by column");
        assert!(self.tags.iter().map(SeriesTags::value_bytes).sum::<usize>() <= CATALOG_BATCH_TAG_BYTES_MAX);
        let cols: BTreeSet<ColId> = self.tags.iter().flat_map(|t| t.iter().map(|(c, _)| c)).collect();
        let series = self.tags.iter().map(SeriesTags::iter);
        encode_batch(out, (self.db, self.table, self.first), &cols, series);
    }
}

/// Appends a series batch payload (see [`SeriesBatch::encode`]) of series `first`, `first + 1`, … with
/// the tags `series` yields (each sorted by column, its columns all in `cols`), borrowing every value.
fn encode_batch<'a, I>(out: &mut Vec<u8>, head: (DbId, TableId, SeriesId), cols: &BTreeSet<ColId>, series: impl ExactSizeIterator<Item = I>)
where
    I: Iterator<Item = (ColId, &'a str)>,
{
    let n = series.len();
    // Tags are sorted, so each series' next unwritten tag is at the head of its iterator as the columns
    // ascend.
    let mut cursors: Vec<std::iter::Peekable<I>> = series.map(Iterator::peekable).collect();
    encode_batch_columns(out, head, cols, n, |col, _, values, validity| {
        for tags in &mut cursors {
            let hit = tags.next_if(|(c, _)| *c == col);
            if let Some((_, v)) = hit {
                values.push(v);
            }
            validity.push(hit.is_some());
        }
    });
    assert!(cursors.iter_mut().all(|t| t.peek().is_none()), "series batch tag outside its columns or unsorted");
}

/// [`encode_batch`] of `n` series whose values of each column `column` gives: called once per column
/// of `cols`, ascending, with the column, its position in `cols` and empty buffers, it fills in each
/// series' value (present values only) and whether it has one.
fn encode_batch_columns<'a>(
    out: &mut Vec<u8>,
    (db, table, first): (DbId, TableId, SeriesId),
    cols: &BTreeSet<ColId>,
    n: usize,
    mut column: impl FnMut(ColId, usize, &mut Vec<&'a str>, &mut Vec<bool>),
) {
    assert!((1..=CATALOG_BATCH_SERIES_MAX).contains(&n), "series batch of {n} series");
    assert!(first.checked_add(n as u32).is_some(), "series batch ids past u32");
    assert!(cols.len() <= COLUMNS_PER_TABLE_MAX, "series batch of {} columns", cols.len());
    assert!(n * cols.len() <= CATALOG_BATCH_CELLS_MAX, "series batch of {} cells", n * cols.len());
    put_u8(out, KIND_SERIES_BATCH);
    put_u32(out, db);
    put_u32(out, table);
    put_u32(out, first);
    put_uvarint(out, n as u64);
    put_uvarint(out, cols.len() as u64);
    let (mut chunk, mut values, mut validity) = (Vec::new(), Vec::with_capacity(n), Vec::with_capacity(n));
    for (k, &col) in cols.iter().enumerate() {
        values.clear();
        validity.clear();
        column(col, k, &mut values, &mut validity);
        assert_eq!(validity.len(), n, "series batch column {col} of {} rows, not {n}", validity.len());
        chunk.clear();
        // A column's neighbouring rows are different series' tags: pco's delta search finds nothing
        // there and compressed a sample per candidate (3 % of the server's CPU at 10 M new series).
        // Quick: pco's one-bin level for the dictionary indexes and zstd's level 1 for the strings;
        // the batches were 40 % of the flush thread's samples loading TSBS's 10 M hosts, most of it
        // compressing.
        codec::encode_strings(&validity, &values, codec::Delta::Off, codec::Effort::Quick, &mut chunk);
        put_u16(out, col);
        put_uvarint(out, chunk.len() as u64);
        out.extend_from_slice(&chunk);
    }
}

/// One decoded `catalog.log` record.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// Kinds 1–9: one entry.
    Entry(CatalogEntry),
    /// Kind 10: a run of `AddSeries`.
    Series(SeriesBatch),
}

impl Record {
    /// Entries the record stands for (a batch counts each of its series).
    pub fn entry_count(&self) -> u64 {
        match self {
            Record::Entry(_) => 1,
            Record::Series(b) => b.len() as u64,
        }
    }
}

/// Decodes one record payload, all of it; the error says what was wrong. A corrupt batch is an error,
/// never a panic, and its decode holds at most [`CATALOG_BATCH_CELLS_MAX`] cells and
/// [`CATALOG_BATCH_TAG_BYTES_MAX`] bytes of values.
pub fn decode_record(payload: &[u8]) -> std::result::Result<Record, String> {
    let mut r = Reader::new(payload);
    let record = if payload.first() == Some(&KIND_SERIES_BATCH) {
        r.u8();
        Record::Series(decode_batch(&mut r).map_err(|why| format!("series batch: {why}"))?)
    } else {
        Record::Entry(decode_entry(&mut r).ok_or("unknown kind or bad fields")?)
    };
    if !r.is_empty() {
        return Err(format!("{} bytes after the entry", r.remaining()));
    }
    Ok(record)
}

/// The fields of a series batch after its kind byte (see [`SeriesBatch::encode`]).
fn decode_batch(r: &mut Reader<'_>) -> std::result::Result<SeriesBatch, String> {
    let (db, table, first) = (r.u32(), r.u32(), r.u32());
    let (Some(db), Some(table), Some(first)) = (db, table, first) else { return Err("truncated header".into()) };
    let n = r.uvarint().ok_or("truncated series count")?;
    if !(1..=CATALOG_BATCH_SERIES_MAX as u64).contains(&n) {
        return Err(format!("{n} series, not in 1..={CATALOG_BATCH_SERIES_MAX}"));
    }
    let n = n as usize;
    if first.checked_add(n as u32).is_none() {
        return Err(format!("series ids {first} + {n} past u32"));
    }
    let n_cols = r.uvarint().ok_or("truncated column count")?;
    if n_cols > COLUMNS_PER_TABLE_MAX as u64 || n as u64 * n_cols > CATALOG_BATCH_CELLS_MAX as u64 {
        return Err(format!("{n_cols} columns of {n} series, more than {CATALOG_BATCH_CELLS_MAX} cells"));
    }
    let mut tags: Vec<SeriesTags> = vec![SeriesTags::default(); n];
    let mut bytes_left = CATALOG_BATCH_TAG_BYTES_MAX;
    let mut prev: Option<ColId> = None;
    for _ in 0..n_cols {
        let col = r.u16().ok_or("truncated column id")?;
        if prev.is_some_and(|p| p >= col) {
            return Err(format!("column {col} after column {}: ids not strictly ascending", prev.unwrap_or(0)));
        }
        prev = Some(col);
        let chunk = r.bytes(r.remaining()).ok_or_else(|| format!("column {col}: truncated chunk"))?;
        let column = codec::decode_string_column(chunk, n, bytes_left).map_err(|e| format!("column {col}: {e}"))?;
        let ColumnValues::String(values) = column.values else { return Err(format!("column {col}: not strings")) };
        for ((v, ok), series_tags) in values.into_iter().zip(column.validity).zip(&mut tags) {
            if !ok {
                continue;
            }
            if v.len() > NAME_BYTES_MAX {
                return Err(format!("column {col}: a value of {} bytes, above {NAME_BYTES_MAX}", v.len()));
            }
            // The codec kept the column within `bytes_left`.
            bytes_left -= v.len();
            series_tags.push(col, &v);
        }
    }
    Ok(SeriesBatch { db, table, first, tags })
}

/// Tables whose runs of new series a [`RecordWriter`] buffers at once. Appends interleave tables (a
/// write of several measurements creates their series in row order); a stretch touching more tables
/// than this emits its oldest batch early, which costs bytes, not correctness.
const RECORD_WRITER_TABLES_MAX: usize = 64;

/// A batch being filled, with what its limits are checked against. Its series' tags are appended to
/// one [`SeriesTags`] rather than kept as one value per series: at 10 M new series the per-tag `String`
/// copies (entries held them that way then), their frees and a second copy into the chunk encoder were
/// 8 % of the server's CPU (scenario 5's profile).
struct Pending {
    db: DbId,
    table: TableId,
    first: SeriesId,
    cols: BTreeSet<ColId>,
    /// Every series' tags back to back; series `j`'s are tags `series_ends[j − 1]..series_ends[j]`.
    tags: SeriesTags,
    series_ends: Vec<u32>,
    /// The columns of the series pushed last. A series with the same columns (every series of a TSBS
    /// table) adds none to `cols`, known without a set lookup per tag: those lookups and inserts were
    /// a tenth of the catalog log's CPU at 10 M new series.
    last_cols: Vec<ColId>,
}

impl Pending {
    fn new(db: DbId, table: TableId, series: SeriesId) -> Pending {
        Pending {
            db,
            table,
            first: series,
            cols: BTreeSet::new(),
            tags: SeriesTags::default(),
            series_ends: Vec::new(),
            last_cols: Vec::new(),
        }
    }

    /// An empty batch starting at `series`, in the buffers of `self` (emitted): a flush appends its new
    /// series in batches of [`CATALOG_BATCH_SERIES_MAX`], and growing each batch's buffers again from
    /// nothing copied them several times over.
    fn reuse(mut self, db: DbId, table: TableId, series: SeriesId) -> Pending {
        self.tags.clear();
        self.series_ends.clear();
        self.cols.clear();
        self.last_cols.clear();
        Pending { db, table, first: series, ..self }
    }

    fn len(&self) -> usize {
        self.series_ends.len()
    }

    /// Adds the series if it is the next id and the batch stays within its limits.
    fn try_push(&mut self, series: SeriesId, tags: &SeriesTags) -> bool {
        let n = self.len();
        let same_cols = tags.columns().eq(self.last_cols.iter().copied());
        let new_cols = if same_cols { 0 } else { tags.columns().filter(|c| !self.cols.contains(c)).count() };
        let fits = n < CATALOG_BATCH_SERIES_MAX
            && self.first.checked_add(n as u32) == Some(series)
            && series.checked_add(1).is_some()
            && self.cols.len() + new_cols <= COLUMNS_PER_TABLE_MAX
            && (n + 1) * (self.cols.len() + new_cols) <= CATALOG_BATCH_CELLS_MAX
            && self.tags.value_bytes() + tags.value_bytes() <= CATALOG_BATCH_TAG_BYTES_MAX;
        if fits {
            if !same_cols {
                self.cols.extend(tags.columns());
                self.last_cols.clear();
                self.last_cols.extend(tags.columns());
            }
            self.tags.extend_from(tags);
            // At most CATALOG_BATCH_CELLS_MAX tags (checked above), far below u32.
            self.series_ends.push(self.tags.len() as u32);
        }
        fits
    }

    /// Series `j`'s tags.
    fn series(&self, j: usize) -> impl Iterator<Item = (ColId, &str)> + '_ {
        self.tags.range(arena_span(&self.series_ends, j as u32))
    }

    /// When every series has every column of the batch (TSBS's), series `j`'s value of the `k`-th column
    /// is tag `j · w + k` (`w` columns), taken from there rather than by walking each series' tags once
    /// per column (that walk was 2 % of the server's CPU loading TSBS's 10 M hosts;
    /// `examples/catalog_size.rs`' 1 M series encode in 0.34 s against 0.39, buffers reused too). The
    /// count tells: a series' tags strictly ascend (`RecordWriter::push` checks) within the `w` columns,
    /// so `n · w` tags in all means `w` each, the batch's columns in order.
    fn encode(&self, out: &mut Vec<u8>) {
        let (head, n, w) = ((self.db, self.table, self.first), self.len(), self.cols.len());
        if self.tags.len() != n * w {
            return encode_batch(out, head, &self.cols, (0..n).map(|j| self.series(j)));
        }
        encode_batch_columns(out, head, &self.cols, n, |_, k, values, validity| {
            values.extend((k..self.tags.len()).step_by(w).map(|i| self.tags.value(i)));
            validity.resize(n, true);
        });
    }

    /// The batch as the `AddSeries` entries it stands for, in id order.
    fn entries(&self) -> impl Iterator<Item = CatalogEntry> + '_ {
        (0..self.len()).map(|j| CatalogEntry::AddSeries {
            db: self.db,
            table: self.table,
            series: self.first + j as u32,
            tags: self.series(j).collect(),
        })
    }
}

/// Turns a stream of entries into `catalog.log` record payloads, coalescing runs of `AddSeries` with
/// consecutive ids into series batches. Only adjacent `AddSeries` are coalesced: any other entry first
/// emits every pending batch, so it keeps its place relative to the series (an `AddColumn` still
/// precedes the series that use it). Within a stretch of `AddSeries`, batches of different tables may
/// be emitted in another order than their entries interleaved: series of different tables do not
/// interact in [`crate::catalog::Catalog::apply`]; per table the order is kept.
///
/// A series that cannot be batched (tags unsorted or larger than a batch, id `u32::MAX`) and a batch
/// of one series are written as single `AddSeries` records, as is every series of a batch that would
/// encode larger than a record.
pub struct RecordWriter {
    pending: Vec<Pending>,
    /// The last batch emitted, whose buffers the next batch takes ([`Pending::reuse`]).
    spare: Option<Pending>,
    payload: Vec<u8>,
    record_bytes_max: usize,
}

/// Receives each record payload of a [`RecordWriter`] with the number of entries it stands for.
pub type Emit<'a> = dyn FnMut(&[u8], u64) -> Result<()> + 'a;

impl Default for RecordWriter {
    fn default() -> Self {
        RecordWriter { pending: Vec::new(), spare: None, payload: Vec::new(), record_bytes_max: CATALOG_RECORD_BYTES_MAX }
    }
}

impl RecordWriter {
    pub fn new() -> RecordWriter {
        RecordWriter::default()
    }

    /// Takes the next entry; emits whatever records it completes.
    pub fn push(&mut self, e: &CatalogEntry, emit: &mut Emit<'_>) -> Result<()> {
        if let CatalogEntry::AddSeries { db, table, series, tags } = e
            && tags.strictly_ascending()
            && tags.value_bytes() <= CATALOG_BATCH_TAG_BYTES_MAX
            && tags.len() <= COLUMNS_PER_TABLE_MAX
            && series.checked_add(1).is_some()
        {
            if let Some(i) = self.pending.iter().position(|p| p.db == *db && p.table == *table) {
                if self.pending[i].try_push(*series, tags) {
                    return Ok(());
                }
                let full = self.pending.remove(i);
                self.emit_batch(full, emit)?;
            }
            if self.pending.len() == RECORD_WRITER_TABLES_MAX {
                let oldest = self.pending.remove(0);
                self.emit_batch(oldest, emit)?;
            }
            let mut p = match self.spare.take() {
                Some(spare) => spare.reuse(*db, *table, *series),
                None => Pending::new(*db, *table, *series),
            };
            let pushed = p.try_push(*series, tags);
            debug_assert!(pushed, "a series within the limits checked above fits an empty batch");
            self.pending.push(p);
            return Ok(());
        }
        self.finish(emit)?;
        self.emit_entry(e, emit)
    }

    /// All of `entries` as records, in one go.
    pub fn write_all<'e>(entries: impl IntoIterator<Item = &'e CatalogEntry>, emit: &mut Emit<'_>) -> Result<()> {
        let mut w = RecordWriter::new();
        entries.into_iter().try_for_each(|e| w.push(e, emit))?;
        w.finish(emit)
    }

    /// Emits every pending batch; call after the last entry.
    pub fn finish(&mut self, emit: &mut Emit<'_>) -> Result<()> {
        for p in std::mem::take(&mut self.pending) {
            self.emit_batch(p, emit)?;
        }
        Ok(())
    }

    fn emit_entry(&mut self, e: &CatalogEntry, emit: &mut Emit<'_>) -> Result<()> {
        self.payload.clear();
        encode_entry(&mut self.payload, e);
        emit(&self.payload, 1)
    }

    fn emit_batch(&mut self, p: Pending, emit: &mut Emit<'_>) -> Result<()> {
        let emitted = self.emit_pending(&p, emit);
        self.spare = Some(p);
        emitted
    }

    fn emit_pending(&mut self, p: &Pending, emit: &mut Emit<'_>) -> Result<()> {
        if p.len() > 1 {
            self.payload.clear();
            p.encode(&mut self.payload);
            if self.payload.len() <= self.record_bytes_max {
                return emit(&self.payload, p.len() as u64);
            }
        }
        // One series costs fewer bytes as an `AddSeries` than as a batch of one column chunk per tag.
        for e in p.entries() {
            self.emit_entry(&e, emit)?;
        }
        Ok(())
    }
}

/// The open catalog log, positioned at its end.
pub struct CatalogLog {
    path: PathBuf,
    file: File,
    /// Entries in the file, a series batch counting each of its series: the measure of its dead weight,
    /// against the entries a snapshot would write (records would not do: batches make a log of live
    /// series look far smaller than the live catalog's entry count).
    entries: u64,
    /// Bytes of the file.
    bytes: u64,
}

/// Why [`CatalogLog::rewrite`] failed, and so whether the log is still the old one.
#[derive(Debug)]
pub enum RewriteError {
    /// Nothing changed: the old log is in place and still appended to.
    Before(Error),
    /// The new log is in place and appended to, but the directory fsync failed: a power loss may bring
    /// back the old one without the later appends. The caller must stop accepting changes.
    AfterRename(Error),
}

/// The temporary file of a rewrite: `catalog.log.tmp` next to `catalog.log`.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(std::ffi::OsStr::to_os_string).unwrap_or_default();
    name.push(".tmp");
    path.with_file_name(name)
}

/// The bytes of a whole log holding `entries`: header, then their records (runs of series batched,
/// see [`RecordWriter`]).
pub fn encode_log(entries: &[CatalogEntry]) -> Result<Vec<u8>> {
    let mut buf = frame::header(MAGIC, VERSION).to_vec();
    let mut emit = |payload: &[u8], _: u64| {
        check_record_len(payload)?;
        frame::put_record(&mut buf, payload);
        Ok(())
    };
    RecordWriter::write_all(entries, &mut emit)?;
    Ok(buf)
}

fn check_record_len(payload: &[u8]) -> Result<()> {
    if payload.len() > CATALOG_RECORD_BYTES_MAX {
        return Err(Error::LimitExceeded {
            what: "catalog record bytes",
            actual: payload.len() as u64,
            limit: CATALOG_RECORD_BYTES_MAX as u64,
            fix: "use fewer tags per series or shorter tag values",
        });
    }
    Ok(())
}

impl CatalogLog {
    /// Opens (creating if absent) the log and returns every valid entry in it. A torn tail is truncated
    /// with a warning.
    ///
    /// A `catalog.log.tmp` left by a rewrite that a crash cut short is deleted: until its rename, the
    /// old log is the valid one.
    pub fn open(path: &Path) -> Result<(CatalogLog, Vec<CatalogEntry>)> {
        let mut entries = Vec::new();
        let log = Self::open_with(path, |e| {
            entries.push(e);
            Ok(())
        })?;
        Ok((log, entries))
    }

    /// [`CatalogLog::open`] handing each entry to `on_entry` in order instead of collecting them: at
    /// millions of series the entries, each with its own strings, would take several times the memory of
    /// the catalog they build.
    pub fn open_with(path: &Path, mut on_entry: impl FnMut(CatalogEntry) -> Result<()>) -> Result<CatalogLog> {
        let io = |e| Error::io(path, e);
        let tmp = tmp_path(path);
        match std::fs::remove_file(&tmp) {
            Ok(()) => tracing::warn!(path = %tmp.display(), "removed the temporary file of a catalog log rewrite cut short by a crash"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&tmp, e)),
        }
        let mut file = OpenOptions::new().read(true).append(true).create(true).open(path).map_err(io)?;
        let bytes = std::fs::read(path).map_err(io)?;
        let fresh = frame::header(MAGIC, VERSION);
        if bytes.len() < frame::HEADER_BYTES && fresh.starts_with(&bytes) {
            // Empty, or a header cut short by a crash while the file was created: it holds no entry.
            if !bytes.is_empty() {
                tracing::warn!(path = %path.display(), bytes = bytes.len(), "rewriting a catalog log whose header was torn");
                file.set_len(0).map_err(io)?;
            }
            file.write_all(&fresh).map_err(io)?;
            file.sync_all().map_err(io)?;
            return Ok(CatalogLog { path: path.to_path_buf(), file, entries: 0, bytes: frame::HEADER_BYTES as u64 });
        }
        match frame::check_header(&bytes, MAGIC) {
            Some(VERSION) => {}
            Some(v) => {
                return Err(Error::UnsupportedVersion {
                    path: path.to_path_buf(),
                    version: v,
                    supported: VERSION.to_string(),
                    fix: "run the Sundial version that wrote this data directory",
                });
            }
            None => {
                return Err(Error::Corrupt {
                    path: path.to_path_buf(),
                    offset: 0,
                    what: "not a Sundial catalog log (bad magic)".into(),
                });
            }
        }
        let body = &bytes[frame::HEADER_BYTES..];
        let mut frames = frame::Frames::new(body, CATALOG_RECORD_BYTES_MAX);
        let mut entries = 0u64;
        for payload in frames.by_ref() {
            match decode_record(payload) {
                Ok(Record::Entry(e)) => {
                    entries += 1;
                    on_entry(e)?;
                }
                // Expanded one series at a time: replay holds at most one batch besides the catalog.
                Ok(Record::Series(b)) => {
                    entries += b.len() as u64;
                    b.into_entries().try_for_each(&mut on_entry)?;
                }
                Err(why) => {
                    return Err(Error::Corrupt {
                        path: path.to_path_buf(),
                        offset: (frame::HEADER_BYTES + frames.valid_len()) as u64,
                        what: format!("a checksummed catalog record does not decode ({why}; written by a newer version?)"),
                    });
                }
            }
        }
        let keep = (frame::HEADER_BYTES + frames.valid_len()) as u64;
        if let Some(why) = frames.torn() {
            tracing::warn!(path = %path.display(), offset = keep, why, "truncating torn tail of the catalog log");
            file.set_len(keep).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        Ok(CatalogLog { path: path.to_path_buf(), file, entries, bytes: keep })
    }

    /// Entries (a series batch counts each of its series) and bytes in the file.
    pub fn size(&self) -> (u64, u64) {
        (self.entries, self.bytes)
    }

    /// Replaces the log by one holding exactly `entries` (see the module doc for the protocol and its
    /// crash cases). Later appends go to the new file.
    pub fn rewrite(&mut self, entries: &[CatalogEntry]) -> std::result::Result<(), RewriteError> {
        self.rewrite_with(&mut |put| entries.iter().try_for_each(|e| put(e)))
    }

    /// [`CatalogLog::rewrite`] with the entries handed over one at a time by `fill`, which calls `put`
    /// for each: the new log is streamed to its temporary file, never held whole in memory.
    pub fn rewrite_with(&mut self, fill: &mut EntrySource<'_>) -> std::result::Result<(), RewriteError> {
        let tmp = tmp_path(&self.path);
        let (file, entries) = write_tmp_with(&tmp, fill).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            RewriteError::Before(e)
        })?;
        let bytes = file.metadata().map_err(|e| RewriteError::Before(Error::io(&tmp, e)))?.len();
        std::fs::rename(&tmp, &self.path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            RewriteError::Before(Error::io(&self.path, e))
        })?;
        // The open descriptor follows the inode: it is now `catalog.log`.
        self.file = file;
        self.entries = entries;
        self.bytes = bytes;
        let dir = self.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        File::open(dir).and_then(|d| d.sync_all()).map_err(|e| RewriteError::AfterRename(Error::io(dir, e)))
    }

    /// Appends entries (runs of series batched, see [`RecordWriter`]) and makes them durable before
    /// returning.
    pub fn append<'e>(&mut self, entries: impl IntoIterator<Item = &'e CatalogEntry>) -> Result<()> {
        let mut buf = Vec::new();
        let mut n = 0u64;
        let mut emit = |payload: &[u8], entries: u64| {
            frame::put_record(&mut buf, payload);
            n += entries;
            Ok(())
        };
        RecordWriter::write_all(entries, &mut emit)?;
        if n == 0 {
            return Ok(());
        }
        let io = |e| Error::io(&self.path, e);
        self.file.write_all(&buf).map_err(io)?;
        self.file.sync_data().map_err(io)?;
        self.entries += n;
        self.bytes += buf.len() as u64;
        Ok(())
    }
}

/// Step 1 of a rewrite: `tmp` holds the whole new log, fsynced. Returns the file, open for appending.
/// (Also what a test writes to simulate a crash before the rename.)
pub fn write_tmp(tmp: &Path, entries: &[CatalogEntry]) -> Result<File> {
    Ok(write_tmp_with(tmp, &mut |put| entries.iter().try_for_each(|e| put(e)))?.0)
}

/// Hands each entry of a new log to the `put` it is given, in order (see [`CatalogLog::rewrite_with`]).
pub type EntrySource<'a> = dyn FnMut(&mut dyn FnMut(&CatalogEntry) -> Result<()>) -> Result<()> + 'a;

/// [`write_tmp`] streaming the entries from `fill` (runs of series batched: at most one batch per table
/// is buffered, see [`RecordWriter`]); returns the file and how many entries it holds.
fn write_tmp_with(tmp: &Path, fill: &mut EntrySource<'_>) -> Result<(File, u64)> {
    let io = |e| Error::io(tmp, e);
    match std::fs::remove_file(tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
        _ => {}
    }
    let file = OpenOptions::new().read(true).append(true).create_new(true).open(tmp).map_err(io)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    out.write_all(&frame::header(MAGIC, VERSION)).map_err(io)?;
    let (mut record, mut entries) = (Vec::new(), 0u64);
    let mut emit = |payload: &[u8], n: u64| {
        check_record_len(payload)?;
        record.clear();
        frame::put_record(&mut record, payload);
        entries += n;
        out.write_all(&record).map_err(io)
    };
    let mut w = RecordWriter::new();
    fill(&mut |e| w.push(e, &mut emit))?;
    w.finish(&mut emit)?;
    let file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    Ok((file, entries))
}

/// The kind byte of every valid record of the log at `path`, in order (tests check what was batched).
#[cfg(test)]
pub(crate) fn record_kinds(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    frame::Frames::new(&bytes[frame::HEADER_BYTES..], CATALOG_RECORD_BYTES_MAX).map(|p| p[0]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Column;

    fn sample() -> Vec<CatalogEntry> {
        vec![
            CatalogEntry::CreateDb { db: 3, name: "db".into(), retention_ns: 7 },
            CatalogEntry::CreateTable { db: 3, table: 9, name: "cpu".into() },
            CatalogEntry::AddColumn { db: 3, table: 9, col: 0, name: "host".into(), kind: ColumnKind::Tag },
            CatalogEntry::AddColumn {
                db: 3,
                table: 9,
                col: 1,
                name: "v".into(),
                kind: ColumnKind::Field(FieldType::UInteger),
            },
            CatalogEntry::AddSeries { db: 3, table: 9, series: 0, tags: [(0, "h é")].into_iter().collect() },
            CatalogEntry::SetRetention { db: 3, retention_ns: 99 },
            CatalogEntry::Tombstone(Tombstone { id: 1, db: 3, table: 9, series: None, ts_min: -5, ts_max: 5, generation: 2, wal_seq: 7 }),
            CatalogEntry::Tombstone(Tombstone { id: 2, db: 3, table: 9, series: Some(vec![0, 300]), ts_min: i64::MIN, ts_max: i64::MAX, generation: 0, wal_seq: 1 }),
            CatalogEntry::DropTable { db: 3, table: 9 },
            CatalogEntry::DropDb { db: 3 },
            CatalogEntry::Counters(Counters { next_db: 4, next_table: 10, next_tombstone_id: 3, next_generation: 8, next_wal_seq: 1 << 40 }),
        ]
    }

    #[test]
    fn a_rewrite_replaces_the_log_and_later_appends_land_in_the_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.log");
        let (mut log, _) = CatalogLog::open(&path).unwrap();
        log.append(&sample()).unwrap();
        let (records, bytes) = log.size();
        assert_eq!(records, sample().len() as u64);
        assert_eq!(bytes, std::fs::metadata(&path).unwrap().len());
        let snapshot = sample()[..2].to_vec();
        log.rewrite(&snapshot).unwrap();
        assert!(!tmp_path(&path).exists());
        log.append(&[CatalogEntry::DropDb { db: 4 }]).unwrap();
        assert_eq!(log.size(), (3, std::fs::metadata(&path).unwrap().len()));
        assert!(log.size().1 < bytes, "the log shrank");
        drop(log);
        let (_, got) = CatalogLog::open(&path).unwrap();
        assert_eq!(got, [snapshot, vec![CatalogEntry::DropDb { db: 4 }]].concat());
    }

    /// A crash during a rewrite leaves `catalog.log.tmp` (whole or cut short) next to the old log, which
    /// is still the valid one: open must ignore and delete the temporary file.
    #[test]
    fn a_rewrite_cut_short_before_its_rename_leaves_the_old_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.log");
        let (mut log, _) = CatalogLog::open(&path).unwrap();
        log.append(&sample()).unwrap();
        drop(log);
        let whole = encode_log(&sample()[..1]).unwrap();
        for tmp_bytes in [whole.clone(), whole[..whole.len() - 5].to_vec(), Vec::new()] {
            std::fs::write(tmp_path(&path), &tmp_bytes).unwrap();
            let (_, got) = CatalogLog::open(&path).unwrap();
            assert_eq!(got, sample());
            assert!(!tmp_path(&path).exists(), "the leftover temporary file is deleted");
        }
    }

    #[test]
    fn entries_survive_reopen_and_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.log");
        let (mut log, got) = CatalogLog::open(&path).unwrap();
        assert!(got.is_empty());
        log.append(&sample()).unwrap();
        drop(log);
        let (_, got) = CatalogLog::open(&path).unwrap();
        assert_eq!(got, sample());

        let full = std::fs::metadata(&path).unwrap().len();
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(full - 3).unwrap();
        let (mut log, got) = CatalogLog::open(&path).unwrap();
        assert_eq!(got, sample()[..sample().len() - 1]);
        log.append(&[CatalogEntry::DropDb { db: 4 }]).unwrap();
        let (_, got) = CatalogLog::open(&path).unwrap();
        assert_eq!(got.last(), Some(&CatalogEntry::DropDb { db: 4 }));
    }

    fn series(db: u32, table: u32, series: u32, tags: &[(ColId, &str)]) -> CatalogEntry {
        let tags = tags.iter().copied().collect();
        CatalogEntry::AddSeries { db, table, series, tags }
    }

    fn batch_round_trip(b: &SeriesBatch) -> Vec<u8> {
        let mut out = Vec::new();
        b.encode(&mut out);
        assert_eq!(decode_record(&out), Ok(Record::Series(b.clone())));
        out
    }

    fn owned(tags: &[(ColId, &str)]) -> SeriesTags {
        tags.iter().copied().collect()
    }

    #[test]
    fn series_batches_round_trip() {
        // Missing tags (nulls), a series without any tag, unicode, an empty value (not a null).
        let b = SeriesBatch {
            db: 1,
            table: 2,
            first: 7,
            tags: vec![
                owned(&[(0, "host_0"), (1, "eu-central-1"), (4, "x64")]),
                owned(&[(0, "host_1"), (4, "x86")]),
                SeriesTags::default(),
                owned(&[(1, "日本語 🦀"), (3, "")]),
                owned(&[(0, "h é")]),
            ],
        };
        batch_round_trip(&b);
        let entries: Vec<CatalogEntry> = b.clone().into_entries().collect();
        assert_eq!(entries[2], CatalogEntry::AddSeries { db: 1, table: 2, series: 9, tags: SeriesTags::default() });
        assert_eq!(entries[4], series(1, 2, 11, &[(0, "h é")]));
        // Only tagless series: no column at all.
        let bare = SeriesBatch { db: 0, table: 0, first: 0, tags: vec![SeriesTags::default(); 3] };
        assert_eq!(batch_round_trip(&bare).len(), 1 + 12 + 2);
        batch_round_trip(&SeriesBatch { db: 0, table: 0, first: u32::MAX - 1, tags: vec![owned(&[(9, "one")])] });
        // The largest batch, TSBS-shaped: well under a record, a few bytes per series.
        let max = SeriesBatch {
            db: 0,
            table: 0,
            first: 100,
            tags: (0..CATALOG_BATCH_SERIES_MAX)
                .map(|i| [(0, format!("host_{i}")), (1, format!("{}", i * 7 % 100)), (2, ["x64", "x86"][i % 2].to_string())].into_iter().collect())
                .collect(),
        };
        let bytes = batch_round_trip(&max).len();
        assert!(bytes < 8 * CATALOG_BATCH_SERIES_MAX, "{bytes} bytes");
    }

    /// One batch of series whose columns change from one series to the next and come back (the writer
    /// skips its column bookkeeping for a series with the last one's columns) decodes to its entries.
    #[test]
    fn a_batch_of_series_whose_columns_change_and_come_back_decodes_to_its_entries() {
        let tag_sets: [&[(ColId, &str)]; 7] =
            [&[(0, "a"), (1, "b")], &[(0, "c"), (1, "d")], &[(1, "e"), (2, "f")], &[(0, "g"), (1, "h")], &[], &[(0, "i"), (1, "j"), (2, "k")], &[(3, "l")]];
        let entries: Vec<CatalogEntry> = tag_sets.iter().enumerate().map(|(i, t)| series(0, 0, i as u32, t)).collect();
        let (mut got, mut records) = (Vec::new(), 0);
        RecordWriter::write_all(&entries, &mut |payload, n| {
            records += 1;
            match decode_record(payload).unwrap() {
                Record::Series(b) => {
                    assert_eq!(b.len() as u64, n);
                    got.extend(b.into_entries());
                }
                Record::Entry(e) => got.push(e),
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(records, 1, "one batch");
        assert_eq!(got, entries);
    }

    /// Batches whose series all have the same columns (encoded from their tags' positions) come out
    /// byte for byte as the general encoding writes them, and so do the batches after them in the
    /// buffers they leave: a full batch, its continuation, one whose columns change, a uniform one
    /// again; each decodes to its entries.
    #[test]
    fn uniform_batches_encode_as_any_batch_and_leave_their_buffers_clean() {
        let tsbs = |i: u32| series(0, 0, i, &[(0, &format!("host_{i}")), (1, ["eu", "us", "ap"][i as usize % 3]), (3, ["x64", "x86"][i as usize % 2])]);
        let max = CATALOG_BATCH_SERIES_MAX as u32;
        let mut entries: Vec<CatalogEntry> = (0..max + 10).map(tsbs).collect();
        entries.push(CatalogEntry::AddColumn { db: 0, table: 0, col: 4, name: "rack".into(), kind: ColumnKind::Tag });
        entries.extend([series(0, 0, max + 10, &[(0, "a"), (3, "b")]), series(0, 0, max + 11, &[(1, "c"), (4, "d")]), series(0, 0, max + 12, &[(0, "e")])]);
        entries.push(CatalogEntry::CreateTable { db: 0, table: 1, name: "mem".into() });
        entries.extend((max + 13..max + 20).map(tsbs));
        let (mut got, mut batches) = (Vec::new(), 0);
        RecordWriter::write_all(&entries, &mut |payload, n| {
            match decode_record(payload).unwrap() {
                Record::Series(b) => {
                    assert_eq!(b.len() as u64, n);
                    let mut general = Vec::new();
                    b.encode(&mut general);
                    assert!(general == payload, "batch {batches} encoded otherwise than in general");
                    batches += 1;
                    got.extend(b.into_entries());
                }
                Record::Entry(e) => got.push(e),
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(batches, 4);
        assert_eq!(got, entries);
    }

    /// Entries with runs of series broken by other kinds, interleaved tables, a gap in the ids and a
    /// series whose tags are not sorted: the log reopens to the same entries per table, in an order
    /// that builds the same catalog as applying them one by one.
    fn mixed() -> Vec<CatalogEntry> {
        let mut v = vec![
            CatalogEntry::CreateDb { db: 0, name: "db".into(), retention_ns: 0 },
            CatalogEntry::CreateTable { db: 0, table: 0, name: "cpu".into() },
            CatalogEntry::CreateTable { db: 0, table: 1, name: "mem".into() },
            CatalogEntry::AddColumn { db: 0, table: 0, col: 0, name: "host".into(), kind: ColumnKind::Tag },
            CatalogEntry::AddColumn { db: 0, table: 1, col: 0, name: "host".into(), kind: ColumnKind::Tag },
        ];
        for i in 0..40u32 {
            v.push(series(0, 0, i, &[(0, &format!("h{i}"))]));
            v.push(series(0, 1, i, &[(0, &format!("m{i}"))]));
        }
        v.push(CatalogEntry::AddColumn { db: 0, table: 0, col: 1, name: "rack".into(), kind: ColumnKind::Tag });
        v.push(CatalogEntry::Tombstone(Tombstone { id: 1, db: 0, table: 0, series: Some(vec![3]), ts_min: 0, ts_max: 9, generation: 1, wal_seq: 2 }));
        for i in 40..100u32 {
            let rack = format!("{}", i % 7);
            // Every third series lacks the host tag (a null in the batch's host column).
            v.push(if i % 3 == 0 { series(0, 0, i, &[(1, &format!("{rack}-{i}"))]) } else { series(0, 0, i, &[(0, &format!("h{i}")), (1, &rack)]) });
        }
        // Duplicates appended again after a restart: ids go back, a new run starts.
        v.extend((0..5).map(|i| series(0, 0, i, &[(0, &format!("h{i}"))])));
        v.push(CatalogEntry::DropTable { db: 0, table: 1 });
        v
    }

    #[test]
    fn a_log_with_batches_reopens_to_the_same_catalog() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.log");
        let (mut log, _) = CatalogLog::open(&path).unwrap();
        log.append(&mixed()).unwrap();
        assert_eq!(log.size(), (mixed().len() as u64, std::fs::metadata(&path).unwrap().len()));
        drop(log);
        let kinds = record_kinds(&path);
        // cpu 0..40 and mem 0..40 (interleaved), cpu 40..100 after the AddColumn and tombstone, the
        // duplicates 0..5.
        assert_eq!(kinds.iter().filter(|k| **k == KIND_SERIES_BATCH).count(), 4, "{kinds:?}");
        assert!(kinds.len() < mixed().len() / 10, "{} records", kinds.len());
        let (log, got) = CatalogLog::open(&path).unwrap();
        assert_eq!(log.size().0, mixed().len() as u64);
        let (mut by_record, mut by_entry) = (crate::catalog::Catalog::default(), crate::catalog::Catalog::default());
        got.iter().for_each(|e| by_record.apply(e).unwrap());
        mixed().iter().for_each(|e| by_entry.apply(e).unwrap());
        assert_eq!(by_record.snapshot_entries(&|_, _| true), by_entry.snapshot_entries(&|_, _| true));
        // Per table and for every other kind, the order is the written one.
        let of_table = |v: &[CatalogEntry], t: u32| -> Vec<CatalogEntry> {
            v.iter().filter(|e| !matches!(e, CatalogEntry::AddSeries { table, .. } if *table != t)).cloned().collect()
        };
        for t in [0, 1] {
            assert_eq!(of_table(&got, t), of_table(&mixed(), t));
        }
        // The same through a whole-log encoding.
        std::fs::write(&path, encode_log(&mixed()).unwrap()).unwrap();
        assert_eq!(CatalogLog::open(&path).unwrap().1, got);
    }

    #[test]
    fn unbatchable_series_stay_single_records_in_place() {
        let unsorted = series(0, 0, 1, &[(2, "b"), (1, "a")]);
        let entries = [series(0, 0, 0, &[(1, "a")]), unsorted.clone(), series(0, 0, 2, &[(1, "c")]), series(0, 0, 3, &[(1, "d")])];
        let mut kinds = Vec::new();
        let mut w = RecordWriter::new();
        let mut emit = |p: &[u8], n: u64| {
            kinds.push((p[0], n));
            Ok(())
        };
        entries.iter().try_for_each(|e| w.push(e, &mut emit)).unwrap();
        w.finish(&mut emit).unwrap();
        assert_eq!(kinds, [(6, 1), (6, 1), (KIND_SERIES_BATCH, 2)]);
        // A batch that would encode past the record limit is written series by series.
        let mut w = RecordWriter { record_bytes_max: 10, ..RecordWriter::new() };
        let mut kinds = Vec::new();
        let mut emit = |p: &[u8], n: u64| {
            kinds.push((p[0], n));
            Ok(())
        };
        entries[2..].iter().try_for_each(|e| w.push(e, &mut emit)).unwrap();
        w.finish(&mut emit).unwrap();
        assert_eq!(kinds, [(6, 1), (6, 1)]);
    }

    #[test]
    fn a_torn_tail_inside_a_batch_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.log");
        let (mut log, _) = CatalogLog::open(&path).unwrap();
        log.append(&sample()).unwrap();
        let before = std::fs::metadata(&path).unwrap().len();
        let run: Vec<CatalogEntry> = (1..200).map(|i| series(3, 9, i, &[(0, &format!("host_{i}"))])).collect();
        log.append(&run).unwrap();
        drop(log);
        assert_eq!(record_kinds(&path).last(), Some(&KIND_SERIES_BATCH));
        let full = std::fs::metadata(&path).unwrap().len();
        OpenOptions::new().write(true).open(&path).unwrap().set_len((before + full) / 2).unwrap();
        let (mut log, got) = CatalogLog::open(&path).unwrap();
        assert_eq!(got, sample());
        assert_eq!(log.size(), (sample().len() as u64, before));
        log.append(&run).unwrap();
        drop(log);
        assert_eq!(CatalogLog::open(&path).unwrap().1, [sample(), run].concat());
    }

    /// The payload of a batch with the given header fields and `cols` as (col, rows, value) chunks,
    /// every row holding the value.
    fn raw_batch(first: u32, n: u64, cols: &[(ColId, usize, &str)]) -> Vec<u8> {
        let cols: Vec<(ColId, Vec<String>)> = cols.iter().map(|(c, rows, v)| (*c, vec![v.to_string(); *rows])).collect();
        raw_batch_of(first, n, &cols)
    }

    fn raw_batch_of(first: u32, n: u64, cols: &[(ColId, Vec<String>)]) -> Vec<u8> {
        let mut out = vec![KIND_SERIES_BATCH];
        put_u32(&mut out, 0);
        put_u32(&mut out, 0);
        put_u32(&mut out, first);
        put_uvarint(&mut out, n);
        put_uvarint(&mut out, cols.len() as u64);
        for (col, values) in cols {
            let mut chunk = Vec::new();
            let column = Column { validity: vec![true; values.len()], values: ColumnValues::String(values.clone()) };
            codec::encode_column(&column, &mut chunk);
            put_u16(&mut out, *col);
            put_uvarint(&mut out, chunk.len() as u64);
            out.extend_from_slice(&chunk);
        }
        out
    }

    #[test]
    fn corrupt_batches_are_refused() {
        let ok = raw_batch(0, 3, &[(1, 3, "a"), (2, 3, "b")]);
        assert!(matches!(decode_record(&ok), Ok(Record::Series(b)) if b.len() == 3));
        let max = CATALOG_BATCH_SERIES_MAX;
        let bad: Vec<(&str, Vec<u8>)> = vec![
            ("no series", raw_batch(0, 0, &[])),
            ("too many series", raw_batch(0, max as u64 + 1, &[(1, max + 1, "a")])),
            ("ids past u32", raw_batch(u32::MAX - 1, 2, &[(1, 2, "a")])),
            ("unsorted columns", raw_batch(0, 3, &[(2, 3, "a"), (1, 3, "b")])),
            ("repeated column", raw_batch(0, 3, &[(1, 3, "a"), (1, 3, "b")])),
            // Distinct values (a plain chunk, which stores each row): a constant has no row count.
            ("chunk of the wrong row count", raw_batch_of(0, 3, &[(1, vec!["a".into(), "b".into()])])),
            ("chunk of the wrong row count", raw_batch_of(0, 3, &[(1, (0..4).map(|i| i.to_string()).collect())])),
            ("value too long", raw_batch(0, 2, &[(1, 2, &"x".repeat(NAME_BYTES_MAX + 1))])),
            // 4 KiB stored once, standing for 16,384 rows: 64 MiB of values, above the batch cap.
            ("expands past the byte cap", raw_batch(0, max as u64, &[(1, max, &"x".repeat(4096))])),
            ("trailing bytes", [ok.clone(), vec![0]].concat()),
            ("truncated", ok[..ok.len() - 1].to_vec()),
            ("huge column count", {
                let mut v = raw_batch(0, max as u64, &[]);
                v.pop();
                put_uvarint(&mut v, 4096);
                v
            }),
        ];
        for (why, payload) in &bad {
            decode_record(payload).expect_err(why);
        }
        // Every prefix of a valid batch is an error, not a panic.
        for len in 1..ok.len() {
            assert!(decode_record(&ok[..len]).is_err(), "prefix of {len} bytes");
        }
        // In a log, a checksummed batch that does not decode stops the open with Corrupt.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.log");
        let mut bytes = frame::header(MAGIC, VERSION).to_vec();
        frame::put_record(&mut bytes, &bad[3].1);
        std::fs::write(&path, bytes).unwrap();
        let err = CatalogLog::open(&path).err().expect("refused");
        assert!(matches!(&err, Error::Corrupt { what, .. } if what.contains("not strictly ascending")), "{err}");
    }

    /// A stable mirror of `fuzz/fuzz_targets/catalog_entry.rs`: byte flips, truncations and
    /// insertions in valid records decode or are refused, never panic; what decodes re-encodes to
    /// the same record.
    #[test]
    fn mutated_records_never_panic() {
        let mut seeds: Vec<Vec<u8>> = sample()
            .iter()
            .map(|e| {
                let mut out = Vec::new();
                encode_entry(&mut out, e);
                out
            })
            .collect();
        let tags = |i: usize| owned(&[(0, &format!("host_{i}")), (2, ["a", "b", "c"][i % 3]), (5, "x")]);
        let b = SeriesBatch { db: 1, table: 2, first: 3, tags: (0..300).map(|i| if i % 7 == 0 { SeriesTags::default() } else { tags(i) }).collect() };
        let mut out = Vec::new();
        b.encode(&mut out);
        seeds.push(out);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..20_000 {
            let mut p = seeds[round % seeds.len()].clone();
            for _ in 0..1 + next() % 3 {
                let at = (next() % p.len() as u64) as usize;
                match next() % 3 {
                    0 => p[at] ^= 1 << (next() % 8),
                    1 => p.truncate(at.max(1)),
                    _ => p.insert(at, next() as u8),
                }
            }
            let Ok(record) = decode_record(&p) else { continue };
            let mut again = Vec::new();
            match &record {
                Record::Entry(e) => encode_entry(&mut again, e),
                Record::Series(b) => b.encode(&mut again),
            }
            assert_eq!(decode_record(&again).as_ref(), Ok(&record));
        }
    }
}
