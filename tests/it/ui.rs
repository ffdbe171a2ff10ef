//! The visualiser's server side: the embedded page and assets, the cells endpoint, and
//! search traces (`"trace": true`).

use std::collections::HashMap;

use crate::common::{Dirs, SMALL_MAP, TestServer, expect_error, json};
use serde_json::{Value, json};

/// Decodes standard padded base64.
fn unbase64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("bad base64 {c}"),
    };
    let mut out = Vec::new();
    for chunk in s.as_bytes().chunks(4) {
        let n = chunk
            .iter()
            .filter(|&&c| c != b'=')
            .enumerate()
            .fold(0u32, |n, (i, &c)| n | u32::from(val(c)) << (18 - 6 * i));
        let bytes = chunk.iter().filter(|&&c| c != b'=').count() - 1;
        out.extend_from_slice(&n.to_be_bytes()[1..1 + bytes]);
    }
    out
}

#[tokio::test]
async fn page_and_assets_are_served_with_their_types() {
    let s = TestServer::new().await;
    for (path, ct) in [
        ("/", "text/html"),
        ("/ui/", "text/html"),
        ("/ui/app.js", "text/javascript"),
        ("/ui/app.css", "text/css"),
        ("/ui/favicon.svg", "image/svg+xml"),
        ("/ui/pathd.js", "text/javascript"),
        ("/ui/pathd-wasm.js", "text/javascript"),
        ("/ui/lessons.js", "text/javascript"),
        ("/ui/games.js", "text/javascript"),
        ("/ui/mapf.js", "text/javascript"),
        ("/app.js", "text/javascript"),
        ("/pathd-wasm.js", "text/javascript"),
    ] {
        let r = s.client.get(s.at(path)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let h = r.headers().clone();
        let got = h["content-type"].to_str().unwrap();
        assert!(got.starts_with(ct), "{path}: {got}");
        assert_eq!(h["cache-control"], "no-cache", "{path}");
        assert_eq!(h["x-content-type-options"], "nosniff");
        let tag = h["etag"].to_str().unwrap().to_owned();
        let body = r.text().await.unwrap();
        assert!(!body.is_empty());
        if ct == "text/html" {
            assert!(body.contains("<canvas"), "the page draws on a canvas");
            assert!(body.contains("\"app.js\""));
            assert!(
                !body.contains("http://") && !body.contains("https://"),
                "no CDN"
            );
        }
        // Revalidation answers 304 without a body.
        let r = s
            .client
            .get(s.at(path))
            .header("if-none-match", &tag)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 304, "{path}");
    }
    // Unknown assets get the JSON error shape.
    expect_error(
        s.client.get(s.at("/ui/nope.js")).send().await.unwrap(),
        404,
        "not_found",
    )
    .await;
}

#[tokio::test]
async fn cells_round_trip_costs_and_version() {
    let s = TestServer::new().await;
    let costs: Vec<u32> = (0..12).map(|i| [0, 1, 7, 255][i % 4]).collect();
    let r = s
        .put_json("w", &json!({"width": 4, "height": 3, "costs": costs}))
        .await;
    assert_eq!(r.status(), 201);
    let (status, body) = json(s.client.get(s.at("/v1/maps/w/cells")).send().await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(body["width"], 4);
    assert_eq!(body["height"], 3);
    assert_eq!(body["version"], 1);
    assert_eq!(body["movement"], "octile");
    let got: Vec<u32> = unbase64(body["costs"].as_str().unwrap())
        .into_iter()
        .map(u32::from)
        .collect();
    assert_eq!(got, costs);

    // A patch bumps the version; the raw form carries it in a header.
    let r = s
        .client
        .patch(s.at("/v1/maps/w"))
        .json(&json!({"cells": [{"x": 1, "y": 2, "cost": 9}], "if_version": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = s
        .client
        .get(s.at("/v1/maps/w/cells"))
        .header("accept", "application/octet-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let h = r.headers().clone();
    assert_eq!(h["content-type"], "application/octet-stream");
    assert_eq!(h["x-map-version"], "2");
    assert_eq!(h["x-map-width"], "4");
    assert_eq!(h["x-map-height"], "3");
    assert_eq!(h["x-map-movement"], "octile");
    let raw = r.bytes().await.unwrap();
    let mut want: Vec<u8> = costs.iter().map(|&c| c as u8).collect();
    want[2 * 4 + 1] = 9;
    assert_eq!(&raw[..], &want[..]);

    expect_error(
        s.client
            .get(s.at("/v1/maps/nope/cells"))
            .send()
            .await
            .unwrap(),
        404,
        "map_not_found",
    )
    .await;
}

/// Follows the parents of the last expansion of each node from `end` back to the start.
fn replay_chain(answer: &Value, end: [u64; 2]) -> Vec<[u64; 2]> {
    let pt = |v: &Value| [v[0].as_u64().unwrap(), v[1].as_u64().unwrap()];
    let mut parent = HashMap::new();
    for e in answer["trace"]["events"].as_array().unwrap() {
        if e["type"] == "expand" {
            parent.insert(pt(&e["node"]), pt(&e["parent"]));
        }
    }
    let mut chain = vec![end];
    let mut cur = end;
    while *parent
        .get(&cur)
        .unwrap_or_else(|| panic!("{cur:?} was not expanded (chain {chain:?})"))
        != cur
    {
        cur = parent[&cur];
        chain.push(cur);
        assert!(chain.len() <= parent.len(), "parent cycle");
    }
    chain.reverse();
    chain
}

fn points(v: &Value) -> Vec<[u64; 2]> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| [p[0].as_u64().unwrap(), p[1].as_u64().unwrap()])
        .collect()
}

/// Checks a trace against its answer: expansions equal `expanded` (unless truncated),
/// `f = g + weight * h` everywhere, and each expansion's parent was expanded earlier (the
/// start is its own parent).
fn check_trace(answer: &Value, weight: f64) -> Vec<[u64; 2]> {
    let t = &answer["trace"];
    assert_eq!(t["weight"].as_f64().unwrap(), weight);
    let events = t["events"].as_array().unwrap();
    let pt = |v: &Value| [v[0].as_u64().unwrap(), v[1].as_u64().unwrap()];
    let start = pt(&events[0]["node"]);
    assert_eq!(events[0]["type"], "push");
    let mut expanded: Vec<[u64; 2]> = Vec::new();
    let mut g_of: HashMap<[u64; 2], f64> = HashMap::new();
    for e in events {
        let (g, h, f) = (
            e["g"].as_f64().unwrap(),
            e["h"].as_f64().unwrap(),
            e["f"].as_f64().unwrap(),
        );
        assert!((f - (g + weight * h)).abs() < 1e-9, "f = g + w h: {e}");
        if e["type"] == "expand" {
            let (node, parent) = (pt(&e["node"]), pt(&e["parent"]));
            if node == start {
                assert_eq!(parent, start);
            } else {
                assert!(expanded.contains(&parent), "parent expanded before: {e}");
            }
            g_of.insert(node, g);
            expanded.push(node);
        }
    }
    let n = t["expansions"].as_u64().unwrap();
    assert_eq!(n, expanded.len() as u64);
    if !t["truncated"].as_bool().unwrap() {
        assert_eq!(n, answer["expanded"].as_u64().unwrap());
    } else {
        assert_eq!(n, t["cap"].as_u64().unwrap());
        assert!(n < answer["expanded"].as_u64().unwrap());
    }
    if answer["status"] == "found" && !t["truncated"].as_bool().unwrap() {
        // The goal is the last expansion, with the answer's cost.
        let goal = pt(answer["path"].as_array().unwrap().last().unwrap());
        assert_eq!(*expanded.last().unwrap(), goal);
        // Theta*'s g is the any-angle length (its `cost`); the others' the cell path's.
        let cost = if answer["algorithm"] == "theta" {
            answer["cost"].as_f64().unwrap()
        } else {
            answer["path_cost"].as_f64().unwrap()
        };
        assert!((g_of[&goal] - cost).abs() < 1e-6);
    }
    expanded
}

#[tokio::test]
async fn traces_replay_the_search() {
    let dirs = Dirs::new();
    dirs.bundle("arena2");
    let mut config = dirs.config();
    config.max_debug_cells = 3000;
    let s = TestServer::start(dirs, config).await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);

    // A* on the small map: the expanded cells are `debug`'s, in the same order.
    let q = json!({"start": [0, 0], "goal": [4, 0], "trace": true, "debug": true});
    let (status, a) = json(s.path("small", &q).await).await;
    assert_eq!(status, 200);
    let expanded = check_trace(&a, 1.0);
    let debug: Vec<[u64; 2]> = a["expanded_cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| [p[0].as_u64().unwrap(), p[1].as_u64().unwrap()])
        .collect();
    // `debug` omits the goal's expansion; the trace records it.
    assert_eq!(&expanded[..expanded.len() - 1], &debug[..]);

    // Without `trace`, no trace.
    let (_, plain) = json(
        s.path("small", &json!({"start": [0, 0], "goal": [4, 0]}))
            .await,
    )
    .await;
    assert!(plain.get("trace").is_none());
    assert_eq!(plain["cost"], a["cost"]);

    // Replaying A*'s trace gives the answer's path (parents of the final expansions) and
    // closed set (the debug cells plus the goal).
    let path = points(&a["path"]);
    assert_eq!(replay_chain(&a, *path.last().unwrap()), path);

    // Weighted A* and Dijkstra on arena2.
    let base = json!({"start": [30, 100], "goal": [150, 150], "trace": true});
    let mut w = base.clone();
    w["algorithm"] = json!("weighted_astar");
    w["weight"] = json!(2.5);
    let (status, wa) = json(s.path("arena2", &w).await).await;
    assert_eq!(status, 200, "{wa}");
    check_trace(&wa, 2.5);
    let mut d = base.clone();
    d["algorithm"] = json!("dijkstra");
    let (_, dj) = json(s.path("arena2", &d).await).await;
    check_trace(&dj, 0.0);
    assert_eq!(
        dj["trace"]["truncated"].as_bool().unwrap(),
        dj["expanded"].as_u64().unwrap() > 3000
    );

    // JPS and Theta*: traced, parents are jump points / line-of-sight parents.
    for algo in ["jps", "theta", "astar"] {
        let mut q = base.clone();
        q["algorithm"] = json!(algo);
        let (status, r) = json(s.path("arena2", &q).await).await;
        assert_eq!(status, 200, "{r}");
        assert_eq!(r["status"], "found");
        check_trace(&r, 1.0);
        // The parent chain is the cell path (A*), the jump points (JPS) or the any-angle
        // corners (Theta*).
        let path = points(&r["path"]);
        let chain = replay_chain(&r, *path.last().unwrap());
        match algo {
            "astar" => assert_eq!(chain, path),
            "theta" => assert_eq!(chain, points(&r["waypoints"]), "{algo}"),
            // JPS's waypoints also name the corner of each diagonal-then-straight jump, which
            // is not a node of its own: the jump points are the waypoints minus those corners.
            _ => {
                let waypoints = points(&r["waypoints"]);
                let mut rest = waypoints.iter();
                assert!(
                    chain.iter().all(|p| rest.any(|w| w == p)),
                    "{algo}: jump points {chain:?} not in order in {waypoints:?}"
                );
                assert_eq!(
                    (chain.first(), chain.last()),
                    (waypoints.first(), waypoints.last())
                );
            }
        }
        // Tracing does not change the search.
        q["trace"] = json!(false);
        let (_, plain) = json(s.path("arena2", &q).await).await;
        for k in ["path", "cost", "expanded", "generated", "waypoints"] {
            assert_eq!(plain[k], r[k], "{algo} {k}");
        }
    }

    // Batches trace each item; subscriptions refuse it.
    let (status, b) = json(
        s.client
            .post(s.at("/v1/maps/small/paths"))
            .json(&json!({"queries": [q]}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(b["results"][0]["trace"], a["trace"]);
    expect_error(
        s.client
            .post(s.at("/v1/maps/small/subscriptions"))
            .json(&q)
            .send()
            .await
            .unwrap(),
        400,
        "invalid_request",
    )
    .await;
}

#[tokio::test]
async fn traces_are_capped_by_max_debug_cells() {
    let dirs = Dirs::new();
    dirs.bundle("arena2");
    let mut config = dirs.config();
    config.max_debug_cells = 50;
    let s = TestServer::start(dirs, config).await;
    for algo in ["astar", "dijkstra", "weighted_astar", "jps", "theta"] {
        let q = json!({"start": [30, 100], "goal": [150, 150], "trace": true, "algorithm": algo});
        let (status, r) = json(s.path("arena2", &q).await).await;
        assert_eq!(status, 200, "{r}");
        let t = &r["trace"];
        assert_eq!(t["cap"], 50);
        let exp = r["expanded"].as_u64().unwrap();
        assert_eq!(t["truncated"].as_bool().unwrap(), exp > 50, "{algo}");
        assert_eq!(t["expansions"].as_u64().unwrap(), exp.min(50), "{algo}");
        let w = if algo == "weighted_astar" { 1.5 } else { 1.0 };
        let w = if algo == "dijkstra" { 0.0 } else { w };
        check_trace(&r, w);
    }
}

#[tokio::test]
async fn posthoc_traces_carry_the_format_fields() {
    let s = TestServer::new().await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    let q = json!({"start": [0, 0], "goal": [4, 0]});
    let (status, doc) = json(
        s.client
            .post(s.at("/v1/maps/small/posthoc"))
            .json(&q)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{doc}");
    assert!(doc["version"].is_string());
    assert!(doc["render"]["views"]["main"].is_object());
    let events = doc["events"].as_array().unwrap();
    let width = 5;
    let id = |x: u64, y: u64| y * width + x;
    assert_eq!(events[0]["type"], "source");
    assert_eq!(events[0]["id"], id(0, 0));
    assert_eq!(events[1]["type"], "destination");
    assert_eq!(events[1]["id"], id(4, 0));
    let last = events.last().unwrap();
    assert_eq!(last["type"], "end");
    assert_eq!(last["id"], id(4, 0));
    let (_, answer) = json(s.path("small", &q).await).await;
    assert_eq!(last["g"], answer["cost"]);
    let mut seen = std::collections::HashSet::new();
    let mut expanding = 0;
    for e in &events[2..] {
        let t = e["type"].as_str().unwrap();
        assert!(
            ["generating", "updating", "expanding", "closing", "end"].contains(&t),
            "{e}"
        );
        let (x, y) = (e["x"].as_u64().unwrap(), e["y"].as_u64().unwrap());
        assert_eq!(e["id"].as_u64().unwrap(), id(x, y));
        assert!(e["g"].is_number() && e["f"].is_number());
        // Every parent was generated before its child.
        match e["pId"].as_u64() {
            None => assert_eq!(e["id"], id(0, 0)),
            Some(p) => assert!(seen.contains(&p), "{e}"),
        }
        seen.insert(e["id"].as_u64().unwrap());
        expanding += u64::from(t == "expanding");
    }
    assert_eq!(expanding, answer["expanded"].as_u64().unwrap());
    assert_eq!(doc["pathd"]["cost"], answer["cost"]);
}

/// Replays an HPA* trace's refinement (see `HpaTrace` in `openapi.yaml`): appending steps
/// continue from the path's last cell, replacing steps replace it.
fn replay_refinement(hpa: &Value) -> Vec<[u64; 2]> {
    let mut path: Vec<[u64; 2]> = Vec::new();
    for step in hpa["refinement"].as_array().unwrap() {
        let cells = points(&step["cells"]);
        let replaces =
            ["corridor", "straighten", "window"].contains(&step["kind"].as_str().unwrap());
        if replaces || path.is_empty() {
            path = cells;
        } else {
            assert_eq!(path.last(), cells.first(), "{step}");
            path.extend_from_slice(&cells[1..]);
        }
    }
    path
}

#[tokio::test]
async fn hpa_traces_show_entrances_abstract_path_and_refinement() {
    let dirs = Dirs::new();
    dirs.bundle("arena2");
    let mut config = dirs.config();
    config.hpa_min_cells = 64 * 64;
    config.hpa_cluster_size = 16;
    config.max_debug_cells = 200_000;
    let s = TestServer::start(dirs, config).await;
    crate::common::wait_until("arena2's HPA* abstraction", || {
        s.state
            .registry()
            .get("arena2")
            .is_some_and(|e| e.hpa.get().is_some())
    })
    .await;
    let (start, goal) = ([30u64, 100u64], [150u64, 150u64]);
    let q = json!({"start": start, "goal": goal, "algorithm": "hpa", "trace": true});
    let (status, r) = json(s.path("arena2", &q).await).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["status"], "found");
    crate::openapi::assert_schema("PathResult", &r);
    let t = &r["trace"];
    let h = &t["hpa"];
    assert_eq!(h["cluster_size"], 16);
    assert_eq!(t["truncated"], false);

    // Every expansion of every phase is recorded, and f = g + h throughout.
    check_trace_counts(&r);
    let events = t["events"].as_array().unwrap();
    let phases: std::collections::BTreeSet<&str> = events
        .iter()
        .map(|e| e["phase"].as_str().unwrap())
        .collect();
    for p in ["insert", "abstract"] {
        assert!(phases.contains(p), "no {p} events: {phases:?}");
    }

    // Entrances sit on cluster borders; the abstract search runs over them.
    let entrances = points(&h["entrances"]);
    assert!(!entrances.is_empty());
    let on_border = |p: &[u64; 2]| p.iter().any(|&v| v % 16 == 0 || v % 16 == 15);
    assert!(entrances.iter().all(on_border), "{entrances:?}");
    for e in events.iter().filter(|e| e["phase"] == "abstract") {
        let node = points(&json!([e["node"]]))[0];
        assert!(
            node == start || node == goal || entrances.contains(&node),
            "abstract node {node:?} is not an entrance"
        );
    }

    // The abstract path joins start and goal through entrances, its costs rising to the
    // abstract search's cost at the goal.
    let ap = points(&h["abstract_path"]);
    assert!(ap.len() >= 3, "{ap:?}");
    assert_eq!((ap[0], *ap.last().unwrap()), (start, goal));
    assert!(ap[1..ap.len() - 1].iter().all(|p| entrances.contains(p)));
    let costs: Vec<f64> = h["abstract_costs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap())
        .collect();
    assert_eq!(costs.len(), ap.len());
    assert!(costs.windows(2).all(|w| w[0] <= w[1]));
    let goal_g = events
        .iter()
        .rev()
        .find(|e| e["phase"] == "abstract" && points(&json!([e["node"]]))[0] == goal)
        .unwrap()["g"]
        .as_f64()
        .unwrap();
    assert!((goal_g - costs.last().unwrap()).abs() < 1e-9);

    // The refinement: one appending step per abstract edge, joining consecutive abstract
    // nodes, in search order; replayed, it is the answer's path.
    let steps = h["refinement"].as_array().unwrap();
    let appends: Vec<&Value> = steps
        .iter()
        .filter(|s| !["corridor", "straighten", "window"].contains(&s["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(appends.len(), ap.len() - 1);
    for (s, w) in appends.iter().zip(ap.windows(2)) {
        let cells = points(&s["cells"]);
        assert_eq!((cells[0], *cells.last().unwrap()), (w[0], w[1]), "{s}");
    }
    let after: Vec<u64> = steps
        .iter()
        .map(|s| s["after_events"].as_u64().unwrap())
        .collect();
    assert!(after.windows(2).all(|w| w[0] <= w[1]));
    assert!(*after.last().unwrap() <= events.len() as u64);
    assert_eq!(replay_refinement(h), points(&r["path"]));

    // Tracing does not change the answer.
    let mut plain = q.clone();
    plain["trace"] = json!(false);
    let (_, p) = json(s.path("arena2", &plain).await).await;
    for k in ["path", "cost", "expanded", "generated"] {
        assert_eq!(p[k], r[k], "{k}");
    }
    assert!(p.get("trace").is_none());

    // Posthoc carries the same: entrances first, the abstract path, the refinement, the
    // phase of each search event, and `end` at the goal.
    let (status, doc) = json(
        s.client
            .post(s.at("/v1/maps/arena2/posthoc"))
            .json(&q)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{doc}");
    crate::openapi::assert_schema("PosthocTrace", &doc);
    let pe = doc["events"].as_array().unwrap();
    let of = |t: &str| pe.iter().filter(|e| e["type"] == t).count();
    assert_eq!(of("entrance"), entrances.len());
    assert_eq!(of("abstract"), ap.len());
    let refine_cells: usize = steps
        .iter()
        .map(|s| s["cells"].as_array().unwrap().len())
        .sum();
    assert_eq!(of("refine"), refine_cells);
    assert_eq!(of("expanding"), r["expanded"].as_u64().unwrap() as usize);
    let width = 281;
    assert_eq!(pe.last().unwrap()["type"], "end");
    assert_eq!(pe.last().unwrap()["id"], goal[1] * width + goal[0]);
    assert!(
        pe.iter()
            .filter(|e| e["type"] == "expanding")
            .all(|e| e["phase"].is_string())
    );
    assert_eq!(doc["pathd"]["hpa"]["abstract_path"], h["abstract_path"]);
}

/// An HPA* trace's expansions number the answer's `expanded`, and `f = g + h`.
fn check_trace_counts(answer: &Value) {
    let t = &answer["trace"];
    let events = t["events"].as_array().unwrap();
    let expands = events.iter().filter(|e| e["type"] == "expand").count() as u64;
    assert_eq!(expands, t["expansions"].as_u64().unwrap());
    assert_eq!(expands, answer["expanded"].as_u64().unwrap());
    for e in events {
        let (g, h, f) = (
            e["g"].as_f64().unwrap(),
            e["h"].as_f64().unwrap(),
            e["f"].as_f64().unwrap(),
        );
        assert!((f - (g + h)).abs() < 1e-9, "{e}");
    }
}

#[tokio::test]
async fn hpa_traces_near_ends_come_from_the_window_and_hold_the_cap() {
    let dirs = Dirs::new();
    dirs.bundle("arena2");
    let mut config = dirs.config();
    config.hpa_min_cells = 64 * 64;
    config.hpa_cluster_size = 16;
    config.max_debug_cells = 30;
    let s = TestServer::start(dirs, config).await;
    crate::common::wait_until("arena2's HPA* abstraction", || {
        s.state
            .registry()
            .get("arena2")
            .is_some_and(|e| e.hpa.get().is_some())
    })
    .await;
    // Far apart: the cap cuts events and entrances, not the refinement.
    let q = json!({"start": [30, 100], "goal": [150, 150], "algorithm": "hpa", "trace": true});
    let (_, r) = json(s.path("arena2", &q).await).await;
    let t = &r["trace"];
    assert_eq!(t["truncated"], true);
    assert_eq!(t["expansions"], 30);
    assert!(t["hpa"]["entrances"].as_array().unwrap().len() <= 30);
    assert_eq!(replay_refinement(&t["hpa"]), points(&r["path"]));
    crate::openapi::assert_schema("PathResult", &r);
}

#[tokio::test]
async fn repair_events_carry_the_cells_the_repair_touched() {
    let s = TestServer::new().await;
    let (w, h) = (40usize, 12usize);
    let map = json!({"width": w, "height": h, "costs": vec![1; w * h], "movement": "octile"});
    assert_eq!(s.put_json("open", &map).await.status(), 201);
    let resp = s
        .client
        .post(s.at("/v1/maps/open/subscriptions"))
        .json(&json!({"start": [2, 5], "goal": [37, 5]}))
        .send()
        .await
        .unwrap();
    let (status, sub) = json(resp).await;
    assert_eq!(status, 201, "{sub}");
    let id = sub["id"].as_str().unwrap();
    let url = s.at(&format!("/v1/subscriptions/{id}/events"));
    let mut sse = crate::live::sse::Sse::open(&s.client, &url, None).await;
    let first = sse.expect().await;
    assert_eq!(first.reason(), "initial");
    assert!(first.data.get("touched").is_none(), "{}", first.data);
    crate::openapi::assert_schema("SubscriptionEvent", &first.data);
    let old = points(&first.data["path"]);
    assert!(old.contains(&[20, 5]) && old.contains(&[21, 5]), "{old:?}");

    // Wall two cells of the path: the repair touches them (and more around).
    let (status, v) = json(
        s.client
            .patch(s.at("/v1/maps/open"))
            .json(&json!({"cells": [[20, 5, 0], [21, 5, 0]]}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let ev = sse.expect().await;
    assert_eq!(ev.reason(), "blocked", "{}", ev.data);
    crate::openapi::assert_schema("SubscriptionEvent", &ev.data);
    let touched = points(&ev.data["touched"]);
    for wall in [[20, 5], [21, 5]] {
        assert!(touched.contains(&wall), "{wall:?} not in {touched:?}");
    }
    assert_eq!(
        ev.data["touched_count"].as_u64().unwrap() as usize,
        touched.len()
    );
    assert_eq!(ev.data["touched_truncated"], false);
    // Row-major and distinct.
    assert!(
        touched
            .windows(2)
            .all(|p| (p[0][1], p[0][0]) < (p[1][1], p[1][0]))
    );
    // The new path avoids the walls; where it leaves the old one, the repair worked.
    let new = points(&ev.data["path"]);
    assert!(!new.contains(&[20, 5]) && !new.contains(&[21, 5]));
    let first_off = new.iter().find(|c| !old.contains(c)).expect("a detour");
    assert!(
        touched.contains(first_off),
        "{first_off:?} not in {touched:?}"
    );
}

/// The lessons' options (`heuristic`, `tie_break`) reach the engine through the path request:
/// Manhattan on an octile map is answered with `optimal: false` and may cost more; admissible
/// choices answer the optimum without the flag; unknown names and algorithms they do not
/// apply to are refused.
#[tokio::test]
async fn lesson_options_pass_through_the_path_request() {
    let s = TestServer::new().await;
    // Two walls: Manhattan's overestimate of diagonals leads A* the long way round.
    let mut rows = vec![vec![b'.'; 30]; 20];
    for (y, row) in rows.iter_mut().enumerate() {
        if (3..=16).contains(&y) {
            row[10] = b'@';
            row[11] = b'@';
        }
        if y <= 12 {
            row[18] = b'@';
            row[19] = b'@';
        }
    }
    let text = format!(
        "type octile\nheight 20\nwidth 30\nmap\n{}\n",
        rows.iter()
            .map(|r| String::from_utf8(r.clone()).unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(s.put_text("walls", &text).await.status(), 201);
    let q = |extra: Value| {
        let mut q = json!({"start": [2, 2], "goal": [27, 17]});
        q.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        q
    };
    let (_, best) = json(s.path("walls", &q(json!({}))).await).await;
    assert!(best.get("optimal").is_none(), "{best}");
    let (status, m) = json(s.path("walls", &q(json!({"heuristic": "manhattan"}))).await).await;
    assert_eq!(status, 200, "{m}");
    assert_eq!(m["optimal"], false);
    assert!(m["cost"].as_f64().unwrap() > best["cost"].as_f64().unwrap() + 1e-9);
    for (h, t) in [
        ("euclidean", "none"),
        ("chebyshev", "cross_product"),
        ("zero", "high_g"),
    ] {
        let (_, r) = json(
            s.path("walls", &q(json!({"heuristic": h, "tie_break": t})))
                .await,
        )
        .await;
        assert!(r.get("optimal").is_none(), "{h} {t}: {r}");
        assert!((r["cost"].as_f64().unwrap() - best["cost"].as_f64().unwrap()).abs() < 1e-9);
    }
    let (_, e) = json(s.path("walls", &q(json!({"tie_break": "epsilon"}))).await).await;
    assert_eq!(e["optimal"], false);
    expect_error(
        s.path("walls", &q(json!({"heuristic": "bogus"}))).await,
        400,
        "invalid_request",
    )
    .await;
    let r = s
        .path(
            "walls",
            &q(json!({"heuristic": "zero", "algorithm": "jps"})),
        )
        .await;
    expect_error(r, 400, "not_applicable").await;
}
