//! Value types shared by every layer of the storage engine.
//!
//! A *point* is one value; a *row* is a timestamp plus the field values of one series at that time;
//! a *series* is a table plus a tag set; a *block* is one series' run of rows inside a segment.

/// The type of a field column. Fixed when the column first appears (schema on write); a later value of
/// another type is rejected for its line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FieldType {
    Float = 1,
    Integer = 2,
    UInteger = 3,
    String = 4,
    Boolean = 5,
}

impl FieldType {
    pub fn from_u8(v: u8) -> Option<FieldType> {
        Some(match v {
            1 => FieldType::Float,
            2 => FieldType::Integer,
            3 => FieldType::UInteger,
            4 => FieldType::String,
            5 => FieldType::Boolean,
            _ => return None,
        })
    }

    /// The name InfluxDB uses for the type (`SHOW FIELD KEYS`).
    pub fn influx_name(self) -> &'static str {
        match self {
            FieldType::Float => "float",
            FieldType::Integer => "integer",
            FieldType::UInteger => "unsigned",
            FieldType::String => "string",
            FieldType::Boolean => "boolean",
        }
    }
}

/// One field value as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Float(f64),
    Integer(i64),
    UInteger(u64),
    String(String),
    Boolean(bool),
}

impl Value {
    pub fn field_type(&self) -> FieldType {
        match self {
            Value::Float(_) => FieldType::Float,
            Value::Integer(_) => FieldType::Integer,
            Value::UInteger(_) => FieldType::UInteger,
            Value::String(_) => FieldType::String,
            Value::Boolean(_) => FieldType::Boolean,
        }
    }
}

/// The values of one column of one series' rows, densely typed. Nulls are marked by a separate validity
/// vector (`true` = present) held next to it (see [`Column`]).
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnValues {
    Float(Vec<f64>),
    Integer(Vec<i64>),
    UInteger(Vec<u64>),
    String(Vec<String>),
    Boolean(Vec<bool>),
}

impl ColumnValues {
    pub fn new(ty: FieldType) -> ColumnValues {
        Self::with_capacity(ty, 0)
    }

    pub fn with_capacity(ty: FieldType, n: usize) -> ColumnValues {
        match ty {
            FieldType::Float => ColumnValues::Float(Vec::with_capacity(n)),
            FieldType::Integer => ColumnValues::Integer(Vec::with_capacity(n)),
            FieldType::UInteger => ColumnValues::UInteger(Vec::with_capacity(n)),
            FieldType::String => ColumnValues::String(Vec::with_capacity(n)),
            FieldType::Boolean => ColumnValues::Boolean(Vec::with_capacity(n)),
        }
    }

    pub fn field_type(&self) -> FieldType {
        match self {
            ColumnValues::Float(_) => FieldType::Float,
            ColumnValues::Integer(_) => FieldType::Integer,
            ColumnValues::UInteger(_) => FieldType::UInteger,
            ColumnValues::String(_) => FieldType::String,
            ColumnValues::Boolean(_) => FieldType::Boolean,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ColumnValues::Float(v) => v.len(),
            ColumnValues::Integer(v) => v.len(),
            ColumnValues::UInteger(v) => v.len(),
            ColumnValues::String(v) => v.len(),
            ColumnValues::Boolean(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One column of a run of rows: `values.len() == validity.len()`; where `validity[i]` is false the value
/// at `i` is a placeholder (zero, empty string or false) and must be ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub values: ColumnValues,
    pub validity: Vec<bool>,
}

impl Column {
    pub fn len(&self) -> usize {
        self.validity.len()
    }

    pub fn is_empty(&self) -> bool {
        self.validity.is_empty()
    }

    pub fn null_count(&self) -> usize {
        self.validity.iter().filter(|v| !**v).count()
    }
}

impl Column {
    pub fn new(ty: FieldType) -> Column {
        Column { values: ColumnValues::new(ty), validity: Vec::new() }
    }

    pub fn with_capacity(ty: FieldType, n: usize) -> Column {
        Column { values: ColumnValues::with_capacity(ty, n), validity: Vec::with_capacity(n) }
    }

    /// A column of `n` nulls.
    pub fn nulls(ty: FieldType, n: usize) -> Column {
        let mut c = Column::with_capacity(ty, n);
        c.push_nulls(n);
        c
    }

    pub fn field_type(&self) -> FieldType {
        self.values.field_type()
    }

    pub fn push_null(&mut self) {
        self.validity.push(false);
        match &mut self.values {
            ColumnValues::Float(v) => v.push(0.0),
            ColumnValues::Integer(v) => v.push(0),
            ColumnValues::UInteger(v) => v.push(0),
            ColumnValues::String(v) => v.push(String::new()),
            ColumnValues::Boolean(v) => v.push(false),
        }
    }

    /// Appends `value`; returns false (appending nothing) if its type is not the column's.
    pub fn push_value(&mut self, value: &Value) -> bool {
        match (&mut self.values, value) {
            (ColumnValues::Float(v), Value::Float(x)) => v.push(*x),
            (ColumnValues::Integer(v), Value::Integer(x)) => v.push(*x),
            (ColumnValues::UInteger(v), Value::UInteger(x)) => v.push(*x),
            (ColumnValues::String(v), Value::String(x)) => v.push(x.clone()),
            (ColumnValues::Boolean(v), Value::Boolean(x)) => v.push(*x),
            _ => return false,
        }
        self.validity.push(true);
        true
    }

    /// Overwrites row `i` with `value` (same type required; returns false otherwise).
    pub fn set_value(&mut self, i: usize, value: &Value) -> bool {
        let ok = match (&mut self.values, value) {
            (ColumnValues::Float(v), Value::Float(x)) => v.get_mut(i).map(|s| *s = *x).is_some(),
            (ColumnValues::Integer(v), Value::Integer(x)) => v.get_mut(i).map(|s| *s = *x).is_some(),
            (ColumnValues::UInteger(v), Value::UInteger(x)) => v.get_mut(i).map(|s| *s = *x).is_some(),
            (ColumnValues::String(v), Value::String(x)) => v.get_mut(i).map(|s| s.clone_from(x)).is_some(),
            (ColumnValues::Boolean(v), Value::Boolean(x)) => v.get_mut(i).map(|s| *s = *x).is_some(),
            _ => false,
        };
        if ok {
            self.validity[i] = true;
        }
        ok
    }

    /// The value at row `i`, `None` if null.
    pub fn get(&self, i: usize) -> Option<Value> {
        if !*self.validity.get(i)? {
            return None;
        }
        Some(match &self.values {
            ColumnValues::Float(v) => Value::Float(v[i]),
            ColumnValues::Integer(v) => Value::Integer(v[i]),
            ColumnValues::UInteger(v) => Value::UInteger(v[i]),
            ColumnValues::String(v) => Value::String(v[i].clone()),
            ColumnValues::Boolean(v) => Value::Boolean(v[i]),
        })
    }

    /// Appends row `i` of `other` (same type) to `self`.
    pub fn push_from(&mut self, other: &Column, i: usize) {
        let valid = other.validity[i];
        self.validity.push(valid);
        match (&mut self.values, &other.values) {
            (ColumnValues::Float(d), ColumnValues::Float(s)) => d.push(s[i]),
            (ColumnValues::Integer(d), ColumnValues::Integer(s)) => d.push(s[i]),
            (ColumnValues::UInteger(d), ColumnValues::UInteger(s)) => d.push(s[i]),
            (ColumnValues::String(d), ColumnValues::String(s)) => d.push(s[i].clone()),
            (ColumnValues::Boolean(d), ColumnValues::Boolean(s)) => d.push(s[i]),
            _ => panic!("push_from between columns of different types"),
        }
    }

    /// Rows `range` as a new column.
    pub fn slice(&self, range: std::ops::Range<usize>) -> Column {
        let values = match &self.values {
            ColumnValues::Float(v) => ColumnValues::Float(v[range.clone()].to_vec()),
            ColumnValues::Integer(v) => ColumnValues::Integer(v[range.clone()].to_vec()),
            ColumnValues::UInteger(v) => ColumnValues::UInteger(v[range.clone()].to_vec()),
            ColumnValues::String(v) => ColumnValues::String(v[range.clone()].to_vec()),
            ColumnValues::Boolean(v) => ColumnValues::Boolean(v[range.clone()].to_vec()),
        };
        Column { values, validity: self.validity[range].to_vec() }
    }

    /// Appends all rows of `other` (same type).
    pub fn extend(&mut self, other: &Column) {
        self.validity.extend_from_slice(&other.validity);
        match (&mut self.values, &other.values) {
            (ColumnValues::Float(d), ColumnValues::Float(s)) => d.extend_from_slice(s),
            (ColumnValues::Integer(d), ColumnValues::Integer(s)) => d.extend_from_slice(s),
            (ColumnValues::UInteger(d), ColumnValues::UInteger(s)) => d.extend_from_slice(s),
            (ColumnValues::String(d), ColumnValues::String(s)) => d.extend_from_slice(s),
            (ColumnValues::Boolean(d), ColumnValues::Boolean(s)) => d.extend_from_slice(s),
            _ => panic!("extend between columns of different types"),
        }
    }

    /// Appends rows `range` of `other` (same type) to `self`, without an intermediate copy.
    pub fn extend_range(&mut self, other: &Column, range: std::ops::Range<usize>) {
        self.validity.extend_from_slice(&other.validity[range.clone()]);
        match (&mut self.values, &other.values) {
            (ColumnValues::Float(d), ColumnValues::Float(s)) => d.extend_from_slice(&s[range]),
            (ColumnValues::Integer(d), ColumnValues::Integer(s)) => d.extend_from_slice(&s[range]),
            (ColumnValues::UInteger(d), ColumnValues::UInteger(s)) => d.extend_from_slice(&s[range]),
            (ColumnValues::String(d), ColumnValues::String(s)) => d.extend_from_slice(&s[range]),
            (ColumnValues::Boolean(d), ColumnValues::Boolean(s)) => d.extend_from_slice(&s[range]),
            _ => panic!("extend_range between columns of different types"),
        }
    }

    /// Appends `n` nulls.
    pub fn push_nulls(&mut self, n: usize) {
        self.validity.resize(self.validity.len() + n, false);
        match &mut self.values {
            ColumnValues::Float(v) => v.resize(v.len() + n, 0.0),
            ColumnValues::Integer(v) => v.resize(v.len() + n, 0),
            ColumnValues::UInteger(v) => v.resize(v.len() + n, 0),
            ColumnValues::String(v) => v.resize(v.len() + n, String::new()),
            ColumnValues::Boolean(v) => v.resize(v.len() + n, false),
        }
    }

    /// Approximate heap bytes, for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        let values = match &self.values {
            ColumnValues::Float(v) => v.capacity() * 8,
            ColumnValues::Integer(v) => v.capacity() * 8,
            ColumnValues::UInteger(v) => v.capacity() * 8,
            ColumnValues::String(v) => v.iter().map(|s| s.capacity() + 24).sum(),
            ColumnValues::Boolean(v) => v.capacity(),
        };
        values + self.validity.capacity()
    }
}
