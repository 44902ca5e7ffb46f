//! Errors of the storage engine.
//!
//! Variants separate "the caller asked for something wrong" (unknown database, type conflict, limit) from
//! "the disk or the engine failed" (I/O, corruption, internal). Each carries the context needed to act on it.

use std::path::PathBuf;

use crate::types::FieldType;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("database not found: \"{name}\"")]
    DatabaseNotFound { name: String },

    #[error("database already exists: \"{name}\"")]
    DatabaseExists { name: String },

    #[error("table not found: \"{table}\" in database \"{db}\"")]
    TableNotFound { db: String, table: String },

    #[error("invalid name {name:?}: {reason}")]
    InvalidName { name: String, reason: &'static str },

    #[error(
        "field type conflict: input field \"{field}\" on measurement \"{table}\" is type {got}, already exists as type {existing}"
    )]
    FieldTypeConflict { table: String, field: String, got: &'static str, existing: &'static str },

    #[error("column \"{name}\" of table \"{table}\" is a tag here but a field elsewhere (or the reverse)")]
    ColumnKindConflict { table: String, name: String },

    #[error(
        "points beyond retention policy: timestamp {ts} is older than {cutoff} (now minus the {retention_ns} ns retention of database \"{db}\"), so it would never be returned; write newer points or raise the retention"
    )]
    BeyondRetention { db: String, ts: i64, cutoff: i64, retention_ns: i64 },

    #[error("invalid argument: {what}; {fix}")]
    InvalidArgument { what: String, fix: &'static str },

    #[error("limit exceeded: {what} ({actual} > {limit}); {fix}")]
    LimitExceeded { what: &'static str, actual: u64, limit: u64, fix: &'static str },

    /// A row whose tags the caller left out (`WritePoint::known`) cannot be written without them:
    /// nothing of the write was applied. Not the client's error: the caller writes again with tags.
    #[error(
        "line {line}: its series key named a table that was dropped since, or it has a field without a column of its type yet; write the rows again with their tags"
    )]
    TagsNeeded { line: usize },

    #[error("write refused: {reason}; retry later")]
    Overloaded { reason: String },

    #[error("I/O error on {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },

    #[error("corrupt data in {path} at byte {offset}: {what}")]
    Corrupt { path: PathBuf, offset: u64, what: String },

    #[error("unsupported format version {version} in {path} (this build reads {supported}); {fix}")]
    UnsupportedVersion { path: PathBuf, version: u32, supported: String, fix: &'static str },

    #[error("the storage engine failed earlier and is read-only until restarted: {0}")]
    Poisoned(String),

    #[error("internal error (a bug, please report it) at {location}: {what}")]
    Internal { what: String, location: &'static std::panic::Location<'static> },
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), source }
    }

    #[track_caller]
    pub fn internal(what: impl Into<String>) -> Error {
        Error::Internal { what: what.into(), location: std::panic::Location::caller() }
    }

    pub fn type_conflict(table: &str, field: &str, got: FieldType, existing: FieldType) -> Error {
        Error::FieldTypeConflict {
            table: table.to_string(),
            field: field.to_string(),
            got: got.influx_name(),
            existing: existing.influx_name(),
        }
    }

    /// True when the caller sent something wrong (as opposed to a server-side failure).
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            Error::DatabaseNotFound { .. }
                | Error::DatabaseExists { .. }
                | Error::TableNotFound { .. }
                | Error::InvalidName { .. }
                | Error::FieldTypeConflict { .. }
                | Error::ColumnKindConflict { .. }
                | Error::LimitExceeded { .. }
                | Error::InvalidArgument { .. }
                | Error::BeyondRetention { .. }
        )
    }
}
