//! Column codec benchmark: bytes per value and single-core decode speed on TSBS-like blocks.
//!
//! ```text
//! cargo run --release -p sundial-storage --example codec_bench
//! ```
//!
//! A block is one series' day at 10 s intervals: 8640 rows. The TSBS `cpu` fields are integer random
//! walks: a float walk with N(0, 1) steps clamped to 0..=100, truncated to an integer, so consecutive
//! values differ by -2..=2 and the deltas carry about 2.1 bits of entropy. Decode speed counts decoded
//! values (8 bytes each) per second on one thread, best of several rounds.

use std::hint::black_box;
use std::time::Duration;

use pco::standalone::{simple_compress, simple_decompress};
use pco::{ChunkConfig, DeltaSpec, ModeSpec, PagingSpec};
use sundial_storage::codec::{
    Delta, column_codecs, decode_column, decode_column_rows, decode_timestamps, encode_column, encode_column_delta,
    encode_timestamps, timestamp_codec,
};
use sundial_storage::types::{Column, ColumnValues};
use support::{Rng, float_walk};

mod support;

const ROWS: usize = 8640;
const TEN_S: i64 = 10_000_000_000;
const T0: i64 = 1_451_606_400_000_000_000; // 2016-01-01T00:00:00Z, TSBS's default start

fn int_walk(rng: &mut Rng, n: usize) -> Vec<i64> {
    float_walk(rng, n).into_iter().map(|x| x as i64).collect()
}

/// Empirical entropy of the first differences, in bits per value: what a delta coder can reach.
fn delta_entropy_bits(v: &[i64]) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for w in v.windows(2) {
        *counts.entry(w[1] - w[0]).or_insert(0usize) += 1;
    }
    let total = (v.len() - 1) as f64;
    counts.values().map(|&c| -(c as f64 / total) * (c as f64 / total).log2()).sum()
}

/// Best time per call over 5 rounds of at least 0.2 s each.
fn time_per_call(f: impl FnMut()) -> Duration {
    support::round_times(5, f)[0]
}

fn report(name: &str, n: usize, bytes: usize, codec: String, per_call: Duration, encode: Option<Duration>) {
    let vps = n as f64 / per_call.as_secs_f64();
    let encode =
        encode.map_or(String::new(), |e| format!("  encode {:>6.1} M values/s", n as f64 / e.as_secs_f64() / 1e6));
    println!(
        "{name:<34} {bytes:>7} B  {:>7.4} B/value  {codec:<24} decode {:>7.1} M values/s  {:>5.2} GB/s{encode}",
        bytes as f64 / n as f64,
        vps / 1e6,
        vps * 8.0 / 1e9
    );
}

fn bench_column(name: &str, col: &Column) {
    let mut buf = Vec::new();
    encode_column(col, &mut buf);
    let (ty, n) = (col.field_type(), col.len());
    assert_eq!(&decode_column(&buf, ty, n).unwrap(), col, "{name} does not round-trip");
    let per_call = time_per_call(|| {
        black_box(decode_column(black_box(&buf), ty, n).unwrap());
    });
    let encode = time_per_call(|| {
        let mut out = Vec::new();
        encode_column(black_box(col), &mut out);
        black_box(out);
    });
    report(name, n, buf.len(), format!("{:?}", column_codecs(&buf, n).unwrap()), per_call, Some(encode));
}

/// A block written in pco pages (what the segment writer does) against one page (a pack's encoding,
/// and segment versions before 5): bytes, and the decode time of one hour (360 rows) from its middle,
/// which the paged block decodes page by page.
fn bench_hour_of_a_day(what: &str, col: &Column) {
    let (ty, n) = (col.field_type(), col.len());
    let hour = n / 2..n / 2 + 360;
    let (mut paged, mut one) = (Vec::new(), Vec::new());
    encode_column(col, &mut paged);
    encode_column_delta(col, Delta::Auto, &mut one);
    for (name, buf) in [(format!("{what}, one page: 1 h of 24"), &one), (format!("{what}, pages: 1 h of 24"), &paged)] {
        assert_eq!(decode_column_rows(buf, ty, n, u32::MAX, hour.clone()).unwrap().0, col.slice(hour.clone()));
        let per_call = time_per_call(|| {
            black_box(decode_column_rows(black_box(buf), ty, n, u32::MAX, hour.clone()).unwrap());
        });
        let codec = format!("{:?}", column_codecs(buf, n).unwrap());
        println!(
            "{name:<34} {:>7} B  {:>7.4} B/value  {codec:<24} {:>6.1} µs per read of {} rows",
            buf.len(),
            buf.len() as f64 / n as f64,
            per_call.as_secs_f64() * 1e6,
            hour.len()
        );
    }
}

fn bench_timestamps(name: &str, ts: &[i64]) {
    let mut buf = Vec::new();
    encode_timestamps(ts, &mut buf);
    assert_eq!(decode_timestamps(&buf, ts.len()).unwrap(), ts);
    let per_call = time_per_call(|| {
        black_box(decode_timestamps(black_box(&buf), ts.len()).unwrap());
    });
    let encode = time_per_call(|| {
        let mut out = Vec::new();
        encode_timestamps(black_box(ts), &mut out);
        black_box(out);
    });
    report(name, ts.len(), buf.len(), format!("{:?}", timestamp_codec(&buf).unwrap()), per_call, Some(encode));
}

/// Size of the delta-of-delta zigzag varint encoding (the codec's other candidate), for comparison.
fn dod_varint_len(ts: &[i64]) -> usize {
    let mut len = 1 + 8;
    let mut prev_delta = 0i64;
    for w in ts.windows(2) {
        let delta = w[1].wrapping_sub(w[0]);
        let dod = delta.wrapping_sub(prev_delta);
        let z = ((dod << 1) ^ (dod >> 63)) as u64;
        len += (64 - (z | 1).leading_zeros() as usize).div_ceil(7);
        prev_delta = delta;
    }
    len
}

fn full(values: ColumnValues) -> Column {
    let n = values.len();
    Column { values, validity: vec![true; n] }
}

/// pco configurations side by side (standalone API, so sizes include its ~10-byte file framing).
fn compare_pco_configs(name: &str, v: &[i64]) {
    println!("\npco configurations on {name}:");
    let deltas: [(&str, DeltaSpec); 5] = [
        ("Auto", DeltaSpec::Auto),
        ("NoOp", DeltaSpec::NoOp),
        ("Consecutive(1)", DeltaSpec::TryConsecutive(1)),
        ("Consecutive(2)", DeltaSpec::TryConsecutive(2)),
        ("Lookback", DeltaSpec::TryLookback),
    ];
    for level in [4, 8, 12] {
        for (dname, delta) in &deltas {
            let config = ChunkConfig::default()
                .with_compression_level(level)
                .with_mode_spec(ModeSpec::Auto)
                .with_delta_spec(delta.clone())
                .with_paging_spec(PagingSpec::EqualPagesUpTo(1 << 18));
            let bytes = simple_compress(v, &config).unwrap();
            let per_call = time_per_call(|| {
                black_box(simple_decompress::<i64>(black_box(&bytes)).unwrap());
            });
            report(&format!("  level {level:>2} delta {dname}"), v.len(), bytes.len(), String::new(), per_call, None);
        }
    }
}

fn main() {
    let mut rng = Rng(42);
    println!("blocks of {ROWS} rows; decode speed on one core, 8 bytes per decoded value\n");

    let walk = int_walk(&mut rng, ROWS);
    println!(
        "TSBS int walk: first-difference entropy {:.2} bits/value = {:.3} B/value\n",
        delta_entropy_bits(&walk),
        delta_entropy_bits(&walk) / 8.0
    );
    bench_column("int walk (TSBS cpu field)", &full(ColumnValues::Integer(walk.clone())));
    bench_hour_of_a_day("int walk", &full(ColumnValues::Integer(walk.clone())));
    let mut sum = 0usize;
    let mut buf = Vec::new();
    for _ in 0..100 {
        buf.clear();
        encode_column(&full(ColumnValues::Integer(int_walk(&mut rng, ROWS))), &mut buf);
        sum += buf.len();
    }
    println!(
        "{:<34} {:>7} B  {:>7.4} B/value  (mean over 100 walks)",
        "int walk, 100 seeds",
        sum / 100,
        sum as f64 / 100.0 / ROWS as f64
    );

    let mut with_nulls = full(ColumnValues::Integer(walk.clone()));
    for i in 0..ROWS {
        if rng.next().is_multiple_of(10) {
            with_nulls.validity[i] = false;
            if let ColumnValues::Integer(v) = &mut with_nulls.values {
                v[i] = 0;
            }
        }
    }
    bench_column("int walk, 10% nulls", &with_nulls);
    bench_hour_of_a_day("10% nulls", &with_nulls);
    bench_column("uint walk", &full(ColumnValues::UInteger(walk.iter().map(|v| *v as u64).collect())));
    bench_column("int constant", &full(ColumnValues::Integer(vec![7; ROWS])));
    let counter: Vec<i64> = walk
        .iter()
        .scan(0i64, |s, v| {
            *s += v;
            Some(*s)
        })
        .collect();
    bench_column("int counter (cumulative walk)", &full(ColumnValues::Integer(counter)));
    let fw = float_walk(&mut rng, ROWS);
    bench_column("float walk, full precision", &full(ColumnValues::Float(fw.clone())));
    let cents: Vec<f64> = fw.iter().map(|x| (x * 100.0).round() / 100.0).collect();
    bench_column("float walk, 2 decimals", &full(ColumnValues::Float(cents)));
    bench_column("float walk, integral", &full(ColumnValues::Float(walk.iter().map(|v| *v as f64).collect())));
    let bools: Vec<bool> = walk.iter().map(|v| *v > 50).collect();
    bench_column("bool (walk > 50)", &full(ColumnValues::Boolean(bools)));
    let states: Vec<String> = walk.iter().map(|v| ["ok", "warn", "critical"][(*v / 34) as usize].to_string()).collect();
    bench_column("string, 3 states", &full(ColumnValues::String(states)));
    let ids: Vec<String> = (0..ROWS).map(|_| format!("req-{:016x}", rng.next() >> 16)).collect();
    bench_column("string, unique ids", &full(ColumnValues::String(ids)));

    println!();
    let ts: Vec<i64> = (0..ROWS as i64).map(|i| T0 + i * TEN_S).collect();
    bench_timestamps("timestamps, exact 10 s", &ts);
    let mut gappy = ts.clone();
    gappy.drain(4000..4100);
    bench_timestamps("timestamps, 10 s with one gap", &gappy);
    let ms_jitter: Vec<i64> = ts.iter().map(|t| t + (rng.next() % 2001) as i64 * 1000 - 1_000_000).collect();
    bench_timestamps("timestamps, 10 s ± 1 ms (µs res.)", &ms_jitter);
    let s_jitter: Vec<i64> = ts.iter().map(|t| t + (rng.next() % 1_000_000_000) as i64).collect();
    bench_timestamps("timestamps, 10 s + U(0,1 s) (ns)", &s_jitter);

    for (name, t) in [("one gap", &gappy), ("± 1 ms", &ms_jitter), ("+ U(0,1 s)", &s_jitter)] {
        println!("  delta-of-delta varint alternative, {name}: {} B", dod_varint_len(t));
    }

    compare_pco_configs("the TSBS int walk", &walk);
    compare_pco_configs("timestamps 10 s ± 1 ms", &ms_jitter);
}
