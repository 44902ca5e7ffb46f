//! The HTTP router and the small endpoints (`/ping`, `/health`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use crate::AppState;
use crate::errors::error_response;
use crate::sql::{Format, format_of, run_sql};
use crate::write::{precision_multiplier, read_body, write_lines};

type Params = Query<HashMap<String, String>>;

pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/ping", get(ping).head(ping))
        .route("/health", get(health))
        .route("/debug/vars", get(debug_vars))
        .route("/write", post(write_v1))
        .route("/api/v2/write", post(write_v2))
        .route("/api/v1/sql", get(sql_get).post(sql_post))
        .route("/query", get(crate::influx::query_get).post(crate::influx::query_post))
        .layer(DefaultBodyLimit::disable())
        .layer(axum::middleware::map_response(version_headers))
        .with_state(state)
}

async fn version_headers(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert("X-Influxdb-Version", HeaderValue::from_static("1.8.10"));
    h.insert("X-Influxdb-Build", HeaderValue::from_static("OSS"));
    h.insert("X-Sundial-Version", HeaderValue::from_static(crate::VERSION));
    r
}

async fn ping() -> StatusCode {
    StatusCode::NO_CONTENT
}

async fn health() -> Response {
    axum::Json(json!({ "name": "sundial", "status": "pass", "message": "ready for queries and writes", "version": crate::VERSION }))
        .into_response()
}

/// Memory held by the parts that grow with the data, as InfluxDB's `/debug/vars` does for its own:
/// the memtables, the series catalog and the block-index cache (issue 5's bounded-memory figures), plus
/// whether compaction is busy or behind (`bench/compare` waits for it before measuring the settled state),
/// and what writes waited for (another write's turn, the flush when it was behind, the WAL's fsync).
async fn debug_vars(State(state): State<Arc<AppState>>) -> Response {
    let (memtable_rows, memtable_bytes) = state.engine.memtable_usage();
    let (series, catalog_series_bytes) = {
        let cat = state.engine.catalog();
        let series: u64 = cat.dbs().iter().map(|d| d.series_count()).sum();
        (series, cat.series_heap_bytes())
    };
    let c = state.engine.block_index_cache_stats();
    let compaction = state.engine.compaction_status();
    let (last_values_tables, last_values_bytes) = sundial_storage::last_values::stats();
    let pages = sundial_storage::codec::page_cache::stats();
    let w = state.engine.write_waits();
    axum::Json(json!({
        "sundial": {
            "memtable_rows": memtable_rows,
            "memtable_bytes": memtable_bytes,
            "series": series,
            "catalog_series_bytes": catalog_series_bytes,
            "block_index_cache": {
                "bytes": c.bytes, "capacity": c.capacity, "entries": c.entries,
                "hits": c.hits, "misses": c.misses, "evictions": c.evictions,
            },
            "last_values": { "tables": last_values_tables, "bytes": last_values_bytes },
            "decoded_pages": {
                "entries": pages.entries, "bytes": pages.bytes, "capacity": pages.capacity,
                "hits": pages.hits, "misses": pages.misses,
            },
            "compaction": {
                "running": compaction.running, "pending": compaction.pending,
                "write_cold_later": compaction.write_cold_later,
            },
            "writes": {
                "count": w.writes, "lock_seconds": w.lock_secs, "stalled": w.stalled_writes,
                "stall_seconds": w.stall_secs, "durable_seconds": w.durable_secs,
            },
        }
    }))
    .into_response()
}

async fn write_common(state: Arc<AppState>, db: Option<&String>, precision: Option<&str>, headers: HeaderMap, body: Body) -> Response {
    let Some(db) = db.filter(|d| !d.is_empty()).cloned() else {
        return error_response(StatusCode::BAD_REQUEST, "database is required (`db=` or `bucket=` parameter)");
    };
    let multiplier = match precision_multiplier(precision) {
        Ok(m) => m,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, e),
    };
    let bytes = match read_body(body, &headers, state.config.max_body_bytes).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    tokio::task::spawn_blocking(move || write_lines(&state, &db, &bytes, multiplier))
        .await
        .unwrap_or_else(|e| error_response(StatusCode::INTERNAL_SERVER_ERROR, format!("write task failed: {e}")))
}

async fn write_v1(State(state): State<Arc<AppState>>, Query(p): Params, headers: HeaderMap, body: Body) -> Response {
    write_common(state, p.get("db"), p.get("precision").map(String::as_str), headers, body).await
}

async fn write_v2(State(state): State<Arc<AppState>>, Query(p): Params, headers: HeaderMap, body: Body) -> Response {
    write_common(state, p.get("bucket"), p.get("precision").map(String::as_str), headers, body).await
}

fn sql_request(p: &HashMap<String, String>, headers: &HeaderMap, body_q: Option<String>) -> Result<(Option<String>, String, Format), Response> {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = format_of(p, accept).map_err(|e| error_response(StatusCode::BAD_REQUEST, e))?;
    let q = p.get("q").cloned().or(body_q).filter(|q| !q.trim().is_empty());
    let q = q.ok_or_else(|| error_response(StatusCode::BAD_REQUEST, "missing required parameter \"q\" (the SQL text)"))?;
    Ok((p.get("db").filter(|d| !d.is_empty()).cloned(), q, format))
}

async fn sql_get(State(state): State<Arc<AppState>>, Query(p): Params, headers: HeaderMap) -> Response {
    match sql_request(&p, &headers, None) {
        Ok((db, q, f)) => run_sql(state, db, q, f).await,
        Err(r) => r,
    }
}

async fn sql_post(State(state): State<Arc<AppState>>, Query(mut p): Params, headers: HeaderMap, body: Body) -> Response {
    let bytes = match read_body(body, &headers, state.config.max_body_bytes).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let mut body_q = None;
    if form {
        for (k, v) in url_form(&bytes) {
            p.entry(k).or_insert(v);
        }
    } else if !bytes.is_empty() {
        match String::from_utf8(bytes.to_vec()) {
            Ok(s) => body_q = Some(s),
            Err(_) => return error_response(StatusCode::BAD_REQUEST, "the request body is not valid UTF-8"),
        }
    }
    match sql_request(&p, &headers, body_q) {
        Ok((db, q, f)) => run_sql(state, db, q, f).await,
        Err(r) => r,
    }
}

/// Decodes an `application/x-www-form-urlencoded` body.
pub fn url_form(body: &[u8]) -> Vec<(String, String)> {
    serde_urlencoded::from_bytes::<Vec<(String, String)>>(body).unwrap_or_default()
}
