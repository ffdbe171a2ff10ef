//! The plan checker catches every broken rule (a checker that accepts everything would
//! make every MAPF test pass).

use pathd_engine::mapf::check::{PlanCosts, PlanError, check_plan};
use pathd_engine::{Grid, Movement, Point, movingai};

fn grid(rows: &str) -> Grid {
    let h = rows.lines().count();
    let w = rows.lines().next().unwrap().len();
    movingai::parse_map(&format!("type octile\nheight {h}\nwidth {w}\nmap\n{rows}")).unwrap()
}

fn p(x: u32, y: u32) -> Point {
    Point::new(x, y)
}

fn check(
    g: &Grid,
    m: Movement,
    paths: &[&[(u32, u32)]],
    goals: bool,
) -> Result<PlanCosts, PlanError> {
    let paths: Vec<Vec<Point>> = paths
        .iter()
        .map(|q| q.iter().map(|&(x, y)| p(x, y)).collect())
        .collect();
    let starts: Vec<Point> = paths.iter().map(|q| q[0]).collect();
    let ends: Vec<Point> = paths.iter().map(|q| q[q.len() - 1]).collect();
    check_plan(g, m, &starts, goals.then_some(&ends[..]), &paths)
}

#[test]
fn valid_plans_with_following_rotation_and_resting() {
    let g = grid("...\n...\n");
    // Following: agent 1 moves into the cell agent 0 leaves in the same step.
    let ok = check(
        &g,
        Movement::Cardinal,
        &[&[(1, 0), (2, 0), (2, 0)], &[(0, 0), (1, 0), (1, 1)]],
        true,
    );
    // Agent 0 rests from t = 1 (cost 1), agent 1 arrives at t = 2 (cost 2).
    assert_eq!(
        ok,
        Ok(PlanCosts {
            sum_of_costs: 3,
            makespan: 2
        })
    );
    // A rotation of four agents around a 2x2 square.
    let g = grid("..\n..\n");
    let rot: [&[(u32, u32)]; 4] = [
        &[(0, 0), (1, 0)],
        &[(1, 0), (1, 1)],
        &[(1, 1), (0, 1)],
        &[(0, 1), (0, 0)],
    ];
    assert_eq!(
        check(&g, Movement::Cardinal, &rot, true).map(|c| c.sum_of_costs),
        Ok(4)
    );
    // An agent that leaves its goal and comes back pays for the whole time.
    let g = grid("...\n");
    let back: [&[(u32, u32)]; 1] = [&[(0, 0), (1, 0), (0, 0), (0, 0)]];
    assert_eq!(
        check(&g, Movement::Cardinal, &back, true).map(|c| c.sum_of_costs),
        Ok(2)
    );
}

#[test]
fn every_broken_rule_is_caught() {
    let g = grid("...\n.@.\n");
    let c = Movement::Cardinal;
    assert!(matches!(
        check(&g, c, &[&[(0, 0), (1, 0)], &[(2, 0), (1, 0)]], true),
        Err(PlanError::Vertex { t: 1, .. })
    ));
    assert!(matches!(
        check(&g, c, &[&[(0, 0), (1, 0)], &[(1, 0), (0, 0)]], true),
        Err(PlanError::Swap { t: 0, .. })
    ));
    assert!(matches!(
        check(&g, c, &[&[(0, 0), (2, 0)]], true),
        Err(PlanError::Jump { .. })
    ));
    assert!(matches!(
        check(&g, c, &[&[(0, 0), (0, 1), (1, 1)]], true),
        Err(PlanError::Blocked { t: 2, .. })
    ));
    // Diagonals: illegal on cardinal maps, and no corner cutting on octile ones.
    assert!(matches!(
        check(&g, c, &[&[(1, 0), (2, 1)]], true),
        Err(PlanError::Jump { .. })
    ));
    assert!(matches!(
        check(&g, Movement::Octile, &[&[(1, 0), (2, 1)]], true),
        Err(PlanError::Jump { .. })
    ));
    assert!(matches!(
        check(&g, c, &[&[(0, 0)], &[(1, 0), (2, 0)]], true),
        Err(PlanError::Shape(_))
    ));
    let open = grid("..\n..\n");
    assert!(check(&open, Movement::Octile, &[&[(0, 0), (1, 1)]], true).is_ok());
    assert!(matches!(
        check(
            &open,
            Movement::Octile,
            &[&[(0, 0), (1, 1)], &[(1, 0), (0, 1)]],
            true
        ),
        Err(PlanError::Crossing { t: 0, .. })
    ));
    // Starts and goals are checked against the instance.
    let paths = vec![vec![p(0, 0), p(1, 0)]];
    assert!(matches!(
        check_plan(&g, c, &[p(1, 0)], None, &paths),
        Err(PlanError::Endpoint { t: 0, .. })
    ));
    assert!(matches!(
        check_plan(&g, c, &[p(0, 0)], Some(&[p(2, 0)]), &paths),
        Err(PlanError::Endpoint { t: 1, .. })
    ));
    assert!(check_plan(&g, c, &[p(0, 0)], None, &paths).is_ok());
}
