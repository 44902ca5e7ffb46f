//! InfluxQL (the InfluxDB 1.x query language): lexer, parser and typed AST.
//!
//! This module depends on nothing but `std`, so it can be compiled on its own (the fuzz target and
//! quick development builds include it by `#[path]`); it refers to its siblings only through
//! `super::`.
//!
//! - [`parse_query`] parses a query of zero or more `;`-separated statements into [`Statement`]s;
//!   [`parse_statement`] and [`parse_expr`] parse one statement or one expression.
//! - Every syntax error is a [`ParseError`] naming the byte offset, line and column, displayed as
//!   InfluxDB does: `found FROM, expected identifier, string, number, bool at line 1, char 8` (the
//!   HTTP layer prepends `error parsing query: `).
//! - Every AST node implements `Display`, printing canonical InfluxQL that parses back to an equal
//!   tree; [`format_query`] prints a list of statements.
//! - [`parse_duration`], [`format_duration`], [`parse_time_literal`] and [`format_time_rfc3339`] are
//!   the literal helpers the translator needs. Durations are `i64` nanoseconds. Time literals stay
//!   [`Expr::StringLit`] in the tree: InfluxDB reads `'2016-01-01T00:00:00Z'` as a time only where it
//!   is compared with `time` ([`Expr::is_time_ref`]), in the zone of `tz()` if it names none.
//!
//! ```
//! use sundial_query::influxql::{BinaryOp, Dimension, Expr, Statement, parse_query, parse_time_literal};
//!
//! let q = "SELECT max(usage_user) FROM cpu WHERE time >= '2016-01-01T00:00:00Z' GROUP BY time(1m), hostname";
//! let Statement::Select(select) = &parse_query(q).unwrap()[0] else { unreachable!() };
//! assert_eq!(select.dimensions[0], Dimension::Time { interval_ns: 60_000_000_000, offset: None });
//! let Some(Expr::Binary { op: BinaryOp::GtEq, lhs, rhs }) = &select.condition else { unreachable!() };
//! assert!(lhs.is_time_ref());
//! let Expr::StringLit(t) = &**rhs else { unreachable!() };
//! assert_eq!(parse_time_literal(t), Some(1_451_606_400_000_000_000));
//! assert_eq!(select.to_string(), "SELECT max(usage_user) FROM cpu WHERE time >= '2016-01-01T00:00:00Z' \
//!                                 GROUP BY time(1m), hostname");
//!
//! let e = parse_query("SELECT FROM cpu").unwrap_err();
//! assert_eq!(e.to_string(), "found FROM, expected identifier, string, number, bool at line 1, char 8");
//! ```
//!
//! What follows InfluxDB, and what does not:
//! - Keywords are reserved as in InfluxDB (`SELECT "key" FROM m` needs the quotes) and
//!   case-insensitive; identifiers are case-sensitive; function names are lower-cased.
//! - Regular expressions are kept as pattern strings ([`Expr::RegexLit`], unanchored, with `\/`
//!   already turned into `/`); they are not compiled here.
//! - `DISTINCT x` is read as the call `distinct(x)`; parentheses leave no node in the tree (`Display`
//!   puts back those the precedence needs); unary minus folds into numeric and duration literals and
//!   is [`Expr::Neg`] elsewhere (InfluxDB multiplies by -1).
//! - What InfluxDB checks only when compiling a query but the typed tree cannot hold is checked here:
//!   `GROUP BY` takes only `time(interval[, offset])`, tags, `*` and regexes; `fill()` and `tz()`
//!   take one argument of the right kind; fields hold no comparison or logical operator.
//! - `ORDER BY time [ASC|DESC]` is accepted in `SHOW` statements (as by InfluxDB) and dropped.
//! - An error at the end of the input is reported at the character after the last one (InfluxDB says
//!   one further).
//! - Only the statements Sundial serves are parsed (see [`Statement`]); user, privilege, continuous
//!   query, subscription, shard and query administration, `DROP RETENTION POLICY`, and
//!   `SHOW MEASUREMENTS ON *` are syntax errors. `CREATE` and `ALTER RETENTION POLICY` are parsed in
//!   full; what Sundial cannot honour (a second policy, `SHARD DURATION`) is refused when executed.
//!
//! Bounds: [`QUERY_BYTES_MAX`], [`EXPR_DEPTH_MAX`], [`SUBQUERY_DEPTH_MAX`].

mod ast;
mod lexer;
mod parse;
mod time;

#[cfg(test)]
mod tests;

use std::fmt;

pub use ast::{
    BinaryOp, CardinalityKind, CreateDatabaseStatement, DeleteStatement, Dimension, DropSeriesStatement,
    ExplainStatement, Expr, Field, Fill, Measurement, MeasurementName, RetentionPolicySpec, RetentionPolicyStatement,
    SelectStatement,
    ShowCardinalityStatement, ShowFieldKeysStatement, ShowMeasurementsStatement, ShowSeriesStatement,
    ShowTagKeysStatement, ShowTagValuesStatement, Source, Statement, TagKeyFilter, Target, TimeOffset, VarType,
    WildcardType, quote_ident, quote_string,
};
pub use lexer::{format_duration, is_keyword, parse_duration};
pub use time::{
    Rfc3339Writer, TimeLiteralParts, format_time_rfc3339, write_time_rfc3339, looks_like_time_literal, parse_time_literal, parse_time_literal_parts,
};

/// The longest query accepted, in bytes; longer ones are refused before lexing.
pub const QUERY_BYTES_MAX: usize = 1 << 20;

/// The deepest expression accepted: both the nesting of parentheses, calls and unary minus while
/// parsing, and the depth of the resulting tree (a chain `h = 'a' OR h = 'b' OR ...` of n terms is
/// n + 1 deep). The parser, `Display`, `Clone`, `PartialEq` and `Drop` recurse that deep; the
/// deepest inputs need under 1 MiB of stack unoptimized (a test runs them on 2 MiB, a tokio worker's
/// stack), which leaves room for a translator that recurses over the tree too.
pub const EXPR_DEPTH_MAX: usize = 256;

/// The deepest nesting of subqueries (`FROM (SELECT ... FROM (SELECT ...))`) accepted.
pub const SUBQUERY_DEPTH_MAX: usize = 16;

/// A syntax error, with the position where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// What is wrong, e.g. `found FROM, expected identifier, string, number, bool`.
    pub message: String,
    /// Byte offset into the query.
    pub pos: usize,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl ParseError {
    /// An error at byte offset `pos` of `src` (clamped to the source, and to a char boundary).
    pub fn new(src: &str, pos: usize, message: impl Into<String>) -> ParseError {
        let mut pos = pos.min(src.len());
        while !src.is_char_boundary(pos) {
            pos -= 1;
        }
        let before = &src[..pos];
        let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        ParseError { message: message.into(), pos, line, column }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at line {}, char {}", self.message, self.line, self.column)
    }
}

impl std::error::Error for ParseError {}

/// Parses a query: zero or more statements separated by `;` (a trailing `;` is fine). A query of
/// only whitespace, comments and `;` gives no statement.
pub fn parse_query(query: &str) -> Result<Vec<Statement>, ParseError> {
    parse::Parser::new(query)?.parse_query()
}

/// Parses exactly one statement (an optional trailing `;` is allowed).
pub fn parse_statement(statement: &str) -> Result<Statement, ParseError> {
    parse::Parser::new(statement)?.parse_single_statement()
}

/// Parses one expression, e.g. a `WHERE` condition on its own (`host = 'a' AND time > now() - 1h`).
pub fn parse_expr(expr: &str) -> Result<Expr, ParseError> {
    parse::Parser::new(expr)?.parse_single_expr()
}

/// Prints statements as one canonical query (`; `-separated), which [`parse_query`] reads back to
/// equal statements.
pub fn format_query(statements: &[Statement]) -> String {
    statements.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}
