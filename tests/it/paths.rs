//! Path queries over a real server: outcomes, options, errors and batches.

use crate::common::{Dirs, SMALL_MAP, TestServer, expect_error, json};
use pathd_engine::{Point, movingai};
use serde_json::{Value, json};

fn points(v: &Value) -> Vec<Point> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| Point::new(p[0].as_u64().unwrap() as u32, p[1].as_u64().unwrap() as u32))
        .collect()
}

async fn server_with_small() -> TestServer {
    let s = TestServer::new().await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    // Two rooms with no connection: (0,0) and (2,0) are apart.
    let split = "type octile\nheight 1\nwidth 3\nmap\n.@.\n";
    assert_eq!(s.put_text("split", split).await.status(), 201);
    s
}

#[tokio::test]
async fn found_path_is_legal_and_optimal() {
    let s = server_with_small().await;
    let grid = movingai::parse_map(SMALL_MAP).unwrap();
    for algorithm in ["astar", "dijkstra", "auto"] {
        let (st, v) = json(
            s.path(
                "small",
                &json!({"start": [0, 0], "goal": [4, 0], "algorithm": algorithm}),
            )
            .await,
        )
        .await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["status"], "found");
        assert_eq!(v["map_version"], 1);
        assert_eq!(
            v["algorithm"],
            match algorithm {
                "dijkstra" => "dijkstra",
                // JPS, or JPS+ once the map's jump table is built (in the background), or
                // the subgoal graph once built where it pays off.
                "auto" if v["algorithm"] == "jps_plus" => "jps_plus",
                "auto" if v["algorithm"] == "subgoal" => "subgoal",
                "auto" => pathd_engine::resolve_auto(&grid).as_str(),
                _ => "astar",
            }
        );
        let path = points(&v["path"]);
        assert_eq!(
            (path[0], *path.last().unwrap()),
            (Point::new(0, 0), Point::new(4, 0))
        );
        let cost = grid.path_cost(&path).expect("every step legal");
        assert!((cost - v["cost"].as_f64().unwrap()).abs() < 1e-9);
        assert!(v["expanded"].as_u64().unwrap() > 0);
        assert!(v.get("expanded_cells").is_none());
    }
    let (_, a) = json(
        s.path("small", &json!({"start": [0, 0], "goal": [4, 0]}))
            .await,
    )
    .await;
    let (_, d) = json(
        s.path(
            "small",
            &json!({"start": [0, 0], "goal": [4, 0], "algorithm": "dijkstra"}),
        )
        .await,
    )
    .await;
    assert!((a["cost"].as_f64().unwrap() - d["cost"].as_f64().unwrap()).abs() < 1e-9);

    let (_, w) = json(
        s.path(
            "small",
            &json!({"start": [0, 0], "goal": [4, 0], "algorithm": "weighted_astar", "weight": 2.0}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (w["status"].as_str(), w["algorithm"].as_str()),
        (Some("found"), Some("weighted_astar"))
    );
    assert!(w["cost"].as_f64().unwrap() <= 2.0 * a["cost"].as_f64().unwrap() + 1e-9);

    let (_, t) = json(
        s.path("small", &json!({"start": [1, 1], "goal": [1, 1]}))
            .await,
    )
    .await;
    assert_eq!(
        (t["status"].as_str(), t["cost"].as_f64()),
        (Some("found"), Some(0.0))
    );
    assert_eq!(points(&t["path"]), vec![Point::new(1, 1)]);
}

#[tokio::test]
async fn outcomes_no_path_limits_partial_debug() {
    let s = server_with_small().await;
    let (st, v) = json(
        s.path("split", &json!({"start": [0, 0], "goal": [2, 0]}))
            .await,
    )
    .await;
    assert_eq!((st, v["status"].as_str()), (200, Some("no_path")));
    assert_eq!(v["path"], json!([]));

    let (_, v) = json(
        s.path(
            "small",
            &json!({"start": [0, 0], "goal": [4, 0], "max_expansions": 1}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (v["status"].as_str(), v["limit"].as_str()),
        (Some("limit_reached"), Some("expansions"))
    );

    let (_, v) = json(
        s.path(
            "small",
            &json!({"start": [0, 0], "goal": [4, 0], "timeout_ms": 0}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (v["status"].as_str(), v["limit"].as_str()),
        (Some("limit_reached"), Some("timeout"))
    );

    let (_, v) = json(
        s.path(
            "small",
            &json!({"start": [0, 0], "goal": [4, 0], "max_expansions": 3, "partial": true}),
        )
        .await,
    )
    .await;
    assert_eq!(v["status"], "partial");
    let path = points(&v["path"]);
    assert_eq!(path[0], Point::new(0, 0));
    assert!(
        movingai::parse_map(SMALL_MAP)
            .unwrap()
            .path_cost(&path)
            .is_some()
    );

    let (_, v) = json(
        s.path(
            "small",
            &json!({"start": [0, 0], "goal": [4, 0], "debug": true}),
        )
        .await,
    )
    .await;
    let cells = points(&v["expanded_cells"]);
    // Every expansion but the goal's own is recorded, each cell once, all passable.
    assert!(!cells.is_empty() && cells.len() as u64 <= v["expanded"].as_u64().unwrap());
    assert_eq!(cells[0], Point::new(0, 0));
    let grid = movingai::parse_map(SMALL_MAP).unwrap();
    let unique: std::collections::HashSet<_> = cells.iter().collect();
    assert_eq!(unique.len(), cells.len());
    assert!(cells.iter().all(|&c| grid.is_passable(c)));
}

#[tokio::test]
async fn query_errors() {
    let s = server_with_small().await;
    let cases = [
        (
            json!({"start": [9, 0], "goal": [0, 0]}),
            400,
            "out_of_bounds",
        ),
        (
            json!({"start": [0, 0], "goal": [0, 99]}),
            400,
            "out_of_bounds",
        ),
        (
            json!({"start": [2, 0], "goal": [0, 0]}),
            400,
            "start_blocked",
        ),
        (
            json!({"start": [0, 0], "goal": [2, 1]}),
            400,
            "goal_blocked",
        ),
        (
            json!({"start": [0, 0], "goal": [1, 1], "algorithm": "weighted_astar", "weight": 0.5}),
            400,
            "invalid_request",
        ),
        (
            json!({"start": [0, 0], "goal": [1, 1], "algorithm": "bfs"}),
            400,
            "invalid_request",
        ),
        (
            json!({"start": [0, 0], "goal": [1, 1], "colour": "red"}),
            400,
            "invalid_request",
        ),
        (json!({"start": [0, 0]}), 400, "invalid_request"),
        (
            json!({"start": [0, 0, 0], "goal": [1, 1]}),
            400,
            "invalid_request",
        ),
        (
            json!({"start": [-1, 0], "goal": [1, 1]}),
            400,
            "invalid_request",
        ),
    ];
    for (body, status, code) in cases {
        expect_error(s.path("small", &body).await, status, code).await;
    }
    expect_error(
        s.path("nope", &json!({"start": [0, 0], "goal": [1, 1]}))
            .await,
        404,
        "map_not_found",
    )
    .await;
    let resp = s
        .client
        .post(s.at("/v1/maps/small/path"))
        .body("{}")
        .send()
        .await
        .unwrap();
    expect_error(resp, 415, "unsupported_media_type").await;
    let resp = s
        .client
        .post(s.at("/v1/maps/small/path"))
        .header("content-type", "application/json")
        .body("{\"start\": [0, 0], ")
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "invalid_request").await;
}

#[tokio::test]
async fn batches_answer_in_order_with_per_query_errors() {
    let dirs = crate::common::Dirs::new();
    let mut config = dirs.config();
    config.max_batch = 8;
    let s = TestServer::start(dirs, config).await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    let queries = json!({"queries": [
        {"start": [0, 0], "goal": [4, 0]},
        {"start": [9, 9], "goal": [0, 0]},
        {"start": [0, 0], "goal": [0, 0]},
        {"start": [0, 0], "goal": [4, 2], "algorithm": "bfs"},
        {"start": [4, 2], "goal": [0, 2]},
    ]});
    let resp = s
        .client
        .post(s.at("/v1/maps/small/paths"))
        .json(&queries)
        .send()
        .await
        .unwrap();
    let (st, v) = json(resp).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["map_version"], 1);
    let r = v["results"].as_array().unwrap();
    assert_eq!(r.len(), 5);
    assert_eq!(r[0]["status"], "found");
    assert_eq!(points(&r[0]["path"]).last(), Some(&Point::new(4, 0)));
    assert_eq!(r[1]["error"]["code"], "out_of_bounds");
    assert_eq!(r[2]["cost"], 0.0);
    assert_eq!(r[3]["error"]["code"], "invalid_request");
    assert_eq!(points(&r[4]["path"]).last(), Some(&Point::new(0, 2)));
    assert_eq!(r[4]["cost"], 4.0);

    let (_, v) = json(
        s.client
            .post(s.at("/v1/maps/small/paths"))
            .json(&json!({"queries": []}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(v["results"], json!([]));

    let many: Vec<_> = (0..9)
        .map(|_| json!({"start": [0, 0], "goal": [1, 0]}))
        .collect();
    let resp = s
        .client
        .post(s.at("/v1/maps/small/paths"))
        .json(&json!({"queries": many}))
        .send()
        .await
        .unwrap();
    expect_error(resp, 413, "too_many_queries").await;
    let resp = s
        .client
        .post(s.at("/v1/maps/nope/paths"))
        .json(&json!({"queries": []}))
        .send()
        .await
        .unwrap();
    expect_error(resp, 404, "map_not_found").await;
    let resp = s
        .client
        .post(s.at("/v1/maps/small/paths"))
        .json(&json!({"qs": []}))
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "invalid_request").await;
}

#[tokio::test]
async fn weighted_and_cardinal_maps() {
    let s = TestServer::new().await;
    // A cheap detour (cost 1) around an expensive middle column (cost 9).
    let body =
        json!({"width": 3, "height": 2, "costs": [1, 9, 1, 1, 1, 1], "movement": "cardinal"});
    assert_eq!(s.put_json("w", &body).await.status(), 201);
    let (_, v) = json(s.path("w", &json!({"start": [0, 0], "goal": [2, 0]})).await).await;
    // Straight: 2 steps of (1+9)/2 = 10; detour: 4 steps of 1 = 4.
    assert_eq!(v["cost"], 4.0);
    assert_eq!(points(&v["path"]).len(), 5);
}

#[tokio::test]
async fn jps_theta_and_smoothing() {
    let s = server_with_small().await;
    let grid = movingai::parse_map(SMALL_MAP).unwrap();
    let start_goal = json!({"start": [0, 0], "goal": [4, 0]});
    let (_, a) = json(s.path("small", &start_goal).await).await;
    let optimum = a["cost"].as_f64().unwrap();
    assert!(a.get("waypoints").is_none() && a.get("waypoints_cost").is_none());
    assert_eq!(a["path_cost"], a["cost"]);

    let (st, j) = json(
        s.path(
            "small",
            &json!({"start": [0, 0], "goal": [4, 0], "algorithm": "jps"}),
        )
        .await,
    )
    .await;
    assert_eq!((st, j["algorithm"].as_str()), (200, Some("jps")), "{j}");
    assert!((j["cost"].as_f64().unwrap() - optimum).abs() < 1e-9);
    assert_eq!(grid.path_cost(&points(&j["path"])), j["cost"].as_f64());

    for body in [
        json!({"start": [0, 0], "goal": [4, 0], "smooth": true}),
        json!({"start": [0, 0], "goal": [4, 0], "algorithm": "theta"}),
    ] {
        let (st, v) = json(s.path("small", &body).await).await;
        assert_eq!(st, 200, "{v}");
        let w = points(&v["waypoints"]);
        assert_eq!(
            (w[0], *w.last().unwrap()),
            (Point::new(0, 0), Point::new(4, 0))
        );
        let len = v["waypoints_cost"].as_f64().unwrap();
        // The answer to follow is the polyline: `cost` is its length; `path_cost` is the
        // cell path's.
        assert_eq!(v["cost"].as_f64(), Some(len), "{v}");
        assert_eq!(grid.path_cost(&points(&v["path"])), v["path_cost"].as_f64());
        assert!(len <= optimum + 1e-9, "{v}");
        // The polyline is never shorter than the straight line from start to goal.
        assert!(len >= 4.0 - 1e-9, "{v}");
    }

    // Algorithms that do not apply to a map are a 400, not a failure.
    let weighted = json!({"width": 3, "height": 1, "costs": [1, 5, 1]});
    assert_eq!(s.put_json("w", &weighted).await.status(), 201);
    let q = json!({"start": [0, 0], "goal": [2, 0], "algorithm": "jps"});
    expect_error(s.path("w", &q).await, 400, "not_applicable").await;
    let (_, v) = json(
        s.path(
            "w",
            &json!({"start": [0, 0], "goal": [2, 0], "algorithm": "auto"}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (v["algorithm"].as_str(), v["cost"].as_f64()),
        (Some("astar"), Some(6.0))
    );
    let cardinal = json!({"width": 2, "height": 1, "costs": [1, 1], "movement": "cardinal"});
    assert_eq!(s.put_json("c", &cardinal).await.status(), 201);
    let q = json!({"start": [0, 0], "goal": [1, 0], "algorithm": "theta"});
    expect_error(s.path("c", &q).await, 400, "not_applicable").await;
}

#[tokio::test]
async fn path_formats_write_the_same_cells() {
    let s = server_with_small().await;
    let base = json!({"start": [0, 0], "goal": [4, 0]});
    let (_, pairs) = json(s.path("small", &base).await).await;
    let cells = pairs["path"].as_array().unwrap().clone();
    let mut body = base.clone();
    body["path_format"] = json!("flat");
    let (st, flat) = json(s.path("small", &body).await).await;
    assert_eq!(st, 200, "{flat}");
    let flattened: Vec<Value> = cells
        .iter()
        .flat_map(|c| c.as_array().unwrap().clone())
        .collect();
    assert_eq!(flat["path"], json!(flattened));
    body["path_format"] = json!("turns");
    let (_, turns) = json(s.path("small", &body).await).await;
    // Walking each leg one king move at a time gives every cell back.
    let t = points(&turns["path"]);
    let mut walked = vec![t[0]];
    for w in t.windows(2) {
        let (dx, dy) = (
            (w[1].x as i64 - w[0].x as i64).signum(),
            (w[1].y as i64 - w[0].y as i64).signum(),
        );
        let mut at = w[0];
        while at != w[1] {
            at = Point::new((at.x as i64 + dx) as u32, (at.y as i64 + dy) as u32);
            walked.push(at);
        }
    }
    assert_eq!(walked, points(&pairs["path"]));
    assert!(t.len() <= cells.len());
    // The same in a batch; an unknown format is refused.
    let (_, batch) = json(
        s.client
            .post(s.at("/v1/maps/small/paths"))
            .json(&json!({"queries": [body, {"start": [0, 0], "goal": [4, 0], "path_format": "zip"}]}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(batch["results"][0]["path"], turns["path"]);
    assert_eq!(batch["results"][1]["error"]["code"], "invalid_request");
}

/// The walk of a `turns` answer: each leg one king move at a time.
fn walk_turns(t: &[Point]) -> Vec<Point> {
    let mut walked = t.first().copied().into_iter().collect::<Vec<_>>();
    for w in t.windows(2) {
        let (dx, dy) = (
            (w[1].x as i64 - w[0].x as i64).signum(),
            (w[1].y as i64 - w[0].y as i64).signum(),
        );
        let mut at = w[0];
        while at != w[1] {
            at = Point::new((at.x as i64 + dx) as u32, (at.y as i64 + dy) as u32);
            walked.push(at);
        }
    }
    walked
}

#[tokio::test]
async fn long_paths_name_the_same_cells_in_every_format() {
    // arena2 corner to corner (the wire benchmark's query): hundreds of cells, written
    // straight from the engine's points (src/http/wire/).
    let dirs = Dirs::new();
    dirs.bundle("arena2");
    let config = dirs.config();
    let s = TestServer::start(dirs, config).await;
    let grid = movingai::parse_map(
        &std::fs::read_to_string(crate::common::bench("maps/arena2.map")).unwrap(),
    )
    .unwrap();
    for (algorithm, debug) in [("jps", false), ("astar", true), ("theta", false)] {
        let base =
            json!({"start": [5, 100], "goal": [250, 190], "algorithm": algorithm, "debug": debug});
        let resp = s.path("arena2", &base).await;
        assert_eq!(resp.headers()["content-type"], "application/json");
        let (st, pairs) = json(resp).await;
        assert_eq!(st, 200, "{pairs}");
        let cells = points(&pairs["path"]);
        assert!(cells.len() > 250, "{algorithm}: {} cells", cells.len());
        assert_eq!(
            (cells[0], cells[cells.len() - 1]),
            (Point::new(5, 100), Point::new(250, 190))
        );
        // A legal walk whose cost is the answer's.
        assert_eq!(
            grid.path_cost(&cells),
            pairs["path_cost"].as_f64(),
            "{algorithm}"
        );
        let mut answers = vec![];
        for format in ["pairs", "flat", "turns"] {
            let mut body = base.clone();
            body["path_format"] = json!(format);
            let (st, v) = json(s.path("arena2", &body).await).await;
            assert_eq!(st, 200, "{v}");
            let named = match format {
                "flat" => {
                    let flat: Vec<u32> = v["path"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|n| n.as_u64().unwrap() as u32)
                        .collect();
                    assert_eq!(flat.len() % 2, 0);
                    flat.chunks(2).map(|c| Point::new(c[0], c[1])).collect()
                }
                "turns" => {
                    let t = points(&v["path"]);
                    assert!(t.len() < cells.len(), "{algorithm}: {} turns", t.len());
                    walk_turns(&t)
                }
                _ => points(&v["path"]),
            };
            assert_eq!(named, cells, "{algorithm} {format}");
            // Everything beside the path is the same whatever the format.
            for field in [
                "waypoints",
                "expanded_cells",
                "cost",
                "path_cost",
                "expanded",
            ] {
                assert_eq!(v[field], pairs[field], "{algorithm} {format} {field}");
            }
            answers.push((body, v));
        }
        if debug {
            assert!(pairs["expanded_cells"].as_array().unwrap().len() > 100);
        } else {
            assert!(pairs["waypoints"].as_array().unwrap().len() >= 2, "{pairs}");
        }
        // A batch answers each format as the single queries did.
        let queries: Vec<Value> = answers.iter().map(|(b, _)| b.clone()).collect();
        let (st, batch) = json(
            s.client
                .post(s.at("/v1/maps/arena2/paths"))
                .json(&json!({ "queries": queries }))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(st, 200, "{batch}");
        for (i, (_, v)) in answers.iter().enumerate() {
            assert_eq!(
                batch["results"][i]["path"], v["path"],
                "{algorithm} item {i}"
            );
            assert_eq!(batch["results"][i]["waypoints"], v["waypoints"]);
        }
    }
}
