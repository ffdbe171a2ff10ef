//! Server configuration: one struct, flags with environment fallbacks (`pathd serve --help`).
//!
//! The flags are one table, [`FLAGS`] (name, variable, default, help, setter); the command
//! line itself is read by [`crate::cli`]. A hand-written table rather than a derive-based
//! parser: it keeps a cold release build quick, and `--help`, the defaults and the README
//! check all come from it.

mod flags;

pub use flags::{FLAGS, Flag, Set, find as find_flag};

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (for log shippers).
    Json,
}

/// Everything `pathd serve` can be told. Every flag has an environment variable; the
/// defaults suit a single small instance.
#[derive(Clone, Debug)]
pub struct Config {
    /// Address to listen on.
    pub addr: SocketAddr,

    /// Directory of bundled `*.map` files loaded at start (read-only).
    pub maps_dir: PathBuf,

    /// Directory where uploaded maps are stored durably (created if missing).
    pub data_dir: PathBuf,

    /// Bearer token required by writes (map uploads, patches, deletes). Unset: writes are
    /// taken from loopback clients only, unless `allow_anonymous_writes`.
    pub admin_token: Option<String>,

    /// Without an admin token, take writes from any client (not only loopback ones).
    pub allow_anonymous_writes: bool,

    /// Test-only: every client counts as remote (a network peer), so tests on loopback can
    /// check what a remote client gets. Never set it in production.
    pub test_remote_peers: bool,

    /// After SIGTERM, how long the server goes on serving (answering `/readyz` with `503`
    /// so load balancers take it out) before it stops accepting and drains.
    pub drain_delay_ms: u64,

    /// Bearer token required by reads and queries (the admin token is accepted too).
    /// Unset: reads and queries are open.
    pub query_token: Option<String>,

    /// Search worker threads (0 = one per CPU core).
    pub pool_threads: usize,

    /// Requests (a batch counts once) that may wait for a worker beyond the running ones;
    /// past that, `503 overloaded`.
    pub queue_depth: usize,

    /// Log format.
    pub log_format: LogFormat,

    /// Largest accepted request body in bytes (`413 payload_too_large` beyond).
    pub max_body_bytes: usize,

    /// Largest map in cells, width x height (`413 map_too_large` beyond). Search memory is
    /// about 24 bytes per cell per worker thread.
    pub max_map_cells: u64,

    /// Most maps held at once (`409 too_many_maps` beyond).
    pub max_maps: usize,

    /// Most writes (PUT, PATCH, DELETE) of one map admitted and not yet answered; past it a
    /// write answers `503 overloaded` at once.
    pub max_pending_writes: usize,

    /// Most queries in one batch request (`413 too_many_queries` beyond).
    pub max_batch: usize,

    /// Most expansions per search; a request's `max_expansions` is capped to this.
    pub max_expansions: u64,

    /// Longest search in milliseconds; a request's `timeout_ms` is capped to this, and it is
    /// the timeout of requests that give none.
    pub max_timeout_ms: u64,

    /// Most expanded cells returned by `"debug": true`.
    pub max_debug_cells: usize,

    /// Most cell writes in one map patch: single cells plus rectangle areas
    /// (`413 patch_too_large` beyond).
    pub max_patch_cells: u64,

    /// Most live subscriptions on one map (`429 too_many_subscriptions` beyond).
    pub max_subscriptions_per_map: usize,

    /// Most live subscriptions on the server (`429 too_many_subscriptions` beyond).
    /// Subscriptions with the same goal and size share one search; each keeps its path.
    pub max_subscriptions: usize,

    /// Memory budget in bytes of one map's subscriptions (their shared searches and paths):
    /// a new subscription gets `429 too_many_subscriptions` while it is used up.
    pub max_subscription_bytes_per_map: usize,

    /// Memory budget in bytes of every subscription on the server (as per map).
    pub max_subscription_bytes: usize,

    /// A subscription with no open event stream and no request for this many seconds is
    /// dropped.
    pub subscription_ttl_secs: u64,

    /// Recent events kept per subscription for slow or reconnecting streams; a stream that
    /// falls further behind gets a `resync` event with the full current state.
    pub subscription_event_buffer: usize,

    /// Most live multi-agent plans on the server (`429 too_many_plans` beyond). They share
    /// the subscriptions' idle TTL and event buffer size.
    pub max_live_plans: usize,

    /// Maps with at least this many cells get an HPA* abstraction, built in the background
    /// (0 = never). Smaller maps are fast enough for A*/JPS.
    pub hpa_min_cells: u64,
    /// Uniform octile maps of at most this many cells get a JPS+ jump table (16 bytes a
    /// cell), built in the background and kept current under patches (0 = never).
    pub jps_plus_max_cells: u64,
    /// Memory per map for JPS+'s landmarks, in MiB (0 = never).
    pub landmark_memory_mb: u64,
    /// HPA* cluster side in cells (4..=128).
    pub hpa_cluster_size: u32,
    /// How long shutdown waits for in-flight requests before closing them, in milliseconds.
    pub shutdown_grace_ms: u64,

    /// Largest uniform octile map (in cells) that gets a subgoal graph (`subgoal` queries,
    /// and `auto` where it pays off); 0: none.
    pub subgoal_max_cells: u64,

    /// Bytes of derived state (JPS+ tables and landmarks, HPA* abstractions) allowed across
    /// all maps, in MiB; 0: a quarter of the machine's memory. Past it the least recently
    /// used structure is evicted and rebuilt on demand.
    pub derived_memory_mb: u64,

    /// Test-only: the store sleeps up to this many microseconds at each step of a durable
    /// write, so fault-injection tests can time out clients inside it. Never set it in
    /// production.
    pub test_store_delay_us: u64,

    /// Test-only: the builds (not the updates) of every derived structure of the map of this
    /// name panic while it is at version 1, so fault tests can watch the builder pool
    /// recover. No flag sets it. Never set it in production.
    pub test_fail_builds_of: Option<String>,

    /// Test-only: with `--store nats://...`, each mutation read from the stream waits this
    /// many milliseconds before it is applied, so tests can watch a replica lag. Never set
    /// it in production.
    pub test_apply_delay_ms: u64,

    /// Test-only: with `--store nats://...`, the server has at most this many messages out
    /// to the feed at once (0: no limit; each is acknowledged once handed on), so with
    /// `test_apply_delay_ms` the server holds the rest back. Never set it in production.
    pub test_feed_window: u64,

    /// Connection limits (timeouts and cap; see [`crate::http::serve`]). Boxed, so the flags of
    /// one concern stay together and `Config` stays small to move.
    pub connections: Box<ConnectionLimits>,

    /// Flow field limits (see [`crate::live::flows`]). Boxed for the same reason.
    pub flowfields: Box<FlowLimits>,

    /// Replication through NATS JetStream (`--store`; see [`ReplicationOptions`]).
    pub replication: Box<ReplicationOptions>,
}

/// How many flow fields the server keeps and how big one may be. Flow fields share the
/// subscriptions' idle TTL and event buffer size.
#[derive(Clone, Debug)]
pub struct FlowLimits {
    /// Most live flow fields on the server (`429 too_many_flowfields` beyond). A field
    /// holds about 11 bytes per region cell.
    pub max_flowfields: usize,

    /// Most cells in one flow field's region (`400 invalid_request` beyond): bounds the
    /// memory and the first computation of one field.
    pub max_flowfield_cells: u64,
}

/// Where maps are stored and how replicas wait for each other (`--store`, `--nats-*`,
/// `--max-wait-ms`).
#[derive(Clone, Debug)]
pub struct ReplicationOptions {
    /// Store maps in NATS JetStream instead of the data directory, shared by every replica
    /// given the same servers: `nats://HOST:PORT[,HOST:PORT...]`. Unset: the local data
    /// directory (`--data-dir`).
    pub store: Option<String>,

    /// NATS credentials file (JWT and NKey seed, `.creds`).
    pub nats_creds: Option<PathBuf>,

    /// NATS user name (with `--nats-password`).
    pub nats_user: Option<String>,

    /// NATS password (with `--nats-user`).
    pub nats_password: Option<String>,

    /// NATS authentication token.
    pub nats_token: Option<String>,

    /// Refuse to talk to NATS without TLS (a `tls://` store URL implies it).
    pub nats_require_tls: bool,

    /// PEM file of the CA that signed the NATS servers' certificates (default: the system's
    /// root certificates).
    pub nats_tls_ca: Option<PathBuf>,

    /// PEM client certificate for NATS servers that verify clients (with
    /// `--nats-tls-key`).
    pub nats_tls_cert: Option<PathBuf>,

    /// PEM private key of `--nats-tls-cert`.
    pub nats_tls_key: Option<PathBuf>,

    /// Replicas of the JetStream stream when pathd creates it: 1 on a single NATS server,
    /// 3 on a three-node cluster (a write is acknowledged once a quorum stored it).
    pub nats_replicas: u16,

    /// How long a request with `min_version` waits for this replica to apply that version,
    /// in milliseconds; then `503 replica_behind`.
    pub max_wait_ms: u64,

    /// The base URL other replicas reach this one at (they forward subscription requests
    /// to it; `--store nats://...` only). Unset: `http://<listen address>`.
    pub advertise_url: Option<String>,

    /// With `--store nats://...`: how many replicas hold each map (chosen by rendezvous
    /// hashing of the map's name over the live replicas); the others keep its summary and
    /// forward its requests to a holder. `None` (`all`, the default): every replica holds
    /// every map.
    pub placement: Option<usize>,
}

/// How long clients may take and how many connections are served at once (the flags of
/// `pathd serve` that [`crate::http::serve`] applies).
#[derive(Clone, Debug)]
pub struct ConnectionLimits {
    /// How long a client may take to send a request's headers, from its first byte, in
    /// milliseconds; then the connection is closed. Stops slow-header (slowloris) clients
    /// from holding a connection slot.
    pub header_timeout_ms: u64,

    /// How long a client may take to send a request's whole body, from the end of its
    /// headers, in milliseconds; then it gets `408 body_timeout` and the connection closes.
    /// A total bound, not a per-chunk one, so a trickling client cannot stretch it.
    pub body_timeout_ms: u64,

    /// How long a connection may sit with no request (before its first one, or between
    /// keep-alive requests), in milliseconds; then it is closed.
    pub idle_timeout_ms: u64,

    /// Most open client connections. Beyond it a new connection gets a short
    /// `503 too_many_connections` answer and is closed. Lowered at start to fit the
    /// process's open-file limit (`ulimit -n`) minus a reserve for maps, data files, the
    /// listener and the `503` answers, since past that limit nothing can be accepted.
    pub max_connections: u32,
}

impl Config {
    /// The configuration with every default, as `pathd serve` with no flags or environment
    /// would see it, but with the given directories (handy for tests and embedding).
    pub fn with_dirs(maps_dir: impl Into<PathBuf>, data_dir: impl Into<PathBuf>) -> Self {
        let mut config = Self::resolve(&HashMap::new(), &|_| None).expect("defaults parse");
        config.maps_dir = maps_dir.into();
        config.data_dir = data_dir.into();
        config
    }

    /// The configuration from the flags given on the command line (by long name; `None` for
    /// a switch), then the environment (`env`, for flags not given; empty values count as
    /// unset), then the defaults of [`FLAGS`]: the defaults live in that one table.
    pub fn resolve(
        given: &HashMap<&'static str, Option<String>>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let mut c = Self::blank();
        for flag in FLAGS {
            let (value, from) = match given.get(flag.long) {
                Some(v) => (v.clone(), String::new()),
                None => match env(flag.env).filter(|v| !v.is_empty()) {
                    Some(v) => (Some(v), format!(" (from {})", flag.env)),
                    None => match flag.default {
                        Some(d) => (Some(d.to_owned()), String::new()),
                        None => continue,
                    },
                },
            };
            match (flag.set, value) {
                (Set::Value(set), Some(v)) => set(&mut c, &v)
                    .map_err(|e| format!("invalid value {v:?} for --{}{from}: {e}", flag.long))?,
                (Set::Value(_), None) => return Err(format!("--{} needs a value", flag.long)),
                // Given without a value: on. From the environment: off when it says so.
                (Set::Switch(set), None) => set(&mut c, true),
                (Set::Switch(set), Some(v)) => set(&mut c, !falsey(&v)),
            }
        }
        let r = &c.replication;
        if r.nats_tls_cert.is_some() != r.nats_tls_key.is_some() {
            return Err("--nats-tls-cert and --nats-tls-key go together: give both".into());
        }
        Ok(c)
    }

    /// Every field at zero or unset, before the defaults are applied.
    fn blank() -> Self {
        Self {
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            maps_dir: PathBuf::new(),
            data_dir: PathBuf::new(),
            admin_token: None,
            allow_anonymous_writes: false,
            test_remote_peers: false,
            drain_delay_ms: 0,
            query_token: None,
            pool_threads: 0,
            queue_depth: 0,
            log_format: LogFormat::Text,
            max_body_bytes: 0,
            max_map_cells: 0,
            max_maps: 0,
            max_pending_writes: 0,
            max_batch: 0,
            max_expansions: 0,
            max_timeout_ms: 0,
            max_debug_cells: 0,
            max_patch_cells: 0,
            max_subscriptions_per_map: 0,
            max_subscriptions: 0,
            max_subscription_bytes_per_map: 0,
            max_subscription_bytes: 0,
            subscription_ttl_secs: 0,
            subscription_event_buffer: 0,
            max_live_plans: 0,
            hpa_min_cells: 0,
            jps_plus_max_cells: 0,
            landmark_memory_mb: 0,
            derived_memory_mb: 0,
            subgoal_max_cells: 0,
            hpa_cluster_size: 0,
            shutdown_grace_ms: 0,
            test_store_delay_us: 0,
            test_apply_delay_ms: 0,
            test_feed_window: 0,
            test_fail_builds_of: None,
            connections: Box::new(ConnectionLimits {
                header_timeout_ms: 0,
                body_timeout_ms: 0,
                idle_timeout_ms: 0,
                max_connections: 0,
            }),
            flowfields: Box::new(FlowLimits {
                max_flowfields: 0,
                max_flowfield_cells: 0,
            }),
            replication: Box::new(ReplicationOptions {
                advertise_url: None,
                placement: None,
                store: None,
                nats_creds: None,
                nats_user: None,
                nats_password: None,
                nats_token: None,
                nats_require_tls: false,
                nats_tls_ca: None,
                nats_tls_cert: None,
                nats_tls_key: None,
                nats_replicas: 0,
                max_wait_ms: 0,
            }),
        }
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

    /// Bytes of derived state allowed across all maps: `--derived-memory-mb`, or with 0 a
    /// quarter of the machine's memory (at least 256 MiB; 4 GiB when it cannot be read).
    pub fn derived_memory(&self) -> u64 {
        if self.derived_memory_mb > 0 {
            return self.derived_memory_mb.saturating_mul(1 << 20);
        }
        let total = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
                line.split_whitespace().nth(1)?.parse::<u64>().ok()
            })
            .map(|kib| kib * 1024);
        total.map_or(4 << 30, |t| (t / 4).max(256 << 20))
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

/// A switch's environment value that means off (as `0`, `false`, `no`, `off`, `n`, `f`).
fn falsey(v: &str) -> bool {
    ["0", "false", "no", "off", "n", "f"]
        .iter()
        .any(|f| v.trim().eq_ignore_ascii_case(f))
}
