//! Live maps over a real server: patches, subscriptions, their event streams, moves, limits.

#[path = "live/fanout.rs"]
mod fanout;
#[path = "live/read_only.rs"]
mod read_only;
#[path = "live/shared.rs"]
mod shared;
#[path = "live/sse.rs"]
pub(crate) mod sse;

use crate::common::{Dirs, TestServer, expect_error, json};
use serde_json::{Value, json};
use sse::Sse;

/// 60x20, all cost 1, with row 10 a wall: the top and bottom halves are not connected.
pub(crate) fn halves() -> Value {
    let (w, h) = (60usize, 20usize);
    let mut costs = vec![1u32; w * h];
    for x in 0..w {
        costs[10 * w + x] = 0;
    }
    json!({"width": w, "height": h, "costs": costs, "movement": "octile"})
}

/// The subscription of the tests: along row 3 of the top half, cost 55.
pub(crate) const SUB: &str = r#"{"start": [2, 3], "goal": [57, 3]}"#;

async fn subscribe(s: &TestServer, map: &str, body: &str) -> Value {
    let resp = s
        .client
        .post(s.at(&format!("/v1/maps/{map}/subscriptions")))
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let loc = resp
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned());
    let (status, v) = json(resp).await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(
        loc.as_deref(),
        Some(format!("/v1/subscriptions/{}", v["id"].as_str().unwrap()).as_str())
    );
    v
}

async fn patch(s: &TestServer, map: &str, body: Value) -> reqwest::Response {
    s.client
        .patch(s.at(&format!("/v1/maps/{map}")))
        .json(&body)
        .send()
        .await
        .unwrap()
}

pub(crate) async fn patch_ok(s: &TestServer, map: &str, body: Value) -> Value {
    let (status, v) = json(patch(s, map, body).await).await;
    assert_eq!(status, 200, "{v}");
    v
}

async fn get_sub(s: &TestServer, id: &str) -> (u16, Value) {
    json(
        s.client
            .get(s.at(&format!("/v1/subscriptions/{id}")))
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// Polls the subscription until its newest event has `seq` (for tests that read the
/// event buffer afterwards, not to assert timing).
async fn wait_seq(s: &TestServer, id: &str, seq: u64) {
    let pathd = s.pathd();
    for _ in 0..12_000 {
        if pathd.get_subscription(id).await.unwrap().seq == seq {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("subscription {id} never reached seq {seq}");
}

fn events_url(s: &TestServer, id: &str) -> String {
    s.at(&format!("/v1/subscriptions/{id}/events"))
}

/// Equal costs up to rounding (sums of the same steps in another order).
fn same_cost(a: &Value, b: &Value) {
    let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
    assert!((a - b).abs() <= 1e-9 * a.abs().max(1.0), "{a} != {b}");
}

/// The path is legal on the `halves` map with a wall column at x=30, rows 0..9.
fn assert_legal(path: &Value, start: [u64; 2], goal: [u64; 2], wall: bool) {
    let cells: Vec<[u64; 2]> = path
        .as_array()
        .unwrap()
        .iter()
        .map(|p| [p[0].as_u64().unwrap(), p[1].as_u64().unwrap()])
        .collect();
    assert_eq!(cells.first(), Some(&start));
    assert_eq!(cells.last(), Some(&goal));
    for w in cells.windows(2) {
        let (dx, dy) = (w[0][0].abs_diff(w[1][0]), w[0][1].abs_diff(w[1][1]));
        assert!(dx <= 1 && dy <= 1 && dx + dy > 0, "not a step: {w:?}");
    }
    for c in &cells {
        assert!(c[1] < 10, "crossed the wall row: {c:?}");
        assert!(
            !(wall && c[0] == 30 && c[1] < 9),
            "walked through the wall: {c:?}"
        );
    }
}

#[tokio::test]
async fn a_wall_on_the_path_pushes_the_repaired_path_and_far_patches_send_nothing() {
    let s = TestServer::new().await;
    assert_eq!(s.put_json("h", &halves()).await.status(), 201);
    let sub = subscribe(&s, "h", SUB).await;
    let id = sub["id"].as_str().unwrap();
    assert_eq!(
        (
            sub["status"].as_str(),
            sub["cost"].as_f64(),
            sub["map_version"].as_u64()
        ),
        (Some("found"), Some(55.0), Some(1))
    );
    let mut stream = Sse::open(&s.client, &events_url(&s, id), None).await;
    let first = stream.expect().await;
    assert_eq!(
        (first.seq(), first.reason(), first.id.as_deref()),
        (1, "initial", Some("1"))
    );
    assert_eq!(first.data["path"], sub["path"]);

    // Far away: the bottom half, which the search never reached.
    let far = patch_ok(
        &s,
        "h",
        json!({"rects": [{"x": 20, "y": 14, "width": 11, "height": 3, "cost": 5}]}),
    )
    .await;
    assert_eq!(
        far,
        json!({"version": 2, "changed_cells": 33, "affected_subscriptions": 0})
    );

    // A wall across the path (rows 0..8 of column 30): the detour goes through row 9.
    let wall = json!({"rects": [{"x": 30, "y": 0, "width": 1, "height": 9, "cost": 0}]});
    let v = patch_ok(&s, "h", wall).await;
    assert_eq!(
        v,
        json!({"version": 3, "changed_cells": 9, "affected_subscriptions": 1})
    );
    let ev = stream.expect().await;
    // seq 2: the far patch sent nothing.
    assert_eq!(
        (ev.seq(), ev.reason(), ev.data["map_version"].as_u64()),
        (2, "blocked", Some(3))
    );
    assert_eq!(ev.id.as_deref(), Some("2"));
    let (_, fresh) = json(
        s.path("h", &json!({"start": [2, 3], "goal": [57, 3]}))
            .await,
    )
    .await;
    assert_eq!(fresh["map_version"], 3);
    same_cost(&ev.data["cost"], &fresh["cost"]);
    assert!(ev.data["cost"].as_f64().unwrap() > 55.0);
    assert_legal(&ev.data["path"], [2, 3], [57, 3], true);

    // The wall goes: the straight path is back.
    let open = json!({"rects": [{"x": 30, "y": 0, "width": 1, "height": 9, "cost": 1}]});
    patch_ok(&s, "h", open).await;
    let ev = stream.expect().await;
    assert_eq!(
        (ev.seq(), ev.reason(), ev.data["cost"].as_f64()),
        (3, "cheaper", Some(55.0))
    );
    let (status, v) = get_sub(&s, id).await;
    assert_eq!(status, 200);
    assert_eq!(
        (v["seq"].as_u64(), v["map_version"].as_u64()),
        (Some(3), Some(4))
    );
    assert_eq!(v["path"], ev.data["path"]);
    assert_eq!(
        (v["position"].clone(), v["goal"].clone()),
        (json!([2, 3]), json!([57, 3]))
    );
}

#[tokio::test]
async fn a_lagging_client_gets_a_resync_and_a_reconnect_replays_from_the_buffer() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.subscription_event_buffer = 2;
    let s = TestServer::start(dirs, config).await;
    assert_eq!(s.put_json("h", &halves()).await.status(), 201);
    let sub = subscribe(&s, "h", SUB).await;
    let id = sub["id"].as_str().unwrap();
    for (i, cost) in [0, 1, 0, 1].into_iter().enumerate() {
        patch_ok(
            &s,
            "h",
            json!({"rects": [{"x": 30, "y": 0, "width": 1, "height": 9, "cost": cost}]}),
        )
        .await;
        wait_seq(&s, id, i as u64 + 2).await;
    }
    // The buffer holds seqs 4 and 5: after 1, the client missed 2 and 3.
    let mut st = Sse::open(&s.client, &events_url(&s, id), Some(1)).await;
    let ev = st.expect().await;
    assert_eq!(
        (ev.seq(), ev.reason(), ev.data["cost"].as_f64()),
        (5, "resync", Some(55.0))
    );
    assert_eq!(ev.data["map_version"], 5);
    // After 3: a replay of 4 and 5 as they were.
    let mut st2 = Sse::open(&s.client, &events_url(&s, id), Some(3)).await;
    let (a, b) = (st2.expect().await, st2.expect().await);
    assert_eq!((a.seq(), a.reason()), (4, "blocked"));
    assert_eq!((b.seq(), b.reason()), (5, "cheaper"));
    // Up to date: the next event is the next patch's.
    let mut st3 = Sse::open(&s.client, &events_url(&s, id), Some(5)).await;
    patch_ok(&s, "h", json!({"cells": [{"x": 30, "y": 3, "cost": 0}]})).await;
    for st in [&mut st, &mut st2, &mut st3] {
        let ev = st.expect().await;
        assert_eq!((ev.seq(), ev.reason()), (6, "blocked"));
    }
    let bad = s
        .client
        .get(events_url(&s, id))
        .header("last-event-id", "x")
        .send()
        .await
        .unwrap();
    expect_error(bad, 400, "invalid_request").await;
}

#[tokio::test]
async fn moving_the_agent_continues_the_search_from_there() {
    let s = TestServer::new().await;
    assert_eq!(s.put_json("h", &halves()).await.status(), 201);
    let sub = subscribe(&s, "h", SUB).await;
    let id = sub["id"].as_str().unwrap();
    let secret = sub["secret"].as_str().unwrap();
    let url = s.at(&format!("/v1/subscriptions/{id}"));
    let mut stream = Sse::open(&s.client, &events_url(&s, id), None).await;
    assert_eq!(stream.expect().await.seq(), 1);
    let mv = |p: [u32; 2]| {
        s.client
            .patch(&url)
            .header("x-subscription-secret", secret)
            .json(&json!({"position": p}))
            .send()
    };

    // Along the path: no event, the rest of the path stays.
    let (status, v) = json(mv([10, 3]).await.unwrap()).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (v["position"].clone(), v["path"][0].clone()),
        (json!([10, 3]), json!([10, 3]))
    );
    assert_eq!(v["cost"].as_f64(), Some(47.0));
    // Off the path: an event `moved` with the best path from the new cell.
    let (status, v) = json(mv([10, 7]).await.unwrap()).await;
    assert_eq!(status, 200, "{v}");
    let ev = stream.expect().await;
    assert_eq!((ev.seq(), ev.reason()), (2, "moved"));
    let (_, fresh) = json(
        s.path("h", &json!({"start": [10, 7], "goal": [57, 3]}))
            .await,
    )
    .await;
    same_cost(&ev.data["cost"], &fresh["cost"]);
    assert_eq!(v["cost"], ev.data["cost"]);
    assert_legal(&ev.data["path"], [10, 7], [57, 3], false);

    // A wall and a cell off the map change nothing.
    expect_error(mv([5, 10]).await.unwrap(), 400, "start_blocked").await;
    expect_error(mv([60, 3]).await.unwrap(), 400, "out_of_bounds").await;
    let (_, v) = get_sub(&s, id).await;
    assert_eq!(
        (v["position"].clone(), v["seq"].as_u64()),
        (json!([10, 7]), Some(2))
    );
    // A patch after the move repairs from the new position.
    patch_ok(
        &s,
        "h",
        json!({"rects": [{"x": 30, "y": 0, "width": 1, "height": 9, "cost": 0}]}),
    )
    .await;
    let ev = stream.expect().await;
    assert_eq!((ev.seq(), ev.reason()), (3, "blocked"));
    let (_, fresh) = json(
        s.path("h", &json!({"start": [10, 7], "goal": [57, 3]}))
            .await,
    )
    .await;
    same_cost(&ev.data["cost"], &fresh["cost"]);
    assert_legal(&ev.data["path"], [10, 7], [57, 3], true);
}

#[tokio::test]
async fn unreachable_and_restored_goals() {
    let s = TestServer::new().await;
    assert_eq!(s.put_json("h", &halves()).await.status(), 201);
    let sub = subscribe(&s, "h", SUB).await;
    let id = sub["id"].as_str().unwrap();
    let mut stream = Sse::open(&s.client, &events_url(&s, id), None).await;
    stream.expect().await;
    let cut = json!({"rects": [{"x": 30, "y": 0, "width": 1, "height": 10, "cost": 0}]});
    patch_ok(&s, "h", cut).await;
    let ev = stream.expect().await;
    assert_eq!(
        (ev.reason(), ev.data["status"].as_str()),
        ("unreachable", Some("no_path"))
    );
    assert_eq!(ev.data["path"], json!([]));
    // Without a path the search is interested in everything: a far opening reaches it.
    let v = patch_ok(&s, "h", json!({"cells": [{"x": 30, "y": 9, "cost": 1}]})).await;
    assert_eq!(v["affected_subscriptions"], 1);
    let ev = stream.expect().await;
    assert_eq!(
        (ev.seq(), ev.reason(), ev.data["status"].as_str()),
        (3, "restored", Some("found"))
    );
    let (_, fresh) = json(
        s.path("h", &json!({"start": [2, 3], "goal": [57, 3]}))
            .await,
    )
    .await;
    same_cost(&ev.data["cost"], &fresh["cost"]);
}

#[tokio::test]
async fn deleting_the_subscription_or_the_map_ends_the_streams() {
    let s = TestServer::new().await;
    assert_eq!(s.put_json("h", &halves()).await.status(), 201);
    let a = subscribe(&s, "h", SUB).await;
    let b = subscribe(&s, "h", r#"{"start": [2, 12], "goal": [57, 18]}"#).await;
    let c = subscribe(&s, "h", SUB).await;
    let a_secret = a["secret"].as_str().unwrap().to_owned();
    let (a, b, c) = (
        a["id"].as_str().unwrap(),
        b["id"].as_str().unwrap(),
        c["id"].as_str().unwrap(),
    );
    let mut sa = Sse::open(&s.client, &events_url(&s, a), None).await;
    let mut sb = Sse::open(&s.client, &events_url(&s, b), None).await;
    let mut sc = Sse::open(&s.client, &events_url(&s, c), None).await;
    for st in [&mut sa, &mut sb, &mut sc] {
        st.expect().await;
    }
    let del = s
        .client
        .delete(s.at(&format!("/v1/subscriptions/{a}")))
        .header("x-subscription-secret", &a_secret)
        .send()
        .await
        .unwrap();
    assert_eq!(del.status(), 204);
    let ev = sa.expect().await;
    assert_eq!((ev.seq(), ev.reason()), (2, "deleted"));
    assert!(sa.next().await.is_none(), "the stream ends after `deleted`");
    let gone = s
        .client
        .get(s.at(&format!("/v1/subscriptions/{a}")))
        .send()
        .await
        .unwrap();
    expect_error(gone, 404, "subscription_not_found").await;
    let again = s
        .client
        .delete(s.at(&format!("/v1/subscriptions/{a}")))
        .header("x-subscription-secret", &a_secret)
        .send()
        .await
        .unwrap();
    expect_error(again, 404, "subscription_not_found").await;

    // Replacing the map with the same shape is a patch; another shape ends the searches.
    let mut same = halves();
    same["costs"][3 * 60 + 30] = json!(0);
    assert_eq!(s.put_json("h", &same).await.status(), 200);
    let ev = sc.expect().await;
    assert_eq!(
        (ev.reason(), ev.data["map_version"].as_u64()),
        ("blocked", Some(2))
    );
    let small = json!({"width": 3, "height": 1, "costs": [1, 1, 1]});
    assert_eq!(s.put_json("h", &small).await.status(), 200);
    for st in [&mut sb, &mut sc] {
        let ev = st.expect().await;
        assert_eq!(ev.reason(), "map_replaced");
        assert!(st.next().await.is_none());
    }
    // Deleting the map ends its subscriptions.
    let d = subscribe(&s, "h", r#"{"start": [0, 0], "goal": [2, 0]}"#).await;
    let d = d["id"].as_str().unwrap();
    let mut sd = Sse::open(&s.client, &events_url(&s, d), None).await;
    sd.expect().await;
    let del = s.client.delete(s.at("/v1/maps/h")).send().await.unwrap();
    assert_eq!(del.status(), 204);
    let ev = sd.expect().await;
    assert_eq!((ev.seq(), ev.reason()), (2, "map_deleted"));
    assert!(sd.next().await.is_none());
    let gone = s.pathd().get_subscription(d).await.unwrap_err();
    assert_eq!(
        (gone.status(), gone.code()),
        (Some(404), Some("subscription_not_found"))
    );
    assert_eq!(s.state.live().stats().subscriptions, 0);
}

#[tokio::test]
async fn streams_end_on_shutdown() {
    let s = TestServer::new().await;
    assert_eq!(s.put_json("h", &halves()).await.status(), 201);
    let sub = subscribe(&s, "h", SUB).await;
    let mut st = Sse::open(
        &s.client,
        &events_url(&s, sub["id"].as_str().unwrap()),
        None,
    )
    .await;
    st.expect().await;
    s.stop().await.unwrap();
    assert!(st.next().await.is_none());
}

#[tokio::test]
async fn limits_conflicts_and_validation() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.max_subscriptions_per_map = 2;
    config.max_subscriptions = 3;
    config.max_patch_cells = 100;
    let s = TestServer::start(dirs, config).await;
    assert_eq!(s.put_json("h", &halves()).await.status(), 201);
    assert_eq!(s.put_json("g", &halves()).await.status(), 201);
    subscribe(&s, "h", SUB).await;
    subscribe(&s, "h", SUB).await;
    let post = |m: &str| {
        s.client
            .post(s.at(&format!("/v1/maps/{m}/subscriptions")))
            .header("content-type", "application/json")
            .body(SUB)
            .send()
    };
    expect_error(post("h").await.unwrap(), 429, "too_many_subscriptions").await;
    expect_error(post("nope").await.unwrap(), 404, "map_not_found").await;
    let bad = |b: Value| {
        s.client
            .post(s.at("/v1/maps/g/subscriptions"))
            .json(&b)
            .send()
    };
    expect_error(
        bad(json!({"start": [0, 10], "goal": [5, 5]}))
            .await
            .unwrap(),
        400,
        "start_blocked",
    )
    .await;
    expect_error(
        bad(json!({"start": [0, 0], "goal": [5, 5], "algorithm": "weighted_astar"}))
            .await
            .unwrap(),
        400,
        "invalid_request",
    )
    .await;

    subscribe(&s, "g", SUB).await;
    expect_error(post("g").await.unwrap(), 429, "too_many_subscriptions").await;

    // Patches: version conflicts, no-ops, validation, size.
    let v = patch_ok(
        &s,
        "h",
        json!({"cells": [{"x": 0, "y": 0, "cost": 3}], "if_version": 1}),
    )
    .await;
    assert_eq!(v["version"], 2);
    let r = patch(
        &s,
        "h",
        json!({"cells": [{"x": 0, "y": 0, "cost": 4}], "if_version": 1}),
    )
    .await;
    expect_error(r, 409, "version_conflict").await;
    let noop = patch_ok(&s, "h", json!({"cells": [{"x": 0, "y": 0, "cost": 3}]})).await;
    assert_eq!(
        noop,
        json!({"version": 2, "changed_cells": 0, "affected_subscriptions": 0})
    );
    assert_eq!(patch_ok(&s, "h", json!({})).await["version"], 2);
    let (_, m) = json(s.client.get(s.at("/v1/maps/h")).send().await.unwrap()).await;
    assert_eq!(
        (m["version"].as_u64(), m["max_cost"].as_u64()),
        (Some(2), Some(3))
    );
    let cases = [
        (
            json!({"cells": [{"x": 0, "y": 0, "cost": 256}]}),
            400,
            "invalid_patch",
        ),
        (
            json!({"rects": [{"x": 0, "y": 0, "width": 0, "height": 1, "cost": 1}]}),
            400,
            "invalid_patch",
        ),
        (
            json!({"cells": [{"x": 60, "y": 0, "cost": 1}]}),
            422,
            "patch_out_of_bounds",
        ),
        (
            json!({"rects": [{"x": 55, "y": 0, "width": 6, "height": 1, "cost": 1}]}),
            422,
            "patch_out_of_bounds",
        ),
        (
            json!({"rects": [{"x": 0, "y": 0, "width": 11, "height": 10, "cost": 1}]}),
            413,
            "patch_too_large",
        ),
        (json!({"cell": []}), 400, "invalid_request"),
    ];
    for (body, status, code) in cases {
        expect_error(patch(&s, "h", body).await, status, code).await;
    }
    expect_error(patch(&s, "nope", json!({})).await, 404, "map_not_found").await;
    let (_, m) = json(s.client.get(s.at("/v1/maps/h")).send().await.unwrap()).await;
    assert_eq!(m["version"], 2, "failed patches change nothing");
}

#[tokio::test]
async fn patches_and_subscriptions_need_their_tokens() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.admin_token = Some("admin".into());
    config.query_token = Some("reader".into());
    let s = TestServer::start(dirs, config).await;
    let put = s
        .client
        .put(s.at("/v1/maps/h"))
        .bearer_auth("admin")
        .json(&halves())
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 201);
    let body = json!({"cells": [{"x": 0, "y": 0, "cost": 2}]});
    let p = s.client.patch(s.at("/v1/maps/h"));
    expect_error(p.json(&body).send().await.unwrap(), 401, "unauthorized").await;
    let p = s.client.patch(s.at("/v1/maps/h")).bearer_auth("reader");
    expect_error(p.json(&body).send().await.unwrap(), 401, "unauthorized").await;
    let p = s.client.patch(s.at("/v1/maps/h")).bearer_auth("admin");
    assert_eq!(p.json(&body).send().await.unwrap().status(), 200);

    let create = |token: Option<&str>| {
        let mut r = s
            .client
            .post(s.at("/v1/maps/h/subscriptions"))
            .json(&json!({"start": [2, 3], "goal": [57, 3]}));
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        r.send()
    };
    expect_error(create(None).await.unwrap(), 401, "unauthorized").await;
    let (status, v) = json(create(Some("reader")).await.unwrap()).await;
    assert_eq!(status, 201);
    let id = v["id"].as_str().unwrap();
    let ev = s.client.get(events_url(&s, id)).send().await.unwrap();
    expect_error(ev, 401, "unauthorized").await;
    let get = s
        .client
        .get(s.at(&format!("/v1/subscriptions/{id}")))
        .bearer_auth("admin");
    assert_eq!(get.send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn concurrent_patches_and_queries_never_see_a_torn_map() {
    // Two rectangles far apart change together: cost 1 on even versions... see `costs`.
    let s = TestServer::new().await;
    let w = 40usize;
    let map = json!({"width": w, "height": 20, "costs": vec![1; w * 20]});
    assert_eq!(s.put_json("t", &map).await.status(), 201);
    let toggle = |c: u32| {
        json!({"rects": [
        {"x": 4, "y": 4, "width": 6, "height": 12, "cost": c},
        {"x": 30, "y": 4, "width": 6, "height": 12, "cost": c}]})
    };
    let q = json!({"start": [6, 10], "goal": [33, 10]});
    // Cost of the query with both rectangles cheap (odd versions) and both dear (even).
    let (_, odd) = json(s.path("t", &q).await).await;
    patch_ok(&s, "t", toggle(9)).await;
    let (_, even) = json(s.path("t", &q).await).await;
    let costs = [
        even["cost"].as_f64().unwrap(),
        odd["cost"].as_f64().unwrap(),
    ];
    assert!(costs[0] > costs[1]);
    let sub = subscribe(&s, "t", r#"{"start": [6, 10], "goal": [33, 10]}"#).await;
    let id = sub["id"].as_str().unwrap().to_owned();

    let patcher = {
        let (client, url) = (s.client.clone(), s.at("/v1/maps/t"));
        tokio::spawn(async move {
            for i in 0..40u32 {
                let c = if i % 2 == 0 { 1 } else { 9 };
                let r = client.patch(&url).json(&toggle(c)).send().await.unwrap();
                assert_eq!(r.status(), 200);
            }
        })
    };
    let mut seen = 0;
    while !patcher.is_finished() || seen < 10 {
        let (status, v) = json(s.path("t", &q).await).await;
        if status == 503 {
            continue;
        }
        assert_eq!(status, 200, "{v}");
        let version = v["map_version"].as_u64().unwrap();
        assert_eq!(
            v["cost"].as_f64().unwrap(),
            costs[(version % 2) as usize],
            "version {version} answered a torn map"
        );
        seen += 1;
    }
    patcher.await.unwrap();
    // Version 42 (even: both dear); the subscription ends up exactly as a fresh query.
    let (_, m) = json(s.client.get(s.at("/v1/maps/t")).send().await.unwrap()).await;
    assert_eq!(m["version"], 42);
    let pathd = s.pathd();
    for _ in 0..12_000 {
        let v = pathd.get_subscription(&id).await.unwrap();
        if v.map_version == 42 {
            same_cost(&json!(v.cost), &json!(costs[0]));
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("the subscription never caught up");
}
