//! One value of an InfluxQL result, read out of Arrow arrays, and InfluxQL's arithmetic on it.

use std::cmp::Ordering;
pub use arcstr::ArcStr;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int64Array, ListArray, StringArray, UInt64Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimestampNanosecondType};

use crate::influxql::BinaryOp;

/// A result value. `Time` is nanoseconds since the epoch (printed per the request's `epoch`).
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    Float(f64),
    Integer(i64),
    UInteger(u64),
    /// Shared: a series' tag value is one allocation however many rows carry it. A thin pointer (its
    /// length is in the allocation), so that a cell is two words, not three: see the size below.
    String(ArcStr),
    Boolean(bool),
    Time(i64),
    /// A list (from `array_agg`), used internally for `percentile` and `distinct`; never printed.
    /// Boxed: a cell stays two words.
    List(Box<Vec<Cell>>),
}

/// Raw answers are millions of cells (TSBS's high-cpu-all at 4,000 hosts: 1.6 M rows of 11), written
/// once, read back in time order across series and dropped: their bytes are most of that answer's
/// memory traffic. Two words: a string is an [`ArcStr`] (thin), a list a `Box`.
const _: () = assert!(std::mem::size_of::<Cell>() == 16);

impl Cell {
    pub fn is_null(&self) -> bool {
        matches!(self, Cell::Null)
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            Cell::Float(v) => Some(*v),
            Cell::Integer(v) => Some(*v as f64),
            Cell::UInteger(v) => Some(*v as f64),
            _ => None,
        }
    }

    /// Orders values of one column (for `distinct`): numbers numerically, then strings, booleans.
    pub fn total_cmp(&self, other: &Cell) -> Ordering {
        match (self, other) {
            (Cell::Integer(a), Cell::Integer(b)) => a.cmp(b),
            (Cell::UInteger(a), Cell::UInteger(b)) => a.cmp(b),
            (Cell::String(a), Cell::String(b)) => a.cmp(b),
            (Cell::Boolean(a), Cell::Boolean(b)) => a.cmp(b),
            (a, b) => match (a.as_f64(), b.as_f64()) {
                (Some(x), Some(y)) => x.total_cmp(&y),
                _ => Ordering::Equal,
            },
        }
    }
}

/// A column of a result batch, with string-like columns (dictionaries, views) cast to `Utf8` once.
pub struct CellColumn {
    array: ArrayRef,
}

impl CellColumn {
    pub fn new(array: &ArrayRef) -> datafusion::common::Result<Self> {
        let array = match array.data_type() {
            DataType::Dictionary(..) | DataType::Utf8View | DataType::LargeUtf8 => cast(array, &DataType::Utf8)?,
            _ => array.clone(),
        };
        Ok(CellColumn { array })
    }

    pub fn get(&self, row: usize) -> Cell {
        array_cell(&self.array, row)
    }
}

fn array_cell(a: &ArrayRef, row: usize) -> Cell {
    if a.is_null(row) {
        return Cell::Null;
    }
    match a.data_type() {
        DataType::Float64 => Cell::Float(a.as_any().downcast_ref::<Float64Array>().map_or(0.0, |x| x.value(row))),
        DataType::Int64 => Cell::Integer(a.as_any().downcast_ref::<Int64Array>().map_or(0, |x| x.value(row))),
        DataType::UInt64 => Cell::UInteger(a.as_any().downcast_ref::<UInt64Array>().map_or(0, |x| x.value(row))),
        DataType::Boolean => Cell::Boolean(a.as_any().downcast_ref::<BooleanArray>().is_some_and(|x| x.value(row))),
        DataType::Utf8 => Cell::String(a.as_any().downcast_ref::<StringArray>().map_or_else(ArcStr::new, |x| ArcStr::from(x.value(row)))),
        DataType::Timestamp(..) => match cast(a, &DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Nanosecond, None)) {
            Ok(ts) => Cell::Time(ts.as_primitive::<TimestampNanosecondType>().value(row)),
            Err(_) => Cell::Null,
        },
        DataType::List(_) => {
            let Some(list) = a.as_any().downcast_ref::<ListArray>() else { return Cell::Null };
            let inner = list.value(row);
            let inner = match inner.data_type() {
                DataType::Dictionary(..) | DataType::Utf8View | DataType::LargeUtf8 => {
                    cast(&inner, &DataType::Utf8).unwrap_or(inner)
                }
                _ => inner,
            };
            Cell::List(Box::new((0..inner.len()).map(|i| array_cell(&inner, i)).collect()))
        }
        other => match cast(a, &DataType::Float64) {
            Ok(f) if !matches!(other, DataType::Null) => array_cell(&f, row),
            _ => Cell::Null,
        },
    }
}

/// InfluxQL arithmetic (`+ - * / % & | ^`) as InfluxDB 1.x does it: integers stay integers except for
/// `/`, which always gives a float; division or modulo by zero gives 0; a null operand gives null.
pub fn arithmetic(op: BinaryOp, a: &Cell, b: &Cell) -> Cell {
    use Cell::*;
    match (a, b) {
        (Null, _) | (_, Null) => Null,
        (Integer(x), Integer(y)) => int_op(op, *x, *y),
        (UInteger(x), UInteger(y)) => match int_op(op, *x as i64, *y as i64) {
            Integer(v) => UInteger(v as u64),
            other => other,
        },
        (Boolean(x), Boolean(y)) => match op {
            BinaryOp::BitAnd => Boolean(x & y),
            BinaryOp::BitOr => Boolean(x | y),
            BinaryOp::BitXor => Boolean(x ^ y),
            _ => Null,
        },
        (String(x), String(y)) if op == BinaryOp::Add => String(format!("{x}{y}").into()),
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => float_op(op, x, y),
            _ => Null,
        },
    }
}

fn int_op(op: BinaryOp, x: i64, y: i64) -> Cell {
    Cell::Integer(match op {
        BinaryOp::Add => x.wrapping_add(y),
        BinaryOp::Sub => x.wrapping_sub(y),
        BinaryOp::Mul => x.wrapping_mul(y),
        BinaryOp::Div => return Cell::Float(if y == 0 { 0.0 } else { x as f64 / y as f64 }),
        BinaryOp::Mod => {
            if y == 0 {
                0
            } else {
                x.wrapping_rem(y)
            }
        }
        BinaryOp::BitAnd => x & y,
        BinaryOp::BitOr => x | y,
        BinaryOp::BitXor => x ^ y,
        _ => return Cell::Null,
    })
}

fn float_op(op: BinaryOp, x: f64, y: f64) -> Cell {
    Cell::Float(match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div if y == 0.0 => 0.0,
        BinaryOp::Div => x / y,
        BinaryOp::Mod if y == 0.0 => 0.0,
        BinaryOp::Mod => x % y,
        _ => return Cell::Null,
    })
}

/// Unary minus.
pub fn negate(a: &Cell) -> Cell {
    match a {
        Cell::Integer(v) => Cell::Integer(v.wrapping_neg()),
        Cell::Float(v) => Cell::Float(-v),
        _ => Cell::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_division_is_float_and_division_by_zero_is_zero() {
        assert_eq!(arithmetic(BinaryOp::Div, &Cell::Integer(7), &Cell::Integer(2)), Cell::Float(3.5));
        assert_eq!(arithmetic(BinaryOp::Div, &Cell::Integer(7), &Cell::Integer(0)), Cell::Float(0.0));
        assert_eq!(arithmetic(BinaryOp::Mul, &Cell::Integer(7), &Cell::Integer(2)), Cell::Integer(14));
        assert_eq!(arithmetic(BinaryOp::Add, &Cell::Integer(1), &Cell::Float(0.5)), Cell::Float(1.5));
        assert_eq!(arithmetic(BinaryOp::Add, &Cell::Null, &Cell::Float(0.5)), Cell::Null);
    }
}
