//! The rows of one series of a result: a vector of cells per row, rows of equal width in one vector,
//! or raw rows gathered from the per-series chunks they were read in.
//!
//! Why two forms: a raw answer is every stored row that matches, and TSBS's high-cpu-all is 29,000
//! rows of 21 cells at 100 hosts (1.6 M rows at 4,000). As a vector per row, each row cost an
//! allocation, ten shared tag strings counted up and down, and ten escape checks when written; about
//! half of the statement's time went to making, writing and freeing rows. Gathered, a series' tags
//! are held once, its rows' times and fields are one vector, and the answer's row order is a list of
//! (chunk, row) pairs: the writer renders each series' tags once.

use std::borrow::Cow;
use std::sync::Arc;

use super::Cell;
use super::cell::ArcStr;

/// Rows of a [`super::Series`].
#[derive(Clone, Debug)]
pub enum Values {
    /// One vector per row: the time, then a cell per column.
    Rows(Vec<Vec<Cell>>),
    /// The same, every row in one vector: an aggregate's rows (`GROUP BY time()` buckets). A
    /// 4,000-host hourly rollup is 48,000 rows; as a vector each they were made, written and freed one
    /// by one.
    Flat(FlatRows),
    /// Raw rows, see [`Gathered`].
    Gathered(Gathered),
}

/// Rows of equal width in one vector: an answer of thousands of rows is one allocation, not one per
/// row (a 720-bucket rollup spent a fifth of its CPU allocating and freeing).
#[derive(Clone, Debug)]
pub struct FlatRows {
    width: usize,
    cells: Vec<Cell>,
}

impl FlatRows {
    pub fn with_capacity(width: usize, rows: usize) -> FlatRows {
        FlatRows { width, cells: Vec::with_capacity(width * rows) }
    }

    /// Where the next row goes: push exactly `width` cells per row.
    pub fn cells(&mut self) -> &mut Vec<Cell> {
        &mut self.cells
    }

    /// Rows of `width` cells one after the other in `cells`.
    pub fn from_cells(width: usize, cells: Vec<Cell>) -> FlatRows {
        assert!(width > 0 && cells.len().is_multiple_of(width), "rows of {width} cells");
        FlatRows { width, cells }
    }

    pub fn from_rows(rows: Vec<Vec<Cell>>) -> FlatRows {
        let width = rows.first().map_or(0, Vec::len);
        debug_assert!(rows.iter().all(|r| r.len() == width), "rows of one width");
        FlatRows { width, cells: rows.into_iter().flatten().collect() }
    }

    pub fn len(&self) -> usize {
        self.cells.len() / self.width.max(1)
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    pub fn iter(&self) -> std::slice::ChunksExact<'_, Cell> {
        self.cells.chunks_exact(self.width.max(1))
    }

    /// The rows in reverse order.
    pub fn reverse(&mut self) {
        let w = self.width.max(1);
        let n = self.len();
        for i in 0..n / 2 {
            let (head, tail) = self.cells.split_at_mut((n - 1 - i) * w);
            head[i * w..(i + 1) * w].swap_with_slice(&mut tail[..w]);
        }
    }

    /// Keeps only the rows `rows`.
    pub fn keep(&mut self, rows: std::ops::Range<usize>) {
        let w = self.width.max(1);
        self.cells.truncate(rows.end * w);
        self.cells.drain(..rows.start * w);
    }
}

/// What a column after the time shows, in a [`Gathered`] answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Column {
    /// The chunk's tag at this index of [`Chunk::tags`].
    Tag(usize),
    /// The row's cell at this index (0 is the time).
    Cell(usize),
}

/// The rows of one series (or of part of one) as read: its tags once, its rows' cells one after the
/// other, `width` per row (the time, then the fields read).
#[derive(Clone, Debug, Default)]
pub struct Chunk {
    pub tags: Vec<Cell>,
    pub cells: Vec<Cell>,
}

impl Chunk {
    /// The cells of row `r`, `width` cells a row.
    pub fn row(&self, r: usize, width: usize) -> &[Cell] {
        &self.cells[r * width..(r + 1) * width]
    }
}

/// Raw rows gathered from chunks: row `i` of the answer is row `order[i].1` of chunk `order[i].0`,
/// its columns after the time as `columns` says.
#[derive(Clone, Debug)]
pub struct Gathered {
    /// Shared by the series (groups) of one statement.
    pub chunks: Arc<[Chunk]>,
    /// Cells per row of every chunk.
    pub width: usize,
    pub columns: Arc<[Column]>,
    pub order: Vec<(u32, u32)>,
}

impl Gathered {
    /// The cells of row `i` of the answer: its time, then its columns.
    pub fn row(&self, i: usize) -> (&Chunk, &[Cell]) {
        let (c, r) = self.order[i];
        let chunk = &self.chunks[c as usize];
        (chunk, chunk.row(r as usize, self.width))
    }

    /// The value of one column of a row (see [`Gathered::row`]).
    pub fn cell<'a>(chunk: &'a Chunk, row: &'a [Cell], column: Column) -> &'a Cell {
        match column {
            Column::Tag(i) => &chunk.tags[i],
            Column::Cell(i) => &row[i],
        }
    }
}

/// A tag without a value in a [`SeriesTable`]'s codes.
pub const NO_CODE: u32 = u32::MAX;

/// A statement's answer when every series of it is one row of a different stored series of one
/// measurement, each series its own group (the last row of each host: TSBS's lastpoint, `SELECT * ...
/// GROUP BY "hostname" ORDER BY time DESC LIMIT 1`), held as one table rather than a [`super::Series`]
/// each. At 4,000 hosts, making a series per host (its name, tags, row and tag strings), sorting them,
/// writing them and freeing them was more than half of the statement's CPU; here a row is its cells
/// and a dictionary code per tag, and the writer puts the JSON of each series together from those.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesTable {
    /// The measurement: every series' name.
    pub name: String,
    /// The `GROUP BY` tags, sorted by key: each with its index in `tag_values`.
    pub group: Vec<(String, usize)>,
    pub columns: Arc<[String]>,
    /// What each column after the time shows: a tag (an index of `tag_values`) or a cell of the row.
    pub sources: Arc<[Column]>,
    /// Per tag, its values by dictionary code.
    pub tag_values: Vec<Arc<[ArcStr]>>,
    /// Cells per row: the time, then the fields read.
    pub width: usize,
    /// Per row, in answer order: a code per tag of `tag_values` ([`NO_CODE`]: none).
    pub codes: Vec<u32>,
    /// Per row, in answer order: `width` cells.
    pub cells: Vec<Cell>,
}

impl SeriesTable {
    /// Rows, that is series.
    pub fn len(&self) -> usize {
        self.cells.len() / self.width.max(1)
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The cells of row `r`: its time, then its fields.
    pub fn row(&self, r: usize) -> &[Cell] {
        &self.cells[r * self.width..(r + 1) * self.width]
    }

    /// The value of tag `t` (an index of `tag_values`) in row `r`.
    pub fn tag(&self, r: usize, t: usize) -> Option<&str> {
        let code = self.codes[r * self.tag_values.len() + t];
        self.tag_values[t].get(code as usize).map(|v| &**v)
    }

    /// Keeps only the rows `rows` (`SOFFSET` and `SLIMIT`).
    pub fn keep(&mut self, rows: std::ops::Range<usize>) {
        let (w, k) = (self.width.max(1), self.tag_values.len());
        self.cells.truncate(rows.end * w);
        self.cells.drain(..rows.start * w);
        self.codes.truncate(rows.end * k);
        self.codes.drain(..rows.start * k);
    }

    /// The series, one each: for callers other than the JSON writer, and tests.
    pub fn series(&self) -> Vec<super::Series> {
        (0..self.len())
            .map(|r| {
                let row = self.row(r);
                let cells = std::iter::once(row[0].clone()).chain(self.sources.iter().map(|c| match *c {
                    Column::Tag(t) => self.tag(r, t).map_or(Cell::Null, |v| Cell::String(v.into())),
                    Column::Cell(k) => row[k].clone(),
                }));
                super::Series {
                    name: self.name.clone(),
                    tags: Some(self.group.iter().map(|(k, t)| (k.clone(), self.tag(r, *t).unwrap_or("").to_string())).collect()),
                    columns: self.columns.clone(),
                    values: Some(Values::Rows(vec![cells.collect()])),
                }
            })
            .collect()
    }
}

impl Values {
    pub fn len(&self) -> usize {
        match self {
            Values::Rows(r) => r.len(),
            Values::Flat(f) => f.len(),
            Values::Gathered(g) => g.order.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows as vectors of cells (copied when gathered): for tests and for writers other than the
    /// JSON one.
    pub fn rows(&self) -> Cow<'_, [Vec<Cell>]> {
        match self {
            Values::Rows(r) => Cow::Borrowed(r),
            Values::Flat(f) => Cow::Owned(f.iter().map(<[Cell]>::to_vec).collect()),
            Values::Gathered(g) => Cow::Owned(
                (0..g.order.len())
                    .map(|i| {
                        let (chunk, row) = g.row(i);
                        std::iter::once(row[0].clone()).chain(g.columns.iter().map(|c| Gathered::cell(chunk, row, *c).clone())).collect()
                    })
                    .collect(),
            ),
        }
    }
}

/// Equal when the rows are, whatever their form.
impl PartialEq for Values {
    fn eq(&self, other: &Values) -> bool {
        self.rows() == other.rows()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reversing and cutting flat rows does to them what it does to the same rows one vector each, for
    /// even and odd counts, every width and every window.
    #[test]
    fn flat_rows_reverse_and_keep_as_rows_do() {
        for width in 1..4 {
            for n in 0..6 {
                let rows: Vec<Vec<Cell>> = (0..n).map(|r| (0..width).map(|c| Cell::Integer((r * 10 + c) as i64)).collect()).collect();
                let mut flat = FlatRows::from_rows(rows.clone());
                assert_eq!(flat.len(), n);
                flat.reverse();
                let reversed: Vec<Vec<Cell>> = rows.iter().rev().cloned().collect();
                assert_eq!(flat.iter().map(<[Cell]>::to_vec).collect::<Vec<_>>(), reversed, "width {width}, {n} rows");
                for a in 0..=n {
                    for b in a..=n {
                        let mut cut = flat.clone();
                        cut.keep(a..b);
                        assert_eq!(Values::Flat(cut), Values::Rows(reversed[a..b].to_vec()), "rows {a}..{b} of {n}");
                    }
                }
            }
        }
    }
}
