//! `/v1/maps/{name}/cells`: a map's cells, for clients that draw it (the visualiser) or
//! copy it. Works for every map, weighted ones included (the Moving AI text form of
//! `GET /v1/maps/{name}` cannot carry costs).

use std::sync::Arc;

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use pathd_engine::Grid;
use serde::{Deserialize, Serialize};

use crate::derived::MapEntry;
use crate::http::auth::QueryAuth;
use crate::http::dto::MapSummary;
use crate::http::error::{ApiError, Json};
use crate::http::routes::maps::lookup;
use crate::state::AppState;

/// The routes of this module.
pub fn router() -> Router<AppState> {
    Router::new().route("/v1/maps/{name}/cells", get(get_cells))
}

/// The JSON form of `GET /v1/maps/{name}/cells` (`MapCells` in `openapi.yaml`).
#[derive(Debug, Serialize)]
pub struct MapCells {
    /// Name.
    pub name: String,
    /// Version of the snapshot these cells belong to.
    pub version: u64,
    /// Width in cells.
    pub width: u32,
    /// Height in cells.
    pub height: u32,
    /// `octile` or `cardinal`.
    pub movement: &'static str,
    /// Standard base64 (with padding) of the `width * height` row-major costs, one byte
    /// per cell: `0` blocked, `1..=255` terrain cost. Cell `(x, y)` is byte `y * width + x`.
    pub costs: String,
}

/// The query string of `GET /v1/maps/{name}/cells`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellsParams {
    /// The costs a unit-type profile sees (default the map's default profile).
    pub profile: Option<String>,
    /// `true`: the terrain classes themselves (a plain map's are its costs).
    pub terrain: Option<bool>,
}

/// True when the client asks for the raw bytes.
fn wants_bytes(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/octet-stream"))
}

/// `GET /v1/maps/{name}/cells` (operationId `getMapCells`): JSON with base64 costs, or with
/// `Accept: application/octet-stream` the raw row-major bytes, the version, width, height
/// and movement rule in `X-Map-*` headers.
async fn get_cells(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    params: Result<Query<CellsParams>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Query(params) = params?;
    let base = lookup(&state, &name)?;
    let entry = crate::query::on_profile(&state, &base, params.profile.as_deref()).await?;
    let terrain = params.terrain.unwrap_or(false);
    let grid = Arc::clone(if terrain { &entry.terrain } else { &entry.grid });
    let raw = wants_bytes(&headers);
    let body = costs(&state, grid, raw).await?;
    let summary = base.summary();
    let mut resp = if raw {
        raw_cells(body, entry.version, &summary)
    } else {
        json_cells(body, entry.version, &summary)?
    };
    cache_headers(&mut resp, &entry, terrain);
    Ok(resp)
}

/// The costs of `grid`, raw or in base64: `O(cells)`, so on the pool, which also bounds
/// how many copies are in flight.
async fn costs(state: &AppState, grid: Arc<Grid>, raw: bool) -> Result<Vec<u8>, ApiError> {
    let body = state
        .compute()
        .run(move |_| {
            let costs = grid.costs();
            if raw {
                costs
            } else {
                base64(&costs).into_bytes()
            }
        })
        .await?;
    Ok(body)
}

/// The raw bytes, their shape in `X-Map-*` headers.
fn raw_cells(body: Vec<u8>, version: u64, summary: &MapSummary) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    for (k, v) in [
        ("x-map-version", version.to_string()),
        ("x-map-width", summary.width.to_string()),
        ("x-map-height", summary.height.to_string()),
        ("x-map-movement", summary.movement.to_owned()),
    ] {
        if let Ok(v) = HeaderValue::from_str(&v) {
            h.insert(k, v);
        }
    }
    r
}

/// The JSON form, `costs` being the base64 `body`.
fn json_cells(body: Vec<u8>, version: u64, summary: &MapSummary) -> Result<Response, ApiError> {
    Ok(Json(MapCells {
        name: summary.name.clone(),
        version,
        width: summary.width,
        height: summary.height,
        movement: summary.movement,
        costs: String::from_utf8(body).map_err(ApiError::internal)?,
    })
    .into_response())
}

/// Revalidated caching: an `ETag` naming the version and what was asked (the terrain, or
/// the costs of a profile), varying with `Accept`.
fn cache_headers(resp: &mut Response, entry: &MapEntry, terrain: bool) {
    let tag = match (terrain, &entry.profile) {
        (true, _) => format!("\"v{}-terrain\"", entry.version),
        (false, Some(p)) => format!("\"v{}-{p}\"", entry.version),
        (false, None) => format!("\"v{}\"", entry.version),
    };
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(tag) = HeaderValue::from_str(&tag) {
        h.insert(header::ETAG, tag);
    }
    h.insert(header::VARY, HeaderValue::from_static("accept"));
}

/// Standard base64 (RFC 4648, with padding) of `bytes`: how binary arrays travel in JSON.
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
