//! Idle expiry, one rule for the three live kinds (subscriptions, flow fields, live plans,
//! `src/live/lease.rs`): a thing with no open stream and no request for the TTL is ended; an
//! open stream keeps it, and the stream's end counts as a use.

use std::time::Duration;

use serde_json::json;

use crate::common::{Dirs, TestServer, json};

/// Creates one of each kind on map `m`; answers their resource paths.
async fn create_each(s: &TestServer) -> Vec<String> {
    let mut made = Vec::new();
    for (path, body) in [
        ("subscriptions", json!({"start": [0, 0], "goal": [9, 9]})),
        ("flowfields", json!({"goal": [9, 9]})),
        (
            "plans",
            json!({"agents": [{"start": [0, 0], "goal": [9, 0]}], "subscribe": true}),
        ),
    ] {
        let resp = s
            .client
            .post(s.at(&format!("/v1/maps/m/{path}")))
            .json(&body)
            .send()
            .await
            .unwrap();
        let (status, v) = json(resp).await;
        assert_eq!(status, 201, "{path}: {v}");
        made.push(format!("/v1/{path}/{}", v["id"].as_str().unwrap()));
    }
    made
}

async fn status(s: &TestServer, path: &str) -> u16 {
    s.client
        .get(s.at(path))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn idle_subscriptions_flow_fields_and_live_plans_expire_and_streams_keep_them() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.subscription_ttl_secs = 1;
    let s = TestServer::start(dirs, config).await;
    let open = json!({"width": 10, "height": 10, "costs": vec![1; 100]});
    assert_eq!(s.put_json("m", &open).await.status(), 201);

    let idle = create_each(&s).await;
    let streamed = create_each(&s).await;
    // One open event stream on each of the second set.
    let mut streams = Vec::new();
    for p in &streamed {
        let resp = s
            .client
            .get(s.at(&format!("{p}/events")))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{p}");
        streams.push(resp);
    }
    for p in idle.iter().chain(&streamed) {
        assert_eq!(status(&s, p).await, 200, "{p} right after its create");
    }

    // Past the TTL (1 s) and a reaper tick (250 ms): the idle ones are gone, the
    // streamed ones are kept however long they are streamed.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for p in &idle {
        assert_eq!(status(&s, p).await, 404, "{p} idle past its TTL");
    }
    for p in &streamed {
        assert_eq!(status(&s, p).await, 200, "{p} streamed");
    }

    // Streams closed: a use, then idle again for the TTL, then gone.
    drop(streams);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for p in &streamed {
        assert_eq!(status(&s, p).await, 404, "{p} idle after its stream closed");
    }
}
