//! The questions games ask, over a real server: `goals`, `goal_radius` / `goal_visible`,
//! `flee`, `snap` and `GET /nearest`, each with its errors (every 4xx a JSON `code` and
//! `message`), on `/path` and in a batch.

use crate::common::{SMALL_MAP, TestServer, api_error, expect_error, query};
use pathd_client::{BatchItem, Client, NearestCell, NearestRequest, PathRequest, PathResult};
use serde_json::json;

// ..@..
// ..@..
// .....
async fn server() -> TestServer {
    let s = TestServer::new().await;
    s.upload("small", SMALL_MAP).await;
    // Two rooms with no connection: (0,0) and (2,0) are apart.
    s.upload("split", "type octile\nheight 1\nwidth 3\nmap\n.@.\n")
        .await;
    s
}

/// The cost of the plain optimal path, or `None` when there is none.
async fn cost(pathd: &Client, start: [u32; 2], goal: [u32; 2]) -> Option<f64> {
    let v = pathd
        .find_path("small", &query(start, goal, "dijkstra"))
        .await
        .unwrap();
    (v.status == "found").then_some(v.cost)
}

fn open_cells() -> Vec<[u32; 2]> {
    let rows = ["..@..", "..@..", "....."];
    let mut out = Vec::new();
    for (y, r) in rows.iter().enumerate() {
        for (x, c) in r.bytes().enumerate() {
            if c == b'.' {
                out.push([x as u32, y as u32]);
            }
        }
    }
    out
}

fn end(v: &PathResult) -> [u32; 2] {
    *v.path.last().unwrap()
}

#[tokio::test]
async fn goals_reach_the_cheapest_and_name_it() {
    let s = server().await;
    let pathd = s.pathd();
    let goals = [[4u32, 0u32], [3, 0], [0, 2], [4, 2]];
    let mut best = f64::INFINITY;
    for g in goals {
        best = best.min(cost(&pathd, [4, 1], g).await.unwrap());
    }
    for algorithm in ["astar", "dijkstra", "auto", "weighted_astar"] {
        let q = PathRequest {
            algorithm: Some(algorithm.to_owned()),
            ..PathRequest::to_goals([4, 1], &goals)
        };
        let v = pathd.find_path("small", &q).await.unwrap();
        assert_eq!(v.status, "found");
        let i = v.goal_index.unwrap();
        assert_eq!(v.goal, Some(goals[i]));
        assert_eq!(end(&v), goals[i]);
        assert_eq!(v.start, Some([4, 1]));
        if algorithm != "weighted_astar" {
            assert_eq!(v.cost, best, "{algorithm}: {v:?}");
        }
        assert_eq!(
            v.algorithm,
            if algorithm == "auto" {
                "astar"
            } else {
                algorithm
            }
        );
    }
    // A batch: each query its own answer or error.
    let many: Vec<[u32; 2]> = vec![[4, 0]; 1025];
    let v = pathd
        .find_paths(
            "small",
            &[
                PathRequest::to_goals([0, 0], &[[4, 0], [0, 2]]),
                PathRequest::to_goals([0, 0], &many),
                PathRequest::to_goals([0, 0], &[[2, 0]]),
            ],
        )
        .await
        .unwrap();
    let BatchItem::Result(r) = &v.results[0] else {
        panic!("{:?}", v.results[0]);
    };
    assert_eq!((r.goal_index, r.goal), (Some(1), Some([0, 2])));
    for (i, code) in [(1, "too_many_goals"), (2, "goal_blocked")] {
        let BatchItem::Error { error } = &v.results[i] else {
            panic!("{:?}", v.results[i]);
        };
        assert_eq!(error.code, code);
    }
    // Unreachable goals only: no path, no goal.
    let v = pathd
        .find_path("split", &PathRequest::to_goals([0, 0], &[[2, 0]]))
        .await
        .unwrap();
    assert_eq!(v.status, "no_path");
    assert!(v.goal.is_none() && v.goal_index.is_none(), "{v:?}");
}

#[tokio::test]
async fn goals_errors_have_stable_codes() {
    let s = server().await;
    let pathd = s.pathd();
    let goals = |g: &[[u32; 2]]| PathRequest::to_goals([0, 0], g);
    let with = |algorithm: &str| PathRequest {
        algorithm: Some(algorithm.to_owned()),
        ..goals(&[[4, 0]])
    };
    let bad = [
        (goals(&vec![[4, 0]; 1025]), "too_many_goals"),
        (goals(&[]), "invalid_request"),
        (
            PathRequest {
                start: [0, 0],
                ..Default::default()
            },
            "invalid_request",
        ),
        (
            PathRequest {
                goal: Some([4, 0]),
                ..goals(&[[4, 0]])
            },
            "invalid_request",
        ),
        (
            PathRequest {
                flee: PathRequest::flee([0, 0], [0, 0], 1.0).flee,
                ..goals(&[[4, 0]])
            },
            "invalid_request",
        ),
        (goals(&[[9, 0]]), "out_of_bounds"),
        (goals(&[[4, 0], [2, 0]]), "goal_blocked"),
        (with("jps"), "not_applicable"),
        (with("hpa"), "not_applicable"),
        (
            PathRequest {
                heuristic: Some("zero".into()),
                ..goals(&[[4, 0]])
            },
            "not_applicable",
        ),
    ];
    for (q, code) in bad {
        api_error(pathd.find_path("small", &q).await, 400, code);
    }
    // `trace` is not in the client's `PathRequest` (its answer is the visualiser's): raw.
    let traced = json!({"start": [0, 0], "goals": [[4, 0]], "trace": true});
    expect_error(s.path("small", &traced).await, 400, "invalid_request").await;
    api_error(
        pathd.find_path_posthoc("small", &goals(&[[4, 0]])).await,
        400,
        "invalid_request",
    );
}

fn radius(goal: [u32; 2], radius: f64, visible: bool) -> PathRequest {
    PathRequest {
        goal_radius: Some(radius),
        goal_visible: visible,
        ..PathRequest::new([0, 0], goal)
    }
}

#[tokio::test]
async fn goal_radius_stops_at_the_cheapest_cell_in_range_and_sight() {
    let s = server().await;
    let pathd = s.pathd();
    for (goal, r, visible) in [
        ([4u32, 0u32], 1.0, false),
        ([4, 0], 1.5, true),
        ([2, 0], 1.0, false), // a wall as the goal
        ([4, 2], 0.0, false),
        ([4, 2], 2.0, true),
        ([1, 0], 2.0, true),
    ] {
        let inside = |c: [u32; 2]| {
            let (dx, dy) = (c[0] as f64 - goal[0] as f64, c[1] as f64 - goal[1] as f64);
            (dx * dx + dy * dy).sqrt() <= r
        };
        let v = pathd
            .find_path("small", &radius(goal, r, visible))
            .await
            .unwrap();
        assert_eq!(v.status, "found", "{v:?}");
        let reached = end(&v);
        assert_eq!(v.goal, Some(reached));
        assert!(inside(reached), "{goal:?} {r}: {v:?}");
        // Optimal among the qualifying cells (for these goals and ranges, a cell in range
        // sees the goal unless the wall's rows lie between them).
        let mut best = f64::INFINITY;
        for c in open_cells().into_iter().filter(|&c| inside(c)) {
            let across = (c[0] < 2) != (goal[0] < 2) && c[1] < 2;
            if visible && across {
                continue;
            }
            best = best.min(cost(&pathd, [0, 0], c).await.unwrap());
        }
        assert_eq!(v.cost, best, "{goal:?} {r}: {v:?}");
    }
    for (q, code) in [
        (radius([2, 0], 2.0, true), "goal_blocked"),
        (radius([4, 0], -1.0, false), "invalid_request"),
        (
            PathRequest {
                goal_visible: true,
                ..PathRequest::new([0, 0], [4, 0])
            },
            "invalid_request",
        ),
        (
            PathRequest {
                goal_radius: Some(1.0),
                ..PathRequest::to_goals([0, 0], &[[4, 0]])
            },
            "invalid_request",
        ),
        (radius([9, 0], 1.0, false), "out_of_bounds"),
        (
            PathRequest {
                algorithm: Some("theta".into()),
                ..radius([4, 0], 1.0, false)
            },
            "not_applicable",
        ),
    ] {
        api_error(pathd.find_path("small", &q).await, 400, code);
    }
}

#[tokio::test]
async fn flee_gets_far_enough_at_the_least_cost() {
    let s = server().await;
    let pathd = s.pathd();
    for (start, from, distance) in [([1u32, 1u32], [0u32, 0u32], 3.0), ([3, 0], [4, 0], 4.5)] {
        let mut best = f64::INFINITY;
        for c in open_cells() {
            if cost(&pathd, from, c).await.unwrap() >= distance {
                best = best.min(cost(&pathd, start, c).await.unwrap());
            }
        }
        for algorithm in ["auto", "dijkstra", "astar"] {
            let q = PathRequest {
                algorithm: Some(algorithm.to_owned()),
                ..PathRequest::flee(start, from, distance)
            };
            let v = pathd.find_path("small", &q).await.unwrap();
            assert_eq!(v.status, "found");
            let reached = end(&v);
            assert_eq!(v.goal, Some(reached));
            assert!(
                cost(&pathd, from, reached).await.unwrap() >= distance,
                "{v:?}"
            );
            assert_eq!(v.cost, best, "{v:?}");
        }
    }
    // Nothing is that far: no path. A threat in the other room: already safe.
    let v = pathd
        .find_path("small", &PathRequest::flee([0, 0], [0, 0], 100.0))
        .await
        .unwrap();
    assert_eq!(v.status, "no_path");
    let v = pathd
        .find_path("split", &PathRequest::flee([0, 0], [2, 0], 100.0))
        .await
        .unwrap();
    assert_eq!((v.status.as_str(), v.cost), ("found", 0.0));
    for (q, code) in [
        (PathRequest::flee([0, 0], [0, 0], -1.0), "invalid_request"),
        (PathRequest::flee([0, 0], [9, 9], 1.0), "out_of_bounds"),
        (
            PathRequest {
                partial: true,
                ..PathRequest::flee([0, 0], [0, 0], 1.0)
            },
            "not_applicable",
        ),
        (
            PathRequest {
                algorithm: Some("jps".into()),
                ..PathRequest::flee([0, 0], [0, 0], 1.0)
            },
            "not_applicable",
        ),
    ] {
        api_error(pathd.find_path("small", &q).await, 400, code);
    }
    // A threat without a distance (the typed client always sends one): raw.
    let body = json!({"start": [0, 0], "flee": {"from": [0, 0]}});
    expect_error(s.path("small", &body).await, 400, "invalid_request").await;
}

fn snap(start: [u32; 2], goal: [u32; 2], snap: u32) -> PathRequest {
    PathRequest {
        snap: Some(snap),
        ..PathRequest::new(start, goal)
    }
}

#[tokio::test]
async fn snap_moves_blocked_and_unreachable_ends() {
    let s = server().await;
    let pathd = s.pathd();
    // A blocked start: (1,0) and (3,0) are both one away; the smaller x wins.
    let v = pathd
        .find_path("small", &snap([2, 0], [4, 0], 1))
        .await
        .unwrap();
    assert_eq!(
        (v.status.as_str(), v.start, v.goal, v.snapped),
        ("found", Some([1, 0]), Some([4, 0]), Some(true))
    );
    // The goal's component is preferred: (2,0) rather than (0,0).
    let v = pathd
        .find_path("split", &snap([1, 0], [2, 0], 1))
        .await
        .unwrap();
    assert_eq!((v.start, v.status.as_str()), (Some([2, 0]), "found"));
    // Unreachable: nothing of the other room within 1 (no path, nothing moved); within 2
    // the goal moves into the start's room.
    let v = pathd
        .find_path("split", &snap([0, 0], [2, 0], 1))
        .await
        .unwrap();
    assert_eq!((v.status.as_str(), v.snapped), ("no_path", Some(false)));
    let v = pathd
        .find_path("split", &snap([0, 0], [2, 0], 2))
        .await
        .unwrap();
    assert_eq!(
        (v.status.as_str(), v.goal, v.snapped),
        ("found", Some([0, 0]), Some(true))
    );
    // No candidate in range: the usual error; too far a radius: 400.
    api_error(
        pathd.find_path("small", &snap([2, 0], [4, 0], 0)).await,
        400,
        "start_blocked",
    );
    api_error(
        pathd.find_path("small", &snap([2, 0], [4, 0], 65)).await,
        400,
        "invalid_request",
    );
    // With goals: the start snaps.
    let q = PathRequest {
        snap: Some(1),
        ..PathRequest::to_goals([2, 1], &[[0, 0], [4, 2]])
    };
    let v = pathd.find_path("small", &q).await.unwrap();
    assert_eq!((v.start, v.snapped), (Some([1, 1]), Some(true)), "{v:?}");
    assert_eq!(v.goal_index, Some(0));
}

fn near(at: [u32; 2], radius: Option<u32>, size: Option<u32>) -> NearestRequest {
    NearestRequest {
        at,
        radius,
        size,
        profile: None,
    }
}

#[tokio::test]
async fn nearest_answers_the_nearest_usable_cell() {
    let s = server().await;
    let pathd = s.pathd();
    let v = pathd
        .nearest("small", &near([2, 0], Some(1), None))
        .await
        .unwrap();
    assert_eq!(
        v,
        NearestCell {
            x: 1,
            y: 0,
            distance: 1.0,
            map_version: 1
        }
    );
    let v = pathd
        .nearest("small", &near([0, 0], None, None))
        .await
        .unwrap();
    assert_eq!((v.x, v.y, v.distance), (0, 0, 0.0));
    // A 2x2 agent fits at (0,0), (0,1), (3,0) and (3,1) only: (3,1) is nearest to (2,1).
    let v = pathd
        .nearest("small", &near([2, 1], None, Some(2)))
        .await
        .unwrap();
    assert_eq!((v.x, v.y), (3, 1), "{v:?}");
    api_error(
        pathd.nearest("small", &near([2, 0], Some(0), None)).await,
        404,
        "no_usable_cell",
    );
    api_error(
        pathd.nearest("small", &near([9, 0], None, None)).await,
        400,
        "out_of_bounds",
    );
    api_error(
        pathd.nearest("small", &near([0, 0], Some(65), None)).await,
        400,
        "invalid_request",
    );
    api_error(
        pathd.nearest("small", &near([0, 0], None, Some(9))).await,
        400,
        "invalid_request",
    );
    api_error(
        pathd.nearest("nope", &near([0, 0], None, None)).await,
        404,
        "map_not_found",
    );
    // Query strings the typed client cannot write (a missing y, an unknown parameter): raw.
    for q in ["x=0", "x=0&y=0&bogus=1"] {
        let url = s.at(&format!("/v1/maps/small/nearest?{q}"));
        let resp = s.client.get(url).send().await.unwrap();
        expect_error(resp, 400, "invalid_request").await;
    }
}

#[tokio::test]
async fn games_options_combine_with_the_others_or_say_why_not() {
    let s = server().await;
    let pathd = s.pathd();
    // smooth, debug and partial apply as usual.
    let q = PathRequest {
        smooth: true,
        debug: true,
        ..PathRequest::to_goals([0, 0], &[[4, 0]])
    };
    let v = pathd.find_path("small", &q).await.unwrap();
    assert_eq!(v.status, "found", "{v:?}");
    assert!(v.waypoints.is_some() && v.expanded_cells.is_some(), "{v:?}");
    let q = PathRequest {
        max_expansions: Some(2),
        partial: true,
        ..PathRequest::to_goals([0, 0], &[[4, 0]])
    };
    let v = pathd.find_path("small", &q).await.unwrap();
    assert_eq!(v.status, "partial", "{v:?}");
    assert!(v.goal_index.is_none(), "{v:?}");
    // A 2x2 agent fits at (0,0), (0,1), (3,0) and (3,1) only: (3,1) is out of its reach.
    let q = PathRequest {
        size: Some(2),
        ..PathRequest::to_goals([0, 0], &[[3, 1]])
    };
    let v = pathd.find_path("small", &q).await.unwrap();
    assert_eq!(v.status, "no_path", "{v:?}");
    // Subscriptions keep one goal.
    api_error(
        pathd
            .create_subscription("small", &PathRequest::to_goals([0, 0], &[[4, 0]]))
            .await,
        400,
        "invalid_request",
    );
    api_error(
        pathd
            .create_subscription("small", &snap([0, 0], [4, 0], 1))
            .await,
        400,
        "invalid_request",
    );
}
