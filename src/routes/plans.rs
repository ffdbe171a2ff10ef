//! `/v1/maps/{name}/plans`: collision-free plans for many agents (MAPF) on the search pool.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::routing::post;

use crate::auth::QueryAuth;
use crate::body::BlockingJson;
use crate::error::{ApiError, Json};
use crate::plans::{PlanRequest, PlanResponse, error};
use crate::routes::maps::lookup;
use crate::routes::paths::wait_version;
use crate::state::AppState;

/// The routes of this module.
pub fn router() -> Router<AppState> {
    Router::new().route("/v1/maps/{name}/plans", post(plan))
}

/// `POST /v1/maps/{name}/plans` (operationId `planAgents`): checks the request against the
/// limits ([`crate::plans`]), then runs the anytime solver on one search worker until its
/// time limit (or its first plan), on the map's current snapshot.
async fn plan(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    BlockingJson(req): BlockingJson<PlanRequest>,
) -> Result<Json<PlanResponse>, ApiError> {
    wait_version(&state, &name, req.min_version).await?;
    let entry = lookup(&state, &name)?;
    let job = req.to_job(&entry.grid)?;
    let snapshot = Arc::clone(&entry);
    let objective = job.objective;
    let plan = state
        .compute()
        .run(move |cancel| job.run(&snapshot.grid, Some(cancel)))
        .await?
        .map_err(|e| error(e, &entry.grid))?;
    tracing::Span::current().record("algorithm", "mapf");
    Ok(Json(PlanResponse::new(&plan, objective, entry.version)))
}
