//! Sundial's query engine: Apache DataFusion over Sundial's storage.
//!
//! - [`provider::SundialCatalog`] exposes every database as a DataFusion schema and every table as a
//!   [`provider::SundialTable`], whose scan ([`scan::ScanExec`]) reads only the series selected by tag
//!   filters and only the time range of time filters ([`pushdown`]).
//! - [`QueryEngine::sql`] runs SQL: the database statements Sundial owns (`CREATE DATABASE`,
//!   `DROP DATABASE`, `SHOW DATABASES`, `ALTER DATABASE db SET RETENTION '30d'`) directly, everything
//!   else through DataFusion.
//!
//! ```no_run
//! # async fn demo() -> Result<(), sundial_query::QueryError> {
//! use std::sync::Arc;
//! let engine = Arc::new(sundial_storage::Engine::open(sundial_storage::EngineConfig::new("/tmp/demo"))?);
//! let q = sundial_query::QueryEngine::new(engine);
//! q.sql(None, "CREATE DATABASE metrics").await?;
//! let out = q.sql(Some("metrics"), "SELECT count(*) FROM information_schema.tables").await?;
//! println!("{:?}", out.batches);
//! # Ok(()) }
//! ```

pub mod busy;
pub mod influx;
pub mod influxql;
pub mod provider;
pub mod pushdown;
pub mod scan;

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::DataFusionError;
use datafusion::execution::context::{SessionConfig, SessionContext};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::sql::parser::{DFParser, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::{ObjectType, Statement};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use sundial_storage::Engine;

pub use datafusion;

/// The catalog name under which databases appear to SQL (`sundial.<db>.<table>`).
pub const CATALOG_NAME: &str = "sundial";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    #[error(transparent)]
    Storage(#[from] sundial_storage::Error),
    #[error("{0}")]
    DataFusion(#[from] DataFusionError),
    #[error("{0}")]
    Unsupported(String),
}

impl QueryError {
    /// True if the query itself was wrong (syntax, unknown table...), false for server-side failures.
    pub fn is_user_error(&self) -> bool {
        match self {
            QueryError::Storage(e) => e.is_user_error(),
            QueryError::DataFusion(e) => is_user_df_error(e),
            QueryError::Unsupported(_) => true,
        }
    }
}

fn is_user_df_error(e: &DataFusionError) -> bool {
    match e {
        DataFusionError::SQL(..) | DataFusionError::Plan(_) | DataFusionError::SchemaError(..) => true,
        DataFusionError::NotImplemented(_) | DataFusionError::Configuration(_) => true,
        DataFusionError::Context(_, inner) => is_user_df_error(inner),
        DataFusionError::Diagnostic(_, inner) => is_user_df_error(inner),
        DataFusionError::ArrowError(..) | DataFusionError::Execution(_) => true,
        DataFusionError::External(inner) => {
            inner.downcast_ref::<sundial_storage::Error>().is_some_and(sundial_storage::Error::is_user_error)
        }
        _ => false,
    }
}

/// The result of one statement.
#[derive(Debug)]
pub struct QueryOutput {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}

impl QueryOutput {
    fn empty() -> Self {
        QueryOutput { schema: Arc::new(Schema::empty()), batches: Vec::new() }
    }

    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

#[derive(Clone)]
pub struct QueryEngine {
    engine: Arc<Engine>,
    /// Retention (ns) of databases created without one; 0 keeps data forever.
    default_retention_ns: i64,
    /// InfluxQL aggregates and tag-filtered raw reads of the common shape are answered from storage
    /// directly (see `influx::select::native`); off, every statement goes through DataFusion.
    influxql_native: bool,
}

impl QueryEngine {
    pub fn new(engine: Arc<Engine>) -> Self {
        QueryEngine { engine, default_retention_ns: 0, influxql_native: true }
    }

    /// Sets the retention given to databases created without one (`CREATE DATABASE` in SQL, InfluxQL
    /// without `WITH DURATION`).
    pub fn with_default_retention(mut self, retention_ns: i64) -> Self {
        self.default_retention_ns = retention_ns;
        self
    }

    /// Whether InfluxQL statements of the common shape skip DataFusion (default: yes). Off is for
    /// differential tests and for comparing the two paths.
    pub fn with_influxql_native(mut self, on: bool) -> Self {
        self.influxql_native = on;
        self
    }

    pub fn influxql_native(&self) -> bool {
        self.influxql_native
    }

    pub fn default_retention_ns(&self) -> i64 {
        self.default_retention_ns
    }

    pub fn storage(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// A DataFusion session whose default schema is database `db` (if given).
    pub fn session(&self, db: Option<&str>) -> SessionContext {
        let config = SessionConfig::new()
            .with_target_partitions(2)
            .with_information_schema(true)
            .with_create_default_catalog_and_schema(false)
            .with_default_catalog_and_schema(CATALOG_NAME, db.unwrap_or("public"));
        // Scans give exact statistics only where `AggregateStatistics` can use them (`ScanStatisticsWanted`).
        let mut rules = datafusion::physical_optimizer::optimizer::PhysicalOptimizer::new().rules;
        let at = rules.iter().position(|r| r.name() == "aggregate_statistics").unwrap_or(0);
        rules.insert(at, Arc::new(scan::ScanStatisticsWanted));
        let state = SessionStateBuilder::new().with_config(config).with_default_features().with_physical_optimizer_rules(rules).build();
        let ctx = SessionContext::new_with_state(state);
        ctx.register_catalog(CATALOG_NAME, Arc::new(provider::SundialCatalog::new(self.engine.clone())));
        let last_rows = provider::LastRowsFunction::new(self.engine.clone(), db.map(str::to_string));
        ctx.register_udtf("last_rows", Arc::new(last_rows));
        ctx
    }

    /// Runs every statement of `sql`; returns the output of the last one.
    pub async fn sql(&self, db: Option<&str>, sql: &str) -> Result<QueryOutput, QueryError> {
        if let Some(alter) = parse_alter_database(sql)? {
            self.engine.set_retention(&alter.database, alter.retention_ns)?;
            return Ok(QueryOutput::empty());
        }
        let statements = DFParser::parse_sql_with_dialect(sql, &GenericDialect {})?;
        if statements.is_empty() {
            return Err(QueryError::Unsupported("the query holds no statement".into()));
        }
        let ctx = self.session(db);
        let mut last = QueryOutput::empty();
        for st in statements {
            if let DFStatement::Statement(s) = &st {
                if let Statement::Delete(del) = s.as_ref() {
                    last = self.delete(&ctx, db, del).await?;
                    continue;
                }
            }
            last = match self.database_statement(&st)? {
                Some(out) => out,
                None => {
                    let plan = ctx.state().statement_to_plan(st).await?;
                    let df = ctx.execute_logical_plan(plan).await?;
                    let schema = Arc::new(df.schema().as_arrow().clone());
                    let batches = df.collect().await?;
                    QueryOutput { schema, batches }
                }
            };
        }
        Ok(last)
    }

    /// Statements about databases, which Sundial answers itself.
    fn database_statement(&self, st: &DFStatement) -> Result<Option<QueryOutput>, QueryError> {
        let DFStatement::Statement(st) = st else { return Ok(None) };
        match st.as_ref() {
            Statement::CreateDatabase { db_name, if_not_exists, .. } => {
                self.engine.create_database(&object_name(db_name), self.default_retention_ns, *if_not_exists)?;
                Ok(Some(QueryOutput::empty()))
            }
            Statement::Drop { object_type: ObjectType::Database | ObjectType::Schema, if_exists, names, .. } => {
                for n in names {
                    self.engine.drop_database(&object_name(n), *if_exists)?;
                }
                Ok(Some(QueryOutput::empty()))
            }
            Statement::ShowDatabases { .. } => {
                let names: Vec<String> = self.engine.catalog().dbs().iter().map(|d| d.name.to_string()).collect();
                let schema = Arc::new(Schema::new(vec![Field::new("name", DataType::Utf8, false)]));
                let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(names))])
                    .map_err(DataFusionError::from)?;
                Ok(Some(QueryOutput { schema, batches: vec![batch] }))
            }
            _ => Ok(None),
        }
    }
}

impl QueryEngine {
    /// `DELETE FROM t [WHERE ...]`: the WHERE is planned by DataFusion against the table, and must be
    /// wholly absorbed by the scan's exact pushdown (time ranges, tag equality): those rows are what a
    /// tombstone can name. Anything else would need a per-row filter, which deletes do not have: refused.
    async fn delete(
        &self,
        ctx: &SessionContext,
        db: Option<&str>,
        del: &datafusion::sql::sqlparser::ast::Delete,
    ) -> Result<QueryOutput, QueryError> {
        use datafusion::common::tree_node::TreeNode;
        use datafusion::logical_expr::LogicalPlan;
        use datafusion::sql::sqlparser::ast::FromTable;
        let tables = match &del.from {
            FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
        };
        let [t] = tables.as_slice() else {
            return Err(QueryError::Unsupported("DELETE works on exactly one table".into()));
        };
        if !t.joins.is_empty() || del.using.is_some() || del.returning.is_some() || del.limit.is_some() {
            return Err(QueryError::Unsupported("DELETE supports only: DELETE FROM table [WHERE condition]".into()));
        }
        let name = t.relation.to_string();
        let filter = del.selection.as_ref().map(|w| format!(" WHERE {w}")).unwrap_or_default();
        let df = ctx.sql(&format!("SELECT \"time\" FROM {name}{filter}")).await?;
        let plan = ctx.state().optimize(df.logical_plan())?;
        let mut scan = None;
        let mut row_filter = false;
        plan.apply(|n| {
            match n {
                LogicalPlan::Filter(_) => row_filter = true,
                LogicalPlan::TableScan(s) => scan = Some((s.table_name.table().to_string(), s.filters.clone())),
                _ => {}
            }
            Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
        })?;
        let Some((table, filters)) = scan.filter(|_| !row_filter) else {
            return Err(QueryError::Unsupported(
                "DELETE supports WHERE conditions on time ranges and tag equality (tag = 'v', tag IN (...)) only".into(),
            ));
        };
        let db = db.ok_or_else(|| QueryError::Unsupported("DELETE needs a database: pass db=".into()))?;
        let (series, p) = {
            let cat = self.engine.catalog();
            let d = cat.db(db).ok_or_else(|| sundial_storage::Error::DatabaseNotFound { name: db.to_string() })?;
            let Some(t) = d.table(&table) else { return Ok(QueryOutput::empty()) };
            let sundial_table = provider::SundialTable::new(self.engine.clone(), d.id, t);
            let p = pushdown::analyze(&filters, &|c| sundial_table.tag_column(c).is_some());
            ((!p.tags.is_empty()).then(|| sundial_table.select_series(&p)), p)
        };
        self.engine.delete(db, &table, series.as_deref(), p.ts_min, p.ts_max)?;
        Ok(QueryOutput::empty())
    }
}

/// `ALTER DATABASE db SET RETENTION [=|TO] 'duration'`, Sundial's SQL for changing a database's retention
/// (DataFusion's SQL has no `ALTER DATABASE`; this is the closest PostgreSQL shape, `ALTER DATABASE name
/// SET parameter { TO | = } value`). The duration is written as in InfluxQL and `--retention`: `30d`,
/// `12h`, `1h30m`, `2w`; `'inf'` or `'0'` keeps data forever.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterDatabase {
    pub database: String,
    pub retention_ns: i64,
}

/// Recognises [`AlterDatabase`]: `Ok(None)` when `sql` does not start with `ALTER DATABASE` (it is
/// then for DataFusion), an error naming the expected form when it does but is malformed. It must be
/// the only statement of the query.
pub fn parse_alter_database(sql: &str) -> Result<Option<AlterDatabase>, QueryError> {
    use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
    const FORM: &str = "expected ALTER DATABASE <name> SET RETENTION '<duration>' (e.g. '30d', '12h', or 'inf' to keep data forever)";
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, sql).tokenize() else { return Ok(None) };
    let mut it = tokens.into_iter().filter(|t| !matches!(t, Token::Whitespace(_))).peekable();
    let word = |t: &Option<Token>, kw: &str| matches!(t, Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(kw));
    let (first, second) = (it.next(), it.next());
    if !word(&first, "ALTER") || !word(&second, "DATABASE") {
        return Ok(None);
    }
    let bad = |what: &str| QueryError::Unsupported(format!("ALTER DATABASE: {what}; {FORM}"));
    let database = match it.next() {
        Some(Token::Word(w)) => w.value,
        other => return Err(bad(&format!("found {} where the database name belongs", describe(other.as_ref())))),
    };
    for kw in ["SET", "RETENTION"] {
        let t = it.next();
        if !word(&t, kw) {
            return Err(bad(&format!("found {} where {kw} belongs", describe(t.as_ref()))));
        }
    }
    if matches!(it.peek(), Some(Token::Eq)) || word(&it.peek().cloned(), "TO") {
        it.next();
    }
    let text = match it.next() {
        Some(Token::SingleQuotedString(s)) => s,
        other => return Err(bad(&format!("found {} where the quoted duration belongs", describe(other.as_ref())))),
    };
    while matches!(it.peek(), Some(Token::SemiColon)) {
        it.next();
    }
    if let Some(t) = it.next() {
        return Err(bad(&format!("found {} after the duration (ALTER DATABASE must be the only statement)", describe(Some(&t)))));
    }
    let retention_ns = match text.trim() {
        "0" => 0,
        t if t.eq_ignore_ascii_case("inf") => 0,
        t => influxql::parse_duration(t).filter(|d| *d > 0).ok_or_else(|| bad(&format!("'{text}' is not a positive duration")))?,
    };
    Ok(Some(AlterDatabase { database, retention_ns }))
}

fn describe(t: Option<&datafusion::sql::sqlparser::tokenizer::Token>) -> String {
    t.map_or_else(|| "the end of the query".to_string(), |t| format!("`{t}`"))
}

fn object_name(n: &datafusion::sql::sqlparser::ast::ObjectName) -> String {
    n.0.iter().map(|p| p.as_ident().map(|i| i.value.clone()).unwrap_or_else(|| p.to_string())).collect::<Vec<_>>().join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alter(sql: &str) -> Result<Option<AlterDatabase>, String> {
        parse_alter_database(sql).map_err(|e| e.to_string())
    }

    #[test]
    fn alter_database_set_retention_parses_its_forms() {
        let want = |db: &str, ns: i64| Ok(Some(AlterDatabase { database: db.into(), retention_ns: ns }));
        assert_eq!(alter("ALTER DATABASE db SET RETENTION '30d'"), want("db", 30 * 86_400_000_000_000));
        assert_eq!(alter("alter database \"My Db\" set retention = '1h30m';"), want("My Db", 5_400_000_000_000));
        assert_eq!(alter("ALTER DATABASE db SET RETENTION TO 'inf'"), want("db", 0));
        assert_eq!(alter("ALTER DATABASE db SET RETENTION '0'"), want("db", 0));
        assert_eq!(alter("SELECT 1"), Ok(None));
        assert_eq!(alter("ALTER TABLE t ADD COLUMN x INT"), Ok(None));
    }

    #[test]
    fn malformed_alter_database_names_what_is_wrong_and_the_form() {
        for (sql, what) in [
            ("ALTER DATABASE db SET RETENTION 30d", "found `30` where the quoted duration belongs"),
            ("ALTER DATABASE db SET RETENTION '30x'", "'30x' is not a positive duration"),
            ("ALTER DATABASE db SET RETENTION '-1d'", "'-1d' is not a positive duration"),
            ("ALTER DATABASE db SET OWNER TO bob", "found `OWNER` where RETENTION belongs"),
            ("ALTER DATABASE db SET RETENTION '1d'; SELECT 1", "found `SELECT` after the duration"),
            ("ALTER DATABASE", "found the end of the query where the database name belongs"),
        ] {
            let e = alter(sql).unwrap_err();
            assert!(e.contains(what) && e.contains("expected ALTER DATABASE <name> SET RETENTION '<duration>'"), "{sql}: {e}");
        }
    }
}
