//! The search pool under pressure: overload answers 503 at once, queued work still runs,
//! snapshots survive deletes, and a client that disconnects cancels its search.

use crate::common::{Dirs, SMALL_MAP, TestServer, expect_error, json, wait_until};
use serde_json::json;

async fn server(threads: usize, queue: usize) -> TestServer {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.max_batch = 2000;
    config.pool_threads = threads;
    config.queue_depth = queue;
    let s = TestServer::start(dirs, config).await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    s
}

#[tokio::test]
async fn saturated_pool_answers_overloaded_with_retry_after() {
    let s = server(1, 0).await;
    let hold = s.state.compute().hold(1).await.unwrap();
    let resp = s
        .path("small", &json!({"start": [0, 0], "goal": [4, 0]}))
        .await;
    assert_eq!(resp.headers()["retry-after"], "1");
    expect_error(resp, 503, "overloaded").await;
    // Batches and uploads need the pool too.
    let resp = s
        .client
        .post(s.at("/v1/maps/small/paths"))
        .json(&json!({"queries": [{"start": [0, 0], "goal": [4, 0]}]}))
        .send()
        .await
        .unwrap();
    expect_error(resp, 503, "overloaded").await;
    expect_error(s.put_text("other", SMALL_MAP).await, 503, "overloaded").await;
    // Routes that need no worker still answer.
    assert_eq!(
        s.client
            .get(s.at("/v1/maps/small"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(s.state.compute().stats().rejected, 3);
    drop(hold);
    wait_until("worker free", || s.state.compute().stats().running == 0).await;
    let (st, v) = json(
        s.path("small", &json!({"start": [0, 0], "goal": [4, 0]}))
            .await,
    )
    .await;
    assert_eq!((st, v["status"].as_str()), (200, Some("found")));
}

#[tokio::test]
async fn queued_requests_wait_then_run_and_the_queue_is_bounded() {
    let s = server(1, 1).await;
    let hold = s.state.compute().hold(1).await.unwrap();
    let queued = {
        let (client, url) = (s.client.clone(), s.at("/v1/maps/small/path"));
        tokio::spawn(async move {
            let resp = client
                .post(url)
                .json(&json!({"start": [0, 0], "goal": [4, 0]}))
                .send()
                .await
                .unwrap();
            json(resp).await
        })
    };
    wait_until("request queued", || s.state.compute().stats().queued == 1).await;
    expect_error(
        s.path("small", &json!({"start": [0, 0], "goal": [4, 0]}))
            .await,
        503,
        "overloaded",
    )
    .await;
    drop(hold);
    let (st, v) = queued.await.unwrap();
    assert_eq!((st, v["status"].as_str()), (200, Some("found")));
}

#[tokio::test]
async fn a_delete_does_not_disturb_a_query_holding_the_old_snapshot() {
    let s = server(1, 2).await;
    let hold = s.state.compute().hold(1).await.unwrap();
    let queued = {
        let (client, url) = (s.client.clone(), s.at("/v1/maps/small/path"));
        tokio::spawn(async move {
            let resp = client
                .post(url)
                .json(&json!({"start": [0, 0], "goal": [4, 0]}))
                .send()
                .await
                .unwrap();
            json(resp).await
        })
    };
    wait_until("request queued", || s.state.compute().stats().queued == 1).await;
    // Delete and re-create with a wall that blocks the goal: the queued query keeps v1.
    assert_eq!(
        s.client
            .delete(s.at("/v1/maps/small"))
            .send()
            .await
            .unwrap()
            .status(),
        204
    );
    drop(hold);
    let (st, v) = queued.await.unwrap();
    assert_eq!(
        (st, v["status"].as_str(), v["map_version"].as_u64()),
        (200, Some("found"), Some(1))
    );
    expect_error(
        s.path("small", &json!({"start": [0, 0], "goal": [4, 0]}))
            .await,
        404,
        "map_not_found",
    )
    .await;
}

#[tokio::test]
async fn a_client_that_disconnects_cancels_its_search() {
    let s = server(1, 4).await;
    // Dijkstra corner to corner on an open 512x512 map expands every cell; a batch of 2000
    // of them would keep the only worker busy for minutes if it were not cancelled.
    let rows: Vec<String> = (0..512).map(|_| ".".repeat(512)).collect();
    let up = s
        .put_json("open", &json!({"width": 512, "height": 512, "rows": rows}))
        .await;
    assert_eq!(up.status(), 201);
    let q =
        json!({"start": [0, 0], "goal": [511, 511], "algorithm": "dijkstra", "timeout_ms": 600000});
    let batch = json!({"queries": vec![q; 2000]});
    let before = s.state.compute().stats().cancelled;
    let request = {
        let (client, url) = (s.client.clone(), s.at("/v1/maps/open/paths"));
        tokio::spawn(async move { client.post(url).json(&batch).send().await })
    };
    let mut request = request;
    tokio::select! {
        r = &mut request => panic!("batch answered before it could be cancelled: {:?}", r.map(|r| r.map(|r| r.status()))),
        _ = wait_until("search running", || s.state.compute().stats().running == 1) => {}
    }
    request.abort(); // drops the connection
    let _ = request.await;
    wait_until("search cancelled", || {
        s.state.compute().stats().cancelled > before
    })
    .await;
    wait_until("worker free", || s.state.compute().stats().running == 0).await;
    let (st, v) = json(
        s.path("small", &json!({"start": [0, 0], "goal": [4, 0]}))
            .await,
    )
    .await;
    assert_eq!((st, v["status"].as_str()), (200, Some("found")));
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
