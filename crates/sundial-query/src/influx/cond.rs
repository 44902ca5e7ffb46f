//! `WHERE` conditions: the time range is taken out (it bounds buckets and is pushed into the scan as
//! literal bounds), the rest becomes a SQL predicate over the table's columns.
//!
//! InfluxQL compares tags as strings where a series without the tag has the value `''`; SQL sees a
//! missing tag as NULL. So `host = 'a'` stays `"host" = 'a'` (which the scan's tag index serves), while
//! `host != 'a'` becomes `("host" IS NULL OR "host" <> 'a')` and regexes match against
//! `coalesce(host, '')`.

use std::collections::{BTreeMap, BTreeSet};

use sundial_storage::types::FieldType;

use crate::influxql::{BinaryOp, Expr, VarType, parse_time_literal};

/// Inclusive time bounds in nanoseconds; `None` is unbounded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeRange {
    pub min: Option<i64>,
    pub max: Option<i64>,
}

impl TimeRange {
    fn and(self, other: TimeRange) -> TimeRange {
        let pick = |a: Option<i64>, b: Option<i64>, f: fn(i64, i64) -> i64| match (a, b) {
            (Some(x), Some(y)) => Some(f(x, y)),
            (x, y) => x.or(y),
        };
        TimeRange { min: pick(self.min, other.min, i64::max), max: pick(self.max, other.max, i64::min) }
    }

    /// True if no time can satisfy the bounds.
    pub fn is_empty(&self) -> bool {
        matches!((self.min, self.max), (Some(a), Some(b)) if a > b)
    }

    /// SQL conjuncts bounding `time`, for the scan's pushdown.
    pub fn sql(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(v) = self.min {
            out.push(format!("\"time\" >= to_timestamp_nanos({v})"));
        }
        if let Some(v) = self.max {
            out.push(format!("\"time\" <= to_timestamp_nanos({v})"));
        }
        out
    }
}

/// The columns of one measurement.
#[derive(Clone, Debug, Default)]
pub struct TableInfo {
    pub tags: BTreeSet<String>,
    pub fields: BTreeMap<String, FieldType>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ColKind {
    Tag,
    Field(FieldType),
    /// Neither a tag nor a field of this measurement: InfluxDB reads it as a tag no series has.
    Unknown,
}

impl TableInfo {
    pub fn kind(&self, name: &str, cast: Option<VarType>) -> ColKind {
        let tag = self.tags.contains(name);
        let field = self.fields.get(name).copied();
        match (cast, tag, field) {
            (Some(VarType::Tag), true, _) => ColKind::Tag,
            (Some(VarType::Tag), false, _) => ColKind::Unknown,
            (Some(_), _, Some(t)) => ColKind::Field(t),
            (Some(_), _, None) => ColKind::Unknown,
            (None, _, Some(t)) => ColKind::Field(t),
            (None, true, None) => ColKind::Tag,
            (None, false, None) => ColKind::Unknown,
        }
    }
}

/// Double-quotes a SQL identifier.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Single-quotes a SQL string.
pub fn string(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Splits `cond` into its time range and the SQL of everything else (`None` if nothing else).
pub fn split(cond: Option<&Expr>, info: &TableInfo, now_ns: i64) -> Result<(TimeRange, Option<String>), String> {
    match cond {
        None => Ok((TimeRange::default(), None)),
        Some(e) => split_expr(e, info, now_ns),
    }
}

fn split_expr(e: &Expr, info: &TableInfo, now_ns: i64) -> Result<(TimeRange, Option<String>), String> {
    match e {
        Expr::Binary { op: BinaryOp::And, lhs, rhs } => {
            let (ra, sa) = split_expr(lhs, info, now_ns)?;
            let (rb, sb) = split_expr(rhs, info, now_ns)?;
            let sql = match (sa, sb) {
                (Some(a), Some(b)) => Some(format!("({a}) AND ({b})")),
                (a, b) => a.or(b),
            };
            Ok((ra.and(rb), sql))
        }
        Expr::Binary { op, lhs, rhs } if op.is_comparison() && (lhs.is_time_ref() || rhs.is_time_ref()) => {
            Ok((time_bound(*op, lhs, rhs, now_ns)?, None))
        }
        other => {
            if other.any(&mut |x| x.is_time_ref()) {
                return Err("invalid time condition: time can only be compared with a time and combined with AND".into());
            }
            Ok((TimeRange::default(), Some(predicate(other, info)?)))
        }
    }
}

fn time_bound(op: BinaryOp, lhs: &Expr, rhs: &Expr, now_ns: i64) -> Result<TimeRange, String> {
    let (op, value) = if lhs.is_time_ref() {
        (op, time_value(rhs, now_ns)?)
    } else {
        let flipped = match op {
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::LtEq => BinaryOp::GtEq,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::GtEq => BinaryOp::LtEq,
            other => other,
        };
        (flipped, time_value(lhs, now_ns)?)
    };
    let r = match op {
        BinaryOp::Gt => TimeRange { min: Some(value.saturating_add(1)), max: None },
        BinaryOp::GtEq => TimeRange { min: Some(value), max: None },
        BinaryOp::Lt => TimeRange { min: None, max: Some(value.saturating_sub(1)) },
        BinaryOp::LtEq => TimeRange { min: None, max: Some(value) },
        BinaryOp::Eq => TimeRange { min: Some(value), max: Some(value) },
        other => return Err(format!("invalid time comparison operator: {}", other.as_str())),
    };
    Ok(r)
}

/// Evaluates the other side of a comparison with `time` to nanoseconds since the epoch.
pub fn time_value(e: &Expr, now_ns: i64) -> Result<i64, String> {
    match e {
        Expr::StringLit(s) => parse_time_literal(s).ok_or_else(|| format!("invalid time literal '{s}': use RFC3339, e.g. '2016-01-01T00:00:00Z'")),
        Expr::IntegerLit(v) | Expr::DurationLit(v) => Ok(*v),
        Expr::NumberLit(v) => Ok(*v as i64),
        Expr::Now => Ok(now_ns),
        Expr::Binary { op: BinaryOp::Add, lhs, rhs } => Ok(time_value(lhs, now_ns)?.saturating_add(time_value(rhs, now_ns)?)),
        Expr::Binary { op: BinaryOp::Sub, lhs, rhs } => Ok(time_value(lhs, now_ns)?.saturating_sub(time_value(rhs, now_ns)?)),
        Expr::Neg(inner) => Ok(time_value(inner, now_ns)?.saturating_neg()),
        other => Err(format!("invalid time expression: {other}")),
    }
}

/// A non-time condition as a SQL predicate.
fn predicate(e: &Expr, info: &TableInfo) -> Result<String, String> {
    match e {
        Expr::Binary { op: op @ (BinaryOp::And | BinaryOp::Or), lhs, rhs } => {
            Ok(format!("({}) {} ({})", predicate(lhs, info)?, op.as_str(), predicate(rhs, info)?))
        }
        Expr::Binary { op, lhs, rhs } if op.is_comparison() => comparison(*op, lhs, rhs, info),
        Expr::BooleanLit(b) => Ok(if *b { "TRUE" } else { "FALSE" }.into()),
        Expr::VarRef { name, data_type } => match info.kind(name, *data_type) {
            ColKind::Field(FieldType::Boolean) => Ok(ident(name)),
            _ => Err(format!("invalid condition: {e} is not a boolean field")),
        },
        other => Err(format!("invalid condition: {other}")),
    }
}

fn comparison(op: BinaryOp, lhs: &Expr, rhs: &Expr, info: &TableInfo) -> Result<String, String> {
    // Put the column on the left where there is one.
    let (op, lhs, rhs) = match (lhs, rhs) {
        (l, Expr::VarRef { .. }) if !matches!(l, Expr::VarRef { .. }) => (flip(op), rhs, lhs),
        _ => (op, lhs, rhs),
    };
    if let Expr::VarRef { name, data_type } = lhs {
        let kind = info.kind(name, *data_type);
        if matches!(kind, ColKind::Tag | ColKind::Unknown) {
            return tag_comparison(op, name, kind, rhs);
        }
    }
    if let Expr::RegexLit(re) = rhs {
        let negate = if op == BinaryOp::NotEqRegex { "NOT " } else { "" };
        return Ok(format!("{negate}regexp_like({}, {})", value(lhs, info)?, string(re)));
    }
    let sql_op = match op {
        BinaryOp::Eq => "=",
        BinaryOp::NotEq => "<>",
        BinaryOp::Lt => "<",
        BinaryOp::LtEq => "<=",
        BinaryOp::Gt => ">",
        BinaryOp::GtEq => ">=",
        other => return Err(format!("invalid comparison operator {} for a field", other.as_str())),
    };
    Ok(format!("{} {sql_op} {}", value(lhs, info)?, value(rhs, info)?))
}

/// The operator with its operands swapped (`a < b` is `b > a`).
pub fn flip(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::LtEq => BinaryOp::GtEq,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::GtEq => BinaryOp::LtEq,
        other => other,
    }
}

/// `tag <op> literal`, with InfluxDB's reading of a missing tag as `''`.
fn tag_comparison(op: BinaryOp, name: &str, kind: ColKind, rhs: &Expr) -> Result<String, String> {
    let col = ident(name);
    let known = kind == ColKind::Tag;
    match (op, rhs) {
        (BinaryOp::EqRegex | BinaryOp::NotEqRegex, Expr::RegexLit(re)) => {
            let subject = if known { format!("coalesce(CAST({col} AS VARCHAR), '')") } else { "''".into() };
            let negate = if op == BinaryOp::NotEqRegex { "NOT " } else { "" };
            Ok(format!("{negate}regexp_like({subject}, {})", string(re)))
        }
        (BinaryOp::Eq | BinaryOp::NotEq, Expr::StringLit(v)) => {
            let eq = op == BinaryOp::Eq;
            Ok(match (known, v.is_empty()) {
                (false, _) => if v.is_empty() == eq { "TRUE" } else { "FALSE" }.into(),
                (true, true) => format!("{col} IS {}NULL", if eq { "" } else { "NOT " }),
                (true, false) if eq => format!("{col} = {}", string(v)),
                (true, false) => format!("({col} IS NULL OR {col} <> {})", string(v)),
            })
        }
        (BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq, Expr::StringLit(v)) if known => {
            Ok(format!("coalesce(CAST({col} AS VARCHAR), '') {} {}", op.as_str(), string(v)))
        }
        // A tag compared with a number, or an unknown name compared with anything else, matches nothing.
        _ => Ok("FALSE".into()),
    }
}

/// An operand: a column, a literal or arithmetic over those.
fn value(e: &Expr, info: &TableInfo) -> Result<String, String> {
    Ok(match e {
        Expr::VarRef { name, data_type } => match info.kind(name, *data_type) {
            ColKind::Field(_) => ident(name),
            ColKind::Tag => format!("CAST({} AS VARCHAR)", ident(name)),
            ColKind::Unknown => "NULL".into(),
        },
        Expr::IntegerLit(v) => v.to_string(),
        Expr::UnsignedLit(v) => v.to_string(),
        Expr::NumberLit(v) => format!("{v:?}"),
        Expr::StringLit(s) => string(s),
        Expr::BooleanLit(b) => if *b { "TRUE" } else { "FALSE" }.into(),
        Expr::DurationLit(v) => v.to_string(),
        Expr::Neg(inner) => format!("(-{})", value(inner, info)?),
        Expr::Binary { op, lhs, rhs } if op.is_arithmetic() => {
            let sql_op = match op {
                BinaryOp::BitAnd => "&",
                BinaryOp::BitOr => "|",
                BinaryOp::BitXor => "#",
                other => other.as_str(),
            };
            format!("({} {sql_op} {})", value(lhs, info)?, value(rhs, info)?)
        }
        other => return Err(format!("invalid expression in condition: {other}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::influxql::parse_expr;

    fn info() -> TableInfo {
        TableInfo {
            tags: ["host".to_string()].into_iter().collect(),
            fields: [("v".to_string(), FieldType::Float)].into_iter().collect(),
        }
    }

    #[test]
    fn time_bounds_are_taken_out_and_the_rest_is_sql() {
        let e = parse_expr("time >= '2016-01-01T00:00:00Z' AND time < '2016-01-01T01:00:00Z' AND host = 'a' AND v > 1.5").unwrap();
        let (r, sql) = split(Some(&e), &info(), 0).unwrap();
        assert_eq!(r, TimeRange { min: Some(1_451_606_400_000_000_000), max: Some(1_451_610_000_000_000_000 - 1) });
        assert_eq!(sql.unwrap(), "(\"host\" = 'a') AND (\"v\" > 1.5)");
    }

    #[test]
    fn missing_tags_read_as_empty_strings() {
        let e = parse_expr("host != 'a' OR nope = '' OR host =~ /x/").unwrap();
        let (_, sql) = split(Some(&e), &info(), 0).unwrap();
        assert_eq!(
            sql.unwrap(),
            "(((\"host\" IS NULL OR \"host\" <> 'a')) OR (TRUE)) OR (regexp_like(coalesce(CAST(\"host\" AS VARCHAR), ''), 'x'))"
        );
    }

    #[test]
    fn relative_and_integer_times() {
        let e = parse_expr("time > now() - 1h AND time <= 1000s").unwrap();
        let (r, _) = split(Some(&e), &info(), 10_000_000_000_000).unwrap();
        assert_eq!(r, TimeRange { min: Some(10_000_000_000_000 - 3_600_000_000_000 + 1), max: Some(1_000_000_000_000) });
        assert!(split(Some(&parse_expr("time > 5 OR v > 1").unwrap()), &info(), 0).is_err());
    }
}
