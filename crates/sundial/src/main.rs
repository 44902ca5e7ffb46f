//! `sundial`: the server binary. Flags, config file and environment are resolved here; everything else
//! lives in the library crates (storage ← query ← server).

mod config;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};

use config::ServeArgs;

/// mimalloc instead of glibc's malloc, for the whole server. Queries build and drop many short-lived
/// vectors, strings and Arrow buffers (the free alone was 13 % of lastpoint's CPU), and the write path
/// allocates per request; glibc's arenas also fragment under the load's mix of sizes. On TSBS at 4,000
/// hosts (bench/results/2026-11-27-xeon-alloc): double-groupby-1/-5/-all 27.6/68.0/95.8 → 19.5/41.4/77.5 ms,
/// the 12-hour load's server CPU 58.7–61.6 → 56.5–57.2 s and its peak RSS 1,060 → 607 MB.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its place in `mi_option_e` of `mimalloc.h`, v2 and v3 alike; the
/// Rust bindings name no constant for it). Its default is 10 ms in mimalloc v2 and 1,000 ms in v3, which
/// [`tune_allocator`] checks before changing it, so a renumbered enum leaves the allocator as it was
/// rather than set another option.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
const MI_PURGE_DELAY_DEFAULTS_MS: [std::ffi::c_long; 2] = [10, 1_000];

/// How long freed memory stays with mimalloc before it is returned to the OS: 10 s, the life of a
/// memtable under load. With mimalloc's 1 s, the pages of each flushed memtable went back to the OS
/// while the next memtable was still filling, and it faulted them in again, zeroed by the kernel
/// (`clear_page_erms`, 9 % of the server's CPU loading 10 M new series). An idle server still returns
/// the memory, 10 s later. `MIMALLOC_PURGE_DELAY` in the environment overrides it, as mimalloc
/// documents. Measured in BENCHMARKS.md ("The allocator's purge delay").
const ALLOCATOR_PURGE_DELAY_MS: std::ffi::c_long = 10_000;

/// Sets [`ALLOCATOR_PURGE_DELAY_MS`] and turns transparent huge pages off for the process. Call before
/// any other thread starts: mimalloc's option setters are not thread safe.
///
/// Huge pages: mimalloc v3 madvises its arenas `MADV_HUGEPAGE`, so the first touch of any byte of a 2 MiB
/// range has the kernel zero all of it (`clear_page_erms`, 12 % of the server's CPU loading 10 M new
/// series). With 4 KiB pages, TSBS's loads alternating (bench/results/2026-11-28-epyc-nothp): the server's
/// CPU until every row is committed 10.6/9.9/10.6 → 8.8/8.0/8.2 s at 1 M hosts, 4.3/4.5 → 3.8/3.6 s at 100
/// hosts, 7.1/7.6 → 6.3/6.8 s at 100,000 hosts; queries unchanged within noise. `MIMALLOC_ALLOW_THP` in the
/// environment leaves the choice to mimalloc, as it documents.
#[allow(unsafe_code)]
fn tune_allocator() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // The flag is the process's (the kernel keeps it on the address space), checked at each fault. A
        // kernel without it leaves huge pages on: slower, not wrong.
        let _ = rustix::thread::disable_transparent_huge_pages(true);
    }
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: plain calls into the linked allocator, made while the process has one thread.
    unsafe {
        if MI_PURGE_DELAY_DEFAULTS_MS.contains(&libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY)) {
            libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ALLOCATOR_PURGE_DELAY_MS);
        }
    }
}

#[derive(Parser, Debug)]
#[command(name = "sundial", version, about = "Sundial: a time-series database with InfluxDB line protocol, InfluxQL and SQL")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the server.
    Serve(Box<ServeArgs>),
}

fn main() -> ExitCode {
    tune_allocator();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve(*args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sundial: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let settings = args.resolve()?;
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&settings.log_level)),
        )
        .with_writer(std::io::stderr)
        .init();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
    rt.block_on(run(settings))
}

async fn run(s: config::Settings) -> anyhow::Result<()> {
    let engine_cfg = s.engine.clone();
    let dir = engine_cfg.data_dir.clone();
    let engine = tokio::task::spawn_blocking(move || sundial_storage::Engine::open(engine_cfg))
        .await?
        .with_context(|| format!("opening the data directory {}", dir.display()))?;
    let engine = Arc::new(engine);
    let state = sundial_server::AppState::new(s.server.clone(), engine.clone());
    let listener = tokio::net::TcpListener::bind(&s.http_addr)
        .await
        .with_context(|| format!("binding the HTTP address {} (`--http-addr`)", s.http_addr))?;
    let local = listener.local_addr()?;
    tracing::info!(http = %local, data_dir = %dir.display(), wal_sync = ?s.engine.wal_sync,
        memtable_mib = s.engine.memtable_bytes_max >> 20, "sundial is ready");
    // Tests and scripts read this line to learn the port when binding port 0.
    println!("sundial listening on http://{local}");
    let pg_task = match &s.pg_addr {
        Some(addr) => Some(start_pg(addr, &s, state.clone()).await?),
        None => None,
    };
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        // One response is often two writes (headers, body): without NODELAY, Nagle + delayed ACK add ~40 ms.
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, sundial_server::http::router(state))
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    if let Some(t) = pg_task {
        t.abort();
    }
    tracing::info!("shutting down: flushing memtables");
    tokio::task::spawn_blocking(move || engine.flush()).await?.context("final flush")?;
    Ok(())
}

/// Binds the PostgreSQL listener (refusing an exposed address without a password) and serves it in a task.
async fn start_pg(addr: &str, s: &config::Settings, state: Arc<sundial_server::AppState>) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the PostgreSQL address {addr} (`--pg-addr`, `off` disables it)"))?;
    let local = listener.local_addr()?;
    sundial_server::pg::check_exposure(&local, &s.pg, s.pg_allow_no_password).map_err(anyhow::Error::msg)?;
    tracing::info!(pg = %local, auth = if s.pg.password.is_some() { "password" } else { "trust" }, "postgres protocol ready");
    println!("sundial postgres listening on {local}");
    let server = sundial_server::pg::PgServer::new(state, s.pg.clone());
    Ok(tokio::spawn(sundial_server::pg::serve(listener, server)))
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("installing the SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`tune_allocator`] once for the test binary: its option setters must not run on two test threads
    /// at once.
    fn tuned() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(tune_allocator);
    }

    /// The test binary has the server's global allocator, so this checks the option's number against
    /// the mimalloc that is linked: a wrong number would find another default and change nothing.
    #[test]
    #[allow(unsafe_code)]
    fn the_allocator_keeps_freed_memory_for_the_purge_delay() {
        tuned();
        // SAFETY: reads an option of the linked allocator.
        let got = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        match std::env::var("MIMALLOC_PURGE_DELAY") {
            Ok(v) => assert_eq!(Some(got), v.trim().parse().ok(), "the environment's delay is left in place"),
            Err(_) => assert_eq!(got, ALLOCATOR_PURGE_DELAY_MS),
        }
    }

    #[test]
    fn the_process_runs_without_transparent_huge_pages() {
        tuned();
        let off = rustix::thread::transparent_huge_pages_are_disabled().expect("prctl(PR_GET_THP_DISABLE)");
        assert_eq!(off, std::env::var_os("MIMALLOC_ALLOW_THP").is_none(), "off unless the environment chooses");
    }
}
