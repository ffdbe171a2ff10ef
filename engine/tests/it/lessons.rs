//! The lessons' query options ([`Query::heuristic`], [`Query::tie_break`]): what each one
//! changes (and what it must not), the `keeps_guarantee` flag, and the worked example.

use pathd_engine::trace::{TraceKind, find_path_traced};
use pathd_engine::{
    Algorithm, Grid, HeuristicKind, Movement, Point, Query, QueryError, Status, TieBreak, find_path,
};

fn grid(w: u32, h: u32, walls: &[(u32, u32)], movement: Movement) -> Grid {
    let mut c = vec![1u8; (w * h) as usize];
    for &(x, y) in walls {
        c[(y * w + x) as usize] = 0;
    }
    Grid::from_costs(w, h, c, movement).unwrap()
}

/// Two walls across a 30x20 octile map (the page's Manhattan lesson).
fn two_walls() -> Grid {
    let mut walls = Vec::new();
    for y in 3..=16 {
        walls.extend([(10, y), (11, y)]);
    }
    for y in 0..=12 {
        walls.extend([(18, y), (19, y)]);
    }
    grid(30, 20, &walls, Movement::Octile)
}

fn q(s: (u32, u32), g: (u32, u32)) -> Query {
    Query::new(Point::new(s.0, s.1), Point::new(g.0, g.1))
}

#[test]
fn manhattan_on_an_octile_map_is_flagged_and_longer_the_others_are_optimal() {
    let g = two_walls();
    let best = find_path(&g, &q((2, 2), (27, 17))).unwrap();
    assert!(best.keeps_guarantee);
    let mut m = q((2, 2), (27, 17));
    m.heuristic = Some(HeuristicKind::Manhattan);
    let r = find_path(&g, &m).unwrap();
    assert!(!r.keeps_guarantee);
    assert!(r.cost > best.cost + 1e-9, "{} vs {}", r.cost, best.cost);
    for h in HeuristicKind::ALL
        .into_iter()
        .filter(|&h| h != HeuristicKind::Manhattan)
    {
        for alg in [Algorithm::AStar, Algorithm::Dijkstra] {
            let mut x = q((2, 2), (27, 17)).with_algorithm(alg);
            x.heuristic = Some(h);
            let r = find_path(&g, &x).unwrap();
            assert!(r.keeps_guarantee, "{h:?}");
            assert!((r.cost - best.cost).abs() < 1e-9, "{h:?} {alg}: {}", r.cost);
        }
    }
    // On a cardinal map Manhattan is the default and admissible.
    let c = g.with_movement(Movement::Cardinal);
    let r = find_path(&c, &m).unwrap();
    assert!(r.keeps_guarantee);
    assert_eq!(r.cost, find_path(&c, &q((2, 2), (27, 17))).unwrap().cost);
}

#[test]
fn the_default_options_are_the_search_as_it_was() {
    // Asking for the defaults explicitly goes through the lesson estimate, and must expand
    // exactly what the default search does.
    let g = two_walls();
    let plain = find_path(&g, &q((2, 2), (27, 17))).unwrap();
    let mut explicit = q((2, 2), (27, 17));
    explicit.heuristic = Some(HeuristicKind::Octile);
    explicit.tie_break = TieBreak::HighG;
    let r = find_path(&g, &explicit).unwrap();
    assert_eq!(
        (r.cost, r.stats.expanded, r.path.clone()),
        (plain.cost, plain.stats.expanded, plain.path)
    );
}

#[test]
fn ties_change_the_work_not_the_cost() {
    let g = grid(40, 30, &[], Movement::Cardinal);
    let by = |t| {
        let mut x = q((3, 3), (36, 26));
        x.tie_break = t;
        find_path(&g, &x).unwrap()
    };
    let high = by(TieBreak::HighG);
    let none = by(TieBreak::None);
    let cross = by(TieBreak::CrossProduct);
    let eps = by(TieBreak::Epsilon);
    // The fat diamond: every cell of the 34x24 rectangle ties at f = 56.
    assert!(
        none.stats.expanded > 5 * high.stats.expanded,
        "{} vs {}",
        none.stats.expanded,
        high.stats.expanded
    );
    for r in [&none, &cross, &eps] {
        assert_eq!(r.cost, high.cost);
    }
    assert!(high.keeps_guarantee && none.keeps_guarantee && cross.keeps_guarantee);
    assert!(!eps.keeps_guarantee);
    // The cross product keeps the path near the line: no cell further from it than the
    // high_g path's furthest.
    let off = |p: &Point| ((p.x as f64 - 3.0) * 23.0 - (p.y as f64 - 3.0) * 33.0).abs();
    let worst = |path: &[Point]| path.iter().map(off).fold(0.0, f64::max);
    assert!(worst(&cross.path) < worst(&high.path));
}

#[test]
fn lessons_apply_to_astar_dijkstra_and_weighted_astar_only() {
    let g = two_walls();
    for alg in [Algorithm::Jps, Algorithm::Theta, Algorithm::Auto] {
        let mut x = q((2, 2), (27, 17)).with_algorithm(alg);
        x.tie_break = TieBreak::None;
        assert!(
            matches!(find_path(&g, &x), Err(QueryError::NotApplicable { .. })),
            "{alg}"
        );
    }
    let mut w = q((2, 2), (27, 17)).with_algorithm(Algorithm::WeightedAStar);
    w.weight = 2.0;
    w.heuristic = Some(HeuristicKind::Euclidean);
    let r = find_path(&g, &w).unwrap();
    assert_eq!(r.status, Status::Found);
    assert!(
        r.keeps_guarantee,
        "weighted A* keeps its bound with an admissible h"
    );
}

#[test]
fn the_worked_3x3_example_expands_with_the_documented_g_h_f() {
    // A* from (0,0) to (2,2) round an obstacle at (1,1), 4-way, Manhattan.
    let g = grid(3, 3, &[(1, 1)], Movement::Cardinal);
    let mut x = q((0, 0), (2, 2));
    x.heuristic = Some(HeuristicKind::Manhattan);
    let (r, t) = find_path_traced(&g, Default::default(), &x, 100).unwrap();
    assert_eq!(r.cost, 4.0);
    let exp: Vec<_> = t
        .events
        .iter()
        .filter(|e| e.kind == TraceKind::Expand)
        .map(|e| ((e.node.x, e.node.y), e.g, e.h, e.f))
        .collect();
    assert_eq!(
        exp,
        vec![
            ((0, 0), 0.0, 4.0, 4.0),
            ((1, 0), 1.0, 3.0, 4.0),
            ((2, 0), 2.0, 2.0, 4.0),
            ((2, 1), 3.0, 1.0, 4.0),
            ((2, 2), 4.0, 0.0, 4.0),
        ]
    );
}
