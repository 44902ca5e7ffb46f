//! Compaction, retention and delete tests (storage v2, issue 5).

use std::sync::Arc;
use std::sync::atomic::AtomicI64;

use super::*;
use crate::test_util::walk;
use crate::limits::COMPACTION_FILES_PER_PARTITION_MAX;

const HOUR_NS: i64 = 3600 * 1_000_000_000;

fn config(dir: &Path) -> EngineConfig {
    let mut c = EngineConfig::new(dir);
    c.compaction_threads = 0;
    c
}

fn point<'a>(host: &'a str, ts: i64, v: i64) -> WritePoint<'a> {
    WritePoint { line: 1, table: "cpu", key: None, known: None, tags: vec![("host", host)].into(), fields: vec![("v", Value::Integer(v))].into(), ts }
}

/// (host, ts, v) of every row of `cpu`, sorted.
fn read_all(e: &Engine) -> Vec<(String, i64, i64)> {
    read_db(e, "db")
}

fn read_db(e: &Engine, db_name: &str) -> Vec<(String, i64, i64)> {
    let (db, t, host_col, v_col, n) = {
        let cat = e.catalog();
        let d = cat.db(db_name).unwrap();
        let Some(t) = d.table("cpu") else { return vec![] };
        (d.id, t.id, t.column("host").unwrap().id, t.column("v").unwrap().id, t.series_count() as SeriesId)
    };
    let series: Vec<SeriesId> = (0..n).collect();
    let snap = e.snapshot(db, t, &series, i64::MIN, i64::MAX, &[(v_col, FieldType::Integer)]);
    let mut out = Vec::new();
    for s in snap.series().unwrap() {
        let Some(rows) = snap.read_series(s).unwrap() else { continue };
        let host = e.catalog().db(db_name).unwrap().table("cpu").unwrap().series_tag_value(s, host_col).unwrap().to_string();
        for (i, ts) in rows.ts.iter().enumerate() {
            let Some(Value::Integer(v)) = rows.cols[0].as_ref().and_then(|c| c.get(i)) else { panic!("null v") };
            out.push((host.clone(), *ts, v));
        }
    }
    out.sort();
    out
}

fn ids(e: &Engine) -> (DbId, TableId) {
    let cat = e.catalog();
    let d = cat.db("db").unwrap();
    (d.id, d.table("cpu").unwrap().id)
}

fn series_of(e: &Engine, host: &str) -> SeriesId {
    series_in(e, "db", host)
}

fn series_in(e: &Engine, db: &str, host: &str) -> SeriesId {
    let cat = e.catalog();
    let t = cat.db(db).unwrap().table("cpu").unwrap();
    let col = t.column("host").unwrap().id;
    (0..t.series_count() as SeriesId).find(|s| t.series_tag_value(*s, col).is_some_and(|v| v == host)).unwrap()
}

/// Without compaction every flush adds a file to the partition; with it, the files of one partition
/// stay at or below the bound however many flushes accumulate, and no row is lost or duplicated.
#[test]
fn read_amplification_stays_bounded_as_flushes_accumulate() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    let mut expected = Vec::new();
    let mut most = 0;
    for flush in 0..60i64 {
        let pts: Vec<_> = (0..20).map(|i| point(["a", "b", "c"][i as usize % 3], flush * 100 + i, flush * 1000 + i)).collect();
        expected.extend(pts.iter().map(|p| (p.tags[0].1.to_string(), p.ts, match p.fields[0].1 { Value::Integer(v) => v, _ => 0 })));
        e.write("db", &pts).unwrap();
        e.flush().unwrap();
        e.compact_now().unwrap();
        let (db, t) = ids(&e);
        let files = e.partition_files(db, t);
        assert_eq!(files.len(), 1, "one partition");
        most = most.max(*files.values().next().unwrap());
        assert!(most <= COMPACTION_FILES_PER_PARTITION_MAX, "{most} files after {flush} flushes");
    }
    assert!(most >= 2, "compaction is not eager: small files accumulate up to the trigger");
    expected.sort();
    assert_eq!(read_all(&e), expected);
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_all(&e), expected);
}

/// `compaction_status` counts the partitions the picker would merge (a cold one with two files, a hot one
/// with the size-tiered trigger's count of equal files) and those it will merge once write-cold, changes
/// nothing itself, and reads idle once `compact_now` has done the work.
#[test]
fn compaction_status_counts_waiting_partitions_until_they_are_merged() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    let day = crate::limits::PARTITION_NS_DEFAULT;
    let idle = CompactionStatus { running: 0, pending: 0, write_cold_later: 0 };
    assert_eq!(e.compaction_status(), idle, "empty");
    let trigger = crate::limits::COMPACTION_TRIGGER_FILES;
    for files in 1..=trigger {
        e.write("db", &[point("a", files as i64, 1), point("a", day + files as i64, 1)]).unwrap();
        e.flush().unwrap();
        // The hot partition's files wait for it to turn write-cold (4 h) until the size-tiered trigger.
        let (pending, write_cold_later) = if files == 1 { (0, 0) } else if files < trigger { (1, 1) } else { (2, 0) };
        assert_eq!(e.compaction_status(), CompactionStatus { running: 0, pending, write_cold_later }, "after {files} flushes");
    }
    let (db, t) = ids(&e);
    let files = e.partition_files(db, t);
    assert_eq!(files.values().copied().collect::<Vec<_>>(), vec![trigger; 2], "status merged nothing");
    let r = e.compact_now().unwrap();
    assert!(r.jobs >= 2, "{r:?}");
    // The hot partition's merge was quick: its one file waits to turn write-cold for a full-effort rewrite.
    assert_eq!(e.compaction_status(), CompactionStatus { write_cold_later: 1, ..idle }, "after compact_now");
}

/// A partition whose files are all older than `compact_full_write_cold` is merged whole, like a past
/// one, though no later partition has data: the newest day ends as one file once writes stop.
#[test]
fn a_write_cold_partition_is_merged_into_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.compact_full_write_cold = Duration::from_millis(300);
    let e = Engine::open(c).unwrap();
    e.create_database("db", 0, false).unwrap();
    let mut expected = Vec::new();
    for k in 0..3 {
        let pts: Vec<_> = (0..50).map(|i| point(["a", "b"][i as usize % 2], k * 1000 + i, k * 100 + i)).collect();
        expected.extend(pts.iter().map(|p| (p.tags[0].1.to_string(), p.ts, match p.fields[0].1 { Value::Integer(v) => v, _ => 0 })));
        e.write("db", &pts).unwrap();
        e.flush().unwrap();
    }
    let (db, t) = ids(&e);
    let status = e.compaction_status();
    assert_eq!(e.compact_now().unwrap().jobs, 0, "three fresh files of the newest partition: below the trigger");
    assert_eq!(e.partition_files(db, t).values().copied().collect::<Vec<_>>(), vec![3]);
    assert_eq!(status, CompactionStatus { running: 0, pending: 0, write_cold_later: 1 });
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(e.compaction_status(), CompactionStatus { running: 0, pending: 1, write_cold_later: 0 }, "write-cold now");
    assert_eq!(e.compact_now().unwrap().jobs, 1);
    assert_eq!(e.partition_files(db, t).values().copied().collect::<Vec<_>>(), vec![1]);
    assert_eq!(e.compaction_status(), CompactionStatus { running: 0, pending: 0, write_cold_later: 0 });
    expected.sort();
    assert_eq!(read_all(&e), expected);

    // Zero turns it off: after more flushes and as long a wait, the files stay as size-tiering leaves them.
    drop(e);
    let mut c = config(dir.path());
    c.compact_full_write_cold = Duration::ZERO;
    let e = Engine::open(c).unwrap();
    e.write("db", &[point("a", 5000, 1)]).unwrap();
    e.flush().unwrap();
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(e.compact_now().unwrap().jobs, 0);
    assert_eq!(e.partition_files(db, t).values().copied().collect::<Vec<_>>(), vec![2]);
    assert_eq!(e.compaction_status(), CompactionStatus { running: 0, pending: 0, write_cold_later: 0 });
}

/// The segment files under `dir`, opened.
fn segment_files(dir: &Path) -> Vec<Segment> {
    walk(dir).iter().filter(|p| p.extension().is_some_and(|x| x == "seg")).map(|p| Segment::open(p).unwrap()).collect()
}

/// Merges of a partition still written to encode quick and mark their file (`segment::FLAG_QUICK`); once
/// the partition is write-cold, its one quick file is rewritten alone at full effort, into the very bytes
/// that full-effort merges all along give (an engine whose write-cold merging is off, so whose hot merges
/// are at full effort). The rows read the same at every step, and across a restart.
#[test]
fn a_hot_partition_merged_quick_ends_as_the_full_effort_file_once_write_cold() {
    let flushes = crate::limits::COMPACTION_TRIGGER_FILES as i64;
    // Rows per host and flush, every 10 s: all the flushes within one day's partition.
    const ROWS: i64 = 750;
    assert!(flushes * ROWS * 10 < 86_400);
    let run = |dir: &Path, write_cold: Duration| {
        let mut c = config(dir);
        c.compact_full_write_cold = write_cold;
        let e = Engine::open(c).unwrap();
        e.create_database("db", 0, false).unwrap();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut v = [0i64; 8];
        for k in 0..flushes {
            let mut pts = Vec::new();
            for i in 0..ROWS {
                for (h, host) in ["a", "b", "c", "d", "e", "f", "g", "h"].iter().enumerate() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    v[h] += (x % 9) as i64 - 4;
                    pts.push(point(host, (k * ROWS + i) * 10_000_000_000, v[h]));
                }
            }
            e.write("db", &pts).unwrap();
            e.flush().unwrap();
        }
        assert_eq!(e.compact_now().unwrap().jobs, 1, "the size-tiered merge of the trigger's equal files");
        e
    };
    let (quick_dir, full_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let e = run(quick_dir.path(), Duration::from_millis(300));
    let full = run(full_dir.path(), Duration::ZERO);
    let (merged_quick, merged_full) = (segment_files(quick_dir.path()), segment_files(full_dir.path()));
    assert_eq!((merged_quick.len(), merged_full.len()), (1, 1));
    assert!(merged_quick[0].quick && !merged_full[0].quick);
    assert!(merged_quick[0].file_bytes > merged_full[0].file_bytes, "{} against {}", merged_quick[0].file_bytes, merged_full[0].file_bytes);
    let rows = read_all(&full);
    assert_eq!(rows.len(), 8 * (ROWS * flushes) as usize);
    assert_eq!(read_all(&e), rows);
    assert_eq!(e.compaction_status(), CompactionStatus { running: 0, pending: 0, write_cold_later: 1 }, "the quick file waits");

    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(e.compact_now().unwrap().jobs, 1, "write-cold: the quick file rewritten alone");
    assert_eq!(e.compaction_status(), CompactionStatus { running: 0, pending: 0, write_cold_later: 0 });
    let rewritten = segment_files(quick_dir.path());
    assert_eq!(rewritten.len(), 1);
    assert!(!rewritten[0].quick);
    assert_eq!(rewritten[0].path.file_name(), merged_full[0].path.file_name());
    assert_eq!(std::fs::read(&rewritten[0].path).unwrap(), std::fs::read(&merged_full[0].path).unwrap());
    assert_eq!(read_all(&e), rows);
    drop(e);
    let e = Engine::open(config(quick_dir.path())).unwrap();
    assert_eq!(read_all(&e), rows);
    assert_eq!(e.compact_now().unwrap().jobs, 0, "nothing left to rewrite");
}

/// Background compaction (threads on, woken by flushes) bounds read amplification too; the test waits
/// for it through `compact_now`, which returns once no job is running or pending.
#[test]
fn background_compaction_keeps_up_and_cold_partitions_end_as_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.compaction_threads = 1;
    c.partition_ns = 1000;
    let e = Engine::open(c).unwrap();
    e.create_database("db", 0, false).unwrap();
    let mut expected = Vec::new();
    for flush in 0..40i64 {
        // In time order, like a live feed: 4 flushes per partition.
        let pts: Vec<_> = (0..10).map(|i| point("a", flush * 250 + i, flush)).collect();
        expected.extend(pts.iter().map(|p| ("a".to_string(), p.ts, flush)));
        e.write("db", &pts).unwrap();
        e.flush().unwrap();
    }
    e.compact_now().unwrap();
    let (db, t) = ids(&e);
    let files = e.partition_files(db, t);
    assert_eq!(files.len(), 10);
    for (p, n) in files.iter().take(9) {
        assert_eq!(*n, 1, "cold partition {p} is one file: {files:?}");
    }
    assert_eq!(read_all(&e), expected);
}

/// A crash after the compaction output was renamed into place but before its inputs were deleted
/// leaves both on disk: the restart deletes the inputs (their generations lie inside the output's) and
/// serves every row once. A leftover `.tmp` is removed too.
#[test]
fn restart_after_a_crash_between_rename_and_input_deletion_keeps_one_copy() {
    let dir = tempfile::tempdir().unwrap();
    let saved = tempfile::tempdir().unwrap();
    // One more than the size-tiered trigger: `compact_now` merges them all.
    let flushes = crate::limits::COMPACTION_TRIGGER_FILES + 1;
    let expected;
    {
        let e = Engine::open(config(dir.path())).unwrap();
        e.create_database("db", 0, false).unwrap();
        for flush in 0..flushes as i64 {
            let pts: Vec<_> = (0..10).map(|i| point("a", i * 7 + flush, flush)).collect();
            e.write("db", &pts).unwrap();
            e.flush().unwrap();
        }
        expected = read_all(&e);
        let p = dir.path().join("db0");
        let part = std::fs::read_dir(&p).unwrap().next().unwrap().unwrap().path();
        for f in std::fs::read_dir(&part).unwrap() {
            let f = f.unwrap().path();
            std::fs::copy(&f, saved.path().join(f.file_name().unwrap())).unwrap();
        }
        let r = e.compact_now().unwrap();
        assert_eq!((r.files_in, r.files_out), (flushes, 1));
        assert_eq!(read_all(&e), expected);
        // The crash image: the inputs are back, and a half-written output of a later merge.
        for f in std::fs::read_dir(saved.path()).unwrap() {
            let f = f.unwrap().path();
            std::fs::copy(&f, part.join(f.file_name().unwrap())).unwrap();
        }
        std::fs::write(part.join(format!("t0-g000000000001-{:012}.seg.tmp", flushes + 4)), b"torn").unwrap();
    }
    let e = Engine::open(config(dir.path())).unwrap();
    let (db, t) = ids(&e);
    assert_eq!(e.partition_files(db, t).values().copied().collect::<Vec<_>>(), vec![1]);
    assert_eq!(read_all(&e), expected);
    let names: Vec<String> = walk(dir.path()).iter().filter_map(|p| p.file_name()?.to_str().map(String::from)).filter(|n| n.contains(".seg")).collect();
    assert_eq!(names, vec![format!("t0-g000000000001-{flushes:012}.seg")]);
}

/// Issue 5: "deletes that don't free disk". Deleted rows disappear from reads at once (segments,
/// frozen and active memtables), rows written after the delete at the same timestamps stay visible,
/// both survive a restart (WAL replay included), and compaction gives the space back.
#[test]
fn deletes_hide_rows_at_once_keep_later_writes_and_free_disk_after_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let hosts: Vec<String> = (0..10).map(|i| format!("host{i}")).collect();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    for (i, h) in hosts.iter().enumerate() {
        // Pseudo-random values, so that the segment bytes dwarf the catalog and WAL headers.
        let pts: Vec<_> = (0..3000).map(|t| point(h, t * 10, (t * 2_654_435_761 + i as i64 * 13) % 1_000_003)).collect();
        e.write("db", &pts).unwrap();
    }
    e.flush().unwrap();
    // Some rows of host0 only in the active memtable.
    e.write("db", &[point("host0", 100_000, 1), point("host1", 100_000, 1)]).unwrap();
    let before = e.data_dir_bytes().unwrap();
    let all = read_all(&e);
    let doomed: Vec<SeriesId> = hosts[..8].iter().map(|h| series_of(&e, h)).collect();
    e.delete("db", "cpu", Some(&doomed), i64::MIN, i64::MAX).unwrap();
    e.delete("db", "cpu", None, 0, 99).unwrap();
    e.write("db", &[point("host0", 50, 5050)]).unwrap(); // after the delete: visible
    let mut expected: Vec<_> = all.into_iter().filter(|(h, ts, _)| (h == "host8" || h == "host9") && *ts > 99).collect();
    expected.push(("host0".into(), 50, 5050));
    expected.sort();
    assert_eq!(read_all(&e), expected, "at once");
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_all(&e), expected, "after WAL replay");
    e.flush().unwrap();
    let (db, t) = ids(&e);
    assert_eq!(e.live_tombstones(db, t), 2);
    let r = e.compact_now().unwrap();
    assert!(r.rows_deleted >= 8 * 3000, "{r:?}");
    assert_eq!(read_all(&e), expected, "after compaction");
    assert_eq!(e.live_tombstones(db, t), 0, "applied everywhere, so no longer needed in memory");
    let after = e.data_dir_bytes().unwrap();
    assert!(after * 3 < before, "data dir {before} bytes before the delete, {after} after compaction");
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_all(&e), expected, "after compaction and restart");
}

/// A delete while rows wait in a frozen memtable, then a crash before anything is flushed: the WAL
/// replay must not bring back the deleted rows, and must keep the rows written after the delete.
#[test]
fn deleted_rows_stay_deleted_when_the_wal_is_replayed() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(config(dir.path())).unwrap();
        e.create_database("db", 0, false).unwrap();
        e.write("db", &[point("a", 1, 1), point("a", 2, 2), point("b", 1, 1)]).unwrap();
        let a = series_of(&e, "a");
        e.drop_series("db", "cpu", &[a]).unwrap();
        e.write("db", &[point("a", 2, 22)]).unwrap();
        assert_eq!(read_all(&e), vec![("a".into(), 2, 22), ("b".into(), 1, 1)]);
    }
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_all(&e), vec![("a".into(), 2, 22), ("b".into(), 1, 1)]);
    assert!(matches!(e.delete("nope", "cpu", None, 0, 1), Err(Error::DatabaseNotFound { .. })));
    e.delete("db", "no_such_table", None, 0, 1).unwrap();
    e.delete("db", "cpu", Some(&[]), 0, 1).unwrap();
    assert_eq!(read_all(&e).len(), 2);
}

/// Retention: partitions wholly older than now − retention are deleted (disk freed), rows older than
/// the cutoff are never served wherever they are (memtable included), and the setting survives a
/// restart and can be changed.
#[test]
fn retention_drops_old_partitions_and_hides_older_rows() {
    let dir = tempfile::tempdir().unwrap();
    let now = Arc::new(AtomicI64::new(10 * HOUR_NS));
    let mut c = config(dir.path());
    c.partition_ns = HOUR_NS;
    c.clock = Clock::manual(now.clone());
    let e = Engine::open(c.clone()).unwrap();
    e.create_database("db", 0, false).unwrap();
    let pts: Vec<_> = (0..10).map(|h| point("a", h * HOUR_NS + HOUR_NS / 2, h)).collect();
    e.write("db", &pts).unwrap();
    e.flush().unwrap();
    e.write("db", &[point("a", 30 * 60 * 1_000_000_000, 99)]).unwrap(); // hour 0 again, in the memtable
    let (db, t) = ids(&e);
    assert_eq!(e.partition_files(db, t).len(), 10);
    assert!(matches!(e.set_retention("db", -1), Err(Error::InvalidArgument { .. })));
    let before = e.data_dir_bytes().unwrap();
    e.set_retention("db", 3 * HOUR_NS + HOUR_NS / 4).unwrap(); // keep ts >= 6.75 h
    // Shortening the retention deletes what it expires before returning: hours 0..=5 end before 6.75 h.
    assert_eq!(e.partition_files(db, t).keys().copied().collect::<Vec<_>>(), (6..10).map(|h| h * HOUR_NS).collect::<Vec<_>>());
    assert!(e.data_dir_bytes().unwrap() < before);
    assert_eq!(e.enforce_retention_now().unwrap(), 0, "nothing left for the periodic run");
    let out = e.write("db", &[point("a", HOUR_NS, 1), point("a", 7 * HOUR_NS + HOUR_NS / 2, 7)]).unwrap();
    assert_eq!(out.rows_written, 1);
    let msg = out.rejected[0].1.to_string();
    assert!(msg.contains("points beyond retention policy") && msg.contains("\"db\""), "{msg}");
    let visible: Vec<i64> = read_all(&e).iter().map(|r| r.2).collect();
    assert_eq!(visible, vec![7, 8, 9], "the memtable row of hour 0 is hidden too");
    e.flush().unwrap(); // the expired memtable row is dropped at flush, not written
    assert_eq!(e.partition_files(db, t).len(), 4);
    drop(e);
    now.store(12 * HOUR_NS, Ordering::SeqCst);
    let e = Engine::open(c).unwrap(); // retention runs at open
    assert_eq!(e.partition_files(db, t).len(), 2);
    assert_eq!(read_all(&e).iter().map(|r| r.2).collect::<Vec<_>>(), vec![9]);
    e.set_retention("db", 0).unwrap();
    assert_eq!(read_all(&e).iter().map(|r| r.2).collect::<Vec<_>>(), vec![8, 9], "hour 8 was never deleted");
}

/// Format compatibility: a data directory written by format version 1 (checked in, written by the
/// foundation build) opens, reads, takes new writes, and is rewritten in version 2 by compaction.
#[test]
fn a_version_1_data_directory_is_read_and_compacted_into_version_2() {
    let src = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string())).join("tests/fixtures/v1-datadir");
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&src, dir.path());
    let e = Engine::open(config(dir.path())).unwrap();
    let rows = read_db(&e, "fixture");
    assert_eq!(rows.len(), 200);
    let t0 = 1_700_000_000_000_000_000i64;
    assert_eq!(rows[0], ("a".into(), t0, 0));
    assert_eq!(rows[199], ("b".into(), t0 + 99 * 10_000_000_000, 1));
    let b = series_in(&e, "fixture", "b");
    e.delete("db_missing", "cpu", None, 0, 0).unwrap_err();
    e.delete("fixture", "cpu", Some(&[b]), t0, t0).unwrap();
    let r = e.compact_now().unwrap();
    assert_eq!((r.files_in, r.files_out), (1, 1), "the v1 file is rewritten without the deleted row");
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_db(&e, "fixture").len(), 199);
    let segs: Vec<PathBuf> = walk(dir.path()).into_iter().filter(|p| p.extension().is_some_and(|x| x == "seg")).collect();
    assert_eq!(segs.len(), 1);
    assert_eq!(std::fs::read(&segs[0]).unwrap()[8..12], crate::segment::VERSION.to_le_bytes());
}

/// A segment of a future format version is refused with a message naming the versions, and the
/// engine refuses to start rather than hide the file's rows.
#[test]
fn a_segment_of_a_newer_format_version_is_refused_with_a_clear_error() {
    let src = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string())).join("tests/fixtures/v1-datadir");
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&src, dir.path());
    let seg = walk(dir.path()).into_iter().find(|p| p.extension().is_some_and(|x| x == "seg")).unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[8..12].copy_from_slice(&99u32.to_le_bytes());
    std::fs::write(&seg, &bytes).unwrap();
    let err = Segment::open(&seg).unwrap_err();
    assert!(matches!(err, Error::UnsupportedVersion { version: 99, .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("version 99") && msg.contains(&format!("1 to {}", crate::segment::VERSION)), "{msg}");
    let err = Engine::open(config(dir.path())).unwrap_err();
    assert!(matches!(err, Error::UnsupportedVersion { .. }), "{err}");
    assert!(seg.exists(), "the file is left alone");
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        let to = dst.join(p.file_name().unwrap());
        if p.is_dir() { copy_dir(&p, &to) } else { std::fs::copy(&p, &to).map(|_| ()).unwrap() }
    }
}

/// WAL sequence numbers restart at 1 when the WAL directory lost every file; a tombstone's `wal_seq`
/// must still order it before every later write, or the next replay would hide rows written after it.
#[test]
fn rows_written_after_a_delete_survive_replay_even_if_the_wal_restarted_numbering() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(config(dir.path())).unwrap();
        e.create_database("db", 0, false).unwrap();
        for i in 0..20 {
            e.write("db", &[point("a", i, i)]).unwrap();
        }
        e.delete("db", "cpu", None, 0, 100).unwrap();
        e.flush().unwrap();
    }
    std::fs::remove_dir_all(dir.path().join("wal")).unwrap();
    {
        let e = Engine::open(config(dir.path())).unwrap();
        e.write("db", &[point("a", 5, 55)]).unwrap();
    }
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_all(&e), vec![("a".into(), 5, 55)]);
}

/// Backpressure: when flushing cannot keep up (paused here), memtables grow to twice the flush
/// threshold and then writes are refused with the retryable `Overloaded` error, naming the limit;
/// nothing acknowledged is lost, and writes succeed again once the flush catches up.
#[test]
fn writes_are_refused_at_twice_the_memtable_budget_and_resume_after_flush() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.memtable_bytes_max = 20_000;
    c.frozen_max = 1000; // only the byte budget stalls here
    c.write_stall_timeout = Duration::ZERO;
    let e = Engine::open(c).unwrap();
    e.create_database("db", 0, false).unwrap();
    e.pause_flushes(true);
    let mut acked = Vec::new();
    let mut refused = None;
    for i in 0..10_000i64 {
        match e.write("db", &[point("a", i, i)]) {
            Ok(_) => acked.push(("a".to_string(), i, i)),
            Err(err) => {
                refused = Some(err);
                break;
            }
        }
    }
    let err = refused.expect("writes must be refused before 10,000 rows of ~30 bytes each");
    assert!(matches!(err, Error::Overloaded { .. }), "{err}");
    assert!(err.to_string().contains("40000-byte limit"), "{err}");
    let (_, bytes) = e.memtable_usage();
    // Buffers are counted as they grow (by doubling), so the write that crossed the limit may have
    // added as much again as its series' buffer held: refused at the limit, not unboundedly past it.
    assert!((40_000..60_000).contains(&bytes), "memtables hold {bytes} bytes at refusal");
    e.pause_flushes(false);
    e.flush().unwrap();
    e.write("db", &[point("a", -1, -1)]).unwrap();
    acked.push(("a".to_string(), -1, -1));
    acked.sort();
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_all(&e), acked);
}

/// Several data directories: new partitions spread over both (same filesystem here, so the tie-break
/// on partition count alternates them), everything is read back across a restart, compaction keeps a
/// partition in its directory, and dropping the database empties both.
#[test]
fn partitions_spread_over_several_data_directories() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut c = config(a.path());
    c.extra_data_dirs = vec![b.path().to_path_buf()];
    c.partition_ns = 100;
    let expected;
    {
        let e = Engine::open(c.clone()).unwrap();
        e.create_database("db", 0, false).unwrap();
        // More files per partition than the size-tiered trigger: `compact_now` merges each.
        let rounds = crate::limits::COMPACTION_TRIGGER_FILES + 1;
        for round in 0..rounds as i64 {
            let pts: Vec<_> = (0..40).map(|i| point("h", i * 25 + round, round)).collect();
            e.write("db", &pts).unwrap();
            e.flush().unwrap();
        }
        e.compact_now().unwrap();
        expected = read_all(&e);
        assert_eq!(expected.len(), 40 * rounds);
    }
    let segs = |d: &Path| walk(d).into_iter().filter(|p| p.extension().is_some_and(|x| x == "seg")).count();
    let (in_a, in_b) = (segs(a.path()), segs(b.path()));
    assert!(in_a >= 4 && in_b >= 4, "{in_a} files in the first directory, {in_b} in the second");
    assert!(in_a + in_b <= 10, "10 partitions, each compacted into one directory: {in_a} + {in_b}");
    let e = Engine::open(c).unwrap();
    assert!(matches!(Engine::open(config(b.path())), Err(Error::Io { .. })), "the extra directory is locked");
    assert_eq!(read_all(&e), expected);
    e.drop_database("db", false).unwrap();
    assert_eq!(segs(a.path()) + segs(b.path()), 0);
}

/// The streaming merge with several blocks per input: the trigger's count of flushes of one long series with interleaved
/// and overlapping timestamps (each flush more than `BLOCK_ROWS_MAX` rows) merge into full, sorted,
/// disjoint blocks, last write wins, nothing lost.
#[test]
fn merging_inputs_of_many_blocks_each_streams_into_full_sorted_blocks() {
    use crate::limits::BLOCK_ROWS_MAX;
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    let n = (BLOCK_ROWS_MAX * 2 + 100) as i64;
    let mut expected = std::collections::BTreeMap::new();
    let flushes = crate::limits::COMPACTION_TRIGGER_FILES;
    for flush in 0..flushes as i64 {
        // Flush k writes ts ≡ k (mod 3) over a shifted range: inputs interleave and overlap.
        let pts: Vec<_> = (0..n).map(|i| point("a", flush * 1000 + i * 3 + flush % 3, flush)).collect();
        for p in &pts {
            expected.insert(p.ts, flush);
        }
        for chunk in pts.chunks(10_000) {
            e.write("db", chunk).unwrap();
        }
        e.flush().unwrap();
    }
    let r = e.compact_now().unwrap();
    assert_eq!((r.files_in, r.files_out), (flushes, 1), "{r:?}");
    let expected: Vec<(String, i64, i64)> = expected.into_iter().map(|(ts, v)| ("a".to_string(), ts, v)).collect();
    assert_eq!(read_all(&e), expected);
    let seg = walk(dir.path()).into_iter().find(|p| p.extension().is_some_and(|x| x == "seg")).unwrap();
    let seg = Segment::open(&seg).unwrap();
    let mut blocks = Vec::new();
    seg.for_each_block(|b| blocks.push(b.clone())).unwrap();
    let total: usize = blocks.iter().map(|b| b.n_rows as usize).sum();
    assert_eq!(total, expected.len());
    assert_eq!(blocks.len(), total.div_ceil(BLOCK_ROWS_MAX), "blocks are filled before a new one starts");
    assert!(blocks.windows(2).all(|w| w[0].ts_max < w[1].ts_min));
}
