//! Model-based test of the engine: a `BTreeMap<(series, ts), row>` reference receives the same random
//! operations (write, flush, compact, delete, drop series, retention, catalog.log rewrite, reopen) as the
//! engine, and every read is compared with it. Each run prints its seed; `SUNDIAL_MODEL_SEED=<n>` replays one seed and
//! `SUNDIAL_MODEL_SEEDS=<n>` runs more of them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicI64;

use super::*;

const HOSTS: [&str; 4] = ["h0", "h1", "h2", "h3"];
const PARTITION_NS: i64 = 1000;
const TS_SPAN: i64 = 5 * PARTITION_NS;

/// xorshift64*: deterministic, dependency-free (also drives `tests.rs`'s concurrent writers).
pub(super) struct Rng(pub(super) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

type Row = BTreeMap<&'static str, Value>;

thread_local! {
    /// Blocks `scan_blocks_where` refused in this test's runs: the pruning check must prune something.
    static PRUNED_BLOCKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

thread_local! {
    /// Pieces of several series of a pack the scans handed out: the path must be taken.
    static PACK_PIECES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The parts scans in parts took (`scan_on`), summed.
    static SCAN_PARTS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Exact summaries given (each compared with the model).
    static SUMMARIES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[derive(Default)]
struct Model {
    rows: BTreeMap<(&'static str, i64), Row>,
    /// Rows older than this are not served (retention).
    cutoff: i64,
}

struct Harness {
    dir: tempfile::TempDir,
    /// A second data directory (some runs), so partitions spread over two.
    extra_dir: Option<tempfile::TempDir>,
    now: Arc<AtomicI64>,
    compaction_threads: usize,
    engine: Option<Engine>,
    model: Model,
    retention_ns: i64,
    log: Vec<String>,
    compacted: CompactionReport,
    /// Writes after which the active memtable held staged (late or duplicate) rows: the run must
    /// exercise the staging area's merge, not only the in-order fast path.
    staged_writes: usize,
}

impl Harness {
    fn config(&self) -> EngineConfig {
        let mut c = EngineConfig::new(self.dir.path());
        c.partition_ns = PARTITION_NS;
        c.memtable_bytes_max = 3000;
        c.compaction_threads = self.compaction_threads;
        c.clock = Clock::manual(self.now.clone());
        c.extra_data_dirs = self.extra_dir.iter().map(|d| d.path().to_path_buf()).collect();
        // No size floor: catalog.log is rewritten whenever half of it is dead (at open, after
        // compaction, from the flush thread), so the rewrite meets every state the ops create.
        c.catalog_log_rewrite_bytes_min = 0;
        // No block-index cache in the runs with background compaction: every read then decodes the
        // groups it meets, and the scans and summaries that do not resolve packs meet unresolved ones.
        if self.compaction_threads > 0 {
            c.block_index_cache_bytes = 0;
        }
        c
    }

    fn e(&self) -> &Engine {
        self.engine.as_ref().expect("engine open")
    }

    fn write(&mut self, rng: &mut Rng) {
        let n = 1 + rng.below(20);
        let base = rng.below(TS_SPAN as u64) as i64;
        let mut points = Vec::new();
        for _ in 0..n {
            let host = HOSTS[rng.below(HOSTS.len() as u64) as usize];
            // Mostly in order from `base`, sometimes anywhere (late rows), sometimes a repeat.
            let ts = if rng.chance(80) { (base + rng.below(200) as i64) % TS_SPAN } else { rng.below(TS_SPAN as u64) as i64 };
            let mut fields: Vec<(&str, Value)> = Vec::new();
            let which = 1 + rng.below(3);
            if which & 1 != 0 {
                fields.push(("a", Value::Integer(rng.below(1000) as i64 - 500)));
            }
            if which & 2 != 0 {
                fields.push(("b", Value::Float(rng.below(1000) as f64 / 8.0)));
            }
            points.push((host, ts, fields));
        }
        let wp: Vec<WritePoint<'_>> = points
            .iter()
            .map(|(h, ts, f)| WritePoint { line: 1, table: "cpu", key: None, known: None, tags: vec![("host", *h)].into(), fields: f.clone().into(), ts: *ts })
            .collect();
        let out = self.e().write("db", &wp).unwrap();
        let old = points.iter().filter(|p| p.1 < self.model.cutoff).count();
        assert_eq!(out.rows_written, points.len() - old, "rows older than the retention are refused");
        assert_eq!(out.rejected.len(), old);
        assert!(out.rejected.iter().all(|(_, e)| matches!(e, Error::BeyondRetention { .. })));
        for (h, ts, fields) in points {
            if ts < self.model.cutoff {
                continue;
            }
            let row = self.model.rows.entry((h, ts)).or_default();
            for (k, v) in fields {
                row.insert(if k == "a" { "a" } else { "b" }, v);
            }
        }
        let staged = self.e().inner.mem.read().active.tables.values().any(|t| t.series.values().any(|b| b.staged().is_some()));
        self.staged_writes += usize::from(staged);
        self.log.push(format!("write {n} rows from {base}"));
    }

    fn series_of(&self, hosts: &[&str]) -> Vec<SeriesId> {
        let cat = self.e().catalog();
        let Some(t) = cat.db("db").and_then(|d| d.table("cpu")) else { return vec![] };
        let host_col = t.column("host").unwrap().id;
        (0..t.series_count() as SeriesId)
            .filter(|s| t.series_tag_value(*s, host_col).is_some_and(|v| hosts.contains(&v)))
            .collect()
    }

    fn delete(&mut self, rng: &mut Rng, whole_series: bool) {
        let hosts: Option<Vec<&'static str>> = if !whole_series && rng.chance(30) {
            None
        } else {
            Some((0..1 + rng.below(2)).map(|_| HOSTS[rng.below(HOSTS.len() as u64) as usize]).collect())
        };
        let (lo, hi) = if whole_series {
            (i64::MIN, i64::MAX)
        } else {
            let a = rng.below(TS_SPAN as u64) as i64;
            (a, a + rng.below(1500) as i64)
        };
        let ids = hosts.as_ref().map(|h| self.series_of(h));
        self.e().delete("db", "cpu", ids.as_deref(), lo, hi).unwrap();
        self.model.rows.retain(|(h, ts), _| !(*ts >= lo && *ts <= hi && hosts.as_ref().is_none_or(|hs| hs.contains(h))));
        self.log.push(format!("delete {hosts:?} [{lo}, {hi}]"));
    }

    fn advance_clock(&mut self, rng: &mut Rng) {
        let now = self.now.load(Ordering::SeqCst) + rng.below(800) as i64;
        self.now.store(now, Ordering::SeqCst);
        if self.retention_ns == 0 {
            self.retention_ns = 4 * PARTITION_NS;
            self.e().set_retention("db", self.retention_ns).unwrap();
        }
        self.model.cutoff = now - self.retention_ns;
        let cutoff = self.model.cutoff;
        self.model.rows.retain(|(_, ts), _| *ts >= cutoff);
        if rng.chance(50) {
            self.e().enforce_retention_now().unwrap();
        }
        self.log.push(format!("clock {now}, cutoff {cutoff}"));
    }

    fn compact(&mut self) {
        let r = self.e().compact_now().unwrap();
        self.compacted.jobs += r.jobs;
        self.compacted.rows_deleted += r.rows_deleted;
    }

    fn reopen(&mut self) {
        self.engine = None;
        self.engine = Some(Engine::open(self.config()).unwrap());
        self.log.push("reopen".into());
    }

    fn read_engine(&self) -> BTreeMap<(&'static str, i64), Row> {
        let e = self.e();
        let (db, table, host_col, cols, n) = {
            let cat = e.catalog();
            let d = cat.db("db").unwrap();
            let Some(t) = d.table("cpu") else { return BTreeMap::new() };
            let cols: Vec<(&'static str, ColId, FieldType)> = [("a", FieldType::Integer), ("b", FieldType::Float)]
                .iter()
                .filter_map(|(name, ty)| t.column(name).map(|c| (*name, c.id, *ty)))
                .collect();
            (d.id, t.id, t.column("host").unwrap().id, cols, t.series_count() as SeriesId)
        };
        let series: Vec<SeriesId> = (0..n).collect();
        let col_ids: Vec<(ColId, FieldType)> = cols.iter().map(|c| (c.1, c.2)).collect();
        let snap = e.snapshot(db, table, &series, i64::MIN, i64::MAX, &col_ids);
        let mut out = BTreeMap::new();
        for s in snap.series().unwrap() {
            let host = {
                let cat = e.catalog();
                let v = cat.db("db").unwrap().table("cpu").unwrap().series_tag_value(s, host_col).unwrap().to_string();
                *HOSTS.iter().find(|h| **h == v).unwrap()
            };
            let Some(rows) = snap.read_series(s).unwrap() else { continue };
            rows.check().unwrap();
            for (i, ts) in rows.ts.iter().enumerate() {
                let mut row = Row::new();
                for (ci, (name, _, _)) in cols.iter().enumerate() {
                    if let Some(v) = rows.cols[ci].as_ref().and_then(|c| c.get(i)) {
                        row.insert(name, v);
                    }
                }
                assert!(!row.is_empty(), "a row without values at {host} {ts}");
                out.insert((host, *ts), row);
            }
        }
        out
    }

    /// The tail and summary read paths agree with the model too (they skip rows differently).
    fn check_tail_and_summary(&self, step: usize, seed: u64) {
        let e = self.e();
        let Some((db, table, host_col, cols, n)) = ({
            let cat = e.catalog();
            let d = cat.db("db").unwrap();
            d.table("cpu").map(|t| {
                let cols: Vec<(&'static str, ColId, FieldType)> = [("a", FieldType::Integer), ("b", FieldType::Float)]
                    .iter()
                    .filter_map(|(name, ty)| t.column(name).map(|c| (*name, c.id, *ty)))
                    .collect();
                (d.id, t.id, t.column("host").unwrap().id, cols, t.series_count() as SeriesId)
            })
        }) else {
            return;
        };
        let series: Vec<SeriesId> = (0..n).collect();
        let col_ids: Vec<(ColId, FieldType)> = cols.iter().map(|c| (c.1, c.2)).collect();
        let host_of = |s: SeriesId| {
            let cat = e.catalog();
            let v = cat.db("db").unwrap().table("cpu").unwrap().series_tag_value(s, host_col).unwrap().to_string();
            *HOSTS.iter().find(|h| **h == v).unwrap()
        };
        // First (before the tail reads cache block-index groups): the scan hands out the same rows, series ascending, each series' runs in time order.
        // Caching the block-index groups it decodes (resolved packed blocks) and not (their packs' ranges).
        // And with the series of a pack handed out together (`scan_folds`), each member's rows then
        // taken as a piece of its own; and in parts (`scan_on`, packs together too), stopped after one to
        // three pieces.
        let ranges = [(i64::MIN, i64::MAX, true), (i64::MIN, i64::MAX, false), (TS_SPAN / 3, 2 * TS_SPAN / 3, false)];
        for (lo, hi, cache_groups, packs, parts) in
            ranges.into_iter().flat_map(|(lo, hi, c)| [(lo, hi, c, false, false), (lo, hi, c, true, false), (lo, hi, c, false, true)])
        {
            let snap = e.snapshot(db, table, &series, lo, hi, &col_ids);
            let mut got: BTreeMap<(&'static str, i64), Row> = BTreeMap::new();
            let mut prev: Option<(SeriesId, i64)> = None;
            let mut each = |r: RowsRef<'_>| {
                assert!(!r.ts.is_empty() && r.n_cols() == cols.len());
                assert!(prev.is_none_or(|(ps, pt)| ps < r.series || (ps == r.series && pt < r.ts[0])), "seed {seed} step {step}: scan order");
                prev = Some((r.series, r.ts[r.ts.len() - 1]));
                let host = host_of(r.series);
                for (i, ts) in r.ts.iter().enumerate() {
                    let mut row = Row::new();
                    for (ci, (name, _, _)) in cols.iter().enumerate() {
                        if let Some(v) = r.col(ci).and_then(|c| c.get(r.offset + i)) {
                            row.insert(name, v);
                        }
                    }
                    assert!(got.insert((host, *ts), row).is_none(), "seed {seed} step {step}: {host} {ts} handed out twice");
                }
            };
            let mut at = ScanCursor::default();
            let mut handed = 0usize;
            let mut on = |p: Piece<'_>| match p {
                Piece::Rows(r) => {
                    each(r);
                    handed += 1;
                    // In parts: a stop after one to three pieces (of the series after the one in).
                    !parts || handed % (1 + (seed as usize + step + handed / 4) % 3) != 0
                }
                Piece::Hours(_) => unreachable!("no hour statistics without `accept`"),
                Piece::Pack(p) => {
                    assert!((packs || parts) && p.members.len() > 1, "seed {seed} step {step}: a pack piece of {} series", p.members.len());
                    assert_eq!(p.members[0].1.start, 0);
                    assert_eq!(p.members.last().unwrap().1.end, p.rows.ts.len());
                    assert!(p.members.windows(2).all(|w| w[0].1.end == w[1].1.start), "seed {seed} step {step}: members adjoin");
                    for (m, rows) in p.members {
                        each(p.rows.slice(*m, rows.clone()));
                    }
                    PACK_PIECES.with(|n| n.set(n.get() + 1));
                    handed += 1;
                    !parts || handed % 2 != 0
                }
            };
            if parts {
                let mut calls = 0;
                while at.next < series.len() {
                    snap.scan_pieces(&series, cache_groups, Some(&mut at), |_, _| true, None, None, true, &mut on).unwrap();
                    calls += 1;
                    assert!(calls <= series.len() + 1, "seed {seed} step {step}: a part that read no series");
                }
                SCAN_PARTS.with(|n| n.set(n.get() + calls));
            } else {
                snap.scan_pieces(&series, cache_groups, None, |_, _| true, None, None, packs, &mut on).unwrap();
            }
            // A packed block's pack columns may be all null in its rows: such rows are not rows.
            got.retain(|_, row| !row.is_empty());
            let want: BTreeMap<_, _> = self.model.rows.iter().filter(|((_, t), _)| lo <= *t && *t <= hi).map(|(k, v)| (*k, v.clone())).collect();
            assert_eq!(got, want, "seed {seed} step {step}: scan of [{lo}, {hi}]; last ops {:#?}", self.log.iter().rev().take(8).collect::<Vec<_>>());
        }
        // Blocks refused from their statistics (`a >= threshold` impossible: no `a`, or its maximum
        // below) hold no row meeting it: the scan without them finds every such row of the model.
        if let Some(a) = cols.iter().position(|c| c.0 == "a") {
            let a_col = cols[a].1;
            for threshold in [-400i64, 0, 450] {
                let snap = e.snapshot(db, table, &series, i64::MIN, i64::MAX, &col_ids);
                let may_meet = |b: &BlockMeta| b.col(a_col).is_some_and(|m| m.stats.count > 0 && m.stats.max as i64 >= threshold);
                let (mut offered, mut refused) = (0, 0);
                let mut got: BTreeMap<(&'static str, i64), Value> = BTreeMap::new();
                snap.scan_blocks_where(
                    &series,
                    |_, b| {
                        offered += 1;
                        refused += usize::from(!may_meet(b));
                        may_meet(b)
                    },
                    None,
                    |r| {
                        let host = host_of(r.series);
                        for (i, ts) in r.ts.iter().enumerate() {
                            if let Some(v @ Value::Integer(x)) = r.col(a).and_then(|c| c.get(r.offset + i)) {
                                if x >= threshold {
                                    got.insert((host, *ts), v);
                                }
                            }
                        }
                    },
                )
                .unwrap();
                let want: BTreeMap<_, _> = self
                    .model
                    .rows
                    .iter()
                    .filter_map(|(k, row)| match row.get("a") {
                        Some(v @ Value::Integer(x)) if *x >= threshold => Some((*k, v.clone())),
                        _ => None,
                    })
                    .collect();
                assert_eq!(got, want, "seed {seed} step {step}: a >= {threshold} with {refused} of {offered} blocks refused");
                PRUNED_BLOCKS.with(|p| p.set(p.get() + refused));
            }
        }
        for k in [1usize, 3] {
            let tail = e.snapshot_tail(db, table, &series, i64::MIN, i64::MAX, &col_ids, k);
            for s in &series {
                let host = host_of(*s);
                let all: Vec<i64> = self.model.rows.keys().filter(|(h, _)| *h == host).map(|(_, ts)| *ts).collect();
                let want = all[all.len().saturating_sub(k)..].to_vec();
                let got = tail.read_series(*s).unwrap().map(|r| r.ts).unwrap_or_default();
                assert_eq!(got, want, "seed {seed} step {step}: tail of {k} rows of {host}; last ops {:#?}", self.log.iter().rev().take(8).collect::<Vec<_>>());
            }
        }
        // Summaries over the whole range and a cut one, with the block-index groups cached (packs
        // resolved) and not; when one is given, it is exact.
        for (lo, hi, cache) in [(i64::MIN, i64::MAX), (TS_SPAN / 3, 2 * TS_SPAN / 3)].into_iter().flat_map(|(lo, hi)| [(lo, hi, false), (lo, hi, true)]) {
            let Some(sum) = e.summarize_with(db, table, &series, lo, hi, &col_ids, cache) else { continue };
            let rows: Vec<&Row> = self.model.rows.iter().filter(|((_, t), _)| lo <= *t && *t <= hi).map(|(_, r)| r).collect();
            SUMMARIES.with(|n| n.set(n.get() + 1));
            assert_eq!(sum.rows, rows.len() as u64, "seed {seed} step {step}: summary row count of [{lo}, {hi}], cache {cache}");
            for (i, (name, _, _)) in cols.iter().enumerate() {
                let vals: Vec<&Value> = rows.iter().filter_map(|r| r.get(name)).collect();
                assert_eq!(sum.cols[i].count, vals.len() as u64, "seed {seed} step {step}: summary count of {name}");
                let order = |a: &&Value, b: &&Value| match (a, b) {
                    (Value::Integer(x), Value::Integer(y)) => x.cmp(y),
                    (Value::Float(x), Value::Float(y)) => x.total_cmp(y),
                    _ => panic!("{name} holds {a:?} and {b:?}"),
                };
                let (min, max) = (vals.iter().copied().min_by(order).cloned(), vals.iter().copied().max_by(order).cloned());
                assert_eq!((&sum.cols[i].min, &sum.cols[i].max), (&min, &max), "seed {seed} step {step}: summary min and max of {name} in [{lo}, {hi}]");
            }
        }
    }

    fn check(&self, step: usize, seed: u64) {
        self.check_tail_and_summary(step, seed);
        let got = self.read_engine();
        if got != self.model.rows {
            let missing: Vec<_> = self.model.rows.iter().filter(|(k, v)| got.get(*k) != Some(*v)).take(5).collect();
            let extra: Vec<_> = got.iter().filter(|(k, v)| self.model.rows.get(*k) != Some(*v)).take(5).collect();
            let tail: Vec<_> = self.log.iter().rev().take(12).rev().collect();
            panic!(
                "seed {seed} step {step}: engine and model differ\n expected but not read: {missing:?}\n read but not expected: {extra:?}\n last ops: {tail:#?}"
            );
        }
    }
}

fn run(seed: u64, steps: usize, compaction_threads: usize) {
    eprintln!("model test: seed {seed}, {steps} steps, compaction_threads {compaction_threads} (replay: SUNDIAL_MODEL_SEED={seed}); two data directories when compaction_threads > 0");
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut h = Harness {
        dir: tempfile::tempdir().unwrap(),
        extra_dir: (compaction_threads > 0).then(|| tempfile::tempdir().unwrap()),
        now: Arc::new(AtomicI64::new(0)),
        compaction_threads,
        engine: None,
        model: Model { cutoff: i64::MIN, ..Model::default() },
        retention_ns: 0,
        log: Vec::new(),
        compacted: CompactionReport::default(),
        staged_writes: 0,
    };
    h.engine = Some(Engine::open(h.config()).unwrap());
    h.e().create_database("db", 0, false).unwrap();
    for step in 0..steps {
        match rng.below(100) {
            0..45 => h.write(&mut rng),
            45..57 => {
                h.e().flush().unwrap();
                h.log.push("flush".into());
            }
            57..69 => {
                h.compact();
                h.log.push("compact".into());
            }
            69..80 => h.delete(&mut rng, false),
            80..83 => h.delete(&mut rng, true),
            83..90 => h.reopen(),
            90..91 => {
                h.e().rewrite_catalog_log_now().unwrap();
                h.log.push("rewrite catalog.log".into());
            }
            91..94 => h.advance_clock(&mut rng),
            _ => {
                h.e().flush().unwrap();
                h.compact();
                h.log.push("flush+compact".into());
            }
        }
        h.check(step, seed);
    }
    h.e().flush().unwrap();
    h.compact();
    h.check(steps, seed);
    h.reopen();
    h.check(steps + 1, seed);
    // The run must have exercised what it claims to test.
    let ops = |p: &str| h.log.iter().filter(|l| l.starts_with(p)).count();
    assert!(ops("delete") > 10 && ops("reopen") > 5 && ops("clock") > 0, "seed {seed}: too few ops");
    assert!(h.staged_writes > 20, "seed {seed}: only {} writes left staged late rows", h.staged_writes);
    if compaction_threads == 0 {
        assert!(h.compacted.jobs > 5 && h.compacted.rows_deleted > 0, "seed {seed}: {:?}", h.compacted);
    }
}

fn seeds() -> Vec<u64> {
    if let Some(s) = std::env::var("SUNDIAL_MODEL_SEED").ok().and_then(|s| s.parse().ok()) {
        return vec![s];
    }
    let n: u64 = std::env::var("SUNDIAL_MODEL_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(6);
    (1..=n).collect()
}

#[test]
fn model_random_ops_match_reference_with_synchronous_compaction() {
    for seed in seeds() {
        run(seed, 400, 0);
    }
    assert!(seeds().len() < 3 || PRUNED_BLOCKS.with(|p| p.get()) > 0, "no block was refused from its statistics");
    assert!(seeds().len() < 3 || PACK_PIECES.with(|p| p.get()) > 0, "no pack piece was handed out");
    assert!(seeds().len() < 3 || SCAN_PARTS.with(|p| p.get()) > 100, "scans in parts did not stop");
    assert!(seeds().len() < 3 || SUMMARIES.with(|p| p.get()) > 100, "only {} exact summaries", SUMMARIES.with(|p| p.get()));
    assert!(seeds().len() < 3 || super::summary::PACK_RUNS_SUMMED.with(|p| p.get()) > 0, "no pack run was summed together");
}

#[test]
fn model_random_ops_match_reference_with_background_compaction_and_two_data_dirs() {
    for seed in seeds() {
        run(seed + 1000, 300, 2);
    }
    assert!(seeds().len() < 3 || PRUNED_BLOCKS.with(|p| p.get()) > 0, "no block was refused from its statistics");
    assert!(seeds().len() < 3 || PACK_PIECES.with(|p| p.get()) > 0, "no pack piece was handed out");
    assert!(seeds().len() < 3 || SCAN_PARTS.with(|p| p.get()) > 100, "scans in parts did not stop");
    assert!(seeds().len() < 3 || SUMMARIES.with(|p| p.get()) > 100, "only {} exact summaries", SUMMARIES.with(|p| p.get()));
    assert!(seeds().len() < 3 || super::summary::PACK_RUNS_SUMMED.with(|p| p.get()) > 0, "no pack run was summed together");
}
