//! Connections past the cap: answered `503 too_many_connections`, or, for a health probe,
//! by the router (see the module docs of [`super`]).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use axum::response::IntoResponse;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tower::ServiceExt;

use crate::http::error::ApiError;

/// How long answering a connection past the cap may take before it is just closed.
const REJECT_WITHIN: Duration = Duration::from_secs(1);

/// True for the health probes, which are answered even past the connection cap.
fn is_probe(req: &Request<Incoming>) -> bool {
    req.method() == axum::http::Method::GET && matches!(req.uri().path(), "/healthz" | "/readyz")
}

/// Answers a connection past the cap with `503 too_many_connections` and closes it; a
/// health probe (`GET /healthz`, `/readyz`) is answered by the router instead, so that idle
/// sockets filling the cap never make a liveness probe kill a healthy server.
pub(super) fn reject(stream: TcpStream, rejecting: &Arc<Semaphore>, router: &Router) {
    metrics::counter!("pathd_connections_rejected_total").increment(1);
    let Ok(permit) = Arc::clone(rejecting).try_acquire_owned() else {
        return; // too many already: close at once
    };
    let router = router.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let mut http1 = hyper::server::conn::http1::Builder::new();
        http1.keep_alive(false);
        let answer = hyper::service::service_fn(move |req: Request<Incoming>| {
            let router = router.clone();
            async move {
                if is_probe(&req) {
                    let resp = router.oneshot(req.map(Body::new)).await;
                    return Ok::<_, Infallible>(resp.unwrap_or_else(|e| match e {}));
                }
                Ok(ApiError::too_many_connections().into_response())
            }
        });
        let conn = http1.serve_connection(TokioIo::new(stream), answer);
        let _ = tokio::time::timeout(REJECT_WITHIN, conn).await;
    });
}
