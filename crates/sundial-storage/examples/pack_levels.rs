//! pco's compression level for a pack's columns of one-row series (numbers from as many series, no
//! delta): encode time and bytes per value at levels 6, 4 and 3, and through the codec as a flush writes
//! them (`Delta::Off`, see `codec/pcodec.rs`'s `PCO_LEVEL_UNRELATED`).
//!
//! ```text
//! cargo run --release -p sundial-storage --example pack_levels
//! ```
//!
//! 2,000 chunks of 1,024 numbers each (a pack holds at most 1,024 series), best of three rounds.

use std::time::Instant;

use pco::standalone::simple_compress;
use pco::{ChunkConfig, DeltaSpec, ModeSpec, PagingSpec};
use sundial_storage::codec::{Delta, encode_column_delta};
use sundial_storage::types::{Column, ColumnValues};
use support::Rng;

mod support;

const CHUNKS: usize = 2000;
const N: usize = 1024;

/// Best of three rounds of `f` over every chunk: (µs per chunk, bytes per value).
fn measure(f: impl Fn(usize) -> usize) -> (f64, f64) {
    let mut best = f64::MAX;
    let mut bytes = 0;
    for _ in 0..3 {
        let t = Instant::now();
        bytes = (0..CHUNKS).map(&f).sum::<usize>();
        best = best.min(t.elapsed().as_secs_f64());
    }
    (best * 1e6 / CHUNKS as f64, bytes as f64 / (CHUNKS * N) as f64)
}

fn pco_at<T: pco::data_types::Number>(chunks: &[Vec<T>], level: usize) -> (f64, f64) {
    let cfg = ChunkConfig::default()
        .with_compression_level(level)
        .with_mode_spec(ModeSpec::Auto)
        .with_delta_spec(DeltaSpec::NoOp)
        .with_paging_spec(PagingSpec::Exact(vec![N]))
        .with_enable_8_bit(false);
    measure(|i| simple_compress(&chunks[i], &cfg).expect("pco compresses").len())
}

fn codec(cols: &[Column]) -> (f64, f64) {
    measure(|i| {
        let mut out = Vec::new();
        encode_column_delta(&cols[i], Delta::Off, &mut out);
        out.len()
    })
}

fn main() {
    let mut rng = Rng(7);
    let uniform: Vec<Vec<i64>> = (0..CHUNKS).map(|_| (0..N).map(|_| (rng.next() % 101) as i64).collect()).collect();
    let log_uniform: Vec<Vec<i64>> =
        (0..CHUNKS).map(|_| (0..N).map(|_| 10f64.powf(3.0 + 6.0 * rng.uniform()) as i64).collect()).collect();
    let two_dp: Vec<Vec<f64>> = (0..CHUNKS).map(|_| (0..N).map(|_| (rng.uniform() * 10_000.0).round() / 100.0).collect()).collect();
    let column = |values: ColumnValues| Column { values, validity: vec![true; N] };
    println!("| numbers | level 6: µs/chunk, bytes/value | level 4 | level 3 | codec, Delta::Off |");
    println!("|---|---:|---:|---:|---:|");
    let row = |name: &str, [a, b, c]: [(f64, f64); 3], d: (f64, f64)| {
        println!("| {name} | {:.1}, {:.3} | {:.1}, {:.3} | {:.1}, {:.3} | {:.1}, {:.3} |", a.0, a.1, b.0, b.1, c.0, c.1, d.0, d.1);
    };
    let cols: Vec<Column> = uniform.iter().map(|v| column(ColumnValues::Integer(v.clone()))).collect();
    row("uniform integers 0..=100", [6, 4, 3].map(|l| pco_at(&uniform, l)), codec(&cols));
    let cols: Vec<Column> = log_uniform.iter().map(|v| column(ColumnValues::Integer(v.clone()))).collect();
    row("log-uniform integers 10^3..10^9", [6, 4, 3].map(|l| pco_at(&log_uniform, l)), codec(&cols));
    let cols: Vec<Column> = two_dp.iter().map(|v| column(ColumnValues::Float(v.clone()))).collect();
    row("uniform floats, two decimals", [6, 4, 3].map(|l| pco_at(&two_dp, l)), codec(&cols));
}
