//! One table of small hand-made scenarios, run against every optimal algorithm.

use crate::common::check_path;
use pathd_engine::movingai::parse_map;
use pathd_engine::{Algorithm, Grid, Movement, Point, Query, QueryError, Searcher, Status};

const SQ2: f64 = std::f64::consts::SQRT_2;

struct Case {
    name: &'static str,
    rows: &'static [&'static str],
    movement: Movement,
    start: (u32, u32),
    goal: (u32, u32),
    /// `None` = no path.
    cost: Option<f64>,
}

const CASES: &[Case] = &[
    Case {
        name: "one cell",
        rows: &["."],
        movement: Movement::Octile,
        start: (0, 0),
        goal: (0, 0),
        cost: Some(0.0),
    },
    Case {
        name: "diagonal",
        rows: &["...", "...", "..."],
        movement: Movement::Octile,
        start: (0, 0),
        goal: (2, 2),
        cost: Some(2.0 * SQ2),
    },
    Case {
        name: "cardinal",
        rows: &["...", "...", "..."],
        movement: Movement::Cardinal,
        start: (0, 0),
        goal: (2, 2),
        cost: Some(4.0),
    },
    Case {
        name: "no corner cutting",
        rows: &[".@", ".."],
        movement: Movement::Octile,
        start: (0, 0),
        goal: (1, 1),
        cost: Some(2.0),
    },
    Case {
        name: "diagonal gap is closed",
        rows: &[".@", "@."],
        movement: Movement::Octile,
        start: (0, 0),
        goal: (1, 1),
        cost: None,
    },
    Case {
        name: "wall",
        rows: &[".@.", ".@.", ".@."],
        movement: Movement::Octile,
        start: (0, 0),
        goal: (2, 0),
        cost: None,
    },
    Case {
        name: "detour",
        rows: &["....", ".@@.", "...."],
        movement: Movement::Octile,
        start: (0, 1),
        goal: (3, 1),
        cost: Some(5.0),
    },
    Case {
        name: "corridor",
        rows: &["@@@@@", ".....", "@@@@@"],
        movement: Movement::Octile,
        start: (0, 1),
        goal: (4, 1),
        cost: Some(4.0),
    },
];

fn grid(c: &Case) -> Grid {
    let text = format!(
        "type octile\nheight {}\nwidth {}\nmap\n{}\n",
        c.rows.len(),
        c.rows[0].len(),
        c.rows.join("\n")
    );
    parse_map(&text).unwrap().with_movement(c.movement)
}

#[test]
fn table_against_every_optimal_algorithm() {
    let mut s = Searcher::new();
    for c in CASES {
        let g = grid(c);
        let (start, goal) = (
            Point::new(c.start.0, c.start.1),
            Point::new(c.goal.0, c.goal.1),
        );
        for alg in [
            Algorithm::AStar,
            Algorithm::Dijkstra,
            Algorithm::WeightedAStar,
            Algorithm::Auto,
        ] {
            let r = s
                .find_path(&g, &Query::new(start, goal).with_algorithm(alg))
                .unwrap();
            match c.cost {
                None => assert_eq!(r.status, Status::NoPath, "{} {alg}", c.name),
                Some(cost) => {
                    assert_eq!(r.status, Status::Found, "{} {alg}", c.name);
                    assert!(
                        (r.cost - cost).abs() < 1e-9,
                        "{} {alg}: {} != {cost}",
                        c.name,
                        r.cost
                    );
                    check_path(&g, &r.path, start, goal, r.cost).unwrap();
                }
            }
        }
    }
}

#[test]
fn weighted_steps_average_the_two_cells() {
    // Crossing a cost-9 strip (cost 1 -> 9 -> 1) vs walking round it.
    let costs = vec![1, 9, 1, 1, 9, 1, 1, 1, 1];
    let g = Grid::from_costs(3, 3, costs, Movement::Cardinal).unwrap();
    let r = pathd_engine::find_path(&g, &Query::new(Point::new(0, 0), Point::new(2, 0))).unwrap();
    // Through: (1+9)/2 + (9+1)/2 = 10. Round: 6 cardinal steps of cost 1 = 6.
    assert_eq!(r.cost, 6.0);
    assert_eq!(r.path.len(), 7);
}

#[test]
fn misuse_is_an_error() {
    let g = grid(&CASES[5]);
    let s = Point::new(0, 0);
    assert!(matches!(
        pathd_engine::find_path(&g, &Query::new(s, Point::new(3, 0))),
        Err(QueryError::OutOfBounds { which: "goal", .. })
    ));
    assert_eq!(
        pathd_engine::find_path(&g, &Query::new(Point::new(1, 0), s)).unwrap_err(),
        QueryError::StartBlocked(Point::new(1, 0))
    );
    assert_eq!(
        pathd_engine::find_path(&g, &Query::new(s, Point::new(1, 1))).unwrap_err(),
        QueryError::GoalBlocked(Point::new(1, 1))
    );
    let mut q = Query::new(s, Point::new(0, 2)).with_algorithm(Algorithm::WeightedAStar);
    q.weight = 0.5;
    assert_eq!(
        pathd_engine::find_path(&g, &q).unwrap_err(),
        QueryError::InvalidWeight(0.5)
    );
    q.weight = f64::NAN;
    assert!(pathd_engine::find_path(&g, &q).is_err());
    // The weight is bounded (1..=100) and checked whatever the algorithm.
    for (algorithm, w) in [
        (Algorithm::WeightedAStar, 100.5),
        (Algorithm::WeightedAStar, 1e307),
        (Algorithm::AStar, 0.0),
        (Algorithm::Dijkstra, -2.0),
    ] {
        let mut q = Query::new(s, Point::new(0, 2)).with_algorithm(algorithm);
        q.weight = w;
        assert_eq!(
            pathd_engine::find_path(&g, &q).unwrap_err(),
            QueryError::InvalidWeight(w),
            "{algorithm}"
        );
    }
    q.weight = 100.0;
    assert!(pathd_engine::find_path(&g, &q).is_ok());
}

#[test]
fn engine_types_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Grid>();
    assert_send_sync::<Query>();
    assert_send_sync::<pathd_engine::SearchResult>();
    fn assert_send<T: Send>() {}
    assert_send::<Searcher>();
}
