//! The window tried first for nearby start and goal (step 0 of a query).

use super::build::Layout;
use super::local::{Local, Rect};
use crate::grid::{Grid, Point};
use crate::query::{Query, Stats};
use crate::search::trace::Recorder;

/// Start and goal at most this many cluster sides apart (in x and in y) are tried in a
/// window first (see [`nearby`]).
const NEAR: u32 = 2;

/// For a start and goal at most [`NEAR`] cluster sides apart: the optimal path inside their
/// bounding box grown by one cluster side (clamped to the map), its cost, and whether it
/// is provably optimal on the whole map.
///
/// Why: HPA* pays a fixed price per query (two in-cluster Dijkstras) that plain A* does not
/// pay on short queries, and forced through transition cells its answer to a short query can
/// be far off (an entrance's end transition may be a long way from where the optimum
/// crosses). The proof: a path that leaves the window crosses one of its sides that is not
/// the map's edge, so it takes at least as many steps as the start and the goal together are
/// from the first row or column beyond that side, and every step costs at least the map's
/// smallest cell cost; a window path no dearer than the smallest such bound is optimal.
pub(super) fn nearby(
    layout: &Layout,
    grid: &Grid,
    q: &Query,
    local: &mut Local,
    stats: &mut Stats,
    tr: &mut Option<Recorder>,
) -> Option<(Vec<Point>, f64, bool)> {
    let size = layout.size;
    let (s, g) = (q.start, q.goal);
    if s.x.abs_diff(g.x) > NEAR * size || s.y.abs_diff(g.y) > NEAR * size {
        return None;
    }
    let margin = size;
    let (x0, y0) = (
        s.x.min(g.x).saturating_sub(margin),
        s.y.min(g.y).saturating_sub(margin),
    );
    let x1 = (s.x.max(g.x) + margin + 1).min(layout.width);
    let y1 = (s.y.max(g.y) + margin + 1).min(layout.height);
    let r = Rect {
        x0,
        y0,
        w: x1 - x0,
        h: y1 - y0,
    };
    let pw = grid.padded_width();
    let (sc, gc) = (grid.pidx(s) as u32, grid.pidx(g) as u32);
    // The window search counts against an expansion budget like everything else (it is
    // small enough, at most (2 + 2 NEAR) cluster sides square, not to need the clock).
    let cap = q.limits.max_expansions.unwrap_or(u64::MAX);
    let found = local.astar(grid, r, r.local(pw, sc), r.local(pw, gc), cap, tr);
    stats.expanded += local.expanded;
    stats.generated += local.generated;
    if !found {
        return None;
    }
    let mut cells = Vec::new();
    local.path_to(r.local(pw, gc), &mut cells);
    let path: Vec<Point> = cells.iter().map(|&c| grid.ppoint(c as usize)).collect();
    let cost = grid.path_cost(&path).expect("window paths are legal");
    // A path that leaves through a side reaches a cell beyond it and comes back: at least
    // as many steps as start and goal together are from the first row or column beyond.
    let through = [
        (x0 > 0).then(|| (s.x - x0 + 1) + (g.x - x0 + 1)),
        (y0 > 0).then(|| (s.y - y0 + 1) + (g.y - y0 + 1)),
        (x1 < layout.width).then(|| (x1 - s.x) + (x1 - g.x)),
        (y1 < layout.height).then(|| (y1 - s.y) + (y1 - g.y)),
    ];
    let proven = match through.into_iter().flatten().min() {
        Some(steps) => cost <= steps as f64 * grid.min_cost() as f64,
        None => true,
    };
    Some((path, cost, proven))
}
