//! `/v1/maps/{name}/plans`: collision-free plans for many agents (MAPF) on the search pool,
//! and live plans (`/v1/plans/{id}`, see [`crate::live::plans`]).
//!
//! Reading a live plan (and its stream) needs query access and its id; progress reports
//! and deletion also need its secret, handed out once in the create answer, in
//! [`SECRET_HEADER`] (or the admin token): `403 forbidden` otherwise.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use pathd_engine::Point;
use serde::{Deserialize, Serialize};

use crate::http::auth::{QueryAuth, secret_or_admin};
use crate::http::body::BlockingJson;
use crate::http::error::{ApiError, Json};
use crate::http::routes::maps::lookup;
use crate::http::routes::paths::wait_version;
use crate::http::sse;
use crate::live::plans::{Created, LivePlan, PlanState};
use crate::plans::{PlanRequest, PlanResponse, error};
use crate::state::AppState;

/// The header that carries a live plan's secret on `PATCH` and `DELETE`.
pub const SECRET_HEADER: &str = "x-plan-secret";

/// The routes of this module.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/maps/{name}/plans", post(plan))
        .route("/v1/plans/{id}", get(read).patch(progress).delete(remove))
        .route("/v1/plans/{id}/events", get(events))
}

/// The create answer of a live plan: the plan with its id and secret.
#[derive(Debug, Serialize)]
struct CreatedBody {
    #[serde(flatten)]
    plan: PlanResponse,
    id: String,
    secret: String,
    seq: u64,
    start_step: u64,
    time_step: u64,
}

/// `POST /v1/maps/{name}/plans` (operationId `planAgents`): checks the request against the
/// limits ([`crate::plans`]), then runs the anytime solver on one search worker until its
/// time limit (or its first plan), on the map's current snapshot. With `"subscribe": true`
/// the plan is kept live (`201`, with its `id` and `secret`).
async fn plan(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    BlockingJson(req): BlockingJson<PlanRequest>,
) -> Result<Response, ApiError> {
    wait_version(&state, &name, req.min_version).await?;
    let live = req.subscribe == Some(true);
    if live {
        state.live().plans().check_room()?;
    }
    for _ in 0..LIVE_TRIES {
        let made = solve(&state, &name, &req).await?;
        if !live {
            let body = PlanResponse::new(&made.plan, made.job.objective, made.version);
            return Ok(Json(body).into_response());
        }
        if let Some(resp) = keep(&state, made)? {
            return Ok(resp);
        }
        // The map went away or changed shape meanwhile: plan again on what is there.
    }
    Err(ApiError::internal(
        "the map kept changing shape while the live plan was made",
    ))
}

/// Runs the solver for `req` on one search worker, on map `name`'s current snapshot.
async fn solve(state: &AppState, name: &str, req: &PlanRequest) -> Result<Created, ApiError> {
    let entry = lookup(state, name)?;
    let job = req.to_job(&entry.grid)?;
    let (snapshot, j) = (Arc::clone(&entry), job.clone());
    let plan = state
        .compute()
        .run(move |cancel| j.run(&snapshot.grid, Some(cancel)))
        .await?
        .map_err(|e| error(e, &entry.grid))?;
    tracing::Span::current().record("algorithm", "mapf");
    Ok(Created {
        map: name.to_owned(),
        grid: Arc::clone(&entry.grid),
        version: entry.version,
        job,
        plan,
    })
}

/// Keeps `made` live: its `201` answer, or `None` when the map went away or changed shape
/// since it was planned.
fn keep(state: &AppState, made: Created) -> Result<Option<Response>, ApiError> {
    let body = PlanResponse::new(&made.plan, made.job.objective, made.version);
    let (registry, name) = (state.registry(), made.map.clone());
    let current = || {
        let e = registry.get(&name)?;
        Some((e.version, Arc::clone(&e.grid)))
    };
    let Some(kept) = state.live().plans().register(made, current)? else {
        return Ok(None);
    };
    tracing::info!(map = %name, plan = %kept.id, "live plan created");
    let created = CreatedBody {
        plan: body,
        id: kept.id.clone(),
        secret: kept.secret().to_owned(),
        seq: 1,
        start_step: 0,
        time_step: 0,
    };
    let mut resp = (StatusCode::CREATED, Json(created)).into_response();
    if let Ok(loc) = HeaderValue::from_str(&format!("/v1/plans/{}", kept.id)) {
        resp.headers_mut().insert(header::LOCATION, loc);
    }
    Ok(Some(resp))
}

/// Plans made again when the map changes shape before a live plan is registered.
const LIVE_TRIES: usize = 3;

/// `Ok` when the request may change `plan`: its secret in [`SECRET_HEADER`] or the admin
/// token.
fn may_change(state: &AppState, headers: &HeaderMap, plan: &LivePlan) -> Result<(), ApiError> {
    secret_or_admin(
        state,
        headers,
        "X-Plan-Secret",
        |g| plan.secret_matches(g),
        "reporting progress on or deleting a live plan",
    )
}

/// `GET /v1/plans/{id}` (operationId `getPlan`): the current plan and progress.
async fn read(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<PlanState>, ApiError> {
    let plan = state.live().plans().get(&id)?;
    Ok(Json(plan.state()))
}

/// `PATCH /v1/plans/{id}` body: where the agents are.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgressRequest {
    /// The time step the agents are at (not before the last reported one; default: the
    /// last reported one).
    pub time_step: Option<u64>,
    /// `[x, y]` per agent; without it, every agent is where the plan says at `time_step`.
    pub positions: Option<Vec<[u32; 2]>>,
}

/// `PATCH /v1/plans/{id}` (operationId `reportPlanProgress`): progress; agents not where
/// the plan has them get a repaired plan (pushed as a `delayed` event) before the answer.
/// Needs the secret (or the admin token): `403 forbidden`, checked before the body.
async fn progress(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    req: Result<Json<ProgressRequest>, ApiError>,
) -> Result<Json<PlanState>, ApiError> {
    let plan = state.live().plans().get(&id)?;
    may_change(&state, &headers, &plan)?;
    let Json(req) = req?;
    if req.time_step.is_none() && req.positions.is_none() {
        return Err(ApiError::invalid_request(
            "give `time_step`, `positions` or both",
        ));
    }
    let positions = req
        .positions
        .map(|p| p.iter().map(|c| Point::new(c[0], c[1])).collect());
    state
        .live()
        .plans()
        .progress(&plan, req.time_step, positions)
        .await?;
    Ok(Json(plan.state()))
}

/// `DELETE /v1/plans/{id}` (operationId `deletePlan`): `204`; open streams get a final
/// `deleted` event and end. Needs the secret (or the admin token): `403 forbidden`.
async fn remove(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    let plan = state.live().plans().get(&id)?;
    may_change(&state, &headers, &plan)?;
    if state.live().plans().remove(&id, "deleted") {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(state
            .live()
            .plans()
            .get(&id)
            .err()
            .map_or_else(ApiError::not_found, ApiError::from))
    }
}

/// `GET /v1/plans/{id}/events` (operationId `planEvents`): the event stream. Without
/// `Last-Event-ID` it starts with the current plan; with one it replays what followed from
/// the recent-event buffer, or sends a `resync` (the full current plan) when that is gone.
async fn events(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let plan = state.live().plans().get(&id)?;
    let last = sse::last_event_id(&headers)?;
    let guard = plan.open_stream();
    let rx = plan.watch();
    let shutdown = state.live().plans().shutdown_token().clone();
    let next = move |last| plan.next_after(last);
    Ok(sse::follow(next, rx, last, shutdown, guard).into_response())
}
