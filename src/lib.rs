//! pathd: a pathfinding microservice. Named grid maps live in shared memory; path queries
//! run on a bounded pool of search threads; the wire contract is `openapi.yaml`.
//!
//! The crate is a library so that tests (and embedders) can build the router with
//! [`app`] and drive it with `tower::ServiceExt::oneshot`, or serve it on any bound listener
//! with [`run`]. The binary (`src/main.rs`) only parses the command line, sets up logging,
//! binds, and calls [`run`].
//!
//! How one query flows: the handler parses and validates the JSON body, clones the map's
//! current `Arc` snapshot out of the [`derived::Registry`], hands the engine call to the
//! [`compute::Compute`] pool (or gets `503 overloaded` at once), and maps the engine's
//! outcome to a response.

pub mod cli;
pub mod cluster;
pub mod compute;
pub mod config;
pub mod derived;
pub mod http;
pub mod live;
pub mod load;
pub mod mapf_cli;
pub mod maps;
pub mod memory;
pub mod metrics;
pub mod plans;
pub mod profiles;
pub mod query;
pub mod saturating;
pub mod scen;
pub mod secret;
pub mod state;
pub mod store;

use std::future::Future;
use std::io;
use std::pin::Pin;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::IntoResponse;
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;

pub use config::{Config, LogFormat};
pub use derived::{hpa, jump};
pub use http::error::ApiError;
pub use load::load_maps;
pub use maps::LoadReport;
pub use state::AppState;

/// The router with every route, the error fallbacks, the body limit, the per-request span
/// and metrics, and panic recovery.
pub fn app(state: AppState) -> Router {
    let limit = state.config().max_body_bytes;
    Router::new()
        .merge(http::routes::router())
        // `/v1/subscriptions/{id}[/events]` of a subscription another replica owns are
        // forwarded there (`--store nats://...`; a pass-through otherwise).
        // With `--placement K`, `/v1/maps/{name}[/...]` of a map held elsewhere are
        // forwarded to a replica that holds it (the same middleware).
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            http::gate::gate,
        ))
        .fallback(|| async { ApiError::not_found() })
        .method_not_allowed_fallback(|| async { ApiError::method_not_allowed() })
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn(metrics::observe))
        .layer(CatchPanicLayer::custom(
            |_: Box<dyn std::any::Any + Send>| {
                ApiError::internal("a handler panicked").into_response()
            },
        ))
        // Outermost: gzip or brotli by `Accept-Encoding` (cells, traces and flow fields are
        // megabytes of JSON). tower-http's default predicate leaves alone bodies under 32
        // bytes, images, gRPC and `text/event-stream`, so SSE events are never held back in
        // a compressor's buffer.
        .layer(CompressionLayer::new())
        .with_state(state)
}

/// Serves [`app`] on `listener` until `shutdown` completes, loading the startup maps in
/// the background (`/readyz` answers `503` until they are in).
///
/// Connections are served by [`http::serve::serve`]: idle, slow-header and slow-body clients are
/// timed out and the number of connections is capped (`--header-timeout-ms`,
/// `--body-timeout-ms`, `--idle-timeout-ms`, `--max-connections`).
///
/// A store that cannot be used as configured (NATS refusing the certificates or the
/// credentials) is an error before anything is served.
///
/// Shutdown is graceful: no new connections are accepted, in-flight requests get up to
/// `shutdown_grace_ms` to finish, and then `run` returns even if some have not (their
/// connections close when the runtime ends).
pub async fn run(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    // Generic only here: the server's whole future is compiled once, in this crate, rather
    // than again in every caller (the binary, each test) for its own shutdown future.
    serve_until(listener, state, Box::pin(shutdown)).await
}

/// [`run`] with the shutdown future boxed.
async fn serve_until(
    listener: TcpListener,
    state: AppState,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
) -> io::Result<()> {
    state
        .maps()
        .connect_store()
        .await
        .map_err(io::Error::other)?;
    let loader = tokio::spawn(load_maps(state.clone()));
    let services = http::gate::services(&state);
    let cluster = state.cluster().start(services, listener.local_addr()?);
    let token = state.shutdown_token().clone();
    let config = state.config();
    match (&config.admin_token, config.allow_anonymous_writes) {
        (Some(_), _) => tracing::info!("writes need the admin token"),
        (None, false) => tracing::info!(
            "no --admin-token: writes are taken from loopback clients only \
             (--allow-anonymous-writes takes them from anyone)"
        ),
        (None, true) => tracing::warn!(
            "no --admin-token and --allow-anonymous-writes: any client can change maps"
        ),
    }
    let signal = {
        let began = token.clone();
        let delay = std::time::Duration::from_millis(config.drain_delay_ms);
        let st = state.clone();
        tokio::spawn(async move {
            shutdown.await;
            // Not ready from now on, so load balancers stop sending new requests; serve
            // on for the drain delay while they notice, then stop accepting and drain.
            st.set_draining();
            if !delay.is_zero() {
                tracing::info!(
                    ?delay,
                    "shutdown requested; not ready, serving on for the drain delay"
                );
                tokio::time::sleep(delay).await;
            }
            tracing::info!("shutdown requested; draining in-flight requests");
            began.cancel();
        })
    };
    let grace = state.config().shutdown_grace();
    let limits = http::serve::Limits::from_config(state.config());
    let server = http::serve::serve(listener, app(state.clone()), limits, token.clone());
    let result = tokio::select! {
        r = server => r,
        _ = async { token.cancelled().await; tokio::time::sleep(grace).await } => {
            tracing::warn!(?grace, "drain bound reached; closing remaining connections");
            Ok(())
        }
    };
    loader.abort();
    signal.abort();
    if let Some(c) = cluster {
        // It left the membership when shutdown began (its last write, bounded).
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), c).await;
    }
    // Writes whose clients went away may still be running: they finish, durably.
    state.maps().drain().await;
    // The builder lanes: queued builds are skipped, running ones finish, threads joined.
    let builders = std::sync::Arc::clone(state.builders());
    let _ = tokio::task::spawn_blocking(move || builders.shutdown()).await;
    tracing::info!("server stopped");
    result
}
