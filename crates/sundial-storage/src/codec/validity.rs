//! The validity (null mask) section of a field column chunk.
//!
//! Most columns have no nulls, so that case costs one tag byte. Otherwise the writer picks the smaller
//! of a bitmap (`n/8` bytes) and run lengths, which win when nulls come in long stretches (a field that
//! appears only during part of a day, or a sparse field).

use super::boolean::{pack_bits, unpack_bits};
use super::cursor::{Cursor, uvarint_len};
use super::{CodecError, Result, ValidityCodec};
use crate::encoding::put_uvarint;

pub(super) fn encode(valid: &[bool], out: &mut Vec<u8>) {
    if valid.iter().all(|v| *v) {
        out.push(ValidityCodec::AllValid as u8);
        return;
    }
    let runs = runs(valid);
    let runs_bytes = uvarint_len(runs.len() as u64) + runs.iter().map(|r| uvarint_len(*r)).sum::<usize>();
    if runs_bytes < valid.len().div_ceil(8) {
        out.push(ValidityCodec::Runs as u8);
        put_uvarint(out, runs.len() as u64);
        for r in runs {
            put_uvarint(out, r);
        }
    } else {
        out.push(ValidityCodec::Bitmap as u8);
        pack_bits(valid, out);
    }
}

/// Lengths of the alternating valid/null runs, starting with a (possibly empty) valid run.
fn runs(valid: &[bool]) -> Vec<u64> {
    let mut runs = Vec::new();
    let mut current = true;
    let mut len = 0u64;
    for &v in valid {
        if v != current {
            runs.push(len);
            current = v;
            len = 0;
        }
        len += 1;
    }
    runs.push(len);
    runs
}

/// Decodes the validity of `n` rows; returns it with the number of valid rows.
pub(super) fn decode(cur: &mut Cursor<'_>, n: usize) -> Result<(Vec<bool>, usize)> {
    let tag = cur.u8("validity tag")?;
    let valid = match ValidityCodec::from_u8(tag) {
        Some(ValidityCodec::AllValid) => return Ok((vec![true; n], n)),
        Some(ValidityCodec::Bitmap) => unpack_bits(cur.take(n.div_ceil(8), "validity bitmap")?, n, "validity bitmap")?,
        Some(ValidityCodec::Runs) => decode_runs(cur, n)?,
        None => return Err(CodecError::UnknownCodec { what: "validity", tag }),
    };
    let m = valid.iter().filter(|v| **v).count();
    Ok((valid, m))
}

fn decode_runs(cur: &mut Cursor<'_>, n: usize) -> Result<Vec<bool>> {
    // At most n + 1 runs: only the first may be empty.
    let k = cur.len(n.saturating_add(1), "validity run count")?;
    if k == 0 {
        return Err(CodecError::Corrupt { what: "validity run count (zero)" });
    }
    let mut valid = Vec::with_capacity(n);
    let mut current = true;
    for i in 0..k {
        // Bounding each run by what is left keeps the total at n and the allocation at n.
        let r = cur.len(n - valid.len(), "validity run length (past the row count)")?;
        if r == 0 && i > 0 {
            return Err(CodecError::Corrupt { what: "validity run length (empty run)" });
        }
        valid.resize(valid.len() + r, current);
        current = !current;
    }
    if valid.len() != n {
        return Err(CodecError::LengthMismatch { what: "validity runs", expected: n, actual: valid.len() });
    }
    Ok(valid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(valid: &[bool]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(valid, &mut out);
        let mut cur = Cursor::new(&out);
        let (got, m) = decode(&mut cur, valid.len()).unwrap();
        assert_eq!(got, valid);
        assert_eq!(m, valid.iter().filter(|v| **v).count());
        assert_eq!(cur.remaining(), 0);
        out
    }

    #[test]
    fn picks_the_smallest_layout() {
        assert_eq!(round_trip(&[true; 100]), [ValidityCodec::AllValid as u8]);
        assert_eq!(round_trip(&[]), [ValidityCodec::AllValid as u8]);
        let all_null = round_trip(&[false; 8640]);
        assert_eq!(all_null[0], ValidityCodec::Runs as u8);
        assert!(all_null.len() <= 5);
        let mut half = vec![true; 8640];
        half[4320..].fill(false);
        assert_eq!(round_trip(&half)[0], ValidityCodec::Runs as u8);
        let alternating: Vec<bool> = (0..100).map(|i| i % 2 == 0).collect();
        assert_eq!(round_trip(&alternating)[0], ValidityCodec::Bitmap as u8);
        round_trip(&[false]);
        round_trip(&[false, true]);
    }

    #[test]
    fn bad_runs_are_rejected() {
        let runs = |bytes: &[u8], n| decode(&mut Cursor::new(bytes), n);
        assert_eq!(runs(&[2, 2, 1, 2], 3).unwrap(), (vec![true, false, false], 1));
        assert_eq!(runs(&[2, 2, 0, 3], 3).unwrap(), (vec![false; 3], 0));
        assert!(runs(&[2, 2, 1, 1], 3).is_err()); // short
        assert!(runs(&[2, 2, 1, 3], 3).is_err()); // long
        assert!(runs(&[2, 3, 1, 0, 2], 3).is_err()); // empty middle run
        assert!(runs(&[2, 0], 3).is_err()); // no runs
        assert!(runs(&[2, 9, 1], 3).is_err()); // more runs than rows allow
        assert!(runs(&[7], 3).is_err()); // unknown tag
    }
}
