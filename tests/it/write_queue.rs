//! Writes are bounded and shutdown never hangs on them (issue 22, defects 1 and 4).

use std::time::Duration;

use pathd::AppState;
use pathd_engine::movingai::parse_map;
use serde_json::json;

use crate::common::{Dirs, SMALL_MAP, TestServer, api_error};
use pathd_client::{CellChange, MapPatch};

fn wall(x: u32, y: u32) -> MapPatch {
    MapPatch {
        cells: vec![CellChange { x, y, cost: 0 }],
        ..Default::default()
    }
}

/// Defect 1: a write parked on startup recovery (here: no recovery ever runs, as when the
/// store is unreachable and the loader is aborted by shutdown) kept `drain()` waiting for
/// good. On the code before, the drain below never returned.
#[tokio::test]
async fn shutdown_refuses_writes_parked_on_recovery_and_returns() {
    let dirs = Dirs::new();
    let state = AppState::new(dirs.config()).unwrap();
    let maps = state.maps().clone();
    let grid = parse_map(SMALL_MAP).unwrap();
    let put = tokio::spawn(async move { maps.put("m".into(), grid).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!put.is_finished(), "a write waits for recovery");
    let drained = tokio::time::timeout(Duration::from_secs(30), state.maps().drain()).await;
    assert!(
        drained.is_ok(),
        "drain() hung on a write parked on recovery"
    );
    let answer = tokio::time::timeout(Duration::from_secs(5), put)
        .await
        .expect("the parked write got no answer")
        .unwrap();
    let e = answer.expect_err("a write never admitted is refused, not acknowledged");
    assert!(e.to_string().contains("shutting down"), "{e}");
    assert!(
        state.registry().get("m").is_none(),
        "nothing was served either"
    );
}

/// Defect 4: write tasks were detached and uncapped: fire-and-forget PATCHes piled up
/// without bound behind a held write order. Past `--max-pending-writes` a map's writes
/// answer `503 overloaded` at once; every acknowledged one lands.
#[tokio::test]
async fn a_maps_pending_writes_are_capped() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.max_pending_writes = 4;
    let s = TestServer::start(dirs, config).await;
    let map = json!({"width": 64, "height": 64, "costs": vec![1; 64 * 64]});
    s.upload_json("m", &map).await;
    // Hold the map's write order: every write queues behind it.
    let order = s.state.maps().write_order("m").await;
    let mut sent = Vec::new();
    for x in 0..40u32 {
        // Retries off: each `503` is counted.
        let pathd = s.pathd_once();
        sent.push(tokio::spawn(async move {
            pathd.patch_map("m", &wall(x, 1)).await
        }));
    }
    // All but the four admitted are answered while the order is still held.
    let mut refused = 0;
    let mut waiting = Vec::new();
    for t in sent {
        tokio::time::sleep(Duration::from_millis(5)).await;
        if t.is_finished() {
            api_error(t.await.unwrap(), 503, "overloaded");
            refused += 1;
        } else {
            waiting.push(t);
        }
    }
    for _ in 0..400 {
        if waiting.iter().filter(|t| !t.is_finished()).count() <= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let still = waiting.iter().filter(|t| !t.is_finished()).count();
    assert_eq!(
        still, 4,
        "the queue holds exactly the cap while the order is held"
    );
    drop(order);
    let mut acknowledged = 0;
    for t in waiting {
        let r = t.await.unwrap();
        if r.is_ok() {
            acknowledged += 1;
        } else {
            api_error(r, 503, "overloaded");
            refused += 1;
        }
    }
    assert_eq!((acknowledged, refused), (4, 36));
    let m = s.pathd().get_map("m", None).await.unwrap();
    assert_eq!((m.version, m.blocked_cells), (5, 4));
    // Nothing is left behind for the map's writes, nor for a name refused outright.
    assert_eq!(s.state.maps().write_queues(), 0);
}

/// A write's CPU work does not queue behind searches: with every search worker held (as
/// by long flow-field creates), a PATCH is still answered. On the code before, the patch
/// waited for a worker (p50 867 ms, p99 3,985 ms under 8 clients creating subscriptions
/// and flow fields on a 1024x1024 map, `scripts/patch-under-readers.sh`).
#[tokio::test]
async fn a_patch_needs_no_search_worker() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.pool_threads = 1;
    let s = TestServer::start(dirs, config).await;
    let map = json!({"width": 64, "height": 64, "costs": vec![1; 64 * 64]});
    s.upload_json("m", &map).await;
    let hold = s.state.compute().hold(1).await.unwrap();
    let pathd = s.pathd();
    let body = wall(3, 3);
    let patch = pathd.patch_map("m", &body);
    tokio::time::timeout(Duration::from_secs(20), patch)
        .await
        .expect("the PATCH waited for a search worker")
        .unwrap();
    drop(hold);
}
