//! Several data directories: which one holds a partition.
//!
//! The first directory (`EngineConfig::data_dir`) holds the lock, `catalog.log` and the WAL; every
//! directory (the first and `EngineConfig::extra_data_dirs`) may hold partitions:
//! `<dir>/db<id>/p<start_ns>/…seg`. A partition lives in one directory: once a directory holds it, new
//! files of that partition go there too (so a compaction merges files of one disk into that disk). A new
//! partition goes to the directory with the most free space (`statvfs` available blocks); directories
//! within [`FREE_SPACE_TIE_PERCENT`] of the best (typically the same filesystem) are a tie, broken by
//! the fewest partitions of that database, then by order. At open every directory is scanned, so a
//! partition is found wherever it is.

use std::path::{Path, PathBuf};

/// Free-space figures closer than this percentage of the largest count as equal.
pub const FREE_SPACE_TIE_PERCENT: u64 = 1;

/// The directories that may hold partitions, the primary first.
#[derive(Clone, Debug)]
pub struct Placement {
    roots: Vec<PathBuf>,
}

impl Placement {
    pub fn new(roots: Vec<PathBuf>) -> Placement {
        assert!(!roots.is_empty(), "at least one data directory");
        Placement { roots }
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The directory of partition `partition_start` of database `db`: where it already is, else the
    /// best directory for a new partition.
    pub fn partition_dir(&self, db: u32, partition_start: i64) -> PathBuf {
        let rel = Path::new(&format!("db{db}")).join(format!("p{partition_start}"));
        if let Some(r) = self.roots.iter().find(|r| r.join(&rel).is_dir()) {
            return r.join(rel);
        }
        if self.roots.len() == 1 {
            return self.roots[0].join(rel);
        }
        let free: Vec<u64> = self.roots.iter().map(|r| free_bytes(r)).collect();
        let partitions: Vec<usize> = self.roots.iter().map(|r| count_partitions(&r.join(format!("db{db}")))).collect();
        self.roots[choose(&free, &partitions)].join(rel)
    }
}

/// Index of the root for a new partition, given each root's free bytes and partition count.
fn choose(free: &[u64], partitions: &[usize]) -> usize {
    let best = free.iter().copied().max().unwrap_or(0);
    let floor = best - best / 100 * FREE_SPACE_TIE_PERCENT;
    (0..free.len()).filter(|i| free[*i] >= floor).min_by_key(|i| (partitions[*i], *i)).unwrap_or(0)
}

fn free_bytes(dir: &Path) -> u64 {
    match rustix::fs::statvfs(dir) {
        Ok(s) => s.f_bavail.saturating_mul(s.f_frsize),
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot read free space; placing partitions elsewhere");
            0
        }
    }
}

fn count_partitions(db_dir: &Path) -> usize {
    std::fs::read_dir(db_dir).map(|rd| rd.filter(|e| e.as_ref().is_ok_and(|e| e.path().is_dir())).count()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_partitions_go_to_the_freest_directory_and_ties_spread_them() {
        assert_eq!(choose(&[100, 5000], &[0, 9]), 1, "far more free space wins");
        assert_eq!(choose(&[10_000, 9_950], &[3, 2]), 1, "within 1%: fewer partitions wins");
        assert_eq!(choose(&[10_000, 9_950], &[2, 2]), 0, "full tie: the first");
        assert_eq!(choose(&[0, 0], &[0, 0]), 0);
    }

    #[test]
    fn an_existing_partition_stays_where_it_is() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::create_dir_all(b.path().join("db1/p5")).unwrap();
        let p = Placement::new(vec![a.path().to_path_buf(), b.path().to_path_buf()]);
        assert_eq!(p.partition_dir(1, 5), b.path().join("db1/p5"));
    }
}
