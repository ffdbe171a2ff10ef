//! The readiness rules for derived structures: what an algorithm needs of its map version,
//! and why a query cannot have it yet (or ever).

use std::sync::Arc;

use pathd_engine::{Algorithm, Query};

use super::QueryError;
use crate::derived::{MapEntry, Status};
use crate::state::AppState;

/// Checks that what `query` needs of `entry` is ready.
pub(super) fn ready(
    state: &AppState,
    entry: &Arc<MapEntry>,
    query: &Query,
) -> Result<(), QueryError> {
    hpa(state, entry, query)?;
    jump(state, entry, query)?;
    subgoal(state, entry, query)
}

/// `hpa` needs the map's abstraction: say why there is none (the map is too small to get
/// one, so it never will: `400 not_applicable`; or it is being built: `503
/// abstraction_building` with `Retry-After`).
fn hpa(state: &AppState, entry: &Arc<MapEntry>, query: &Query) -> Result<(), QueryError> {
    if query.algorithm != Algorithm::Hpa || query.size > 1 && query.smooth {
        return Ok(()); // (a smoothed sized query gets the planner's `not_applicable`)
    }
    let (ready, status) = if query.size > 1 {
        // The abstraction of the map eroded for this size, built on the first such query.
        let ready = state.registry().ensure_sized_hpa(entry, query.size);
        (ready, entry.sized.hpa_status(query.size))
    } else {
        (entry.hpa.get().is_some(), entry.hpa.status())
    };
    if ready {
        return Ok(());
    }
    if status == Status::Failed {
        return Err(failed("HPA* abstraction", "astar, jps or auto"));
    }
    let settings = state.registry().hpa_settings();
    if settings.wants(&entry.grid) {
        return Err(QueryError::Building(
            "this map's HPA* abstraction is being built in the background; retry shortly, \
             or use astar, jps or auto meanwhile"
                .into(),
        ));
    }
    let cells = entry.grid.width() as u64 * entry.grid.height() as u64;
    let why = if settings.min_cells == 0 {
        "this server builds no HPA* abstractions (--hpa-min-cells 0)".to_owned()
    } else {
        format!(
            "this map has {cells} cells, below --hpa-min-cells ({}), so it gets no HPA* \
             abstraction (plain search is fast enough at this size)",
            settings.min_cells
        )
    };
    Err(QueryError::NotApplicable(format!(
        "{why}; use astar, jps or auto"
    )))
}

/// `jps_plus` needs the map's jump table: say why there is none (being built: `503
/// abstraction_building` with `Retry-After`; too big or switched off: `400
/// not_applicable`). Weighted and cardinal maps get the planner's `not_applicable`.
fn jump(state: &AppState, entry: &MapEntry, query: &Query) -> Result<(), QueryError> {
    let grid = &entry.grid;
    if query.algorithm != Algorithm::JpsPlus
        || query.size > 1
        || entry.jump.get().is_some()
        || !grid.is_uniform()
        || grid.movement() != pathd_engine::Movement::Octile
    {
        return Ok(());
    }
    if entry.jump.table_slot().status() == Status::Failed {
        return Err(failed("JPS+ jump table", "jps or auto"));
    }
    let settings = state.registry().jump_settings();
    if settings.wants(grid) {
        return Err(QueryError::Building(
            "this map's JPS+ jump table is being built in the background; retry shortly, \
             or use jps or auto meanwhile"
                .into(),
        ));
    }
    let cells = grid.width() as u64 * grid.height() as u64;
    Err(QueryError::NotApplicable(format!(
        "this map has {cells} cells, above --jps-plus-max-cells ({}), so it gets no JPS+ \
         jump table (16 bytes a cell); use jps or auto",
        settings.max_cells
    )))
}

/// `subgoal` needs the map's subgoal graph: say why there is none (being built: `503
/// abstraction_building`; its build failed: `503 derivation_failed`; a map that gets none:
/// the planner's `not_applicable`).
fn subgoal(state: &AppState, entry: &MapEntry, query: &Query) -> Result<(), QueryError> {
    if query.algorithm != Algorithm::Subgoal
        || query.size > 1
        || query.partial
        || entry.subgoal.get().is_some()
        || !state.registry().subgoal_settings().wants(&entry.grid)
    {
        return Ok(());
    }
    if entry.subgoal.slot().status() == Status::Failed {
        return Err(failed("subgoal graph", "jps, jps_plus or auto"));
    }
    Err(QueryError::Building(
        "this map's subgoal graph is being built in the background; retry shortly, or \
         use jps, jps_plus or auto meanwhile"
            .into(),
    ))
}

/// `503 derivation_failed`: this version's `what` failed to build (the map summary says
/// why); the next version builds it again.
fn failed(what: &str, instead: &str) -> QueryError {
    QueryError::DerivationFailed(format!(
        "this map version's {what} failed to build (its map summary says why); the \
         map's next version builds it again; use {instead} meanwhile"
    ))
}
