//! Sundial's query engine: Apache DataFusion over Sundial's storage.
//!
//! - [`provider::SundialCatalog`] exposes every database as a DataFusion schema and every table as a
//!   [`provider::SundialTable`], whose scan ([`scan::ScanExec`]) reads only the series selected by tag
//!   filters and only the time range of time filters ([`pushdown`]).
//! - [`QueryEngine::sql`] runs SQL: the database statements Sundial owns (`CREATE DATABASE`,
//!   `DROP DATABASE`, `SHOW DATABASES`) directly, everything else through DataFusion.
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
}

impl QueryEngine {
    pub fn new(engine: Arc<Engine>) -> Self {
        QueryEngine { engine }
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
        let ctx = SessionContext::new_with_config(config);
        ctx.register_catalog(CATALOG_NAME, Arc::new(provider::SundialCatalog::new(self.engine.clone())));
        let last_rows = provider::LastRowsFunction::new(self.engine.clone(), db.map(str::to_string));
        ctx.register_udtf("last_rows", Arc::new(last_rows));
        ctx
    }

    /// Runs every statement of `sql`; returns the output of the last one.
    pub async fn sql(&self, db: Option<&str>, sql: &str) -> Result<QueryOutput, QueryError> {
        let statements = DFParser::parse_sql_with_dialect(sql, &GenericDialect {})?;
        if statements.is_empty() {
            return Err(QueryError::Unsupported("the query holds no statement".into()));
        }
        let ctx = self.session(db);
        let mut last = QueryOutput::empty();
        for st in statements {
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
                self.engine.create_database(&object_name(db_name), 0, *if_not_exists)?;
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

fn object_name(n: &datafusion::sql::sqlparser::ast::ObjectName) -> String {
    n.0.iter().map(|p| p.as_ident().map(|i| i.value.clone()).unwrap_or_else(|| p.to_string())).collect::<Vec<_>>().join(".")
}
