//! ALP-style decimal floats (after Afroozeh, Kuffó, Boncz, "ALP: Adaptive Lossless floating-Point
//! Compression", SIGMOD 2024), written by hand.
//!
//! Why our own: most monitoring floats were decimals before they were floats (a sensor reading of 21.4,
//! a price of 12.35), and such a value is an integer times 10⁻ᵉ. Storing the integers lets the integer
//! path (pco's delta coding) compress them near their entropy, where a float coder sees noisy mantissa
//! bits. The layout and the exception rules are part of our format, so they are ours.
//!
//! Differences from the paper, on purpose: one exponent per block and no second "factor" (pco already
//! finds a common multiplier of the integers, so 1200.0, 1300.0 … cost what 12, 13 … cost); and decoding
//! *divides* by 10ᵉ instead of multiplying by an inexact 10⁻ᵉ. IEEE division is correctly rounded, so for
//! `|d| ≤ 2⁵³` and `e ≤ 22`, `d / 10ᵉ` is exactly the double nearest to the decimal `d·10⁻ᵉ`: every value
//! that was parsed from a decimal with at most `e` places round-trips, with no exceptions from rounding.
//! A division costs a few cycles; decoding stays bound by the integer decoder.
//!
//! Payload (after the tag):
//!
//! ```text
//! e: u8 (≤ 18)   n_exc: uvarint (≤ m)   n_exc × position   n_exc × value: u64   ints: values section
//! ```
//!
//! `ints` is a values section of `m` `i64` (tags Constant, Plain or Pco, as for an Integer column), to
//! end. Row `i` decodes to `ints[i] as f64 / 10ᵉ`, unless `i` is an exception position, whose value is
//! the stored `f64` bit pattern. Positions are strictly increasing and below `m`: the first is stored
//! as is, each further one as `uvarint (position − previous − 1)`. The writer makes an exception of every
//! value that does not round-trip bit-exactly (NaN, ±∞, −0.0, values needing more than `e` places or
//! beyond 2⁵³·10⁻ᵉ), and stores the previous row's integer in its place so the integer stream stays smooth.

use super::cursor::Cursor;
use super::pcodec::Pages;
use super::{CodecError, Delta, Effort, Result, numeric};
use crate::encoding::put_uvarint;

/// Largest exponent. 10¹⁸ < 2⁶³ keeps `v · 10ᵉ` of a value below 10 within `i64`, and every power up to
/// 10²² is exact in `f64`, which the division argument above needs.
pub(super) const EXP_MAX: u8 = 18;

/// Integers beyond ±2⁵³ are not all representable as `f64`, so the division argument fails there.
const INT_ABS_MAX: f64 = (1u64 << 53) as f64;

/// Values looked at to choose `e`: evenly spaced over the block. 256 values × at most 19 exponents is
/// at most ~5k round-trip checks, small next to encoding an 8640-row block with pco, and a block's
/// number of decimals rarely changes mid-block (a change only costs exceptions, never correctness).
const SAMPLE_VALUES: usize = 256;

/// Estimated cost of one exception, in bits: a position varint (~1–2 bytes) and 8 bytes of value.
const EXCEPTION_BITS: f64 = 80.0;

/// What each extra decimal place costs per value after delta coding: log2(10) bits.
const BITS_PER_PLACE: f64 = std::f64::consts::LOG2_10;

/// 10ᵉ for e = 0..=EXP_MAX, all exact in `f64`.
const POW10: [f64; EXP_MAX as usize + 1] = {
    let mut p = [1.0; EXP_MAX as usize + 1];
    let mut i = 1;
    while i < p.len() {
        p[i] = p[i - 1] * 10.0;
        i += 1;
    }
    p
};

/// The integer that `v` is stored as under exponent `e`, if it round-trips bit-exactly.
#[inline]
fn to_int(v: f64, e: u8) -> Option<i64> {
    let p = POW10[usize::from(e)];
    let d = (v * p).round();
    // Written so that NaN (incomparable) fails the test too.
    if d.abs().partial_cmp(&INT_ABS_MAX).is_none_or(|o| o.is_gt()) {
        return None;
    }
    let i = d as i64;
    ((i as f64 / p).to_bits() == v.to_bits()).then_some(i)
}

/// The exponent ALP would use for `vals`, and the estimated fraction of exceptions, from a sample.
/// The exponent minimises the estimated size: exceptions cost [`EXCEPTION_BITS`], each place
/// [`BITS_PER_PLACE`] per value.
pub(super) fn choose_exponent(vals: &[f64]) -> (u8, f64) {
    let step = vals.len().div_ceil(SAMPLE_VALUES).max(1);
    // needed[e]: sampled values whose smallest round-tripping exponent is e; the rest never round-trip.
    let mut needed = [0usize; EXP_MAX as usize + 1];
    let mut sampled = 0usize;
    for &v in vals.iter().step_by(step) {
        sampled += 1;
        if let Some(e) = (0..=EXP_MAX).find(|e| to_int(v, *e).is_some()) {
            needed[usize::from(e)] += 1;
        }
    }
    let (mut best, mut best_cost, mut best_exc) = (0u8, f64::INFINITY, sampled);
    let mut fitting = 0usize;
    for e in 0..=EXP_MAX {
        fitting += needed[usize::from(e)];
        let exc = sampled - fitting;
        let cost = exc as f64 * EXCEPTION_BITS + sampled as f64 * BITS_PER_PLACE * f64::from(e);
        if cost < best_cost {
            (best, best_cost, best_exc) = (e, cost, exc);
        }
    }
    (best, best_exc as f64 / sampled.max(1) as f64)
}

/// Appends the ALP payload of `vals` (non-empty) with exponent `e ≤ EXP_MAX`; its integers go through
/// pco with `delta` ([`Delta::Off`] for values of unrelated series, else the search).
pub(super) fn encode(vals: &[f64], e: u8, delta: Delta, effort: Effort, out: &mut Vec<u8>) {
    assert!(e <= EXP_MAX, "alp exponent {e} above {EXP_MAX}");
    let mut ints = Vec::with_capacity(vals.len());
    let mut exceptions = Vec::new();
    let mut prev: Option<i64> = None;
    for (i, &v) in vals.iter().enumerate() {
        match to_int(v, e) {
            Some(d) => {
                if prev.is_none() {
                    // Leading exceptions take the first integer, so the stream does not start with a jump.
                    ints.iter_mut().for_each(|x| *x = d);
                }
                prev = Some(d);
                ints.push(d);
            }
            None => {
                exceptions.push(i);
                ints.push(prev.unwrap_or(0));
            }
        }
    }
    out.push(e);
    put_uvarint(out, exceptions.len() as u64);
    let mut last = None;
    for &p in &exceptions {
        put_uvarint(out, last.map_or(p, |l: usize| p - l - 1) as u64);
        last = Some(p);
    }
    for &p in &exceptions {
        out.extend_from_slice(&vals[p].to_bits().to_le_bytes());
    }
    numeric::encode_with(&ints, delta, Pages::One, effort, out);
}

/// Decodes an ALP payload of `m ≥ 1` values that fills the rest of `cur`.
pub(super) fn decode(cur: &mut Cursor<'_>, m: usize) -> Result<Vec<f64>> {
    if m == 0 {
        return Err(CodecError::Corrupt { what: "alp values section for zero values" });
    }
    let e = cur.u8("alp exponent")?;
    if e > EXP_MAX {
        return Err(CodecError::Corrupt { what: "alp exponent (above 18)" });
    }
    let n_exc = cur.len(m, "alp exception count")?;
    // Each position takes at least one byte, so the input bounds this allocation too.
    let mut positions = Vec::with_capacity(n_exc.min(cur.remaining()));
    let mut next = 0usize;
    for _ in 0..n_exc {
        let p = next.saturating_add(cur.len(m, "alp exception position")?);
        if p >= m {
            return Err(CodecError::Corrupt { what: "alp exception position (past the row count)" });
        }
        positions.push(p);
        next = p + 1;
    }
    let exc_bytes = cur.take(n_exc * 8, "alp exception values")?;
    let ints: Vec<i64> = numeric::decode(cur, m)?;
    let p = POW10[usize::from(e)];
    // A separate pass the compiler vectorises: convert and divide.
    let mut out: Vec<f64> = ints.iter().map(|&d| d as f64 / p).collect();
    for (&pos, bits) in positions.iter().zip(exc_bytes.chunks_exact(8)) {
        let mut b = [0u8; 8];
        b.copy_from_slice(bits);
        out[pos] = f64::from_bits(u64::from_le_bytes(b));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(vals: &[f64], e: u8) -> Vec<u8> {
        let mut out = Vec::new();
        encode(vals, e, Delta::Auto, Effort::Full, &mut out);
        let mut cur = Cursor::new(&out);
        let got = decode(&mut cur, vals.len()).unwrap();
        assert_eq!(cur.remaining(), 0);
        assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), vals.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        out
    }

    #[test]
    fn decimals_need_no_exceptions_and_specials_are_exceptions() {
        let cents: Vec<f64> = (0..1000).map(|i| ((i * 7919) % 100_000 - 40_000) as f64 / 100.0).collect();
        assert_eq!(choose_exponent(&cents), (2, 0.0));
        let out = round_trip(&cents, 2);
        assert_eq!(out[1], 0, "no exceptions");
        let specials = [f64::NAN, -0.0, 1.5, f64::INFINITY, f64::NEG_INFINITY, 0.1 + 0.2, 1e300, f64::from_bits(1), 2.25];
        let out = round_trip(&specials, 2);
        assert_eq!(out[1], 7, "everything but 1.5 and 2.25 is an exception");
        for e in 0..=EXP_MAX {
            round_trip(&specials, e);
        }
        round_trip(&[f64::NAN], 0);
        // Integers beyond 2^53 are exceptions, not silently rounded.
        round_trip(&[9007199254740993.0, 9007199254740992.0, 1e17], 0);
    }

    #[test]
    fn exponent_choice_trades_places_for_exceptions() {
        // Whole numbers with a few three-place values: e = 0 and a few exceptions is cheaper than e = 3.
        let mut v: Vec<f64> = (0..1000).map(|i| (i % 50) as f64).collect();
        v[12] = 1.234; // sampled: the sample takes every 4th value
        assert_eq!(choose_exponent(&v).0, 0);
        let random: Vec<f64> = (1..1000u64).map(|i| f64::from_bits(0x3ff0_0000_0000_0000 | i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 12)).collect();
        assert!(choose_exponent(&random).1 > 0.9);
    }

    #[test]
    fn corrupt_payloads_are_errors() {
        let vals = [1.5, f64::NAN, 2.25, -0.0];
        let out = round_trip(&vals, 2);
        for cut in 0..out.len() {
            assert!(decode(&mut Cursor::new(&out[..cut]), vals.len()).is_err(), "cut {cut}");
        }
        assert!(decode(&mut Cursor::new(&out), 0).is_err());
        let mut bad = out.clone();
        bad[0] = EXP_MAX + 1;
        assert!(decode(&mut Cursor::new(&bad), vals.len()).is_err());
        // Positions past m, and more exceptions than rows.
        assert!(decode(&mut Cursor::new(&[2, 1, 9]), 4).is_err());
        assert!(decode(&mut Cursor::new(&[2, 5, 0, 0, 0, 0, 0]), 4).is_err());
        // A huge count with nothing behind it fails on the input, not on an allocation.
        assert!(decode(&mut Cursor::new(&[2, 0x80, 0x80, 0x40]), 1 << 20).is_err());
    }
}
