//! The PostgreSQL wire protocol front end: psql, every PostgreSQL driver and Grafana's PostgreSQL data
//! source talk to Sundial here.
//!
//! ```text
//! TcpListener ──accept──▶ conn::Conn (one task per connection)
//!    frame.rs   split + decode frontend messages under MESSAGE_BYTES_MAX (pgwire's decoders)
//!    conn.rs    start-up, password, simple and extended query protocol, COPY IN, cancel, disconnects
//!    session.rs one DataFusion session per connection: statements → plans, SET/SHOW/BEGIN…, INSERT, COPY
//!    rewrite.rs PostgreSQL-only syntax (OPERATOR(pg_catalog.~), ::regclass, COLLATE…) → plain SQL
//!    catalog.rs pg_catalog tables and system functions for psql \d, drivers and Grafana
//!    ingest.rs  INSERT / COPY rows → storage WritePoints (same path and durability as line protocol)
//!    types.rs   Arrow ↔ PostgreSQL types, text and binary encodings, parameters
//!    errors.rs  every error → SQLSTATE, in one place
//! ```
//!
//! SQL runs through the same [`sundial_query::QueryEngine`] catalog as `/api/v1/sql`; the database named
//! in the start-up message is the session's default schema.

pub mod cancel;
pub mod catalog;
pub mod conn;
pub mod errors;
pub mod frame;
pub mod ingest;
pub mod rewrite;
pub mod session;
pub mod types;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::AppState;

/// Default PostgreSQL listen address: loopback, and not 5432 so a local PostgreSQL keeps its port.
pub const DEFAULT_PG_ADDR: &str = "127.0.0.1:8766";

/// Connections served at once; more are refused with SQLSTATE 53300 (too_many_connections).
pub const CONNECTIONS_MAX: usize = 1024;

/// How clients prove they know the password.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMethod {
    /// `AuthenticationMD5Password` (salted; every PostgreSQL client supports it). Default.
    Md5,
    /// `AuthenticationCleartextPassword` (only over a trusted network: Sundial has no TLS).
    Cleartext,
}

impl std::str::FromStr for AuthMethod {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "md5" => Ok(AuthMethod::Md5),
            "cleartext" | "password" => Ok(AuthMethod::Cleartext),
            other => Err(format!(
                "unknown auth method {other:?}: expected md5 or cleartext"
            )),
        }
    }
}

/// PostgreSQL front-end settings (`--pg-*` flags of `sundial serve`).
#[derive(Clone, Debug)]
pub struct PgConfig {
    /// The password every user must give; `None` accepts any user without one (trust).
    pub password: Option<String>,
    pub auth: AuthMethod,
}

impl Default for PgConfig {
    fn default() -> Self {
        PgConfig {
            password: None,
            auth: AuthMethod::Md5,
        }
    }
}

/// Refuses to serve a non-loopback address without a password unless explicitly allowed.
pub fn check_exposure(
    addr: &SocketAddr,
    cfg: &PgConfig,
    allow_without_password: bool,
) -> Result<(), String> {
    if addr.ip().is_loopback() || cfg.password.is_some() || allow_without_password {
        return Ok(());
    }
    Err(format!(
        "refusing to accept PostgreSQL connections on {addr} without a password: set --pg-password (or SUNDIAL_PG_PASSWORD), \
         bind a loopback address, or pass --pg-allow-no-password to accept anyone who can reach the port"
    ))
}

/// One connection as `pg_stat_activity` shows it.
#[derive(Clone, Debug)]
pub struct Activity {
    pub pid: i32,
    pub db: String,
    pub user: String,
    pub application_name: String,
    pub client_addr: String,
    pub client_port: u16,
    pub backend_start_ns: i64,
    pub query_start_ns: Option<i64>,
    pub state_change_ns: Option<i64>,
    pub state: &'static str,
    pub query: String,
}

/// Cancellation of the running query of one connection. Each query takes a generation number; a cancel
/// request marks the current generation, so a cancel that arrives between queries cancels nothing.
#[derive(Debug, Default)]
pub struct CancelState {
    running: AtomicU64,
    canceled: AtomicU64,
    notify: Notify,
}

impl CancelState {
    pub fn start(&self) -> u64 {
        self.running.fetch_add(1, Ordering::SeqCst) + 1
    }

    pub fn cancel(&self) {
        self.canceled
            .store(self.running.load(Ordering::SeqCst), Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub fn is_canceled(&self, generation: u64) -> bool {
        self.canceled.load(Ordering::SeqCst) >= generation
    }

    /// Resolves once query `generation` is canceled.
    pub async fn wait(&self, generation: u64) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_canceled(generation) {
                return;
            }
            notified.await;
        }
    }
}

/// A live connection: what the registry keeps for `pg_stat_activity` and CancelRequest.
#[derive(Debug)]
pub struct SessionEntry {
    pub secret: i32,
    pub cancel: CancelState,
    pub activity: Mutex<Activity>,
}

/// Every live connection, by backend pid.
#[derive(Debug, Default)]
pub struct Registry {
    next_pid: AtomicI32,
    sessions: Mutex<HashMap<i32, Arc<SessionEntry>>>,
}

impl Registry {
    pub fn register(&self, activity: Activity) -> (i32, Arc<SessionEntry>) {
        let pid = 10_000 + self.next_pid.fetch_add(1, Ordering::Relaxed);
        let entry = Arc::new(SessionEntry {
            secret: random_i32(),
            cancel: CancelState::default(),
            activity: Mutex::new(Activity { pid, ..activity }),
        });
        self.sessions.lock().insert(pid, entry.clone());
        (pid, entry)
    }

    pub fn unregister(&self, pid: i32) {
        self.sessions.lock().remove(&pid);
    }

    pub fn len(&self) -> usize {
        self.sessions.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// CancelRequest: cancels the running query of `pid` if `secret` matches (silently ignored otherwise,
    /// as in PostgreSQL).
    pub fn cancel(&self, pid: i32, secret: i32) -> bool {
        let entry = self.sessions.lock().get(&pid).cloned();
        match entry {
            Some(e) if e.secret == secret => {
                e.cancel.cancel();
                true
            }
            _ => false,
        }
    }

    pub fn snapshot(&self) -> Vec<Activity> {
        let mut v: Vec<Activity> = self
            .sessions
            .lock()
            .values()
            .map(|e| e.activity.lock().clone())
            .collect();
        v.sort_by_key(|a| a.pid);
        v
    }
}

fn random_i32() -> i32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(now_ns() as u64);
    h.finish() as i32
}

pub fn now_ns() -> i64 {
    crate::write::now_ns()
}

/// Everything the connections share.
pub struct PgServer {
    pub state: Arc<AppState>,
    pub config: PgConfig,
    pub registry: Arc<Registry>,
    open: std::sync::atomic::AtomicUsize,
}

impl PgServer {
    pub fn new(state: Arc<AppState>, config: PgConfig) -> Arc<PgServer> {
        Arc::new(PgServer {
            state,
            config,
            registry: Arc::new(Registry::default()),
            open: Default::default(),
        })
    }
}

/// Accepts PostgreSQL connections until the task is dropped.
pub async fn serve(listener: TcpListener, server: Arc<PgServer>) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!(error = %e, "accepting a PostgreSQL connection failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let server = server.clone();
        let open = server.open.fetch_add(1, Ordering::SeqCst) + 1;
        tokio::spawn(async move {
            conn::run(stream, peer, server.clone(), open > CONNECTIONS_MAX).await;
            server.open.fetch_sub(1, Ordering::SeqCst);
        });
    }
}
