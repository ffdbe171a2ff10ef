//! One query service (issue 22, defect 5): `/path` and `/posthoc` give the same status,
//! error code, algorithm and cost for the same body, for every algorithm and option
//! combination, agent sizes, `min_version`, and HPA* while its abstraction is building.
//! On the code before, `/posthoc` had no `min_version`, no sized view and no readiness
//! checks: `{"algorithm":"jps","size":2}` answered 400 naming `Derived::sized` where
//! `/path` answered 200, and HPA* while building answered 400 instead of 503.

use pathd_client::{Error, PathRequest};
use serde_json::{Value, json};

use crate::common::{Dirs, TestServer, query, wait_until};

/// A seeded 64x64 map with about 20% walls, as the JSON upload.
fn seeded_map(seed: u64) -> Value {
    let mut state = seed;
    let costs: Vec<u8> = (0..64 * 64)
        .map(|i| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            // Keep the corners open: the queries start and end there.
            let corner = [0, 63, 64 * 63, 64 * 64 - 1, 65, 64 * 62 - 2].contains(&i);
            if !corner && (state >> 33).is_multiple_of(5) {
                0
            } else {
                1
            }
        })
        .collect();
    json!({"width": 64, "height": 64, "costs": costs, "movement": "octile"})
}

/// What both routes must agree on: the status code, then either the error code or the
/// search's algorithm, status and cost (`answer`: a path answer, or a trace's `pathd`).
fn verdict(r: Result<Value, Error>) -> Value {
    match r {
        Ok(answer) => json!({
            "http": 200,
            "algorithm": answer["algorithm"],
            "status": answer["status"],
            "cost": answer["cost"],
            "map_version": answer["map_version"],
        }),
        Err(Error::Api { status, code, .. }) => json!({"http": status, "code": code}),
        Err(e) => panic!("no answer: {e}"),
    }
}

/// The same query to both routes (through the client without retries: a `503` is part of
/// the verdict).
async fn both(s: &TestServer, map: &str, q: &PathRequest) -> (Value, Value) {
    let pathd = s.pathd_once();
    let path = pathd.find_path(map, q).await.map(|r| {
        json!({"algorithm": r.algorithm, "status": r.status, "cost": r.cost,
               "map_version": r.map_version})
    });
    let posthoc = (pathd.find_path_posthoc(map, q).await)
        .map(|t| t.pathd.expect("the trace's `pathd` summary"));
    (verdict(path), verdict(posthoc))
}

#[tokio::test]
async fn path_and_posthoc_answer_alike() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.hpa_min_cells = 64 * 64;
    config.replication.max_wait_ms = 50;
    let s = TestServer::start(dirs, config).await;
    s.upload_json("t", &seeded_map(7)).await;
    let pathd = s.pathd_once();
    // Wait for the derived structures, so that both routes see the same readiness.
    let mut ready = false;
    for _ in 0..400 {
        let m = pathd.get_map("t", None).await.unwrap();
        let hpa = m.hpa.as_ref().map(|h| h.status.as_str());
        let jump = m.jps_plus.as_ref().map(|j| j.status.as_str());
        if hpa == Some("ready") && jump == Some("ready") {
            ready = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(ready, "the map's abstractions were never built");
    // The sized views' abstractions are built on first use: ask until they are there
    // (retries off: the `503` is what is waited out).
    for size in [2, 3] {
        let q = pathd_client::PathRequest {
            size: Some(size),
            ..query([0, 0], [63, 63], "hpa")
        };
        let mut tries = 0;
        while pathd
            .find_path("t", &q)
            .await
            .err()
            .and_then(|e| e.status())
            == Some(503)
        {
            tries += 1;
            assert!(tries < 400, "size {size}'s abstraction was never built");
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
    }

    let algorithms = [
        "astar",
        "dijkstra",
        "weighted_astar",
        "jps",
        "jps_plus",
        "theta",
        "hpa",
        "auto",
        "nope",
    ];
    let mut checked = 0;
    for algorithm in algorithms {
        for size in [None, Some(2), Some(3)] {
            for smooth in [false, true] {
                for min_version in [None, Some(1), Some(9)] {
                    for (start, goal) in [([0, 0], [63, 63]), ([63, 0], [0, 63])] {
                        let q = PathRequest {
                            smooth,
                            size,
                            min_version,
                            ..query(start, goal, algorithm)
                        };
                        let (path, posthoc) = both(&s, "t", &q).await;
                        assert_eq!(path, posthoc, "{q:?}");
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 9 * 3 * 2 * 3 * 2);

    // HPA* while building: a 1024x1024 map takes a while; whenever the summary still says
    // `building` after an answer, that answer was given while building.
    let big = json!({"width": 1024, "height": 1024, "costs": vec![1; 1024 * 1024]});
    s.upload_json("big", &big).await;
    let body = query([0, 0], [1023, 1023], "hpa");
    let (path, posthoc) = both(&s, "big", &body).await;
    let m = pathd.get_map("big", None).await.unwrap();
    if m.hpa.as_ref().is_some_and(|h| h.status == "building") {
        assert_eq!(path["code"], "abstraction_building", "{path}");
        assert_eq!(posthoc["code"], "abstraction_building", "{posthoc}");
    }
    wait_until("big's abstraction", || {
        s.state
            .registry()
            .get("big")
            .is_some_and(|e| e.hpa.get().is_some())
    })
    .await;
    let (path, posthoc) = both(&s, "big", &body).await;
    assert_eq!(path, posthoc);
    assert_eq!(path["status"], "found", "{path}");
}
