//! A subscription's create is read-only work (issue 22): it never holds the map's write
//! order (defect 3), and its first search's time limit starts when the search does
//! (defect 10).

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Dirs, TestServer, json as read_json, wait_until};

fn open_map(n: usize) -> Value {
    json!({"width": n, "height": n, "costs": vec![1; n * n]})
}

/// Defect 10: the first search's deadline started before the create waited for the write
/// order and the pool, so a create queued behind a busy pool answered `limit_reached`
/// though its search had all its time left.
#[tokio::test]
async fn the_first_searchs_time_limit_starts_with_the_search() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.pool_threads = 1;
    config.queue_depth = 8;
    let s = TestServer::start(dirs, config).await;
    assert_eq!(s.put_json("m", &open_map(64)).await.status(), 201);
    let compute = s.state.compute().clone();
    let hold = compute.hold(1).await.unwrap();
    let (client, url) = (s.client.clone(), s.at("/v1/maps/m/subscriptions"));
    let create = tokio::spawn(async move {
        let body = json!({"start": [0, 0], "goal": [63, 63], "timeout_ms": 200});
        read_json(client.post(url).json(&body).send().await.unwrap()).await
    });
    wait_until("the create queued", || compute.stats().queued == 1).await;
    // Longer than the query's whole time limit, spent waiting for a worker.
    tokio::time::sleep(Duration::from_millis(600)).await;
    drop(hold);
    let (status, sub) = create.await.unwrap();
    assert_eq!(status, 201, "{sub}");
    assert_eq!(sub["status"], "found", "{sub}");
}

/// Defect 3: the create held the map's write order across its first search, so a PATCH
/// of the map waited behind it (34 ms p50, up to 389, with 8 creating clients on a
/// 1024x1024 map). The PATCH is answered while the first search runs, and the
/// subscription still learns of the patch.
#[tokio::test]
async fn a_patch_does_not_wait_for_a_subscriptions_first_search() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.pool_threads = 2;
    config.jps_plus_max_cells = 0;
    config.hpa_min_cells = 0;
    let s = TestServer::start(dirs, config).await;
    let n = 1024;
    // A comb of walls: the search to the far corner expands most of the map.
    let mut costs = vec![1u8; n * n];
    for x in (8..n - 8).step_by(16) {
        for y in 0..n - 4 {
            let y = if (x / 16) % 2 == 0 { y } else { y + 4 };
            costs[y * n + x] = 0;
        }
    }
    let map = json!({"width": n, "height": n, "costs": costs});
    assert_eq!(s.put_json("big", &map).await.status(), 201);
    let (client, url) = (s.client.clone(), s.at("/v1/maps/big/subscriptions"));
    let create = tokio::spawn(async move {
        let body = json!({"start": [0, 0], "goal": [1023, 1023]});
        read_json(client.post(url).json(&body).send().await.unwrap()).await
    });
    let compute = s.state.compute().clone();
    wait_until("the first search running", || compute.stats().running == 1).await;
    let r = s
        .client
        .patch(s.at("/v1/maps/big"))
        .json(&json!({"cells": [{"x": 1023, "y": 1000, "cost": 0}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        s.state.live().stats().subscriptions,
        0,
        "the PATCH was answered only after the subscription was registered"
    );
    let (status, sub) = create.await.unwrap();
    assert_eq!(status, 201, "{sub}");
    // Its path avoids the new wall, on version 2 (at once, or after a repair event).
    let id = sub["id"].as_str().unwrap().to_owned();
    let mut current = sub;
    for _ in 0..400 {
        if current["map_version"] == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
        let r = s.client.get(s.at(&format!("/v1/subscriptions/{id}")));
        current = read_json(r.send().await.unwrap()).await.1;
    }
    assert_eq!(current["map_version"], 2, "{current}");
    let path = current["path"].as_array().unwrap();
    assert!(
        !path.contains(&json!([1023, 1000])),
        "the path crosses the new wall"
    );
    let body = json!({"start": [0, 0], "goal": [1023, 1023], "algorithm": "astar"});
    let (_, fresh) = read_json(s.path("big", &body).await).await;
    let (a, b) = (
        current["cost"].as_f64().unwrap(),
        fresh["cost"].as_f64().unwrap(),
    );
    // (Summed from the other end: equal up to rounding.)
    assert!((a - b).abs() <= 1e-9 * b, "{a} vs A*'s {b}");
}
