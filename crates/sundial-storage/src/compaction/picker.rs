//! Which segment files of one (table, partition) to merge: a pure function, tested on its own.
//!
//! Input: the partition's files in generation order (oldest first), with their sizes and whether a
//! tombstone hides rows in them. Output: a contiguous run of them to merge, or nothing. Contiguity is
//! what keeps last-write-wins correct: the output takes the place of the run in the generation order,
//! so no file outside the run may hold generations between the run's first and last.
//!
//! Rules, first match wins:
//! 1. A file with rows hidden by a tombstone is rewritten (alone) to free the disk.
//! 2. A *cold* partition (the table has data in a later one) with two files or more is merged whole,
//!    up to the input limits: a finished day ends as one file, which is what scans want. Its only file
//!    is rewritten alone if it was written quick (see [`crate::segment::FLAG_QUICK`]): merges of a
//!    partition still written to encode quick, and its last merge encodes at full effort.
//! 3. With at least [`COMPACTION_TRIGGER_FILES`] files (8), size-tiered: start from the newest file and add
//!    older ones while each is at most [`COMPACTION_SIZE_RATIO`] times the total so far. A run of two or
//!    more is merged. Files therefore grow geometrically from newest to oldest, and a byte is rewritten
//!    about log(partition bytes / flush bytes) times.
//! 4. With [`COMPACTION_FILES_PER_PARTITION_MAX`] files (16) or more, the newest [`COMPACTION_TRIGGER_FILES`]
//!    are merged whatever their sizes: the bound on read amplification.

use std::ops::Range;

use crate::limits::{
    COMPACTION_FILES_PER_PARTITION_MAX, COMPACTION_INPUT_BYTES_MAX, COMPACTION_INPUT_FILES_MAX, COMPACTION_SIZE_RATIO,
    COMPACTION_TRIGGER_FILES,
};

/// What the picker knows about one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileInfo {
    pub gen_min: u64,
    pub gen_max: u64,
    pub bytes: u64,
    /// A tombstone not yet applied to this file hides some of its rows.
    pub dead: bool,
    /// Written quick ([`crate::segment::FLAG_QUICK`]): rewritten once the partition is cold.
    pub quick: bool,
}

/// The run of `files` (sorted by generation, oldest first) to merge next, if any.
pub fn pick(files: &[FileInfo], cold: bool) -> Option<Range<usize>> {
    debug_assert!(files.windows(2).all(|w| w[0].gen_max < w[1].gen_min), "files overlap or are out of order");
    if let Some(i) = files.iter().position(|f| f.dead) {
        return Some(i..i + 1);
    }
    let n = files.len();
    if cold {
        return match n {
            0 => None,
            1 => files[0].quick.then_some(0..1),
            _ => Some(0..fit_from_oldest(files)),
        };
    }
    if n < COMPACTION_TRIGGER_FILES {
        return None;
    }
    let mut start = n - 1;
    let mut sum = files[start].bytes;
    while start > 0 && n - start < COMPACTION_INPUT_FILES_MAX {
        let older = files[start - 1].bytes;
        if older > sum.saturating_mul(COMPACTION_SIZE_RATIO) || sum.saturating_add(older) > COMPACTION_INPUT_BYTES_MAX {
            break;
        }
        start -= 1;
        sum += older;
    }
    if n - start >= 2 {
        return Some(start..n);
    }
    (n >= COMPACTION_FILES_PER_PARTITION_MAX).then(|| n - COMPACTION_TRIGGER_FILES..n)
}

/// How many of the oldest files fit the input limits (at least 2).
fn fit_from_oldest(files: &[FileInfo]) -> usize {
    let mut sum = 0u64;
    let mut k = 0;
    while k < files.len() && k < COMPACTION_INPUT_FILES_MAX {
        sum = sum.saturating_add(files[k].bytes);
        if k >= 2 && sum > COMPACTION_INPUT_BYTES_MAX {
            break;
        }
        k += 1;
    }
    k.max(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(g: u64, bytes: u64) -> FileInfo {
        FileInfo { gen_min: g, gen_max: g, bytes, dead: false, quick: false }
    }

    /// Replays `pick` as a compaction would: the run becomes one file with the summed size.
    fn apply(files: &mut Vec<FileInfo>, r: Range<usize>) -> u64 {
        let merged = FileInfo {
            gen_min: files[r.start].gen_min,
            gen_max: files[r.end - 1].gen_max,
            bytes: files[r.clone()].iter().map(|f| f.bytes).sum(),
            dead: false,
            quick: false,
        };
        files.splice(r, [merged]);
        merged.bytes
    }

    #[test]
    fn few_files_are_left_alone_and_dead_files_are_rewritten_first() {
        assert_eq!(pick(&[file(1, 10), file(2, 10), file(3, 10)], false), None);
        let mut f = vec![file(1, 10), file(2, 10)];
        f[1].dead = true;
        assert_eq!(pick(&f, false), Some(1..2));
        assert_eq!(pick(&[file(1, 10)], true), None);
        assert_eq!(pick(&[file(1, 1000), file(5, 1)], true), Some(0..2), "a cold partition ends as one file");
        let quick = FileInfo { quick: true, ..file(1, 10) };
        assert_eq!(pick(&[quick], false), None, "a hot partition's file written quick waits");
        assert_eq!(pick(&[quick], true), Some(0..1), "and is rewritten at full effort once cold");
        assert_eq!(pick(&[], true), None);
    }

    /// 10,000 equal flushes into one hot partition: files per partition never pass the bound, and each
    /// flushed byte is rewritten a logarithmic number of times, not once per flush.
    #[test]
    fn steady_flushes_keep_read_and_write_amplification_bounded() {
        let mut files = Vec::new();
        let (mut flushed, mut written) = (0u64, 0u64);
        let mut most = 0;
        for g in 1..=10_000u64 {
            files.push(file(g, 100));
            flushed += 100;
            most = most.max(files.len());
            while let Some(r) = pick(&files, false) {
                written += apply(&mut files, r);
            }
            assert!(files.len() < COMPACTION_FILES_PER_PARTITION_MAX, "{} files after flush {g}", files.len());
        }
        assert!(most <= COMPACTION_FILES_PER_PARTITION_MAX);
        let write_amp = written as f64 / flushed as f64;
        assert!(write_amp < 12.0, "write amplification {write_amp:.1}");
        assert!(write_amp > 1.0);
    }

    /// Flushes of random sizes, some huge: the read-amplification rule still holds.
    #[test]
    fn uneven_flush_sizes_still_respect_the_file_bound() {
        let mut rng = 0x1234_5678_9abc_def0u64;
        let mut files = Vec::new();
        for g in 1..=5_000u64 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let bytes = 1 + (rng % 1000) * if rng.is_multiple_of(17) { 10_000 } else { 1 };
            files.push(file(g, bytes));
            while let Some(r) = pick(&files, false) {
                assert!(r.len() <= COMPACTION_INPUT_FILES_MAX && !r.is_empty());
                apply(&mut files, r);
            }
            assert!(files.len() < COMPACTION_FILES_PER_PARTITION_MAX, "{} files after flush {g}", files.len());
        }
    }
}
