//! D* Lite repair against fresh A*: a seeded differential test (random weighted maps, both
//! movement rules, random patches and agent moves, compared after every step) and the
//! classic failure cases of D* Lite implementations, each by name.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::{
    check_path, load_map, load_scen, matches_optimal, random_grid, random_passable, show,
};
use pathd_engine::{
    Change, DStarLite, Grid, Interest, Limits, Movement, Patch, Point, Query, QueryError, Rect,
    RepairOutcome, Stats, Status, find_path,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Fresh A* on `grid`: `Some((cost, path))`, or `None` for no path (a blocked start or goal
/// is an error for A* and "no path" for a repaired search).
fn fresh(grid: &Grid, start: Point, goal: Point) -> Option<(f64, Vec<Point>)> {
    match find_path(grid, &Query::new(start, goal)) {
        Ok(r) if r.status == Status::Found => Some((r.cost, r.path)),
        Ok(r) => {
            assert_eq!(r.status, Status::NoPath);
            None
        }
        Err(QueryError::StartBlocked(_) | QueryError::GoalBlocked(_)) => None,
        Err(e) => panic!("A* failed: {e}"),
    }
}

/// Asserts the search answers like a fresh A*: same found/no-path, cost within 1e-9
/// relative, a legal path from the current start to the goal.
fn check(d: &DStarLite, grid: &Grid, log: &[String]) {
    let (start, goal) = (d.start(), d.goal());
    let want = fresh(grid, start, goal);
    let ours = d.path();
    let fail = |why: &str| -> ! {
        let astar = want.as_ref().map_or(&[][..], |w| &w.1[..]);
        let mine = ours.map_or(&[][..], |o| o.0);
        panic!(
            "{why}\nA*: {:?}\nD* Lite: {:?} {:?}\nsteps:\n  {}\nA* path:\n{}D* Lite path:\n{}",
            want.as_ref().map(|w| w.0),
            d.status(),
            ours.map(|o| o.1),
            log.join("\n  "),
            show(grid, start, goal, astar),
            show(grid, start, goal, mine),
        )
    };
    match (&want, ours) {
        (None, None) => assert_eq!(d.status(), Status::NoPath),
        (Some((cost, _)), Some((path, c))) => {
            if (c - cost).abs() > 1e-9 * cost.max(1.0) {
                fail("cost differs from fresh A*");
            }
            if let Err(e) = check_path(grid, path, start, goal, c) {
                fail(&format!("illegal path: {e}"));
            }
        }
        _ => fail("found/no-path differs from fresh A*"),
    }
}

fn apply(grid: &Grid, patch: Patch) -> Option<(Grid, Vec<Point>)> {
    grid.apply_patch(&patch).expect("patch fits the map")
}

fn cells(list: &[(u32, u32, u8)]) -> Patch {
    Patch {
        cells: list
            .iter()
            .map(|&(x, y, c)| (Point::new(x, y), c))
            .collect(),
        rects: vec![],
    }
}

fn random_cost(rng: &mut impl Rng, weighted: bool) -> u8 {
    match rng.random_range(0..10) {
        0..=3 => 0,
        _ if !weighted => 1,
        4..=6 => rng.random_range(1..=4),
        _ => rng.random_range(1..=255),
    }
}

fn random_cell(rng: &mut impl Rng, grid: &Grid) -> Point {
    Point::new(
        rng.random_range(0..grid.width()),
        rng.random_range(0..grid.height()),
    )
}

/// One random patch, biased towards the interesting places: the current path, the cells
/// beside its diagonal steps (corner rule), the start and the goal.
pub(crate) fn random_patch(
    rng: &mut impl Rng,
    grid: &Grid,
    d: &DStarLite,
    weighted: bool,
) -> (Patch, String) {
    let path: Vec<Point> = d.path().map(|p| p.0.to_vec()).unwrap_or_default();
    let near_path = |rng: &mut StdRng| -> Point {
        let p = path[rng.random_range(0..path.len())];
        let x = (p.x as i64 + rng.random_range(-1..=1)).clamp(0, grid.width() as i64 - 1);
        let y = (p.y as i64 + rng.random_range(-1..=1)).clamp(0, grid.height() as i64 - 1);
        Point::new(x as u32, y as u32)
    };
    let mut r = StdRng::seed_from_u64(rng.random());
    let (patch, what) = match rng.random_range(0..9) {
        0 | 1 if !path.is_empty() => {
            let p = near_path(&mut r);
            let c = random_cost(rng, weighted);
            (
                cells(&[(p.x, p.y, c)]),
                format!("cell {p} := {c} (near path)"),
            )
        }
        2 => {
            let p = random_cell(rng, grid);
            let c = random_cost(rng, weighted);
            (cells(&[(p.x, p.y, c)]), format!("cell {p} := {c}"))
        }
        3 => {
            let w = rng.random_range(1..=grid.width().div_ceil(3));
            let h = rng.random_range(1..=grid.height().div_ceil(3));
            let x = rng.random_range(0..=grid.width() - w);
            let y = rng.random_range(0..=grid.height() - h);
            let cost = random_cost(rng, weighted);
            let rect = Rect {
                x,
                y,
                width: w,
                height: h,
                cost,
            };
            (
                Patch {
                    cells: vec![],
                    rects: vec![rect],
                },
                format!("rect ({x}, {y}) {w}x{h} := {cost}"),
            )
        }
        4 => {
            let s = d.start();
            let c = random_cost(rng, weighted);
            (cells(&[(s.x, s.y, c)]), format!("start cell {s} := {c}"))
        }
        5 => {
            let g = d.goal();
            let c = random_cost(rng, weighted);
            (cells(&[(g.x, g.y, c)]), format!("goal cell {g} := {c}"))
        }
        6 => {
            // Many cells in one update, some near the path.
            let n = rng.random_range(2..=30);
            let list: Vec<(u32, u32, u8)> = (0..n)
                .map(|_| {
                    let p = if !path.is_empty() && rng.random_bool(0.5) {
                        near_path(&mut r)
                    } else {
                        random_cell(rng, grid)
                    };
                    (p.x, p.y, random_cost(rng, weighted))
                })
                .collect();
            (cells(&list), format!("{n} cells {list:?}"))
        }
        _ => {
            // Open up walls (cheaper routes appear).
            let n = rng.random_range(1..=8);
            let list: Vec<(u32, u32, u8)> = (0..n)
                .map(|_| {
                    let p = random_cell(rng, grid);
                    let c = if weighted { rng.random_range(1..=9) } else { 1 };
                    (p.x, p.y, c)
                })
                .collect();
            (cells(&list), format!("open {list:?}"))
        }
    };
    (patch, what)
}

#[test]
fn repair_matches_fresh_astar_on_random_maps_patches_and_moves() {
    let mut rng = StdRng::seed_from_u64(0xd57a);
    let mut steps_checked = 0;
    let mut changes = std::collections::HashMap::new();
    for case in 0..500 {
        let (w, h) = match case % 3 {
            0 => (rng.random_range(1..=8), rng.random_range(1..=8)),
            1 => (rng.random_range(1..=24), rng.random_range(1..=24)),
            _ => (rng.random_range(24..=64), rng.random_range(24..=64)),
        };
        let weighted = rng.random_bool(0.5);
        let movement = if rng.random_bool(0.5) {
            Movement::Octile
        } else {
            Movement::Cardinal
        };
        let density = rng.random_range(0.0..0.4);
        let mut grid = random_grid(&mut rng, w, h, density, weighted, movement);
        let (Some(start), Some(goal)) = (
            random_passable(&mut rng, &grid),
            random_passable(&mut rng, &grid),
        ) else {
            continue;
        };
        let mut log = vec![format!(
            "case {case}: {w}x{h} {movement:?} weighted={weighted} start {start} goal {goal}"
        )];
        let mut d = DStarLite::new(&grid, start, goal, Limits::default()).unwrap();
        check(&d, &grid, &log);
        let server_filter = rng.random_bool(0.5);
        for _ in 0..30 {
            let before = d.path().map(|(p, c)| (p.to_vec(), c));
            let status_before = d.status();
            let moving = rng.random_bool(0.3);
            let out = if moving {
                // The agent moves: along its path (1..=3 steps) or to any open cell.
                let target = match &before {
                    Some((p, _)) if p.len() > 1 && rng.random_bool(0.7) => {
                        p[rng.random_range(1..=3.min(p.len() - 1))]
                    }
                    _ => match random_passable(&mut rng, &grid) {
                        Some(p) => p,
                        None => continue,
                    },
                };
                log.push(format!("move to {target}"));
                match d.move_start(&grid, target) {
                    Ok(out) => out,
                    Err(e) => panic!("{e}: {}", log.join("\n")),
                }
            } else {
                let (patch, what) = random_patch(&mut rng, &grid, &d, weighted);
                let Some((next, changed)) = apply(&grid, patch) else {
                    continue;
                };
                log.push(what);
                let affected = d.affected_by(&next, &changed);
                let interest = d.interest();
                let cheaper_terrain = next.min_cost() < grid.min_cost();
                // The documented server filter: a patch with no changed cell inside the
                // interest region that does not lower the smallest cost is never delivered.
                let skip = server_filter
                    && !cheaper_terrain
                    && !changed.iter().any(|&c| interest.contains(c));
                let out = if skip {
                    assert!(!affected, "interest filter skipped an affecting patch");
                    log.push("(not delivered: outside interest)".into());
                    RepairOutcome {
                        status: d.status(),
                        change: Change::Unchanged,
                        path_changed: false,
                        cost_changed: false,
                        stats: Stats::default(),
                    }
                } else {
                    d.update(&next, &changed)
                };
                grid = next;
                if !affected {
                    assert_eq!(out.change, Change::Unchanged, "{}", log.join("\n"));
                    assert_eq!(out.stats.expanded, 0);
                } else if !cheaper_terrain && !changed.iter().any(|&c| interest.contains(c)) {
                    panic!("affected_by said yes outside interest: {}", log.join("\n"));
                }
                out
            };
            check(&d, &grid, &log);
            steps_checked += 1;
            *changes.entry(out.change).or_insert(0) += 1;
            // The classification agrees with what happened.
            let after = d.path().map(|(p, c)| (p.to_vec(), c));
            match (&before, &after) {
                (Some(_), None) if d.status() == Status::NoPath => {
                    assert_eq!(out.change, Change::Unreachable, "{}", log.join("\n"))
                }
                (None, Some(_)) => assert_eq!(out.change, Change::Restored),
                (Some((p0, c0)), Some((p1, c1))) if !moving => {
                    if p0 == p1 && c0 == c1 {
                        assert_eq!(out.change, Change::Unchanged);
                    } else if grid.path_cost(p0).is_none() {
                        assert_eq!(out.change, Change::Blocked, "{}", log.join("\n"));
                    } else if c1 < c0 {
                        assert!(
                            matches!(out.change, Change::Cheaper | Change::Unchanged),
                            "{:?} {}",
                            out.change,
                            log.join("\n")
                        );
                    }
                    assert_eq!(out.path_changed, p0 != p1);
                }
                (None, None) => assert_eq!(d.status(), status_before),
                _ => {}
            }
        }
    }
    assert!(steps_checked > 8000, "only {steps_checked} steps checked");
    for c in [
        Change::Unchanged,
        Change::Blocked,
        Change::Cheaper,
        Change::Costlier,
        Change::Unreachable,
        Change::Restored,
        Change::Moved,
    ] {
        assert!(
            changes.get(&c).copied().unwrap_or(0) > 10,
            "{c} rare: {changes:?}"
        );
    }
}

/// A 7x7 open map as a starting point for the named cases.
fn open(movement: Movement) -> Grid {
    Grid::from_costs(7, 7, vec![1; 49], movement).unwrap()
}

fn ring(c: Point, cost: u8) -> Patch {
    let mut list = vec![];
    for dy in -1i64..=1 {
        for dx in -1i64..=1 {
            if dx != 0 || dy != 0 {
                list.push(((c.x as i64 + dx) as u32, (c.y as i64 + dy) as u32, cost));
            }
        }
    }
    cells(&list)
}

/// Applies `patch`, repairs, checks against A*, returns the outcome.
fn step(d: &mut DStarLite, grid: &mut Grid, patch: Patch, what: &str) -> Change {
    let (next, changed) = apply(grid, patch).expect("patch changes something");
    let out = d.update(&next, &changed);
    *grid = next;
    check(d, grid, &[what.to_string()]);
    out.change
}

#[test]
fn goal_walled_in_then_freed() {
    for movement in [Movement::Octile, Movement::Cardinal] {
        let mut grid = open(movement);
        let goal = Point::new(3, 3);
        let mut d = DStarLite::new(&grid, Point::new(0, 0), goal, Limits::default()).unwrap();
        assert_eq!(
            step(&mut d, &mut grid, ring(goal, 0), "wall in goal"),
            Change::Unreachable
        );
        assert_eq!(d.status(), Status::NoPath);
        assert_eq!(
            step(&mut d, &mut grid, cells(&[(6, 6, 0)]), "far"),
            Change::Unchanged
        );
        // Freeing a diagonal neighbour alone does not help under the corner rule.
        assert_eq!(
            step(&mut d, &mut grid, cells(&[(4, 4, 1)]), "free SE"),
            Change::Unchanged
        );
        assert_eq!(
            step(&mut d, &mut grid, cells(&[(4, 3, 1)]), "free E"),
            Change::Restored
        );
        assert_eq!(d.path().unwrap().0.last(), Some(&goal));
        assert_eq!(
            step(&mut d, &mut grid, ring(goal, 1), "free all"),
            Change::Cheaper
        );
    }
}

#[test]
fn start_walled_in_then_freed() {
    for movement in [Movement::Octile, Movement::Cardinal] {
        let mut grid = open(movement);
        let start = Point::new(3, 3);
        let mut d = DStarLite::new(&grid, start, Point::new(6, 0), Limits::default()).unwrap();
        let c = step(&mut d, &mut grid, ring(start, 0), "wall in start");
        assert_eq!(c, Change::Unreachable);
        // The agent cannot move into a wall, and the failed move changes nothing.
        assert_eq!(
            d.move_start(&grid, Point::new(3, 2)).unwrap_err(),
            QueryError::StartBlocked(Point::new(3, 2))
        );
        assert_eq!(d.start(), start);
        let c = step(&mut d, &mut grid, cells(&[(2, 3, 1)]), "free W");
        assert_eq!(c, Change::Restored);
        assert_eq!(d.path().unwrap().0[1], Point::new(2, 3));
    }
}

#[test]
fn start_and_goal_cells_patched() {
    let mut grid = open(Movement::Octile);
    let (start, goal) = (Point::new(1, 1), Point::new(5, 4));
    let mut d = DStarLite::new(&grid, start, goal, Limits::default()).unwrap();
    let base = d.path().unwrap().1;
    assert_eq!(
        step(&mut d, &mut grid, cells(&[(1, 1, 0)]), "start wall"),
        Change::Unreachable
    );
    assert_eq!(
        step(&mut d, &mut grid, cells(&[(1, 1, 9)]), "start cost 9"),
        Change::Restored
    );
    // The first step's cost includes the start cell's cost: (9 + 1) / 2 instead of 1.
    let c = d.path().unwrap().1;
    assert!(c > base + 3.0, "{c} vs {base}");
    assert_eq!(
        step(&mut d, &mut grid, cells(&[(1, 1, 1)]), "start cost 1"),
        Change::Cheaper
    );
    assert!((d.path().unwrap().1 - base).abs() < 1e-12);
    assert_eq!(
        step(&mut d, &mut grid, cells(&[(5, 4, 0)]), "goal wall"),
        Change::Unreachable
    );
    assert_eq!(
        step(&mut d, &mut grid, cells(&[(5, 4, 200)]), "goal cost"),
        Change::Restored
    );
    assert_eq!(
        step(&mut d, &mut grid, cells(&[(5, 4, 1)]), "goal cheap"),
        Change::Cheaper
    );
    assert!((d.path().unwrap().1 - base).abs() < 1e-12);
}

#[test]
fn wall_beside_a_diagonal_step_forbids_it_and_opening_allows_it() {
    // start (0,3) .. goal (3,0) on an open 4x4 map: the straight diagonal. A wall at (2,2)
    // is on no path cell, but the step (1,2) -> (2,1) passes its corner.
    let mut grid = Grid::from_costs(4, 4, vec![1; 16], Movement::Octile).unwrap();
    let mut d =
        DStarLite::new(&grid, Point::new(0, 3), Point::new(3, 0), Limits::default()).unwrap();
    let diag = 3.0 * std::f64::consts::SQRT_2;
    assert!((d.path().unwrap().1 - diag).abs() < 1e-12);
    assert_eq!(
        step(&mut d, &mut grid, cells(&[(2, 2, 0)]), "corner wall"),
        Change::Blocked
    );
    assert!(d.path().unwrap().1 > diag + 0.5);
    assert!(!d.path().unwrap().0.contains(&Point::new(2, 2)));
    // Opening it again makes the diagonal legal: the cheaper path must come back.
    assert_eq!(
        step(&mut d, &mut grid, cells(&[(2, 2, 1)]), "corner open"),
        Change::Cheaper
    );
    assert!((d.path().unwrap().1 - diag).abs() < 1e-12);
    // Same for a cell whose wall is the *other* side of a diagonal the path takes later.
    assert_eq!(
        step(&mut d, &mut grid, cells(&[(1, 1, 0)]), "other side"),
        Change::Blocked
    );
    assert_eq!(
        step(&mut d, &mut grid, cells(&[(1, 1, 1)]), "reopen"),
        Change::Cheaper
    );
}

#[test]
fn cost_rise_on_the_path_and_back() {
    for movement in [Movement::Octile, Movement::Cardinal] {
        let mut grid = open(movement);
        let mut d =
            DStarLite::new(&grid, Point::new(0, 3), Point::new(6, 3), Limits::default()).unwrap();
        assert_eq!(d.path().unwrap().1, 6.0);
        let c = step(&mut d, &mut grid, cells(&[(3, 3, 50)]), "rise");
        assert_eq!(c, Change::Costlier);
        assert!(!d.path().unwrap().0.contains(&Point::new(3, 3)));
        assert_eq!(
            step(&mut d, &mut grid, cells(&[(3, 3, 1)]), "back"),
            Change::Cheaper
        );
        assert_eq!(d.path().unwrap().1, 6.0);
        // A rise too small to reroute keeps the path and reports its new cost.
        let c = step(&mut d, &mut grid, cells(&[(3, 3, 2)]), "small rise");
        assert_eq!(c, Change::Costlier);
    }
}

#[test]
fn many_cells_in_one_update() {
    let mut grid = Grid::from_costs(32, 32, vec![1; 1024], Movement::Octile).unwrap();
    let mut d = DStarLite::new(
        &grid,
        Point::new(2, 2),
        Point::new(29, 29),
        Limits::default(),
    )
    .unwrap();
    // A wall across the map with one gap, plus scattered cost changes, in one patch.
    let mut patch = Patch {
        cells: vec![(Point::new(30, 16), 1)],
        rects: vec![Rect {
            x: 0,
            y: 16,
            width: 32,
            height: 1,
            cost: 0,
        }],
    };
    patch.cells.extend(
        (0..40)
            .map(|i| Point::new(i * 7 % 32, i * 13 % 32))
            .filter(|p| p.y != 16)
            .map(|p| (p, 7)),
    );
    assert_eq!(
        step(&mut d, &mut grid, patch, "wall with gap"),
        Change::Blocked
    );
    assert!(d.path().unwrap().0.contains(&Point::new(30, 16)));
    let open_all = Patch {
        cells: vec![],
        rects: vec![Rect {
            x: 0,
            y: 0,
            width: 32,
            height: 32,
            cost: 1,
        }],
    };
    assert_eq!(
        step(&mut d, &mut grid, open_all, "clear all"),
        Change::Cheaper
    );
    assert!((d.path().unwrap().1 - 27.0 * std::f64::consts::SQRT_2).abs() < 1e-9);
}

#[test]
fn agent_walks_to_the_goal_through_patches() {
    let mut rng = StdRng::seed_from_u64(7);
    for movement in [Movement::Octile, Movement::Cardinal] {
        let mut grid = random_grid(&mut rng, 40, 40, 0.2, true, movement);
        let (start, goal) = loop {
            let s = random_passable(&mut rng, &grid).unwrap();
            let g = random_passable(&mut rng, &grid).unwrap();
            if grid.same_component(s, g) && s != g {
                break (s, g);
            }
        };
        let mut d = DStarLite::new(&grid, start, goal, Limits::default()).unwrap();
        let mut log = vec![format!("{movement:?} {start} -> {goal}")];
        let mut moves = 0;
        while d.start() != goal && moves < 500 {
            let Some((path, _)) = d.path() else { break };
            let next = path[1];
            let out = d.move_start(&grid, next).unwrap();
            assert_eq!(out.change, Change::Unchanged, "moving along the path");
            log.push(format!("move {next}"));
            moves += 1;
            // Every few steps, a wall right ahead of the agent (never on the goal).
            if moves % 3 == 0 {
                if let Some((path, _)) = d.path() {
                    if path.len() > 3 {
                        let p = path[2];
                        let (next_grid, changed) = apply(&grid, cells(&[(p.x, p.y, 0)])).unwrap();
                        log.push(format!("wall {p}"));
                        let out = d.update(&next_grid, &changed);
                        assert!(matches!(out.change, Change::Blocked | Change::Unreachable));
                        grid = next_grid;
                    }
                }
            }
            check(&d, &grid, &log);
        }
        if d.status() == Status::Found {
            assert_eq!(d.start(), goal, "{}", log.join("\n"));
            assert_eq!(d.path().unwrap(), (&[goal][..], 0.0));
        }
    }
}

#[test]
fn agent_jumps_off_its_path_into_unexplored_area() {
    let mut grid = Grid::from_costs(64, 64, vec![1; 64 * 64], Movement::Octile).unwrap();
    let mut d = DStarLite::new(
        &grid,
        Point::new(60, 3),
        Point::new(63, 0),
        Limits::default(),
    )
    .unwrap();
    let before = d.touched_cells();
    let out = d.move_start(&grid, Point::new(0, 63)).unwrap();
    assert_eq!(out.change, Change::Moved);
    assert!(d.touched_cells() > before);
    check(&d, &grid, &["jump".into()]);
    // ... and a patch after the move still repairs correctly (km is in the keys).
    let patch = Patch {
        cells: vec![],
        rects: vec![Rect {
            x: 10,
            y: 10,
            width: 40,
            height: 40,
            cost: 0,
        }],
    };
    step(&mut d, &mut grid, patch, "block centre");
}

#[test]
fn smaller_min_cost_lowers_the_heuristic() {
    // Every cell costs 5, so h = 5 * octile. A corridor of cost 1 makes that overestimate:
    // the search must rescale or it would miss the corridor.
    let mut grid = Grid::from_costs(30, 10, vec![5; 300], Movement::Octile).unwrap();
    let mut d = DStarLite::new(
        &grid,
        Point::new(0, 5),
        Point::new(29, 5),
        Limits::default(),
    )
    .unwrap();
    let corridor = Patch {
        cells: vec![],
        rects: vec![Rect {
            x: 0,
            y: 0,
            width: 30,
            height: 1,
            cost: 1,
        }],
    };
    assert_eq!(
        step(&mut d, &mut grid, corridor, "cheap corridor"),
        Change::Cheaper
    );
    assert!(d.path().unwrap().0.iter().any(|p| p.y == 0));
    let back = Patch {
        cells: vec![],
        rects: vec![Rect {
            x: 0,
            y: 0,
            width: 30,
            height: 1,
            cost: 5,
        }],
    };
    assert_eq!(
        step(&mut d, &mut grid, back, "corridor gone"),
        Change::Costlier
    );
}

#[test]
fn limits_interrupt_and_resume() {
    let grid = load_map("den520d.map");
    let row = load_scen("den520d.map.scen")
        .into_iter()
        .rev()
        .find(|r| !r.unreachable())
        .unwrap();
    let limits = Limits {
        max_expansions: Some(500),
        ..Limits::default()
    };
    let mut d = DStarLite::new(&grid, row.start, row.goal, limits).unwrap();
    assert_eq!(d.status(), Status::LimitReached);
    assert!(d.path().is_none());
    assert_eq!(d.interest(), Interest::Everything);
    let mut calls = 0;
    while d.status() == Status::LimitReached {
        let out = d.resume(&grid);
        assert!(out.stats.expanded <= 500);
        calls += 1;
        assert!(calls < 10_000);
    }
    assert!(calls > 2);
    assert!(matches_optimal(d.path().unwrap().1, row.optimal));
    check(&d, &grid, &[]);

    // A cancellation flag set before a repair interrupts it; clearing it lets it finish.
    let flag = Arc::new(AtomicBool::new(true));
    d.set_limits(Limits {
        cancel: Some(flag.clone()),
        ..Limits::default()
    });
    let p = d.path().unwrap().0[d.path().unwrap().0.len() / 2];
    let wall = Patch {
        cells: vec![],
        rects: vec![Rect {
            x: p.x.saturating_sub(1),
            y: p.y.saturating_sub(1),
            width: 3,
            height: 3,
            cost: 0,
        }],
    };
    let (next, changed) = apply(&grid, wall).unwrap();
    let out = d.update(&next, &changed);
    assert_eq!(
        (out.status, out.change),
        (Status::LimitReached, Change::Interrupted)
    );
    flag.store(false, Ordering::Relaxed);
    let out = d.resume(&next);
    assert_eq!(out.change, Change::Restored);
    check(&d, &next, &[]);
}

#[test]
fn same_calls_same_paths() {
    let run = || {
        let mut rng = StdRng::seed_from_u64(99);
        let mut grid = random_grid(&mut rng, 48, 48, 0.25, true, Movement::Octile);
        let s = random_passable(&mut rng, &grid).unwrap();
        let g = random_passable(&mut rng, &grid).unwrap();
        let mut d = DStarLite::new(&grid, s, g, Limits::default()).unwrap();
        let mut paths = vec![];
        for _ in 0..40 {
            let (patch, _) = random_patch(&mut rng, &grid, &d, true);
            if let Some((next, changed)) = apply(&grid, patch) {
                d.update(&next, &changed);
                grid = next;
            }
            paths.push(d.path().map(|(p, c)| (p.to_vec(), c)));
        }
        paths
    };
    assert_eq!(run(), run());
}

#[test]
fn far_patch_costs_nothing_and_memory_follows_touched_cells() {
    let mut grid = Grid::from_costs(512, 512, vec![1; 512 * 512], Movement::Octile).unwrap();
    let mut d = DStarLite::new(
        &grid,
        Point::new(5, 5),
        Point::new(20, 12),
        Limits::default(),
    )
    .unwrap();
    let Interest::Region { max, .. } = d.interest() else {
        panic!("a settled search has a region")
    };
    assert!(max.x < 100 && max.y < 100, "{max}");
    let (next, changed) = apply(&grid, cells(&[(400, 400, 0), (401, 400, 0)])).unwrap();
    assert!(!d.affected_by(&next, &changed));
    let out = d.update(&next, &changed);
    assert_eq!((out.change, out.stats.expanded), (Change::Unchanged, 0));
    grid = next;
    // Memory: proportional to the cells touched, nowhere near a map-sized array.
    assert!(d.touched_cells() < 5_000, "{}", d.touched_cells());
    assert!(d.memory_bytes() < 512 * 512, "{} bytes", d.memory_bytes());
    // A patch on the path is noticed.
    let p = d.path().unwrap().0[3];
    let (next, changed) = apply(&grid, cells(&[(p.x, p.y, 0)])).unwrap();
    assert!(d.affected_by(&next, &changed));
    assert!(d.interest().contains(p));
    assert_eq!(d.update(&next, &changed).change, Change::Blocked);
    check(&d, &next, &[]);
}

#[test]
fn moving_ai_rows_and_a_wall_on_the_path() {
    for (map, n) in [("den520d.map", 12), ("16room_000.map", 8)] {
        let grid = load_map(map);
        let rows = load_scen(&format!("{map}.scen"));
        let step_by = rows.len() / n;
        for row in rows.iter().step_by(step_by) {
            let mut d = DStarLite::new(&grid, row.start, row.goal, Limits::default()).unwrap();
            if row.unreachable() {
                assert_eq!(d.status(), Status::NoPath);
                continue;
            }
            let (path, cost) = d.path().unwrap();
            assert!(matches_optimal(cost, row.optimal), "{map} {row:?}: {cost}");
            if path.len() < 5 {
                continue;
            }
            let p = path[path.len() / 2];
            let wall = Patch {
                cells: vec![(row.start, 1), (row.goal, 1)],
                rects: vec![Rect {
                    x: p.x.saturating_sub(1),
                    y: p.y.saturating_sub(1),
                    width: 3.min(grid.width() - p.x.saturating_sub(1)),
                    height: 3.min(grid.height() - p.y.saturating_sub(1)),
                    cost: 0,
                }],
            };
            let (next, changed) = apply(&grid, wall).unwrap();
            let out = d.update(&next, &changed);
            check(&d, &next, &[format!("{map} {row:?} wall at {p}")]);
            assert!(out.path_changed);
        }
    }
}

#[test]
fn misuse_is_an_error_and_trivial_queries_work() {
    let grid = Grid::from_costs(3, 1, vec![1, 0, 1], Movement::Octile).unwrap();
    let o = Point::new(0, 0);
    let err = |s, g| DStarLite::new(&grid, s, g, Limits::default()).unwrap_err();
    assert_eq!(
        err(Point::new(1, 0), o),
        QueryError::StartBlocked(Point::new(1, 0))
    );
    assert_eq!(
        err(o, Point::new(1, 0)),
        QueryError::GoalBlocked(Point::new(1, 0))
    );
    assert!(matches!(
        err(Point::new(3, 0), o),
        QueryError::OutOfBounds { which: "start", .. }
    ));
    assert!(matches!(
        err(o, Point::new(0, 1)),
        QueryError::OutOfBounds { which: "goal", .. }
    ));
    let mut d = DStarLite::new(&grid, o, Point::new(2, 0), Limits::default()).unwrap();
    assert_eq!(d.status(), Status::NoPath);
    assert!(d.move_start(&grid, Point::new(9, 0)).is_err());
    let same = DStarLite::new(&grid, o, o, Limits::default()).unwrap();
    assert_eq!(same.path(), Some((&[o][..], 0.0)));
    let one = Grid::from_costs(1, 1, vec![3], Movement::Cardinal).unwrap();
    let d1 = DStarLite::new(&one, o, o, Limits::default()).unwrap();
    assert_eq!(d1.path(), Some((&[o][..], 0.0)));
    fn assert_traits<T: Send + Sync + Clone + std::fmt::Debug>() {}
    assert_traits::<DStarLite>();
    assert_traits::<pathd_engine::RepairOutcome>();
}

#[test]
#[should_panic(expected = "is not the search's")]
fn a_grid_of_another_shape_is_a_bug() {
    let a = Grid::from_costs(3, 3, vec![1; 9], Movement::Octile).unwrap();
    let b = Grid::from_costs(4, 3, vec![1; 12], Movement::Octile).unwrap();
    let mut d = DStarLite::new(&a, Point::new(0, 0), Point::new(2, 2), Limits::default()).unwrap();
    d.update(&b, &[Point::new(1, 1)]);
}

/// The cost from every cell to `goal` by the reference Dijkstra (infinity when unreachable).
fn cost_to_goal(grid: &Grid, goal: Point, cells: &[Point]) -> Vec<f64> {
    cells
        .iter()
        .map(|&c| match crate::common::reference(grid, c, goal) {
            Some((cost, _)) => cost,
            None => f64::INFINITY,
        })
        .collect()
}

/// What a repair reports as touched: the walls put on the old path (their state must go),
/// and every cell of the new path whose true cost to the goal changed (the path descends
/// over exact costs, so those were rewritten); sorted, distinct, counted.
#[test]
fn repaired_cells_cover_the_walls_on_the_path_and_the_changed_new_path() {
    for seed in 0..40u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let weighted = seed % 2 == 1;
        let movement = if seed % 3 == 0 {
            Movement::Cardinal
        } else {
            Movement::Octile
        };
        let mut grid = random_grid(&mut rng, 30, 20, 0.15, weighted, movement);
        let (Some(start), Some(goal)) = (
            random_passable(&mut rng, &grid),
            random_passable(&mut rng, &grid),
        ) else {
            continue;
        };
        let Ok(mut d) = DStarLite::new(&grid, start, goal, Limits::default()) else {
            continue;
        };
        assert_eq!(d.repaired_cells(usize::MAX), (Vec::new(), 0));
        for round in 0..5 {
            let Some((old, _)) = d.path().map(|(p, c)| (p.to_vec(), c)) else {
                break;
            };
            if old.len() < 3 {
                break;
            }
            // Wall one or two cells strictly inside the path.
            let walls: Vec<Point> = (0..rng.random_range(1..=2))
                .map(|_| old[rng.random_range(1..old.len() - 1)])
                .collect();
            let patch = Patch {
                cells: walls.iter().map(|&p| (p, 0)).collect(),
                rects: vec![],
            };
            let Some((next, changed)) = apply(&grid, patch) else {
                continue;
            };
            let out = d.update(&next, &changed);
            let ctx = format!(
                "seed {seed} round {round} walls {walls:?} change {}",
                out.change
            );
            let (cells, count) = d.repaired_cells(usize::MAX);
            assert_eq!(cells.len(), count, "{ctx}");
            assert!(
                cells
                    .windows(2)
                    .all(|w| (w[0].y, w[0].x) < (w[1].y, w[1].x)),
                "{ctx}: not row-major and distinct"
            );
            for w in &walls {
                assert!(
                    cells.contains(w),
                    "{ctx}: wall {w} not touched in {cells:?}"
                );
            }
            // A capped list is the prefix.
            assert_eq!(d.repaired_cells(2).0, cells[..count.min(2)], "{ctx}");
            if let Some((new, _)) = d.path() {
                let was = cost_to_goal(&grid, goal, new);
                let now = cost_to_goal(&next, goal, new);
                for ((p, a), b) in new.iter().zip(&was).zip(&now) {
                    if (a - b).abs() > 1e-9 * b.max(1.0) {
                        assert!(cells.contains(p), "{ctx}: {p} went {a} -> {b}, not touched");
                    }
                }
            }
            check(&d, &next, &[ctx]);
            grid = next;
        }
        // A call with nothing to do touches nothing.
        let out = d.move_start(&grid, d.start()).unwrap();
        assert_eq!(out.change, Change::Unchanged);
        assert_eq!(d.repaired_cells(10).1, 0, "seed {seed}");
    }
}
