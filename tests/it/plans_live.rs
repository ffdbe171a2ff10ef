//! Live multi-agent plans over a real server (`"subscribe": true`): progress reports,
//! patches that wall the plan, repairs that keep everybody else's path, the event stream
//! (resume, final events), limits and errors. Every plan pushed is checked by the engine's
//! plan checker from the reported positions on the map as patched.

use pathd_engine::mapf::check::check_live_plan;
use pathd_engine::{Grid, Movement, Point, movingai};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use crate::common::{Dirs, TestServer, api_error, expect_error, json, next_event, repo_file};
use crate::live::sse::Sse;
use crate::plans::request;
use pathd_client::{
    CellChange, Error, LivePlanEvent, MapPatch, PlanProgress, PlanRequest, PlanResult,
};

/// Engine points of client cells.
fn pts(v: &[[u32; 2]]) -> Vec<Point> {
    v.iter().map(|c| Point::new(c[0], c[1])).collect()
}

/// Client cells of engine points.
fn cells_of(v: &[Point]) -> Vec<[u32; 2]> {
    v.iter().map(|p| [p.x, p.y]).collect()
}

fn paths_of(v: &[Vec<[u32; 2]>]) -> Vec<Vec<Point>> {
    v.iter().map(|p| pts(p)).collect()
}

/// A live plan, created through the client.
async fn create(s: &TestServer, map: &str, req: &PlanRequest) -> PlanResult {
    s.pathd()
        .create_live_plan(map, req)
        .await
        .unwrap_or_else(|e| panic!("live plan on {map}: {e}"))
}

async fn get(s: &TestServer, id: &str) -> PlanResult {
    s.pathd().get_plan(id).await.unwrap()
}

/// A progress report.
fn report(time_step: Option<u64>, positions: Option<&[Point]>) -> PlanProgress {
    PlanProgress {
        time_step,
        positions: positions.map(cells_of),
    }
}

async fn progress(
    s: &TestServer,
    id: &str,
    secret: &str,
    body: &PlanProgress,
) -> Result<PlanResult, Error> {
    s.pathd().report_plan_progress(id, Some(secret), body).await
}

/// Sets one cell's cost; the new map version.
async fn patch_map(s: &TestServer, map: &str, c: Point, cost: u32) -> u64 {
    let p = MapPatch {
        cells: vec![CellChange {
            x: c.x,
            y: c.y,
            cost,
        }],
        if_version: None,
        ..Default::default()
    };
    s.pathd().patch_map(map, &p).await.unwrap().version
}

/// Uploads a new Moving AI map as a `cardinal` one.
async fn put(s: &TestServer, name: &str, text: &str) {
    let (created, m) = (s
        .pathd()
        .put_map_text_with(name, text, Some("cardinal"))
        .await)
        .unwrap_or_else(|e| panic!("PUT {name}: {e}"));
    assert!(created, "{name} was not new");
    assert_eq!(m.movement, "cardinal");
}

/// Polls `GET` until the plan holds for map version `v`.
async fn at_version(s: &TestServer, id: &str, v: u64) -> PlanResult {
    for _ in 0..600 {
        let st = get(s, id).await;
        if st.map_version >= v {
            return st;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("plan {id} never reached map version {v}");
}

/// An event read raw (for its JSON), as the client reads it.
fn typed(data: &Value) -> LivePlanEvent {
    serde_json::from_value(data.clone()).unwrap_or_else(|e| panic!("{e}: {data}"))
}

/// `grid` with `walls` walled.
fn walled(grid: &Grid, walls: &[Point]) -> Grid {
    let mut costs = grid.costs();
    for p in walls {
        costs[(p.y * grid.width() + p.x) as usize] = 0;
    }
    Grid::from_costs(grid.width(), grid.height(), costs, grid.movement()).unwrap()
}

/// A plan as a state or an event holds it: its `start_step`, `status` and `paths`.
trait Held {
    fn held(&self) -> (u64, &str, &[Vec<[u32; 2]>]);
}

impl Held for PlanResult {
    fn held(&self) -> (u64, &str, &[Vec<[u32; 2]>]) {
        (
            self.start_step.expect("a live plan"),
            &self.status,
            &self.paths,
        )
    }
}

impl Held for LivePlanEvent {
    fn held(&self) -> (u64, &str, &[Vec<[u32; 2]>]) {
        (self.start_step, &self.status, &self.paths)
    }
}

/// The plan of state or event `v` from its reported time step `t` on: checked from
/// `positions` to the goals on `grid`; returns the paths from `t`.
fn check_from(
    grid: &Grid,
    v: &impl Held,
    t: u64,
    positions: &[Point],
    goals: &[Point],
) -> Vec<Vec<Point>> {
    let (start, status, paths) = v.held();
    assert!(start <= t, "start step {start} after {t}");
    let k = (t - start) as usize;
    let paths: Vec<Vec<Point>> = paths_of(paths)
        .into_iter()
        .map(|p| p[k.min(p.len() - 1)..].to_vec())
        .collect();
    let goals = (status == "solved").then_some(goals);
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
    // Raw once: the create answers `201` with the plan's `Location`.
    let body = json!({
        "agents": starts.iter().zip(&goals)
            .map(|(a, b)| json!({"start": [a.x, a.y], "goal": [b.x, b.y]}))
            .collect::<Vec<_>>(),
        "subscribe": true,
        "time_limit_ms": 200,
    });
    let r = s
        .client
        .post(s.at("/v1/maps/m/plans"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let loc = r
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_owned());
    let (code, v) = json(r).await;
    assert_eq!(code, 201, "{v}");
    let v: PlanResult = serde_json::from_value(v).unwrap();
    let (id, secret) = (v.id.as_deref().unwrap(), v.secret.as_deref().unwrap());
    assert_eq!(loc, Some(format!("/v1/plans/{id}")));
    assert_eq!((v.status.as_str(), v.seq), ("solved", Some(1)));
    assert_eq!((id.len(), secret.len()), (32, 32));
    check_from(&grid0, &v, 0, &starts, &goals);

    let st = get(&s, id).await;
    assert_eq!(st.paths, v.paths);
    assert_eq!(
        (st.time_step, st.reason.as_deref()),
        (Some(0), Some("initial"))
    );
    assert!(st.secret.is_none());
    // The stream stays raw: its events' JSON is checked against the contract, and the
    // stream's end after `deleted` on the wire.
    let events = s.at(&format!("/v1/plans/{id}/events"));
    let mut stream = Sse::open(&s.client, &events, None).await;
    let first = stream.next().await.unwrap();
    assert_eq!((first.seq(), first.reason()), (1, "initial"));
    assert_eq!(typed(&first.data).paths, v.paths);
    // A real event, not only the contract's example, matches the contract's event schema
    // (schemathesis skips the plan stream: see scripts/schemathesis.sh).
    crate::openapi::assert_schema("LivePlanEvent", &first.data);

    // Writes need the secret (no admin token here: the request has none).
    let pathd = s.pathd();
    api_error(
        pathd
            .report_plan_progress(id, None, &report(Some(1), None))
            .await,
        403,
        "forbidden",
    );
    // Progress along the plan: no event.
    let st = progress(&s, id, secret, &report(Some(2), None))
        .await
        .unwrap();
    assert_eq!((st.time_step, st.seq), (Some(2), Some(1)));
    let at2: Vec<Point> = paths_of(&v.paths)
        .iter()
        .map(|p| p[2.min(p.len() - 1)])
        .collect();
    assert_eq!(pts(st.positions.as_deref().unwrap()), at2);

    // A patch on no remaining path pushes nothing (a wall in a corner nobody visits after
    // step 2, and a cost change).
    let used: std::collections::HashSet<Point> = paths_of(&v.paths)
        .iter()
        .flat_map(|p| p[2.min(p.len() - 1)..].to_vec())
        .collect();
    let spare = (0..12)
        .flat_map(|x| (0..5).map(move |y| Point::new(x, y)))
        .find(|&p| grid0.is_passable(p) && !used.contains(&p) && !goals.contains(&p))
        .expect("a spare cell");
    let v2 = patch_map(&s, "m", spare, 0).await;
    let st = at_version(&s, id, v2).await;
    assert_eq!(st.seq, Some(1), "{st:?}");

    // A wall on a remaining path: a `blocked` event with the map version, valid from the
    // positions at step 2 on the patched map.
    let victim = paths_of(&v.paths)
        .iter()
        .flat_map(|p| p[3.min(p.len() - 1)..].to_vec())
        .find(|&c| {
            let g = walled(&grid0, &[spare, c]);
            !goals.contains(&c)
                && !at2.contains(&c)
                && (0..3).all(|i| g.same_component(at2[i], goals[i]))
        })
        .expect("a cell to wall");
    let v3 = patch_map(&s, "m", victim, 0).await;
    let ev = stream.next().await.unwrap();
    assert_eq!((ev.seq(), ev.reason()), (2, "blocked"));
    crate::openapi::assert_schema("LivePlanEvent", &ev.data);
    let ev = typed(&ev.data);
    assert_eq!(ev.map_version, v3);
    assert_eq!(ev.start_step, 2);
    let grid3 = walled(&grid0, &[spare, victim]);
    let now = check_from(&grid3, &ev, 2, &at2, &goals);
    assert!(now.iter().all(|p| !p.contains(&victim)));

    // A delayed agent: at some step k one that should have moved is still where it was
    // at k - 1. Only it is re-planned where a repair suffices; the others keep their paths.
    let cell = |i: usize, k: usize| now[i][k.min(now[i].len() - 1)];
    let (k, late) = (1..now[0].len().max(2))
        .flat_map(|k| (0..3).map(move |i| (k, i)))
        .find(|&(k, i)| {
            cell(i, k) != cell(i, k - 1) && (0..3).all(|j| cell(j, k) != cell(i, k - 1))
        })
        .unwrap_or_else(|| panic!("an agent that moves: {now:?} {ev:?}"));
    let mut pos3: Vec<Point> = (0..3).map(|i| cell(i, k)).collect();
    pos3[late] = cell(late, k - 1);
    let t3 = 2 + k as u64;
    let st = progress(&s, id, secret, &report(Some(t3), Some(&pos3)))
        .await
        .unwrap();
    assert_eq!((st.seq, st.time_step), (Some(3), Some(t3)));
    let ev = typed(&stream.next().await.unwrap().data);
    assert_eq!((ev.seq, ev.reason.as_str()), (3, "delayed"));
    assert_eq!(ev.paths, st.paths);
    let fixed = check_from(&grid3, &ev, t3, &pos3, &goals);
    assert!(ev.repaired);
    assert_eq!(ev.replanned, [late]);
    for i in (0..3).filter(|&i| i != late) {
        let len = fixed[i].len();
        assert_eq!(fixed[i], padded(&now[i][k.min(now[i].len() - 1)..], len));
    }

    // Malformed reports change nothing.
    let bad = async |report: PlanProgress| progress(&s, id, secret, &report).await;
    api_error(bad(report(Some(1), None)).await, 400, "invalid_request");
    api_error(
        bad(report(None, Some(&pos3[..1]))).await,
        400,
        "invalid_request",
    );
    let twice = [pos3[0], pos3[0], pos3[2]];
    api_error(
        bad(report(None, Some(&twice))).await,
        400,
        "invalid_request",
    );
    let walled_in = [victim, pos3[1], pos3[2]];
    api_error(
        bad(report(None, Some(&walled_in))).await,
        400,
        "start_blocked",
    );
    let off = [Point::new(99, 1), pos3[1], pos3[2]];
    api_error(bad(report(None, Some(&off))).await, 400, "out_of_bounds");
    api_error(bad(report(None, None)).await, 400, "invalid_request");
    // Raw: an unknown field, which the client's `PlanProgress` cannot carry.
    let r = s
        .client
        .patch(s.at(&format!("/v1/plans/{id}")))
        .header("x-plan-secret", secret)
        .json(&json!({"time_step": 4, "colour": 1}))
        .send()
        .await
        .unwrap();
    expect_error(r, 400, "invalid_request").await;

    // Resuming from seq 1 replays what followed.
    let last = get(&s, id).await.seq.unwrap();
    let mut again = Sse::open(&s.client, &events, Some(1)).await;
    let ev = again.next().await.unwrap();
    assert_eq!(ev.seq(), 2);
    assert_eq!(ev.reason(), "blocked");
    // Delete: 204, the streams end with `deleted`, then 404.
    pathd.delete_plan(id, Some(secret)).await.unwrap();
    let mut end = None;
    while let Some(ev) = again.next().await {
        end = Some(ev);
    }
    let end = end.unwrap();
    assert_eq!((end.seq(), end.reason()), (last + 1, "deleted"));
    api_error(pathd.get_plan(id).await, 404, "plan_not_found");
}

#[tokio::test]
async fn map_deletion_ends_live_plans_and_the_server_holds_a_bounded_number() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.max_live_plans = 1;
    let s = TestServer::start(dirs, config).await;
    put(&s, "m", CORRIDOR).await;
    let pathd = s.pathd();
    let b = request(&[Point::new(0, 0)], &[Point::new(11, 4)]);
    let v = create(&s, "m", &b).await;
    api_error(pathd.create_live_plan("m", &b).await, 429, "too_many_plans");
    // A plain plan is not held: still fine.
    let plain = PlanRequest {
        subscribe: Some(false),
        ..b.clone()
    };
    let r = pathd.plan_agents("m", &plain).await.unwrap();
    assert!(r.id.is_none(), "{r:?}");
    let id = v.id.as_deref().unwrap();
    // Raw: the final event's JSON is checked against the contract, and the stream's end.
    let mut stream = Sse::open(&s.client, &s.at(&format!("/v1/plans/{id}/events")), None).await;
    assert_eq!(stream.next().await.unwrap().reason(), "initial");
    pathd.delete_map("m").await.unwrap();
    let ev = stream.next().await.unwrap();
    assert_eq!((ev.seq(), ev.reason()), (2, "map_deleted"));
    crate::openapi::assert_schema("LivePlanEvent", &ev.data);
    assert!(stream.next().await.is_none());
    api_error(pathd.get_plan(id).await, 404, "plan_not_found");
    let mut gone = pathd.plan_events("nope", None);
    api_error(gone.next().await.unwrap(), 404, "plan_not_found");
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
    let req = PlanRequest {
        time_limit_ms: Some(3000),
        first_solution: Some(true),
        ..request(&starts, &goals)
    };
    let v = create(&s, "w", &req).await;
    assert_eq!(v.status, "solved");
    let plan = check_from(&grid, &v, 0, &starts, &goals);
    let (id, secret) = (v.id.as_deref().unwrap(), v.secret.as_deref().unwrap());
    let mut stream = s.pathd().plan_events(id, None);
    assert_eq!(next_event(&mut stream).await.reason, "initial");

    // Mid-plan: everybody at step 10 as planned.
    let t = 10usize;
    progress(&s, id, secret, &report(Some(t as u64), None))
        .await
        .unwrap();
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
    let version = patch_map(&s, "w", wall, 0).await;
    let ev = next_event(&mut stream).await;
    assert_eq!((ev.seq, ev.reason.as_str()), (2, "blocked"));
    assert_eq!(ev.map_version, version);
    assert_eq!(ev.start_step, t as u64);
    let after = walled(&grid, &[wall]);
    let new = check_from(&after, &ev, t as u64, &pos, &goals);
    assert_eq!(ev.status, "solved");
    assert!(new.iter().all(|p| !p.contains(&wall)));
    // A repair: only the agents whose remaining paths crossed the wall were re-planned;
    // everybody else keeps theirs, cell for cell.
    assert!(ev.repaired, "{:?}", ev.replanned);
    assert_eq!(ev.replanned, crossed);
    for i in (0..rest.len()).filter(|i| !crossed.contains(i)) {
        let len = new[i].len();
        assert_eq!(new[i], padded(&rest[i], len), "agent {i} kept its path");
    }
    let st = get(&s, id).await;
    assert_eq!(st.paths, ev.paths);
    assert_eq!(st.time_step, Some(t as u64));
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
        let req = PlanRequest {
            time_limit_ms: Some(500),
            seed: Some(seed),
            ..request(&starts, &goals)
        };
        let v = create(&s, &name, &req).await;
        let (id, secret) = (v.id.clone().unwrap(), v.secret.clone().unwrap());
        let mut state = v;
        let mut t = 0u64;
        let mut pos = starts.clone();
        let mut seq = 1;
        let mut stream = s.pathd().plan_events(&id, None);
        assert_eq!(next_event(&mut stream).await.seq, 1);
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
                let version = patch_map(&s, &name, c, cost.into()).await;
                grid = next;
                state = at_version(&s, &id, version).await;
            } else {
                // Progress: one to three steps, some agents late (still where they were).
                let start = state.start_step.unwrap();
                let paths = paths_of(&state.paths);
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
                let st = progress(&s, &id, &secret, &report(Some(t2), Some(&next)))
                    .await
                    .unwrap_or_else(|e| panic!("seed {seed} round {round}: {e}"));
                t = t2;
                pos = next;
                state = st;
            }
            // Every event pushed meanwhile comes in order.
            let now = state.seq.unwrap();
            while seq < now {
                let ev = next_event(&mut stream).await;
                seq += 1;
                assert_eq!(ev.seq, seq);
                assert!(
                    ["blocked", "delayed", "restored"].contains(&ev.reason.as_str()),
                    "{}",
                    ev.reason
                );
            }
            // The plan holds from the reported positions on the map as it is now, and a
            // solvable instance stays solved.
            check_from(&grid, &state, t, &pos, &goals);
            if reachable(&grid, &pos, &goals) {
                assert_eq!(state.status, "solved", "seed {seed} round {round}");
            }
        }
    }
}
