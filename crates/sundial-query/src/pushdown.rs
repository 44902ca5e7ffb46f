//! Which filters the scan can use: time ranges and tag equality.
//!
//! DataFusion hands the scan the conjuncts of the WHERE clause after type coercion and constant folding
//! (so `now() - interval '1 hour'` and `'2016-01-01T00:00:00Z'` already are timestamp literals). The scan
//! reports every filter it understands as `Inexact`: DataFusion still applies it above the scan, so a
//! filter the scan reads too broadly can never produce a wrong row; narrowing is only an optimisation.

use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator};

pub const TIME_COLUMN: &str = "time";

/// What the filters allow the scan to skip.
#[derive(Clone, Debug, PartialEq)]
pub struct Pushdown {
    /// Inclusive time bounds in nanoseconds.
    pub ts_min: i64,
    pub ts_max: i64,
    /// For each constrained tag column: the values a row may have (the filters AND together).
    pub tags: Vec<(String, Vec<String>)>,
}

impl Default for Pushdown {
    fn default() -> Self {
        Pushdown { ts_min: i64::MIN, ts_max: i64::MAX, tags: Vec::new() }
    }
}

fn strip_casts(e: &Expr) -> &Expr {
    match e {
        Expr::Cast(c) => strip_casts(&c.expr),
        Expr::TryCast(c) => strip_casts(&c.expr),
        other => other,
    }
}

fn column_name(e: &Expr) -> Option<&str> {
    match strip_casts(e) {
        Expr::Column(c) => Some(c.name.as_str()),
        _ => None,
    }
}

/// A timestamp literal in nanoseconds (any unit, any time zone: the value is UTC-based).
pub fn timestamp_ns(e: &Expr) -> Option<i64> {
    let Expr::Literal(v, _) = e else { return None };
    match v {
        ScalarValue::TimestampNanosecond(Some(v), _) => Some(*v),
        ScalarValue::TimestampMicrosecond(Some(v), _) => v.checked_mul(1_000),
        ScalarValue::TimestampMillisecond(Some(v), _) => v.checked_mul(1_000_000),
        ScalarValue::TimestampSecond(Some(v), _) => v.checked_mul(1_000_000_000),
        _ => None,
    }
}

fn string_literal(e: &Expr) -> Option<&str> {
    let Expr::Literal(v, _) = strip_casts(e) else { return None };
    match v {
        ScalarValue::Dictionary(_, inner) => match inner.as_ref() {
            ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => Some(s),
            _ => None,
        },
        ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => Some(s),
        _ => None,
    }
}

fn flip(op: Operator) -> Option<Operator> {
    Some(match op {
        Operator::Lt => Operator::Gt,
        Operator::LtEq => Operator::GtEq,
        Operator::Gt => Operator::Lt,
        Operator::GtEq => Operator::LtEq,
        Operator::Eq => Operator::Eq,
        _ => return None,
    })
}

/// A time bound from `time <op> literal` (either side): (min, max) inclusive.
fn time_bound(e: &Expr) -> Option<(i64, i64)> {
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (op, v) = if column_name(left) == Some(TIME_COLUMN) {
                (*op, timestamp_ns(right)?)
            } else if column_name(right) == Some(TIME_COLUMN) {
                (flip(*op)?, timestamp_ns(left)?)
            } else {
                return None;
            };
            match op {
                Operator::Gt => Some((v.checked_add(1)?, i64::MAX)),
                Operator::GtEq => Some((v, i64::MAX)),
                Operator::Lt => Some((i64::MIN, v.checked_sub(1)?)),
                Operator::LtEq => Some((i64::MIN, v)),
                Operator::Eq => Some((v, v)),
                _ => None,
            }
        }
        Expr::Between(Between { expr, negated: false, low, high }) if column_name(expr) == Some(TIME_COLUMN) => {
            Some((timestamp_ns(low)?, timestamp_ns(high)?))
        }
        _ => None,
    }
}

/// Tag values allowed by `tag = 'v'`, `tag IN (...)` or an OR of those on one tag.
fn tag_values(e: &Expr, is_tag: &dyn Fn(&str) -> bool) -> Option<(String, Vec<String>)> {
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op: Operator::Eq, right }) => {
            let (col, lit) = match (column_name(left), column_name(right)) {
                (Some(c), _) if is_tag(c) => (c, string_literal(right)?),
                (_, Some(c)) if is_tag(c) => (c, string_literal(left)?),
                _ => return None,
            };
            Some((col.to_string(), vec![lit.to_string()]))
        }
        Expr::BinaryExpr(BinaryExpr { left, op: Operator::Or, right }) => {
            let (a, mut av) = tag_values(left, is_tag)?;
            let (b, bv) = tag_values(right, is_tag)?;
            (a == b).then(|| {
                av.extend(bv);
                (a, av)
            })
        }
        Expr::InList(l) if !l.negated => {
            let col = column_name(&l.expr).filter(|c| is_tag(c))?;
            let vals = l.list.iter().map(|v| string_literal(v).map(str::to_string)).collect::<Option<Vec<_>>>()?;
            Some((col.to_string(), vals))
        }
        _ => None,
    }
}

/// True if the scan can use `e`.
pub fn supported(e: &Expr, is_tag: &dyn Fn(&str) -> bool) -> bool {
    time_bound(e).is_some() || tag_values(e, is_tag).is_some()
}

/// Combines every usable filter.
pub fn analyze(filters: &[Expr], is_tag: &dyn Fn(&str) -> bool) -> Pushdown {
    let mut p = Pushdown::default();
    for f in filters {
        if let Some((lo, hi)) = time_bound(f) {
            p.ts_min = p.ts_min.max(lo);
            p.ts_max = p.ts_max.min(hi);
        } else if let Some((col, mut vals)) = tag_values(f, is_tag) {
            vals.sort();
            vals.dedup();
            match p.tags.iter_mut().find(|(c, _)| *c == col) {
                Some((_, existing)) => existing.retain(|v| vals.contains(v)),
                None => p.tags.push((col, vals)),
            }
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{col, lit};

    fn ts(v: i64) -> Expr {
        lit(ScalarValue::TimestampNanosecond(Some(v), None))
    }

    #[test]
    fn time_ranges_and_tag_sets_are_combined() {
        let is_tag = |c: &str| c == "host" || c == "region";
        let filters = vec![
            col("time").gt_eq(ts(100)),
            ts(200).gt(col("time")),
            col("host").eq(lit("a")).or(col("host").eq(lit("b"))),
            col("host").in_list(vec![lit("b"), lit("c")], false),
            col("usage").gt(lit(5)),
        ];
        let p = analyze(&filters, &is_tag);
        assert_eq!((p.ts_min, p.ts_max), (100, 199));
        assert_eq!(p.tags, vec![("host".to_string(), vec!["b".to_string()])]);
        assert!(!supported(&filters[4], &is_tag));
        assert!(!supported(&col("host").not_eq(lit("a")), &is_tag));
        assert!(!supported(&col("host").eq(lit("a")).or(col("region").eq(lit("x"))), &is_tag));
    }
}
