//! Column codecs under hostile input.
//!
//! Input: `[n, mode, body...]`.
//! 1. `body` as a chunk, fed to every decoder with `n % 64` rows: no panic, no huge allocation, and
//!    anything that decodes has exactly `n` rows of the requested type.
//!    The same body behind the float-only tags (Alp 0x09, Gorilla 0x0A) and PcoPaged (0x0B) reaches
//!    those decoders directly; row ranges of it (`decode_column_rows`) decode to as many rows as asked.
//! 2. A column and a timestamp run built from `body` (type and shape picked by `mode`) must round-trip
//!    bit-exactly through encode and decode; float columns through every float encoding (pco, Alp,
//!    Gorilla and the writer's choice), and the choice is never larger than the forced ones. A row range
//!    of the column (`decode_column_rows`, page by page when it is paged: bodies of more than 2048
//!    bytes in walk mode) reads back as that slice.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sundial_storage::codec::{
    FloatEncoding, decode_column, decode_column_rows, decode_timestamps, encode_column, encode_column_with,
    encode_timestamps,
};
use sundial_storage::types::{Column, ColumnValues, FieldType};

const TYPES: [FieldType; 5] =
    [FieldType::Float, FieldType::Integer, FieldType::UInteger, FieldType::String, FieldType::Boolean];

fuzz_target!(|data: &[u8]| {
    let [n, mode, body @ ..] = data else { return };
    decode_anything(body, usize::from(n % 64));
    round_trip_column(*mode, body);
    round_trip_timestamps(*mode, body);
});

fn decode_anything(body: &[u8], n: usize) {
    for ty in TYPES {
        if let Ok(c) = decode_column(body, ty, n) {
            assert_eq!((c.len(), c.values.len(), c.field_type()), (n, n, ty));
        }
    }
    if let Ok(ts) = decode_timestamps(body, n) {
        assert_eq!(ts.len(), n);
    }
    for tag in [0x09u8, 0x0a, 0x0b] {
        let chunk: Vec<u8> = [0x00, tag].iter().chain(body).copied().collect();
        if let Ok(c) = decode_column(&chunk, FieldType::Float, n) {
            assert_eq!((c.len(), c.values.len()), (n, n));
        }
        let rows = n / 3..n / 2 + 1;
        for ty in [FieldType::Float, FieldType::Integer] {
            if let Ok((c, _)) = decode_column_rows(&chunk, ty, n, u32::MAX, rows.clone()) {
                assert_eq!((c.len(), c.values.len()), (rows.len(), rows.len()));
            }
        }
    }
}

/// 64-bit words of `body`: raw (mode bit 3 clear) or, to reach the pco and constant paths, a walk of
/// small signed steps taken from each byte.
fn words(mode: u8, body: &[u8]) -> Vec<u64> {
    if mode & 0x08 == 0 {
        body.chunks(8).map(|c| c.iter().rev().fold(0u64, |w, b| w << 8 | u64::from(*b))).collect()
    } else {
        body.iter()
            .scan(0i64, |x, b| {
                *x = x.wrapping_add(i64::from(*b as i8 >> 5));
                Some(*x as u64)
            })
            .collect()
    }
}

fn round_trip_column(mode: u8, body: &[u8]) {
    let ty = TYPES[usize::from(mode & 0x07) % TYPES.len()];
    let w = words(mode, body);
    let values = match ty {
        // Mode bit 7: decimals with two places (Alp's case), else raw bit patterns.
        FieldType::Float if mode & 0x80 != 0 => ColumnValues::Float(w.iter().map(|v| *v as i64 as f64 / 100.0).collect()),
        FieldType::Float => ColumnValues::Float(w.iter().map(|v| f64::from_bits(*v)).collect()),
        FieldType::Integer => ColumnValues::Integer(w.iter().map(|v| *v as i64).collect()),
        FieldType::UInteger => ColumnValues::UInteger(w.clone()),
        FieldType::Boolean => ColumnValues::Boolean(w.iter().map(|v| v & 1 == 1).collect()),
        FieldType::String => {
            ColumnValues::String(body.split(|b| *b == 0xff).map(|s| String::from_utf8_lossy(s).into_owned()).collect())
        }
    };
    let n = values.len();
    // Mode bits 4-5: no nulls, every third row null, nulls where a word's bit 1 is set, all null.
    let validity: Vec<bool> = (0..n)
        .map(|i| match mode >> 4 & 3 {
            0 => true,
            1 => i % 3 != 1,
            2 => w.get(i).is_none_or(|v| v & 2 == 0),
            _ => false,
        })
        .collect();
    let mut col = Column { values, validity };
    zero_nulls(&mut col);
    let mut buf = Vec::new();
    encode_column(&col, &mut buf);
    check_decodes_to(&buf, &col);
    let rows = n / 3..n - n / 4;
    let (got, valid) = decode_column_rows(&buf, ty, n, u32::MAX, rows.clone()).expect("rows of a column we encoded must decode");
    check_decodes_to_slice(&got, &col.slice(rows));
    assert_eq!(valid, col.validity.iter().filter(|v| **v).count());
    if ty == FieldType::Float {
        for how in [FloatEncoding::Pco, FloatEncoding::Alp, FloatEncoding::Gorilla] {
            let mut forced = Vec::new();
            encode_column_with(&col, how, &mut forced);
            check_decodes_to(&forced, &col);
            // Alp is skipped when its sample predicts many exceptions, so only these two are bounds.
            if how != FloatEncoding::Alp {
                assert!(buf.len() <= forced.len(), "the writer's choice is larger than {how:?}");
            }
        }
    }
}

fn check_decodes_to(buf: &[u8], col: &Column) {
    let got = decode_column(buf, col.field_type(), col.len()).expect("a column we encoded must decode");
    check_decodes_to_slice(&got, col);
}

fn check_decodes_to_slice(got: &Column, col: &Column) {
    assert_eq!(got.validity, col.validity);
    match (&got.values, &col.values) {
        (ColumnValues::Float(g), ColumnValues::Float(c)) => {
            assert!(g.iter().zip(c).all(|(a, b)| a.to_bits() == b.to_bits()), "floats differ");
        }
        (g, c) => assert_eq!(g, c),
    }
}

/// Null rows decode as placeholders (zero, "", false), so the input gets them too.
fn zero_nulls(col: &mut Column) {
    let valid = col.validity.clone();
    let keep = |i: usize| valid[i];
    match &mut col.values {
        ColumnValues::Float(v) => v.iter_mut().enumerate().filter(|(i, _)| !keep(*i)).for_each(|(_, x)| *x = 0.0),
        ColumnValues::Integer(v) => v.iter_mut().enumerate().filter(|(i, _)| !keep(*i)).for_each(|(_, x)| *x = 0),
        ColumnValues::UInteger(v) => v.iter_mut().enumerate().filter(|(i, _)| !keep(*i)).for_each(|(_, x)| *x = 0),
        ColumnValues::Boolean(v) => v.iter_mut().enumerate().filter(|(i, _)| !keep(*i)).for_each(|(_, x)| *x = false),
        ColumnValues::String(v) => v.iter_mut().enumerate().filter(|(i, _)| !keep(*i)).for_each(|(_, x)| x.clear()),
    }
}

fn round_trip_timestamps(mode: u8, body: &[u8]) {
    let mut ts: Vec<i64> = words(mode, body).into_iter().map(|v| v as i64).collect();
    if mode & 0x40 != 0 {
        ts.sort_unstable();
        ts.dedup();
    }
    let mut buf = Vec::new();
    encode_timestamps(&ts, &mut buf);
    assert_eq!(decode_timestamps(&buf, ts.len()).expect("timestamps we encoded must decode"), ts);
}
