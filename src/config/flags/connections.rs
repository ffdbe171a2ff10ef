//! Flags of `pathd serve` for connections and shutdown: timeouts, draining, how many at once.

use super::{Flag, Set, in_range, parse};
use crate::config::Config;

/// In `--help` order.
pub(super) const FLAGS: &[Flag] = &[
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
];
