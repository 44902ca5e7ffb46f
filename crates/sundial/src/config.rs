//! `sundial serve` settings: flags, `SUNDIAL_*` environment variables and an optional TOML file.
//!
//! Precedence: flag > environment variable > config file > built-in default. Every setting is declared
//! once, in [`ServeArgs`], whose doc comments are the `--help` text; the config file uses the same names
//! with `_` for `-` (e.g. `http_addr = "127.0.0.1:8765"`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use serde::Deserialize;
use sundial_server::ServerConfig;
use sundial_storage::EngineConfig;
use sundial_storage::wal::SyncPolicy;

pub const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8765";
pub const DEFAULT_DATA_DIR: &str = "./sundial-data";
pub use sundial_server::pg::DEFAULT_PG_ADDR;

#[derive(Args, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeArgs {
    /// TOML config file with any of the settings below (names with `_`). [env: SUNDIAL_CONFIG]
    #[arg(long, env = "SUNDIAL_CONFIG")]
    #[serde(skip)]
    pub config: Option<PathBuf>,

    /// Directory holding all data (created if missing). Repeat to spread time partitions over several
    /// directories (disks) by free space; the first also holds the WAL and catalog. In the config file a
    /// string or a list. [default: ./sundial-data]
    #[arg(long, env = "SUNDIAL_DATA_DIR", value_delimiter = ',')]
    #[serde(default, deserialize_with = "one_or_many")]
    pub data_dir: Vec<PathBuf>,

    /// Retention of databases created without one (`CREATE DATABASE` in SQL, auto-created ones, InfluxQL
    /// without `WITH DURATION`), e.g. `30d`; `0` or `inf` keeps data forever. Partitions older than it are
    /// dropped. [default: inf]
    #[arg(long, env = "SUNDIAL_RETENTION")]
    pub retention: Option<String>,

    /// HTTP listen address (InfluxDB write/query API, SQL API). [default: 127.0.0.1:8765]
    #[arg(long, env = "SUNDIAL_HTTP_ADDR")]
    pub http_addr: Option<String>,

    /// PostgreSQL wire-protocol listen address (psql, drivers, Grafana), or `off`. The port is not 5432 so a
    /// local PostgreSQL keeps its own. [default: 127.0.0.1:8766]
    #[arg(long, env = "SUNDIAL_PG_ADDR")]
    pub pg_addr: Option<String>,

    /// Password PostgreSQL clients must give (any user name). Without it every client is trusted, which is
    /// only allowed on a loopback address (see --pg-allow-no-password). [env: SUNDIAL_PG_PASSWORD]
    #[arg(long, env = "SUNDIAL_PG_PASSWORD", hide_env_values = true)]
    pub pg_password: Option<String>,

    /// How the password is exchanged: `md5` (salted challenge) or `cleartext`. [default: md5]
    #[arg(long, env = "SUNDIAL_PG_AUTH")]
    pub pg_auth: Option<String>,

    /// Accept PostgreSQL connections on a non-loopback address without a password. [default: false]
    #[arg(long, env = "SUNDIAL_PG_ALLOW_NO_PASSWORD")]
    pub pg_allow_no_password: Option<bool>,

    /// When writes are acknowledged: `batch` (fsync before answering, group commit; default) or
    /// `interval:<ms>` (answer once written to the OS, fsync every <ms>: a power loss — not a process
    /// crash — may lose the last <ms> of acknowledged writes).
    #[arg(long, env = "SUNDIAL_WAL_SYNC")]
    pub wal_sync: Option<String>,

    /// Memtable size that triggers a flush to segment files, in MiB; half of it once its series average
    /// 2,048 rows or more (few long series fill long blocks already). [default: an eighth of the memory
    /// (or of the cgroup's limit), at least 64 and at most 1024]
    #[arg(long, env = "SUNDIAL_MEMTABLE_MIB")]
    pub memtable_mib: Option<usize>,

    /// Memory for decoded segment block indexes (per-block statistics and chunk locations), in MiB:
    /// only the index groups that reads touch are decoded, and the least recently used are dropped
    /// beyond this. [default: 64]
    #[arg(long, env = "SUNDIAL_BLOCK_INDEX_CACHE_MIB")]
    pub block_index_cache_mib: Option<usize>,

    /// Memory for decoded pages of numeric columns kept by reads of a threshold's hours (`WHERE
    /// usage_user > 90`), in MiB: a window asked again decodes nothing twice; the oldest pages are
    /// dropped beyond this. [default: a 64th of the memory (or of the cgroup's limit), at least 64 and at
    /// most 1024]
    #[arg(long, env = "SUNDIAL_DECODED_PAGES_MIB")]
    pub decoded_pages_mib: Option<usize>,

    /// Most series a database may hold, as InfluxDB's `max-series-per-database`: a write that would
    /// create one more is refused (400, naming the line and the limit); existing series keep accepting
    /// writes. Each series costs ≈ 135 bytes of memory for the whole life of the process. `0`: no
    /// limit. [default: 0]
    #[arg(long, env = "SUNDIAL_MAX_SERIES_PER_DATABASE")]
    pub max_series_per_database: Option<u64>,

    /// How long a write waits for the flush to catch up, once the memtables hold twice
    /// `--memtable-mib` (or too many wait for flush), before it is refused with 503 + `Retry-After`, in
    /// milliseconds. Lower it to shed load sooner (clients retry); raise it to queue writes longer.
    /// [default: 30000]
    #[arg(long, env = "SUNDIAL_WRITE_STALL_MS")]
    pub write_stall_ms: Option<u64>,

    /// Age of the oldest unflushed write that triggers a flush, in seconds. [default: 300]
    #[arg(long, env = "SUNDIAL_FLUSH_INTERVAL_SECS")]
    pub flush_interval_secs: Option<u64>,

    /// Time without writes after which the memtable is flushed to segment files, in seconds. [default: 60]
    #[arg(long, env = "SUNDIAL_FLUSH_IDLE_SECS")]
    pub flush_idle_secs: Option<u64>,

    /// Time after a partition's newest file was written at which the partition is merged whole into one
    /// file, like a past partition (InfluxDB's `compact-full-write-cold-duration`), in seconds; `0`:
    /// never. [default: 14400]
    #[arg(long, env = "SUNDIAL_COMPACT_FULL_WRITE_COLD_SECS")]
    pub compact_full_write_cold_secs: Option<u64>,

    /// Time partition length, e.g. `1d`, `12h`, `7d`. [default: 1d]
    #[arg(long, env = "SUNDIAL_PARTITION_DURATION")]
    pub partition_duration: Option<String>,

    /// Cap on the bandwidth compaction writes with, in MiB/s, shared by all compaction threads; `0`
    /// for no cap. Flushes are never limited (ingest waits on them). Set it when the disk also serves
    /// latency-sensitive work: a merge otherwise writes at codec speed, in bursts. [default: 0]
    #[arg(long, env = "SUNDIAL_COMPACTION_MAX_MIB_PER_SEC")]
    pub compaction_max_mib_per_sec: Option<u64>,

    /// Largest request body accepted (after gzip decompression), in MiB. [default: 64]
    #[arg(long, env = "SUNDIAL_MAX_BODY_MIB")]
    pub max_body_mib: Option<usize>,

    /// Create databases on first write instead of answering 404. [default: false]
    #[arg(long, env = "SUNDIAL_AUTO_CREATE_DATABASES")]
    pub auto_create_databases: Option<bool>,

    /// Log filter (`error`, `warn`, `info`, `debug`, or a tracing filter; RUST_LOG overrides). [default: info]
    #[arg(long, env = "SUNDIAL_LOG_LEVEL")]
    pub log_level: Option<String>,
}

/// Fully resolved settings.
pub struct Settings {
    pub http_addr: String,
    /// `None`: the PostgreSQL listener is off.
    pub pg_addr: Option<String>,
    pub pg: sundial_server::pg::PgConfig,
    pub pg_allow_no_password: bool,
    pub log_level: String,
    pub engine: EngineConfig,
    pub server: ServerConfig,
}

/// A config-file value that is one path or a list of paths.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<PathBuf>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(PathBuf),
        Many(Vec<PathBuf>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(p) => vec![p],
        OneOrMany::Many(v) => v,
    })
}

/// Parses `30s`, `12h`, `1d`, `2w` into nanoseconds.
pub fn parse_duration_ns(s: &str) -> anyhow::Result<i64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: i64 = num.parse().with_context(|| format!("bad duration {s:?}: expected e.g. 12h or 1d"))?;
    let unit_ns: i64 = match unit {
        "ns" => 1,
        "us" | "u" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        "w" => 604_800_000_000_000,
        _ => bail!("bad duration unit in {s:?}: use ns, us, ms, s, m, h, d or w"),
    };
    n.checked_mul(unit_ns).filter(|v| *v > 0).with_context(|| format!("duration {s:?} is out of range"))
}

impl ServeArgs {
    /// Fills unset flags from the config file, then defaults.
    pub fn resolve(self) -> anyhow::Result<Settings> {
        let file: ServeArgs = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path).with_context(|| format!("reading config file {}", path.display()))?;
                toml::from_str(&text).with_context(|| format!("parsing config file {}", path.display()))?
            }
            None => ServeArgs::default(),
        };
        let mut dirs = if self.data_dir.is_empty() { file.data_dir } else { self.data_dir };
        if dirs.is_empty() {
            dirs.push(PathBuf::from(DEFAULT_DATA_DIR));
        }
        let mut engine = EngineConfig::new(dirs.remove(0));
        engine.extra_data_dirs = dirs;
        let mut server = ServerConfig::default();
        if let Some(r) = self.retention.or(file.retention) {
            server.default_retention_ns = match r.trim() {
                "0" | "inf" | "INF" => 0,
                d => parse_duration_ns(d).context("--retention")?,
            };
        }
        if let Some(p) = self.wal_sync.or(file.wal_sync) {
            engine.wal_sync = p.parse::<SyncPolicy>().map_err(anyhow::Error::msg).context("--wal-sync")?;
        }
        if let Some(m) = self.memtable_mib.or(file.memtable_mib) {
            engine.memtable_bytes_max = m.max(1) * 1024 * 1024;
        }
        if let Some(m) = self.block_index_cache_mib.or(file.block_index_cache_mib) {
            engine.block_index_cache_bytes = m * 1024 * 1024;
        }
        if let Some(m) = self.decoded_pages_mib.or(file.decoded_pages_mib) {
            engine.decoded_pages_bytes = m * 1024 * 1024;
        }
        if let Some(n) = self.max_series_per_database.or(file.max_series_per_database) {
            engine.series_per_database_max = n;
        }
        if let Some(ms) = self.write_stall_ms.or(file.write_stall_ms) {
            engine.write_stall_timeout = Duration::from_millis(ms);
        }
        if let Some(s) = self.flush_interval_secs.or(file.flush_interval_secs) {
            engine.flush_interval = Duration::from_secs(s.max(1));
        }
        if let Some(s) = self.flush_idle_secs.or(file.flush_idle_secs) {
            engine.flush_idle = Duration::from_secs(s.max(1));
        }
        if let Some(s) = self.compact_full_write_cold_secs.or(file.compact_full_write_cold_secs) {
            engine.compact_full_write_cold = Duration::from_secs(s);
        }
        if let Some(d) = self.partition_duration.or(file.partition_duration) {
            engine.partition_ns = parse_duration_ns(&d).context("--partition-duration")?;
        }
        if let Some(m) = self.compaction_max_mib_per_sec.or(file.compaction_max_mib_per_sec) {
            engine.compaction_bytes_per_sec_max = (m > 0).then(|| m.saturating_mul(1024 * 1024));
        }
        if let Some(m) = self.max_body_mib.or(file.max_body_mib) {
            server.max_body_bytes = m.max(1) * 1024 * 1024;
        }
        if let Some(a) = self.auto_create_databases.or(file.auto_create_databases) {
            server.auto_create_databases = a;
        }
        let pg_addr = self.pg_addr.or(file.pg_addr).unwrap_or_else(|| DEFAULT_PG_ADDR.to_string());
        let pg_addr = (!pg_addr.eq_ignore_ascii_case("off")).then_some(pg_addr);
        let mut pg = sundial_server::pg::PgConfig { password: self.pg_password.or(file.pg_password), ..Default::default() };
        if let Some(a) = self.pg_auth.or(file.pg_auth) {
            pg.auth = a.parse().map_err(anyhow::Error::msg).context("--pg-auth")?;
        }
        if pg.password.as_deref() == Some("") {
            bail!("--pg-password is empty: give a password or leave it unset");
        }
        Ok(Settings {
            http_addr: self.http_addr.or(file.http_addr).unwrap_or_else(|| DEFAULT_HTTP_ADDR.to_string()),
            pg_addr,
            pg,
            pg_allow_no_password: self.pg_allow_no_password.or(file.pg_allow_no_password).unwrap_or(false),
            log_level: self.log_level.or(file.log_level).unwrap_or_else(|| "info".to_string()),
            engine,
            server,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_reject_garbage() {
        assert_eq!(parse_duration_ns("1d").unwrap(), 86_400_000_000_000);
        assert_eq!(parse_duration_ns("12h").unwrap(), 43_200_000_000_000);
        assert!(parse_duration_ns("0h").is_err());
        assert!(parse_duration_ns("1y").is_err());
        assert!(parse_duration_ns("h").is_err());
    }

    #[test]
    fn flags_override_the_file_and_the_file_overrides_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, "http_addr = \"127.0.0.1:1\"\nmemtable_mib = 3\nwal_sync = \"interval:10\"\ncompaction_max_mib_per_sec = 5\ndecoded_pages_mib = 7\n").unwrap();
        let args = ServeArgs { config: Some(path.clone()), http_addr: Some("127.0.0.1:2".into()), ..Default::default() };
        let s = args.resolve().unwrap();
        assert_eq!(s.engine.compaction_bytes_per_sec_max, Some(5 * 1024 * 1024));
        let off = ServeArgs { config: Some(path), compaction_max_mib_per_sec: Some(0), ..Default::default() };
        assert_eq!(off.resolve().unwrap().engine.compaction_bytes_per_sec_max, None, "0 is no cap");
        assert_eq!(ServeArgs::default().resolve().unwrap().engine.compaction_bytes_per_sec_max, None);
        assert_eq!(s.http_addr, "127.0.0.1:2");
        assert_eq!(s.engine.memtable_bytes_max, 3 * 1024 * 1024);
        assert_eq!(s.engine.decoded_pages_bytes, 7 * 1024 * 1024);
        assert_eq!(s.engine.wal_sync, SyncPolicy::Interval(Duration::from_millis(10)));
        assert_eq!(s.engine.data_dir, PathBuf::from(DEFAULT_DATA_DIR));
    }

    #[test]
    fn pg_settings_resolve_from_the_file_and_off_disables_the_listener() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, "pg_addr = \"0.0.0.0:6000\"\npg_password = \"pw\"\npg_auth = \"cleartext\"\n").unwrap();
        let s = ServeArgs { config: Some(path.clone()), ..Default::default() }.resolve().unwrap();
        assert_eq!(s.pg_addr.as_deref(), Some("0.0.0.0:6000"));
        assert_eq!(s.pg.password.as_deref(), Some("pw"));
        assert_eq!(s.pg.auth, sundial_server::pg::AuthMethod::Cleartext);
        let s = ServeArgs { config: Some(path), pg_addr: Some("off".into()), ..Default::default() }.resolve().unwrap();
        assert_eq!(s.pg_addr, None);
        let s = ServeArgs::default().resolve().unwrap();
        assert_eq!(s.pg_addr.as_deref(), Some(DEFAULT_PG_ADDR));
        assert!(s.pg.password.is_none());
    }

    #[test]
    fn unknown_file_keys_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, "htp_addr = \"x\"\n").unwrap();
        let args = ServeArgs { config: Some(path), ..Default::default() };
        assert!(args.resolve().is_err());
    }
}
