//! Live maps over a real server: patches, subscriptions, their event streams, moves, limits.

#[path = "live/fanout.rs"]
mod fanout;
#[path = "live/read_only.rs"]
mod read_only;
#[path = "live/shared.rs"]
mod shared;
#[path = "live/sse.rs"]
pub(crate) mod sse;

use crate::common::{
    Dirs, TestServer, api_error, cells_patch, client_without_retries, expect_error, json,
    next_event, rects_patch,
};
use pathd_client::{CellChange, MapPatch, PatchResult, PathRequest, Point, Subscription};
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
pub(crate) fn sub() -> PathRequest {
    PathRequest::new([2, 3], [57, 3])
}

/// Creates a subscription through the client.
async fn subscribe(s: &TestServer, map: &str, q: &PathRequest) -> Subscription {
    s.pathd()
        .create_subscription(map, q)
        .await
        .unwrap_or_else(|e| panic!("subscribe on {map}: {e}"))
}

/// `PATCH` with a JSON body, raw: for a body the client's `MapPatch` cannot express (an
/// unknown field).
async fn patch(s: &TestServer, map: &str, body: Value) -> reqwest::Response {
    s.client
        .patch(s.at(&format!("/v1/maps/{map}")))
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// Patches through the client; the answer, which must be a success.
pub(crate) async fn patch_ok(s: &TestServer, map: &str, patch: MapPatch) -> PatchResult {
    s.patch_ok(map, &patch).await
}

/// A patch's answer.
fn patched(version: u64, changed_cells: u64, affected_subscriptions: u64) -> PatchResult {
    PatchResult {
        version,
        changed_cells,
        affected_subscriptions,
    }
}

async fn get_sub(s: &TestServer, id: &str) -> Subscription {
    s.pathd().get_subscription(id).await.unwrap()
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

/// The cost of a fresh query.
async fn fresh_cost(s: &TestServer, map: &str, start: Point, goal: Point) -> (f64, u64) {
    let r = s
        .pathd()
        .find_path(map, &PathRequest::new(start, goal))
        .await
        .unwrap();
    (r.cost, r.map_version)
}

/// Equal costs up to rounding (sums of the same steps in another order).
fn same_cost(a: f64, b: f64) {
    assert!((a - b).abs() <= 1e-9 * a.abs().max(1.0), "{a} != {b}");
}

/// The path is legal on the `halves` map with a wall column at x=30, rows 0..9.
fn assert_legal(cells: &[Point], start: Point, goal: Point, wall: bool) {
    assert_eq!(cells.first(), Some(&start));
    assert_eq!(cells.last(), Some(&goal));
    for w in cells.windows(2) {
        let (dx, dy) = (w[0][0].abs_diff(w[1][0]), w[0][1].abs_diff(w[1][1]));
        assert!(dx <= 1 && dy <= 1 && dx + dy > 0, "not a step: {w:?}");
    }
    for c in cells {
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
    s.upload_json("h", &halves()).await;
    // Raw once: the create answers `201` with the subscription's `Location`.
    let resp = s
        .client
        .post(s.at("/v1/maps/h/subscriptions"))
        .json(&json!({"start": [2, 3], "goal": [57, 3]}))
        .send()
        .await
        .unwrap();
    let loc = resp
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned());
    let (status, v) = json(resp).await;
    assert_eq!(status, 201, "{v}");
    let sub: Subscription = serde_json::from_value(v).unwrap();
    assert_eq!(loc, Some(format!("/v1/subscriptions/{}", sub.id)));
    let id = sub.id.as_str();
    assert_eq!(
        (sub.status.as_str(), sub.cost, sub.map_version),
        ("found", 55.0, 1)
    );
    let mut stream = s.pathd().subscription_events(id, None);
    let first = next_event(&mut stream).await;
    assert_eq!(
        (
            first.seq,
            first.reason.as_str(),
            stream.last_frame_id.as_deref()
        ),
        (1, "initial", Some("1"))
    );
    assert_eq!(first.path, sub.path);

    // Far away: the bottom half, which the search never reached.
    let far = patch_ok(&s, "h", rects_patch(&[[20, 14, 11, 3, 5]])).await;
    assert_eq!(far, patched(2, 33, 0));

    // A wall across the path (rows 0..8 of column 30): the detour goes through row 9.
    let wall = rects_patch(&[[30, 0, 1, 9, 0]]);
    let v = patch_ok(&s, "h", wall).await;
    assert_eq!(v, patched(3, 9, 1));
    let ev = next_event(&mut stream).await;
    // seq 2: the far patch sent nothing.
    assert_eq!(
        (ev.seq, ev.reason.as_str(), ev.map_version),
        (2, "blocked", 3)
    );
    assert_eq!(stream.last_frame_id.as_deref(), Some("2"));
    let (fresh, version) = fresh_cost(&s, "h", [2, 3], [57, 3]).await;
    assert_eq!(version, 3);
    same_cost(ev.cost, fresh);
    assert!(ev.cost > 55.0);
    assert_legal(&ev.path, [2, 3], [57, 3], true);

    // The wall goes: the straight path is back.
    let open = rects_patch(&[[30, 0, 1, 9, 1]]);
    patch_ok(&s, "h", open).await;
    let ev = next_event(&mut stream).await;
    assert_eq!((ev.seq, ev.reason.as_str(), ev.cost), (3, "cheaper", 55.0));
    let v = get_sub(&s, id).await;
    assert_eq!((v.seq, v.map_version), (3, 4));
    assert_eq!(v.path, ev.path);
    assert_eq!((v.position, v.goal), ([2, 3], [57, 3]));
}

#[tokio::test]
async fn a_lagging_client_gets_a_resync_and_a_reconnect_replays_from_the_buffer() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.subscription_event_buffer = 2;
    let s = TestServer::start(dirs, config).await;
    s.upload_json("h", &halves()).await;
    let sub = subscribe(&s, "h", &sub()).await;
    let id = sub.id.as_str();
    for (i, cost) in [0, 1, 0, 1].into_iter().enumerate() {
        patch_ok(&s, "h", rects_patch(&[[30, 0, 1, 9, cost]])).await;
        wait_seq(&s, id, i as u64 + 2).await;
    }
    // The buffer holds seqs 4 and 5: after 1, the client missed 2 and 3.
    let pathd = s.pathd();
    let mut st = pathd.subscription_events(id, Some(1));
    let ev = next_event(&mut st).await;
    assert_eq!((ev.seq, ev.reason.as_str(), ev.cost), (5, "resync", 55.0));
    assert_eq!(ev.map_version, 5);
    // After 3: a replay of 4 and 5 as they were.
    let mut st2 = pathd.subscription_events(id, Some(3));
    let (a, b) = (next_event(&mut st2).await, next_event(&mut st2).await);
    assert_eq!((a.seq, a.reason.as_str()), (4, "blocked"));
    assert_eq!((b.seq, b.reason.as_str()), (5, "cheaper"));
    // Up to date: the next event is the next patch's. (The stream opens before the patch:
    // its first event must be the patch's, not one it was told to skip.)
    let mut st3 = Sse::open(&s.client, &events_url(&s, id), Some(5)).await;
    let cut = MapPatch {
        cells: vec![CellChange {
            x: 30,
            y: 3,
            cost: 0,
        }],
        if_version: None,
        ..Default::default()
    };
    pathd.patch_map("h", &cut).await.unwrap();
    for st in [&mut st, &mut st2] {
        let ev = next_event(st).await;
        assert_eq!((ev.seq, ev.reason.as_str()), (6, "blocked"));
    }
    let ev = st3.expect().await;
    assert_eq!(
        (ev.seq(), ev.reason(), ev.id.as_deref()),
        (6, "blocked", Some("6"))
    );
    assert_eq!(
        st.reconnects + st2.reconnects,
        0,
        "the streams were not dropped"
    );
    // Raw: a malformed `Last-Event-ID` (the client only sends numbers).
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
    s.upload_json("h", &halves()).await;
    let sub = subscribe(&s, "h", &sub()).await;
    let id = sub.id.as_str();
    let secret = sub.secret.as_deref();
    let pathd = s.pathd();
    let mut stream = pathd.subscription_events(id, None);
    assert_eq!(next_event(&mut stream).await.seq, 1);
    let mv = |p: Point| pathd.move_subscription(id, secret, p);

    // Along the path: no event, the rest of the path stays.
    let v = mv([10, 3]).await.unwrap();
    assert_eq!((v.position, v.path[0]), ([10, 3], [10, 3]));
    assert_eq!(v.cost, 47.0);
    // Off the path: an event `moved` with the best path from the new cell.
    let v = mv([10, 7]).await.unwrap();
    let ev = next_event(&mut stream).await;
    assert_eq!((ev.seq, ev.reason.as_str()), (2, "moved"));
    let (fresh, _) = fresh_cost(&s, "h", [10, 7], [57, 3]).await;
    same_cost(ev.cost, fresh);
    assert_eq!(v.cost, ev.cost);
    assert_legal(&ev.path, [10, 7], [57, 3], false);

    // A wall and a cell off the map change nothing.
    api_error(mv([5, 10]).await, 400, "start_blocked");
    api_error(mv([60, 3]).await, 400, "out_of_bounds");
    let v = get_sub(&s, id).await;
    assert_eq!((v.position, v.seq), ([10, 7], 2));
    // A patch after the move repairs from the new position.
    patch_ok(&s, "h", rects_patch(&[[30, 0, 1, 9, 0]])).await;
    let ev = next_event(&mut stream).await;
    assert_eq!((ev.seq, ev.reason.as_str()), (3, "blocked"));
    let (fresh, _) = fresh_cost(&s, "h", [10, 7], [57, 3]).await;
    same_cost(ev.cost, fresh);
    assert_legal(&ev.path, [10, 7], [57, 3], true);
}

#[tokio::test]
async fn unreachable_and_restored_goals() {
    let s = TestServer::new().await;
    s.upload_json("h", &halves()).await;
    let sub = subscribe(&s, "h", &sub()).await;
    let mut stream = s.pathd().subscription_events(&sub.id, None);
    next_event(&mut stream).await;
    let cut = rects_patch(&[[30, 0, 1, 10, 0]]);
    patch_ok(&s, "h", cut).await;
    let ev = next_event(&mut stream).await;
    assert_eq!(
        (ev.reason.as_str(), ev.status.as_str()),
        ("unreachable", "no_path")
    );
    assert!(ev.path.is_empty(), "{ev:?}");
    // Without a path the search is interested in everything: a far opening reaches it.
    let v = patch_ok(&s, "h", cells_patch(&[(30, 9, 1)])).await;
    assert_eq!(v.affected_subscriptions, 1);
    let ev = next_event(&mut stream).await;
    assert_eq!(
        (ev.seq, ev.reason.as_str(), ev.status.as_str()),
        (3, "restored", "found")
    );
    let (fresh, _) = fresh_cost(&s, "h", [2, 3], [57, 3]).await;
    same_cost(ev.cost, fresh);
}

#[tokio::test]
async fn deleting_the_subscription_or_the_map_ends_the_streams() {
    let s = TestServer::new().await;
    s.upload_json("h", &halves()).await;
    let a = subscribe(&s, "h", &sub()).await;
    let b = subscribe(&s, "h", &PathRequest::new([2, 12], [57, 18])).await;
    let c = subscribe(&s, "h", &sub()).await;
    let a_secret = a.secret.clone().unwrap();
    let (a, b, c) = (a.id.as_str(), b.id.as_str(), c.id.as_str());
    let pathd = s.pathd();
    // The streams stay raw: the test checks that the server ends each one.
    let mut sa = Sse::open(&s.client, &events_url(&s, a), None).await;
    let mut sb = Sse::open(&s.client, &events_url(&s, b), None).await;
    let mut sc = Sse::open(&s.client, &events_url(&s, c), None).await;
    for st in [&mut sa, &mut sb, &mut sc] {
        st.expect().await;
    }
    pathd.delete_subscription(a, Some(&a_secret)).await.unwrap();
    let ev = sa.expect().await;
    assert_eq!((ev.seq(), ev.reason()), (2, "deleted"));
    assert!(sa.next().await.is_none(), "the stream ends after `deleted`");
    api_error(
        pathd.get_subscription(a).await,
        404,
        "subscription_not_found",
    );
    api_error(
        pathd.delete_subscription(a, Some(&a_secret)).await,
        404,
        "subscription_not_found",
    );

    // Replacing the map with the same shape is a patch; another shape ends the searches.
    let mut same = halves();
    same["costs"][3 * 60 + 30] = json!(0);
    s.replace_json("h", &same).await;
    let ev = sc.expect().await;
    assert_eq!(
        (ev.reason(), ev.data["map_version"].as_u64()),
        ("blocked", Some(2))
    );
    let small = json!({"width": 3, "height": 1, "costs": [1, 1, 1]});
    s.replace_json("h", &small).await;
    for st in [&mut sb, &mut sc] {
        let ev = st.expect().await;
        assert_eq!(ev.reason(), "map_replaced");
        assert!(st.next().await.is_none());
    }
    // Deleting the map ends its subscriptions.
    let d = subscribe(&s, "h", &PathRequest::new([0, 0], [2, 0])).await;
    let d = d.id.as_str();
    let mut sd = Sse::open(&s.client, &events_url(&s, d), None).await;
    sd.expect().await;
    pathd.delete_map("h").await.unwrap();
    let ev = sd.expect().await;
    assert_eq!((ev.seq(), ev.reason()), (2, "map_deleted"));
    assert!(sd.next().await.is_none());
    api_error(
        pathd.get_subscription(d).await,
        404,
        "subscription_not_found",
    );
    assert_eq!(s.state.live().stats().subscriptions, 0);
}

#[tokio::test]
async fn streams_end_on_shutdown() {
    let s = TestServer::new().await;
    s.upload_json("h", &halves()).await;
    let sub = subscribe(&s, "h", &sub()).await;
    // Raw: the test checks that the server ends the stream (the client would reconnect).
    let mut st = Sse::open(&s.client, &events_url(&s, &sub.id), None).await;
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
    s.upload_json("h", &halves()).await;
    s.upload_json("g", &halves()).await;
    subscribe(&s, "h", &sub()).await;
    subscribe(&s, "h", &sub()).await;
    let pathd = s.pathd();
    let q = sub();
    api_error(
        pathd.create_subscription("h", &q).await,
        429,
        "too_many_subscriptions",
    );
    api_error(
        pathd.create_subscription("nope", &q).await,
        404,
        "map_not_found",
    );
    let blocked = PathRequest::new([0, 10], [5, 5]);
    api_error(
        pathd.create_subscription("g", &blocked).await,
        400,
        "start_blocked",
    );
    let no_weight = PathRequest {
        algorithm: Some("weighted_astar".into()),
        ..PathRequest::new([0, 0], [5, 5])
    };
    api_error(
        pathd.create_subscription("g", &no_weight).await,
        400,
        "invalid_request",
    );

    subscribe(&s, "g", &q).await;
    api_error(
        pathd.create_subscription("g", &q).await,
        429,
        "too_many_subscriptions",
    );

    // Patches: version conflicts, no-ops, validation, size.
    let v = patch_ok(
        &s,
        "h",
        MapPatch {
            if_version: Some(1),
            ..cells_patch(&[(0, 0, 3)])
        },
    )
    .await;
    assert_eq!(v.version, 2);
    let stale = MapPatch {
        cells: vec![CellChange {
            x: 0,
            y: 0,
            cost: 4,
        }],
        if_version: Some(1),
        ..Default::default()
    };
    api_error(pathd.patch_map("h", &stale).await, 409, "version_conflict");
    let noop = patch_ok(&s, "h", cells_patch(&[(0, 0, 3)])).await;
    assert_eq!(noop, patched(2, 0, 0));
    assert_eq!(patch_ok(&s, "h", MapPatch::default()).await.version, 2);
    let m = pathd.get_map("h", None).await.unwrap();
    assert_eq!((m.version, m.max_cost), (2, 3));
    let cases = [
        (cells_patch(&[(0, 0, 256)]), 400, "invalid_patch"),
        (rects_patch(&[[0, 0, 0, 1, 1]]), 400, "invalid_patch"),
        (cells_patch(&[(60, 0, 1)]), 422, "patch_out_of_bounds"),
        (rects_patch(&[[55, 0, 6, 1, 1]]), 422, "patch_out_of_bounds"),
        (rects_patch(&[[0, 0, 11, 10, 1]]), 413, "patch_too_large"),
    ];
    for (p, status, code) in cases {
        api_error(pathd.patch_map("h", &p).await, status, code);
    }
    // Raw: an unknown field, which the client's `MapPatch` cannot express.
    expect_error(
        patch(&s, "h", json!({"cell": []})).await,
        400,
        "invalid_request",
    )
    .await;
    api_error(
        pathd.patch_map("nope", &MapPatch::default()).await,
        404,
        "map_not_found",
    );
    let m = pathd.get_map("h", None).await.unwrap();
    assert_eq!(m.version, 2, "failed patches change nothing");
}

#[tokio::test]
async fn patches_and_subscriptions_need_their_tokens() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.admin_token = Some("admin".into());
    config.query_token = Some("reader".into());
    let s = TestServer::start(dirs, config).await;
    let anonymous = s.pathd();
    let mut reader = s.pathd();
    reader.query_token = Some("reader".into());
    let admin = s.pathd().with_admin_token("admin");
    let (created, _) = admin.put_map_json("h", &halves()).await.unwrap();
    assert!(created);
    let p = MapPatch {
        cells: vec![CellChange {
            x: 0,
            y: 0,
            cost: 2,
        }],
        if_version: None,
        ..Default::default()
    };
    api_error(anonymous.patch_map("h", &p).await, 401, "unauthorized");
    // (A client with only a query token sends it on writes too.)
    api_error(reader.patch_map("h", &p).await, 401, "unauthorized");
    admin.patch_map("h", &p).await.unwrap();

    api_error(
        anonymous.create_subscription("h", &sub()).await,
        401,
        "unauthorized",
    );
    let v = reader.create_subscription("h", &sub()).await.unwrap();
    let mut events = anonymous.subscription_events(&v.id, None);
    api_error(events.next().await.unwrap(), 401, "unauthorized");
    admin.get_subscription(&v.id).await.unwrap();
}

#[tokio::test]
async fn concurrent_patches_and_queries_never_see_a_torn_map() {
    // Two rectangles far apart change together: cost 1 on even versions... see `costs`.
    let s = TestServer::new().await;
    let w = 40usize;
    let map = json!({"width": w, "height": 20, "costs": vec![1; w * 20]});
    s.upload_json("t", &map).await;
    let toggle = |c: u32| rects_patch(&[[4, 4, 6, 12, c], [30, 4, 6, 12, c]]);
    let q = PathRequest::new([6, 10], [33, 10]);
    // Cost of the query with both rectangles cheap (odd versions) and both dear (even).
    let pathd = s.pathd();
    let odd = pathd.find_path("t", &q).await.unwrap();
    patch_ok(&s, "t", toggle(9)).await;
    let even = pathd.find_path("t", &q).await.unwrap();
    let costs = [even.cost, odd.cost];
    assert!(costs[0] > costs[1]);
    let id = subscribe(&s, "t", &q).await.id;

    let patcher = {
        // Without retries: every patch must succeed at once.
        let client = client_without_retries(&s.url);
        tokio::spawn(async move {
            for i in 0..40u32 {
                let c = if i % 2 == 0 { 1 } else { 9 };
                client.patch_map("t", &toggle(c)).await.unwrap();
            }
        })
    };
    let mut seen = 0;
    while !patcher.is_finished() || seen < 10 {
        let v = match pathd.find_path("t", &q).await {
            Err(e) if e.status() == Some(503) => continue,
            r => r.unwrap(),
        };
        let version = v.map_version;
        assert_eq!(
            v.cost,
            costs[(version % 2) as usize],
            "version {version} answered a torn map"
        );
        seen += 1;
    }
    patcher.await.unwrap();
    // Version 42 (even: both dear); the subscription ends up exactly as a fresh query.
    assert_eq!(pathd.get_map("t", None).await.unwrap().version, 42);
    for _ in 0..12_000 {
        let v = pathd.get_subscription(&id).await.unwrap();
        if v.map_version == 42 {
            same_cost(v.cost, costs[0]);
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("the subscription never caught up");
}
