//! Idle expiry, one rule for the three live kinds (subscriptions, flow fields, live plans,
//! `src/live/lease.rs`): a thing with no open stream and no request for the TTL is ended; an
//! open stream keeps it, and the stream's end counts as a use.

use std::time::Duration;

use pathd_client::{Client, Error, PathRequest, PlanAgent, PlanRequest};
use serde_json::json;

use crate::common::{Dirs, TestServer};

/// The three live kinds.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Subscription,
    FlowField,
    Plan,
}

/// Creates one of each kind on map `m`; answers their kinds and ids.
async fn create_each(pathd: &Client) -> Vec<(Kind, String)> {
    let sub = pathd
        .create_subscription("m", &PathRequest::new([0, 0], [9, 9]))
        .await
        .unwrap();
    let field = pathd
        .create_flow_field("m", &json!({"goal": [9, 9]}))
        .await
        .unwrap();
    let agents = vec![PlanAgent {
        start: [0, 0],
        goal: [9, 0],
    }];
    let plan = pathd
        .create_live_plan(
            "m",
            &PlanRequest {
                agents,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    vec![
        (Kind::Subscription, sub.id),
        (Kind::FlowField, field.id),
        (Kind::Plan, plan.id.expect("a live plan's id")),
    ]
}

/// The resource path of a live thing.
fn path(kind: Kind, id: &str) -> String {
    match kind {
        Kind::Subscription => format!("/v1/subscriptions/{id}"),
        Kind::FlowField => format!("/v1/flowfields/{id}"),
        Kind::Plan => format!("/v1/plans/{id}"),
    }
}

/// The HTTP status of reading a live thing.
async fn status(pathd: &Client, (kind, id): &(Kind, String)) -> u16 {
    let r = match kind {
        Kind::Subscription => pathd.get_subscription(id).await.map(drop),
        Kind::FlowField => pathd.get_flow_field(id).await.map(drop),
        Kind::Plan => pathd.get_plan(id).await.map(drop),
    };
    match r {
        Ok(()) => 200,
        Err(Error::Api { status, .. }) => status,
        Err(e) => panic!("{kind:?} {id}: {e}"),
    }
}

#[tokio::test]
async fn idle_subscriptions_flow_fields_and_live_plans_expire_and_streams_keep_them() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.subscription_ttl_secs = 1;
    let s = TestServer::start(dirs, config).await;
    let open = json!({"width": 10, "height": 10, "costs": vec![1; 100]});
    s.upload_json("m", &open).await;
    let pathd = s.pathd();

    let idle = create_each(&pathd).await;
    let streamed = create_each(&pathd).await;
    // One open event stream on each of the second set: raw, a connection held open
    // without reading (the client's streams read, and reconnect).
    let mut streams = Vec::new();
    for (kind, id) in &streamed {
        let p = path(*kind, id);
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
        assert_eq!(status(&pathd, p).await, 200, "{p:?} right after its create");
    }

    // Past the TTL (1 s) and a reaper tick (250 ms): the idle ones are gone, the
    // streamed ones are kept however long they are streamed.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for p in &idle {
        assert_eq!(status(&pathd, p).await, 404, "{p:?} idle past its TTL");
    }
    for p in &streamed {
        assert_eq!(status(&pathd, p).await, 200, "{p:?} streamed");
    }

    // Streams closed: a use, then idle again for the TTL, then gone.
    drop(streams);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for p in &streamed {
        assert_eq!(
            status(&pathd, p).await,
            404,
            "{p:?} idle after its stream closed"
        );
    }
}
