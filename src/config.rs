//! Server configuration: one struct, flags with environment fallbacks (`pathd serve --help`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (for log shippers).
    Json,
}

/// Everything `pathd serve` can be told. Every flag has an environment variable; the
/// defaults suit a single small instance.
#[derive(Clone, Debug, Args)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "PATHD_ADDR", default_value = "0.0.0.0:8080")]
    pub addr: SocketAddr,

    /// Directory of bundled `*.map` files loaded at start (read-only).
    #[arg(long, env = "PATHD_MAPS_DIR", default_value = "./maps")]
    pub maps_dir: PathBuf,

    /// Directory where uploaded maps are stored durably (created if missing).
    #[arg(long, env = "PATHD_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// Bearer token required by `PUT`/`DELETE` (map changes). Unset: changes are open.
    #[arg(long, env = "PATHD_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,

    /// Bearer token required by reads and queries (the admin token is accepted too).
    /// Unset: reads and queries are open.
    #[arg(long, env = "PATHD_QUERY_TOKEN", hide_env_values = true)]
    pub query_token: Option<String>,

    /// Search worker threads (0 = one per CPU core).
    #[arg(long, env = "PATHD_POOL_THREADS", default_value_t = 0)]
    pub pool_threads: usize,

    /// Requests (a batch counts once) that may wait for a worker beyond the running ones;
    /// past that, `503 overloaded`.
    #[arg(long, env = "PATHD_QUEUE_DEPTH", default_value_t = 64)]
    pub queue_depth: usize,

    /// Log format.
    #[arg(long, env = "PATHD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Largest accepted request body in bytes (`413 payload_too_large` beyond).
    #[arg(long, env = "PATHD_MAX_BODY_BYTES", default_value_t = 64 << 20)]
    pub max_body_bytes: usize,

    /// Largest map in cells, width x height (`413 map_too_large` beyond). Search memory is
    /// about 24 bytes per cell per worker thread.
    #[arg(long, env = "PATHD_MAX_MAP_CELLS", default_value_t = 4096 * 4096)]
    pub max_map_cells: u64,

    /// Most maps held at once (`409 too_many_maps` beyond).
    #[arg(long, env = "PATHD_MAX_MAPS", default_value_t = 256)]
    pub max_maps: usize,

    /// Most queries in one batch request (`413 too_many_queries` beyond).
    #[arg(long, env = "PATHD_MAX_BATCH", default_value_t = 256)]
    pub max_batch: usize,

    /// Most expansions per search; a request's `max_expansions` is capped to this.
    #[arg(long, env = "PATHD_MAX_EXPANSIONS", default_value_t = 20_000_000)]
    pub max_expansions: u64,

    /// Longest search in milliseconds; a request's `timeout_ms` is capped to this, and it is
    /// the timeout of requests that give none.
    #[arg(long, env = "PATHD_MAX_TIMEOUT_MS", default_value_t = 5_000)]
    pub max_timeout_ms: u64,

    /// Most expanded cells returned by `"debug": true`.
    #[arg(long, env = "PATHD_MAX_DEBUG_CELLS", default_value_t = 10_000)]
    pub max_debug_cells: usize,

    /// Most cell writes in one map patch: single cells plus rectangle areas
    /// (`413 patch_too_large` beyond).
    #[arg(long, env = "PATHD_MAX_PATCH_CELLS", default_value_t = 1 << 20)]
    pub max_patch_cells: u64,

    /// Most live subscriptions on one map (`429 too_many_subscriptions` beyond).
    #[arg(
        long,
        env = "PATHD_MAX_SUBSCRIPTIONS_PER_MAP",
        default_value_t = 10_000
    )]
    pub max_subscriptions_per_map: usize,

    /// Most live subscriptions on the server (`429 too_many_subscriptions` beyond).
    /// Subscriptions with the same goal and size share one search; each keeps its path.
    #[arg(long, env = "PATHD_MAX_SUBSCRIPTIONS", default_value_t = 20_000)]
    pub max_subscriptions: usize,

    /// Memory budget in bytes of one map's subscriptions (their shared searches and paths):
    /// a new subscription gets `429 too_many_subscriptions` while it is used up.
    #[arg(
        long,
        env = "PATHD_MAX_SUBSCRIPTION_BYTES_PER_MAP",
        default_value_t = 512 << 20
    )]
    pub max_subscription_bytes_per_map: usize,

    /// Memory budget in bytes of every subscription on the server (as per map).
    #[arg(long, env = "PATHD_MAX_SUBSCRIPTION_BYTES", default_value_t = 1 << 30)]
    pub max_subscription_bytes: usize,

    /// A subscription with no open event stream and no request for this many seconds is
    /// dropped.
    #[arg(long, env = "PATHD_SUBSCRIPTION_TTL_SECS", default_value_t = 600)]
    pub subscription_ttl_secs: u64,

    /// Recent events kept per subscription for slow or reconnecting streams; a stream that
    /// falls further behind gets a `resync` event with the full current state.
    #[arg(long, env = "PATHD_SUBSCRIPTION_EVENT_BUFFER", default_value_t = 64)]
    pub subscription_event_buffer: usize,

    /// Maps with at least this many cells get an HPA* abstraction, built in the background
    /// (0 = never). Smaller maps are fast enough for A*/JPS.
    #[arg(long, env = "PATHD_HPA_MIN_CELLS", default_value_t = 512 * 512)]
    pub hpa_min_cells: u64,
    /// Uniform octile maps of at most this many cells get a JPS+ jump table (16 bytes a
    /// cell), built in the background and kept current under patches (0 = never).
    #[arg(long, env = "PATHD_JPS_PLUS_MAX_CELLS", default_value_t = 1 << 22)]
    pub jps_plus_max_cells: u64,
    /// HPA* cluster side in cells (4..=128).
    #[arg(long, env = "PATHD_HPA_CLUSTER_SIZE", default_value_t = 32,
          value_parser = clap::value_parser!(u32).range(4..=128))]
    pub hpa_cluster_size: u32,
    /// How long shutdown waits for in-flight requests before closing them, in milliseconds.
    #[arg(long, env = "PATHD_SHUTDOWN_GRACE_MS", default_value_t = 10_000)]
    pub shutdown_grace_ms: u64,

    /// Test-only: the store sleeps up to this many microseconds at each step of a durable
    /// write, so fault-injection tests can time out clients inside it. Never set it in
    /// production.
    #[arg(
        long,
        env = "PATHD_TEST_STORE_DELAY_US",
        default_value_t = 0,
        hide = true
    )]
    pub test_store_delay_us: u64,

    /// Test-only: with `--store nats://...`, each mutation read from the stream waits this
    /// many milliseconds before it is applied, so tests can watch a replica lag. Never set
    /// it in production.
    #[arg(
        long,
        env = "PATHD_TEST_APPLY_DELAY_MS",
        default_value_t = 0,
        hide = true
    )]
    pub test_apply_delay_ms: u64,

    /// Connection limits (timeouts and cap; see [`crate::serve`]). Boxed: `Config` is
    /// carried in a command enum, which must not grow much bigger than its siblings.
    #[command(flatten)]
    pub connections: Box<ConnectionLimits>,

    /// Flow field limits (see [`crate::flowfields`]). Boxed for the same reason.
    #[command(flatten)]
    pub flowfields: Box<FlowLimits>,

    /// Replication through NATS JetStream (`--store`; see [`ReplicationOptions`]).
    #[command(flatten)]
    pub replication: Box<ReplicationOptions>,
}

/// How many flow fields the server keeps and how big one may be. Flow fields share the
/// subscriptions' idle TTL and event buffer size.
#[derive(Clone, Debug, Args)]
pub struct FlowLimits {
    /// Most live flow fields on the server (`429 too_many_flowfields` beyond). A field
    /// holds about 11 bytes per region cell.
    #[arg(long, env = "PATHD_MAX_FLOWFIELDS", default_value_t = 1_000)]
    pub max_flowfields: usize,

    /// Most cells in one flow field's region (`400 invalid_request` beyond): bounds the
    /// memory and the first computation of one field.
    #[arg(long, env = "PATHD_MAX_FLOWFIELD_CELLS", default_value_t = 4096 * 4096)]
    pub max_flowfield_cells: u64,
}

/// Where maps are stored and how replicas wait for each other (`--store`, `--nats-*`,
/// `--max-wait-ms`).
#[derive(Clone, Debug, Args)]
pub struct ReplicationOptions {
    /// Store maps in NATS JetStream instead of the data directory, shared by every replica
    /// given the same servers: `nats://HOST:PORT[,HOST:PORT...]`. Unset: the local data
    /// directory (`--data-dir`).
    #[arg(long, env = "PATHD_STORE")]
    pub store: Option<String>,

    /// NATS credentials file (JWT and NKey seed, `.creds`).
    #[arg(long, env = "PATHD_NATS_CREDS")]
    pub nats_creds: Option<PathBuf>,

    /// NATS user name (with `--nats-password`).
    #[arg(long, env = "PATHD_NATS_USER")]
    pub nats_user: Option<String>,

    /// NATS password (with `--nats-user`).
    #[arg(long, env = "PATHD_NATS_PASSWORD", hide_env_values = true)]
    pub nats_password: Option<String>,

    /// NATS authentication token.
    #[arg(long, env = "PATHD_NATS_TOKEN", hide_env_values = true)]
    pub nats_token: Option<String>,

    /// Refuse to talk to NATS without TLS (a `tls://` store URL implies it).
    #[arg(long, env = "PATHD_NATS_REQUIRE_TLS")]
    pub nats_require_tls: bool,

    /// PEM file of the CA that signed the NATS servers' certificates (default: the system's
    /// root certificates).
    #[arg(long, env = "PATHD_NATS_TLS_CA")]
    pub nats_tls_ca: Option<PathBuf>,

    /// PEM client certificate for NATS servers that verify clients (with
    /// `--nats-tls-key`).
    #[arg(long, env = "PATHD_NATS_TLS_CERT", requires = "nats_tls_key")]
    pub nats_tls_cert: Option<PathBuf>,

    /// PEM private key of `--nats-tls-cert`.
    #[arg(long, env = "PATHD_NATS_TLS_KEY", requires = "nats_tls_cert")]
    pub nats_tls_key: Option<PathBuf>,

    /// Replicas of the JetStream stream when pathd creates it: 1 on a single NATS server,
    /// 3 on a three-node cluster (a write is acknowledged once a quorum stored it).
    #[arg(long, env = "PATHD_NATS_REPLICAS", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=5))]
    pub nats_replicas: u16,

    /// How long a request with `min_version` waits for this replica to apply that version,
    /// in milliseconds; then `503 replica_behind`.
    #[arg(long, env = "PATHD_MAX_WAIT_MS", default_value_t = 1_000)]
    pub max_wait_ms: u64,
}

/// How long clients may take and how many connections are served at once (the flags of
/// `pathd serve` that [`crate::serve`] applies).
#[derive(Clone, Debug, Args)]
pub struct ConnectionLimits {
    /// How long a client may take to send a request's headers, from its first byte, in
    /// milliseconds; then the connection is closed. Stops slow-header (slowloris) clients
    /// from holding a connection slot.
    #[arg(long, env = "PATHD_HEADER_TIMEOUT_MS", default_value_t = 10_000)]
    pub header_timeout_ms: u64,

    /// How long a client may take to send a request's whole body, from the end of its
    /// headers, in milliseconds; then it gets `408 body_timeout` and the connection closes.
    /// A total bound, not a per-chunk one, so a trickling client cannot stretch it.
    #[arg(long, env = "PATHD_BODY_TIMEOUT_MS", default_value_t = 30_000)]
    pub body_timeout_ms: u64,

    /// How long a connection may sit with no request (before its first one, or between
    /// keep-alive requests), in milliseconds; then it is closed.
    #[arg(long, env = "PATHD_IDLE_TIMEOUT_MS", default_value_t = 60_000)]
    pub idle_timeout_ms: u64,

    /// Most open client connections. Beyond it a new connection gets a short
    /// `503 too_many_connections` answer and is closed. Lowered at start to fit the
    /// process's open-file limit (`ulimit -n`) minus a reserve for maps, data files, the
    /// listener and the `503` answers, since past that limit nothing can be accepted.
    #[arg(long, env = "PATHD_MAX_CONNECTIONS", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
}

impl Config {
    /// The configuration with every default, as `pathd serve` with no flags or environment
    /// would see it, but with the given directories (handy for tests and embedding).
    pub fn with_dirs(maps_dir: impl Into<PathBuf>, data_dir: impl Into<PathBuf>) -> Self {
        use clap::{FromArgMatches, Parser};
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            config: Config,
        }
        // Parse from an empty command line, ignoring the environment's PATHD_* values, so the
        // defaults live in one place (the attributes above).
        let cmd = <Wrapper as clap::CommandFactory>::command();
        let cmd = cmd.mut_args(|a| a.env(None::<&str>));
        let matches = cmd.get_matches_from(["pathd"]);
        let mut config = Wrapper::from_arg_matches(&matches)
            .expect("defaults parse")
            .config;
        config.maps_dir = maps_dir.into();
        config.data_dir = data_dir.into();
        config
    }

    /// Worker threads to start: the configured count, or one per core.
    pub fn worker_threads(&self) -> usize {
        if self.pool_threads > 0 {
            self.pool_threads
        } else {
            std::thread::available_parallelism().map_or(2, |n| n.get())
        }
    }

    /// The test-only store delay (zero unless set).
    pub fn test_store_delay(&self) -> Duration {
        Duration::from_micros(self.test_store_delay_us)
    }

    /// The HPA* settings.
    pub fn hpa_settings(&self) -> crate::hpa::HpaSettings {
        crate::hpa::HpaSettings {
            min_cells: self.hpa_min_cells,
            cluster_size: self.hpa_cluster_size,
        }
    }

    /// The JPS+ settings.
    pub fn jump_settings(&self) -> crate::jump::JumpSettings {
        crate::jump::JumpSettings {
            max_cells: self.jps_plus_max_cells,
        }
    }

    /// How long a `min_version` request waits at most.
    pub fn max_wait(&self) -> Duration {
        Duration::from_millis(self.replication.max_wait_ms)
    }

    /// The NATS options when `--store nats://...` is given (checked here in every build;
    /// only a build with the `nats` feature can use them).
    pub fn nats(&self) -> Result<Option<crate::store::NatsOptions>, String> {
        let r = &self.replication;
        let Some(url) = &r.store else {
            return Ok(None);
        };
        let tls = crate::store::NatsTls {
            required: r.nats_require_tls,
            ca: r.nats_tls_ca.clone(),
            client_cert: r.nats_tls_cert.clone().zip(r.nats_tls_key.clone()),
        };
        crate::store::NatsOptions::from_flags(
            url,
            r.nats_creds.clone(),
            r.nats_user.clone(),
            r.nats_password.clone(),
            r.nats_token.clone(),
            tls,
            usize::from(r.nats_replicas),
        )
        .map(Some)
    }

    /// The drain bound as a duration.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_millis(self.shutdown_grace_ms)
    }
}
