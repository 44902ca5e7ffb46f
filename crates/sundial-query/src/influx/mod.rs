//! InfluxQL execution: statements parsed by [`crate::influxql`] run against Sundial's tables and answer
//! in InfluxDB 1.x's result model (statements → series → rows).
//!
//! A `SELECT` is translated, per measurement, into SQL over the very DataFusion tables the SQL endpoint
//! serves (see [`select`]), so time-range and tag pushdown and block statistics serve InfluxQL too. The
//! common shapes (aggregates of numeric fields and raw reads under tag conditions) skip DataFusion and
//! are folded from storage (`select::native`): they return the rows that SQL would, checked by a
//! differential test, so the shaping below is one code path. What InfluxQL means beyond relational algebra is done
//! here on the (small, already aggregated) result: splitting rows into series, bucket alignment and
//! `fill()`, per-series `LIMIT`/`OFFSET`, `SLIMIT`, InfluxDB's column naming and arithmetic rules.
//!
//! - [`InfluxQl::execute`] runs a query of `;`-separated statements and returns one
//!   [`StatementResult`] per statement; only a syntax error fails the whole query ([`QueryParseError`]).
//! - [`Cell`] is one value of a result row; times stay nanoseconds so the HTTP layer can print them as
//!   RFC 3339 or as `epoch=` integers.
//!
//! Semantics follow InfluxDB 1.x as observed on the real server (`tests/compat/` checks them against it).

mod cell;
mod cond;
mod select;
mod show;
pub mod values;

use std::sync::Arc;

pub use cell::{ArcStr, Cell};
pub use values::{FlatRows, SeriesTable, Values};

use crate::QueryEngine;
use crate::influxql::{self, ParseError, Statement};

/// Most buckets one `GROUP BY time()` statement may produce per series (InfluxDB's `max-select-buckets`
/// is unlimited by default; an unbounded query grouped by 1 s from 1970 would otherwise exhaust memory).
pub const BUCKETS_PER_SERIES_MAX: u64 = 1_000_000;

/// Largest `N` of `top(field, N)` and `bottom(field, N)`.
pub const TOP_N_MAX: usize = 10_000;

/// Most rows one statement may read back from DataFusion for shaping (a bound on its memory: a row of
/// TSBS `SELECT *` is 21 cells, about 1 KiB with its strings, so this is a few GiB at worst). TSBS's
/// largest raw answer, high-cpu-all at 4,000 hosts, is about 1.5 M rows.
pub const RESULT_ROWS_MAX: usize = 4_000_000;

/// The error of a statement over [`RESULT_ROWS_MAX`]: the limit and what to do.
pub(crate) fn too_many_rows() -> String {
    format!("the query selects more than {RESULT_ROWS_MAX} rows: narrow the time range or add LIMIT")
}

/// One series of a statement's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    /// `GROUP BY` tag keys and values, sorted by key; `None` when the statement groups by no tag (the
    /// JSON then has no `tags` key).
    pub tags: Option<Vec<(String, String)>>,
    /// Shared: every series of a statement has the same columns.
    pub columns: Arc<[String]>,
    /// Rows; `None` for a series that InfluxDB prints without a `values` key (`SHOW DATABASES` with none).
    pub values: Option<Values>,
}

/// The answer to one statement: series, or an error message (InfluxDB answers statement errors with
/// HTTP 200 and `{"statement_id": n, "error": "..."}`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatementResult {
    pub series: Vec<Series>,
    /// The series as one table instead ([`SeriesTable`]; `series` then empty): only from
    /// [`InfluxQl::execute_tables`].
    pub table: Option<SeriesTable>,
    pub error: Option<String>,
}

impl StatementResult {
    pub fn error(msg: impl Into<String>) -> Self {
        StatementResult { series: Vec::new(), table: None, error: Some(msg.into()) }
    }

    pub fn series(series: Vec<Series>) -> Self {
        StatementResult { series, table: None, error: None }
    }

    /// The series of a table as a series each.
    pub fn expand(&mut self) {
        if let Some(t) = self.table.take() {
            self.series = t.series();
        }
    }
}

/// A query that does not parse (HTTP 400, `error parsing query: ...`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("error parsing query: {0}")]
pub struct QueryParseError(pub ParseError);

/// Runs InfluxQL over a [`QueryEngine`].
#[derive(Clone)]
pub struct InfluxQl {
    engine: Arc<QueryEngine>,
}

impl InfluxQl {
    pub fn new(engine: Arc<QueryEngine>) -> Self {
        InfluxQl { engine }
    }

    /// Runs every statement of `query` against database `db` (the `db=` parameter; statements may name
    /// another with `ON` or `db..m`). `now_ns` is the query's `now()`.
    pub async fn execute(&self, db: Option<&str>, query: &str, now_ns: i64) -> Result<Vec<StatementResult>, QueryParseError> {
        let mut out = self.execute_tables(db, query, now_ns).await?;
        out.iter_mut().for_each(StatementResult::expand);
        Ok(out)
    }

    /// [`Self::execute`], where a statement may answer with a [`SeriesTable`] instead of its series
    /// (for a writer that handles both: the HTTP endpoint's JSON).
    pub async fn execute_tables(&self, db: Option<&str>, query: &str, now_ns: i64) -> Result<Vec<StatementResult>, QueryParseError> {
        let statements = influxql::parse_query(query).map_err(QueryParseError)?;
        let mut out = Vec::with_capacity(statements.len());
        for st in &statements {
            let r = self.statement(db, st, now_ns).await;
            let failed = r.error.is_some();
            out.push(r);
            // InfluxDB stops at the first failing statement.
            if failed {
                break;
            }
        }
        Ok(out)
    }

    async fn statement(&self, db: Option<&str>, st: &Statement, now_ns: i64) -> StatementResult {
        let r = match st {
            Statement::Select(s) => select::run(&self.engine, db, s, now_ns).await,
            Statement::Explain(_) => Err("EXPLAIN is not supported yet; use EXPLAIN on the SQL endpoint".into()),
            other => show::run(&self.engine, db, other, now_ns),
        };
        r.unwrap_or_else(StatementResult::error)
    }
}

/// The database a statement works on: its own `ON db` / `db..m`, else the request's.
fn database<'a>(explicit: Option<&'a str>, request: Option<&'a str>) -> Result<&'a str, String> {
    explicit.or(request).filter(|d| !d.is_empty()).ok_or_else(|| "database name required".to_string())
}
