//! Every statement but `SELECT`: database DDL and the `SHOW` family, answered from the catalog.

use std::collections::BTreeMap;

use regex::Regex;
use sundial_storage::catalog::{ColumnKind, DbCatalog, TableCatalog};

use super::cell::Cell;
use super::{Series, StatementResult, Values, database};
use crate::QueryEngine;
use crate::influxql::{BinaryOp, Expr, Measurement, MeasurementName, RetentionPolicyStatement, Statement, TagKeyFilter};

pub fn run(qe: &QueryEngine, db: Option<&str>, st: &Statement, now_ns: i64) -> Result<StatementResult, String> {
    let engine = qe.storage();
    match st {
        Statement::ShowDatabases => {
            let names: Vec<Vec<Cell>> = engine.catalog().dbs().iter().map(|d| vec![Cell::String(d.name.as_ref().into())]).collect();
            Ok(one("databases", &["name"], names))
        }
        Statement::CreateDatabase(c) => {
            let retention = c.retention_policy.as_ref().and_then(|r| r.duration_ns).unwrap_or(qe.default_retention_ns());
            engine.create_database(&c.name, retention, true).map_err(|e| e.to_string())?;
            Ok(StatementResult::default())
        }
        Statement::DropDatabase { name } => {
            engine.drop_database(name, true).map_err(|e| e.to_string())?;
            Ok(StatementResult::default())
        }
        Statement::AlterRetentionPolicy(rp) => {
            let duration_ns = check_policy(qe, rp)?;
            if let Some(d) = duration_ns {
                engine.set_retention(&rp.database, d).map_err(|e| e.to_string())?;
            }
            Ok(StatementResult::default())
        }
        Statement::CreateRetentionPolicy(rp) => {
            // autogen always exists: as in InfluxDB, creating it again with its current settings is a
            // no-op and with others a conflict.
            let current = check_policy(qe, rp)?;
            let have = engine.catalog().db(&rp.database).map(|d| d.retention_ns);
            if current.is_some() && current != have {
                return Err(format!(
                    "retention policy conflicts with an existing policy: {AUTOGEN} on {} has duration {}; change it with ALTER RETENTION POLICY {AUTOGEN} ON \"{}\" DURATION {}",
                    rp.database,
                    go_duration(have.unwrap_or(0)),
                    rp.database.replace('"', "\\\""),
                    crate::influxql::format_duration(current.unwrap_or(0)),
                ));
            }
            Ok(StatementResult::default())
        }
        Statement::DropMeasurement { name } => {
            let db = database(None, db)?;
            let exists = engine.catalog().db(db).ok_or_else(|| format!("database not found: {db}"))?.table(name).is_some();
            if !exists {
                return Err(format!("measurement not found: {name}"));
            }
            engine.drop_table(db, name).map_err(|e| e.to_string())?;
            Ok(StatementResult::default())
        }
        Statement::ShowRetentionPolicies { database: on } => {
            let db = database(on.as_deref(), db)?;
            let cat = engine.catalog();
            let d = cat.db(db).ok_or_else(|| format!("database not found: {db}"))?;
            let row = vec![
                Cell::String(AUTOGEN.into()),
                Cell::String(go_duration(d.retention_ns).into()),
                Cell::String(go_duration(shard_group_ns(d.retention_ns)).into()),
                Cell::Integer(1),
                Cell::Boolean(true),
            ];
            Ok(one("", &["name", "duration", "shardGroupDuration", "replicaN", "default"], vec![row]))
        }
        Statement::ShowMeasurements(s) => {
            let db = database(s.database.as_deref(), db)?;
            let cat = engine.catalog();
            let d = cat.db(db).ok_or_else(|| format!("database not found: {db}"))?;
            let filter = match &s.with_measurement {
                Some(m) => Some(measurement_matcher(m)?),
                None => None,
            };
            let mut rows = Vec::new();
            for t in d.tables() {
                if filter.as_ref().is_some_and(|f| !f(&t.name)) {
                    continue;
                }
                if let Some(c) = &s.condition {
                    if !(0..t.series_count() as u32).any(|sid| series_matches(t, sid, c)) {
                        continue;
                    }
                }
                rows.push(vec![Cell::String(t.name.as_ref().into())]);
            }
            let rows = limit(rows, s.limit, s.offset);
            Ok(if rows.is_empty() { StatementResult::default() } else { one("measurements", &["name"], rows) })
        }
        Statement::ShowTagKeys(s) => {
            let db = database(s.database.as_deref(), db)?;
            let cat = engine.catalog();
            let d = cat.db(db).ok_or_else(|| format!("database not found: {db}"))?;
            let mut series = Vec::new();
            for t in tables(d, &s.from)? {
                let mut keys: Vec<String> = tag_keys(t);
                if let Some(f) = &s.with_key {
                    let m = key_matcher(f)?;
                    keys.retain(|k| m(k));
                }
                let rows = limit(keys.into_iter().map(|k| vec![Cell::String(k.into())]).collect(), s.limit, s.offset);
                if !rows.is_empty() {
                    series.push(named(&t.name, &["tagKey"], rows));
                }
            }
            Ok(StatementResult::series(limit(series, s.slimit, s.soffset)))
        }
        Statement::ShowTagValues(s) => {
            let db = database(s.database.as_deref(), db)?;
            let cat = engine.catalog();
            let d = cat.db(db).ok_or_else(|| format!("database not found: {db}"))?;
            let m = key_matcher(&s.with_key)?;
            let mut series = Vec::new();
            for t in tables(d, &s.from)? {
                let keys: Vec<String> = tag_keys(t).into_iter().filter(|k| m(k)).collect();
                let mut pairs: Vec<(String, String)> = Vec::new();
                for sid in 0..t.series_count() as u32 {
                    if s.condition.as_ref().is_some_and(|c| !series_matches(t, sid, c)) {
                        continue;
                    }
                    for k in &keys {
                        if let Some(v) = t.column(k).and_then(|c| t.series_tag_value(sid, c.id)) {
                            pairs.push((k.clone(), v.to_string()));
                        }
                    }
                }
                pairs.sort();
                pairs.dedup();
                let rows = pairs.into_iter().map(|(k, v)| vec![Cell::String(k.into()), Cell::String(v.into())]).collect();
                let rows = limit(rows, s.limit, s.offset);
                if !rows.is_empty() {
                    series.push(named(&t.name, &["key", "value"], rows));
                }
            }
            Ok(StatementResult::series(series))
        }
        Statement::ShowFieldKeys(s) => {
            let db = database(s.database.as_deref(), db)?;
            let cat = engine.catalog();
            let d = cat.db(db).ok_or_else(|| format!("database not found: {db}"))?;
            let mut series = Vec::new();
            for t in tables(d, &s.from)? {
                let mut fields: Vec<(String, &str)> = t
                    .columns()
                    .iter()
                    .filter_map(|c| match c.kind {
                        ColumnKind::Field(ty) => Some((c.name.to_string(), ty.influx_name())),
                        ColumnKind::Tag => None,
                    })
                    .collect();
                fields.sort();
                let rows = fields.into_iter().map(|(k, ty)| vec![Cell::String(k.into()), Cell::String(ty.into())]).collect();
                let rows = limit(rows, s.limit, s.offset);
                if !rows.is_empty() {
                    series.push(named(&t.name, &["fieldKey", "fieldType"], rows));
                }
            }
            Ok(StatementResult::series(series))
        }
        Statement::ShowSeries(s) => {
            let db = database(s.database.as_deref(), db)?;
            let cat = engine.catalog();
            let d = cat.db(db).ok_or_else(|| format!("database not found: {db}"))?;
            let mut keys = Vec::new();
            for t in tables(d, &s.from)? {
                for sid in 0..t.series_count() as u32 {
                    if s.condition.as_ref().is_some_and(|c| !series_matches(t, sid, c)) {
                        continue;
                    }
                    keys.push(series_key(t, sid));
                }
            }
            keys.sort();
            let rows = limit(keys.into_iter().map(|k| vec![Cell::String(k.into())]).collect(), s.limit, s.offset);
            Ok(if rows.is_empty() { StatementResult::default() } else { one("", &["key"], rows) })
        }
        Statement::Delete(d) => delete(qe, db, &d.from, d.condition.as_ref(), false, now_ns),
        Statement::DropSeries(d) => delete(qe, db, &d.from, d.condition.as_ref(), true, now_ns),
        Statement::ShowCardinality(_) => Err("SHOW ... CARDINALITY is not supported yet".into()),
        Statement::Select(_) | Statement::Explain(_) => Err("internal error: SELECT routed to SHOW".into()),
    }
}

/// `DELETE [FROM m, ...] [WHERE ...]` and `DROP SERIES [FROM m, ...] [WHERE ...]`: tag conditions pick
/// the series (from the catalog), time bounds the range (`DELETE` only), through the engine's durable
/// tombstones; the disk is freed when compaction rewrites the files. Field conditions are refused, as
/// InfluxDB refuses them.
fn delete(
    qe: &QueryEngine,
    db: Option<&str>,
    from: &[Measurement],
    cond: Option<&Expr>,
    drop_series: bool,
    now_ns: i64,
) -> Result<StatementResult, String> {
    let db = database(None, db)?;
    let engine = qe.storage();
    let mut work: Vec<(String, Option<Vec<u32>>, i64, i64)> = Vec::new();
    {
        let cat = engine.catalog();
        let d = cat.db(db).ok_or_else(|| format!("database not found: {db}"))?;
        for t in tables(d, from)? {
            let fields: Vec<&str> = t
                .columns()
                .iter()
                .filter(|c| matches!(c.kind, ColumnKind::Field(_)))
                .map(|c| &*c.name)
                .collect();
            if let Some(c) = cond {
                if c.any(&mut |e| matches!(e, Expr::VarRef { name, .. } if fields.contains(&name.as_str()))) {
                    return Err("fields not supported in WHERE clause during deletion".into());
                }
            }
            let (range, _) = super::cond::split(cond, &super::cond::TableInfo::default(), now_ns)?;
            if drop_series && range != super::cond::TimeRange::default() {
                return Err("DROP SERIES doesn't support time in WHERE clause".into());
            }
            let has_tags = cond.is_some_and(|c| c.any(&mut |e| matches!(e, Expr::VarRef { .. }) && !e.is_time_ref()));
            let series = has_tags.then(|| (0..t.series_count() as u32).filter(|s| cond.is_some_and(|c| series_matches(t, *s, c))).collect());
            work.push((t.name.to_string(), series, range.min.unwrap_or(i64::MIN), range.max.unwrap_or(i64::MAX)));
        }
    }
    for (table, series, lo, hi) in work {
        engine.delete(db, &table, series.as_deref(), lo, hi).map_err(|e| e.to_string())?;
    }
    Ok(StatementResult::default())
}

fn one(name: &str, columns: &[&str], rows: Vec<Vec<Cell>>) -> StatementResult {
    let values = (!rows.is_empty()).then_some(Values::Rows(rows));
    StatementResult::series(vec![Series {
        name: name.to_string(),
        tags: None,
        columns: columns.iter().map(|c| c.to_string()).collect(),
        values,
    }])
}

fn named(name: &str, columns: &[&str], rows: Vec<Vec<Cell>>) -> Series {
    Series { name: name.to_string(), tags: None, columns: columns.iter().map(|c| c.to_string()).collect(), values: Some(Values::Rows(rows)) }
}

fn limit<T>(rows: Vec<T>, limit: Option<u64>, offset: Option<u64>) -> Vec<T> {
    let take = limit.filter(|n| *n > 0).map_or(usize::MAX, |n| n as usize);
    rows.into_iter().skip(offset.unwrap_or(0) as usize).take(take).collect()
}

fn tag_keys(t: &TableCatalog) -> Vec<String> {
    let mut keys: Vec<String> =
        t.columns().iter().filter(|c| c.kind == ColumnKind::Tag).map(|c| c.name.to_string()).collect();
    keys.sort();
    keys
}

/// `cpu,arch=x,hostname=y`: the measurement and the series' tags sorted by key.
fn series_key(t: &TableCatalog, sid: u32) -> String {
    let mut out = t.name.to_string();
    for (k, v) in series_tags(t, sid) {
        out.push(',');
        out.push_str(&k);
        out.push('=');
        out.push_str(&v);
    }
    out
}

fn series_tags(t: &TableCatalog, sid: u32) -> BTreeMap<String, String> {
    let mut tags = BTreeMap::new();
    for (col, v) in t.series_tags(sid).into_iter().flat_map(|set| set.iter()) {
        if let (Some(c), Some(v)) = (t.column_by_id(col), t.tag_dict(col).and_then(|d| d.value(v))) {
            tags.insert(c.name.to_string(), v.to_string());
        }
    }
    tags
}

/// The tables named by `FROM` (all of them if none), sorted by name.
fn tables<'a>(d: &'a DbCatalog, from: &[Measurement]) -> Result<Vec<&'a TableCatalog>, String> {
    if from.is_empty() {
        return Ok(d.tables());
    }
    let matchers = from.iter().map(measurement_matcher).collect::<Result<Vec<_>, _>>()?;
    Ok(d.tables().into_iter().filter(|t| matchers.iter().any(|m| m(&t.name))).collect())
}

type Matcher = Box<dyn Fn(&str) -> bool>;

fn measurement_matcher(m: &Measurement) -> Result<Matcher, String> {
    Ok(match &m.name {
        MeasurementName::Name(n) => {
            let n = n.clone();
            Box::new(move |s| s == n)
        }
        MeasurementName::Regex(re) => {
            let re = compile(re)?;
            Box::new(move |s| re.is_match(s))
        }
    })
}

fn key_matcher(f: &TagKeyFilter) -> Result<Matcher, String> {
    Ok(match f.clone() {
        TagKeyFilter::Eq(k) => Box::new(move |s| s == k),
        TagKeyFilter::NotEq(k) => Box::new(move |s| s != k),
        TagKeyFilter::In(ks) => Box::new(move |s| ks.iter().any(|k| k == s)),
        TagKeyFilter::Regex(re) => {
            let re = compile(&re)?;
            Box::new(move |s| re.is_match(s))
        }
        TagKeyFilter::NotRegex(re) => {
            let re = compile(&re)?;
            Box::new(move |s| !re.is_match(s))
        }
    })
}

fn compile(re: &str) -> Result<Regex, String> {
    regex::RegexBuilder::new(re).size_limit(1 << 20).build().map_err(|e| format!("invalid regular expression /{re}/: {e}"))
}

/// Evaluates a tag condition on one series (missing tags read as `''`; anything that is not a tag
/// comparison, such as time bounds, is true: the catalog keeps no times).
fn series_matches(t: &TableCatalog, sid: u32, cond: &Expr) -> bool {
    let tags = series_tags(t, sid);
    eval(cond, &tags)
}

fn eval(e: &Expr, tags: &BTreeMap<String, String>) -> bool {
    match e {
        Expr::Binary { op: BinaryOp::And, lhs, rhs } => eval(lhs, tags) && eval(rhs, tags),
        Expr::Binary { op: BinaryOp::Or, lhs, rhs } => eval(lhs, tags) || eval(rhs, tags),
        Expr::Binary { op, lhs, rhs } => {
            let Expr::VarRef { name, .. } = &**lhs else { return true };
            if lhs.is_time_ref() {
                return true;
            }
            let v = tags.get(name).map_or("", String::as_str);
            match (op, &**rhs) {
                (BinaryOp::Eq, Expr::StringLit(s)) => v == s,
                (BinaryOp::NotEq, Expr::StringLit(s)) => v != s,
                (BinaryOp::EqRegex, Expr::RegexLit(re)) => compile(re).is_ok_and(|r| r.is_match(v)),
                (BinaryOp::NotEqRegex, Expr::RegexLit(re)) => compile(re).is_ok_and(|r| !r.is_match(v)),
                _ => true,
            }
        }
        _ => true,
    }
}

/// Go's `time.Duration.String()` for whole seconds, as InfluxDB prints retention: `0s`, `168h0m0s`.
/// The one retention policy of every database, named as InfluxDB names the default one.
const AUTOGEN: &str = "autogen";

/// Checks a `CREATE`/`ALTER RETENTION POLICY` against what Sundial has: one policy per database,
/// `autogen`, on one node, over the server's time partitions. Returns the duration to set, if any.
fn check_policy(qe: &QueryEngine, rp: &RetentionPolicyStatement) -> Result<Option<i64>, String> {
    if qe.storage().catalog().db(&rp.database).is_none() {
        return Err(format!("database not found: {}", rp.database));
    }
    if rp.name != AUTOGEN {
        return Err(format!(
            "retention policy not found: {}. Sundial keeps one retention policy per database, {AUTOGEN}; change its duration with ALTER RETENTION POLICY {AUTOGEN} ON \"{}\" DURATION <d>",
            rp.name,
            rp.database.replace('"', "\\\""),
        ));
    }
    if let Some(n) = rp.replication.filter(|n| *n != 1) {
        return Err(format!("REPLICATION {n} is not supported: Sundial is a single node; use REPLICATION 1 or leave it out"));
    }
    if rp.shard_duration_ns.is_some() {
        return Err(
            "SHARD DURATION is not supported: time partitions are set for the whole server (--partition-duration); leave it out".into(),
        );
    }
    Ok(rp.duration_ns)
}

fn go_duration(ns: i64) -> String {
    let secs = ns / 1_000_000_000;
    if secs == 0 {
        return "0s".into();
    }
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

/// InfluxDB's default shard group duration for a retention: 1 h under 2 days, 1 day under 6 months, else 7 days.
fn shard_group_ns(retention_ns: i64) -> i64 {
    const H: i64 = 3_600_000_000_000;
    match retention_ns {
        r if r > 0 && r < 48 * H => H,
        r if r > 0 && r < 180 * 24 * H => 24 * H,
        _ => 168 * H,
    }
}
