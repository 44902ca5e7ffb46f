//! Float codec benchmark: pco, ALP, Gorilla and the writer's per-block choice, in one run.
//!
//! ```text
//! cargo run --release -p sundial-storage --example float_bench [-- results.json]
//! ```
//!
//! Each data set is cut into blocks of 8640 rows (one series' day at 10 s) and every block is encoded
//! as a whole column chunk (validity tag included) with each codec forced, then with the writer's
//! choice (`Auto`). "pco" is what the writer did before segment version 3 (pco, or Plain when pco cannot
//! beat raw bytes), so it is the "before" figure. Sizes are bytes per value over all blocks. Decode and
//! encode speed are single-thread, decoded values × 8 bytes per second, over the whole data set; each is
//! timed in 7 rounds of at least 0.2 s and reported as best and median (the machine may be shared).
//! With a path argument the results are also written there as JSON.

use std::hint::black_box;
use std::time::Duration;

use sundial_storage::codec::{FloatEncoding, column_codecs, decode_column, encode_column_with};
use sundial_storage::types::{Column, ColumnValues, FieldType};
use support::{Rng, float_walk};

mod support;

const ROWS: usize = 8640;
const ROUNDS: usize = 7;

/// Rounds to `places` decimals the way a parser of the printed value would produce it.
fn decimals(v: &[f64], places: usize) -> Vec<f64> {
    v.iter().map(|x| format!("{x:.places$}").parse().unwrap()).collect()
}

/// A temperature sensor every 10 s: daily cycle, slow weather drift, sensor noise, reported to 0.1.
fn temperature(rng: &mut Rng, n: usize) -> Vec<f64> {
    let mut drift = 0.0;
    let raw: Vec<f64> = (0..n)
        .map(|i| {
            let day = (i % ROWS) as f64 / ROWS as f64;
            drift += rng.normal() * 0.01;
            15.0 + 6.0 * (std::f64::consts::TAU * (day - 0.375)).sin() + drift + rng.normal() * 0.15
        })
        .collect();
    decimals(&raw, 1)
}

/// The checked-in real data: hourly Seattle temperatures of 2010 (see the file's header).
fn seattle() -> Vec<f64> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/data/seattle-temps-2010-hourly.csv");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).map(|l| l.parse().unwrap()).collect()
}

fn column(v: &[f64]) -> Column {
    Column { values: ColumnValues::Float(v.to_vec()), validity: vec![true; v.len()] }
}

/// Best and median time per call over `ROUNDS` rounds of at least 0.2 s each.
fn time_per_call(f: impl FnMut()) -> (Duration, Duration) {
    let times = support::round_times(ROUNDS, f);
    (times[0], times[ROUNDS / 2])
}

struct Row {
    data: &'static str,
    codec: &'static str,
    values: usize,
    bytes: usize,
    chosen: String,
    decode_gbs: (f64, f64),
    encode_gbs: (f64, f64),
}

fn bench(data: &'static str, vals: &[f64], rows: &mut Vec<Row>) {
    let blocks: Vec<Column> = vals.chunks(ROWS).map(column).collect();
    let gbs = |t: Duration| vals.len() as f64 * 8.0 / t.as_secs_f64() / 1e9;
    for (codec, how) in [
        ("pco (before)", FloatEncoding::Pco),
        ("alp", FloatEncoding::Alp),
        ("gorilla", FloatEncoding::Gorilla),
        ("auto (choice)", FloatEncoding::Auto),
    ] {
        let chunks: Vec<Vec<u8>> = blocks
            .iter()
            .map(|b| {
                let mut out = Vec::new();
                encode_column_with(b, how, &mut out);
                out
            })
            .collect();
        let mut chosen: Vec<String> = Vec::new();
        for (b, c) in blocks.iter().zip(&chunks) {
            let got = decode_column(c, FieldType::Float, b.len()).unwrap();
            let (ColumnValues::Float(g), ColumnValues::Float(w)) = (&got.values, &b.values) else { unreachable!() };
            assert!(g.iter().zip(w).all(|(a, b)| a.to_bits() == b.to_bits()), "{data} {codec}: not bit-exact");
            let name = format!("{:?}", column_codecs(c, b.len()).unwrap().1);
            if !chosen.contains(&name) {
                chosen.push(name);
            }
        }
        let (dec_best, dec_med) = time_per_call(|| {
            for (b, c) in blocks.iter().zip(&chunks) {
                black_box(decode_column(black_box(c), FieldType::Float, b.len()).unwrap());
            }
        });
        let (enc_best, enc_med) = time_per_call(|| {
            for b in &blocks {
                let mut out = Vec::new();
                encode_column_with(black_box(b), how, &mut out);
                black_box(out);
            }
        });
        let row = Row {
            data,
            codec,
            values: vals.len(),
            bytes: chunks.iter().map(Vec::len).sum(),
            chosen: chosen.join("+"),
            decode_gbs: (gbs(dec_best), gbs(dec_med)),
            encode_gbs: (gbs(enc_best), gbs(enc_med)),
        };
        println!(
            "{:<34} {:<14} {:>8.4} B/value  decode {:>5.2} GB/s (median {:>5.2})  encode {:>5.3} GB/s (median {:>5.3})  {}",
            row.data,
            row.codec,
            row.bytes as f64 / row.values as f64,
            row.decode_gbs.0,
            row.decode_gbs.1,
            row.encode_gbs.0,
            row.encode_gbs.1,
            row.chosen
        );
        rows.push(row);
    }
}

fn json(rows: &[Row]) -> String {
    let items: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "    {{\"data\": \"{}\", \"codec\": \"{}\", \"values\": {}, \"bytes\": {}, \"bytes_per_value\": {:.4}, \
                 \"decode_gb_s_best\": {:.3}, \"decode_gb_s_median\": {:.3}, \"encode_gb_s_best\": {:.3}, \
                 \"encode_gb_s_median\": {:.3}, \"codecs_used\": \"{}\"}}",
                r.data,
                r.codec,
                r.values,
                r.bytes,
                r.bytes as f64 / r.values as f64,
                r.decode_gbs.0,
                r.decode_gbs.1,
                r.encode_gbs.0,
                r.encode_gbs.1,
                r.chosen
            )
        })
        .collect();
    format!("[\n{}\n  ]", items.join(",\n"))
}

fn main() {
    let mut rng = Rng(42);
    const BLOCKS: usize = 4;
    let n = BLOCKS * ROWS;
    let full = float_walk(&mut rng, n);
    let mut rows = Vec::new();
    println!("blocks of {ROWS} rows; single thread; GB/s of 8-byte values; best of {ROUNDS} rounds (median)\n");
    bench("random walk, 2 decimals", &decimals(&full, 2), &mut rows);
    bench("temperature gauge, 0.1 (synthetic)", &temperature(&mut rng, n), &mut rows);
    bench("seattle hourly temps 2010 (real)", &seattle(), &mut rows);
    bench("random walk, full precision", &full, &mut rows);
    bench("TSBS integer-valued floats", &full.iter().map(|x| x.trunc()).collect::<Vec<_>>(), &mut rows);
    // A gauge that holds its value for a minute (6 rows) and then moves: Gorilla's repeat case.
    let held: Vec<f64> = full.iter().enumerate().map(|(i, _)| full[i - i % 6]).collect();
    bench("full precision, held 6 rows", &held, &mut rows);
    if let Some(path) = std::env::args().nth(1) {
        std::fs::write(&path, format!("{{\n  \"rows\": {}\n}}\n", json(&rows))).unwrap();
        println!("\nwrote {path}");
    }
}
