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
fn delta_off_round_trips_and_costs_more_only_where_neighbours_are_related() {
    for col in sample_columns() {
        let mut out = Vec::new();
        encode_column_delta(&col, Delta::Off, &mut out);
        assert_same(&decode_column(&out, col.field_type(), col.len()).unwrap(), &col);
    }
    // One series' walk: the search finds order-1 deltas, which "off" gives up.
    let (mut v, mut x) = (0i64, 1u64);
    // 2048 rows: one pco page, so encode_column (which pages longer columns) writes the same bytes.
    let walk: Vec<i64> = (0..2048)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            v += (x >> 54) as i64 - 512;
            v
        })
        .collect();
    let col = typed(FieldType::Integer, walk.into_iter().map(Some).collect(), Value::Integer);
    let (mut auto, mut off) = (Vec::new(), Vec::new());
    encode_column_delta(&col, Delta::Auto, &mut auto);
    encode_column_delta(&col, Delta::Off, &mut off);
    assert!(auto.len() < off.len(), "auto {} bytes, off {}", auto.len(), off.len());
    assert_eq!(auto, round_trip(&col), "Delta::Auto is encode_column");
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
        validity in 0u8..3, tag in 0u8..13, body in prop::collection::vec(any::<u8>(), 0..200), n in 0usize..40,
    ) {
        let mut buf = vec![validity, tag];
        buf.extend_from_slice(&body);
        for ty in [FieldType::Integer, FieldType::UInteger, FieldType::Float, FieldType::Boolean, FieldType::String] {
            let _ = check_decoded(&buf, ty, n);
        }
        let _ = decode_timestamps(&buf[1..], n);
    }
}

/// Every float encoding, forced, then the writer's choice.
const FLOAT_ENCODINGS: [FloatEncoding; 4] =
    [FloatEncoding::Pco, FloatEncoding::Alp, FloatEncoding::Gorilla, FloatEncoding::Auto];

/// Round-trips a float column through every encoding; returns the chunk sizes in `FLOAT_ENCODINGS` order.
fn float_round_trips(col: &Column) -> [usize; 4] {
    FLOAT_ENCODINGS.map(|how| {
        let mut out = Vec::new();
        encode_column_with(col, how, &mut out);
        let got = decode_column(&out, FieldType::Float, col.len()).unwrap_or_else(|e| panic!("{how:?}: {e}"));
        assert_same(&got, col);
        out.len()
    })
}

fn floats(vals: &[f64]) -> Column {
    column(FieldType::Float, &vals.iter().map(|v| Some(Value::Float(*v))).collect::<Vec<_>>())
}

/// A float drawn from the awkward cases: specials, signed zeros, subnormals, NaN payloads, any bits.
fn special_float() -> impl Strategy<Value = f64> + Clone {
    prop_oneof![
        prop::sample::select(vec![
            f64::NAN, -f64::NAN, f64::from_bits(0x7ff8_0000_dead_beef), f64::INFINITY, f64::NEG_INFINITY,
            0.0, -0.0, f64::MIN_POSITIVE, 5e-324, f64::MAX, f64::MIN, 9007199254740993.0,
        ]),
        any::<u64>().prop_map(f64::from_bits),
        any::<f64>(),
    ]
}

#[test]
fn float_codecs_round_trip_edge_blocks() {
    for vals in [vec![], vec![1.5], vec![-0.0], vec![f64::NAN], vec![0.0, -0.0], vec![3.25; 500], vec![f64::NAN; 7]] {
        float_round_trips(&floats(&vals));
    }
    for n in [1usize, 2, 3, 300] {
        let mut c = floats(&(0..n).map(|i| i as f64 / 8.0).collect::<Vec<_>>());
        c.validity.iter_mut().step_by(2).for_each(|v| *v = false);
        if let ColumnValues::Float(v) = &mut c.values {
            v.iter_mut().step_by(2).for_each(|x| *x = 0.0);
        }
        float_round_trips(&c);
        float_round_trips(&Column::nulls(FieldType::Float, n));
    }
}

/// Decimals of unrelated series (a pack of one-row series) coded without delta, ALP's integers too: they
/// read back as written, still as ALP, within 2 % of the bytes with the delta search (which codes at
/// `PCO_LEVEL`, finer bins than `PCO_LEVEL_UNRELATED`'s).
#[test]
fn unrelated_decimals_without_delta_keep_alp() {
    let mut state = 7u64;
    let vals: Vec<f64> = (0..1024)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let z = (state ^ (state >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            ((z >> 11) % 10_000) as f64 / 100.0
        })
        .collect();
    let col = typed(FieldType::Float, vals.into_iter().map(Some).collect(), Value::Float);
    let (mut off, mut auto) = (Vec::new(), Vec::new());
    encode_column_delta(&col, Delta::Off, &mut off);
    encode_column_delta(&col, Delta::Auto, &mut auto);
    assert_same(&decode_column(&off, FieldType::Float, col.len()).unwrap(), &col);
    assert_eq!(column_codecs(&off, col.len()).unwrap().1, Codec::Alp);
    assert!(off.len() <= auto.len() * 51 / 50 + 16, "{} bytes without delta, {} with the search", off.len(), auto.len());
}

/// The per-block choice: ALP on decimals, Gorilla on a gauge that mostly repeats, pco on full-precision
/// smooth data; and the choice is never larger than any forced codec.
#[test]
fn float_choice_picks_the_smallest() {
    let codec = |col: &Column| {
        let mut out = Vec::new();
        encode_column(col, &mut out);
        column_codecs(&out, col.len()).unwrap().1
    };
    // Whole-valued floats of a walk (TSBS writes its integer fields so): pco's float path does not see
    // integers, ALP stores them as such (float_bench: 0.28 against 0.49 bytes/value).
    let mut state = 42u64;
    let mut x = 50.0f64;
    let whole: Vec<f64> = (0..8640)
        .map(|_| {
            // splitmix64 bits, summed to a rough N(0, 1) step, as TSBS's clamped walk.
            let mut step = -6.0;
            for _ in 0..12 {
                state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let z = (state ^ (state >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                step += (z >> 11) as f64 / (1u64 << 53) as f64;
            }
            x = (x + step).clamp(0.0, 100.0);
            x.trunc()
        })
        .collect();
    let c = floats(&whole);
    let sizes = float_round_trips(&c);
    assert_eq!(codec(&c), Codec::Alp, "sizes pco/alp/gorilla/auto: {sizes:?}");
    assert!(sizes[3] < sizes[0], "ALP must beat pco here: {sizes:?}");
    // A short block of full-precision values, each held for 10 rows: a repeat costs Gorilla one bit, and
    // pco's metadata weighs on 100 values (97 against 117 bytes when this test was written).
    let steps: Vec<f64> = whole[..10].iter().map(|w| (w + 0.5) / 7.0).flat_map(|v| [v; 10]).collect();
    let c = floats(&steps);
    let sizes = float_round_trips(&c);
    assert_eq!(codec(&c), Codec::Gorilla, "sizes pco/alp/gorilla/auto: {sizes:?}");
    let smooth: Vec<f64> = (0..8640).map(|i| (i as f64 / 1000.0).sin() * 100.0).collect();
    let c = floats(&smooth);
    let sizes = float_round_trips(&c);
    assert_eq!(codec(&c), Codec::PcoPaged, "sizes pco/alp/gorilla/auto: {sizes:?}");
    for c in [floats(&whole), floats(&steps), floats(&smooth)] {
        let sizes = float_round_trips(&c);
        assert_eq!(sizes[3], *sizes[..3].iter().min().unwrap(), "{sizes:?}");
    }
}

/// Alp and Gorilla chunks are refused in files of segment version 1 and 2, whose writers never used
/// them, with an error naming both versions; unknown tags say a newer build may have written them.
#[test]
fn new_float_codecs_need_segment_version_3() {
    let c = floats(&(0..100).map(|i| i as f64 / 10.0).collect::<Vec<_>>());
    for how in [FloatEncoding::Alp, FloatEncoding::Gorilla] {
        let mut out = Vec::new();
        encode_column_with(&c, how, &mut out);
        assert!(decode_column_in(&out, FieldType::Float, 100, FLOAT_CODECS_SEGMENT_VERSION).is_ok());
        let err = decode_column_in(&out, FieldType::Float, 100, 2).unwrap_err();
        assert!(matches!(err, CodecError::CodecTooNew { needed: 3, version: 2, .. }), "{err}");
        assert!(err.to_string().contains("needs segment version 3 or newer, this file is version 2"), "{err}");
        // Integer columns never accept them.
        assert!(decode_column(&out, FieldType::Integer, 100).is_err());
    }
    let mut out = Vec::new();
    encode_column_with(&c, FloatEncoding::Pco, &mut out);
    assert!(decode_column_in(&out, FieldType::Float, 100, 1).is_ok());
    let err = decode_column(&[ValidityCodec::AllValid as u8, 0x0c], FieldType::Float, 3).unwrap_err();
    assert_eq!(err.to_string(), "unknown float values codec tag 0x0c (written by a newer Sundial, or corrupt)");
}

#[test]
fn truncated_and_flipped_float_chunks_never_panic() {
    let mut x = 0.0f64;
    let walk: Vec<f64> = (0..300).map(|i| { x += ((i * 13 % 5) as f64 - 2.0) / 10.0; x }).collect();
    let mut with_specials = walk.clone();
    with_specials[[3, 50, 299][0]] = f64::NAN;
    with_specials[50] = -0.0;
    with_specials[299] = 1e300;
    for vals in [walk, with_specials, vec![1.0, 2.0]] {
        let col = floats(&vals);
        for how in [FloatEncoding::Alp, FloatEncoding::Gorilla] {
            let mut out = Vec::new();
            encode_column_with(&col, how, &mut out);
            for cut in 0..out.len() {
                assert!(check_decoded(&out[..cut], FieldType::Float, col.len()).is_err(), "{how:?} cut at {cut}");
            }
            for i in 0..out.len() {
                for mask in [0x01u8, 0x10, 0x80, 0xff] {
                    let mut bad = out.clone();
                    bad[i] ^= mask;
                    let _ = check_decoded(&bad, FieldType::Float, col.len());
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn prop_float_codecs_any_bits(vals in rows(special_float())) {
        float_round_trips(&typed(FieldType::Float, vals, Value::Float));
    }

    /// Decimals with 0 to 6 places, as a parser would produce them, with a few specials mixed in.
    #[test]
    fn prop_float_codecs_decimals(
        places in 0u32..=6, ints in prop::collection::vec(-10_000_000i64..10_000_000, 0..600),
        specials in prop::collection::vec((0usize..600, special_float()), 0..4),
    ) {
        let scale = 10f64.powi(places as i32);
        let mut vals: Vec<f64> = ints.iter().map(|i| format!("{}", *i as f64 / scale).parse().unwrap()).collect();
        for (i, v) in specials {
            if let Some(x) = vals.get_mut(i) {
                *x = v;
            }
        }
        let sizes = float_round_trips(&floats(&vals));
        // Alp may be skipped on a sample with many exceptions, so pco and Gorilla are the bounds.
        prop_assert!(sizes[3] <= sizes[0].min(sizes[2]), "{:?}", sizes);
    }

    #[test]
    fn prop_float_codecs_constant(v in special_float(), n in 0usize..300) {
        float_round_trips(&floats(&vec![v; n]));
    }

    /// Garbage behind the Alp and Gorilla tags reaches their decoders.
    #[test]
    fn prop_garbage_behind_float_tags_never_panics(
        tag in 0x09u8..=0x0a, body in prop::collection::vec(any::<u8>(), 0..200), n in 0usize..60,
    ) {
        let mut buf = vec![ValidityCodec::AllValid as u8, tag];
        buf.extend_from_slice(&body);
        let _ = check_decoded(&buf, FieldType::Float, n);
    }
}

/// Columns longer than a pco page, read by row range page by page: integer, unsigned and float walks
/// without nulls, and an integer walk with nulls (its values section holds only the valid rows').
fn paged_columns(n: usize) -> Vec<(Column, FloatEncoding)> {
    let walk: Vec<i64> = (0..n).map(|i| 50 + (i * 7919 % 13) as i64 - 6 + i as i64 / 97).collect();
    let some = |f: fn(i64) -> Value| walk.iter().map(|v| Some(f(*v))).collect::<Vec<_>>();
    let with_nulls: Vec<_> = walk.iter().enumerate().map(|(i, v)| (i % 7 != 3).then_some(Value::Integer(*v))).collect();
    vec![
        (column(FieldType::Integer, &some(Value::Integer)), FloatEncoding::Auto),
        (column(FieldType::UInteger, &some(|v| Value::UInteger(v as u64 * 1000))), FloatEncoding::Auto),
        (column(FieldType::Float, &some(|v| Value::Float(v as f64 * 0.37 + 1e-9))), FloatEncoding::Pco),
        (column(FieldType::Integer, &with_nulls), FloatEncoding::Auto),
    ]
}

/// A numeric column of more than one pco page is written PcoPaged; any row range reads back as that
/// slice of the column; the column's valid count comes with it; segment versions before 5 refuse it;
/// a pack's encoding (and a column of one page) stays Pco.
#[test]
fn paged_columns_read_back_any_row_range() {
    let n = 5000;
    for (col, how) in paged_columns(n) {
        let ty = col.field_type();
        let mut out = Vec::new();
        encode_column_with(&col, how, &mut out);
        assert_same(&decode_column(&out, ty, n).unwrap(), &col);
        assert_eq!(column_codecs(&out, n).map(|c| c.1), Some(Codec::PcoPaged), "{ty:?}");
        let valid = col.validity.iter().filter(|v| **v).count();
        for rows in [0..0, 0..1, 0..n, 2047..2049, 2048..4096, 4095..4096, 4999..5000, 100..300, 4096..5000, 3000..3000] {
            let (got, m) = decode_column_rows(&out, ty, n, u32::MAX, rows.clone()).unwrap();
            assert_same(&got, &col.slice(rows.clone()));
            assert_eq!(m, valid, "{ty:?} {rows:?}");
        }
        assert!(decode_column_rows(&out, ty, n, u32::MAX, 0..n + 1).is_err());
        for err in [decode_column_in(&out, ty, n, 4).unwrap_err(), decode_column_rows(&out, ty, n, 4, 0..1).unwrap_err()] {
            assert!(matches!(err, CodecError::CodecTooNew { needed: 5, version: 4, .. }), "{err}");
        }
        let mut pack = Vec::new();
        encode_column_delta(&col, Delta::Auto, &mut pack);
        assert_eq!(column_codecs(&pack, n).map(|c| c.1), Some(Codec::Pco));
        assert!(pack.len() < out.len(), "pages cost bytes: {} vs {}", pack.len(), out.len());
    }
    let (one_page, _) = &paged_columns(2048)[0];
    let mut out = Vec::new();
    encode_column(one_page, &mut out);
    assert_eq!(column_codecs(&out, 2048).map(|c| c.1), Some(Codec::Pco));
}

/// Read through the page cache, any row range of a paged column is the same slice as read without it,
/// whether its pages were kept before (by an overlapping range) or are decoded and kept now; a page
/// decoded for a range is kept whole, and a read whose pages are all kept finds them (counted as hits);
/// a read whose budget is spent keeps nothing more, and reads the same.
#[test]
fn paged_columns_read_through_the_page_cache_as_without_it() {
    let n = 5000;
    // Segment numbers no segment of this test process reaches, one per column.
    for (i, (col, how)) in paged_columns(n).into_iter().enumerate() {
        let ty = col.field_type();
        let mut out = Vec::new();
        encode_column_with(&col, how, &mut out);
        let chunk = (u64::MAX - 100 - i as u64, 8);
        let mut budget = usize::MAX;
        for rows in [100..300, 0..1, 2047..2049, 150..2100, 0..n, 4999..5000, 3000..3000, 4096..5000, 2048..4096] {
            let (got, m) = decode_column_rows_cached(&out, ty, n, u32::MAX, rows.clone(), Some((chunk, &mut budget))).unwrap();
            assert_same(&got, &col.slice(rows.clone()));
            assert_eq!(m, col.validity.iter().filter(|v| **v).count());
        }
        assert!(page_cache::holds(chunk, 0) && page_cache::holds(chunk, 1), "{ty:?}: pages decoded for a range are kept");
        let before = page_cache::stats();
        let (got, _) = decode_column_rows_cached(&out, ty, n, u32::MAX, 10..4500, Some((chunk, &mut budget))).unwrap();
        assert_same(&got, &col.slice(10..4500));
        let after = page_cache::stats();
        // Rows 10..4500 are values in the first two pages at least (fewer values than rows with nulls).
        assert!(after.hits >= before.hits + 2, "{ty:?}: kept pages read: {before:?} {after:?}");
        assert!(budget < usize::MAX, "kept pages are taken from the budget");
        page_cache::forget_segment(chunk.0);
        assert!(!page_cache::holds(chunk, 0));
        // Nothing left of the budget: decoded from the pages' start as without the cache, nothing kept.
        let mut spent = 0;
        for rows in [100..300, 2047..2049, 4096..5000] {
            let (got, _) = decode_column_rows_cached(&out, ty, n, u32::MAX, rows.clone(), Some((chunk, &mut spent))).unwrap();
            assert_same(&got, &col.slice(rows));
        }
        assert!(!page_cache::holds(chunk, 0) && !page_cache::holds(chunk, 1), "{ty:?}: kept past the budget");
    }
}

/// Every strict prefix of a paged chunk is an error, whichever rows are asked for (every page's length
/// is walked); flipping any byte never panics and, when the rows still decode, gives as many as asked.
/// (A flip inside a page that is not decoded goes unnoticed here: the segment's chunk checksum is what
/// catches it.)
#[test]
fn truncated_and_flipped_paged_chunks_never_panic() {
    let n = 4500;
    for (col, how) in paged_columns(n).into_iter().step_by(2) {
        let ty = col.field_type();
        let mut out = Vec::new();
        encode_column_with(&col, how, &mut out);
        for cut in 0..out.len() {
            assert!(check_decoded(&out[..cut], ty, n).is_err(), "{ty:?} cut at {cut} of {}", out.len());
            assert!(decode_column_rows(&out[..cut], ty, n, u32::MAX, 0..10).is_err(), "{ty:?} cut at {cut}");
        }
        for i in 0..out.len() {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut bad = out.clone();
                bad[i] ^= mask;
                let _ = check_decoded(&bad, ty, n);
                for rows in [0..10, 2040..2100, 4400..4500] {
                    if let Ok((c, _)) = decode_column_rows(&bad, ty, n, u32::MAX, rows.clone()) {
                        assert_eq!((c.len(), c.values.len(), c.field_type()), (rows.len(), rows.len(), ty));
                    }
                }
            }
        }
    }
}

/// A carried delta choice ([`encode_column_hinted`]): the search reports the order it chose (1 on a
/// walk, none on noise), asking for that order again writes the very bytes the search wrote, any other
/// order still writes a chunk that decodes to the column, and a column pco does not compress (strings,
/// booleans, constants) reports nothing to carry.
#[test]
fn hinted_deltas_report_the_search_and_write_what_it_wrote() {
    let n = 3000;
    let step = |i: usize| 50 + (i * 7919 % 13) as i64 - 6 + i as i64 / 97;
    let walk: Vec<Option<Value>> = (0..n).map(|i| Some(Value::Integer(step(i)))).collect();
    let mix = |i: usize| {
        let mut x = i as u64 ^ 0x9E37_79B9_7F4A_7C15;
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (x ^ (x >> 31)) % 1000
    };
    let noise: Vec<Option<Value>> = (0..n).map(|i| Some(Value::Integer(mix(i) as i64))).collect();
    let walk_floats: Vec<Option<Value>> = (0..n).map(|i| Some(Value::Float(step(i) as f64 * 0.37 + 1e-9))).collect();
    for (vals, ty, want) in [
        (&walk, FieldType::Integer, Delta::Order(1)),
        (&noise, FieldType::Integer, Delta::Order(0)),
        (&walk_floats, FieldType::Float, Delta::Order(1)),
    ] {
        let col = column(ty, vals);
        for paged in [true, false] {
            let mut searched = Vec::new();
            let next = encode_column_hinted(&col, Delta::Auto, paged, Effort::Full, &mut searched);
            assert_eq!(next, want, "{ty:?} paged {paged}");
            let mut again = Vec::new();
            assert_eq!(encode_column_hinted(&col, next, paged, Effort::Full, &mut again), next);
            if ty == FieldType::Integer {
                assert_eq!(again, searched, "the carried order writes what the search wrote");
            }
            for order in [0, 1, 2, 3] {
                let mut out = Vec::new();
                assert_eq!(encode_column_hinted(&col, Delta::Order(order), paged, Effort::Full, &mut out), Delta::Order(order));
                assert_same(&decode_column(&out, ty, n).unwrap(), &col);
            }
        }
    }
    let strings = column(FieldType::String, &[Some(Value::String("a".into())), None]);
    let bools = column(FieldType::Boolean, &[Some(Value::Boolean(true)), Some(Value::Boolean(false))]);
    let constant = column(FieldType::Integer, &vec![Some(Value::Integer(7)); 50]);
    for col in [strings, bools, constant] {
        assert_eq!(encode_column_hinted(&col, Delta::Order(1), true, Effort::Full, &mut Vec::new()), Delta::Auto);
    }
}
