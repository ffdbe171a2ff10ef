//! Agent sizes over HTTP: `size` on path queries, batches and subscriptions, checked against
//! a reference Dijkstra on the map eroded for the footprint; never through a narrower gap.

use crate::common::{TestServer, api_error};
use crate::flowfields::reference;
use pathd_client::{BatchItem, CellChange, MapPatch, PathRequest, Point, RectChange};
use serde_json::json;

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
fn footprint_clear(costs: &[u8], path: &[Point], k: usize) -> bool {
    path.iter().all(|p| {
        let (x, y) = (p[0] as usize, p[1] as usize);
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
    s.upload_json("g", &map).await;
    let pathd = s.pathd();
    for k in 1..=3usize {
        let want = reference(&costs, W, H, (27, 2), k)[2 * W + 2];
        for algorithm in ["astar", "dijkstra", "auto"] {
            let q = sized([2, 2], [27, 2], k as u32, Some(algorithm));
            let v = pathd.find_path("g", &q).await.unwrap();
            if want.is_finite() {
                assert_eq!(v.status, "found", "k={k} {v:?}");
                assert!(close(v.cost, want), "k={k}: {v:?} vs {want}");
                assert!(footprint_clear(&costs, &v.path, k), "k={k}: {v:?}");
            } else {
                assert_eq!(v.status, "no_path", "k={k} {v:?}");
            }
        }
    }
    // k=1 takes the 1-cell gap at row 2, k=2 the 2-cell one.
    let one = reference(&costs, W, H, (27, 2), 1)[2 * W + 2];
    let two = reference(&costs, W, H, (27, 2), 2)[2 * W + 2];
    assert!(one < two && two.is_finite());
    assert!(!reference(&costs, W, H, (27, 2), 3)[2 * W + 2].is_finite());

    // Batches carry a size per query.
    let v = pathd
        .find_paths(
            "g",
            &[
                sized([2, 2], [27, 2], 2, None),
                PathRequest::new([2, 2], [27, 2]),
            ],
        )
        .await
        .unwrap();
    let costs: Vec<f64> = v
        .results
        .iter()
        .map(|r| match r {
            BatchItem::Result(r) => r.cost,
            BatchItem::Error { error } => panic!("{error:?}"),
        })
        .collect();
    assert!(close(costs[0], two));
    assert!(close(costs[1], one));

    // Errors.
    for (q, code) in [
        (sized([2, 2], [27, 2], 9, None), "invalid_request"),
        (sized([2, 2], [27, 2], 0, None), "invalid_request"),
        (sized([14, 2], [27, 2], 2, None), "start_blocked"),
        (sized([2, 2], [29, 2], 2, None), "goal_blocked"),
        // HPA* serves sized queries too, but this map is below --hpa-min-cells.
        (sized([2, 2], [27, 2], 2, Some("hpa")), "not_applicable"),
        (
            sized([2, 2], [27, 2], 2, Some("jps_plus")),
            "not_applicable",
        ),
        (sized([2, 2], [27, 2], 2, Some("theta")), "not_applicable"),
        (
            PathRequest {
                smooth: true,
                ..sized([2, 2], [27, 2], 2, None)
            },
            "not_applicable",
        ),
    ] {
        // `api_error` also asserts a message.
        api_error(pathd.find_path("g", &q).await, 400, code);
    }
}

/// A query for a `size x size` agent.
fn sized(start: Point, goal: Point, size: u32, algorithm: Option<&str>) -> PathRequest {
    PathRequest {
        size: Some(size),
        algorithm: algorithm.map(str::to_owned),
        ..PathRequest::new(start, goal)
    }
}

fn cells_patch(cells: &[(u32, u32, u32)]) -> MapPatch {
    MapPatch {
        cells: cells
            .iter()
            .map(|&(x, y, cost)| CellChange { x, y, cost })
            .collect(),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_sized_subscription_is_repaired_on_the_eroded_map() {
    let s = TestServer::new().await;
    let mut costs = gaps();
    let map = json!({"width": W, "height": H, "costs": costs, "movement": "octile"});
    s.upload_json("g", &map).await;
    let pathd = s.pathd();
    let v = pathd
        .create_subscription("g", &sized([2, 2], [27, 2], 2, None))
        .await
        .unwrap();
    assert!(close(
        v.cost,
        reference(&costs, W, H, (27, 2), 2)[2 * W + 2]
    ));
    assert!(footprint_clear(&costs, &v.path, 2));
    let mut events = pathd.subscription_events(&v.id, None);
    let mut next = async || {
        tokio::time::timeout(std::time::Duration::from_secs(30), events.next())
            .await
            .expect("an event within 30 s")
            .expect("the stream is open")
            .unwrap()
    };
    assert_eq!(next().await.reason, "initial");
    // Widen the 1-cell gap to 2 rows: the agent now fits through it.
    pathd
        .patch_map("g", &cells_patch(&[(15, 3, 1)]))
        .await
        .unwrap();
    costs[3 * W + 15] = 1;
    let ev = next().await;
    assert_eq!(ev.reason, "cheaper");
    let want = reference(&costs, W, H, (27, 2), 2)[2 * W + 2];
    assert!(close(ev.cost, want), "{ev:?} vs {want}");
    assert!(footprint_clear(&costs, &ev.path, 2));
    // Narrow the 2-cell gap at rows 8-9 and the new one: no room for a 2x2 agent.
    pathd
        .patch_map("g", &cells_patch(&[(15, 9, 0), (15, 3, 0)]))
        .await
        .unwrap();
    let ev = next().await;
    assert_eq!(
        (ev.reason.as_str(), ev.status.as_str()),
        ("unreachable", "no_path")
    );
    // Bad sizes are refused at creation.
    api_error(
        pathd
            .create_subscription("g", &sized([2, 2], [27, 2], 12, None))
            .await,
        400,
        "invalid_request",
    );
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
    s.upload_json("big", &map).await;
    let (start, goal) = ((3usize, 4usize), (60usize, 6usize));
    let clear = |costs: &[u8], path: &[Point], k: usize| {
        path.iter().all(|p| {
            let (x, y) = (p[0] as usize, p[1] as usize);
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
                    let q = sized(
                        [start.0 as u32, start.1 as u32],
                        [goal.0 as u32, goal.1 as u32],
                        k as u32,
                        Some(algorithm),
                    );
                    // Retries off: the `503 abstraction_building` is checked.
                    let pathd = s.pathd_once();
                    let mut answer = pathd.find_path("big", &q).await;
                    // HPA*'s abstraction of the eroded map is built on first use.
                    for _ in 0..600 {
                        if answer.as_ref().err().and_then(|e| e.status()) != Some(503) {
                            break;
                        }
                        api_error(answer, 503, "abstraction_building");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        answer = pathd.find_path("big", &q).await;
                    }
                    let case = format!("v{version} size {k} {algorithm}");
                    let v = answer.unwrap_or_else(|e| panic!("{case}: {e}"));
                    assert_eq!(v.map_version, version, "{case}: {v:?}");
                    if !want.is_finite() {
                        assert_eq!(v.status, "no_path", "{case}: {v:?}");
                        continue;
                    }
                    assert_eq!(v.status, "found", "{case}: {v:?}");
                    assert_eq!(v.algorithm, algorithm, "{case}: {v:?}");
                    assert!(clear(&costs, &v.path, k), "{case}: {v:?}");
                    let cost = v.cost;
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
    let summary = s.pathd().get_map("big", None).await.unwrap();
    let views = &summary.sized;
    let sizes: Vec<u32> = views.iter().map(|v| v.size).collect();
    assert_eq!(sizes, [2, 3], "{summary:?}");
    assert!(
        views
            .iter()
            .all(|v| v.hpa.as_ref().is_some_and(|h| h.status == "ready") && v.memory_bytes > 0),
        "{summary:?}"
    );

    // Shut the 2-cell gap, then open a 3-cell one at rows 15-17: the views and their
    // abstractions follow each patch.
    let mut closed = costs.clone();
    for y in 30..32 {
        closed[y * w + 32] = 0;
    }
    let rect = |y: u32, height: u32, cost: u32| MapPatch {
        rects: vec![RectChange {
            x: 32,
            y,
            width: 1,
            height,
            cost,
        }],
        ..Default::default()
    };
    s.pathd().patch_map("big", &rect(30, 2, 0)).await.unwrap();
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
    s.pathd().patch_map("big", &rect(15, 3, 1)).await.unwrap();
    check(opened, 3).await;
}
