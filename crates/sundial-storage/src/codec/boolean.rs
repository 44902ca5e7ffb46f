//! Booleans, and the LSB-first bitmaps shared with the validity section.

use super::cursor::Cursor;
use super::{Codec, CodecError, Result};

/// Appends the values section of `vals` (the non-null booleans): Empty, Constant when all are equal
/// (one byte for the whole block), else BitPacked.
pub(super) fn encode(vals: &[bool], out: &mut Vec<u8>) {
    match vals {
        [] => out.push(Codec::Empty as u8),
        [first, rest @ ..] if rest.iter().all(|v| v == first) => {
            out.push(Codec::Constant as u8);
            out.push(u8::from(*first));
        }
        _ => {
            out.push(Codec::BitPacked as u8);
            pack_bits(vals, out);
        }
    }
}

/// Decodes a values section of `m` booleans.
pub(super) fn decode(cur: &mut Cursor<'_>, m: usize) -> Result<Vec<bool>> {
    match Codec::read(cur, "boolean values")? {
        Codec::Empty if m == 0 => Ok(Vec::new()),
        Codec::Empty => Err(CodecError::LengthMismatch { what: "boolean values", expected: m, actual: 0 }),
        Codec::Constant => match cur.u8("boolean constant")? {
            b @ (0 | 1) => Ok(vec![b == 1; m]),
            _ => Err(CodecError::Corrupt { what: "boolean constant (not 0 or 1)" }),
        },
        Codec::BitPacked => unpack_bits(cur.take(m.div_ceil(8), "boolean bitmap")?, m, "boolean bitmap"),
        codec => Err(CodecError::WrongCodec { what: "boolean values", codec }),
    }
}

/// Appends `ceil(bits.len() / 8)` bytes; bit `i` goes to bit `i % 8` of byte `i / 8`.
pub(super) fn pack_bits(bits: &[bool], out: &mut Vec<u8>) {
    let chunks = bits.chunks_exact(8);
    let rem = chunks.remainder();
    out.extend(chunks.map(pack_byte));
    if !rem.is_empty() {
        out.push(pack_byte(rem));
    }
}

fn pack_byte(bits: &[bool]) -> u8 {
    bits.iter().enumerate().fold(0, |b, (i, &x)| b | (u8::from(x) << i))
}

/// The first `n` bits of `bytes`, which must be exactly `ceil(n / 8)` long with the unused high bits of
/// the last byte zero (so that every bitmap has a single encoding and stray bits reveal corruption).
pub(super) fn unpack_bits(bytes: &[u8], n: usize, what: &'static str) -> Result<Vec<bool>> {
    if bytes.len() != n.div_ceil(8) {
        return Err(CodecError::LengthMismatch { what, expected: n.div_ceil(8), actual: bytes.len() });
    }
    if !n.is_multiple_of(8) && bytes[bytes.len() - 1] >> (n % 8) != 0 {
        return Err(CodecError::Corrupt { what });
    }
    let mut out = Vec::with_capacity(bytes.len() * 8);
    for &b in bytes {
        out.extend((0..8).map(|i| (b >> i) & 1 != 0));
    }
    out.truncate(n);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_at_every_length() {
        for n in 0usize..40 {
            let bits: Vec<bool> = (0..n).map(|i| (i * 7 + i / 3) % 3 == 0).collect();
            let mut out = Vec::new();
            pack_bits(&bits, &mut out);
            assert_eq!(out.len(), n.div_ceil(8));
            assert_eq!(unpack_bits(&out, n, "t").unwrap(), bits);
        }
    }

    #[test]
    fn stray_padding_bits_are_corrupt() {
        assert!(unpack_bits(&[0b1000_0001], 3, "t").is_err());
        assert!(unpack_bits(&[0b0000_0101], 3, "t").is_ok());
        assert!(unpack_bits(&[1, 0], 3, "t").is_err());
    }

    #[test]
    fn constant_and_packed_values() {
        for vals in [vec![], vec![true; 5], vec![false; 9], vec![true, false, true]] {
            let mut out = Vec::new();
            encode(&vals, &mut out);
            let mut cur = Cursor::new(&out);
            assert_eq!(decode(&mut cur, vals.len()).unwrap(), vals);
            assert_eq!(cur.remaining(), 0);
        }
        assert!(decode(&mut Cursor::new(&[Codec::Constant as u8, 2]), 1).is_err());
        assert!(decode(&mut Cursor::new(&[Codec::Empty as u8]), 1).is_err());
        assert!(decode(&mut Cursor::new(&[Codec::Pco as u8]), 1).is_err());
    }
}
