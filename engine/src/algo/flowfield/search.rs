//! The search behind a flow field: a Dijkstra from the goal over the region-local arrays,
//! and its repair after a patch (the module docs of [`super`] give the argument).

use std::cmp::Ordering;
use std::collections::HashMap;

use super::{AT_GOAL, FlowField, FlowStats, UNREACHABLE, agent_cost};
use crate::grid::{DIAG_SIDES, DIRS, Grid, Movement, Point, step_of};

/// Heap entry: smaller cost first, then smaller index (deterministic order).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Entry(f64, u32);

impl Eq for Entry {}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.total_cmp(&self.0).then(other.1.cmp(&self.1))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Scratch flag bits.
const TOUCHED: u8 = 1;
const IN_SUBTREE: u8 = 2;
const EFF_CHANGED: u8 = 4;

/// The direction index pointing back along `d`.
#[inline]
pub(super) fn opposite(d: usize) -> usize {
    if d < 4 { (d + 2) % 4 } else { 4 + (d - 2) % 4 }
}

impl FlowField {
    // ---- neighbourhood on the region-local arrays ----

    fn dirs(&self) -> usize {
        match self.movement {
            Movement::Octile => 8,
            Movement::Cardinal => 4,
        }
    }

    /// Region-local index of the neighbour of `i` in direction `d`, if inside the region.
    #[inline]
    fn neighbour(&self, i: usize, d: usize) -> Option<usize> {
        let w = self.region.width as i64;
        let (x, y) = ((i as i64) % w, (i as i64) / w);
        let (dx, dy) = DIRS[d];
        let (nx, ny) = (x + dx as i64, y + dy as i64);
        (nx >= 0 && ny >= 0 && nx < w && ny < self.region.height as i64)
            .then(|| (ny * w + nx) as usize)
    }

    /// Cost of the step from `i` in direction `d` under effective costs `e`, if legal.
    #[inline]
    fn step(&self, e: impl Fn(usize) -> u8, i: usize, d: usize) -> Option<f64> {
        let m = self.neighbour(i, d)?;
        let (a, b) = (e(i), e(m));
        if a == 0 || b == 0 {
            return None;
        }
        if d < 4 {
            return Some(step_of(d, a, b));
        }
        // The map's corner rule; region-local arrays have no padding ring, so sides outside
        // the region count as blocked.
        let (s1, s2) = DIAG_SIDES[d - 4];
        let open = |s| self.neighbour(i, s).is_some_and(|k| e(k) != 0);
        (open(s1) && open(s2)).then(|| step_of(d, a, b))
    }

    /// Sets `i`'s cost and direction, remembering its old ones first.
    #[inline]
    fn set(&mut self, i: usize, dist: f64, dir: u8) {
        self.touch(i);
        self.dist[i] = dist;
        self.dir[i] = dir;
    }

    #[inline]
    fn touch(&mut self, i: usize) {
        if self.flags[i] == 0 {
            self.touched.push((i as u32, self.dist[i], self.dir[i]));
        }
        self.flags[i] |= TOUCHED;
    }

    /// Runs Dijkstra from the heap's entries, accepting strict improvements within the bound.
    fn run(&mut self) {
        let eff = std::mem::take(&mut self.eff);
        let dirs = self.dirs();
        while let Some(Entry(g, node)) = self.heap.pop() {
            let i = node as usize;
            if g > self.dist[i] {
                continue; // stale entry
            }
            self.stats.expanded += 1;
            for d in 0..dirs {
                let Some(s) = self.step(|k| eff[k], i, d) else {
                    continue;
                };
                let m = self.neighbour(i, d).expect("legal step stays inside");
                let cand = g + s;
                if cand < self.dist[m] && cand <= self.max_cost {
                    self.set(m, cand, opposite(d) as u8);
                    self.heap.push(Entry(cand, m as u32));
                }
            }
        }
        self.eff = eff;
    }

    /// Clears the scratch flags (O(touched)).
    fn reset_scratch(&mut self) {
        for &(i, _, _) in &self.touched {
            self.flags[i as usize] = 0;
        }
        self.touched.clear();
        self.heap.clear();
    }

    /// Full Dijkstra from the goal.
    pub(super) fn compute_all(&mut self) {
        self.stats = FlowStats {
            full: true,
            ..FlowStats::default()
        };
        self.dist.fill(f64::INFINITY);
        self.dir.fill(UNREACHABLE);
        let g = self.region.index(self.goal);
        if self.eff[g] != 0 {
            self.dist[g] = 0.0;
            self.dir[g] = AT_GOAL;
            self.heap.push(Entry(0.0, g as u32));
            self.run();
        }
        self.reset_scratch();
    }

    /// Brings the field up to `grid`, a later version of the map it was computed on, after
    /// the cells `changed` (every cell written since the field's version; duplicates and
    /// cells outside the region are fine). Returns the region cells whose cost or direction
    /// changed, as points in row-major order.
    ///
    /// `grid` must have the same dimensions and movement rule as the field's map.
    pub fn update(&mut self, grid: &Grid, changed: &[Point]) -> Vec<Point> {
        self.stats = FlowStats::default();
        let k = self.size;
        // 1. Effective costs that changed, with their old values.
        let mut old_eff: HashMap<u32, u8> = HashMap::new();
        let mut effs: Vec<u32> = Vec::new();
        for &c in changed {
            let y0 = c.y.saturating_sub(k - 1);
            let x0 = c.x.saturating_sub(k - 1);
            for y in y0..=c.y {
                for x in x0..=c.x {
                    let p = Point::new(x, y);
                    if !self.region.contains(p) {
                        continue;
                    }
                    let i = self.region.index(p);
                    if self.flags[i] & EFF_CHANGED != 0 {
                        continue;
                    }
                    let e = agent_cost(grid, p, k);
                    if e != self.eff[i] {
                        self.touch(i);
                        self.flags[i] |= EFF_CHANGED;
                        old_eff.insert(i as u32, self.eff[i]);
                        self.eff[i] = e;
                        effs.push(i as u32);
                    }
                }
            }
        }
        if effs.is_empty() {
            self.reset_scratch();
            return Vec::new();
        }
        let goal = self.region.index(self.goal);
        if self.flags[goal] & EFF_CHANGED != 0 {
            let (old_dist, old_dir) = (self.dist.clone(), self.dir.clone());
            self.reset_scratch();
            self.compute_all();
            return (0..self.dist.len())
                .filter(|&i| {
                    self.dir[i] != old_dir[i] || self.dist[i].to_bits() != old_dist[i].to_bits()
                })
                .map(|i| self.region.point(i))
                .collect();
        }
        // 2. Roots: cells around a changed one whose tree edge changed.
        let dirs = self.dirs();
        let mut stack: Vec<usize> = Vec::new();
        {
            let eff = &self.eff;
            let new_e = |j: usize| eff[j];
            let old_e = |j: usize| old_eff.get(&(j as u32)).copied().unwrap_or(eff[j]);
            for &c in &effs {
                let c = c as usize;
                for d in 0..=8 {
                    let u = if d == 8 {
                        Some(c)
                    } else {
                        self.neighbour(c, d)
                    };
                    let Some(u) = u else { continue };
                    let t = self.dir[u];
                    if u == goal || t >= AT_GOAL {
                        continue;
                    }
                    let t = t as usize;
                    if self.step(old_e, u, t) != self.step(new_e, u, t) {
                        stack.push(u);
                    }
                }
            }
        }
        // 3. Their subtrees (children point at their parent), then invalidate them.
        let mut subtree: Vec<usize> = Vec::new();
        while let Some(u) = stack.pop() {
            if self.flags[u] & IN_SUBTREE != 0 {
                continue;
            }
            self.touch(u);
            self.flags[u] |= IN_SUBTREE;
            subtree.push(u);
            for d in 0..dirs {
                let Some(v) = self.neighbour(u, d) else {
                    continue;
                };
                if self.dir[v] as usize == opposite(d) && self.flags[v] & IN_SUBTREE == 0 {
                    stack.push(v);
                }
            }
        }
        for &u in &subtree {
            self.dist[u] = f64::INFINITY;
            self.dir[u] = UNREACHABLE;
        }
        self.stats.invalidated = subtree.len() as u64;
        // 4. Seeds: each invalidated cell's best step onto a valid neighbour...
        for &u in &subtree {
            let mut best = (f64::INFINITY, UNREACHABLE);
            for d in 0..dirs {
                let Some(s) = self.step(|j| self.eff[j], u, d) else {
                    continue;
                };
                let m = self.neighbour(u, d).expect("legal step stays inside");
                if self.flags[m] & IN_SUBTREE != 0 && self.dir[m] == UNREACHABLE {
                    continue;
                }
                let cand = self.dist[m] + s;
                if cand < best.0 {
                    best = (cand, d as u8);
                }
            }
            if best.0 <= self.max_cost {
                self.dist[u] = best.0;
                self.dir[u] = best.1;
                self.heap.push(Entry(best.0, u as u32));
            }
        }
        // ... and the valid cells around each changed one (cheaper edges).
        for &c in &effs {
            let c = c as usize;
            for d in 0..=8 {
                let u = if d == 8 {
                    Some(c)
                } else {
                    self.neighbour(c, d)
                };
                if let Some(u) = u
                    && self.flags[u] & IN_SUBTREE == 0
                    && self.dist[u].is_finite()
                {
                    self.heap.push(Entry(self.dist[u], u as u32));
                }
            }
        }
        // 5. Dijkstra from the seeds.
        self.run();
        // 6. Report what changed.
        let mut out: Vec<usize> = self
            .touched
            .iter()
            .filter(|&&(i, d, t)| {
                let i = i as usize;
                self.dir[i] != t || self.dist[i].to_bits() != d.to_bits()
            })
            .map(|&(i, _, _)| i as usize)
            .collect();
        out.sort_unstable();
        self.reset_scratch();
        out.into_iter().map(|i| self.region.point(i)).collect()
    }
}
