//! A live plan's event (`PlanEvent` in `openapi.yaml`).

use super::*;

/// One event of a live plan (`LivePlanEvent` in `openapi.yaml`), also its current state.
#[derive(Clone, Debug, Serialize)]
pub struct PlanEvent {
    /// The plan's id.
    pub id: String,
    /// 1 for the first event, +1 per event.
    pub seq: u64,
    /// The map version the plan holds for.
    pub map_version: u64,
    /// Why it was sent: `initial`, `blocked`, `delayed`, `restored`, `resync`, or a final
    /// `deleted`, `map_deleted`, `map_replaced`, `expired`.
    pub reason: &'static str,
    /// `solved`, `partial` or `failed`.
    pub status: &'static str,
    /// The time step of the paths' first cells.
    pub start_step: u64,
    /// `[x, y]` per time step from `start_step` for every agent, all one length.
    pub paths: Vec<Vec<[u32; 2]>>,
    /// Sum over agents of the steps (from `start_step`) until each rests at its goal.
    pub sum_of_costs: u64,
    /// Time steps of the paths.
    pub makespan: u64,
    /// The sum of the agents' own distances from their cells at `start_step`.
    pub lower_bound: u64,
    /// Agents whose paths this event changed (every agent for `initial`).
    pub replanned: Vec<usize>,
    /// True when only `replanned` were re-planned, everybody else keeping their path.
    pub repaired: bool,
    /// Time the re-plan took, ms.
    pub elapsed_ms: f64,
}

crate::live::feed::feed_event!(PlanEvent);
