//! Values sections of fixed-width numbers: integers, unsigned integers, floats, and the u32 indexes of
//! string dictionaries.
//!
//! Codecs, smallest first: Empty; Constant (one value for the whole block: a counter that did not move,
//! a gauge pinned at 0 or 100); Pco; and Plain when pco cannot beat raw bytes (tiny blocks, where its
//! ~20 bytes of metadata dominate, or incompressible noise). Float columns may also use ALP and Gorilla
//! (`float.rs` chooses); [`decode`] reads them through [`Word::decode_float`], so every other type
//! refuses those tags.

use super::cursor::Cursor;
use super::page_cache::ChunkKey;
use super::pcodec::Pages;
use super::{Codec, CodecError, Delta, Effort, Result, alp, gorilla, pcodec};

/// A number stored as its bit pattern: floats keep NaN payloads and the sign of zero exactly.
pub(super) trait Word: pco::data_types::Number {
    /// Bytes of one value in the Plain and Constant layouts.
    const WIDTH: usize;
    /// Names the section in errors.
    const WHAT: &'static str;
    fn to_bits(self) -> u64;
    fn from_bits(bits: u64) -> Self;
    /// The value as a number in which close values are close, so that a page's spread is small: its
    /// bits, but for signed integers, whose sign bit is flipped (−1 and 0 are neighbours). Keys decoded
    /// pages ([`super::page_cache`]).
    fn to_key(self) -> u64 {
        self.to_bits()
    }
    fn from_key(key: u64) -> Self {
        Self::from_bits(key)
    }
    /// Decodes a float-only values section (ALP, Gorilla); other types refuse the tag.
    fn decode_float(codec: Codec, _cur: &mut Cursor<'_>, _m: usize) -> Result<Vec<Self>> {
        Err(CodecError::WrongCodec { what: Self::WHAT, codec })
    }
}

impl Word for i64 {
    const WIDTH: usize = 8;
    const WHAT: &'static str = "integer values";
    fn to_bits(self) -> u64 {
        self as u64
    }
    fn from_bits(bits: u64) -> Self {
        bits as i64
    }
    fn to_key(self) -> u64 {
        (self as u64) ^ (1 << 63)
    }
    fn from_key(key: u64) -> Self {
        (key ^ (1 << 63)) as i64
    }
}

impl Word for u64 {
    const WIDTH: usize = 8;
    const WHAT: &'static str = "unsigned values";
    fn to_bits(self) -> u64 {
        self
    }
    fn from_bits(bits: u64) -> Self {
        bits
    }
}

impl Word for f64 {
    const WIDTH: usize = 8;
    const WHAT: &'static str = "float values";
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    fn decode_float(codec: Codec, cur: &mut Cursor<'_>, m: usize) -> Result<Vec<Self>> {
        match codec {
            Codec::Alp => alp::decode(cur, m),
            Codec::Gorilla => gorilla::decode(cur, m),
            _ => Err(CodecError::WrongCodec { what: Self::WHAT, codec }),
        }
    }
}

impl Word for u32 {
    const WIDTH: usize = 4;
    const WHAT: &'static str = "dictionary indexes";
    fn to_bits(self) -> u64 {
        u64::from(self)
    }
    fn from_bits(bits: u64) -> Self {
        bits as u32
    }
}

/// Appends the values section of `vals` (the non-null values, in row order), pco's delta search as
/// `delta` says, written as PcoPaged (pages of [`pcodec::PAGE_ROWS`]) when `pages` says so and pco is
/// chosen for more than one page of numbers: a block's field column, whose reader may want a few of its
/// rows ([`decode_rows`]).
///
/// Returns the delta for the next block of the same column ([`super::encode_column_hinted`]): the one
/// pco used, when pco compressed the values.
pub(super) fn encode_with<T: Word>(vals: &[T], delta: Delta, pages: Pages, effort: Effort, out: &mut Vec<u8>) -> Delta {
    let paged = pages == Pages::Paged && vals.len() > pcodec::PAGE_ROWS;
    match vals {
        [] => out.push(Codec::Empty as u8),
        [first, rest @ ..] if rest.iter().all(|v| v.to_bits() == first.to_bits()) => {
            out.push(Codec::Constant as u8);
            put_plain(&[*first], out);
        }
        _ => {
            let start = out.len();
            let (tag, pages) = if paged { (Codec::PcoPaged, Pages::Paged) } else { (Codec::Pco, Pages::One) };
            out.push(tag as u8);
            let used = pcodec::compress(vals, delta, pages, effort, out);
            if used.is_some() && out.len() - start - 1 < vals.len() * T::WIDTH {
                return used.unwrap_or(Delta::Auto);
            }
            out.truncate(start);
            out.push(Codec::Plain as u8);
            put_plain(vals, out);
        }
    }
    Delta::Auto
}

/// Decodes a values section of `m` numbers.
pub(super) fn decode<T: Word>(cur: &mut Cursor<'_>, m: usize) -> Result<Vec<T>> {
    match Codec::read(cur, T::WHAT)? {
        Codec::Empty if m == 0 => Ok(Vec::new()),
        Codec::Empty => Err(CodecError::LengthMismatch { what: T::WHAT, expected: m, actual: 0 }),
        Codec::Constant => Ok(vec![get_plain::<T>(cur, 1)?[0]; m]),
        Codec::Plain => get_plain(cur, m),
        Codec::Pco if m == 0 => Err(CodecError::Corrupt { what: "pco values section for zero values" }),
        Codec::Pco => pcodec::decompress(cur.rest(), m, T::WHAT),
        Codec::PcoPaged => pcodec::decompress_pages(cur.rest(), m, 0..m, T::WHAT, None),
        codec @ (Codec::Alp | Codec::Gorilla) => T::decode_float(codec, cur, m),
        codec => Err(CodecError::WrongCodec { what: T::WHAT, codec }),
    }
}

/// Values `rows` (within `0..m`) of a values section of `m` numbers: of a PcoPaged section only the
/// pages holding them are decoded; any other codec is decoded whole. The whole section is consumed
/// (and its page lengths checked) either way.
/// `cached` names the chunk, whose decoded pages are then looked for and kept in [`super::page_cache`]
/// within the read's budget of bytes.
pub(super) fn decode_rows<T: Word>(cur: &mut Cursor<'_>, m: usize, rows: std::ops::Range<usize>, cached: Option<(ChunkKey, &mut usize)>) -> Result<Vec<T>> {
    if cur.peek() == Some(Codec::PcoPaged as u8) {
        cur.u8(T::WHAT)?;
        return pcodec::decompress_pages(cur.rest(), m, rows, T::WHAT, cached);
    }
    let mut vals = decode(cur, m)?;
    vals.truncate(rows.end);
    vals.drain(..rows.start);
    Ok(vals)
}

/// Appends each value's low `WIDTH` bytes, little-endian.
pub(super) fn put_plain<T: Word>(vals: &[T], out: &mut Vec<u8>) {
    out.reserve(vals.len() * T::WIDTH);
    for v in vals {
        out.extend_from_slice(&v.to_bits().to_le_bytes()[..T::WIDTH]);
    }
}

/// Reads `m` plain values; the length is checked before anything is allocated.
pub(super) fn get_plain<T: Word>(cur: &mut Cursor<'_>, m: usize) -> Result<Vec<T>> {
    let len = m.checked_mul(T::WIDTH).ok_or(CodecError::Corrupt { what: T::WHAT })?;
    Ok(unpack_plain(cur.take(len, T::WHAT)?))
}

fn unpack_plain<T: Word>(bytes: &[u8]) -> Vec<T> {
    bytes.chunks_exact(T::WIDTH).map(|c| T::from_bits(le_word(c))).collect()
}

/// A little-endian word of up to 8 bytes (for a fixed width the copy compiles to one load).
fn le_word(c: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a[..c.len()].copy_from_slice(c);
    u64::from_le_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Word>(vals: &[T]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_with(vals, Delta::Auto, Pages::One, Effort::Full, &mut out);
        let mut cur = Cursor::new(&out);
        let got: Vec<T> = decode(&mut cur, vals.len()).unwrap();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            vals.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        assert_eq!(cur.remaining(), 0);
        out
    }

    #[test]
    fn chooses_constant_pco_or_plain() {
        assert_eq!(round_trip::<i64>(&[])[0], Codec::Empty as u8);
        assert_eq!(round_trip(&[7i64; 100]).len(), 9);
        assert_eq!(round_trip(&[f64::NAN; 3])[0], Codec::Constant as u8);
        // -0.0 == 0.0, but they are different bit patterns, so not a constant.
        assert_ne!(round_trip(&[0.0f64, -0.0])[0], Codec::Constant as u8);
        assert_eq!(round_trip(&[1i64, 2])[0], Codec::Plain as u8);
        let walk: Vec<i64> = (0..1000).map(|i| 50 + (i % 7) - 3).collect();
        let out = round_trip(&walk);
        assert_eq!(out[0], Codec::Pco as u8);
        assert!(out.len() < 1000);
        round_trip(&[i64::MIN, i64::MAX, 0, -1]);
        round_trip(&[u64::MAX, 0, 1]);
        round_trip(&[u32::MAX, 0, 3]);
    }

    #[test]
    fn counts_and_tags_are_checked() {
        let mut out = Vec::new();
        encode_with(&[1i64, 2, 3], Delta::Auto, Pages::One, Effort::Full, &mut out);
        assert!(decode::<i64>(&mut Cursor::new(&out), 4).is_err());
        assert!(decode::<i64>(&mut Cursor::new(&[Codec::Empty as u8]), 1).is_err());
        assert!(decode::<i64>(&mut Cursor::new(&[Codec::BitPacked as u8]), 1).is_err());
        assert!(decode::<i64>(&mut Cursor::new(&[Codec::Pco as u8]), 0).is_err());
        assert!(decode::<i64>(&mut Cursor::new(&[0x7f]), 0).is_err());
        assert!(decode::<i64>(&mut Cursor::new(&[Codec::Plain as u8]), usize::MAX).is_err());
    }
}
