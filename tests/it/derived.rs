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
        && m["subgoal"]["status"] == "ready"
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
        m["hpa"]["status"] == "failed"
            && m["jps_plus"]["status"] == "failed"
            && m["subgoal"]["status"] == "failed"
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
    for algorithm in ["hpa", "jps_plus", "subgoal"] {
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
    for algorithm in ["hpa", "jps_plus", "subgoal"] {
        let (status, v) = cost(&s, "bad", algorithm).await;
        assert_eq!(status, 200, "{algorithm}: {v}");
        if algorithm != "hpa" {
            let (a, b) = (v["cost"].as_f64().unwrap(), astar["cost"].as_f64().unwrap());
            assert!((a - b).abs() < 1e-6, "{algorithm} {a} vs A*'s {b}");
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

/// A seeded `n` x `n` map with about 10% walls (its corners open).
fn seeded_map(n: u32, seed: u64) -> Value {
    let mut state = seed;
    let costs: Vec<u8> = (0..n * n)
        .map(|i| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let corner = i == 0 || i == n * n - 1;
            if !corner && (state >> 33).is_multiple_of(10) {
                0
            } else {
                1
            }
        })
        .collect();
    json!({"width": n, "height": n, "costs": costs})
}

/// Bytes of ready structures the summary reports (table, landmarks, abstraction).
fn reported_bytes(m: &Value) -> u64 {
    let ready = |v: &Value| v["status"] == "ready";
    let mut b = 0;
    if ready(&m["jps_plus"]) {
        b += m["jps_plus"]["memory_bytes"].as_u64().unwrap();
    }
    if ready(&m["jps_plus"]["landmarks"]) {
        b += m["jps_plus"]["landmarks"]["memory_bytes"].as_u64().unwrap();
    }
    if ready(&m["hpa"]) {
        b += m["hpa"]["memory_bytes"].as_u64().unwrap();
    }
    b
}

fn settled(m: &Value) -> bool {
    m["jps_plus"]["status"] != "building" && m["jps_plus"]["landmarks"]["status"] != "building"
}

/// One budget for derived state across maps: with room for two of five maps' tables and
/// landmarks, the least recently used are evicted, resident memory stays within the
/// budget, every answer stays exact (fallbacks meanwhile), and a structure comes back when
/// its map is used again.
#[tokio::test]
async fn derived_memory_is_bounded_across_maps_and_comes_back_on_demand() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.hpa_min_cells = 0; // tables and landmarks only
    config.subgoal_max_cells = 0;
    config.derived_memory_mb = 30; // a 512x512 map: 4 MiB of table, 8 MiB of landmarks
    let budget = 30 << 20;
    let s = TestServer::start(dirs, config).await;
    let names: Vec<String> = (0..5).map(|i| format!("m{i}")).collect();
    for (i, name) in names.iter().enumerate() {
        assert_eq!(
            s.put_json(name, &seeded_map(512, i as u64 + 1))
                .await
                .status(),
            201
        );
    }
    let mut summaries = Vec::new();
    for name in &names {
        summaries.push(until(&s, name, "settled", settled).await);
    }
    // Wait for every map's landmarks to have been made once (then some were evicted).
    for name in &names {
        until(&s, name, "given its landmarks once", |m| {
            settled(m) && m["jps_plus"]["landmarks"]["count"] != 0
                || m["jps_plus"]["landmarks"]["status"] == "evicted"
        })
        .await;
    }
    let resident = s.state.registry().budget().resident_bytes();
    assert!(resident <= budget, "{resident} resident over the budget");
    let mut reported = 0;
    let mut evicted = 0;
    for name in &names {
        let m = summary(&s, name).await;
        reported += reported_bytes(&m);
        evicted += [&m["jps_plus"], &m["jps_plus"]["landmarks"]]
            .iter()
            .filter(|v| v["status"] == "evicted")
            .count();
    }
    assert!(reported <= budget, "the summaries report {reported} bytes");
    assert!(
        evicted >= 3,
        "five maps' structures cannot all fit: {evicted} evicted"
    );

    // Every map answers exactly, whatever is resident: auto at once (JPS without a table),
    // jps_plus once its table is back (503 abstraction_building meanwhile).
    let body =
        |algorithm: &str| json!({"start": [0, 0], "goal": [511, 511], "algorithm": algorithm});
    for name in &names {
        let (_, astar) = read_json(s.path(name, &body("astar")).await).await;
        assert_eq!(astar["status"], "found", "{astar}");
        let (status, auto) = read_json(s.path(name, &body("auto")).await).await;
        assert_eq!(
            (status, &auto["cost"]),
            (200, &astar["cost"]),
            "{name}: {auto}"
        );
        let mut tries = 0;
        loop {
            let (status, v) = read_json(s.path(name, &body("jps_plus")).await).await;
            if status == 200 {
                assert_eq!(v["cost"], astar["cost"], "{name}: {v}");
                break;
            }
            assert_eq!(v["error"]["code"], "abstraction_building", "{name}: {v}");
            tries += 1;
            assert!(tries < 2400, "{name}: the table never came back");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        // Used again, its table is back (and its landmarks follow).
        let m = until(&s, name, "given its structures back", |m| {
            m["jps_plus"]["status"] == "ready" && settled(m)
        })
        .await;
        assert_eq!(m["jps_plus"]["status"], "ready", "{m}");
    }
    let resident = s.state.registry().budget().resident_bytes();
    assert!(
        resident <= budget,
        "{resident} resident over the budget at the end"
    );
}

/// Subgoal graphs are a derived structure like the others: built in the background,
/// answering exactly like A*, built again for a patched version (walls and openings),
/// reported in the summary.
#[tokio::test]
async fn subgoal_graphs_serve_queries_and_follow_patches() {
    let dirs = Dirs::new();
    let config = dirs.config();
    let s = TestServer::start(dirs, config).await;
    let mut map = seeded_map(96, 35);
    // Dense obstacles, where the graph pays off: about 30% walls.
    let costs: Vec<u8> = map["costs"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if i % 7 == 3 && i != 96 * 96 - 1 {
                0
            } else {
                c.as_u64().unwrap() as u8
            }
        })
        .collect();
    map["costs"] = json!(costs);
    assert_eq!(s.put_json("g", &map).await.status(), 201);
    let m = until(&s, "g", "given its subgoal graph", |m| {
        m["subgoal"]["status"] == "ready"
    })
    .await;
    assert!(m["subgoal"]["subgoals"].as_u64().unwrap() > 0, "{m}");
    let mut rng = 12345u64;
    let mut pick = || {
        rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        ((rng >> 33) % 96) as u32
    };
    let mut pairs = Vec::new();
    for _ in 0..40 {
        pairs.push(([pick(), pick()], [pick(), pick()]));
    }
    async fn same_as_astar(s: &TestServer, pairs: &[([u32; 2], [u32; 2])]) -> usize {
        let mut found = 0;
        for (a, b) in pairs {
            let q = |alg: &str| json!({"start": a, "goal": b, "algorithm": alg});
            let (sa, astar) = read_json(s.path("g", &q("astar")).await).await;
            let (sg, sub) = read_json(s.path("g", &q("subgoal")).await).await;
            assert_eq!(sa, sg, "{a:?}->{b:?}: {astar} vs {sub}");
            if sa == 200 {
                assert_eq!(astar["status"], sub["status"], "{sub}");
                let (x, y) = (
                    astar["cost"].as_f64().unwrap(),
                    sub["cost"].as_f64().unwrap(),
                );
                assert!((x - y).abs() < 1e-6, "{a:?}->{b:?}: A* {x}, subgoal {y}");
                if sub["status"] == "found" {
                    found += 1;
                    assert_eq!(sub["algorithm"], "subgoal");
                }
            }
        }
        found
    }
    assert!(same_as_astar(&s, &pairs).await > 10);
    // Walls and openings: the next version's graph is derived, and still exact.
    let mut cells = Vec::new();
    for i in 0..30u32 {
        let (x, y) = (pick(), pick());
        cells.push(json!({"x": x, "y": y, "cost": if i % 2 == 0 { 0 } else { 1 }}));
    }
    let r = s
        .client
        .patch(s.at("/v1/maps/g"))
        .json(&json!({"cells": cells}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // Built again in the background for version 2 (not on the write's path).
    until(&s, "g", "given version 2's graph", |m| {
        m["version"] == 2 && m["subgoal"]["status"] == "ready"
    })
    .await;
    assert!(same_as_astar(&s, &pairs).await > 10);
}
