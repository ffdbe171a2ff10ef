//! A subscription's create is read-only work (issue 22): it never holds the map's write
//! order (defect 3), and its first search's time limit starts when the search does
//! (defect 10).

use std::time::Duration;

use pathd_client::{CellChange, MapPatch, PathRequest};
use serde_json::{Value, json};

use crate::common::{Dirs, TestServer, wait_until};

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
    s.upload_json("m", &open_map(64)).await;
    let compute = s.state.compute().clone();
    let hold = compute.hold(1).await.unwrap();
    let pathd = s.pathd();
    let create = tokio::spawn(async move {
        let q = PathRequest {
            timeout_ms: Some(200),
            ..PathRequest::new([0, 0], [63, 63])
        };
        pathd.create_subscription("m", &q).await
    });
    wait_until("the create queued", || compute.stats().queued == 1).await;
    // Longer than the query's whole time limit, spent waiting for a worker.
    tokio::time::sleep(Duration::from_millis(600)).await;
    drop(hold);
    let sub = create.await.unwrap().unwrap();
    assert_eq!(sub.status, "found", "{sub:?}");
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
    s.upload_json("big", &map).await;
    let pathd = s.pathd();
    let create = tokio::spawn({
        let pathd = pathd.clone();
        async move {
            let q = PathRequest::new([0, 0], [1023, 1023]);
            pathd.create_subscription("big", &q).await
        }
    });
    let compute = s.state.compute().clone();
    wait_until("the first search running", || compute.stats().running == 1).await;
    let wall = MapPatch {
        cells: vec![CellChange {
            x: 1023,
            y: 1000,
            cost: 0,
        }],
        if_version: None,
        ..Default::default()
    };
    pathd.patch_map("big", &wall).await.unwrap();
    assert_eq!(
        s.state.live().stats().subscriptions,
        0,
        "the PATCH was answered only after the subscription was registered"
    );
    let sub = create.await.unwrap().unwrap();
    // Its path avoids the new wall, on version 2 (at once, or after a repair event).
    let id = sub.id.clone();
    let mut current = sub;
    for _ in 0..400 {
        if current.map_version == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
        current = pathd.get_subscription(&id).await.unwrap();
    }
    assert_eq!(current.map_version, 2, "{current:?}");
    assert!(
        !current.path.contains(&[1023, 1000]),
        "the path crosses the new wall"
    );
    let q = PathRequest {
        algorithm: Some("astar".into()),
        ..PathRequest::new([0, 0], [1023, 1023])
    };
    let fresh = pathd.find_path("big", &q).await.unwrap();
    let (a, b) = (current.cost, fresh.cost);
    // (Summed from the other end: equal up to rounding.)
    assert!((a - b).abs() <= 1e-9 * b, "{a} vs A*'s {b}");
}
