//! HTTP routes. Each module owns its router; each handler's doc names its `openapi.yaml`
//! operation.

pub mod cells;
pub mod flowfields;
pub mod health;
pub mod maps;
pub mod nearest;
pub mod patches;
pub mod paths;
pub mod plans;
pub mod posthoc;
pub mod subscriptions;
pub mod tables;
pub mod trace;
pub mod ui;

use axum::Router;

use crate::state::AppState;

/// Every route of the API. Error answers that are not JSON (extractor rejections such as
/// axum's `Path` on `/v1/maps/%ff`) are rewritten into the error shape by
/// [`crate::http::error::json_errors`].
pub fn router() -> Router<AppState> {
    Router::new()
        .merge(maps::router())
        .merge(paths::router())
        .merge(plans::router())
        .merge(patches::router())
        .merge(subscriptions::router())
        .merge(flowfields::router())
        .merge(health::router())
        .merge(cells::router())
        .merge(nearest::router())
        .merge(posthoc::router())
        .merge(tables::router())
        .merge(ui::router())
        .layer(axum::middleware::from_fn(crate::http::error::json_errors))
}
