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
            // HPA* serves sized queries too, but this map is below --hpa-min-cells.
            json!({"start": [2, 2], "goal": [27, 2], "size": 2, "algorithm": "hpa"}),
            "not_applicable",
        ),
        (
            json!({"start": [2, 2], "goal": [27, 2], "size": 2, "algorithm": "jps_plus"}),
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

/// JPS and HPA* honour `size` too: they search the map eroded for the footprint (built on
/// the first such query; HPA*'s abstraction of it in the background, `503
/// abstraction_building` until ready), shown in the map summary, and both follow patches.
#[tokio::test]
async fn sized_jps_and_hpa_search_the_eroded_map_and_follow_patches() {
    use crate::common::Dirs;
    let (w, h) = (64usize, 40usize);
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.hpa_min_cells = 16 * 16;
    config.hpa_cluster_size = 8;
    let s = TestServer::start(dirs, config).await;
    // A wall along column 32 with a 1-cell gap at row 5 and a 2-cell gap at rows 30-31.
    let mut costs = vec![1u8; w * h];
    for y in 0..h {
        if y != 5 && !(30..32).contains(&y) {
            costs[y * w + 32] = 0;
        }
    }
    let map = json!({"width": w, "height": h, "costs": costs, "movement": "octile"});
    assert_eq!(s.put_json("big", &map).await.status(), 201);
    let (start, goal) = ((3usize, 4usize), (60usize, 6usize));
    let clear = |costs: &[u8], path: &Value, k: usize| {
        path.as_array().unwrap().iter().all(|p| {
            let (x, y) = (
                p[0].as_u64().unwrap() as usize,
                p[1].as_u64().unwrap() as usize,
            );
            (0..k).all(|dy| {
                (0..k).all(|dx| x + dx < w && y + dy < h && costs[(y + dy) * w + x + dx] != 0)
            })
        })
    };
    // Every size, both algorithms, against the reference on the eroded map.
    let check = |costs: Vec<u8>, version: u64| {
        let s = &s;
        async move {
            for k in 1..=3usize {
                let want = reference(&costs, w, h, goal, k)[start.1 * w + start.0];
                for algorithm in ["jps", "hpa"] {
                    let body = json!({"start": [start.0, start.1], "goal": [goal.0, goal.1],
                                      "size": k, "algorithm": algorithm});
                    let mut answer = s.path("big", &body).await;
                    // HPA*'s abstraction of the eroded map is built on first use.
                    for _ in 0..600 {
                        if answer.status() != 503 {
                            break;
                        }
                        let v: Value = answer.json().await.unwrap();
                        assert_eq!(v["error"]["code"], "abstraction_building", "{v}");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        answer = s.path("big", &body).await;
                    }
                    let (status, v) = json(answer).await;
                    let case = format!("v{version} size {k} {algorithm}");
                    assert_eq!(status, 200, "{case}: {v}");
                    assert_eq!(v["map_version"], version, "{case}: {v}");
                    if !want.is_finite() {
                        assert_eq!(v["status"], "no_path", "{case}: {v}");
                        continue;
                    }
                    assert_eq!(v["status"], "found", "{case}: {v}");
                    assert_eq!(v["algorithm"], algorithm, "{case}: {v}");
                    assert!(clear(&costs, &v["path"], k), "{case}: {v}");
                    let cost = v["cost"].as_f64().unwrap();
                    if algorithm == "jps" {
                        assert!(close(cost, want), "{case}: {cost} vs {want}");
                    } else {
                        assert!(cost >= want * (1.0 - 1e-9), "{case}: {cost} vs {want}");
                    }
                }
            }
        }
    };
    check(costs.clone(), 1).await;
    let summary: Value = s
        .client
        .get(s.at("/v1/maps/big"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let sized = summary["sized"]
        .as_array()
        .expect("sized views in the summary");
    let sizes: Vec<u64> = sized.iter().map(|v| v["size"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [2, 3], "{summary}");
    assert!(
        sized
            .iter()
            .all(|v| v["hpa"]["status"] == "ready" && v["memory_bytes"].as_u64() > Some(0)),
        "{summary}"
    );

    // Shut the 2-cell gap, then open a 3-cell one at rows 15-17: the views and their
    // abstractions follow each patch.
    let mut closed = costs.clone();
    for y in 30..32 {
        closed[y * w + 32] = 0;
    }
    let patch = json!({"rects": [{"x": 32, "y": 30, "width": 1, "height": 2, "cost": 0}]});
    crate::live::patch_ok(&s, "big", patch).await;
    // Derived by the patch, not rebuilt: the new version has both views and their
    // abstractions before any query asks.
    let entry = s.state.registry().get("big").unwrap();
    assert_eq!(entry.version, 2);
    for k in [2, 3] {
        let view = entry.sized.get(k).expect("the view carried over");
        assert!(
            view.hpa.get().is_some(),
            "size {k}: abstraction carried over"
        );
    }
    check(closed.clone(), 2).await;
    let mut opened = closed.clone();
    for y in 15..18 {
        opened[y * w + 32] = 1;
    }
    let patch = json!({"rects": [{"x": 32, "y": 15, "width": 1, "height": 3, "cost": 1}]});
    crate::live::patch_ok(&s, "big", patch).await;
    check(opened, 3).await;
}
