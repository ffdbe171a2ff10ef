//! Flags of `pathd serve` for the server itself: addresses, directories, tokens, the search
//! pool, logs.

use super::{Flag, Set, parse};
use crate::config::{Config, LogFormat};

/// In `--help` order.
pub(super) const FLAGS: &[Flag] = &[
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
];
