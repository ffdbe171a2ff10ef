//! Botea-style straightening of a refined cell path.
//!
//! Refined HPA* paths bend towards transition cells at every cluster border. From each path
//! cell we cast straight rays in the map's move directions (8, or 4 on cardinal maps); a ray
//! that meets the path further on, and costs less than the stretch of path it would replace,
//! replaces that stretch. We take the hit furthest along the path, jump there and continue,
//! so the pass is linear in the path length times the ray budget. A ray only takes legal
//! steps (no corner cutting), and a final pass cuts out any loop a ray may have closed, so the
//! result is legal and never costs more than the input.

use crate::grid::{Grid, Movement, SQRT2};
use crate::search::DIAG_SIDES;

/// Index lookup "where is this cell on the path", generation-stamped and sized to the map.
#[derive(Default)]
pub(super) struct Straightener {
    pos: Vec<u32>,
    stamp: Vec<u32>,
    generation: u32,
    prefix: Vec<f64>,
    out: Vec<u32>,
}

impl Straightener {
    fn begin(&mut self, len: usize) {
        if self.pos.len() < len {
            self.pos.resize(len, 0);
            self.stamp.resize(len, 0);
        }
        if self.generation >= u32::MAX - 4 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.generation = 0;
        }
        self.generation += 1;
    }

    /// Straightens `path` (padded cells, legal steps) in place, with rays of at most
    /// `max_ray` steps.
    pub(super) fn straighten(&mut self, grid: &Grid, path: &mut Vec<u32>, max_ray: u32) {
        if path.len() < 3 {
            return;
        }
        let cells = grid.cells();
        let off = grid.offsets();
        let pw = grid.padded_width() as i64;
        let dirs = if grid.movement() == Movement::Octile {
            8
        } else {
            4
        };
        let step_cost = |a: u32, b: u32| {
            let d = (b as i64 - a as i64).abs();
            let len = if d == 1 || d == pw { 1.0 } else { SQRT2 };
            len * (cells[a as usize] as f64 + cells[b as usize] as f64) * 0.5
        };

        // Where each cell sits on the path (its last occurrence), and prefix costs.
        self.begin(cells.len());
        let gen_ = self.generation;
        self.prefix.clear();
        self.prefix.push(0.0);
        for (i, &c) in path.iter().enumerate() {
            self.pos[c as usize] = i as u32;
            self.stamp[c as usize] = gen_;
            if i > 0 {
                let last = self.prefix[i - 1];
                self.prefix.push(last + step_cost(path[i - 1], c));
            }
        }

        self.out.clear();
        self.out.push(path[0]);
        let mut i = 0usize;
        while i + 1 < path.len() {
            let p = path[i];
            let mut best_j = i + 1;
            let mut best_ray = None;
            for k in 0..dirs {
                let mut cur = p as usize;
                let mut cost = 0.0;
                for len in 1..=max_ray {
                    let next = cur.wrapping_add_signed(off[k]);
                    if cells[next] == 0 {
                        break;
                    }
                    if k >= 4 {
                        let (a, b) = DIAG_SIDES[k - 4];
                        let side_a = cells[cur.wrapping_add_signed(off[a])];
                        let side_b = cells[cur.wrapping_add_signed(off[b])];
                        if side_a == 0 || side_b == 0 {
                            break;
                        }
                    }
                    cost += step_cost(cur as u32, next as u32);
                    cur = next;
                    if self.stamp[cur] != gen_ {
                        continue;
                    }
                    let j = self.pos[cur] as usize;
                    let stretch = self.prefix[j] - self.prefix[i];
                    if j > best_j && cost < stretch - 1e-9 * stretch {
                        best_j = j;
                        best_ray = Some((k, len));
                    }
                }
            }
            match best_ray {
                Some((k, len)) => {
                    let mut cur = p as usize;
                    for _ in 0..len {
                        cur = cur.wrapping_add_signed(off[k]);
                        self.out.push(cur as u32);
                    }
                }
                None => self.out.push(path[best_j]),
            }
            i = best_j;
        }

        // Cut loops: a cell seen twice means the stretch between is a detour.
        self.generation += 1;
        let gen_ = self.generation;
        path.clear();
        for &c in &self.out {
            let ci = c as usize;
            if self.stamp[ci] == gen_ {
                let keep = self.pos[ci] as usize + 1;
                for &gone in &path[keep..] {
                    self.stamp[gone as usize] = 0;
                }
                path.truncate(keep);
            } else {
                self.stamp[ci] = gen_;
                self.pos[ci] = path.len() as u32;
                path.push(c);
            }
        }
    }
}
