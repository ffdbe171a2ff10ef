//! Operational routes: liveness, readiness, metrics and the API contract.

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::http::dto::Health;
use crate::http::error::{ApiError, ErrorCode, Json};
use crate::state::AppState;

/// The OpenAPI document, compiled in so the binary serves the contract it was built with.
pub const OPENAPI_YAML: &str = include_str!("../../../openapi.yaml");

/// The routes of this module.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/openapi.yaml", get(openapi))
}

/// `GET /healthz` (operationId `healthz`): the process is alive.
async fn healthz(State(state): State<AppState>) -> Json<Health> {
    Json(Health {
        status: "ok",
        maps: state.registry().len(),
        damaged_maps: damaged_names(&state),
        cut_logs: state.maps().cut_logs(),
        store: state.maps().store_status().map(Into::into),
        cluster: state.cluster().health(state.registry()),
    })
}

/// `GET /readyz` (operationId `readyz`): `200` once the startup maps are loaded, `503`
/// before.
async fn readyz(State(state): State<AppState>) -> Result<Json<Health>, ApiError> {
    if state.is_draining() {
        Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::NotReady,
            "the server is shutting down: in-flight requests finish, new ones go elsewhere",
        ))
    } else if state.is_ready() {
        Ok(Json(Health {
            status: "ready",
            maps: state.registry().len(),
            damaged_maps: damaged_names(&state),
            cut_logs: state.maps().cut_logs(),
            store: state.maps().store_status().map(Into::into),
            cluster: state.cluster().health(state.registry()),
        }))
    } else {
        Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::NotReady,
            "the startup maps are still loading",
        ))
    }
}

fn damaged_names(state: &AppState) -> Vec<String> {
    state.maps().damaged().into_iter().map(|d| d.name).collect()
}

/// `GET /metrics` (operationId `metrics`): Prometheus text format.
async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    // Set from this server's own state when rendered (the recorder is process-wide).
    metrics::gauge!("pathd_maps_damaged").set(state.maps().damaged().len() as f64);
    state.maps().store_status(); // refreshes the replication gauges
    crate::metrics::refresh_process();
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics().render(),
    )
}

/// `GET /openapi.yaml` (operationId `openapi`).
async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/yaml")], OPENAPI_YAML)
}
