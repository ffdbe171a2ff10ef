//! What one repair reports, and how a server decides which searches a patch concerns.

use std::fmt;

use crate::grid::Point;
use crate::query::{Stats, Status};

/// How the best path changed in one call, relative to the path before it (after
/// [`DStarLite::move_start`](crate::DStarLite::move_start) along the path: relative to the
/// old path's remainder from the new position).
///
/// A server pushes an event for everything but [`Change::Unchanged`]; the names map onto the
/// event `reason`s (`blocked`, `cheaper`, `unreachable`, `restored`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Change {
    /// Same status, same cells, same cost.
    Unchanged,
    /// The old path is no longer legal (a wall on it or on a corner it passes); here is
    /// the new best path.
    Blocked,
    /// The old path is still legal but costs more now; the best path (perhaps the same
    /// cells) costs at least as much as before.
    Costlier,
    /// A cheaper path exists (an opening, or cheaper terrain).
    Cheaper,
    /// There was a path and there is none now.
    Unreachable,
    /// There was no path (or the last search was interrupted) and there is one now.
    Restored,
    /// The agent moved off its path; this is the best path from its new position.
    Moved,
    /// A limit (expansion cap, deadline, cancellation) stopped the search; the path is
    /// unknown until [`DStarLite::resume`](crate::DStarLite::resume) or the next update.
    Interrupted,
}

impl Change {
    /// The wire name (`"unchanged"`, `"blocked"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Unchanged => "unchanged",
            Change::Blocked => "blocked",
            Change::Costlier => "costlier",
            Change::Cheaper => "cheaper",
            Change::Unreachable => "unreachable",
            Change::Restored => "restored",
            Change::Moved => "moved",
            Change::Interrupted => "interrupted",
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of [`DStarLite::update`](crate::DStarLite::update),
/// [`move_start`](crate::DStarLite::move_start) or [`resume`](crate::DStarLite::resume).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RepairOutcome {
    /// Status after the call: [`Status::Found`], [`Status::NoPath`] or
    /// [`Status::LimitReached`].
    pub status: Status,
    /// How the best path changed.
    pub change: Change,
    /// True when the status or the cells of the path differ from before the call.
    pub path_changed: bool,
    /// True when a path exists before and after and its cost differs.
    pub cost_changed: bool,
    /// Work done by this call: vertices expanded, queue pushes, vertices raised
    /// (underconsistent expansions, counted in `reopened`), wall-clock time.
    pub stats: Stats,
}

impl RepairOutcome {
    /// True when a subscriber should hear about it (`change != Unchanged`).
    pub fn should_notify(&self) -> bool {
        self.change != Change::Unchanged
    }
}

/// Which patches can affect a search: the server's filter before it schedules a repair.
///
/// A changed cell `c` can only change the search if some cell of `c` and its 8 neighbours
/// has a finite `g`; all those cells lie in [`Interest::Region`]. Two more cases concern
/// every search: the search is [`Interest::Everything`] (it stopped early because start and
/// goal are not connected, or on a limit, so any opening may matter), or the patch lowers
/// the map's smallest cell cost (`new.min_cost() < old.min_cost()`: the heuristic scale
/// must drop).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interest {
    /// Any patch may matter.
    Everything,
    /// Only changed cells inside this inclusive box (clamped to the map) may matter.
    Region {
        /// Top-left corner.
        min: Point,
        /// Bottom-right corner (inclusive).
        max: Point,
    },
}

impl Interest {
    /// True when a changed cell at `p` may matter.
    pub fn contains(&self, p: Point) -> bool {
        match *self {
            Interest::Everything => true,
            Interest::Region { min, max } => {
                (min.x..=max.x).contains(&p.x) && (min.y..=max.y).contains(&p.y)
            }
        }
    }
}

/// The path before a call, to classify what the call did.
pub(crate) struct Baseline {
    pub status: Status,
    /// `None` when the agent moved off the old path (no comparable path).
    pub path: Option<Vec<Point>>,
    pub cost: f64,
}

/// Relative tolerance under which two path costs count as equal.
pub(crate) const COST_EPS: f64 = 1e-12;

pub(crate) fn same_cost(a: f64, b: f64) -> bool {
    (a - b).abs() <= COST_EPS * (1.0 + a.abs().max(b.abs()))
}

/// Classifies a call. `old_cost_now` is the old path's cost on the current grid (`None`
/// when it is illegal now or there was none).
pub(crate) fn classify(
    before: &Baseline,
    old_cost_now: Option<f64>,
    status: Status,
    path: &[Point],
    cost: f64,
) -> (Change, bool, bool) {
    let was = before.status == Status::Found;
    let now = status == Status::Found;
    let path_changed = status != before.status || before.path.as_deref() != Some(path);
    let cost_changed = was && now && (before.path.is_none() || !same_cost(cost, before.cost));
    let change = match (was, now) {
        _ if status == Status::LimitReached => {
            if before.status == Status::LimitReached {
                Change::Unchanged
            } else {
                Change::Interrupted
            }
        }
        (true, false) => Change::Unreachable,
        (false, true) => Change::Restored,
        (false, false) if before.status == Status::LimitReached => Change::Unreachable,
        (false, false) => Change::Unchanged,
        (true, true) if before.path.is_none() => Change::Moved,
        (true, true) if !path_changed && !cost_changed => Change::Unchanged,
        (true, true) if old_cost_now.is_none() => Change::Blocked,
        (true, true) if cost < before.cost && cost_changed => Change::Cheaper,
        (true, true) => Change::Costlier,
    };
    (change, path_changed, cost_changed)
}
