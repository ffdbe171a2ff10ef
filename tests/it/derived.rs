//! Derived state (issue 22): the builder pool is supervised (defect 6: a panic in one
//! build left every later map `503 abstraction_building` for good).

use std::time::Duration;

use pathd_client::{CellChange, Error, MapPatch, MapSummary, PathResult};
use serde_json::{Value, json};

use crate::common::{Dirs, TestServer, api_error, query};

fn open_map(n: u32) -> Value {
    json!({"width": n, "height": n, "costs": vec![1; (n * n) as usize]})
}

async fn summary(s: &TestServer, name: &str) -> MapSummary {
    s.pathd().get_map(name, None).await.unwrap()
}

/// Polls `name`'s summary until `done` holds (a hang guard of 60 s, not a timing claim).
async fn until(
    s: &TestServer,
    name: &str,
    what: &str,
    done: impl Fn(&MapSummary) -> bool,
) -> MapSummary {
    for _ in 0..2400 {
        let m = summary(s, name).await;
        if done(&m) {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{name}: never {what}: {:?}", summary(s, name).await);
}

/// The status of the map's JPS+ table, its landmarks, HPA* abstraction, subgoal graph
/// (`None` where the summary has none).
fn statuses(m: &MapSummary) -> [Option<&str>; 4] {
    let jump = m.jps_plus.as_ref();
    [
        jump.map(|j| j.status.as_str()),
        jump.and_then(|j| j.landmarks.as_ref())
            .map(|l| l.status.as_str()),
        m.hpa.as_ref().map(|h| h.status.as_str()),
        m.subgoal.as_ref().map(|g| g.status.as_str()),
    ]
}

fn ready(m: &MapSummary) -> bool {
    statuses(m).iter().all(|s| *s == Some("ready"))
}

/// The query of these tests; retries off, since they assert `503`s.
async fn cost(s: &TestServer, map: &str, algorithm: &str) -> Result<PathResult, Error> {
    s.pathd_once()
        .find_path(map, &query([0, 0], [63, 40], algorithm))
        .await
}

#[tokio::test]
async fn a_panicking_build_is_reported_and_the_next_version_builds_again() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.hpa_min_cells = 64 * 64;
    config.test_fail_builds_of = Some("bad".into());
    let s = TestServer::start(dirs, config).await;
    s.upload_json("bad", &open_map(64)).await;
    s.upload_json("good", &open_map(64)).await;
    until(&s, "good", "ready", ready).await;
    let m = until(&s, "bad", "failed", |m| {
        let [jump, _, hpa, subgoal] = statuses(m);
        [jump, hpa, subgoal] == [Some("failed"); 3]
    })
    .await;
    let why = m.hpa.as_ref().and_then(|h| h.error.as_deref());
    assert!(
        why.is_some_and(|e| e.contains("test-only")),
        "the failure says why: {m:?}"
    );
    // The builders live on: a map uploaded after the panics gets everything.
    s.upload_json("later", &open_map(64)).await;
    until(&s, "later", "ready", ready).await;

    // Queries that need a failed structure say so; `auto` falls back and stays exact.
    let astar = cost(&s, "bad", "astar").await.unwrap();
    for algorithm in ["hpa", "jps_plus", "subgoal"] {
        api_error(cost(&s, "bad", algorithm).await, 503, "derivation_failed");
    }
    let auto = cost(&s, "bad", "auto").await.unwrap();
    assert_eq!(auto.cost, astar.cost, "{auto:?}");

    // The next version builds again.
    let patch = MapPatch {
        cells: vec![CellChange {
            x: 30,
            y: 30,
            cost: 0,
        }],
        ..Default::default()
    };
    s.pathd().patch_map("bad", &patch).await.unwrap();
    until(&s, "bad", "rebuilt at version 2", |m| {
        m.version == 2 && ready(m)
    })
    .await;
    let astar = cost(&s, "bad", "astar").await.unwrap();
    for algorithm in ["hpa", "jps_plus", "subgoal"] {
        let v = cost(&s, "bad", algorithm)
            .await
            .unwrap_or_else(|e| panic!("{algorithm}: {e}"));
        if algorithm != "hpa" {
            let (a, b) = (v.cost, astar.cost);
            assert!((a - b).abs() < 1e-6, "{algorithm} {a} vs A*'s {b}");
        }
    }
    let metrics = s.pathd().metrics().await.unwrap();
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
fn reported_bytes(m: &MapSummary) -> u64 {
    let mut b = 0;
    if let Some(j) = m.jps_plus.as_ref().filter(|j| j.status == "ready") {
        b += j.memory_bytes;
    }
    let landmarks = m.jps_plus.as_ref().and_then(|j| j.landmarks.as_ref());
    if let Some(l) = landmarks.filter(|l| l.status == "ready") {
        b += l.memory_bytes;
    }
    if let Some(h) = m.hpa.as_ref().filter(|h| h.status == "ready") {
        b += h.memory_bytes;
    }
    b
}

fn settled(m: &MapSummary) -> bool {
    let [jump, landmarks, _, _] = statuses(m);
    jump != Some("building") && landmarks != Some("building")
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
        s.upload_json(name, &seeded_map(512, i as u64 + 1)).await;
    }
    let mut summaries = Vec::new();
    for name in &names {
        summaries.push(until(&s, name, "settled", settled).await);
    }
    // Wait for every map's landmarks to have been made once (then some were evicted).
    for name in &names {
        until(&s, name, "given its landmarks once", |m| {
            let landmarks = m.jps_plus.as_ref().and_then(|j| j.landmarks.as_ref());
            settled(m) && landmarks.is_some_and(|l| l.count != 0)
                || landmarks.is_some_and(|l| l.status == "evicted")
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
        let [jump, landmarks, _, _] = statuses(&m);
        evicted += [jump, landmarks]
            .iter()
            .filter(|s| **s == Some("evicted"))
            .count();
    }
    assert!(reported <= budget, "the summaries report {reported} bytes");
    assert!(
        evicted >= 3,
        "five maps' structures cannot all fit: {evicted} evicted"
    );

    // Every map answers exactly, whatever is resident: auto at once (JPS without a table),
    // jps_plus once its table is back (503 abstraction_building meanwhile).
    // Retries off: the `503 abstraction_building` is asserted.
    let pathd = s.pathd_once();
    let body = |algorithm: &str| query([0, 0], [511, 511], algorithm);
    for name in &names {
        let astar = pathd.find_path(name, &body("astar")).await.unwrap();
        assert_eq!(astar.status, "found", "{astar:?}");
        let auto = pathd.find_path(name, &body("auto")).await.unwrap();
        assert_eq!(auto.cost, astar.cost, "{name}: {auto:?}");
        let mut tries = 0;
        loop {
            match pathd.find_path(name, &body("jps_plus")).await {
                Ok(v) => {
                    assert_eq!(v.cost, astar.cost, "{name}: {v:?}");
                    break;
                }
                r => {
                    api_error(r, 503, "abstraction_building");
                }
            }
            tries += 1;
            assert!(tries < 2400, "{name}: the table never came back");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        // Used again, its table is back (and its landmarks follow).
        let m = until(&s, name, "given its structures back", |m| {
            statuses(m)[0] == Some("ready") && settled(m)
        })
        .await;
        assert_eq!(statuses(&m)[0], Some("ready"), "{m:?}");
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
    s.upload_json("g", &map).await;
    let m = until(&s, "g", "given its subgoal graph", |m| {
        statuses(m)[3] == Some("ready")
    })
    .await;
    assert!(m.subgoal.as_ref().unwrap().subgoals > 0, "{m:?}");
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
        let pathd = s.pathd_once();
        for &(a, b) in pairs {
            let astar = pathd.find_path("g", &query(a, b, "astar")).await;
            let sub = pathd.find_path("g", &query(a, b, "subgoal")).await;
            match (&astar, &sub) {
                (Ok(astar), Ok(sub)) => {
                    assert_eq!(astar.status, sub.status, "{sub:?}");
                    let (x, y) = (astar.cost, sub.cost);
                    assert!((x - y).abs() < 1e-6, "{a:?}->{b:?}: A* {x}, subgoal {y}");
                    if sub.status == "found" {
                        found += 1;
                        assert_eq!(sub.algorithm, "subgoal");
                    }
                }
                // The same error (a blocked end) from both.
                (Err(x), Err(y)) => assert_eq!(
                    (x.status(), x.code()),
                    (y.status(), y.code()),
                    "{a:?}->{b:?}"
                ),
                _ => panic!("{a:?}->{b:?}: {astar:?} vs {sub:?}"),
            }
        }
        found
    }
    assert!(same_as_astar(&s, &pairs).await > 10);
    // Walls and openings: the next version's graph is derived, and still exact.
    let mut cells = Vec::new();
    for i in 0..30u32 {
        let (x, y) = (pick(), pick());
        cells.push(CellChange {
            x,
            y,
            cost: if i % 2 == 0 { 0 } else { 1 },
        });
    }
    let patch = MapPatch {
        cells,
        ..Default::default()
    };
    s.pathd().patch_map("g", &patch).await.unwrap();
    // Built again in the background for version 2 (not on the write's path).
    until(&s, "g", "given version 2's graph", |m| {
        m.version == 2 && statuses(m)[3] == Some("ready")
    })
    .await;
    assert!(same_as_astar(&s, &pairs).await > 10);
}
