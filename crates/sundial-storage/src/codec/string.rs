//! String values sections.
//!
//! Monitoring strings are mostly low-cardinality (states, versions, hostnames), so a dictionary of the
//! distinct values plus one small index per row usually wins, and the indexes go through pco, which
//! codes them near their entropy. High-cardinality strings (log lines, ids) are stored length-prefixed.
//! Either way the string bytes then go through zstd when that shrinks them, since text repeats
//! substrings a dictionary cannot see.

use std::borrow::Cow;

use super::cursor::{Cursor, uvarint_len};
use super::{Codec, CodecError, Delta, Effort, Result, numeric};
use crate::encoding::put_uvarint;
use crate::limits::STRING_VALUE_BYTES_MAX;

const WHAT: &str = "string values";

/// zstd level, stated explicitly: 3 (zstd's default) compresses text well at hundreds of MB/s; higher
/// levels buy a few percent at several times the flush cost.
const ZSTD_LEVEL: i32 = 3;

/// zstd level at [`Effort::Quick`]: `catalog.log`'s series batches, which put every new series' tags
/// through this codec on the flush thread (ten columns of 10 M values at TSBS's 10 M hosts).
const ZSTD_LEVEL_QUICK: i32 = 1;

/// Below this many bytes zstd's frame header (about 10 bytes) leaves nothing to gain.
const ZSTD_MIN_BYTES: usize = 64;

/// A zstd frame cannot expand by more than this: every block (at most 128 KiB of output) costs at
/// least a 3-byte header. A larger claimed `raw_len` is corrupt, so the allocation stays proportional
/// to the input.
const ZSTD_RATIO_MAX: usize = 1 << 16;

/// [`dictionary`] gives up early if more than [`DICT_PREFIX_DISTINCT_MAX`] of this many first values are
/// distinct.
const DICT_PREFIX_ROWS: usize = 1024;

/// 7/8 of [`DICT_PREFIX_ROWS`].
const DICT_PREFIX_DISTINCT_MAX: usize = DICT_PREFIX_ROWS * 7 / 8;

const BLOB_RAW: u8 = 0x00;
const BLOB_ZSTD: u8 = 0x01;

/// `index_delta`: pco's delta search for a dictionary's indexes (see [`super::encode_strings`]);
/// `effort`: pco's level for them and zstd's for the bytes.
pub(super) fn encode(vals: &[&str], index_delta: Delta, effort: Effort, out: &mut Vec<u8>) {
    match vals {
        [] => out.push(Codec::Empty as u8),
        [first, rest @ ..] if rest.iter().all(|v| v == first) => {
            out.push(Codec::Constant as u8);
            put_uvarint(out, first.len() as u64);
            out.extend_from_slice(first.as_bytes());
        }
        _ => match dictionary(vals) {
            Some((dict, idx)) => encode_dict(&dict, &idx, index_delta, effort, out),
            None => {
                out.push(Codec::StrPlain as u8);
                put_blob(&length_prefixed(vals), effort, out);
            }
        },
    }
}

fn encode_dict(dict: &[&str], idx: &[u32], delta: Delta, effort: Effort, out: &mut Vec<u8>) {
    out.push(Codec::StrDict as u8);
    put_uvarint(out, dict.len() as u64);
    let mut index = Vec::new();
    numeric::encode_with(idx, delta, super::pcodec::Pages::One, effort, &mut index);
    put_uvarint(out, index.len() as u64);
    out.extend_from_slice(&index);
    put_blob(&length_prefixed(dict), effort, out);
}

/// The distinct values in first-seen order and each row's index, if a dictionary pays: values must
/// repeat (at most half the rows distinct, checked as we go so high-cardinality columns stop early)
/// and the dictionary plus bit-width indexes must be smaller than the strings themselves.
fn dictionary<'a>(vals: &[&'a str]) -> Option<(Vec<&'a str>, Vec<u32>)> {
    let max_distinct = vals.len() / 2;
    // Values nearly all distinct over the first rows mark a high-cardinality column (a host name per
    // series in `catalog.log`'s batches): give up there rather than hash half of the rows first.
    // foldhash, not SipHash: the catalog log's series batches put every new series' tags through here
    // (ten columns of 10 M values at TSBS's 10 M hosts), and SipHash was a visible part of the flush.
    // Sized for a few distinct values; a high-cardinality column grows it until it gives up at half the
    // rows.
    let mut ids: crate::FastMap<&str, u32> = crate::FastMap::with_capacity_and_hasher(vals.len().min(1024), Default::default());
    let mut dict = Vec::new();
    let mut idx = Vec::with_capacity(vals.len());
    for &s in vals {
        let next = dict.len() as u32;
        let id = *ids.entry(s).or_insert_with(|| {
            dict.push(s);
            next
        });
        if dict.len() > max_distinct {
            return None;
        }
        idx.push(id);
        if idx.len() == DICT_PREFIX_ROWS && dict.len() > DICT_PREFIX_DISTINCT_MAX {
            return None;
        }
    }
    let bits = (usize::BITS - dict.len().leading_zeros()) as usize;
    let dict_bytes: usize = dict.iter().map(|s| s.len() + 1).sum::<usize>() + (vals.len() * bits).div_ceil(8);
    let plain_bytes: usize = vals.iter().map(|s| s.len() + 1).sum();
    (dict_bytes < plain_bytes).then_some((dict, idx))
}

fn length_prefixed(vals: &[&str]) -> Vec<u8> {
    let mut raw = Vec::with_capacity(vals.iter().map(|s| s.len() + 1).sum());
    for s in vals {
        put_uvarint(&mut raw, s.len() as u64);
        raw.extend_from_slice(s.as_bytes());
    }
    raw
}

/// A byte block: raw, or zstd if the frame plus its length prefix is smaller.
fn put_blob(raw: &[u8], effort: Effort, out: &mut Vec<u8>) {
    let level = match effort {
        Effort::Full => ZSTD_LEVEL,
        Effort::Quick => ZSTD_LEVEL_QUICK,
    };
    if raw.len() >= ZSTD_MIN_BYTES
        && let Ok(z) = zstd::bulk::compress(raw, level)
        && z.len() + uvarint_len(raw.len() as u64) < raw.len()
    {
        out.push(BLOB_ZSTD);
        put_uvarint(out, raw.len() as u64);
        out.extend_from_slice(&z);
        return;
    }
    out.push(BLOB_RAW);
    out.extend_from_slice(raw);
}

/// Reads a byte block that runs to the end of the chunk; `max_raw` bounds its decompressed size.
fn get_blob<'a>(cur: &mut Cursor<'a>, max_raw: usize) -> Result<Cow<'a, [u8]>> {
    match cur.u8("string bytes compression")? {
        BLOB_RAW => Ok(Cow::Borrowed(cur.rest())),
        BLOB_ZSTD => {
            let raw_len = cur.len(max_raw, "string bytes length")?;
            let z = cur.rest();
            if raw_len > z.len().saturating_mul(ZSTD_RATIO_MAX) {
                return Err(CodecError::Corrupt { what: "string bytes length (beyond what zstd can expand to)" });
            }
            let raw = zstd::bulk::decompress(z, raw_len)
                .map_err(|e| CodecError::Zstd { what: "string bytes", message: e.to_string() })?;
            if raw.len() != raw_len {
                return Err(CodecError::LengthMismatch { what: "string bytes", expected: raw_len, actual: raw.len() });
            }
            Ok(Cow::Owned(raw))
        }
        tag => Err(CodecError::UnknownCodec { what: "string bytes compression", tag }),
    }
}

/// Bytes a block of `count` length-prefixed strings can legitimately hold, when the strings may hold
/// `bytes_max` bytes in all (each length prefix takes at most 10 bytes).
fn blob_max(count: usize, bytes_max: usize) -> usize {
    count.saturating_mul(STRING_VALUE_BYTES_MAX).min(bytes_max).saturating_add(count.saturating_mul(10))
}

/// Decodes `m` strings, refusing, before allocating them, values that hold more than `bytes_max` bytes
/// in all (`usize::MAX`: no cap beyond each value's own).
/// Without a cap a constant or a dictionary can expand a small chunk into `m` copies of a
/// `STRING_VALUE_BYTES_MAX` string; a segment block bounds `m` by its row limit, a catalog series batch
/// (`catalog_log.rs`) bounds the total instead.
pub(super) fn decode_capped(cur: &mut Cursor<'_>, m: usize, bytes_max: usize) -> Result<Vec<String>> {
    match Codec::read(cur, WHAT)? {
        Codec::Empty if m == 0 => Ok(Vec::new()),
        Codec::Empty => Err(CodecError::LengthMismatch { what: WHAT, expected: m, actual: 0 }),
        Codec::Constant => {
            let len = cur.len(STRING_VALUE_BYTES_MAX, "string constant length")?;
            let s = utf8(cur.take(len, "string constant")?)?;
            check_total(len.saturating_mul(m), bytes_max)?;
            Ok(vec![s.to_owned(); m])
        }
        Codec::StrPlain => {
            let blob = get_blob(cur, blob_max(m, bytes_max))?;
            let vals = split(&blob, m)?;
            check_total(vals.iter().map(|s| s.len()).sum(), bytes_max)?;
            Ok(vals.into_iter().map(str::to_owned).collect())
        }
        Codec::StrDict => decode_dict(cur, m, bytes_max),
        codec => Err(CodecError::WrongCodec { what: WHAT, codec }),
    }
}

fn check_total(bytes: usize, bytes_max: usize) -> Result<()> {
    if bytes > bytes_max {
        return Err(CodecError::LengthMismatch { what: "string values bytes (above the cap)", expected: bytes_max, actual: bytes });
    }
    Ok(())
}

fn decode_dict(cur: &mut Cursor<'_>, m: usize, bytes_max: usize) -> Result<Vec<String>> {
    let d = cur.len(m, "string dictionary size")?;
    if d == 0 {
        return Err(CodecError::Corrupt { what: "string dictionary size (zero)" });
    }
    let idx_len = cur.len(cur.remaining(), "string dictionary index length")?;
    let mut idx_cur = Cursor::new(cur.take(idx_len, "string dictionary indexes")?);
    let idx: Vec<u32> = numeric::decode(&mut idx_cur, m)?;
    idx_cur.finish("string dictionary indexes")?;
    let blob = get_blob(cur, blob_max(d, bytes_max))?;
    let dict = split(&blob, d)?;
    let mut total = 0usize;
    for i in &idx {
        let s = dict.get(*i as usize).ok_or(CodecError::Corrupt { what: "string dictionary index (out of range)" })?;
        total = total.saturating_add(s.len());
    }
    check_total(total, bytes_max)?;
    // Every index was checked above.
    Ok(idx.into_iter().map(|i| dict[i as usize].to_owned()).collect())
}

/// Splits a block of exactly `count` length-prefixed UTF-8 strings, each at most
/// `STRING_VALUE_BYTES_MAX` (the ingest limit, so that a dictionary or constant cannot expand into
/// more than `m` maximal values).
fn split(blob: &[u8], count: usize) -> Result<Vec<&str>> {
    // Each string takes at least its one-byte length: this bounds the allocation by the input.
    if blob.len() < count {
        return Err(CodecError::Truncated { what: "string lengths", needed: count, available: blob.len() });
    }
    let mut cur = Cursor::new(blob);
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let len = cur.len(STRING_VALUE_BYTES_MAX, "string length")?;
        out.push(utf8(cur.take(len, "string bytes")?)?);
    }
    cur.finish("string bytes")?;
    Ok(out)
}

fn utf8(b: &[u8]) -> Result<&str> {
    std::str::from_utf8(b).map_err(|_| CodecError::Corrupt { what: "string (invalid UTF-8)" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(vals: &[&str]) -> Vec<u8> {
        round_trip_with(vals, Delta::Auto, Effort::Full)
    }

    fn round_trip_with(vals: &[&str], delta: Delta, effort: Effort) -> Vec<u8> {
        let mut out = Vec::new();
        encode(vals, delta, effort, &mut out);
        let mut cur = Cursor::new(&out);
        assert_eq!(decode_capped(&mut cur, vals.len(), usize::MAX).unwrap(), vals);
        assert_eq!(cur.remaining(), 0);
        out
    }

    #[test]
    fn a_column_nearly_all_distinct_over_its_first_rows_is_stored_plain() {
        let names: Vec<String> = (0..DICT_PREFIX_ROWS).map(|i| format!("host_{i}")).collect();
        // All distinct over the prefix, then one value repeated: a dictionary of 1,025 entries for
        // 5,024 rows would pay, but the prefix already gave up.
        let mut vals: Vec<&str> = names.iter().map(String::as_str).collect();
        vals.extend(std::iter::repeat_n("x", 4000));
        assert_eq!(round_trip(&vals)[0], Codec::StrPlain as u8);
        // 7/8 of the prefix distinct ("x" is one more), no more: looked at whole, and a dictionary pays.
        let mut vals: Vec<&str> = names[..DICT_PREFIX_DISTINCT_MAX - 1].iter().map(String::as_str).collect();
        vals.extend(std::iter::repeat_n("x", 4000));
        assert_eq!(round_trip(&vals)[0], Codec::StrDict as u8);
    }

    #[test]
    fn dictionary_indexes_without_the_delta_search_decode_the_same() {
        let regions: Vec<&str> = (0..16_384).map(|i| ["us-east-1", "eu-west-1", "ap-south-1", "sa-east-1"][i * 7 % 13 % 4]).collect();
        let off = round_trip_with(&regions, Delta::Off, Effort::Full);
        assert_eq!(off[0], Codec::StrDict as u8);
        let auto = round_trip_with(&regions, Delta::Auto, Effort::Full);
        assert!(off.len() <= auto.len() + 16, "{} vs {} bytes", off.len(), auto.len());
    }

    #[test]
    fn quick_effort_decodes_the_same_a_little_larger() {
        // `catalog.log`'s series batches: a few regions and one host name per row. Quick codes the
        // five regions' indexes in pco's one bin, 3 bits each, against their entropy of 2.3 at full
        // effort (`PCO_LEVEL_UNRELATED`).
        let regions: Vec<&str> = (0..4096).map(|i| ["us-east-1", "eu-west-1", "ap-south-1", "sa-east-1", "us-west-2"][i * 7 % 13 % 5]).collect();
        let hosts: Vec<String> = (0..4096).map(|i| format!("host_{}", 5_000_000 + i)).collect();
        let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
        for vals in [&regions, &hosts] {
            let full = round_trip_with(vals, Delta::Off, Effort::Full);
            let quick = round_trip_with(vals, Delta::Off, Effort::Quick);
            assert_eq!(full[0], quick[0], "the same codec");
            assert!(quick.len() <= full.len() * 4 / 3 + 16, "{} vs {} bytes", quick.len(), full.len());
        }
    }

    #[test]
    fn picks_constant_dictionary_or_plain() {
        assert_eq!(round_trip(&[]), [Codec::Empty as u8]);
        assert_eq!(round_trip(&["", "", ""]), [Codec::Constant as u8, 0]);
        assert_eq!(round_trip(&["ok"; 1000]).len(), 4);
        let states: Vec<&str> = (0..8640).map(|i| ["running", "sleeping", "stopped"][i * 7 % 11 % 3]).collect();
        let out = round_trip(&states);
        assert_eq!(out[0], Codec::StrDict as u8);
        assert!(out.len() < 8640 / 2, "{} bytes", out.len());
        let ids: Vec<String> = (0..500).map(|i| format!("request-{i:08}-ü")).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let out = round_trip(&ids);
        assert_eq!(out[0], Codec::StrPlain as u8);
        assert_eq!(out[1], BLOB_ZSTD);
        round_trip(&["a", "", "日本語", "🦀", "a"]);
        round_trip(&["x", "y"]);
    }

    #[test]
    fn corrupt_strings_are_errors() {
        let dec = |b: &[u8], m| decode_capped(&mut Cursor::new(b), m, usize::MAX);
        assert!(dec(&[Codec::Constant as u8, 2, 0xff, 0xfe], 1).is_err()); // not UTF-8
        assert!(dec(&[Codec::StrPlain as u8, BLOB_RAW, 1, b'a'], 2).is_err()); // too few strings
        assert!(dec(&[Codec::StrPlain as u8, BLOB_RAW, 1, b'a', 0, 0], 2).is_err()); // trailing
        assert!(dec(&[Codec::StrPlain as u8, 9], 1).is_err()); // unknown compression
        assert!(dec(&[Codec::StrPlain as u8, BLOB_ZSTD, 0x80, 0x80, 0x04, 1, 2, 3], 100).is_err()); // huge raw_len
        // Dictionary of one entry, index 1 out of range.
        assert!(dec(&[Codec::StrDict as u8, 1, 5, Codec::Constant as u8, 1, 0, 0, 0, BLOB_RAW, 1, b'a'], 3).is_err());
        assert_eq!(
            dec(&[Codec::StrDict as u8, 1, 5, Codec::Constant as u8, 0, 0, 0, 0, BLOB_RAW, 1, b'a'], 3).unwrap(),
            ["a"; 3]
        );
        assert!(dec(&[Codec::StrDict as u8, 0, 1, Codec::Empty as u8, BLOB_RAW], 0).is_err());
    }
}
