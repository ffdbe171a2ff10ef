//! Tests of [`Agent::touched_by`]: it may say yes too often, never too rarely.

use super::*;
use crate::grid::Movement;
use crate::patch::Patch;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// An agent of side `size` on `path` (no tree: `touched_by` reads the path only).
fn following(grid: &Grid, path: &[Point], size: u32) -> Agent {
    let mut agent = Agent {
        start: path[0],
        size,
        status: Status::Found,
        path: Vec::new(),
        cost: 0.0,
        bbox: None,
        tiles: Vec::new(),
        repaired: (Vec::new(), 0),
        repair_limits: Limits::default(),
    };
    agent.take_path(grid, path.to_vec());
    agent
}

/// Every step's cost, or `None` where the agent cannot take it.
fn step_costs(grid: &Grid, path: &[Point], size: u32) -> Vec<Option<f64>> {
    path.windows(2)
        .map(|w| agent_path_cost(grid, w, size))
        .collect()
}

/// `touched_by` may say yes too often, never too rarely: whenever walling a cell near
/// a random path (on a map wide enough for its tiles to matter) changes a step, it says
/// yes.
#[test]
fn touched_by_misses_no_changed_step() {
    let mut rng = StdRng::seed_from_u64(0x70c4);
    let (w, h) = (300, 300);
    let (mut hits, mut misses) = (0, 0);
    for case in 0..400 {
        let size = 1 + case % 3;
        let grid =
            Grid::from_costs(w, h, vec![1; (w * h) as usize], Movement::Octile).expect("valid map");
        // A random walk of legal steps, long enough to cross several tiles.
        let mut p = Point::new(rng.random_range(0..w - size), rng.random_range(0..h - size));
        let mut path = vec![p];
        for _ in 0..rng.random_range(0..400) {
            let (dx, dy) = (rng.random_range(-1i64..=1), rng.random_range(-1i64..=1));
            let (x, y) = (p.x as i64 + dx, p.y as i64 + dy);
            if (dx, dy) == (0, 0)
                || !(0..(w - size + 1) as i64).contains(&x)
                || !(0..(h - size + 1) as i64).contains(&y)
            {
                continue;
            }
            p = Point::new(x as u32, y as u32);
            path.push(p);
        }
        let agent = following(&grid, &path, size);
        let before = step_costs(&grid, &path, size);
        let at_edge: Vec<Point> = path
            .iter()
            .copied()
            .filter(|p| {
                [p.x, p.y]
                    .iter()
                    .any(|v| [0, 1, TILE - 1].contains(&(v % TILE)))
            })
            .collect();
        for _ in 0..20 {
            // A wall next to a path point (mostly one at a tile's edge), or anywhere.
            let near = if !at_edge.is_empty() && rng.random_bool(0.7) {
                at_edge[rng.random_range(0..at_edge.len())]
            } else {
                path[rng.random_range(0..path.len())]
            };
            let c = if rng.random_bool(0.8) {
                let dx = rng.random_range(-2i64..=size as i64 + 1);
                let dy = rng.random_range(-2i64..=size as i64 + 1);
                let (x, y) = (near.x as i64 + dx, near.y as i64 + dy);
                if !(0..w as i64).contains(&x) || !(0..h as i64).contains(&y) {
                    continue;
                }
                Point::new(x as u32, y as u32)
            } else {
                Point::new(rng.random_range(0..w), rng.random_range(0..h))
            };
            let patch = Patch {
                cells: vec![(c, 0)],
                rects: vec![],
            };
            let (next, changed) = grid.apply_patch(&patch).unwrap().unwrap();
            let altered = step_costs(&next, &path, size) != before
                || path.len() == 1 && !next.clearance().fits(path[0], size);
            if altered {
                hits += 1;
                assert!(
                    agent.touched_by(&changed),
                    "case {case}: size {size}, wall at {c} changes a step of {path:?}"
                );
            } else if !agent.touched_by(&changed) {
                misses += 1;
            }
        }
    }
    // The test reaches both answers.
    assert!(
        hits > 1000 && misses > 1000,
        "{hits} changed, {misses} untouched"
    );
}

/// Every one-step path around a tile corner, every wall near it: the case random walks
/// rarely hit (a diagonal across the corner whose side cell lies in a third tile).
#[test]
fn touched_by_sees_walls_across_tile_corners() {
    let (w, h) = (TILE + 8, TILE + 8);
    let grid =
        Grid::from_costs(w, h, vec![1; (w * h) as usize], Movement::Octile).expect("valid map");
    let t = TILE as i64;
    let mut blocked = 0;
    for size in 1..=2u32 {
        for ax in t - 2..=t + 1 {
            for ay in t - 2..=t + 1 {
                for (dx, dy) in crate::grid::DIRS {
                    let (bx, by) = (ax + dx as i64, ay + dy as i64);
                    let a = Point::new(ax as u32, ay as u32);
                    let b = Point::new(bx as u32, by as u32);
                    let path = vec![a, b];
                    let agent = following(&grid, &path, size);
                    for cx in ax - 2..=ax + size as i64 + 1 {
                        for cy in ay - 2..=ay + size as i64 + 1 {
                            let c = Point::new(cx as u32, cy as u32);
                            let patch = Patch {
                                cells: vec![(c, 0)],
                                rects: vec![],
                            };
                            let (next, changed) = grid.apply_patch(&patch).unwrap().unwrap();
                            if agent_path_cost(&next, &path, size).is_none() {
                                blocked += 1;
                                assert!(
                                    agent.touched_by(&changed),
                                    "size {size}: a wall at {c} blocks {a} -> {b}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(blocked > 500, "{blocked}");
}
