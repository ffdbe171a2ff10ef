//! Flow fields: for every cell of a region, the cost to one goal and the next step towards
//! it, kept current while the map changes (see [`crate::live::flows`]).
//!
//! Reading a field (and its stream) needs query access and its id; deleting it also needs
//! its secret, handed out once in the create answer, in [`SECRET_HEADER`] (or the admin
//! token): `403 forbidden` otherwise.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use pathd_engine::{FlowError, FlowField, FlowSpec, Point, Region};
use serde::{Deserialize, Serialize};

use crate::cluster::{Held, View};
use crate::http::auth::{QueryAuth, secret_or_admin};
use crate::http::error::{ApiError, ErrorCode, Json, Path};
use crate::http::routes::cells::base64;
use crate::http::routes::maps::lookup;
use crate::http::{gate, sse};
use crate::live::flows::{Flow, Origin};
use crate::state::AppState;

/// The header that carries a flow field's secret on `DELETE`.
pub const SECRET_HEADER: &str = "x-flowfield-secret";

/// The routes of this module.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/maps/{name}/flowfields", post(create))
        .route("/v1/flowfields/{id}", get(read).delete(remove))
        .route("/v1/flowfields/{id}/events", get(events))
}

/// A rectangle of cells on the wire.
#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RegionBody {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Width in cells.
    pub width: u32,
    /// Height in cells.
    pub height: u32,
}

/// `POST /v1/maps/{name}/flowfields` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowRequest {
    /// `[x, y]`.
    pub goal: [u32; 2],
    /// The cells covered (default: the whole map); must contain the goal.
    pub region: Option<RegionBody>,
    /// Cells dearer than this to reach are unreachable (default: no bound).
    pub max_cost: Option<f64>,
    /// Agent side in cells (default 1, at most 8).
    pub size: Option<u32>,
    /// The unit-type profile (default: the map's default profile).
    pub profile: Option<String>,
}

impl FlowRequest {
    /// What the engine computes.
    fn spec(&self) -> FlowSpec {
        FlowSpec {
            goal: Point::new(self.goal[0], self.goal[1]),
            region: self.region.map(|r| Region {
                x: r.x,
                y: r.y,
                width: r.width,
                height: r.height,
            }),
            max_cost: self.max_cost,
            size: self.size.unwrap_or(1),
        }
    }
}

/// A flow field (`FlowField` in `openapi.yaml`).
#[derive(Debug, Serialize)]
pub struct FlowBody {
    /// Its id.
    pub id: String,
    /// The map it covers.
    pub map: String,
    /// The unit-type profile it follows, when it named one other than the map's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The goal.
    pub goal: [u32; 2],
    /// The cells covered.
    pub region: RegionBody,
    /// Agent side in cells.
    pub size: u32,
    /// The cost bound, if any.
    pub max_cost: Option<f64>,
    /// The map version the data holds for.
    pub map_version: u64,
    /// `seq` of the newest event the data includes (0 before any).
    pub seq: u64,
    /// Cells with a way to the goal.
    pub reachable: u64,
    /// One byte per region cell, row-major, base64: 0-7 the next step N, E, S, W, NE, SE,
    /// SW, NW; 8 the goal; 255 unreachable.
    pub directions: String,
    /// One little-endian f64 per region cell, row-major, base64: the cost to the goal
    /// (`+inf` when unreachable).
    pub costs: String,
    /// The secret that authorizes deletion: only in the create answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

fn body(flow: &Flow) -> FlowBody {
    flow.read(|f, map_version, seq| {
        let r = f.region();
        let mut costs = Vec::with_capacity(f.costs().len() * 8);
        for c in f.costs() {
            costs.extend_from_slice(&c.to_le_bytes());
        }
        let max = f.max_cost();
        FlowBody {
            id: flow.id.clone(),
            map: flow.map.split('~').next().unwrap_or_default().to_owned(),
            profile: flow.map.split_once('~').map(|(_, p)| p.to_owned()),
            goal: [f.goal().x, f.goal().y],
            region: RegionBody {
                x: r.x,
                y: r.y,
                width: r.width,
                height: r.height,
            },
            size: f.size(),
            max_cost: max.is_finite().then_some(max),
            map_version,
            seq,
            reachable: f.costs().iter().filter(|c| c.is_finite()).count() as u64,
            directions: base64(f.directions()),
            costs: base64(&costs),
            secret: None,
        }
    })
}

fn flow_error(e: FlowError) -> ApiError {
    let code = match e {
        FlowError::RegionOutOfBounds(_) | FlowError::GoalOutside(_) => ErrorCode::OutOfBounds,
        FlowError::GoalBlocked(_) => ErrorCode::GoalBlocked,
        FlowError::InvalidMaxCost(_) | FlowError::InvalidSize(_) => ErrorCode::InvalidRequest,
    };
    ApiError::new(StatusCode::BAD_REQUEST, code, e.to_string())
}

/// `POST /v1/maps/{name}/flowfields` (operationId `createFlowField`): computes the field
/// (Dijkstra from the goal over the region, on the search pool) and answers `201` with it
/// and its `secret` (the only time it is shown).
async fn create(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    Json(req): Json<FlowRequest>,
) -> Result<Response, ApiError> {
    let spec = req.spec();
    let entry = lookup(&state, &name)?;
    let region = spec.region.unwrap_or_else(|| Region::whole(&entry.grid));
    state.live().flows().check_room(region.cells() as u64)?;
    let profile = req.profile.as_deref();
    let flow = compute_and_register(&state, &name, profile, spec, &Origin::New).await?;
    // Until the answer is ready, the field is removed again if this stops (its record not
    // stored, the encoding refused by a full pool, or the client gone): nobody else could
    // ever know its secret.
    let unclaimed = Unclaimed {
        hub: state.live().clone(),
        id: Some(flow.id.clone()),
    };
    state.cluster().adopt_flow(&flow).await?;
    let f = Arc::clone(&flow);
    let created = state
        .compute()
        .run(move |_| FlowBody {
            secret: Some(f.secret().to_owned()),
            ..body(&f)
        })
        .await?;
    unclaimed.claim();
    tracing::info!(map = %name, flowfield = %flow.id, "flow field created");
    let location = format!("/v1/flowfields/{}", flow.id);
    Ok(gate::created(&state, Json(created), &location))
}

/// Computes the field on the map's current version and registers it, caught up with any
/// write that landed meanwhile (read-only work never holds the map's write order); only a
/// map replaced by one of another shape meanwhile makes it compute again, and after
/// [`OPTIMISTIC_TRIES`] of those, once under the write order. A takeover makes the field of
/// a dead replica again so (`origin`).
pub(crate) async fn compute_and_register(
    state: &AppState,
    name: &str,
    profile: Option<&str>,
    spec: FlowSpec,
    origin: &Origin,
) -> Result<Arc<crate::live::flows::Flow>, ApiError> {
    for attempt in 0..=OPTIMISTIC_TRIES {
        let _order = state
            .maps()
            .last_resort_order(name, attempt, OPTIMISTIC_TRIES)
            .await;
        let entry = lookup(state, name)?;
        // A profile's fields live under its view's name (`map~profile`).
        let entry = crate::query::on_profile(state, &entry, profile).await?;
        let grid = Arc::clone(&entry.grid);
        let s = spec;
        let field = state
            .compute()
            .run(move |_| FlowField::new(&grid, &s))
            .await?
            .map_err(flow_error)?;
        let registry = state.registry();
        // The current version's view of the profile; one not made yet counts as stale
        // (the next attempt makes it).
        let current = || {
            let now = registry.get(name)?;
            match now.find_view(profile) {
                Ok(crate::derived::Found::Ready(v)) => Some((v.version, Arc::clone(&v.grid))),
                _ => None,
            }
        };
        if let Some(flow) = state.live().flows().register(
            origin,
            &entry.name,
            entry.version,
            field,
            &entry.grid,
            current,
        )? {
            return Ok(flow);
        }
        metrics::counter!("pathd_flowfield_recomputed_total").increment(1);
    }
    Err(ApiError::internal(
        "a flow field computed under its map's write order was refused as stale",
    ))
}

/// Computations of a flow field that may lose the race with a replacement before one is
/// done under the map's write order.
const OPTIMISTIC_TRIES: usize = 3;

/// A just-registered flow field whose creator has not been answered yet: removed when
/// dropped unclaimed.
struct Unclaimed {
    hub: crate::live::Hub,
    id: Option<String>,
}

impl Unclaimed {
    /// The answer is on its way: keep the field.
    fn claim(mut self) {
        self.id = None;
    }
}

impl Drop for Unclaimed {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            tracing::info!(flowfield = %id, "flow field create interrupted; removed");
            self.hub.flows().remove(&id, "abandoned");
        }
    }
}

/// `GET /v1/flowfields/{id}` (operationId `getFlowField`): the field, encoded on the
/// search pool (a large region is megabytes of base64).
async fn read(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<FlowBody>, ApiError> {
    let flow = state.live().flows().get(&id)?;
    Ok(Json(state.compute().run(move |_| body(&flow)).await?))
}

/// `DELETE /v1/flowfields/{id}` (operationId `deleteFlowField`): `204`; open streams get a
/// final `deleted` event and end. Needs the secret (or the admin token): `403 forbidden`;
/// with replicas it is checked against the stored hash (the gate's [`View`]).
async fn remove(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
    view: Option<Extension<View>>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    let flow = state.live().flows().get(&id)?;
    may_delete(&state, &headers, &flow, view)?;
    if state.live().flows().remove(&id, "deleted") {
        state.cluster().forget(Held::FlowField, &id).await;
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(state
            .live()
            .flows()
            .get(&id)
            .err()
            .map_or_else(ApiError::not_found, ApiError::from))
    }
}

/// `Ok` when the request may delete `flow`: it presents the field's secret in
/// [`SECRET_HEADER`] (checked against the stored hash when the cluster's gate gave a
/// [`View`]) or carries the admin token.
fn may_delete(
    state: &AppState,
    headers: &HeaderMap,
    flow: &Flow,
    view: Option<Extension<View>>,
) -> Result<(), ApiError> {
    let matches = |g: &str| match &view {
        Some(Extension(v)) => v.secret_matches(g, |g| flow.secret_matches(g)),
        None => flow.secret_matches(g),
    };
    secret_or_admin(
        state,
        headers,
        "X-Flowfield-Secret",
        matches,
        "deleting a flow field",
    )
}

/// `GET /v1/flowfields/{id}/events` (operationId `flowFieldEvents`): the change stream.
/// Without `Last-Event-ID` it starts with a `current` event carrying the newest `seq`; with
/// one it replays what followed from the recent-event buffer, or sends `resync` when that
/// is gone.
async fn events(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let flow = state.live().flows().get(&id)?;
    let last = sse::last_event_id(&headers)?;
    let (guard, rx) = (flow.open_stream(), flow.watch());
    let shutdown = state.live().flows().shutdown_token().clone();
    let next = move |last| flow.next_after(last);
    Ok(sse::follow(next, rx, last, shutdown, guard).into_response())
}
