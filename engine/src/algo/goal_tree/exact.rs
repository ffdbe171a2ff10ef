//! The exactness walk of the forward repair (module `route`): which vertices of a stale
//! tree still hold their exact cost on the new map (a path of tight steps leads from them to
//! the goal), decided depth first and memoised, and D* Lite's descent from such a vertex.
//! The argument is in `route`'s docs ("Which values are still exact").

use super::GoalTree;
use super::route::CellMap;
use crate::algo::lpa::graph::View;
use crate::grid::{Grid, Point};
use crate::search::IMPROVES_BY;

/// One vertex on the path of [`GoalTree::terminal_with`]'s walk.
struct Frame {
    v: u32,
    /// Its cost from where the walk began, plus the walk's `d0`.
    d: f64,
    /// Its neighbours (the first `k`) and the next one to try.
    nb: [(u32, f64); 8],
    k: usize,
    next: usize,
}

/// `a + c` equals `b` up to rounding (the relative margin of [`IMPROVES_BY`]).
#[inline]
pub(super) fn tight(a: f64, c: f64, b: f64) -> bool {
    ((a + c) - b).abs() <= b * IMPROVES_BY
}

impl GoalTree {
    /// True when `n`'s old value is exact on the new map: a path of tight steps leads from
    /// it to the goal (module docs). Depth first over tight steps, every vertex it decides
    /// memoised in `memo` (a step is tight from a settled vertex only to a cheaper one, so
    /// the walk cannot loop). Stops undecided (false, the vertices on its path left out of
    /// `memo`) rather than let `memo` grow past `limit` entries.
    pub(super) fn terminal(
        &self,
        cells: &View<'_>,
        n: u32,
        memo: &mut CellMap<bool>,
        limit: usize,
    ) -> bool {
        self.terminal_with(cells, n, memo, limit, 0.0, &mut |_, _, _| {})
            .unwrap_or(false)
    }

    /// [`Self::terminal`], handing every vertex the walk looks at the neighbours of (`n`
    /// first) to `scanned`, once, with its neighbours and its cost from `n` along the walk
    /// plus `d0`: the forward repair expands them with that one look ([`Self::route`]).
    /// `None` when the walk stopped undecided at `limit`.
    pub(super) fn terminal_with(
        &self,
        cells: &View<'_>,
        n: u32,
        memo: &mut CellMap<bool>,
        limit: usize,
        d0: f64,
        scanned: &mut impl FnMut(u32, f64, &[(u32, f64)]),
    ) -> Option<bool> {
        if n == self.s_goal {
            return Some(true);
        }
        if let Some(&known) = memo.get(&n) {
            return Some(known);
        }
        if memo.len() >= limit {
            return None;
        }
        if self.core.g(n) >= self.bound {
            memo.insert(n, false);
            return Some(false);
        }
        // The tight path so far: one frame per vertex, its neighbours read once.
        let mut stack = vec![self.frame(cells, n, d0, scanned)];
        while let Some(top) = stack.last_mut() {
            let g = self.core.g(top.v);
            let mut child = None;
            let mut reached = false;
            while top.next < top.k {
                let (w, c) = top.nb[top.next];
                top.next += 1;
                if !tight(self.core.g(w), c, g) {
                    continue;
                }
                match (w == self.s_goal, memo.get(&w)) {
                    (true, _) | (_, Some(true)) => {
                        reached = true;
                        break;
                    }
                    (_, Some(false)) => {}
                    (_, None) => {
                        child = Some((w, top.d + c));
                        break;
                    }
                }
            }
            let v = top.v;
            if reached {
                // Every vertex on the stack reaches the goal tightly.
                for f in stack.drain(..) {
                    memo.insert(f.v, true);
                }
                return Some(true);
            }
            match child {
                Some(_) if memo.len() + stack.len() >= limit => return None,
                Some((w, dw)) => {
                    let frame = self.frame(cells, w, dw, scanned);
                    stack.push(frame);
                }
                None => {
                    memo.insert(v, false);
                    stack.pop();
                }
            }
        }
        Some(false)
    }

    /// A frame of [`Self::terminal_with`]'s walk: `v`'s neighbours, handed to `scanned`.
    fn frame(
        &self,
        cells: &View<'_>,
        v: u32,
        d: f64,
        scanned: &mut impl FnMut(u32, f64, &[(u32, f64)]),
    ) -> Frame {
        let mut nb = [(0u32, 0.0f64); 8];
        let k = self.core.neighbours(cells, v, &mut nb);
        scanned(v, d, &nb[..k]);
        Frame {
            v,
            d,
            nb,
            k,
            next: 0,
        }
    }

    /// D* Lite's path from `from`, whose old value is exact: at every vertex the first
    /// neighbour (direction order) reached by a tight step whose old value is exact too.
    pub(super) fn exact_descent(
        &self,
        grid: &Grid,
        cells: &View<'_>,
        from: u32,
        memo: &mut CellMap<bool>,
    ) -> Vec<Point> {
        let mut nb = [(0u32, 0.0f64); 8];
        let mut path = vec![grid.ppoint(from as usize)];
        let mut cur = from;
        while cur != self.s_goal {
            let g = self.core.g(cur);
            let k = self.core.neighbours(cells, cur, &mut nb);
            let next = nb[..k]
                .iter()
                .find(|&&(w, c)| {
                    tight(self.core.g(w), c, g) && self.terminal(cells, w, memo, usize::MAX)
                })
                .map(|&(w, _)| w);
            cur = next.expect("an exact vertex has a tight step to an exact one");
            path.push(grid.ppoint(cur as usize));
        }
        path
    }

    /// The exact cost of `n` on the new map when the search need not expand it: the goal, a
    /// vertex a forward repair since the last patch learnt, or one whose old value is exact
    /// ([`Self::terminal`]).
    pub(super) fn exact(
        &self,
        cells: &View<'_>,
        n: u32,
        memo: &mut CellMap<bool>,
        limit: usize,
    ) -> Option<f64> {
        self.exact_with(cells, n, memo, limit, 0.0, &mut |_, _, _| {})
            .flatten()
    }

    /// [`Self::exact`], handing what the walk looks at to `scanned` as
    /// [`Self::terminal_with`] does (`d0`: `n`'s cost from the agent); `None` when the walk
    /// stopped undecided at `limit`.
    pub(super) fn exact_with(
        &self,
        cells: &View<'_>,
        n: u32,
        memo: &mut CellMap<bool>,
        limit: usize,
        d0: f64,
        scanned: &mut impl FnMut(u32, f64, &[(u32, f64)]),
    ) -> Option<Option<f64>> {
        if n == self.s_goal {
            Some(Some(0.0))
        } else if let Some(&(g, _)) = self.learnt.get(&n) {
            Some(Some(g))
        } else {
            self.terminal_with(cells, n, memo, limit, d0, scanned)
                .map(|exact| exact.then(|| self.core.g(n)))
        }
    }

    /// The forward repair's heuristic: a learnt vertex's new cost, else `min(g, bound)`
    /// (for a vertex whose old value is exact, that value).
    pub(super) fn estimate(&self, n: u32) -> f64 {
        if n == self.s_goal {
            0.0
        } else if let Some(&(g, _)) = self.learnt.get(&n) {
            g
        } else {
            self.core.g(n).min(self.bound)
        }
    }
}
