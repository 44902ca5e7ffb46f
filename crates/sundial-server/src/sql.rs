//! `GET|POST /api/v1/sql?db=&q=&format=json|csv`: SQL through DataFusion.
//!
//! The statement comes from `q` (query string or form body) or, for POST with any other content type,
//! the raw body. JSON answers are an array of row objects (`[{"time": "...", "host": "a", ...}]`),
//! timestamps as RFC 3339 strings; CSV answers have a header line.

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use sundial_query::QueryOutput;
use sundial_query::datafusion::arrow;

use crate::AppState;
use crate::errors::{error_response, query_error};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
}

pub fn format_of(params: &HashMap<String, String>, accept: Option<&str>) -> Result<Format, String> {
    match params.get("format").map(String::as_str) {
        Some("json") => Ok(Format::Json),
        Some("csv") => Ok(Format::Csv),
        Some(other) => Err(format!("unknown format {other:?}: expected json or csv")),
        None if accept.is_some_and(|a| a.contains("text/csv")) => Ok(Format::Csv),
        None => Ok(Format::Json),
    }
}

pub async fn run_sql(state: Arc<AppState>, db: Option<String>, q: String, format: Format) -> Response {
    let out = match state.query.sql(db.as_deref(), &q).await {
        Ok(out) => out,
        Err(e) => return query_error(&e),
    };
    match render(&out, format) {
        Ok((body, ct)) => ([(header::CONTENT_TYPE, ct)], body).into_response(),
        Err(e) => error_response(StatusCode::INTERNAL_SERVER_ERROR, format!("encoding the result failed: {e}")),
    }
}

fn render(out: &QueryOutput, format: Format) -> Result<(Vec<u8>, &'static str), arrow::error::ArrowError> {
    let mut buf = Vec::new();
    match format {
        Format::Json => {
            let mut w = arrow::json::ArrayWriter::new(&mut buf);
            for b in &out.batches {
                w.write(b)?;
            }
            w.finish()?;
            drop(w);
            if buf.is_empty() {
                buf.extend_from_slice(b"[]");
            }
            Ok((buf, "application/json"))
        }
        Format::Csv => {
            let mut w = arrow::csv::WriterBuilder::new().with_header(true).build(&mut buf);
            if out.batches.is_empty() && !out.schema.fields().is_empty() {
                let empty = arrow::array::RecordBatch::new_empty(out.schema.clone());
                w.write(&empty)?;
            }
            for b in &out.batches {
                w.write(b)?;
            }
            drop(w);
            Ok((buf, "text/csv"))
        }
    }
}
