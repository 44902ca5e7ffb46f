//! Fuzzes the line-protocol parser (`crates/sundial-lp`).
//!
//! Any body must parse without panicking; every line that parses must survive `write_line` and a
//! second parse unchanged; line numbers must increase and error positions be in range. The check
//! itself is `sundial_lp::check_round_trip`, which the crate's tests also run over the seed corpus.
//!
//! Run from `fuzz/`: `cargo +nightly fuzz run line_protocol -- -max_total_time=60`.
//! Reproduce a crash: `cargo +nightly fuzz run line_protocol artifacts/line_protocol/crash-...`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = sundial_lp::check_round_trip(data) {
        panic!("{problem}");
    }
});
