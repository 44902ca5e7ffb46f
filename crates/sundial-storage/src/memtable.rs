//! In-memory rows not yet in segment files: per table, per series, append-only columns, with a sorted
//! staging area for late rows.
//!
//! # The in-order part and the staging area
//! Each [`SeriesBuf`] keeps two [`RowBuf`]s:
//! - the **in-order part**: every row whose timestamp is above the last one of this part, appended in
//!   arrival order, so its timestamps are strictly increasing. Reads binary-search and slice it; nothing
//!   ever sorts it. Almost every row of a well-behaved source takes this path, and it costs what it cost
//!   before late rows were handled at all.
//! - the **staging area** ([`Staging`]), for a late or duplicate row (timestamp ≤ the in-order part's
//!   last): appended in arrival order and sorted (with duplicates merged) once when it is first read.
//!   It exists only for series that received late rows: `Option<Box<_>>` costs a series without
//!   them one pointer.
//!
//! Reads ([`SeriesBuf::read`], [`SeriesBuf::read_tail`]) and the flush merge the two parts linearly
//! ([`merge_staged`]), never re-sorting the in-order part. **Last write wins per column**: a staged row
//! arrived after every in-order row with the same timestamp (an in-order row is above the part's last
//! timestamp when it arrives, a staged one at or below it, and that last timestamp only grows), so on a
//! tie each column takes the staged value unless it is null, the rule of [`crate::rows::merge`].
//! What keeps that argument true is the invariant *every staged timestamp ≤ the in-order part's last
//! timestamp*: only a delete can break it (by removing the in-order tail), and a delete that does folds
//! the staging area into the in-order part ([`SeriesBuf::remove_time_range`]).
//!
//! Sketch (TSBS cpu-only: 10 float fields): a row costs 8 + 10 × 8 = 88 bytes in either part (rows
//! are kept row-major, see [`RowBuf`]), a series about 300 bytes besides, plus 80 bytes once per
//! series with late rows. A read of `n` in-order and `k` staged rows costs the copy
//! of `n + k` rows it did before plus, the first time after new late rows, a sort of the `k` staged
//! rows (O(k log k)); the old buffer sorted all `n + k` rows at every flush and at the first read.
//!
//! Memory accounting ([`MemGen::bytes`], which drives the flush and backpressure) counts staged rows
//! and the staging box like any other row. [`MemGen::rows`] counts rows as written until duplicates
//! are merged (an over-estimate of the distinct rows, like the byte count after a delete).

use std::collections::hash_map::Entry;
use std::sync::Arc;

use crate::FastMap as HashMap;
use crate::batch::{RowValues, WriteBatch};
use crate::catalog::{ColId, DbId, SeriesId, TableId};
use crate::limits;
use crate::rows::SeriesRows;
use crate::types::{Column, ColumnValues, FieldType, Value};

mod positions;
mod slots;
use positions::Positions;
use slots::Slots;

/// Rows of one series, row-major: timestamps, and per row one 8-byte slot for each column any row of
/// the series had (`schema`, in first-seen order). Whether `ts` is sorted is the owner's business (see
/// [`SeriesBuf`]).
///
/// Row-major by hand rather than a vector per column: a series' first row cost two allocations per
/// column that way (≈ 2.4 KB for TSBS's ten fields), so at 100 K series a 256 MiB memtable was full of
/// nearly empty vectors after one to three rows per series, and every flush wrote blocks of that many
/// rows (38 MB segments for 330 K rows, which compaction then read back). Here a series of up to a
/// chunk of rows ([`Slots`]) costs two allocations whatever its width (its columns are a [`Schema`]
/// shared with the table's other series), a longer one one more per chunk, and a row `8 + 8 × width`
/// bytes. Slots hold a float's bits, an
/// integer, a boolean as 0/1, or the index of a string in [`Extra::strings`]; nulls are bits of a
/// bitmap over the slots that exists only once some slot is null. Reads gather a column's slots into a
/// [`Column`] (they copied column slices before: the same bytes, strided).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowBuf {
    pub ts: Timestamps,
    /// `None` before the first row. Shared with the other series of the table whose first row had the
    /// same columns ([`MemTable`]'s last schema, see [`RowBuf::push`]).
    schema: Option<Schema>,
    /// Row `i`'s value of column `k` is slot `k` of row `i`, slot `i * schema.len() + k` in
    /// [`Extra::nulls`]; rows are kept in chunks that never move ([`Slots`]).
    slots: Slots,
    /// Nulls and strings: `None` for rows of numbers and booleans without nulls (TSBS's).
    extra: Option<Box<Extra>>,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Extra {
    /// Bit `s` set: slot `s` is null. Words past its end are all "not null".
    nulls: Vec<u64>,
    strings: Vec<String>,
    /// Heap bytes of `strings`' contents (their capacities, allocator headers included).
    string_bytes: usize,
}

/// A buffer's timestamps, the first kept inline (in the three words a vector takes): a series of one
/// row, every series of a load of new devices (TSBS's 10 M hosts), then allocates its slots alone, and
/// frees them alone at the flush.
type Timestamps = smallvec::SmallVec<[i64; 1]>;
const _: () = assert!(std::mem::size_of::<Timestamps>() == std::mem::size_of::<Vec<i64>>(), "no larger than a vector");

/// [`vec_bytes`] of the timestamps: none while the one is inline.
fn ts_bytes(ts: &Timestamps) -> usize {
    if ts.spilled() { ts.capacity() * std::mem::size_of::<i64>() + ALLOC_BYTES } else { 0 }
}

/// A series' columns with their types, in first-seen order. Shared: a table's series mostly have the
/// same columns, and a list per series was an allocation to make, to free, and to fetch from memory at
/// the flush for each of them (a tenth of the flush of a million new series).
type Schema = Arc<[(ColId, FieldType)]>;

/// What a new schema's allocation costs, for the accounting (counted once, by the series that made it).
fn schema_bytes(s: &Schema) -> usize {
    2 * std::mem::size_of::<usize>() + std::mem::size_of_val::<[(ColId, FieldType)]>(s) + ALLOC_BYTES
}

/// Whether a row's values set exactly `schema`'s columns, in its order, with its types.
fn same_columns(schema: &[(ColId, FieldType)], values: RowValues<'_>) -> bool {
    values.len() == schema.len() && values.iter().zip(schema).all(|((c, v), (sc, ty))| c == *sc && v.field_type() == *ty)
}

/// A vector's heap bytes as the accounting counts them: its capacity plus an allocator header.
fn vec_bytes<T>(x: &Vec<T>) -> usize {
    if x.capacity() == 0 { 0 } else { x.capacity() * std::mem::size_of::<T>() + ALLOC_BYTES }
}

/// Replaces `v`'s contents by `items`, keeping its allocation.
fn refill<T>(v: &mut Vec<T>, items: impl Iterator<Item = T>) {
    v.clear();
    v.extend(items);
}

/// `v` set to `n` values, `value` of each row of the `runs` (rows of `w` slots, `n` in all; see
/// [`slots::Slots::runs`]), a run at a time.
fn gather<'r, T>(v: &mut Vec<T>, n: usize, runs: impl Iterator<Item = &'r [u64]>, w: usize, value: impl Fn(&[u64]) -> T) {
    v.clear();
    v.reserve(n);
    for run in runs {
        v.extend(run.chunks_exact(w).map(&value));
    }
    debug_assert_eq!(v.len(), n);
}

/// What one allocation costs beyond its bytes (the allocator's header), for the accounting.
const ALLOC_BYTES: usize = 16;

/// The slot encoding of `v` (see [`RowBuf`]); a string is stored in [`Extra::strings`]. A function of
/// the buffer's `extra` alone, so that a row's slots can be pushed onto its chunk meanwhile.
fn encode(extra: &mut Option<Box<Extra>>, v: &Value) -> u64 {
    match v {
        Value::Float(x) => x.to_bits(),
        Value::Integer(x) => *x as u64,
        Value::UInteger(x) => *x,
        Value::Boolean(x) => u64::from(*x),
        Value::String(s) => push_string(extra, s.clone()),
    }
}

/// Stores `s` in [`Extra::strings`]; returns its slot value (its index).
fn push_string(extra: &mut Option<Box<Extra>>, s: String) -> u64 {
    let e = extra.get_or_insert_with(Box::default);
    e.string_bytes += if s.capacity() == 0 { 0 } else { s.capacity() + ALLOC_BYTES };
    e.strings.push(s);
    (e.strings.len() - 1) as u64
}

/// Marks slot `slot` null in [`Extra::nulls`].
fn set_null(extra: &mut Option<Box<Extra>>, slot: usize) {
    let e = extra.get_or_insert_with(Box::default);
    if e.nulls.len() <= slot / 64 {
        e.nulls.resize(slot / 64 + 1, 0);
    }
    e.nulls[slot / 64] |= 1 << (slot % 64);
}

/// Which columns a row being pushed has set, for rows up to 256 columns wide without allocating.
struct RowMask {
    inline: [u64; 4],
    heap: Vec<u64>,
}

impl RowMask {
    fn new(width: usize) -> RowMask {
        RowMask { inline: [0; 4], heap: if width > 256 { vec![0; width.div_ceil(64)] } else { Vec::new() } }
    }

    fn words(&mut self) -> &mut [u64] {
        if self.heap.is_empty() { &mut self.inline } else { &mut self.heap }
    }

    fn insert(&mut self, k: usize) {
        self.words()[k / 64] |= 1 << (k % 64);
    }

    fn count(&mut self) -> usize {
        self.words().iter().map(|w| w.count_ones() as usize).sum()
    }

    fn contains(&mut self, k: usize) -> bool {
        self.words()[k / 64] >> (k % 64) & 1 == 1
    }
}

impl RowBuf {
    pub fn len(&self) -> usize {
        self.ts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }

    /// The columns any row had, with their types, in first-seen order.
    pub fn schema(&self) -> &[(ColId, FieldType)] {
        self.schema.as_deref().unwrap_or(&[])
    }

    fn width(&self) -> usize {
        self.schema().len()
    }

    /// Bytes allocated on the heap for these rows, as the accounting counts them: every vector's
    /// capacity plus an allocator header each, and the strings' bytes. The schema is shared, so it is
    /// not here: [`RowBuf::push`] counts a new one once.
    pub fn heap_bytes(&self) -> usize {
        ts_bytes(&self.ts) + self.slots.heap_bytes(self.width()) + self.extra_bytes()
    }

    /// [`RowBuf::heap_bytes`] of [`Extra`]: 0, without a load, for rows of numbers and booleans.
    fn extra_bytes(&self) -> usize {
        let extra = |e: &Extra| std::mem::size_of::<Extra>() + ALLOC_BYTES + vec_bytes(&e.nulls) + vec_bytes(&e.strings) + e.string_bytes;
        self.extra.as_deref().map_or(0, extra)
    }

    fn is_null(&self, slot: usize) -> bool {
        self.extra.as_ref().is_some_and(|e| e.nulls.get(slot / 64).is_some_and(|w| w >> (slot % 64) & 1 == 1))
    }

    fn strings(&self) -> &[String] {
        self.extra.as_ref().map_or(&[], |e| &e.strings)
    }

    /// Adds column `col` after the existing ones: every row so far gets a null slot for it (the rows
    /// are laid out again, once per new column of the series). Returns the new schema's bytes.
    fn add_column(&mut self, col: ColId, ty: FieldType) -> usize {
        let (w, n) = (self.width(), self.len());
        let mut cols = self.schema().to_vec();
        cols.push((col, ty));
        let schema: Schema = cols.into();
        let bytes = schema_bytes(&schema);
        self.schema = Some(schema);
        if n == 0 {
            return bytes;
        }
        let mut slots = Slots::with_rows(n, w + 1);
        let mut nulls = Vec::new();
        for i in 0..n {
            let row = slots.room(i, w + 1);
            row.extend_from_slice(self.slots.row(i, w));
            row.push(0);
            for k in (0..w).filter(|k| self.is_null(i * w + k)).chain([w]) {
                let s = i * (w + 1) + k;
                if nulls.len() <= s / 64 {
                    nulls.resize(s / 64 + 1, 0);
                }
                nulls[s / 64] |= 1u64 << (s % 64);
            }
        }
        self.slots = slots;
        self.extra.get_or_insert_with(Box::default).nulls = nulls;
        bytes
    }

    /// Appends one row; returns the growth of [`RowBuf::heap_bytes`] (vectors grow by doubling, so
    /// most rows add nothing and some add the room for as many rows again), plus a schema made here.
    /// The first row takes `shared` as its schema when its columns are those (in that order, with
    /// those types); otherwise its own columns become `shared`, for the next series.
    fn push(&mut self, ts: i64, values: RowValues<'_>, shared: &mut Option<Schema>) -> usize {
        let mut made = 0;
        if self.schema.is_none() {
            match shared.as_ref().filter(|s| same_columns(s, values)) {
                Some(s) => self.schema = Some(s.clone()),
                None => {
                    // Each column once, where it first comes, with that value's type.
                    let mut cols: Vec<(ColId, FieldType)> = Vec::with_capacity(values.len());
                    for (col, v) in values {
                        if !cols.iter().any(|(c, _)| *c == col) {
                            cols.push((col, v.field_type()));
                        }
                    }
                    let schema: Schema = cols.into();
                    made += schema_bytes(&schema);
                    *shared = Some(schema.clone());
                    self.schema = Some(schema);
                }
            }
        }
        // Most rows set every column of the buffer, in its order, with its types (an agent sends the
        // same fields every row), a series' first row included once its schema is made: appended
        // straight, without a search of the schema per value and the null bookkeeping below (a fifth of
        // the write path's CPU at TSBS's ten fields).
        // Its growth counted from the vectors it touches (the list of full chunks is read only when a
        // chunk is made: it is elsewhere in memory, a cache miss per row).
        let w = self.width();
        if w > 0 && same_columns(self.schema(), values) {
            let before = ts_bytes(&self.ts) + self.extra_bytes();
            let grown = self.slots.push_row(self.ts.len(), w, values.iter().map(|(_, v)| encode(&mut self.extra, v)));
            self.ts.push(ts);
            return (ts_bytes(&self.ts) + self.extra_bytes()).saturating_sub(before) + grown + made;
        }
        // A schema made above is not in `heap_bytes`: counting from here counts the same.
        let before = self.heap_bytes();
        for (col, v) in values {
            if !self.schema().iter().any(|(c, _)| *c == col) {
                made += self.add_column(col, v.field_type());
            }
        }
        let w = self.width();
        let n = self.ts.len();
        let base = n * w;
        let row = self.slots.room(n, w);
        row.resize(row.len() + w, 0);
        self.ts.push(ts);
        let mut set = RowMask::new(w);
        let schema = self.schema.clone().expect("made above");
        for (col, v) in values {
            let k = schema.iter().position(|(c, _)| *c == col).expect("added above");
            if v.field_type() != schema[k].1 {
                continue; // a value of another type than the column's is a null, as in a typed column
            }
            // The same column twice in one row: the later value wins.
            self.slots.row_mut(n, w)[k] = encode(&mut self.extra, v);
            set.insert(k);
        }
        if set.count() < w {
            for k in 0..w {
                if !set.contains(k) {
                    set_null(&mut self.extra, base + k);
                }
            }
        }
        self.heap_bytes().saturating_sub(before) + made
    }

    /// Appends a row at `ts` taking column `k`'s value (or null) from row `pick(k)` of `src` (same
    /// schema as `self`), or a null where `pick` gives `None`.
    fn push_picked(&mut self, ts: i64, src: &RowBuf, pick: impl Fn(usize) -> Option<usize>) {
        debug_assert_eq!(self.schema, src.schema);
        let w = self.width();
        let n = self.ts.len();
        let base = n * w;
        let row = self.slots.room(n, w);
        for k in 0..w {
            match pick(k).filter(|i| !src.is_null(i * w + k)) {
                Some(i) => {
                    let x = src.slots.row(i, w)[k];
                    let x = if src.schema()[k].1 == FieldType::String {
                        push_string(&mut self.extra, src.strings()[x as usize].clone())
                    } else {
                        x
                    };
                    row.push(x);
                }
                None => {
                    row.push(0);
                    set_null(&mut self.extra, base + k);
                }
            }
        }
        self.ts.push(ts);
    }

    /// An empty buffer with the same columns.
    fn empty_like(&self, rows: usize) -> RowBuf {
        RowBuf { ts: Timestamps::with_capacity(rows), schema: self.schema.clone(), slots: Slots::with_rows(rows, self.width()), extra: None }
    }

    /// Column `col`'s values of rows `range`, or `None` if no row had the column.
    pub fn column_range(&self, col: ColId, range: std::ops::Range<usize>) -> Option<Column> {
        let mut out = None;
        self.column_range_into(col, range, &mut out);
        out
    }

    /// [`RowBuf::column_range`] into `out`, reusing its vectors when it holds a column of that type.
    fn column_range_into(&self, col: ColId, range: std::ops::Range<usize>, out: &mut Option<Column>) {
        let k = self.schema().iter().position(|(c, _)| *c == col);
        self.column_at_into(k, range, None, out);
    }

    /// [`RowBuf::column_range_into`] of the column at position `k` of the schema (`None`: a column the
    /// rows lack), from `run` when the caller found the rows' slots in one run (see
    /// [`RowBuf::slice_sorted_into`]).
    fn column_at_into(&self, k: Option<usize>, range: std::ops::Range<usize>, run: Option<&[u64]>, out: &mut Option<Column>) {
        let Some(k) = k else {
            *out = None;
            return;
        };
        let ty = self.schema()[k].1;
        let c = match out {
            Some(c) if c.field_type() == ty => c,
            _ => out.insert(Column::new(ty)),
        };
        let w = self.width();
        c.validity.clear();
        if self.extra.as_ref().is_some_and(|e| !e.nulls.is_empty()) {
            c.validity.extend(range.clone().map(|i| !self.is_null(i * w + k)));
        } else {
            c.validity.resize(range.len(), true);
        }
        match run {
            Some(run) => self.gather_into(c, k, range.len(), std::iter::once(run)),
            None => self.gather_into(c, k, range.len(), self.slots.runs(range, w)),
        }
    }

    /// `c`'s values set to column `k` of the `n` rows of `runs` (see [`slots::Slots::runs`]); its
    /// validity set already.
    fn gather_into<'r>(&'r self, c: &mut Column, k: usize, n: usize, runs: impl Iterator<Item = &'r [u64]>) {
        let w = self.width();
        match &mut c.values {
            ColumnValues::Float(v) => gather(v, n, runs, w, |row| f64::from_bits(row[k])),
            ColumnValues::Integer(v) => gather(v, n, runs, w, |row| row[k] as i64),
            ColumnValues::UInteger(v) => gather(v, n, runs, w, |row| row[k]),
            ColumnValues::Boolean(v) => gather(v, n, runs, w, |row| row[k] != 0),
            ColumnValues::String(v) => {
                let slots = runs.flat_map(|run| run.chunks_exact(w)).map(|row| row[k]);
                refill(v, slots.zip(&c.validity).map(|(x, ok)| if *ok { self.strings()[x as usize].clone() } else { String::new() }))
            }
        }
    }

    /// The rows of `rows` (sorted or not) as a buffer with columns `cols`.
    fn from_rows(rows: &SeriesRows, cols: &[(ColId, FieldType)]) -> RowBuf {
        let mut out = RowBuf { schema: Some(cols.into()), ..RowBuf::default() };
        let (mut ids, mut values) = (Vec::with_capacity(cols.len()), Vec::with_capacity(cols.len()));
        for (i, t) in rows.ts.iter().enumerate() {
            ids.clear();
            values.clear();
            for ((id, _), c) in cols.iter().zip(&rows.cols) {
                if let Some(v) = c.as_ref().and_then(|c| c.get(i)) {
                    ids.push(*id);
                    values.push(v);
                }
            }
            out.push(*t, RowValues::new(&ids, &values), &mut None);
        }
        out
    }

    /// The last `n` rows with `ts_min <= ts <= ts_max`, for `cols`. Requires strictly increasing `ts`.
    fn slice_sorted(&self, series: SeriesId, ts_min: i64, ts_max: i64, cols: &[(ColId, FieldType)], n: usize) -> SeriesRows {
        let mut out = SeriesRows { series, ts: Vec::new(), cols: Vec::new() };
        self.slice_sorted_into(&mut out, series, ts_min, ts_max, cols, n);
        out
    }

    /// [`RowBuf::slice_sorted`] into `out`, reusing its vectors.
    fn slice_sorted_into(&self, out: &mut SeriesRows, series: SeriesId, ts_min: i64, ts_max: i64, cols: &[(ColId, FieldType)], n: usize) {
        debug_assert!(self.ts.windows(2).all(|w| w[0] < w[1]), "slice_sorted of unsorted rows");
        let end = self.ts.partition_point(|t| *t <= ts_max);
        let start = self.ts.partition_point(|t| *t < ts_min).max(end.saturating_sub(n)).min(end);
        out.series = series;
        refill(&mut out.ts, self.ts[start..end].iter().copied());
        out.cols.resize_with(cols.len(), || None);
        // A flush asks for the rows' own columns in their order, and a series' rows mostly lie in one
        // chunk of slots: each column is then found at its place and gathered from that one run, found
        // once, rather than searched for and walked to through the chunks per column (a flush of a
        // million one-row series did both ten million times).
        let schema = self.schema();
        let w = self.width();
        let one_run = if w == 0 {
            None
        } else {
            let mut runs = self.slots.runs(start..end, w);
            match (runs.next(), runs.next()) {
                (first, None) => Some(first.unwrap_or(&[])),
                _ => None,
            }
        };
        for (j, ((col, _), dst)) in cols.iter().zip(&mut out.cols).enumerate() {
            let k = if schema.get(j).is_some_and(|(c, _)| c == col) { Some(j) } else { schema.iter().position(|(c, _)| c == col) };
            self.column_at_into(k, start..end, one_run, dst);
        }
    }

    /// A copy sorted by timestamp with duplicates merged: per column, the last non-null value wins.
    pub fn sorted_dedup(&self) -> RowBuf {
        let mut order: Vec<u32> = (0..self.ts.len() as u32).collect();
        order.sort_by_key(|i| self.ts[*i as usize]); // stable: arrival order within one timestamp
        let w = self.width();
        let mut out = self.empty_like(order.len());
        let mut start = 0;
        while start < order.len() {
            let t = self.ts[order[start] as usize];
            let end = start + order[start..].iter().take_while(|i| self.ts[**i as usize] == t).count();
            let rows = &order[start..end];
            out.push_picked(t, self, |k| rows.iter().rev().map(|i| *i as usize).find(|i| !self.is_null(i * w + k)));
            start = end;
        }
        out
    }

    /// Removes the rows with `ts_min <= ts <= ts_max`, in any order (a delete); returns how many.
    fn remove_time_range(&mut self, ts_min: i64, ts_max: i64) -> usize {
        let keep = |t: &i64| *t < ts_min || *t > ts_max;
        let kept = self.ts.iter().filter(|t| keep(t)).count();
        let removed = self.len() - kept;
        if removed == 0 {
            return 0;
        }
        let mut out = self.empty_like(kept);
        for (i, t) in self.ts.iter().enumerate().filter(|(_, t)| keep(t)) {
            out.push_picked(*t, self, |_| Some(i));
        }
        *self = out;
        removed
    }
}

/// The late rows of one series (see the module doc).
///
/// Appended in arrival order and sorted once when read, rather than kept sorted on insert, because:
/// - inserting into sorted columns moves on average half the staged rows of every column per late row,
///   which is quadratic: TSBS's 10 %-late load stages ~2 600 rows per host and day, so each late row
///   would move ~1 300 values in each of 11 vectors;
/// - a `BTreeMap` of rows would cost an allocation per row and several times the bytes of columns.
///
/// Appending costs what the in-order path costs. The sort is stable and O(k log k) in the staged rows
/// only; for the active memtable it runs in place at the first read after new late rows
/// ([`MemGen::sort_staging`]) and is then cached (`sorted`); a frozen memtable is immutable, so its
/// reads and its flush sort a copy. Late rows that arrive in order among themselves (a whole late hour)
/// never clear `sorted` and are never sorted at all.
#[derive(Debug)]
pub struct Staging {
    rows: RowBuf,
    /// Timestamps strictly increasing (sorted, duplicates merged).
    sorted: bool,
}

/// One series' rows in one memtable generation: an in-order part and, for series that received late
/// rows, a staging area (see the module doc).
#[derive(Debug, Default)]
pub struct SeriesBuf {
    /// Timestamps strictly increasing; append-only except for deletes.
    in_order: RowBuf,
    /// `None` for every series without late rows (the common case costs 8 bytes, the size of a flag).
    /// When present, not empty, and every timestamp in it ≤ `in_order`'s last.
    staged: Option<Box<Staging>>,
}

impl SeriesBuf {
    /// Appends one row, to the in-order part if its timestamp is above that part's last, else to the
    /// staging area; returns the approximate bytes added.
    fn push(&mut self, ts: i64, values: RowValues<'_>, shared: &mut Option<Schema>) -> usize {
        match self.in_order.ts.last() {
            Some(last) if ts <= *last => self.push_late(ts, values, shared),
            _ => self.in_order.push(ts, values, shared),
        }
    }

    fn push_late(&mut self, ts: i64, values: RowValues<'_>, shared: &mut Option<Schema>) -> usize {
        let mut bytes = 0;
        let st = self.staged.get_or_insert_with(|| {
            bytes += std::mem::size_of::<Staging>() + ALLOC_BYTES;
            Box::new(Staging { rows: RowBuf::default(), sorted: true })
        });
        if st.rows.ts.last().is_some_and(|last| *last >= ts) {
            st.sorted = false;
        }
        bytes + st.rows.push(ts, values, shared)
    }

    /// Heap bytes of both parts (see [`RowBuf::heap_bytes`]) and of the staging area's box.
    fn heap_bytes(&self) -> usize {
        self.in_order.heap_bytes() + self.staged.as_ref().map_or(0, |st| std::mem::size_of::<Staging>() + ALLOC_BYTES + st.rows.heap_bytes())
    }

    /// The in-order part: timestamps strictly increasing.
    pub fn in_order(&self) -> &RowBuf {
        &self.in_order
    }

    /// The staging area's rows (in arrival order unless sorted), and whether they are sorted and
    /// deduplicated; `None` if the series received no late row.
    pub fn staged(&self) -> Option<(&RowBuf, bool)> {
        self.staged.as_ref().map(|s| (&s.rows, s.sorted))
    }

    /// The parts as sorted, deduplicated runs (in-order first), or `None` while staged rows are not
    /// sorted yet. Two runs may share timestamps; only [`SeriesBuf::read`] merges them.
    pub fn sorted_parts(&self) -> Option<Vec<&RowBuf>> {
        match &self.staged {
            None => Some(vec![&self.in_order]),
            Some(s) if s.sorted => Some(vec![&self.in_order, &s.rows]),
            Some(_) => None,
        }
    }

    /// Rows held, counting a duplicate timestamp once per write until it is merged.
    pub fn len(&self) -> usize {
        self.in_order.len() + self.staged.as_ref().map_or(0, |s| s.rows.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every column any row of the series had, with its type (in-order part's columns first).
    pub fn columns(&self) -> Vec<(ColId, FieldType)> {
        let mut out = Vec::new();
        self.columns_into(&mut out);
        out
    }

    /// The rows with `ts_min <= ts <= ts_max`, sorted and deduplicated, for the requested columns.
    pub fn read(&self, series: SeriesId, ts_min: i64, ts_max: i64, cols: &[(ColId, FieldType)]) -> SeriesRows {
        self.read_tail(series, ts_min, ts_max, cols, usize::MAX)
    }

    /// [`SeriesBuf::read`] into `out`, reusing its vectors when the series has no late rows. The flush
    /// reads every series of a memtable in turn: a new [`SeriesRows`] each was ~22 allocations and as
    /// many frees for a one-row series of TSBS's ten fields (6 % of the server's CPU loading 10 M
    /// series).
    pub fn read_into(&self, out: &mut SeriesRows, series: SeriesId, ts_min: i64, ts_max: i64, cols: &[(ColId, FieldType)]) {
        match self.staged {
            None => self.in_order.slice_sorted_into(out, series, ts_min, ts_max, cols, usize::MAX),
            Some(_) => *out = self.read(series, ts_min, ts_max, cols),
        }
    }

    /// [`SeriesBuf::columns`] into `out` (cleared first).
    pub fn columns_into(&self, out: &mut Vec<(ColId, FieldType)>) {
        out.clear();
        out.extend_from_slice(self.in_order.schema());
        for (c, ty) in self.staged.iter().flat_map(|s| s.rows.schema()) {
            if !out.iter().any(|(o, _)| o == c) {
                out.push((*c, *ty));
            }
        }
    }

    /// Like [`SeriesBuf::read`], but only the last `n` of those rows.
    ///
    /// Each part is deduplicated, so the last `n` distinct timestamps of the union are among the last `n`
    /// of each part: merging the two tails gives the tail of the merge.
    pub fn read_tail(&self, series: SeriesId, ts_min: i64, ts_max: i64, cols: &[(ColId, FieldType)], n: usize) -> SeriesRows {
        let in_order = self.in_order.slice_sorted(series, ts_min, ts_max, cols, n);
        let Some(st) = &self.staged else { return in_order };
        let copy;
        let staged = if st.sorted {
            &st.rows
        } else {
            copy = st.rows.sorted_dedup();
            &copy
        };
        let staged = staged.slice_sorted(series, ts_min, ts_max, cols, n);
        let merged = merge_staged(in_order, staged, cols);
        let len = merged.len();
        if len > n { merged.slice(len - n..len) } else { merged }
    }

    /// Sorts the staging area in place (once: the result is cached until the next late row); returns
    /// how many duplicate rows were merged away.
    fn sort_staging(&mut self) -> usize {
        let Some(st) = self.staged.as_mut().filter(|s| !s.sorted) else { return 0 };
        let before = st.rows.len();
        st.rows = st.rows.sorted_dedup();
        st.sorted = true;
        before - st.rows.len()
    }

    /// Removes the rows with `ts_min <= ts <= ts_max` from both parts (a delete). Returns (rows removed,
    /// duplicate rows merged away by a fold): if the delete removed the in-order tail so that a staged
    /// timestamp is now above the in-order part's last, the staging area is merged into the in-order
    /// part, because a later row could otherwise join the in-order part at a timestamp the staging area
    /// holds, and the merge would take the older staged value as the newer (see the module doc).
    fn remove_time_range(&mut self, ts_min: i64, ts_max: i64) -> (usize, usize) {
        let mut removed = self.in_order.remove_time_range(ts_min, ts_max);
        let Some(st) = self.staged.as_mut() else { return (removed, 0) };
        removed += st.rows.remove_time_range(ts_min, ts_max);
        if st.rows.is_empty() {
            self.staged = None;
            return (removed, 0);
        }
        let staged_max = st.rows.ts.iter().copied().max();
        if self.in_order.ts.last().copied() >= staged_max {
            return (removed, 0);
        }
        (removed, self.fold_staging())
    }

    /// Merges the staging area into the in-order part; returns how many duplicate rows were merged away.
    fn fold_staging(&mut self) -> usize {
        let before = self.len();
        let cols = self.columns();
        let merged = self.read(0, i64::MIN, i64::MAX, &cols);
        let n = merged.len();
        self.in_order = RowBuf::from_rows(&merged, &cols);
        self.staged = None;
        before - n
    }

    pub fn ts_range(&self) -> Option<(i64, i64)> {
        let in_order = self.in_order.ts.first().zip(self.in_order.ts.last());
        let staged = self.staged.as_ref().and_then(|s| s.rows.ts.iter().min().zip(s.rows.ts.iter().max()));
        match (in_order, staged) {
            (Some((a, b)), Some((c, d))) => Some((*a.min(c), *b.max(d))),
            (Some((a, b)), None) | (None, Some((a, b))) => Some((*a, *b)),
            (None, None) => None,
        }
    }
}

/// Merges the in-order rows of a series with its staged rows (both sorted and deduplicated, for the
/// same requested `cols`) in one linear pass: runs where only one side has rows are copied whole, and
/// on a shared timestamp each column takes the staged (later) value unless it is null.
pub fn merge_staged(in_order: SeriesRows, staged: SeriesRows, cols: &[(ColId, FieldType)]) -> SeriesRows {
    if staged.is_empty() {
        return in_order;
    }
    if in_order.is_empty() {
        return staged;
    }
    let cap = in_order.len() + staged.len();
    let mut ts = Vec::with_capacity(cap);
    let mut out: Vec<Option<Column>> = cols
        .iter()
        .enumerate()
        .map(|(k, (_, ty))| (in_order.cols[k].is_some() || staged.cols[k].is_some()).then(|| Column::with_capacity(*ty, cap)))
        .collect();
    let copy_run = |out: &mut [Option<Column>], ts: &mut Vec<i64>, src: &SeriesRows, range: std::ops::Range<usize>| {
        ts.extend_from_slice(&src.ts[range.clone()]);
        for (dst, c) in out.iter_mut().zip(&src.cols) {
            let Some(dst) = dst else { continue };
            match c {
                Some(c) => dst.extend_range(c, range.clone()),
                None => dst.push_nulls(range.len()),
            }
        }
    };
    let (a, b) = (&in_order, &staged);
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a.ts[i] < b.ts[j] {
            let end = i + a.ts[i..].partition_point(|t| *t < b.ts[j]);
            copy_run(&mut out, &mut ts, a, i..end);
            i = end;
        } else if b.ts[j] < a.ts[i] {
            let end = j + b.ts[j..].partition_point(|t| *t < a.ts[i]);
            copy_run(&mut out, &mut ts, b, j..end);
            j = end;
        } else {
            // The same timestamp in both: the staged row is the later write.
            ts.push(a.ts[i]);
            for (k, dst) in out.iter_mut().enumerate() {
                let Some(dst) = dst else { continue };
                let newer = b.cols[k].as_ref().filter(|c| c.validity[j]).map(|c| (c, j));
                let older = a.cols[k].as_ref().filter(|c| c.validity[i]).map(|c| (c, i));
                match newer.or(older) {
                    Some((c, r)) => dst.push_from(c, r),
                    None => dst.push_null(),
                }
            }
            i += 1;
            j += 1;
        }
    }
    copy_run(&mut out, &mut ts, a, i..a.len());
    copy_run(&mut out, &mut ts, b, j..b.len());
    let merged = SeriesRows { series: in_order.series, ts, cols: out };
    debug_assert_eq!(merged.check(), Ok(()));
    merged
}

/// What a series costs in a memtable besides its buffers' heap bytes (counted as they grow, see
/// [`RowBuf::push`]): its slots in [`SeriesMap`]'s vector and map, twice over for their growth slack.
/// The accounting follows what is allocated so that the flush trigger and backpressure see
/// high-cardinality loads: with 1 M new series of one row each, rows alone (≈ 100 bytes) were once
/// counted while ≈ 2 KB per series were allocated, and a 256 MiB memtable held 3 GiB (measured:
/// `bench/cardinality`).
pub const SERIES_OVERHEAD_BYTES: usize = 2 * (std::mem::size_of::<(SeriesId, SeriesBuf)>() + std::mem::size_of::<(SeriesId, u32)>());

/// A memtable's series: their buffers in a vector, in the order each was first written, and each series
/// id's position in it ([`Positions`]: a vector by id while the ids are dense, else a map).
///
/// Why not the buffers in the map itself (as before): the flush visits every series in id order, and a
/// table's new series get ascending ids as they are first written, so in the vector that visit is a walk
/// forward through memory, where it was a jump per series to a random 88-byte slot of a map of a million
/// (a cache miss each, then freeing them in the map's order: a tenth of the server's CPU loading TSBS's
/// 10 M hosts went to the flush reading and freeing these buffers). The map is 8 bytes per series, so
/// its probes on the write path touch a tenth of the memory they did.
///
/// A write first tries the buffer after the one it wrote last (`next`): devices that report in turn
/// write in the same order each round, the order of the vector, so the map is seldom probed. Its
/// probes, two cache misses each at random places, were 8.5 % of the server's CPU loading 100,000
/// hosts (TSBS scenario 3: a request's 10,000 rows are 10,000 hosts).
#[derive(Debug, Default)]
pub struct SeriesMap {
    pos: Positions,
    bufs: Vec<(SeriesId, SeriesBuf)>,
    /// The position after the buffer last written to, a guess checked against the series id there.
    next: usize,
}

/// Looks series up in a [`SeriesMap`], trying the buffer after the one found last before probing the
/// map, as writes do: a table's new series get ascending ids in the order they are first written, the
/// vector's order, so a walk over ascending ids finds them one after another in memory. Probing the
/// map for each of a million series was two cache misses each, 41 % of a count over a memtable
/// just loaded with TSBS's 1 M hosts (0.37 s).
pub struct SeriesCursor<'a> {
    map: &'a SeriesMap,
    next: usize,
}

impl<'a> SeriesCursor<'a> {
    pub fn get(&mut self, series: SeriesId) -> Option<&'a SeriesBuf> {
        let i = if self.map.holds_at(self.next, series) { self.next } else { self.map.pos.get(series)? as usize };
        self.next = i + 1;
        Some(&self.map.bufs[i].1)
    }

    /// Where the cursor is, for [`SeriesMap::cursor_at`].
    pub fn position(&self) -> usize {
        self.next
    }
}

impl SeriesMap {
    fn with_capacity(n: usize) -> SeriesMap {
        SeriesMap { pos: Positions::with_capacity(n), bufs: Vec::with_capacity(n), next: 0 }
    }

    pub fn len(&self) -> usize {
        self.bufs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bufs.is_empty()
    }

    pub fn get(&self, series: &SeriesId) -> Option<&SeriesBuf> {
        self.pos.get(*series).map(|i| &self.bufs[i as usize].1)
    }

    /// Whether `series`' buffer is at position `i` of the vector (a guess, checked). Each series is in
    /// the vector once, so finding it at the guess is finding it.
    fn holds_at(&self, i: usize, series: SeriesId) -> bool {
        self.bufs.get(i).is_some_and(|(s, _)| *s == series)
    }

    /// A lookup for many series in ascending id order, as scans and summaries walk them: see
    /// [`SeriesCursor`].
    pub fn cursor(&self) -> SeriesCursor<'_> {
        self.cursor_at(0)
    }

    /// A cursor going on from [`SeriesCursor::position`] of one over this map.
    pub fn cursor_at(&self, next: usize) -> SeriesCursor<'_> {
        SeriesCursor { map: self, next }
    }

    fn get_mut(&mut self, series: &SeriesId) -> Option<&mut SeriesBuf> {
        self.pos.get(*series).map(|i| &mut self.bufs[i as usize].1)
    }

    pub fn contains_key(&self, series: &SeriesId) -> bool {
        self.pos.get(*series).is_some()
    }

    /// Every series with its buffer, in the order each was first written (not sorted by id).
    pub fn iter(&self) -> impl Iterator<Item = (&SeriesId, &SeriesBuf)> {
        self.bufs.iter().map(|(s, b)| (s, b))
    }

    pub fn keys(&self) -> impl Iterator<Item = &SeriesId> {
        self.bufs.iter().map(|(s, _)| s)
    }

    pub fn values(&self) -> impl Iterator<Item = &SeriesBuf> {
        self.bufs.iter().map(|(_, b)| b)
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = (&SeriesId, &mut SeriesBuf)> {
        self.bufs.iter_mut().map(|(s, b)| (&*s, b))
    }

    /// `series`' buffer, made with `make` first if the series has none; `make` runs only then.
    fn get_or_insert_with(&mut self, series: SeriesId, make: impl FnOnce() -> SeriesBuf) -> &mut SeriesBuf {
        let i = if self.holds_at(self.next, series) {
            self.next
        } else {
            match self.pos.get(series) {
                Some(i) => i as usize,
                None => {
                    let i = self.bufs.len();
                    self.pos.insert(series, u32::try_from(i).ok().filter(|i| *i < u32::MAX).expect("fewer than 2^32 − 1 series in one memtable"));
                    self.bufs.push((series, make()));
                    i
                }
            }
        };
        self.next = i + 1;
        &mut self.bufs[i].1
    }

    /// Series both the vector and the map have room for without growing.
    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.pos.capacity().min(self.bufs.capacity())
    }

    /// Keeps the series whose buffer `keep` accepts, in their order; the map is made again.
    fn retain(&mut self, mut keep: impl FnMut(&SeriesBuf) -> bool) {
        self.bufs.retain(|(_, b)| keep(b));
        self.pos = Positions::with_capacity(self.bufs.len());
        for (i, (s, _)) in self.bufs.iter().enumerate() {
            self.pos.insert(*s, i as u32);
        }
    }
}

/// `map[&series]`: that series' buffer; panics if it has none (as a `HashMap`'s index does).
impl std::ops::Index<&SeriesId> for SeriesMap {
    type Output = SeriesBuf;

    fn index(&self, series: &SeriesId) -> &SeriesBuf {
        self.get(series).expect("no buffer for this series")
    }
}

/// One table's rows in one memtable generation.
#[derive(Debug, Default)]
pub struct MemTable {
    pub series: SeriesMap,
    /// Series the map was made with room for (see [`MemGen::sizes`]), already counted in
    /// [`MemGen::bytes`] at [`SERIES_OVERHEAD_BYTES`] each.
    reserved: usize,
    /// The columns of the last series whose first row brought new ones: the next series with the same
    /// first row's columns shares them ([`RowBuf::push`]).
    schema: Option<Schema>,
    /// The lowest and highest series id any row was written to (a delete leaves them): see
    /// [`MemTable::may_hold`].
    series_span: Option<(SeriesId, SeriesId)>,
}

impl MemTable {
    /// False when the table certainly holds no rows of `series`, from the span of series ids written
    /// to it, without probing the map. Why: a scan of every series asks every frozen memtable for each
    /// one, and at 10 M hosts each memtable holds a million new series of one narrow id range; the
    /// probes into maps of a million series, a cache miss each, took a sixth of a count's time (the
    /// count after a load of scenario 5: 2.73, 2.81 → 2.20, 2.45 s).
    pub fn may_hold(&self, series: SeriesId) -> bool {
        self.series_span.is_some_and(|(lo, hi)| lo <= series && series <= hi)
    }
}

/// A table's series map is made with room for a this-th more series than the generation before had
/// (see [`MemGen::sizes`]): memtables that fill by bytes hold about as many series each, some a request
/// more, and one series past the room doubled a map of a million, copying it into memory faulted in
/// fresh (3 % of the server's CPU loading TSBS's 10 M hosts). Only the reserved series are counted up
/// front: [`SERIES_OVERHEAD_BYTES`] already counts every series' slots twice, for such slack.
const SERIES_ROOM_SLACK_DIVISOR: usize = 4;

/// All rows written between two flushes. Frozen generations are immutable and shared with readers.
#[derive(Debug, Default)]
pub struct MemGen {
    pub tables: HashMap<(DbId, TableId), MemTable>,
    pub bytes: usize,
    pub rows: u64,
    /// Oldest write in this generation, for the age-based flush.
    pub created: Option<std::time::Instant>,
    /// Newest write in this generation, for the idle flush.
    pub last_write: Option<std::time::Instant>,
    /// How many series each table had in the generation before this one (set when that one froze): a
    /// table's series map is made that large at its first row. Growing it by doubling was 6 % of the
    /// server's CPU while loading TSBS's 10 M hosts (a million series per memtable, each slot moved at
    /// every doubling); a generation of as many series as the last one never grows it.
    pub sizes: HashMap<(DbId, TableId), usize>,
}

impl MemGen {
    pub fn apply(&mut self, b: &WriteBatch<'_>) {
        if b.rows.is_empty() {
            return;
        }
        let now = std::time::Instant::now();
        self.created.get_or_insert(now);
        self.last_write = Some(now);
        let mut i = 0;
        while i < b.rows.len() {
            // Rows of one table come together: its memtable is looked up once per run of them.
            let key = (b.db, b.rows[i].table);
            let table = match self.tables.entry(key) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    let reserved = self.sizes.get(&key).copied().unwrap_or(0);
                    self.bytes += reserved * SERIES_OVERHEAD_BYTES;
                    let room = reserved + reserved / SERIES_ROOM_SLACK_DIVISOR;
                    e.insert(MemTable { series: SeriesMap::with_capacity(room), reserved, schema: None, series_span: None })
                }
            };
            while let Some(r) = b.rows.get(i).filter(|r| r.table == key.1) {
                let counted = table.series.len() < table.reserved;
                let span = &mut table.series_span;
                let s = table.series.get_or_insert_with(r.series, || {
                    if !counted {
                        self.bytes += SERIES_OVERHEAD_BYTES;
                    }
                    // Only here does a series enter the map (one a delete removed comes back here too):
                    // the span, which must cover every series in it, widens only then.
                    *span = Some(span.map_or((r.series, r.series), |(lo, hi)| (lo.min(r.series), hi.max(r.series))));
                    SeriesBuf::default()
                });
                self.bytes += s.push(r.ts, b.row_values(i), &mut table.schema);
                i += 1;
            }
        }
        self.rows += b.rows.len() as u64;
    }

    /// Whether the generation should be flushed under a budget of `bytes_max`: at the budget, or at a
    /// [`limits::MEMTABLE_FEW_SERIES_DIVISOR`]th of it when its series average
    /// [`limits::MEMTABLE_FEW_SERIES_ROWS`] rows.
    pub fn full(&self, bytes_max: usize) -> bool {
        if self.bytes >= bytes_max {
            return true;
        }
        if self.bytes < bytes_max / limits::MEMTABLE_FEW_SERIES_DIVISOR {
            return false;
        }
        let series: usize = self.tables.values().map(|t| t.series.len()).sum();
        self.rows >= limits::MEMTABLE_FEW_SERIES_ROWS * series as u64
    }

    /// How many series each table holds (for the next generation's [`MemGen::sizes`]).
    pub fn series_counts(&self) -> HashMap<(DbId, TableId), usize> {
        self.tables.iter().map(|(k, t)| (*k, t.series.len())).collect()
    }

    /// Removes the rows of `table` with `ts_min <= ts <= ts_max`, of every series or of `series` (a
    /// delete), staged rows included; returns how many. Bytes stay counted until the flush (an
    /// over-estimate, never an under-).
    pub fn delete(&mut self, db: DbId, table: TableId, series: Option<&[SeriesId]>, ts_min: i64, ts_max: i64) -> u64 {
        let Some(t) = self.tables.get_mut(&(db, table)) else { return 0 };
        let (mut removed, mut merged) = (0u64, 0u64);
        for (sid, buf) in t.series.iter_mut() {
            if series.is_none_or(|s| s.binary_search(sid).is_ok()) {
                let before = buf.heap_bytes();
                let (r, m) = buf.remove_time_range(ts_min, ts_max);
                removed += r as u64;
                merged += m as u64;
                // A delete rebuilds the buffers, usually smaller; a fold of the staging area may not be.
                self.bytes += buf.heap_bytes().saturating_sub(before);
            }
        }
        t.series.retain(|b| !b.is_empty());
        self.rows -= removed + merged;
        removed
    }

    pub fn table(&self, db: DbId, table: TableId) -> Option<&MemTable> {
        self.tables.get(&(db, table))
    }

    /// True if any of `series` of the table has staged (late or duplicate) rows not sorted yet.
    pub fn has_unsorted_staging(&self, db: DbId, table: TableId, series: &[SeriesId]) -> bool {
        self.table(db, table).is_some_and(|t| {
            let mut bufs = t.series.cursor();
            series.iter().any(|s| bufs.get(*s).is_some_and(|b| b.staged().is_some_and(|(_, sorted)| !sorted)))
        })
    }

    /// Sorts (and merges duplicates of) the staging areas of `series` in place, so that reads merge
    /// them linearly instead of sorting a copy every time (a query that polls a series with late rows
    /// would otherwise pay a sort per read). The in-order parts are never sorted.
    pub fn sort_staging(&mut self, db: DbId, table: TableId, series: &[SeriesId]) {
        let Some(t) = self.tables.get_mut(&(db, table)) else { return };
        for s in series {
            if let Some(b) = t.series.get_mut(s) {
                let before = b.heap_bytes();
                self.rows -= b.sort_staging() as u64;
                self.bytes += b.heap_bytes().saturating_sub(before);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// What the rows' buffers hold on the heap (map slots excluded): what [`MemGen::bytes`] must not
    /// fall below, short of deletes and sorting, which only shrink buffers.
    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.tables.values().flat_map(|t| t.series.values()).map(SeriesBuf::heap_bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ColumnValues;

    /// A generation made with the last one's series counts counts their slots once, at its first row of
    /// the table, and each series past them as it comes; rows of several tables interleaved land in
    /// their own tables.
    #[test]
    fn series_slots_reserved_from_the_last_generation_are_counted_once() {
        let row = |b: &mut WriteBatch, table, series, ts| b.push_row(table, series, ts, [(0, Value::Integer(ts))]);
        let mut first = MemGen::default();
        let mut b = WriteBatch::new(0);
        (0..3).for_each(|s| row(&mut b, 1, s, 10));
        row(&mut b, 2, 0, 10);
        row(&mut b, 1, 3, 10);
        first.apply(&b);
        assert_eq!(first.series_counts(), HashMap::from_iter([((0, 1), 4), ((0, 2), 1)]));

        let mut next = MemGen { sizes: first.series_counts(), ..Default::default() };
        let mut b = WriteBatch::new(0);
        row(&mut b, 1, 7, 20);
        next.apply(&b);
        // Four slots counted at the table's first row; its first series' slot is among them.
        let one_row = next.bytes - 4 * SERIES_OVERHEAD_BYTES;
        assert!(one_row > 0 && next.table(0, 1).unwrap().series.capacity() >= 5, "room for a quarter more");
        let mut b = WriteBatch::new(0);
        (8..11).for_each(|s| row(&mut b, 1, s, 20));
        row(&mut b, 2, 5, 20);
        row(&mut b, 1, 11, 20);
        next.apply(&b);
        // Five series of table 1 (one past the four reserved) and one of table 2 (reserved): the same
        // slots as a generation made without sizes would count for them, plus nothing.
        let mut plain = MemGen::default();
        let mut b = WriteBatch::new(0);
        (7..12).for_each(|s| row(&mut b, 1, s, 20));
        row(&mut b, 2, 5, 20);
        plain.apply(&b);
        assert_eq!(next.bytes, plain.bytes);
        assert_eq!(next.rows, 6);
        assert_eq!(next.series_counts(), HashMap::from_iter([((0, 1), 5), ((0, 2), 1)]));
    }

    /// A cursor finds what the map finds, whatever the order of the lookups: ascending over series
    /// written out of order, descending, repeated, and ids the memtable does not hold.
    #[test]
    fn a_cursor_finds_each_series_buffer_in_any_order() {
        let mut m = MemGen::default();
        let mut b = WriteBatch::new(0);
        for s in [3u32, 4, 5, 9, 1, 2, 6] {
            b.push_row(0, s, i64::from(s), [(0, Value::Integer(i64::from(s) * 10))]);
        }
        m.apply(&b);
        let series = &m.table(0, 0).unwrap().series;
        let value = |buf: Option<&SeriesBuf>| buf.map(|b| b.read(0, i64::MIN, i64::MAX, &[(0, FieldType::Integer)]).ts);
        for order in [(0..12).collect::<Vec<u32>>(), (0..12).rev().collect(), vec![5, 5, 3, 9, 9, 1, 7, 2, 6, 6]] {
            let mut c = series.cursor();
            for s in order {
                assert_eq!(value(c.get(s)), value(series.get(&s)), "series {s}");
                assert_eq!(c.get(s).is_some(), [1, 2, 3, 4, 5, 6, 9].contains(&s));
            }
        }
    }

    /// A table may hold exactly the series ids between the lowest and the highest written to it, in any
    /// order and over several writes; tables keep their own spans.
    #[test]
    fn a_table_may_hold_only_series_within_the_ids_written_to_it() {
        let row = |b: &mut WriteBatch, table, series| b.push_row(table, series, 1, [(0, Value::Integer(1))]);
        let mut m = MemGen::default();
        let mut b = WriteBatch::new(0);
        [9, 5, 7].into_iter().for_each(|s| row(&mut b, 1, s));
        row(&mut b, 2, 100);
        m.apply(&b);
        let t = m.table(0, 1).unwrap();
        assert_eq!((4..=10).map(|s| t.may_hold(s)).collect::<Vec<_>>(), [false, true, true, true, true, true, false]);
        let mut b = WriteBatch::new(0);
        row(&mut b, 1, 12);
        row(&mut b, 1, 3);
        m.apply(&b);
        let t = m.table(0, 1).unwrap();
        assert!((3..=12).all(|s| t.may_hold(s)) && !t.may_hold(2) && !t.may_hold(13));
        let t2 = m.table(0, 2).unwrap();
        assert!(t2.may_hold(100) && !t2.may_hold(99) && !t2.may_hold(101));
        assert!(!MemTable::default().may_hold(0), "an empty table holds nothing");
    }

    #[test]
    fn out_of_order_and_duplicate_rows_read_sorted_with_last_write_wins() {
        let mut g = MemGen::default();
        let mut b = WriteBatch::new(0);
        b.push_row(0, 1, 30, [(0, Value::Integer(3))]);
        b.push_row(0, 1, 10, [(0, Value::Integer(1)), (1, Value::Float(0.5))]);
        b.push_row(0, 1, 30, [(1, Value::Float(3.5))]);
        b.push_row(0, 1, 20, [(0, Value::Integer(2))]);
        b.push_row(0, 1, 10, [(0, Value::Integer(11))]);
        g.apply(&b);
        let s = &g.table(0, 0).unwrap().series[&1];
        assert_eq!(s.in_order().ts[..], [30]);
        assert!(!s.staged().unwrap().1);
        let cols = [(0, FieldType::Integer), (1, FieldType::Float), (2, FieldType::Boolean)];
        let r = s.read(1, i64::MIN, i64::MAX, &cols);
        r.check().unwrap();
        assert_eq!(r.ts, vec![10, 20, 30]);
        assert_eq!(r.cols[0].as_ref().unwrap().values, ColumnValues::Integer(vec![11, 2, 3]));
        let f = r.cols[1].as_ref().unwrap();
        assert_eq!(f.validity, vec![true, false, true]);
        assert_eq!(f.get(2), Some(Value::Float(3.5)));
        assert_eq!(f.get(0), Some(Value::Float(0.5)));
        assert!(r.cols[2].is_none());
        let r = s.read(1, 15, 30, &cols);
        assert_eq!(r.ts, vec![20, 30]);
        // Sorting in place gives the same rows, keeps the row count true, and reads then slice.
        let before = s.read(1, i64::MIN, i64::MAX, &cols);
        assert!(g.has_unsorted_staging(0, 0, &[1]));
        g.sort_staging(0, 0, &[1]);
        assert!(!g.has_unsorted_staging(0, 0, &[1]));
        // 5 writes: 30 in order, then 10, 30, 20, 10 staged; sorting merges the two 10s. The staged 30
        // stays apart from the in-order 30 until a read merges them.
        assert_eq!(g.rows, 4);
        let s = &g.table(0, 0).unwrap().series[&1];
        assert!(s.staged().unwrap().1);
        assert_eq!(s.read(1, i64::MIN, i64::MAX, &cols), before);
    }

    /// A series of several chunks of rows ([`Slots`]): rows of every shape (columns missing, a string
    /// column, columns first set at rows past the first chunk, which lay the rows out again at a new
    /// width), late and duplicate rows, and deletes, read back as a model of last-write-wins per
    /// column says, before and after its staging area is sorted.
    #[test]
    fn rows_over_many_chunks_read_back_as_a_model_says() {
        use std::collections::BTreeMap;
        for seed in 1..=4u64 {
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let mut rand = move |n: u64| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % n
            };
            let types = [FieldType::Float, FieldType::Integer, FieldType::String, FieldType::Boolean, FieldType::Float];
            let value = |col: usize, v: u64| match types[col] {
                FieldType::Float => Value::Float(v as f64 / 4.0),
                FieldType::Integer => Value::Integer(v as i64 - 50),
                FieldType::String => Value::String(format!("s{v}")),
                _ => Value::Boolean(v % 2 == 1),
            };
            let mut g = MemGen::default();
            let mut model: BTreeMap<i64, BTreeMap<usize, Value>> = BTreeMap::new();
            let mut next_ts = 0i64;
            for round in 0..6 {
                let mut b = WriteBatch::new(0);
                for _ in 0..500 {
                    // Columns 3 and 4 first come in later rounds, past the first chunk of rows.
                    let width = if round < 2 { 3 } else if round < 4 { 4 } else { 5 };
                    let ts = if rand(10) == 0 { rand(next_ts as u64 + 1) as i64 } else { next_ts += 1 + rand(3) as i64; next_ts };
                    let cols: Vec<usize> = (0..width).filter(|_| rand(5) != 0).collect();
                    let vals: Vec<(ColId, Value)> = cols.iter().map(|c| (*c as ColId, value(*c, rand(100)))).collect();
                    for (c, v) in &vals {
                        model.entry(ts).or_default().insert(*c as usize, v.clone());
                    }
                    if vals.is_empty() {
                        continue;
                    }
                    b.push_row(0, 1, ts, vals);
                }
                g.apply(&b);
                if round == 3 {
                    let (lo, hi) = (next_ts / 3, next_ts / 2);
                    g.delete(0, 0, None, lo, hi);
                    model.retain(|t, _| *t < lo || *t > hi);
                }
            }
            let cols: Vec<(ColId, FieldType)> = types.iter().enumerate().map(|(c, t)| (c as ColId, *t)).collect();
            let check = |g: &MemGen| {
                let buf = &g.table(0, 0).unwrap().series[&1];
                assert!(buf.in_order().len() > 4 * slots::rows_per_chunk(5), "several chunks");
                let r = buf.read(1, i64::MIN, i64::MAX, &cols);
                r.check().unwrap();
                assert_eq!(r.ts, model.keys().copied().collect::<Vec<_>>(), "seed {seed}");
                for (c, col) in r.cols.iter().enumerate() {
                    let got: Vec<Option<Value>> = (0..r.ts.len()).map(|i| col.as_ref().and_then(|col| col.get(i))).collect();
                    let want: Vec<Option<Value>> = model.values().map(|row| row.get(&c).cloned()).collect();
                    assert_eq!(got, want, "seed {seed}, column {c}");
                }
                let (lo, hi) = (next_ts / 4, next_ts / 4 + 300);
                let r = buf.read(1, lo, hi, &cols);
                assert_eq!(r.ts, model.range(lo..=hi).map(|(t, _)| *t).collect::<Vec<_>>(), "seed {seed}");
                let tail = buf.read_tail(1, i64::MIN, hi, &cols, 7);
                let mut want: Vec<i64> = model.range(..=hi).rev().take(7).map(|(t, _)| *t).collect();
                want.reverse();
                assert_eq!(tail.ts, want, "seed {seed}");
            };
            check(&g);
            g.sort_staging(0, 0, &[1]);
            check(&g);
        }
    }

    /// In-order rows of every shape: rows setting every column in the buffer's order (appended
    /// straight), in another order, missing one, adding one, with a value of another type (a null, as
    /// in a typed column) and with a column twice (the later value wins), read back as written.
    #[test]
    fn in_order_rows_of_any_shape_read_back_as_written() {
        let mut g = MemGen::default();
        let mut b = WriteBatch::new(0);
        let (i, f) = (Value::Integer, Value::Float);
        b.push_row(0, 1, 10, [(0, i(1)), (1, f(0.5))]);
        b.push_row(0, 1, 20, [(0, i(2)), (1, f(1.5))]);
        b.push_row(0, 1, 30, [(1, f(2.5)), (0, i(3))]);
        b.push_row(0, 1, 40, [(0, i(4))]);
        b.push_row(0, 1, 50, [(0, i(5)), (1, f(4.5)), (2, Value::Boolean(true))]);
        b.push_row(0, 1, 60, [(0, i(6)), (1, f(5.5)), (2, Value::Boolean(false))]);
        b.push_row(0, 1, 70, [(0, f(7.0)), (1, f(6.5)), (2, Value::Boolean(true))]);
        b.push_row(0, 1, 80, [(0, i(8)), (1, f(7.5)), (1, f(8.5))]);
        g.apply(&b);
        let s = &g.table(0, 0).unwrap().series[&1];
        assert!(s.staged().is_none());
        let cols = [(0, FieldType::Integer), (1, FieldType::Float), (2, FieldType::Boolean)];
        let r = s.read(1, i64::MIN, i64::MAX, &cols);
        r.check().unwrap();
        assert_eq!(r.ts, vec![10, 20, 30, 40, 50, 60, 70, 80]);
        let get = |c: usize| (0..8).map(|k| r.cols[c].as_ref().unwrap().get(k)).collect::<Vec<_>>();
        assert_eq!(get(0), [Some(i(1)), Some(i(2)), Some(i(3)), Some(i(4)), Some(i(5)), Some(i(6)), None, Some(i(8))]);
        assert_eq!(get(1), [Some(f(0.5)), Some(f(1.5)), Some(f(2.5)), None, Some(f(4.5)), Some(f(5.5)), Some(f(6.5)), Some(f(8.5))]);
        let t = |x| Some(Value::Boolean(x));
        assert_eq!(get(2), [None, None, None, None, t(true), t(false), t(true), None]);
    }

    #[test]
    fn deletes_remove_rows_of_the_chosen_series_and_time_range() {
        let mut g = MemGen::default();
        let mut b = WriteBatch::new(0);
        for t in [5, 1, 3, 2, 4] {
            b.push_row(0, 1, t, [(0, Value::Integer(t))]);
            b.push_row(0, 2, t, [(0, Value::Integer(-t))]);
        }
        g.apply(&b);
        assert_eq!(g.delete(0, 0, Some(&[1]), 2, 4), 3);
        assert_eq!(g.rows, 7);
        let r = g.table(0, 0).unwrap().series[&1].read(1, i64::MIN, i64::MAX, &[(0, FieldType::Integer)]);
        assert_eq!(r.ts, vec![1, 5]);
        assert_eq!(r.cols[0].as_ref().unwrap().values, ColumnValues::Integer(vec![1, 5]));
        assert_eq!(g.delete(0, 0, None, i64::MIN, i64::MAX), 7);
        assert!(g.is_empty());
        assert!(g.table(0, 0).unwrap().series.is_empty());
    }

    /// Series written in turn, as devices report (where a write finds the next buffer by its guess),
    /// in another order for a round, and one of them emptied by a delete and made again at the end: each
    /// buffer holds its own series' rows.
    #[test]
    fn series_written_in_turn_or_out_of_turn_each_hold_their_own_rows() {
        let mut g = MemGen::default();
        for round in 0..5i64 {
            let order: Vec<SeriesId> = if round == 3 { vec![3, 1, 4, 0, 2] } else { (0..5).collect() };
            let mut b = WriteBatch::new(0);
            for s in order {
                b.push_row(0, s, round, [(0, Value::Integer(i64::from(s) * 100 + round))]);
            }
            g.apply(&b);
            if round == 1 {
                assert_eq!(g.delete(0, 0, Some(&[2]), i64::MIN, i64::MAX), 2);
            }
        }
        let t = g.table(0, 0).unwrap();
        assert_eq!(t.series.keys().copied().collect::<Vec<_>>(), [0, 1, 3, 4, 2]);
        for s in 0..5 {
            let r = t.series[&s].read(s, i64::MIN, i64::MAX, &[(0, FieldType::Integer)]);
            let rounds: Vec<i64> = (0..5).filter(|round| s != 2 || *round >= 2).collect();
            let values = rounds.iter().map(|round| i64::from(s) * 100 + round).collect();
            assert_eq!((r.ts, r.cols[0].as_ref().unwrap().values.clone()), (rounds, ColumnValues::Integer(values)), "series {s}");
        }
    }

    /// A delete that empties some series of a table (here the first and a middle one written) leaves
    /// every other series found under its own id, in the order first written, and new rows of an
    /// emptied series make it anew at the end.
    #[test]
    fn series_emptied_by_a_delete_leave_the_others_found_by_id() {
        let mut g = MemGen::default();
        let mut b = WriteBatch::new(0);
        for s in [9, 4, 7, 2, 5] {
            b.push_row(0, s, 10, [(0, Value::Integer(i64::from(s)))]);
            b.push_row(0, s, 20 + i64::from(s), [(0, Value::Integer(-i64::from(s)))]);
        }
        g.apply(&b);
        assert_eq!(g.delete(0, 0, Some(&[7, 9]), i64::MIN, i64::MAX), 4);
        let read = |g: &MemGen, s: SeriesId| {
            let r = g.table(0, 0).unwrap().series.get(&s).map(|b| b.read(s, i64::MIN, i64::MAX, &[(0, FieldType::Integer)]));
            r.map(|r| (r.ts, r.cols[0].as_ref().unwrap().values.clone()))
        };
        let t = g.table(0, 0).unwrap();
        assert_eq!(t.series.keys().copied().collect::<Vec<_>>(), [4, 2, 5]);
        assert!(!t.series.contains_key(&9) && !t.series.contains_key(&7) && t.series.len() == 3);
        for s in [4, 2, 5] {
            let v = i64::from(s);
            assert_eq!(read(&g, s), Some((vec![10, 20 + v], ColumnValues::Integer(vec![v, -v]))), "series {s}");
        }
        assert_eq!(read(&g, 9), None);
        let mut b = WriteBatch::new(0);
        b.push_row(0, 9, 30, [(0, Value::Integer(90))]);
        b.push_row(0, 4, 40, [(0, Value::Integer(40))]);
        g.apply(&b);
        let t = g.table(0, 0).unwrap();
        assert_eq!(t.series.keys().copied().collect::<Vec<_>>(), [4, 2, 5, 9]);
        assert_eq!(read(&g, 9), Some((vec![30], ColumnValues::Integer(vec![90]))));
        assert_eq!(read(&g, 4), Some((vec![10, 24, 40], ColumnValues::Integer(vec![4, -4, 40]))));
    }

    #[test]
    fn sorted_series_are_sliced_by_time() {
        let mut g = MemGen::default();
        let mut b = WriteBatch::new(0);
        for t in 0..100 {
            b.push_row(0, 0, t * 10, [(0, Value::Boolean(t % 2 == 0))]);
        }
        g.apply(&b);
        let s = &g.table(0, 0).unwrap().series[&0];
        assert!(s.staged().is_none());
        let r = s.read(0, 95, 200, &[(0, FieldType::Boolean)]);
        assert_eq!(r.ts, (10..=20).map(|t| t * 10).collect::<Vec<_>>());
    }

    /// A flush reads a series' rows for its own columns in their order; a read may ask for them in
    /// another order, for a column the series lacks, for fewer, and over rows in one chunk of slots or
    /// several: each column is its own values whichever way it was found.
    #[test]
    fn columns_read_in_any_order_over_one_chunk_or_several_are_their_own() {
        let mut g = MemGen::default();
        let mut b = WriteBatch::new(0);
        let n = 3 * slots::rows_per_chunk(3) as i64 + 5;
        for t in 0..n {
            // Columns first come in the order 2, 0, 1.
            b.push_row(0, 0, t, [(2, Value::Integer(t)), (0, Value::Float(t as f64 / 2.0)), (1, Value::Boolean(t % 3 == 0))]);
        }
        g.apply(&b);
        let s = &g.table(0, 0).unwrap().series[&0];
        assert_eq!(s.in_order().schema().iter().map(|(c, _)| *c).collect::<Vec<_>>(), [2, 0, 1]);
        let want = |t: i64, c: ColId| match c {
            0 => Some(Value::Float(t as f64 / 2.0)),
            1 => Some(Value::Boolean(t % 3 == 0)),
            2 => Some(Value::Integer(t)),
            _ => None,
        };
        let (float, boolean, int) = ((0, FieldType::Float), (1, FieldType::Boolean), (2, FieldType::Integer));
        let asks: [&[(ColId, FieldType)]; 4] = [&[int, float, boolean], &[float, boolean, int], &[boolean], &[float, (7, FieldType::Float), int]];
        for cols in asks {
            // Within the first chunk, then across all of them.
            for (lo, hi) in [(3, 9), (0, n - 1)] {
                let r = s.read(0, lo, hi, cols);
                let got = rows_of(&r);
                assert_eq!(got.len() as i64, hi - lo + 1, "{cols:?} {lo}..={hi}");
                for (t, vals) in got {
                    assert_eq!(vals, cols.iter().map(|(c, _)| want(t, *c)).collect::<Vec<_>>(), "{cols:?} at {t}");
                }
            }
        }
    }

    /// xorshift64*: deterministic, dependency-free.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
        }
    }

    type Reference = std::collections::BTreeMap<i64, std::collections::BTreeMap<ColId, Value>>;

    /// The reference's rows in `[lo, hi]`, as (ts, value per requested column).
    fn expected(model: &Reference, lo: i64, hi: i64, cols: &[(ColId, FieldType)]) -> Vec<(i64, Vec<Option<Value>>)> {
        if lo > hi {
            return Vec::new();
        }
        model.range(lo..=hi).map(|(t, row)| (*t, cols.iter().map(|(c, _)| row.get(c).cloned()).collect())).collect()
    }

    fn rows_of(r: &SeriesRows) -> Vec<(i64, Vec<Option<Value>>)> {
        r.check().unwrap();
        r.ts.iter().enumerate().map(|(i, t)| (*t, r.cols.iter().map(|c| c.as_ref().and_then(|c| c.get(i))).collect())).collect()
    }

    /// Random interleavings of in-order, late and duplicate rows with nullable columns, against a
    /// `BTreeMap` with last-write-wins per column: full reads, range reads and tails, before and after the
    /// staging area is sorted in place, and across deletes (which may fold the staging area back).
    #[test]
    fn staged_late_rows_read_like_a_last_write_wins_reference() {
        let seeds: u64 = std::env::var("SUNDIAL_MEMTABLE_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(200);
        let cols = [(0, FieldType::Integer), (1, FieldType::Float), (2, FieldType::String), (3, FieldType::Boolean)];
        let (mut staged_seen, mut ties_seen) = (0, 0);
        // Reused by `read_into` across every series and step, as the flush reuses it.
        let mut reused = SeriesRows::default();
        for seed in 1..=seeds {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let mut g = MemGen::default();
            let mut model = Reference::new();
            let mut next = 0i64;
            for step in 0..60 {
                let mut b = WriteBatch::new(0);
                for _ in 0..1 + rng.below(8) {
                    // In order most of the time; else late (anywhere before), or an exact duplicate time.
                    let ts = match rng.below(10) {
                        0..6 => {
                            next += 1 + rng.below(3) as i64;
                            next
                        }
                        6..9 => rng.below(next.max(1) as u64) as i64,
                        _ => next,
                    };
                    let mut values = Vec::new();
                    for (c, ty) in cols {
                        if rng.below(3) == 0 {
                            continue; // null: an earlier write's value must survive
                        }
                        let x = rng.below(1000);
                        values.push((c, match ty {
                            FieldType::Integer => Value::Integer(x as i64),
                            FieldType::Float => Value::Float(x as f64 / 4.0),
                            FieldType::String => Value::String(format!("s{x}")),
                            _ => Value::Boolean(x.is_multiple_of(2)),
                        }));
                    }
                    if values.is_empty() {
                        values.push((0, Value::Integer(-1)));
                    }
                    let row = model.entry(ts).or_default();
                    ties_seen += usize::from(!row.is_empty());
                    for (c, v) in &values {
                        row.insert(*c, v.clone());
                    }
                    b.push_row(0, 1, ts, values);
                }
                g.apply(&b);
                assert!(g.bytes >= g.heap_bytes(), "seed {seed}: {} bytes counted, {} allocated", g.bytes, g.heap_bytes());
                if rng.below(10) == 0 {
                    let lo = rng.below(next.max(1) as u64) as i64;
                    let hi = lo + rng.below(10) as i64;
                    g.delete(0, 0, Some(&[1]), lo, hi);
                    model.retain(|t, _| *t < lo || *t > hi);
                }
                let Some(s) = g.table(0, 0).and_then(|t| t.series.get(&1)) else {
                    assert!(model.is_empty(), "seed {seed} step {step}: rows lost");
                    continue;
                };
                staged_seen += usize::from(s.staged().is_some());
                if let Some((st, _)) = s.staged() {
                    assert!(st.ts.iter().all(|t| Some(t) <= s.in_order().ts.last()), "seed {seed}: staged above the in-order part");
                }
                let (lo, hi) = (rng.below(next.max(1) as u64) as i64, rng.below(next.max(1) as u64 + 5) as i64);
                let n = 1 + rng.below(5) as usize;
                let check = |s: &SeriesBuf, when: &str| {
                    assert_eq!(rows_of(&s.read(1, i64::MIN, i64::MAX, &cols)), expected(&model, i64::MIN, i64::MAX, &cols), "seed {seed} step {step} {when}: whole series");
                    assert_eq!(rows_of(&s.read(1, lo, hi, &cols)), expected(&model, lo, hi, &cols), "seed {seed} step {step} {when}: [{lo}, {hi}]");
                    let all = expected(&model, lo, hi, &cols);
                    let tail = all[all.len().saturating_sub(n)..].to_vec();
                    assert_eq!(rows_of(&s.read_tail(1, lo, hi, &cols, n)), tail, "seed {seed} step {step} {when}: last {n} of [{lo}, {hi}]");
                };
                check(s, "before sorting");
                // Another column order each step (types move between positions), a subset, and a
                // column the series never had.
                let view: Vec<(ColId, FieldType)> = match step % 3 {
                    0 => cols.to_vec(),
                    1 => cols.iter().rev().copied().chain([(7, FieldType::Integer)]).collect(),
                    _ => cols[1..3].to_vec(),
                };
                s.read_into(&mut reused, 1, lo, hi, &view);
                assert_eq!(reused, s.read(1, lo, hi, &view), "seed {seed} step {step}: read_into");
                g.sort_staging(0, 0, &[1]);
                let s = &g.table(0, 0).unwrap().series[&1];
                check(s, "after sorting in place");
                assert!(g.rows >= model.len() as u64, "seed {seed}: row count below the distinct rows");
            }
        }
        assert!(staged_seen > 1000 && ties_seen > 1000, "the runs must exercise staging ({staged_seen}) and ties ({ties_seen})");
    }

    #[test]
    fn a_series_of_ten_float_fields_costs_hundreds_of_bytes_not_thousands() {
        // TSBS cpu-only at high cardinality: many series, a few rows each, between two flushes. With a
        // vector per column a series cost ≈ 2.4 KB before its first value.
        let fields: Vec<(ColId, Value)> = (0..10).map(|c| (c, Value::Float(f64::from(c) + 0.5))).collect();
        for (rows, max_per_series) in [(1, 450), (3, 700), (60, 8 + 88 * 60 * 5 / 4 + 450)] {
            let mut g = MemGen::default();
            for t in 0..rows {
                let mut b = WriteBatch::new(0);
                for s in 0..1000 {
                    b.push_row(0, s, t * 10, fields.iter().cloned());
                }
                g.apply(&b);
            }
            assert!(g.bytes >= g.heap_bytes());
            let per_series = g.bytes / 1000;
            assert!(per_series <= max_per_series, "{rows} rows: {per_series} bytes per series");
            let r = g.table(0, 0).unwrap().series[&7].read(7, i64::MIN, i64::MAX, &[(3, FieldType::Float)]);
            assert_eq!(r.cols[0].as_ref().unwrap().values, ColumnValues::Float(vec![3.5; rows as usize]));
        }
    }

    #[test]
    fn a_generation_of_few_long_series_is_full_at_a_part_of_the_budget() {
        let fields = [(0, Value::Float(1.0)), (1, Value::Float(2.0))];
        let write = |g: &mut MemGen, series: u32, rows: i64| {
            let mut b = WriteBatch::new(0);
            for t in 0..rows {
                for s in 0..series {
                    b.push_row(0, s, t, fields.iter().cloned());
                }
            }
            g.apply(&b);
        };
        let per_series = limits::MEMTABLE_FEW_SERIES_ROWS as i64;
        // Two series of that many rows: full at that part of a budget, not at a smaller part.
        let mut few = MemGen::default();
        write(&mut few, 2, per_series);
        let part = few.bytes * limits::MEMTABLE_FEW_SERIES_DIVISOR;
        assert!(few.full(part));
        assert!(!few.full(part + limits::MEMTABLE_FEW_SERIES_DIVISOR));
        assert!(few.full(few.bytes), "at the budget");
        // As many rows over many more series: full only at the budget.
        let mut many = MemGen::default();
        write(&mut many, 64, 2 * per_series / 64);
        assert_eq!(many.rows, few.rows);
        assert!(!many.full(many.bytes * limits::MEMTABLE_FEW_SERIES_DIVISOR));
        assert!(!many.full(many.bytes + 1));
        assert!(many.full(many.bytes));
    }

    #[test]
    fn a_series_buffer_is_two_vectors_a_shared_schema_and_three_pointers() {
        // Timestamps, the first chunk of slots and the boxed later ones, the shared columns (a pointer
        // and a length), the boxed nulls/strings and the boxed staging area: what a series without late
        // rows, nulls or strings costs in the map beside its two allocations.
        assert_eq!(std::mem::size_of::<SeriesBuf>(), 2 * std::mem::size_of::<Vec<u8>>() + 2 * 8 + 3 * 8);
    }

    /// Series whose first rows have the same columns share one schema; a series with other columns, or
    /// one that gains a column later, gets its own, and every series reads back its own values.
    #[test]
    fn series_with_the_same_columns_share_one_schema() {
        let mut g = MemGen::default();
        let mut b = WriteBatch::new(0);
        let ab = |x: i64| [(1, Value::Integer(x)), (2, Value::Float(x as f64))];
        for s in 0..3 {
            b.push_row(0, s, 10, ab(s as i64));
        }
        b.push_row(0, 3, 10, [(2, Value::Float(3.0))]);
        b.push_row(0, 4, 10, ab(4));
        b.push_row(0, 1, 20, [(1, Value::Integer(11)), (2, Value::Float(11.0)), (5, Value::Boolean(true))]);
        g.apply(&b);
        let t = g.table(0, 0).unwrap();
        let schema = |s: SeriesId| t.series[&s].in_order().schema.clone().unwrap();
        assert!(Arc::ptr_eq(&schema(0), &schema(2)), "same first columns, one schema");
        assert!(!Arc::ptr_eq(&schema(0), &schema(3)) && !Arc::ptr_eq(&schema(0), &schema(1)));
        assert!(!Arc::ptr_eq(&schema(0), &schema(4)), "series 3 came between with other columns");
        assert_eq!(&schema(4)[..], &schema(0)[..]);
        assert_eq!(t.series[&0].in_order().schema(), &[(1, FieldType::Integer), (2, FieldType::Float)]);
        assert_eq!(t.series[&1].in_order().schema(), &[(1, FieldType::Integer), (2, FieldType::Float), (5, FieldType::Boolean)]);
        let cols = [(1, FieldType::Integer), (2, FieldType::Float), (5, FieldType::Boolean)];
        let r = t.series[&1].read(1, i64::MIN, i64::MAX, &cols);
        assert_eq!(r.cols[0].as_ref().unwrap().values, ColumnValues::Integer(vec![1, 11]));
        assert_eq!(r.cols[2].as_ref().unwrap().validity, vec![false, true]);
        let r = t.series[&2].read(2, i64::MIN, i64::MAX, &cols);
        assert_eq!((r.ts.clone(), r.cols[1].as_ref().unwrap().values.clone()), (vec![10], ColumnValues::Float(vec![2.0])));
        assert!(r.cols[2].is_none());
        assert!(g.bytes >= g.heap_bytes());
    }

    #[test]
    fn a_delete_of_the_in_order_tail_folds_the_staging_area_so_later_writes_win() {
        let mut g = MemGen::default();
        let mut b = WriteBatch::new(0);
        for (t, v) in [(1, 1), (5, 5), (10, 10), (7, 70)] {
            b.push_row(0, 1, t, [(0, Value::Integer(v))]);
        }
        g.apply(&b);
        assert_eq!(g.table(0, 0).unwrap().series[&1].staged().unwrap().0.ts[..], [7]);
        // Deleting 8..=10 leaves the in-order part ending at 5, below the staged 7: folded.
        assert_eq!(g.delete(0, 0, None, 8, 10), 1);
        let s = &g.table(0, 0).unwrap().series[&1];
        assert!(s.staged().is_none());
        assert_eq!(s.in_order().ts[..], [1, 5, 7]);
        // A new write at 7 is now in order only by a fold-free reading; it must win over the old 7.
        let mut b = WriteBatch::new(0);
        b.push_row(0, 1, 7, [(0, Value::Integer(77))]);
        g.apply(&b);
        let r = g.table(0, 0).unwrap().series[&1].read(1, i64::MIN, i64::MAX, &[(0, FieldType::Integer)]);
        assert_eq!(r.ts, vec![1, 5, 7]);
        assert_eq!(r.cols[0].as_ref().unwrap().values, ColumnValues::Integer(vec![1, 5, 77]));
    }
}
