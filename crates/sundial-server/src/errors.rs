//! Every error the server can answer with, mapped to an HTTP status and a JSON body in one place.
//!
//! Bodies follow InfluxDB 1.x (`{"error": "..."}`) so its clients and tools understand them; Sundial adds
//! fields where it knows more (line numbers, counts).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use sundial_query::QueryError;
use sundial_storage::Error as StorageError;

/// HTTP status for a storage error. Exhaustive on purpose: a new variant must get a decision here.
pub fn storage_status(e: &StorageError) -> StatusCode {
    match e {
        StorageError::DatabaseNotFound { .. } | StorageError::TableNotFound { .. } => StatusCode::NOT_FOUND,
        StorageError::DatabaseExists { .. } => StatusCode::CONFLICT,
        StorageError::InvalidName { .. }
        | StorageError::FieldTypeConflict { .. }
        | StorageError::ColumnKindConflict { .. }
        | StorageError::LimitExceeded { .. }
        | StorageError::InvalidArgument { .. }
        | StorageError::BeyondRetention { .. } => StatusCode::BAD_REQUEST,
        StorageError::Overloaded { .. } => StatusCode::SERVICE_UNAVAILABLE,
        StorageError::Io { .. }
        | StorageError::Corrupt { .. }
        | StorageError::UnsupportedVersion { .. }
        | StorageError::Poisoned(_)
        | StorageError::Internal { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

pub fn query_status(e: &QueryError) -> StatusCode {
    match e {
        QueryError::Storage(s) => storage_status(s),
        QueryError::DataFusion(d) => match is_storage(d.find_root()) {
            Some(s) => storage_status(s),
            None if e.is_user_error() => StatusCode::BAD_REQUEST,
            None => StatusCode::INTERNAL_SERVER_ERROR,
        },
        QueryError::Unsupported(_) => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

fn is_storage(e: &sundial_query::datafusion::common::DataFusionError) -> Option<&StorageError> {
    match e {
        sundial_query::datafusion::common::DataFusionError::External(inner) => inner.downcast_ref::<StorageError>(),
        _ => None,
    }
}

/// A JSON error response.
pub fn error_response(status: StatusCode, message: impl Into<String>) -> Response {
    let mut r = (status, axum::Json(json!({ "error": message.into() }))).into_response();
    if status == StatusCode::SERVICE_UNAVAILABLE {
        r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

pub fn storage_error(e: &StorageError) -> Response {
    let status = storage_status(e);
    if status.is_server_error() {
        tracing::error!(error = %e, "request failed");
    }
    error_response(status, e.to_string())
}

pub fn query_error(e: &QueryError) -> Response {
    let status = query_status(e);
    if status.is_server_error() {
        tracing::error!(error = %e, "query failed");
    }
    error_response(status, e.to_string())
}
