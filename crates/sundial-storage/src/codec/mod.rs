//! Column codecs: one block's timestamps, or one block's field column, to bytes and back.
//!
//! A segment block stores one series' rows: a timestamp chunk and one chunk per field column. The row
//! count `n` lives in the block header and the decoder is given it; chunks check every length they can
//! against it (a pco payload stores its count for that purpose; Constant, ConstDelta and AllValid have
//! nothing to check `n` against, so for those the block header's checksum is what protects it). Every
//! chunk is self-describing through tag bytes, so the writer picks the smallest encoding per block and a
//! later reader still knows what it is looking at.
//!
//! Goals, in order: decoding hostile bytes returns an error (never a panic, never an allocation the input
//! has not earned, see [Bounds](#bounds)); compression near the entropy of monitoring data; fast decode.
//! Measured with `examples/codec_bench.rs` on a TSBS cpu field (8640-row integer random walk, 2.13 bits of
//! delta entropy): 0.28 bytes/value, decoded at ≈ 1.7 GB/s (≈ 215 M values/s) per core; regular
//! timestamps cost 17 bytes per block. Floats (`examples/float_bench.rs`, BENCHMARKS.md): decimals such
//! as 2-decimal walks or 0.1° temperatures take 0.4–1.1 bytes/value through Alp (pco alone: 0.5–1.2),
//! decoded at ≈ 2 GB/s per core; full-precision walks stay on pco (6.5 bytes/value).
//!
//! # Byte layout (on-disk format)
//!
//! Conventions: fixed-width integers are little-endian; `uvarint` is unsigned LEB128 (at most 10 bytes,
//! the tenth carrying only bit 63); `zigzag(v) = (v << 1) ^ (v >> 63)` maps small signed values to small
//! unsigned ones. "To end" means the field runs to the end of the chunk; any byte left over after a
//! chunk is decoded is an error. Bitmaps are LSB-first: row `i` is bit `i % 8` of byte `i / 8`, and the
//! unused high bits of the last byte are zero. Timestamp arithmetic wraps (two's complement).
//!
//! Tag values are the registry [`Codec`] (values) and [`ValidityCodec`] (null masks); a tag is never
//! reused for another meaning.
//!
//! ## Timestamp chunk
//!
//! `tag: u8`, then by tag:
//!
//! | tag  | name         | payload                                                        |
//! |------|--------------|----------------------------------------------------------------|
//! | 0x00 | Empty        | nothing (`n == 0`)                                             |
//! | 0x02 | Plain        | `n × i64`                                                      |
//! | 0x03 | Pco          | pco payload (below) of `n` i64, to end                         |
//! | 0x04 | ConstDelta   | `first: i64`, `delta: i64`; `ts[i] = first + i·delta`, `n ≥ 1`  |
//! | 0x05 | DeltaOfDelta | `first: i64`, then `n − 1` × `uvarint zigzag(Δᵢ − Δᵢ₋₁)`, to end |
//!
//! where `Δᵢ = ts[i] − ts[i−1]` and `Δ₀ = 0`.
//!
//! ## Field column chunk
//!
//! A validity section, then a values section holding only the `m` non-null values, in row order (`m` is
//! the number of valid rows; null rows decode as 0, 0.0, false or "").
//!
//! Validity section, `tag: u8` then:
//!
//! | tag  | name     | payload                                                    |
//! |------|----------|------------------------------------------------------------|
//! | 0x00 | AllValid | nothing; `m = n`                                           |
//! | 0x01 | Bitmap   | `ceil(n/8)` bytes, bit set = row valid                     |
//! | 0x02 | Runs     | `uvarint k` (1 ≤ k ≤ n+1), then `k` × `uvarint` run length |
//!
//! Runs alternate valid, null, valid, …, starting with valid; only the first may be empty; they sum to
//! `n`.
//!
//! Values section, `tag: u8` then, by column type:
//!
//! | tag  | name      | types                    | payload                                                 |
//! |------|-----------|--------------------------|---------------------------------------------------------|
//! | 0x00 | Empty     | all                      | nothing (`m == 0`)                                      |
//! | 0x01 | Constant  | integer, unsigned, float | one `i64` / `u64` / `f64` bit pattern, for all `m` rows |
//! | 0x01 | Constant  | boolean                  | one byte, 0 or 1                                        |
//! | 0x01 | Constant  | string                   | `uvarint len`, `len` UTF-8 bytes                        |
//! | 0x02 | Plain     | integer, unsigned, float | `m × 8` bytes                                           |
//! | 0x03 | Pco       | integer, unsigned, float | pco payload of `m` i64 / u64 / f64, to end              |
//! | 0x06 | BitPacked | boolean                  | bitmap of `m` bits                                      |
//! | 0x07 | StrPlain  | string                   | byte block holding `m` × (`uvarint len`, UTF-8 bytes)   |
//! | 0x08 | StrDict   | string                   | `uvarint d`, `uvarint idx_len`, index section, byte block |
//! | 0x09 | Alp       | float (segment version ≥ 3) | `e: u8`, exceptions, `i64` values section (see `alp.rs`) |
//! | 0x0A | Gorilla   | float (segment version ≥ 3) | XOR bit stream of `m` values, to end (see `gorilla.rs`) |
//! | 0x0B | PcoPaged  | integer, unsigned, float (segment version ≥ 5) | paged pco payload (below) of `m` values, to end |
//!
//! StrDict: `1 ≤ d ≤ m` distinct strings; the index section is `idx_len` bytes holding a values section
//! of `m` u32 (Constant: one `u32`; Plain: `m × 4` bytes; Pco), each `< d`; the byte block, to end,
//! holds the `d` strings as `uvarint len`, UTF-8 bytes.
//!
//! Byte block: `compression: u8`, then either `0x00` and the bytes, to end; or `0x01`, `uvarint raw_len`
//! and one zstd frame, to end, that decompresses to exactly `raw_len` bytes.
//!
//! Pco payload: `uvarint count` (must equal `n` or `m`), then pco 1.x's "wrapped" format: its 2-byte
//! header (format version), one chunk's metadata and one page of `count` numbers, nothing after (see
//! the pco format spec). The number type is not stored: the column's [`FieldType`] decides it.
//!
//! Paged pco payload: `uvarint count` (must equal `m`), `uvarint page_rows` (256 ≤ page_rows ≤
//! [`CODEC_ROWS_MAX`]; the writer uses 2048), pco's 2-byte header and one chunk's metadata, then
//! `ceil(count / page_rows)` pages, each `uvarint len` and `len` bytes of one pco page of `page_rows`
//! numbers (the last page: the rest), nothing after. A page decodes on its own given the chunk's
//! metadata, so a reader wanting values `a..b` (the non-null values of the rows it reads) decodes pages
//! `a / page_rows` to `(b − 1) / page_rows`.
//! The writer pages a block's numeric column (not a pack's, nor ALP's integers or a dictionary's
//! indexes) when pco is chosen for more than `page_rows` values.
//!
//! Float columns pick per block the smallest of Pco/Plain, Alp and Gorilla (`float.rs`). Alp and
//! Gorilla exist from segment version 3 on, PcoPaged from 5 on: [`decode_column_in`] refuses them in
//! older files.
//!
//! # Bounds
//!
//! Decoders refuse `n >` [`CODEC_ROWS_MAX`] before allocating, size every allocation from `n` (≤ 8 MiB
//! per numeric column) or from the input length, and check counts before loops. pco bounds its own
//! metadata (bins, ANS tables), except two fields it allocates from before reading the data they
//! describe: a Dict-mode dictionary length (25 bits) and a lookback window (up to 2²⁴ entries). Both are
//! checked here first against `m` (see `pcodec.rs`). zstd output is capped by `raw_len`, which must be
//! possible for a zstd frame of that size; decoded strings are capped by `STRING_VALUE_BYTES_MAX` each.

mod alp;
mod boolean;
mod cursor;
mod float;
mod gorilla;
mod numeric;
pub mod page_cache;
mod pcodec;
mod string;
mod ts;
mod validity;

#[cfg(test)]
mod tests;

pub use crate::limits::CODEC_ROWS_MAX;
pub use float::FloatEncoding;
use crate::types::{Column, ColumnValues, FieldType};
use cursor::Cursor;
use pcodec::Pages;

/// Why a chunk could not be decoded. Messages name the part of the chunk that was wrong; the segment
/// reader adds the file and offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    #[error("truncated {what}: {needed} bytes needed, {available} left")]
    Truncated { what: &'static str, needed: usize, available: usize },

    #[error("unknown {what} codec tag {tag:#04x} (written by a newer Sundial, or corrupt)")]
    UnknownCodec { what: &'static str, tag: u8 },

    #[error("{what} codec {codec:?} needs segment version {needed} or newer, this file is version {version}")]
    CodecTooNew { what: &'static str, codec: Codec, needed: u32, version: u32 },

    #[error("codec {codec:?} is not valid for {what}")]
    WrongCodec { what: &'static str, codec: Codec },

    #[error("corrupt {what}")]
    Corrupt { what: &'static str },

    #[error("{what}: expected {expected}, found {actual}")]
    LengthMismatch { what: &'static str, expected: usize, actual: usize },

    #[error("block claims {n} rows, more than the codec limit of {max}")]
    TooManyRows { n: usize, max: usize },

    #[error("corrupt {what}: pco: {message}")]
    Pco { what: &'static str, message: String },

    #[error("corrupt {what}: zstd: {message}")]
    Zstd { what: &'static str, message: String },
}

pub type Result<T, E = CodecError> = std::result::Result<T, E>;

/// Value codec tags: the registry of every encoding a values section or timestamp chunk may use.
/// New codecs get new numbers; a number is never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum Codec {
    /// No values.
    Empty = 0x00,
    /// One value stands for every row.
    Constant = 0x01,
    /// Fixed-width little-endian values.
    Plain = 0x02,
    /// pco (integers, floats, timestamps, dictionary indexes).
    Pco = 0x03,
    /// Timestamps: first value and a fixed step.
    ConstDelta = 0x04,
    /// Timestamps: first value and zigzag varint deltas of deltas.
    DeltaOfDelta = 0x05,
    /// Booleans: one bit each.
    BitPacked = 0x06,
    /// Strings: length-prefixed, in a byte block.
    StrPlain = 0x07,
    /// Strings: distinct values plus a u32 index per row.
    StrDict = 0x08,
    /// Floats: decimals as integers times 10⁻ᵉ, plus exceptions (segment version ≥ 3).
    Alp = 0x09,
    /// Floats: Gorilla XOR bit stream (segment version ≥ 3).
    Gorilla = 0x0A,
    /// pco in pages that decode on their own (segment version ≥ 5): a block's numeric column.
    PcoPaged = 0x0B,
}

impl Codec {
    pub fn from_u8(tag: u8) -> Option<Codec> {
        Some(match tag {
            0x00 => Codec::Empty,
            0x01 => Codec::Constant,
            0x02 => Codec::Plain,
            0x03 => Codec::Pco,
            0x04 => Codec::ConstDelta,
            0x05 => Codec::DeltaOfDelta,
            0x06 => Codec::BitPacked,
            0x07 => Codec::StrPlain,
            0x08 => Codec::StrDict,
            0x09 => Codec::Alp,
            0x0A => Codec::Gorilla,
            0x0B => Codec::PcoPaged,
            _ => return None,
        })
    }

    /// The first segment format version whose files may contain this tag.
    pub fn since_segment_version(self) -> u32 {
        match self {
            Codec::Alp | Codec::Gorilla => FLOAT_CODECS_SEGMENT_VERSION,
            Codec::PcoPaged => PAGED_SEGMENT_VERSION,
            _ => 1,
        }
    }

    /// Reads a tag byte, rejecting unknown tags.
    fn read(cur: &mut Cursor<'_>, what: &'static str) -> Result<Codec> {
        let tag = cur.u8(what)?;
        Codec::from_u8(tag).ok_or(CodecError::UnknownCodec { what, tag })
    }
}

/// Null-mask tags of a field column chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum ValidityCodec {
    /// No nulls.
    AllValid = 0x00,
    /// One bit per row.
    Bitmap = 0x01,
    /// Alternating run lengths of valid and null rows.
    Runs = 0x02,
}

impl ValidityCodec {
    pub fn from_u8(tag: u8) -> Option<ValidityCodec> {
        Some(match tag {
            0x00 => ValidityCodec::AllValid,
            0x01 => ValidityCodec::Bitmap,
            0x02 => ValidityCodec::Runs,
            _ => return None,
        })
    }
}

/// The segment format version that introduced Alp and Gorilla.
pub const FLOAT_CODECS_SEGMENT_VERSION: u32 = 3;

/// The segment format version that introduced PcoPaged.
pub const PAGED_SEGMENT_VERSION: u32 = 5;

fn check_rows(n: usize) -> Result<()> {
    if n > CODEC_ROWS_MAX {
        return Err(CodecError::TooManyRows { n, max: CODEC_ROWS_MAX });
    }
    Ok(())
}

/// Appends the encoding of `ts` to `out`. Any `i64` sequence round-trips; the encodings are chosen for
/// the expected input, strictly increasing (deduplicated) timestamps, often at a fixed interval.
pub fn encode_timestamps(ts: &[i64], out: &mut Vec<u8>) {
    ts::encode(ts, out);
}

/// Decodes a timestamp chunk of `n` rows.
pub fn decode_timestamps(buf: &[u8], n: usize) -> Result<Vec<i64>> {
    check_rows(n)?;
    let mut cur = Cursor::new(buf);
    let ts = ts::decode(&mut cur, n)?;
    cur.finish("timestamp chunk")?;
    Ok(ts)
}

/// The first timestamp and the step of a ConstDelta timestamp chunk of `n ≥ 1` rows, `None` for any
/// other chunk (or a malformed one, which [`decode_timestamps`] then reports): a reader wanting a few
/// rows of a regular block computes their positions and timestamps instead of decoding all `n`.
pub fn timestamps_const_delta(buf: &[u8], n: usize) -> Option<(i64, i64)> {
    let (&tag, rest) = buf.split_first()?;
    if n == 0 || tag != Codec::ConstDelta as u8 || rest.len() != 16 {
        return None;
    }
    Some((i64::from_le_bytes(rest[..8].try_into().ok()?), i64::from_le_bytes(rest[8..].try_into().ok()?)))
}

/// Appends the encoding of `col` (validity, then the non-null values) to `out` as the segment writer
/// does for a block: float columns use the writer's per-block choice ([`FloatEncoding::Auto`]), and a
/// numeric column stored by pco with more than one page of values is paged (PcoPaged), so that a read
/// of a few rows ([`decode_column_rows`]) decodes only their pages.
///
/// # Panics
/// If `col.values.len() != col.validity.len()` (a malformed column is a bug of the caller).
pub fn encode_column(col: &Column, out: &mut Vec<u8>) {
    encode_column_with(col, FloatEncoding::Auto, out);
}


/// Whether pco searches for a delta encoding of a numeric column (its choices are stored in the chunk,
/// so this changes what the writer spends, never what a reader must know).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delta {
    /// pco tries consecutive orders and lookback on a sample and keeps the cheapest (the writer's
    /// default: on one series' rows it picks order 1).
    Auto,
    /// No delta, no search: for values whose neighbours are other series' (a segment pack of one-row
    /// series), where a delta has nothing to exploit. The search compresses a sample once per candidate;
    /// it was 11 % of the server's CPU while loading 10 M one-row series. pco then works at a lower
    /// level, as such values gain little from its finer bins (`pcodec::PCO_LEVEL_UNRELATED`).
    Off,
    /// Consecutive differences of this order (1 to 7), no search: the order the search chose for the
    /// same column of a neighbouring block, which a writer carries over ([`encode_column_hinted`]).
    Order(u8),
}

/// How hard pco works on a column's numbers. pco's chunk records what it chose, so a reader never needs
/// to know which was used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effort {
    /// The smallest bytes: what stays on disk (`pcodec::PCO_LEVEL`, or `PCO_LEVEL_UNRELATED` for
    /// [`Delta::Off`]).
    Full,
    /// Bytes made quickly, larger, for rows a compaction will decode and write again at [`Effort::Full`]:
    /// a flush's rows of series the partition's files already hold (`pcodec::PCO_LEVEL_QUICK`). As RocksDB
    /// compresses its first levels lightly and its last one hard. Also `catalog.log`'s series batches
    /// (never written again, but a small part of the disk and, at millions of new series, a large part
    /// of the flush thread's CPU).
    Quick,
}

/// [`encode_column`] with pco's delta search as `delta` says and its values in one page (no
/// PcoPaged): for a pack, which is decoded whole, and for segment versions before 5.
pub fn encode_column_delta(col: &Column, delta: Delta, out: &mut Vec<u8>) {
    encode_column_in(col, FloatEncoding::Auto, delta, Pages::One, Effort::Full, out);
}

/// [`encode_column`] with the float codec forced (benchmarks and tests); other types ignore `float`.
///
/// # Panics
/// As [`encode_column`].
pub fn encode_column_with(col: &Column, float: FloatEncoding, out: &mut Vec<u8>) {
    encode_column_in(col, float, Delta::Auto, Pages::Paged, Effort::Full, out);
}

/// [`encode_column`] (`paged`) or [`encode_column_delta`] (not), with pco's delta as `delta` says;
/// returns what to pass for the next block of the same column: the consecutive order pco's search chose
/// ([`Delta::Order`], 0 meaning none, as [`Delta::Off`]), or [`Delta::Auto`] when it chose something
/// else or pco was not used. A writer that carries the choice from block to block spares most blocks
/// the search, which compresses a sample once per candidate: for the ~600-row blocks a flush writes at
/// 4,000 series, three times the cost of the compression itself. The bytes stay a valid chunk either
/// way; only how near the best delta they are depends on the carried choice. `effort`: see [`Effort`].
pub fn encode_column_hinted(col: &Column, delta: Delta, paged: bool, effort: Effort, out: &mut Vec<u8>) -> Delta {
    encode_column_in(col, FloatEncoding::Auto, delta, if paged { Pages::Paged } else { Pages::One }, effort, out)
}

/// `pages`: one pco page (packs, decoded whole, and segment versions before 5) or pages of
/// `pcodec::PAGE_ROWS` (PcoPaged) when there is more than one. Returns the delta for the next block
/// ([`encode_column_hinted`]).
fn encode_column_in(col: &Column, float: FloatEncoding, delta: Delta, pages: Pages, effort: Effort, out: &mut Vec<u8>) -> Delta {
    let valid = &col.validity;
    assert_eq!(col.values.len(), valid.len(), "column values and validity differ in length");
    if let ColumnValues::String(v) = &col.values {
        let strs: Vec<&str> = v.iter().zip(valid).filter(|(_, ok)| **ok).map(|(s, _)| s.as_str()).collect();
        encode_strings(valid, &strs, Delta::Auto, Effort::Full, out);
        return Delta::Auto;
    }
    validity::encode(valid, out);
    match &col.values {
        ColumnValues::Integer(v) => numeric::encode_with(&gather(v, valid), delta, pages, effort, out),
        ColumnValues::UInteger(v) => numeric::encode_with(&gather(v, valid), delta, pages, effort, out),
        ColumnValues::Float(v) => float::encode(&gather(v, valid), float, delta, pages, effort, out),
        ColumnValues::Boolean(v) => {
            boolean::encode(&gather(v, valid), out);
            Delta::Auto
        }
        ColumnValues::String(_) => unreachable!("encoded above"),
    }
}

/// Appends the String column chunk of `valid.len()` rows whose non-null values are `present`, in row
/// order: the bytes [`encode_column`] writes for that column, from borrowed strings (`catalog.log`'s
/// series batches encode tag columns from their buffers without an owned `String` per cell).
/// `index_delta` is pco's delta search for a dictionary's indexes: [`Delta::Auto`] for a series' values
/// over time, [`Delta::Off`] where neighbouring rows are unrelated (different series' tags).
///
/// # Panics
/// If `present` does not hold exactly one value per `true` in `valid`.
pub fn encode_strings(valid: &[bool], present: &[&str], index_delta: Delta, effort: Effort, out: &mut Vec<u8>) {
    assert_eq!(valid.iter().filter(|ok| **ok).count(), present.len(), "string values and validity disagree");
    validity::encode(valid, out);
    string::encode(present, index_delta, effort, out);
}

/// Decodes a field column chunk of type `ty` and `n` rows, accepting every codec this build knows.
pub fn decode_column(buf: &[u8], ty: FieldType, n: usize) -> Result<Column> {
    decode_column_in(buf, ty, n, u32::MAX)
}

/// Decodes a field column chunk of a segment of format `segment_version`: a codec newer than that
/// version is an error ([`CodecError::CodecTooNew`]), since that file's writer could not have used it.
pub fn decode_column_in(buf: &[u8], ty: FieldType, n: usize, segment_version: u32) -> Result<Column> {
    decode_column_capped(buf, ty, n, segment_version, usize::MAX)
}

/// [`decode_column_in`] whose String values may hold at most `string_bytes_max` bytes in all.
fn decode_column_capped(buf: &[u8], ty: FieldType, n: usize, segment_version: u32, string_bytes_max: usize) -> Result<Column> {
    check_rows(n)?;
    let mut cur = Cursor::new(buf);
    let (validity, m) = validity::decode(&mut cur, n)?;
    check_values_codec(&cur, segment_version)?;
    let values = decode_values(&mut cur, ty, m, &validity, string_bytes_max)?;
    cur.finish("column chunk")?;
    Ok(Column { values, validity })
}

/// The values section at `cur` of a column of type `ty` whose `validity` has `m` valid rows, spread
/// over the rows (nulls as placeholders).
fn decode_values(cur: &mut Cursor<'_>, ty: FieldType, m: usize, validity: &[bool], string_bytes_max: usize) -> Result<ColumnValues> {
    Ok(match ty {
        FieldType::Integer => ColumnValues::Integer(spread(numeric::decode(cur, m)?, validity)),
        FieldType::UInteger => ColumnValues::UInteger(spread(numeric::decode(cur, m)?, validity)),
        FieldType::Float => ColumnValues::Float(spread(numeric::decode(cur, m)?, validity)),
        FieldType::Boolean => ColumnValues::Boolean(spread(boolean::decode(cur, m)?, validity)),
        FieldType::String => ColumnValues::String(spread_strings(string::decode_capped(cur, m, string_bytes_max)?, validity)),
    })
}

/// Refuses a values codec newer than the segment's format (its writer could not have used it).
fn check_values_codec(cur: &Cursor<'_>, segment_version: u32) -> Result<()> {
    if let Some(codec) = cur.peek().and_then(Codec::from_u8) {
        let needed = codec.since_segment_version();
        if needed > segment_version {
            return Err(CodecError::CodecTooNew { what: "column values", codec, needed, version: segment_version });
        }
    }
    Ok(())
}

/// Rows `rows` (within `0..n`) of a field column chunk of type `ty` and `n` rows from a segment of
/// format `segment_version`, and the chunk's number of non-null rows (for the reader's check against
/// the block index). A numeric column stored as PcoPaged decodes only the pages holding the values of
/// `rows` (its non-null ones); any other chunk is decoded whole and cut. Either way the whole chunk is
/// checked for the structure [`decode_column_in`] checks, but the skipped pages' numbers are not decoded.
pub fn decode_column_rows(buf: &[u8], ty: FieldType, n: usize, segment_version: u32, rows: std::ops::Range<usize>) -> Result<(Column, usize)> {
    decode_column_rows_cached(buf, ty, n, segment_version, rows, None)
}

/// [`decode_column_rows`] of the chunk `cached` names, if given: a paged column's pages are then looked
/// for in [`page_cache`], and those decoded are kept there while the read's budget (bytes, the second
/// of the pair) lasts.
pub fn decode_column_rows_cached(
    buf: &[u8],
    ty: FieldType,
    n: usize,
    segment_version: u32,
    rows: std::ops::Range<usize>,
    cached: Option<(page_cache::ChunkKey, &mut usize)>,
) -> Result<(Column, usize)> {
    check_rows(n)?;
    if rows.start > rows.end || rows.end > n {
        return Err(CodecError::LengthMismatch { what: "rows asked of a column chunk", expected: n, actual: rows.end });
    }
    let mut cur = Cursor::new(buf);
    let (validity, m) = validity::decode(&mut cur, n)?;
    check_values_codec(&cur, segment_version)?;
    let numeric = matches!(ty, FieldType::Integer | FieldType::UInteger | FieldType::Float);
    if !numeric || cur.peek() != Some(Codec::PcoPaged as u8) {
        let values = decode_values(&mut cur, ty, m, &validity, usize::MAX)?;
        cur.finish("column chunk")?;
        let c = Column { values, validity };
        return Ok((if rows == (0..n) { c } else { c.slice(rows) }, m));
    }
    // The values section holds only the valid rows' values: those of `rows` are the ones after the
    // valid rows before it.
    let window = &validity[rows.clone()];
    let first = validity[..rows.start].iter().filter(|v| **v).count();
    let values = first..first + window.iter().filter(|v| **v).count();
    let values = match ty {
        FieldType::Integer => ColumnValues::Integer(spread(numeric::decode_rows(&mut cur, m, values, cached)?, window)),
        FieldType::UInteger => ColumnValues::UInteger(spread(numeric::decode_rows(&mut cur, m, values, cached)?, window)),
        _ => ColumnValues::Float(spread(numeric::decode_rows(&mut cur, m, values, cached)?, window)),
    };
    cur.finish("column chunk")?;
    Ok((Column { values, validity: window.to_vec() }, m))
}

/// Decodes a field column chunk of type String and `n` rows whose non-null values hold at most
/// `bytes_max` bytes in all, refused before they are allocated: a constant or dictionary chunk of a few
/// bytes can otherwise stand for `n` copies of a 1 MiB string. Used where a record bounds the decoded
/// bytes rather than the rows (the catalog's series batches, `catalog_log.rs`).
pub fn decode_string_column(buf: &[u8], n: usize, bytes_max: usize) -> Result<Column> {
    decode_column_capped(buf, FieldType::String, n, u32::MAX, bytes_max)
}

/// The validity and value codecs of a column chunk of `n` rows, for diagnostics and benchmarks.
pub fn column_codecs(buf: &[u8], n: usize) -> Option<(ValidityCodec, Codec)> {
    check_rows(n).ok()?;
    let mut cur = Cursor::new(buf);
    let validity = ValidityCodec::from_u8(*buf.first()?)?;
    validity::decode(&mut cur, n).ok()?;
    Some((validity, Codec::from_u8(cur.u8("values tag").ok()?)?))
}

/// The codec of a timestamp chunk, for diagnostics and benchmarks.
pub fn timestamp_codec(buf: &[u8]) -> Option<Codec> {
    Codec::from_u8(*buf.first()?)
}

/// The non-null values of `v`, borrowed when there are no nulls (the common case).
fn gather<'a, T: Copy>(v: &'a [T], validity: &[bool]) -> std::borrow::Cow<'a, [T]> {
    if validity.iter().all(|ok| *ok) {
        return std::borrow::Cow::Borrowed(v);
    }
    v.iter().zip(validity).filter(|(_, ok)| **ok).map(|(x, _)| *x).collect::<Vec<T>>().into()
}

/// Places the `m` dense values at the valid rows, zero elsewhere. `dense.len()` equals the number of
/// valid rows (the decoders guarantee it), so when nothing is null the vector is returned as is.
fn spread<T: Copy + Default>(dense: Vec<T>, validity: &[bool]) -> Vec<T> {
    if dense.len() == validity.len() {
        return dense;
    }
    let mut out = Vec::with_capacity(validity.len());
    let mut j = 0;
    for &ok in validity {
        // `get` rather than indexing: a null row past the last value must not panic.
        let x = dense.get(j).copied().unwrap_or_default();
        out.push(if ok { x } else { T::default() });
        j += usize::from(ok);
    }
    out
}

fn spread_strings(dense: Vec<String>, validity: &[bool]) -> Vec<String> {
    if dense.len() == validity.len() {
        return dense;
    }
    let mut it = dense.into_iter();
    validity.iter().map(|ok| if *ok { it.next().unwrap_or_default() } else { String::new() }).collect()
}
