//! HPA* over HTTP: the abstraction is built in the background for big maps, serves
//! `"algorithm": "hpa"` and long `auto` queries on weighted maps, is derived on patches, and
//! shows in the map summary and `/metrics`.

use crate::common::{Dirs, TestServer, expect_error, json, wait_until};
use pathd_engine::Point;
use serde_json::{Value, json};

/// A 128x128 weighted map: cost 1 except a band of cost-9 hills, and a wall with a gap.
fn weighted_map() -> Value {
    let (w, h) = (128usize, 128usize);
    let mut costs = vec![1u8; w * h];
    for y in 0..h {
        for x in 0..w {
            if (40..60).contains(&x) {
                costs[y * w + x] = 9;
            }
            if x == 90 && y != 100 {
                costs[y * w + x] = 0;
            }
        }
    }
    json!({"width": w, "height": h, "costs": costs})
}

async fn server() -> TestServer {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.hpa_min_cells = 64 * 64;
    config.hpa_cluster_size = 8;
    TestServer::start(dirs, config).await
}

async fn wait_hpa(s: &TestServer, name: &str) {
    wait_until("HPA* abstraction", || {
        s.state
            .registry()
            .get(name)
            .is_some_and(|e| e.hpa.get().is_some())
    })
    .await;
}

fn check_legal(s: &TestServer, name: &str, body: &Value) -> f64 {
    let entry = s.state.registry().get(name).unwrap();
    let path: Vec<Point> = body["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| Point::new(p[0].as_u64().unwrap() as u32, p[1].as_u64().unwrap() as u32))
        .collect();
    let cost = entry.grid.path_cost(&path).expect("every step legal");
    assert!(
        (cost - body["cost"].as_f64().unwrap()).abs() < 1e-6,
        "{body}"
    );
    cost
}

#[tokio::test]
async fn hpa_serves_big_maps_and_follows_patches() {
    let s = server().await;
    let (status, _) = json(s.put_json("hills", &weighted_map()).await).await;
    assert_eq!(status, 201);
    wait_hpa(&s, "hills").await;

    let (_, summary) = json(s.client.get(s.at("/v1/maps/hills")).send().await.unwrap()).await;
    let hpa = &summary["hpa"];
    assert_eq!(hpa["status"], "ready", "{summary}");
    assert_eq!(hpa["cluster_size"], 8);
    assert!(hpa["nodes"].as_u64().unwrap() > 0 && hpa["memory_bytes"].as_u64().unwrap() > 0);

    let (start, goal) = (json!([2, 3]), json!([120, 125]));
    let (_, exact) = json(
        s.path("hills", &json!({"start": start, "goal": goal}))
            .await,
    )
    .await;
    let (_, h) = json(
        s.path(
            "hills",
            &json!({"start": start, "goal": goal, "algorithm": "hpa"}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (h["status"].as_str(), h["algorithm"].as_str()),
        (Some("found"), Some("hpa")),
        "{h}"
    );
    let (opt, got) = (
        check_legal(&s, "hills", &exact),
        check_legal(&s, "hills", &h),
    );
    assert!(
        got >= opt - 1e-9 && got <= opt * 1.1,
        "hpa {got} vs optimal {opt}"
    );

    // `auto`: HPA* for a long query on a weighted map, A* for a short one.
    let (_, a) = json(
        s.path(
            "hills",
            &json!({"start": start, "goal": goal, "algorithm": "auto"}),
        )
        .await,
    )
    .await;
    assert_eq!(a["algorithm"], "hpa");
    let (_, a) = json(
        s.path(
            "hills",
            &json!({"start": [2, 3], "goal": [6, 6], "algorithm": "auto"}),
        )
        .await,
    )
    .await;
    assert_eq!(a["algorithm"], "astar");

    // Close the wall's gap: the patched version has its abstraction at once (derived from
    // the previous one), and it knows the goal is now unreachable.
    let patch = json!({"cells": [{"x": 90, "y": 100, "cost": 0}]});
    let resp = s
        .client
        .patch(s.at("/v1/maps/hills"))
        .json(&patch)
        .send()
        .await
        .unwrap();
    let (status, p) = json(resp).await;
    assert_eq!((status, p["version"].as_u64()), (200, Some(2)), "{p}");
    let entry = s.state.registry().get("hills").unwrap();
    assert!(entry.hpa.get().is_some(), "a patch derives the abstraction");
    let (_, h) = json(
        s.path(
            "hills",
            &json!({"start": start, "goal": goal, "algorithm": "hpa"}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (h["status"].as_str(), h["map_version"].as_u64()),
        (Some("no_path"), Some(2)),
        "{h}"
    );
    // Open it elsewhere: HPA* finds the new way round.
    let patch = json!({"rects": [{"x": 90, "y": 10, "width": 1, "height": 3, "cost": 1}]});
    let resp = s
        .client
        .patch(s.at("/v1/maps/hills"))
        .json(&patch)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let (_, h) = json(
        s.path(
            "hills",
            &json!({"start": start, "goal": goal, "algorithm": "hpa"}),
        )
        .await,
    )
    .await;
    assert_eq!(h["status"], "found", "{h}");
    check_legal(&s, "hills", &h);

    let metrics = s
        .client
        .get(s.at("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("pathd_hpa_memory_bytes"), "{metrics}");
}

#[tokio::test]
async fn small_maps_have_no_abstraction() {
    let s = server().await;
    let resp = s.put_text("small", crate::common::SMALL_MAP).await;
    assert_eq!(resp.status(), 201);
    let (_, summary) = json(s.client.get(s.at("/v1/maps/small")).send().await.unwrap()).await;
    assert!(summary.get("hpa").is_none(), "{summary}");
    let resp = s
        .path(
            "small",
            &json!({"start": [0, 0], "goal": [4, 0], "algorithm": "hpa"}),
        )
        .await;
    expect_error(resp, 400, "not_applicable").await;
    // On a uniform map `auto` is JPS (JPS+ once the jump table is built, or the subgoal
    // graph once built where it pays off).
    let (_, a) = json(
        s.path(
            "small",
            &json!({"start": [0, 0], "goal": [4, 0], "algorithm": "auto"}),
        )
        .await,
    )
    .await;
    assert!(
        a["algorithm"] == "jps" || a["algorithm"] == "jps_plus" || a["algorithm"] == "subgoal",
        "{a}"
    );
}

/// `hpa` on a map too small for an abstraction says it never will have one, and why.
#[tokio::test]
async fn hpa_on_a_small_map_says_why_there_is_no_abstraction() {
    let s = TestServer::new().await;
    assert_eq!(
        s.put_text("small", crate::common::SMALL_MAP).await.status(),
        201
    );
    let q = json!({"start": [0, 0], "goal": [4, 0], "algorithm": "hpa"});
    let v = expect_error(s.path("small", &q).await, 400, "not_applicable").await;
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("below --hpa-min-cells"), "{msg}");
    assert!(!msg.contains("yet"), "{msg}");
}
