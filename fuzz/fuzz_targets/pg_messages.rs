//! Fuzzes the PostgreSQL frontend-message decoder (`crates/sundial-server/src/pg/frame.rs`): framing with
//! Sundial's size limits, start-up packets and every typed message, exactly as a connection reads them.
//!
//! Property: any byte string decodes or is refused without panicking, and `validate` leaves nothing for
//! pgwire's decoders to panic on (pgwire 0.42 panics on some truncated bodies; the server would contain
//! such a panic with `catch_unwind`, which libFuzzer's `-Cpanic=abort` build turns back into a finding).
//! The same function runs over random and mutated inputs in the stable test
//! `pg::frame::tests::random_and_mutated_inputs_never_panic` (`cargo test -p sundial-server`).
//!
//! Run from `fuzz/`: `cargo +nightly fuzz run pg_messages -- -max_total_time=60 -max_len=4096`.
//! Reproduce a crash: `cargo +nightly fuzz run pg_messages artifacts/pg_messages/crash-...`.

#![no_main]

use libfuzzer_sys::fuzz_target;

// frame.rs depends on pgwire, bytes, thiserror and tracing only: include it by path so fuzzing never
// builds DataFusion (the rest of sundial-server).
#[allow(dead_code)]
#[path = "../../crates/sundial-server/src/pg/frame.rs"]
mod frame;

fuzz_target!(|data: &[u8]| {
    let _ = frame::decode_all(data);
    let contained = frame::CONTAINED_PANICS.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(contained, 0, "pgwire panicked on an input that validate() let through");
});
