//! A token bucket that caps the write bandwidth of compaction (`EngineConfig::compaction_bytes_per_sec_max`).
//!
//! Why: a merge runs at codec speed and writes in bursts of hundreds of MB/s. On a disk shared with the
//! WAL (whose fsyncs acknowledge every write) or with other services, such a burst queues behind it
//! every fsync of the write path, and p99 write latency follows. Capping compaction's bandwidth trades
//! a longer merge (more files per partition for a while, which reads pay) for a steady disk.
//!
//! The bucket holds at most `burst` bytes of credit and refills at `rate` bytes per second. A write
//! takes its size from the bucket; when the bucket goes into debt, the writer sleeps until the debt
//! would be repaid. Debt (rather than waiting for enough credit first) lets a chunk larger than the
//! burst through without deadlock, and makes concurrent writers queue fairly: each one sleeps for the
//! debt it saw, which includes the others' bytes, so the aggregate rate stays at `rate`.
//!
//! Time comes from a [`ThrottleClock`], so tests drive it by hand ([`ManualThrottleClock`]) and check
//! the exact sleeps without sleeping.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::limits::COMPACTION_THROTTLE_BURST_MS;

/// Monotonic time and sleeping, for [`TokenBucket`].
pub trait ThrottleClock: Send + Sync + Debug {
    /// Time since an arbitrary fixed origin.
    fn now(&self) -> Duration;
    fn sleep(&self, d: Duration);
}

/// The real clock: `Instant` and `thread::sleep`.
#[derive(Debug)]
pub struct SystemThrottleClock {
    origin: Instant,
}

impl SystemThrottleClock {
    pub fn shared() -> Arc<dyn ThrottleClock> {
        Arc::new(SystemThrottleClock { origin: Instant::now() })
    }
}

impl ThrottleClock for SystemThrottleClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// A clock for tests: time moves only when someone sleeps (or the test calls [`Self::advance`]), and
/// every sleep is added up.
#[derive(Debug, Default)]
pub struct ManualThrottleClock {
    now_ns: AtomicU64,
    slept_ns: AtomicU64,
    sleeps: AtomicU64,
}

impl ManualThrottleClock {
    pub fn advance(&self, d: Duration) {
        self.now_ns.fetch_add(d.as_nanos() as u64, Ordering::SeqCst);
    }

    /// Total time slept so far.
    pub fn slept(&self) -> Duration {
        Duration::from_nanos(self.slept_ns.load(Ordering::SeqCst))
    }

    /// Number of sleeps so far.
    pub fn sleeps(&self) -> u64 {
        self.sleeps.load(Ordering::SeqCst)
    }
}

impl ThrottleClock for ManualThrottleClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.now_ns.load(Ordering::SeqCst))
    }

    fn sleep(&self, d: Duration) {
        let ns = d.as_nanos() as u64;
        self.slept_ns.fetch_add(ns, Ordering::SeqCst);
        self.sleeps.fetch_add(1, Ordering::SeqCst);
        self.now_ns.fetch_add(ns, Ordering::SeqCst);
    }
}

#[derive(Debug)]
struct Bucket {
    /// Credit in bytes; negative while writers owe.
    tokens: f64,
    last: Duration,
}

/// See the module doc. Shared by every compaction thread of an engine, so the cap is global.
#[derive(Debug)]
pub struct TokenBucket {
    rate_bytes_per_sec: f64,
    burst_bytes: f64,
    clock: Arc<dyn ThrottleClock>,
    bucket: Mutex<Bucket>,
}

impl TokenBucket {
    /// A bucket refilling at `rate_bytes_per_sec` (at least 1), holding at most
    /// [`COMPACTION_THROTTLE_BURST_MS`] worth of credit, and starting full.
    pub fn new(rate_bytes_per_sec: u64, clock: Arc<dyn ThrottleClock>) -> TokenBucket {
        let rate = rate_bytes_per_sec.max(1) as f64;
        let burst = rate * COMPACTION_THROTTLE_BURST_MS as f64 / 1000.0;
        let last = clock.now();
        TokenBucket { rate_bytes_per_sec: rate, burst_bytes: burst, clock, bucket: Mutex::new(Bucket { tokens: burst, last }) }
    }

    /// Takes `bytes` from the bucket, sleeping (outside the lock) if that puts it into debt.
    pub fn acquire(&self, bytes: u64) {
        let wait = {
            let mut b = self.bucket.lock();
            let now = self.clock.now();
            let elapsed = now.saturating_sub(b.last).as_secs_f64();
            b.last = now;
            b.tokens = (b.tokens + elapsed * self.rate_bytes_per_sec).min(self.burst_bytes);
            b.tokens -= bytes as f64;
            if b.tokens >= 0.0 { None } else { Some(Duration::from_secs_f64(-b.tokens / self.rate_bytes_per_sec)) }
        };
        if let Some(d) = wait {
            self.clock.sleep(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    fn bucket(rate: u64) -> (TokenBucket, Arc<ManualThrottleClock>) {
        let clock = Arc::new(ManualThrottleClock::default());
        (TokenBucket::new(rate, clock.clone()), clock)
    }

    #[test]
    fn the_burst_is_free_and_then_writes_pace_at_the_rate() {
        let (b, clock) = bucket(10 * MIB);
        let burst = 10 * MIB * COMPACTION_THROTTLE_BURST_MS / 1000;
        b.acquire(burst);
        assert_eq!(clock.sleeps(), 0, "a full bucket lets its burst through");
        // 100 MiB more at 10 MiB/s: 10 s of sleeping, give or take float rounding.
        for _ in 0..100 {
            b.acquire(MIB);
        }
        let slept = clock.slept().as_secs_f64();
        assert!((slept - 10.0).abs() < 1e-6, "slept {slept} s");
        assert_eq!(clock.sleeps(), 100);
    }

    #[test]
    fn idle_time_refills_only_up_to_the_burst() {
        let (b, clock) = bucket(MIB);
        clock.advance(Duration::from_secs(3600));
        // An hour idle buys one burst, not an hour of bandwidth.
        let burst = MIB * COMPACTION_THROTTLE_BURST_MS / 1000;
        b.acquire(burst + MIB);
        assert!((clock.slept().as_secs_f64() - 1.0).abs() < 1e-6, "slept {:?}", clock.slept());
    }

    #[test]
    fn a_chunk_larger_than_the_burst_passes_and_is_paid_for() {
        let (b, clock) = bucket(MIB);
        b.acquire(64 * MIB);
        let burst_s = COMPACTION_THROTTLE_BURST_MS as f64 / 1000.0;
        assert!((clock.slept().as_secs_f64() - (64.0 - burst_s)).abs() < 1e-6, "slept {:?}", clock.slept());
        // The debt is paid: the next write after one second of credit does not sleep again.
        clock.advance(Duration::from_secs(1));
        let before = clock.sleeps();
        b.acquire(MIB / 20);
        assert_eq!(clock.sleeps(), before);
    }
}
