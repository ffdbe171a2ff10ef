//! Subscriptions: a path kept up to date while its map changes and its agent moves, read
//! with `GET` or followed as a Server-Sent Events stream.
//!
//! On a single server subscriptions live in memory only: they do not survive a restart
//! (clients resubscribe). With `--store nats://...` they belong to the fleet
//! ([`crate::cluster`]): any replica answers for any of them, forwarding to its owner, and
//! another replica takes them over when their owner dies. Handlers see a subscription
//! through its [`View`] (the public id and `seq`s), which the cluster's gate puts in the
//! request.
//!
//! Ids are 128 random bits. Reading a subscription (and its stream) needs only query
//! access and its id; moving or deleting it also needs its secret, handed out once in the
//! create answer and presented in the [`SECRET_HEADER`] header (or the admin token):
//! `403 forbidden` otherwise.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use pathd_engine::{Algorithm, Limits, Point};
use serde::{Deserialize, Serialize};

use crate::cluster::{Held, View};
use crate::http::auth::{QueryAuth, secret_or_admin};
use crate::http::dto::PathRequest;
use crate::http::error::{ApiError, Json, Path};
use crate::http::routes::maps::lookup;
use crate::http::{gate, sse};
use crate::live::{Next, Sub};
use crate::state::AppState;

/// The header that carries a subscription's secret on `PATCH` and `DELETE`.
pub const SECRET_HEADER: &str = "x-subscription-secret";

/// The routes of this module.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/maps/{name}/subscriptions", post(create))
        .route(
            "/v1/subscriptions/{id}",
            get(read).patch(move_agent).delete(remove),
        )
        .route("/v1/subscriptions/{id}/events", get(events))
}

/// A subscription's state (`Subscription` in `openapi.yaml`).
#[derive(Debug, Serialize)]
pub struct SubscriptionBody {
    /// Its id.
    pub id: String,
    /// The map it follows.
    pub map: String,
    /// `found`, `no_path` or `limit_reached`.
    pub status: &'static str,
    /// Cells from the agent's position to the goal (empty without a path).
    pub path: Vec<[u32; 2]>,
    /// Cost of `path`.
    pub cost: f64,
    /// The map version the state holds for.
    pub map_version: u64,
    /// `seq` of its newest event.
    pub seq: u64,
    /// The agent's position.
    pub position: [u32; 2],
    /// The goal.
    pub goal: [u32; 2],
    /// The unit-type profile it follows, when it named one other than the map's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The secret that authorizes moves and deletion: only in the create answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// `Ok` when the request may change `sub`: it presents the subscription's secret in
/// [`SECRET_HEADER`] (compared in constant time) or carries the admin token.
fn may_change(
    state: &AppState,
    headers: &HeaderMap,
    sub: &Sub,
    view: &View,
) -> Result<(), ApiError> {
    secret_or_admin(
        state,
        headers,
        "X-Subscription-Secret",
        |g| view.secret_matches(g, |g| sub.secret_matches(g)),
        "moving or deleting a subscription",
    )
}

/// The subscription a request names and its [`View`]: the one the cluster's gate found, or
/// (outside a cluster) the hub's subscription `id` as it is.
fn here(
    state: &AppState,
    id: &str,
    view: Option<Extension<View>>,
) -> Result<(Arc<Sub>, View), ApiError> {
    match view {
        Some(Extension(v)) => match state.live().get(&v.local) {
            Ok(sub) => Ok((sub, v)),
            Err(e) => {
                let mut e = ApiError::from(e);
                e.message = format!("no subscription {id:?}");
                Err(e)
            }
        },
        None => {
            let sub = state.live().get(id)?;
            let v = View::plain(&sub);
            Ok((sub, v))
        }
    }
}

fn body(sub: &Sub, view: &View) -> SubscriptionBody {
    let map_version = sub.map_version();
    let f = sub.feed();
    let cur = f.state();
    let p = sub.position();
    SubscriptionBody {
        id: view.id.clone(),
        map: sub.map.split('~').next().unwrap_or_default().to_owned(),
        profile: sub.map.split_once('~').map(|(_, p)| p.to_owned()),
        status: cur.status,
        path: cur.path.clone(),
        cost: cur.cost,
        map_version,
        seq: view.seq(cur.seq),
        position: [p.x, p.y],
        goal: [sub.goal.x, sub.goal.y],
        secret: None,
    }
}

/// `POST /v1/maps/{name}/subscriptions` (operationId `createSubscription`): joins the goal
/// group of its goal and size and takes its first path from the group's shared search
/// (optimal; `algorithm` may be omitted, `astar` or `auto`) and answers `201`
/// with the subscription's `secret` (the only time it is shown).
async fn create(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    Json(req): Json<PathRequest>,
) -> Result<Response, ApiError> {
    let (query, timeout) = req.to_query(state.config())?;
    subscribable(&req, &query)?;
    crate::http::routes::paths::wait_version(&state, &name, req.min_version).await?;
    lookup(&state, &name)?;
    state.live().check_room(&name)?;
    let sub = join(&state, &name, req.profile.as_deref(), &query, timeout).await?;
    let adopted = state
        .cluster()
        .adopt(&sub, gate::definition(&req, sub.goal));
    let view = adopted.await.inspect_err(|_| {
        state.live().remove(&sub.id, "deleted");
    })?;
    tracing::info!(map = %name, subscription = %view.id, "subscription created");
    let created = SubscriptionBody {
        secret: Some(sub.secret().to_owned()),
        ..body(&sub, &view)
    };
    let location = format!("/v1/subscriptions/{}", view.id);
    Ok(gate::created(&state, Json(created), &location))
}

/// `400 invalid_request` for what a subscription cannot do: game-style goals, another
/// algorithm than its shared goal search, partial paths, debug output or traces.
fn subscribable(req: &PathRequest, query: &pathd_engine::Query) -> Result<(), ApiError> {
    if !req.games()?.is_plain() {
        return Err(ApiError::invalid_request(
            "`goals`, `goal_radius`, `flee` and `snap` are not available for subscriptions",
        ));
    }
    if !matches!(query.algorithm, Algorithm::AStar | Algorithm::Auto) {
        return Err(ApiError::invalid_request(
            "subscriptions are kept optimal by a shared goal search; `algorithm` must be astar or auto",
        ));
    }
    if req.partial == Some(true)
        || req.debug == Some(true)
        || req.trace == Some(true)
        || req.path_format.is_some()
    {
        return Err(ApiError::invalid_request(
            "`partial`, `debug`, `trace` and `path_format` are not available for subscriptions",
        ));
    }
    Ok(())
}

/// Joins the goal group on the map's current version without holding its write order
/// (read-only work; see [`crate::live::Hub::join`]); after [`OPTIMISTIC_TRIES`] races lost
/// to writes, once under the write order, so a map written without pause still gets its
/// subscription.
pub(crate) async fn join(
    state: &AppState,
    name: &str,
    profile: Option<&str>,
    query: &pathd_engine::Query,
    timeout: std::time::Duration,
) -> Result<Arc<crate::live::Sub>, ApiError> {
    for attempt in 0..=OPTIMISTIC_TRIES {
        let _order = state
            .maps()
            .last_resort_order(name, attempt, OPTIMISTIC_TRIES)
            .await;
        let entry = lookup(state, name)?;
        // A profile's subscriptions live in the hub under its view's name (`map~profile`),
        // repaired by the cells that change for that profile.
        let entry = crate::query::on_profile(state, &entry, profile).await?;
        let limits = Limits {
            max_expansions: query.limits.max_expansions,
            deadline: None,
            cancel: None,
        };
        let registry = state.registry();
        let joined = state
            .live()
            .join(
                &entry.name,
                Arc::clone(&entry.grid),
                entry.version,
                query.start,
                query.goal,
                query.size,
                limits,
                timeout,
                || registry.get(name).map(|e| e.version),
                _order.is_some(),
            )
            .await?;
        if let Some(sub) = joined {
            return Ok(sub);
        }
        metrics::counter!("pathd_subscription_join_retries_total").increment(1);
        // The hub takes the write's cells in a moment.
        tokio::task::yield_now().await;
    }
    Err(ApiError::internal(
        "a subscription joined under its map's write order was refused as stale",
    ))
}

/// Joins that may lose the race with a write before one is done under the write order.
const OPTIMISTIC_TRIES: usize = 8;

/// `GET /v1/subscriptions/{id}` (operationId `getSubscription`).
async fn read(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
    view: Option<Extension<View>>,
) -> Result<Json<SubscriptionBody>, ApiError> {
    let (sub, view) = here(&state, &id, view)?;
    Ok(Json(body(&sub, &view)))
}

/// `PATCH /v1/subscriptions/{id}` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoveRequest {
    /// The agent's new cell `[x, y]`.
    pub position: [u32; 2],
}

/// `PATCH /v1/subscriptions/{id}` (operationId `moveSubscription`): the agent moved; the
/// search continues from there (`400 start_blocked` / `out_of_bounds`, state unchanged).
/// Needs the secret (or the admin token): `403 forbidden`, checked before the body.
async fn move_agent(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
    view: Option<Extension<View>>,
    headers: HeaderMap,
    req: Result<Json<MoveRequest>, ApiError>,
) -> Result<Json<SubscriptionBody>, ApiError> {
    let (sub, view) = here(&state, &id, view)?;
    may_change(&state, &headers, &sub, &view)?;
    let Json(req) = req?;
    let to = Point::new(req.position[0], req.position[1]);
    state.live().move_to(&sub, to).await?;
    view.moved();
    Ok(Json(body(&sub, &view)))
}

/// `DELETE /v1/subscriptions/{id}` (operationId `deleteSubscription`): `204`; open streams
/// get a final `deleted` event and end. Needs the secret (or the admin token): `403
/// forbidden`.
async fn remove(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
    view: Option<Extension<View>>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    let (sub, view) = here(&state, &id, view)?;
    may_change(&state, &headers, &sub, &view)?;
    if state.live().remove(&view.local, "deleted") {
        state.cluster().forget(Held::Subscription, &view.id).await;
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(state
            .live()
            .get(&view.local)
            .err()
            .map_or_else(ApiError::not_found, ApiError::from))
    }
}

/// `GET /v1/subscriptions/{id}/events` (operationId `subscriptionEvents`): the event
/// stream. Without `Last-Event-ID` it starts with the current state; with one it replays
/// what followed from the recent-event buffer, or sends a `resync` when that is gone.
async fn events(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
    view: Option<Extension<View>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (sub, view) = here(&state, &id, view)?;
    let last = sse::last_event_id(&headers)?;
    let (guard, rx) = (sub.open_stream(), sub.watch());
    let shutdown = state.live().shutdown_token().clone();
    // The hub's events as the public ones (ids and `seq`s of the view).
    let next =
        move |last: Option<u64>| match sub.feed().next_after(last.map(|l| view.local_last(l))) {
            Next::Send(ev) => Next::Send(Arc::new(view.event(&ev))),
            other => other,
        };
    Ok(sse::follow(next, rx, last, shutdown, guard).into_response())
}
