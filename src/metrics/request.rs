//! The per-request span and counters ([`observe`]) and the request id.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;
use tracing::field::Empty;

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
