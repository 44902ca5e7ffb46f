//! Bytes of `catalog.log` per series for TSBS-like tag sets, one `AddSeries` record per series (kind
//! 6, what the log held before series batches) against series batches (kind 10).
//!
//! ```text
//! cargo run -p sundial-storage --example catalog_size [-- series]
//! ```
//!
//! Default 1,000,000 series (TSBS scenario 4): `hostname` = `host_<i>`, the other nine tags drawn with a
//! fixed seed from TSBS's value sets. Both sizes include the record framing (8 bytes a record) and the
//! 16-byte header. Also timed: encoding the batched log in memory (`catalog_log::encode_log`, the best of
//! nine), writing it through `CatalogLog::append` (as a flush would) and replaying it with
//! `CatalogLog::open_with`.

use std::time::Instant;

use sundial_storage::catalog::{CatalogEntry, ColumnKind};
use sundial_storage::catalog_log::{self, CatalogLog};
use sundial_storage::frame;
use support::Rng;

mod support;

const TAGS: [&str; 10] = [
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
];

/// TSBS's tag values for host `i` (as `tsbs_disk.rs` writes them), by column id.
fn tags(i: usize, rng: &mut Rng) -> Vec<(u16, String)> {
    let mut pick = |n: usize| (rng.next() % n as u64) as usize;
    let regions = ["us-east-1", "us-west-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-1", "ap-southeast-2", "ap-northeast-1", "sa-east-1"];
    let region = regions[pick(regions.len())];
    let values = [
        format!("host_{i}"),
        region.to_string(),
        format!("{region}{}", ["a", "b", "c"][pick(3)]),
        pick(100).to_string(),
        ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"][pick(3)].to_string(),
        ["x64", "x86"][pick(2)].to_string(),
        ["SF", "NYC", "LON", "CHI"][pick(4)].to_string(),
        pick(20).to_string(),
        pick(2).to_string(),
        ["production", "staging", "test"][pick(3)].to_string(),
    ];
    values.into_iter().enumerate().map(|(c, v)| (c as u16, v)).collect()
}

fn main() {
    let n: usize = std::env::args().nth(1).map_or(1_000_000, |a| a.parse().expect("series count"));
    let mut rng = Rng(42);
    let mut entries = vec![
        CatalogEntry::CreateDb { db: 0, name: "benchmark".into(), retention_ns: 0 },
        CatalogEntry::CreateTable { db: 0, table: 0, name: "cpu".into() },
    ];
    entries.extend(TAGS.iter().enumerate().map(|(c, name)| CatalogEntry::AddColumn {
        db: 0,
        table: 0,
        col: c as u16,
        name: (*name).into(),
        kind: ColumnKind::Tag,
    }));
    entries.extend((0..n).map(|i| CatalogEntry::AddSeries { db: 0, table: 0, series: i as u32, tags: tags(i, &mut rng).into() }));

    let mut payload = Vec::new();
    let start = Instant::now();
    let per_series: usize = frame::HEADER_BYTES
        + entries
            .iter()
            .map(|e| {
                payload.clear();
                catalog_log::encode_entry(&mut payload, e);
                frame::RECORD_OVERHEAD_BYTES + payload.len()
            })
            .sum::<usize>();
    let per_series_s = start.elapsed().as_secs_f64();
    // The best of nine: one run moves by a fifth on a shared machine.
    let (mut encoded, mut batched_s) = (0, f64::MAX);
    for _ in 0..9 {
        let start = Instant::now();
        encoded = catalog_log::encode_log(&entries).expect("encode").len();
        batched_s = batched_s.min(start.elapsed().as_secs_f64());
    }

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("catalog.log");
    let (mut log, _) = CatalogLog::open(&path).expect("open");
    let start = Instant::now();
    log.append(&entries).expect("append");
    let append_s = start.elapsed().as_secs_f64();
    let batched = std::fs::metadata(&path).expect("size").len() as usize;
    assert_eq!(batched, encoded);
    drop(log);
    let start = Instant::now();
    let mut replayed = 0usize;
    CatalogLog::open_with(&path, |_| {
        replayed += 1;
        Ok(())
    })
    .expect("replay");
    let replay_s = start.elapsed().as_secs_f64();
    assert_eq!(replayed, entries.len());

    println!("series: {n}");
    println!("per-series records (kind 6): {per_series} bytes, {:.1} bytes/series", per_series as f64 / n as f64);
    println!("series batches (kind 10):    {batched} bytes, {:.2} bytes/series", batched as f64 / n as f64);
    println!("ratio: {:.1}x smaller", per_series as f64 / batched as f64);
    println!("encode in memory: per-series records {per_series_s:.2} s, batches {batched_s:.3} s (best of 9)");
    println!("append (encode + write + fsync): {append_s:.2} s; replay (decode, no catalog apply): {replay_s:.2} s");
}
