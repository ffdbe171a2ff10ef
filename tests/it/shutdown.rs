//! Graceful shutdown: in-flight requests finish; draining is bounded.

use crate::common::{Dirs, SMALL_MAP, TestServer, json, wait_until};
use serde_json::json;

async fn server(grace_ms: u64) -> TestServer {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.pool_threads = 1;
    config.queue_depth = 2;
    config.shutdown_grace_ms = grace_ms;
    let s = TestServer::start(dirs, config).await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    s
}

fn spawn_query(
    s: &TestServer,
) -> tokio::task::JoinHandle<Result<reqwest::Response, reqwest::Error>> {
    let (client, url) = (s.client.clone(), s.at("/v1/maps/small/path"));
    tokio::spawn(async move {
        client
            .post(url)
            .json(&json!({"start": [0, 0], "goal": [4, 0]}))
            .send()
            .await
    })
}

#[tokio::test]
async fn in_flight_requests_finish_after_the_signal() {
    let mut s = server(60_000).await;
    let hold = s.state.compute().hold(1).await.unwrap();
    let in_flight = spawn_query(&s);
    wait_until("request queued", || s.state.compute().stats().queued == 1).await;
    s.signal_stop();
    wait_until("shutdown begun", || s.state.shutdown_token().is_cancelled()).await;
    // No new connections once draining.
    let fresh = reqwest::Client::new();
    wait_until_refused(&fresh, &s.at("/healthz")).await;
    drop(hold);
    let (st, v) = json(in_flight.await.unwrap().unwrap()).await;
    assert_eq!((st, v["status"].as_str()), (200, Some("found")));
    s.stop().await.unwrap();
}

async fn wait_until_refused(client: &reqwest::Client, url: &str) {
    for _ in 0..1000 {
        if client.get(url).send().await.is_err() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("server still accepts connections while draining");
}

#[tokio::test]
async fn draining_is_bounded() {
    let mut s = server(100).await;
    let hold = s.state.compute().hold(1).await.unwrap();
    let _stuck = spawn_query(&s);
    wait_until("request queued", || s.state.compute().stats().queued == 1).await;
    s.signal_stop();
    // `run` returns although the request can never finish while the pool is held.
    s.stop().await.unwrap();
    drop(hold);
}
