//! Incremental updates: the next version of an abstraction after a patch.

use crate::clock::Instant;
use std::sync::Arc;

use super::build::{self, Transition};
use super::local::Local;
use super::{Abstraction, UpdateReport};
use crate::grid::{Grid, Point};

impl Abstraction {
    /// The abstraction of `grid`, the map this one was built for after a patch changed the
    /// cells `changed` (as reported by [`Grid::apply_patch`]). Only the borders those cells
    /// lie on are rescanned and only clusters whose cells or border transitions changed are
    /// rebuilt; the rest is shared with `self`. Equals [`Abstraction::build_with`] on `grid`
    /// with the same configuration, provided `changed` lists every cell whose cost differs.
    pub fn update(&self, grid: &Grid, changed: &[Point]) -> Abstraction {
        self.update_with_report(grid, changed).0
    }

    /// [`Abstraction::update`], also saying how much was rebuilt.
    pub fn update_with_report(
        &self,
        grid: &Grid,
        changed: &[Point],
    ) -> (Abstraction, UpdateReport) {
        let started = Instant::now();
        let me = &*self.inner;
        let layout = me.layout;
        if !self.fits(grid) {
            let next = Self::build_with(grid, me.config);
            let report = UpdateReport {
                full_rebuild: true,
                borders_changed: layout.count(),
                clusters_rebuilt: next.inner.clusters.len(),
                elapsed: started.elapsed(),
            };
            return (next, report);
        }
        let n = layout.count();
        let mut dirty = vec![false; n];
        let mut owners = vec![false; n];
        for &p in changed.iter().filter(|p| grid.in_bounds(**p)) {
            let c = layout.cluster_of(p);
            dirty[c] = true;
            // The borders a cell of `c` can lie on: c's own east/south, its west
            // neighbour's east and its north neighbour's south.
            owners[c] = true;
            for side in [0, 3] {
                if let Some(o) = layout.neighbour(c, side) {
                    owners[o] = true;
                }
            }
        }
        let mut borders = me.borders.clone();
        let mut report = UpdateReport::default();
        for o in (0..n).filter(|&o| owners[o]) {
            let fresh = build::borders(grid, &layout, o, me.config.entrance_spacing);
            if fresh == *borders[o] {
                continue;
            }
            // A neighbour's nodes only depend on where the transitions are, not on the
            // step cost across.
            let moved = |a: &[Transition], b: &[Transition]| {
                a.len() != b.len() || a.iter().zip(b).any(|(x, y)| x.off != y.off)
            };
            if moved(&fresh.east, &borders[o].east) {
                report.borders_changed += 1;
                dirty[o] = true;
                dirty[o + 1] = true;
            }
            if moved(&fresh.south, &borders[o].south) {
                report.borders_changed += 1;
                dirty[o] = true;
                dirty[o + layout.ncx as usize] = true;
            }
            borders[o] = Arc::new(fresh);
        }
        let share = me.config.path_cache_bytes / n;
        let mut local = Local::default();
        let mut clusters = me.clusters.clone();
        for c in (0..n).filter(|&c| dirty[c]) {
            clusters[c] = Arc::new(build::cluster(
                grid, &layout, &borders, c, share, &mut local,
            ));
            report.clusters_rebuilt += 1;
        }
        let next = Self::assemble(me.config, layout, me.movement, borders, clusters, started);
        report.elapsed = started.elapsed();
        (next, report)
    }
}
