//! `GET|POST /query`: InfluxQL, answered in InfluxDB 1.x's JSON shape.
//!
//! Parameters: `q` (statements separated by `;`), `db`, `epoch` (`ns`, `u`/`µ`, `ms`, `s`, `m`, `h`: times
//! as integers in that unit, else RFC 3339 strings), `pretty=true`; `chunked=true` is refused. They come
//! from the query string or, for POST, also from an `application/x-www-form-urlencoded` body.
//!
//! Statuses as InfluxDB: 400 `{"error": "missing required parameter \"q\""}` or `error parsing query: ...`;
//! otherwise 200 with one result per statement, a failing statement carrying its own `error`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sundial_query::influx::values::{Chunk, Column, Gathered};
use sundial_query::influx::{Cell, Series, SeriesTable, StatementResult, Values};

use crate::AppState;
use crate::errors::error_response;
use crate::write::{now_ns, read_body};

type Params = Query<HashMap<String, String>>;

pub async fn query_get(State(state): State<Arc<AppState>>, Query(p): Params) -> Response {
    query(state, p).await
}

pub async fn query_post(State(state): State<Arc<AppState>>, Query(mut p): Params, headers: HeaderMap, body: Body) -> Response {
    let form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if form {
        let bytes = match read_body(body, &headers, state.config.max_body_bytes).await {
            Ok(b) => b,
            Err(r) => return r,
        };
        for (k, v) in crate::http::url_form(&bytes) {
            p.entry(k).or_insert(v);
        }
    }
    query(state, p).await
}

async fn query(state: Arc<AppState>, p: HashMap<String, String>) -> Response {
    let Some(q) = p.get("q").filter(|q| !q.trim().is_empty()) else {
        return error_response(StatusCode::BAD_REQUEST, "missing required parameter \"q\"");
    };
    if p.get("chunked").is_some_and(|c| c == "true") {
        return error_response(StatusCode::BAD_REQUEST, "chunked responses are not supported: omit chunked=true");
    }
    let epoch = match p.get("epoch").map(String::as_str) {
        None | Some("") => None,
        Some(e) => match epoch_divisor(e) {
            Some(d) => Some(d),
            None => return error_response(StatusCode::BAD_REQUEST, format!("invalid epoch {e:?}: expected ns, u, µ, ms, s, m or h")),
        },
    };
    let db = p.get("db").filter(|d| !d.is_empty()).map(String::as_str);
    // Counted until its body is written: the read and the writer split over two threads only while no
    // other statement is answered.
    let _answering = sundial_query::busy::Answering::enter();
    let results = match state.influxql.execute_tables(db, q, now_ns()).await {
        Ok(r) => r,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let results = Arc::new(results);
    let mut parts = render_parts(&results, epoch).await;
    // A large answer is freed on a blocking thread, after the response is made, not before it is sent:
    // one of many series (4,000: TSBS's lastpoint took about as long to free as to render before it was
    // a table, a 4,000-host rollup's still does) or of many cells ([`FREE_ON_BLOCKING_THREAD_CELLS_MIN`]).
    // A smaller one of many series (100 hosts' lastpoint: 8 % of its server CPU) is freed by a task of
    // the runtime, which runs once this one has handed the response over, here or on the other thread,
    // instead of before it is sent.
    let series = results.iter().map(series_count).sum::<usize>();
    let cells = results.iter().map(statement_cells).sum::<usize>();
    if series >= FREE_ON_BLOCKING_THREAD_SERIES_MIN || cells >= FREE_ON_BLOCKING_THREAD_CELLS_MIN {
        drop(tokio::task::spawn_blocking(move || drop(results)));
    } else if series <= FREE_IN_PLACE_SERIES_MAX {
        drop(results);
    } else {
        drop(tokio::spawn(async move { drop(results) }));
    }
    if p.get("pretty").is_some_and(|v| v == "true") {
        let body = parts.concat();
        parts = vec![match serde_json::from_str::<serde_json::Value>(&body) {
            Ok(v) => serde_json::to_string_pretty(&v).unwrap_or(body),
            Err(_) => body,
        }];
    }
    let body = match parts.len() {
        1 => Body::from(parts.swap_remove(0)),
        _ => {
            // Parts sent one after the other, as written; the length is known, so no chunked encoding.
            let length = parts.iter().map(String::len).sum::<usize>();
            let parts = parts.into_iter().map(|p| Ok::<_, std::convert::Infallible>(bytes::Bytes::from(p)));
            return ([(header::CONTENT_TYPE, "application/json".to_string()), (header::CONTENT_LENGTH, length.to_string())], Body::from_stream(futures::stream::iter(parts)))
                .into_response();
        }
    };
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Answers of at most this many series are freed where they were rendered, as every answer of few series
/// was before: a task costs an allocation and may wake the other thread, more than freeing a rollup's few
/// series. Chosen, not measured; above it, 100 hosts' lastpoint gained from a task (0.43 → 0.38 ms).
const FREE_IN_PLACE_SERIES_MAX: usize = 16;

/// Answers of at least this many series are freed on a blocking thread (4,000 hosts' lastpoint: about as
/// long to free as to render); between the two bounds, by a task of the runtime.
const FREE_ON_BLOCKING_THREAD_SERIES_MIN: usize = 1025;

/// Answers of at least this many cells (rows × columns) are freed on a blocking thread whatever their
/// series, while the response is sent: TSBS's high-cpu-all at 4,000 hosts is one series of 1.4 M rows of
/// 21 columns, each of its stored cells looked at as it is freed (42 ms before it was sent, on the
/// thread that sends it). Freed there with mimalloc, its queries' median fell 736–838 → 676–702 ms
/// (`bench/results/2026-11-29-xeon-runchunks/qab-high-cpu-all-free.txt`). With glibc's allocator
/// (2026-11-24) the same move had made them slower (2.0 → 2.5 s), the next query's allocations waiting
/// on the free's.
const FREE_ON_BLOCKING_THREAD_CELLS_MIN: usize = 1_000_000;

/// Nanoseconds per unit of an `epoch` parameter.
fn epoch_divisor(e: &str) -> Option<i64> {
    Some(match e {
        "ns" | "n" => 1,
        "u" | "µ" | "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// The response body. Written by hand rather than through `serde_json::Value` to keep InfluxDB's key
/// order and Go's number forms (whole floats without `.0`).
pub fn render(results: &[StatementResult], epoch: Option<i64>) -> String {
    // Sized up front from the cells and series: a body of megabytes is not copied again at every
    // doubling.
    let mut out = String::with_capacity(results.iter().map(statement_bytes).sum::<usize>() + 64);
    out.push_str("{\"results\":[");
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{{\"statement_id\":{i}");
        let n = series_count(r);
        if n > 0 {
            out.push_str(",\"series\":[");
            match parallel_split(r) {
                None => render_list(&mut out, r, 0..n, epoch),
                Some((mid, capacity)) => write_halves(
                    &mut out,
                    capacity,
                    |out| render_list(out, r, 0..mid, epoch),
                    |rest| {
                        rest.push(',');
                        render_list(rest, r, mid..n, epoch);
                    },
                ),
            }
            out.push(']');
        }
        if let Some(e) = &r.error {
            out.push_str(",\"error\":");
            push_str(&mut out, e);
        }
        out.push('}');
    }
    out.push_str("]}");
    out
}

/// Where a statement's series are split between two threads, and the bytes reserved for the second
/// half: two threads, half the series each (lastpoint's 4,000 one-row series, a 4,000-host rollup's), for
/// a statement of enough cells (the read before already ran on both cores). Not while other statements
/// are answered: they keep the other core busy.
fn parallel_split(r: &StatementResult) -> Option<(usize, usize)> {
    let cells = statement_cells(r);
    let n = series_count(r);
    (cells >= PARALLEL_WRITE_CELLS_MIN && n >= 2 && sundial_query::busy::alone()).then(|| (n / 2, statement_bytes(r) / 2))
}

/// Room reserved for a statement's JSON: per series its name, tags and column names (a series of a
/// table of one-row series too: lastpoint's halves were reserved from their cells alone, and grew, a
/// copy of most of a megabyte each), per row [`JSON_BYTES_PER_CELL`] a cell, or for rows of aggregates
/// [`JSON_BYTES_PER_TIME`] and [`JSON_BYTES_PER_AGGREGATE`] a value.
fn statement_bytes(r: &StatementResult) -> usize {
    let series_bytes = |columns: usize, row_bytes: usize, rows: usize| 64 + 16 * columns + rows * row_bytes;
    let raw_row = |columns: usize| JSON_BYTES_PER_CELL * columns;
    let listed: usize = r
        .series
        .iter()
        .map(|s| {
            let columns = s.columns.len();
            let row = match &s.values {
                Some(Values::Gathered(_)) => raw_row(columns),
                _ => JSON_BYTES_PER_TIME + JSON_BYTES_PER_AGGREGATE * columns.saturating_sub(1),
            };
            series_bytes(columns, row, s.values.as_ref().map_or(0, |v| v.len()))
        })
        .sum();
    listed + r.table.as_ref().map_or(0, |t| t.len() * series_bytes(t.columns.len(), raw_row(t.columns.len()), 1))
}

/// The cells of a statement's answer (rows × columns).
fn statement_cells(r: &StatementResult) -> usize {
    match &r.table {
        Some(t) => t.len() * t.columns.len(),
        None => r.series.iter().map(|s| s.values.as_ref().map_or(0, |v| v.len() * s.columns.len())).sum(),
    }
}

/// A statement's series: in its list, or rows of its table.
fn series_count(r: &StatementResult) -> usize {
    r.table.as_ref().map_or(r.series.len(), SeriesTable::len)
}

/// Series `range` of a statement (see [`series_count`]), comma-separated.
fn render_list(out: &mut String, r: &StatementResult, range: std::ops::Range<usize>, epoch: Option<i64>) {
    match &r.table {
        Some(t) => render_table_rows(out, t, range, epoch),
        None => render_series_list(out, &r.series[range], epoch),
    }
}

/// The body [`render`] writes, in parts sent one after the other. The answer of one statement whose
/// series are split over two threads ([`parallel_split`]) has its second half written on the runtime's
/// blocking pool, a thread kept from answer to answer (a thread started per answer began 0.14 ms after
/// the first half did, and the first half then waited for it), and sent as a part of its own instead
/// of copied behind the first (0.12 ms for lastpoint's 1.8 MB at 4,000 hosts).
///
/// One series of many gathered rows (TSBS's high-cpu-all: 4,000 hosts' 1.4 M rows in one series) is
/// split the same way by rows: [`render_series`] alone writes the second half into a string of its own
/// and then copies it behind the first (117 MB there).
async fn render_parts(results: &Arc<Vec<StatementResult>>, epoch: Option<i64>) -> Vec<String> {
    let [r] = &results[..] else { return vec![render(results, epoch)] };
    if r.error.is_some() {
        return vec![render(results, epoch)];
    }
    if let Some(g) = one_gathered(r).filter(|_| sundial_query::busy::alone()) {
        let mid = g.order.len() / 2;
        let capacity = (g.order.len() - mid) * JSON_BYTES_PER_CELL * (1 + g.columns.len());
        let all = Arc::clone(results);
        let tail = tokio::task::spawn_blocking(move || {
            let g = one_gathered(&all[0]).expect("the statement checked above");
            let mut rest = String::with_capacity(capacity + 8);
            RowWriter::new(epoch).gathered(&mut rest, g, &g.order[mid..], false);
            // As `render_series`, then `render`, close the rows, the series, the list, the statement
            // and the results.
            rest.push_str("]}]}]}");
            rest
        });
        let mut head = String::with_capacity(statement_bytes(r).saturating_sub(capacity) + 64);
        head.push_str(ONE_STATEMENT_HEAD);
        series_head(&mut head, &r.series[0], &mut None);
        head.push_str(",\"values\":[");
        RowWriter::new(epoch).gathered(&mut head, g, &g.order[..mid], true);
        return join_parts(head, tail, results, epoch).await;
    }
    let Some((mid, capacity)) = parallel_split(r) else { return vec![render(results, epoch)] };
    let all = Arc::clone(results);
    let tail = tokio::task::spawn_blocking(move || {
        let mut rest = String::with_capacity(capacity);
        rest.push(',');
        render_list(&mut rest, &all[0], mid..series_count(&all[0]), epoch);
        rest.push_str("]}]}");
        rest
    });
    let mut head = String::with_capacity(capacity + 64);
    head.push_str(ONE_STATEMENT_HEAD);
    render_list(&mut head, &results[0], 0..mid, epoch);
    join_parts(head, tail, results, epoch).await
}

/// The start of an answer of one statement with series, as [`render`] frames it: the parts of
/// [`render_parts`] follow it.
const ONE_STATEMENT_HEAD: &str = "{\"results\":[{\"statement_id\":0,\"series\":[";

/// The statement's rows when it is one series of gathered rows enough to be written by two threads
/// ([`PARALLEL_WRITE_ROWS_MIN`]).
fn one_gathered(r: &StatementResult) -> Option<&Gathered> {
    match (&r.table, &r.series[..]) {
        (None, [Series { values: Some(Values::Gathered(g)), .. }]) if g.order.len() >= PARALLEL_WRITE_ROWS_MIN => Some(g),
        _ => None,
    }
}

/// `head`, then what `tail` wrote on the blocking pool (a panic there is raised here).
async fn join_parts(head: String, tail: tokio::task::JoinHandle<String>, results: &[StatementResult], epoch: Option<i64>) -> Vec<String> {
    match tail.await {
        Ok(rest) => vec![head, rest],
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Cancelled: the runtime is shutting down, and no one waits for this answer.
            Err(_) => vec![render(results, epoch)],
        },
    }
}

/// Writes the first half of an answer into `out` on this thread while another writes the second half
/// into a string of `capacity` bytes, then appends that string (a panic on either side is re-raised).
fn write_halves(out: &mut String, capacity: usize, head: impl FnOnce(&mut String), tail: impl FnOnce(&mut String) + Send) {
    let rest = std::thread::scope(|scope| {
        let other = scope.spawn(move || {
            let mut rest = String::with_capacity(capacity);
            tail(&mut rest);
            rest
        });
        head(out);
        other.join()
    });
    match rest {
        Ok(rest) => out.push_str(&rest),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// `series`, comma-separated.
fn render_series_list(out: &mut String, series: &[Series], epoch: Option<i64>) {
    // Series of one statement share their column list (one `Arc`): rendered once, then copied.
    let mut columns: Option<(&std::sync::Arc<[String]>, String)> = None;
    let mut w = RowWriter::new(epoch);
    for (j, s) in series.iter().enumerate() {
        if j > 0 {
            out.push(',');
        }
        render_series(out, s, &mut columns, &mut w);
    }
}

/// Rows `rows` of a table, a series each, comma-separated: the JSON [`render_series`] writes for each of
/// [`SeriesTable::series`], put together from the parts every series shares (its name, its tags' keys,
/// the columns), the row's tags by their codes, and its cells.
fn render_table_rows(out: &mut String, t: &SeriesTable, rows: std::ops::Range<usize>, epoch: Option<i64>) {
    let mut head = String::from("{\"name\":");
    push_str(&mut head, &t.name);
    head.push_str(",\"tags\":{");
    let keys: Vec<(String, usize)> = t
        .group
        .iter()
        .enumerate()
        .map(|(i, (k, tag))| {
            let mut key = String::from(if i > 0 { "," } else { "" });
            push_str(&mut key, k);
            key.push(':');
            (key, *tag)
        })
        .collect();
    let mut columns = String::from("},\"columns\":[");
    push_str_list(&mut columns, &t.columns);
    columns.push_str("],\"values\":[[");
    let mut w = RowWriter::new(epoch);
    let mut tags = TagEscapes::new(t);
    for (j, r) in rows.enumerate() {
        if j > 0 {
            out.push(',');
        }
        out.push_str(&head);
        for (key, tag) in &keys {
            out.push_str(key);
            if !tags.push(out, r, *tag) {
                out.push_str("\"\"");
            }
        }
        out.push_str(&columns);
        let row = t.row(r);
        w.cell(out, &row[0]);
        for c in t.sources.iter() {
            out.push(',');
            match *c {
                Column::Tag(i) => {
                    if !tags.push(out, r, i) {
                        out.push_str("null");
                    }
                }
                Column::Cell(k) => w.cell(out, &row[k]),
            }
        }
        out.push_str("]]}");
    }
}

/// A [`SeriesTable`]'s tag values as JSON strings, each value checked for escapes once rather than once
/// per row: the rows of 4,000 hosts' lastpoint repeat a few dozen values of nine tags (their checks were
/// 5 % of its CPU), and each hostname once.
struct TagEscapes<'t> {
    table: &'t SeriesTable,
    /// Per tag, per dictionary code: 0 not checked yet, 1 copied as it is, 2 escaped.
    seen: Vec<Vec<u8>>,
}

impl<'t> TagEscapes<'t> {
    fn new(table: &'t SeriesTable) -> Self {
        TagEscapes { table, seen: table.tag_values.iter().map(|v| vec![0; v.len()]).collect() }
    }

    /// Writes the value of tag `t` of row `r` as a JSON string; `false`, writing nothing, when the row
    /// has no value for it.
    fn push(&mut self, out: &mut String, r: usize, t: usize) -> bool {
        let code = self.table.codes[r * self.table.tag_values.len() + t] as usize;
        let Some(v) = self.table.tag_values[t].get(code) else { return false };
        let seen = &mut self.seen[t][code];
        if *seen == 0 {
            *seen = if needs_escape(v) { 2 } else { 1 };
        }
        if *seen == 1 {
            out.push('"');
            out.push_str(v);
            out.push('"');
        } else {
            push_str(out, v);
        }
        true
    }
}

/// The tags of a statement's gathered chunks (shared by its series) as JSON, made for a chunk when a row
/// of it is first written: a series' tags are checked for escapes once, not once per row, and tags that
/// are neighbours in the answer (all of them in a `SELECT *` of TSBS's `cpu`) are one string, copied in one
/// go.
#[derive(Default)]
struct ChunkTags<'s> {
    of: Option<(&'s std::sync::Arc<[Chunk]>, &'s std::sync::Arc<[Column]>)>,
    /// The columns after the time as runs of neighbouring tags and single cells.
    runs: Vec<Run>,
    /// Per chunk, per run of tags: their values as JSON, comma-separated.
    json: Vec<Option<Vec<String>>>,
}

#[derive(Clone, Debug)]
enum Run {
    /// Columns of tags (these indexes of `Chunk::tags`); the `usize` numbers the run among the runs of tags.
    Tags(usize, Vec<usize>),
    /// The row's cell at this index.
    Cell(usize),
}

impl<'s> ChunkTags<'s> {
    /// Sets up for `g`'s chunks and columns when they are not the last ones: the runs of its columns
    /// (taken by the caller while it writes, then [`ChunkTags::put_runs`] back: a series of one row,
    /// lastpoint's, costs no copy of them).
    fn take_runs(&mut self, g: &'s Gathered) -> Vec<Run> {
        if !self.of.is_some_and(|(c, k)| std::sync::Arc::ptr_eq(c, &g.chunks) && std::sync::Arc::ptr_eq(k, &g.columns)) {
            self.of = Some((&g.chunks, &g.columns));
            self.json.clear();
            self.json.resize_with(g.chunks.len(), || None);
            self.runs.clear();
            let mut n_tag_runs = 0;
            for col in g.columns.iter() {
                match (*col, self.runs.last_mut()) {
                    (Column::Tag(t), Some(Run::Tags(_, tags))) => tags.push(t),
                    (Column::Tag(t), _) => {
                        self.runs.push(Run::Tags(n_tag_runs, vec![t]));
                        n_tag_runs += 1;
                    }
                    (Column::Cell(k), _) => self.runs.push(Run::Cell(k)),
                }
            }
        }
        std::mem::take(&mut self.runs)
    }

    fn put_runs(&mut self, runs: Vec<Run>) {
        self.runs = runs;
    }

    /// Writes tag run `(i, tags)` (the `i`th run of tags, these of `Chunk::tags`) of chunk `c` to `out`
    /// (`runs` from [`ChunkTags::take_runs`] for its answer). A chunk of one row (a series' last row:
    /// TSBS's lastpoint) writes its tags straight into `out`, as it is written once; a chunk of more rows
    /// makes its runs' JSON once and copies it per row.
    fn write(&mut self, out: &mut String, runs: &[Run], chunks: &[Chunk], width: usize, c: usize, (i, tags): (usize, &[usize])) {
        let tags_json = |s: &mut String, tags: &[usize]| {
            for (j, t) in tags.iter().enumerate() {
                if j > 0 {
                    s.push(',');
                }
                match &chunks[c].tags[*t] {
                    Cell::String(v) => push_str(s, v),
                    _ => s.push_str("null"),
                }
            }
        };
        if self.json[c].is_none() && chunks[c].cells.len() <= width {
            tags_json(out, tags);
            return;
        }
        let json = self.json[c].get_or_insert_with(|| {
            runs.iter()
                .filter_map(|r| match r {
                    Run::Tags(_, tags) => Some(tags),
                    Run::Cell(_) => None,
                })
                .map(|tags| {
                    let mut s = String::new();
                    tags_json(&mut s, tags);
                    s
                })
                .collect()
        });
        out.push_str(&json[i]);
    }
}

/// Room reserved per cell of an answer: TSBS's `SELECT *` rows are 21 cells in about 210 bytes (a time,
/// ten tags, ten two-digit numbers); room reserved and not written costs no memory.
const JSON_BYTES_PER_CELL: usize = 12;

/// Room reserved for a row's time in an answer of aggregates (`"2016-01-01T00:00:00Z",`: 23 bytes).
const JSON_BYTES_PER_TIME: usize = 24;

/// Room reserved per value of an answer of aggregates: means and sums are floats of up to 17 digits
/// (TSBS's double-groupby-1 at 4,000 hosts, 48,000 rows of a time and a mean, is about 45 bytes a row:
/// reserved at [`JSON_BYTES_PER_CELL`] a cell its body grew once, a copy of 1.2 MB into fresh pages).
const JSON_BYTES_PER_AGGREGATE: usize = 20;

/// Answers with at least this many gathered rows are written by two threads, half each: TSBS's
/// high-cpu-all at 4,000 hosts is 234 MB of JSON, a fifth of its time, and the read before it already
/// runs on both cores.
const PARALLEL_WRITE_ROWS_MIN: usize = 16_384;

/// Statements whose series hold at least this many cells in all are written by two threads, half the
/// series each: about half a millisecond of writing, several times what starting a thread costs.
const PARALLEL_WRITE_CELLS_MIN: usize = 20_000;

/// Rows whose cells [`touch_rows`] reads together before they are written.
const TOUCH_AHEAD_ROWS: usize = 16;

/// Reads a byte of every cache line of rows `order` of `g`, all of them before any is written. Gathered
/// rows are read in time order, hopping from series to series over hundreds of megabytes (TSBS's
/// high-cpu-all at 4,000 hosts: 1.6 M rows of 11 cells, 176 bytes each), so nearly every row's cells
/// miss the caches; written one row after the other, each row waited for its own lines (the first cell's
/// load was most of the writer's CPU). Loads that depend on nothing go out together instead. Safe Rust
/// has no prefetch instruction: this reads the lines, and `black_box` keeps the reads from being dropped.
fn touch_rows(g: &Gathered, order: &[(u32, u32)]) {
    // Cells four apart are 64 bytes apart: with the last, the start of one of them is in every 64-byte
    // line of a row (a line that starts within a cell holds the start of the next four, or the last).
    const STEP: usize = 64 / std::mem::size_of::<Cell>();
    let mut nulls = 0usize;
    for &(c, r) in order {
        let row = g.chunks[c as usize].row(r as usize, g.width);
        nulls += row.iter().step_by(STEP).chain(row.last()).filter(|cell| matches!(cell, Cell::Null)).count();
    }
    std::hint::black_box(nulls);
}

/// What writing rows keeps from row to row: the `epoch` divisor, the date last written and the
/// chunks' tags as JSON.
struct RowWriter<'s> {
    epoch: Option<i64>,
    times: sundial_query::influxql::Rfc3339Writer,
    tags: ChunkTags<'s>,
}

impl<'s> RowWriter<'s> {
    fn new(epoch: Option<i64>) -> Self {
        RowWriter { epoch, times: Default::default(), tags: ChunkTags::default() }
    }

    /// Rows `order` of `g`, each preceded by a comma but the first when `first`.
    fn gathered(&mut self, out: &mut String, g: &'s Gathered, order: &[(u32, u32)], first: bool) {
        let runs = self.tags.take_runs(g);
        for (i, &(c, r)) in order.iter().enumerate() {
            if i % TOUCH_AHEAD_ROWS == 0 {
                touch_rows(g, &order[i..(i + TOUCH_AHEAD_ROWS).min(order.len())]);
            }
            if i > 0 || !first {
                out.push(',');
            }
            let row = g.chunks[c as usize].row(r as usize, g.width);
            out.push('[');
            self.cell(out, &row[0]);
            for run in &runs {
                out.push(',');
                match run {
                    Run::Tags(i, tags) => self.tags.write(out, &runs, &g.chunks, g.width, c as usize, (*i, tags)),
                    Run::Cell(k) => self.cell(out, &row[*k]),
                }
            }
            out.push(']');
        }
        self.tags.put_runs(runs);
    }

    /// `,"values":[...]` of rows of cells.
    fn rows<'r>(&mut self, out: &mut String, rows: impl Iterator<Item = &'r [Cell]>) {
        out.push_str(",\"values\":[");
        for (i, row) in rows.enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('[');
            for (j, c) in row.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                self.cell(out, c);
            }
            out.push(']');
        }
        out.push(']');
    }

    fn cell(&mut self, out: &mut String, c: &Cell) {
        match c {
            Cell::Null | Cell::List(_) => out.push_str("null"),
            Cell::Float(v) if v.is_finite() => push_float(out, *v),
            Cell::Float(_) => out.push_str("null"),
            Cell::Integer(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Cell::UInteger(v) => out.push_str(itoa::Buffer::new().format(*v)),
            Cell::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
            Cell::String(s) => push_str(out, s),
            Cell::Time(t) => match self.epoch {
                // Go's integer division truncates toward zero.
                Some(d) => out.push_str(itoa::Buffer::new().format(t / d)),
                None => {
                    // RFC 3339 needs no escaping.
                    out.push('"');
                    self.times.write(out, *t);
                    out.push('"');
                }
            },
        }
    }
}

fn render_series<'s>(out: &mut String, s: &'s Series, columns: &mut Option<(&'s std::sync::Arc<[String]>, String)>, w: &mut RowWriter<'s>) {
    series_head(out, s, columns);
    match &s.values {
        None => {}
        Some(Values::Rows(values)) => w.rows(out, values.iter().map(Vec::as_slice)),
        Some(Values::Flat(values)) => w.rows(out, values.iter()),
        Some(Values::Gathered(g)) => {
            out.push_str(",\"values\":[");
            if g.order.len() < PARALLEL_WRITE_ROWS_MIN {
                w.gathered(out, g, &g.order, true);
            } else {
                let (head, tail) = g.order.split_at(g.order.len() / 2);
                let epoch = w.epoch;
                write_halves(
                    out,
                    tail.len() * JSON_BYTES_PER_CELL * (1 + g.columns.len()),
                    |out| w.gathered(out, g, head, true),
                    |rest| RowWriter::new(epoch).gathered(rest, g, tail, false),
                );
            }
            out.push(']');
        }
    }
    out.push('}');
}

/// A series' JSON up to its rows: `{`, its name, tags and columns (the columns' JSON kept in `columns`
/// for the next series sharing them).
fn series_head<'s>(out: &mut String, s: &'s Series, columns: &mut Option<(&'s std::sync::Arc<[String]>, String)>) {
    out.push('{');
    let mut first = true;
    let mut sep = |out: &mut String| {
        if !first {
            out.push(',');
        }
        first = false;
    };
    if !s.name.is_empty() {
        sep(out);
        out.push_str("\"name\":");
        push_str(out, &s.name);
    }
    if let Some(tags) = &s.tags {
        sep(out);
        out.push_str("\"tags\":{");
        for (i, (k, v)) in tags.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_str(out, k);
            out.push(':');
            push_str(out, v);
        }
        out.push('}');
    }
    sep(out);
    match columns {
        Some((shared, json)) if std::sync::Arc::ptr_eq(shared, &s.columns) => out.push_str(json),
        _ => {
            let mut json = String::from("\"columns\":[");
            push_str_list(&mut json, &s.columns);
            json.push(']');
            out.push_str(&json);
            *columns = Some((&s.columns, json));
        }
    }
}

/// A finite float in the shortest digits that read back as it, in `Display`'s form (never an exponent,
/// no `.0` on a whole number: Go's form for the values InfluxDB answers with). Through ryu, about twice
/// as fast as `Display`'s formatter (high-cpu-all's answers are mostly floats), and on an exact tie
/// between two shortest forms it picks Go's. ryu writes an exponent outside 1e-5..1e16: those few go
/// through `Display`.
fn push_float(out: &mut String, v: f64) {
    // Whole numbers (TSBS's CPU percentages are) as integers: faster still. Below 2^53 every integer
    // is exact, and its shortest form is its digits; -0 keeps its sign.
    if v.trunc() == v && v.abs() < 9.0e15 {
        if v == 0.0 && v.is_sign_negative() {
            out.push_str("-0");
        } else {
            out.push_str(itoa::Buffer::new().format(v as i64));
        }
        return;
    }
    let mut buf = ryu::Buffer::new();
    let s = buf.format_finite(v);
    if s.as_bytes().contains(&b'e') {
        let _ = write!(out, "{v}");
    } else {
        out.push_str(s.strip_suffix(".0").unwrap_or(s));
    }
}

/// Whether a string needs escaping in JSON.
fn needs_escape(s: &str) -> bool {
    s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20)
}

/// A JSON string. Tag values and names rarely need escaping: those are copied as they are, the rest
/// go through serde_json.
fn push_str(out: &mut String, s: &str) {
    if needs_escape(s) {
        out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into()));
    } else {
        out.push('"');
        out.push_str(s);
        out.push('"');
    }
}

/// JSON strings, comma-separated.
fn push_str_list(out: &mut String, items: &[String]) {
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_str(out, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `push_float` writes the shortest digits that read back as the value, in `Display`'s form (no
    /// exponent, no `.0`), over whole numbers, both ends of ryu's decimal range, subnormals, signed
    /// zeros and random bit patterns. Where two shortest forms are equally near (exact halves, only
    /// above 2^50 or so) ryu takes the even digit as Go's `strconv` (InfluxDB's JSON) does and
    /// `Display` the other: checked against Go's answer for one such value.
    #[test]
    fn floats_render_shortest_in_display_form() {
        let mut vals = vec![0.0, -0.0, 1.0, -1.0, 58.0, 0.1, 0.3, 1e-5, 9.99e-6, 1e-7, 1e15, 1e16, 9.9e15, 1.5e16, 1e21, 1e22, -2.5e-8];
        vals.extend([f64::MAX, f64::MIN, f64::MIN_POSITIVE, f64::EPSILON, 5e-324, 123456789012345680.0, 100.0 / 3.0]);
        // Whole numbers, on both sides of the integer fast path's bound (9e15).
        vals.extend((-1000..1000).map(f64::from));
        vals.extend([8_999_999_999_999_999.0, 9e15, 9_000_000_000_000_002.0, 9_007_199_254_740_992.0, -9e15, 1e17]);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = if i % 2 == 0 { f64::from_bits(x) } else { (x % 10_000_000) as f64 / 99_991.7 };
            if v.is_finite() {
                vals.push(v);
            }
        }
        let (mut ties, mut same) = (0, 0);
        for v in vals {
            let mut got = String::new();
            push_float(&mut got, v);
            let display = format!("{v}");
            assert_eq!(got.parse::<f64>().map(f64::to_bits), Ok(v.to_bits()), "{got} reads back as another value");
            assert_eq!(got.len(), display.len(), "{got} against {display}: not as short, or not in the same form");
            if got == display {
                same += 1;
            } else {
                ties += 1;
            }
        }
        assert!(ties < same / 100, "{ties} values differ from Display");
        // Go: strconv.FormatFloat(math.Float64frombits(0x43180467b3a7ed6d), 'f', -1, 64), and json.Marshal.
        let mut got = String::new();
        push_float(&mut got, f64::from_bits(0x4318_0467_b3a7_ed6d));
        assert_eq!(got, "1690060720831323.2");
    }

    #[test]
    fn series_sharing_a_column_list_render_it_each() {
        let shared: std::sync::Arc<[String]> = vec!["time".to_string(), "a\"b".to_string()].into();
        let other: std::sync::Arc<[String]> = vec!["time".to_string(), "c".to_string()].into();
        let series = |columns: &std::sync::Arc<[String]>, v: i64| Series {
            name: "m".into(),
            tags: None,
            columns: columns.clone(),
            values: Some(Values::Rows(vec![vec![Cell::Time(0), Cell::Integer(v)]])),
        };
        let r = vec![StatementResult::series(vec![series(&shared, 1), series(&shared, 2), series(&other, 3), series(&shared, 4)])];
        let row = |cols: &str, v: i64| format!(r#"{{"name":"m","columns":[{cols}],"values":[["1970-01-01T00:00:00Z",{v}]]}}"#);
        let (ab, c) = (r#""time","a\"b""#, r#""time","c""#);
        assert_eq!(
            render(&r, None),
            format!(r#"{{"results":[{{"statement_id":0,"series":[{},{},{},{}]}}]}}"#, row(ab, 1), row(ab, 2), row(c, 3), row(ab, 4))
        );
    }

    /// A statement with enough cells is written by two threads, half its series each: the same JSON,
    /// series by series, as one thread writes (each series checked against its own rendering).
    #[test]
    fn many_series_render_as_one_by_one() {
        let columns: std::sync::Arc<[String]> = vec!["time".to_string(), "v".to_string()].into();
        let n = PARALLEL_WRITE_CELLS_MIN / 2 + 7; // one row of two cells each
        let one = |i: usize| Series {
            name: "m".into(),
            tags: Some(vec![("host".into(), format!("h{i}"))]),
            columns: columns.clone(),
            values: Some(Values::Rows(vec![vec![Cell::Time(i as i64 * 1_000_000_000), Cell::Float(i as f64 / 4.0)]])),
        };
        let all: Vec<Series> = (0..n).map(one).collect();
        let each: Vec<String> = (0..n)
            .map(|i| {
                let alone = render(&[StatementResult::series(vec![one(i)])], None);
                alone[r#"{"results":[{"statement_id":0,"series":["#.len()..alone.len() - "]}]}".len()].to_string()
            })
            .collect();
        let want = format!(r#"{{"results":[{{"statement_id":0,"series":[{}]}}]}}"#, each.join(","));
        assert_eq!(render(&[StatementResult::series(all.clone())], None), want);
        // The handler's parts (the second half written on the blocking pool when no other statement
        // is answered, else the one body) put together are the same body.
        let results = Arc::new(vec![StatementResult::series(all)]);
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
        let parts = runtime.block_on(render_parts(&results, None));
        assert!((1..=2).contains(&parts.len()), "{} parts", parts.len());
        assert_eq!(parts.concat(), want);
    }

    /// A table of series (one row each, tags by dictionary code) renders as its series do one by one:
    /// tags needing escapes, a missing group tag ('') and a missing column tag (null), two group tags,
    /// `epoch`, and a table large enough to be written in halves (and sent in parts).
    #[test]
    fn a_series_table_renders_as_its_series() {
        use sundial_query::influx::values::NO_CODE;
        let table = |rows: usize| {
            let hosts: std::sync::Arc<[sundial_query::influx::ArcStr]> = (0..rows).map(|i| format!("h\"{i}").into()).collect();
            let regions: std::sync::Arc<[sundial_query::influx::ArcStr]> = vec!["r0".into(), "r\\1".into()].into();
            let mut codes = Vec::new();
            let mut cells = Vec::new();
            for i in 0..rows {
                codes.extend([if i % 5 == 3 { NO_CODE } else { i as u32 }, [0, 1, NO_CODE][i % 3]]);
                let v = if i % 4 == 1 { Cell::Null } else { Cell::Float(i as f64 / 8.0) };
                cells.extend([Cell::Time(i as i64 * 1_000_000_007), v, Cell::Integer(-(i as i64))]);
            }
            SeriesTable {
                name: "m\"x".into(),
                group: vec![("host".into(), 0), ("region".into(), 1)],
                columns: vec!["time".into(), "region".into(), "v".into(), "w".into(), "v".into()].into(),
                sources: vec![Column::Tag(1), Column::Cell(1), Column::Cell(2), Column::Cell(1)].into(),
                tag_values: vec![hosts, regions],
                width: 3,
                codes,
                cells,
            }
        };
        for rows in [0, 1, 7, PARALLEL_WRITE_CELLS_MIN / 5 + 3] {
            let tabled = StatementResult { series: Vec::new(), table: Some(table(rows)), error: None };
            let mut expanded = tabled.clone();
            expanded.expand();
            assert_eq!(expanded.series.len(), rows);
            for epoch in [None, Some(1), Some(1_000_000_000)] {
                let two = |r: &StatementResult| vec![r.clone(), StatementResult::series(Vec::new())];
                assert_eq!(render(&two(&tabled), epoch), render(&two(&expanded), epoch), "{rows} rows, epoch {epoch:?}");
                let want = render(std::slice::from_ref(&expanded), epoch);
                assert_eq!(render(std::slice::from_ref(&tabled), epoch), want, "{rows} rows, epoch {epoch:?}");
                let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
                let parts = runtime.block_on(render_parts(&Arc::new(vec![tabled.clone()]), epoch));
                assert_eq!(parts.concat(), want, "{rows} rows in {} parts, epoch {epoch:?}", parts.len());
            }
        }
    }

    /// Gathered rows (tags held per chunk, written from JSON made once per chunk) render as the same
    /// rows as vectors do: tags between fields and repeated, a tag needing escapes, a missing tag, two
    /// series sharing the chunks, rows of one chunk apart.
    #[test]
    fn gathered_rows_render_as_their_rows_do() {
        use sundial_query::influx::values::Gathered;
        let s = |v: &str| Cell::String(v.into());
        let chunks: std::sync::Arc<[Chunk]> = vec![
            Chunk { tags: vec![s("a\"b"), s("x")], cells: vec![Cell::Time(10), Cell::Float(1.5), Cell::Null, Cell::Time(30), Cell::Integer(3), Cell::Float(0.25)] },
            Chunk { tags: vec![s("c"), Cell::Null], cells: vec![Cell::Time(20), Cell::Null, Cell::Integer(-2)] },
        ]
        .into();
        // Tags apart and repeated; then neighbouring tags (one run, as SELECT * has them) between cells.
        let layouts: [Vec<Column>; 2] = [
            vec![Column::Tag(1), Column::Cell(2), Column::Tag(0), Column::Cell(1), Column::Tag(1)],
            vec![Column::Cell(1), Column::Tag(0), Column::Tag(1), Column::Tag(0), Column::Cell(2), Column::Tag(1)],
        ];
        for layout in layouts {
            let n_columns = layout.len();
            let columns: std::sync::Arc<[Column]> = layout.into();
            let names: std::sync::Arc<[String]> = (0..=n_columns).map(|c| format!("c{c}")).collect();
            let series = |order: Vec<(u32, u32)>| {
                let g = Values::Gathered(Gathered { chunks: chunks.clone(), width: 3, columns: columns.clone(), order });
                let rows = Values::Rows(g.rows().into_owned());
                let one = |values| Series { name: "m".into(), tags: None, columns: names.clone(), values: Some(values) };
                (one(g), one(rows))
            };
            let (g1, r1) = series(vec![(0, 0), (1, 0), (0, 1)]);
            let (g2, r2) = series(vec![(1, 0), (0, 1)]);
            let gathered = vec![StatementResult::series(vec![g1, g2])];
            let rows = vec![StatementResult::series(vec![r1, r2])];
            for epoch in [None, Some(1)] {
                assert_eq!(render(&gathered, epoch), render(&rows, epoch));
            }
            if n_columns == 5 {
                assert!(render(&gathered, None).contains(r#"["1970-01-01T00:00:00.00000002Z",null,-2,"c",null,null]"#), "{}", render(&gathered, None));
                assert!(render(&gathered, Some(1)).contains(r#"[10,"x",null,"a\"b",1.5,"x"]"#), "{}", render(&gathered, Some(1)));
            } else {
                assert!(render(&gathered, Some(1)).contains(r#"[10,1.5,"a\"b","x","a\"b",null,"x"]"#), "{}", render(&gathered, Some(1)));
            }

            // Enough rows to be written by two threads: the halves join where the rows do.
            let n = PARALLEL_WRITE_ROWS_MIN as u32 + 3;
            let big: Vec<(u32, u32)> = (0..n).map(|i| if i % 2 == 0 { (0, (i / 2) % 2) } else { (1, 0) }).collect();
            let (g, r) = series(big);
            let (gathered, rows) = (vec![StatementResult::series(vec![g])], vec![StatementResult::series(vec![r])]);
            let gathered = Arc::new(gathered);
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
            for epoch in [None, Some(1)] {
                let (a, b) = (render(&gathered, epoch), render(&rows, epoch));
                assert_eq!(a.len(), b.len());
                assert!(a == b, "the two-thread answer differs from the row form's");
                // The handler's parts: the second half written on the blocking pool and sent after the
                // first, not copied behind it.
                let parts = runtime.block_on(render_parts(&gathered, epoch));
                assert_eq!(parts.len(), 2);
                assert!(parts.concat() == b, "the parts differ from the row form's answer");
            }
        }
    }

    #[test]
    fn renders_influxdb_shape() {
        let r = vec![
            StatementResult::series(vec![Series {
                name: "cpu".into(),
                tags: Some(vec![("host".into(), "a".into())]),
                columns: vec!["time".to_string(), "max".to_string()].into(),
                values: Some(Values::Rows(vec![vec![Cell::Time(1_500_000_000), Cell::Float(3.0)], vec![Cell::Time(0), Cell::Null]])),
            }]),
            StatementResult::default(),
            StatementResult::error("boom"),
        ];
        assert_eq!(
            render(&r, None),
            r#"{"results":[{"statement_id":0,"series":[{"name":"cpu","tags":{"host":"a"},"columns":["time","max"],"values":[["1970-01-01T00:00:01.5Z",3],["1970-01-01T00:00:00Z",null]]}]},{"statement_id":1},{"statement_id":2,"error":"boom"}]}"#
        );
        assert!(render(&r, Some(1_000_000)).contains("[1500,3]"));
    }
}
