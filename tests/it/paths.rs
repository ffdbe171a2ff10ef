//! Path queries over a real server: outcomes, options, errors and batches.

use crate::common::{Dirs, SMALL_MAP, TestServer, api_error, cells, expect_error, json, query};
use pathd_client::{BatchItem, PathRequest};
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
    s.upload("small", SMALL_MAP).await;
    // Two rooms with no connection: (0,0) and (2,0) are apart.
    s.upload("split", "type octile\nheight 1\nwidth 3\nmap\n.@.\n")
        .await;
    s
}

#[tokio::test]
async fn found_path_is_legal_and_optimal() {
    let s = server_with_small().await;
    let pathd = s.pathd();
    let grid = movingai::parse_map(SMALL_MAP).unwrap();
    for algorithm in ["astar", "dijkstra", "auto"] {
        let v = pathd
            .find_path("small", &query([0, 0], [4, 0], algorithm))
            .await
            .unwrap();
        assert_eq!(v.status, "found");
        assert_eq!(v.map_version, 1);
        assert_eq!(
            v.algorithm,
            match algorithm {
                "dijkstra" => "dijkstra",
                // JPS, or JPS+ once the map's jump table is built (in the background), or
                // the subgoal graph once built where it pays off.
                "auto" if v.algorithm == "jps_plus" => "jps_plus",
                "auto" if v.algorithm == "subgoal" => "subgoal",
                "auto" => pathd_engine::resolve_auto(&grid).as_str(),
                _ => "astar",
            }
        );
        let path = cells(&v.path);
        assert_eq!(
            (path[0], *path.last().unwrap()),
            (Point::new(0, 0), Point::new(4, 0))
        );
        let cost = grid.path_cost(&path).expect("every step legal");
        assert!((cost - v.cost).abs() < 1e-9);
        assert!(v.expanded > 0);
        assert!(v.expanded_cells.is_none());
    }
    let a = pathd
        .find_path("small", &PathRequest::new([0, 0], [4, 0]))
        .await
        .unwrap();
    let d = pathd
        .find_path("small", &query([0, 0], [4, 0], "dijkstra"))
        .await
        .unwrap();
    assert!((a.cost - d.cost).abs() < 1e-9);

    let w = pathd
        .find_path(
            "small",
            &PathRequest {
                weight: Some(2.0),
                ..query([0, 0], [4, 0], "weighted_astar")
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (w.status.as_str(), w.algorithm.as_str()),
        ("found", "weighted_astar")
    );
    assert!(w.cost <= 2.0 * a.cost + 1e-9);

    let t = pathd
        .find_path("small", &PathRequest::new([1, 1], [1, 1]))
        .await
        .unwrap();
    assert_eq!((t.status.as_str(), t.cost), ("found", 0.0));
    assert_eq!(cells(&t.path), vec![Point::new(1, 1)]);
}

#[tokio::test]
async fn outcomes_no_path_limits_partial_debug() {
    let s = server_with_small().await;
    let pathd = s.pathd();
    let v = pathd
        .find_path("split", &PathRequest::new([0, 0], [2, 0]))
        .await
        .unwrap();
    assert_eq!(v.status, "no_path");
    assert!(v.path.is_empty());

    let v = pathd
        .find_path(
            "small",
            &PathRequest {
                max_expansions: Some(1),
                ..PathRequest::new([0, 0], [4, 0])
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (v.status.as_str(), v.limit.as_deref()),
        ("limit_reached", Some("expansions"))
    );

    let v = pathd
        .find_path(
            "small",
            &PathRequest {
                timeout_ms: Some(0),
                ..PathRequest::new([0, 0], [4, 0])
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (v.status.as_str(), v.limit.as_deref()),
        ("limit_reached", Some("timeout"))
    );

    let v = pathd
        .find_path(
            "small",
            &PathRequest {
                max_expansions: Some(3),
                partial: true,
                ..PathRequest::new([0, 0], [4, 0])
            },
        )
        .await
        .unwrap();
    assert_eq!(v.status, "partial");
    let path = cells(&v.path);
    assert_eq!(path[0], Point::new(0, 0));
    assert!(
        movingai::parse_map(SMALL_MAP)
            .unwrap()
            .path_cost(&path)
            .is_some()
    );

    let v = pathd
        .find_path(
            "small",
            &PathRequest {
                debug: true,
                ..PathRequest::new([0, 0], [4, 0])
            },
        )
        .await
        .unwrap();
    let expanded = cells(v.expanded_cells.as_deref().expect("expanded_cells"));
    // Every expansion but the goal's own is recorded, each cell once, all passable.
    assert!(!expanded.is_empty() && expanded.len() as u64 <= v.expanded);
    assert_eq!(expanded[0], Point::new(0, 0));
    let grid = movingai::parse_map(SMALL_MAP).unwrap();
    let unique: std::collections::HashSet<_> = expanded.iter().collect();
    assert_eq!(unique.len(), expanded.len());
    assert!(expanded.iter().all(|&c| grid.is_passable(c)));
}

#[tokio::test]
async fn query_errors() {
    let s = server_with_small().await;
    let pathd = s.pathd();
    let cases = [
        (PathRequest::new([9, 0], [0, 0]), 400, "out_of_bounds"),
        (PathRequest::new([0, 0], [0, 99]), 400, "out_of_bounds"),
        (PathRequest::new([2, 0], [0, 0]), 400, "start_blocked"),
        (PathRequest::new([0, 0], [2, 1]), 400, "goal_blocked"),
        (
            PathRequest {
                weight: Some(0.5),
                ..query([0, 0], [1, 1], "weighted_astar")
            },
            400,
            "invalid_request",
        ),
        (query([0, 0], [1, 1], "bfs"), 400, "invalid_request"),
    ];
    for (q, status, code) in cases {
        api_error(pathd.find_path("small", &q).await, status, code);
    }
    api_error(
        pathd
            .find_path("nope", &PathRequest::new([0, 0], [1, 1]))
            .await,
        404,
        "map_not_found",
    );
    // Bodies the typed client cannot send (an unknown field, a missing goal, malformed
    // points), a missing content type and broken JSON: raw.
    for body in [
        json!({"start": [0, 0], "goal": [1, 1], "colour": "red"}),
        json!({"start": [0, 0]}),
        json!({"start": [0, 0, 0], "goal": [1, 1]}),
        json!({"start": [-1, 0], "goal": [1, 1]}),
    ] {
        expect_error(s.path("small", &body).await, 400, "invalid_request").await;
    }
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
    let pathd = s.pathd();
    s.upload("small", SMALL_MAP).await;
    let queries = [
        PathRequest::new([0, 0], [4, 0]),
        PathRequest::new([9, 9], [0, 0]),
        PathRequest::new([0, 0], [0, 0]),
        query([0, 0], [4, 2], "bfs"),
        PathRequest::new([4, 2], [0, 2]),
    ];
    let v = pathd.find_paths("small", &queries).await.unwrap();
    assert_eq!(v.map_version, 1);
    let r = &v.results;
    assert_eq!(r.len(), 5);
    let result = |i: usize| match &r[i] {
        BatchItem::Result(p) => p.clone(),
        BatchItem::Error { error } => panic!("item {i}: {error:?}"),
    };
    let code = |i: usize| match &r[i] {
        BatchItem::Error { error } => {
            assert!(!error.message.is_empty());
            error.code.clone()
        }
        BatchItem::Result(p) => panic!("item {i}: {p:?}"),
    };
    assert_eq!(result(0).status, "found");
    assert_eq!(cells(&result(0).path).last(), Some(&Point::new(4, 0)));
    assert_eq!(code(1), "out_of_bounds");
    assert_eq!(result(2).cost, 0.0);
    assert_eq!(code(3), "invalid_request");
    assert_eq!(cells(&result(4).path).last(), Some(&Point::new(0, 2)));
    assert_eq!(result(4).cost, 4.0);

    let v = pathd.find_paths("small", &[]).await.unwrap();
    assert!(v.results.is_empty());

    let many = vec![PathRequest::new([0, 0], [1, 0]); 9];
    api_error(
        pathd.find_paths("small", &many).await,
        413,
        "too_many_queries",
    );
    api_error(pathd.find_paths("nope", &[]).await, 404, "map_not_found");
    // A body without `queries` (the client always sends it): raw.
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
    s.upload_json("w", &body).await;
    let v = s
        .pathd()
        .find_path("w", &PathRequest::new([0, 0], [2, 0]))
        .await
        .unwrap();
    // Straight: 2 steps of (1+9)/2 = 10; detour: 4 steps of 1 = 4.
    assert_eq!(v.cost, 4.0);
    assert_eq!(v.path.len(), 5);
}

#[tokio::test]
async fn jps_theta_and_smoothing() {
    let s = server_with_small().await;
    let pathd = s.pathd();
    let grid = movingai::parse_map(SMALL_MAP).unwrap();
    let a = pathd
        .find_path("small", &PathRequest::new([0, 0], [4, 0]))
        .await
        .unwrap();
    let optimum = a.cost;
    assert!(a.waypoints.is_none() && a.waypoints_cost.is_none());
    assert_eq!(a.path_cost, a.cost);

    let j = pathd
        .find_path("small", &query([0, 0], [4, 0], "jps"))
        .await
        .unwrap();
    assert_eq!(j.algorithm, "jps");
    assert!((j.cost - optimum).abs() < 1e-9);
    assert_eq!(grid.path_cost(&cells(&j.path)), Some(j.cost));

    for q in [
        PathRequest {
            smooth: true,
            ..PathRequest::new([0, 0], [4, 0])
        },
        query([0, 0], [4, 0], "theta"),
    ] {
        let v = pathd.find_path("small", &q).await.unwrap();
        let w = cells(v.waypoints.as_deref().expect("waypoints"));
        assert_eq!(
            (w[0], *w.last().unwrap()),
            (Point::new(0, 0), Point::new(4, 0))
        );
        let len = v.waypoints_cost.expect("waypoints_cost");
        // The answer to follow is the polyline: `cost` is its length; `path_cost` is the
        // cell path's.
        assert_eq!(v.cost, len, "{v:?}");
        assert_eq!(grid.path_cost(&cells(&v.path)), Some(v.path_cost));
        assert!(len <= optimum + 1e-9, "{v:?}");
        // The polyline is never shorter than the straight line from start to goal.
        assert!(len >= 4.0 - 1e-9, "{v:?}");
    }

    // Algorithms that do not apply to a map are a 400, not a failure.
    let weighted = json!({"width": 3, "height": 1, "costs": [1, 5, 1]});
    s.upload_json("w", &weighted).await;
    api_error(
        pathd.find_path("w", &query([0, 0], [2, 0], "jps")).await,
        400,
        "not_applicable",
    );
    let v = pathd
        .find_path("w", &query([0, 0], [2, 0], "auto"))
        .await
        .unwrap();
    assert_eq!((v.algorithm.as_str(), v.cost), ("astar", 6.0));
    let cardinal = json!({"width": 2, "height": 1, "costs": [1, 1], "movement": "cardinal"});
    s.upload_json("c", &cardinal).await;
    api_error(
        pathd.find_path("c", &query([0, 0], [1, 0], "theta")).await,
        400,
        "not_applicable",
    );
}

// `path_format` is a wire detail (the client asks only `pairs` and reads typed points): the
// two tests below compare the raw answers.
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
