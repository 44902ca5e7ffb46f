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
use crate::codec::Effort;
use crate::error::Result;
use crate::limits::BLOCK_ROWS_MAX;
use crate::rows::{self, SeriesRows};
use crate::segment::{self, Layout, PackSpan, Segment, SegmentId, SegmentWriter, SeriesBlocks, SeriesWalker};
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
    /// Packs copied whole from an input, without decoding them ([`SegmentWriter::copy_pack`]).
    pub packs_copied: u64,
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
/// compaction rate limit). `effort` is how hard the rows it encodes are compressed: [`Effort::Quick`] for
/// a partition still written to (its output is merged again, and the partition's last merge, once it is
/// cold, is at full effort; see [`segment::FLAG_QUICK`]). A full-effort merge copies no pack of a quick
/// input. Returns `None` (and writes nothing) when no row survives.
pub fn merge(
    path: &Path,
    id: SegmentId,
    inputs: &[Arc<Segment>],
    tombstones: &[Arc<Tombstone>],
    cols: &[(ColId, FieldType)],
    throttle: Option<Arc<TokenBucket>>,
    effort: Effort,
) -> Result<(Option<PathBuf>, MergeStats)> {
    debug_assert!(inputs.windows(2).all(|w| w[0].id.generation < w[1].id.gen_min));
    let layouts: Vec<Layout> = inputs.iter().map(|s| s.layout()).collect::<Result<_>>()?;
    let mut series: Vec<SeriesId> = layouts.iter().flat_map(|l| l.series.iter().copied()).collect();
    series.sort_unstable();
    series.dedup();
    // Per input, the tombstones that hide some of its rows.
    let hiding: Vec<Vec<&Tombstone>> = inputs
        .iter()
        .map(|seg| tombstones.iter().filter(|t| t.id > seg.id.tombstones_applied && t.hides_generation(seg.id.generation)).map(|t| &**t).collect())
        .collect();
    let col_ids: Vec<ColId> = cols.iter().map(|c| c.0).collect();
    let types: Vec<FieldType> = cols.iter().map(|c| c.1).collect();
    let mut w = SegmentWriter::create(path, id)?.with_throttle(throttle).with_series_hint(series.len()).with_effort(effort);
    if effort == Effort::Quick {
        // Its output is merged again: pco's delta choice carried from block to block, as a flush does,
        // instead of a search per block (a fifth of a quick merge's CPU in scenario 2's load).
        w = w.with_delta_hints();
    }
    let mut stats = MergeStats::default();
    // Series are visited in ascending order: each input's walker keeps its last decoded footer group, so
    // a group is decoded about once per merge even when the block-index cache cannot keep it.
    let mut walkers: Vec<SeriesWalker<'_>> = inputs.iter().map(|seg| seg.walker()).collect();
    let mut packs = PackCursor { next: vec![0; inputs.len()] };
    let mut i = 0;
    while i < series.len() {
        let s = series[i];
        if let Some((k, p)) = packs.copyable_at(s, inputs, &layouts, &hiding, effort) {
            let members = layouts[k].members(p);
            w.copy_pack(&inputs[k], p, members)?;
            stats.rows_in += u64::from(p.rows);
            stats.rows_out += u64::from(p.rows);
            stats.blocks_out += members.len() as u64;
            stats.packs_copied += 1;
            i += series[i..].partition_point(|x| *x <= p.last);
            continue;
        }
        let mut cursors: Vec<Cursor<'_>> = Vec::with_capacity(inputs.len());
        for ((seg, walker), hiding) in inputs.iter().zip(&mut walkers).zip(&hiding) {
            cursors.push(Cursor {
                seg,
                blocks: walker.series_blocks(s)?,
                next: 0,
                pending: SeriesRows { series: s, ts: Vec::new(), cols: Vec::new() },
                tombstones: hiding.iter().copied().filter(|t| t.matches_series(s)).collect(),
            });
        }
        merge_series(&mut w, &mut cursors, cols, &col_ids, &types, &mut stats)?;
        i += 1;
    }
    if w.is_empty() {
        w.abandon();
        return Ok((None, stats));
    }
    Ok((Some(w.finish()?), stats))
}

/// Finds the packs a merge copies whole ([`SegmentWriter::copy_pack`]): per input, the first of its packs
/// not wholly before the series being merged.
struct PackCursor {
    next: Vec<usize>,
}

impl PackCursor {
    /// The pack starting at series `s` that can be copied as it is, and its input: its input is the only
    /// one with a series in the pack's range (so its rows are the last write of each, and it keeps the
    /// output in series order), no tombstone hides rows of it, it is in the format this build writes, and
    /// its chunks may be quick ones only if the output's may.
    fn copyable_at<'l>(
        &mut self,
        s: SeriesId,
        inputs: &[Arc<Segment>],
        layouts: &'l [Layout],
        hiding: &[Vec<&Tombstone>],
        effort: Effort,
    ) -> Option<(usize, &'l PackSpan)> {
        for (k, l) in layouts.iter().enumerate() {
            let next = &mut self.next[k];
            while l.packs.get(*next).is_some_and(|p| p.last < s) {
                *next += 1;
            }
            let Some(p) = l.packs.get(*next).filter(|p| p.first == s) else { continue };
            let alone = layouts.iter().enumerate().all(|(j, o)| j == k || !o.has_series_in(p.first, p.last));
            let untouched = hiding[k]
                .iter()
                .all(|t| !t.overlaps(p.ts_min, p.ts_max) || !l.members(p).iter().any(|m| t.matches_series(m.0)));
            let effort_ok = effort == Effort::Quick || !inputs[k].quick;
            return (alone && untouched && effort_ok && inputs[k].version == segment::VERSION).then_some((k, p));
        }
        None
    }
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
        match out.as_mut() {
            None => out = Some(merged),
            Some(prev) => rows::merge_into(prev, merged, types),
        }
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::block_cache::BlockIndexCache;
    use crate::types::{Column, Value};

    const COLS: [(ColId, FieldType); 2] = [(0, FieldType::Integer), (1, FieldType::Float)];

    /// (series, ts) → (integer, float) of every row.
    type Rows = BTreeMap<(SeriesId, i64), (Option<Value>, Option<Value>)>;

    /// Per input, its generation and its series with their timestamps.
    type Inputs = [(u64, Vec<(SeriesId, Vec<i64>)>)];

    fn id(generation: u64) -> SegmentId {
        SegmentId { db: 1, table: 1, partition_start: 0, partition_ns: 1_000_000, generation, gen_min: generation, tombstones_applied: 0 }
    }

    /// The value a row of `series` at `ts` gets in generation `g`: the float only on even series.
    fn row(series: SeriesId, ts: i64, g: u64) -> (Option<Value>, Option<Value>) {
        let v = i64::from(series) * 1000 + ts * 10 + g as i64;
        (Some(Value::Integer(v)), series.is_multiple_of(2).then(|| Value::Float(v as f64 / 8.0)))
    }

    /// A flush output of generation `g`: each of `series` (ascending) with a row at each of `ts`.
    fn segment(dir: &Path, g: u64, series: &[(SeriesId, Vec<i64>)]) -> Arc<Segment> {
        let mut w = SegmentWriter::create(&dir.join(format!("g{g}.seg")), id(g)).unwrap();
        for (s, ts) in series {
            let mut cols = [Column::new(FieldType::Integer), Column::new(FieldType::Float)];
            for t in ts {
                let (v, f) = row(*s, *t, g);
                for (c, v) in cols.iter_mut().zip([v, f]) {
                    match v {
                        Some(v) => assert!(c.push_value(&v)),
                        None => c.push_null(),
                    }
                }
            }
            let rows = SeriesRows { series: *s, ts: ts.clone(), cols: cols.into_iter().map(Some).collect() };
            w.add_series(&rows, &[0, 1]).unwrap();
        }
        Arc::new(Segment::open_with_cache(&w.finish().unwrap(), &Arc::new(BlockIndexCache::new(1 << 20))).unwrap())
    }

    fn read_all(seg: &Segment) -> Rows {
        let mut out = Rows::new();
        for s in seg.series().unwrap() {
            for r in seg.read_series(s, i64::MIN, i64::MAX, &COLS).unwrap() {
                for (i, ts) in r.ts.iter().enumerate() {
                    let cell = |k: usize| r.cols[k].as_ref().and_then(|c| c.get(i));
                    assert!(out.insert((s, *ts), (cell(0), cell(1))).is_none(), "series {s} has two rows at {ts}");
                }
            }
        }
        out
    }

    /// What the merge must give: per (series, ts) the newest input's row, less the rows a tombstone hides.
    fn model(inputs: &Inputs, tombstones: &[Arc<Tombstone>]) -> Rows {
        let mut out = Rows::new();
        for (g, series) in inputs {
            for (s, ts) in series {
                for t in ts {
                    out.insert((*s, *t), row(*s, *t, *g));
                }
            }
            out.retain(|(s, ts), _| !tombstones.iter().any(|t| t.hides_generation(*g) && t.hides_row(*s, *ts)));
        }
        out
    }

    fn run(inputs: &Inputs, tombstones: &[Arc<Tombstone>]) -> (Rows, MergeStats) {
        let dir = tempfile::tempdir().unwrap();
        let segs: Vec<Arc<Segment>> = inputs.iter().map(|(g, series)| segment(dir.path(), *g, series)).collect();
        let out_id = SegmentId { gen_min: inputs[0].0, ..id(inputs[inputs.len() - 1].0) };
        let (path, stats) = merge(&dir.path().join("out.seg"), out_id, &segs, tombstones, &COLS, None, Effort::Full).unwrap();
        let out = Segment::open_with_cache(&path.unwrap(), &Arc::new(BlockIndexCache::new(1 << 20))).unwrap();
        let got = read_all(&out);
        assert_eq!(got.len() as u64, stats.rows_out);
        assert_eq!(got, model(inputs, tombstones));
        (got, stats)
    }

    fn one_row_each(series: std::ops::Range<SeriesId>, ts: i64) -> Vec<(SeriesId, Vec<i64>)> {
        series.map(|s| (s, vec![ts])).collect()
    }

    fn tombstone(id: u64, series: Vec<SeriesId>, generation: u64) -> Arc<Tombstone> {
        Arc::new(Tombstone { id, db: 1, table: 1, series: Some(series), ts_min: i64::MIN, ts_max: i64::MAX, generation, wal_seq: 0 })
    }

    /// Flushes of new series (one row each, packs of 1,024 series): a pack no other input has a series
    /// in the range of is copied; the pack holding a series written again later, and the pack holding a
    /// deleted row, are merged row by row. Either way the output reads as the model says.
    #[test]
    fn packs_of_series_no_other_input_has_are_copied_whole() {
        let mut third = vec![(1500, vec![20])];
        third.extend(one_row_each(5000..5100, 10));
        let inputs = [(1, one_row_each(0..3000, 10)), (2, one_row_each(3000..5000, 10)), (3, third)];
        // Packs: 0–1023, 1024–2047 (1500 written again), 2048–2999; 3000–4023, 4024–4999 (4100
        // deleted); 1500 and 5000–5099 (a range holding the second input's series).
        let (got, stats) = run(&inputs, &[tombstone(1, vec![4100], 2)]);
        assert_eq!(stats.packs_copied, 3);
        assert_eq!(stats.rows_deleted, 1);
        assert_eq!(got.len(), 3000 + 2000 + 101 - 1);
        let (_, stats) = run(&inputs, &[]);
        assert_eq!(stats.packs_copied, 4);
        // A tombstone for rows of later generations than the input's hides nothing there: still copied.
        let (_, stats) = run(&inputs[1..2], &[]);
        assert_eq!(stats.packs_copied, 2);
    }

    /// A file of generation `g` named `name`: series `0..200`, each with a walk of integers and floats
    /// from time `t0` on, every 10 — 40 rows for series below 100 (packed), 400 for the others (blocks
    /// of their own) — with the series of `rewritten` written quick, as a flush writes them.
    fn walk_segment(dir: &Path, name: &str, g: u64, t0: i64, rewritten: Vec<SeriesId>) -> Arc<Segment> {
        let mut w = SegmentWriter::create(&dir.join(name), id(g)).unwrap().with_delta_hints().with_rewritten(rewritten);
        let mut x = 0x2545_f491_4f6c_dd1du64 ^ g;
        for s in 0..200 {
            let n = if s < 100 { 40 } else { 400 };
            let (mut cols, mut v) = ([Column::new(FieldType::Integer), Column::new(FieldType::Float)], 50i64);
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                v += (x % 9) as i64 - 4;
                assert!(cols[0].push_value(&Value::Integer(v)));
                assert!(cols[1].push_value(&Value::Float(v as f64 / 4.0)));
            }
            let ts = (0..n).map(|i| t0 + 10 * i as i64).collect();
            w.add_series(&SeriesRows { series: s, ts, cols: cols.into_iter().map(Some).collect() }, &[0, 1]).unwrap();
        }
        Arc::new(Segment::open_with_cache(&w.finish().unwrap(), &Arc::new(BlockIndexCache::new(1 << 20))).unwrap())
    }

    /// Rows written quick (`SegmentWriter::with_rewritten`: a flush's rows of series the partition's
    /// files already hold) take more bytes, read back the same, and merge with the older file into the
    /// very bytes a flush at full effort merges into. A pack is written quick only when every one of its
    /// series is: with every other series listed, a file of packs alone is the full-effort file.
    #[test]
    fn rows_written_quick_read_alike_and_merge_into_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let older = walk_segment(dir.path(), "g1.seg", 1, 0, Vec::new());
        let full = walk_segment(dir.path(), "g2-full.seg", 2, 10_000, Vec::new());
        let quick = walk_segment(dir.path(), "g2-quick.seg", 2, 10_000, (0..200).collect());
        assert!(quick.file_bytes > full.file_bytes + full.file_bytes / 10, "{} against {} bytes", quick.file_bytes, full.file_bytes);
        assert_eq!(read_all(&quick), read_all(&full));
        let merged = |input: &Arc<Segment>, name: &str| {
            let out_id = SegmentId { gen_min: 1, ..id(2) };
            let (path, stats) = merge(&dir.path().join(name), out_id, &[older.clone(), input.clone()], &[], &COLS, None, Effort::Full).unwrap();
            assert_eq!((stats.rows_in, stats.rows_out, stats.packs_copied), (2 * 100 * 440, 2 * 100 * 440, 0));
            std::fs::read(path.unwrap()).unwrap()
        };
        assert_eq!(merged(&quick, "from-quick.seg"), merged(&full, "from-full.seg"));

        // The packed series (0..100) alone listed: their packs are quick. Every other one of them
        // listed: no pack is all quick, and the file is the full-effort one, byte for byte.
        assert!(!full.layout().unwrap().packs.is_empty());
        let packs_quick = walk_segment(dir.path(), "g2-packs.seg", 2, 10_000, (0..100).collect());
        assert!(packs_quick.file_bytes > full.file_bytes);
        let evens = walk_segment(dir.path(), "g2-evens.seg", 2, 10_000, (0..100).step_by(2).collect());
        assert_eq!(std::fs::read(&evens.path).unwrap(), std::fs::read(&full.path).unwrap());
    }

    /// Random inputs (runs of series, some with two rows, some written again by a later input) and
    /// random deletes: the merge's output is the model's, whether it copied packs or merged them.
    #[test]
    fn merges_with_and_without_copied_packs_read_as_the_model() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let mut copied = 0;
        for _ in 0..12 {
            let mut inputs = Vec::new();
            for g in 1..=(2 + next(3)) {
                let mut series = BTreeMap::new();
                for _ in 0..1 + next(3) {
                    let start = next(6000) as SeriesId;
                    for s in start..start + next(1500) as SeriesId {
                        let ts = if next(10) == 0 { vec![10, 20] } else { vec![10 * (1 + next(2) as i64)] };
                        series.insert(s, ts);
                    }
                }
                inputs.push((g, series.into_iter().collect::<Vec<_>>()));
            }
            let n = inputs.len() as u64;
            let tombstones: Vec<Arc<Tombstone>> =
                (0..next(3)).map(|k| tombstone(k + 1, vec![next(7500) as SeriesId, 7500 + next(10) as SeriesId], 1 + next(n))).collect();
            let (_, stats) = run(&inputs, &tombstones);
            copied += stats.packs_copied;
        }
        assert!(copied > 0, "no pack was copied");
    }
}
