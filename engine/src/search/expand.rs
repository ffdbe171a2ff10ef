//! The successor policy ([`Expander`]) and its plain grid implementation
//! ([`GridExpander`]): the one successor generation and corner rule of every grid search.

use super::CHECK_EVERY;
use crate::grid::{Cells, Grid, Movement, UNIFORM_STEPS, moves, moves_by};

/// A successor proposal: reach `node` with cost `g` through `parent`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Succ {
    pub node: u32,
    pub g: f64,
    pub parent: u32,
}

/// The successor policy: which successors an expanded node has (grid moves, jumps,
/// line-of-sight parents, abstract edges), and what its node ids mean.
pub(crate) trait Expander {
    /// Check the clock and the cancellation flag every this many expansions.
    const CHECK_EVERY: u64 = CHECK_EVERY;

    /// Whether [`Expander::settle`] does anything (lets the core skip the call).
    const TARGETS: bool = false;

    /// Whether an expanded node may be reopened when a cheaper way to it turns up (only ever
    /// with weight `<= 1`: weighted A* keeps its bound without reopening, see
    /// `algo::astar`). With a consistent heuristic it never happens (up to the margin
    /// [`IMPROVES_BY`], which absorbs rounding), so it is a safety net that the tests check
    /// stays unused. Theta* keeps closed nodes closed (Nash et al.), which is also what keeps
    /// its parent chains' lengths equal to their `g`.
    const REOPEN: bool = true;

    /// Whether [`Expander::refine`] does anything (lets the core skip the call).
    const REFINES: bool = false;

    /// Whether [`Expander::successors`] reads the parent's cost (lets the core skip reading
    /// the parent's record, a cache miss of its own on a large map; it passes NaN instead).
    const PARENT_G: bool = true;

    /// Pushes the successors of `node` (reached with cost `g`, from `parent`, whose own cost
    /// is `parent_g`, NaN unless [`Expander::PARENT_G`]) into `out`.
    fn successors(
        &mut self,
        grid: &Grid,
        node: u32,
        g: f64,
        parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    );

    /// Calls `visit(self, succ)` for each successor of `node` (arguments as for
    /// [`Expander::successors`]), in the order `successors` pushes them. The default goes
    /// through `successors` and the buffer `buf`; the grid expander overrides it to hand its
    /// moves over from a local array, sparing A*'s hottest loop a round trip through memory.
    #[inline]
    fn each_successor(
        &mut self,
        grid: &Grid,
        node: u32,
        g: f64,
        parent: Option<(u32, f64)>,
        buf: &mut Vec<Succ>,
        mut visit: impl FnMut(&mut Self, Succ),
    ) where
        Self: Sized,
    {
        buf.clear();
        self.successors(grid, node, g, parent, buf);
        for &s in buf.iter() {
            visit(self, s);
        }
    }

    /// Called for each proposal of the last [`Expander::successors`] call that the core may
    /// accept (the node is not closed, or may be reopened), with the node's current cost
    /// (infinity if unreached), before the core compares the two. It may rewrite the proposal,
    /// e.g. Theta*'s shortcut through the grandparent, which costs a line-of-sight check and so
    /// is only worth doing for proposals that can still win.
    #[inline]
    fn refine(&mut self, _grid: &Grid, _succ: &mut Succ, _current_g: f64) {}

    /// Called for each expanded node (when [`Expander::TARGETS`]); `true` ends the search as
    /// if the goal had been expanded. A Dijkstra to a set of targets (HPA*'s in-cluster
    /// searches) counts its targets down here.
    #[inline]
    fn settle(&mut self, _node: u32) -> bool {
        false
    }

    /// The padded map cell of a node id, for traces and `debug` cells (node ids are padded
    /// cells except in HPA*'s abstract graph and cluster-local searches).
    #[inline]
    fn cell(&self, node: u32) -> u32 {
        node
    }
}

/// Plain 8- or 4-neighbour expansion under the map's movement rule: the one successor
/// generation and corner rule of every grid search. Over the map's padded costs
/// ([`GridExpander::new`]) or any padded cost array with a ring of blocked cells, such as
/// one cluster's ([`GridExpander::over`]).
pub(crate) struct GridExpander<C = Cells> {
    offsets: [isize; 8],
    octile: bool,
    /// Every passable cell costs 1: steps cost [`crate::grid::UNIFORM_STEPS`].
    uniform: bool,
    /// Padded costs (ring of zeros), taken once per search.
    cells: C,
}

impl GridExpander {
    pub(crate) fn new(grid: &Grid) -> Self {
        GridExpander {
            uniform: grid.is_uniform(),
            ..GridExpander::over(grid.cells(), grid.padded_width(), grid.movement())
        }
    }
}

impl<C: std::ops::Deref<Target = [u8]>> GridExpander<C> {
    /// Expansion over `cells`, a padded cost array `pw` cells wide whose outer ring is 0.
    pub(crate) fn over(cells: C, pw: usize, movement: Movement) -> Self {
        let mut offsets = [0isize; 8];
        for (k, (dx, dy)) in crate::grid::DIRS.iter().enumerate() {
            offsets[k] = *dy as isize * pw as isize + *dx as isize;
        }
        GridExpander {
            offsets,
            octile: movement == Movement::Octile,
            uniform: false,
            cells,
        }
    }

    /// The padded costs this expander reads.
    #[inline]
    pub(crate) fn cells(&self) -> &[u8] {
        &self.cells
    }
}

impl<C: std::ops::Deref<Target = [u8]>> GridExpander<C> {
    /// The legal moves from `node` (reached with cost `g`) into `buf`, as
    /// `(neighbour, cost)`; returns how many.
    #[inline(always)]
    fn moves_into(&self, node: u32, g: f64, buf: &mut [(u32, f64); 8]) -> usize {
        let cells: &[u8] = &self.cells;
        let n = node as usize;
        if self.uniform {
            let step = |d: usize, _| UNIFORM_STEPS[d];
            moves_by(&self.offsets, self.octile, n, g, |m| cells[m], step, buf)
        } else {
            moves(
                &self.offsets,
                self.octile,
                n,
                cells[n],
                g,
                |m| cells[m],
                buf,
            )
        }
    }
}

impl<C: std::ops::Deref<Target = [u8]>> Expander for GridExpander<C> {
    const PARENT_G: bool = false;

    #[inline(always)]
    fn successors(
        &mut self,
        _grid: &Grid,
        node: u32,
        g: f64,
        _parent: Option<(u32, f64)>,
        out: &mut Vec<Succ>,
    ) {
        // Moves go to a local array first and into `out` in one pass: no capacity check per
        // push.
        let mut buf = [(0u32, 0.0f64); 8];
        let k = self.moves_into(node, g, &mut buf);
        out.extend(buf[..k].iter().map(|&(m, g)| Succ {
            node: m,
            g,
            parent: node,
        }));
    }

    #[inline(always)]
    fn each_successor(
        &mut self,
        _grid: &Grid,
        node: u32,
        g: f64,
        _parent: Option<(u32, f64)>,
        _buf: &mut Vec<Succ>,
        mut visit: impl FnMut(&mut Self, Succ),
    ) {
        let mut buf = [(0u32, 0.0f64); 8];
        let k = self.moves_into(node, g, &mut buf);
        for &(m, g) in &buf[..k] {
            visit(
                self,
                Succ {
                    node: m,
                    g,
                    parent: node,
                },
            );
        }
    }
}
