//! `/v1/maps` and `/v1/maps/{name}`: create, replace, read, list and delete maps.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use pathd_engine::movingai;

use crate::derived::MapEntry;
use crate::http::auth::{AdminAuth, QueryAuth};
use crate::http::dto::{MapList, UploadParams};
use crate::http::error::{ApiError, ErrorCode, Json, Path};
use crate::http::upload;
use crate::state::AppState;

/// The routes of this module.
pub fn router() -> Router<AppState> {
    Router::new().route("/v1/maps", get(list_maps)).route(
        "/v1/maps/{name}",
        get(get_map).put(put_map).delete(delete_map),
    )
}

pub use crate::maps::valid_name;

/// The current entry of `name`: `404 map_not_found`, or `503 map_damaged` when its durable
/// data cannot be trusted.
pub fn lookup(state: &AppState, name: &str) -> Result<Arc<MapEntry>, ApiError> {
    tracing::Span::current().record("map", name);
    Ok(state.maps().get(name)?)
}

/// `summary` with the map's subscription count and memory, when it has subscriptions, and
/// what recovery found cut in its log.
fn with_usage(
    state: &AppState,
    mut summary: crate::http::dto::MapSummary,
) -> crate::http::dto::MapSummary {
    summary.recovery = state.maps().lost_tail(&summary.name).map(Into::into);
    let (count, memory_bytes) = state.live().usage(&summary.name);
    summary.subscriptions = (count > 0).then_some(crate::http::dto::SubscriptionUsage {
        count,
        memory_bytes,
    });
    summary
}

/// `GET /v1/maps` (operationId `listMaps`).
async fn list_maps(_: QueryAuth, State(state): State<AppState>) -> Json<MapList> {
    let mut maps: Vec<crate::http::dto::MapSummary> = state
        .registry()
        .list()
        .iter()
        .map(|e| with_usage(&state, e.summary()))
        .collect();
    // `--placement K`: the maps held elsewhere, as their summaries here have them (their
    // version is current; their cell figures are those of the last whole map read here).
    if let Some(p) = state.cluster().placement() {
        maps.extend(p.stubs());
        maps.sort_by(|a, b| a.name.cmp(&b.name));
        maps.dedup_by(|a, b| a.name == b.name);
    }
    let damaged = state.maps().damaged().into_iter().map(Into::into).collect();
    Json(MapList { maps, damaged })
}

/// Query parameters of `GET /v1/maps/{name}`.
#[derive(Debug, serde::Deserialize)]
pub struct ReadParams {
    /// Wait until this replica has applied this version (read-your-writes across
    /// replicas); else `503 replica_behind`.
    #[serde(default, deserialize_with = "crate::http::dto::saturating_param")]
    pub min_version: Option<u64>,
}

/// True when the client prefers a Moving AI text file to JSON.
fn wants_text(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match (accept.find("text/plain"), accept.find("application/json")) {
        (Some(t), Some(j)) => t < j,
        (Some(_), None) => true,
        _ => false,
    }
}

/// `GET /v1/maps/{name}` (operationId `getMap`): the summary, or with `Accept: text/plain`
/// the map as a Moving AI file (uniform-cost maps only: the format has no costs).
async fn get_map(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    params: Result<Query<ReadParams>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Query(params) = params?;
    crate::http::routes::paths::wait_version(&state, &name, params.min_version).await?;
    let entry = lookup(&state, &name)?;
    if !wants_text(&headers) {
        return Ok(Json(with_usage(&state, entry.summary())).into_response());
    }
    moving_ai_text(&state, &entry).await
}

/// `entry` as a Moving AI file, or `406 not_acceptable` for a map with weighted cells.
async fn moving_ai_text(state: &AppState, entry: &MapEntry) -> Result<Response, ApiError> {
    let (grid, terrain) = (Arc::clone(&entry.grid), Arc::clone(&entry.terrain));
    // A map whose terrain is Moving AI characters is written as it was read (trees,
    // water and swamp kept); others as their default profile's walls and ground.
    let text = state
        .compute()
        .run(
            move |_| match terrain.profiles().and(movingai::write_terrain(&terrain)) {
                Some(text) => Ok(text),
                None => movingai::write_map(&grid),
            },
        )
        .await?
        .map_err(|_| {
            ApiError::new(
                StatusCode::NOT_ACCEPTABLE,
                ErrorCode::NotAcceptable,
                "this map has weighted cells, which a Moving AI file cannot hold; ask for JSON",
            )
        })?;
    let mut resp = text.into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    Ok(resp)
}

/// `PUT /v1/maps/{name}` (operationId `putMap`): create (`201`) or replace (`200`).
async fn put_map(
    _: AdminAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    params: Result<Query<UploadParams>, QueryRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    tracing::Span::current().record("map", &name);
    if !valid_name(&name) {
        return Err(crate::maps::MapsError::InvalidName.into());
    }
    let Query(params) = params?;
    let grid = uploaded_grid(&state, params, &headers, body).await?;
    // From here the write runs to completion even if this client goes away.
    let out = state.maps().put(name.clone(), grid).await?;
    let status = if out.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut resp = (status, Json(out.entry.summary())).into_response();
    if let Ok(loc) = HeaderValue::from_str(&format!("/v1/maps/{name}")) {
        resp.headers_mut().insert(header::LOCATION, loc);
    }
    Ok(resp)
}

/// The grid an upload describes (its format told by `Content-Type`), built on the pool.
async fn uploaded_grid(
    state: &AppState,
    params: UploadParams,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<pathd_engine::Grid, ApiError> {
    let kind = upload::classify(headers)?;
    let body = body?;
    let max_cells = state.config().max_map_cells;
    state
        .compute()
        .run(move |_| upload::build_grid(kind, &body, params.movement.as_deref(), max_cells))
        .await?
}

/// `DELETE /v1/maps/{name}` (operationId `deleteMap`): `204`; queries already running on
/// the map finish on their snapshot.
async fn delete_map(
    _: AdminAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    tracing::Span::current().record("map", &name);
    state.maps().delete(name).await?;
    Ok(StatusCode::NO_CONTENT)
}
