//! The I/O of one compaction: merge input segments into one output file, series by series, streaming.
//!
//! Memory: for each series, each input holds at most one decoded block (≤ [`BLOCK_ROWS_MAX`] rows) not
//! yet merged, and the output holds fewer than two blocks' rows before writing one. The merge advances
//! in time windows: the window ends at the smallest last timestamp of the inputs' pending blocks, so at
//! least one pending block is consumed whole per step, and each step's rows are all later than the
//! previous step's (output blocks stay sorted and disjoint).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::catalog::{ColId, SeriesId};
use crate::error::Result;
use crate::limits::BLOCK_ROWS_MAX;
use crate::rows::{self, SeriesRows};
use crate::segment::{Segment, SegmentId, SegmentWriter, SeriesBlocks, SeriesWalker};
use crate::throttle::TokenBucket;
use crate::tombstone::{self, Tombstone};
use crate::types::FieldType;

/// What a merge did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeStats {
    pub rows_in: u64,
    pub rows_out: u64,
    pub rows_deleted: u64,
    pub blocks_out: u64,
}

/// One input's cursor over the blocks of the series being merged.
struct Cursor<'a> {
    seg: &'a Segment,
    /// Owns the decoded footer groups holding the series' blocks (see [`crate::block_cache`]).
    blocks: SeriesBlocks,
    next: usize,
    pending: SeriesRows,
    /// Tombstones that hide rows of this input and of the current series.
    tombstones: Vec<&'a Tombstone>,
}

/// Merges `inputs` (one table and partition, sorted by generation, a contiguous run) into the file
/// `path` with identity `id`, applying to each input the tombstones that hide its rows. `cols` lists
/// every field column of the table. Every byte written goes through `throttle`, if given (the
/// compaction rate limit). Returns `None` (and writes nothing) when no row survives.
pub fn merge(
    path: &Path,
    id: SegmentId,
    inputs: &[Arc<Segment>],
    tombstones: &[Arc<Tombstone>],
    cols: &[(ColId, FieldType)],
    throttle: Option<Arc<TokenBucket>>,
) -> Result<(Option<PathBuf>, MergeStats)> {
    debug_assert!(inputs.windows(2).all(|w| w[0].id.generation < w[1].id.gen_min));
    let mut series: Vec<SeriesId> = Vec::new();
    for s in inputs {
        series.extend(s.series()?);
    }
    series.sort_unstable();
    series.dedup();
    let col_ids: Vec<ColId> = cols.iter().map(|c| c.0).collect();
    let types: Vec<FieldType> = cols.iter().map(|c| c.1).collect();
    let mut w = SegmentWriter::create(path, id)?.with_throttle(throttle);
    let mut stats = MergeStats::default();
    // Series are visited in ascending order: each input's walker keeps its last decoded footer group, so
    // a group is decoded about once per merge even when the block-index cache cannot keep it.
    let mut walkers: Vec<SeriesWalker<'_>> = inputs.iter().map(|seg| seg.walker()).collect();
    for s in series {
        let mut cursors: Vec<Cursor<'_>> = Vec::with_capacity(inputs.len());
        for (seg, walker) in inputs.iter().zip(&mut walkers) {
            cursors.push(Cursor {
                seg,
                blocks: walker.series_blocks(s)?,
                next: 0,
                pending: SeriesRows { series: s, ts: Vec::new(), cols: Vec::new() },
                tombstones: tombstones
                    .iter()
                    .filter(|t| t.id > seg.id.tombstones_applied && t.hides_generation(seg.id.generation) && t.matches_series(s))
                    .map(|t| &**t)
                    .collect(),
            });
        }
        merge_series(&mut w, &mut cursors, cols, &col_ids, &types, &mut stats)?;
    }
    if w.is_empty() {
        w.abandon();
        return Ok((None, stats));
    }
    Ok((Some(w.finish()?), stats))
}

fn merge_series(
    w: &mut SegmentWriter,
    cursors: &mut [Cursor<'_>],
    cols: &[(ColId, FieldType)],
    col_ids: &[ColId],
    types: &[FieldType],
    stats: &mut MergeStats,
) -> Result<()> {
    let mut out: Option<SeriesRows> = None;
    loop {
        for c in cursors.iter_mut() {
            while c.pending.is_empty()
                && let Some(b) = c.blocks.get(c.next)
            {
                c.next += 1;
                let mut rows = c.seg.read_block(b, i64::MIN, i64::MAX, cols)?;
                stats.rows_in += rows.len() as u64;
                stats.rows_deleted += tombstone::apply(&mut rows, c.tombstones.iter().copied()) as u64;
                c.pending = rows;
            }
        }
        let Some(window_end) = cursors.iter().filter_map(|c| c.pending.ts.last().copied()).min() else { break };
        let sources: Vec<SeriesRows> = cursors.iter_mut().map(|c| c.pending.split_through(window_end)).collect();
        let Some(merged) = rows::merge(sources, types) else { continue };
        out = match out.take() {
            None => Some(merged),
            Some(prev) => rows::merge(vec![prev, merged], types),
        };
        while let Some(o) = out.as_mut().filter(|o| o.len() >= BLOCK_ROWS_MAX) {
            let rest = o.slice(BLOCK_ROWS_MAX..o.len());
            write_block(w, o, 0..BLOCK_ROWS_MAX, col_ids, stats)?;
            out = Some(rest);
        }
    }
    if let Some(o) = out.filter(|o| !o.is_empty()) {
        write_block(w, &o, 0..o.len(), col_ids, stats)?;
    }
    Ok(())
}

fn write_block(w: &mut SegmentWriter, rows: &SeriesRows, range: std::ops::Range<usize>, col_ids: &[ColId], stats: &mut MergeStats) -> Result<()> {
    debug_assert_eq!(rows.check(), Ok(()));
    stats.rows_out += range.len() as u64;
    stats.blocks_out += 1;
    w.add_block(rows, range, col_ids)
}
