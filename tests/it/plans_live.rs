//! Live multi-agent plans over a real server (`"subscribe": true`): progress reports,
//! patches that wall the plan, repairs that keep everybody else's path, the event stream
//! (resume, final events), limits and errors. Every plan pushed is checked by the engine's
//! plan checker from the reported positions on the map as patched.

use pathd_engine::mapf::check::check_live_plan;
use pathd_engine::{Grid, Movement, Point, movingai};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use crate::common::{Dirs, TestServer, expect_error, json, repo_file};
use crate::live::sse::Sse;

fn pts(v: &Value) -> Vec<Point> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|c| Point::new(c[0].as_u64().unwrap() as u32, c[1].as_u64().unwrap() as u32))
        .collect()
}

fn paths_of(v: &Value) -> Vec<Vec<Point>> {
    v["paths"].as_array().unwrap().iter().map(pts).collect()
}

fn body(s: &[Point], g: &[Point], extra: Value) -> Value {
    let agents: Vec<Value> = s
        .iter()
        .zip(g)
        .map(|(a, b)| json!({"start": [a.x, a.y], "goal": [b.x, b.y]}))
        .collect();
    let mut v = json!({ "agents": agents, "subscribe": true });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

async fn create(s: &TestServer, map: &str, body: &Value) -> Value {
    let r = s
        .client
        .post(s.at(&format!("/v1/maps/{map}/plans")))
        .json(body)
        .send()
        .await
        .unwrap();
    let loc = r
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_owned());
    let (code, v) = json(r).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(
        loc,
        Some(format!("/v1/plans/{}", v["id"].as_str().unwrap()))
    );
    v
}

async fn get(s: &TestServer, id: &str) -> (u16, Value) {
    json(
        s.client
            .get(s.at(&format!("/v1/plans/{id}")))
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn progress(s: &TestServer, id: &str, secret: &str, body: Value) -> reqwest::Response {
    s.client
        .patch(s.at(&format!("/v1/plans/{id}")))
        .header("x-plan-secret", secret)
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn patch_map(s: &TestServer, map: &str, body: Value) -> u64 {
    let (code, v) = json(
        s.client
            .patch(s.at(&format!("/v1/maps/{map}")))
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(code, 200, "{v}");
    v["version"].as_u64().unwrap()
}

async fn put(s: &TestServer, name: &str, text: &str) {
    let r = s
        .client
        .put(s.at(&format!("/v1/maps/{name}?movement=cardinal")))
        .header("content-type", "text/plain")
        .body(text.to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
}

/// Polls `GET` until the plan holds for map version `v`.
async fn at_version(s: &TestServer, id: &str, v: u64) -> Value {
    for _ in 0..600 {
        let (code, st) = get(s, id).await;
        assert_eq!(code, 200, "{st}");
        if st["map_version"].as_u64().unwrap() >= v {
            return st;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("plan {id} never reached map version {v}");
}

/// `grid` with `walls` walled.
fn walled(grid: &Grid, walls: &[Point]) -> Grid {
    let mut costs = grid.costs();
    for p in walls {
        costs[(p.y * grid.width() + p.x) as usize] = 0;
    }
    Grid::from_costs(grid.width(), grid.height(), costs, grid.movement()).unwrap()
}

/// The plan of state or event `v` from its reported time step `t` on: checked from
/// `positions` to the goals on `grid`; returns the paths from `t`.
fn check_from(
    grid: &Grid,
    v: &Value,
    t: u64,
    positions: &[Point],
    goals: &[Point],
) -> Vec<Vec<Point>> {
    let start = v["start_step"].as_u64().unwrap();
    assert!(start <= t, "{v}");
    let k = (t - start) as usize;
    let paths: Vec<Vec<Point>> = paths_of(v)
        .into_iter()
        .map(|p| p[k.min(p.len() - 1)..].to_vec())
        .collect();
    let goals = (v["status"] == "solved").then_some(goals);
    check_live_plan(grid, Movement::Cardinal, positions, goals, &paths)
        .unwrap_or_else(|e| panic!("invalid plan from step {t}: {e}"));
    paths
}

/// Pads `p` to `len` cells (it rests at its last one).
fn padded(p: &[Point], len: usize) -> Vec<Point> {
    (0..len.max(p.len()))
        .map(|t| p[t.min(p.len() - 1)])
        .collect()
}

const CORRIDOR: &str = "type octile\nheight 5\nwidth 12\nmap\n............\n.@@@@.@@@@@.\n............\n.@@@@.@@@@@.\n............\n";

#[tokio::test]
async fn a_live_plan_follows_patches_and_progress_on_its_stream() {
    let s = TestServer::new().await;
    put(&s, "m", CORRIDOR).await;
    let grid0 = movingai::parse_map(CORRIDOR)
        .unwrap()
        .with_movement(Movement::Cardinal);
    let starts = [Point::new(0, 0), Point::new(0, 4), Point::new(11, 2)];
    let goals = [Point::new(11, 0), Point::new(11, 4), Point::new(0, 2)];
    let v = create(
        &s,
        "m",
        &body(&starts, &goals, json!({"time_limit_ms": 200})),
    )
    .await;
    assert_eq!(
        (v["status"].as_str(), v["seq"].as_u64()),
        (Some("solved"), Some(1))
    );
    let (id, secret) = (v["id"].as_str().unwrap(), v["secret"].as_str().unwrap());
    assert_eq!((id.len(), secret.len()), (32, 32));
    check_from(&grid0, &v, 0, &starts, &goals);

    let (code, st) = get(&s, id).await;
    assert_eq!(code, 200);
    assert_eq!(st["paths"], v["paths"]);
    assert_eq!(
        (st["time_step"].as_u64(), st["reason"].as_str()),
        (Some(0), Some("initial"))
    );
    assert!(st.get("secret").is_none());
    let events = s.at(&format!("/v1/plans/{id}/events"));
    let mut stream = Sse::open(&s.client, &events, None).await;
    let first = stream.next().await.unwrap();
    assert_eq!((first.seq(), first.reason()), (1, "initial"));
    assert_eq!(first.data["paths"], v["paths"]);
    // A real event, not only the contract's example, matches the contract's event schema
    // (schemathesis skips the plan stream: see scripts/schemathesis.sh).
    crate::openapi::assert_schema("LivePlanEvent", &first.data);

    // Writes need the secret.
    let r = s
        .client
        .patch(s.at(&format!("/v1/plans/{id}")))
        .json(&json!({"time_step": 1}))
        .send()
        .await
        .unwrap();
    expect_error(r, 403, "forbidden").await;
    // Progress along the plan: no event.
    let r = progress(&s, id, secret, json!({"time_step": 2})).await;
    let (code, st) = json(r).await;
    assert_eq!(code, 200, "{st}");
    assert_eq!(
        (st["time_step"].as_u64(), st["seq"].as_u64()),
        (Some(2), Some(1))
    );
    let at2: Vec<Point> = paths_of(&v).iter().map(|p| p[2.min(p.len() - 1)]).collect();
    assert_eq!(pts(&st["positions"]), at2);

    // A patch on no remaining path pushes nothing (a wall in a corner nobody visits after
    // step 2, and a cost change).
    let used: std::collections::HashSet<Point> = paths_of(&v)
        .iter()
        .flat_map(|p| p[2.min(p.len() - 1)..].to_vec())
        .collect();
    let spare = (0..12)
        .flat_map(|x| (0..5).map(move |y| Point::new(x, y)))
        .find(|&p| grid0.is_passable(p) && !used.contains(&p) && !goals.contains(&p))
        .expect("a spare cell");
    let v2 = patch_map(
        &s,
        "m",
        json!({"cells": [{"x": spare.x, "y": spare.y, "cost": 0}]}),
    )
    .await;
    let st = at_version(&s, id, v2).await;
    assert_eq!(st["seq"], 1, "{st}");

    // A wall on a remaining path: a `blocked` event with the map version, valid from the
    // positions at step 2 on the patched map.
    let victim = paths_of(&v)
        .iter()
        .flat_map(|p| p[3.min(p.len() - 1)..].to_vec())
        .find(|&c| {
            let g = walled(&grid0, &[spare, c]);
            !goals.contains(&c)
                && !at2.contains(&c)
                && (0..3).all(|i| g.same_component(at2[i], goals[i]))
        })
        .expect("a cell to wall");
    let v3 = patch_map(
        &s,
        "m",
        json!({"cells": [{"x": victim.x, "y": victim.y, "cost": 0}]}),
    )
    .await;
    let ev = stream.next().await.unwrap();
    assert_eq!((ev.seq(), ev.reason()), (2, "blocked"));
    crate::openapi::assert_schema("LivePlanEvent", &ev.data);
    assert_eq!(ev.data["map_version"], v3);
    assert_eq!(ev.data["start_step"], 2);
    let grid3 = walled(&grid0, &[spare, victim]);
    let now = check_from(&grid3, &ev.data, 2, &at2, &goals);
    assert!(now.iter().all(|p| !p.contains(&victim)));

    // A delayed agent: at some step k one that should have moved is still where it was
    // at k - 1. Only it is re-planned where a repair suffices; the others keep their paths.
    let cell = |i: usize, k: usize| now[i][k.min(now[i].len() - 1)];
    let (k, late) = (1..now[0].len().max(2))
        .flat_map(|k| (0..3).map(move |i| (k, i)))
        .find(|&(k, i)| {
            cell(i, k) != cell(i, k - 1) && (0..3).all(|j| cell(j, k) != cell(i, k - 1))
        })
        .unwrap_or_else(|| panic!("an agent that moves: {now:?} {}", ev.data));
    let mut pos3: Vec<Point> = (0..3).map(|i| cell(i, k)).collect();
    pos3[late] = cell(late, k - 1);
    let t3 = 2 + k as u64;
    let body3 =
        json!({"time_step": t3, "positions": pos3.iter().map(|p| [p.x, p.y]).collect::<Vec<_>>()});
    let (code, st) = json(progress(&s, id, secret, body3).await).await;
    assert_eq!(code, 200, "{st}");
    assert_eq!(
        (st["seq"].as_u64(), st["time_step"].as_u64()),
        (Some(3), Some(t3))
    );
    let ev = stream.next().await.unwrap();
    assert_eq!((ev.seq(), ev.reason()), (3, "delayed"));
    assert_eq!(ev.data["paths"], st["paths"]);
    let fixed = check_from(&grid3, &ev.data, t3, &pos3, &goals);
    assert_eq!(ev.data["repaired"], true);
    assert_eq!(ev.data["replanned"], json!([late]));
    for i in (0..3).filter(|&i| i != late) {
        let len = fixed[i].len();
        assert_eq!(fixed[i], padded(&now[i][k.min(now[i].len() - 1)..], len));
    }

    // Malformed reports change nothing.
    let c = |p: Point| [p.x, p.y];
    expect_error(
        progress(&s, id, secret, json!({"time_step": 1})).await,
        400,
        "invalid_request",
    )
    .await;
    expect_error(
        progress(&s, id, secret, json!({"positions": [c(pos3[0])]})).await,
        400,
        "invalid_request",
    )
    .await;
    expect_error(
        progress(
            &s,
            id,
            secret,
            json!({"positions": [c(pos3[0]), c(pos3[0]), c(pos3[2])]}),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    expect_error(
        progress(
            &s,
            id,
            secret,
            json!({"positions": [c(victim), c(pos3[1]), c(pos3[2])]}),
        )
        .await,
        400,
        "start_blocked",
    )
    .await;
    expect_error(
        progress(
            &s,
            id,
            secret,
            json!({"positions": [[99, 1], c(pos3[1]), c(pos3[2])]}),
        )
        .await,
        400,
        "out_of_bounds",
    )
    .await;
    expect_error(
        progress(&s, id, secret, json!({})).await,
        400,
        "invalid_request",
    )
    .await;
    expect_error(
        progress(&s, id, secret, json!({"time_step": 4, "colour": 1})).await,
        400,
        "invalid_request",
    )
    .await;

    // Resuming from seq 1 replays what followed.
    let last = stream_seq(&s, id).await;
    let mut again = Sse::open(&s.client, &events, Some(1)).await;
    let ev = again.next().await.unwrap();
    assert_eq!(ev.seq(), 2);
    assert_eq!(ev.reason(), "blocked");
    // Delete: 204, the streams end with `deleted`, then 404.
    let r = s
        .client
        .delete(s.at(&format!("/v1/plans/{id}")))
        .header("x-plan-secret", secret)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let mut end = None;
    while let Some(ev) = again.next().await {
        end = Some(ev);
    }
    let end = end.unwrap();
    assert_eq!((end.seq(), end.reason()), (last + 1, "deleted"));
    expect_error(raw_get(&s, id).await, 404, "plan_not_found").await;
}

/// The plan's newest `seq`.
async fn stream_seq(s: &TestServer, id: &str) -> u64 {
    get(s, id).await.1["seq"].as_u64().unwrap()
}

async fn raw_get(s: &TestServer, id: &str) -> reqwest::Response {
    s.client
        .get(s.at(&format!("/v1/plans/{id}")))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn map_deletion_ends_live_plans_and_the_server_holds_a_bounded_number() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.max_live_plans = 1;
    let s = TestServer::start(dirs, config).await;
    put(&s, "m", CORRIDOR).await;
    let b = body(&[Point::new(0, 0)], &[Point::new(11, 4)], json!({}));
    let v = create(&s, "m", &b).await;
    let r = s
        .client
        .post(s.at("/v1/maps/m/plans"))
        .json(&b)
        .send()
        .await
        .unwrap();
    expect_error(r, 429, "too_many_plans").await;
    // A plain plan is not held: still fine.
    let mut plain = b.clone();
    plain["subscribe"] = json!(false);
    let r = s
        .client
        .post(s.at("/v1/maps/m/plans"))
        .json(&plain)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let id = v["id"].as_str().unwrap();
    let mut stream = Sse::open(&s.client, &s.at(&format!("/v1/plans/{id}/events")), None).await;
    assert_eq!(stream.next().await.unwrap().reason(), "initial");
    let r = s.client.delete(s.at("/v1/maps/m")).send().await.unwrap();
    assert!(r.status().is_success());
    let ev = stream.next().await.unwrap();
    assert_eq!((ev.seq(), ev.reason()), (2, "map_deleted"));
    crate::openapi::assert_schema("LivePlanEvent", &ev.data);
    assert!(stream.next().await.is_none());
    expect_error(raw_get(&s, id).await, 404, "plan_not_found").await;
    expect_error(
        s.client
            .get(s.at("/v1/plans/nope/events"))
            .send()
            .await
            .unwrap(),
        404,
        "plan_not_found",
    )
    .await;
}

/// The first `n` agents of the warehouse map's `random-1` scenario.
fn warehouse(n: usize) -> (String, Grid, Vec<Point>, Vec<Point>) {
    let text = std::fs::read_to_string(repo_file(
        "tests/data/movingai/maps/warehouse-10-20-10-2-1.map",
    ))
    .unwrap();
    let scen = std::fs::read_to_string(repo_file(
        "tests/data/movingai/scen/warehouse-10-20-10-2-1-random-1.scen",
    ))
    .unwrap();
    let rows = movingai::parse_scen(&scen).unwrap();
    let grid = movingai::parse_map(&text)
        .unwrap()
        .with_movement(Movement::Cardinal);
    let starts = rows[..n].iter().map(|r| r.start).collect();
    let goals = rows[..n].iter().map(|r| r.goal).collect();
    (text, grid, starts, goals)
}

#[tokio::test]
async fn a_wall_in_a_warehouse_aisle_mid_plan_repairs_200_agents() {
    let s = TestServer::new().await;
    let (text, grid, starts, goals) = warehouse(200);
    put(&s, "w", &text).await;
    let v = create(
        &s,
        "w",
        &body(
            &starts,
            &goals,
            json!({"time_limit_ms": 3000, "first_solution": true}),
        ),
    )
    .await;
    assert_eq!(v["status"], "solved");
    let plan = check_from(&grid, &v, 0, &starts, &goals);
    let (id, secret) = (v["id"].as_str().unwrap(), v["secret"].as_str().unwrap());
    let mut stream = Sse::open(&s.client, &s.at(&format!("/v1/plans/{id}/events")), None).await;
    assert_eq!(stream.next().await.unwrap().reason(), "initial");

    // Mid-plan: everybody at step 10 as planned.
    let t = 10usize;
    let (code, st) = json(progress(&s, id, secret, json!({"time_step": t})).await).await;
    assert_eq!(code, 200, "{st}");
    let at = |p: &Vec<Point>, k: usize| p[k.min(p.len() - 1)];
    let pos: Vec<Point> = plan.iter().map(|p| at(p, t)).collect();
    let rest: Vec<Vec<Point>> = plan
        .iter()
        .map(|p| p[t.min(p.len() - 1)..].to_vec())
        .collect();

    // An aisle cell (walls left and right: between two shelves) that some remaining paths
    // cross, nobody stands on, no goal, and whose walling leaves every goal reachable.
    let open =
        |x: i64, y: i64| x >= 0 && y >= 0 && grid.is_passable(Point::new(x as u32, y as u32));
    let mut cand: Vec<(usize, Point)> = Vec::new();
    for y in 0..grid.height() {
        for x in 0..grid.width() {
            let c = Point::new(x, y);
            let (xi, yi) = (x as i64, y as i64);
            if !grid.is_passable(c) || open(xi - 1, yi) || open(xi + 1, yi) || !open(xi, yi - 1) {
                continue;
            }
            if pos.contains(&c) || goals.contains(&c) {
                continue;
            }
            let crossing = rest.iter().filter(|p| p[1..].contains(&c)).count();
            if crossing > 0 {
                cand.push((crossing, c));
            }
        }
    }
    cand.sort_by_key(|&(n, c)| (std::cmp::Reverse(n), c.y, c.x));
    let wall = cand
        .iter()
        .map(|&(_, c)| c)
        .find(|&c| {
            let g = walled(&grid, &[c]);
            (0..pos.len()).all(|i| g.same_component(pos[i], goals[i]))
        })
        .expect("an aisle cell to wall");
    let crossed: Vec<usize> = (0..rest.len())
        .filter(|&i| rest[i].contains(&wall))
        .collect();
    assert!(!crossed.is_empty());
    let version = patch_map(
        &s,
        "w",
        json!({"cells": [{"x": wall.x, "y": wall.y, "cost": 0}]}),
    )
    .await;
    let ev = stream.next().await.unwrap();
    assert_eq!((ev.seq(), ev.reason()), (2, "blocked"));
    assert_eq!(ev.data["map_version"], version);
    assert_eq!(ev.data["start_step"], t as u64);
    let after = walled(&grid, &[wall]);
    let new = check_from(&after, &ev.data, t as u64, &pos, &goals);
    assert_eq!(ev.data["status"], "solved");
    assert!(new.iter().all(|p| !p.contains(&wall)));
    // A repair: only the agents whose remaining paths crossed the wall were re-planned;
    // everybody else keeps theirs, cell for cell.
    assert_eq!(ev.data["repaired"], true, "{}", ev.data["replanned"]);
    let replanned: Vec<usize> = ev.data["replanned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(replanned, crossed);
    for i in (0..rest.len()).filter(|i| !crossed.contains(i)) {
        let len = new[i].len();
        assert_eq!(new[i], padded(&rest[i], len), "agent {i} kept its path");
    }
    let (_, st) = get(&s, id).await;
    assert_eq!(st["paths"], ev.data["paths"]);
    assert_eq!(st["time_step"], t as u64);
}

/// A seeded `w x h` map with about 10% walls.
fn map_text(rng: &mut StdRng, w: u32, h: u32) -> String {
    let mut s = format!("type octile\nheight {h}\nwidth {w}\nmap\n");
    for _ in 0..h {
        for _ in 0..w {
            s.push(if rng.random_bool(0.1) { '@' } else { '.' });
        }
        s.push('\n');
    }
    s
}

/// `n` distinct cells of `grid`'s largest component.
fn cells(rng: &mut StdRng, grid: &Grid, n: usize, avoid: &[Point]) -> Vec<Point> {
    let all: Vec<Point> = (0..grid.height())
        .flat_map(|y| (0..grid.width()).map(move |x| Point::new(x, y)))
        .filter(|&p| grid.is_passable(p))
        .collect();
    let big = *all
        .iter()
        .max_by_key(|&&p| all.iter().filter(|&&q| grid.same_component(p, q)).count())
        .unwrap();
    let mut pool: Vec<Point> = all
        .into_iter()
        .filter(|&p| grid.same_component(p, big) && !avoid.contains(&p))
        .collect();
    (0..n)
        .map(|_| pool.swap_remove(rng.random_range(0..pool.len())))
        .collect()
}

/// True when every agent can still reach its goal alone from where it stands (or, on a
/// walled cell, from a cell next to it).
fn reachable(grid: &Grid, pos: &[Point], goals: &[Point]) -> bool {
    pos.iter().zip(goals).all(|(&p, &g)| {
        if grid.is_passable(p) {
            return grid.same_component(p, g);
        }
        [(0i64, -1i64), (1, 0), (0, 1), (-1, 0)]
            .iter()
            .any(|&(dx, dy)| {
                let (x, y) = (p.x as i64 + dx, p.y as i64 + dy);
                x >= 0
                    && y >= 0
                    && grid.same_component(Point::new(x as u32, y as u32), g)
                    && grid.is_passable(Point::new(x as u32, y as u32))
            })
    })
}

#[tokio::test]
async fn random_patches_and_progress_keep_every_pushed_plan_valid() {
    let s = TestServer::new().await;
    for seed in 0..6u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let (w, h) = (12, 10);
        let text = map_text(&mut rng, w, h);
        let name = format!("r{seed}");
        put(&s, &name, &text).await;
        let mut grid = movingai::parse_map(&text)
            .unwrap()
            .with_movement(Movement::Cardinal);
        let n = 8;
        let starts = cells(&mut rng, &grid, n, &[]);
        let goals = cells(&mut rng, &grid, n, &[]);
        let v = create(
            &s,
            &name,
            &body(&starts, &goals, json!({"time_limit_ms": 500, "seed": seed})),
        )
        .await;
        let (id, secret) = (
            v["id"].as_str().unwrap().to_owned(),
            v["secret"].as_str().unwrap().to_owned(),
        );
        let mut state = v.clone();
        let mut t = 0u64;
        let mut pos = starts.clone();
        let mut seq = 1;
        let mut stream = Sse::open(&s.client, &s.at(&format!("/v1/plans/{id}/events")), None).await;
        assert_eq!(stream.next().await.unwrap().seq(), 1);
        for round in 0..12 {
            if rng.random_bool(0.5) {
                // A patch: wall (or open) a random cell that is no goal.
                let c = Point::new(rng.random_range(0..w), rng.random_range(0..h));
                if goals.contains(&c) {
                    continue;
                }
                let wall = rng.random_bool(0.8);
                let cost = if wall { 0 } else { 1 };
                let mut costs = grid.costs();
                costs[(c.y * w + c.x) as usize] = cost;
                let next = Grid::from_costs(w, h, costs, Movement::Cardinal).unwrap();
                let version = patch_map(
                    &s,
                    &name,
                    json!({"cells": [{"x": c.x, "y": c.y, "cost": cost}]}),
                )
                .await;
                grid = next;
                state = at_version(&s, &id, version).await;
            } else {
                // Progress: one to three steps, some agents late (still where they were).
                let start = state["start_step"].as_u64().unwrap();
                let paths = paths_of(&state);
                let t2 = t + rng.random_range(1..=3);
                let at = |i: usize, k: u64| {
                    let p = &paths[i];
                    p[((k - start) as usize).min(p.len() - 1)]
                };
                let mut next: Vec<Point> = (0..n).map(|i| at(i, t2)).collect();
                for i in 0..n {
                    if rng.random_bool(0.2)
                        && grid.is_passable(pos[i])
                        && !next.iter().enumerate().any(|(j, &q)| j != i && q == pos[i])
                    {
                        next[i] = pos[i];
                    }
                }
                let b = json!({"time_step": t2, "positions": next.iter().map(|p| [p.x, p.y]).collect::<Vec<_>>()});
                let (code, st) = json(progress(&s, &id, &secret, b).await).await;
                assert_eq!(code, 200, "seed {seed} round {round}: {st}");
                t = t2;
                pos = next;
                state = st;
            }
            // Every event pushed meanwhile comes in order.
            let now = state["seq"].as_u64().unwrap();
            while seq < now {
                let ev = stream.next().await.unwrap();
                seq += 1;
                assert_eq!(ev.seq(), seq);
                assert!(
                    ["blocked", "delayed", "restored"].contains(&ev.reason()),
                    "{}",
                    ev.reason()
                );
            }
            // The plan holds from the reported positions on the map as it is now, and a
            // solvable instance stays solved.
            check_from(&grid, &state, t, &pos, &goals);
            if reachable(&grid, &pos, &goals) {
                assert_eq!(state["status"], "solved", "seed {seed} round {round}");
            }
        }
    }
}
