//! The core on its own, with the two users' kinds of keys and stop conditions: after every
//! patch of a random sequence, `g` equals a reference Dijkstra's cost to the root wherever
//! the stop condition promises it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::patch::Patch;

/// Keys without a heuristic (the goal trees').
struct Flat;

impl Keys for Flat {
    fn key(&self, _: u32, node: Node) -> Key {
        Key {
            k1: node.min(),
            k2: node.min(),
        }
    }
}

/// Keys with the octile distance to `from` (an admissible heuristic on costs >= 1), as D*
/// Lite's with `km = 0`.
struct Towards {
    from: Point,
    pw: usize,
    movement: Movement,
}

impl Keys for Towards {
    fn key(&self, n: u32, node: Node) -> Key {
        let (x, y) = (n as usize % self.pw, n as usize / self.pw);
        let dx = x.abs_diff(self.from.x as usize + 1) as f64;
        let dy = y.abs_diff(self.from.y as usize + 1) as f64;
        let h = crate::grid::distance(self.movement, dx, dy);
        Key {
            k1: node.min() + h,
            k2: node.min(),
        }
    }
}

/// Cost to `root` of every padded id (infinity where unreachable): Dijkstra over the same
/// moves (the step costs are symmetric).
fn dijkstra(grid: &Grid, lpa: &Lpa, root: Point) -> Vec<f64> {
    let flat = grid.cells();
    let cells = &lpa.view(grid, &flat);
    let mut dist = vec![INF; flat.len()];
    let mut heap = BinaryHeap::new();
    let r = grid.pidx(root);
    dist[r] = 0.0;
    heap.push(Reverse((0u64, r as u32)));
    let mut nb = [(0u32, 0.0f64); 8];
    while let Some(Reverse((d, u))) = heap.pop() {
        let d = f64::from_bits(d);
        if d > dist[u as usize] {
            continue;
        }
        let k = lpa.neighbours(cells, u, &mut nb);
        for &(s, c) in &nb[..k] {
            if d + c < dist[s as usize] {
                dist[s as usize] = d + c;
                heap.push(Reverse(((d + c).to_bits(), s)));
            }
        }
    }
    dist
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * (1.0 + a.abs())
}

fn random_grid(rng: &mut StdRng, movement: Movement) -> Grid {
    let (w, h) = (rng.random_range(4..18), rng.random_range(4..18));
    let costs = (0..w * h)
        .map(|_| {
            if rng.random_bool(0.2) {
                0
            } else {
                rng.random_range(1..5)
            }
        })
        .collect();
    Grid::from_costs(w, h, costs, movement).expect("valid map")
}

/// A random patch of a few cells (walls, openings, new costs) that leaves `keep` passable.
fn random_patch(rng: &mut StdRng, grid: &Grid, keep: &[Point]) -> Option<(Grid, Vec<Point>)> {
    let cells = (0..rng.random_range(1..5))
        .map(|_| {
            let p = Point::new(
                rng.random_range(0..grid.width()),
                rng.random_range(0..grid.height()),
            );
            let cost = if rng.random_bool(0.4) {
                0
            } else {
                rng.random_range(1..5)
            };
            (p, cost)
        })
        .filter(|(p, _)| !keep.contains(p))
        .collect();
    let patch = Patch {
        cells,
        rects: vec![],
    };
    grid.apply_patch(&patch).expect("valid patch")
}

/// Runs the whole tree (no stop) after every patch: every vertex holds its exact cost.
#[test]
fn full_runs_match_dijkstra_through_patches() {
    let mut rng = StdRng::seed_from_u64(0x1fa);
    for case in 0..60 {
        let movement = [Movement::Cardinal, Movement::Octile][case % 2];
        let mut grid = random_grid(&mut rng, movement);
        let root = Point::new(0, 0);
        if let Ok(Some((g, _))) = grid.apply_patch(&Patch {
            cells: vec![(root, 1)],
            rects: vec![],
        }) {
            grid = g;
        }
        let mut lpa = Lpa::new(&grid, root, 1, &Flat);
        for step in 0..12 {
            let mut stats = Stats::default();
            let run = lpa.compute(&grid, &Flat, &Limits::default(), |_, _| false, &mut stats);
            assert_eq!(run, Run::Done);
            assert!(lpa.top_key().is_none(), "case {case}: the queue ran empty");
            let want = dijkstra(&grid, &lpa, root);
            for (i, &d) in want.iter().enumerate() {
                let g = lpa.g(i as u32);
                assert!(
                    close(g, d),
                    "case {case} step {step}: cell {i}: g {g}, want {d}"
                );
            }
            if let Some((next, changed)) = random_patch(&mut rng, &grid, &[root]) {
                grid = next;
                lpa.patch(&grid, &changed, &Flat, &mut stats);
            }
        }
    }
}

/// D* Lite's kind of run: keys with a heuristic towards a start, stopped once the start is
/// consistent and no key is below it, sometimes interrupted by an expansion limit and
/// resumed: the start's `g` is its exact cost, and the descent from it costs that.
#[test]
fn start_stop_matches_dijkstra_through_patches_and_limits() {
    let mut rng = StdRng::seed_from_u64(0xd5);
    let (mut checked, mut limited) = (0, 0);
    for case in 0..80 {
        let movement = [Movement::Cardinal, Movement::Octile][case % 2];
        let grid0 = random_grid(&mut rng, movement);
        let (root, start) = (
            Point::new(0, 0),
            Point::new(grid0.width() - 1, grid0.height() - 1),
        );
        let patch = Patch {
            cells: vec![(root, 1), (start, 1)],
            rects: vec![],
        };
        let mut grid = match grid0.apply_patch(&patch).expect("valid patch") {
            Some((g, _)) => g,
            None => grid0,
        };
        let keys = Towards {
            from: start,
            pw: grid.padded_width(),
            movement,
        };
        let s = grid.pidx(start) as u32;
        let mut lpa = Lpa::new(&grid, root, 1, &keys);
        for step in 0..12 {
            let limits = Limits {
                max_expansions: Some(rng.random_range(1..40)),
                ..Limits::default()
            };
            let stop = |core: &Lpa, top: Key| {
                let st = core.node(s);
                st.consistent() && above(top.k1, st.g)
            };
            let mut stats = Stats::default();
            while lpa.compute(&grid, &keys, &limits, stop, &mut stats) == Run::Limit {
                limited += 1;
                stats = Stats::default();
            }
            let want = dijkstra(&grid, &lpa, root)[s as usize];
            let g = lpa.g(s);
            assert!(
                close(g, want),
                "case {case} step {step}: g {g}, want {want}"
            );
            if want.is_finite() {
                let path = lpa.descend(&grid, s, "test");
                let cost = grid.path_cost(&path).expect("a legal path");
                assert!(
                    close(cost, want),
                    "case {case} step {step}: {cost} != {want}"
                );
                checked += 1;
            }
            if let Some((next, changed)) = random_patch(&mut rng, &grid, &[root, start]) {
                grid = next;
                lpa.patch(&grid, &changed, &keys, &mut Stats::default());
            }
        }
    }
    assert!(
        checked > 300 && limited > 100,
        "{checked} paths, {limited} limits"
    );
}

/// The goal trees' kind of run: stopped at a cost floor; every vertex whose true cost is
/// below the smallest key left holds it, and raising the floor extends the tree.
#[test]
fn floor_stop_settles_everything_below_the_bound() {
    let mut rng = StdRng::seed_from_u64(0x9a7);
    for case in 0..60 {
        let movement = [Movement::Cardinal, Movement::Octile][case % 2];
        let mut grid = random_grid(&mut rng, movement);
        let root = Point::new(1, 1);
        if let Ok(Some((g, _))) = grid.apply_patch(&Patch {
            cells: vec![(root, 1)],
            rects: vec![],
        }) {
            grid = g;
        }
        let mut lpa = Lpa::new(&grid, root, 1, &Flat);
        for step in 0..12 {
            let floor = rng.random_range(0.0..20.0);
            let stop = |_: &Lpa, top: Key| above(top.k1, floor);
            let mut stats = Stats::default();
            lpa.compute(&grid, &Flat, &Limits::default(), stop, &mut stats);
            let bound = lpa.top_key().map_or(INF, |k| k.k1);
            assert!(
                bound >= floor,
                "case {case} step {step}: bound {bound} < {floor}"
            );
            let want = dijkstra(&grid, &lpa, root);
            for (i, &d) in want.iter().enumerate() {
                if d < bound {
                    let g = lpa.g(i as u32);
                    assert!(close(g, d), "case {case} step {step}: cell {i}: {g} != {d}");
                }
            }
            if let Some((next, changed)) = random_patch(&mut rng, &grid, &[root]) {
                grid = next;
                lpa.patch(&grid, &changed, &Flat, &mut stats);
            }
        }
    }
}
