//! The rows of one series of a result: a vector of cells per row, or raw rows gathered from the
//! per-series chunks they were read in.
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

/// Rows of a [`super::Series`].
#[derive(Clone, Debug)]
pub enum Values {
    /// One vector per row: the time, then a cell per column.
    Rows(Vec<Vec<Cell>>),
    /// Raw rows, see [`Gathered`].
    Gathered(Gathered),
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

impl Values {
    pub fn len(&self) -> usize {
        match self {
            Values::Rows(r) => r.len(),
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
