//! Search traces of HPA*: on seeded random maps, the trace accounts for every expansion,
//! its abstract search runs over the recorded entrances, its abstract path joins start and
//! goal, and its refinement replays to the answer's path. Tracing never changes the answer.

use crate::common::{random_grid, random_passable, show};

use pathd_engine::trace::{Phase, RefineKind, TraceKind, find_path_traced};
use pathd_engine::{
    Abstraction, Algorithm, Derived, Grid, HpaConfig, Movement, Point, Query, Status,
};
use rand::SeedableRng;
use rand::rngs::StdRng;

/// Replays an HPA* trace's refinement steps into a path, checking that each appending step
/// starts where the path so far ends and that every step is a legal path.
fn replay(grid: &Grid, steps: &[pathd_engine::trace::RefineStep]) -> Result<Vec<Point>, String> {
    let mut path: Vec<Point> = Vec::new();
    for s in steps {
        if grid.path_cost(&s.cells).is_none() {
            return Err(format!(
                "{:?} step is not a legal path: {:?}",
                s.kind, s.cells
            ));
        }
        if s.kind.replaces() || path.is_empty() {
            path.clone_from(&s.cells);
        } else if path.last() != s.cells.first() {
            return Err(format!(
                "{:?} step does not start at {:?}",
                s.kind,
                path.last()
            ));
        } else {
            path.extend_from_slice(&s.cells[1..]);
        }
    }
    Ok(path)
}

#[test]
fn hpa_traces_account_for_the_search_and_replay_to_the_answer() {
    let cap = 1_000_000;
    // How many of each refinement step the seeds exercised.
    let mut seen = std::collections::HashMap::new();
    for seed in 0..24u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let weighted = seed % 2 == 1;
        let movement = if seed % 3 == 2 {
            Movement::Cardinal
        } else {
            Movement::Octile
        };
        let grid = random_grid(&mut rng, 64, 48, 0.2, weighted, movement);
        // Without a path cache, intra-cluster edges are refined by searches.
        let cache = if seed % 4 < 2 { 0 } else { 64 << 20 };
        let hpa = Abstraction::build_with(
            &grid,
            HpaConfig {
                path_cache_bytes: cache,
                ..HpaConfig::with_cluster_size(8)
            },
        );
        for _ in 0..6 {
            let (Some(start), Some(goal)) = (
                random_passable(&mut rng, &grid),
                random_passable(&mut rng, &grid),
            ) else {
                continue;
            };
            let mut q = Query::new(start, goal);
            q.algorithm = Algorithm::Hpa;
            let plain = hpa.find_path(&grid, &q).unwrap();
            let (r, t) = find_path_traced(
                &grid,
                Derived {
                    hpa: Some(&hpa),
                    jump_table: None,
                    subgoal: None,
                    landmarks: None,
                    sized: None,
                },
                &q,
                cap,
            )
            .unwrap();
            let ctx = || {
                format!(
                    "seed {seed} {start} -> {goal}\n{}",
                    show(&grid, start, goal, &r.path)
                )
            };
            assert_eq!((&r.path, r.cost), (&plain.path, plain.cost), "{}", ctx());
            assert_eq!(r.stats.expanded, plain.stats.expanded, "{}", ctx());
            if r.status != Status::Found {
                continue;
            }
            // Every expansion of every phase is recorded.
            assert!(!t.truncated);
            let expand = t
                .events
                .iter()
                .filter(|e| e.kind == TraceKind::Expand)
                .count();
            assert_eq!(expand as u64, r.stats.expanded, "{}", ctx());
            assert!(
                t.events.iter().all(|e| e.phase != Phase::Search),
                "{}",
                ctx()
            );
            for e in &t.events {
                assert!((e.f - (e.g + t.weight * e.h)).abs() < 1e-9, "{e:?}");
            }
            let h = t.hpa.as_ref().expect("an HPA* trace has its record");
            assert_eq!(h.cluster_size, 8);
            // The refinement replays to the answer.
            let replayed =
                replay(&grid, &h.refinement).unwrap_or_else(|e| panic!("{e}\n{}", ctx()));
            assert_eq!(replayed, r.path, "{}", ctx());
            if h.abstract_path.is_empty() {
                // The window answered: no abstract search ran.
                assert_eq!(h.refinement.last().unwrap().kind, RefineKind::Window);
                assert!(t.events.iter().all(|e| e.phase == Phase::Window));
                continue;
            }
            // The abstract path joins start and goal through entrances, its costs rising,
            // and its last cost is the abstract search's g at the goal.
            let ap = &h.abstract_path;
            assert_eq!((ap[0].0, ap[ap.len() - 1].0), (start, goal), "{}", ctx());
            assert!(ap.windows(2).all(|w| w[0].1 <= w[1].1));
            for (p, _) in &ap[1..ap.len() - 1] {
                assert!(h.entrances.contains(p), "{p} is not an entrance\n{}", ctx());
            }
            // Abstract events are over entrances (and the start and goal); the goal's last
            // push carries the abstract path's cost.
            let abs: Vec<_> = t
                .events
                .iter()
                .filter(|e| e.phase == Phase::Abstract)
                .collect();
            assert!(
                abs.iter()
                    .all(|e| e.node == start || e.node == goal || h.entrances.contains(&e.node))
            );
            let g_goal = abs.iter().rev().find(|e| e.node == goal).unwrap().g;
            assert!((g_goal - ap[ap.len() - 1].1).abs() < 1e-9, "{}", ctx());
            // One appending step per abstract edge, joining consecutive abstract nodes;
            // refinement searches record their events before their step.
            let appends: Vec<_> = h.refinement.iter().filter(|s| !s.kind.replaces()).collect();
            assert_eq!(appends.len(), ap.len() - 1, "{}", ctx());
            for (s, w) in appends.iter().zip(ap.windows(2)) {
                assert_eq!((s.cells[0], *s.cells.last().unwrap()), (w[0].0, w[1].0));
                if s.kind == RefineKind::Search {
                    let before = &t.events[..s.after_events];
                    let last = before.last().unwrap();
                    assert_eq!(
                        (last.phase, last.kind, last.node),
                        (Phase::Refine, TraceKind::Expand, w[1].0)
                    );
                }
            }
            assert!(
                h.refinement
                    .iter()
                    .any(|s| s.kind == RefineKind::Straighten)
            );
            for s in &h.refinement {
                *seen.entry(s.kind.as_str()).or_insert(0) += 1;
            }
            let after: Vec<usize> = h.refinement.iter().map(|s| s.after_events).collect();
            assert!(
                after.windows(2).all(|w| w[0] <= w[1]) && *after.last().unwrap() <= t.events.len()
            );
        }
    }
    for kind in [
        "start",
        "goal",
        "cross",
        "cached",
        "search",
        "corridor",
        "straighten",
    ] {
        assert!(
            seen.get(kind).is_some_and(|&n| n > 0),
            "no {kind} step: {seen:?}"
        );
    }
}

#[test]
fn hpa_traces_hold_the_cap() {
    let grid = Grid::from_costs(96, 96, vec![1; 96 * 96], Movement::Octile).unwrap();
    let hpa = Abstraction::build(&grid, 8);
    let mut q = Query::new(Point::new(0, 0), Point::new(95, 95));
    q.algorithm = Algorithm::Hpa;
    q.partial = true;
    let (r, t) = find_path_traced(
        &grid,
        Derived {
            hpa: Some(&hpa),
            jump_table: None,
            subgoal: None,
            landmarks: None,
            sized: None,
        },
        &q,
        40,
    )
    .unwrap();
    assert!(t.truncated);
    assert_eq!(
        t.events
            .iter()
            .filter(|e| e.kind == TraceKind::Expand)
            .count(),
        40
    );
    assert!(r.stats.expanded > 40);
    let h = t.hpa.unwrap();
    assert!(h.entrances.len() <= 40);
    // The refinement is recorded whole (it is as long as the answer).
    if r.status == Status::Found {
        assert_eq!(h.refinement.last().unwrap().cells, r.path);
    }
}

/// A searcher owns its recorder (no thread-local): two searchers traced in turn on one
/// thread record the same HPA* trace as a fresh one, and a searcher that traced an HPA*
/// query then traces (or answers untraced) an A* query with nothing left over from the first.
#[test]
fn a_searcher_owns_its_trace() {
    let mut costs = vec![1u8; 96 * 96];
    for y in 10..90 {
        costs[y * 96 + 48] = 0;
    }
    let grid = Grid::from_costs(96, 96, costs, Movement::Octile).unwrap();
    let hpa = Abstraction::build(&grid, 8);
    let derived = Derived {
        hpa: Some(&hpa),
        jump_table: None,
        subgoal: None,
        landmarks: None,
        sized: None,
    };
    let q = Query::new(Point::new(2, 50), Point::new(93, 50)).with_algorithm(Algorithm::Hpa);
    let (mut a, mut b) = (pathd_engine::Searcher::new(), pathd_engine::Searcher::new());
    let (ra, ta) = a.find_path_traced(&grid, derived, &q, 10_000).unwrap();
    let (rb, tb) = b.find_path_traced(&grid, derived, &q, 10_000).unwrap();
    let (rf, tf) = find_path_traced(&grid, derived, &q, 10_000).unwrap();
    assert_eq!(ra.status, Status::Found);
    for (r, t) in [(&rb, &tb), (&rf, &tf)] {
        assert_eq!((&r.path, t.events.len()), (&ra.path, ta.events.len()));
        assert_eq!(
            t.hpa.as_ref().unwrap().abstract_path,
            ta.hpa.as_ref().unwrap().abstract_path
        );
    }
    let plain = Query::new(Point::new(2, 50), Point::new(93, 50));
    let untraced = a.find_path(&grid, &plain).unwrap();
    let (r, t) = a
        .find_path_traced(&grid, Derived::default(), &plain, 100_000)
        .unwrap();
    assert_eq!((r.path, r.cost), (untraced.path, untraced.cost));
    assert!(t.hpa.is_none() && t.runs == 1);
    let expanded = t
        .events
        .iter()
        .filter(|e| e.kind == TraceKind::Expand)
        .count();
    assert_eq!(expanded as u64, r.stats.expanded);
}
