//! JPS+ over HTTP: the jump table is built in the background for uniform octile maps,
//! serves `"algorithm": "jps_plus"` and `auto`, is derived on patches (answers equal A*'s
//! and carry the new version), and shows in the map summary and `/metrics`; so do its
//! landmarks (measured after the table, carried over walls, updated after openings).

use crate::common::{Dirs, TestServer, api_error, query, wait_until};
use pathd_client::{CellChange, MapPatch, PatchResult, RectChange};
use pathd_engine::{Grid, Movement, Point, Query};
use serde_json::json;

/// A 60x40 uniform map with scattered walls (a fixed pattern, no randomness needed).
fn walls() -> (Vec<u8>, u32, u32) {
    let (w, h) = (60u32, 40u32);
    let costs = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            u8::from(!((x * 7 + y * 13) % 11 == 0 || (x == 30 && y != 20)))
        })
        .collect();
    (costs, w, h)
}

async fn patch(s: &TestServer, name: &str, p: &MapPatch) -> PatchResult {
    s.pathd().patch_map(name, p).await.unwrap()
}

fn cell(x: u32, y: u32, cost: u32) -> CellChange {
    CellChange { x, y, cost }
}

fn rect(x: u32, y: u32, width: u32, height: u32, cost: u32) -> RectChange {
    RectChange {
        x,
        y,
        width,
        height,
        cost,
    }
}

/// The map summary's `jps_plus`.
async fn jump_info(s: &TestServer, name: &str) -> Option<pathd_client::JumpInfo> {
    s.pathd().get_map(name, None).await.unwrap().jps_plus
}

/// Queries every pair of a few points with jps_plus and A* and checks the costs agree (and
/// against the engine's A* on `grid`, the same version).
async fn agree_with_astar(s: &TestServer, name: &str, grid: &Grid, version: u64) {
    let points = [[0, 0], [59, 39], [29, 20], [45, 3], [5, 35], [31, 21]];
    for a in points {
        for b in points {
            let (pa, pb) = (Point::new(a[0], a[1]), Point::new(b[0], b[1]));
            if !grid.is_passable(pa) || !grid.is_passable(pb) {
                continue;
            }
            let v = s
                .pathd()
                .find_path(name, &query(a, b, "jps_plus"))
                .await
                .unwrap();
            let want = pathd_engine::find_path(grid, &Query::new(pa, pb)).unwrap();
            assert_eq!(v.status, want.status.as_str(), "{a:?} -> {b:?}: {v:?}");
            assert_eq!(v.map_version, version, "{v:?}");
            assert_eq!(v.algorithm, "jps_plus", "{v:?}");
            assert!((v.cost - want.cost).abs() < 1e-9, "{a:?} -> {b:?}: {v:?}");
        }
    }
}

#[tokio::test]
async fn jps_plus_is_built_kept_current_under_patches_and_reported() {
    // No subgoal graphs: where one pays off, `auto` takes it once it is built, which would
    // race the check below that `auto` takes JPS+ (flaky before).
    let dirs = crate::common::Dirs::new();
    let mut config = dirs.config();
    config.subgoal_max_cells = 0;
    let s = TestServer::start(dirs, config).await;
    let (costs, w, h) = walls();
    let body = json!({"width": w, "height": h, "costs": costs});
    s.upload_json("m", &body).await;
    let ready = |s: &TestServer| {
        s.state
            .registry()
            .get("m")
            .is_some_and(|e| e.jump.get().is_some())
    };
    wait_until("the jump table", || ready(&s)).await;
    let info = jump_info(&s, "m").await.expect("a jump table");
    assert_eq!(
        (info.status.as_str(), info.made_by.as_str()),
        ("ready", "build"),
        "{info:?}"
    );
    assert!(info.memory_bytes >= 62 * 42 * 16, "{info:?}");

    let mut grid = Grid::from_costs(w, h, costs, Movement::Octile).unwrap();
    agree_with_astar(&s, "m", &grid, 1).await;
    // auto takes JPS+ once the table is ready.
    let a = s
        .pathd()
        .find_path("m", &query([1, 0], [59, 39], "auto"))
        .await
        .unwrap();
    assert_eq!(a.algorithm, "jps_plus", "{a:?}");

    // Close the wall's gap, then open another: each version's table is derived at once.
    let patches = [
        MapPatch {
            cells: vec![cell(30, 20, 0)],
            ..Default::default()
        },
        MapPatch {
            rects: vec![rect(29, 5, 3, 2, 1)],
            cells: vec![cell(45, 3, 1), cell(44, 4, 0)],
            ..Default::default()
        },
    ];
    for (i, body) in patches.iter().enumerate() {
        let version = 2 + i as u64;
        let p = patch(&s, "m", body).await;
        assert_eq!(p.version, version, "{p:?}");
        let entry = s.state.registry().get("m").unwrap();
        assert!(entry.jump.get().is_some(), "a patch derives the table");
        grid = (*entry.grid).clone();
        let info = jump_info(&s, "m").await.expect("a jump table");
        assert_eq!(info.made_by, "update", "{info:?}");
        agree_with_astar(&s, "m", &grid, version).await;
    }
    // The wall is closed at (30, 20): from the left half to the right only through the new
    // opening at rows 5-6.
    let v = s
        .pathd()
        .find_path("m", &query([0, 20], [59, 20], "jps_plus"))
        .await
        .unwrap();
    assert_eq!(v.status, "found", "{v:?}");
    let path: Vec<u32> = v.path.iter().filter(|p| p[0] == 30).map(|p| p[1]).collect();
    assert!(path.iter().all(|y| (5..=6).contains(y)), "{path:?}");

    has_metrics(
        &s,
        &[
            "pathd_jps_plus_build_seconds",
            "pathd_jps_plus_update_seconds",
            "pathd_jps_plus_memory_bytes{map=\"m\"}",
        ],
    )
    .await;
}

/// Asserts `/metrics` shows every one of `names`.
async fn has_metrics(s: &TestServer, names: &[&str]) {
    let metrics = s.pathd().metrics().await.unwrap();
    for name in names {
        assert!(metrics.contains(name), "{name} missing");
    }
}

#[tokio::test]
async fn jps_plus_where_it_does_not_apply() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.jps_plus_max_cells = 100;
    let s = TestServer::start(dirs, config).await;
    let pathd = s.pathd();
    let q = query([0, 0], [2, 0], "jps_plus");
    // Weighted and cardinal maps: the planner's reason.
    let weighted = json!({"width": 3, "height": 1, "costs": [1, 5, 1]});
    s.upload_json("w", &weighted).await;
    api_error(pathd.find_path("w", &q).await, 400, "not_applicable");
    let cardinal = json!({"width": 3, "height": 1, "costs": [1, 1, 1], "movement": "cardinal"});
    s.upload_json("c", &cardinal).await;
    api_error(pathd.find_path("c", &q).await, 400, "not_applicable");
    // A uniform map above --jps-plus-max-cells never gets a table, and says why.
    let big = json!({"width": 20, "height": 10, "costs": vec![1; 200]});
    s.upload_json("big", &big).await;
    let message = api_error(pathd.find_path("big", &q).await, 400, "not_applicable");
    assert!(message.contains("jps-plus-max-cells"), "{message}");
    let summary = pathd.get_map("big", None).await.unwrap();
    assert!(summary.jps_plus.is_none(), "{summary:?}");
    // auto there is plain JPS.
    let a = pathd
        .find_path("big", &query([0, 0], [2, 0], "auto"))
        .await
        .unwrap();
    assert_eq!(a.algorithm, "jps", "{a:?}");
}

/// The expansions of JPS+ from `a` to `b` on the engine, with `landmarks` or without.
fn engine_expansions(
    grid: &Grid,
    landmarks: Option<&pathd_engine::Landmarks>,
    a: [u32; 2],
    b: [u32; 2],
) -> u64 {
    let table = pathd_engine::JumpTable::build(grid).unwrap();
    let derived = pathd_engine::Derived {
        jump_table: Some(&table),
        landmarks,
        ..Default::default()
    };
    let q = Query::new(Point::new(a[0], a[1]), Point::new(b[0], b[1]))
        .with_algorithm(pathd_engine::Algorithm::JpsPlus);
    pathd_engine::find_path_derived(grid, derived, &q)
        .unwrap()
        .stats
        .expanded
}

/// The map summary's `jps_plus.landmarks`.
async fn landmark_info(s: &TestServer, name: &str) -> pathd_client::LandmarkInfo {
    let info = jump_info(s, name).await.expect("a jump table");
    info.landmarks.expect("landmarks")
}

#[tokio::test]
async fn landmarks_are_measured_carried_over_walls_and_updated_after_openings() {
    let s = TestServer::new().await;
    let (costs, w, h) = walls();
    let body = json!({"width": w, "height": h, "costs": costs});
    s.upload_json("m", &body).await;
    let entry = || s.state.registry().get("m").unwrap();
    wait_until("the landmarks", || entry().jump.landmarks().is_some()).await;
    let info = landmark_info(&s, "m").await;
    // 62 x 42 padded cells, 2 bytes each a landmark: the default 24 MiB affords the most, 16.
    assert_eq!(
        (info.status.as_str(), info.made_by.as_str(), info.count),
        ("ready", "build", 16),
        "{info:?}"
    );
    assert!(info.memory_bytes >= 16 * 62 * 42 * 2, "{info:?}");

    // The server's JPS+ runs with them: its expansions are the engine's with the same
    // landmarks, and fewer than without them on this long query round the wall.
    let grid = Grid::from_costs(w, h, costs, Movement::Octile).unwrap();
    let (a, b) = ([1, 0], [59, 38]);
    let v = s
        .pathd()
        .find_path("m", &query(a, b, "jps_plus"))
        .await
        .unwrap();
    let with = engine_expansions(&grid, entry().jump.landmarks().as_deref(), a, b);
    let without = engine_expansions(&grid, None, a, b);
    assert_eq!(v.expanded, with, "{v:?}");
    assert!(
        with < without,
        "{with} expansions with landmarks, {without} without"
    );
    agree_with_astar(&s, "m", &grid, 1).await;

    // Walls only: the next version keeps them (the same allocation).
    let walled = MapPatch {
        cells: vec![cell(30, 20, 0)],
        ..Default::default()
    };
    let p = patch(&s, "m", &walled).await;
    assert_eq!(p.version, 2, "{p:?}");
    let info = landmark_info(&s, "m").await;
    assert_eq!(
        (info.status.as_str(), info.made_by.as_str()),
        ("ready", "carried"),
        "{info:?}"
    );
    let grid = (*entry().grid).clone();
    agree_with_astar(&s, "m", &grid, 2).await;
    let before = entry().jump.landmarks().unwrap().clone();

    // An opening: version 3's are updated from version 2's (JPS+ answers meanwhile,
    // without them). Version 2's were carried over the closed gap, so some are shorter than
    // its distances; the update keeps those (still lower bounds) and lowers the ones the
    // new opening shortens: never above a fresh measurement from the same cells, and below
    // version 2's somewhere.
    let opening = MapPatch {
        rects: vec![rect(29, 5, 3, 2, 1)],
        ..Default::default()
    };
    let p = patch(&s, "m", &opening).await;
    assert_eq!(p.version, 3, "{p:?}");
    let grid = (*entry().grid).clone();
    agree_with_astar(&s, "m", &grid, 3).await;
    wait_until("new landmarks", || entry().jump.landmarks().is_some()).await;
    let info = landmark_info(&s, "m").await;
    assert_eq!(
        (info.status.as_str(), info.made_by.as_str()),
        ("ready", "update"),
        "{info:?}"
    );
    let updated = entry().jump.landmarks().unwrap().clone();
    let fresh = pathd_engine::Landmarks::at(&grid, updated.points()).unwrap();
    let mut lowered = 0;
    for (x, y) in (0..w).flat_map(|x| (0..h).map(move |y| (x, y))) {
        let p = Point::new(x, y);
        for i in 0..updated.points().len() {
            let (a, b, old) = (
                updated.distance(i, p),
                fresh.distance(i, p),
                before.distance(i, p),
            );
            assert!(
                a <= b * (1.0 + 1e-5) && a <= old,
                "{p} landmark {i}: {a}, fresh {b}"
            );
            lowered += usize::from(a < old);
        }
    }
    assert!(lowered > 0, "the opening lowered no distance");
    agree_with_astar(&s, "m", &grid, 3).await;

    has_metrics(
        &s,
        &[
            "pathd_landmarks_build_seconds",
            "pathd_landmarks_update_seconds",
            "pathd_landmarks_memory_bytes{map=\"m\"}",
        ],
    )
    .await;
}

#[tokio::test]
async fn no_landmarks_when_switched_off() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.landmark_memory_mb = 0;
    let s = TestServer::start(dirs, config).await;
    let (costs, w, h) = walls();
    let body = json!({"width": w, "height": h, "costs": costs});
    s.upload_json("m", &body).await;
    let entry = || s.state.registry().get("m").unwrap();
    wait_until("the jump table", || entry().jump.get().is_some()).await;
    let grid = Grid::from_costs(w, h, costs, Movement::Octile).unwrap();
    agree_with_astar(&s, "m", &grid, 1).await;
    assert!(entry().jump.landmarks().is_none());
    let info = jump_info(&s, "m").await.expect("a jump table");
    assert!(info.landmarks.is_none(), "{info:?}");
}

/// A map's jump table does not wait behind another map's landmarks: those take seconds on
/// a big map (16 Dijkstra searches over a million cells), a small map's table microseconds.
#[tokio::test]
async fn a_table_does_not_wait_behind_another_maps_landmarks() {
    let s = TestServer::new().await;
    let side = 1024u32;
    let costs: Vec<u8> = (0..side * side)
        .map(|i| u8::from(i % side != side / 2 || (i / side).is_multiple_of(64)))
        .collect();
    let big = json!({"width": side, "height": side, "costs": costs});
    s.upload_json("big", &big).await;
    let (costs, w, h) = walls();
    let small = json!({"width": w, "height": h, "costs": costs});
    s.upload_json("small", &small).await;
    let entry = |name: &str| s.state.registry().get(name).unwrap();
    wait_until("the small map's table", || {
        entry("small").jump.get().is_some()
    })
    .await;
    assert!(
        entry("big").jump.landmarks().is_none(),
        "the small map's table waited for the big map's landmarks"
    );
    // Both get their landmarks in the end.
    wait_until("the landmarks", || {
        entry("big").jump.landmarks().is_some() && entry("small").jump.landmarks().is_some()
    })
    .await;
}
