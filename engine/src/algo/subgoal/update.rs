//! The subgoal graph of a patched map version, from its predecessor's.
//!
//! A scan's result depends only on the state (open, blocked, subgoal) of the cells in the
//! box it read ([`super::reach::scan`]): the rays, the cells beside each diagonal step and
//! each ray's end all lie in it. A patch changes the state only of the changed cells and of
//! the subgoals within one step of them ([`Placement::update`]), so every subgoal whose box
//! holds none of those cells keeps its scan, and only the others are scanned again (and the
//! new subgoals for the first time). The subgoals are taken in row-major order, the edges
//! rebuilt from the scans and the hierarchy contracted anew, which numbers the nodes by
//! its contraction order (as [`SubgoalGraph::build`] does, so both give the same graph).

#[cfg(doc)]
use super::place::Placement;
use super::{NONE, SubgoalGraph, scan_of};
use crate::grid::{Grid, Point};

impl SubgoalGraph {
    /// The graph of `grid`, a later version of the map this graph was built for whose cells
    /// differ from it at most at `changed` (duplicates allowed). Equal to
    /// [`SubgoalGraph::build`]`(grid)`; rescans only what the patch can change (module
    /// docs), or builds anew when more than [`super::LOCAL_PATCH`] cells changed.
    ///
    /// ```
    /// use pathd_engine::{Grid, Movement, Patch, Point, SubgoalGraph};
    /// let grid = Grid::from_costs(8, 8, vec![1; 64], Movement::Octile).unwrap();
    /// let graph = SubgoalGraph::build(&grid).unwrap();
    /// let patch = Patch { cells: vec![(Point::new(3, 4), 0)], rects: vec![] };
    /// let (next, changed) = grid.apply_patch(&patch).unwrap().unwrap();
    /// let updated = graph.update(&next, &changed);
    /// assert_eq!(updated, SubgoalGraph::build(&next).unwrap());
    /// assert_eq!(updated.subgoals(), 4);
    /// ```
    pub fn update(&self, grid: &Grid, changed: &[Point]) -> SubgoalGraph {
        assert!(
            self.fits(grid),
            "a subgoal graph updates only for its own map"
        );
        if changed.len() > super::LOCAL_PATCH {
            return SubgoalGraph::build(grid).expect("an octile map");
        }
        let padded: Vec<(usize, usize)> = changed
            .iter()
            .map(|p| (p.x as usize + 1, p.y as usize + 1))
            .collect();
        let (place, moved) = self.place.update(grid, &padded);
        if moved.is_empty() {
            return self.clone();
        }
        let pw = place.pw;
        let xy = |c: usize| (c % pw, c / pw);
        let (mut lo, mut hi) = ((usize::MAX, usize::MAX), (0, 0));
        for (x, y) in moved.iter().map(|&c| xy(c)) {
            lo = (lo.0.min(x), lo.1.min(y));
            hi = (hi.0.max(x), hi.1.max(y));
        }
        // The new subgoals: the old ones, less those that moved away, plus those that came.
        let mut cells: Vec<u32> = self
            .cells
            .iter()
            .copied()
            .filter(|&c| moved.binary_search(&(c as usize)).is_err())
            .chain(
                moved
                    .iter()
                    .filter(|&&c| place.is_subgoal(c % pw, c / pw))
                    .map(|&c| c as u32),
            )
            .collect();
        cells.sort_unstable();
        let touched = |b: &[u16; 4]| {
            let (x0, y0, x1, y1) = (b[0] as usize, b[1] as usize, b[2] as usize, b[3] as usize);
            x0 <= hi.0
                && lo.0 <= x1
                && y0 <= hi.1
                && lo.1 <= y1
                && moved.iter().any(|&c| {
                    let (x, y) = xy(c);
                    (x0..=x1).contains(&x) && (y0..=y1).contains(&y)
                })
        };
        let scans = cells
            .iter()
            .map(|&c| {
                let old = self.node_of[c as usize];
                match old {
                    NONE => scan_of(&place, c as usize),
                    v if touched(&self.scans[v as usize].1) => scan_of(&place, c as usize),
                    v => self.scans[v as usize].clone(),
                }
            })
            .collect();
        let budget = super::contract::work_budget(cells.len());
        Self::assemble(grid, place, cells, scans, budget)
    }
}
