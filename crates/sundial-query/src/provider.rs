//! DataFusion catalog over Sundial: one schema per database, one table per Sundial table.
//!
//! Every table has a `time` column (timestamp, ns, UTC, never null), then every tag (dictionary-encoded
//! strings) and field (by type) sorted by name — the column order InfluxDB uses for `SELECT *`.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::{CatalogProvider, SchemaProvider, Session, TableProvider};
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::TableType;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use sundial_storage::Engine;
use sundial_storage::catalog::{ColId, ColumnKind, DbId, TableCatalog, TableId};
use sundial_storage::types::FieldType;

use crate::pushdown::{self, TIME_COLUMN};
use crate::scan::{ColumnSource, ScanExec};

pub fn field_data_type(ty: FieldType) -> DataType {
    match ty {
        FieldType::Float => DataType::Float64,
        FieldType::Integer => DataType::Int64,
        FieldType::UInteger => DataType::UInt64,
        FieldType::String => DataType::Utf8,
        FieldType::Boolean => DataType::Boolean,
    }
}

pub fn tag_data_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

pub fn time_data_type() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, None)
}

/// All databases as schemas of one DataFusion catalog.
#[derive(Debug)]
pub struct SundialCatalog {
    engine: Arc<Engine>,
}

impl SundialCatalog {
    pub fn new(engine: Arc<Engine>) -> Self {
        SundialCatalog { engine }
    }
}

impl CatalogProvider for SundialCatalog {
    fn schema_names(&self) -> Vec<String> {
        self.engine.catalog().dbs().iter().map(|d| d.name.to_string()).collect()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        let db = self.engine.catalog().db(name)?.id;
        Some(Arc::new(SundialSchema { engine: self.engine.clone(), db }))
    }
}

/// One database.
#[derive(Debug)]
pub struct SundialSchema {
    engine: Arc<Engine>,
    db: DbId,
}

#[async_trait]
impl SchemaProvider for SundialSchema {
    fn table_names(&self) -> Vec<String> {
        let cat = self.engine.catalog();
        cat.db_by_id(self.db).map(|d| d.tables().iter().map(|t| t.name.to_string()).collect()).unwrap_or_default()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>, DataFusionError> {
        let cat = self.engine.catalog();
        let Some(t) = cat.db_by_id(self.db).and_then(|d| d.table(name)) else { return Ok(None) };
        Ok(Some(Arc::new(SundialTable::new(self.engine.clone(), self.db, t))))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.engine.catalog().db_by_id(self.db).is_some_and(|d| d.table(name).is_some())
    }
}

/// One table, with the schema it had when the query was planned.
#[derive(Debug)]
pub struct SundialTable {
    engine: Arc<Engine>,
    db: DbId,
    table: TableId,
    schema: SchemaRef,
    /// Parallel to the schema's fields.
    sources: Vec<ColumnSource>,
    tags: HashSet<String>,
    /// `Some(n)`: the table as `last_rows(name, n)` shows it, the last `n` rows of each series.
    tail: Option<usize>,
}

impl SundialTable {
    pub fn new(engine: Arc<Engine>, db: DbId, t: &TableCatalog) -> Self {
        let mut cols: Vec<(&str, ColumnSource)> = t
            .columns()
            .iter()
            .filter(|c| &*c.name != TIME_COLUMN)
            .map(|c| {
                let src = match c.kind {
                    ColumnKind::Tag => ColumnSource::Tag(c.id),
                    ColumnKind::Field(ty) => ColumnSource::Field(c.id, ty),
                };
                (&*c.name, src)
            })
            .collect();
        cols.sort_by(|a, b| a.0.cmp(b.0));
        let mut fields = vec![Field::new(TIME_COLUMN, time_data_type(), false)];
        let mut sources = vec![ColumnSource::Time];
        for (name, src) in &cols {
            let dt = match src {
                ColumnSource::Tag(_) => tag_data_type(),
                ColumnSource::Field(_, ty) => field_data_type(*ty),
                ColumnSource::Time => unreachable!("time is not a catalog column"),
            };
            fields.push(Field::new(*name, dt, true));
            sources.push(*src);
        }
        let tags = cols.iter().filter(|(_, s)| matches!(s, ColumnSource::Tag(_))).map(|(n, _)| n.to_string()).collect();
        SundialTable { engine, db, table: t.id, schema: Arc::new(Schema::new(fields)), sources, tags, tail: None }
    }

    pub fn tag_column(&self, name: &str) -> Option<ColId> {
        let i = self.schema.index_of(name).ok()?;
        match self.sources[i] {
            ColumnSource::Tag(c) => Some(c),
            _ => None,
        }
    }
}

#[async_trait]
impl TableProvider for SundialTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> Result<Vec<TableProviderFilterPushDown>> {
        let is_tag = |c: &str| self.tags.contains(c);
        Ok(filters
            .iter()
            .map(|f| {
                // Exact: the scan reads exactly the rows of the time range and exactly the series the tag
                // values select, so DataFusion need not filter again (and exact scan statistics hold).
                if pushdown::supported(f, &is_tag) {
                    TableProviderFilterPushDown::Exact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let is_tag = |c: &str| self.tags.contains(c);
        let p = pushdown::analyze(filters, &is_tag);
        let indices: Vec<usize> = projection.cloned().unwrap_or_else(|| (0..self.sources.len()).collect());
        let schema = Arc::new(self.schema.project(&indices)?);
        let sources: Vec<ColumnSource> = indices.iter().map(|i| self.sources[*i]).collect();
        let series = self.select_series(&p);
        let partitions = state.config().target_partitions().max(1);
        let scan = ScanExec::new(
            self.engine.clone(),
            self.db,
            self.table,
            schema,
            sources,
            Arc::new(series),
            (p.ts_min, p.ts_max),
            partitions,
            limit,
        )
        .with_tail(self.tail);
        Ok(Arc::new(scan))
    }
}

impl SundialTable {
    /// Series ids matching the tag filters (ascending), using the tag index.
    pub fn select_series(&self, p: &pushdown::Pushdown) -> Vec<u32> {
        let cat = self.engine.catalog();
        let Some(t) = cat.db_by_id(self.db).and_then(|d| d.table_by_id(self.table)) else { return Vec::new() };
        let constraints: Option<Vec<(ColId, &Vec<String>)>> =
            p.tags.iter().map(|(tag, values)| self.tag_column(tag).map(|c| (c, values))).collect();
        // A tag the table does not have: no series carries it.
        constraints.map_or_else(Vec::new, |c| t.series_with_tags(c))
    }
}

/// Most rows per series `last_rows()` may ask for; beyond, a plain query with a time range is the tool.
pub const LAST_ROWS_MAX: usize = 100_000;

/// The table function `last_rows('table', n)`: the last `n` rows (by time) of every series of a table
/// of the session's database, read without scanning the series (see `TailSnapshot` in the storage
/// crate; `n = 1` is answered from block statistics where it can). Time and tag filters on it apply
/// before the tail is taken, so `SELECT * FROM last_rows('cpu', 1) WHERE time < X` is the last row
/// before `X`; other filters apply after.
#[derive(Debug)]
pub struct LastRowsFunction {
    engine: Arc<Engine>,
    db: Option<String>,
}

impl LastRowsFunction {
    pub fn new(engine: Arc<Engine>, db: Option<String>) -> Self {
        LastRowsFunction { engine, db }
    }
}

impl datafusion::catalog::TableFunctionImpl for LastRowsFunction {
    fn call_with_args(&self, args: datafusion::catalog::TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        use datafusion::common::{ScalarValue, plan_err};
        let usage = "usage: last_rows('table', n) with n from 1 to 100000";
        let exprs = args.exprs();
        let (Some(Expr::Literal(name, _)), Some(Expr::Literal(n, _)), 2) = (exprs.first(), exprs.get(1), exprs.len()) else {
            return plan_err!("{usage}");
        };
        let (ScalarValue::Utf8(Some(name)) | ScalarValue::Utf8View(Some(name)) | ScalarValue::LargeUtf8(Some(name))) = name else {
            return plan_err!("{usage}: the table name must be a string");
        };
        let n = match n {
            ScalarValue::Int64(Some(v)) if *v >= 1 && *v as usize <= LAST_ROWS_MAX => *v as usize,
            _ => return plan_err!("{usage}: got n = {n}"),
        };
        let Some(db_name) = &self.db else { return plan_err!("last_rows() needs a database: pass db=") };
        let cat = self.engine.catalog();
        let Some(db) = cat.db(db_name) else { return plan_err!("database not found: {db_name}") };
        let Some(t) = db.table(name) else { return plan_err!("table '{name}' not found in database '{db_name}'") };
        let mut table = SundialTable::new(self.engine.clone(), db.id, t);
        table.tail = Some(n);
        Ok(Arc::new(table))
    }
}
