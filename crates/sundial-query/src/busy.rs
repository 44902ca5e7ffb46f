//! How many InfluxQL statements are being answered right now, so that a statement spreads its work over
//! other threads only while no other statement keeps the cores busy.
//!
//! A statement's read ([`crate::influx`]'s native fold) and its JSON (the server's writer) may each be
//! split over two threads. Alone on the machine that shortens the answer; under concurrent statements it
//! only adds a wake-up, a context switch and a join per statement, each worth 0.1–0.25 ms on this
//! machine, while the cores were busy with the other statements anyway. TSBS's single-groupby-1-8-1 at
//! 4,000 hosts costs about 0.6 ms of server CPU per query, of which waking the second thread
//! (`futex_wake` from `spawn_blocking`) was 7 % in a one-connection loop; with 8 workers on 2 cores
//! that work bought nothing.
//!
//! Counted by the HTTP handler from the statement's parse to its body written ([`Answering`]); paths
//! that do not count (tests, the PostgreSQL wire) find the count at 0 and split as before.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Statements between [`Answering::enter`] and the guard's drop.
static ANSWERING: AtomicUsize = AtomicUsize::new(0);

/// Counts one statement being answered while it lives.
#[must_use = "the statement counts only while the guard lives"]
pub struct Answering(());

impl Answering {
    pub fn enter() -> Answering {
        ANSWERING.fetch_add(1, Ordering::Relaxed);
        Answering(())
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        ANSWERING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// True unless another statement besides the caller's is being answered: the other cores are free for
/// the caller's parts.
pub fn alone() -> bool {
    ANSWERING.load(Ordering::Relaxed) <= 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_guards_while_they_live() {
        // Other tests of this crate do not enter guards, so the count is this test's alone.
        assert!(alone());
        let a = Answering::enter();
        assert!(alone(), "one statement: its own");
        let b = Answering::enter();
        assert!(!alone(), "two statements");
        drop(a);
        assert!(alone());
        drop(b);
        assert!(alone());
    }
}
