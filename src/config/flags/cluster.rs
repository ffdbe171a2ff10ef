//! Flags of `pathd serve` for replication: the NATS store, its credentials and TLS, placement;
//! and the test-only flags.

use super::{Flag, Set, in_range, parse};
use crate::config::Config;

/// In `--help` order.
pub(super) const FLAGS: &[Flag] = &[
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
