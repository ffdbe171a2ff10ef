//! The questions games ask, over a real server: `goals`, `goal_radius` / `goal_visible`,
//! `flee`, `snap` and `GET /nearest`, each with its errors (every 4xx a JSON `code` and
//! `message`), on `/path` and in a batch.

use crate::common::{SMALL_MAP, TestServer, expect_error, json};
use serde_json::{Value, json};

// ..@..
// ..@..
// .....
async fn server() -> TestServer {
    let s = TestServer::new().await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    // Two rooms with no connection: (0,0) and (2,0) are apart.
    let split = "type octile\nheight 1\nwidth 3\nmap\n.@.\n";
    assert_eq!(s.put_text("split", split).await.status(), 201);
    s
}

/// The cost of the plain optimal path, or `None` when there is none.
async fn cost(s: &TestServer, start: [u32; 2], goal: [u32; 2]) -> Option<f64> {
    let (st, v) = json(
        s.path(
            "small",
            &json!({"start": start, "goal": goal, "algorithm": "dijkstra"}),
        )
        .await,
    )
    .await;
    assert_eq!(st, 200, "{v}");
    (v["status"] == "found").then(|| v["cost"].as_f64().unwrap())
}

fn open_cells() -> Vec<[u32; 2]> {
    let rows = ["..@..", "..@..", "....."];
    let mut out = Vec::new();
    for (y, r) in rows.iter().enumerate() {
        for (x, c) in r.bytes().enumerate() {
            if c == b'.' {
                out.push([x as u32, y as u32]);
            }
        }
    }
    out
}

fn end(v: &Value) -> [u32; 2] {
    let p = v["path"].as_array().unwrap().last().unwrap();
    [p[0].as_u64().unwrap() as u32, p[1].as_u64().unwrap() as u32]
}

#[tokio::test]
async fn goals_reach_the_cheapest_and_name_it() {
    let s = server().await;
    let goals = [[4u32, 0u32], [3, 0], [0, 2], [4, 2]];
    let mut best = f64::INFINITY;
    for g in goals {
        best = best.min(cost(&s, [4, 1], g).await.unwrap());
    }
    for algorithm in ["astar", "dijkstra", "auto", "weighted_astar"] {
        let (st, v) = json(
            s.path(
                "small",
                &json!({"start": [4, 1], "goals": goals, "algorithm": algorithm}),
            )
            .await,
        )
        .await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["status"], "found");
        let i = v["goal_index"].as_u64().unwrap() as usize;
        assert_eq!(v["goal"], json!(goals[i]));
        assert_eq!(end(&v), goals[i]);
        assert_eq!(v["start"], json!([4, 1]));
        if algorithm != "weighted_astar" {
            assert_eq!(v["cost"].as_f64().unwrap(), best, "{algorithm}: {v}");
        }
        assert_eq!(
            v["algorithm"],
            if algorithm == "auto" {
                "astar"
            } else {
                algorithm
            }
        );
    }
    // A batch: each query its own answer or error.
    let many: Vec<[u32; 2]> = vec![[4, 0]; 1025];
    let (st, v) = json(
        s.client
            .post(s.at("/v1/maps/small/paths"))
            .json(&json!({"queries": [
                {"start": [0, 0], "goals": [[4, 0], [0, 2]]},
                {"start": [0, 0], "goals": many},
                {"start": [0, 0], "goals": [[2, 0]]},
            ]}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["results"][0]["goal_index"], 1);
    assert_eq!(v["results"][0]["goal"], json!([0, 2]));
    assert_eq!(v["results"][1]["error"]["code"], "too_many_goals");
    assert_eq!(v["results"][2]["error"]["code"], "goal_blocked");
    // Unreachable goals only: no path, no goal.
    let (_, v) = json(
        s.path("split", &json!({"start": [0, 0], "goals": [[2, 0]]}))
            .await,
    )
    .await;
    assert_eq!(v["status"], "no_path");
    assert!(
        v.get("goal").is_none() && v.get("goal_index").is_none(),
        "{v}"
    );
}

#[tokio::test]
async fn goals_errors_have_stable_codes() {
    let s = server().await;
    let bad = [
        (
            json!({"start": [0, 0], "goals": vec![[4, 0]; 1025]}),
            "too_many_goals",
        ),
        (json!({"start": [0, 0], "goals": []}), "invalid_request"),
        (json!({"start": [0, 0]}), "invalid_request"),
        (
            json!({"start": [0, 0], "goal": [4, 0], "goals": [[4, 0]]}),
            "invalid_request",
        ),
        (
            json!({"start": [0, 0], "goals": [[4, 0]], "flee": {"from": [0, 0], "distance": 1}}),
            "invalid_request",
        ),
        (json!({"start": [0, 0], "goals": [[9, 0]]}), "out_of_bounds"),
        (
            json!({"start": [0, 0], "goals": [[4, 0], [2, 0]]}),
            "goal_blocked",
        ),
        (
            json!({"start": [0, 0], "goals": [[4, 0]], "algorithm": "jps"}),
            "not_applicable",
        ),
        (
            json!({"start": [0, 0], "goals": [[4, 0]], "algorithm": "hpa"}),
            "not_applicable",
        ),
        (
            json!({"start": [0, 0], "goals": [[4, 0]], "heuristic": "zero"}),
            "not_applicable",
        ),
        (
            json!({"start": [0, 0], "goals": [[4, 0]], "trace": true}),
            "invalid_request",
        ),
    ];
    for (body, code) in bad {
        expect_error(s.path("small", &body).await, 400, code).await;
    }
    let posthoc = s
        .client
        .post(s.at("/v1/maps/small/posthoc"))
        .json(&json!({"start": [0, 0], "goals": [[4, 0]]}))
        .send()
        .await
        .unwrap();
    expect_error(posthoc, 400, "invalid_request").await;
}

#[tokio::test]
async fn goal_radius_stops_at_the_cheapest_cell_in_range_and_sight() {
    let s = server().await;
    for (goal, radius, visible) in [
        ([4u32, 0u32], 1.0, false),
        ([4, 0], 1.5, true),
        ([2, 0], 1.0, false), // a wall as the goal
        ([4, 2], 0.0, false),
        ([4, 2], 2.0, true),
        ([1, 0], 2.0, true),
    ] {
        let inside = |c: [u32; 2]| {
            let (dx, dy) = (c[0] as f64 - goal[0] as f64, c[1] as f64 - goal[1] as f64);
            (dx * dx + dy * dy).sqrt() <= radius
        };
        let (st, v) = json(
            s.path(
                "small",
                &json!({"start": [0, 0], "goal": goal, "goal_radius": radius,
                        "goal_visible": visible}),
            )
            .await,
        )
        .await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["status"], "found", "{v}");
        let reached = end(&v);
        assert_eq!(v["goal"], json!(reached));
        assert!(inside(reached), "{goal:?} {radius}: {v}");
        // Optimal among the qualifying cells (for these goals and ranges, a cell in range
        // sees the goal unless the wall's rows lie between them).
        let mut best = f64::INFINITY;
        for c in open_cells().into_iter().filter(|&c| inside(c)) {
            let across = (c[0] < 2) != (goal[0] < 2) && c[1] < 2;
            if visible && across {
                continue;
            }
            best = best.min(cost(&s, [0, 0], c).await.unwrap());
        }
        assert_eq!(v["cost"].as_f64().unwrap(), best, "{goal:?} {radius}: {v}");
    }
    for (body, code) in [
        (
            json!({"start": [0, 0], "goal": [2, 0], "goal_radius": 2, "goal_visible": true}),
            "goal_blocked",
        ),
        (
            json!({"start": [0, 0], "goal": [4, 0], "goal_radius": -1}),
            "invalid_request",
        ),
        (
            json!({"start": [0, 0], "goal": [4, 0], "goal_visible": true}),
            "invalid_request",
        ),
        (
            json!({"start": [0, 0], "goals": [[4, 0]], "goal_radius": 1}),
            "invalid_request",
        ),
        (
            json!({"start": [0, 0], "goal": [9, 0], "goal_radius": 1}),
            "out_of_bounds",
        ),
        (
            json!({"start": [0, 0], "goal": [4, 0], "goal_radius": 1, "algorithm": "theta"}),
            "not_applicable",
        ),
    ] {
        expect_error(s.path("small", &body).await, 400, code).await;
    }
}

#[tokio::test]
async fn flee_gets_far_enough_at_the_least_cost() {
    let s = server().await;
    for (start, from, distance) in [([1u32, 1u32], [0u32, 0u32], 3.0), ([3, 0], [4, 0], 4.5)] {
        let mut best = f64::INFINITY;
        for c in open_cells() {
            if cost(&s, from, c).await.unwrap() >= distance {
                best = best.min(cost(&s, start, c).await.unwrap());
            }
        }
        for algorithm in ["auto", "dijkstra", "astar"] {
            let (st, v) = json(
                s.path(
                    "small",
                    &json!({"start": start, "flee": {"from": from, "distance": distance},
                            "algorithm": algorithm}),
                )
                .await,
            )
            .await;
            assert_eq!(st, 200, "{v}");
            assert_eq!(v["status"], "found");
            let reached = end(&v);
            assert_eq!(v["goal"], json!(reached));
            assert!(cost(&s, from, reached).await.unwrap() >= distance, "{v}");
            assert_eq!(v["cost"].as_f64().unwrap(), best, "{v}");
        }
    }
    // Nothing is that far: no path. A threat in the other room: already safe.
    let (_, v) = json(
        s.path(
            "small",
            &json!({"start": [0, 0], "flee": {"from": [0, 0], "distance": 100}}),
        )
        .await,
    )
    .await;
    assert_eq!(v["status"], "no_path");
    let (_, v) = json(
        s.path(
            "split",
            &json!({"start": [0, 0], "flee": {"from": [2, 0], "distance": 100}}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (v["status"].as_str(), v["cost"].as_f64()),
        (Some("found"), Some(0.0))
    );
    for (body, code) in [
        (
            json!({"start": [0, 0], "flee": {"from": [0, 0], "distance": -1}}),
            "invalid_request",
        ),
        (
            json!({"start": [0, 0], "flee": {"from": [0, 0]}}),
            "invalid_request",
        ),
        (
            json!({"start": [0, 0], "flee": {"from": [9, 9], "distance": 1}}),
            "out_of_bounds",
        ),
        (
            json!({"start": [0, 0], "flee": {"from": [0, 0], "distance": 1}, "partial": true}),
            "not_applicable",
        ),
        (
            json!({"start": [0, 0], "flee": {"from": [0, 0], "distance": 1}, "algorithm": "jps"}),
            "not_applicable",
        ),
    ] {
        expect_error(s.path("small", &body).await, 400, code).await;
    }
}

#[tokio::test]
async fn snap_moves_blocked_and_unreachable_ends() {
    let s = server().await;
    // A blocked start: (1,0) and (3,0) are both one away; the smaller x wins.
    let (st, v) = json(
        s.path(
            "small",
            &json!({"start": [2, 0], "goal": [4, 0], "snap": 1}),
        )
        .await,
    )
    .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (&v["status"], &v["start"], &v["goal"], &v["snapped"]),
        (
            &json!("found"),
            &json!([1, 0]),
            &json!([4, 0]),
            &json!(true)
        )
    );
    // The goal's component is preferred: (2,0) rather than (0,0).
    let (_, v) = json(
        s.path(
            "split",
            &json!({"start": [1, 0], "goal": [2, 0], "snap": 1}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (&v["start"], &v["status"]),
        (&json!([2, 0]), &json!("found"))
    );
    // Unreachable: nothing of the other room within 1 (no path, nothing moved); within 2
    // the goal moves into the start's room.
    let (_, v) = json(
        s.path(
            "split",
            &json!({"start": [0, 0], "goal": [2, 0], "snap": 1}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (&v["status"], &v["snapped"]),
        (&json!("no_path"), &json!(false))
    );
    let (_, v) = json(
        s.path(
            "split",
            &json!({"start": [0, 0], "goal": [2, 0], "snap": 2}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (&v["status"], &v["goal"], &v["snapped"]),
        (&json!("found"), &json!([0, 0]), &json!(true))
    );
    // No candidate in range: the usual error; too far a radius: 400.
    expect_error(
        s.path(
            "small",
            &json!({"start": [2, 0], "goal": [4, 0], "snap": 0}),
        )
        .await,
        400,
        "start_blocked",
    )
    .await;
    expect_error(
        s.path(
            "small",
            &json!({"start": [2, 0], "goal": [4, 0], "snap": 65}),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    // With goals: the start snaps.
    let (_, v) = json(
        s.path(
            "small",
            &json!({"start": [2, 1], "goals": [[0, 0], [4, 2]], "snap": 1}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (&v["start"], &v["snapped"]),
        (&json!([1, 1]), &json!(true)),
        "{v}"
    );
    assert_eq!(v["goal_index"], 0);
}

#[tokio::test]
async fn nearest_answers_the_nearest_usable_cell() {
    let s = server().await;
    let get = |q: &str| {
        let url = s.at(&format!("/v1/maps/small/nearest?{q}"));
        let client = s.client.clone();
        async move { client.get(url).send().await.unwrap() }
    };
    let (st, v) = json(get("x=2&y=0&radius=1").await).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        v,
        json!({"x": 1, "y": 0, "distance": 1.0, "map_version": 1})
    );
    let (_, v) = json(get("x=0&y=0").await).await;
    assert_eq!(
        (&v["x"], &v["y"], &v["distance"]),
        (&json!(0), &json!(0), &json!(0.0))
    );
    // A 2x2 agent fits at (0,0), (0,1), (3,0) and (3,1) only: (3,1) is nearest to (2,1).
    let (_, v) = json(get("x=2&y=1&size=2").await).await;
    assert_eq!((&v["x"], &v["y"]), (&json!(3), &json!(1)), "{v}");
    expect_error(get("x=2&y=0&radius=0").await, 404, "no_usable_cell").await;
    expect_error(get("x=9&y=0").await, 400, "out_of_bounds").await;
    expect_error(get("x=0&y=0&radius=65").await, 400, "invalid_request").await;
    expect_error(get("x=0&y=0&size=9").await, 400, "invalid_request").await;
    expect_error(get("x=0").await, 400, "invalid_request").await;
    expect_error(get("x=0&y=0&bogus=1").await, 400, "invalid_request").await;
    let other = s
        .client
        .get(s.at("/v1/maps/nope/nearest?x=0&y=0"))
        .send()
        .await
        .unwrap();
    expect_error(other, 404, "map_not_found").await;
}

#[tokio::test]
async fn games_options_combine_with_the_others_or_say_why_not() {
    let s = server().await;
    // smooth, debug and partial apply as usual.
    let (_, v) = json(
        s.path(
            "small",
            &json!({"start": [0, 0], "goals": [[4, 0]], "smooth": true, "debug": true}),
        )
        .await,
    )
    .await;
    assert_eq!(v["status"], "found", "{v}");
    assert!(
        v["waypoints"].is_array() && v["expanded_cells"].is_array(),
        "{v}"
    );
    let (_, v) = json(
        s.path(
            "small",
            &json!({"start": [0, 0], "goals": [[4, 0]], "max_expansions": 2, "partial": true}),
        )
        .await,
    )
    .await;
    assert_eq!(v["status"], "partial", "{v}");
    assert!(v.get("goal_index").is_none(), "{v}");
    // A 2x2 agent fits at (0,0), (0,1), (3,0) and (3,1) only: (3,1) is out of its reach.
    let (_, v) = json(
        s.path(
            "small",
            &json!({"start": [0, 0], "goals": [[3, 1]], "size": 2}),
        )
        .await,
    )
    .await;
    assert_eq!(v["status"], "no_path", "{v}");
    // Subscriptions keep one goal.
    let sub = s
        .client
        .post(s.at("/v1/maps/small/subscriptions"))
        .json(&json!({"start": [0, 0], "goals": [[4, 0]]}))
        .send()
        .await
        .unwrap();
    expect_error(sub, 400, "invalid_request").await;
    let sub = s
        .client
        .post(s.at("/v1/maps/small/subscriptions"))
        .json(&json!({"start": [0, 0], "goal": [4, 0], "snap": 1}))
        .send()
        .await
        .unwrap();
    expect_error(sub, 400, "invalid_request").await;
}
