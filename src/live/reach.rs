//! Which members of a goal group a patch can reach: an index of their paths by tile.
//!
//! # What is indexed, and why it is exact
//!
//! After a *raise-only* patch (walls, dearer cells) a member whose path no changed cell can
//! alter keeps that path: it costs the same and every other path costs at least as much as
//! before ([`pathd_engine::GoalTree`]'s module docs). A step `a -> b` of a path reads the
//! cells of its box (`a`, `b` and the two corners beside a diagonal), widened by the
//! footprint `k = size - 1` for a larger agent; so a changed cell `c` can only alter a step
//! one of whose points `p` has `c.x - k - 1 <= p.x <= c.x + 1` and the same for `y` (the
//! engine's `Agent::touched_by` works from the same bound). The index keeps every point of
//! every member's current path under its [`TILE`]x[`TILE`] tile; [`PathIndex::reached`]
//! probes the tiles of that window around each changed cell. It may name a member whose
//! steps the patch misses (same tile, not the same step; the agent's own check then answers
//! "unchanged" without searching), never leave out one whose step it alters.
//!
//! Members without a path (no path, a limit, interrupted) are kept apart and reached by
//! every patch: their answer comes from the tree, which any patch may change.
//!
//! After a *lowering* patch (a cheaper or opened cell) the index is not used: a cost
//! decrease anywhere the tree has explored can shorten any member's path, so every member of
//! a group whose region holds a changed cell is reached (the hub's bucket index finds those
//! groups).
//!
//! The index is updated by the worker draining the group, after each join, move and repair
//! of a member, under the group's `paths` lock; a patch reads it on the write's path. While
//! a group is being drained the paths may be in flux: the count a patch answers with is then
//! the members' as of that moment, and the worker, which reads the index when it takes the
//! patch, is exact.

use std::collections::HashMap;
use std::sync::Arc;

use pathd_engine::Point;

use super::Sub;

/// Side of a path tile in cells: small enough that paths a few cells apart seldom share
/// one, large enough that a path of a few hundred cells spans a few dozen.
pub(super) const TILE: u32 = 8;

/// A tile's column and row.
pub(super) type Tile = (u32, u32);

/// The members of one group by the tiles their paths pass (see module docs).
#[derive(Default)]
pub(super) struct PathIndex {
    /// Tile -> members with a path point in it.
    tiles: HashMap<Tile, Vec<Arc<Sub>>>,
    /// Member id -> the tiles it is listed under (to take it out again).
    of: HashMap<String, Vec<Tile>>,
    /// Members without a path, by id: every patch reaches them.
    pathless: HashMap<String, Arc<Sub>>,
}

impl PathIndex {
    /// Lists `sub` under its current path (`None`: it has none), replacing what it was
    /// listed under before.
    pub fn set(&mut self, sub: &Arc<Sub>, path: Option<&[Point]>) {
        self.remove(sub);
        let Some(path) = path.filter(|p| !p.is_empty()) else {
            self.pathless.insert(sub.id.clone(), Arc::clone(sub));
            return;
        };
        let mut tiles: Vec<Tile> = path.iter().map(|p| (p.x / TILE, p.y / TILE)).collect();
        tiles.sort_unstable();
        tiles.dedup();
        for &t in &tiles {
            self.tiles.entry(t).or_default().push(Arc::clone(sub));
        }
        self.of.insert(sub.id.clone(), tiles);
    }

    /// [`Self::set`], only when `sub` is listed: a member that left meanwhile (its repair
    /// was running when it was deleted) is not listed again.
    pub fn update(&mut self, sub: &Arc<Sub>, path: Option<&[Point]>) {
        if self.of.contains_key(&sub.id) || self.pathless.contains_key(&sub.id) {
            self.set(sub, path);
        }
    }

    /// Takes `sub` out of the index.
    pub fn remove(&mut self, sub: &Arc<Sub>) {
        if let Some(tiles) = self.of.remove(&sub.id) {
            for t in tiles {
                if let Some(list) = self.tiles.get_mut(&t) {
                    list.retain(|s| !Arc::ptr_eq(s, sub));
                    if list.is_empty() {
                        self.tiles.remove(&t);
                    }
                }
            }
        }
        self.pathless.remove(&sub.id);
    }

    /// Forgets every member.
    pub fn clear(&mut self) {
        *self = PathIndex::default();
    }

    /// The tiles a raise-only patch of `changed` is probed under, for agents of side `size`
    /// (sorted, each once; see module docs).
    pub fn probe(changed: &[Point], size: u32) -> Vec<Tile> {
        let k = size.saturating_sub(1);
        let mut probed: Vec<Tile> = Vec::new();
        for c in changed {
            let (x0, y0) = (
                c.x.saturating_sub(k + 1) / TILE,
                c.y.saturating_sub(k + 1) / TILE,
            );
            let (x1, y1) = ((c.x + 1) / TILE, (c.y + 1) / TILE);
            for ty in y0..=y1 {
                for tx in x0..=x1 {
                    probed.push((tx, ty));
                }
            }
        }
        probed.sort_unstable();
        probed.dedup();
        probed
    }

    /// The members a raise-only patch probed under `probe` ([`Self::probe`]) can reach, each
    /// once, in no particular order. Costs the tiles probed plus the members found.
    pub fn reached(&self, probe: &[Tile]) -> Vec<Arc<Sub>> {
        let mut out: Vec<Arc<Sub>> = self.pathless.values().cloned().collect();
        for t in probe {
            if let Some(list) = self.tiles.get(t) {
                out.extend(list.iter().cloned());
            }
        }
        out.sort_unstable_by_key(|s| Arc::as_ptr(s) as usize);
        out.dedup_by(|a, b| Arc::ptr_eq(a, b));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Every changed cell that lies in the box a step reads (its two points and the corners
    /// beside a diagonal, widened by the footprint) has one of the step's points under a
    /// probed tile: the index never leaves out a member whose step the patch alters.
    #[test]
    fn the_probe_covers_every_step_a_changed_cell_can_alter() {
        let mut rng = StdRng::seed_from_u64(0x7e11);
        for _ in 0..20_000 {
            let size = rng.random_range(1..=3u32);
            let k = size - 1;
            let a = Point::new(rng.random_range(1..60), rng.random_range(1..60));
            let (dx, dy) = (rng.random_range(-1i64..=1), rng.random_range(-1i64..=1));
            let b = Point::new((a.x as i64 + dx) as u32, (a.y as i64 + dy) as u32);
            let (lo, hi) = (
                Point::new(a.x.min(b.x), a.y.min(b.y)),
                Point::new(a.x.max(b.x) + k, a.y.max(b.y) + k),
            );
            let c = Point::new(rng.random_range(lo.x..=hi.x), rng.random_range(lo.y..=hi.y));
            let probe = PathIndex::probe(&[c], size);
            let tile = |p: Point| (p.x / TILE, p.y / TILE);
            assert!(
                probe.binary_search(&tile(a)).is_ok() || probe.binary_search(&tile(b)).is_ok(),
                "step {a} -> {b} (size {size}) reads {c}, but neither point's tile is probed"
            );
        }
    }
}
