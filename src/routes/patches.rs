//! `PATCH /v1/maps/{name}`: change cells and rectangles of a map, durably and atomically,
//! then hand the changed cells to the subscriptions they may concern.
//!
//! Order of one patch, under the map's writer lock (patches to a map apply one at a time, in
//! arrival order; queries never take that lock and keep reading the old snapshot until the
//! swap): check `if_version`; build the next grid on the search pool
//! ([`pathd_engine::Grid::apply_patch`]); make it durable (append to the patch log, or
//! rewrite the snapshot: see [`crate::live::log`]); swap the entry in; queue the changed
//! cells for the subscriptions whose search they may touch; answer. Repairs run after the
//! answer, on the pool.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::patch;
use pathd_engine::{Patch, PatchError, Point, Rect};
use serde::{Deserialize, Serialize};

use crate::auth::AdminAuth;
use crate::error::{ApiError, Json};
use crate::live::log;
use crate::routes::maps::lookup;
use crate::state::{AppState, MapEntry, MapSource};

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
    pub if_version: Option<u64>,
}

/// The answer (`PatchResult` in `openapi.yaml`).
#[derive(Debug, Serialize)]
pub struct PatchResponse {
    /// The map's version after the patch (unchanged for a no-op).
    pub version: u64,
    /// Cells whose cost actually changed.
    pub changed_cells: u64,
    /// Subscriptions the patch was delivered to: those whose search it may change, whose
    /// repair is now queued (an event follows only if their best path changes).
    pub affected_subscriptions: u64,
}

fn invalid(message: String) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_patch", message)
}

fn cost(c: u32, what: &str) -> Result<u8, ApiError> {
    u8::try_from(c).map_err(|_| invalid(format!("{what}: cost {c} is not in 0..=255")))
}

impl PatchRequest {
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

/// `PATCH /v1/maps/{name}` (operationId `patchMap`).
async fn patch_map(
    _: AdminAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    Json(req): Json<PatchRequest>,
) -> Result<Json<PatchResponse>, ApiError> {
    let patch = req.to_patch()?;
    let limit = state.config().max_patch_cells;
    if patch.area() > limit {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "patch_too_large",
            format!(
                "a patch writes at most {limit} cells (cells plus rectangle areas); this one writes {}",
                patch.area()
            ),
        ));
    }
    lookup(&state, &name)?; // keeps unknown names away from the writer table
    let writer = state.registry().writer(&name);
    let _order = writer.lock().await;
    let entry = lookup(&state, &name)?;
    if let Some(v) = req.if_version
        && v != entry.version
    {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "version_conflict",
            format!("the map is at version {}, not {v}", entry.version),
        ));
    }
    let (prev, n, next) = (Arc::clone(&entry), name.clone(), entry.version + 1);
    let applied = state
        .compute()
        .run_waiting(move |_| {
            let out = prev.grid.apply_patch(&patch)?;
            Ok::<_, PatchError>(out.map(|(g, changed)| {
                let costs: Vec<(Point, u8)> = changed.iter().map(|&p| (p, g.cost(p))).collect();
                let next_entry = MapEntry::new(n, next, g, MapSource::Uploaded);
                // Only the clusters the patch touched are rebuilt (see crate::hpa).
                next_entry
                    .hpa
                    .derive(&next_entry.name, &prev.hpa, &next_entry.grid, &changed);
                (next_entry, changed, costs)
            }))
        })
        .await?
        .map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "patch_out_of_bounds",
                e.to_string(),
            )
        })?;
    let Some((new, changed, costs)) = applied else {
        return Ok(Json(PatchResponse {
            version: entry.version,
            changed_cells: 0,
            affected_subscriptions: 0,
        }));
    };
    let new = Arc::new(new);
    let (storage, e, snapshot_only) = (
        state.storage().clone(),
        Arc::clone(&new),
        entry.source == MapSource::Bundled,
    );
    tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        let dir = storage.dir();
        let cells = e.grid.width() as u64 * e.grid.height() as u64;
        // A bundled map has no snapshot in the data directory yet: write one. Otherwise
        // append, and compact once the log outweighs a snapshot.
        if snapshot_only || log::append(dir, &e.name, e.version, &costs)? > cells {
            storage.save(&e.name, e.version, &e.grid)?;
            log::remove(dir, &e.name)?;
        }
        Ok(())
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::internal)?;
    state.registry().insert(Arc::clone(&new));
    let changed_cells = changed.len() as u64;
    let delivery = state.live().on_patch(
        &name,
        entry.grid.min_cost(),
        Arc::clone(&new.grid),
        new.version,
        changed,
    );
    metrics::counter!("pathd_patches_total").increment(1);
    tracing::info!(map = %name, version = new.version, changed_cells, affected = delivery.delivered, "map patched");
    Ok(Json(PatchResponse {
        version: new.version,
        changed_cells,
        affected_subscriptions: delivery.delivered as u64,
    }))
}
