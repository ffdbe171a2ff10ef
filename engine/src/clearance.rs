//! True clearance (as in Harabor and Botea's HAA*): for each cell, the side of the largest
//! all-passable square anchored at it (its top-left corner), capped at
//! [`crate::MAX_AGENT_SIZE`].
//!
//! A `k x k` agent anchored at `p` fits exactly when `clearance(p) >= k`, so "the agent may
//! stand at `p`" is one comparison, and a search for a `k x k` agent is the ordinary search on
//! the map *eroded* for that footprint (anchors with clearance below `k` count as walls).
//!
//! # Why it is cheap to keep current
//!
//! `clearance(x, y) = 0` on a wall, else `1 + min(clearance(x+1, y), clearance(x, y+1),
//! clearance(x+1, y+1))` (off the map counts as a wall). A cell's value depends only on the
//! cells right of and below it, and with the cap `C` only on the `C x C` square it anchors,
//! so a written cell can change only the cells up to `C - 1` up and left of it. A grid
//! version derives its annotation from its predecessor's by recomputing those windows in
//! bottom-right to top-left order: `O(C^2)` per written cell, never `O(map)`. The values
//! live in the same copy-on-write tiles as the costs, so the new version shares every tile
//! the patch did not reach.
//!
//! The annotation is made on the first sized query of a version (most maps never see one):
//! from the predecessor's when that one exists, else from scratch.

use crate::algo::flowfield::MAX_AGENT_SIZE;
use crate::grid::{ChangeList, Grid, Point};
use crate::tiles::Tiles;

/// Largest stored value: agents are at most this wide, so larger squares need not be told
/// apart (and the cap bounds how far a write reaches).
const CAP: u32 = MAX_AGENT_SIZE;

/// A map version's clearance values (see the module docs).
#[derive(Clone)]
pub struct Clearance {
    values: Tiles<u8>,
}

impl std::fmt::Debug for Clearance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clearance")
            .field("width", &self.values.width())
            .field("height", &self.values.height())
            .finish()
    }
}

/// The clearance of `(x, y)` given the values right of and below it (`get`, 0 off the map).
#[inline]
fn value(grid: &Grid, x: u32, y: u32, get: impl Fn(u32, u32) -> u8) -> u8 {
    if grid.cost(Point::new(x, y)) == 0 {
        return 0;
    }
    let m = get(x + 1, y).min(get(x, y + 1)).min(get(x + 1, y + 1));
    (1 + m as u32).min(CAP) as u8
}

impl Clearance {
    /// Computes every cell's clearance (`O(cells)`).
    pub fn build(grid: &Grid) -> Self {
        let (w, h) = (grid.width() as usize, grid.height() as usize);
        let mut vals = vec![0u8; w * h];
        for y in (0..h).rev() {
            for x in (0..w).rev() {
                let get = |a: u32, b: u32| {
                    if (a as usize) < w && (b as usize) < h {
                        vals[b as usize * w + a as usize]
                    } else {
                        0
                    }
                };
                let v = value(grid, x as u32, y as u32, get);
                vals[y * w + x] = v;
            }
        }
        Clearance {
            values: Tiles::from_rows(w as u32, h as u32, &vals, 0),
        }
    }

    /// This annotation brought up to `grid`, a later version after the cells in `changes`
    /// were written (see the module docs).
    pub(crate) fn derive(&self, grid: &Grid, changes: &ChangeList) -> Self {
        let mut window: Vec<(u32, u32)> = Vec::with_capacity(changes.total() * 4);
        changes.for_each(|p| {
            for y in p.y.saturating_sub(CAP - 1)..=p.y {
                for x in p.x.saturating_sub(CAP - 1)..=p.x {
                    window.push((y, x));
                }
            }
        });
        // Bottom-right first: a cell reads only cells after it in this order or outside
        // every window (those are unchanged).
        window.sort_unstable_by(|a, b| b.cmp(a));
        window.dedup();
        let mut values = self.values.clone();
        let (w, h) = (grid.width(), grid.height());
        for (y, x) in window {
            let v = {
                let get = |a: u32, b: u32| if a < w && b < h { values.get(a, b) } else { 0 };
                value(grid, x, y, get)
            };
            values.set(x, y, v);
        }
        Clearance { values }
    }

    /// The clearance at `p` (0 on walls and off the map).
    pub fn at(&self, p: Point) -> u32 {
        if p.x < self.values.width() && p.y < self.values.height() {
            self.values.get(p.x, p.y) as u32
        } else {
            0
        }
    }

    /// Whether a `size x size` agent anchored at `p` stands on passable cells only.
    pub fn fits(&self, p: Point, size: u32) -> bool {
        self.at(p) >= size.max(1)
    }
}
