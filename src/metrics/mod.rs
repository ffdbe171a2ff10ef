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

mod describe;
mod registry;
mod request;

pub use registry::Registry;
pub use request::{REQUEST_ID_HEADER, observe, request_id};

use std::sync::OnceLock;

use describe::describe;

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
