//! Forwarding a request for a subscription or a flow field to the replica that owns it, or
//! for a map to one that holds it (`--placement K`).
//!
//! The request (method, path, query, headers such as `X-Subscription-Secret`,
//! `Last-Event-ID` and `Authorization`, and body) goes to the owner's advertised URL with
//! [`FORWARDED_HEADER`] set; the answer comes back as the owner gave it, its body streamed
//! through (an SSE stream stays a stream). A forwarded request is never forwarded again: a
//! replica that does not hold it answers `421`, and the first replica looks again.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header, request::Parts};
use axum::response::{IntoResponse, Response};

use crate::cluster::{ClusterError, FORWARD_WAIT, FORWARDED_HEADER, Held, Member, View};
use crate::http::error::{ApiError, ErrorCode};
use crate::state::AppState;

/// The client that forwards requests to other replicas.
static CLIENT: LazyLock<reqwest::Client> = LazyLock::new(|| {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(1))
        .build()
        .expect("an HTTP client")
});

/// The error code of an id of `held` nobody holds.
fn not_found_code(held: Held) -> ErrorCode {
    match held {
        Held::Subscription => ErrorCode::SubscriptionNotFound,
        Held::FlowField => ErrorCode::FlowfieldNotFound,
    }
}

/// What the gate does with a request.
pub(super) enum Outcome {
    /// Answer this (the owner's answer, or an error).
    Answer(Response),
    /// Serve it here after all (it arrived here meanwhile).
    Here(Box<(Request, View)>),
}

/// Ids of the cluster's shape: `<12 hex>-<32 hex>` (anything else was never created).
fn plausible(id: &str) -> bool {
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    id.split_once('-')
        .is_some_and(|(r, rest)| hex(r, 12) && hex(rest, 32))
}

fn not_found(held: Held, id: &str) -> Response {
    ApiError::new(
        StatusCode::NOT_FOUND,
        not_found_code(held),
        format!("no {} {id:?}", held.noun()),
    )
    .into_response()
}

/// Hop-by-hop headers (RFC 9110 section 7.6.1) and those the client library sets itself.
fn hop_by_hop(name: &header::HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "content-length"
    )
}

/// Serves `id` (of kind `K`) from its owner (waiting at most [`FORWARD_WAIT`] for an owner
/// that is gone to be replaced), or hands the request back when this replica holds it by
/// then.
pub(super) async fn forward(state: &AppState, held: Held, id: &str, req: Request) -> Outcome {
    let cluster = state.cluster();
    let Some(me) = cluster.replica() else {
        return Outcome::Answer(not_found(held, id));
    };
    if !plausible(id) {
        return Outcome::Answer(not_found(held, id));
    }
    let forwarded = req.headers().contains_key(FORWARDED_HEADER);
    let (parts, bytes) = match buffered(state, req).await {
        Ok(b) => b,
        Err(resp) => return Outcome::Answer(resp),
    };
    let deadline = Instant::now() + FORWARD_WAIT;
    let mut first = true;
    loop {
        if let Some(view) = cluster.view(held, id) {
            return Outcome::Here(Box::new((
                Request::from_parts(parts, Body::from(bytes)),
                view,
            )));
        }
        // First from the watcher's mirror of the records (no round trip to NATS); when that
        // led nowhere (an owner gone, or one that no longer holds it), from the bucket.
        let owner = match cluster.owner(held, id, first).await {
            Ok(Some(o)) => o,
            Ok(None) => return Outcome::Answer(not_found(held, id)),
            Err(e) => return Outcome::Answer(ApiError::from(e).into_response()),
        };
        first = false;
        if forwarded {
            // The first replica looks again (the record may be moving right now).
            return Outcome::Answer(
                ApiError::new(
                    StatusCode::MISDIRECTED_REQUEST,
                    not_found_code(held),
                    format!("{} {id:?} is not held by this replica", held.noun()),
                )
                .into_response(),
            );
        }
        if owner != me {
            match cluster.member_url(&owner) {
                Some(url) => {
                    let metric = "pathd_forwarded_requests_total";
                    let to = (me, owner.as_str(), url.as_str());
                    if let Some(resp) = answer_from(to, &parts, &bytes, metric).await {
                        return Outcome::Answer(resp);
                    }
                }
                None => cluster.kick(),
            }
        }
        if Instant::now() >= deadline {
            return Outcome::Answer(retry_shortly(format!(
                "the replica that owns {} {id:?} is gone and no replica has taken \
                             it over yet; retry shortly",
                held.noun()
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What the map gate does with a request (`--placement K`).
pub(super) enum MapOutcome {
    /// Answer this (a holder's answer, or an error).
    Answer(Response),
    /// Serve it here (held here now, or a map nobody holds that this replica should).
    Here(Box<Request>),
}

/// Serves map `name` from a replica that holds it (see [`super::placement`]): the live
/// members whose heartbeat says they hold it, in rendezvous order; for a map of which this
/// replica knows nothing (a new one, or none at all), the first member placement gives it
/// to. Waits at most [`FORWARD_WAIT`] for a holder (one killed, the next still loading it),
/// then answers `503 store_unavailable` with `Retry-After`. A forwarded request is served
/// here when placement gives the map here, else answered `421` (the first replica tries
/// the next holder).
pub(super) async fn forward_map(state: &AppState, name: &str, req: Request) -> MapOutcome {
    let cluster = state.cluster();
    let (Some(p), Some(me)) = (cluster.placement(), cluster.replica()) else {
        return MapOutcome::Here(Box::new(req));
    };
    let forwarded = req.headers().contains_key(FORWARDED_HEADER);
    // A map nobody holds (a new one, or none at all) that placement gives here is served
    // here; asked again on every round below, as placement settles.
    let mine = || p.stub(name).is_none() && p.wants(name);
    if mine() {
        return MapOutcome::Here(Box::new(req));
    }
    if forwarded && !p.wants(name) {
        return MapOutcome::Answer(
            ApiError::new(
                StatusCode::MISDIRECTED_REQUEST,
                ErrorCode::MapNotFound,
                format!("map {name:?} is not held by this replica"),
            )
            .into_response(),
        );
    }
    let (parts, bytes) = match buffered(state, req).await {
        Ok(b) => b,
        Err(resp) => return MapOutcome::Answer(resp),
    };
    let deadline = Instant::now() + FORWARD_WAIT;
    loop {
        if super::held_here(state, name) || mine() {
            return MapOutcome::Here(Box::new(Request::from_parts(parts, Body::from(bytes))));
        }
        if !forwarded {
            let mut candidates = cluster.holders_of(name);
            if candidates.is_empty() && p.stub(name).is_none() {
                // Nobody has it: the replica placement gives it to answers (a create, or
                // `404`).
                if let Some(first) = p.holders(name).first()
                    && *first != me
                    && let Some(url) = cluster.member_url(first)
                {
                    candidates.push(Member {
                        id: first.clone(),
                        url,
                    });
                }
            }
            for c in candidates {
                let metric = "pathd_map_forwarded_requests_total";
                let to = (me, c.id.as_str(), c.url.as_str());
                if let Some(resp) = answer_from(to, &parts, &bytes, metric).await {
                    p.forwarded();
                    return MapOutcome::Answer(resp);
                }
            }
        }
        if Instant::now() >= deadline {
            metrics::counter!("pathd_map_forwarded_requests_total", "outcome" => "no_holder")
                .increment(1);
            return MapOutcome::Answer(retry_shortly(format!(
                "no replica has map {name:?} ready: its holder is gone and the next \
                             one is still loading it; retry shortly"
            )));
        }
        cluster.kick();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The answer of replica `to` (`(me, its id, its URL)`), relayed; `None` when it answered
/// `421` (it does not hold it after all) or did not answer. Counted in `metric` by
/// `outcome`.
async fn answer_from(
    (me, id, url): (&str, &str, &str),
    parts: &Parts,
    bytes: &axum::body::Bytes,
    metric: &'static str,
) -> Option<Response> {
    match send(me, url, parts, bytes.clone()).await {
        Ok(resp) if resp.status() != StatusCode::MISDIRECTED_REQUEST => {
            metrics::counter!(metric, "outcome" => "answered").increment(1);
            Some(relay(resp, me))
        }
        Ok(_) => None,
        Err(e) => {
            metrics::counter!(metric, "outcome" => "unreachable").increment(1);
            tracing::debug!(replica = %id, error = %e, "replica not reachable");
            None
        }
    }
}

/// `503 store_unavailable` with `Retry-After: 1`, saying `why`.
fn retry_shortly(why: String) -> Response {
    ApiError::from(ClusterError::StoreUnavailable(why)).into_response()
}

/// The request's head and its whole body (sent again at every try), or `413`.
async fn buffered(state: &AppState, req: Request) -> Result<(Parts, axum::body::Bytes), Response> {
    let limit = state.config().max_body_bytes;
    let (parts, body) = req.into_parts();
    match axum::body::to_bytes(body, limit).await {
        Ok(b) => Ok((parts, b)),
        Err(_) => Err(ApiError::payload_too_large(limit).into_response()),
    }
}

/// Sends the request to `base` (the owner) as forwarded by `me`; the answer's headers
/// within 10 s.
async fn send(
    me: &str,
    base: &str,
    parts: &Parts,
    body: axum::body::Bytes,
) -> Result<reqwest::Response, String> {
    let path = parts
        .uri
        .path_and_query()
        .map_or(parts.uri.path(), |p| p.as_str());
    let mut headers = HeaderMap::new();
    for (k, v) in &parts.headers {
        if !hop_by_hop(k) {
            headers.append(k.clone(), v.clone());
        }
    }
    if let Ok(me) = HeaderValue::from_str(me) {
        headers.insert(FORWARDED_HEADER, me);
    }
    let req = CLIENT
        .request(parts.method.clone(), format!("{base}{path}"))
        .headers(headers)
        .body(body);
    match tokio::time::timeout(Duration::from_secs(10), req.send()).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("no answer within 10 s".into()),
    }
}

/// The owner's answer as this replica's, its body streamed through.
fn relay(resp: reqwest::Response, me: &str) -> Response {
    let status = resp.status();
    let mut headers = HeaderMap::new();
    for (k, v) in resp.headers() {
        if !hop_by_hop(k) || k == header::CONTENT_LENGTH {
            headers.append(k.clone(), v.clone());
        }
    }
    if let Ok(me) = HeaderValue::from_str(me) {
        headers.insert(FORWARDED_HEADER, me);
    }
    let mut out = Response::new(Body::from_stream(resp.bytes_stream()));
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_cluster_shaped_ids_are_looked_up() {
        assert!(super::plausible(
            "0123456789ab-0123456789abcdef0123456789abcdef"
        ));
        assert!(!super::plausible("0123456789abcdef0123456789abcdef"));
        assert!(!super::plausible("0123456789ab-x"));
        assert!(!super::plausible("../../etc"));
    }
}
