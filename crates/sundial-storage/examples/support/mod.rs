//! What the storage examples share: a deterministic generator, TSBS's value shape and a timer.
//! Each example uses a subset, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// splitmix64: deterministic, dependency-free.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u = self.uniform().max(f64::MIN_POSITIVE);
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * self.uniform()).cos()
    }
}

/// TSBS's clamped random walk (`CWD(ND(0,1), 0, 100, U(0,100))`) as floats.
pub fn float_walk(rng: &mut Rng, n: usize) -> Vec<f64> {
    let mut x = rng.uniform() * 100.0;
    (0..n)
        .map(|_| {
            x = (x + rng.normal()).clamp(0.0, 100.0);
            x
        })
        .collect()
}

/// Time per call in each of `rounds` rounds of at least 0.2 s, fastest first.
pub fn round_times(rounds: usize, mut f: impl FnMut()) -> Vec<Duration> {
    let mut times: Vec<Duration> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            let mut iters = 0u32;
            while start.elapsed() < Duration::from_millis(200) {
                f();
                iters += 1;
            }
            start.elapsed() / iters
        })
        .collect();
    times.sort();
    times
}
