//! Round trips of whole chunks through the public API, and hostile input.

use proptest::prelude::*;

use super::*;
use crate::types::Value;

fn column(ty: FieldType, vals: &[Option<Value>]) -> Column {
    let mut c = Column::new(ty);
    for v in vals {
        match v {
            Some(v) => assert!(c.push_value(v)),
            None => c.push_null(),
        }
    }
    c
}

fn typed<T>(ty: FieldType, vals: Vec<Option<T>>, value: fn(T) -> Value) -> Column {
    column(ty, &vals.into_iter().map(|v| v.map(value)).collect::<Vec<_>>())
}

/// Compares values bit-exactly (NaN payloads, -0.0) and requires placeholders at null rows.
fn assert_same(got: &Column, want: &Column) {
    assert_eq!(got.validity, want.validity);
    match (&got.values, &want.values) {
        (ColumnValues::Float(g), ColumnValues::Float(w)) => {
            let bits = |v: &[f64], valid: &[bool]| -> Vec<u64> {
                v.iter().zip(valid).map(|(x, ok)| if *ok { x.to_bits() } else { 0 }).collect()
            };
            assert_eq!(bits(g, &got.validity), bits(w, &want.validity));
            assert!(g.iter().zip(&got.validity).all(|(x, ok)| *ok || x.to_bits() == 0));
        }
        _ => assert_eq!(got, want),
    }
}

fn round_trip(col: &Column) -> Vec<u8> {
    let mut out = Vec::new();
    encode_column(col, &mut out);
    let got = decode_column(&out, col.field_type(), col.len()).unwrap();
    assert_same(&got, col);
    out
}

fn ts_round_trip(ts: &[i64]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_timestamps(ts, &mut out);
    assert_eq!(decode_timestamps(&out, ts.len()).unwrap(), ts);
    out
}

/// One column of each type, with and without nulls, at a few sizes: the corpus for the corruption
/// tests and the shape tests.
fn sample_columns() -> Vec<Column> {
    let mut cols = Vec::new();
    for n in [0usize, 1, 2, 3, 17, 300] {
        for null_every in [0usize, 3] {
            let null = |i: usize| null_every != 0 && i % null_every == 1;
            let opt = |i: usize, v: Value| (!null(i)).then_some(v);
            let walk = |i: usize| 50 + ((i * 37 % 11) as i64 - 5);
            let ints: Vec<_> = (0..n).map(|i| opt(i, Value::Integer(walk(i)))).collect();
            let uints: Vec<_> = (0..n).map(|i| opt(i, Value::UInteger(u64::MAX - i as u64 * 3))).collect();
            let floats: Vec<_> = (0..n).map(|i| opt(i, Value::Float(walk(i) as f64 / 4.0))).collect();
            let bools: Vec<_> = (0..n).map(|i| opt(i, Value::Boolean(i % 5 == 0))).collect();
            let strs: Vec<_> =
                (0..n).map(|i| opt(i, Value::String(["idle", "busy", "日本"][i % 3].repeat(i % 4)))).collect();
            let consts: Vec<_> = (0..n).map(|i| opt(i, Value::Integer(42))).collect();
            cols.push(column(FieldType::Integer, &ints));
            cols.push(column(FieldType::UInteger, &uints));
            cols.push(column(FieldType::Float, &floats));
            cols.push(column(FieldType::Boolean, &bools));
            cols.push(column(FieldType::String, &strs));
            cols.push(column(FieldType::Integer, &consts));
        }
    }
    cols
}

#[test]
fn every_type_round_trips_with_and_without_nulls() {
    for col in sample_columns() {
        round_trip(&col);
    }
}

#[test]
fn all_null_and_empty_columns() {
    for ty in [FieldType::Integer, FieldType::UInteger, FieldType::Float, FieldType::Boolean, FieldType::String] {
        assert_eq!(round_trip(&Column::new(ty)), [ValidityCodec::AllValid as u8, Codec::Empty as u8]);
        let out = round_trip(&Column::nulls(ty, 8640));
        assert!(out.len() <= 6, "{ty:?}: {} bytes", out.len());
        round_trip(&Column::nulls(ty, 1));
    }
}

#[test]
fn extreme_values() {
    let ints = [i64::MIN, i64::MAX, 0, -1, 1, i64::MIN, i64::MAX];
    round_trip(&column(FieldType::Integer, &ints.map(|v| Some(Value::Integer(v)))));
    let uints = [u64::MAX, 0, 1, u64::MAX / 2, u64::MAX];
    round_trip(&column(FieldType::UInteger, &uints.map(|v| Some(Value::UInteger(v)))));
    let quiet_nan_payload = f64::from_bits(0x7ff8_0000_dead_beef);
    let floats = [
        f64::NAN,
        -f64::NAN,
        quiet_nan_payload,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
        0.0,
        f64::MIN_POSITIVE,
        5e-324,
        f64::MAX,
    ];
    round_trip(&column(FieldType::Float, &floats.map(|v| Some(Value::Float(v)))));
    round_trip(&column(FieldType::Float, &vec![Some(Value::Float(-0.0)); 40]));
    let strs = ["", "a", "ünïcödé", "🦀🦀", "\0", "", "line\nbreak"];
    round_trip(&column(FieldType::String, &strs.map(|s| Some(Value::String(s.into())))));
    ts_round_trip(&[i64::MIN, i64::MIN + 1, 0, i64::MAX - 1, i64::MAX]);
}

#[test]
fn one_row_and_constants_are_small() {
    for v in
        [Value::Integer(-3), Value::UInteger(9), Value::Float(0.1), Value::Boolean(true), Value::String("x".into())]
    {
        let col = column(v.field_type(), &[Some(v.clone())]);
        assert!(round_trip(&col).len() <= 10);
        let col = column(v.field_type(), &vec![Some(v.clone()); 8640]);
        assert!(round_trip(&col).len() <= 10, "{v:?}");
    }
}

#[test]
fn null_rows_decode_as_placeholders() {
    let mut col = column(FieldType::Integer, &[Some(Value::Integer(5)), None, Some(Value::Integer(7))]);
    if let ColumnValues::Integer(v) = &mut col.values {
        v[1] = 99; // garbage under a null is dropped on encode
    }
    let mut out = Vec::new();
    encode_column(&col, &mut out);
    let got = decode_column(&out, FieldType::Integer, 3).unwrap();
    assert_eq!(got.values, ColumnValues::Integer(vec![5, 0, 7]));
}

#[test]
fn row_counts_are_validated() {
    let col = column(FieldType::Integer, &[Some(Value::Integer(1)), Some(Value::Integer(2))]);
    let mut out = Vec::new();
    encode_column(&col, &mut out);
    assert!(decode_column(&out, FieldType::Integer, 3).is_err());
    assert!(matches!(decode_column(&out, FieldType::Integer, CODEC_ROWS_MAX + 1), Err(CodecError::TooManyRows { .. })));
    assert!(matches!(decode_timestamps(&[0], usize::MAX), Err(CodecError::TooManyRows { .. })));
    assert!(decode_column(&out, FieldType::String, 2).is_err());
    assert!(decode_column(&[], FieldType::Integer, 0).is_err());
    let mut longer = out.clone();
    longer.push(0);
    assert!(decode_column(&longer, FieldType::Integer, 2).is_err());
}

#[test]
fn codecs_are_reported() {
    let col = column(FieldType::Boolean, &[Some(Value::Boolean(true)), None]);
    let mut out = Vec::new();
    encode_column(&col, &mut out);
    assert_eq!(column_codecs(&out, 2), Some((ValidityCodec::Bitmap, Codec::Constant)));
    assert_eq!(timestamp_codec(&ts_round_trip(&[1, 2, 3])), Some(Codec::ConstDelta));
}

fn check_decoded(buf: &[u8], ty: FieldType, n: usize) -> Result<()> {
    let c = decode_column(buf, ty, n)?;
    assert_eq!((c.len(), c.values.len(), c.field_type()), (n, n, ty));
    Ok(())
}

/// Every strict prefix of a valid chunk is an error; flipping any byte never panics and, when it still
/// decodes, yields `n` rows of the right type.
#[test]
fn truncated_and_flipped_chunks_never_panic() {
    for col in sample_columns() {
        let (ty, n) = (col.field_type(), col.len());
        let mut out = Vec::new();
        encode_column(&col, &mut out);
        for cut in 0..out.len() {
            assert!(check_decoded(&out[..cut], ty, n).is_err(), "{ty:?} n={n} cut at {cut} of {}", out.len());
        }
        for i in 0..out.len() {
            for mask in [0x01u8, 0x10, 0x80, 0xff] {
                let mut bad = out.clone();
                bad[i] ^= mask;
                let _ = check_decoded(&bad, ty, n);
            }
        }
    }
}

#[test]
fn truncated_and_flipped_timestamps_never_panic() {
    let t0 = 1_451_606_400_000_000_000i64;
    let samples: Vec<Vec<i64>> = vec![
        vec![],
        vec![t0],
        (0..300).map(|i| t0 + i * 10_000_000_000).collect(),
        (0..300).map(|i| t0 + i * 10_000_000_000 + if i == 100 { 7 } else { 0 }).collect(),
        (0..300).map(|i| t0 + i * 10_000_000_000 + (i * 7919 % 1000) * 1_000_000).collect(),
        (0..30u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) as i64).collect(),
    ];
    for ts in samples {
        let out = ts_round_trip(&ts);
        for cut in 0..out.len() {
            assert!(decode_timestamps(&out[..cut], ts.len()).is_err(), "cut at {cut}");
        }
        for i in 0..out.len() {
            for mask in [0x01u8, 0x10, 0x80, 0xff] {
                let mut bad = out.clone();
                bad[i] ^= mask;
                if let Ok(got) = decode_timestamps(&bad, ts.len()) {
                    assert_eq!(got.len(), ts.len());
                }
            }
        }
    }
}

fn opt<T: std::fmt::Debug + Clone>(s: impl Strategy<Value = T> + Clone) -> impl Strategy<Value = Option<T>> {
    prop_oneof![1 => Just(None), 4 => s.prop_map(Some)]
}

fn rows<T: std::fmt::Debug + Clone>(s: impl Strategy<Value = T> + Clone) -> impl Strategy<Value = Vec<Option<T>>> {
    prop_oneof![prop::collection::vec(s.clone().prop_map(Some), 0..400), prop::collection::vec(opt(s), 0..400),]
}

/// Integers from a mix of regimes: small steps (pco's delta path), full range, and a few repeated values.
fn int_strategy() -> impl Strategy<Value = i64> + Clone {
    prop_oneof![-3i64..3, any::<i64>(), prop::sample::select(vec![i64::MIN, i64::MAX, 0, 100])]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn prop_integers(vals in rows(int_strategy())) {
        round_trip(&typed(FieldType::Integer, vals, Value::Integer));
    }

    #[test]
    fn prop_random_walk(steps in prop::collection::vec(-2i64..=2, 1..2000), start in 0i64..100) {
        let vals: Vec<_> = steps.iter().scan(start, |x, s| {
            *x = (*x + s).clamp(0, 100);
            Some(Some(*x))
        }).collect();
        round_trip(&typed(FieldType::Integer, vals, Value::Integer));
    }

    #[test]
    fn prop_unsigned(vals in rows(prop_oneof![0u64..5, any::<u64>()])) {
        round_trip(&typed(FieldType::UInteger, vals, Value::UInteger));
    }

    #[test]
    fn prop_floats(vals in rows(prop_oneof![
        any::<u64>().prop_map(f64::from_bits),
        (0i64..10_000).prop_map(|v| v as f64 / 100.0),
    ])) {
        round_trip(&typed(FieldType::Float, vals, Value::Float));
    }

    #[test]
    fn prop_booleans(vals in rows(any::<bool>())) {
        round_trip(&typed(FieldType::Boolean, vals, Value::Boolean));
    }

    #[test]
    fn prop_strings(vals in rows(prop_oneof![
        ".{0,12}",
        prop::sample::select(vec!["", "ok", "warn", "crit"]).prop_map(String::from),
    ])) {
        round_trip(&typed(FieldType::String, vals, Value::String));
    }

    #[test]
    fn prop_timestamps(mut ts in prop::collection::vec(any::<i64>(), 0..300)) {
        ts_round_trip(&ts);
        ts.sort_unstable();
        ts.dedup();
        ts_round_trip(&ts);
    }

    #[test]
    fn prop_jittered_timestamps(
        jitter in prop::collection::vec(-1_000_000i64..1_000_000, 1..2000), gap in 0usize..2000,
    ) {
        let slot = |i: usize| i as i64 + i64::from(i >= gap) * 50;
        let ts: Vec<i64> = jitter.iter().enumerate()
            .map(|(i, j)| 1_451_606_400_000_000_000 + slot(i) * 10_000_000_000 + j)
            .collect();
        ts_round_trip(&ts);
    }

    #[test]
    fn prop_garbage_never_panics(buf in prop::collection::vec(any::<u8>(), 0..64), n in 0usize..40) {
        for ty in [FieldType::Integer, FieldType::UInteger, FieldType::Float, FieldType::Boolean, FieldType::String] {
            let _ = check_decoded(&buf, ty, n);
        }
        if let Ok(ts) = decode_timestamps(&buf, n) {
            prop_assert_eq!(ts.len(), n);
        }
    }

    /// Garbage behind a valid tag reaches the deeper decoders (pco, zstd, dictionaries).
    #[test]
    fn prop_garbage_behind_tags_never_panics(
        validity in 0u8..3, tag in 0u8..10, body in prop::collection::vec(any::<u8>(), 0..200), n in 0usize..40,
    ) {
        let mut buf = vec![validity, tag];
        buf.extend_from_slice(&body);
        for ty in [FieldType::Integer, FieldType::UInteger, FieldType::Float, FieldType::Boolean, FieldType::String] {
            let _ = check_decoded(&buf, ty, n);
        }
        let _ = decode_timestamps(&buf[1..], n);
    }
}
