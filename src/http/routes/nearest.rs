//! `/v1/maps/{name}/nearest`: the nearest usable cell to a point, the snapping of path
//! queries (`"snap"`) on its own.

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use pathd_engine::targets::{MAX_SNAP, nearest_usable};
use pathd_engine::{Grid, Point};
use serde::{Deserialize, Serialize};

use crate::http::auth::QueryAuth;
use crate::http::error::{ApiError, ErrorCode, Json, Path};
use crate::http::routes::maps::lookup;
use crate::state::AppState;

/// Default `radius` of `/nearest`.
pub const DEFAULT_RADIUS: u32 = 8;

/// The routes of this module.
pub fn router() -> Router<AppState> {
    Router::new().route("/v1/maps/{name}/nearest", get(nearest))
}

/// The query string of `GET /v1/maps/{name}/nearest`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NearestParams {
    /// Column.
    pub x: u32,
    /// Row.
    pub y: u32,
    /// How far to look, in x and in y (default 8, at most 64).
    pub radius: Option<u32>,
    /// Agent side (default 1, at most 8).
    pub size: Option<u32>,
    /// The unit-type profile whose cells count as usable (default the map's default).
    pub profile: Option<String>,
}

/// The answer of `/nearest` (`NearestCell` in `openapi.yaml`).
#[derive(Debug, Serialize)]
pub struct NearestCell {
    /// Column.
    pub x: u32,
    /// Row.
    pub y: u32,
    /// Euclidean distance from the point asked about.
    pub distance: f64,
    /// Version of the map snapshot searched.
    pub map_version: u64,
}

/// `GET /v1/maps/{name}/nearest` (operationId `nearestCell`): the usable cell (where a
/// `size x size` agent fits) nearest to `(x, y)`, at most `radius` cells away in x and in
/// y (ties: smaller y, then x); `404 no_usable_cell` when there is none.
async fn nearest(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    params: Result<Query<NearestParams>, QueryRejection>,
) -> Result<Json<NearestCell>, ApiError> {
    let Query(p) = params?;
    let radius = check_radius(p.radius)?;
    let size = p.size.unwrap_or(1);
    pathd_engine::query::check_size(size)?;
    let entry = lookup(&state, &name)?;
    let entry = crate::query::on_profile(&state, &entry, p.profile.as_deref()).await?;
    let (cell, distance) = nearest_to(&entry.grid, Point::new(p.x, p.y), radius, size)?;
    Ok(Json(NearestCell {
        x: cell.x,
        y: cell.y,
        distance,
        map_version: entry.version,
    }))
}

/// The radius asked for (default [`DEFAULT_RADIUS`]), or `400 invalid_request` past
/// [`MAX_SNAP`].
fn check_radius(radius: Option<u32>) -> Result<u32, ApiError> {
    let radius = radius.unwrap_or(DEFAULT_RADIUS);
    if radius > MAX_SNAP {
        return Err(ApiError::invalid_request(format!(
            "radius {radius} is too far: at most {MAX_SNAP}"
        )));
    }
    Ok(radius)
}

/// The usable cell nearest to `at` and its distance: `400 out_of_bounds` for a point off
/// the map, `404 no_usable_cell` when none is within `radius`.
fn nearest_to(grid: &Grid, at: Point, radius: u32, size: u32) -> Result<(Point, f64), ApiError> {
    if !grid.in_bounds(at) {
        return Err(pathd_engine::QueryError::OutOfBounds {
            which: "point",
            point: at,
        }
        .into());
    }
    // At most (2 * 64 + 1)^2 cells: cheap enough for the handler's own thread.
    nearest_usable(grid, at, radius, size, |_| true).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            ErrorCode::NoUsableCell,
            format!("no cell within {radius} of {at} fits a {size}x{size} agent"),
        )
    })
}
