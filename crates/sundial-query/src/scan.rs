//! The scan: reads selected series of one table from a storage snapshot and emits Arrow batches.
//!
//! The selected series (from the tag index) are split into `partitions` contiguous ranges so DataFusion
//! can read them in parallel. Rows leave the scan grouped by series and, within a series, sorted by time.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int32Array, Int64Array, RecordBatch, RecordBatchOptions,
    StringArray, StringBuilder, TimestampNanosecondArray, UInt64Array,
};
use datafusion::arrow::buffer::{BooleanBuffer, NullBuffer};
use datafusion::arrow::datatypes::{Int32Type, SchemaRef};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::config::ConfigOptions;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::AggregateExec;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
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
use sundial_storage::engine::{PackRows, Piece, ScanCursor, TableSnapshot, TailSnapshot};
use sundial_storage::rows::RowsRef;
use sundial_storage::types::{Column, ColumnValues, FieldType, Value};

/// Rows per emitted batch (a batch may exceed it by one series' rows, or one pack's).
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
    /// Whether the scan gives exact statistics ([`ScanStatisticsWanted`]), and those of the whole scan,
    /// computed once when first asked.
    exact_stats: bool,
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
        ScanExec { engine, db, table, schema, sources, series, ts_range, partitions, limit, tail: None, props, exact_stats: false, stats }
    }

    /// The same scan, giving exact statistics when storage can.
    fn with_exact_statistics(&self) -> ScanExec {
        ScanExec {
            engine: self.engine.clone(),
            schema: self.schema.clone(),
            sources: self.sources.clone(),
            series: self.series.clone(),
            props: self.props.clone(),
            exact_stats: true,
            stats: std::sync::OnceLock::new(),
            ..*self
        }
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
    /// overlapping sources) and an aggregate can use them ([`ScanStatisticsWanted`]): DataFusion then
    /// answers `count`, `min` and `max` without a `GROUP BY` from them and never runs the scan. Unknown
    /// otherwise, and per partition.
    fn statistics_from_inputs(&self, _inputs: &[Arc<Statistics>], args: &StatisticsArgs) -> Result<Arc<Statistics>> {
        if !self.exact_stats || args.partition().is_some() || self.limit.is_some() || self.tail.is_some() {
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
        let tag_cols = self.sources.iter().filter_map(|s| if let ColumnSource::Tag(c) = s { Some(*c) } else { None }).collect();
        let iter = BatchIter {
            engine: self.engine.clone(),
            db: self.db,
            table: self.table,
            snapshot,
            schema: self.schema.clone(),
            sources: self.sources.clone(),
            field_cols,
            tag_cols,
            series,
            at: ScanCursor::default(),
            next_tail: 0,
            more: true,
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
}

/// Physical optimizer rule, run just before DataFusion's `AggregateStatistics`: a scan gives exact
/// statistics only to an aggregate without `GROUP BY` directly above it (through projections and
/// repartitions), the one plan shape that rule answers from statistics.
///
/// Why: storage's statistics walk the block index of every series selected (`Engine::summarize`), a
/// second over TSBS's 10 M hosts, and DataFusion asks any scan for them when it plans the node above
/// it: a `FilterExec` over a condition on a field takes them to estimate its selectivity, and spent
/// that second, alone on one thread, before a scan of two and a half.
#[derive(Debug)]
pub struct ScanStatisticsWanted;

impl PhysicalOptimizerRule for ScanStatisticsWanted {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_down(|node| {
            let Some(agg) = node.downcast_ref::<AggregateExec>() else { return Ok(Transformed::no(node)) };
            if !agg.group_expr().is_empty() {
                return Ok(Transformed::no(node));
            }
            match scan_below(agg.input())? {
                Some(input) => Ok(Transformed::yes(node.replace_children(vec![input], SAME_PROPERTIES)?)),
                None => Ok(Transformed::no(node)),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "sundial_scan_statistics_wanted"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// A node's properties do not change when its scan gives statistics.
const SAME_PROPERTIES: ReplaceChildrenOptions = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Keep);

/// `plan` with the [`ScanExec`] it reads through nodes that pass statistics on unchanged made to give
/// exact ones; `None` when there is no such scan.
fn scan_below(plan: &Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if let Some(scan) = plan.downcast_ref::<ScanExec>() {
        return Ok(Some(Arc::new(scan.with_exact_statistics())));
    }
    let passes = plan.is::<ProjectionExec>() || plan.is::<CoalescePartitionsExec>() || plan.is::<RepartitionExec>();
    match plan.children().as_slice() {
        [child] if passes => match scan_below(child)? {
            Some(c) => Ok(Some(Arc::clone(plan).replace_children(vec![c], SAME_PROPERTIES)?)),
            None => Ok(None),
        },
        _ => Ok(None),
    }
}

/// A table's rows as a scan reads them: whole, or only each series' last rows.
enum Snapshot {
    Full(TableSnapshot),
    Tail(TailSnapshot),
}

struct BatchIter {
    engine: Arc<Engine>,
    db: DbId,
    table: TableId,
    snapshot: Snapshot,
    schema: SchemaRef,
    sources: Vec<ColumnSource>,
    field_cols: Vec<(ColId, FieldType)>,
    /// The projected tag columns, in projection order.
    tag_cols: Vec<ColId>,
    series: Vec<SeriesId>,
    /// Where the scan of `series` stopped: a full snapshot's cursor, a tail snapshot's next series'
    /// index; and whether series are left.
    at: ScanCursor,
    next_tail: usize,
    more: bool,
    rows_left: usize,
}

/// Accumulates several series' rows into one batch.
struct Builder {
    ts: Vec<i64>,
    fields: Vec<Column>,
    /// Each series in the batch, in order, and its rows there: its tag values are looked up once the
    /// batch is full, for these alone.
    runs: Vec<(SeriesId, usize)>,
}

impl Builder {
    /// Appends the first `take` rows of `r`, all of series `r.series`; returns `take`.
    fn push(&mut self, r: &RowsRef<'_>, take: usize) -> usize {
        self.push_rows(r, take);
        self.add_run(r.series, take);
        take
    }

    /// Appends the first `take` rows of a pack piece: its members' rows, one after another; returns
    /// `take`.
    fn push_pack(&mut self, p: &PackRows<'_>, take: usize) -> usize {
        self.push_rows(&p.rows, take);
        for (s, rows) in p.members {
            let n = rows.len().min(take.saturating_sub(rows.start));
            if n > 0 {
                self.add_run(*s, n);
            }
        }
        take
    }

    fn push_rows(&mut self, r: &RowsRef<'_>, take: usize) {
        self.ts.extend_from_slice(&r.ts[..take]);
        for (i, dst) in self.fields.iter_mut().enumerate() {
            match r.col(i) {
                Some(c) => dst.extend_range(c, r.offset..r.offset + take),
                None => dst.push_nulls(take),
            }
        }
    }

    fn add_run(&mut self, series: SeriesId, rows: usize) {
        match self.runs.last_mut() {
            Some((s, n)) if *s == series => *n += rows,
            _ => self.runs.push((series, rows)),
        }
    }
}

impl Iterator for BatchIter {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        let mut b = Builder { ts: Vec::new(), fields: self.field_cols.iter().map(|(_, t)| Column::new(*t)).collect(), runs: Vec::new() };
        let rows_left = &mut self.rows_left;
        let read = match &self.snapshot {
            _ if !self.more || *rows_left == 0 => Ok(()),
            Snapshot::Full(snap) => snap
                .scan_on(&self.series, &mut self.at, |p| {
                    *rows_left -= match p {
                        Piece::Rows(r) => b.push(&r, r.ts.len().min(*rows_left)),
                        Piece::Pack(p) => b.push_pack(&p, p.rows.ts.len().min(*rows_left)),
                        Piece::Hours(_) => unreachable!("a scan without `accept` hands out no hour statistics"),
                    };
                    b.ts.len() < BATCH_ROWS && *rows_left > 0
                })
                .map(|more| self.more = more),
            Snapshot::Tail(snap) => loop {
                if self.next_tail == self.series.len() || b.ts.len() >= BATCH_ROWS || *rows_left == 0 {
                    self.more = self.next_tail < self.series.len();
                    break Ok(());
                }
                let s = self.series[self.next_tail];
                self.next_tail += 1;
                match snap.read_series(s) {
                    Ok(Some(rows)) => *rows_left -= b.push(&RowsRef::of(&rows), rows.len().min(*rows_left)),
                    Ok(None) => {}
                    Err(e) => break Err(e),
                }
            },
        };
        if let Err(e) = read {
            self.more = false;
            return Some(Err(DataFusionError::External(Box::new(e))));
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
        let mut tags = self.tag_arrays(&b.runs)?.into_iter();
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.sources.len());
        let mut ts = Some(b.ts);
        for s in &self.sources {
            let a: ArrayRef = match s {
                ColumnSource::Time => {
                    let v = ts.take().unwrap_or_else(|| vec![0; n]);
                    Arc::new(TimestampNanosecondArray::from(v))
                }
                ColumnSource::Field(..) => column_to_array(fields.next().expect("one column per field source")),
                ColumnSource::Tag(_) => tags.next().expect("one array per tag source"),
            };
            arrays.push(a);
        }
        let opts = RecordBatchOptions::new().with_row_count(Some(n));
        Ok(RecordBatch::try_new_with_options(self.schema.clone(), arrays, &opts)?)
    }

    /// Per projected tag column, the batch's column of `runs`' series' values: a dictionary of the
    /// values in the batch, a series without the tag a null. From the catalog once per batch, so a scan
    /// of 10 M series never holds every series' tag strings at once.
    fn tag_arrays(&self, runs: &[(SeriesId, usize)]) -> Result<Vec<ArrayRef>> {
        if self.tag_cols.is_empty() {
            return Ok(Vec::new());
        }
        let cat = self.engine.catalog();
        let t = cat.db_by_id(self.db).and_then(|d| d.table_by_id(self.table));
        let n: usize = runs.iter().map(|r| r.1).sum();
        let mut arrays = Vec::with_capacity(self.tag_cols.len());
        let mut places: HashMap<&str, i32> = HashMap::new();
        for &col in &self.tag_cols {
            places.clear();
            let mut values = StringBuilder::new();
            let mut keys: Vec<i32> = Vec::with_capacity(n);
            let mut valid: Vec<bool> = Vec::with_capacity(n);
            for &(s, rows) in runs {
                let (key, ok) = match t.and_then(|t| t.series_tag_value(s, col)) {
                    Some(v) => {
                        let next = places.len() as i32;
                        let key = *places.entry(v).or_insert_with(|| {
                            values.append_value(v);
                            next
                        });
                        (key, true)
                    }
                    None => (0, false),
                };
                keys.extend(std::iter::repeat_n(key, rows));
                valid.extend(std::iter::repeat_n(ok, rows));
            }
            let nulls = (!valid.iter().all(|v| *v)).then(|| NullBuffer::from(valid));
            let keys = Int32Array::new(keys.into(), nulls);
            arrays.push(Arc::new(DictionaryArray::<Int32Type>::try_new(keys, Arc::new(values.finish()))?) as ArrayRef);
        }
        Ok(arrays)
    }
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::physical_plan::displayable;
    use sundial_storage::engine::WritePoint;
    use sundial_storage::types::Value;
    use sundial_storage::{Engine, EngineConfig};

    use crate::QueryEngine;

    const T0: i64 = 1_451_606_400_000_000_000; // 2016-01-01T00:00:00Z
    const SEC: i64 = 1_000_000_000;

    /// Each row of the answer, its cells as text (a null: "NULL").
    async fn rows(q: &QueryEngine, sql: &str) -> Vec<Vec<String>> {
        let out = q.sql(Some("db"), sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        let opts = FormatOptions::default().with_null("NULL");
        let mut rows = Vec::new();
        for b in &out.batches {
            let cols: Vec<ArrayFormatter<'_>> = b.columns().iter().map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).unwrap()).collect();
            for i in 0..b.num_rows() {
                rows.push(cols.iter().map(|c| c.value(i).to_string()).collect());
            }
        }
        rows
    }

    /// A scan of more rows than a batch holds, per partition: series in a segment (packed: three rows
    /// each; runs of them alone there, read a pack's run at a time), some with later rows in the
    /// memtable, some rewritten there (last write wins), a tag that half the series lack. Answers that need every row (conditions on fields) match the rows written,
    /// per series and per tag value, and a LIMIT gives that many rows, each one written.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn scans_of_many_series_in_batches_answer_every_row_once() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Arc::new(Engine::open(EngineConfig::new(dir.path())).unwrap());
        engine.create_database("db", 0, false).unwrap();
        let hosts: Vec<String> = (0..5000).map(|i| format!("host_{i}")).collect();
        // (host, step) -> (rack, n): the rows as written, the last write of a (host, time) winning.
        let mut model: BTreeMap<(usize, i64), (Option<String>, i64)> = BTreeMap::new();
        for round in 0..2 {
            let mut points = Vec::new();
            for (i, h) in hosts.iter().enumerate() {
                let steps = match round {
                    0 => 0..3,
                    _ if i % 100 < 40 => 0..0, // runs of series whose only rows are in the segment
                    _ if i % 50 == 7 => 1..5, // step 1 written again, with another value
                    _ => 3..5,
                };
                for step in steps {
                    let n = (i as i64) * 10 + step + round * 1000;
                    let rack = (i % 2 == 0).then(|| ["rack_0", "rack_1", "rack_2", "rack_3", "rack_4", "rack_5"][i % 6]);
                    let mut tags = vec![("host", h.as_str()), ("region", ["r0", "r1", "r2"][i % 3])];
                    if let Some(r) = rack {
                        tags.push(("rack", r));
                    }
                    let fields = vec![("n", Value::Integer(n)), ("a", Value::Float(n as f64 / 2.0))];
                    points.push(WritePoint { line: 1, table: "m", key: None, known: None, tags: tags.into(), fields: fields.into(), ts: T0 + step * SEC });
                    model.insert((i, step), (rack.map(str::to_string), n));
                }
            }
            engine.write("db", &points).unwrap();
            if round == 0 {
                engine.flush().unwrap();
            }
        }
        assert!(model.len() > 2 * super::BATCH_ROWS + 1000, "each of the two partitions holds more than a batch");
        let q = QueryEngine::new(engine.clone());

        // Per host: rows, and the sum of `n` of even rows (a condition no statistics answer).
        let got = rows(&q, "SELECT host, count(*), sum(n) FROM m WHERE n % 2 = 0 OR n % 2 = 1 GROUP BY host ORDER BY host").await;
        let mut want: BTreeMap<String, (usize, i64)> = BTreeMap::new();
        for ((i, _), (_, n)) in &model {
            let e = want.entry(hosts[*i].clone()).or_default();
            e.0 += 1;
            e.1 += n;
        }
        let want: Vec<Vec<String>> = want.into_iter().map(|(h, (c, s))| vec![h, c.to_string(), s.to_string()]).collect();
        assert_eq!(got.len(), want.len());
        assert_eq!(got, want);

        // Per value of a tag half the series lack: the rows without it under NULL.
        let got = rows(&q, "SELECT rack, count(*), min(a) FROM m WHERE n >= 0 AND n % 3 < 5 GROUP BY rack ORDER BY rack").await;
        let mut want: BTreeMap<Option<String>, (usize, f64)> = BTreeMap::new();
        for (rack, n) in model.values() {
            let e = want.entry(rack.clone()).or_insert((0, f64::MAX));
            e.0 += 1;
            e.1 = e.1.min(*n as f64 / 2.0);
        }
        let mut want: Vec<Vec<String>> =
            want.into_iter().map(|(r, (c, m))| vec![r.unwrap_or_else(|| "NULL".into()), c.to_string(), format!("{m:?}")]).collect();
        want.rotate_left(1); // NULL last, as ORDER BY puts it by default
        assert_eq!(got, want);

        // Statistics: a scan under an aggregate without GROUP BY is asked for them (here they are not
        // exact: rows written again overlap the segment's; `tests/it/test_http.py` has plans answered
        // from them); a scan under a filter or a grouping is not (planning it walked every series'
        // blocks for nothing).
        let ctx = q.session(Some("db"));
        for (sql, asked) in [
            ("SELECT count(*), max(n) FROM m", true),
            ("SELECT count(*) FROM m WHERE n % 2 = 0", false),
            ("SELECT host, count(*) FROM m GROUP BY host", false),
        ] {
            let p = ctx.sql(sql).await.unwrap().create_physical_plan().await.unwrap();
            let mut scans = Vec::new();
            p.apply(|node| {
                if let Some(s) = node.downcast_ref::<super::ScanExec>() {
                    scans.push((s.exact_stats, s.stats.get().is_some()));
                }
                Ok(TreeNodeRecursion::Continue)
            })
            .unwrap();
            assert_eq!(scans, vec![(asked, asked)], "{sql}: {}", displayable(p.as_ref()).indent(true));
        }
        let max = model.values().map(|v| v.1).max().unwrap();
        assert_eq!(rows(&q, "SELECT count(*), max(n) FROM m").await, vec![vec![model.len().to_string(), max.to_string()]]);

        // A LIMIT: that many rows, each as written.
        for limit in [7, super::BATCH_ROWS + 5] {
            let got = rows(&q, &format!("SELECT host, time, n, rack FROM m LIMIT {limit}")).await;
            assert_eq!(got.len(), limit);
            let mut seen = std::collections::HashSet::new();
            for r in &got {
                let i: usize = r[0].strip_prefix("host_").unwrap().parse().unwrap();
                let step = (0..5).find(|s| r[1] == format!("2016-01-01T00:00:0{s}")).unwrap_or_else(|| panic!("time {}", r[1]));
                let (rack, n) = &model[&(i, step)];
                assert_eq!((&r[2], &r[3]), (&n.to_string(), &rack.clone().unwrap_or_else(|| "NULL".into())), "{r:?}");
                assert!(seen.insert((i, step)), "{r:?} twice");
            }
        }
    }
}
