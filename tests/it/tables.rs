//! The questions games ask, over a real server: `/matrix` (against `/path` pair by pair,
//! its limits, cancellation and fairness), `/los` and `/random`, with their errors.

use crate::common::{Dirs, SMALL_MAP, TestServer, expect_error, json, wait_until};
use serde_json::{Value, json};

async fn server_with_small() -> TestServer {
    let s = TestServer::new().await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    s
}

async fn matrix(s: &TestServer, name: &str, body: &Value) -> reqwest::Response {
    s.client
        .post(s.at(&format!("/v1/maps/{name}/matrix")))
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn los(s: &TestServer, name: &str, body: &Value) -> reqwest::Response {
    s.client
        .post(s.at(&format!("/v1/maps/{name}/los")))
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn random(s: &TestServer, name: &str, query: &str) -> reqwest::Response {
    s.client
        .get(s.at(&format!("/v1/maps/{name}/random?{query}")))
        .send()
        .await
        .unwrap()
}

/// The cost `/path` answers for one pair (`null` for no path or a blocked end).
async fn path_cost(s: &TestServer, name: &str, from: &Value, to: &Value, size: u32) -> Value {
    let (st, v) = json(
        s.path(name, &json!({"start": from, "goal": to, "size": size}))
            .await,
    )
    .await;
    match (st, v["status"].as_str()) {
        (200, Some("found")) => v["cost"].clone(),
        (200, Some("no_path")) | (400, _) => Value::Null,
        other => panic!("{other:?}: {v}"),
    }
}

#[tokio::test]
async fn matrix_entries_are_the_costs_of_path_queries() {
    let s = server_with_small().await;
    // A wall splits a 7x4 map; (3, 1) is blocked.
    let rooms = "type octile\nheight 4\nwidth 7\nmap\n...@...\n...@...\n...@...\n...@...\n";
    assert_eq!(s.put_text("rooms", rooms).await.status(), 201);
    for (name, size, points) in [
        (
            "small",
            1,
            json!([[0, 0], [4, 0], [4, 2], [2, 0], [1, 1], [0, 0]]),
        ),
        ("rooms", 1, json!([[0, 0], [6, 3], [3, 1], [2, 3], [5, 0]])),
        ("rooms", 2, json!([[0, 0], [1, 2], [4, 0], [2, 2], [5, 2]])),
    ] {
        let (st, v) = json(
            matrix(
                &s,
                name,
                &json!({"sources": points, "targets": points, "size": size}),
            )
            .await,
        )
        .await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["map_version"], 1);
        let pts = points.as_array().unwrap();
        let costs = v["costs"].as_array().unwrap();
        assert_eq!(costs.len(), pts.len());
        let mut nulls = 0;
        for (i, from) in pts.iter().enumerate() {
            for (j, to) in pts.iter().enumerate() {
                let want = path_cost(&s, name, from, to, size).await;
                let got = &costs[i][j];
                nulls += usize::from(got.is_null());
                match (got.as_f64(), want.as_f64()) {
                    (Some(g), Some(w)) => assert!((g - w).abs() < 1e-9, "{name} {from}->{to}"),
                    (None, None) => {}
                    _ => panic!("{name} size {size}: {from} -> {to}: {got} vs {want}"),
                }
            }
        }
        assert!(nulls > 0, "some pairs are unreachable or blocked");
    }
    // Empty sides are empty tables.
    let (st, v) =
        json(matrix(&s, "small", &json!({"sources": [], "targets": [[0, 0]]})).await).await;
    assert_eq!((st, v["costs"].clone()), (200, json!([])));
    let (st, v) =
        json(matrix(&s, "small", &json!({"sources": [[0, 0]], "targets": []})).await).await;
    assert_eq!((st, v["costs"].clone()), (200, json!([[]])));
}

#[tokio::test]
async fn matrix_errors_have_stable_codes() {
    let s = server_with_small().await;
    let many: Vec<Value> = (0..257).map(|_| json!([0, 0])).collect();
    for (body, status, code) in [
        (
            json!({"sources": many, "targets": [[0, 0]]}),
            400,
            "matrix_too_large",
        ),
        (
            json!({"sources": [[0, 0]], "targets": many}),
            400,
            "matrix_too_large",
        ),
        (
            json!({"sources": [[0, 0]], "targets": [[5, 0]]}),
            400,
            "out_of_bounds",
        ),
        (
            json!({"sources": [[0, 9]], "targets": [[0, 0]]}),
            400,
            "out_of_bounds",
        ),
        (
            json!({"sources": [[0, 0]], "targets": [[0, 0]], "size": 9}),
            400,
            "invalid_request",
        ),
        (
            json!({"sources": [[0, 0]], "targets": [[0, 0]], "algorithm": "astar"}),
            400,
            "invalid_request",
        ),
        (json!({"sources": [[0, 0]]}), 400, "invalid_request"),
    ] {
        expect_error(matrix(&s, "small", &body).await, status, code).await;
    }
    expect_error(
        matrix(&s, "nope", &json!({"sources": [], "targets": []})).await,
        404,
        "map_not_found",
    )
    .await;
}

#[tokio::test]
async fn a_row_stopped_by_a_limit_is_limit_reached() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.max_expansions = 50;
    let s = TestServer::start(dirs, config).await;
    let rows: Vec<String> = (0..64).map(|_| ".".repeat(64)).collect();
    let up = s
        .put_json("open", &json!({"width": 64, "height": 64, "rows": rows}))
        .await;
    assert_eq!(up.status(), 201);
    expect_error(
        matrix(
            &s,
            "open",
            &json!({"sources": [[0, 0]], "targets": [[63, 63]]}),
        )
        .await,
        400,
        "limit_reached",
    )
    .await;
    expect_error(
        random(&s, "open", "x=0&y=0&radius=40").await,
        400,
        "limit_reached",
    )
    .await;
    // Within the limit: a small map (a table row on a uniform map writes the costs of
    // whole straight runs at once, so its limit counts cells written), a small radius.
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    let (st, v) = json(
        matrix(
            &s,
            "small",
            &json!({"sources": [[0, 0]], "targets": [[4, 0]]}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (st, v["costs"][0][0].as_f64().is_some()),
        (200, true),
        "{v}"
    );
    let (st, v) = json(random(&s, "open", "x=0&y=0&radius=1&seed=3").await).await;
    assert_eq!(st, 200, "{v}");
}

/// One worker, a 256-row table whose every row floods a 768x768 map: a path query sent
/// meanwhile is answered before the table (fairness: the table is a job per row), and
/// dropping the table's connection cancels it.
#[tokio::test]
async fn a_table_shares_the_pool_and_is_cancelled_with_its_client() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.pool_threads = 1;
    config.queue_depth = 4;
    // No background builds on the pool: the one job running is the table's.
    (
        config.hpa_min_cells,
        config.jps_plus_max_cells,
        config.subgoal_max_cells,
    ) = (0, 0, 0);
    let s = TestServer::start(dirs, config).await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    let rows: Vec<String> = (0..768).map(|_| ".".repeat(768)).collect();
    let up = s
        .put_json("open", &json!({"width": 768, "height": 768, "rows": rows}))
        .await;
    assert_eq!(up.status(), 201);
    let sources: Vec<Value> = (0..256).map(|i| json!([i, 0])).collect();
    let body = json!({"sources": sources, "targets": [[767, 767]], "timeout_ms": 600000});
    let mut request = {
        let (client, url) = (s.client.clone(), s.at("/v1/maps/open/matrix"));
        tokio::spawn(async move { client.post(url).json(&body).send().await })
    };
    tokio::select! {
        r = &mut request => panic!("table answered before the test could look: {:?}", r.map(|r| r.map(|r| r.status()))),
        _ = wait_until("table running", || {
            let st = s.state.compute().stats();
            st.running == 1 && st.queued > 200
        }) => {}
    }
    let (st, v) = json(
        s.path("small", &json!({"start": [0, 0], "goal": [4, 0]}))
            .await,
    )
    .await;
    assert_eq!((st, v["status"].as_str()), (200, Some("found")));
    assert!(
        !request.is_finished(),
        "the path query waited for the whole table"
    );
    request.abort(); // drops the connection
    let _ = request.await;
    // The row running stops at its next look at the flag (counted as cancelled), the rows
    // still queued are skipped: the pool drains long before 256 rows of 590k expansions
    // each could have run.
    wait_until("table cancelled", || {
        let st = s.state.compute().stats();
        st.running == 0 && st.queued == 0
    })
    .await;
}

#[tokio::test]
async fn los_reports_the_first_blocking_cell() {
    let s = server_with_small().await;
    // ..@..
    // ..@..
    // .....
    for (from, to, visible, blocked) in [
        (json!([0, 0]), json!([1, 2]), true, Value::Null),
        (json!([0, 0]), json!([4, 0]), false, json!([2, 0])),
        (json!([4, 1]), json!([0, 0]), false, json!([2, 1])),
        // Slope 2/3: (0, 0), (1, 0), (1, 1), then the wall at (2, 1).
        (json!([0, 0]), json!([3, 2]), false, json!([2, 1])),
        // Through the corner of (2, 0), (3, 0), (2, 1), (3, 1): the side along x, (2, 0),
        // is the wall reported (the side along y, (3, 1), is open).
        (json!([3, 0]), json!([1, 2]), false, json!([2, 0])),
        // Through the corner of (1, 1), (2, 1), (1, 2), (2, 2): both sides open, the next
        // cell (2, 1) is a wall.
        (json!([1, 2]), json!([3, 0]), false, json!([2, 1])),
        (json!([2, 0]), json!([2, 2]), false, json!([2, 0])),
        (json!([0, 2]), json!([4, 2]), true, Value::Null),
    ] {
        let (st, v) = json(los(&s, "small", &json!({"from": from, "to": to})).await).await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(
            (v["visible"].as_bool(), &v["blocked_at"]),
            (Some(visible), &blocked),
            "{from} -> {to}: {v}"
        );
        assert_eq!(v["map_version"], 1);
    }
    expect_error(
        los(&s, "small", &json!({"from": [0, 0], "to": [5, 0]})).await,
        400,
        "out_of_bounds",
    )
    .await;
    expect_error(
        los(&s, "small", &json!({"from": [0, 0]})).await,
        400,
        "invalid_request",
    )
    .await;
    expect_error(
        los(&s, "nope", &json!({"from": [0, 0], "to": [1, 0]})).await,
        404,
        "map_not_found",
    )
    .await;
}

#[tokio::test]
async fn random_points_are_within_the_radius_and_seeded() {
    let s = server_with_small().await;
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let (st, v) =
            json(random(&s, "small", &format!("x=0&y=0&radius=2&seed={seed}")).await).await;
        assert_eq!(st, 200, "{v}");
        let (x, y) = (v["x"].as_u64().unwrap(), v["y"].as_u64().unwrap());
        let d = v["distance"].as_f64().unwrap();
        assert!(d <= 2.0, "{v}");
        let want = path_cost(&s, "small", &json!([0, 0]), &json!([x, y]), 1).await;
        assert!((want.as_f64().unwrap() - d).abs() < 1e-9, "{v}");
        assert_eq!(v["seed"], seed);
        // (0,0) (1,0) (0,1) (1,1) (0,2): (1,2) is 1 + sqrt 2 away.
        assert_eq!(v["candidates"], 5);
        seen.insert((x, y));
    }
    assert_eq!(seen.len(), 5, "every reachable cell drawn: {seen:?}");
    let a = json(random(&s, "small", "x=0&y=0&radius=2&seed=42").await).await;
    let b = json(random(&s, "small", "x=0&y=0&radius=2&seed=42").await).await;
    assert_eq!(a, b);
    let (st, v) = json(random(&s, "small", "x=4&y=2&radius=0").await).await;
    assert_eq!(
        (st, v["x"].clone(), v["y"].clone(), v["distance"].clone()),
        (200, json!(4), json!(2), json!(0.0))
    );
    assert!(v["seed"].is_u64());
    let (st, v) = json(random(&s, "small", "x=0&y=0&radius=3&size=2&seed=1").await).await;
    assert_eq!(st, 200, "{v}");
    for (query, status, code) in [
        ("x=2&y=0&radius=3", 400, "start_blocked"),
        ("x=4&y=0&radius=3&size=2", 400, "start_blocked"),
        ("x=5&y=0&radius=3", 400, "out_of_bounds"),
        ("x=0&y=0&radius=-1", 400, "invalid_request"),
        ("x=0&y=0", 400, "invalid_request"),
        ("x=0&y=0&radius=1&size=0", 400, "invalid_request"),
        ("x=0&y=0&radius=1&colour=red", 400, "invalid_request"),
    ] {
        expect_error(random(&s, "small", query).await, status, code).await;
    }
    expect_error(
        random(&s, "nope", "x=0&y=0&radius=1").await,
        404,
        "map_not_found",
    )
    .await;
}
