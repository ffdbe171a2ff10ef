//! The questions games ask, over a real server: `/matrix` (against `/path` pair by pair,
//! its limits, cancellation and fairness), `/los` and `/random`, with their errors.

use crate::common::{Dirs, SMALL_MAP, TestServer, api_error, expect_error, wait_until};
use pathd_client::{Error, MatrixRequest, PathRequest, Point, RandomRequest};
use serde_json::json;

async fn server_with_small() -> TestServer {
    let s = TestServer::new().await;
    s.upload("small", SMALL_MAP).await;
    s
}

fn table(sources: &[Point], targets: &[Point]) -> MatrixRequest {
    MatrixRequest {
        sources: sources.to_vec(),
        targets: targets.to_vec(),
        ..Default::default()
    }
}

fn random_at(at: Point, radius: f64, seed: Option<u64>) -> RandomRequest {
    RandomRequest {
        at,
        radius,
        seed,
        ..Default::default()
    }
}

/// The cost `/path` answers for one pair (`None` for no path or a blocked end).
async fn path_cost(s: &TestServer, name: &str, from: Point, to: Point, size: u32) -> Option<f64> {
    let q = PathRequest {
        size: Some(size),
        ..PathRequest::new(from, to)
    };
    match s.pathd().find_path(name, &q).await {
        Ok(v) if v.status == "found" => Some(v.cost),
        Ok(v) if v.status == "no_path" => None,
        Err(Error::Api { status: 400, .. }) => None,
        other => panic!("{other:?}"),
    }
}

/// The raw JSON request to `/matrix`: for bodies the typed client cannot send.
async fn raw_matrix(s: &TestServer, name: &str, body: &serde_json::Value) -> reqwest::Response {
    s.client
        .post(s.at(&format!("/v1/maps/{name}/matrix")))
        .json(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn matrix_entries_are_the_costs_of_path_queries() {
    let s = server_with_small().await;
    // A wall splits a 7x4 map; (3, 1) is blocked.
    let rooms = "type octile\nheight 4\nwidth 7\nmap\n...@...\n...@...\n...@...\n...@...\n";
    s.upload("rooms", rooms).await;
    let pathd = s.pathd();
    for (name, size, pts) in [
        (
            "small",
            1,
            vec![[0, 0], [4, 0], [4, 2], [2, 0], [1, 1], [0, 0]],
        ),
        ("rooms", 1, vec![[0, 0], [6, 3], [3, 1], [2, 3], [5, 0]]),
        ("rooms", 2, vec![[0, 0], [1, 2], [4, 0], [2, 2], [5, 2]]),
    ] {
        let q = MatrixRequest {
            size: Some(size),
            ..table(&pts, &pts)
        };
        let v = pathd.matrix(name, &q).await.unwrap();
        assert_eq!(v.map_version, 1);
        let costs = &v.costs;
        assert_eq!(costs.len(), pts.len());
        let mut nulls = 0;
        for (i, &from) in pts.iter().enumerate() {
            assert_eq!(costs[i].len(), pts.len());
            for (j, &to) in pts.iter().enumerate() {
                let want = path_cost(&s, name, from, to, size).await;
                let got = costs[i][j];
                nulls += usize::from(got.is_none());
                match (got, want) {
                    (Some(g), Some(w)) => {
                        assert!((g - w).abs() < 1e-9, "{name} {from:?}->{to:?}")
                    }
                    (None, None) => {}
                    _ => panic!("{name} size {size}: {from:?} -> {to:?}: {got:?} vs {want:?}"),
                }
            }
        }
        assert!(nulls > 0, "some pairs are unreachable or blocked");
    }
    // Empty sides are empty tables.
    let v = pathd.matrix("small", &table(&[], &[[0, 0]])).await.unwrap();
    assert!(v.costs.is_empty());
    let v = pathd.matrix("small", &table(&[[0, 0]], &[])).await.unwrap();
    assert_eq!(v.costs, vec![Vec::<Option<f64>>::new()]);
}

#[tokio::test]
async fn matrix_errors_have_stable_codes() {
    let s = server_with_small().await;
    let pathd = s.pathd();
    let many: Vec<Point> = vec![[0, 0]; 257];
    for (q, status, code) in [
        (table(&many, &[[0, 0]]), 400, "matrix_too_large"),
        (table(&[[0, 0]], &many), 400, "matrix_too_large"),
        (table(&[[0, 0]], &[[5, 0]]), 400, "out_of_bounds"),
        (table(&[[0, 9]], &[[0, 0]]), 400, "out_of_bounds"),
        (
            MatrixRequest {
                size: Some(9),
                ..table(&[[0, 0]], &[[0, 0]])
            },
            400,
            "invalid_request",
        ),
    ] {
        api_error(pathd.matrix("small", &q).await, status, code);
    }
    // An unknown field and a missing side: bodies the typed client cannot send, raw.
    for body in [
        json!({"sources": [[0, 0]], "targets": [[0, 0]], "algorithm": "astar"}),
        json!({"sources": [[0, 0]]}),
    ] {
        expect_error(raw_matrix(&s, "small", &body).await, 400, "invalid_request").await;
    }
    api_error(
        pathd.matrix("nope", &table(&[], &[])).await,
        404,
        "map_not_found",
    );
}

#[tokio::test]
async fn a_row_stopped_by_a_limit_is_limit_reached() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.max_expansions = 50;
    let s = TestServer::start(dirs, config).await;
    let pathd = s.pathd();
    let rows: Vec<String> = (0..64).map(|_| ".".repeat(64)).collect();
    s.upload_json("open", &json!({"width": 64, "height": 64, "rows": rows}))
        .await;
    api_error(
        pathd.matrix("open", &table(&[[0, 0]], &[[63, 63]])).await,
        400,
        "limit_reached",
    );
    api_error(
        pathd.random("open", [0, 0], 40.0, None).await,
        400,
        "limit_reached",
    );
    // Within the limit: a small map (a table row on a uniform map writes the costs of
    // whole straight runs at once, so its limit counts cells written), a small radius.
    s.upload("small", SMALL_MAP).await;
    let v = pathd
        .matrix("small", &table(&[[0, 0]], &[[4, 0]]))
        .await
        .unwrap();
    assert!(v.costs[0][0].is_some(), "{v:?}");
    pathd.random("open", [0, 0], 1.0, Some(3)).await.unwrap();
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
    s.upload("small", SMALL_MAP).await;
    let rows: Vec<String> = (0..768).map(|_| ".".repeat(768)).collect();
    s.upload_json("open", &json!({"width": 768, "height": 768, "rows": rows}))
        .await;
    let sources: Vec<Point> = (0..256).map(|i| [i, 0]).collect();
    let body = MatrixRequest {
        timeout_ms: Some(600000),
        ..table(&sources, &[[767, 767]])
    };
    let mut request = {
        let mut pathd = s.pathd_once();
        // The test aborts it; no client-side timeout meanwhile.
        pathd.timeout = std::time::Duration::from_secs(3600);
        tokio::spawn(async move { pathd.matrix("open", &body).await })
    };
    tokio::select! {
        r = &mut request => panic!("table answered before the test could look: {r:?}"),
        _ = wait_until("table running", || {
            let st = s.state.compute().stats();
            st.running == 1 && st.queued > 200
        }) => {}
    }
    let v = s
        .pathd()
        .find_path("small", &PathRequest::new([0, 0], [4, 0]))
        .await
        .unwrap();
    assert_eq!(v.status, "found");
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
    let pathd = s.pathd();
    for (from, to, visible, blocked) in [
        ([0, 0], [1, 2], true, None),
        ([0, 0], [4, 0], false, Some([2, 0])),
        ([4, 1], [0, 0], false, Some([2, 1])),
        // Slope 2/3: (0, 0), (1, 0), (1, 1), then the wall at (2, 1).
        ([0, 0], [3, 2], false, Some([2, 1])),
        // Through the corner of (2, 0), (3, 0), (2, 1), (3, 1): the side along x, (2, 0),
        // is the wall reported (the side along y, (3, 1), is open).
        ([3, 0], [1, 2], false, Some([2, 0])),
        // Through the corner of (1, 1), (2, 1), (1, 2), (2, 2): both sides open, the next
        // cell (2, 1) is a wall.
        ([1, 2], [3, 0], false, Some([2, 1])),
        ([2, 0], [2, 2], false, Some([2, 0])),
        ([0, 2], [4, 2], true, None),
    ] {
        let v = pathd.los("small", from, to).await.unwrap();
        assert_eq!(
            (v.visible, v.blocked_at),
            (visible, blocked),
            "{from:?} -> {to:?}: {v:?}"
        );
        assert_eq!(v.map_version, 1);
    }
    api_error(
        pathd.los("small", [0, 0], [5, 0]).await,
        400,
        "out_of_bounds",
    );
    // Without `to` (the typed client always sends it): raw.
    let resp = s
        .client
        .post(s.at("/v1/maps/small/los"))
        .json(&json!({"from": [0, 0]}))
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "invalid_request").await;
    api_error(
        pathd.los("nope", [0, 0], [1, 0]).await,
        404,
        "map_not_found",
    );
}

#[tokio::test]
async fn random_points_are_within_the_radius_and_seeded() {
    let s = server_with_small().await;
    let pathd = s.pathd();
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let v = pathd
            .random("small", [0, 0], 2.0, Some(seed))
            .await
            .unwrap();
        let (x, y) = (v.x, v.y);
        let d = v.distance;
        assert!(d <= 2.0, "{v:?}");
        let want = path_cost(&s, "small", [0, 0], [x, y], 1).await;
        assert!((want.unwrap() - d).abs() < 1e-9, "{v:?}");
        assert_eq!(v.seed, seed);
        // (0,0) (1,0) (0,1) (1,1) (0,2): (1,2) is 1 + sqrt 2 away.
        assert_eq!(v.candidates, 5);
        seen.insert((x, y));
    }
    assert_eq!(seen.len(), 5, "every reachable cell drawn: {seen:?}");
    let a = pathd.random("small", [0, 0], 2.0, Some(42)).await.unwrap();
    let b = pathd.random("small", [0, 0], 2.0, Some(42)).await.unwrap();
    assert_eq!(a, b);
    // Without a seed the answer names the one it drew (typed: a u64).
    let v = pathd.random("small", [4, 2], 0.0, None).await.unwrap();
    assert_eq!((v.x, v.y, v.distance), (4, 2, 0.0));
    let sized = RandomRequest {
        size: Some(2),
        ..random_at([0, 0], 3.0, Some(1))
    };
    pathd.random_with("small", &sized).await.unwrap();
    for (q, status, code) in [
        (random_at([2, 0], 3.0, None), 400, "start_blocked"),
        (
            RandomRequest {
                size: Some(2),
                ..random_at([4, 0], 3.0, None)
            },
            400,
            "start_blocked",
        ),
        (random_at([5, 0], 3.0, None), 400, "out_of_bounds"),
        (random_at([0, 0], -1.0, None), 400, "invalid_request"),
        (
            RandomRequest {
                size: Some(0),
                ..random_at([0, 0], 1.0, None)
            },
            400,
            "invalid_request",
        ),
    ] {
        api_error(pathd.random_with("small", &q).await, status, code);
    }
    // Query strings the typed client cannot write (no radius, an unknown parameter): raw.
    for query in ["x=0&y=0", "x=0&y=0&radius=1&colour=red"] {
        let url = s.at(&format!("/v1/maps/small/random?{query}"));
        let resp = s.client.get(url).send().await.unwrap();
        expect_error(resp, 400, "invalid_request").await;
    }
    api_error(
        pathd.random("nope", [0, 0], 1.0, None).await,
        404,
        "map_not_found",
    );
}
