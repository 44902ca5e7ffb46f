//! Micro benchmark of a write's WAL payload encoding (`WriteBatch::encode`) with TSBS cpu-only-shaped rows:
//! 10,000 rows of 10 integer fields (0..=100, as TSBS's), 100 series, 10 s apart, encoded again and again
//! into one buffer. Prints nanoseconds per row and the payload's bytes, so that two builds can be compared
//! on the same bytes.
//!
//! Run: `cargo run --release -p sundial-storage --example batch_encode [rounds]`.

use std::time::Instant;

use sundial_storage::batch::WriteBatch;
use sundial_storage::types::Value;

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let mut b = WriteBatch::with_capacity(1, 10_000, 100_000);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..10_000u32 {
        let values = (0..10u16).map(|c| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (c + 1, Value::Integer((x % 101) as i64))
        });
        b.push_row(1, i % 100, 1_451_606_400_000_000_000 + i64::from(i / 100) * 10_000_000_000, values.collect::<Vec<_>>());
    }
    let mut out = Vec::with_capacity(b.encoded_len_hint());
    b.encode(&mut out);
    let bytes = out.len();
    let digest = out.iter().fold(0u64, |h, &v| h.wrapping_mul(0x100_0000_01b3) ^ u64::from(v));
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..rounds / 5 {
            out.clear();
            b.encode(&mut out);
            std::hint::black_box(&out);
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e9 / (rounds / 5 * b.rows.len()) as f64);
    }
    println!("WriteBatch::encode, 10,000 rows x 10 integer fields: {best:.1} ns/row (best of 5), {bytes} bytes, digest {digest:016x}");
}
