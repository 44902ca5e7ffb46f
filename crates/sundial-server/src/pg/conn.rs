//! One PostgreSQL connection: start-up and authentication, then the simple and extended query protocols
//! and COPY IN, until Terminate or EOF.
//!
//! While a query runs the connection keeps reading the socket, so it notices a client that goes away
//! (EOF) and drops the query — DataFusion stops and frees what it held — and it watches the session's
//! [`super::CancelState`] for a CancelRequest from another connection. Errors follow the protocol: after an
//! error in an extended-protocol message everything up to Sync is skipped; a malformed or oversized frame
//! gets an ErrorResponse and, since the byte stream cannot be trusted after it, closes only this connection.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::BytesMut;
use futures::StreamExt;
use parking_lot::Mutex;
use pgwire::api::Type;
use pgwire::messages::PgWireBackendMessage as B;
use pgwire::messages::PgWireFrontendMessage as F;
use pgwire::messages::copy::{CopyData, CopyDone, CopyInResponse, CopyOutResponse};
use pgwire::messages::data::{FieldDescription, NoData, ParameterDescription, RowDescription};
use pgwire::messages::extendedquery::{
    BindComplete, CloseComplete, ParseComplete, PortalSuspended,
};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ReadyForQuery, TransactionStatus,
};
use pgwire::messages::startup::{
    Authentication, BackendKeyData, ParameterStatus, SecretKey, Startup,
};
use sundial_query::datafusion::arrow::array::RecordBatch;
use sundial_query::datafusion::common::ScalarValue;
use sundial_query::datafusion::execution::SendableRecordBatchStream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use super::catalog::SessionFacts;
use super::errors::{PgError, code};
use super::frame::{self, FrameError, Phase, StartupFrame};
use super::ingest::{COPY_BATCH_ROWS, CopyIn};
use super::session::{FieldDesc, Outcome, Prepared, Session, Tx, default_settings, display_name};
use super::types::{self, Format};
use super::{Activity, AuthMethod, PgServer, SessionEntry};

/// Output bytes buffered before they are written to the socket.
const OUT_FLUSH_BYTES: usize = 256 * 1024;
/// Bytes of pipelined input read ahead while a query runs (beyond it the socket is left unread).
const READ_AHEAD_BYTES_MAX: usize = 1024 * 1024;
/// Characters of a query kept for `pg_stat_activity`.
const ACTIVITY_QUERY_CHARS_MAX: usize = 1024;
/// Named prepared statements one connection may hold (each holds a plan).
pub const STATEMENTS_PER_CONNECTION_MAX: usize = 10_000;
/// Open portals one connection may hold (a suspended portal holds a running query).
pub const PORTALS_PER_CONNECTION_MAX: usize = 1_000;
/// Time a client has to finish start-up and authentication, as PostgreSQL's `authentication_timeout`.
pub const STARTUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Why the connection ends.
#[derive(Debug)]
enum End {
    Io(std::io::Error),
    Closed,
}

impl From<std::io::Error> for End {
    fn from(e: std::io::Error) -> End {
        End::Io(e)
    }
}

/// Why a guarded operation stopped early.
enum Interrupt {
    Canceled,
    Disconnected,
}

/// Rows still to send from an executed portal.
enum RowSource {
    Stream(SendableRecordBatchStream),
    Batches(std::collections::VecDeque<RecordBatch>),
}

struct Portal {
    statement: Arc<Prepared>,
    params: Vec<ScalarValue>,
    formats: Vec<Format>,
    /// Set once executed and suspended (Execute with a row limit).
    running: Option<(RowSource, Option<RecordBatch>, u64)>,
    done: bool,
}

struct CopyState {
    copy: Box<CopyIn>,
    extended: bool,
}

pub(super) struct Conn {
    rd: OwnedReadHalf,
    wr: OwnedWriteHalf,
    inbuf: BytesMut,
    out: BytesMut,
    server: Arc<PgServer>,
    peer: SocketAddr,
    session: Option<Session>,
    entry: Option<Arc<SessionEntry>>,
    pid: i32,
    statements: HashMap<String, Arc<Prepared>>,
    portals: HashMap<String, Portal>,
    skip_until_sync: bool,
    copy: Option<CopyState>,
    /// Bytes of an oversized message still to read and drop.
    discard: usize,
}

/// Serves one accepted connection to its end.
pub(super) async fn run(
    stream: TcpStream,
    peer: SocketAddr,
    server: Arc<PgServer>,
    over_limit: bool,
) {
    let _ = stream.set_nodelay(true);
    let (rd, wr) = stream.into_split();
    let mut c = Conn {
        rd,
        wr,
        inbuf: BytesMut::with_capacity(8 * 1024),
        out: BytesMut::with_capacity(8 * 1024),
        server: server.clone(),
        peer,
        session: None,
        entry: None,
        pid: 0,
        statements: HashMap::new(),
        portals: HashMap::new(),
        skip_until_sync: false,
        copy: None,
        discard: 0,
    };
    let result = c.serve_with_timeout(over_limit).await;
    if c.pid != 0 {
        server.registry.unregister(c.pid);
    }
    match result {
        Ok(()) | Err(End::Closed) => tracing::debug!(peer = %peer, "postgres connection closed"),
        Err(End::Io(e)) => tracing::debug!(peer = %peer, error = %e, "postgres connection ended"),
    }
}

fn status(tx: Tx) -> TransactionStatus {
    match tx {
        Tx::Idle => TransactionStatus::Idle,
        Tx::Block => TransactionStatus::Transaction,
        Tx::Failed => TransactionStatus::Error,
    }
}

/// Runs `fut` while watching for a cancel request and for the client going away.
async fn guarded<T>(
    rd: &mut OwnedReadHalf,
    inbuf: &mut BytesMut,
    entry: &SessionEntry,
    generation: u64,
    fut: impl Future<Output = T>,
) -> Result<T, Interrupt> {
    tokio::pin!(fut);
    loop {
        tokio::select! {
            biased;
            v = &mut fut => return Ok(v),
            _ = entry.cancel.wait(generation) => return Err(Interrupt::Canceled),
            r = rd.read_buf(inbuf), if inbuf.len() < READ_AHEAD_BYTES_MAX => match r {
                Ok(0) | Err(_) => return Err(Interrupt::Disconnected),
                Ok(_) => continue,
            },
        }
    }
}

impl Conn {
    fn send(&mut self, m: B) {
        if let Err(e) = m.encode(&mut self.out) {
            tracing::error!(error = %e, "encoding a backend message failed");
        }
    }

    async fn flush(&mut self) -> Result<(), End> {
        if !self.out.is_empty() {
            self.wr.write_all(&self.out).await?;
            self.out.clear();
        }
        Ok(())
    }

    fn send_error(&mut self, e: PgError) {
        if e.is_server_side() {
            tracing::error!(code = e.code, error = %e.message, "postgres query failed");
        }
        self.send(B::ErrorResponse(e.into_info().into()));
    }

    /// The next complete frame, reading as needed (and flushing output before waiting for input).
    async fn next_frame(&mut self, phase: Phase) -> Result<Result<BytesMut, FrameError>, End> {
        loop {
            if self.discard > 0 {
                let n = self.discard.min(self.inbuf.len());
                let _ = self.inbuf.split_to(n);
                self.discard -= n;
                if self.discard > 0 {
                    self.flush().await?;
                    if self.rd.read_buf(&mut self.inbuf).await? == 0 {
                        return Err(End::Closed);
                    }
                    continue;
                }
            }
            match frame::split_frame(&mut self.inbuf, phase) {
                Ok(Some(f)) => return Ok(Ok(f)),
                Ok(None) => {}
                Err(e) => return Ok(Err(e)),
            }
            self.flush().await?;
            if self.rd.read_buf(&mut self.inbuf).await? == 0 {
                return Err(End::Closed);
            }
        }
    }

    async fn fatal(&mut self, e: PgError) -> Result<(), End> {
        let e = PgError { fatal: true, ..e };
        self.send_error(e);
        self.flush().await?;
        let _ = self.wr.shutdown().await;
        Err(End::Closed)
    }

    async fn startup_phase(&mut self, over_limit: bool, started: &mut bool) -> Result<(), End> {
        let startup = loop {
            let f = match self.next_frame(Phase::Startup).await? {
                Ok(f) => f,
                Err(e) => return self.fatal(frame_error(e)).await,
            };
            match frame::decode_startup(f) {
                Ok(StartupFrame::SslRequest) | Ok(StartupFrame::GssEncRequest) => {
                    // No TLS/GSS: 'N' tells the client to go on in plain text (or give up, if it requires TLS).
                    self.wr.write_all(b"N").await?;
                }
                Ok(StartupFrame::Message(F::CancelRequest(c))) => {
                    if let Some(secret) = c.secret_key.as_i32() {
                        self.server.registry.cancel(c.pid, secret);
                    }
                    return Ok(());
                }
                Ok(StartupFrame::Message(F::Startup(s))) => break s,
                Ok(StartupFrame::Message(_)) => {
                    return self
                        .fatal(PgError::protocol("expected a start-up message"))
                        .await;
                }
                Err(e) => return self.fatal(frame_error(e)).await,
            }
        };
        if over_limit {
            return self
                .fatal(PgError::new(
                    "53300",
                    format!(
                        "sorry, too many clients already (CONNECTIONS_MAX = {})",
                        super::CONNECTIONS_MAX
                    ),
                ))
                .await;
        }
        self.start_session(startup).await?;
        *started = true;
        Ok(())
    }

    /// Start-up and authentication, under [`STARTUP_TIMEOUT`].
    async fn serve_with_timeout(&mut self, over_limit: bool) -> Result<(), End> {
        let mut started = false;
        let r = tokio::time::timeout(
            STARTUP_TIMEOUT,
            self.startup_phase(over_limit, &mut started),
        )
        .await;
        match r {
            Ok(Ok(())) if started => self.message_loop().await,
            Ok(other) => other,
            Err(_) => {
                self.fatal(PgError::new(
                    "08006",
                    "start-up timed out (STARTUP_TIMEOUT)",
                ))
                .await
            }
        }
    }

    async fn start_session(&mut self, s: Startup) -> Result<(), End> {
        if s.protocol_number_minor != 0 {
            self.negotiate_protocol_version(&s);
        }
        let Some(user) = s.parameters.get("user").cloned().filter(|u| !u.is_empty()) else {
            let e = PgError::new(
                code::INVALID_AUTHORIZATION,
                "no PostgreSQL user name specified in startup packet",
            );
            return self.fatal(e).await;
        };
        let param = |k: &str| s.parameters.get(k).cloned().filter(|v| !v.is_empty());
        let db = param("database").unwrap_or_else(|| user.clone());
        let app = param("application_name").unwrap_or_default();
        if let Some(password) = self.server.config.password.clone() {
            self.authenticate(&user, &password).await?;
        }
        if let Err(e) = self.ensure_database(&db) {
            return self.fatal(e).await;
        }
        let (pid, entry) = self.server.registry.register(Activity {
            pid: 0,
            db: db.clone(),
            user: user.clone(),
            application_name: app.clone(),
            client_addr: self.peer.ip().to_string(),
            client_port: self.peer.port(),
            backend_start_ns: super::now_ns(),
            query_start_ns: None,
            state_change_ns: None,
            state: "idle",
            query: String::new(),
        });
        self.pid = pid;
        let settings = Arc::new(Mutex::new(default_settings(&db, &user, &app)));
        let registry = self.server.registry.clone();
        let facts = Arc::new(SessionFacts {
            db,
            user,
            pid,
            settings: settings.clone(),
            registry,
        });
        let engine = self.server.state.engine.clone();
        self.session = Some(Session::new(
            engine,
            (*self.server.state.query).clone(),
            facts,
        ));
        self.welcome(&settings.lock(), pid, entry.secret);
        self.entry = Some(entry);
        self.flush().await
    }

    /// We speak 3.0: a newer client is told so (NegotiateProtocolVersion, newest minor 0, its `_pq_.`
    /// options unrecognised).
    fn negotiate_protocol_version(&mut self, s: &Startup) {
        let mut body = BytesMut::new();
        body.extend_from_slice(&0i32.to_be_bytes());
        let opts: Vec<&String> = s
            .parameters
            .keys()
            .filter(|k| k.starts_with("_pq_."))
            .collect();
        body.extend_from_slice(&(opts.len() as i32).to_be_bytes());
        for o in opts {
            body.extend_from_slice(o.as_bytes());
            body.extend_from_slice(&[0]);
        }
        self.out.extend_from_slice(b"v");
        self.out
            .extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        self.out.extend_from_slice(&body);
    }

    /// The database must exist, except `postgres` (so a fresh server can run CREATE DATABASE), unless
    /// the server creates databases on first use.
    fn ensure_database(&self, db: &str) -> Result<(), PgError> {
        let engine = &self.server.state.engine;
        if engine.catalog().db(db).is_some() {
            return Ok(());
        }
        if self.server.state.config.auto_create_databases {
            return engine
                .create_database(db, 0, true)
                .map_err(|e| super::errors::from_storage(&e));
        }
        if db == "postgres" {
            return Ok(());
        }
        Err(PgError::new(code::INVALID_CATALOG_NAME, format!("database \"{db}\" does not exist"))
            .with_hint("connect to database postgres and run CREATE DATABASE, or start the server with --auto-create-databases"))
    }

    /// AuthenticationOk, the ParameterStatus set clients rely on, BackendKeyData, ReadyForQuery.
    fn welcome(
        &mut self,
        settings: &std::collections::BTreeMap<String, String>,
        pid: i32,
        secret: i32,
    ) {
        self.send(B::Authentication(Authentication::Ok));
        for key in [
            "server_version",
            "server_encoding",
            "client_encoding",
            "datestyle",
            "intervalstyle",
            "timezone",
            "integer_datetimes",
            "standard_conforming_strings",
            "is_superuser",
            "session_authorization",
            "application_name",
            "default_transaction_read_only",
            "in_hot_standby",
            "search_path",
        ] {
            let v = settings.get(key).cloned().unwrap_or_default();
            self.send(B::ParameterStatus(ParameterStatus::new(
                display_name(key).to_string(),
                v,
            )));
        }
        self.send(B::BackendKeyData(BackendKeyData::new(
            pid,
            SecretKey::I32(secret),
        )));
        self.send(B::ReadyForQuery(ReadyForQuery::new(
            TransactionStatus::Idle,
        )));
    }

    async fn authenticate(&mut self, user: &str, password: &str) -> Result<(), End> {
        let salt: [u8; 4] = super::random_i32().to_be_bytes();
        let method = self.server.config.auth;
        self.send(B::Authentication(match method {
            AuthMethod::Md5 => Authentication::MD5Password(salt.to_vec()),
            AuthMethod::Cleartext => Authentication::CleartextPassword,
        }));
        let f = match self.next_frame(Phase::Normal).await? {
            Ok(f) => f,
            Err(e) => return self.fatal(frame_error(e)).await,
        };
        let given = match frame::decode_frame(f) {
            Ok(F::PasswordMessageFamily(p)) => match p.into_password() {
                Ok(p) => p.password,
                Err(e) => return self.fatal(PgError::protocol(e.to_string())).await,
            },
            Ok(_) => {
                return self
                    .fatal(PgError::protocol("expected a password message"))
                    .await;
            }
            Err(e) => return self.fatal(frame_error(e)).await,
        };
        let expected = match method {
            AuthMethod::Md5 => pgwire::api::auth::md5pass::hash_md5_password(user, password, &salt),
            AuthMethod::Cleartext => password.to_string(),
        };
        if given != expected {
            tracing::warn!(user, peer = %self.peer, "postgres password authentication failed");
            return self
                .fatal(PgError::new(
                    code::INVALID_PASSWORD,
                    format!("password authentication failed for user \"{user}\""),
                ))
                .await;
        }
        Ok(())
    }

    fn tx(&self) -> Tx {
        self.session.as_ref().map(|s| s.tx).unwrap_or(Tx::Idle)
    }

    fn ready(&mut self) {
        let st = status(self.tx());
        self.send(B::ReadyForQuery(ReadyForQuery::new(st)));
    }

    async fn message_loop(&mut self) -> Result<(), End> {
        loop {
            let f = match self.next_frame(Phase::Normal).await? {
                Ok(f) => f,
                Err(e @ FrameError::TooLarge { len, .. }) if self.copy.is_none() => {
                    self.refuse_oversized(e, len);
                    continue;
                }
                Err(e) => return self.fatal(frame_error(e)).await,
            };
            let msg = match frame::decode_frame(f) {
                Ok(m) => m,
                Err(e) => return self.fatal(frame_error(e)).await,
            };
            if self.copy.is_some() {
                self.copy_message(msg).await?;
                continue;
            }
            if self.skip_until_sync && !matches!(msg, F::Sync(_) | F::Terminate(_)) {
                continue;
            }
            match msg {
                F::Query(q) => {
                    self.simple_query(&q.query).await?;
                    if self.copy.is_none() {
                        self.ready();
                    }
                }
                F::Parse(p) => {
                    let r = self
                        .parse(p.name.unwrap_or_default(), p.query, p.type_oids)
                        .await;
                    self.extended_result(r);
                }
                F::Bind(b) => {
                    let r = self.bind(b);
                    self.extended_result(r);
                }
                F::Describe(d) => {
                    let r = self.describe(d.target_type, d.name.unwrap_or_default());
                    self.extended_result(r);
                }
                F::Execute(e) => {
                    let r = self.execute(e.name.unwrap_or_default(), e.max_rows).await?;
                    self.extended_result(r);
                }
                F::Close(c) if c.target_type != b'S' && c.target_type != b'P' => {
                    let e = PgError::protocol(format!(
                        "invalid CLOSE message subtype {}",
                        c.target_type
                    ));
                    self.extended_result(Err(e));
                }
                F::Close(c) => {
                    let name = c.name.unwrap_or_default();
                    if c.target_type == b'S' {
                        self.statements.remove(&name);
                    } else {
                        self.portals.remove(&name);
                    }
                    self.send(B::CloseComplete(CloseComplete::new()));
                }
                F::Sync(_) => {
                    self.skip_until_sync = false;
                    self.portals.remove("");
                    self.ready();
                    self.flush().await?;
                }
                F::Flush(_) => self.flush().await?,
                F::Terminate(_) => return Ok(()),
                // Outside COPY these are dropped, as PostgreSQL does after a failed COPY.
                F::CopyData(_) | F::CopyDone(_) | F::CopyFail(_) => {}
                other => {
                    let e =
                        PgError::protocol(format!("unexpected message {other:?} after start-up"));
                    return self.fatal(e).await;
                }
            }
        }
    }

    /// A message over the limit: answer the error at once, then drop its bytes as they arrive (never
    /// buffering them) and go on, as if the message had failed.
    fn refuse_oversized(&mut self, e: FrameError, len: usize) {
        let ty = self.inbuf[0];
        self.discard = len + 1;
        tracing::warn!(peer = %self.peer, len, "refused an oversized PostgreSQL message");
        if ty == b'Q' {
            self.fail(frame_error(e));
            self.ready();
        } else {
            self.extended_result(Err(frame_error(e)));
        }
    }

    /// After an extended-protocol message: on error, report it and skip to Sync.
    fn extended_result(&mut self, r: Result<(), PgError>) {
        if let Err(e) = r {
            self.fail(e);
            self.skip_until_sync = true;
        }
    }

    /// Reports an error; inside a transaction block the block is now failed.
    fn fail(&mut self, e: PgError) {
        if let Some(s) = self.session.as_mut() {
            if s.tx == Tx::Block {
                s.tx = Tx::Failed;
            }
        }
        self.send_error(e);
    }

    fn session(&mut self) -> &mut Session {
        self.session
            .as_mut()
            .expect("a session exists after start-up")
    }

    fn set_activity(&self, query: Option<&str>) {
        if let Some(e) = &self.entry {
            let mut a = e.activity.lock();
            let now = super::now_ns();
            match query {
                Some(q) => {
                    a.state = "active";
                    a.query = q.chars().take(ACTIVITY_QUERY_CHARS_MAX).collect();
                    a.query_start_ns = Some(now);
                }
                None => {
                    a.state = if self.tx() == Tx::Idle {
                        "idle"
                    } else {
                        "idle in transaction"
                    }
                }
            }
            a.state_change_ns = Some(now);
        }
    }

    fn check_tx(&self, p: &Prepared) -> Result<(), PgError> {
        use super::session::Kind;
        if self.tx() == Tx::Failed && !matches!(p.kind, Kind::Commit | Kind::Rollback) {
            return Err(PgError::new(
                code::IN_FAILED_TRANSACTION,
                "current transaction is aborted, commands ignored until end of transaction block",
            ));
        }
        Ok(())
    }

    async fn simple_query(&mut self, sql: &str) -> Result<(), End> {
        self.set_activity(Some(sql));
        let statements = match super::session::parse_sql(sql) {
            Ok(s) => s,
            Err(e) => {
                self.fail(e);
                self.set_activity(None);
                return Ok(());
            }
        };
        if statements.is_empty() {
            self.send(B::EmptyQueryResponse(EmptyQueryResponse::new()));
        }
        for st in statements {
            let prepared = match self.session().prepare(st, sql, Vec::new()).await {
                Ok(p) => Arc::new(p),
                Err(e) => {
                    self.fail(e);
                    break;
                }
            };
            if let Err(e) = self.check_tx(&prepared) {
                self.fail(e);
                break;
            }
            let formats = vec![Format::Text; prepared.fields.as_ref().map_or(0, Vec::len)];
            let mut portal = Portal {
                statement: prepared,
                params: Vec::new(),
                formats,
                running: None,
                done: false,
            };
            match self.run_portal(&mut portal, 0, true).await? {
                Ok(()) if self.copy.is_some() => break,
                Ok(()) => {}
                Err(e) => {
                    self.fail(e);
                    break;
                }
            }
        }
        self.set_activity(None);
        Ok(())
    }

    fn row_description(fields: &[FieldDesc], formats: &[Format]) -> B {
        let descs = fields
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let fmt = formats.get(i).copied().unwrap_or(Format::Text);
                FieldDescription::new(
                    f.name.clone(),
                    0,
                    0,
                    f.ty.oid(),
                    types::type_len(&f.ty),
                    -1,
                    fmt.code(),
                )
            })
            .collect();
        B::RowDescription(RowDescription::new(descs))
    }

    /// Executes (or resumes) a portal: sends rows up to `max_rows` (0 = all), then CommandComplete or
    /// PortalSuspended. `describe` sends RowDescription first (simple protocol).
    async fn run_portal(
        &mut self,
        portal: &mut Portal,
        max_rows: usize,
        describe: bool,
    ) -> Result<Result<(), PgError>, End> {
        let entry = self.entry.clone().expect("registered after start-up");
        let generation = entry.cancel.start();
        if portal.done {
            self.send(B::CommandComplete(CommandComplete::new("SELECT 0".into())));
            return Ok(Ok(()));
        }
        let running = match portal.running.take() {
            Some(r) => r,
            None => match self
                .start_portal(
                    portal.statement.clone(),
                    portal.params.clone(),
                    &entry,
                    generation,
                    describe,
                )
                .await?
            {
                Ok(Some(source)) => (source, None, 0u64),
                Ok(None) => return Ok(Ok(())),
                Err(e) => return Ok(Err(e)),
            },
        };
        self.send_rows(portal, running, max_rows, describe, &entry, generation)
            .await
    }

    /// Executes a portal's statement. Statements without rows are answered here (`Ok(None)`).
    async fn start_portal(
        &mut self,
        statement: Arc<Prepared>,
        params: Vec<ScalarValue>,
        entry: &Arc<SessionEntry>,
        generation: u64,
        describe: bool,
    ) -> Result<Result<Option<RowSource>, PgError>, End> {
        let session = self.session.as_mut().expect("session");
        let guard = super::cancel::QueryGuard {
            entry: entry.clone(),
            generation,
        };
        let fut = session.execute(&statement, params, &guard);
        let outcome = match guarded(&mut self.rd, &mut self.inbuf, entry, generation, fut).await {
            Ok(Ok(o)) => o,
            Ok(Err(e)) => return Ok(Err(e)),
            Err(i) => return self.interrupted(i, entry).map(|e| Err(e)),
        };
        match outcome {
            Outcome::Stream(s) => return Ok(Ok(Some(RowSource::Stream(s)))),
            Outcome::Batches(b) => return Ok(Ok(Some(RowSource::Batches(b.into())))),
            Outcome::Command(tag) => self.send(B::CommandComplete(CommandComplete::new(tag))),
            Outcome::Empty => self.send(B::EmptyQueryResponse(EmptyQueryResponse::new())),
            Outcome::CopyIn(copy) => {
                let n = copy.target.columns.len() as i16;
                let f = i16::from(copy.format.binary);
                self.send(B::CopyInResponse(CopyInResponse::new(
                    f as i8,
                    n,
                    vec![f; n as usize],
                )));
                self.copy = Some(CopyState {
                    copy,
                    extended: !describe,
                });
            }
            Outcome::CopyOut {
                stream,
                types,
                format,
            } => {
                return Ok(self
                    .copy_out(stream, &types, &format, entry, generation, &statement.sql)
                    .await?
                    .map(|()| None));
            }
        }
        Ok(Ok(None))
    }

    /// A canceled query is an error to report; a vanished client ends the connection (and the query).
    fn interrupted(&self, i: Interrupt, entry: &SessionEntry) -> Result<PgError, End> {
        match i {
            Interrupt::Canceled => Ok(PgError::canceled()),
            Interrupt::Disconnected => {
                entry.cancel.cancel();
                Err(End::Closed)
            }
        }
    }

    /// Sends rows up to `max_rows` (0 = all), then CommandComplete, or PortalSuspended keeping the rest.
    async fn send_rows(
        &mut self,
        portal: &mut Portal,
        (mut source, mut leftover, mut sent): (RowSource, Option<RecordBatch>, u64),
        max_rows: usize,
        describe: bool,
        entry: &Arc<SessionEntry>,
        generation: u64,
    ) -> Result<Result<(), PgError>, End> {
        let fields = portal.statement.fields.clone().unwrap_or_default();
        if describe {
            self.send(Self::row_description(&fields, &portal.formats));
        }
        let types: Vec<Type> = fields.iter().map(|f| f.ty.clone()).collect();
        let mut this_call = 0usize;
        let mut rows = Vec::new();
        loop {
            if max_rows > 0 && this_call >= max_rows {
                portal.running = Some((source, leftover, sent));
                self.send(B::PortalSuspended(PortalSuspended::new()));
                return Ok(Ok(()));
            }
            let batch = match leftover.take() {
                Some(b) => b,
                None => match self
                    .next_batch(&mut source, entry, generation, &portal.statement.sql)
                    .await?
                {
                    Ok(Some(b)) => b,
                    Ok(None) => break,
                    Err(e) => return Ok(Err(e)),
                },
            };
            if entry.cancel.is_canceled(generation) {
                return Ok(Err(PgError::canceled()));
            }
            let room = if max_rows == 0 {
                batch.num_rows()
            } else {
                max_rows - this_call
            };
            let take = batch.num_rows().min(room);
            if take < batch.num_rows() {
                leftover = Some(batch.slice(take, batch.num_rows() - take));
            }
            rows.clear();
            if let Err(e) =
                types::encode_batch(&batch.slice(0, take), &portal.formats, &types, &mut rows)
            {
                return Ok(Err(e));
            }
            for r in rows.drain(..) {
                self.send(B::DataRow(r));
            }
            this_call += take;
            sent += take as u64;
            if self.out.len() >= OUT_FLUSH_BYTES {
                self.flush().await?;
            }
        }
        portal.done = true;
        self.send(B::CommandComplete(CommandComplete::new(format!(
            "SELECT {sent}"
        ))));
        Ok(Ok(()))
    }

    /// The next batch of a row source (`None` at its end), watching for cancel and disconnect.
    async fn next_batch(
        &mut self,
        source: &mut RowSource,
        entry: &Arc<SessionEntry>,
        generation: u64,
        sql: &str,
    ) -> Result<Result<Option<RecordBatch>, PgError>, End> {
        let s = match source {
            RowSource::Batches(q) => return Ok(Ok(q.pop_front())),
            RowSource::Stream(s) => s,
        };
        match guarded(&mut self.rd, &mut self.inbuf, entry, generation, s.next()).await {
            Ok(Some(Ok(b))) => Ok(Ok(Some(b))),
            Ok(Some(Err(e))) => Ok(Err(super::errors::from_datafusion(&e, sql))),
            Ok(None) => Ok(Ok(None)),
            Err(i) => self.interrupted(i, entry).map(Err),
        }
    }

    async fn parse(&mut self, name: String, query: String, oids: Vec<u32>) -> Result<(), PgError> {
        if !name.is_empty() && self.statements.contains_key(&name) {
            return Err(PgError::new(
                "42P05",
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        let mut statements = super::session::parse_sql(&query)?;
        if statements.len() > 1 {
            return Err(PgError::new(
                code::SYNTAX_ERROR,
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        let declared: Vec<Option<Type>> = oids
            .iter()
            .map(|o| if *o == 0 { None } else { Type::from_oid(*o) })
            .collect();
        let prepared = match statements.pop() {
            None => super::session::Prepared {
                sql: query,
                kind: super::session::Kind::Empty,
                param_types: Vec::new(),
                declared: Vec::new(),
                targets: Vec::new(),
                fields: None,
            },
            Some(st) => self.session().prepare(st, &query, declared).await?,
        };
        if !name.is_empty() && self.statements.len() >= STATEMENTS_PER_CONNECTION_MAX {
            return Err(PgError::new(
                code::PROGRAM_LIMIT_EXCEEDED,
                format!(
                    "more than {STATEMENTS_PER_CONNECTION_MAX} prepared statements on one connection (STATEMENTS_PER_CONNECTION_MAX); close unused ones"
                ),
            ));
        }
        self.statements.insert(name, Arc::new(prepared));
        self.send(B::ParseComplete(ParseComplete::new()));
        Ok(())
    }

    fn bind(&mut self, b: pgwire::messages::extendedquery::Bind) -> Result<(), PgError> {
        let sname = b.statement_name.unwrap_or_default();
        let statement = self.statements.get(&sname).cloned().ok_or_else(|| {
            PgError::new(
                code::INVALID_SQL_STATEMENT_NAME,
                format!("prepared statement \"{sname}\" does not exist"),
            )
        })?;
        let params = self.session().bind_params(
            &statement,
            &sname,
            &b.parameter_format_codes,
            &b.parameters,
        )?;
        let n = statement.fields.as_ref().map_or(0, Vec::len);
        let formats = Format::from_codes(&b.result_column_format_codes, n)?;
        let pname = b.portal_name.unwrap_or_default();
        if !pname.is_empty()
            && self.portals.len() >= PORTALS_PER_CONNECTION_MAX
            && !self.portals.contains_key(&pname)
        {
            return Err(PgError::new(
                code::PROGRAM_LIMIT_EXCEEDED,
                format!(
                    "more than {PORTALS_PER_CONNECTION_MAX} open portals on one connection (PORTALS_PER_CONNECTION_MAX); close unused ones"
                ),
            ));
        }
        self.portals.insert(
            pname,
            Portal {
                statement,
                params,
                formats,
                running: None,
                done: false,
            },
        );
        self.send(B::BindComplete(BindComplete::new()));
        Ok(())
    }

    fn describe(&mut self, target: u8, name: String) -> Result<(), PgError> {
        if target != b'S' && target != b'P' {
            return Err(PgError::protocol(format!(
                "invalid DESCRIBE message subtype {target}"
            )));
        }
        if target == b'S' {
            let st = self.statements.get(&name).cloned().ok_or_else(|| {
                PgError::new(
                    code::INVALID_SQL_STATEMENT_NAME,
                    format!("prepared statement \"{name}\" does not exist"),
                )
            })?;
            self.send(B::ParameterDescription(ParameterDescription::new(
                st.param_types.iter().map(Type::oid).collect(),
            )));
            match &st.fields {
                Some(f) => {
                    let formats = vec![Format::Text; f.len()];
                    self.send(Self::row_description(f, &formats));
                }
                None => self.send(B::NoData(NoData::new())),
            }
        } else {
            let p = self.portals.get(&name).ok_or_else(|| {
                PgError::new(
                    code::INVALID_CURSOR_NAME,
                    format!("portal \"{name}\" does not exist"),
                )
            })?;
            let msg = match &p.statement.fields {
                Some(f) => Self::row_description(f, &p.formats),
                None => B::NoData(NoData::new()),
            };
            self.send(msg);
        }
        Ok(())
    }

    async fn execute(&mut self, name: String, max_rows: i32) -> Result<Result<(), PgError>, End> {
        let Some(mut portal) = self.portals.remove(&name) else {
            return Ok(Err(PgError::new(
                code::INVALID_CURSOR_NAME,
                format!("portal \"{name}\" does not exist"),
            )));
        };
        if let Err(e) = self.check_tx(&portal.statement) {
            return Ok(Err(e));
        }
        let sql = portal.statement.sql.clone();
        self.set_activity(Some(&sql));
        let r = self
            .run_portal(&mut portal, max_rows.max(0) as usize, false)
            .await;
        self.set_activity(None);
        self.portals.insert(name, portal);
        r
    }

    async fn copy_message(&mut self, msg: F) -> Result<(), End> {
        let result = match msg {
            F::CopyData(d) => {
                let state = self.copy.as_mut().expect("in copy");
                match state.copy.feed(&d.data) {
                    Ok(()) if state.copy.pending.len() >= COPY_BATCH_ROWS => {
                        self.copy_flush().await
                    }
                    other => other,
                }
            }
            F::CopyDone(_) => {
                let finished = self.copy.as_mut().expect("in copy").copy.finish();
                match finished {
                    Ok(()) => match self.copy_flush().await {
                        Ok(()) => {
                            let state = self.copy.take().expect("in copy");
                            self.send(B::CommandComplete(CommandComplete::new(format!(
                                "COPY {}",
                                state.copy.rows_written
                            ))));
                            if !state.extended {
                                self.ready();
                            }
                            return Ok(());
                        }
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(e),
                }
            }
            F::CopyFail(f) => Err(PgError::new(
                code::QUERY_CANCELED,
                format!("COPY from stdin failed: {}", f.message),
            )),
            F::Sync(_) | F::Flush(_) => return Ok(()),
            F::Terminate(_) => return Err(End::Closed),
            other => Err(PgError::protocol(format!(
                "unexpected message during COPY from stdin: {other:?}"
            ))),
        };
        if let Err(e) = result {
            let state = self.copy.take().expect("in copy");
            self.fail(e);
            if state.extended {
                self.skip_until_sync = true;
            } else {
                self.ready();
            }
        }
        Ok(())
    }

    /// `COPY … TO STDOUT`: CopyOutResponse, one CopyData per row (psycopg parses rows per message), CopyDone.
    async fn copy_out(
        &mut self,
        stream: SendableRecordBatchStream,
        types: &[Type],
        format: &super::ingest::CopyFormat,
        entry: &Arc<SessionEntry>,
        generation: u64,
        sql: &str,
    ) -> Result<Result<(), PgError>, End> {
        let n = types.len() as i16;
        self.send(B::CopyOutResponse(CopyOutResponse::new(
            0,
            n,
            vec![0; types.len()],
        )));
        let schema = stream.schema();
        let mut source = RowSource::Stream(stream);
        if format.header {
            let names: Vec<Option<Vec<u8>>> = schema
                .fields()
                .iter()
                .map(|f| Some(f.name().as_bytes().to_vec()))
                .collect();
            self.send(B::CopyData(CopyData::new(
                super::ingest::copy_line(&names, format).into(),
            )));
        }
        let formats = vec![Format::Text; types.len()];
        let mut rows = Vec::new();
        let mut count = 0u64;
        loop {
            let batch = match self.next_batch(&mut source, entry, generation, sql).await? {
                Ok(Some(b)) => b,
                Ok(None) => break,
                Err(e) => return Ok(Err(e)),
            };
            rows.clear();
            if let Err(e) = types::encode_batch(&batch, &formats, types, &mut rows) {
                return Ok(Err(e));
            }
            for r in rows.drain(..) {
                let line =
                    super::ingest::copy_line(&super::ingest::data_row_fields(&r.data), format);
                self.send(B::CopyData(CopyData::new(line.into())));
                count += 1;
            }
            if self.out.len() >= OUT_FLUSH_BYTES {
                self.flush().await?;
            }
        }
        self.send(B::CopyDone(CopyDone::new()));
        self.send(B::CommandComplete(CommandComplete::new(format!(
            "COPY {count}"
        ))));
        Ok(Ok(()))
    }

    /// Writes the rows COPY has buffered.
    async fn copy_flush(&mut self) -> Result<(), PgError> {
        let state = self.copy.as_mut().expect("in copy");
        let rows = std::mem::take(&mut state.copy.pending);
        if rows.is_empty() {
            return Ok(());
        }
        let target = state.copy.target.clone();
        let engine = self.server.state.engine.clone();
        let n = tokio::task::spawn_blocking(move || target.write(&engine, &rows, super::now_ns()))
            .await
            .map_err(|e| PgError::internal(format!("write task failed: {e}")))??;
        self.copy.as_mut().expect("in copy").copy.rows_written += n as u64;
        Ok(())
    }
}

fn frame_error(e: FrameError) -> PgError {
    let c = match &e {
        FrameError::TooLarge { .. } => code::PROGRAM_LIMIT_EXCEEDED,
        FrameError::UnsupportedProtocol { .. } => code::FEATURE_NOT_SUPPORTED,
        _ => code::PROTOCOL_VIOLATION,
    };
    PgError::new(c, e.to_string())
}
