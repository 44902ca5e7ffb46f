//! Timestamp chunks.
//!
//! Collectors sample at a fixed interval, so the usual block is an arithmetic sequence: ConstDelta
//! stores it in 17 bytes whatever its length. Otherwise (jitter, gaps, irregular events) the writer
//! builds both a delta-of-delta varint stream and a pco payload and keeps the smaller, falling back to
//! plain when neither beats 8 bytes per value. Delta-of-delta is tiny when the interval is regular with
//! rare gaps (one byte per row, more only at the gaps); pco wins on noisy intervals, where entropy
//! coding of the deltas beats byte-aligned varints.
//!
//! All arithmetic wraps, so any i64 sequence round-trips (even one spanning i64::MIN..i64::MAX, whose
//! deltas overflow) and no input can make the decoder overflow.

use super::cursor::{Cursor, get_uvarint};
use super::{Codec, CodecError, Delta, Effort, Result, numeric, pcodec};
use crate::encoding::{put_uvarint, unzigzag, zigzag};

const WHAT: &str = "timestamps";

pub(super) fn encode(ts: &[i64], out: &mut Vec<u8>) {
    let Some(&first) = ts.first() else {
        out.push(Codec::Empty as u8);
        return;
    };
    let delta = ts.get(1).map_or(0, |t| t.wrapping_sub(first));
    if ts.windows(2).all(|w| w[1].wrapping_sub(w[0]) == delta) {
        out.push(Codec::ConstDelta as u8);
        out.extend_from_slice(&first.to_le_bytes());
        out.extend_from_slice(&delta.to_le_bytes());
        return;
    }
    let mut dod = Vec::with_capacity(8 + ts.len());
    encode_dod(ts, &mut dod);
    let mut pco = Vec::new();
    let pco_ok = pcodec::compress(ts, Delta::Auto, pcodec::Pages::One, Effort::Full, &mut pco).is_some();
    let plain_len = ts.len() * 8;
    if pco_ok && pco.len() < dod.len() && pco.len() < plain_len {
        out.push(Codec::Pco as u8);
        out.extend_from_slice(&pco);
    } else if dod.len() < plain_len {
        out.push(Codec::DeltaOfDelta as u8);
        out.extend_from_slice(&dod);
    } else {
        out.push(Codec::Plain as u8);
        numeric::put_plain(ts, out);
    }
}

/// `first: i64`, then `zigzag(Δᵢ − Δᵢ₋₁)` as uvarints for every later row.
fn encode_dod(ts: &[i64], out: &mut Vec<u8>) {
    let first = ts[0];
    out.extend_from_slice(&first.to_le_bytes());
    let (mut prev, mut prev_delta) = (first, 0i64);
    for &t in &ts[1..] {
        let delta = t.wrapping_sub(prev);
        put_uvarint(out, zigzag(delta.wrapping_sub(prev_delta)));
        prev = t;
        prev_delta = delta;
    }
}

pub(super) fn decode(cur: &mut Cursor<'_>, n: usize) -> Result<Vec<i64>> {
    let codec = Codec::read(cur, WHAT)?;
    match codec {
        Codec::Empty if n == 0 => return Ok(Vec::new()),
        Codec::Empty => return Err(CodecError::LengthMismatch { what: WHAT, expected: n, actual: 0 }),
        Codec::Plain => return numeric::get_plain(cur, n),
        _ if n == 0 => return Err(CodecError::Corrupt { what: "timestamps (non-empty codec for zero rows)" }),
        _ => {}
    }
    match codec {
        Codec::ConstDelta => {
            let first = cur.u64("first timestamp")? as i64;
            let delta = cur.u64("timestamp delta")? as i64;
            Ok(const_delta(first, delta, n))
        }
        Codec::DeltaOfDelta => {
            let first = cur.u64("first timestamp")? as i64;
            decode_dod(cur.rest(), first, n)
        }
        Codec::Pco => pcodec::decompress(cur.rest(), n, WHAT),
        codec => Err(CodecError::WrongCodec { what: WHAT, codec }),
    }
}

/// `first + i·delta` for `i < n`; a closed form (no carried sum) so the loop vectorises.
fn const_delta(first: i64, delta: i64, n: usize) -> Vec<i64> {
    (0..n as i64).map(|i| first.wrapping_add(i.wrapping_mul(delta))).collect()
}

/// Decodes `n − 1` delta-of-delta varints that must fill `buf` exactly.
fn decode_dod(buf: &[u8], first: i64, n: usize) -> Result<Vec<i64>> {
    // Every varint takes at least one byte: checking that up front bounds the allocation by the input.
    if buf.len() < n - 1 {
        return Err(CodecError::Truncated { what: "timestamp deltas", needed: n - 1, available: buf.len() });
    }
    let mut out = Vec::with_capacity(n);
    out.push(first);
    let (mut pos, mut t, mut delta) = (0usize, first, 0i64);
    for _ in 1..n {
        let z = get_uvarint(buf, &mut pos).ok_or(CodecError::Corrupt { what: "timestamp delta varint" })?;
        delta = delta.wrapping_add(unzigzag(z));
        t = t.wrapping_add(delta);
        out.push(t);
    }
    if pos != buf.len() {
        return Err(CodecError::LengthMismatch { what: "timestamp deltas (bytes)", expected: pos, actual: buf.len() });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(ts: &[i64]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(ts, &mut out);
        let mut cur = Cursor::new(&out);
        assert_eq!(decode(&mut cur, ts.len()).unwrap(), ts);
        assert_eq!(cur.remaining(), 0);
        out
    }

    const TEN_S: i64 = 10_000_000_000;
    const T0: i64 = 1_451_606_400_000_000_000; // 2016-01-01T00:00:00Z in ns

    #[test]
    fn regular_interval_is_seventeen_bytes() {
        let ts: Vec<i64> = (0..8640).map(|i| T0 + i * TEN_S).collect();
        let out = round_trip(&ts);
        assert_eq!(out.len(), 17);
        assert_eq!(out[0], Codec::ConstDelta as u8);
        assert_eq!(round_trip(&[T0])[0], Codec::ConstDelta as u8);
        assert_eq!(round_trip(&[]), [Codec::Empty as u8]);
    }

    #[test]
    fn gaps_and_jitter_pick_the_smaller_encoding() {
        let mut ts: Vec<i64> = (0..8640).map(|i| T0 + i * TEN_S).collect();
        ts.drain(1000..1100);
        // Delta-of-delta would take a byte per row; pco entropy-codes the zeros to almost nothing.
        let gap = round_trip(&ts);
        assert!(gap.len() < 100, "{} bytes", gap.len());
        // On short blocks pco's metadata costs more than one byte per row.
        let short: Vec<i64> = [0, 10, 20, 35, 45, 55].map(|t| T0 + t * TEN_S).to_vec();
        assert_eq!(round_trip(&short)[0], Codec::DeltaOfDelta as u8);
        // ±1 ms jitter, deterministic.
        let jitter: Vec<i64> = (0..8640).map(|i| T0 + i * TEN_S + (i * 7_919 % 2_000_001 - 1_000_000) * 1000).collect();
        let out = round_trip(&jitter);
        assert!(out.len() < 8640 * 4, "{} bytes", out.len());
    }

    #[test]
    fn extreme_values_wrap_and_round_trip() {
        round_trip(&[i64::MIN, i64::MAX]);
        round_trip(&[i64::MIN, 0, i64::MAX]);
        round_trip(&[i64::MAX, i64::MIN, i64::MAX, -1, 0]);
        let noise: Vec<i64> = (0..100u64).map(|i| splitmix(i) as i64).collect();
        assert_eq!(round_trip(&noise)[0], Codec::Plain as u8);
    }

    fn splitmix(i: u64) -> u64 {
        let mut z = i.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[test]
    fn corrupt_counts_are_errors() {
        let ts: Vec<i64> = (0..50).map(|i| T0 + i * i).collect();
        let mut out = Vec::new();
        encode(&ts, &mut out);
        assert!(decode(&mut Cursor::new(&out), 49).is_err());
        assert!(decode(&mut Cursor::new(&out), 51).is_err());
        assert!(decode(&mut Cursor::new(&[Codec::ConstDelta as u8; 17]), 0).is_err());
        assert!(decode(&mut Cursor::new(&[Codec::BitPacked as u8]), 1).is_err());
        let mut dod = vec![Codec::DeltaOfDelta as u8];
        dod.extend_from_slice(&T0.to_le_bytes());
        assert!(decode(&mut Cursor::new(&dod), 1_000_000).is_err());
    }
}
