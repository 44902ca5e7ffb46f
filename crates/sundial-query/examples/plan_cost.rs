//! Where the fixed cost of a small query goes: DataFusion session creation vs planning + execution of a
//! TSBS single-groupby-1-1-1-shaped statement (1 series, 1 h, 360 rows, max per minute).
//!
//! Run: `cargo run --release -p sundial-query --example plan_cost`.

use std::sync::Arc;
use std::time::Instant;

use sundial_storage::engine::WritePoint;
use sundial_storage::types::Value;
use sundial_storage::{Engine, EngineConfig};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = Arc::new(Engine::open(EngineConfig::new(dir.path())).expect("open"));
    engine.create_database("db", 0, false).expect("create");
    let points: Vec<WritePoint> = (0..8640i64)
        .map(|i| WritePoint { line: 1, table: "cpu", key: None, known: None, tags: vec![("hostname", "host_1")].into(), fields: vec![("usage_user", Value::Integer(i % 100))].into(), ts: i * 10_000_000_000 })
        .collect();
    engine.write("db", &points).expect("write");
    engine.flush().expect("flush");
    let qe = sundial_query::QueryEngine::new(engine.clone());
    let sql = "SELECT (CAST(\"time\" AS BIGINT) - (((CAST(\"time\" AS BIGINT) - 0) % 60000000000) + 60000000000) % 60000000000) AS b, \
               count(*) AS n, max(\"usage_user\") AS m FROM \"cpu\" WHERE \"time\" >= to_timestamp_nanos(3600000000000) \
               AND \"time\" <= to_timestamp_nanos(7199999999999) AND \"hostname\" = 'host_1' GROUP BY 1";
    let n = 300;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(qe.session(Some("db")));
    }
    let session_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(qe.sql(Some("db"), sql).await.expect("query"));
    }
    let total_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    let ctx = qe.session(Some("db"));
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(ctx.sql(sql).await.expect("plan").into_optimized_plan().expect("optimize"));
    }
    let plan_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!("session creation {session_us:.0} us; logical plan + optimize {plan_us:.0} us; whole statement {total_us:.0} us (mean of {n})");
}
