//! Derived state (issue 22): the builder pool is supervised (defect 6: a panic in one
//! build left every later map `503 abstraction_building` for good).

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Dirs, TestServer, json as read_json};

fn open_map(n: u32) -> Value {
    json!({"width": n, "height": n, "costs": vec![1; (n * n) as usize]})
}

async fn summary(s: &TestServer, name: &str) -> Value {
    read_json(
        s.client
            .get(s.at(&format!("/v1/maps/{name}")))
            .send()
            .await
            .unwrap(),
    )
    .await
    .1
}

/// Polls `name`'s summary until `done` holds (a hang guard of 60 s, not a timing claim).
async fn until(s: &TestServer, name: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..2400 {
        let m = summary(s, name).await;
        if done(&m) {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{name}: never {what}: {}", summary(s, name).await);
}

fn ready(m: &Value) -> bool {
    m["hpa"]["status"] == "ready"
        && m["jps_plus"]["status"] == "ready"
        && m["jps_plus"]["landmarks"]["status"] == "ready"
}

async fn cost(s: &TestServer, map: &str, algorithm: &str) -> (u16, Value) {
    let body = json!({"start": [0, 0], "goal": [63, 40], "algorithm": algorithm});
    read_json(s.path(map, &body).await).await
}

#[tokio::test]
async fn a_panicking_build_is_reported_and_the_next_version_builds_again() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.hpa_min_cells = 64 * 64;
    config.test_fail_builds_of = Some("bad".into());
    let s = TestServer::start(dirs, config).await;
    assert_eq!(s.put_json("bad", &open_map(64)).await.status(), 201);
    assert_eq!(s.put_json("good", &open_map(64)).await.status(), 201);
    until(&s, "good", "ready", ready).await;
    let m = until(&s, "bad", "failed", |m| {
        m["hpa"]["status"] == "failed" && m["jps_plus"]["status"] == "failed"
    })
    .await;
    assert!(
        m["hpa"]["error"].as_str().unwrap().contains("test-only"),
        "the failure says why: {m}"
    );
    // The builders live on: a map uploaded after the panics gets everything.
    assert_eq!(s.put_json("later", &open_map(64)).await.status(), 201);
    until(&s, "later", "ready", ready).await;

    // Queries that need a failed structure say so; `auto` falls back and stays exact.
    let (_, astar) = cost(&s, "bad", "astar").await;
    for algorithm in ["hpa", "jps_plus"] {
        let (status, v) = cost(&s, "bad", algorithm).await;
        assert_eq!(
            (status, v["error"]["code"].as_str()),
            (503, Some("derivation_failed")),
            "{algorithm}: {v}"
        );
    }
    let (status, auto) = cost(&s, "bad", "auto").await;
    assert_eq!((status, &auto["cost"]), (200, &astar["cost"]), "{auto}");

    // The next version builds again.
    let patch = json!({"cells": [{"x": 30, "y": 30, "cost": 0}]});
    let r = s
        .client
        .patch(s.at("/v1/maps/bad"))
        .json(&patch)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    until(&s, "bad", "rebuilt at version 2", |m| {
        m["version"] == 2 && ready(m)
    })
    .await;
    let (_, astar) = cost(&s, "bad", "astar").await;
    for algorithm in ["hpa", "jps_plus"] {
        let (status, v) = cost(&s, "bad", algorithm).await;
        assert_eq!(status, 200, "{algorithm}: {v}");
        if algorithm == "jps_plus" {
            assert_eq!(v["cost"], astar["cost"], "{v}");
        }
    }
    let metrics = s
        .client
        .get(s.at("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("pathd_derived_failures_total"),
        "failures are counted"
    );
}
