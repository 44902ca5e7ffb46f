//! Micro benchmark of the engine's write path (catalog resolution, WAL encode + group commit, memtable)
//! with TSBS cpu-only-shaped rows: 10 tags, 10 integer fields, hosts × 10 s steps, 10,000 rows per
//! `Engine::write` call (one HTTP request's worth), `--wal-sync=batch`. Line-protocol parsing is measured
//! by `sundial-lp`'s `lp_bench`; the two add up to the server's CPU per row.
//!
//! Run: `cargo run --release -p sundial-storage --example write_bench [hosts] [steps] [writers]`.

use std::sync::Arc;
use std::time::Instant;

use sundial_storage::engine::WritePoint;
use sundial_storage::types::Value;
use sundial_storage::{Engine, EngineConfig};

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
const TAGS: [&str; 10] =
    ["arch", "datacenter", "hostname", "os", "rack", "region", "service", "service_environment", "service_version", "team"];

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().expect("numbers")).collect();
    let hosts = args.first().copied().unwrap_or(1000);
    let steps = args.get(1).copied().unwrap_or(100);
    let writers = args.get(2).copied().unwrap_or(2) as usize;
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = Arc::new(Engine::open(EngineConfig::new(dir.path())).expect("open"));
    engine.create_database("bench", 0, false).expect("create");

    // Tag values per host, owned once; rows borrow them.
    let tag_values: Vec<Vec<String>> =
        (0..hosts).map(|h| TAGS.iter().enumerate().map(|(i, t)| if *t == "hostname" { format!("host_{h}") } else { format!("v{}", (h * 7 + i as u64) % 17) }).collect()).collect();
    let rows = hosts * steps;
    let batches: Vec<Vec<(u64, i64)>> = {
        let all: Vec<(u64, i64)> = (0..steps).flat_map(|s| (0..hosts).map(move |h| (h, 1_451_606_400_000_000_000 + s as i64 * 10_000_000_000))).collect();
        all.chunks(10_000).map(<[_]>::to_vec).collect()
    };
    let start = Instant::now();
    std::thread::scope(|scope| {
        for w in 0..writers {
            let (engine, tag_values, batches) = (&engine, &tag_values, &batches);
            scope.spawn(move || {
                for batch in batches.iter().skip(w).step_by(writers) {
                    let points: Vec<WritePoint> = batch
                        .iter()
                        .map(|(h, ts)| WritePoint {
                            line: 1,
                            table: "cpu",
                            key: None,
                            known: None,
                            tags: TAGS.iter().zip(&tag_values[*h as usize]).map(|(k, v)| (*k, v.as_str())).collect::<Vec<_>>().into(),
                            fields: FIELDS.iter().enumerate().map(|(i, f)| (*f, Value::Integer((*ts / 10_000_000_000 * 3 + i as i64) % 100))).collect::<Vec<_>>().into(),
                            ts: *ts,
                        })
                        .collect();
                    engine.write("bench", &points).expect("write");
                }
            });
        }
    });
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{rows} rows ({hosts} hosts x {steps} steps), {writers} writers: {:.0} rows/s, {:.2} us/row (wall, {} batches)",
        rows as f64 / secs,
        secs * 1e6 / rows as f64,
        batches.len()
    );
}
