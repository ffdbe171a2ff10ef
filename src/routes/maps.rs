//! `/v1/maps` and `/v1/maps/{name}`: create, replace, read, list and delete maps.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use pathd_engine::movingai;

use crate::auth::{AdminAuth, QueryAuth};
use crate::dto::{MapList, UploadParams};
use crate::error::{ApiError, Json};
use crate::state::{AppState, MapEntry, MapSource};
use crate::upload;

/// The routes of this module.
pub fn router() -> Router<AppState> {
    Router::new().route("/v1/maps", get(list_maps)).route(
        "/v1/maps/{name}",
        get(get_map).put(put_map).delete(delete_map),
    )
}

/// True for 1-64 characters of `[A-Za-z0-9_.-]` not starting with a dot.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// The current entry of `name`, or `404 map_not_found`.
pub fn lookup(state: &AppState, name: &str) -> Result<Arc<MapEntry>, ApiError> {
    tracing::Span::current().record("map", name);
    state
        .registry()
        .get(name)
        .ok_or_else(|| ApiError::map_not_found(name))
}

/// `GET /v1/maps` (operationId `listMaps`).
async fn list_maps(_: QueryAuth, State(state): State<AppState>) -> Json<MapList> {
    let maps = state
        .registry()
        .list()
        .iter()
        .map(|e| e.summary())
        .collect();
    Json(MapList { maps })
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
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let entry = lookup(&state, &name)?;
    if !wants_text(&headers) {
        return Ok(Json(entry.summary()).into_response());
    }
    let grid = Arc::clone(&entry.grid);
    let text = state
        .compute()
        .run(move |_| movingai::write_map(&grid))
        .await?
        .map_err(|_| {
            ApiError::new(
                StatusCode::NOT_ACCEPTABLE,
                "not_acceptable",
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
        return Err(ApiError::invalid_request(
            "map names are 1-64 characters of [A-Za-z0-9_.-], not starting with a dot",
        ));
    }
    let Query(params) = params?;
    let kind = upload::classify(&headers)?;
    let body = body?;
    let max_cells = state.config().max_map_cells;
    let n = name.clone();
    let entry = state
        .compute()
        .run(move |_| {
            upload::build_grid(kind, &body, params.movement.as_deref(), max_cells)
                .map(|g| MapEntry::new(n, 0, g, MapSource::Uploaded))
        })
        .await??;

    // Writes to one name happen one at a time, durable write included.
    let writer = state.registry().writer(&name);
    let _order = writer.lock().await;
    let registry = state.registry();
    let existed = registry.get(&name).is_some();
    if !existed && registry.len() >= state.config().max_maps {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "too_many_maps",
            format!(
                "this server holds at most {} maps; delete one first",
                state.config().max_maps
            ),
        ));
    }
    let entry = Arc::new(MapEntry {
        version: registry.next_version(&name),
        ..entry
    });
    let (storage, e) = (state.storage().clone(), Arc::clone(&entry));
    tokio::task::spawn_blocking(move || {
        storage.save(&e.name, e.version, &e.grid)?;
        crate::live::log::remove(storage.dir(), &e.name) // patches of the old map
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::internal)?;
    if let Some(old) = registry.insert(Arc::clone(&entry)) {
        let (old, new) = (Arc::clone(&old.grid), Arc::clone(&entry.grid));
        state
            .live()
            .on_replace(&name, old, new, entry.version)
            .await;
    }
    tracing::info!(map = %name, version = entry.version, "map stored");

    let status = if existed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let mut resp = (status, Json(entry.summary())).into_response();
    if let Ok(loc) = HeaderValue::from_str(&format!("/v1/maps/{name}")) {
        resp.headers_mut().insert(header::LOCATION, loc);
    }
    Ok(resp)
}

/// `DELETE /v1/maps/{name}` (operationId `deleteMap`): `204`; queries already running on
/// the map finish on their snapshot.
async fn delete_map(
    _: AdminAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    lookup(&state, &name)?; // also keeps invalid names away from the writer table
    let writer = state.registry().writer(&name);
    let _order = writer.lock().await;
    let entry = lookup(&state, &name)?;
    let storage = state.storage().clone();
    let (n, v) = (name.clone(), entry.version);
    tokio::task::spawn_blocking(move || {
        storage.delete(&n, v)?;
        crate::live::log::remove(storage.dir(), &n)
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::internal)?;
    state.registry().remove(&name);
    state.live().end_map(&name, "map_deleted");
    tracing::info!(map = %name, version = v, "map deleted");
    Ok(StatusCode::NO_CONTENT)
}
