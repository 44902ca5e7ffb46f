//! Sundial's network front ends: the HTTP API (InfluxDB 1.x/2.x line-protocol writes, SQL queries,
//! InfluxQL `/query`, health) on axum, and the PostgreSQL wire protocol ([`pg`]) on pgwire.
//!
//! Request handling lives in one module per endpoint family ([`write`], [`sql`]); [`errors`] maps every
//! error to its HTTP status and body in one exhaustive place.

pub mod errors;
pub mod http;
pub mod influx;
pub mod pg;
pub mod sql;
pub mod write;

use std::sync::Arc;

use sundial_query::QueryEngine;
use sundial_query::influx::InfluxQl;
use sundial_storage::Engine;

/// Server settings (the binary fills them from flags, environment and the config file).
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Largest request body accepted, in bytes, after gzip decompression. Default 64 MiB.
    pub max_body_bytes: usize,
    /// Create a database on the first write to it instead of answering 404. Default off (as InfluxDB 1.x).
    pub auto_create_databases: bool,
    /// Retention (ns) of databases created without one; 0 keeps data forever. Default 0.
    pub default_retention_ns: i64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig { max_body_bytes: 64 * 1024 * 1024, auto_create_databases: false, default_retention_ns: 0 }
    }
}

/// What every handler shares.
pub struct AppState {
    pub config: ServerConfig,
    pub engine: Arc<Engine>,
    pub query: Arc<QueryEngine>,
    pub influxql: InfluxQl,
    /// Whether line-protocol bodies are parsed sharing repeated series keys, from how that fared.
    pub key_sharing: sundial_lp::ShareAdvisor,
    /// Whether the engine is asked for bodies' series keys, to leave known keys' tags out of the parse
    /// (`write.rs`), from how often it knew them: at 10 M hosts every key is new, and asking was 4 %
    /// of the server's CPU for nothing.
    pub key_eliding: sundial_lp::ShareAdvisor,
}

impl AppState {
    pub fn new(config: ServerConfig, engine: Arc<Engine>) -> Arc<AppState> {
        let query = Arc::new(QueryEngine::new(engine.clone()).with_default_retention(config.default_retention_ns));
        let influxql = InfluxQl::new(query.clone());
        Arc::new(AppState { config, engine, query, influxql, key_sharing: Default::default(), key_eliding: Default::default() })
    }
}

/// The version reported to clients (`X-Influxdb-Version` carries the InfluxDB API level we speak).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
