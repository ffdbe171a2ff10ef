//! The flags of `pathd serve`, as one table: name, environment variable, default, help text
//! and how the value is stored. The parser ([`crate::cli`]), `--help`, the defaults
//! ([`Config::with_dirs`]) and the README check (`tests/it/cli.rs`) all read this table, so
//! a flag is declared once.

use std::fmt::Display;
use std::str::FromStr;

use super::{Config, LogFormat};

/// One flag of `pathd serve`.
pub struct Flag {
    /// The long name, without `--`.
    pub long: &'static str,
    /// The environment variable read when the flag is not given.
    pub env: &'static str,
    /// The value used when neither the flag nor the variable is given (`None`: unset).
    pub default: Option<&'static str>,
    /// The `--help` text.
    pub help: &'static str,
    /// Left out of `--help` (test-only flags).
    pub hidden: bool,
    /// How a value is checked and stored.
    pub set: Set,
}

/// How a flag's value reaches the [`Config`].
#[derive(Clone, Copy)]
pub enum Set {
    /// A flag with a value (`--addr 0.0.0.0:80` or `--addr=0.0.0.0:80`).
    Value(fn(&mut Config, &str) -> Result<(), String>),
    /// A switch without a value (`--nats-require-tls`); its variable is false when `0`,
    /// `false`, `no`, `off`, `n` or `f` (any case), true otherwise.
    Switch(fn(&mut Config, bool)),
}

impl Flag {
    /// The placeholder of its value in `--help` (`--addr <ADDR>`), or none for a switch.
    pub fn value_name(&self) -> Option<String> {
        match self.set {
            Set::Value(_) => Some(self.long.to_ascii_uppercase().replace('-', "_")),
            Set::Switch(_) => None,
        }
    }
}

/// Parses a value with its type's `FromStr`, saying what was wrong.
fn parse<T: FromStr>(v: &str) -> Result<T, String>
where
    T::Err: Display,
{
    v.trim().parse().map_err(|e: T::Err| e.to_string())
}

/// Parses an integer that must lie in `lo..=hi`.
fn in_range<T: FromStr + PartialOrd + Display>(v: &str, lo: T, hi: T) -> Result<T, String>
where
    T::Err: Display,
{
    let n: T = parse(v)?;
    if n < lo || n > hi {
        return Err(format!("{n} is not in {lo}..={hi}"));
    }
    Ok(n)
}

/// `Set::Value` storing a parsed value in a field (`val!(max_maps)`,
/// `val!(connections.header_timeout_ms)`); an optional field stores `Some`.
macro_rules! val {
    ($($field:ident).+) => {
        Set::Value(|c: &mut Config, v: &str| {
            c.$($field).+ = parse(v)?;
            Ok(())
        })
    };
    (some $($field:ident).+) => {
        Set::Value(|c: &mut Config, v: &str| {
            c.$($field).+ = Some(parse(v)?);
            Ok(())
        })
    };
}

/// Every flag of `pathd serve`, in `--help` order.
pub static FLAGS: &[Flag] = &[
    Flag {
        long: "addr",
        env: "PATHD_ADDR",
        default: Some("0.0.0.0:8080"),
        help: "Address to listen on.",
        hidden: false,
        set: val!(addr),
    },
    Flag {
        long: "maps-dir",
        env: "PATHD_MAPS_DIR",
        default: Some("./maps"),
        help: "Directory of bundled `*.map` files loaded at start (read-only).",
        hidden: false,
        set: val!(maps_dir),
    },
    Flag {
        long: "data-dir",
        env: "PATHD_DATA_DIR",
        default: Some("./data"),
        help: "Directory where uploaded maps are stored durably (created if missing).",
        hidden: false,
        set: val!(data_dir),
    },
    Flag {
        long: "admin-token",
        env: "PATHD_ADMIN_TOKEN",
        default: None,
        help: "Bearer token required by writes (map uploads, patches, deletes). Unset: \
               writes are taken from loopback clients only (see --allow-anonymous-writes).",
        hidden: false,
        set: val!(some admin_token),
    },
    Flag {
        long: "allow-anonymous-writes",
        env: "PATHD_ALLOW_ANONYMOUS_WRITES",
        default: None,
        help: "Without --admin-token, take writes from any client, not only loopback ones \
               (a server behind a proxy that authenticates, say).",
        hidden: false,
        set: Set::Switch(|c, on| c.allow_anonymous_writes = on),
    },
    Flag {
        long: "query-token",
        env: "PATHD_QUERY_TOKEN",
        default: None,
        help: "Bearer token required by reads and queries (the admin token is accepted too). \
               Unset: reads and queries are open.",
        hidden: false,
        set: val!(some query_token),
    },
    Flag {
        long: "pool-threads",
        env: "PATHD_POOL_THREADS",
        default: Some("0"),
        help: "Search worker threads (0 = one per CPU core).",
        hidden: false,
        set: val!(pool_threads),
    },
    Flag {
        long: "queue-depth",
        env: "PATHD_QUEUE_DEPTH",
        default: Some("64"),
        help: "Requests (a batch counts once) that may wait for a worker beyond the running \
               ones; past that, `503 overloaded`.",
        hidden: false,
        set: val!(queue_depth),
    },
    Flag {
        long: "log-format",
        env: "PATHD_LOG_FORMAT",
        default: Some("text"),
        help: "Log format: `text` (human-readable lines, coloured only on a terminal and \
               without `NO_COLOR`) or `json` (one JSON object per line, for log shippers).",
        hidden: false,
        set: Set::Value(|c, v| {
            c.log_format = match v.trim() {
                "text" => LogFormat::Text,
                "json" => LogFormat::Json,
                _ => return Err("expected `text` or `json`".into()),
            };
            Ok(())
        }),
    },
    Flag {
        long: "max-body-bytes",
        env: "PATHD_MAX_BODY_BYTES",
        default: Some("67108864"),
        help: "Largest accepted request body in bytes (`413 payload_too_large` beyond).",
        hidden: false,
        set: val!(max_body_bytes),
    },
    Flag {
        long: "max-map-cells",
        env: "PATHD_MAX_MAP_CELLS",
        default: Some("16777216"),
        help: "Largest map in cells, width x height (`413 map_too_large` beyond). Search \
               memory is about 24 bytes per cell per worker thread.",
        hidden: false,
        set: val!(max_map_cells),
    },
    Flag {
        long: "max-maps",
        env: "PATHD_MAX_MAPS",
        default: Some("256"),
        help: "Most maps held at once (`409 too_many_maps` beyond).",
        hidden: false,
        set: val!(max_maps),
    },
    Flag {
        long: "max-pending-writes",
        env: "PATHD_MAX_PENDING_WRITES",
        default: Some("64"),
        help: "Most writes (PUT, PATCH, DELETE) of one map admitted and not yet answered \
               (`503 overloaded` beyond).",
        hidden: false,
        set: val!(max_pending_writes),
    },
    Flag {
        long: "max-batch",
        env: "PATHD_MAX_BATCH",
        default: Some("256"),
        help: "Most queries in one batch request (`413 too_many_queries` beyond).",
        hidden: false,
        set: val!(max_batch),
    },
    Flag {
        long: "max-expansions",
        env: "PATHD_MAX_EXPANSIONS",
        default: Some("20000000"),
        help: "Most expansions per search; a request's `max_expansions` is capped to this.",
        hidden: false,
        set: val!(max_expansions),
    },
    Flag {
        long: "max-timeout-ms",
        env: "PATHD_MAX_TIMEOUT_MS",
        default: Some("5000"),
        help: "Longest search in milliseconds; a request's `timeout_ms` is capped to this, \
               and it is the timeout of requests that give none.",
        hidden: false,
        set: val!(max_timeout_ms),
    },
    Flag {
        long: "max-debug-cells",
        env: "PATHD_MAX_DEBUG_CELLS",
        default: Some("10000"),
        help: "Most expanded cells returned by `\"debug\": true`.",
        hidden: false,
        set: val!(max_debug_cells),
    },
    Flag {
        long: "max-patch-cells",
        env: "PATHD_MAX_PATCH_CELLS",
        default: Some("1048576"),
        help: "Most cell writes in one map patch: single cells plus rectangle areas \
               (`413 patch_too_large` beyond).",
        hidden: false,
        set: val!(max_patch_cells),
    },
    Flag {
        long: "max-subscriptions-per-map",
        env: "PATHD_MAX_SUBSCRIPTIONS_PER_MAP",
        default: Some("10000"),
        help: "Most live subscriptions on one map (`429 too_many_subscriptions` beyond).",
        hidden: false,
        set: val!(max_subscriptions_per_map),
    },
    Flag {
        long: "max-subscriptions",
        env: "PATHD_MAX_SUBSCRIPTIONS",
        default: Some("20000"),
        help: "Most live subscriptions on the server (`429 too_many_subscriptions` beyond). \
               Subscriptions with the same goal and size share one search; each keeps its \
               path.",
        hidden: false,
        set: val!(max_subscriptions),
    },
    Flag {
        long: "max-subscription-bytes-per-map",
        env: "PATHD_MAX_SUBSCRIPTION_BYTES_PER_MAP",
        default: Some("536870912"),
        help: "Memory budget in bytes of one map's subscriptions (their shared searches and \
               paths): a new subscription gets `429 too_many_subscriptions` while it is used \
               up.",
        hidden: false,
        set: val!(max_subscription_bytes_per_map),
    },
    Flag {
        long: "max-subscription-bytes",
        env: "PATHD_MAX_SUBSCRIPTION_BYTES",
        default: Some("1073741824"),
        help: "Memory budget in bytes of every subscription on the server (as per map).",
        hidden: false,
        set: val!(max_subscription_bytes),
    },
    Flag {
        long: "subscription-ttl-secs",
        env: "PATHD_SUBSCRIPTION_TTL_SECS",
        default: Some("600"),
        help: "A subscription with no open event stream and no request for this many \
               seconds is dropped.",
        hidden: false,
        set: val!(subscription_ttl_secs),
    },
    Flag {
        long: "subscription-event-buffer",
        env: "PATHD_SUBSCRIPTION_EVENT_BUFFER",
        default: Some("64"),
        help: "Recent events kept per subscription for slow or reconnecting streams; a \
               stream that falls further behind gets a `resync` event with the full current \
               state.",
        hidden: false,
        set: val!(subscription_event_buffer),
    },
    Flag {
        long: "max-live-plans",
        env: "PATHD_MAX_LIVE_PLANS",
        default: Some("100"),
        help: "Most live multi-agent plans on the server (`429 too_many_plans` beyond); \
               they share the subscriptions' idle TTL and event buffer.",
        hidden: false,
        set: val!(max_live_plans),
    },
    Flag {
        long: "max-flowfields",
        env: "PATHD_MAX_FLOWFIELDS",
        default: Some("1000"),
        help: "Most live flow fields on the server (`429 too_many_flowfields` beyond). A \
               field holds about 11 bytes per region cell.",
        hidden: false,
        set: val!(flowfields.max_flowfields),
    },
    Flag {
        long: "max-flowfield-cells",
        env: "PATHD_MAX_FLOWFIELD_CELLS",
        default: Some("16777216"),
        help: "Most cells in one flow field's region (`400 invalid_request` beyond): bounds \
               the memory and the first computation of one field.",
        hidden: false,
        set: val!(flowfields.max_flowfield_cells),
    },
    Flag {
        long: "hpa-min-cells",
        env: "PATHD_HPA_MIN_CELLS",
        default: Some("262144"),
        help: "Maps with at least this many cells get an HPA* abstraction, built in the \
               background (0 = never). Smaller maps are fast enough for A*/JPS.",
        hidden: false,
        set: val!(hpa_min_cells),
    },
    Flag {
        long: "hpa-cluster-size",
        env: "PATHD_HPA_CLUSTER_SIZE",
        default: Some("32"),
        help: "HPA* cluster side in cells (4..=128).",
        hidden: false,
        set: Set::Value(|c, v| {
            c.hpa_cluster_size = in_range(v, 4, 128)?;
            Ok(())
        }),
    },
    Flag {
        long: "jps-plus-max-cells",
        env: "PATHD_JPS_PLUS_MAX_CELLS",
        default: Some("4194304"),
        help: "Uniform octile maps of at most this many cells get a JPS+ jump table (16 \
               bytes a cell), built in the background and kept current under patches \
               (0 = never).",
        hidden: false,
        set: val!(jps_plus_max_cells),
    },
    Flag {
        long: "landmark-memory-mb",
        env: "PATHD_LANDMARK_MEMORY_MB",
        default: Some("24"),
        help: "Memory per map for the landmarks that sharpen JPS+'s heuristic, in MiB: \
               distances from 16, 8 or 4 cells to every cell, 2 bytes a cell each, the most \
               that fit (0 = never; 24: 8 on a 1024x1024 map, 32 bytes a cell with the \
               jump table).",
        hidden: false,
        set: val!(landmark_memory_mb),
    },
    Flag {
        long: "derived-memory-mb",
        env: "PATHD_DERIVED_MEMORY_MB",
        default: Some("0"),
        help: "MiB of derived state (JPS+ tables and landmarks, HPA* abstractions) across all \
               maps; 0: a quarter of the machine's memory. Past it the least recently used \
               structure is evicted (queries fall back) and rebuilt on demand.",
        hidden: false,
        set: val!(derived_memory_mb),
    },
    Flag {
        long: "subgoal-max-cells",
        env: "PATHD_SUBGOAL_MAX_CELLS",
        default: Some("262144"),
        help: "Largest uniform octile map in cells that gets a subgoal graph (`subgoal` \
               queries; `auto` where it pays off: maps dense in obstacle corners), built in \
               the background for every version; 0: none.",
        hidden: false,
        set: val!(subgoal_max_cells),
    },
    Flag {
        long: "shutdown-grace-ms",
        env: "PATHD_SHUTDOWN_GRACE_MS",
        default: Some("10000"),
        help: "How long shutdown waits for in-flight requests before closing them, in \
               milliseconds.",
        hidden: false,
        set: val!(shutdown_grace_ms),
    },
    Flag {
        long: "drain-delay-ms",
        env: "PATHD_DRAIN_DELAY_MS",
        default: Some("0"),
        help: "After SIGTERM, how long to go on serving with `/readyz` answering 503 (so \
               load balancers take this replica out) before accepting stops and in-flight \
               requests drain, in milliseconds. Readiness turns false at once either way.",
        hidden: false,
        set: val!(drain_delay_ms),
    },
    Flag {
        long: "header-timeout-ms",
        env: "PATHD_HEADER_TIMEOUT_MS",
        default: Some("10000"),
        help: "How long a client may take to send a request's headers, from its first byte, \
               in milliseconds; then the connection is closed. Stops slow-header \
               (slowloris) clients from holding a connection slot.",
        hidden: false,
        set: val!(connections.header_timeout_ms),
    },
    Flag {
        long: "body-timeout-ms",
        env: "PATHD_BODY_TIMEOUT_MS",
        default: Some("30000"),
        help: "How long a client may take to send a request's whole body, from the end of \
               its headers, in milliseconds; then it gets `408 body_timeout` and the \
               connection closes. A total bound, not a per-chunk one.",
        hidden: false,
        set: val!(connections.body_timeout_ms),
    },
    Flag {
        long: "idle-timeout-ms",
        env: "PATHD_IDLE_TIMEOUT_MS",
        default: Some("60000"),
        help: "How long a connection may sit with no request (before its first one, or \
               between keep-alive requests), in milliseconds; then it is closed.",
        hidden: false,
        set: val!(connections.idle_timeout_ms),
    },
    Flag {
        long: "max-connections",
        env: "PATHD_MAX_CONNECTIONS",
        default: Some("1024"),
        help: "Most open client connections (at least 1). Beyond it a new connection gets a \
               short `503 too_many_connections` answer and is closed. Lowered at start to \
               fit the open-file limit (`ulimit -n`) minus a reserve.",
        hidden: false,
        set: Set::Value(|c, v| {
            c.connections.max_connections = in_range(v, 1, u32::MAX)?;
            Ok(())
        }),
    },
    Flag {
        long: "store",
        env: "PATHD_STORE",
        default: None,
        help: "Store maps in NATS JetStream instead of the data directory, shared by every \
               replica given the same servers: `nats://HOST:PORT[,HOST:PORT...]`. Unset: \
               the local data directory (`--data-dir`).",
        hidden: false,
        set: val!(some replication.store),
    },
    Flag {
        long: "nats-creds",
        env: "PATHD_NATS_CREDS",
        default: None,
        help: "NATS credentials file (JWT and NKey seed, `.creds`).",
        hidden: false,
        set: val!(some replication.nats_creds),
    },
    Flag {
        long: "nats-user",
        env: "PATHD_NATS_USER",
        default: None,
        help: "NATS user name (with `--nats-password`).",
        hidden: false,
        set: val!(some replication.nats_user),
    },
    Flag {
        long: "nats-password",
        env: "PATHD_NATS_PASSWORD",
        default: None,
        help: "NATS password (with `--nats-user`).",
        hidden: false,
        set: val!(some replication.nats_password),
    },
    Flag {
        long: "nats-token",
        env: "PATHD_NATS_TOKEN",
        default: None,
        help: "NATS authentication token.",
        hidden: false,
        set: val!(some replication.nats_token),
    },
    Flag {
        long: "nats-require-tls",
        env: "PATHD_NATS_REQUIRE_TLS",
        default: None,
        help: "Refuse to talk to NATS without TLS (a `tls://` store URL implies it).",
        hidden: false,
        set: Set::Switch(|c, on| c.replication.nats_require_tls = on),
    },
    Flag {
        long: "nats-tls-ca",
        env: "PATHD_NATS_TLS_CA",
        default: None,
        help: "PEM file of the CA that signed the NATS servers' certificates (default: the \
               system's root certificates).",
        hidden: false,
        set: val!(some replication.nats_tls_ca),
    },
    Flag {
        long: "nats-tls-cert",
        env: "PATHD_NATS_TLS_CERT",
        default: None,
        help: "PEM client certificate for NATS servers that verify clients (with \
               `--nats-tls-key`).",
        hidden: false,
        set: val!(some replication.nats_tls_cert),
    },
    Flag {
        long: "nats-tls-key",
        env: "PATHD_NATS_TLS_KEY",
        default: None,
        help: "PEM private key of `--nats-tls-cert`.",
        hidden: false,
        set: val!(some replication.nats_tls_key),
    },
    Flag {
        long: "nats-replicas",
        env: "PATHD_NATS_REPLICAS",
        default: Some("1"),
        help: "Replicas of the JetStream stream when pathd creates it (1..=5): 1 on a single \
               NATS server, 3 on a three-node cluster.",
        hidden: false,
        set: Set::Value(|c, v| {
            c.replication.nats_replicas = in_range(v, 1, 5)?;
            Ok(())
        }),
    },
    Flag {
        long: "advertise-url",
        env: "PATHD_ADVERTISE_URL",
        default: None,
        help: "With `--store nats://...`: the base URL other replicas reach this one at \
               (they forward subscription requests to it), e.g. `http://10.0.0.7:8080`. \
               Unset: `http://<listen address>` (`$HOSTNAME` for an unspecified address).",
        hidden: false,
        set: Set::Value(|c, v| {
            let v = v.trim();
            if !(v.starts_with("http://") || v.starts_with("https://")) {
                return Err(format!("{v:?} is not an http:// or https:// URL"));
            }
            c.replication.advertise_url = Some(v.to_owned());
            Ok(())
        }),
    },
    Flag {
        long: "placement",
        env: "PATHD_PLACEMENT",
        default: Some("all"),
        help: "With `--store nats://...`: how many replicas hold each map (`all`, or 1..=64), \
               chosen by rendezvous hashing of the map's name over the live replicas; the \
               others keep its summary and forward its requests to a holder.",
        hidden: false,
        set: Set::Value(|c, v| {
            let v = v.trim();
            c.replication.placement = if v.eq_ignore_ascii_case("all") {
                None
            } else {
                Some(in_range(v, 1, 64)?)
            };
            Ok(())
        }),
    },
    Flag {
        long: "max-wait-ms",
        env: "PATHD_MAX_WAIT_MS",
        default: Some("1000"),
        help: "How long a request with `min_version` waits for this replica to apply that \
               version, in milliseconds; then `503 replica_behind`.",
        hidden: false,
        set: val!(replication.max_wait_ms),
    },
    Flag {
        long: "test-store-delay-us",
        env: "PATHD_TEST_STORE_DELAY_US",
        default: Some("0"),
        help: "Test-only: the store sleeps up to this many microseconds at each step of a \
               durable write. Never set it in production.",
        hidden: true,
        set: val!(test_store_delay_us),
    },
    Flag {
        long: "test-apply-delay-ms",
        env: "PATHD_TEST_APPLY_DELAY_MS",
        default: Some("0"),
        help: "Test-only: with `--store nats://...`, each mutation read from the stream \
               waits this long before it is applied. Never set it in production.",
        hidden: true,
        set: val!(test_apply_delay_ms),
    },
    Flag {
        long: "test-feed-window",
        env: "PATHD_TEST_FEED_WINDOW",
        default: Some("0"),
        help: "Test-only: with `--store nats://...`, the server has at most this many \
               mutations out to this replica at once (0: no limit); the rest wait on the \
               server. Never set it in production.",
        hidden: true,
        set: val!(test_feed_window),
    },
    Flag {
        long: "test-remote-peers",
        env: "PATHD_TEST_REMOTE_PEERS",
        default: None,
        help: "Test-only: every client counts as remote (not loopback), so a test on \
               loopback sees what a network client gets. Never set it in production.",
        hidden: true,
        set: Set::Switch(|c, on| c.test_remote_peers = on),
    },
];

/// The flag named `long` (without `--`).
pub fn find(long: &str) -> Option<&'static Flag> {
    FLAGS.iter().find(|f| f.long == long)
}
