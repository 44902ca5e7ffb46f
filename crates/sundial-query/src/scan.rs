//! The scan: reads selected series of one table from a storage snapshot and emits Arrow batches.
//!
//! The selected series (from the tag index) are split into `partitions` contiguous ranges so DataFusion
//! can read them in parallel. Rows leave the scan grouped by series and, within a series, sorted by time.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int32Array, Int64Array, RecordBatch, RecordBatchOptions,
    StringArray, TimestampNanosecondArray, UInt64Array,
};
use datafusion::arrow::buffer::{BooleanBuffer, NullBuffer};
use datafusion::arrow::datatypes::{Int32Type, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, DataFusionError, Result, ScalarValue, Statistics};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::statistics::StatisticsArgs;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties, SendableRecordBatchStream,
};
use sundial_storage::Engine;
use sundial_storage::catalog::{ColId, DbId, SeriesId, TableId};
use sundial_storage::engine::{TableSnapshot, TailSnapshot};
use sundial_storage::types::{Column, ColumnValues, FieldType, Value};

/// Rows per emitted batch (a batch may exceed it by one series' rows).
pub const BATCH_ROWS: usize = 8192;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ColumnSource {
    Time,
    Tag(ColId),
    Field(ColId, FieldType),
}

#[derive(Debug)]
pub struct ScanExec {
    engine: Arc<Engine>,
    db: DbId,
    table: TableId,
    schema: SchemaRef,
    sources: Vec<ColumnSource>,
    series: Arc<Vec<SeriesId>>,
    ts_range: (i64, i64),
    partitions: usize,
    limit: Option<usize>,
    /// Read only the last `n` rows of each series (see `sundial_storage::engine::TailSnapshot`).
    tail: Option<usize>,
    props: Arc<PlanProperties>,
    /// Exact statistics of the whole scan, computed once when an optimizer rule first asks.
    stats: std::sync::OnceLock<Arc<Statistics>>,
}

impl ScanExec {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        engine: Arc<Engine>,
        db: DbId,
        table: TableId,
        schema: SchemaRef,
        sources: Vec<ColumnSource>,
        series: Arc<Vec<SeriesId>>,
        ts_range: (i64, i64),
        partitions: usize,
        limit: Option<usize>,
    ) -> Self {
        let partitions = partitions.clamp(1, series.len().max(1));
        let props = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        let stats = std::sync::OnceLock::new();
        ScanExec { engine, db, table, schema, sources, series, ts_range, partitions, limit, tail: None, props, stats }
    }

    /// Reads only the last `n` rows of each series.
    pub fn with_tail(mut self, n: Option<usize>) -> Self {
        self.tail = n;
        self
    }

    fn partition_series(&self, partition: usize) -> &[SeriesId] {
        let n = self.series.len();
        &self.series[partition * n / self.partitions..(partition + 1) * n / self.partitions]
    }
}

impl DisplayAs for ScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let (lo, hi) = self.ts_range;
        write!(f, "SundialScan: series={}, time=[{lo}, {hi}], partitions={}", self.series.len(), self.partitions)?;
        if let Some(l) = self.limit {
            write!(f, ", limit={l}")?;
        }
        if let Some(n) = self.tail {
            write!(f, ", last_rows_per_series={n}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for ScanExec {
    fn name(&self) -> &'static str {
        "SundialScan"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, _children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    /// Exact statistics from block footers and memtables when storage can give them (whole blocks, no
    /// overlapping sources): DataFusion then answers `count`, `min` and `max` without a `GROUP BY` from
    /// them and never runs the scan. Unknown otherwise, and per partition.
    fn statistics_from_inputs(&self, _inputs: &[Arc<Statistics>], args: &StatisticsArgs) -> Result<Arc<Statistics>> {
        if args.partition().is_some() || self.limit.is_some() || self.tail.is_some() {
            return Ok(Arc::new(Statistics::new_unknown(&self.schema)));
        }
        Ok(self.stats.get_or_init(|| Arc::new(self.exact_statistics().unwrap_or_else(|| Statistics::new_unknown(&self.schema)))).clone())
    }

    fn execute(&self, partition: usize, _context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        if partition >= self.partitions {
            return Err(DataFusionError::Internal(format!("SundialScan has no partition {partition}")));
        }
        let series = self.partition_series(partition).to_vec();
        let field_cols = self.field_cols();
        let (lo, hi) = self.ts_range;
        let snapshot = match self.tail {
            Some(n) => Snapshot::Tail(self.engine.snapshot_tail(self.db, self.table, &series, lo, hi, &field_cols, n)),
            None => Snapshot::Full(self.engine.snapshot(self.db, self.table, &series, lo, hi, &field_cols)),
        };
        let tag_values = self.tag_values(&series);
        let iter = BatchIter {
            snapshot,
            schema: self.schema.clone(),
            sources: self.sources.clone(),
            field_cols,
            series,
            tag_values,
            next: 0,
            rows_left: self.limit.unwrap_or(usize::MAX),
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), futures::stream::iter(iter))))
    }
}

impl ScanExec {
    /// The projected fields, in projection order: what the storage reads.
    fn field_cols(&self) -> Vec<(ColId, FieldType)> {
        self.sources
            .iter()
            .filter_map(|s| match s {
                ColumnSource::Field(c, t) => Some((*c, *t)),
                _ => None,
            })
            .collect()
    }

    fn exact_statistics(&self) -> Option<Statistics> {
        let field_cols = self.field_cols();
        let (lo, hi) = self.ts_range;
        let summary = self.engine.summarize(self.db, self.table, &self.series, lo, hi, &field_cols)?;
        let rows = usize::try_from(summary.rows).ok()?;
        let cat = self.engine.catalog();
        let t = cat.db_by_id(self.db)?.table_by_id(self.table)?;
        let mut fields = summary.cols.into_iter();
        let mut columns = Vec::with_capacity(self.sources.len());
        for s in &self.sources {
            let c = ColumnStatistics::new_unknown();
            columns.push(match s {
                ColumnSource::Time => c.with_null_count(Precision::Exact(0)),
                ColumnSource::Tag(col) => {
                    let lacking: u64 =
                        summary.series_rows.iter().filter(|(sid, _)| t.series_tag_value(*sid, *col).is_none()).map(|(_, n)| n).sum();
                    c.with_null_count(Precision::Exact(usize::try_from(lacking).ok()?))
                }
                ColumnSource::Field(_, ty) => {
                    let f = fields.next()?;
                    let scalar = |v: Option<Value>| match v {
                        Some(v) => Precision::Exact(value_scalar(*ty, v)),
                        None => Precision::Absent,
                    };
                    c.with_null_count(Precision::Exact(rows - usize::try_from(f.count).ok()?))
                        .with_min_value(scalar(f.min))
                        .with_max_value(scalar(f.max))
                }
            });
        }
        Some(Statistics { num_rows: Precision::Exact(rows), total_byte_size: Precision::Absent, column_statistics: columns })
    }

    /// For each series, the value of each projected tag column.
    fn tag_values(&self, series: &[SeriesId]) -> Vec<Vec<Option<Arc<str>>>> {
        let cat = self.engine.catalog();
        let t = cat.db_by_id(self.db).and_then(|d| d.table_by_id(self.table));
        series
            .iter()
            .map(|s| {
                self.sources
                    .iter()
                    .filter_map(|src| match src {
                        ColumnSource::Tag(c) => Some(t.and_then(|t| t.series_tag_value(*s, *c)).map(Arc::from)),
                        _ => None,
                    })
                    .collect()
            })
            .collect()
    }
}

/// A table's rows as a scan reads them: whole, or only each series' last rows.
enum Snapshot {
    Full(TableSnapshot),
    Tail(TailSnapshot),
}

impl Snapshot {
    fn read_series(&self, s: SeriesId) -> sundial_storage::Result<Option<sundial_storage::rows::SeriesRows>> {
        match self {
            Snapshot::Full(snap) => snap.read_series(s),
            Snapshot::Tail(snap) => snap.read_series(s),
        }
    }
}

struct BatchIter {
    snapshot: Snapshot,
    schema: SchemaRef,
    sources: Vec<ColumnSource>,
    field_cols: Vec<(ColId, FieldType)>,
    series: Vec<SeriesId>,
    tag_values: Vec<Vec<Option<Arc<str>>>>,
    next: usize,
    rows_left: usize,
}

/// Accumulates several series' rows into one batch.
struct Builder {
    ts: Vec<i64>,
    fields: Vec<Column>,
    /// Per tag column: the dictionary (one entry per series in the batch) and the row keys.
    tag_dict: Vec<Vec<Option<Arc<str>>>>,
    tag_keys: Vec<Vec<i32>>,
}

impl Iterator for BatchIter {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        let n_tags = self.tag_values.first().map_or(0, Vec::len);
        let mut b = Builder {
            ts: Vec::new(),
            fields: self.field_cols.iter().map(|(_, t)| Column::new(*t)).collect(),
            tag_dict: vec![Vec::new(); n_tags],
            tag_keys: vec![Vec::new(); n_tags],
        };
        while self.next < self.series.len() && b.ts.len() < BATCH_ROWS && self.rows_left > 0 {
            let i = self.next;
            self.next += 1;
            let rows = match self.snapshot.read_series(self.series[i]) {
                Ok(Some(r)) => r,
                Ok(None) => continue,
                Err(e) => return Some(Err(DataFusionError::External(Box::new(e)))),
            };
            let take = rows.len().min(self.rows_left);
            self.rows_left -= take;
            b.ts.extend_from_slice(&rows.ts[..take]);
            for ((dst, src), (_, ty)) in b.fields.iter_mut().zip(&rows.cols).zip(&self.field_cols) {
                match src {
                    Some(c) if take == c.len() => dst.extend(c),
                    Some(c) => dst.extend(&c.slice(0..take)),
                    None => dst.extend(&Column::nulls(*ty, take)),
                }
            }
            for (t, v) in self.tag_values[i].iter().enumerate() {
                let key = b.tag_dict[t].len() as i32;
                b.tag_dict[t].push(v.clone());
                b.tag_keys[t].extend(std::iter::repeat_n(key, take));
            }
        }
        if b.ts.is_empty() {
            return None;
        }
        Some(self.finish(b))
    }
}

impl BatchIter {
    fn finish(&self, b: Builder) -> Result<RecordBatch> {
        let n = b.ts.len();
        let mut fields = b.fields.into_iter();
        let mut tags = b.tag_dict.into_iter().zip(b.tag_keys);
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.sources.len());
        let mut ts = Some(b.ts);
        for s in &self.sources {
            let a: ArrayRef = match s {
                ColumnSource::Time => {
                    let v = ts.take().unwrap_or_else(|| vec![0; n]);
                    Arc::new(TimestampNanosecondArray::from(v))
                }
                ColumnSource::Field(..) => column_to_array(fields.next().expect("one column per field source")),
                ColumnSource::Tag(_) => {
                    let (dict, keys) = tags.next().expect("one dictionary per tag source");
                    tag_array(dict, keys)?
                }
            };
            arrays.push(a);
        }
        let opts = RecordBatchOptions::new().with_row_count(Some(n));
        Ok(RecordBatch::try_new_with_options(self.schema.clone(), arrays, &opts)?)
    }
}

fn tag_array(dict: Vec<Option<Arc<str>>>, keys: Vec<i32>) -> Result<ArrayRef> {
    // A series without this tag gets a null dictionary value: turn it into a null key.
    let nulls: Vec<bool> = keys.iter().map(|k| dict[*k as usize].is_some()).collect();
    let nulls = (!nulls.iter().all(|v| *v)).then(|| NullBuffer::from(nulls));
    let keys = Int32Array::new(keys.into(), nulls);
    let values = StringArray::from_iter(dict.iter().map(|v| Some(v.as_deref().unwrap_or(""))));
    Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(keys, Arc::new(values))?))
}

fn value_scalar(ty: FieldType, v: Value) -> ScalarValue {
    match (ty, v) {
        (FieldType::Float, Value::Float(x)) => ScalarValue::Float64(Some(x)),
        (FieldType::Integer, Value::Integer(x)) => ScalarValue::Int64(Some(x)),
        (FieldType::UInteger, Value::UInteger(x)) => ScalarValue::UInt64(Some(x)),
        (FieldType::Boolean, Value::Boolean(x)) => ScalarValue::Boolean(Some(x)),
        (FieldType::String, Value::String(x)) => ScalarValue::Utf8(Some(x)),
        _ => ScalarValue::Null,
    }
}

pub fn column_to_array(c: Column) -> ArrayRef {
    let nulls = (!c.validity.iter().all(|v| *v)).then(|| NullBuffer::from(c.validity));
    match c.values {
        ColumnValues::Float(v) => Arc::new(Float64Array::new(v.into(), nulls)),
        ColumnValues::Integer(v) => Arc::new(Int64Array::new(v.into(), nulls)),
        ColumnValues::UInteger(v) => Arc::new(UInt64Array::new(v.into(), nulls)),
        ColumnValues::Boolean(v) => Arc::new(BooleanArray::new(BooleanBuffer::from(v), nulls)),
        ColumnValues::String(v) => {
            let valid = nulls.as_ref();
            Arc::new(StringArray::from_iter(v.iter().enumerate().map(|(i, s)| valid.is_none_or(|n| n.is_valid(i)).then_some(s.as_str()))))
        }
    }
}
