//! The middlewares in front of `/v1/subscriptions/{id}`, `/v1/flowfields/{id}` and their
//! `/events` ([`gate`]: serves the subscription or flow field here when this replica holds
//! it, else forwards the request to its owner) and of `/v1/maps/{name}[/...]` ([`place`]: with `--placement K`, serves the map
//! here when this replica holds it, else forwards the request to a replica that does).

use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

use super::{REPLICA_HEADER, View};
use crate::state::AppState;

/// The subscription id of a `/v1/subscriptions/{id}[/events]` path.
fn id_of(path: &str) -> Option<&str> {
    path.strip_prefix("/v1/subscriptions/")?.split('/').next()
}

/// Serves the request here (with the subscription's [`View`] in the request's extensions)
/// or answers with the owner's answer. Without a cluster: passes through.
pub async fn gate(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let cluster = state.cluster();
    if !cluster.enabled() {
        return next.run(req).await;
    }
    if let Some(id) = flow_of(req.uri().path()).map(str::to_owned) {
        return flow(&state, &id, req, next).await;
    }
    let Some(id) = id_of(req.uri().path()).map(str::to_owned) else {
        return place(State(state), req, next).await;
    };
    if let Some(view) = cluster.local(&id) {
        return serve_here(&state, req, next, view).await;
    }
    #[cfg(feature = "nats")]
    {
        match super::forward::forward::<super::subs::SubKind>(&state, &id, req).await {
            super::forward::Outcome::Answer(resp) => resp,
            super::forward::Outcome::Here(b) => {
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

/// The flow field id of a `/v1/flowfields/{id}[/events]` path.
fn flow_of(path: &str) -> Option<&str> {
    path.strip_prefix("/v1/flowfields/")?.split('/').next()
}

/// A request for flow field `id`: served here when this replica holds it, else answered
/// by its owner (after a takeover, by whoever took it over).
async fn flow(state: &AppState, id: &str, req: Request, next: Next) -> Response {
    if let Some(view) = state.cluster().local_flow(id) {
        return serve_here(state, req, next, view).await;
    }
    #[cfg(feature = "nats")]
    {
        match super::forward::forward::<super::flows::FlowKind>(state, id, req).await {
            super::forward::Outcome::Answer(resp) => resp,
            super::forward::Outcome::Here(b) => {
                let (r, view) = *b;
                serve_here(state, r, next, view).await
            }
        }
    }
    #[cfg(not(feature = "nats"))]
    {
        serve_map_here(state, req, next).await
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
/// [`super::placement`]). Otherwise: passes through.
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
        match super::forward::forward_map(&state, &name, req).await {
            super::forward::MapOutcome::Answer(resp) => resp,
            super::forward::MapOutcome::Here(r) => serve_map_here(&state, *r, next).await,
        }
    }
    #[cfg(not(feature = "nats"))]
    {
        next.run(req).await
    }
}

/// True when this replica holds map `name` (or knows it damaged).
pub(super) fn held_here(state: &AppState, name: &str) -> bool {
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
