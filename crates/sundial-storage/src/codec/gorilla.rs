//! Gorilla XOR float values (Pelkonen et al., "Gorilla: A Fast, Scalable, In-Memory Time Series
//! Database", VLDB 2015, section 4.1.2), written by hand.
//!
//! Why our own: compression of float columns is Sundial's edge, the layout must be ours to freeze in
//! `docs/format.md`, and the decoder must be safe on hostile bytes with allocations bounded by the
//! input (a crate would bring its own stream framing and its own failure modes on truncated input,
//! which we would then have to freeze and audit). It is ~150 lines.
//!
//! Where it wins: gauges that often repeat the previous value exactly (a 0-bit XOR costs one bit), and
//! full-precision values whose neighbours share sign, exponent and high mantissa bits. pco usually
//! beats it on smooth data; the writer keeps whichever is smaller (see `float.rs`).
//!
//! Payload (after the tag): `count: uvarint` (must equal `m`: a stream of `m` values, zero-padded, can
//! also read as `m + 1` values, so a wrong row count would otherwise decode silently), then a big-endian
//! bit stream (the first bit is the top bit of its first byte), zero-padded to a whole byte:
//!
//! ```text
//! first value: 64 bits (f64 bit pattern)
//! each further value, x = bits XOR previous bits:
//!   '0'                                    x == 0
//!   '1' '0' <meaningful bits>              x fits the previous window (leading ≥ prev, trailing ≥ prev)
//!   '1' '1' leading:5 len:6 <len bits>     new window: `leading` zero bits (≤ 31), then `len` bits (64 as 0)
//! ```
//!
//! The first window is "leading 0, length 64" until a '11' sets one. A reader needs `m ≥ 1`, rejects a
//! window with `leading + len > 64` and, at the end, leftover bytes or non-zero padding.

use super::cursor::Cursor;
use super::{CodecError, Result};

const WHAT: &str = "gorilla float values";
/// Width of the leading-zero count: counts above 31 are stored as 31 (the window just starts earlier).
const LEADING_BITS: u32 = 5;
const LEADING_MAX: u32 = (1 << LEADING_BITS) - 1;
/// Width of the meaningful-bit count; 64 is stored as 0.
const LEN_BITS: u32 = 6;

/// MSB-first bit writer into a byte vector.
struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    /// Bits held in `acc` (< 64 between calls), in its low end.
    n: u32,
}

impl BitWriter<'_> {
    /// Appends the low `bits` bits of `v` (`bits ≤ 64`).
    #[inline]
    fn put(&mut self, v: u64, bits: u32) {
        if bits == 0 {
            return;
        }
        let v = if bits == 64 { v } else { v & ((1u64 << bits) - 1) };
        if self.n + bits <= 64 {
            self.acc = if bits == 64 { v } else { (self.acc << bits) | v };
            self.n += bits;
        } else {
            // Fill `acc` to 64 bits, flush it, keep the rest.
            let fit = 64 - self.n;
            let rest = bits - fit;
            let word = (self.acc << fit) | (v >> rest);
            self.out.extend_from_slice(&word.to_be_bytes());
            self.acc = v & ((1u64 << rest) - 1);
            self.n = rest;
        }
        if self.n == 64 {
            self.out.extend_from_slice(&self.acc.to_be_bytes());
            self.acc = 0;
            self.n = 0;
        }
    }

    fn finish(self) {
        let bytes = self.n.div_ceil(8);
        let word = if self.n == 0 { 0 } else { self.acc << (64 - self.n) };
        self.out.extend_from_slice(&word.to_be_bytes()[..bytes as usize]);
    }
}

/// Appends the Gorilla payload of `vals` (non-empty) to `out`.
pub(super) fn encode(vals: &[f64], out: &mut Vec<u8>) {
    let Some((first, rest)) = vals.split_first() else { return };
    crate::encoding::put_uvarint(out, vals.len() as u64);
    let mut w = BitWriter { out, acc: 0, n: 0 };
    let mut prev = first.to_bits();
    w.put(prev, 64);
    let (mut lead, mut len) = (0u32, 64u32);
    for v in rest {
        let bits = v.to_bits();
        let x = bits ^ prev;
        prev = bits;
        if x == 0 {
            w.put(0, 1);
            continue;
        }
        let (l, t) = (x.leading_zeros().min(LEADING_MAX), x.trailing_zeros());
        if l >= lead && t >= 64 - lead - len {
            w.put(0b10, 2);
            w.put(x >> (64 - lead - len), len);
        } else {
            (lead, len) = (l, 64 - l - t);
            w.put(0b11, 2);
            w.put(u64::from(lead), LEADING_BITS);
            w.put(u64::from(len & 63), LEN_BITS);
            w.put(x >> t, len);
        }
    }
    w.finish();
}

/// MSB-first bit reader over a copy of the payload padded with 8 zero bytes, so that every peek is one
/// unaligned load without a bounds branch. Reading past the real end yields zeros; `finish` then sees
/// that more bits were consumed than the payload has.
struct BitReader {
    buf: Vec<u8>,
    /// Bits consumed.
    pos: usize,
}

impl BitReader {
    /// The next 57+ bits, MSB-aligned (the low `pos % 8` bits are not valid).
    #[inline]
    fn peek(&self) -> u64 {
        let i = self.pos >> 3;
        // `decode` keeps `pos` within 8 · (payload length + 8), inside the zero padding; `get` keeps a bug
        // there from becoming a panic.
        let word = self.buf.get(i..i + 8).and_then(|s| s.try_into().ok()).map_or(0, u64::from_be_bytes);
        word << (self.pos & 7)
    }

    /// Reads `bits ≤ 57` bits.
    #[inline]
    fn get(&mut self, bits: u32) -> u64 {
        if bits == 0 {
            return 0;
        }
        let v = self.peek() >> (64 - bits);
        self.pos += bits as usize;
        v
    }

    /// Reads `bits ≤ 64` bits.
    #[inline]
    fn get_wide(&mut self, bits: u32) -> u64 {
        if bits <= 57 {
            return self.get(bits);
        }
        let hi = self.get(bits - 32);
        (hi << 32) | self.get(32)
    }
}

/// Decodes a Gorilla payload of exactly `m` values that fills the rest of `cur`.
pub(super) fn decode(cur: &mut Cursor<'_>, m: usize) -> Result<Vec<f64>> {
    if m == 0 {
        return Err(CodecError::Corrupt { what: "gorilla values section for zero values" });
    }
    let count = cur.uvarint(WHAT)?;
    if count != m as u64 {
        return Err(CodecError::LengthMismatch { what: WHAT, expected: m, actual: usize::try_from(count).unwrap_or(usize::MAX) });
    }
    let payload = cur.rest();
    // Every value after the first costs at least one bit: refuse a count the payload cannot hold
    // before allocating for it.
    let bits_total = payload.len().saturating_mul(8);
    if bits_total < 64 + (m - 1) {
        return Err(CodecError::Truncated { what: WHAT, needed: (64 + m - 1).div_ceil(8), available: payload.len() });
    }
    let mut r = BitReader { buf: Vec::with_capacity(payload.len() + 16), pos: 0 };
    r.buf.extend_from_slice(payload);
    r.buf.resize(payload.len() + 16, 0);
    let mut out = Vec::with_capacity(m);
    let mut prev = r.get_wide(64);
    out.push(f64::from_bits(prev));
    let (mut lead, mut len) = (0u32, 64u32);
    for _ in 1..m {
        // At most 77 bits per value; stop before the padding could be overrun.
        if r.pos > bits_total {
            return Err(CodecError::Truncated { what: WHAT, needed: r.pos.div_ceil(8), available: payload.len() });
        }
        let head = r.peek() >> 62;
        if head & 0b10 == 0 {
            r.pos += 1;
        } else {
            r.pos += 2;
            if head & 1 == 1 {
                lead = r.get(LEADING_BITS) as u32;
                len = r.get(LEN_BITS) as u32;
                if len == 0 {
                    len = 64;
                }
                if lead + len > 64 {
                    return Err(CodecError::Corrupt { what: "gorilla window (leading + length > 64)" });
                }
            }
            prev ^= r.get_wide(len) << (64 - lead - len);
        }
        out.push(f64::from_bits(prev));
    }
    if r.pos > bits_total || payload.len() != r.pos.div_ceil(8) {
        return Err(CodecError::LengthMismatch { what: WHAT, expected: r.pos.div_ceil(8), actual: payload.len() });
    }
    if !r.pos.is_multiple_of(8) && payload[payload.len() - 1] << (r.pos % 8) != 0 {
        return Err(CodecError::Corrupt { what: "gorilla padding (non-zero bits)" });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(vals: &[f64]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(vals, &mut out);
        let got = decode(&mut Cursor::new(&out), vals.len()).unwrap();
        assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), vals.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        out
    }

    #[test]
    fn round_trips_special_values_and_windows() {
        round_trip(&[1.0]);
        assert_eq!(round_trip(&[2.5; 9]).len(), 10, "count, 64 bits, then 8 zero bits");
        round_trip(&[f64::NAN, -0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, f64::from_bits(1), f64::MAX, -f64::MAX]);
        round_trip(&[f64::from_bits(u64::MAX), f64::from_bits(0), f64::from_bits(u64::MAX), f64::from_bits(1 << 63)]);
        let walk: Vec<f64> = (0..1000).map(|i| 20.0 + (i as f64 * 0.1).sin()).collect();
        round_trip(&walk);
    }

    #[test]
    fn truncation_padding_and_windows_are_checked() {
        let vals = [1.0, 1.5, 1.5, -3.25, 7e300];
        let out = round_trip(&vals);
        for cut in 0..out.len() {
            assert!(decode(&mut Cursor::new(&out[..cut]), vals.len()).is_err(), "cut {cut}");
        }
        let mut longer = out.clone();
        longer.push(0);
        assert!(decode(&mut Cursor::new(&longer), vals.len()).is_err());
        assert!(decode(&mut Cursor::new(&out), vals.len() + 1).is_err());
        assert!(decode(&mut Cursor::new(&out), 0).is_err());
        // 64 bits of first value, then '11', leading 31, length 63: 94 > 64.
        let mut w = vec![2];
        let mut bw = BitWriter { out: &mut w, acc: 0, n: 0 };
        bw.put(0, 64);
        bw.put(0b11, 2);
        bw.put(31, 5);
        bw.put(63, 6);
        bw.put(0, 63);
        bw.finish();
        assert!(matches!(decode(&mut Cursor::new(&w), 2), Err(CodecError::Corrupt { .. })));
        // A huge claimed count with a tiny payload is refused before allocating.
        assert!(matches!(decode(&mut Cursor::new(&[0x80, 0x80, 0x40, 0, 0, 0, 0, 0, 0, 0, 0]), 1 << 20), Err(CodecError::Truncated { .. })));
    }
}
