//! The `# HELP` text of every metric, by area.

use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};

/// Registers the `# HELP` text of every metric this crate exports. A new metric needs a
/// line here (`tests/it/holes.rs` checks that every family `/metrics` prints has one).
pub(super) fn describe() {
    requests();
    maps();
    live();
    cluster();
    store();
}

/// Requests, queries, the search pool, connections, the build and the process.
fn requests() {
    describe_counter!(
        "pathd_http_requests_total",
        "HTTP requests answered, by method (standard methods, else `other`), route template \
         (`unmatched` for none) and status"
    );
    describe_histogram!(
        "pathd_http_request_duration_seconds",
        Unit::Seconds,
        "HTTP request duration by route template"
    );
    describe_counter!(
        "pathd_queries_total",
        "Path searches run, by algorithm and outcome status"
    );
    describe_histogram!(
        "pathd_query_duration_seconds",
        Unit::Seconds,
        "Search time of path queries by algorithm"
    );
    describe_histogram!(
        "pathd_query_expansions",
        Unit::Count,
        "Nodes expanded per path search"
    );
    describe_counter!(
        "pathd_expansions_total",
        Unit::Count,
        "Nodes expanded by all path searches"
    );
    describe_gauge!("pathd_pool_threads", "Search worker threads");
    describe_gauge!(
        "pathd_build_info",
        "1, labelled with this binary's version and its features (nats, http2)"
    );
    describe_gauge!(
        "process_resident_memory_bytes",
        Unit::Bytes,
        "Resident memory of the process (Linux: /proc/self/statm)"
    );
    describe_gauge!(
        "process_cpu_seconds_total",
        Unit::Seconds,
        "CPU time the process used, user and system (Linux: /proc/self/stat)"
    );
    describe_gauge!(
        "process_open_fds",
        "Open file descriptors of the process (Linux: /proc/self/fd)"
    );
    describe_gauge!(
        "process_max_fds",
        "The process's limit on open file descriptors (Linux: /proc/self/limits)"
    );
    describe_gauge!("pathd_pool_busy", "Search workers running a job now");
    describe_gauge!(
        "pathd_pool_queue_depth",
        "Jobs waiting for a search worker now"
    );
    describe_counter!(
        "pathd_pool_rejected_total",
        "Jobs refused with 503 overloaded because the queue was full"
    );
    describe_counter!(
        "pathd_searches_cancelled_total",
        "Searches stopped because their client went away"
    );
    describe_gauge!("pathd_connections_open", "Open client connections");
    describe_counter!(
        "pathd_connections_rejected_total",
        "Connections refused beyond --max-connections (503 too_many_connections)"
    );
    describe_counter!(
        "pathd_connections_timed_out_total",
        "Connections closed by the idle or header timeout, by phase"
    );
    describe_counter!(
        "pathd_accept_errors_total",
        "Failed accepts (e.g. too many open files), retried with backoff"
    );
}

/// Maps and their derived state (HPA*, JPS+, landmarks, subgoal graphs, the memory budget).
fn maps() {
    describe_gauge!("pathd_maps_loaded", "Maps held in memory");
    describe_gauge!(
        "pathd_maps_damaged",
        "Maps whose durable data is damaged and which are not served (pathd data check)"
    );
    describe_histogram!(
        "pathd_hpa_build_seconds",
        Unit::Seconds,
        "Time to build a map's HPA* abstraction"
    );
    describe_histogram!(
        "pathd_hpa_update_seconds",
        Unit::Seconds,
        "Time to update a map's HPA* abstraction after a patch"
    );
    describe_gauge!(
        "pathd_hpa_memory_bytes",
        Unit::Bytes,
        "Memory of a map's HPA* abstraction, by map"
    );
    describe_histogram!(
        "pathd_jps_plus_build_seconds",
        Unit::Seconds,
        "Time to build a map's JPS+ jump table"
    );
    describe_histogram!(
        "pathd_jps_plus_update_seconds",
        Unit::Seconds,
        "Time to update a map's JPS+ jump table after a patch"
    );
    describe_gauge!(
        "pathd_jps_plus_memory_bytes",
        Unit::Bytes,
        "Memory of a map's JPS+ jump table, by map"
    );
    describe_histogram!(
        "pathd_landmarks_build_seconds",
        Unit::Seconds,
        "Time to measure a map's landmarks (JPS+'s heuristic)"
    );
    describe_histogram!(
        "pathd_landmarks_update_seconds",
        Unit::Seconds,
        "Time to update a map's landmarks after a patch that opened cells"
    );
    describe_gauge!(
        "pathd_landmarks_memory_bytes",
        Unit::Bytes,
        "Memory of a map's landmarks, by map"
    );
    describe_histogram!(
        "pathd_subgoal_build_seconds",
        Unit::Seconds,
        "Time to build a map version's subgoal graph with its contraction hierarchy"
    );
    describe_gauge!(
        "pathd_derived_resident_bytes",
        Unit::Bytes,
        "Derived state (JPS+ tables and landmarks, HPA* abstractions) resident across maps, within --derived-memory-mb"
    );
    describe_counter!(
        "pathd_derived_evictions_total",
        "Derived structures evicted to stay within --derived-memory-mb (rebuilt on demand), by kind"
    );
    describe_counter!(
        "pathd_derived_failures_total",
        "Derived structures whose build panicked (reported failed; the next version builds again), by kind"
    );
    describe_counter!(
        "pathd_writes_refused_total",
        "Writes refused with 503 overloaded: their map had --max-pending-writes writes waiting"
    );
    describe_counter!("pathd_patches_total", "Map patches applied");
}

/// Subscriptions, flow fields and live plans: their repairs and events.
fn live() {
    describe_counter!(
        "pathd_flowfield_recomputed_total",
        "Flow fields computed again because their map was replaced by one of another shape meanwhile"
    );
    describe_counter!(
        "pathd_flowfield_caught_up_total",
        "Flow fields registered behind a write that landed while they were computed, repaired at once"
    );
    describe_gauge!("pathd_subscriptions", "Live subscriptions");
    describe_gauge!(
        "pathd_subscription_memory_bytes",
        "Bytes held by subscriptions (shared goal searches and paths), updated after every repair"
    );
    describe_gauge!("pathd_flowfields", "Live flow fields");
    describe_gauge!(
        "pathd_live_plans",
        "Live multi-agent plans (POST /plans with subscribe)"
    );
    describe_counter!(
        "pathd_plan_replans_total",
        "Live plans re-planned after a patch or a delay, by kind (repair: only the affected agents; full)"
    );
    describe_histogram!(
        "pathd_plan_replan_duration_seconds",
        "Time one live plan's re-plan took on the search pool"
    );
    describe_counter!(
        "pathd_plan_events_total",
        "Events published to live plans' streams"
    );
    describe_counter!(
        "pathd_flowfield_repairs_total",
        "Flow field repairs after patches"
    );
    describe_histogram!(
        "pathd_flowfield_repair_duration_seconds",
        Unit::Seconds,
        "Time of one flow field repair (incremental, on the search pool)"
    );
    describe_counter!(
        "pathd_repairs_total",
        "Subscription repairs (one per update or move), by change"
    );
    describe_histogram!(
        "pathd_repair_duration_seconds",
        Unit::Seconds,
        "Time of one subscription repair"
    );
    describe_counter!(
        "pathd_subscription_events_total",
        "Subscription events published"
    );
    describe_counter!(
        "pathd_sse_events_sent_total",
        "Server-Sent Event frames written to subscription streams"
    );
    describe_counter!(
        "pathd_patch_deliveries_total",
        "Subscriptions patches reached (their repairs queued)"
    );
}

/// The cluster: forwarding, subscription takeovers, placement.
fn cluster() {
    describe_counter!(
        "pathd_forwarded_requests_total",
        "Subscription and flow field requests forwarded to the replica that owns them, by \
         outcome (`answered`, or `unreachable`: the owner did not answer, tried again)"
    );
    describe_counter!(
        "pathd_subscription_takeovers_total",
        "Subscriptions this replica took over from a replica that left the membership"
    );
    describe_histogram!(
        "pathd_subscription_takeover_seconds",
        Unit::Seconds,
        "Time to take one subscription over (claim its record, join it again here)"
    );
    describe_counter!(
        "pathd_flowfield_takeovers_total",
        "Flow fields this replica took over from a replica that left the membership"
    );
    describe_histogram!(
        "pathd_flowfield_takeover_seconds",
        Unit::Seconds,
        "Time to take one flow field over (claim its record, compute it again here)"
    );
    describe_gauge!(
        "pathd_maps_held",
        "Maps this replica holds with their derived state (with --placement K, the others it forwards)"
    );
    describe_gauge!(
        "pathd_maps_summaries_only",
        "Maps this replica knows by their summary only (--placement K: held elsewhere)"
    );
    describe_counter!(
        "pathd_placement_moves_total",
        "Maps this replica took in (`in`) or dropped (`out`) as the membership changed"
    );
    describe_histogram!(
        "pathd_placement_move_seconds",
        Unit::Seconds,
        "Time to take one map in: loading it from the stream until it is announced"
    );
    describe_counter!(
        "pathd_map_forwarded_requests_total",
        "Map requests forwarded to a replica that holds the map, by outcome"
    );
    describe_counter!(
        "pathd_subscription_join_retries_total",
        "Subscription joins tried again because a write landed while they were prepared"
    );
}

/// The replicated store (`--store nats://...`) and replication lag.
fn store() {
    describe_gauge!(
        "pathd_store_connected",
        "1 while the replicated store (NATS) is reachable, else 0"
    );
    describe_histogram!(
        "pathd_store_append_seconds",
        Unit::Seconds,
        "Time for the replicated store to acknowledge one write"
    );
    describe_counter!(
        "pathd_store_conflicts_total",
        "Writes another replica got into the store first (compare-and-set lost)"
    );
    describe_counter!(
        "pathd_store_publish_retries_total",
        "Publishes retried while the stream had no leader or the client reconnected"
    );
    describe_counter!(
        "pathd_replicated_mutations_total",
        "Mutations read from the replicated store and applied here"
    );
    describe_counter!(
        "pathd_replica_behind_total",
        "min_version requests answered 503 replica_behind"
    );
    describe_gauge!(
        "pathd_replication_applied_position",
        "Stream sequence of the last mutation applied here"
    );
    describe_gauge!(
        "pathd_replication_lag_messages",
        "Mutations stored in the stream but not yet applied here"
    );
    describe_gauge!(
        "pathd_replication_lag_versions",
        "Map versions stored but not yet applied here, summed over the maps"
    );
    describe_gauge!(
        "pathd_replication_lag_seconds",
        Unit::Seconds,
        "Age of the oldest stored mutation not yet applied here"
    );
    describe_gauge!(
        "pathd_replication_map_lag_versions",
        "Per map: the stream's newest version minus the version applied here"
    );
    describe_gauge!(
        "pathd_replication_map_lag_seconds",
        Unit::Seconds,
        "Per map: age of the oldest stored version not yet applied here"
    );
}
