//! The middlewares that make any replica answer for the fleet (`--store nats://...`, see
//! [`crate::cluster`]): [`gate`], in front of `/v1/subscriptions/{id}`,
//! `/v1/flowfields/{id}` and their `/events`, serves the subscription or flow field here
//! when this replica holds it, else forwards the request to its owner; [`place`], in front
//! of `/v1/maps/{name}[/...]`, with `--placement K` serves the map here when this replica
//! holds it, else forwards the request to a replica that does. Forwarding is HTTP, so it
//! lives at the edge (`forward`); the cluster says who holds what.

#[cfg(feature = "nats")]
mod forward;
mod rejoin;

pub use rejoin::definition;

use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::cluster::{Held, REPLICA_HEADER, View};
use crate::state::AppState;

/// The services the cluster's tasks take from this server (for
/// [`crate::cluster::Cluster::start`]).
pub fn services(state: &AppState) -> crate::cluster::Services {
    let ready = state.clone();
    crate::cluster::Services {
        hub: state.live().clone(),
        maps: state.maps().clone(),
        shutdown: state.shutdown_token().clone(),
        ready: std::sync::Arc::new(move || ready.is_ready()),
        rejoin: std::sync::Arc::new(rejoin::Rejoiner(state.clone())),
    }
}

/// `201 Created` with `body`, `Location: location` and, with replicas, the replica that
/// made it in [`REPLICA_HEADER`] (its owner).
pub fn created(state: &AppState, body: impl IntoResponse, location: &str) -> Response {
    let mut resp = (axum::http::StatusCode::CREATED, body).into_response();
    if let Ok(loc) = HeaderValue::from_str(location) {
        resp.headers_mut().insert(axum::http::header::LOCATION, loc);
    }
    if let Some(r) = state.cluster().replica()
        && let Ok(v) = HeaderValue::from_str(r)
    {
        resp.headers_mut().insert(REPLICA_HEADER, v);
    }
    resp
}

/// The live thing a `/v1/subscriptions/{id}[/events]` or `/v1/flowfields/{id}[/events]`
/// path names.
fn held_of(path: &str) -> Option<(Held, &str)> {
    if let Some(rest) = path.strip_prefix("/v1/subscriptions/") {
        return Some((Held::Subscription, rest.split('/').next()?));
    }
    let rest = path.strip_prefix("/v1/flowfields/")?;
    Some((Held::FlowField, rest.split('/').next()?))
}

/// Serves the request here (with the subscription's or flow field's [`View`] in the
/// request's extensions) or answers with the owner's answer. Without a cluster: passes
/// through.
pub async fn gate(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let cluster = state.cluster();
    if !cluster.enabled() {
        return next.run(req).await;
    }
    let Some((held, id)) = held_of(req.uri().path()).map(|(h, id)| (h, id.to_owned())) else {
        return place(State(state), req, next).await;
    };
    if let Some(view) = cluster.view(held, &id) {
        return serve_here(&state, req, next, view).await;
    }
    #[cfg(feature = "nats")]
    {
        match forward::forward(&state, held, &id, req).await {
            forward::Outcome::Answer(resp) => resp,
            forward::Outcome::Here(b) => {
                let (r, view) = *b;
                serve_here(&state, r, next, view).await
            }
        }
    }
    #[cfg(not(feature = "nats"))]
    {
        next.run(req).await
    }
}

/// The map name of a `/v1/maps/{name}[/...]` path.
fn map_of(path: &str) -> Option<&str> {
    path.strip_prefix("/v1/maps/")?
        .split('/')
        .next()
        .filter(|n| crate::maps::valid_name(n))
}

/// With `--placement K`: serves a request for map `name` here when this replica holds it
/// (or its damage report), else answers with a holder's answer (see
/// [`crate::cluster::placement`]). Otherwise: passes through.
pub async fn place(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if state.cluster().placement().is_none() {
        return next.run(req).await;
    }
    let Some(name) = map_of(req.uri().path()).map(str::to_owned) else {
        return next.run(req).await;
    };
    if held_here(&state, &name) {
        return serve_map_here(&state, req, next).await;
    }
    #[cfg(feature = "nats")]
    {
        match forward::forward_map(&state, &name, req).await {
            forward::MapOutcome::Answer(resp) => resp,
            forward::MapOutcome::Here(r) => serve_map_here(&state, *r, next).await,
        }
    }
    #[cfg(not(feature = "nats"))]
    {
        next.run(req).await
    }
}

/// True when this replica holds map `name` (or knows it damaged).
fn held_here(state: &AppState, name: &str) -> bool {
    state.registry().get(name).is_some() || state.maps().damage(name).is_some()
}

async fn serve_map_here(state: &AppState, req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    if let Some(r) = state.cluster().replica()
        && let Ok(v) = HeaderValue::from_str(r)
    {
        resp.headers_mut().insert(REPLICA_HEADER, v);
    }
    resp
}

async fn serve_here(state: &AppState, mut req: Request, next: Next, view: View) -> Response {
    req.extensions_mut().insert(view);
    let mut resp = next.run(req).await;
    if let Some(r) = state.cluster().replica()
        && let Ok(v) = HeaderValue::from_str(r)
    {
        resp.headers_mut().insert(REPLICA_HEADER, v);
    }
    resp
}

impl From<crate::cluster::ClusterError> for crate::http::error::ApiError {
    fn from(e: crate::cluster::ClusterError) -> Self {
        use crate::cluster::ClusterError;
        use crate::http::error::{ApiError, ErrorCode};
        match e {
            ClusterError::StoreUnavailable(m) => ApiError {
                retry_after: Some(1),
                ..ApiError::new(
                    axum::http::StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::StoreUnavailable,
                    m,
                )
            },
            ClusterError::Internal(m) => ApiError::internal(m),
        }
    }
}
