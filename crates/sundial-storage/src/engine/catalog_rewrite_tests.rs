//! `catalog.log` rewrite and compaction rate limit tests (issue 5, storage engine v2).

use std::sync::Arc;

use super::*;
use crate::catalog_log::{self, tmp_path};
use crate::throttle::ManualThrottleClock;

fn config(dir: &Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir);
    c.compaction_threads = 0;
    c
}

fn point<'a>(table: &'a str, host: &'a str, ts: i64, v: i64) -> WritePoint<'a> {
    WritePoint { line: 1, table, key: None, known: None, tags: vec![("host", host)].into(), fields: vec![("v", Value::Integer(v))].into(), ts }
}

fn write(e: &Engine, db: &str, table: &str, hosts: &[&str], ts: std::ops::Range<i64>) {
    let points: Vec<WritePoint<'_>> =
        hosts.iter().flat_map(|h| ts.clone().map(move |t| point(table, h, t, t * 10))).collect();
    let out = e.write(db, &points).unwrap();
    assert!(out.rejected.is_empty(), "{:?}", out.rejected);
}

/// (table, host, ts, v) of every row of every table of `db`, sorted.
fn read_db(e: &Engine, db_name: &str) -> Vec<(String, String, i64, i64)> {
    let tables: Vec<(DbId, TableId, String, ColId, ColId, SeriesId)> = {
        let cat = e.catalog();
        let Some(d) = cat.db(db_name) else { return vec![] };
        d.tables()
            .iter()
            .map(|t| (d.id, t.id, t.name.to_string(), t.column("host").unwrap().id, t.column("v").unwrap().id, t.series_count() as SeriesId))
            .collect()
    };
    let mut out = Vec::new();
    for (db, t, name, host_col, v_col, n) in tables {
        let series: Vec<SeriesId> = (0..n).collect();
        let snap = e.snapshot(db, t, &series, i64::MIN, i64::MAX, &[(v_col, FieldType::Integer)]);
        for s in snap.series().unwrap() {
            let Some(rows) = snap.read_series(s).unwrap() else { continue };
            let host = e.catalog().db_by_id(db).unwrap().table_by_id(t).unwrap().series_tag_value(s, host_col).unwrap().to_string();
            for (i, ts) in rows.ts.iter().enumerate() {
                let Some(Value::Integer(v)) = rows.cols[0].as_ref().and_then(|c| c.get(i)) else { panic!("null v") };
                out.push((name.clone(), host.clone(), *ts, v));
            }
        }
    }
    out.sort();
    out
}

/// The live catalog as entries (drops left out: a rewrite keeps only those still needed).
fn live_entries(e: &Engine) -> Vec<CatalogEntry> {
    e.catalog().snapshot_entries(&|_, _| false)
}

fn log_entries(dir: &Path) -> Vec<CatalogEntry> {
    catalog_log::CatalogLog::open(&dir.join("catalog.log")).unwrap().1
}

fn table_id(e: &Engine, db: &str, table: &str) -> Option<TableId> {
    e.catalog().db(db)?.table(table).map(|t| t.id)
}

/// Builds a data directory with every kind of dead entry: superseded retentions, a dropped database,
/// a dropped table, tombstones applied by compaction, entries appended again by restarts.
fn busy_history(dir: &Path) -> Engine {
    let mut e = Engine::open(config(dir)).unwrap();
    e.create_database("db", 0, false).unwrap();
    e.create_database("gone", 0, false).unwrap();
    write(&e, "db", "cpu", &["a", "b", "c"], 0..50);
    write(&e, "db", "mem", &["a"], 0..10);
    write(&e, "gone", "cpu", &["a"], 0..10);
    e.flush().unwrap();
    for r in [1, 2, 0] {
        e.set_retention("db", r * 1_000_000_000_000_000_000).unwrap();
    }
    e.delete("db", "cpu", None, 10, 19).unwrap();
    e.drop_series("db", "cpu", &[1]).unwrap();
    e.drop_table("db", "mem").unwrap();
    e.drop_database("gone", false).unwrap();
    e.compact_now().unwrap();
    for _ in 0..3 {
        write(&e, "db", "cpu", &["d"], 100..110);
        drop(e);
        e = Engine::open(config(dir)).unwrap();
    }
    e.flush().unwrap();
    e
}

#[test]
fn rewrite_then_reopen_gives_the_same_catalog_the_same_rows_and_a_smaller_log() {
    let dir = tempfile::tempdir().unwrap();
    let e = busy_history(dir.path());
    let (entries_before, rows_before) = (live_entries(&e), read_db(&e, "db"));
    assert!(!rows_before.is_empty());
    let r = e.rewrite_catalog_log_now().unwrap();
    assert!(r.entries_after < r.entries_before && r.bytes_after < r.bytes_before, "{r:?}");
    assert_eq!(e.catalog_log_size(), (r.entries_after, r.bytes_after));
    assert_eq!(live_entries(&e), entries_before);
    assert_eq!(read_db(&e, "db"), rows_before);
    drop(e);

    let logged = log_entries(dir.path());
    assert!(matches!(logged[0], CatalogEntry::Counters(_)), "{:?}", logged[0]);
    assert!(!logged.iter().any(|x| matches!(x, CatalogEntry::SetRetention { .. } | CatalogEntry::DropDb { .. })), "{logged:#?}");
    assert!(!logged.iter().any(|x| matches!(x, CatalogEntry::Tombstone(_))), "compaction applied every tombstone: {logged:#?}");
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(live_entries(&e), entries_before);
    assert_eq!(read_db(&e, "db"), rows_before);
    assert_eq!(read_db(&e, "gone"), vec![]);
}

/// The highest database, table and tombstone ids belonged to dropped objects and to a tombstone the
/// rewrite left out. Reusing any of them would be a bug: a reused tombstone id at or below a segment's
/// `tombstones_applied` would be skipped for that segment, so the delete would not hide its rows.
#[test]
fn ids_are_not_reused_after_a_rewrite_drops_the_objects_that_held_the_highest() {
    let dir = tempfile::tempdir().unwrap();
    let e = busy_history(dir.path());
    let (next_db, next_table) = (e.catalog().next_db_id(), e.catalog().next_table_id());
    let next_tombstone = e.inner.next_tombstone_id.load(Ordering::SeqCst);
    e.rewrite_catalog_log_now().unwrap();
    drop(e);
    // The counters must also survive a second rewrite, which copies them from the first one's record.
    let e = Engine::open(config(dir.path())).unwrap();
    e.rewrite_catalog_log_now().unwrap();
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(e.inner.next_tombstone_id.load(Ordering::SeqCst), next_tombstone);
    e.create_database("new", 0, false).unwrap();
    assert_eq!(e.catalog().db("new").unwrap().id, next_db);
    write(&e, "new", "t", &["a"], 0..1);
    assert_eq!(table_id(&e, "new", "t"), Some(next_table));
    // A delete after the restart hides rows in the segment compaction wrote with tombstones_applied.
    e.delete("db", "cpu", None, 0, 4).unwrap();
    assert!(read_db(&e, "db").iter().all(|r| r.2 > 4), "the new delete is honoured by the compacted segment");
}

/// A table created by a write that is only in the WAL, then dropped: the WAL record replays its
/// `CreateTable` at the next start, so the rewrite must keep the drop until that WAL file is gone.
#[test]
fn a_table_dropped_while_its_creation_is_only_in_the_wal_stays_dropped_across_rewrite_and_crash() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    write(&e, "db", "keep", &["a"], 0..5);
    e.flush().unwrap();
    write(&e, "db", "doomed", &["a"], 0..5);
    let doomed = table_id(&e, "db", "doomed").unwrap();
    e.drop_table("db", "doomed").unwrap();
    e.rewrite_catalog_log_now().unwrap();
    drop(e); // a crash: the WAL record creating `doomed` is still there

    assert!(log_entries(dir.path()).contains(&CatalogEntry::DropTable { db: 0, table: doomed }));
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(table_id(&e, "db", "doomed"), None, "the replayed CreateTable must stay dropped");
    assert_eq!(read_db(&e, "db").len(), 5);
    // Once the WAL files that held it are gone, the drop is dead weight.
    e.flush().unwrap();
    e.rewrite_catalog_log_now().unwrap();
    drop(e);
    assert!(!log_entries(dir.path()).iter().any(|x| matches!(x, CatalogEntry::DropTable { .. })));
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(table_id(&e, "db", "doomed"), None);
    write(&e, "db", "doomed", &["a"], 0..1);
    assert!(table_id(&e, "db", "doomed").unwrap() > doomed, "a new table of the same name gets a new id");
}

/// A delete of rows that are only in the active memtable: the engine forgets the tombstone at once
/// (nothing on disk holds the rows), but the WAL still does, and replay needs the tombstone.
#[test]
fn a_tombstone_retired_from_memory_is_kept_while_the_wal_holds_rows_it_hides() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    write(&e, "db", "cpu", &["a", "b"], 0..10);
    e.delete("db", "cpu", None, 0, 4).unwrap();
    e.compact_now().unwrap();
    let t = table_id(&e, "db", "cpu").unwrap();
    assert_eq!(e.live_tombstones(0, t), 0, "retired from memory");
    e.rewrite_catalog_log_now().unwrap();
    drop(e); // crash: the rows are in the WAL only
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_db(&e, "db").len(), 10, "rows 0..=4 stay deleted after replay");
    e.flush().unwrap();
    e.rewrite_catalog_log_now().unwrap();
    drop(e);
    assert!(!log_entries(dir.path()).iter().any(|x| matches!(x, CatalogEntry::Tombstone(_))), "dead once the WAL is flushed");
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_db(&e, "db").len(), 10);
}

/// A crash at each step of the rewrite: `catalog.log.tmp` whole or cut short next to the old log
/// (before the rename), or only the new log (after it). Every case opens to the same catalog and rows.
#[test]
fn a_crash_at_each_step_of_the_rewrite_recovers_the_same_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let e = busy_history(dir.path());
    let (entries, rows) = (live_entries(&e), read_db(&e, "db"));
    drop(e);
    let log = dir.path().join("catalog.log");
    let old_log = std::fs::read(&log).unwrap();
    // The tmp file a crashed rewrite leaves: some other catalog, whole or torn. Until the rename, the
    // old log is authoritative, whatever the tmp file holds.
    let other = vec![CatalogEntry::CreateDb { db: 0, name: "impostor".into(), retention_ns: 0 }];
    let whole = catalog_log::encode_log(&other).unwrap();
    for tmp in [whole.clone(), whole[..whole.len() / 2].to_vec()] {
        std::fs::write(tmp_path(&log), &tmp).unwrap();
        let e = Engine::open(config(dir.path())).unwrap();
        assert!(!tmp_path(&log).exists());
        assert_eq!(live_entries(&e), entries);
        assert_eq!(read_db(&e, "db"), rows);
        drop(e);
        assert_eq!(std::fs::read(&log).unwrap(), old_log, "the old log is untouched");
    }
    // After the rename (and a tmp file of a later, cut-short rewrite): the new log.
    let e = Engine::open(config(dir.path())).unwrap();
    e.rewrite_catalog_log_now().unwrap();
    drop(e);
    std::fs::write(tmp_path(&log), &whole[..3]).unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(live_entries(&e), entries);
    assert_eq!(read_db(&e, "db"), rows);
}

/// The automatic trigger: a log that is mostly dead and over the size floor is rewritten at open; one
/// under the floor is left alone.
#[test]
fn a_mostly_dead_log_is_rewritten_at_open_only_above_the_size_floor() {
    let dir = tempfile::tempdir().unwrap();
    let e = busy_history(dir.path());
    drop(e);
    let size = |d: &Path| std::fs::metadata(d.join("catalog.log")).unwrap().len();
    let before = size(dir.path());
    let mut c = config(dir.path());
    c.catalog_log_rewrite_bytes_min = before + 1;
    drop(Engine::open(c).unwrap());
    assert_eq!(size(dir.path()), before, "under the floor: untouched");
    let mut c = config(dir.path());
    c.catalog_log_rewrite_bytes_min = before;
    let e = Engine::open(c).unwrap();
    let after = size(dir.path());
    assert!(after < before / 2, "{before} -> {after} bytes");
    assert_eq!(e.catalog_log_size().1, after);
}

/// Shortening the retention deletes the partitions it expires at once (not at the next periodic run),
/// and the new retention survives a crash.
#[test]
fn shortening_retention_drops_expired_partitions_at_once_and_durably() {
    const HOUR_NS: i64 = 3600 * 1_000_000_000;
    let dir = tempfile::tempdir().unwrap();
    let now = Arc::new(std::sync::atomic::AtomicI64::new(100 * HOUR_NS));
    let mut c = config(dir.path());
    c.partition_ns = HOUR_NS;
    c.clock = Clock::manual(now.clone());
    c.retention_check_interval = Duration::from_secs(3600);
    let e = Engine::open(c.clone()).unwrap();
    e.create_database("db", 0, false).unwrap();
    let points: Vec<WritePoint<'_>> = (0..100).map(|h| point("cpu", "a", h * HOUR_NS, h)).collect();
    e.write("db", &points).unwrap();
    e.flush().unwrap();
    let files = e.disk_usage().1;
    assert_eq!(files, 100);
    e.set_retention("db", 10 * HOUR_NS).unwrap();
    assert_eq!(e.disk_usage().1, 10, "partitions ending at or before now − 10 h are gone");
    drop(e); // crash
    let e = Engine::open(c).unwrap();
    assert_eq!(e.catalog().db("db").unwrap().retention_ns, 10 * HOUR_NS);
    assert_eq!(read_db(&e, "db").len(), 10);
}

/// The compaction rate limit: with a manual clock, a merge sleeps exactly as long as its bytes take at
/// the configured rate (less the free burst), and a flush is never slowed.
#[test]
fn compaction_writes_are_paced_by_the_rate_limit_and_flushes_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualThrottleClock::default());
    let rate = 100u64; // bytes per second: the merge output is a few hundred bytes (the codecs compress well)
    let mut c = config(dir.path());
    c.compaction_bytes_per_sec_max = Some(rate);
    c.compaction_throttle_clock = clock.clone();
    let e = Engine::open(c).unwrap();
    e.create_database("db", 0, false).unwrap();
    let flushes = crate::limits::COMPACTION_TRIGGER_FILES;
    for i in 0..flushes as i64 {
        write(&e, "db", "cpu", &["a", "b", "c", "d"], i * 1000..i * 1000 + 500);
        e.flush().unwrap();
    }
    assert_eq!(clock.sleeps(), 0, "flushes are not limited");
    let r = e.compact_now().unwrap();
    assert_eq!((r.jobs, r.files_in, r.files_out), (1, flushes, 1));
    let burst = rate as f64 * crate::limits::COMPACTION_THROTTLE_BURST_MS as f64 / 1000.0;
    // The 16-byte file header is written before the writer gets its throttle.
    let paced = r.bytes_out - crate::frame::HEADER_BYTES as u64;
    let want = (paced as f64 - burst) / rate as f64;
    let slept = clock.slept().as_secs_f64();
    assert!(want > 1.0, "the test must write well past the burst: {r:?}");
    assert!((slept - want).abs() < 1e-3, "slept {slept} s for {} bytes at {rate} B/s, expected {want}", r.bytes_out);
}

/// (hostname, rack, os) of series `i`: every fifth lacks `rack`, odd ones lack `os`.
fn tsbs_like_tags(i: usize) -> (String, Option<String>, Option<&'static str>) {
    let rack = (!i.is_multiple_of(5)).then(|| (i * 7 % 100).to_string());
    let os = i.is_multiple_of(2).then_some(["Ubuntu16.04LTS", "Ubuntu15.10 é"][i / 2 % 2]);
    (format!("host_{i}"), rack, os)
}

fn write_many_series(e: &Engine, table: &str, n: usize) {
    let tags: Vec<_> = (0..n).map(tsbs_like_tags).collect();
    let points: Vec<WritePoint<'_>> = tags
        .iter()
        .enumerate()
        .map(|(i, (host, rack, os))| {
            let mut t = vec![("hostname", host.as_str())];
            t.extend(rack.as_deref().map(|r| ("rack", r)));
            t.extend(os.map(|o| ("os", o)));
            WritePoint { line: 1, table, key: None, known: None, tags: t.into(), fields: vec![("v", Value::Integer(i as i64))].into(), ts: 1 }
        })
        .collect();
    let out = e.write("db", &points).unwrap();
    assert!(out.rejected.is_empty(), "{:?}", out.rejected);
}

/// Kinds of the records of `catalog.log` in `dir`.
fn log_kinds(dir: &Path) -> Vec<u8> {
    catalog_log::record_kinds(&dir.join("catalog.log"))
}

#[test]
fn new_series_are_logged_in_batches_and_come_back_with_the_same_ids_and_tags() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    write_many_series(&e, "cpu", 5000);
    // A measurement without tags: one series with no tag at all.
    e.write("db", &[WritePoint { line: 1, table: "bare", key: None, known: None, tags: vec![].into(), fields: vec![("v", Value::Integer(1))].into(), ts: 1 }]).unwrap();
    e.flush().unwrap();
    let live = live_entries(&e);
    let (entries, bytes) = e.catalog_log_size();
    assert_eq!(entries, live.len() as u64, "the log counts the entries its batches stand for");
    let kinds = log_kinds(dir.path());
    assert_eq!(kinds.iter().filter(|k| **k == catalog_log::KIND_SERIES_BATCH).count(), 1, "{kinds:?}");
    assert!(kinds.len() < 20, "{kinds:?}");
    assert!(bytes < 5000 * 10, "{bytes} bytes for 5000 series");
    drop(e);

    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(live_entries(&e), live);
    assert_eq!(e.catalog_log_size(), (entries, bytes), "a log of live series is not rewritten");
    let cat = e.catalog();
    let t = cat.db("db").unwrap().table("cpu").unwrap();
    let col = |name| t.column(name).unwrap().id;
    for i in [0usize, 1, 2, 5, 4095, 4999] {
        let (host, rack, os) = tsbs_like_tags(i);
        let s = i as SeriesId;
        assert_eq!(t.series_tag_value(s, col("hostname")), Some(host.as_str()));
        assert_eq!(t.series_tag_value(s, col("rack")), rack.as_deref());
        assert_eq!(t.series_tag_value(s, col("os")), os);
    }
    assert_eq!(cat.db("db").unwrap().table("bare").unwrap().series_count(), 1);
}

#[test]
fn a_rewrite_of_a_batched_log_drops_the_dead_series_and_keeps_the_live_ones_batched() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    write_many_series(&e, "cpu", 3000);
    write_many_series(&e, "mem", 20_000);
    e.flush().unwrap();
    e.drop_table("db", "mem").unwrap();
    let live = live_entries(&e);
    let r = e.rewrite_catalog_log_now().unwrap();
    assert!(r.entries_after < r.entries_before / 4 && r.bytes_after < r.bytes_before / 2, "{r:?}");
    assert_eq!(r.entries_after as usize, 1 + live.len(), "Counters, then the live catalog");
    let kinds = log_kinds(dir.path());
    assert_eq!(kinds.iter().filter(|k| **k == catalog_log::KIND_SERIES_BATCH).count(), 1, "{kinds:?}");
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(live_entries(&e), live);
    assert!(e.catalog().db("db").unwrap().table("mem").is_none());
}
