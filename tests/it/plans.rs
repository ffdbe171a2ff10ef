//! Multi-agent plans over a real server (`POST /v1/maps/{name}/plans`) and `pathd mapf`:
//! plans checked cell by cell by the engine's plan checker, costs and lower bounds
//! recomputed (the lower bound against the server's own single-agent paths), outcomes,
//! limits and every error code.

use pathd_engine::mapf::check::check_plan;
use pathd_engine::{Grid, Movement, Point, movingai};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use crate::common::{TestServer, api_error, expect_error};
use pathd_client::{PathRequest, PlanAgent, PlanRequest, PlanResult};

/// A seeded `w x h` map with about 12% walls, as Moving AI text.
fn map_text(seed: u64, w: u32, h: u32) -> String {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut s = format!("type octile\nheight {h}\nwidth {w}\nmap\n");
    for _ in 0..h {
        for _ in 0..w {
            s.push(if rng.random_bool(0.12) { '@' } else { '.' });
        }
        s.push('\n');
    }
    s
}

/// `n` agents with distinct starts and goals in `grid`'s largest component.
fn agents(seed: u64, grid: &Grid, n: usize) -> (Vec<Point>, Vec<Point>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let cells: Vec<Point> = (0..grid.height())
        .flat_map(|y| (0..grid.width()).map(move |x| Point::new(x, y)))
        .filter(|&p| grid.is_passable(p))
        .collect();
    let big = *cells
        .iter()
        .max_by_key(|&&p| cells.iter().filter(|&&q| grid.same_component(p, q)).count())
        .unwrap();
    let mut pool: Vec<Point> = cells
        .into_iter()
        .filter(|&p| grid.same_component(p, big))
        .collect();
    let mut pick = |pool: &mut Vec<Point>| -> Vec<Point> {
        let mut left = pool.clone();
        (0..n)
            .map(|_| left.swap_remove(rng.random_range(0..left.len())))
            .collect()
    };
    let s = pick(&mut pool);
    let g = pick(&mut pool);
    (s, g)
}

/// Fewest moves from `a` to `b` under the grid's own step rule.
fn bfs(grid: &Grid, a: Point, b: Point) -> u64 {
    let mut dist = std::collections::HashMap::from([(a, 0u64)]);
    let mut queue = std::collections::VecDeque::from([a]);
    while let Some(p) = queue.pop_front() {
        if p == b {
            return dist[&p];
        }
        for dy in -1i64..=1 {
            for dx in -1i64..=1 {
                let (x, y) = (p.x as i64 + dx, p.y as i64 + dy);
                let q = Point::new(x.max(0) as u32, y.max(0) as u32);
                if x >= 0 && y >= 0 && grid.step_cost(p, q).is_some() && !dist.contains_key(&q) {
                    dist.insert(q, dist[&p] + 1);
                    queue.push_back(q);
                }
            }
        }
    }
    panic!("{b} unreachable from {a}")
}

/// The request of a plan of agents from `s` to `g` (also for the live plans' tests).
pub(crate) fn request(s: &[Point], g: &[Point]) -> PlanRequest {
    PlanRequest {
        agents: s
            .iter()
            .zip(g)
            .map(|(a, b)| PlanAgent {
                start: [a.x, a.y],
                goal: [b.x, b.y],
            })
            .collect(),
        ..PlanRequest::default()
    }
}

/// A plan that must be answered.
async fn plan_ok(s: &TestServer, name: &str, req: &PlanRequest) -> PlanResult {
    s.pathd()
        .plan_agents(name, req)
        .await
        .unwrap_or_else(|e| panic!("plan on {name}: {e}"))
}

/// A raw `POST .../plans` (for a body the client's `PlanRequest` cannot carry: an unknown
/// field).
async fn plan(s: &TestServer, name: &str, body: &Value) -> reqwest::Response {
    s.client
        .post(s.at(&format!("/v1/maps/{name}/plans")))
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Uploads a new Moving AI map with a `movement` that overrides its `type` line.
async fn put(s: &TestServer, name: &str, text: &str, movement: &str) {
    let (created, m) = (s
        .pathd()
        .put_map_text_with(name, text, Some(movement))
        .await)
        .unwrap_or_else(|e| panic!("PUT {name}: {e}"));
    assert!(created, "{name} was not new");
    assert_eq!(m.movement, movement);
}

fn paths_of(v: &PlanResult) -> Vec<Vec<Point>> {
    (v.paths.iter())
        .map(|p| p.iter().map(|c| Point::new(c[0], c[1])).collect())
        .collect()
}

#[tokio::test]
async fn plans_are_valid_and_their_costs_recomputed_on_both_movements() {
    let s = TestServer::new().await;
    let text = map_text(7, 16, 16);
    for movement in [Movement::Cardinal, Movement::Octile] {
        let name = movement.as_str();
        put(&s, name, &text, name).await;
        let grid = movingai::parse_map(&text).unwrap().with_movement(movement);
        let (st, g) = agents(1, &grid, 40);
        let req = PlanRequest {
            time_limit_ms: Some(300),
            ..request(&st, &g)
        };
        let v = plan_ok(&s, name, &req).await;
        assert_eq!(v.status, "solved", "{v:?}");
        assert_eq!(v.map_version, 1);
        assert_eq!(v.objective.as_deref(), Some("sum_of_costs"));
        let paths = paths_of(&v);
        let costs = check_plan(&grid, movement, &st, Some(&g), &paths)
            .unwrap_or_else(|e| panic!("{e}: {v:?}"));
        assert_eq!(v.sum_of_costs, costs.sum_of_costs);
        assert_eq!(v.makespan, costs.makespan);
        // The lower bound is the sum of the agents' own fewest moves: on the cardinal map
        // what /path finds (every cell costs 1), on both a breadth-first search here.
        let mut lb = 0;
        for (a, b) in st.iter().zip(&g) {
            let moves = bfs(&grid, *a, *b);
            if movement == Movement::Cardinal {
                let q = PathRequest::new([a.x, a.y], [b.x, b.y]);
                let p = s.pathd().find_path(name, &q).await.unwrap();
                assert_eq!(p.path.len() as u64 - 1, moves);
            }
            lb += moves;
        }
        assert_eq!(v.lower_bound, lb);
        assert!(costs.sum_of_costs >= lb);
        assert!(v.elapsed_ms.unwrap() > 0.0);
        assert!(v.first_solution_ms.is_some());
    }
}

#[tokio::test]
async fn first_solution_makespan_and_unsolvable_instances() {
    let s = TestServer::new().await;
    let text = map_text(3, 12, 12);
    put(&s, "m", &text, "cardinal").await;
    let grid = movingai::parse_map(&text)
        .unwrap()
        .with_movement(Movement::Cardinal);
    let (st, g) = agents(2, &grid, 30);
    let req = PlanRequest {
        first_solution: Some(true),
        objective: Some("makespan".into()),
        time_limit_ms: Some(5000),
        ..request(&st, &g)
    };
    let v = plan_ok(&s, "m", &req).await;
    assert_eq!(
        (v.status.as_str(), v.objective.as_deref()),
        ("solved", Some("makespan")),
        "{v:?}"
    );
    let costs = check_plan(&grid, Movement::Cardinal, &st, Some(&g), &paths_of(&v)).unwrap();
    assert_eq!(v.makespan, costs.makespan);
    assert!(v.lower_bound <= costs.makespan);
    // Two agents that must pass each other in a dead-end corridor cannot: failed.
    put(
        &s,
        "corridor",
        "type octile\nheight 1\nwidth 4\nmap\n....\n",
        "cardinal",
    )
    .await;
    let (st, g) = (
        [Point::new(0, 0), Point::new(3, 0)],
        [Point::new(3, 0), Point::new(0, 0)],
    );
    let v = plan_ok(&s, "corridor", &request(&st, &g)).await;
    assert_eq!(v.status, "failed", "{v:?}");
    assert_eq!(v.paths, [vec![[0, 0]], vec![[3, 0]]]);
    // An unreachable goal: failed too.
    put(
        &s,
        "split",
        "type octile\nheight 1\nwidth 3\nmap\n.@.\n",
        "cardinal",
    )
    .await;
    let one = request(&[Point::new(0, 0)], &[Point::new(2, 0)]);
    let v = plan_ok(&s, "split", &one).await;
    assert_eq!(v.status, "failed", "{v:?}");
}

#[tokio::test]
async fn every_bad_request_has_its_code() {
    let s = TestServer::new().await;
    put(
        &s,
        "m",
        "type octile\nheight 2\nwidth 3\nmap\n.@.\n...\n",
        "cardinal",
    )
    .await;
    let a = |sx, sy, gx, gy| PlanAgent {
        start: [sx, sy],
        goal: [gx, gy],
    };
    let req = |agents: Vec<PlanAgent>| PlanRequest {
        agents,
        ..PlanRequest::default()
    };
    let ok = vec![a(0, 0, 2, 0)];
    let cases = [
        (req(vec![a(1, 0, 2, 0)]), 400, "start_blocked"),
        (req(vec![a(0, 0, 1, 0)]), 400, "goal_blocked"),
        (req(vec![a(0, 0, 7, 0)]), 400, "out_of_bounds"),
        (
            req(vec![a(0, 0, 2, 0), a(0, 0, 0, 1)]),
            400,
            "invalid_request",
        ),
        (
            req(vec![a(0, 0, 2, 0), a(0, 1, 2, 0)]),
            400,
            "invalid_request",
        ),
        (req(vec![]), 400, "invalid_request"),
        (
            PlanRequest {
                objective: Some("fastest".into()),
                ..req(ok.clone())
            },
            400,
            "invalid_request",
        ),
        (
            PlanRequest {
                time_limit_ms: Some(0),
                ..req(ok.clone())
            },
            400,
            "invalid_request",
        ),
        (
            PlanRequest {
                time_limit_ms: Some(30001),
                ..req(ok.clone())
            },
            400,
            "invalid_request",
        ),
        (req(vec![a(0, 0, 2, 0); 2001]), 413, "too_many_agents"),
    ];
    let pathd = s.pathd();
    for (body, status, code) in cases {
        api_error(pathd.plan_agents("m", &body).await, status, code);
    }
    // Raw: an unknown field, which the client's `PlanRequest` cannot carry.
    let unknown = json!({"agents": [{"start": [0, 0], "goal": [2, 0]}], "colour": "red"});
    expect_error(plan(&s, "m", &unknown).await, 400, "invalid_request").await;
    let cases = [
        PlanRequest {
            size: Some(2),
            ..req(ok.clone())
        },
        PlanRequest {
            profile: Some("truck".into()),
            ..req(ok.clone())
        },
        PlanRequest {
            subscribe: Some(true),
            size: Some(2),
            ..req(ok.clone())
        },
    ];
    for body in cases {
        api_error(pathd.plan_agents("m", &body).await, 400, "not_applicable");
    }
    api_error(
        pathd.plan_agents("nope", &req(ok.clone())).await,
        404,
        "map_not_found",
    );
    // `size: 1` is the only size, and is accepted.
    let one = PlanRequest {
        size: Some(1),
        ..req(ok)
    };
    let v = pathd.plan_agents("m", &one).await.unwrap();
    assert_eq!(v.status, "solved", "{v:?}");
}

#[test]
fn the_cli_prints_the_same_fields_and_writes_a_plan_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = map_text(11, 16, 16);
    let grid = movingai::parse_map(&text)
        .unwrap()
        .with_movement(Movement::Cardinal);
    let (st, g) = agents(5, &grid, 25);
    let mut scen = "version 1\n".to_owned();
    for (a, b) in st.iter().zip(&g) {
        scen += &format!("0\tm.map\t16\t16\t{}\t{}\t{}\t{}\t0\n", a.x, a.y, b.x, b.y);
    }
    std::fs::write(dir.path().join("m.map"), &text).unwrap();
    std::fs::write(dir.path().join("m.scen"), scen).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pathd"))
        .current_dir(dir.path())
        .args([
            "mapf",
            "m.map",
            "m.scen",
            "-N",
            "20",
            "--time-limit-ms",
            "200",
            "--plan-out",
            "plan.txt",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for field in [
        "status",
        "paths",
        "sum_of_costs",
        "makespan",
        "lower_bound",
        "map_version",
        "elapsed_ms",
    ] {
        assert!(v.get(field).is_some(), "{field} missing: {v}");
    }
    assert_eq!(v["status"], "solved");
    let plan: PlanResult = serde_json::from_value(v.clone()).unwrap();
    let paths = paths_of(&plan);
    let costs = check_plan(&grid, Movement::Cardinal, &st[..20], Some(&g[..20]), &paths).unwrap();
    assert_eq!(v["sum_of_costs"], costs.sum_of_costs);
    // The plan file: LaCAM3's result format, one configuration a line.
    let file = std::fs::read_to_string(dir.path().join("plan.txt")).unwrap();
    assert!(file.contains("solved=1\n") && file.contains(&format!("soc={}\n", costs.sum_of_costs)));
    let steps: Vec<&str> = file.split("solution=\n").nth(1).unwrap().lines().collect();
    assert_eq!(steps.len() as u64, costs.makespan + 1);
    for (t, line) in steps.iter().enumerate() {
        let cells: Vec<String> = paths
            .iter()
            .map(|p| format!("({},{}),", p[t].x, p[t].y))
            .collect();
        assert_eq!(*line, format!("{t}:{}", cells.concat()));
    }
}
