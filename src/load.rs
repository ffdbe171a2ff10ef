//! Loading the startup maps: the store's maps, then the bundled `*.map` files of the maps
//! directory (see [`crate::maps::Maps::recover`]).

use crate::maps::LoadReport;
use crate::state::AppState;

/// Loads every startup map into the registry, then marks the server ready.
pub async fn load_maps(state: AppState) -> LoadReport {
    let report = state.maps().recover(&state.config().maps_dir).await;
    state.set_ready();
    report
}
