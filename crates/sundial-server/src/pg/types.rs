//! Arrow ↔ PostgreSQL: the type of every result column, its text and binary encodings, and the decoding of
//! bound parameters.
//!
//! | Arrow (DataFusion)                 | PostgreSQL      | note |
//! |------------------------------------|-----------------|------|
//! | `Timestamp(_, None)`               | `timestamp`     | Sundial's `time` column; nanoseconds are truncated to PostgreSQL's microseconds |
//! | `Timestamp(_, Some(tz))`           | `timestamptz`   | sent in UTC (the session `TimeZone` is always UTC) |
//! | `Float64` / `Float32`              | `float8`/`float4` | |
//! | `Int64`, `UInt32` / `Int32`, `UInt16` / `Int16`, `Int8`, `UInt8` | `int8` / `int4` / `int2` | |
//! | `UInt64`                           | `numeric`       | PostgreSQL has no unsigned 64-bit integer |
//! | `Decimal128`                       | `numeric`       | |
//! | `Utf8`, `LargeUtf8`, `Utf8View`, `Dictionary(_, Utf8)` | `text` | tags are dictionary-encoded strings |
//! | `Boolean`                          | `bool`          | |
//! | `Date32`/`Date64`                  | `date`          | |
//! | `Binary`                           | `bytea`         | |
//! | anything else (intervals, lists…)  | `text`          | rendered by Arrow's display formatter |

use std::fmt::Write as _;
use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use pgwire::api::Type;
use pgwire::messages::data::DataRow;
use sundial_query::datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Decimal128Array, RecordBatch, StringArray,
};
use sundial_query::datafusion::arrow::compute::cast;
use sundial_query::datafusion::arrow::datatypes::{
    DataType, Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, TimeUnit,
    UInt64Type,
};
use sundial_query::datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use sundial_query::datafusion::common::ScalarValue;

use super::errors::{PgError, code};

/// Microseconds from the Unix epoch to PostgreSQL's epoch, 2000-01-01.
pub const PG_EPOCH_US: i64 = 946_684_800_000_000;
/// Days from the Unix epoch to 2000-01-01.
const PG_EPOCH_DAYS: i32 = 10_957;

/// Result format of one column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Binary,
}

impl Format {
    pub fn code(self) -> i16 {
        match self {
            Format::Text => 0,
            Format::Binary => 1,
        }
    }

    /// Formats of `n` columns from a Bind message's result format codes (none: all text; one: all alike).
    pub fn from_codes(codes: &[i16], n: usize) -> Result<Vec<Format>, PgError> {
        let one = |c: i16| match c {
            0 => Ok(Format::Text),
            1 => Ok(Format::Binary),
            other => Err(PgError::protocol(format!(
                "unsupported format code {other} (0 = text, 1 = binary)"
            ))),
        };
        match codes.len() {
            0 => Ok(vec![Format::Text; n]),
            1 => Ok(vec![one(codes[0])?; n]),
            m if m == n => codes.iter().map(|c| one(*c)).collect(),
            m => Err(PgError::protocol(format!(
                "bind message has {m} result formats but the query has {n} columns"
            ))),
        }
    }
}

/// The PostgreSQL type a column of `dt` is sent as.
pub fn pg_type(dt: &DataType) -> Type {
    match dt {
        DataType::Boolean => Type::BOOL,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => Type::INT2,
        DataType::Int32 | DataType::UInt16 => Type::INT4,
        DataType::Int64 | DataType::UInt32 => Type::INT8,
        DataType::UInt64 | DataType::Decimal128(..) | DataType::Decimal256(..) => Type::NUMERIC,
        DataType::Float16 | DataType::Float32 => Type::FLOAT4,
        DataType::Float64 => Type::FLOAT8,
        DataType::Timestamp(_, None) => Type::TIMESTAMP,
        DataType::Timestamp(_, Some(_)) => Type::TIMESTAMPTZ,
        DataType::Date32 | DataType::Date64 => Type::DATE,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => Type::BYTEA,
        DataType::Dictionary(_, v) => pg_type(v),
        _ => Type::TEXT,
    }
}

/// The Arrow type a parameter declared as `ty` by the client is decoded to.
pub fn arrow_type_of(ty: &Type) -> Option<DataType> {
    Some(match *ty {
        Type::BOOL => DataType::Boolean,
        Type::INT2 => DataType::Int16,
        Type::INT4 => DataType::Int32,
        Type::INT8 | Type::OID => DataType::Int64,
        Type::FLOAT4 => DataType::Float32,
        Type::FLOAT8 | Type::NUMERIC => DataType::Float64,
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::CHAR => DataType::Utf8,
        Type::TIMESTAMP => DataType::Timestamp(TimeUnit::Nanosecond, None),
        Type::TIMESTAMPTZ => DataType::Timestamp(TimeUnit::Nanosecond, Some("+00:00".into())),
        Type::DATE => DataType::Date32,
        _ => return None,
    })
}

/// `pg_type.typlen` of a type (`-1` variable width).
pub fn type_len(ty: &Type) -> i16 {
    match *ty {
        Type::BOOL => 1,
        Type::INT2 => 2,
        Type::INT4 | Type::FLOAT4 | Type::DATE | Type::OID => 4,
        Type::INT8 | Type::FLOAT8 | Type::TIMESTAMP | Type::TIMESTAMPTZ => 8,
        _ => -1,
    }
}

/// A column made ready for row-wise encoding: exotic Arrow types are cast to the few handled below.
struct Column {
    array: ArrayRef,
    /// Nanoseconds per unit for timestamps.
    ts_unit_ns: i64,
}

fn prepare(array: &ArrayRef) -> Result<Column, PgError> {
    let target = match array.data_type() {
        DataType::Dictionary(_, v) => Some(v.as_ref().clone()),
        DataType::LargeUtf8 | DataType::Utf8View => Some(DataType::Utf8),
        DataType::Int8 | DataType::UInt8 => Some(DataType::Int16),
        DataType::UInt16 => Some(DataType::Int32),
        DataType::UInt32 => Some(DataType::Int64),
        DataType::Float16 => Some(DataType::Float32),
        DataType::Date64 => Some(DataType::Date32),
        DataType::LargeBinary | DataType::BinaryView => Some(DataType::Binary),
        _ => None,
    };
    let mut array = match target {
        Some(t) => cast(array, &t)
            .map_err(|e| PgError::internal(format!("casting a result column: {e}")))?,
        None => array.clone(),
    };
    if let DataType::Dictionary(_, _) = array.data_type() {
        array = cast(&array, &DataType::Utf8).map_err(PgError::internal)?;
    }
    let ts_unit_ns = match array.data_type() {
        DataType::Timestamp(TimeUnit::Second, _) => 1_000_000_000,
        DataType::Timestamp(TimeUnit::Millisecond, _) => 1_000_000,
        DataType::Timestamp(TimeUnit::Microsecond, _) => 1_000,
        _ => 1,
    };
    let handled = matches!(
        array.data_type(),
        DataType::Boolean
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt64
            | DataType::Float32
            | DataType::Float64
            | DataType::Utf8
            | DataType::Timestamp(..)
            | DataType::Date32
            | DataType::Decimal128(..)
            | DataType::Binary
            | DataType::Null
    );
    if !handled {
        // Rare types (intervals, lists, …): Arrow's display text.
        let opts = FormatOptions::new().with_null("");
        let strings: StringArray = {
            let f = ArrayFormatter::try_new(array.as_ref(), &opts).map_err(PgError::internal)?;
            (0..array.len())
                .map(|i| {
                    if array.is_null(i) {
                        None
                    } else {
                        Some(f.value(i).to_string())
                    }
                })
                .collect()
        };
        array = Arc::new(strings);
    }
    Ok(Column { array, ts_unit_ns })
}

/// Appends one DataRow per row of `batch` to `out`.
/// `described` are the types RowDescription announced; a column whose actual type differs (an untyped
/// parameter resolved at execution) is sent as text so the client never misreads binary bytes.
pub fn encode_batch(
    batch: &RecordBatch,
    formats: &[Format],
    described: &[Type],
    out: &mut Vec<DataRow>,
) -> Result<(), PgError> {
    let cols: Vec<Column> = batch
        .columns()
        .iter()
        .enumerate()
        .map(|(i, a)| match described.get(i) {
            Some(t) if *t != pg_type(a.data_type()) => {
                let text = cast(a, &DataType::Utf8).map_err(PgError::internal)?;
                prepare(&text)
            }
            _ => prepare(a),
        })
        .collect::<Result<_, _>>()?;
    let mut buf = BytesMut::with_capacity(batch.num_rows() * (8 + cols.len() * 12));
    let ncols = i16::try_from(cols.len())
        .map_err(|_| PgError::new(code::PROGRAM_LIMIT_EXCEEDED, "too many columns"))?;
    for row in 0..batch.num_rows() {
        for (c, f) in cols.iter().zip(formats) {
            encode_value(c, row, *f, &mut buf);
        }
        out.push(DataRow::new(buf.split(), ncols));
    }
    Ok(())
}

fn encode_value(c: &Column, row: usize, format: Format, buf: &mut BytesMut) {
    let a = c.array.as_ref();
    if a.is_null(row) {
        buf.put_i32(-1);
        return;
    }
    let at = buf.len();
    buf.put_i32(0);
    match (a.data_type(), format) {
        (DataType::Boolean, Format::Binary) => buf.put_u8(a.as_boolean().value(row) as u8),
        (DataType::Boolean, Format::Text) => buf.put_u8(if a.as_boolean().value(row) {
            b't'
        } else {
            b'f'
        }),
        (DataType::Int16, Format::Binary) => buf.put_i16(a.as_primitive::<Int16Type>().value(row)),
        (DataType::Int32, Format::Binary) => buf.put_i32(a.as_primitive::<Int32Type>().value(row)),
        (DataType::Int64, Format::Binary) => buf.put_i64(a.as_primitive::<Int64Type>().value(row)),
        (DataType::Int16, Format::Text) => {
            put_display(buf, a.as_primitive::<Int16Type>().value(row))
        }
        (DataType::Int32, Format::Text) => {
            put_display(buf, a.as_primitive::<Int32Type>().value(row))
        }
        (DataType::Int64, Format::Text) => {
            put_display(buf, a.as_primitive::<Int64Type>().value(row))
        }
        (DataType::UInt64, Format::Text) => {
            put_display(buf, a.as_primitive::<UInt64Type>().value(row))
        }
        (DataType::UInt64, Format::Binary) => {
            numeric_binary(&a.as_primitive::<UInt64Type>().value(row).to_string(), buf)
        }
        (DataType::Float32, Format::Binary) => {
            buf.put_f32(a.as_primitive::<Float32Type>().value(row))
        }
        (DataType::Float64, Format::Binary) => {
            buf.put_f64(a.as_primitive::<Float64Type>().value(row))
        }
        (DataType::Float32, Format::Text) => {
            put_float(buf, a.as_primitive::<Float32Type>().value(row) as f64, true)
        }
        (DataType::Float64, Format::Text) => {
            put_float(buf, a.as_primitive::<Float64Type>().value(row), false)
        }
        (DataType::Utf8, _) => buf.put_slice(a.as_string::<i32>().value(row).as_bytes()),
        (DataType::Binary, Format::Binary) => buf.put_slice(a.as_binary::<i32>().value(row)),
        (DataType::Binary, Format::Text) => {
            buf.put_slice(b"\\x");
            for b in a.as_binary::<i32>().value(row) {
                let _ = write!(BytesWriter(buf), "{b:02x}");
            }
        }
        (DataType::Timestamp(_, tz), f) => {
            let ns = timestamp_value(a, row).saturating_mul(c.ts_unit_ns);
            match f {
                Format::Binary => buf.put_i64(ns.div_euclid(1_000) - PG_EPOCH_US),
                Format::Text => {
                    put_timestamp_text(buf, ns);
                    if tz.is_some() {
                        buf.put_slice(b"+00");
                    }
                }
            }
        }
        (DataType::Date32, Format::Binary) => {
            buf.put_i32(a.as_primitive::<Date32Type>().value(row) - PG_EPOCH_DAYS)
        }
        (DataType::Date32, Format::Text) => {
            let days = a.as_primitive::<Date32Type>().value(row) as i64;
            let mut s = String::new();
            format_timestamp(&mut s, days * 86_400_000_000_000, false);
            buf.put_slice(s.as_bytes());
        }
        (DataType::Decimal128(_, scale), f) => {
            let d: &Decimal128Array = a.as_primitive();
            let s = decimal_string(d.value(row), *scale);
            match f {
                Format::Text => buf.put_slice(s.as_bytes()),
                Format::Binary => numeric_binary(&s, buf),
            }
        }
        _ => {}
    }
    let len = (buf.len() - at - 4) as i32;
    buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

fn timestamp_value(a: &dyn Array, row: usize) -> i64 {
    use sundial_query::datafusion::arrow::datatypes::{
        TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
        TimestampSecondType,
    };
    match a.data_type() {
        DataType::Timestamp(TimeUnit::Second, _) => {
            a.as_primitive::<TimestampSecondType>().value(row)
        }
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            a.as_primitive::<TimestampMillisecondType>().value(row)
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            a.as_primitive::<TimestampMicrosecondType>().value(row)
        }
        _ => a.as_primitive::<TimestampNanosecondType>().value(row),
    }
}

struct BytesWriter<'a>(&'a mut BytesMut);

impl std::fmt::Write for BytesWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.put_slice(s.as_bytes());
        Ok(())
    }
}

fn put_display(buf: &mut BytesMut, v: impl std::fmt::Display) {
    let _ = write!(BytesWriter(buf), "{v}");
}

/// PostgreSQL's float output (`extra_float_digits = 1`): shortest round-trip digits, exponent outside
/// [1e-4, 1e15), `Infinity`/`NaN` spelled out.
pub fn format_float(v: f64, single: bool) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let a = v.abs();
    let sci = a != 0.0 && (a >= 1e15 || a < 1e-4);
    let s = match (single, sci) {
        (true, false) => format!("{}", v as f32),
        (true, true) => format!("{:e}", v as f32),
        (false, false) => format!("{v}"),
        (false, true) => format!("{v:e}"),
    };
    if !sci {
        return s;
    }
    // Rust writes 1e20 / 1.5e-5; PostgreSQL writes 1e+20 / 1.5e-05.
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let (sign, digits) = match exp.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exp),
    };
    format!("{mant}e{sign}{digits:0>2}")
}

fn put_float(buf: &mut BytesMut, v: f64, single: bool) {
    buf.put_slice(format_float(v, single).as_bytes());
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` in UTC, microseconds (trailing zeros trimmed), as PostgreSQL prints.
pub fn format_timestamp(out: &mut String, ns: i64, with_time: bool) {
    let secs = ns.div_euclid(1_000_000_000);
    let sub_ns = ns.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let _ = write!(out, "{y:04}-{m:02}-{d:02}");
    if !with_time {
        return;
    }
    let _ = write!(
        out,
        " {:02}:{:02}:{:02}",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    );
    let us = sub_ns / 1_000;
    if us > 0 {
        let frac = format!("{us:06}");
        let _ = write!(out, ".{}", frac.trim_end_matches('0'));
    }
}

fn put_timestamp_text(buf: &mut BytesMut, ns: i64) {
    let mut s = String::with_capacity(32);
    format_timestamp(&mut s, ns, true);
    buf.put_slice(s.as_bytes());
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// (year, month, day) → days since 1970-01-01.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 } as i64;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn decimal_string(v: i128, scale: i8) -> String {
    if scale <= 0 {
        let mut s = v.to_string();
        s.extend(std::iter::repeat_n('0', (-scale) as usize));
        return s;
    }
    let neg = v < 0;
    let digits = v.unsigned_abs().to_string();
    let scale = scale as usize;
    let digits = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = digits.split_at(digits.len() - scale);
    format!("{}{int}.{frac}", if neg { "-" } else { "" })
}

/// PostgreSQL's binary `numeric` for a decimal string (`-123.4500`): base-10000 digit groups.
pub fn numeric_binary(s: &str, buf: &mut BytesMut) {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let int = int.trim_start_matches('0');
    let dscale = frac.len() as i16;
    let int_pad = (4 - int.len() % 4) % 4;
    let int_digits = format!("{}{int}", "0".repeat(int_pad));
    let frac_pad = (4 - frac.len() % 4) % 4;
    let frac_digits = format!("{frac}{}", "0".repeat(frac_pad));
    let group = |s: &str| -> Vec<i16> {
        s.as_bytes()
            .chunks(4)
            .map(|c| std::str::from_utf8(c).unwrap_or("0").parse().unwrap_or(0))
            .collect()
    };
    let int_groups = group(&int_digits);
    let mut groups = int_groups.clone();
    groups.extend(group(&frac_digits));
    let mut weight = int_groups.len() as i16 - 1;
    let lead = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..lead);
    weight -= lead as i16;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    buf.put_i16(groups.len() as i16);
    buf.put_i16(weight);
    buf.put_u16(if neg && !groups.is_empty() { 0x4000 } else { 0 });
    buf.put_i16(dscale);
    for g in groups {
        buf.put_i16(g);
    }
}

/// Decimal text of a binary `numeric` value.
pub fn numeric_text(b: &[u8]) -> Option<String> {
    numeric_from_binary(b)
}

fn numeric_from_binary(b: &[u8]) -> Option<String> {
    let get = |i: usize| -> Option<i16> { Some(i16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])) };
    let n = get(0)? as usize;
    let weight = get(2)? as i64;
    let sign = get(4)? as u16;
    let dscale = get(6)?.max(0) as usize;
    if sign == 0xC000 {
        return Some("NaN".into());
    }
    let mut int = String::new();
    let mut frac = String::new();
    for i in 0..n {
        let g = get(8 + 2 * i)?;
        let pos = weight - i as i64;
        if pos >= 0 {
            let _ = write!(int, "{g:04}");
        } else {
            let _ = write!(frac, "{g:04}");
        }
    }
    // groups between the last digit and the decimal point
    if n as i64 <= weight {
        for _ in 0..(weight + 1 - n as i64) {
            int.push_str("0000");
        }
    }
    let lead_zero_groups = if weight < -1 {
        (-1 - weight) as usize
    } else {
        0
    };
    let frac = format!("{}{frac}", "0000".repeat(lead_zero_groups));
    let int = int.trim_start_matches('0');
    let mut frac: String = frac.chars().take(dscale).collect();
    while frac.len() < dscale {
        frac.push('0');
    }
    let int = if int.is_empty() { "0" } else { int };
    let sign = if sign == 0x4000 { "-" } else { "" };
    Some(if frac.is_empty() {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    })
}

/// Parses PostgreSQL / ISO 8601 timestamp text to nanoseconds since the epoch (UTC): `2023-11-14`,
/// `2023-11-14 22:13:20`, `2023-11-14T22:13:20.123456Z`, `… +01`, `…+05:30`, `…-0800`. Text without a
/// zone is UTC (the session time zone).
pub fn parse_timestamp_ns(s: &str) -> Option<i64> {
    let s = s.trim();
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse::<i64>().ok() };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)? as u32, num(8..10)? as u32);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let mut ns = days_from_civil(y, mo, d) * 86_400_000_000_000;
    let mut i = 10;
    if i < b.len() && (b[i] == b' ' || b[i] == b'T' || b[i] == b't') {
        i += 1;
        let (h, mi) = (num(i..i + 2)?, num(i + 3..i + 5)?);
        if b.get(i + 2) != Some(&b':') {
            return None;
        }
        i += 5;
        let mut sec = 0;
        if b.get(i) == Some(&b':') {
            sec = num(i + 1..i + 3)?;
            i += 3;
        }
        if h > 24 || mi > 59 || sec > 60 {
            return None;
        }
        ns += (h * 3600 + mi * 60 + sec) * 1_000_000_000;
        if b.get(i) == Some(&b'.') {
            i += 1;
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let frac = &s[start..i];
            if frac.is_empty() {
                return None;
            }
            let digits: String = frac.chars().chain(std::iter::repeat('0')).take(9).collect();
            ns += digits.parse::<i64>().ok()?;
        }
    }
    let rest = s[i..].trim();
    let offset_s = match rest {
        "" | "Z" | "z" | "UTC" | "utc" => 0,
        r if r.starts_with('+') || r.starts_with('-') => {
            let sign = if r.starts_with('-') { -1 } else { 1 };
            let digits: String = r[1..].chars().filter(|c| *c != ':').collect();
            let (h, m) = match digits.len() {
                2 => (digits.parse::<i64>().ok()?, 0),
                4 => (
                    digits[..2].parse::<i64>().ok()?,
                    digits[2..].parse::<i64>().ok()?,
                ),
                _ => return None,
            };
            sign * (h * 3600 + m * 60)
        }
        _ => return None,
    };
    Some(ns - offset_s * 1_000_000_000)
}

/// Decodes one bound parameter. `declared` is the type the client gave in Parse (or `None`); `target` the
/// type DataFusion inferred for the placeholder (or `None`). The value is converted to `target` when known.
pub fn decode_param(
    index: usize,
    bytes: Option<&[u8]>,
    format: Format,
    declared: Option<&Type>,
    target: Option<&DataType>,
) -> Result<ScalarValue, PgError> {
    let n = index + 1;
    let bad = |what: String| {
        PgError::new(
            code::INVALID_TEXT_REPRESENTATION,
            format!("parameter ${n}: {what}"),
        )
    };
    let null_of = |t: Option<&DataType>| {
        ScalarValue::try_from(t.unwrap_or(&DataType::Utf8)).unwrap_or(ScalarValue::Utf8(None))
    };
    let Some(bytes) = bytes else {
        return Ok(null_of(
            target.or(declared.and_then(arrow_type_of).as_ref()),
        ));
    };
    let value = match format {
        Format::Binary => decode_binary(bytes, declared).map_err(bad)?,
        Format::Text => {
            let text = std::str::from_utf8(bytes)
                .map_err(|_| bad("text value is not valid UTF-8".into()))?;
            let wants_ts = matches!(target, Some(DataType::Timestamp(..)))
                || matches!(declared, Some(t) if *t == Type::TIMESTAMP || *t == Type::TIMESTAMPTZ);
            if wants_ts {
                let ns = parse_timestamp_ns(text).ok_or_else(|| {
                    PgError::new(
                        code::INVALID_DATETIME_FORMAT,
                        format!("parameter ${n}: invalid timestamp {text:?}"),
                    )
                    .with_hint("use ISO 8601, e.g. 2023-11-14 22:13:20 or 2023-11-14T22:13:20Z")
                })?;
                ScalarValue::TimestampNanosecond(Some(ns), None)
            } else {
                let v = ScalarValue::Utf8(Some(text.to_string()));
                match declared.and_then(arrow_type_of) {
                    Some(t) if t != DataType::Utf8 => v.cast_to(&t).map_err(|_| {
                        bad(format!(
                            "invalid {} value {text:?}",
                            declared.map(|d| d.name()).unwrap_or("?")
                        ))
                    })?,
                    _ => v,
                }
            }
        }
    };
    let Some(target) = target else {
        return Ok(value);
    };
    if &value.data_type() == target {
        return Ok(value);
    }
    if let (ScalarValue::TimestampNanosecond(v, _), DataType::Timestamp(TimeUnit::Nanosecond, tz)) =
        (&value, target)
    {
        return Ok(ScalarValue::TimestampNanosecond(*v, tz.clone()));
    }
    value.cast_to(target).map_err(|_| {
        PgError::new(
            code::DATATYPE_MISMATCH,
            format!(
                "parameter ${n}: cannot use a {} value where {target} is expected",
                value.data_type()
            ),
        )
    })
}

fn decode_binary(b: &[u8], declared: Option<&Type>) -> Result<ScalarValue, String> {
    let ty = declared.ok_or("a binary parameter needs a declared type (Parse sent type 0)")?;
    let fixed = |n: usize| -> Result<&[u8], String> {
        if b.len() == n {
            Ok(b)
        } else {
            Err(format!(
                "binary {} must be {n} bytes, got {}",
                ty.name(),
                b.len()
            ))
        }
    };
    Ok(match *ty {
        Type::BOOL => ScalarValue::Boolean(Some(fixed(1)?[0] != 0)),
        Type::INT2 => ScalarValue::Int16(Some(i16::from_be_bytes(
            fixed(2)?.try_into().unwrap_or_default(),
        ))),
        Type::INT4 => ScalarValue::Int32(Some(i32::from_be_bytes(
            fixed(4)?.try_into().unwrap_or_default(),
        ))),
        Type::OID => ScalarValue::Int64(Some(u32::from_be_bytes(
            fixed(4)?.try_into().unwrap_or_default(),
        ) as i64)),
        Type::INT8 => ScalarValue::Int64(Some(i64::from_be_bytes(
            fixed(8)?.try_into().unwrap_or_default(),
        ))),
        Type::FLOAT4 => ScalarValue::Float32(Some(f32::from_be_bytes(
            fixed(4)?.try_into().unwrap_or_default(),
        ))),
        Type::FLOAT8 => ScalarValue::Float64(Some(f64::from_be_bytes(
            fixed(8)?.try_into().unwrap_or_default(),
        ))),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN | Type::CHAR => {
            ScalarValue::Utf8(Some(
                String::from_utf8(b.to_vec()).map_err(|_| "text value is not valid UTF-8")?,
            ))
        }
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            let us = i64::from_be_bytes(fixed(8)?.try_into().unwrap_or_default());
            let ns = us
                .checked_add(PG_EPOCH_US)
                .and_then(|v| v.checked_mul(1_000))
                .ok_or("timestamp out of range")?;
            ScalarValue::TimestampNanosecond(Some(ns), None)
        }
        Type::DATE => ScalarValue::Date32(Some(
            i32::from_be_bytes(fixed(4)?.try_into().unwrap_or_default()) + PG_EPOCH_DAYS,
        )),
        Type::NUMERIC => {
            let s = numeric_from_binary(b).ok_or("malformed binary numeric")?;
            ScalarValue::Float64(Some(
                s.parse::<f64>()
                    .map_err(|_| format!("numeric {s} is not a number"))?,
            ))
        }
        _ => {
            return Err(format!(
                "binary parameters of type {} are not supported; send text",
                ty.name()
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_format_like_postgres() {
        let mut s = String::new();
        format_timestamp(&mut s, 1_700_000_000_000_000_000, true);
        assert_eq!(s, "2023-11-14 22:13:20");
        s.clear();
        format_timestamp(&mut s, 1_700_000_000_123_456_789, true);
        assert_eq!(s, "2023-11-14 22:13:20.123456");
        s.clear();
        format_timestamp(&mut s, -1, true);
        assert_eq!(s, "1969-12-31 23:59:59.999999");
    }

    #[test]
    fn timestamps_parse_in_every_client_spelling() {
        let t = 1_700_000_000_000_000_000;
        for s in [
            "2023-11-14 22:13:20",
            "2023-11-14T22:13:20Z",
            "2023-11-14 22:13:20+00",
            "2023-11-14 23:13:20+01:00",
            "2023-11-14 14:13:20-0800",
            "2023-11-14T22:13:20.000Z",
        ] {
            assert_eq!(parse_timestamp_ns(s), Some(t), "{s}");
        }
        assert_eq!(
            parse_timestamp_ns("2023-11-14"),
            Some(1_699_920_000_000_000_000)
        );
        assert_eq!(
            parse_timestamp_ns("2023-11-14 22:13:20.5"),
            Some(t + 500_000_000)
        );
        for bad in [
            "",
            "yesterday",
            "2023-13-01",
            "2023-11-14 25:00",
            "2023-11-14 22:13:20 nowhere",
        ] {
            assert_eq!(parse_timestamp_ns(bad), None, "{bad}");
        }
    }

    #[test]
    fn floats_format_like_postgres() {
        assert_eq!(format_float(12.5, false), "12.5");
        assert_eq!(format_float(1.0, false), "1");
        assert_eq!(format_float(1e20, false), "1e+20");
        assert_eq!(format_float(1.5e-5, false), "1.5e-05");
        assert_eq!(format_float(f64::INFINITY, false), "Infinity");
        assert_eq!(format_float(0.1, false), "0.1");
    }

    #[test]
    fn numerics_round_trip_through_binary() {
        for s in [
            "0",
            "1",
            "10000",
            "18446744073709551615",
            "-123.4500",
            "0.0001",
            "12345678.9",
        ] {
            let mut b = BytesMut::new();
            numeric_binary(s, &mut b);
            let back = numeric_from_binary(&b).unwrap();
            let norm = |x: &str| x.parse::<f64>().unwrap();
            assert_eq!(norm(&back), norm(s), "{s} -> {back}");
        }
        assert_eq!(decimal_string(-12345, 2), "-123.45");
        assert_eq!(decimal_string(5, 3), "0.005");
    }
}
