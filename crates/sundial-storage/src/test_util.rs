//! Helpers shared by the crate's unit tests.

use std::path::{Path, PathBuf};

/// Every file under `dir`, sorted.
pub(crate) fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out.sort();
    out
}
