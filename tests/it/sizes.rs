//! Agent sizes over HTTP: `size` on path queries, batches and subscriptions, checked against
//! a reference Dijkstra on the map eroded for the footprint; never through a narrower gap.

use crate::common::{TestServer, expect_error, json};
use crate::flowfields::reference;
use crate::live::sse::Sse;
use serde_json::{Value, json};

const W: usize = 30;
const H: usize = 12;

/// A wall along column 15 with a 1-cell gap at row 2 and a 2-cell gap at rows 8-9.
fn gaps() -> Vec<u8> {
    let mut c = vec![1u8; W * H];
    for y in 0..H {
        if y != 2 && !(8..10).contains(&y) {
            c[y * W + 15] = 0;
        }
    }
    c
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

/// The path's anchors all leave a `k x k` footprint on passable cells.
fn footprint_clear(costs: &[u8], path: &Value, k: usize) -> bool {
    path.as_array().unwrap().iter().all(|p| {
        let (x, y) = (
            p[0].as_u64().unwrap() as usize,
            p[1].as_u64().unwrap() as usize,
        );
        (0..k).all(|dy| {
            (0..k).all(|dx| x + dx < W && y + dy < H && costs[(y + dy) * W + x + dx] != 0)
        })
    })
}

#[tokio::test]
async fn sized_paths_match_the_eroded_reference() {
    let s = TestServer::new().await;
    let costs = gaps();
    let map = json!({"width": W, "height": H, "costs": costs, "movement": "octile"});
    assert_eq!(s.put_json("g", &map).await.status(), 201);
    for k in 1..=3usize {
        let want = reference(&costs, W, H, (27, 2), k)[2 * W + 2];
        for algorithm in ["astar", "dijkstra", "auto"] {
            let body = json!({"start": [2, 2], "goal": [27, 2], "size": k, "algorithm": algorithm});
            let (status, v) = json(s.path("g", &body).await).await;
            assert_eq!(status, 200, "{v}");
            if want.is_finite() {
                assert_eq!(v["status"], "found", "k={k} {v}");
                assert!(
                    close(v["cost"].as_f64().unwrap(), want),
                    "k={k}: {v} vs {want}"
                );
                assert!(footprint_clear(&costs, &v["path"], k), "k={k}: {v}");
            } else {
                assert_eq!(v["status"], "no_path", "k={k} {v}");
            }
        }
    }
    // k=1 takes the 1-cell gap at row 2, k=2 the 2-cell one.
    let one = reference(&costs, W, H, (27, 2), 1)[2 * W + 2];
    let two = reference(&costs, W, H, (27, 2), 2)[2 * W + 2];
    assert!(one < two && two.is_finite());
    assert!(!reference(&costs, W, H, (27, 2), 3)[2 * W + 2].is_finite());

    // Batches carry a size per query.
    let (status, v) = json(
        s.client
            .post(s.at("/v1/maps/g/paths"))
            .json(&json!({"queries": [
                {"start": [2, 2], "goal": [27, 2], "size": 2},
                {"start": [2, 2], "goal": [27, 2]}
            ]}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert!(close(v["results"][0]["cost"].as_f64().unwrap(), two));
    assert!(close(v["results"][1]["cost"].as_f64().unwrap(), one));

    // Errors.
    for (body, code) in [
        (
            json!({"start": [2, 2], "goal": [27, 2], "size": 9}),
            "invalid_request",
        ),
        (
            json!({"start": [2, 2], "goal": [27, 2], "size": 0}),
            "invalid_request",
        ),
        (
            json!({"start": [14, 2], "goal": [27, 2], "size": 2}),
            "start_blocked",
        ),
        (
            json!({"start": [2, 2], "goal": [29, 2], "size": 2}),
            "goal_blocked",
        ),
        (
            json!({"start": [2, 2], "goal": [27, 2], "size": 2, "algorithm": "jps"}),
            "not_applicable",
        ),
        (
            json!({"start": [2, 2], "goal": [27, 2], "size": 2, "algorithm": "theta"}),
            "not_applicable",
        ),
        (
            json!({"start": [2, 2], "goal": [27, 2], "size": 2, "smooth": true}),
            "not_applicable",
        ),
    ] {
        let v = expect_error(s.path("g", &body).await, 400, code).await;
        assert!(!v["error"]["message"].as_str().unwrap().is_empty());
    }
}

#[tokio::test]
async fn a_sized_subscription_is_repaired_on_the_eroded_map() {
    let s = TestServer::new().await;
    let mut costs = gaps();
    let map = json!({"width": W, "height": H, "costs": costs, "movement": "octile"});
    assert_eq!(s.put_json("g", &map).await.status(), 201);
    let (status, v) = json(
        s.client
            .post(s.at("/v1/maps/g/subscriptions"))
            .json(&json!({"start": [2, 2], "goal": [27, 2], "size": 2}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_owned();
    assert!(close(
        v["cost"].as_f64().unwrap(),
        reference(&costs, W, H, (27, 2), 2)[2 * W + 2]
    ));
    assert!(footprint_clear(&costs, &v["path"], 2));
    let mut st = Sse::open(
        &s.client,
        &s.at(&format!("/v1/subscriptions/{id}/events")),
        None,
    )
    .await;
    assert_eq!(st.expect().await.reason(), "initial");
    // Widen the 1-cell gap to 2 rows: the agent now fits through it.
    let resp = s
        .client
        .patch(s.at("/v1/maps/g"))
        .json(&json!({"cells": [{"x": 15, "y": 3, "cost": 1}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    costs[3 * W + 15] = 1;
    let ev = st.expect().await;
    assert_eq!(ev.reason(), "cheaper");
    let want = reference(&costs, W, H, (27, 2), 2)[2 * W + 2];
    assert!(
        close(ev.data["cost"].as_f64().unwrap(), want),
        "{:?} vs {want}",
        ev.data
    );
    assert!(footprint_clear(&costs, &ev.data["path"], 2));
    // Narrow the 2-cell gap at rows 8-9 and the new one: no room for a 2x2 agent.
    let resp = s
        .client
        .patch(s.at("/v1/maps/g"))
        .json(&json!({"cells": [{"x": 15, "y": 9, "cost": 0}, {"x": 15, "y": 3, "cost": 0}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let ev = st.expect().await;
    assert_eq!(
        (ev.reason(), &ev.data["status"]),
        ("unreachable", &json!("no_path"))
    );
    // Bad sizes are refused at creation.
    let resp = s
        .client
        .post(s.at("/v1/maps/g/subscriptions"))
        .json(&json!({"start": [2, 2], "goal": [27, 2], "size": 12}))
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "invalid_request").await;
}
