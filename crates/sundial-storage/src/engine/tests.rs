use super::*;
use crate::test_util::walk;
use crate::types::Column;

fn config(dir: &Path) -> EngineConfig {
    EngineConfig::new(dir)
}

fn point<'a>(table: &'a str, host: &'a str, ts: i64, v: i64) -> WritePoint<'a> {
    WritePoint { line: 1, table, key: None, known: None, tags: vec![("host", host)].into(), fields: vec![("v", Value::Integer(v))].into(), ts }
}

/// A row of table `cpu` with its series key text, as line protocol gives it.
fn keyed<'a>(key: &'a str, host: &'a str, ts: i64, v: i64) -> WritePoint<'a> {
    WritePoint { key: Some(key), ..point("cpu", host, ts, v) }
}

/// All (host, ts, v) rows of table `cpu` in `db`, via the public read path.
fn read_all(e: &Engine, db: &str) -> Vec<(String, i64, Option<i64>)> {
    let (db_id, t_id, host_col, v_col, n) = {
        let cat = e.catalog();
        let Some(d) = cat.db(db) else { return vec![] };
        let Some(t) = d.table("cpu") else { return vec![] };
        (d.id, t.id, t.column("host").unwrap().id, t.column("v").unwrap().id, t.series_count() as u32)
    };
    let series: Vec<SeriesId> = (0..n).collect();
    let snap = e.snapshot(db_id, t_id, &series, i64::MIN, i64::MAX, &[(v_col, FieldType::Integer)]);
    let mut out = Vec::new();
    for s in snap.series().unwrap() {
        let host = e.catalog().db(db).unwrap().table("cpu").unwrap().series_tag_value(s, host_col).unwrap().to_string();
        let rows = snap.read_series(s).unwrap().unwrap();
        for (i, ts) in rows.ts.iter().enumerate() {
            let v = rows.cols[0].as_ref().and_then(|c: &Column| c.get(i)).map(|v| match v {
                Value::Integer(x) => x,
                _ => panic!("type"),
            });
            out.push((host.clone(), *ts, v));
        }
    }
    out.sort();
    out
}

#[test]
fn writes_are_visible_then_survive_restart_flush_and_restart_again() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(config(dir.path())).unwrap();
        assert!(matches!(e.write("db", &[point("cpu", "a", 1, 1)]), Err(Error::DatabaseNotFound { .. })));
        e.create_database("db", 0, false).unwrap();
        let out = e.write("db", &[point("cpu", "a", 1, 1), point("cpu", "b", 2, 2), point("cpu", "a", 3, 3)]).unwrap();
        assert_eq!(out.rows_written, 3);
        assert_eq!(read_all(&e, "db").len(), 3);
    }
    let expected = vec![("a".into(), 1, Some(1)), ("a".into(), 3, Some(3)), ("b".into(), 2, Some(2))];
    {
        let e = Engine::open(config(dir.path())).unwrap();
        assert_eq!(read_all(&e, "db"), expected, "after WAL replay");
        e.flush().unwrap();
        assert_eq!(e.disk_usage().1, 1);
        assert_eq!(read_all(&e, "db"), expected, "after flush");
        // Overwrite one row and add one out of order, in the memtable on top of the segment.
        e.write("db", &[point("cpu", "a", 3, 30), point("cpu", "b", 0, 0)]).unwrap();
    }
    let e = Engine::open(config(dir.path())).unwrap();
    let expected = vec![("a".into(), 1, Some(1)), ("a".into(), 3, Some(30)), ("b".into(), 0, Some(0)), ("b".into(), 2, Some(2))];
    assert_eq!(read_all(&e, "db"), expected);
    e.flush().unwrap();
    assert_eq!(read_all(&e, "db"), expected);
    assert_eq!(crate::wal::list_files(&dir.path().join("wal")).unwrap().len(), 1, "flushed WAL files are deleted");
}

#[test]
fn conflicting_lines_are_rejected_alone() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    let bad = WritePoint { line: 2, table: "cpu", key: None, known: None, tags: vec![("host", "a")].into(), fields: vec![("v", Value::Float(1.5))].into(), ts: 5 };
    let out = e.write("db", &[point("cpu", "a", 1, 1), bad, point("cpu", "a", 9, 9)]).unwrap();
    assert_eq!(out.rows_written, 2);
    assert_eq!(out.rejected.len(), 1);
    assert_eq!(out.rejected[0].0, 2);
    assert!(matches!(out.rejected[0].1, Error::FieldTypeConflict { .. }));
    assert_eq!(read_all(&e, "db").len(), 2);
}

/// Rows of one request resolve their names once per run of rows with the same names (`same_names`):
/// tags in another order, a conflicting type, a tag used as a field and a new field each take the full
/// path, and every series gets its own tags whichever path found it.
#[test]
fn rows_sharing_names_in_a_request_resolve_like_rows_written_alone() {
    let row = |line, tags: Vec<(&'static str, &'static str)>, fields: Vec<(&'static str, Value)>, ts| WritePoint {
        line,
        table: "cpu",
        key: None,
        known: None,
        tags: tags.into(),
        fields: fields.into(),
        ts,
    };
    let rows = vec![
        row(1, vec![("host", "a"), ("dc", "x")], vec![("v", Value::Integer(1))], 1),
        row(2, vec![("host", "b"), ("dc", "x")], vec![("v", Value::Integer(2))], 2),
        row(3, vec![("host", "c"), ("dc", "y")], vec![("v", Value::Integer(3))], 3),
        row(4, vec![("dc", "z"), ("host", "d")], vec![("v", Value::Integer(4))], 4),
        row(5, vec![("host", "e"), ("dc", "x")], vec![("v", Value::Float(5.0))], 5),
        row(6, vec![("host", "f"), ("dc", "x")], vec![("v", Value::Integer(6))], 6),
        row(7, vec![("host", "g"), ("dc", "x")], vec![("dc", Value::Integer(7))], 7),
        row(8, vec![("host", "a"), ("dc", "x")], vec![("v", Value::Integer(8)), ("w", Value::Integer(80))], 8),
        row(9, vec![("host", "h"), ("dc", "y")], vec![("v", Value::Integer(9)), ("w", Value::Integer(90))], 9),
        row(10, vec![("host", "c"), ("dc", "y")], vec![("v", Value::Integer(10))], 10),
    ];
    let dir = tempfile::tempdir().unwrap();
    let (together, alone) = (Engine::open(config(&dir.path().join("1"))).unwrap(), Engine::open(config(&dir.path().join("2"))).unwrap());
    together.create_database("db", 0, false).unwrap();
    alone.create_database("db", 0, false).unwrap();
    let out = together.write("db", &rows).unwrap();
    let mut rejected: Vec<_> = out.rejected.iter().map(|(line, e)| (*line, e.to_string())).collect();
    let mut written = 0;
    let mut alone_rejected = Vec::new();
    for r in &rows {
        let o = alone.write("db", std::slice::from_ref(r)).unwrap();
        written += o.rows_written;
        alone_rejected.extend(o.rejected.iter().map(|(line, e)| (*line, e.to_string())));
    }
    assert_eq!((out.rows_written, written), (8, 8));
    rejected.sort();
    assert_eq!(rejected, alone_rejected);
    assert_eq!(rejected.iter().map(|(l, _)| *l).collect::<Vec<_>>(), vec![5, 7]);
    // Each host's series carries its own dc, and its rows.
    let host_rows = |e: &Engine| {
        let cat = e.catalog();
        let t = cat.db("db").unwrap().table("cpu").unwrap();
        let (host, dc) = (t.column("host").unwrap().id, t.column("dc").unwrap().id);
        (0..t.series_count() as u32)
            .map(|s| (t.series_tag_value(s, host).unwrap().to_string(), t.series_tag_value(s, dc).unwrap().to_string()))
            .collect::<Vec<_>>()
    };
    let series = host_rows(&together);
    assert_eq!(series, host_rows(&alone));
    let want: Vec<(String, String)> =
        [("a", "x"), ("b", "x"), ("c", "y"), ("d", "z"), ("f", "x"), ("h", "y")].iter().map(|(h, d)| (h.to_string(), d.to_string())).collect();
    assert_eq!(series, want);
    assert_eq!(read_all(&together, "db"), read_all(&alone, "db"));
    assert_eq!(read_all(&together, "db").len(), 8);
}

#[test]
fn dropped_database_stays_dropped_across_restart_and_name_can_be_reused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(config(dir.path())).unwrap();
        e.create_database("db", 0, false).unwrap();
        e.write("db", &[point("cpu", "a", 1, 1)]).unwrap();
        e.flush().unwrap();
        e.write("db", &[point("cpu", "a", 2, 2)]).unwrap();
        e.drop_database("db", false).unwrap();
        assert!(e.catalog().db("db").is_none());
        assert!(!dir.path().join("db0").exists());
        e.create_database("db", 0, false).unwrap();
        e.write("db", &[point("cpu", "z", 7, 7)]).unwrap();
    }
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_all(&e, "db"), vec![("z".into(), 7, Some(7))]);
    assert!(matches!(e.create_database("db", 0, false), Err(Error::DatabaseExists { .. })));
    e.create_database("db", 0, true).unwrap();
}

/// Regression (found while documenting the format): `drop_table` logged `DropTable` to catalog.log at
/// once while the table's `CreateTable` was still only in the WAL, so a restart replayed the WAL and the
/// dropped table came back with its rows.
#[test]
fn a_table_dropped_before_its_first_flush_stays_dropped_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(config(dir.path())).unwrap();
        e.create_database("db", 0, false).unwrap();
        e.write("db", &[point("cpu", "a", 1, 1)]).unwrap();
        e.drop_table("db", "cpu").unwrap();
        assert!(e.catalog().db("db").unwrap().table("cpu").is_none());
    }
    {
        let e = Engine::open(config(dir.path())).unwrap();
        assert!(e.catalog().db("db").unwrap().table("cpu").is_none(), "dropped table resurrected by WAL replay");
        // Flushing appends the WAL's CreateTable after the DropTable in catalog.log: still dropped.
        e.flush().unwrap();
        e.write("db", &[point("cpu", "b", 5, 5)]).unwrap();
        e.flush().unwrap();
    }
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_all(&e, "db"), vec![("b".into(), 5, Some(5))]);
}

/// Regression: a catalog.log cut inside its 16-byte header (a crash while it was created) panicked at start.
#[test]
fn a_catalog_log_with_a_torn_header_opens_empty() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(config(dir.path())).unwrap();
        drop(e);
    }
    let log = dir.path().join("catalog.log");
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..13]).unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    e.write("db", &[point("cpu", "a", 1, 1)]).unwrap();
    assert_eq!(read_all(&e, "db"), vec![("a".into(), 1, Some(1))]);
}

/// Regression: eight zero bytes at the end of a WAL file (a crash after the file was extended) stopped
/// start-up instead of being truncated as a torn tail.
#[test]
fn a_zero_filled_wal_tail_is_truncated_and_acknowledged_rows_survive() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(config(dir.path())).unwrap();
        e.create_database("db", 0, false).unwrap();
        e.write("db", &[point("cpu", "a", 1, 1)]).unwrap();
    }
    let wal = std::fs::read_dir(dir.path().join("wal")).unwrap().map(|e| e.unwrap().path()).max().unwrap();
    let mut bytes = std::fs::read(&wal).unwrap();
    bytes.extend_from_slice(&[0u8; 4096]);
    std::fs::write(&wal, bytes).unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_all(&e, "db"), vec![("a".into(), 1, Some(1))]);
}

/// Regression: a segment written by a newer format version was renamed `*.seg.corrupt` and the server
/// started without its rows; it must refuse to start, naming the file and the version.
#[test]
fn a_segment_of_a_newer_format_version_refuses_start_and_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(config(dir.path())).unwrap();
        e.create_database("db", 0, false).unwrap();
        e.write("db", &[point("cpu", "a", 1, 1)]).unwrap();
        e.flush().unwrap();
    }
    let seg = walk(dir.path()).into_iter().find(|p| p.extension().is_some_and(|x| x == "seg")).unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[8..12].copy_from_slice(&99u32.to_le_bytes());
    std::fs::write(&seg, &bytes).unwrap();
    let err = Engine::open(config(dir.path())).unwrap_err();
    assert!(matches!(err, Error::UnsupportedVersion { .. }), "{err}");
    assert!(seg.exists(), "the newer file must not be quarantined");
}

#[test]
fn many_flushes_across_partitions_merge_on_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.partition_ns = 100;
    c.memtable_bytes_max = 2000;
    let e = Engine::open(c).unwrap();
    e.create_database("db", 0, false).unwrap();
    let mut expected = Vec::new();
    for round in 0..20i64 {
        let pts: Vec<_> = (0..10).map(|i| point("cpu", "h", (i * 37 + round * 11) % 500, round)).collect();
        e.write("db", &pts).unwrap();
        for p in &pts {
            expected.retain(|(_, t, _): &(String, i64, Option<i64>)| *t != p.ts);
            expected.push(("h".to_string(), p.ts, Some(round)));
        }
    }
    e.flush().unwrap();
    expected.sort();
    assert_eq!(read_all(&e, "db"), expected);
    assert!(e.disk_usage().1 > 5);
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_all(&e, "db"), expected);
}

#[test]
fn a_second_engine_cannot_open_the_same_directory() {
    let dir = tempfile::tempdir().unwrap();
    let _e = Engine::open(config(dir.path())).unwrap();
    let err = Engine::open(config(dir.path())).err().unwrap();
    assert!(err.to_string().contains("in use"), "{err}");
}

#[test]
fn an_idle_memtable_is_flushed_and_its_wal_emptied() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.flush_idle = Duration::from_millis(100);
    let e = Engine::open(cfg).unwrap();
    e.create_database("db", 0, false).unwrap();
    e.write("db", &[point("cpu", "a", 1, 1)]).unwrap();
    // Polls a condition with a deadline (the flush thread checks every 500 ms): no fixed sleep.
    let deadline = Instant::now() + Duration::from_secs(20);
    while e.memtable_usage().0 > 0 {
        assert!(Instant::now() < deadline, "the idle memtable was not flushed");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(e.disk_usage().1, 1);
    assert_eq!(read_all(&e, "db"), vec![("a".into(), 1, Some(1))]);
}

/// Reads, deletes and compaction give the same answers whether the engine's block-index cache keeps
/// nothing (every lookup decodes footer groups from the file) or everything; its stats are exposed.
#[test]
fn results_do_not_depend_on_the_block_index_cache_capacity() {
    let mut results = Vec::new();
    for capacity in [0, 1 << 20] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path());
        cfg.block_index_cache_bytes = capacity;
        cfg.compaction_threads = 0;
        let e = Engine::open(cfg).unwrap();
        e.create_database("db", 0, false).unwrap();
        let hosts: Vec<String> = (0..300).map(|i| format!("h{i:03}")).collect();
        // The size-tiered trigger's count of files: `compact_now` merges them.
        let flushes = crate::limits::COMPACTION_TRIGGER_FILES;
        for flush in 0..flushes as i64 {
            let mut pts = Vec::new();
            for (i, h) in hosts.iter().enumerate() {
                for k in 0..3 {
                    pts.push(point("cpu", h, flush * 100 + k * 10 + i as i64 % 7, flush * 1000 + i as i64));
                }
            }
            e.write("db", &pts).unwrap();
            e.flush().unwrap();
        }
        e.delete("db", "cpu", None, 105, 112).unwrap();
        let before = read_all(&e, "db");
        let deleted = (0..300).map(|i| usize::from(i % 7 >= 5) + usize::from(i % 7 <= 2)).sum::<usize>();
        assert_eq!(before.len(), 300 * 3 * flushes - deleted);
        assert!(before.iter().all(|r| !(105..=112).contains(&r.1)));
        e.compact_now().unwrap();
        assert_eq!(e.disk_usage().1, 1);
        let after = read_all(&e, "db");
        assert_eq!(before, after);
        let st = e.block_index_cache_stats();
        assert_eq!(st.capacity, capacity);
        assert!(st.bytes <= st.capacity, "{st:?}");
        if capacity == 0 {
            assert_eq!((st.entries, st.hits), (0, 0), "{st:?}");
        } else {
            assert!(st.hits > 0 && st.entries > 0, "{st:?}");
        }
        results.push(after);
    }
    assert_eq!(results[0], results[1]);
}

/// Rows that carry their series key text (line protocol's) find their series through the engine's
/// cache of keys from one write to the next, and a key whose table or database was dropped since does
/// not send rows to the dead table: they go to the one created anew.
#[test]
fn series_keys_find_series_across_writes_and_never_a_dropped_table() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    let cached = |e: &Engine, key: &str| {
        let db = e.catalog().db("db").unwrap().id;
        let k = e.inner.series_keys.read();
        k.get(k.hash(db, key), db, key)
    };
    e.write("db", &[keyed("cpu,host=a", "a", 1, 1)]).unwrap();
    assert_eq!(cached(&e, "cpu,host=a"), Some((0, 0)));
    e.write("db", &[keyed("cpu,host=a", "a", 2, 2), keyed("cpu,host=b", "b", 2, 3)]).unwrap();
    // Another text for the same series (as tags written in another order are).
    e.write("db", &[keyed("cpu,host=a,", "a", 3, 4)]).unwrap();
    assert_eq!(cached(&e, "cpu,host=a,"), Some((0, 0)));
    assert_eq!(e.catalog().db("db").unwrap().table("cpu").unwrap().series_count(), 2);
    let a = |ts, v| ("a".to_string(), ts, Some(v));
    assert_eq!(read_all(&e, "db"), vec![a(1, 1), a(2, 2), a(3, 4), ("b".to_string(), 2, Some(3))]);

    // The first row of a write always takes the catalog (there is no field set to reuse yet): the
    // dropped table's key comes second.
    let b = |ts, v| ("b".to_string(), ts, Some(v));
    e.drop_table("db", "cpu").unwrap();
    e.write("db", &[keyed("cpu,host=b", "b", 5, 5), keyed("cpu,host=a", "a", 5, 6)]).unwrap();
    assert_eq!(read_all(&e, "db"), vec![a(5, 6), b(5, 5)]);
    let table = e.catalog().db("db").unwrap().table("cpu").unwrap().id;
    assert_eq!(cached(&e, "cpu,host=a"), Some((table, 1)));

    e.drop_database("db", false).unwrap();
    e.create_database("db", 0, false).unwrap();
    e.write("db", &[keyed("cpu,host=b", "b", 6, 6), keyed("cpu,host=a", "a", 6, 7)]).unwrap();
    assert_eq!(read_all(&e, "db"), vec![a(6, 7), b(6, 6)]);
}

/// A request's rows of a series new to it, its key written again at another address (equal text: the
/// prelookup cannot tie them), land in one series; every key the request resolved is in the cache of
/// series keys afterwards, for the next request.
#[test]
fn a_new_series_key_repeated_in_one_write_names_one_series_and_is_cached_after() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    let (x1, x2, y) = (String::from("cpu,host=x"), String::from("cpu,host=x"), String::from("cpu,host=y"));
    assert_ne!(x1.as_ptr(), x2.as_ptr());
    e.write("db", &[keyed(&x1, "x", 1, 1), keyed(&y, "y", 1, 2), keyed(&x2, "x", 2, 3), keyed(&y, "y", 2, 4)]).unwrap();
    assert_eq!(e.catalog().db("db").unwrap().table("cpu").unwrap().series_count(), 2);
    let row = |h: &str, ts, v| (h.to_string(), ts, Some(v));
    assert_eq!(read_all(&e, "db"), vec![row("x", 1, 1), row("x", 2, 3), row("y", 1, 2), row("y", 2, 4)]);
    let db = e.catalog().db("db").unwrap().id;
    let k = e.inner.series_keys.read();
    let cached: Vec<_> = ["cpu,host=x", "cpu,host=y"].iter().map(|key| k.get(k.hash(db, key), db, key)).collect();
    assert_eq!(cached, [Some((0, 0)), Some((0, 1))]);
}

/// A write of more new series than the resolve adds in one exclusive run (`RESOLVE_EXCLUSIVE_ROWS`),
/// each series' key written again at other addresses: right after (found among the keys gathered for the
/// cache) and once every series is made (found in the cache, or gathered still for the last run). Each
/// lands in one series, every key is cached after; two writers doing so at once, with keys of their own
/// and shared, agree on every series.
#[test]
fn new_series_over_several_exclusive_runs_are_named_once_and_cached() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    let n = RESOLVE_EXCLUSIVE_ROWS * 5 / 2;
    let hosts: Vec<String> = (0..n).map(|i| format!("h{i:05}")).collect();
    let keys: Vec<[String; 3]> = hosts.iter().map(|h| std::array::from_fn(|_| format!("cpu,host={h}"))).collect();
    let mut points = Vec::new();
    for (i, (h, k)) in hosts.iter().zip(&keys).enumerate() {
        points.push(keyed(&k[0], h, 1, i as i64));
        points.push(keyed(&k[1], h, 2, i as i64));
    }
    points.extend(hosts.iter().zip(&keys).enumerate().map(|(i, (h, k))| keyed(&k[2], h, 3, i as i64)));
    assert_eq!(e.write("db", &points).unwrap().rows_written, 3 * n);
    assert_eq!(e.catalog().db("db").unwrap().table("cpu").unwrap().series_count(), n);
    let want: Vec<_> = hosts.iter().enumerate().flat_map(|(i, h)| (1..=3).map(move |ts| (h.clone(), ts, Some(i as i64)))).collect();
    assert_eq!(read_all(&e, "db"), want);
    let db = e.catalog().db("db").unwrap().id;
    {
        let k = e.inner.series_keys.read();
        let cached = keys.iter().enumerate().filter(|(i, k3)| k.get(k.hash(db, &k3[0]), db, &k3[0]).map(|(_, s)| s) == Some(*i as SeriesId));
        assert_eq!(cached.count(), n);
    }

    // Two writers at once, each of its own new hosts and of hosts both write: one series per host.
    let both: Vec<String> = (0..n).map(|i| format!("cpu,host=b{i:05}")).collect();
    std::thread::scope(|s| {
        for w in 0..2 {
            let (e, both) = (&e, &both);
            s.spawn(move || {
                let own: Vec<String> = (0..n).map(|i| format!("cpu,host=w{w}-{i:05}")).collect();
                let points: Vec<WritePoint<'_>> = own
                    .iter()
                    .zip(both)
                    .flat_map(|(o, b)| [keyed(o, &o[9..], 10 + w, 1), keyed(b, &b[9..], 10 + w, 2)])
                    .collect();
                assert_eq!(e.write("db", &points).unwrap().rows_written, 2 * n);
            });
        }
    });
    assert_eq!(e.catalog().db("db").unwrap().table("cpu").unwrap().series_count(), 4 * n);
    let rows = read_all(&e, "db");
    let shared: Vec<_> = rows.iter().filter(|(h, _, _)| h.starts_with('b')).collect();
    assert_eq!(shared.len(), 2 * n, "each shared host's series has both writers' rows");
    assert!(shared.chunks(2).all(|c| c[0].0 == c[1].0 && (c[0].1, c[1].1) == (10, 11)));
}

/// `Inner::prelookup` gives a row whose key is an earlier row's very text (same address and length, as
/// the line-protocol parser hands out a repeated key) that row's series without looking it up again; a
/// key at the same address but of another length (a prefix: another series) is looked up as usual.
#[test]
fn a_key_at_an_earlier_rows_address_is_that_rows_series_only_at_its_length() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    let text = String::from("cpu,host=ab");
    let (long, short) = (&text[..11], &text[..10]); // "cpu,host=ab" and "cpu,host=a"
    assert_eq!(long.as_ptr(), short.as_ptr());
    let rows = |ts: i64| {
        [keyed(long, "ab", ts, 1), keyed(short, "a", ts, 2), keyed(long, "ab", ts + 1, 3), keyed(short, "a", ts + 1, 4)]
    };
    // New series (looked up in the catalog under the lock), then known ones (found before it).
    e.write("db", &rows(10)).unwrap();
    e.write("db", &rows(20)).unwrap();
    assert_eq!(e.catalog().db("db").unwrap().table("cpu").unwrap().series_count(), 2);
    let row = |h: &str, ts, v| (h.to_string(), ts, Some(v));
    let want = vec![row("a", 10, 2), row("a", 11, 4), row("a", 20, 2), row("a", 21, 4)];
    let want = [want, vec![row("ab", 10, 1), row("ab", 11, 3), row("ab", 20, 1), row("ab", 21, 3)]].concat();
    assert_eq!(read_all(&e, "db"), want);
    let db = e.catalog().db("db").unwrap().id;
    let pre = e.inner.prelookup("db", &rows(30), KeyCache::Probe).unwrap();
    let series: Vec<_> = pre.rows.iter().map(|(_, s)| s.map(|(_, s)| s)).collect();
    assert_eq!(series, [Some(0), Some(1), Some(0), Some(1)]);
    let k = e.inner.series_keys.read();
    assert_eq!(pre.rows.iter().map(|(h, _)| *h).collect::<Vec<_>>(), [long, short, long, short].map(|key| Some(k.hash(db, key))));
    drop(k);
    // Without the cache, found in the catalog: the same series and hashes.
    assert_eq!(e.inner.prelookup("db", &rows(30), KeyCache::Skip).unwrap().rows, pre.rows);
}

/// A write that does not look its keys up in the cache of series keys first ([`KeyCache::Skip`]) finds
/// and makes the series a write that does would (new series, a series made earlier in the same write,
/// series of earlier writes), and adds its new keys to the cache: a later probe knows them.
#[test]
fn writes_skipping_the_key_cache_find_the_same_series_and_fill_it() {
    let keys: Vec<String> = (0..60).map(|i| format!("cpu,host=h{i}")).collect();
    let hosts: Vec<String> = (0..60).map(|i| format!("h{i}")).collect();
    // Hosts 0..40 in the first write (each twice), 20..60 in the second: some known, some new.
    let write = |first: usize, ts: i64| -> Vec<WritePoint<'_>> {
        (0..80).map(|i| keyed(&keys[first + i % 40], &hosts[first + i % 40], ts + (i / 40) as i64, i as i64)).collect()
    };
    let mut answers = Vec::new();
    for cache in [KeyCache::Probe, KeyCache::Skip] {
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::open(config(dir.path())).unwrap();
        e.create_database("db", 0, false).unwrap();
        e.write_with("db", &write(0, 10), cache).unwrap();
        e.write_with("db", &write(20, 20), cache).unwrap();
        let probe = e.key_probe("db").unwrap();
        assert!(keys.iter().all(|k| probe.get(k).is_some()), "{cache:?}: every key in the cache after the writes");
        let t = e.catalog().db("db").unwrap().table("cpu").unwrap().id;
        let series = |k: &str| probe.get(k).map(|known| (known.table, known.series));
        assert!(keys.iter().all(|k| series(k).is_some_and(|(table, _)| table == t)));
        answers.push((read_all(&e, "db"), keys.iter().map(|k| series(k)).collect::<Vec<_>>()));
    }
    assert_eq!(answers[0].0.len(), 160);
    assert_eq!(answers[0], answers[1]);
}

/// A key of a series the catalog has and the cache of series keys does not (the engine opened again,
/// the cache empty) is cached by the first write that has it, also one that skips the cache
/// ([`KeyCache::Skip`], the server's): before, only new series' keys were, and the server's key probe
/// never found the keys of series made before a restart.
#[test]
fn keys_of_series_made_before_a_restart_are_cached_by_the_next_write() {
    let keys: Vec<String> = (0..60).map(|i| format!("cpu,host=h{i}")).collect();
    let hosts: Vec<String> = (0..60).map(|i| format!("h{i}")).collect();
    let write = |ts: i64| -> Vec<WritePoint<'_>> { (0..60).map(|i| keyed(&keys[i], &hosts[i], ts, i as i64)).collect() };
    for cache in [KeyCache::Probe, KeyCache::Skip] {
        let dir = tempfile::tempdir().unwrap();
        let before = {
            let e = Engine::open(config(dir.path())).unwrap();
            e.create_database("db", 0, false).unwrap();
            e.write_with("db", &write(10), cache).unwrap();
            let probe = e.key_probe("db").unwrap();
            keys.iter().map(|k| probe.get(k).map(|known| (known.table, known.series))).collect::<Vec<_>>()
        };
        let e = Engine::open(config(dir.path())).unwrap();
        let probe = e.key_probe("db").unwrap();
        assert!(keys.iter().all(|k| probe.get(k).is_none()), "{cache:?}: the cache starts empty");
        e.write_with("db", &write(20), cache).unwrap();
        let after: Vec<_> = keys.iter().map(|k| probe.get(k).map(|known| (known.table, known.series))).collect();
        assert!(before.iter().all(Option::is_some));
        assert_eq!(after, before, "{cache:?}: every key cached again, naming its series");
        assert_eq!(read_all(&e, "db").len(), 120);
    }
}

/// A write's series found before it takes `write_lock` (`Inner::prelookup`: in the cache of series keys,
/// or in the catalog for rows without a key) are used only for a table the write resolves under the
/// lock: when the table is dropped and created again in between, the rows go to the new table's series,
/// made or found under the lock, not to the dropped table's.
#[test]
fn prelooked_series_of_a_table_dropped_since_are_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    let row = |key: Option<&'static str>, host: &'static str, ts, v| WritePoint {
        line: 1,
        table: "cpu",
        key,
        known: None,
        tags: vec![("host", host)].into(),
        fields: vec![("v", Value::Integer(v))].into(),
        ts,
    };
    let a = |ts, v| row(Some("cpu,host=a"), "a", ts, v);
    e.write("db", &[a(1, 1), row(None, "b", 1, 2), row(None, "c", 1, 3)]).unwrap();
    let points = [a(2, 10), row(None, "b", 2, 20), row(None, "c", 2, 30), a(3, 11)];
    let pre = e.inner.prelookup("db", &points, KeyCache::Probe).unwrap();
    let old = e.catalog().db("db").unwrap().table("cpu").unwrap().id;
    let seen: Vec<_> = pre.rows.iter().map(|r| r.1).collect();
    assert_eq!(seen, [Some((old, 0)), Some((old, 1)), Some((old, 2)), Some((old, 0))]);

    e.drop_table("db", "cpu").unwrap();
    e.write("db", &[row(None, "c", 1, 3)]).unwrap();
    let new = e.catalog().db("db").unwrap().table("cpu").unwrap().id;
    assert_ne!(new, old);
    let (batch, rejected, _) = {
        let _w = e.inner.lock_writes();
        e.inner.resolve("db", &points, Some(pre)).unwrap()
    };
    assert!(rejected.is_empty());
    let rows: Vec<_> = batch.rows.iter().map(|r| (r.table, r.series, r.ts)).collect();
    // c is series 0 of the new table; a and b are made by this resolve, in row order.
    assert_eq!(rows, [(new, 1, 2), (new, 2, 2), (new, 0, 2), (new, 1, 3)]);
}

/// A row whose tags are left out ([`WritePoint::known`], from [`KeyProbe::get`]) goes to the series
/// its key named, survives a restart (the WAL holds ids, not tags) and reads back under that series'
/// tags; the probe knows only keys written with their database, and only once written.
#[test]
fn rows_without_tags_go_to_the_series_their_key_named() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(config(dir.path())).unwrap();
        e.create_database("db", 0, false).unwrap();
        e.create_database("other", 0, false).unwrap();
        let probe = e.key_probe("db").unwrap();
        assert_eq!(probe.get("cpu,host=a"), None, "not written yet");
        e.write("db", &[keyed("cpu,host=a", "a", 1, 1), keyed("cpu,host=b", "b", 1, 2)]).unwrap();
        assert!(e.key_probe("other").unwrap().get("cpu,host=a").is_none(), "another database's keys");
        assert!(e.key_probe("nope").is_none());
        let (ka, kb) = (probe.get("cpu,host=a").unwrap(), probe.get("cpu,host=b").unwrap());
        assert_ne!(ka, kb);
        let bare = |key, known, ts, v| WritePoint { known: Some(known), tags: vec![].into(), ..keyed(key, "", ts, v) };
        let out = e.write("db", &[bare("cpu,host=b", kb, 2, 20), bare("cpu,host=a", ka, 2, 10), keyed("cpu,host=c", "c", 2, 30)]).unwrap();
        assert_eq!((out.rows_written, out.rejected.len()), (3, 0));
        assert_eq!(e.catalog().db("db").unwrap().table("cpu").unwrap().series_count(), 3, "no series without tags");
    }
    let e = Engine::open(config(dir.path())).unwrap();
    let want: Vec<(String, i64, Option<i64>)> =
        vec![("a".into(), 1, Some(1)), ("a".into(), 2, Some(10)), ("b".into(), 1, Some(2)), ("b".into(), 2, Some(20)), ("c".into(), 2, Some(30))];
    assert_eq!(read_all(&e, "db"), want, "after WAL replay");
}

/// A row without its tags that would need them (its table dropped since the probe, a field with no
/// column yet, or of another type) fails the whole write with [`Error::TagsNeeded`] naming its line,
/// before anything is applied or created; the same rows with their tags are then written as usual.
#[test]
fn rows_without_tags_that_need_them_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    e.write("db", &[keyed("cpu,host=a", "a", 1, 1)]).unwrap();
    let known = e.key_probe("db").unwrap().get("cpu,host=a").unwrap();
    let bare = |line, fields: Vec<(&'static str, Value)>| WritePoint {
        line,
        known: Some(known),
        tags: vec![].into(),
        fields: fields.into(),
        ..keyed("cpu,host=a", "a", 5, 0)
    };
    let first = keyed("cpu,host=z", "z", 5, 9);
    for (fields, why) in [
        (vec![("v", Value::Integer(2)), ("w", Value::Integer(3))], "a new field"),
        (vec![("v", Value::Float(2.5))], "a field of another type"),
    ] {
        let err = e.write("db", &[first.clone(), bare(7, vec![("v", Value::Integer(2))]), bare(8, fields)]).unwrap_err();
        assert!(matches!(err, Error::TagsNeeded { line: 8 }), "{why}: {err}");
        assert!(!err.is_user_error());
        let made = {
            let cat = e.catalog();
            let t = cat.db("db").unwrap().table("cpu").unwrap();
            (t.series_count(), t.column("w").is_some())
        };
        assert_eq!(made, (1, false), "{why}: nothing created");
        assert_eq!(read_all(&e, "db"), [("a".to_string(), 1, Some(1))], "{why}: nothing written");
    }
    // With its tags: the new column is made; the float is refused alone, as ever.
    let tagged = |fields: Vec<(&'static str, Value)>| WritePoint { fields: fields.into(), ..keyed("cpu,host=a", "a", 5, 0) };
    let out = e.write("db", &[first, tagged(vec![("v", Value::Integer(2)), ("w", Value::Integer(3))]), tagged(vec![("v", Value::Float(2.5))])]).unwrap();
    assert_eq!((out.rows_written, out.rejected.len()), (2, 1));

    e.drop_table("db", "cpu").unwrap();
    let err = e.write("db", &[bare(3, vec![("v", Value::Integer(4))])]).unwrap_err();
    assert!(matches!(err, Error::TagsNeeded { line: 3 }), "{err}");
    assert!(e.catalog().db("db").unwrap().table("cpu").is_none(), "the dropped table is not made again without tags");
    e.write("db", &[keyed("cpu,host=a", "a", 3, 4)]).unwrap();
    assert_eq!(read_all(&e, "db"), [("a".to_string(), 3, Some(4))]);
}

/// `scan_blocks_where` with an [`HourFilter`]: a block is read only in the hours whose statistics may
/// hold a wanted row (here `v > 90`, in hours 1 and 4 of six), every wanted row is still found, and
/// ranges cutting hours, or holding none of the kept ones, read only what they should.
#[test]
fn scan_reads_only_the_hours_the_filter_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    const H: i64 = hours::HOUR_NS;
    let (t0, step) = (1000 * H + 7_000_000_000, 5_000_000_000i64); // 7 s past an hour, every 5 s
    let n = 6 * H / step;
    let hour = |i: i64| (t0 + i * step).div_euclid(H) - t0.div_euclid(H);
    let v = |i: i64| if (hour(i) == 1 || hour(i) == 4) && i % 50 == 7 { 95 } else { i % 80 };
    let points: Vec<_> = (0..n).map(|i| point("cpu", "a", t0 + i * step, v(i))).collect();
    e.write("db", &points).unwrap();
    e.flush().unwrap();
    let (db, t, cols) = {
        let cat = e.catalog();
        let d = cat.db("db").unwrap();
        let t = d.table("cpu").unwrap();
        (d.id, t.id, vec![(t.column("v").unwrap().id, FieldType::Integer)])
    };
    for (lo, hi) in [(i64::MIN, i64::MAX), (t0 + H / 2, t0 + 4 * H + H / 3), (t0 + 2 * H, t0 + 3 * H), (t0 + 4 * H + 60 * step, t0 + 4 * H + 61 * step)] {
        let snap = e.snapshot(db, t, &[0], lo, hi, &cols);
        let mut keep = |_: SeriesId, h: &HourStats, k: usize| {
            let c = &h.cols[0];
            assert!(c.exact, "integer statistics of every hour");
            c.count[k] > 0 && c.max[k] as i64 > 90
        };
        let (mut handed, mut found) = (0, Vec::new());
        snap.scan_blocks_where(&[0], |_, _| true, Some(HourFilter { cols: &cols, keep: &mut keep }), |r| {
            handed += r.ts.len();
            for (i, ts) in r.ts.iter().enumerate() {
                assert!(lo <= *ts && *ts <= hi, "{ts} outside [{lo}, {hi}]");
                if let Some(Value::Integer(x)) = r.col(0).and_then(|c| c.get(r.offset + i))
                    && x > 90
                {
                    found.push(*ts);
                }
            }
        })
        .unwrap();
        let inside = |i: &i64| (lo..=hi).contains(&(t0 + i * step));
        let want: Vec<i64> = (0..n).filter(|i| v(*i) > 90 && inside(i)).map(|i| t0 + i * step).collect();
        assert_eq!(found, want, "[{lo}, {hi}]");
        let kept = (0..n).filter(|i| matches!(hour(*i), 1 | 4) && inside(i)).count();
        assert_eq!(handed, kept, "[{lo}, {hi}]: rows handed out, those of the kept hours");
    }
}

/// Every (series, ts, v) a scan of all of `cpu`'s series hands out.
fn scan_all(e: &Engine) -> Vec<(SeriesId, i64, Option<i64>)> {
    let (db, t, cols, n) = {
        let cat = e.catalog();
        let d = cat.db("db").unwrap();
        let t = d.table("cpu").unwrap();
        (d.id, t.id, vec![(t.column("v").unwrap().id, FieldType::Integer)], t.series_count() as u32)
    };
    let series: Vec<SeriesId> = (0..n).collect();
    let snap = e.snapshot(db, t, &series, i64::MIN, i64::MAX, &cols);
    let mut out = Vec::new();
    snap.scan(&series, |r| {
        for (i, ts) in r.ts.iter().enumerate() {
            let v = r.col(0).and_then(|c| c.get(r.offset + i)).map(|v| match v {
                Value::Integer(x) => x,
                _ => panic!("type"),
            });
            out.push((r.series, *ts, v));
        }
    })
    .unwrap();
    out
}

/// A read of at least `freeze_for_read_series_min` series that the active memtable holds freezes it and
/// reads it frozen: the same rows as a copy gives, whether series are read whole or scanned, and later
/// writes land in a new memtable. A read of fewer series copies them and leaves the memtable active.
#[test]
fn a_read_of_many_series_in_the_memtable_freezes_it_and_reads_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.freeze_for_read_series_min = 3;
    let e = Engine::open(c).unwrap();
    e.pause_flushes(true);
    e.create_database("db", 0, false).unwrap();
    let active_rows = |e: &Engine| e.inner.mem.read().active.rows;
    let frozen = |e: &Engine| e.inner.mem.read().frozen.len();
    e.write("db", &[point("cpu", "a", 10, 1), point("cpu", "b", 20, 2), point("cpu", "a", 5, 3)]).unwrap();
    let two = vec![("a".to_string(), 5, Some(3)), ("a".into(), 10, Some(1)), ("b".into(), 20, Some(2))];
    assert_eq!(read_all(&e, "db"), two, "two series in the memtable: copied");
    assert_eq!((active_rows(&e), frozen(&e)), (3, 0));
    // A third series, and a late row for `a` in the staging area.
    e.write("db", &[point("cpu", "c", 30, 4), point("cpu", "a", 7, 5), point("cpu", "a", 10, 6)]).unwrap();
    let scanned = scan_all(&e);
    assert_eq!((active_rows(&e), frozen(&e)), (0, 1), "three series: frozen by the read");
    assert_eq!(scanned, vec![(0, 5, Some(3)), (0, 7, Some(5)), (0, 10, Some(6)), (1, 20, Some(2)), (2, 30, Some(4))]);
    let three = vec![
        ("a".to_string(), 5, Some(3)),
        ("a".into(), 7, Some(5)),
        ("a".into(), 10, Some(6)),
        ("b".into(), 20, Some(2)),
        ("c".into(), 30, Some(4)),
    ];
    assert_eq!(read_all(&e, "db"), three);
    // Rows written after the freeze are in the new active memtable, on top of the frozen one.
    e.write("db", &[point("cpu", "b", 20, 7), point("cpu", "d", 1, 8)]).unwrap();
    assert_eq!(active_rows(&e), 2);
    let mut four = three.clone();
    four[3].2 = Some(7);
    four.push(("d".into(), 1, Some(8)));
    four.sort();
    assert_eq!(read_all(&e, "db"), four, "the new memtable holds two series: copied, over the frozen one");
    // A read announced as three series freezes the memtable of the two read first (a part of it).
    e.write("db", &[point("cpu", "e", 2, 9)]).unwrap();
    e.prepare_read(0, 0, 2);
    assert_eq!((active_rows(&e), frozen(&e)), (3, 1), "two series announced: left active");
    e.prepare_read(0, 0, 3);
    assert_eq!((active_rows(&e), frozen(&e)), (0, 2), "three series announced: frozen");
    four.push(("e".into(), 2, Some(9)));
    four.sort();
    assert_eq!(read_all(&e, "db"), four, "over two frozen memtables");
    e.pause_flushes(false);
    e.flush().unwrap();
    assert_eq!(read_all(&e, "db"), four, "after the flush");
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(read_all(&e, "db"), four, "after restart");
}

/// After open, the block-index cache fills in the background before any read (up to half its capacity),
/// and not at all with `warm_block_index` off.
#[test]
fn open_warms_the_block_index_cache() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(config(dir.path())).unwrap();
        e.create_database("db", 0, false).unwrap();
        let hosts: Vec<String> = (0..3000).map(|i| format!("h{i}")).collect();
        let pts: Vec<_> = hosts.iter().enumerate().flat_map(|(i, h)| (0..3).map(move |k| point("cpu", h, k * 10, i as i64))).collect();
        e.write("db", &pts).unwrap();
        e.flush().unwrap();
    }
    for (warm, capacity) in [(true, limits::BLOCK_INDEX_CACHE_BYTES_DEFAULT), (true, 1 << 20), (false, limits::BLOCK_INDEX_CACHE_BYTES_DEFAULT)] {
        let mut c = config(dir.path());
        c.warm_block_index = warm;
        c.block_index_cache_bytes = capacity;
        let e = Engine::open(c).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while warm && e.block_index_cache_stats().entries == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if !warm {
            std::thread::sleep(Duration::from_millis(200));
        }
        let st = e.block_index_cache_stats();
        assert_eq!(st.hits, 0, "no read yet: {st:?}");
        assert!(st.bytes <= st.capacity, "{st:?}");
        assert_eq!(st.entries > 0, warm, "warm {warm}, capacity {capacity}: {st:?}");
        assert_eq!(read_all(&e, "db").len(), 9000);
    }
}

/// A compaction's output is loaded into the block-index cache when it is published (with
/// `warm_block_index`), so the first reads after it find their groups: more groups are cached after a
/// compaction with warming on than off, within the capacity, and the rows are the same.
#[test]
fn compaction_warms_its_output_groups() {
    let mut entries = Vec::new();
    for warm in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(dir.path());
        c.warm_block_index = warm;
        let e = Engine::open(c).unwrap();
        e.create_database("db", 0, false).unwrap();
        let hosts: Vec<String> = (0..2000).map(|i| format!("h{i}")).collect();
        let flushes = crate::limits::COMPACTION_TRIGGER_FILES;
        for round in 0..flushes as i64 {
            let pts: Vec<_> =
                hosts.iter().enumerate().flat_map(|(i, h)| (0..3).map(move |k| point("cpu", h, round * 100 + k * 10, i as i64))).collect();
            e.write("db", &pts).unwrap();
            e.flush().unwrap();
        }
        e.compact_now().unwrap();
        assert_eq!(e.disk_usage().1, 1);
        let st = e.block_index_cache_stats();
        assert!(st.bytes <= st.capacity, "{st:?}");
        entries.push(st.entries);
        assert_eq!(read_all(&e, "db").len(), 2000 * 3 * flushes);
    }
    assert!(entries[1] > entries[0], "groups cached after a compaction, warming off and on: {entries:?}");
}

#[test]
fn concurrent_writes_read_the_same_before_and_after_replay() {
    // Eight writers create series, and overwrite each other's rows (the same hosts and timestamps) at
    // once, through memtables small enough to freeze mid-run. Each write's rows are applied in its
    // turn (`engine/turns.rs`): the memtable must pick the same last write of each (host, ts) as the
    // WAL replay and the flushed segments do. Whether a write overtakes another is up to the scheduler:
    // three rounds, so that a broken order is seen in nearly every run (with rows applied before their
    // turn, one round of four writers failed one run in three, of eight writers two in three).
    for round in 0..3u64 {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path());
        cfg.memtable_bytes_max = 256 * 1024;
        let live = {
            let e = Engine::open(cfg.clone()).unwrap();
            e.create_database("db", 0, false).unwrap();
            let hosts: Vec<String> = (0..64).map(|h| format!("h{h}")).collect();
            std::thread::scope(|s| {
                for w in 0..8i64 {
                    let (e, hosts) = (&e, &hosts);
                    s.spawn(move || {
                        let mut rng = super::model_tests::Rng(0x9e37_79b9_7f4a_7c15 ^ (round << 8) ^ w as u64);
                        for k in 0..60i64 {
                            let points: Vec<WritePoint<'_>> = (0..500i64)
                                .map(|r| {
                                    // Hosts beyond the first 16 appear as the run goes on: new series in
                                    // every writer's requests.
                                    let host = &hosts[rng.below(16 + 48 * k as u64 / 60) as usize];
                                    point("cpu", host, rng.below(50) as i64, w * 1_000_000 + k * 1000 + r)
                                })
                                .collect();
                            assert_eq!(e.write("db", &points).unwrap().rows_written, 500);
                        }
                    });
                }
            });
            let live = read_all(&e, "db");
            assert!(live.len() > 16 * 50 / 2, "round {round}, few rows: {}", live.len());
            live
        };
        let e = Engine::open(cfg).unwrap();
        assert_eq!(read_all(&e, "db"), live, "round {round}, after WAL replay");
        e.flush().unwrap();
        assert_eq!(read_all(&e, "db"), live, "round {round}, after flush");
    }
}

/// [`Engine::write_waits`] counts the writes, the time they waited for the WAL's fsync, and a write held
/// back because the flush was behind (here: paused, with one frozen memtable allowed), for as long as it
/// was held, refused or not.
#[test]
fn write_waits_count_writes_and_the_time_stalled_behind_the_flush() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.memtable_bytes_max = 1;
    c.frozen_max = 1;
    c.write_stall_timeout = Duration::from_millis(300);
    c.memory_bytes_reject = Some(1 << 30);
    let e = Engine::open(c).unwrap();
    e.create_database("db", 0, false).unwrap();
    assert_eq!(e.write_waits(), WriteWaits::default());
    e.pause_flushes(true);
    // Frozen by its own size: one memtable waits for the flush, the most allowed.
    e.write("db", &[point("cpu", "a", 1, 1)]).unwrap();
    let w = e.write_waits();
    assert_eq!((w.writes, w.stalled_writes), (1, 0));
    assert!(w.durable_secs > 0.0, "{w:?}");
    let refused = e.write("db", &[point("cpu", "a", 2, 2)]);
    assert!(matches!(refused, Err(Error::Overloaded { .. })), "{refused:?}");
    let w = e.write_waits();
    assert_eq!((w.writes, w.stalled_writes), (1, 1));
    assert!(w.stall_secs >= 0.3, "{w:?}");
    e.pause_flushes(false);
    e.write("db", &[point("cpu", "a", 2, 2)]).unwrap();
    assert_eq!(e.write_waits().writes, 2);
}

/// A flushed memtable a reader still holds is kept in the engine's list of retired memtables, so that
/// the reader's drop is not the one that frees it (a query's answer waited for a large memtable's free),
/// and the flush thread frees it once the reader lets go; the reader reads it meanwhile.
#[test]
fn a_flushed_memtable_a_reader_holds_is_freed_by_the_flush_thread_after() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    e.create_database("db", 0, false).unwrap();
    e.pause_flushes(true);
    e.write("db", &[point("cpu", "a", 1, 1), point("cpu", "b", 1, 2)]).unwrap();
    {
        let w = e.inner.lock_writes();
        e.inner.freeze(Quiet::Lock(&w)).unwrap();
    }
    let (db, table, v) = {
        let cat = e.catalog();
        let d = cat.db("db").unwrap();
        let t = d.table("cpu").unwrap();
        (d.id, t.id, t.column("v").unwrap().id)
    };
    let snap = e.snapshot(db, table, &[0, 1], i64::MIN, i64::MAX, &[(v, FieldType::Integer)]);
    assert_eq!(snap.frozen.len(), 1, "the snapshot holds the frozen memtable");
    let frozen = Arc::downgrade(&snap.frozen[0]);
    e.pause_flushes(false);
    e.inner.flush_pending().unwrap();
    assert!(e.inner.mem.read().frozen.is_empty(), "flushed");
    assert_eq!(e.inner.retired.lock().len(), 1, "still held by the snapshot: retired, not freed");
    assert_eq!(snap.read_series(1).unwrap().map(|r| r.ts), Some(vec![1]));
    drop(snap);
    let start = Instant::now();
    while frozen.strong_count() > 0 {
        assert!(start.elapsed() < Duration::from_secs(10), "the flush thread did not free the retired memtable");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(e.inner.retired.lock().is_empty());
    assert_eq!(read_all(&e, "db").len(), 2);
}
