//! Every error the PostgreSQL front end can answer with, mapped to a SQLSTATE in one place.
//!
//! The HTTP front end maps the same errors to statuses in `crate::errors`; this module is its twin for the
//! wire protocol. Matches over Sundial's own enums are exhaustive (a new variant needs a decision here);
//! DataFusion's errors are classified by variant and, where DataFusion only has a string (a missing table,
//! a missing function), by its message.

use pgwire::error::{ErrorInfo, SEVERITY_ERROR, SEVERITY_FATAL};
use sundial_query::QueryError;
use sundial_query::datafusion::common::{DataFusionError, SchemaError};
use sundial_query::datafusion::sql::sqlparser::parser::ParserError;
use sundial_storage::Error as StorageError;

/// SQLSTATE codes Sundial sends (PostgreSQL appendix A).
pub mod code {
    pub const SUCCESSFUL: &str = "00000";
    pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
    pub const INVALID_CATALOG_NAME: &str = "3D000";
    pub const SYNTAX_ERROR: &str = "42601";
    pub const UNDEFINED_TABLE: &str = "42P01";
    pub const UNDEFINED_COLUMN: &str = "42703";
    pub const UNDEFINED_FUNCTION: &str = "42883";
    pub const UNDEFINED_OBJECT: &str = "42704";
    pub const DUPLICATE_DATABASE: &str = "42P04";
    pub const AMBIGUOUS_COLUMN: &str = "42702";
    pub const DUPLICATE_COLUMN: &str = "42701";
    pub const DATATYPE_MISMATCH: &str = "42804";
    pub const INVALID_NAME: &str = "42602";
    pub const INVALID_PARAMETER_VALUE: &str = "22023";
    pub const INVALID_TEXT_REPRESENTATION: &str = "22P02";
    pub const INVALID_DATETIME_FORMAT: &str = "22007";
    pub const DATA_EXCEPTION: &str = "22000";
    pub const DIVISION_BY_ZERO: &str = "22012";
    pub const NUMERIC_VALUE_OUT_OF_RANGE: &str = "22003";
    pub const NOT_NULL_VIOLATION: &str = "23502";
    pub const PROTOCOL_VIOLATION: &str = "08P01";
    pub const INVALID_SQL_STATEMENT_NAME: &str = "26000";
    pub const INVALID_CURSOR_NAME: &str = "34000";
    pub const IN_FAILED_TRANSACTION: &str = "25P02";
    pub const INVALID_PASSWORD: &str = "28P01";
    pub const INVALID_AUTHORIZATION: &str = "28000";
    pub const QUERY_CANCELED: &str = "57014";
    pub const PROGRAM_LIMIT_EXCEEDED: &str = "54000";
    pub const INSUFFICIENT_RESOURCES: &str = "53000";
    pub const OUT_OF_MEMORY: &str = "53200";
    pub const IO_ERROR: &str = "58030";
    pub const DATA_CORRUPTED: &str = "XX001";
    pub const INTERNAL_ERROR: &str = "XX000";
    pub const QUERY_COPY_FAILED: &str = "57014";
}

/// One ErrorResponse to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgError {
    pub fatal: bool,
    pub code: &'static str,
    pub message: String,
    /// 1-based character offset into the query text (the `P` field: psql draws a caret under it).
    pub position: Option<usize>,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

impl PgError {
    pub fn new(code: &'static str, message: impl Into<String>) -> PgError {
        PgError {
            fatal: false,
            code,
            message: message.into(),
            position: None,
            detail: None,
            hint: None,
        }
    }

    pub fn fatal(code: &'static str, message: impl Into<String>) -> PgError {
        PgError {
            fatal: true,
            ..PgError::new(code, message)
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> PgError {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_position(mut self, position: Option<usize>) -> PgError {
        self.position = position;
        self
    }

    pub fn unsupported(what: impl Into<String>) -> PgError {
        PgError::new(code::FEATURE_NOT_SUPPORTED, what)
    }

    pub fn protocol(what: impl Into<String>) -> PgError {
        PgError::new(code::PROTOCOL_VIOLATION, what)
    }

    pub fn canceled() -> PgError {
        PgError::new(
            code::QUERY_CANCELED,
            "canceling statement due to user request",
        )
    }

    pub fn internal(what: impl std::fmt::Display) -> PgError {
        PgError::new(
            code::INTERNAL_ERROR,
            format!("internal error (a bug, please report it): {what}"),
        )
    }

    pub fn is_server_side(&self) -> bool {
        matches!(
            self.code,
            code::INTERNAL_ERROR | code::IO_ERROR | code::DATA_CORRUPTED
        )
    }

    pub fn into_info(self) -> ErrorInfo {
        let severity = if self.fatal {
            SEVERITY_FATAL
        } else {
            SEVERITY_ERROR
        };
        let mut info = ErrorInfo::new(severity.to_string(), self.code.to_string(), self.message);
        info.position = self.position.map(|p| p.to_string());
        info.detail = self.detail;
        info.hint = self.hint;
        info
    }
}

/// SQLSTATE for a storage error. Exhaustive on purpose: a new variant must get a decision here.
pub fn storage_code(e: &StorageError) -> &'static str {
    match e {
        StorageError::DatabaseNotFound { .. } => code::INVALID_CATALOG_NAME,
        StorageError::TableNotFound { .. } => code::UNDEFINED_TABLE,
        StorageError::DatabaseExists { .. } => code::DUPLICATE_DATABASE,
        StorageError::InvalidName { .. } => code::INVALID_NAME,
        StorageError::FieldTypeConflict { .. } | StorageError::ColumnKindConflict { .. } => {
            code::DATATYPE_MISMATCH
        }
        StorageError::LimitExceeded { .. } => code::PROGRAM_LIMIT_EXCEEDED,
        StorageError::Overloaded { .. } => code::INSUFFICIENT_RESOURCES,
        StorageError::Io { .. } => code::IO_ERROR,
        StorageError::Corrupt { .. } | StorageError::UnsupportedVersion { .. } => {
            code::DATA_CORRUPTED
        }
        StorageError::Poisoned(_) | StorageError::Internal { .. } => code::INTERNAL_ERROR,
        _ => code::INTERNAL_ERROR,
    }
}

pub fn from_storage(e: &StorageError) -> PgError {
    let err = PgError::new(storage_code(e), e.to_string());
    match e {
        StorageError::Overloaded { .. } => {
            err.with_hint("the server is flushing; retry the write in a moment")
        }
        _ => err,
    }
}

pub fn from_query(e: &QueryError, sql: &str) -> PgError {
    match e {
        QueryError::Storage(s) => from_storage(s),
        QueryError::DataFusion(d) => from_datafusion(d, sql),
        QueryError::Unsupported(m) => PgError::unsupported(m.clone()),
        _ => PgError::internal(e),
    }
}

/// SQLSTATE and position for a DataFusion error.
pub fn from_datafusion(e: &DataFusionError, sql: &str) -> PgError {
    let position = e
        .diagnostic()
        .and_then(|d| d.span)
        .map(|s| char_offset(sql, s.start.line as usize, s.start.column as usize));
    let root = e.find_root();
    let message = clean_message(&root.to_string());
    let code = match root {
        DataFusionError::SQL(p, _) => {
            let (ParserError::ParserError(m) | ParserError::TokenizerError(m)) = p.as_ref() else {
                return PgError::new(code::PROGRAM_LIMIT_EXCEEDED, message);
            };
            let pos = position.or_else(|| parser_position(m, sql));
            let text = m.rfind(" at Line: ").map_or(m.as_str(), |i| &m[..i]);
            return PgError::new(code::SYNTAX_ERROR, format!("syntax error: {text}"))
                .with_position(pos);
        }
        DataFusionError::SchemaError(s, _) => match s.as_ref() {
            SchemaError::FieldNotFound { .. } => code::UNDEFINED_COLUMN,
            SchemaError::AmbiguousReference { .. } => code::AMBIGUOUS_COLUMN,
            SchemaError::DuplicateQualifiedField { .. }
            | SchemaError::DuplicateUnqualifiedField { .. } => code::DUPLICATE_COLUMN,
        },
        DataFusionError::Plan(m) => {
            // PostgreSQL's wording, which tools match on: relation "x" does not exist.
            if let Some(name) = m
                .strip_prefix("table '")
                .and_then(|r| r.strip_suffix("' not found"))
            {
                let short = name.rsplit('.').next().unwrap_or(name);
                return PgError::new(
                    code::UNDEFINED_TABLE,
                    format!("relation \"{short}\" does not exist"),
                )
                .with_position(position);
            }
            plan_code(m)
        }
        DataFusionError::NotImplemented(_) => code::FEATURE_NOT_SUPPORTED,
        DataFusionError::Configuration(_) => code::INVALID_PARAMETER_VALUE,
        DataFusionError::ArrowError(a, _) => arrow_code(&a.to_string()),
        DataFusionError::Execution(m) => execution_code(m),
        DataFusionError::ResourcesExhausted(_) => code::OUT_OF_MEMORY,
        DataFusionError::IoError(_) => code::IO_ERROR,
        DataFusionError::External(inner) => match inner.downcast_ref::<StorageError>() {
            Some(s) => return from_storage(s),
            None => match inner.downcast_ref::<PgErrorBox>() {
                Some(p) => return p.0.clone(),
                None => code::INTERNAL_ERROR,
            },
        },
        _ => code::INTERNAL_ERROR,
    };
    PgError::new(code, message).with_position(position)
}

/// A [`PgError`] carried through DataFusion as `DataFusionError::External` (from our UDFs and scans).
#[derive(Debug)]
pub struct PgErrorBox(pub PgError);

impl std::fmt::Display for PgErrorBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for PgErrorBox {}

fn plan_code(m: &str) -> &'static str {
    if m.starts_with("table '") && m.ends_with("not found")
        || m.contains("table") && m.contains("not found")
    {
        code::UNDEFINED_TABLE
    } else if m.contains("Invalid function")
        || m.contains("function") && m.contains("not found")
        || m.contains("No function matches")
        || m.contains("does not support")
        || m.contains("Cannot infer common")
    {
        code::UNDEFINED_FUNCTION
    } else if m.contains("Cannot coerce") || m.contains("cast") || m.contains("type") {
        code::DATATYPE_MISMATCH
    } else if m.contains("No field named") || m.contains("column") && m.contains("not found") {
        code::UNDEFINED_COLUMN
    } else if m.contains("Placeholder") || m.contains("parameter") {
        code::INVALID_PARAMETER_VALUE
    } else {
        code::SYNTAX_ERROR
    }
}

fn arrow_code(m: &str) -> &'static str {
    if m.contains("Divide by zero") {
        code::DIVISION_BY_ZERO
    } else if m.contains("Cast error") || m.contains("Parser error") || m.contains("parse") {
        code::INVALID_TEXT_REPRESENTATION
    } else if m.contains("overflow") {
        code::NUMERIC_VALUE_OUT_OF_RANGE
    } else {
        code::DATA_EXCEPTION
    }
}

fn execution_code(m: &str) -> &'static str {
    if m.contains("Divide by zero") || m.contains("division by zero") {
        code::DIVISION_BY_ZERO
    } else if m.contains("overflow") {
        code::NUMERIC_VALUE_OUT_OF_RANGE
    } else {
        code::DATA_EXCEPTION
    }
}

/// DataFusion prefixes messages with its variant ("Error during planning: "); clients show SQLSTATE already.
fn clean_message(m: &str) -> String {
    let mut s = m;
    for p in [
        "Error during planning: ",
        "Schema error: ",
        "SQL error: ",
        "This feature is not implemented: ",
        "Execution error: ",
        "Arrow error: ",
        "Optimizer rule",
        "Invalid or Unsupported Configuration: ",
    ] {
        if let Some(rest) = s.strip_prefix(p) {
            s = rest;
        }
    }
    s.trim().to_string()
}

/// sqlparser reports `... at Line: 1, Column: 8`; PostgreSQL reports a 1-based character offset.
fn parser_position(message: &str, sql: &str) -> Option<usize> {
    let at = message.rfind("Line: ")?;
    let rest = &message[at + 6..];
    let (line, rest) = rest.split_once(", Column: ")?;
    let column: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some(char_offset(
        sql,
        line.trim().parse().ok()?,
        column.parse().ok()?,
    ))
}

/// 1-based (line, column) → 1-based character offset in `sql`.
fn char_offset(sql: &str, line: usize, column: usize) -> usize {
    let mut offset = 0;
    for (i, l) in sql.split('\n').enumerate() {
        if i + 1 == line {
            return offset + column.max(1).min(l.chars().count() + 1);
        }
        offset += l.chars().count() + 1;
    }
    offset.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_positions_become_character_offsets() {
        let sql = "SELECT 1;\nSELEC x FROM t";
        assert_eq!(
            parser_position(
                "Expected: an SQL statement, found: SELEC at Line: 2, Column: 1",
                sql
            ),
            Some(11)
        );
        assert_eq!(parser_position("no position here", sql), None);
        assert_eq!(char_offset("SELECT * FORM t", 1, 10), 10);
    }

    #[test]
    fn storage_errors_map_to_sqlstates() {
        let e = StorageError::DatabaseNotFound { name: "x".into() };
        assert_eq!(from_storage(&e).code, code::INVALID_CATALOG_NAME);
        let e = StorageError::Overloaded {
            reason: "busy".into(),
        };
        assert_eq!(from_storage(&e).code, code::INSUFFICIENT_RESOURCES);
        assert!(from_storage(&e).hint.is_some());
    }
}
