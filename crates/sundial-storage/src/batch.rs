//! A resolved write: rows with ids instead of names, plus the catalog entries they created. This is the
//! unit of durability — one batch is one WAL record — and of visibility — a batch is applied to the
//! memtable as a whole.
//!
//! WAL record payload (format version 1; kind 2 is written, kind 1 still read):
//! ```text
//! kind:u8 db:u32 n_entries:uvarint entry* n_rows:uvarint row*
//! kind 1 row := table:uvarint series:uvarint ts_delta:ivarint n_values:uvarint value*
//! kind 2 row := table:uvarint series:uvarint ts_delta:ivarint shape:uvarint
//!               shape = 0: payload* (the previous row's columns and types; never the first row)
//!               shape = n + 1: value*n
//!          (ts_delta is from the previous row's timestamp, the first row's from 0)
//! value := col:uvarint type:u8 payload
//! payload := Float: f64 bits u64 LE | Integer: ivarint | UInteger: uvarint | String: uvarint len + UTF-8 | Boolean: u8
//! ```
//! Kind 2 exists because a request's rows mostly repeat one shape (TSBS's: ten integer fields): a row
//! written as kind 1 spent two of its three bytes per value on the column id and type, so the WAL wrote
//! ~40 bytes per TSBS row where ~20 carry it, and encoding them was 5 % of the server's CPU.

use crate::catalog::{CatalogEntry, ColId, DbId, SeriesId, TableId};
use crate::catalog_log::{decode_entry, encode_entry};
use crate::encoding::{Reader, put_ivarint, put_str, put_u8, put_u32, put_u64, put_uvarint, zigzag};
use crate::limits::{COLUMNS_PER_TABLE_MAX, STRING_VALUE_BYTES_MAX, WAL_RECORD_BYTES_MAX};
use crate::types::{FieldType, Value};

/// A write batch whose every row names its columns and types ([`WriteBatch::decode`] reads it).
pub const KIND_WRITE: u8 = 1;

/// A write batch whose rows may take the previous row's columns and types ([`WriteBatch::encode`]).
pub const KIND_WRITE_SHAPED: u8 = 2;

/// A row of a batch: where it goes, and where its column ids and values are in the batch.
#[derive(Clone, Copy, Debug)]
pub struct RowHead<'a> {
    pub table: TableId,
    pub series: SeriesId,
    pub ts: i64,
    /// The row's column ids: [`WriteBatch::cols`]`[cols.0..cols.0 + cols.1]` (rows with the same ones,
    /// in a run, share them).
    cols: (u32, u32),
    vals: Vals<'a>,
}

/// Where a row's values are: in the batch ([`WriteBatch::push_row`], [`WriteBatch::decode`]), from
/// that index of [`WriteBatch::owned`] on, or in the write's points ([`WriteBatch::push_row_of`]).
///
/// Why borrowed: a write's values were copied into the batch, then read from there by the WAL's
/// encoding and by the memtable; the copy, 3.2 MB for a 10,000-line TSBS request, and its drop were
/// 7 % of the server's CPU loading TSBS at 4,000 hosts. The batch lives only while its write does.
#[derive(Clone, Copy, Debug)]
enum Vals<'a> {
    Owned(u32),
    Borrowed(&'a [(&'a str, Value)]),
}

/// A row's values, each with its column id, in the row's order ([`WriteBatch::row_values`]).
#[derive(Clone, Copy, Debug)]
pub struct RowValues<'b> {
    cols: &'b [ColId],
    vals: ValSlice<'b>,
}

#[derive(Clone, Copy, Debug)]
enum ValSlice<'b> {
    Owned(&'b [Value]),
    Borrowed(&'b [(&'b str, Value)]),
}

impl<'b> RowValues<'b> {
    /// Values `vals` of columns `cols`.
    ///
    /// # Panics
    /// If they differ in length.
    pub fn new(cols: &'b [ColId], vals: &'b [Value]) -> Self {
        assert_eq!(cols.len(), vals.len(), "a column id per value");
        RowValues { cols, vals: ValSlice::Owned(vals) }
    }

    pub fn len(&self) -> usize {
        self.cols.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cols.is_empty()
    }

    /// The column ids, in the row's order.
    pub fn cols(&self) -> &'b [ColId] {
        self.cols
    }

    pub fn iter(&self) -> RowValuesIter<'b> {
        match self.vals {
            ValSlice::Owned(v) => RowValuesIter::Owned(self.cols.iter().zip(v.iter())),
            ValSlice::Borrowed(v) => RowValuesIter::Borrowed(self.cols.iter().zip(v.iter())),
        }
    }
}

impl<'b> IntoIterator for RowValues<'b> {
    type Item = (ColId, &'b Value);
    type IntoIter = RowValuesIter<'b>;

    fn into_iter(self) -> RowValuesIter<'b> {
        self.iter()
    }
}

/// [`RowValues::iter`]: one branch per value on where the row's values are, always taken the same way
/// within a row.
#[derive(Clone, Debug)]
pub enum RowValuesIter<'b> {
    Owned(std::iter::Zip<std::slice::Iter<'b, ColId>, std::slice::Iter<'b, Value>>),
    Borrowed(std::iter::Zip<std::slice::Iter<'b, ColId>, std::slice::Iter<'b, (&'b str, Value)>>),
}

impl<'b> Iterator for RowValuesIter<'b> {
    type Item = (ColId, &'b Value);

    #[inline]
    fn next(&mut self) -> Option<(ColId, &'b Value)> {
        match self {
            RowValuesIter::Owned(z) => z.next().map(|(c, v)| (*c, v)),
            RowValuesIter::Borrowed(z) => z.next().map(|(c, (_, v))| (*c, v)),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            RowValuesIter::Owned(z) => z.size_hint(),
            RowValuesIter::Borrowed(z) => z.size_hint(),
        }
    }
}

impl ExactSizeIterator for RowValuesIter<'_> {}

/// A run of column ids in [`WriteBatch::cols`], for rows of the same columns ([`WriteBatch::push_cols`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColRun(u32, u32);

impl ColRun {
    pub fn len(&self) -> usize {
        self.1 as usize
    }

    pub fn is_empty(&self) -> bool {
        self.1 == 0
    }

    /// Its first `n` ids (all of them if it has fewer).
    pub fn prefix(self, n: usize) -> ColRun {
        ColRun(self.0, self.1.min(n as u32))
    }
}

/// Rows resolved to ids, with the catalog entries they made: owning its values when decoded from the
/// WAL or pushed by value, borrowing them from the write's points otherwise ([`Vals`]).
#[derive(Clone, Debug, Default)]
pub struct WriteBatch<'a> {
    pub db: DbId,
    pub entries: Vec<CatalogEntry>,
    pub rows: Vec<RowHead<'a>>,
    cols: Vec<ColId>,
    owned: Vec<Value>,
}

/// Equal when they hold the same entries and rows, wherever each holds its values.
impl PartialEq for WriteBatch<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.db == other.db
            && self.entries == other.entries
            && self.rows.len() == other.rows.len()
            && (0..self.rows.len()).all(|i| {
                let (a, b) = (&self.rows[i], &other.rows[i]);
                (a.table, a.series, a.ts) == (b.table, b.series, b.ts) && self.row_values(i).iter().eq(other.row_values(i).iter())
            })
    }
}

impl<'a> WriteBatch<'a> {
    pub fn new(db: DbId) -> Self {
        WriteBatch { db, ..Default::default() }
    }

    /// A batch with room for `rows` rows of `values` values in all pushed by value
    /// ([`WriteBatch::push_row`]).
    pub fn with_capacity(db: DbId, rows: usize, values: usize) -> Self {
        WriteBatch { db, entries: Vec::new(), rows: Vec::with_capacity(rows), cols: Vec::with_capacity(values), owned: Vec::with_capacity(values) }
    }

    /// A batch with room for `rows` rows whose values it will borrow ([`WriteBatch::push_row_of`]), so
    /// that a request's rows are not copied as the vector doubles (3 % of the server's CPU loading
    /// TSBS's 10 M hosts, with the page faults of each new copy, when the batch held the values too).
    pub fn with_rows(db: DbId, rows: usize) -> Self {
        WriteBatch { db, entries: Vec::new(), rows: Vec::with_capacity(rows), cols: Vec::new(), owned: Vec::new() }
    }

    /// Appends a row, its values copied into the batch.
    pub fn push_row(&mut self, table: TableId, series: SeriesId, ts: i64, values: impl IntoIterator<Item = (ColId, Value)>) {
        let (start, owned) = (self.cols.len(), self.owned.len());
        for (c, v) in values {
            self.cols.push(c);
            self.owned.push(v);
        }
        let cols = (start as u32, (self.cols.len() - start) as u32);
        self.rows.push(RowHead { table, series, ts, cols, vals: Vals::Owned(owned as u32) });
    }

    /// Adds column ids for rows to come ([`WriteBatch::push_row_of`]); rows of the same columns share
    /// the run.
    pub fn push_cols(&mut self, cols: impl IntoIterator<Item = ColId>) -> ColRun {
        let start = self.cols.len();
        self.cols.extend(cols);
        ColRun(start as u32, (self.cols.len() - start) as u32)
    }

    /// [`WriteBatch::push_cols`], or `prev` when it holds these very ids: rows of new series each
    /// resolve their columns anew, mostly to the previous row's, and a run shared is compared by
    /// address where the batch is encoded ([`same_shape`]).
    pub fn push_cols_or(&mut self, prev: Option<ColRun>, cols: impl ExactSizeIterator<Item = ColId> + Clone) -> ColRun {
        match prev {
            Some(p) if p.len() == cols.len() && self.cols[p.0 as usize..][..p.len()].iter().copied().eq(cols.clone()) => p,
            _ => self.push_cols(cols),
        }
    }

    /// Appends a row whose values the batch borrows: `values[k].1` is column `cols`' `k`th.
    ///
    /// # Panics
    /// If `values` and `cols` differ in length.
    pub fn push_row_of(&mut self, table: TableId, series: SeriesId, ts: i64, cols: ColRun, values: &'a [(&'a str, Value)]) {
        assert_eq!(cols.len(), values.len(), "a column id per value");
        self.rows.push(RowHead { table, series, ts, cols: (cols.0, cols.1), vals: Vals::Borrowed(values) });
    }

    /// The values of row `i`.
    pub fn row_values(&self, i: usize) -> RowValues<'_> {
        let r = &self.rows[i];
        let (start, n) = (r.cols.0 as usize, r.cols.1 as usize);
        let cols = &self.cols[start..start + n];
        let vals = match r.vals {
            Vals::Owned(at) => ValSlice::Owned(&self.owned[at as usize..at as usize + n]),
            Vals::Borrowed(v) => ValSlice::Borrowed(v),
        };
        RowValues { cols, vals }
    }

    /// Values in all, over every row.
    pub fn values_len(&self) -> usize {
        self.rows.iter().map(|r| r.cols.1 as usize).sum()
    }

    /// At least the bytes [`WriteBatch::encode`] writes when values are numbers (a row's head at most 21
    /// bytes, a value at most 14; a new series' entry counted at 256, about TSBS's): what to reserve so
    /// that a request's payload is not copied as it grows. Reserved at 32 bytes a row before, a third of
    /// a TSBS row, it was copied twice per request; the payload lives only while the request is written.
    pub fn encoded_len_hint(&self) -> usize {
        16 + self.rows.len() * 21 + self.values_len() * 14 + self.entries.len() * 256
    }

    /// The batch as a WAL record payload of kind [`KIND_WRITE_SHAPED`] (the format in this module's doc).
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_u8(out, KIND_WRITE_SHAPED);
        put_u32(out, self.db);
        put_uvarint(out, self.entries.len() as u64);
        for e in &self.entries {
            encode_entry(out, e);
        }
        put_uvarint(out, self.rows.len() as u64);
        let mut prev_ts = 0i64;
        let mut row = [0u8; ROW_STAGING_BYTES];
        let mut prev: Option<RowValues<'_>> = None;
        for (i, r) in self.rows.iter().enumerate() {
            let vals = self.row_values(i);
            let same = prev.is_some_and(|p| same_shape(p, vals));
            match encode_number_row(&mut row, r, prev_ts, vals, same) {
                Some(n) => out.extend_from_slice(&row[..n]),
                None => encode_row(out, r, prev_ts, vals, same),
            }
            prev_ts = r.ts;
            prev = Some(vals);
        }
    }

    /// Decodes a payload written by [`WriteBatch::encode`]; `None` if it is not one.
    pub fn decode(payload: &[u8]) -> Option<WriteBatch<'static>> {
        let mut r = Reader::new(payload);
        let kind = r.u8()?;
        if kind != KIND_WRITE && kind != KIND_WRITE_SHAPED {
            return None;
        }
        let mut b = WriteBatch::new(r.u32()?);
        // Every entry and row takes at least one byte, which bounds the counts by the payload length.
        let n = r.len(WAL_RECORD_BYTES_MAX.min(r.remaining()))?;
        for _ in 0..n {
            b.entries.push(decode_entry(&mut r)?);
        }
        let n = r.len(r.remaining())?;
        b.rows.reserve(n);
        let mut prev_ts = 0i64;
        // The previous row's column ids (their run in `b.cols`) and where its values start in `b.owned`.
        let mut prev: Option<((u32, u32), usize)> = None;
        for _ in 0..n {
            let table = u32::try_from(r.uvarint()?).ok()?;
            let series = u32::try_from(r.uvarint()?).ok()?;
            let ts = prev_ts.wrapping_add(r.ivarint()?);
            prev_ts = ts;
            let owned = b.owned.len();
            let shape = match kind {
                KIND_WRITE => r.len(COLUMNS_PER_TABLE_MAX)? + 1,
                _ => r.len(COLUMNS_PER_TABLE_MAX + 1)?,
            };
            let cols = if shape == 0 {
                // The previous row's shape: its column run shared, its values' types read again.
                let (cols, at) = prev?;
                for k in at..at + cols.1 as usize {
                    let v = decode_payload(&mut r, b.owned[k].field_type())?;
                    b.owned.push(v);
                }
                cols
            } else {
                let start = b.cols.len();
                for _ in 1..shape {
                    b.cols.push(ColId::try_from(r.uvarint()?).ok()?);
                    b.owned.push(decode_value(&mut r)?);
                }
                (start as u32, (shape - 1) as u32)
            };
            prev = Some((cols, owned));
            b.rows.push(RowHead { table, series, ts, cols, vals: Vals::Owned(owned as u32) });
        }
        r.is_empty().then_some(b)
    }
}

/// Whether row `b` has row `a`'s columns, in order, and values of the same types: then a kind-2 record
/// writes `b` with shape 0. Rows pushed with one column run ([`WriteBatch::push_cols`]) share their ids'
/// slice, which is compared by address first.
fn same_shape(a: RowValues<'_>, b: RowValues<'_>) -> bool {
    (std::ptr::eq(a.cols, b.cols) || a.cols == b.cols) && a.iter().zip(b.iter()).all(|((_, x), (_, y))| x.field_type() == y.field_type())
}

/// Row `r` (values `vals`, the previous row's timestamp `prev_ts`; `same`: of the previous row's shape)
/// as a kind-2 row, byte by byte. Not inlined: `WriteBatch::encode`'s loop over rows of numbers stays
/// small (84 against 74 ns per TSBS row in `batch_encode` with it inlined).
#[inline(never)]
fn encode_row(out: &mut Vec<u8>, r: &RowHead<'_>, prev_ts: i64, vals: RowValues<'_>, same: bool) {
    put_uvarint(out, u64::from(r.table));
    put_uvarint(out, u64::from(r.series));
    put_ivarint(out, r.ts.wrapping_sub(prev_ts));
    if same {
        put_u8(out, 0);
        for (_, v) in vals {
            encode_payload(out, v);
        }
        return;
    }
    put_uvarint(out, vals.len() as u64 + 1);
    for (col, v) in vals {
        put_uvarint(out, u64::from(col));
        put_u8(out, v.field_type() as u8);
        encode_payload(out, v);
    }
}

/// Room for a row staged by [`encode_number_row`]: its head (at most 23 bytes: table and series 5 each,
/// the timestamp's delta 10, the shape 3) and up to 34 values of numbers or booleans (at most 14
/// bytes each: column 3, type 1, payload 10).
const ROW_STAGING_BYTES: usize = 512;

/// Writes row `r` into `buf` exactly as [`encode_row`] does, and returns its length; `None` (nothing
/// meaningful written) for a row with a string or too many values for `buf`, which `encode_row` writes.
///
/// Why by hand: pushing a byte onto a `Vec<u8>` re-reads and re-writes the vector's length at each byte
/// (a byte store may alias it), about 10 ns per value, 5 % of the server's CPU at TSBS's 100 K hosts; a
/// row staged in a local array is copied into the payload once.
fn encode_number_row(buf: &mut [u8; ROW_STAGING_BYTES], r: &RowHead<'_>, prev_ts: i64, vals: RowValues<'_>, same: bool) -> Option<usize> {
    const HEAD_MAX: usize = 23;
    const VALUE_MAX: usize = 14;
    // `uvarint_into` writes two bytes for a one-byte varint: room for the last one's spill.
    if HEAD_MAX + vals.len() * VALUE_MAX + 1 > ROW_STAGING_BYTES {
        return None;
    }
    let mut n = uvarint_into(buf, 0, u64::from(r.table));
    n = uvarint_into(buf, n, u64::from(r.series));
    n = uvarint_into(buf, n, zigzag(r.ts.wrapping_sub(prev_ts)));
    if same {
        buf[n] = 0;
        n += 1;
        for (_, v) in vals {
            n = number_into(buf, n, v)?;
        }
        return Some(n);
    }
    n = uvarint_into(buf, n, vals.len() as u64 + 1);
    for (col, v) in vals {
        n = uvarint_into(buf, n, u64::from(col));
        buf[n] = v.field_type() as u8;
        n = number_into(buf, n + 1, v)?;
    }
    Some(n)
}

/// [`encode_payload`] of a number or boolean into `buf` at `at`; returns the end (`None` for a string).
#[inline(always)]
fn number_into(buf: &mut [u8], at: usize, v: &Value) -> Option<usize> {
    Some(match v {
        Value::Float(x) => {
            buf[at..at + 8].copy_from_slice(&x.to_bits().to_le_bytes());
            at + 8
        }
        Value::Integer(x) => uvarint_into(buf, at, zigzag(*x)),
        Value::UInteger(x) => uvarint_into(buf, at, *x),
        Value::Boolean(x) => {
            buf[at] = u8::from(*x);
            at + 1
        }
        Value::String(_) => return None,
    })
}

/// [`put_uvarint`] into `buf` at `at`; returns the end. A value below 2^14 (column ids, TSBS's 0..=100,
/// most deltas of small numbers) is written as two bytes whose length is then chosen without a branch:
/// values of one byte and of two mixed at random (TSBS's fields) mispredicted the byte loop's branch.
fn uvarint_into(buf: &mut [u8], mut at: usize, mut v: u64) -> usize {
    if v < 1 << 14 {
        let two = usize::from(v >= 0x80);
        buf[at] = (v as u8 & 0x7f) | (two as u8) << 7;
        buf[at + 1] = (v >> 7) as u8;
        return at + 1 + two;
    }
    while v >= 0x80 {
        buf[at] = (v as u8) | 0x80;
        v >>= 7;
        at += 1;
    }
    buf[at] = v as u8;
    at + 1
}

fn encode_payload(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Float(x) => put_u64(out, x.to_bits()),
        Value::Integer(x) => put_ivarint(out, *x),
        Value::UInteger(x) => put_uvarint(out, *x),
        Value::String(s) => put_str(out, s),
        Value::Boolean(x) => put_u8(out, u8::from(*x)),
    }
}

fn decode_value(r: &mut Reader<'_>) -> Option<Value> {
    let ty = FieldType::from_u8(r.u8()?)?;
    decode_payload(r, ty)
}

fn decode_payload(r: &mut Reader<'_>, ty: FieldType) -> Option<Value> {
    Some(match ty {
        FieldType::Float => Value::Float(f64::from_bits(r.u64()?)),
        FieldType::Integer => Value::Integer(r.ivarint()?),
        FieldType::UInteger => Value::UInteger(r.uvarint()?),
        FieldType::String => Value::String(r.str(STRING_VALUE_BYTES_MAX)?.to_string()),
        FieldType::Boolean => match r.u8()? {
            0 => Value::Boolean(false),
            1 => Value::Boolean(true),
            _ => return None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ColumnKind;

    #[test]
    fn batches_round_trip_and_garbage_does_not_decode() {
        let mut b = WriteBatch::new(4);
        b.entries.push(CatalogEntry::AddColumn { db: 4, table: 1, col: 2, name: "f".into(), kind: ColumnKind::Tag });
        b.push_row(1, 0, i64::MIN, [(0, Value::Float(-0.0)), (1, Value::String("é\n".into()))]);
        b.push_row(1, 9, i64::MAX, [(2, Value::Boolean(true)), (3, Value::UInteger(u64::MAX))]);
        b.push_row(2, 1, 5, []);
        b.push_row(2, 1, 6, [(0, Value::Integer(i64::MIN))]);
        let mut buf = Vec::new();
        b.encode(&mut buf);
        let d = WriteBatch::decode(&buf).unwrap();
        assert_eq!(d, b);
        assert_eq!(d.entries, b.entries);
        let first = d.row_values(0).iter().next().unwrap().1;
        assert!(matches!(first, Value::Float(x) if x.is_sign_negative()));
        // The same rows with values borrowed encode to the same bytes, and decode equal.
        let points: Vec<Vec<(&str, Value)>> = (0..b.rows.len()).map(|i| b.row_values(i).iter().map(|(_, v)| ("f", v.clone())).collect()).collect();
        let mut borrowed = WriteBatch::with_rows(4, b.rows.len());
        borrowed.entries = b.entries.clone();
        for (i, p) in points.iter().enumerate() {
            let r = b.rows[i];
            let run = borrowed.push_cols(b.row_values(i).cols().iter().copied());
            borrowed.push_row_of(r.table, r.series, r.ts, run, p);
        }
        assert_eq!(borrowed, b);
        let mut again = Vec::new();
        borrowed.encode(&mut again);
        assert_eq!(again, buf);
        let mut other = b.clone();
        other.push_row(2, 1, 7, []);
        assert_ne!(other, b);
        for cut in 0..buf.len() {
            assert!(WriteBatch::decode(&buf[..cut]).is_none(), "prefix {cut} decoded");
        }
    }

    /// A row staged in the local buffer is the same bytes as the one written byte by byte, for every kind
    /// of number at the varints' length boundaries, rows as wide as the buffer takes, and rows it does not
    /// take (a string, too many values) left to the byte path.
    #[test]
    fn staged_rows_are_the_bytes_of_the_byte_path() {
        let edges: Vec<u64> = [0, 1, 63, 64, 127, 128, 8191, 8192, 16383, 16384, 1 << 21, (1 << 28) + 3, u64::MAX >> 1, u64::MAX]
            .into_iter()
            .flat_map(|v| [v, v.wrapping_sub(1)])
            .collect();
        let value = |k: usize| match k % 5 {
            0 => Value::Integer(edges[k % edges.len()] as i64),
            1 => Value::Integer(-(edges[(k / 2) % edges.len()] as i64)),
            2 => Value::UInteger(edges[(k / 3) % edges.len()]),
            3 => Value::Float(f64::from_bits(edges[k % edges.len()])),
            _ => Value::Boolean(k.is_multiple_of(2)),
        };
        let mut row = [0u8; ROW_STAGING_BYTES];
        let mut staged = 0;
        for (k, &e) in edges.iter().enumerate() {
            for width in [0, 1, 10, 34, 35] {
                let cols = [0, 127, 128, 16383, 16384, u16::MAX];
                let mut b = WriteBatch::new(0);
                b.push_row(e as u32, (e >> 7) as u32, e as i64, (0..width).map(|j| (cols[(j + k) % cols.len()], value(j * 7 + k))));
                let (r, vals) = (&b.rows[0], b.row_values(0));
                for (prev_ts, same) in [0, i64::MIN, i64::MAX, -(e as i64)].into_iter().flat_map(|t| [(t, false), (t, true)]) {
                    let mut want = Vec::new();
                    encode_row(&mut want, r, prev_ts, vals, same);
                    match encode_number_row(&mut row, r, prev_ts, vals, same) {
                        Some(n) => {
                            assert_eq!(&row[..n], &want[..], "edge {e}, width {width}, prev_ts {prev_ts}, same {same}");
                            staged += 1;
                        }
                        None => assert_eq!(width, 35, "a row of {width} numbers left to the byte path"),
                    }
                }
            }
        }
        assert!(staged > 0);
        let mut b = WriteBatch::new(0);
        b.push_row(1, 2, 3, [(1, Value::Integer(5)), (2, Value::String("x".into()))]);
        assert_eq!(encode_number_row(&mut row, &b.rows[0], 0, b.row_values(0), false), None);
        assert_eq!(encode_number_row(&mut row, &b.rows[0], 0, b.row_values(0), true), None);
    }

    /// Rows of one shape are written with shape 0 after the first, whether they share a column run or
    /// repeat its ids; a row with other columns, the same columns in another order, or a value of another
    /// type names its columns again. Every such batch decodes to itself, and a shape 0 in the first row
    /// does not decode.
    #[test]
    fn rows_of_the_previous_rows_shape_leave_out_their_columns() {
        let ints = |k: i64| [(3, Value::Integer(k)), (7, Value::Integer(-k))];
        let mut b = WriteBatch::new(1);
        b.push_row(1, 0, 10, ints(1));
        let once = b.clone();
        b.push_row(1, 1, 10, ints(200));
        b.push_row(1, 2, 20, ints(3));
        let mut one = Vec::new();
        once.encode(&mut one);
        let mut three = Vec::new();
        b.encode(&mut three);
        // Each later row: table, series, ts delta (0, then 10 as 20 zigzagged), shape 0, two varints.
        assert_eq!(&three[one.len()..], &[1, 1, 0, 0, 0x90, 0x03, 0x8f, 0x03, 1, 2, 20, 0, 6, 5][..]);
        // The same head but the row count (at byte 6), and the same first row.
        assert_eq!((one[6], three[6]), (1, 3));
        assert_eq!((&three[..6], &three[7..one.len()]), (&one[..6], &one[7..]));
        assert_eq!(WriteBatch::decode(&three).unwrap(), b);

        // Borrowed rows of one run: the same bytes.
        let fields: Vec<Vec<(&str, Value)>> = (0..3).map(|i| b.row_values(i).iter().map(|(_, v)| ("f", v.clone())).collect()).collect();
        let mut borrowed = WriteBatch::with_rows(1, 3);
        let run = borrowed.push_cols([3, 7]);
        for (i, f) in fields.iter().enumerate() {
            let r = b.rows[i];
            borrowed.push_row_of(r.table, r.series, r.ts, run, f);
        }
        let mut again = Vec::new();
        borrowed.encode(&mut again);
        assert_eq!(again, three);

        // Other columns, another order, another type, a string: each names its columns (shape n + 1).
        let mut c = WriteBatch::new(1);
        c.push_row(1, 0, 0, ints(1));
        c.push_row(1, 0, 1, [(3, Value::Integer(1))]);
        c.push_row(1, 0, 2, [(7, Value::Integer(1)), (3, Value::Integer(1))]);
        c.push_row(1, 0, 3, [(7, Value::Integer(1)), (3, Value::Float(1.0))]);
        c.push_row(1, 0, 4, [(7, Value::Integer(1)), (3, Value::Float(2.0))]);
        c.push_row(1, 0, 5, [(7, Value::String("a".into())), (3, Value::Float(2.0))]);
        c.push_row(1, 0, 6, [(7, Value::String("bc".into())), (3, Value::Float(3.0))]);
        c.push_row(1, 0, 7, []);
        c.push_row(1, 0, 8, []);
        let mut buf = Vec::new();
        c.encode(&mut buf);
        let d = WriteBatch::decode(&buf).unwrap();
        assert_eq!(d, c);
        let shapes: Vec<usize> = (0..c.rows.len()).map(|i| d.row_values(i).len()).collect();
        assert_eq!(shapes, [2, 1, 2, 2, 2, 2, 2, 0, 0]);
        for cut in 0..buf.len() {
            assert!(WriteBatch::decode(&buf[..cut]).is_none(), "prefix {cut} decoded");
        }

        // A first row of shape 0 has no shape to take: db 1, no entries, one row of table 1, series 0, ts 0.
        let mut first = [KIND_WRITE_SHAPED, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0];
        assert!(WriteBatch::decode(&first).is_none());
        first[10] = 1;
        assert_eq!(WriteBatch::decode(&first).unwrap().rows.len(), 1, "a row of no values (shape 1) decodes");
    }

    /// A run is reused only for the very ids it holds: a prefix, another order, more ids or another id
    /// each get a run of their own, holding theirs.
    #[test]
    fn a_run_is_reused_for_its_very_ids_only() {
        let mut b = WriteBatch::new(1);
        let first = b.push_cols_or(None, [3, 7].into_iter());
        assert_eq!(b.push_cols_or(Some(first), [3, 7].into_iter()), first);
        for other in [&[3][..], &[7, 3], &[3, 7, 8], &[3, 8], &[]] {
            let run = b.push_cols_or(Some(first), other.iter().copied());
            assert_ne!(run, first, "{other:?}");
            assert_eq!(&b.cols[run.0 as usize..][..run.len()], other);
        }
        assert_eq!(&b.cols[first.0 as usize..][..first.len()], [3, 7]);
    }

    /// A kind-1 record, as builds before kind 2 wrote every WAL record, decodes to its rows: a WAL left by
    /// an older build replays.
    #[test]
    fn kind_1_records_still_decode() {
        #[rustfmt::skip]
        let kind1 = [
            KIND_WRITE, 4, 0, 0, 0, // db 4
            0, // no entries
            2, // two rows
            1, 2, 20, 2, // table 1, series 2, ts 10 (zigzag 20), two values
            0, FieldType::Integer as u8, 10, // col 0: Integer 5
            1, FieldType::Float as u8, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, // col 1: Float 1.5
            1, 3, 1, 1, // table 1, series 3, ts 9 (delta −1), one value
            0, FieldType::Boolean as u8, 1, // col 0: true
        ];
        let mut want = WriteBatch::new(4);
        want.push_row(1, 2, 10, [(0, Value::Integer(5)), (1, Value::Float(1.5))]);
        want.push_row(1, 3, 9, [(0, Value::Boolean(true))]);
        assert_eq!(WriteBatch::decode(&kind1).unwrap(), want);
        let mut shape0 = kind1;
        shape0[10] = 0; // kind 1 has no shape 0: a row of no values, and its values then misread
        assert!(WriteBatch::decode(&shape0).is_none());
    }

    /// Rows of numbers, at the widest their varints get, fit the room `encoded_len_hint` reserves.
    #[test]
    fn the_length_hint_holds_rows_of_numbers() {
        let mut b = WriteBatch::new(u32::MAX);
        for i in 0..100u32 {
            let ts = if i % 2 == 0 { i64::MIN } else { i64::MAX };
            let values = (0..10u16).map(|c| (u16::MAX - c, if c % 2 == 0 { Value::Integer(i64::MIN) } else { Value::Float(1.5) }));
            b.push_row(u32::MAX, u32::MAX - i, ts, values);
        }
        let mut buf = Vec::new();
        b.encode(&mut buf);
        assert!(buf.len() <= b.encoded_len_hint(), "{} bytes, hint {}", buf.len(), b.encoded_len_hint());
    }
}
