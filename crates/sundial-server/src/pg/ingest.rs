//! Ingest over SQL: `INSERT INTO t (time, tag…, field…) VALUES …` and `COPY t FROM STDIN` (text and CSV),
//! written through [`sundial_storage::Engine::write`] exactly like line protocol (same WAL, same fsync
//! policy, durable when the command completes).
//!
//! **Which columns are tags.** The table's existing schema decides for existing columns. A new column
//! becomes a *tag* when its first value is a string (SQL string literal, `text` parameter, or in COPY a value
//! that is neither a number nor a boolean) and a *field* otherwise, typed by the value: SQL integers →
//! `BIGINT`, other numbers → `DOUBLE`, booleans → `BOOLEAN` (COPY text has no integer/float distinction:
//! numbers become `DOUBLE`, as unsuffixed numbers do in line protocol). To store a string *field*, create it
//! first with line protocol (`t,host=a msg="text"`) — after that INSERT and COPY fill it as a field.
//!
//! **time.** `time` takes a timestamp, ISO 8601 text (`2023-11-14 22:13:20`, `…T…Z`, `…+01:00`) or an
//! integer of nanoseconds since the epoch; rows without it get the server's clock.
//!
//! **Atomicity.** Writes are not transactional: INSERT writes all rows in one batch (one WAL record); COPY
//! writes every [`COPY_BATCH_ROWS`] rows, so a COPY that fails half-way keeps the batches before the error.

use std::collections::HashMap;

use sundial_query::datafusion::arrow::array::{Array, AsArray, RecordBatch};
use sundial_query::datafusion::arrow::compute::cast;
use sundial_query::datafusion::arrow::datatypes::{DataType, TimeUnit};
use sundial_storage::catalog::ColumnKind;
use sundial_storage::engine::WritePoint;
use sundial_storage::types::{FieldType, Value};

use super::errors::{PgError, code};
use super::types::parse_timestamp_ns;

/// Rows buffered by COPY before they are written as one batch.
pub const COPY_BATCH_ROWS: usize = 10_000;
/// Rows one INSERT may carry (its rows are materialised before the write).
pub const INSERT_ROWS_MAX: usize = 1_000_000;
/// Bytes of one COPY line (a row) held while waiting for its end.
pub const COPY_LINE_BYTES_MAX: usize = 16 * 1024 * 1024;

/// What a column of the target is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColKind {
    Time,
    Tag,
    Field(FieldType),
    /// A new column whose kind is decided by its first non-null value.
    Undecided,
}

/// The target of an INSERT or COPY: resolved column names and kinds.
#[derive(Clone, Debug)]
pub struct Target {
    pub db: String,
    pub table: String,
    pub columns: Vec<String>,
    pub kinds: Vec<ColKind>,
}

/// One row ready to write (owned).
#[derive(Debug, Default)]
pub struct Row {
    pub ts: Option<i64>,
    pub tags: Vec<(usize, String)>,
    pub fields: Vec<(usize, Value)>,
}

impl Target {
    /// Resolves `columns` (or, when empty, the table's own columns) against the catalog.
    pub fn resolve(
        engine: &sundial_storage::Engine,
        db: &str,
        table: &str,
        columns: Vec<String>,
    ) -> Result<Target, PgError> {
        let cat = engine.catalog();
        let dbc = cat.db(db).ok_or_else(|| {
            PgError::new(
                code::INVALID_CATALOG_NAME,
                format!("database \"{db}\" does not exist"),
            )
        })?;
        let t = dbc.table(table);
        let columns = if columns.is_empty() {
            let t = t.ok_or_else(|| {
                PgError::new(code::UNDEFINED_TABLE, format!("relation \"{table}\" does not exist"))
                    .with_hint("name the columns, e.g. INSERT INTO t (time, host, usage) …; the first write creates the table")
            })?;
            let mut names: Vec<String> = t
                .columns()
                .iter()
                .map(|c| c.name.to_string())
                .filter(|n| n != "time")
                .collect();
            names.sort();
            names.insert(0, "time".to_string());
            names
        } else {
            columns
        };
        let mut seen = std::collections::HashSet::new();
        let mut kinds = Vec::with_capacity(columns.len());
        for c in &columns {
            if !seen.insert(c.as_str()) {
                return Err(PgError::new(
                    code::DUPLICATE_COLUMN,
                    format!("column \"{c}\" specified more than once"),
                ));
            }
            kinds.push(if c == "time" {
                ColKind::Time
            } else {
                match t.and_then(|t| t.column(c)).map(|d| d.kind) {
                    Some(ColumnKind::Tag) => ColKind::Tag,
                    Some(ColumnKind::Field(ft)) => ColKind::Field(ft),
                    None => ColKind::Undecided,
                }
            });
        }
        Ok(Target {
            db: db.to_string(),
            table: table.to_string(),
            columns,
            kinds,
        })
    }

    /// Writes rows; returns how many were written. Blocking (call from a blocking thread).
    pub fn write(
        &self,
        engine: &sundial_storage::Engine,
        rows: &[Row],
        now_ns: i64,
    ) -> Result<usize, PgError> {
        if rows.is_empty() {
            return Ok(0);
        }
        let mut points = Vec::with_capacity(rows.len());
        for (i, r) in rows.iter().enumerate() {
            if r.fields.is_empty() {
                return Err(PgError::new(
                    code::NOT_NULL_VIOLATION,
                    format!(
                        "row {} has no non-null field value; a row needs at least one field (tags and time alone are not stored)",
                        i + 1
                    ),
                ));
            }
            let tags: Vec<(&str, &str)> = r
                .tags
                .iter()
                .map(|(c, v)| (self.columns[*c].as_str(), v.as_str()))
                .collect();
            let fields: Vec<_> = r
                .fields
                .iter()
                .map(|(c, v)| (self.columns[*c].as_str(), v.clone()))
                .collect();
            points.push(WritePoint {
                line: i + 1,
                table: &self.table,
                key: None,
                known: None,
                tags: tags.into(),
                fields: fields.into(),
                ts: r.ts.unwrap_or(now_ns),
            });
        }
        let outcome = engine
            .write(&self.db, &points)
            .map_err(|e| super::errors::from_storage(&e))?;
        if let Some((line, e)) = outcome.rejected.first() {
            let mut err = super::errors::from_storage(e);
            err.message = format!(
                "row {line}: {} ({} rows written, {} rejected)",
                err.message,
                outcome.rows_written,
                outcome.rejected.len()
            );
            return Err(err);
        }
        Ok(outcome.rows_written)
    }

    /// Fixes the kind of an undecided column from its first value.
    fn decide(&mut self, c: usize, kind: ColKind) -> ColKind {
        if self.kinds[c] == ColKind::Undecided {
            self.kinds[c] = kind;
        }
        self.kinds[c]
    }

    /// Converts the materialised result of an INSERT's source query into rows.
    pub fn rows_from_batches(&mut self, batches: &[RecordBatch]) -> Result<Vec<Row>, PgError> {
        let mut rows = Vec::new();
        for b in batches {
            if b.num_columns() != self.columns.len() {
                return Err(PgError::new(
                    code::SYNTAX_ERROR,
                    format!(
                        "INSERT has {} target columns but {} expressions",
                        self.columns.len(),
                        b.num_columns()
                    ),
                ));
            }
            if rows.len() + b.num_rows() > INSERT_ROWS_MAX {
                return Err(PgError::new(
                    code::PROGRAM_LIMIT_EXCEEDED,
                    format!(
                        "INSERT of more than {INSERT_ROWS_MAX} rows (INSERT_ROWS_MAX); use COPY for bulk loads"
                    ),
                ));
            }
            let base = rows.len();
            rows.extend((0..b.num_rows()).map(|_| Row::default()));
            for c in 0..b.num_columns() {
                self.column_into_rows(c, b.column(c), &mut rows[base..])?;
            }
        }
        Ok(rows)
    }

    fn column_into_rows(
        &mut self,
        c: usize,
        array: &dyn Array,
        rows: &mut [Row],
    ) -> Result<(), PgError> {
        let name = self.columns[c].clone();
        let dt = array.data_type().clone();
        let strings = match &dt {
            DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Dictionary(..) => {
                Some(cast(array, &DataType::Utf8).map_err(PgError::internal)?)
            }
            _ => None,
        };
        let first_kind = match &dt {
            DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Dictionary(..)
            | DataType::Null => ColKind::Tag,
            DataType::Boolean => ColKind::Field(FieldType::Boolean),
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32 => ColKind::Field(FieldType::Integer),
            DataType::UInt64 => ColKind::Field(FieldType::UInteger),
            _ => ColKind::Field(FieldType::Float),
        };
        let kind = if array.null_count() == array.len() && self.kinds[c] == ColKind::Undecided {
            return Ok(());
        } else {
            self.decide(c, first_kind)
        };
        let as_i64 = cast(array, &DataType::Int64).ok();
        let as_f64 = cast(array, &DataType::Float64).ok();
        let as_ts = match &dt {
            DataType::Timestamp(..) => {
                cast(array, &DataType::Timestamp(TimeUnit::Nanosecond, None)).ok()
            }
            _ => None,
        };
        for (i, row) in rows.iter_mut().enumerate() {
            if array.is_null(i) {
                continue;
            }
            let text = strings
                .as_ref()
                .map(|s| s.as_string::<i32>().value(i).to_string());
            match kind {
                ColKind::Time => {
                    row.ts = Some(if let Some(ts) = &as_ts {
                        ts.as_primitive::<sundial_query::datafusion::arrow::datatypes::TimestampNanosecondType>().value(i)
                    } else if let Some(t) = &text {
                        parse_timestamp_ns(t).ok_or_else(|| bad_time(t))?
                    } else if let Some(v) = &as_i64 {
                        v.as_primitive::<sundial_query::datafusion::arrow::datatypes::Int64Type>()
                            .value(i)
                    } else {
                        return Err(PgError::new(
                            code::DATATYPE_MISMATCH,
                            format!("column \"time\" is a timestamp but the value is {dt}"),
                        ));
                    });
                }
                ColKind::Tag => {
                    let v = match text {
                        Some(t) => t,
                        None => display_value(array, i),
                    };
                    row.tags.push((c, v));
                }
                ColKind::Field(ft) => {
                    let v = field_value(
                        ft,
                        &name,
                        array,
                        i,
                        text.as_deref(),
                        as_i64.as_deref(),
                        as_f64.as_deref(),
                    )?;
                    row.fields.push((c, v));
                }
                ColKind::Undecided => {}
            }
        }
        Ok(())
    }

    /// Adds one text value (from COPY) to `row`.
    pub fn push_text(
        &mut self,
        row: &mut Row,
        c: usize,
        text: Option<&str>,
    ) -> Result<(), PgError> {
        let Some(t) = text else { return Ok(()) };
        let guess = || {
            if t.parse::<f64>().is_ok() {
                ColKind::Field(FieldType::Float)
            } else if matches!(t, "t" | "f" | "true" | "false" | "TRUE" | "FALSE") {
                ColKind::Field(FieldType::Boolean)
            } else {
                ColKind::Tag
            }
        };
        let kind = if self.kinds[c] == ColKind::Undecided {
            self.decide(c, guess())
        } else {
            self.kinds[c]
        };
        match kind {
            ColKind::Time => {
                row.ts = Some(match parse_timestamp_ns(t) {
                    Some(ns) => ns,
                    None => t.parse::<i64>().map_err(|_| bad_time(t))?,
                })
            }
            ColKind::Tag => row.tags.push((c, t.to_string())),
            ColKind::Field(ft) => {
                let v = parse_field_text(ft, &self.columns[c], t)?;
                row.fields.push((c, v));
            }
            ColKind::Undecided => {}
        }
        Ok(())
    }
}

fn bad_time(t: &str) -> PgError {
    PgError::new(
        code::INVALID_DATETIME_FORMAT,
        format!("invalid value for column \"time\": {t:?}"),
    )
    .with_hint(
        "use ISO 8601 (2023-11-14 22:13:20, 2023-11-14T22:13:20Z) or nanoseconds since the epoch",
    )
}

fn display_value(array: &dyn Array, i: usize) -> String {
    use sundial_query::datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
    ArrayFormatter::try_new(array, &FormatOptions::default())
        .map(|f| f.value(i).to_string())
        .unwrap_or_default()
}

fn mismatch(column: &str, ft: FieldType, got: impl std::fmt::Display) -> PgError {
    PgError::new(
        code::DATATYPE_MISMATCH,
        format!(
            "column \"{column}\" is of type {} but the value is {got}",
            ft.influx_name()
        ),
    )
}

fn field_value(
    ft: FieldType,
    column: &str,
    array: &dyn Array,
    i: usize,
    text: Option<&str>,
    as_i64: Option<&dyn Array>,
    as_f64: Option<&dyn Array>,
) -> Result<Value, PgError> {
    use sundial_query::datafusion::arrow::datatypes::{Float64Type, Int64Type};
    if let Some(t) = text {
        return parse_field_text(ft, column, t);
    }
    let dt = array.data_type();
    let is_float = matches!(
        dt,
        DataType::Float16 | DataType::Float32 | DataType::Float64 | DataType::Decimal128(..)
    );
    Ok(match ft {
        FieldType::Float => Value::Float(
            as_f64
                .filter(|a| !a.is_null(i))
                .ok_or_else(|| mismatch(column, ft, dt))?
                .as_primitive::<Float64Type>()
                .value(i),
        ),
        FieldType::Integer | FieldType::UInteger => {
            if is_float {
                let f = as_f64
                    .ok_or_else(|| mismatch(column, ft, dt))?
                    .as_primitive::<Float64Type>()
                    .value(i);
                if f.fract() != 0.0 {
                    return Err(mismatch(column, ft, f));
                }
            }
            if ft == FieldType::UInteger && matches!(dt, DataType::UInt64) {
                return Ok(Value::UInteger(
                    array
                        .as_primitive::<sundial_query::datafusion::arrow::datatypes::UInt64Type>()
                        .value(i),
                ));
            }
            let v = as_i64
                .filter(|a| !a.is_null(i))
                .ok_or_else(|| mismatch(column, ft, dt))?
                .as_primitive::<Int64Type>()
                .value(i);
            if ft == FieldType::UInteger {
                Value::UInteger(u64::try_from(v).map_err(|_| mismatch(column, ft, v))?)
            } else {
                Value::Integer(v)
            }
        }
        FieldType::Boolean => match dt {
            DataType::Boolean => Value::Boolean(array.as_boolean().value(i)),
            _ => return Err(mismatch(column, ft, dt)),
        },
        FieldType::String => Value::String(display_value(array, i)),
    })
}

fn parse_field_text(ft: FieldType, column: &str, t: &str) -> Result<Value, PgError> {
    let bad = || {
        PgError::new(
            code::INVALID_TEXT_REPRESENTATION,
            format!(
                "invalid input for column \"{column}\" of type {}: {t:?}",
                ft.influx_name()
            ),
        )
    };
    Ok(match ft {
        FieldType::Float => Value::Float(t.trim().parse().map_err(|_| bad())?),
        FieldType::Integer => Value::Integer(t.trim().parse().map_err(|_| bad())?),
        FieldType::UInteger => Value::UInteger(t.trim().parse().map_err(|_| bad())?),
        FieldType::String => Value::String(t.to_string()),
        FieldType::Boolean => Value::Boolean(match t.trim() {
            "t" | "true" | "TRUE" | "True" | "on" | "yes" | "1" => true,
            "f" | "false" | "FALSE" | "False" | "off" | "no" | "0" => false,
            _ => return Err(bad()),
        }),
    })
}

/// COPY input format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyFormat {
    /// PostgreSQL's binary COPY format (`PGCOPY`): values typed by the target columns, which must exist.
    pub binary: bool,
    pub csv: bool,
    pub delimiter: u8,
    pub null: String,
    pub header: bool,
    pub quote: u8,
    pub escape: u8,
}

impl Default for CopyFormat {
    fn default() -> Self {
        CopyFormat {
            binary: false,
            csv: false,
            delimiter: b'\t',
            null: "\\N".into(),
            header: false,
            quote: b'"',
            escape: b'"',
        }
    }
}

/// An in-progress `COPY … FROM STDIN`.
pub struct CopyIn {
    pub target: Target,
    pub format: CopyFormat,
    buf: Vec<u8>,
    pub pending: Vec<Row>,
    pub rows_written: u64,
    line_no: u64,
    header_skipped: bool,
    done: bool,
}

impl CopyIn {
    pub fn new(target: Target, format: CopyFormat) -> CopyIn {
        CopyIn {
            target,
            format,
            buf: Vec::new(),
            pending: Vec::new(),
            rows_written: 0,
            line_no: 0,
            header_skipped: false,
            done: false,
        }
    }

    /// Feeds a CopyData payload; parses every complete record into `pending`.
    pub fn feed(&mut self, data: &[u8]) -> Result<(), PgError> {
        self.buf.extend_from_slice(data);
        if self.format.binary {
            return self.feed_binary();
        }
        let mut start = 0;
        while let Some(end) = record_end(&self.buf[start..], &self.format) {
            let rec = self.buf[start..start + end].to_vec();
            start += end + 1;
            self.record(&rec)?;
        }
        self.buf.drain(..start);
        if self.buf.len() > COPY_LINE_BYTES_MAX {
            return Err(PgError::new(
                code::PROGRAM_LIMIT_EXCEEDED,
                format!(
                    "COPY line {} exceeds {COPY_LINE_BYTES_MAX} bytes (COPY_LINE_BYTES_MAX)",
                    self.line_no + 1
                ),
            ));
        }
        Ok(())
    }

    /// Parses every complete binary tuple in the buffer.
    fn feed_binary(&mut self) -> Result<(), PgError> {
        let bad = |m: String| {
            PgError::new(
                code::INVALID_TEXT_REPRESENTATION,
                format!("COPY binary: {m}"),
            )
        };
        let mut at = 0;
        if !self.header_skipped {
            if self.buf.len() < BINARY_SIGNATURE.len() + 8 {
                return Ok(());
            }
            if !self.buf.starts_with(BINARY_SIGNATURE) {
                return Err(bad("missing PGCOPY signature".into()));
            }
            let ext = u32::from_be_bytes(self.buf[15..19].try_into().unwrap_or_default()) as usize;
            if self.buf.len() < 19 + ext {
                return Ok(());
            }
            at = 19 + ext;
            self.header_skipped = true;
        }
        loop {
            if self.done {
                at = self.buf.len();
                break;
            }
            let Some((tuple, used)) = split_binary_tuple(&self.buf[at..]).map_err(bad)? else {
                break;
            };
            at += used;
            match tuple {
                None => self.done = true,
                Some(values) => {
                    let owned: Vec<Option<Vec<u8>>> =
                        values.iter().map(|v| v.map(<[u8]>::to_vec)).collect();
                    self.line_no += 1;
                    self.binary_tuple(&owned)?;
                }
            }
        }
        self.buf.drain(..at);
        if self.buf.len() > COPY_LINE_BYTES_MAX {
            return Err(PgError::new(
                code::PROGRAM_LIMIT_EXCEEDED,
                format!("COPY tuple exceeds {COPY_LINE_BYTES_MAX} bytes (COPY_LINE_BYTES_MAX)"),
            ));
        }
        Ok(())
    }

    fn binary_tuple(&mut self, values: &[Option<Vec<u8>>]) -> Result<(), PgError> {
        let line = self.line_no;
        let table = self.target.table.clone();
        let at = |e: PgError| PgError {
            message: format!("COPY {table}, tuple {line}: {}", e.message),
            ..e
        };
        if values.len() != self.target.columns.len() {
            return Err(at(PgError::new(
                code::INVALID_TEXT_REPRESENTATION,
                format!(
                    "expected {} columns, got {}",
                    self.target.columns.len(),
                    values.len()
                ),
            )));
        }
        let mut row = Row::default();
        for (c, v) in values.iter().enumerate() {
            let Some(v) = v.as_deref() else { continue };
            let column = &self.target.columns[c];
            let wrong = |what: &str| {
                at(PgError::new(
                    code::INVALID_TEXT_REPRESENTATION,
                    format!("column \"{column}\": binary {what} expected"),
                ))
            };
            let fixed8 = |v: &[u8]| -> Option<[u8; 8]> { v.try_into().ok() };
            match self.target.kinds[c] {
                ColKind::Time => {
                    let us =
                        i64::from_be_bytes(fixed8(v).ok_or_else(|| wrong("timestamp (8 bytes)"))?);
                    row.ts = Some(
                        us.saturating_add(super::types::PG_EPOCH_US)
                            .saturating_mul(1_000),
                    );
                }
                ColKind::Tag | ColKind::Field(FieldType::String) => {
                    let s = std::str::from_utf8(v)
                        .map_err(|_| wrong("UTF-8 text"))?
                        .to_string();
                    if self.target.kinds[c] == ColKind::Tag {
                        row.tags.push((c, s));
                    } else {
                        row.fields.push((c, Value::String(s)));
                    }
                }
                ColKind::Field(FieldType::Float) => row.fields.push((
                    c,
                    Value::Float(f64::from_be_bytes(
                        fixed8(v).ok_or_else(|| wrong("float8"))?,
                    )),
                )),
                ColKind::Field(FieldType::Integer) => row.fields.push((
                    c,
                    Value::Integer(i64::from_be_bytes(fixed8(v).ok_or_else(|| wrong("int8"))?)),
                )),
                ColKind::Field(FieldType::Boolean) => match v {
                    [b] => row.fields.push((c, Value::Boolean(*b != 0))),
                    _ => return Err(wrong("bool (1 byte)")),
                },
                ColKind::Field(FieldType::UInteger) => {
                    let s = super::types::numeric_text(v).ok_or_else(|| wrong("numeric"))?;
                    row.fields.push((
                        c,
                        Value::UInteger(
                            s.parse()
                                .map_err(|_| wrong("non-negative integral numeric"))?,
                        ),
                    ));
                }
                ColKind::Undecided => {
                    return Err(at(PgError::unsupported(format!(
                        "binary COPY into new column \"{column}\": its type is unknown; create it with a first INSERT or line-protocol write"
                    ))));
                }
            }
        }
        self.pending.push(row);
        Ok(())
    }

    /// End of data: the last record may lack its newline.
    pub fn finish(&mut self) -> Result<(), PgError> {
        if self.format.binary {
            if !self.buf.is_empty() && !self.done {
                return Err(PgError::new(
                    code::INVALID_TEXT_REPRESENTATION,
                    "COPY binary: the data ends inside a tuple",
                ));
            }
            return Ok(());
        }
        if !self.buf.is_empty() {
            let rec = std::mem::take(&mut self.buf);
            self.record(&rec)?;
        }
        Ok(())
    }

    fn record(&mut self, rec: &[u8]) -> Result<(), PgError> {
        self.line_no += 1;
        let rec = rec.strip_suffix(b"\r").unwrap_or(rec);
        if self.done {
            return Ok(());
        }
        if rec == b"\\." {
            self.done = true;
            return Ok(());
        }
        if self.format.header && !self.header_skipped {
            self.header_skipped = true;
            return Ok(());
        }
        let line = self.line_no;
        let table = self.target.table.clone();
        let at = |e: PgError| PgError {
            message: format!("COPY {table}, line {line}: {}", e.message),
            ..e
        };
        let values = if self.format.csv {
            split_csv(rec, &self.format)
        } else {
            split_text(rec, &self.format)
        }
        .map_err(|m| at(PgError::new(code::INVALID_TEXT_REPRESENTATION, m)))?;
        if values.len() != self.target.columns.len() {
            return Err(at(PgError::new(
                code::INVALID_TEXT_REPRESENTATION,
                format!(
                    "expected {} columns, got {}",
                    self.target.columns.len(),
                    values.len()
                ),
            )));
        }
        let mut row = Row::default();
        for (c, v) in values.iter().enumerate() {
            self.target
                .push_text(&mut row, c, v.as_deref())
                .map_err(at)?;
        }
        self.pending.push(row);
        Ok(())
    }
}

/// The 11-byte signature of PostgreSQL's binary COPY format.
const BINARY_SIGNATURE: &[u8] = b"PGCOPY\n\xff\r\n\0";

/// One binary tuple from the front of `buf`: `Some((None, n))` is the trailer, `None` needs more bytes.
type BinaryTuple<'a> = Option<(Option<Vec<Option<&'a [u8]>>>, usize)>;

fn split_binary_tuple(buf: &[u8]) -> Result<BinaryTuple<'_>, String> {
    if buf.len() < 2 {
        return Ok(None);
    }
    let n = i16::from_be_bytes([buf[0], buf[1]]);
    if n == -1 {
        return Ok(Some((None, 2)));
    }
    let n = usize::try_from(n).map_err(|_| format!("invalid field count {n}"))?;
    let mut at = 2;
    let mut values = Vec::with_capacity(n);
    for _ in 0..n {
        let Some(len) = buf.get(at..at + 4) else {
            return Ok(None);
        };
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        at += 4;
        if len == -1 {
            values.push(None);
            continue;
        }
        let len = usize::try_from(len).map_err(|_| format!("invalid field length {len}"))?;
        let Some(v) = buf.get(at..at + len) else {
            return Ok(None);
        };
        values.push(Some(v));
        at += len;
    }
    Ok(Some((Some(values), at)))
}

/// Index of the newline ending the first complete record of `buf`, honouring CSV quotes.
fn record_end(buf: &[u8], f: &CopyFormat) -> Option<usize> {
    if !f.csv {
        return buf.iter().position(|b| *b == b'\n');
    }
    let mut quoted = false;
    let mut i = 0;
    while i < buf.len() {
        let b = buf[i];
        if quoted {
            if b == f.escape && f.escape != f.quote && i + 1 < buf.len() {
                i += 2;
                continue;
            }
            if b == f.quote {
                if f.escape == f.quote && buf.get(i + 1) == Some(&f.quote) {
                    i += 2;
                    continue;
                }
                quoted = false;
            }
        } else if b == f.quote {
            quoted = true;
        } else if b == b'\n' {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn utf8(v: Vec<u8>) -> Result<String, String> {
    String::from_utf8(v).map_err(|_| "invalid UTF-8".to_string())
}

/// PostgreSQL text format: delimiter-separated, backslash escapes, `\N` (the NULL string) for NULL.
fn split_text(rec: &[u8], f: &CopyFormat) -> Result<Vec<Option<String>>, String> {
    let mut out = Vec::new();
    for raw in rec.split(|b| *b == f.delimiter) {
        if raw == f.null.as_bytes() {
            out.push(None);
            continue;
        }
        let mut v = Vec::with_capacity(raw.len());
        let mut i = 0;
        while i < raw.len() {
            if raw[i] == b'\\' && i + 1 < raw.len() {
                i += 1;
                v.push(match raw[i] {
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'b' => 8,
                    b'f' => 12,
                    b'v' => 11,
                    other => other,
                });
            } else {
                v.push(raw[i]);
            }
            i += 1;
        }
        out.push(Some(utf8(v)?));
    }
    Ok(out)
}

/// CSV: quoted values may hold delimiters, quotes (doubled) and newlines; an unquoted value equal to the
/// NULL string (empty by default) is NULL, a quoted empty string is an empty string.
fn split_csv(rec: &[u8], f: &CopyFormat) -> Result<Vec<Option<String>>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        let mut v = Vec::new();
        let mut was_quoted = false;
        let mut quoted = false;
        while i < rec.len() {
            let b = rec[i];
            if quoted {
                if b == f.quote && f.escape == f.quote && rec.get(i + 1) == Some(&f.quote) {
                    v.push(f.quote);
                    i += 2;
                    continue;
                }
                if b == f.escape && f.escape != f.quote && i + 1 < rec.len() {
                    v.push(rec[i + 1]);
                    i += 2;
                    continue;
                }
                if b == f.quote {
                    quoted = false;
                } else {
                    v.push(b);
                }
            } else if b == f.quote {
                quoted = true;
                was_quoted = true;
            } else if b == f.delimiter {
                break;
            } else {
                v.push(b);
            }
            i += 1;
        }
        if quoted {
            return Err("unterminated CSV quoted field".into());
        }
        if !was_quoted && v == f.null.as_bytes() {
            out.push(None);
        } else {
            out.push(Some(utf8(v)?));
        }
        if i >= rec.len() {
            return Ok(out);
        }
        i += 1; // the delimiter
    }
}

/// The fields of an encoded DataRow body (`len:i32, bytes` each; `-1` is NULL).
pub fn data_row_fields(data: &[u8]) -> Vec<Option<Vec<u8>>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 4 <= data.len() {
        let len = i32::from_be_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
        i += 4;
        if len < 0 {
            out.push(None);
        } else {
            let end = (i + len as usize).min(data.len());
            out.push(Some(data[i..end].to_vec()));
            i = end;
        }
    }
    out
}

/// One COPY output line (with its newline) in text or CSV format.
pub fn copy_line(values: &[Option<Vec<u8>>], f: &CopyFormat) -> Vec<u8> {
    let mut line = Vec::new();
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            line.push(f.delimiter);
        }
        match v {
            None => line.extend_from_slice(f.null.as_bytes()),
            Some(v) if f.csv => {
                let needs_quotes = v.is_empty()
                    || v == f.null.as_bytes()
                    || v.iter()
                        .any(|b| *b == f.delimiter || *b == f.quote || *b == b'\n' || *b == b'\r');
                if needs_quotes {
                    line.push(f.quote);
                    for b in v {
                        if *b == f.quote || *b == f.escape {
                            line.push(f.escape);
                        }
                        line.push(*b);
                    }
                    line.push(f.quote);
                } else {
                    line.extend_from_slice(v);
                }
            }
            Some(v) => {
                for b in v {
                    match *b {
                        b'\\' => line.extend_from_slice(b"\\\\"),
                        b'\n' => line.extend_from_slice(b"\\n"),
                        b'\r' => line.extend_from_slice(b"\\r"),
                        b'\t' => line.extend_from_slice(b"\\t"),
                        d if d == f.delimiter => {
                            line.push(b'\\');
                            line.push(d);
                        }
                        other => line.push(other),
                    }
                }
            }
        }
    }
    line.push(b'\n');
    line
}

/// Tags/fields of a column list by name, for error messages.
pub fn kinds_by_name(t: &Target) -> HashMap<&str, ColKind> {
    t.columns
        .iter()
        .map(String::as_str)
        .zip(t.kinds.iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_lines_round_trip_through_the_parsers() {
        let values = vec![
            Some(b"a\tb\\c".to_vec()),
            None,
            Some(b"x,\"y\"\nz".to_vec()),
            Some(Vec::new()),
        ];
        for f in [
            CopyFormat::default(),
            CopyFormat {
                csv: true,
                delimiter: b',',
                null: String::new(),
                ..CopyFormat::default()
            },
        ] {
            let line = copy_line(&values, &f);
            let rec = &line[..record_end(&line, &f).unwrap()];
            let back = if f.csv {
                split_csv(rec, &f)
            } else {
                split_text(rec, &f)
            }
            .unwrap();
            let want: Vec<Option<String>> = values
                .iter()
                .map(|v| v.as_ref().map(|b| String::from_utf8(b.clone()).unwrap()))
                .collect();
            assert_eq!(back, want, "csv={}", f.csv);
        }
    }

    #[test]
    fn binary_tuples_split_across_chunks() {
        let mut t = vec![0u8, 2];
        t.extend_from_slice(&3i32.to_be_bytes());
        t.extend_from_slice(b"abc");
        t.extend_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(split_binary_tuple(&t[..6]).unwrap(), None);
        let (values, used) = split_binary_tuple(&t).unwrap().unwrap();
        assert_eq!(
            (values.unwrap(), used),
            (vec![Some(&b"abc"[..]), None], t.len())
        );
        assert_eq!(split_binary_tuple(&[0xff, 0xff]).unwrap(), Some((None, 2)));
        assert!(split_binary_tuple(&[0x80, 0x00]).is_err());
    }

    #[test]
    fn text_format_splits_and_unescapes() {
        let f = CopyFormat::default();
        assert_eq!(
            split_text(b"a\\tb\t\\N\t1.5", &f).unwrap(),
            vec![Some("a\tb".into()), None, Some("1.5".into())]
        );
    }

    #[test]
    fn csv_handles_quotes_nulls_and_newlines() {
        let f = CopyFormat {
            csv: true,
            delimiter: b',',
            null: String::new(),
            ..CopyFormat::default()
        };
        assert_eq!(
            split_csv(b"\"a,\"\"b\"\"\",,\"\",2", &f).unwrap(),
            vec![
                Some("a,\"b\"".into()),
                None,
                Some(String::new()),
                Some("2".into())
            ]
        );
        assert_eq!(record_end(b"\"x\ny\",1\nnext", &f), Some(7));
        assert!(split_csv(b"\"open", &f).is_err());
    }
}
