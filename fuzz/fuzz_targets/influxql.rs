//! Fuzzes the InfluxQL parser (`sundial-query/src/influxql`).
//!
//! Any input must parse or fail with an error, never panic or overflow the stack; whatever parses must
//! print (`Display`) as a query that parses back to the same statements and prints identically.
//! Inputs that are valid UTF-8 are also parsed as a lone expression, with the same checks.
//!
//! Run from `fuzz/`: `cargo +nightly fuzz run influxql -- -max_total_time=60`.
//! Reproduce a crash: `cargo +nightly fuzz run influxql artifacts/influxql/crash-...`.

#![no_main]

use libfuzzer_sys::fuzz_target;

// The parser depends on nothing but std: include it by path so fuzzing never builds DataFusion.
#[allow(dead_code, unused_imports)]
#[path = "../../crates/sundial-query/src/influxql/mod.rs"]
mod influxql;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    check_query(text);
    check_expr(text);
});

fn check_query(text: &str) {
    let Ok(statements) = influxql::parse_query(text) else { return };
    let printed = influxql::format_query(&statements);
    if printed.len() > influxql::QUERY_BYTES_MAX {
        return; // Printing can lengthen a query (`.5` → `0.5`); the limit applies to the printed text too.
    }
    let reparsed = match influxql::parse_query(&printed) {
        Ok(s) => s,
        Err(e) => panic!("{text:?} printed as {printed:?}, which does not parse: {e}"),
    };
    assert_eq!(statements, reparsed, "{text:?} printed as {printed:?}");
    assert_eq!(printed, influxql::format_query(&reparsed), "printing is not stable for {text:?}");
}

fn check_expr(text: &str) {
    let Ok(expr) = influxql::parse_expr(text) else { return };
    let printed = expr.to_string();
    if printed.len() > influxql::QUERY_BYTES_MAX {
        return;
    }
    let reparsed = match influxql::parse_expr(&printed) {
        Ok(e) => e,
        Err(e) => panic!("{text:?} printed as {printed:?}, which does not parse: {e}"),
    };
    assert_eq!(expr, reparsed, "{text:?} printed as {printed:?}");
}
