//! The search pool under pressure: overload answers 503 at once, queued work still runs,
//! snapshots survive deletes, and a client that disconnects cancels its search.

use crate::common::{Dirs, SMALL_MAP, TestServer, api_error, query, wait_until};
use pathd_client::{Error, PathRequest};
use serde_json::json;

async fn server(threads: usize, queue: usize) -> TestServer {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.max_batch = 2000;
    config.pool_threads = threads;
    config.queue_depth = queue;
    let s = TestServer::start(dirs, config).await;
    s.upload("small", SMALL_MAP).await;
    s
}

fn corner() -> PathRequest {
    PathRequest::new([0, 0], [4, 0])
}

#[tokio::test]
async fn saturated_pool_answers_overloaded_with_retry_after() {
    let s = server(1, 0).await;
    // Retries off: the `503` itself is asserted.
    let pathd = s.pathd_once();
    let hold = s.state.compute().hold(1).await.unwrap();
    let r = pathd.find_path("small", &corner()).await;
    assert!(
        matches!(
            r,
            Err(Error::Api {
                retry_after: Some(1),
                ..
            })
        ),
        "Retry-After: 1: {r:?}"
    );
    api_error(r, 503, "overloaded");
    // Batches and uploads need the pool too.
    api_error(
        pathd.find_paths("small", &[corner()]).await,
        503,
        "overloaded",
    );
    api_error(
        pathd.put_map_text("other", SMALL_MAP).await,
        503,
        "overloaded",
    );
    // Routes that need no worker still answer.
    pathd.get_map("small", None).await.unwrap();
    assert_eq!(s.state.compute().stats().rejected, 3);
    drop(hold);
    wait_until("worker free", || s.state.compute().stats().running == 0).await;
    let v = pathd.find_path("small", &corner()).await.unwrap();
    assert_eq!(v.status, "found");
}

#[tokio::test]
async fn queued_requests_wait_then_run_and_the_queue_is_bounded() {
    let s = server(1, 1).await;
    let hold = s.state.compute().hold(1).await.unwrap();
    let queued = {
        let pathd = s.pathd_once();
        tokio::spawn(async move { pathd.find_path("small", &corner()).await })
    };
    wait_until("request queued", || s.state.compute().stats().queued == 1).await;
    api_error(
        s.pathd_once().find_path("small", &corner()).await,
        503,
        "overloaded",
    );
    drop(hold);
    let v = queued.await.unwrap().unwrap();
    assert_eq!(v.status, "found");
}

#[tokio::test]
async fn a_delete_does_not_disturb_a_query_holding_the_old_snapshot() {
    let s = server(1, 2).await;
    let hold = s.state.compute().hold(1).await.unwrap();
    let queued = {
        let pathd = s.pathd_once();
        tokio::spawn(async move { pathd.find_path("small", &corner()).await })
    };
    wait_until("request queued", || s.state.compute().stats().queued == 1).await;
    // Delete and re-create with a wall that blocks the goal: the queued query keeps v1.
    s.pathd().delete_map("small").await.unwrap();
    drop(hold);
    let v = queued.await.unwrap().unwrap();
    assert_eq!((v.status.as_str(), v.map_version), ("found", 1));
    api_error(
        s.pathd().find_path("small", &corner()).await,
        404,
        "map_not_found",
    );
}

#[tokio::test]
async fn a_client_that_disconnects_cancels_its_search() {
    let s = server(1, 4).await;
    // Dijkstra corner to corner on an open 512x512 map expands every cell; a batch of 2000
    // of them would keep the only worker busy for minutes if it were not cancelled.
    let rows: Vec<String> = (0..512).map(|_| ".".repeat(512)).collect();
    s.upload_json("open", &json!({"width": 512, "height": 512, "rows": rows}))
        .await;
    let q = PathRequest {
        timeout_ms: Some(600000),
        ..query([0, 0], [511, 511], "dijkstra")
    };
    let batch = vec![q; 2000];
    let before = s.state.compute().stats().cancelled;
    let mut request = {
        let mut pathd = s.pathd_once();
        // The test drops it; no client-side timeout meanwhile.
        pathd.timeout = std::time::Duration::from_secs(3600);
        tokio::spawn(async move { pathd.find_paths("open", &batch).await })
    };
    tokio::select! {
        r = &mut request => panic!("batch answered before it could be cancelled: {r:?}"),
        _ = wait_until("search running", || s.state.compute().stats().running == 1) => {}
    }
    request.abort(); // drops the connection
    let _ = request.await;
    wait_until("search cancelled", || {
        s.state.compute().stats().cancelled > before
    })
    .await;
    wait_until("worker free", || s.state.compute().stats().running == 0).await;
    let v = s.pathd().find_path("small", &corner()).await.unwrap();
    assert_eq!(v.status, "found");
}

/// Defect 7 of issue 22: the subscription and flow-field drivers each ran `threads` jobs
/// admitted with `run_waiting`, so with `--queue-depth` below the thread count repairs
/// alone took every permit and queries got `503`. Background work now shares one budget
/// of `threads` lanes: however many background jobs wait, a query is still admitted.
#[tokio::test]
async fn background_work_never_takes_the_queries_room() {
    let compute = pathd::compute::Compute::new(2, 1);
    let (release, gate) = tokio::sync::watch::channel(false);
    let mut background = Vec::new();
    for _ in 0..6 {
        let (c, mut gate) = (compute.clone(), gate.clone());
        background.push(tokio::spawn(async move {
            c.run_background(move |_| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                rt.block_on(async { gate.wait_for(|open| *open).await.map(|_| ()) })
                    .unwrap();
            })
            .await
            .unwrap();
        }));
    }
    wait_until("both workers busy with repairs", || {
        compute.stats().running == 2
    })
    .await;
    let c = compute.clone();
    let query = tokio::spawn(async move { c.run(|_| 42).await });
    wait_until("the query queued, not refused", || {
        compute.stats().queued >= 1
    })
    .await;
    assert_eq!(compute.stats().rejected, 0);
    release.send(true).unwrap();
    assert_eq!(query.await.unwrap().unwrap(), 42);
    for b in background {
        b.await.unwrap();
    }
}
