//! Line-protocol writes: `POST /write` (InfluxDB 1.x) and `POST /api/v2/write` (2.x).
//!
//! The body (gzip-decoded under the size limit) is parsed line by line; lines that fail to parse or
//! conflict with the schema are rejected one by one while the valid lines are written, as InfluxDB does
//! ("partial write"). The answer is 204 only when every line was written and is durable; otherwise 400
//! with the first error (InfluxDB's `error` text) plus Sundial's details: every rejected line's number,
//! column and reason, and how many lines were written and rejected.

use std::borrow::Cow;
use std::io::Read;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use sundial_lp::{FieldValue, Fields, LineHead, Tags};
use sundial_storage::engine::{KeyCache, KnownKey, WriteOutcome, WritePoint};
use sundial_storage::types::Value;

use crate::AppState;
use crate::errors::{error_response, storage_error};

/// Nanoseconds per unit of a `precision` parameter.
pub fn precision_multiplier(p: Option<&str>) -> Result<i64, String> {
    Ok(match p.unwrap_or("ns") {
        "" | "n" | "ns" => 1,
        "u" | "us" | "µ" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        other => return Err(format!("invalid precision {other:?}: expected one of ns, us, ms, s, m, h")),
    })
}

/// Reads the whole body, inflating gzip, refusing anything over `limit` bytes (also after inflation, so a
/// gzip bomb costs at most `limit` bytes of memory).
pub async fn read_body(body: Body, headers: &HeaderMap, limit: usize) -> Result<Bytes, Response> {
    let too_large = || {
        error_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body exceeds the {limit}-byte limit (`--max-body-mib`); send smaller batches"),
        )
    };
    let raw = collect(body, headers, limit).await.map_err(|e| match e {
        Collect::TooLarge => too_large(),
        Collect::Read(e) => error_response(StatusCode::BAD_REQUEST, format!("could not read the request body: {e}")),
    })?;
    let gzip = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("gzip"));
    if !gzip {
        return Ok(raw);
    }
    let mut out = Vec::with_capacity(raw.len() * 4);
    let mut dec = flate2::read::GzDecoder::new(&raw[..]).take(limit as u64 + 1);
    dec.read_to_end(&mut out)
        .map_err(|e| error_response(StatusCode::BAD_REQUEST, format!("invalid gzip body: {e}")))?;
    if out.len() > limit {
        return Err(too_large());
    }
    Ok(Bytes::from(out))
}

/// Why [`collect`] gave up.
enum Collect {
    TooLarge,
    Read(axum::Error),
}

/// The body's bytes, refused past `limit`. Each piece is copied into one buffer as it comes, made at the
/// `Content-Length` (up to `limit`) up front; a body of one piece is taken as it is. Copying the pieces
/// after the last had come (axum's `to_bytes`) read them back from memory: the copy of TSBS's 3.4 MB
/// bodies was 4 % of the server's CPU loading them.
async fn collect(body: Body, headers: &HeaderMap, limit: usize) -> Result<Bytes, Collect> {
    use futures::StreamExt;
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(Collect::TooLarge);
    }
    let mut pieces = body.into_data_stream();
    let Some(first) = pieces.next().await.transpose().map_err(Collect::Read)? else {
        return Ok(Bytes::new());
    };
    let Some(second) = pieces.next().await.transpose().map_err(Collect::Read)? else {
        return if first.len() > limit { Err(Collect::TooLarge) } else { Ok(first) };
    };
    let mut buf = bytes::BytesMut::with_capacity(declared.unwrap_or(0).max(first.len() + second.len()).min(limit));
    for piece in [first, second] {
        put_piece(&mut buf, &piece, limit)?;
    }
    while let Some(piece) = pieces.next().await.transpose().map_err(Collect::Read)? {
        put_piece(&mut buf, &piece, limit)?;
    }
    Ok(buf.freeze())
}

fn put_piece(buf: &mut bytes::BytesMut, piece: &[u8], limit: usize) -> Result<(), Collect> {
    if buf.len() + piece.len() > limit {
        return Err(Collect::TooLarge);
    }
    buf.extend_from_slice(piece);
    Ok(())
}

/// One rejected line.
struct Rejection {
    line: usize,
    column: Option<usize>,
    message: String,
}

fn to_value(v: FieldValue<'_>) -> Value {
    match v {
        FieldValue::Float(x) => Value::Float(x),
        FieldValue::Integer(x) => Value::Integer(x),
        FieldValue::UInteger(x) => Value::UInteger(x),
        FieldValue::String(s) => Value::String(s.into_owned()),
        FieldValue::Boolean(b) => Value::Boolean(b),
    }
}

/// Checks what the parser cannot (timestamp range, reserved names) and returns the line's timestamp in
/// nanoseconds.
fn check_line(line: &LineHead<'_>, tags: &Tags<'_>, multiplier: i64, now_ns: i64) -> Result<i64, String> {
    let m = &*line.measurement;
    if tags[line.tags.clone()].iter().any(|(k, _)| k == "time") {
        return Err(format!("invalid tag key: input tag \"time\" on measurement \"{m}\" is invalid"));
    }
    match line.timestamp {
        None => Ok(now_ns),
        Some(t) => t
            .checked_mul(multiplier)
            .ok_or_else(|| format!("timestamp {t} is out of range at this precision (±292 years around 1970 in ns)")),
    }
}

pub fn now_ns() -> i64 {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

/// Parses and writes `body` to `db`. Blocking: call it from a blocking thread.
///
/// The lines' tags and fields go into one vector each for the whole body, and the points the engine
/// takes are slices of them: a 10,000-line body made four vectors per line before (the parser's two and
/// the point's two), 13 % of the server's CPU in allocation during a TSBS load. A line repeating an
/// earlier line's series key shares its tags there, when [`sundial_lp::ShareAdvisor`] says it pays.
pub fn write_lines(state: &Arc<AppState>, db: &str, body: &[u8], multiplier: i64) -> Response {
    match write_lines_with(state, db, body, multiplier, true) {
        Ok(r) => r,
        // A series key looked up before the write named a table dropped since, or a row brings a new
        // field: parsed again with every line's tags (rare).
        Err(Needed) => write_lines_with(state, db, body, multiplier, false).unwrap_or_else(|Needed| {
            storage_error(&sundial_storage::Error::internal("a write without left-out tags asked for them"))
        }),
    }
}

/// How much of a body [`lines_estimate`] counts the newlines of.
const LINES_SAMPLE_BYTES: usize = 64 * 1024;

/// Bodies whose sample has lines shorter than this on average are counted whole: an estimate from a
/// sample of short lines (blank ones, say) could reserve far more than the body holds.
const LINE_BYTES_ESTIMATE_MIN: usize = 32;

/// About how many lines `body` has (an eighth more, so that a body of slightly longer lines than its
/// sample's still fits), from the newlines of its first [`LINES_SAMPLE_BYTES`]: the parse's vectors are
/// sized with it once. Counting every newline was a pass over the whole body of its own (1.8 % of the
/// server's CPU loading TSBS's 100 hosts, 3.4 MB bodies); too low an estimate only makes the vectors grow.
fn lines_estimate(body: &[u8]) -> usize {
    let sample = &body[..body.len().min(LINES_SAMPLE_BYTES)];
    let in_sample = memchr::memchr_iter(b'\n', sample).count();
    if sample.len() == body.len() || in_sample == 0 || sample.len() / in_sample < LINE_BYTES_ESTIMATE_MIN {
        return memchr::memchr_iter(b'\n', body).count() + 1;
    }
    let estimate = (body.len() as u128 * in_sample as u128 / sample.len() as u128) as usize;
    estimate + estimate / 8 + 1
}

/// The engine asked for tags [`write_lines_with`] left out ([`sundial_storage::Error::TagsNeeded`]).
struct Needed;

/// [`write_lines`], leaving out the tags of lines whose series key the engine knows when `elide`
/// (see [`sundial_lp::Lines::elide_known_tags`]): they are only parsed for series the engine has not
/// seen, or not since its cache of series keys last started again.
fn write_lines_with(state: &Arc<AppState>, db: &str, body: &[u8], multiplier: i64, elide: bool) -> Result<Response, Needed> {
    let now = now_ns();
    // Keys the engine knew, in the order the parser asked; a line whose tags were left out holds its
    // index here ([`LineHead::elided`]).
    let probe = if elide && state.key_eliding.advise() { state.engine.key_probe(db) } else { None };
    let known_keys: std::cell::RefCell<Vec<KnownKey>> = std::cell::RefCell::new(Vec::new());
    let known = |key: &str| -> Option<u32> {
        let k = probe.as_ref()?.get(key)?;
        let mut v = known_keys.borrow_mut();
        v.push(k);
        u32::try_from(v.len() - 1).ok()
    };
    let n_lines = lines_estimate(body);
    let mut heads = Vec::with_capacity(n_lines);
    // Field names with escapes (the parser owns those, and only for the line), kept for the request.
    let escaped_names = bumpalo::Bump::new();
    let mut tags: Tags<'_> = Vec::new();
    // One line's fields at a time, turned into the engine's values as soon as the line is parsed: a
    // vector of the whole body's parsed fields (5.6 MB for 10,000 TSBS lines) was written, read back
    // cold to make the values, and read a third time to be dropped.
    let mut fields: Fields<'_> = Vec::new();
    // The names and values as the engine takes them. A field named `time` is dropped (as InfluxDB
    // does); a line left without fields is refused.
    //
    // In an arena, so that they are freed without being read again when none owns a string (see the end):
    // dropping a vector of them read every entry to find none (2.1 % of the server's CPU loading TSBS's
    // 100 hosts, 4 MB per 10,000-line body, out of the caches by then).
    let value_arena = bumpalo::Bump::new();
    let mut values: bumpalo::collections::Vec<'_, (&str, Value)> = bumpalo::collections::Vec::new_in(&value_arena);
    let mut owned_strings = false;
    let mut rejected = Vec::new();
    let share = state.key_sharing.advise();
    let mut lines = sundial_lp::parse_lines(body);
    if share {
        lines = lines.share_repeated_keys(n_lines);
    }
    if probe.is_some() {
        lines = lines.elide_known_tags(&known);
    }
    let mut reserved = false;
    while let Some(r) = lines.next_into(&mut tags, &mut fields) {
        match r {
            Ok(h) => {
                if !reserved {
                    // Most bodies repeat the first line's shape.
                    tags.reserve(n_lines * h.tags.len());
                    values.reserve(n_lines * h.fields.len());
                    reserved = true;
                }
                // Checked as it is parsed, while its tags are in the processor's cache: after the
                // whole body (3 MB for 10,000 TSBS lines), reading them back for the check was 2.7 %
                // of the server's CPU while loading.
                match check_line(&h, &tags, multiplier, now) {
                    Ok(ts) => {
                        let start = values.len();
                        for (k, v) in fields.drain(..) {
                            if k != "time" {
                                let name: &str = match k {
                                    Cow::Borrowed(k) => k,
                                    Cow::Owned(k) => escaped_names.alloc_str(&k),
                                };
                                let v = to_value(v);
                                owned_strings |= matches!(v, Value::String(_));
                                values.push((name, v));
                            }
                        }
                        if values.len() == start {
                            let m = &*h.measurement;
                            let message = format!("invalid field name: input field \"time\" on measurement \"{m}\" is invalid");
                            rejected.push(Rejection { line: h.line_number, column: None, message });
                        } else {
                            heads.push((h, ts, start..values.len()));
                        }
                    }
                    Err(message) => rejected.push(Rejection { line: h.line_number, column: None, message }),
                }
                fields.clear();
            }
            Err(e) => rejected.push(Rejection { line: e.line_number, column: Some(e.column), message: e.to_string() }),
        }
    }
    if share {
        state.key_sharing.observe(heads.len() + rejected.len(), lines.shared_lines());
    }
    if probe.is_some() {
        let elided = heads.iter().filter(|(h, _, _)| h.elided.is_some()).count();
        state.key_eliding.observe(heads.len() + rejected.len(), elided);
    }
    let tag_refs: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (&**k, &**v)).collect();
    let known_keys = known_keys.take();
    let points: Vec<WritePoint<'_>> = heads
        .iter()
        .map(|(h, ts, vals)| WritePoint {
            line: h.line_number,
            table: &h.measurement,
            key: Some(h.series_key),
            known: h.elided.map(|i| known_keys[i as usize]),
            tags: Cow::Borrowed(&tag_refs[h.tags.clone()]),
            fields: Cow::Borrowed(&values[vals.clone()]),
            ts: *ts,
        })
        .collect();
    if state.config.auto_create_databases && state.engine.catalog().db(db).is_none() {
        if let Err(e) = state.engine.create_database(db, state.config.default_retention_ns, true) {
            return Ok(storage_error(&e));
        }
    }
    let outcome = if points.is_empty() {
        if state.engine.catalog().db(db).is_none() {
            return Ok(storage_error(&sundial_storage::Error::DatabaseNotFound { name: db.to_string() }));
        }
        WriteOutcome::default()
    } else {
        // With `elide`, the parser asked the engine's cache of series keys for the lines' keys (those
        // it knew are `known`), or the advisor found that it rarely knows them: not asked again.
        let cache = if elide { KeyCache::Skip } else { KeyCache::Probe };
        match state.engine.write_with(db, &points, cache) {
            Ok(o) => o,
            Err(sundial_storage::Error::TagsNeeded { .. }) if elide => return Err(Needed),
            Err(e) => return Ok(storage_error(&e)),
        }
    };
    drop(points);
    if !owned_strings {
        // Nothing in them to drop: their memory goes with the arena.
        std::mem::forget(values);
    }
    for (line, e) in outcome.rejected {
        rejected.push(Rejection { line, column: None, message: e.to_string() });
    }
    if rejected.is_empty() {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    rejected.sort_by_key(|r| r.line);
    Ok(rejection_response(&rejected, outcome.rows_written))
}

fn rejection_response(rejected: &[Rejection], written: usize) -> Response {
    let first = &rejected[0];
    let error = if written > 0 {
        format!("partial write: {} dropped={}", first.message, rejected.len())
    } else {
        first.message.clone()
    };
    let details: Vec<_> = rejected
        .iter()
        .take(100)
        .map(|r| json!({ "line": r.line, "column": r.column, "error": r.message }))
        .collect();
    let body = json!({
        "error": error,
        "line": first.line,
        "column": first.column,
        "written": written,
        "rejected": rejected.len(),
        "rejections": details,
    });
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body within the sample is counted exactly; a long body of lines like its sample's is estimated
    /// at no fewer lines than it has and at most a quarter more; a long body of short lines (whose
    /// estimate could run far over) is counted exactly.
    #[test]
    fn lines_estimate_counts_or_bounds_the_lines() {
        let line = |i: usize| format!("cpu,hostname=host_{i} usage_user={}i,usage_system={}i 1451606400000000000\n", i % 97, i % 89);
        let small: String = (0..100).map(line).collect();
        assert_eq!(lines_estimate(small.as_bytes()), 101);
        let n = 40_000;
        let long: String = (0..n).map(line).collect();
        assert!(long.len() > 4 * LINES_SAMPLE_BYTES);
        let e = lines_estimate(long.as_bytes());
        assert!(e > n && e <= n + n / 4, "{e} for {n} lines");
        let short = "m f=1\n".repeat(100_000);
        assert_eq!(lines_estimate(short.as_bytes()), 100_001);
        assert_eq!(lines_estimate(b""), 1);
    }
}
