//! Shared goal trees against one D* Lite search per agent: seeded random maps (both movement
//! rules, weighted or not, agent sizes 1 and 2), several agents per goal, random patches and
//! moves; after every step each agent's status, path and cost must equal its own D* Lite
//! search's, its path must be legal and cost what it says, and every outcome (change class,
//! path changed, cost changed: what decides and labels an event) must be the same.

use crate::common::{check_path, random_grid, random_passable};
use crate::dstar_lite::random_patch;
use pathd_engine::{
    Agent, Change, DStarLite, GoalTree, Grid, Limits, Movement, Point, RepairOutcome, Status,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// True when any changed cell got cheaper or opened (0 is a wall, the dearest).
fn lowered(old: &Grid, new: &Grid, changed: &[Point]) -> bool {
    let rank = |c: u8| if c == 0 { u16::MAX } else { c as u16 };
    changed
        .iter()
        .any(|&p| rank(new.cost(p)) < rank(old.cost(p)))
}

/// What an outcome says a subscriber sees, up to the choice among equal-cost paths:
/// `None` when status and cost stay, else the status and the direction of the cost.
fn seen(out: &RepairOutcome, cost_before: f64, cost_after: f64) -> Option<(Status, i8)> {
    let status_changed = matches!(
        out.change,
        Change::Unreachable | Change::Restored | Change::Interrupted
    );
    (status_changed || out.cost_changed).then(|| {
        let dir = if !out.cost_changed {
            0
        } else if cost_after > cost_before {
            1
        } else {
            -1
        };
        (out.status, dir)
    })
}

fn same_cost(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn shared_tree_answers_like_one_dstar_lite_per_agent() {
    let mut rng = StdRng::seed_from_u64(0x9e7);
    let (mut steps, mut events, mut same_paths, mut compared_paths) = (0, 0, 0, 0);
    for case in 0..300 {
        // Every fifth case: a nearly open map and a crowd of agents close together, where
        // equal-cost paths abound and the agents' repairs meet each other's new paths.
        let crowd = case % 5 == 4;
        let (w, h) = match case % 3 {
            _ if crowd => (rng.random_range(40..=64), rng.random_range(40..=64)),
            0 => (rng.random_range(2..=10), rng.random_range(2..=10)),
            1 => (rng.random_range(8..=24), rng.random_range(8..=24)),
            _ => (rng.random_range(24..=48), rng.random_range(24..=48)),
        };
        let weighted = rng.random_bool(0.5);
        let movement = if rng.random_bool(0.5) {
            Movement::Octile
        } else {
            Movement::Cardinal
        };
        let size = if case % 4 == 3 { 2 } else { 1 };
        let density = if crowd {
            rng.random_range(0.0..0.08)
        } else {
            rng.random_range(0.0..0.35)
        };
        let mut grid = random_grid(&mut rng, w, h, density, weighted, movement);
        let Some(goal) = random_passable(&mut rng, &grid) else {
            continue;
        };
        let Ok(mut tree) = GoalTree::new(&grid, goal, size) else {
            continue;
        };
        // Settle after each step in some cases, let raises pile up in others.
        let settle_each = rng.random_bool(0.5);
        let mut log = vec![format!(
            "case {case}: {w}x{h} {movement:?} weighted={weighted} size {size} goal {goal} \
             settle_each={settle_each}"
        )];
        let mut agents: Vec<(Agent, DStarLite)> = Vec::new();
        let anchor = random_passable(&mut rng, &grid).unwrap_or(goal);
        let crowd_size = if crowd { rng.random_range(6..=10) } else { 0 };
        for _ in 0..rng.random_range(1..=5).max(crowd_size) {
            let near = |rng: &mut StdRng| {
                let (dx, dy) = (rng.random_range(-6i64..=6), rng.random_range(-6i64..=6));
                let (x, y) = (anchor.x as i64 + dx, anchor.y as i64 + dy);
                ((0..w as i64).contains(&x) && (0..h as i64).contains(&y))
                    .then(|| Point::new(x as u32, y as u32))
                    .filter(|&p| grid.is_passable(p))
            };
            let start = if crowd {
                (0..20).find_map(|_| near(&mut rng))
            } else {
                random_passable(&mut rng, &grid)
            };
            let Some(start) = start else {
                break;
            };
            let Ok(d) = DStarLite::new_sized(&grid, start, goal, size, Limits::default()) else {
                continue;
            };
            let (a, _) = Agent::new(&mut tree, &grid, start, Limits::default()).unwrap();
            log.push(format!("agent at {start}"));
            agents.push((a, d));
        }
        if agents.is_empty() {
            continue;
        }
        let check = |agents: &[(Agent, DStarLite)], grid: &Grid, log: &[String], first: bool| {
            let mut same = (0, 0);
            for (i, (a, d)) in agents.iter().enumerate() {
                let ctx = || format!("agent {i}\nsteps:\n  {}", log.join("\n  "));
                assert_eq!(a.status(), d.status(), "status: {}", ctx());
                if let (Some((pa, ca)), Some((pd, cd))) = (a.path(), d.path()) {
                    assert!(same_cost(ca, cd), "cost {ca} vs D* Lite {cd}: {}", ctx());
                    if size == 1 {
                        if let Err(e) = check_path(grid, pa, a.start(), goal, ca) {
                            panic!("{e}: {}", ctx());
                        }
                    }
                    let when = if first { "first" } else { "later" };
                    assert_eq!(pa, pd, "{when} path differs from D* Lite's: {}", ctx());
                    same.0 += (pa == pd) as usize;
                    same.1 += 1;
                }
            }
            same
        };
        check(&agents, &grid, &log, true);
        for _ in 0..25 {
            if rng.random_bool(0.25) {
                let i = rng.random_range(0..agents.len());
                let (a, d) = &mut agents[i];
                let to = match a.path() {
                    Some((p, _)) if p.len() > 1 && rng.random_bool(0.6) => {
                        p[rng.random_range(1..=3.min(p.len() - 1))]
                    }
                    _ => match random_passable(&mut rng, &grid) {
                        Some(p) => p,
                        None => continue,
                    },
                };
                log.push(format!("agent {i} moves to {to}"));
                let before = (a.cost(), d.path().map_or(0.0, |p| p.1));
                let ours = a.move_to(&mut tree, &grid, to);
                let theirs = d.move_start(&grid, to);
                match (ours, theirs) {
                    (Ok(o), Ok(t)) => {
                        let _ = before;
                        assert_eq!(
                            (o.status, o.change, o.path_changed, o.cost_changed),
                            (t.status, t.change, t.path_changed, t.cost_changed),
                            "agent {i} move: {}",
                            log.join("\n  ")
                        );
                        events += o.should_notify() as usize;
                    }
                    (Err(_), Err(_)) => {}
                    (o, t) => panic!("move: {o:?} vs {t:?}: {}", log.join("\n  ")),
                }
            } else {
                let (patch, what) = random_patch(&mut rng, &grid, &agents[0].1, weighted);
                let Some((next, changed)) = grid.apply_patch(&patch).expect("patch fits") else {
                    continue;
                };
                let low = lowered(&grid, &next, &changed);
                log.push(format!("{what} (lowered: {low})"));
                tree.apply(&next, &changed, low);
                for (i, (a, d)) in agents.iter_mut().enumerate() {
                    let (ca, cd) = (a.cost(), d.path().map_or(0.0, |p| p.1));
                    let o = a.on_patch(&mut tree, &next, &changed, low);
                    let t = d.update(&next, &changed);
                    let (na, nd) = (a.cost(), d.path().map_or(0.0, |p| p.1));
                    assert_eq!(
                        (o.status, o.change, o.path_changed, o.cost_changed),
                        (t.status, t.change, t.path_changed, t.cost_changed),
                        "agent {i} patch outcome: {}",
                        log.join("\n  ")
                    );
                    let want = seen(&t, cd, nd);
                    if same_cost(ca, cd) {
                        assert_eq!(
                            seen(&o, ca, na),
                            want,
                            "agent {i} events {o:?} vs D* Lite {t:?}: {}",
                            log.join("\n  ")
                        );
                    }
                    if want.is_some() {
                        assert!(
                            o.should_notify(),
                            "agent {i}: no event: {}",
                            log.join("\n  ")
                        );
                    }
                    events += o.should_notify() as usize;
                }
                grid = next;
                if settle_each {
                    let target = agents.iter().map(|(a, _)| a.cost()).fold(0.0, f64::max);
                    tree.settle(&grid, target);
                }
            }
            steps += 1;
            let (same, compared) = check(&agents, &grid, &log, false);
            same_paths += same;
            compared_paths += compared;
        }
    }
    eprintln!(
        "goal trees: {steps} steps, {events} events; {same_paths} of {compared_paths} \
         paths identical to D* Lite's"
    );
    assert!(steps > 3000 && events > 300 && compared_paths > 5000);
    assert_eq!(same_paths, compared_paths);
}

/// A subscription's `max_expansions` bounds its later repairs too (they run unattended): a
/// wall that forces a long detour interrupts the repair, and later calls finish it from the
/// shared tree's progress.
#[test]
fn repairs_keep_the_agents_expansion_limit() {
    let grid = Grid::from_costs(40, 40, vec![1; 1600], Movement::Octile).unwrap();
    let goal = Point::new(39, 20);
    let mut tree = GoalTree::new(&grid, goal, 1).unwrap();
    let limits = Limits {
        max_expansions: Some(400),
        ..Limits::default()
    };
    let (mut a, _) = Agent::new(&mut tree, &grid, Point::new(30, 20), limits).unwrap();
    assert_eq!(a.status(), Status::Found);
    // A wall across the map at x = 35 but for its top row: the detour runs round y = 0.
    let patch = pathd_engine::Patch {
        cells: vec![],
        rects: vec![pathd_engine::Rect {
            x: 35,
            y: 1,
            width: 1,
            height: 39,
            cost: 0,
        }],
    };
    let (next, changed) = grid.apply_patch(&patch).unwrap().unwrap();
    tree.apply(&next, &changed, false);
    let out = a.on_patch(&mut tree, &next, &changed, false);
    assert_eq!(
        (out.status, out.change),
        (Status::LimitReached, Change::Interrupted)
    );
    assert!(out.stats.expanded <= 400, "{out:?}");
    // Moves (here: in place is a no-op, so one step) continue from the tree's progress.
    let mut done = None;
    for step in 0..20 {
        let to = if step % 2 == 0 {
            Point::new(30, 19)
        } else {
            Point::new(30, 20)
        };
        let o = a.move_to(&mut tree, &next, to).unwrap();
        if o.status == Status::Found {
            done = Some(step);
            break;
        }
    }
    assert!(done.is_some(), "the repair never finished");
    let (path, cost) = a.path().unwrap();
    let fresh = pathd_engine::find_path(&next, &pathd_engine::Query::new(a.start(), goal)).unwrap();
    assert!(same_cost(cost, fresh.cost), "{cost} vs A* {}", fresh.cost);
    assert!(
        path.iter().any(|p| p.y == 0),
        "the detour runs along the top row"
    );
}

/// The long scenario rows `benches/repair.rs` uses: the first reachable row from 60, 70,
/// 80, 90 and 99% of the file on.
fn long_rows(all: &[pathd_engine::movingai::ScenRow]) -> Vec<pathd_engine::movingai::ScenRow> {
    [0.6, 0.7, 0.8, 0.9, 0.99]
        .iter()
        .map(|f| {
            all[(all.len() as f64 * f) as usize..]
                .iter()
                .find(|r| !r.unreachable())
                .expect("a reachable row")
                .clone()
        })
        .collect()
}

/// A 3x3 wall centred on `c` (clipped to the map), or `None` when it would cover `start`
/// or `goal`.
fn wall_at(grid: &Grid, c: Point, start: Point, goal: Point) -> Option<pathd_engine::Patch> {
    let (x0, y0) = (c.x.saturating_sub(1), c.y.saturating_sub(1));
    let rect = pathd_engine::Rect {
        x: x0,
        y: y0,
        width: (c.x + 2).min(grid.width()) - x0,
        height: (c.y + 2).min(grid.height()) - y0,
        cost: 0,
    };
    let covers =
        |p: Point| (x0..x0 + rect.width).contains(&p.x) && (y0..y0 + rect.height).contains(&p.y);
    (!covers(start) && !covers(goal)).then(|| pathd_engine::Patch {
        cells: vec![],
        rects: vec![rect],
    })
}

/// The repair target of many-agent subscriptions, by expansion counts (deterministic): on
/// den520d, 16room_000 and Berlin_1_1024, over the long scenario rows `benches/repair.rs`
/// uses, a 3x3 wall on the path at 1/8, 1/2 and 7/8 of the way is repaired forward from the
/// agent with at least 10x fewer expansions than a fresh A* on the walled map, at the same
/// cost. The near-goal wall on den520d is the tight one: a door walled shut, where the band
/// of old equal-cost paths is both walked (exactness) and expanded, once each per vertex.
#[test]
fn a_wall_anywhere_on_the_path_costs_a_tenth_of_a_fresh_search() {
    use crate::common::{load_map, load_scen};
    use pathd_engine::{Query, find_path};
    let mut report = Vec::new();
    for map in ["den520d.map", "16room_000.map", "Berlin_1_1024.map"] {
        let grid = load_map(map);
        let all = load_scen(&format!("{map}.scen"));
        // Per spot (1/8, 1/2, 7/8): forward repair and fresh A* expansions, summed.
        let mut sums = [(0u64, 0u64); 3];
        for row in long_rows(&all) {
            let mut tree = GoalTree::new(&grid, row.goal, 1).unwrap();
            let (agent, _) = Agent::new(&mut tree, &grid, row.start, Limits::default()).unwrap();
            let path = agent.path().expect("reachable").0.to_vec();
            for (k, at) in [path.len() / 8, path.len() / 2, path.len() * 7 / 8]
                .into_iter()
                .enumerate()
            {
                let c = path[at];
                let Some(patch) = wall_at(&grid, c, row.start, row.goal) else {
                    continue;
                };
                let (next, changed) = grid.apply_patch(&patch).unwrap().unwrap();
                let fresh = find_path(&next, &Query::new(row.start, row.goal)).unwrap();
                let (mut t, mut a) = (tree.clone(), agent.clone());
                t.apply(&next, &changed, false);
                let out = a.on_patch(&mut t, &next, &changed, false);
                assert!(
                    same_cost(a.cost(), fresh.cost),
                    "{map} {row:?} wall at {c}: repaired {} vs A* {}",
                    a.cost(),
                    fresh.cost
                );
                sums[k].0 += out.stats.expanded;
                sums[k].1 += fresh.stats.expanded;
            }
        }
        for (spot, (repair, fresh)) in ["1/8", "1/2", "7/8"].into_iter().zip(sums) {
            assert!(repair > 0, "{map} {spot}: no repair ran");
            report.push(format!(
                "{map} wall at {spot}: repair {repair} vs fresh A* {fresh} ({:.1}x)",
                fresh as f64 / repair as f64
            ));
            assert!(
                repair * 10 <= fresh,
                "{map} wall at {spot}: repair {repair} vs fresh A* {fresh}:\n{}",
                report.join("\n")
            );
        }
    }
    eprintln!("{}", report.join("\n"));
}

/// A forward repair keeps its agent's `max_expansions` however the limit cuts it (the
/// exactness walks included): on den520d's long rows, a 3x3 wall on the path at 1/8, 1/2 and
/// 7/8 of the way, each repaired under limits from 1 up to what it needs. A repair that
/// needs more answers `interrupted`, and the cells it worked on stay near its limit.
#[test]
fn a_limited_forward_repair_stops_near_its_limit() {
    use crate::common::{load_map, load_scen};
    let grid = load_map("den520d.map");
    let all = load_scen("den520d.map.scen");
    let mut cut = 0;
    for row in long_rows(&all) {
        let mut tree = GoalTree::new(&grid, row.goal, 1).unwrap();
        // The first agent settles the tree up to the start; the limited ones then need no
        // search to join.
        let (first, _) = Agent::new(&mut tree, &grid, row.start, Limits::default()).unwrap();
        let path = first.path().unwrap().0.to_vec();
        for at in [path.len() / 8, path.len() / 2, path.len() * 7 / 8] {
            let c = path[at];
            let Some(patch) = wall_at(&grid, c, row.start, row.goal) else {
                continue;
            };
            let (next, changed) = grid.apply_patch(&patch).unwrap().unwrap();
            let repair = |max: Option<u64>| {
                let mut t = tree.clone();
                let limits = Limits {
                    max_expansions: max,
                    ..Limits::default()
                };
                let (mut a, _) = Agent::new(&mut t, &grid, row.start, limits).unwrap();
                assert_eq!(a.status(), Status::Found);
                t.apply(&next, &changed, false);
                let out = a.on_patch(&mut t, &next, &changed, false);
                (out, a.repaired_cells(0).1)
            };
            let (full, _) = repair(None);
            assert_eq!(full.status, Status::Found);
            let need = full.stats.expanded;
            for max in [1, need / 4, need / 2, need.saturating_sub(1)] {
                if max == 0 || max >= need {
                    continue;
                }
                let (out, worked) = repair(Some(max));
                let case = format!("{row:?} wall at {c}: needs {need}, limit {max}");
                assert_eq!(out.status, Status::LimitReached, "{case}");
                assert!(
                    out.stats.expanded <= max,
                    "{case}: counted {}",
                    out.stats.expanded
                );
                // The cells it worked on: what it expanded and the tree's changed vertices
                // (a 3x3 wall and its rim), with the walk cut at the limit.
                assert!(
                    worked as u64 <= 2 * max + 64,
                    "{case}: worked on {worked} cells"
                );
                cut += 1;
            }
        }
    }
    assert!(cut >= 20, "{cut} limited repairs");
}
