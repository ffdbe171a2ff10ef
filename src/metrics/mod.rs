//! Prometheus metrics and the per-request span.
//!
//! The `metrics` facade has one global recorder per process, so it is installed once and
//! every server in the process (tests start many) shares it; per-server counters that tests
//! assert on live in [`crate::compute::PoolStats`] instead.
//!
//! Every metric has a `# HELP` line (registered in `describe`). Exported series:
//! `pathd_http_requests_total{method,route,status}` (`method` is a standard method or
//! `other`, `route` the matched template or `unmatched`),
//! `pathd_http_request_duration_seconds{route}` (histogram), `pathd_queries_total{algorithm,
//! status}`, `pathd_query_duration_seconds{algorithm}` (histogram of search time),
//! `pathd_query_expansions` (histogram), `pathd_expansions_total`, `pathd_pool_threads`,
//! `pathd_pool_busy`, `pathd_pool_queue_depth`, `pathd_pool_rejected_total`,
//! `pathd_searches_cancelled_total`, `pathd_maps_loaded`; with `--store nats://...` also
//! `pathd_store_connected`, `pathd_store_append_seconds`, `pathd_replication_lag_{messages,
//! versions,seconds}` and per map `pathd_replication_map_lag_{versions,seconds}{map}`.

mod registry;

pub use registry::Registry;

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;
use tracing::field::Empty;

static REGISTRY: OnceLock<&'static Registry> = OnceLock::new();

/// The process-wide registry that `/metrics` renders (installs the recorder on first use).
/// Histograms named `*_seconds` get buckets from 50 µs to 10 s, the others (counts) powers
/// of ten up to 1e8.
pub fn handle() -> &'static Registry {
    REGISTRY.get_or_init(|| {
        let registry: &'static Registry = Box::leak(Box::default());
        let recorder = registry::Global(registry);
        metrics::with_local_recorder(&recorder, describe);
        // Fails only if another recorder was installed first (an embedding program's);
        // then our series go there and `/metrics` shows what this registry has.
        let _ = metrics::set_global_recorder(recorder);
        registry
    })
}

/// Registers the `# HELP` text of every metric this crate exports. A new metric needs a
/// line here (`tests/it/holes.rs` checks that every family `/metrics` prints has one).
fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
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
    describe_gauge!("pathd_maps_loaded", "Maps held in memory");
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
    describe_counter!(
        "pathd_flowfield_recomputed_total",
        "Flow fields computed again because their map was replaced by one of another shape meanwhile"
    );
    describe_counter!(
        "pathd_flowfield_caught_up_total",
        "Flow fields registered behind a write that landed while they were computed, repaired at once"
    );
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
    describe_counter!("pathd_patches_total", "Map patches applied");
    // The replicated store (`--store nats://...`).
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
    describe_counter!(
        "pathd_patch_deliveries_total",
        "Subscriptions patches reached (their repairs queued)"
    );
}

/// The `method` label: the standard methods by name, anything else `other` (so invented
/// methods cannot create series).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

tokio::task_local! {
    /// The id of the request being answered (see [`observe`]).
    static REQUEST_ID: String;
}

/// The id of the request this task answers, if any (error bodies carry it).
pub fn request_id() -> Option<String> {
    REQUEST_ID.try_with(Clone::clone).ok()
}

/// The header that carries a request's id, given by the client or made here.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The client's `X-Request-Id` when it is a sane one (1 to 128 visible ASCII characters),
/// else a new random one (32 hex digits).
fn request_id_of(req: &Request) -> String {
    req.headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| (1..=128).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(|| format!("{:032x}", rand::random::<u128>()), str::to_owned)
}

/// The trace id of a W3C `traceparent` header (`00-<32 hex trace id>-<16 hex parent
/// id>-<2 hex flags>`), when well formed and not all zeros.
fn trace_id_of(req: &Request) -> Option<String> {
    let v = req.headers().get("traceparent")?.to_str().ok()?;
    let parts: Vec<&str> = v.trim().split('-').collect();
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    let ok = parts.len() >= 4
        && hex(parts[0], 2)
        && parts[0] != "ff"
        && hex(parts[1], 32)
        && hex(parts[2], 16)
        && hex(parts[3], 2)
        && parts[1].bytes().any(|b| b != b'0')
        && parts[2].bytes().any(|b| b != b'0');
    ok.then(|| parts[1].to_ascii_lowercase())
}

/// Middleware: one span per request (method, route, request id, trace id, map, algorithm,
/// status, expansions, elapsed), a log line at the end, and the request counters. The
/// request id is the client's `X-Request-Id` or a new one, sent back in the answer's
/// `X-Request-Id` and carried by its error bodies; the trace id is a W3C `traceparent`'s.
/// Labels are bounded: the route is the matched template (never the raw path), the method
/// a standard one or `other`.
pub async fn observe(req: Request, next: Next) -> Response {
    let request_id = request_id_of(&req);
    let trace_id = trace_id_of(&req);
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned());
    let method = req.method().clone();
    let span = tracing::info_span!(
        "request",
        method = %method,
        route = %route,
        request_id = %request_id,
        trace_id = Empty,
        map = Empty,
        algorithm = Empty,
        status = Empty,
        expanded = Empty,
        elapsed_us = Empty,
    );
    if let Some(t) = &trace_id {
        span.record("trace_id", tracing::field::display(t));
    }
    let start = Instant::now();
    let mut resp = REQUEST_ID
        .scope(request_id.clone(), next.run(req).instrument(span.clone()))
        .await;
    if let Ok(v) = axum::http::HeaderValue::from_str(&request_id) {
        resp.headers_mut().insert(REQUEST_ID_HEADER, v);
    }
    let elapsed = start.elapsed();
    let status = resp.status().as_u16();
    span.record("status", status);
    span.record("elapsed_us", elapsed.as_micros() as u64);
    span.in_scope(|| {
        if status >= 500 {
            tracing::warn!("request failed");
        } else {
            tracing::info!("request done");
        }
    });
    metrics::counter!(
        "pathd_http_requests_total",
        "method" => method_label(&method),
        "route" => route.clone(),
        "status" => status.to_string()
    )
    .increment(1);
    metrics::histogram!("pathd_http_request_duration_seconds", "route" => route)
        .record(elapsed.as_secs_f64());
    resp
}

/// Sets the build and process gauges (called when `/metrics` is rendered): what they say
/// is read from the system at that moment.
pub fn refresh_process() {
    let features: Vec<&str> = [
        ("nats", cfg!(feature = "nats")),
        ("http2", cfg!(feature = "http2")),
    ]
    .into_iter()
    .filter_map(|(f, on)| on.then_some(f))
    .collect();
    metrics::gauge!(
        "pathd_build_info",
        "version" => env!("CARGO_PKG_VERSION"),
        "features" => features.join(",")
    )
    .set(1.0);
    let page = 4096.0;
    if let Some(rss) = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<f64>().ok())
    {
        metrics::gauge!("process_resident_memory_bytes").set(rss * page);
    }
    // Fields 14 and 15 (utime, stime) in clock ticks, after the command's closing paren.
    if let Some(ticks) = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?)
        })
    {
        // In USER_HZ, which Linux fixes at 100 for userspace whatever the kernel's tick.
        let hz = 100.0;
        metrics::gauge!("process_cpu_seconds_total").set(ticks / hz);
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        metrics::gauge!("process_open_fds").set(fds.count() as f64);
    }
    if let Some(max) = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|s| {
            let row = s.lines().find_map(|l| l.strip_prefix("Max open files"))?;
            row.split_whitespace().next()?.parse::<f64>().ok()
        })
    {
        metrics::gauge!("process_max_fds").set(max);
    }
}

/// Records a finished search in the current request span and the query metrics.
pub fn record_query(algorithm: &str, status: &str, expanded: u64, elapsed_secs: f64) {
    QueryMetrics::default().record(algorithm, status, expanded, elapsed_secs);
}

/// [`record_query`] for a run of queries (a batch's chunk): each series is looked up once
/// for the run, not once a query (a lookup builds the labelled key and locks the registry,
/// which a batch's workers then took turns at).
#[derive(Default)]
pub struct QueryMetrics {
    /// `pathd_queries_total` and `pathd_query_duration_seconds` by algorithm and status.
    series: Vec<(String, String, metrics::Counter, metrics::Histogram)>,
    /// `pathd_query_expansions` and `pathd_expansions_total`.
    expansions: Option<(metrics::Histogram, metrics::Counter)>,
}

impl QueryMetrics {
    /// Counts one query (see [`record_query`]).
    pub fn record(&mut self, algorithm: &str, status: &str, expanded: u64, elapsed_secs: f64) {
        let span = tracing::Span::current();
        span.record("algorithm", algorithm);
        span.record("expanded", expanded);
        let at = match self
            .series
            .iter()
            .position(|(a, s, ..)| a == algorithm && s == status)
        {
            Some(at) => at,
            None => {
                let total = metrics::counter!(
                    "pathd_queries_total",
                    "algorithm" => algorithm.to_owned(),
                    "status" => status.to_owned()
                );
                let duration = metrics::histogram!(
                    "pathd_query_duration_seconds",
                    "algorithm" => algorithm.to_owned()
                );
                let (a, s) = (algorithm.to_owned(), status.to_owned());
                self.series.push((a, s, total, duration));
                self.series.len() - 1
            }
        };
        let (_, _, total, duration) = &self.series[at];
        total.increment(1);
        duration.record(elapsed_secs);
        let (histogram, counter) = self.expansions.get_or_insert_with(|| {
            (
                metrics::histogram!("pathd_query_expansions"),
                metrics::counter!("pathd_expansions_total"),
            )
        });
        histogram.record(expanded as f64);
        counter.increment(expanded);
    }
}
