//! Connected components of passable cells, labelled once and then repaired patch by patch.
//!
//! Components are 4-connected regions (exact for both movement rules, see
//! [`crate::Grid::same_component`]). A fresh labelling costs a pass over the whole map, which a
//! one-cell patch on a 4096x4096 map cannot afford, so a patched grid repairs its
//! predecessor's labels from the changed cells only:
//!
//! - **Cells becoming blocked** are taken away one cluster (4-connected group of such cells)
//!   at a time. Only a component that lost cells can split, and every piece it splits into
//!   touches the removed cluster, so the cluster's open neighbours ("seeds") are all that
//!   needs checking. First locally: are the seeds of each component connected within the
//!   cluster's bounding box plus a margin of two cells? (Almost always, for a small patch.)
//!   If not, a breadth-first search runs from every group of seeds, interleaved one cell at a
//!   time; groups that meet merge; once at most one group is still growing, every exhausted
//!   group is a complete piece and gets a fresh label. The cost is proportional to the smaller
//!   pieces, never to the component that keeps its label.
//! - **Cells becoming passable** are added one cluster at a time. The cluster joins the
//!   components around it: with none it is a new component; with one it takes its label;
//!   with several they merge, by relabelling all but the largest (found by the same
//!   interleaved search, so its cost is the smaller sides). When two sides are both large the
//!   smaller one is not relabelled cell by cell but *aliased*: a small table maps raw labels to
//!   canonical ones.
//!
//! Labels live in copy-on-write tiles ([`crate::tiles`]), like the costs. A repair whose
//! search work grows past a budget proportional to the map gives up and the caller relabels
//! from scratch, so a patch never costs much more than a fresh labelling.

mod repair;

use std::hash::Hasher;
use std::sync::Arc;

use crate::grid::NO_COMPONENT;
use crate::tiles::Tiles;

/// A multiply-shift hasher for cell indices: the standard SipHash costs more than the
/// searches' work per cell.
#[derive(Default, Clone, Copy)]
pub(crate) struct CellHasher(u64);

impl Hasher for CellHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (n as u64 ^ self.0).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Component labels of one grid version (see the module docs).
#[derive(Clone)]
pub(crate) struct Components {
    /// Raw label per cell, [`NO_COMPONENT`] for blocked cells.
    labels: Tiles<u32>,
    /// Raw label -> canonical label, for raw labels below its length (identity above).
    /// Always fully resolved: a canonical label maps to itself.
    alias: Arc<Vec<u32>>,
    count: u32,
    /// Next fresh raw label; never below `alias.len()`.
    next: u32,
}

impl Components {
    /// Labels every component of a padded cost array (`(width + 2) x (height + 2)`, border
    /// blocked) from scratch.
    pub(crate) fn label_all(width: u32, height: u32, padded: &[u8]) -> Self {
        let (w, h) = (width as usize, height as usize);
        let pw = w + 2;
        let mut labels = vec![NO_COMPONENT; w * h];
        // Row-major index of an interior padded index.
        let at = |i: usize| (i / pw - 1) * w + i % pw - 1;
        let mut stack = Vec::new();
        let mut next = 0u32;
        for y in 0..h {
            for x in 0..w {
                let i = (y + 1) * pw + x + 1;
                if padded[i] == 0 || labels[y * w + x] != NO_COMPONENT {
                    continue;
                }
                labels[y * w + x] = next;
                stack.push(i);
                while let Some(c) = stack.pop() {
                    for n in [c - pw, c + 1, c + pw, c - 1] {
                        if padded[n] != 0 && labels[at(n)] == NO_COMPONENT {
                            labels[at(n)] = next;
                            stack.push(n);
                        }
                    }
                }
                next += 1;
            }
        }
        Components {
            labels: Tiles::from_rows(width, height, &labels, NO_COMPONENT),
            alias: Arc::new(Vec::new()),
            count: next,
            next,
        }
    }

    /// Number of components.
    #[inline]
    /// No labelling at all: every cell reads as blocked (a terrain raster's, which nobody
    /// searches; see [`crate::Grid::raster`]). Costs one shared tile.
    pub(crate) fn none(width: u32, height: u32) -> Self {
        Components {
            labels: Tiles::filled(width, height, NO_COMPONENT),
            alias: Arc::new(Vec::new()),
            count: 0,
            next: 0,
        }
    }

    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// Canonical label of `(x, y)`, [`NO_COMPONENT`] when blocked.
    #[inline]
    pub(crate) fn label(&self, x: u32, y: u32) -> u32 {
        let raw = self.labels.get(x, y);
        match self.alias.get(raw as usize) {
            Some(&c) => c,
            None => raw,
        }
    }
}
