//! Prometheus metrics and the per-request span.
//!
//! The `metrics` facade has one global recorder per process, so it is installed once and
//! every server in the process (tests start many) shares it; per-server counters that tests
//! assert on live in [`crate::compute::PoolStats`] instead.
//!
//! Exported series: `pathd_http_requests_total{method,route,status}`,
//! `pathd_http_request_duration_seconds{route}` (histogram), `pathd_queries_total{algorithm,
//! status}`, `pathd_query_duration_seconds{algorithm}` (histogram of search time),
//! `pathd_query_expansions` (histogram), `pathd_expansions_total`, `pathd_pool_threads`,
//! `pathd_pool_busy`, `pathd_pool_queue_depth`, `pathd_pool_rejected_total`,
//! `pathd_searches_cancelled_total`, `pathd_maps_loaded`.

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tracing::Instrument;
use tracing::field::Empty;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process-wide Prometheus handle (installs the recorder on first use).
pub fn handle() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let seconds = [
                0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05,
                0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ];
            let counts = [10.0, 100.0, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8];
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &seconds)
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full("pathd_query_expansions".into()),
                        &counts,
                    )
                })
                .expect("bucket lists are not empty")
                .build_recorder();
            let handle = recorder.handle();
            // Fails only if another recorder was installed first (an embedding program's);
            // then our series go there and `/metrics` shows what this recorder has.
            let _ = metrics::set_global_recorder(recorder);
            handle
        })
        .clone()
}

/// Middleware: one span per request (method, route, map, algorithm, status, expansions,
/// elapsed), a log line at the end, and the request counters.
pub async fn observe(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned());
    let method = req.method().clone();
    let span = tracing::info_span!(
        "request",
        method = %method,
        route = %route,
        map = Empty,
        algorithm = Empty,
        status = Empty,
        expanded = Empty,
        elapsed_us = Empty,
    );
    let start = Instant::now();
    let resp = next.run(req).instrument(span.clone()).await;
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
        "method" => method.to_string(),
        "route" => route.clone(),
        "status" => status.to_string()
    )
    .increment(1);
    metrics::histogram!("pathd_http_request_duration_seconds", "route" => route)
        .record(elapsed.as_secs_f64());
    resp
}

/// Records a finished search in the current request span and the query metrics.
pub fn record_query(algorithm: &str, status: &str, expanded: u64, elapsed_secs: f64) {
    let span = tracing::Span::current();
    span.record("algorithm", algorithm);
    span.record("expanded", expanded);
    metrics::counter!(
        "pathd_queries_total",
        "algorithm" => algorithm.to_owned(),
        "status" => status.to_owned()
    )
    .increment(1);
    metrics::histogram!("pathd_query_duration_seconds", "algorithm" => algorithm.to_owned())
        .record(elapsed_secs);
    metrics::histogram!("pathd_query_expansions").record(expanded as f64);
    metrics::counter!("pathd_expansions_total").increment(expanded);
}
