//! HPA* over HTTP: the abstraction is built in the background for big maps, serves
//! `"algorithm": "hpa"` and long `auto` queries on weighted maps, is derived on patches, and
//! shows in the map summary and `/metrics`.

use crate::common::{Dirs, TestServer, api_error, cells, query, wait_until};
use pathd_client::{CellChange, MapPatch, PathResult, RectChange};
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

fn check_legal(s: &TestServer, name: &str, r: &PathResult) -> f64 {
    let entry = s.state.registry().get(name).unwrap();
    let cost = entry
        .grid
        .path_cost(&cells(&r.path))
        .expect("every step legal");
    assert!((cost - r.cost).abs() < 1e-6, "{r:?}");
    cost
}

#[tokio::test]
async fn hpa_serves_big_maps_and_follows_patches() {
    let s = server().await;
    let pathd = s.pathd();
    s.upload_json("hills", &weighted_map()).await;
    wait_hpa(&s, "hills").await;

    let summary = pathd.get_map("hills", None).await.unwrap();
    let hpa = summary.hpa.as_ref().expect("an abstraction");
    assert_eq!(hpa.status, "ready", "{summary:?}");
    assert_eq!(hpa.cluster_size, 8);
    assert!(hpa.nodes > 0 && hpa.memory_bytes > 0);

    let (start, goal) = ([2, 3], [120, 125]);
    let exact = pathd
        .find_path("hills", &query(start, goal, "astar"))
        .await
        .unwrap();
    let h = pathd
        .find_path("hills", &query(start, goal, "hpa"))
        .await
        .unwrap();
    assert_eq!(
        (h.status.as_str(), h.algorithm.as_str()),
        ("found", "hpa"),
        "{h:?}"
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
    let a = pathd
        .find_path("hills", &query(start, goal, "auto"))
        .await
        .unwrap();
    assert_eq!(a.algorithm, "hpa");
    let a = pathd
        .find_path("hills", &query([2, 3], [6, 6], "auto"))
        .await
        .unwrap();
    assert_eq!(a.algorithm, "astar");

    // Close the wall's gap: the patched version has its abstraction at once (derived from
    // the previous one), and it knows the goal is now unreachable.
    let patch = MapPatch {
        cells: vec![CellChange {
            x: 90,
            y: 100,
            cost: 0,
        }],
        ..Default::default()
    };
    let p = pathd.patch_map("hills", &patch).await.unwrap();
    assert_eq!(p.version, 2, "{p:?}");
    let entry = s.state.registry().get("hills").unwrap();
    assert!(entry.hpa.get().is_some(), "a patch derives the abstraction");
    let h = pathd
        .find_path("hills", &query(start, goal, "hpa"))
        .await
        .unwrap();
    assert_eq!((h.status.as_str(), h.map_version), ("no_path", 2), "{h:?}");
    // Open it elsewhere: HPA* finds the new way round.
    let patch = MapPatch {
        rects: vec![RectChange {
            x: 90,
            y: 10,
            width: 1,
            height: 3,
            cost: 1,
        }],
        ..Default::default()
    };
    pathd.patch_map("hills", &patch).await.unwrap();
    let h = pathd
        .find_path("hills", &query(start, goal, "hpa"))
        .await
        .unwrap();
    assert_eq!(h.status, "found", "{h:?}");
    check_legal(&s, "hills", &h);

    let metrics = pathd.metrics().await.unwrap();
    assert!(metrics.contains("pathd_hpa_memory_bytes"), "{metrics}");
}

#[tokio::test]
async fn small_maps_have_no_abstraction() {
    let s = server().await;
    let pathd = s.pathd();
    let summary = s.upload("small", crate::common::SMALL_MAP).await;
    assert!(summary.hpa.is_none(), "{summary:?}");
    let summary = pathd.get_map("small", None).await.unwrap();
    assert!(summary.hpa.is_none(), "{summary:?}");
    api_error(
        pathd
            .find_path("small", &query([0, 0], [4, 0], "hpa"))
            .await,
        400,
        "not_applicable",
    );
    // On a uniform map `auto` is JPS (JPS+ once the jump table is built, or the subgoal
    // graph once built where it pays off).
    let a = pathd
        .find_path("small", &query([0, 0], [4, 0], "auto"))
        .await
        .unwrap();
    assert!(
        a.algorithm == "jps" || a.algorithm == "jps_plus" || a.algorithm == "subgoal",
        "{a:?}"
    );
}

/// `hpa` on a map too small for an abstraction says it never will have one, and why.
#[tokio::test]
async fn hpa_on_a_small_map_says_why_there_is_no_abstraction() {
    let s = TestServer::new().await;
    s.upload("small", crate::common::SMALL_MAP).await;
    let q = query([0, 0], [4, 0], "hpa");
    let msg = api_error(
        s.pathd().find_path("small", &q).await,
        400,
        "not_applicable",
    );
    assert!(msg.contains("below --hpa-min-cells"), "{msg}");
    assert!(!msg.contains("yet"), "{msg}");
}
