//! Bytes on disk per stored value for TSBS `cpu-only`-shaped data written through the [`Engine`]:
//! everything included (segment files with their block indexes and statistics, catalog log, WAL).
//!
//! ```text
//! cargo run -p sundial-storage --example tsbs_disk --profile storage-bench -- [hosts] [days] [memtable MiB]
//! ```
//!
//! Defaults: 100 hosts × 3 days (TSBS `--scale 100`, 10 s interval): 2,592,000 rows, 25,920,000 values.
//! Each host has TSBS's 10 tags and 10 integer fields doing TSBS's clamped random walk (0–100, N(0,1)
//! steps, truncated), rows exactly 10 s apart. Rows are written in time order, one batch per 10 minutes
//! of all hosts, with a memtable of `memtable MiB` (default 256, the server's default; smaller values
//! make many small flushes that background compaction must merge) and background compaction, then a
//! final flush and `compact_now`.

use std::time::Instant;

use sundial_storage::engine::WritePoint;
use sundial_storage::segment::Segment;
use sundial_storage::types::Value;
use sundial_storage::{Engine, EngineConfig};
use support::Rng;

mod support;

const TEN_S: i64 = 10_000_000_000;
const T0: i64 = 1_451_606_400_000_000_000; // 2016-01-01T00:00:00Z, TSBS's default start
const FIELDS: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];

/// TSBS's 10 tags for host `i`.
fn tags(i: usize, rng: &mut Rng) -> Vec<(String, String)> {
    let pick = |rng: &mut Rng, n: u64| rng.next() % n;
    let regions = ["us-east-1", "us-west-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-1", "ap-southeast-2", "ap-northeast-1", "sa-east-1"];
    let region = regions[pick(rng, regions.len() as u64) as usize];
    vec![
        ("hostname".into(), format!("host_{i}")),
        ("region".into(), region.into()),
        ("datacenter".into(), format!("{region}{}", ["a", "b", "c"][pick(rng, 3) as usize])),
        ("rack".into(), pick(rng, 100).to_string()),
        ("os".into(), ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"][pick(rng, 3) as usize].into()),
        ("arch".into(), ["x64", "x86"][pick(rng, 2) as usize].into()),
        ("team".into(), ["SF", "NYC", "LON", "CHI"][pick(rng, 4) as usize].into()),
        ("service".into(), pick(rng, 20).to_string()),
        ("service_version".into(), pick(rng, 2).to_string()),
        ("service_environment".into(), ["production", "staging", "test"][pick(rng, 3) as usize].into()),
    ]
}

/// User + system CPU seconds of this process so far (Linux `/proc/self/stat`, 100 ticks per second).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    // After the command name: field 3 is the state (a letter), then ppid (4) … utime (14), stime (15).
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    (tick(11) + tick(12)) as f64 / 100.0
}

/// Milliseconds to read the last day of `usage_user` of every host (the query-latency probe).
fn read_last_day(engine: &Engine, now: i64) -> f64 {
    let start = Instant::now();
    let (db, table, col, n) = {
        let cat = engine.catalog();
        let d = cat.db("benchmark").expect("db");
        let t = d.table("cpu").expect("table");
        (d.id, t.id, t.column("usage_user").expect("column").id, t.series_count() as u32)
    };
    let series: Vec<u32> = (0..n).collect();
    let cols = [(col, sundial_storage::types::FieldType::Integer)];
    let snap = engine.snapshot(db, table, &series, now - 8640 * TEN_S, now, &cols);
    let mut total = 0usize;
    for s in &series {
        total += snap.read_series(*s).expect("read").map_or(0, |r| r.len());
    }
    assert!(total > 0);
    start.elapsed().as_secs_f64() * 1000.0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let hosts: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100);
    let days: i64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let memtable_mib: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(256);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = EngineConfig::new(dir.path());
    config.wal_sync = sundial_storage::wal::SyncPolicy::Interval(std::time::Duration::from_millis(1000));
    config.memtable_bytes_max = memtable_mib << 20;
    let engine = Engine::open(config).expect("open");
    engine.create_database("benchmark", 0, false).expect("create db");

    let mut rng = Rng(42);
    let host_tags: Vec<Vec<(String, String)>> = (0..hosts).map(|i| tags(i, &mut rng)).collect();
    let mut state: Vec<[f64; 10]> = (0..hosts).map(|_| std::array::from_fn(|_| rng.uniform() * 100.0)).collect();
    let steps = days * 8640;
    let batch_steps = 60; // 10 minutes
    let started = Instant::now();
    let mut rows = 0u64;
    let mut step = 0;
    let mut tenth = (Instant::now(), 0u64, 1i64, cpu_seconds());
    // rows/cpu-s counts every thread of the process (ingest, WAL, flush, compaction): on a shared
    // machine it is steadier than rows/s, and it shows whether compaction work per row grows.
    println!("tenth  rows/s  rows/cpu-s  segment-files  read-1-day-all-hosts-ms");
    while step < steps {
        let mut points = Vec::with_capacity(hosts * batch_steps as usize);
        for s in step..(step + batch_steps).min(steps) {
            for (h, st) in state.iter_mut().enumerate() {
                let fields: Vec<_> = FIELDS
                    .iter()
                    .zip(st.iter_mut())
                    .map(|(name, x)| {
                        *x = (*x + rng.normal()).clamp(0.0, 100.0);
                        (*name, Value::Integer(*x as i64))
                    })
                    .collect();
                let tags: Vec<_> = host_tags[h].iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                points.push(WritePoint { line: 1, table: "cpu", key: None, known: None, tags: tags.into(), fields: fields.into(), ts: T0 + s * TEN_S });
            }
        }
        let out = engine.write("benchmark", &points).expect("write");
        assert!(out.rejected.is_empty());
        rows += out.rows_written as u64;
        step += batch_steps;
        if step >= steps * tenth.2 / 10 {
            let rate = (rows - tenth.1) as f64 / tenth.0.elapsed().as_secs_f64();
            let cpu_rate = (rows - tenth.1) as f64 / (cpu_seconds() - tenth.3).max(1e-9);
            let read_ms = read_last_day(&engine, T0 + step * TEN_S);
            println!("{:>5}  {rate:>6.0}  {cpu_rate:>10.0}  {:>13}  {read_ms:>23.1}", tenth.2, engine.disk_usage().1);
            tenth = (Instant::now(), rows, tenth.2 + 1, cpu_seconds());
        }
    }
    let ingest_s = started.elapsed().as_secs_f64();
    engine.flush().expect("flush");
    let c = Instant::now();
    let report = engine.compact_now().expect("compact");
    let compact_s = c.elapsed().as_secs_f64();
    drop(engine);

    let values = rows * FIELDS.len() as u64;
    let mut total = 0u64;
    let (mut seg_bytes, mut ts_bytes, mut col_bytes, mut files) = (0u64, 0u64, 0u64, 0);
    let mut stack = vec![dir.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let len = std::fs::metadata(&p).expect("stat").len();
            total += len;
            if p.extension().is_some_and(|x| x == "seg") {
                let s = Segment::open(&p).expect("segment");
                files += 1;
                seg_bytes += len;
                // The blocks of a pack share its chunks: count each chunk once.
                let mut seen = std::collections::HashSet::new();
                s.for_each_block(|b| {
                    if seen.insert(b.ts_chunk.offset) {
                        ts_bytes += u64::from(b.ts_chunk.len);
                    }
                    col_bytes += b.cols.iter().filter(|c| seen.insert(c.chunk.offset)).map(|c| u64::from(c.chunk.len)).sum::<u64>();
                })
                .expect("block index");
            }
        }
    }
    let per = |b: u64| b as f64 / values as f64;
    println!("hosts={hosts} days={days} memtable={memtable_mib}MiB rows={rows} values={values}");
    println!("ingest {ingest_s:.1} s ({:.0} rows/s, one thread, WAL interval:1000ms); compaction {compact_s:.1} s: {report:?}", rows as f64 / ingest_s);
    println!("segment files: {files}");
    println!("data dir total: {total} bytes = {:.4} bytes/value", per(total));
    println!("  field value chunks: {col_bytes} bytes = {:.4} bytes/value", per(col_bytes));
    println!("  timestamp chunks:   {ts_bytes} bytes = {:.4} bytes/value", per(ts_bytes));
    let index = seg_bytes - col_bytes - ts_bytes;
    println!("  block index, statistics, headers: {index} bytes = {:.4} bytes/value", per(index));
    println!("  catalog log, WAL, other: {} bytes = {:.4} bytes/value", total - seg_bytes, per(total - seg_bytes));
}
