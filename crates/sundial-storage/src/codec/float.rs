//! Float values sections: the per-block choice among pco, ALP and Gorilla.
//!
//! No float codec wins everywhere (see `examples/float_bench.rs` and BENCHMARKS.md): ALP wins on
//! decimals (sensor readings, prices), pco on smooth full-precision data, Gorilla on values that often
//! repeat exactly or share their high bits. The writer therefore encodes the candidates and keeps the
//! smallest, and the tag records which one it was.
//!
//! Policy, chosen for its encode cost:
//! 1. Empty and Constant as for every number type.
//! 2. pco (or Plain when pco cannot beat raw bytes): always, it is the baseline.
//! 3. ALP only when a 256-value sample says at most [`ALP_EXCEPTIONS_MAX`] of the values are exceptions;
//!    on full-precision data it would be a large exception list, never the smallest, so the sample saves
//!    its encode (at most 256 × 19 round-trip checks).
//! 4. Gorilla always: one cheap pass (float_bench: 1.3–5 GB/s, against pco's 0.06–0.36).
//!
//! Measured cost (float_bench, BENCHMARKS.md): 2–3× pco's encode time on decimal data (pco runs twice:
//! on the floats, and on ALP's integers), 1.0–1.25× on full-precision data, where the sample skips ALP.
//!
//! Ties go to the earlier candidate, and pco/ALP decode faster than Gorilla.

use super::pcodec::Pages;
use super::{Codec, Delta, Effort, alp, gorilla, numeric};

/// ALP is tried when the sample estimates at most this fraction of exceptions: beyond it, 8 bytes per
/// exception already exceed what pco spends on such data.
const ALP_EXCEPTIONS_MAX: f64 = 0.25;

/// Which encoding the writer uses for a float values section; `Auto` is the writer's choice, the others
/// force one codec (benchmarks, tests). Empty and Constant are still used where they apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FloatEncoding {
    /// The smallest of pco, ALP and Gorilla (the writer's policy).
    Auto,
    /// pco, or Plain when pco does not beat raw bytes (the only choice before segment version 3).
    Pco,
    /// ALP with the sampled exponent, however many exceptions.
    Alp,
    /// Gorilla XOR.
    Gorilla,
}

/// Appends the values section of `vals` (the non-null float values, in row order).
///
/// `pages`: how the pco candidate is written ([`numeric::encode_with`]).
///
/// Returns the delta for the next block of the same column: the one pco used for its candidate, kept
/// or not.
pub(super) fn encode(vals: &[f64], how: FloatEncoding, delta: Delta, pages: Pages, effort: Effort, out: &mut Vec<u8>) -> Delta {
    let constant = vals.split_first().is_none_or(|(f, rest)| rest.iter().all(|v| v.to_bits() == f.to_bits()));
    if constant || how == FloatEncoding::Pco {
        return numeric::encode_with(vals, delta, pages, effort, out);
    }
    match how {
        FloatEncoding::Alp => put_alp(vals, alp::choose_exponent(vals).0, Delta::Auto, effort, out),
        FloatEncoding::Gorilla => put_gorilla(vals, out),
        _ => return encode_smallest(vals, delta, pages, effort, out),
    }
    Delta::Auto
}

fn put_alp(vals: &[f64], e: u8, delta: Delta, effort: Effort, out: &mut Vec<u8>) {
    out.push(Codec::Alp as u8);
    alp::encode(vals, e, delta, effort, out);
}

fn put_gorilla(vals: &[f64], out: &mut Vec<u8>) {
    out.push(Codec::Gorilla as u8);
    gorilla::encode(vals, out);
}

fn encode_smallest(vals: &[f64], delta: Delta, pages: Pages, effort: Effort, out: &mut Vec<u8>) -> Delta {
    let start = out.len();
    let next = numeric::encode_with(vals, delta, pages, effort, out);
    let mut candidate = Vec::new();
    let (e, exceptions) = alp::choose_exponent(vals);
    if exceptions <= ALP_EXCEPTIONS_MAX {
        // ALP's integers are the same values scaled: values of unrelated series (a pack of one-row
        // series) gain nothing from a delta there either, and the search cost a sample compression per
        // candidate on top of pco's own.
        let alp_delta = if delta == Delta::Off { Delta::Off } else { Delta::Auto };
        put_alp(vals, e, alp_delta, effort, &mut candidate);
        keep_smaller(out, start, &candidate);
    }
    candidate.clear();
    put_gorilla(vals, &mut candidate);
    keep_smaller(out, start, &candidate);
    next
}

/// Replaces `out[start..]` by `candidate` if that is strictly smaller.
fn keep_smaller(out: &mut Vec<u8>, start: usize, candidate: &[u8]) {
    if candidate.len() < out.len() - start {
        out.truncate(start);
        out.extend_from_slice(candidate);
    }
}
