//! `PATCH /v1/maps/{name}`: change cells and rectangles of a map, durably and atomically,
//! then hand the changed cells to the subscriptions they may concern.
//!
//! The handler validates the body and hands the patch to the maps service
//! ([`crate::maps::Maps::patch`]), which applies it in the map's write order on a task no
//! client can cancel: check `if_version`, build the next grid on the search pool, make it
//! durable, swap it in, queue the changed cells for the subscriptions they may concern.
//! Repairs run after the answer, on the pool.

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::patch;
use pathd_engine::{Patch, Point, Rect};
use serde::{Deserialize, Serialize};

use crate::http::auth::AdminAuth;
use crate::http::body::BlockingJson;
use crate::http::error::{ApiError, ErrorCode, Json, Path};
use crate::state::AppState;

/// The routes of this module.
pub fn router() -> Router<AppState> {
    Router::new().route("/v1/maps/{name}", patch(patch_map))
}

/// One cell of a patch.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellPatch {
    /// Column.
    pub x: u32,
    /// Row.
    pub y: u32,
    /// New cost: 0 wall, 1..=255 terrain.
    pub cost: u32,
}

/// One rectangle of a patch.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RectPatch {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Width (>= 1).
    pub width: u32,
    /// Height (>= 1).
    pub height: u32,
    /// New cost: 0 wall, 1..=255 terrain.
    pub cost: u32,
}

/// The body of `PATCH /v1/maps/{name}` (`MapPatch` in `openapi.yaml`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchRequest {
    /// Single cells (applied after the rectangles, in order).
    #[serde(default)]
    pub cells: Vec<CellPatch>,
    /// Rectangles (applied first, in order).
    #[serde(default)]
    pub rects: Vec<RectPatch>,
    /// Apply only if the map is at this version (`409 version_conflict` otherwise).
    #[serde(default, deserialize_with = "crate::http::dto::saturating")]
    pub if_version: Option<u64>,
    /// Unit-type profiles added or replaced (a table) or removed (`null`); a plain map
    /// taking its first profile keeps its costs as classes under the profile `default`.
    #[serde(default)]
    pub profiles: std::collections::BTreeMap<
        String,
        crate::http::body::Removal<crate::profiles::ProfileSpec>,
    >,
    /// Another default profile (one the map has, or one this patch adds).
    pub default_profile: Option<String>,
}

/// The answer (`PatchResult` in `openapi.yaml`).
#[derive(Debug, Serialize)]
pub struct PatchResponse {
    /// The map's version after the patch (unchanged for a no-op).
    pub version: u64,
    /// Cells whose cost actually changed.
    pub changed_cells: u64,
    /// Subscriptions the patch reaches, whose repair is now queued (an event follows only if
    /// their best path changes; which ones: `live::reach`).
    pub affected_subscriptions: u64,
}

fn invalid(message: String) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidPatch, message)
}

fn cost(c: u32, what: &str) -> Result<u8, ApiError> {
    u8::try_from(c).map_err(|_| invalid(format!("{what}: cost {c} is not in 0..=255")))
}

impl PatchRequest {
    /// The profile changes, or `400 invalid_patch`.
    pub fn to_profiles(&self) -> Result<crate::maps::ProfileChange, ApiError> {
        let specs = self
            .profiles
            .iter()
            .map(|(name, spec)| (name.clone(), spec.0.clone()))
            .collect();
        Ok(crate::maps::ProfileChange {
            tables: crate::profiles::tables(&specs).map_err(invalid)?,
            default: self.default_profile.clone(),
        })
    }

    /// The engine patch, or `400 invalid_patch`.
    pub fn to_patch(&self) -> Result<Patch, ApiError> {
        let mut cells = Vec::with_capacity(self.cells.len());
        for (i, c) in self.cells.iter().enumerate() {
            cells.push((Point::new(c.x, c.y), cost(c.cost, &format!("cells[{i}]"))?));
        }
        let mut rects = Vec::with_capacity(self.rects.len());
        for (i, r) in self.rects.iter().enumerate() {
            if r.width == 0 || r.height == 0 {
                return Err(invalid(format!("rects[{i}] is empty")));
            }
            rects.push(Rect {
                x: r.x,
                y: r.y,
                width: r.width,
                height: r.height,
                cost: cost(r.cost, &format!("rects[{i}]"))?,
            });
        }
        Ok(Patch { cells, rects })
    }
}

/// `413 patch_too_large` when `patch` writes more than `limit` cells.
fn within(patch: &Patch, limit: u64) -> Result<(), ApiError> {
    if patch.area() <= limit {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::PatchTooLarge,
        format!(
            "a patch writes at most {limit} cells (cells plus rectangle areas); this one writes {}",
            patch.area()
        ),
    ))
}

/// `PATCH /v1/maps/{name}` (operationId `patchMap`).
async fn patch_map(
    _: AdminAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    BlockingJson(req): BlockingJson<PatchRequest>,
) -> Result<Json<PatchResponse>, ApiError> {
    let patch = req.to_patch()?;
    within(&patch, state.config().max_patch_cells)?;
    tracing::Span::current().record("map", &name);
    // From here the write runs to completion even if this client goes away.
    let profiles = req.to_profiles()?;
    let out = state
        .maps()
        .patch(name, patch, profiles, req.if_version)
        .await?;
    Ok(Json(PatchResponse {
        version: out.version,
        changed_cells: out.changed_cells,
        affected_subscriptions: out.affected_subscriptions,
    }))
}
