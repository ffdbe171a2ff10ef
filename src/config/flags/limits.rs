//! Flags of `pathd serve` for limits: requests, maps, subscriptions, flow fields, derived
//! state.

use super::{Flag, Set, in_range, parse};
use crate::config::Config;

/// In `--help` order.
pub(super) const FLAGS: &[Flag] = &[
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
];
