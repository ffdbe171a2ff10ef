//! The shared client scenario (`clients/SCENARIO.md`) against a real pathd, run in-process
//! on port 0: the README's curl session, a subscription that survives forced reconnects
//! (replay, then resync) through a proxy the test cuts, flow fields, `min_version`,
//! `if_version`, tokens and secrets.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pathd_client::{BatchItem, CellChange, Client, Error, MapPatch, MatrixRequest, PathRequest};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

const ADMIN: &str = "scenario-admin-token";
const TINY: &str = "type octile\nheight 3\nwidth 4\nmap\n....\n.@@.\n....\n";

/// A pathd on 127.0.0.1:0 with the bundled maps, the admin token and one kept event per
/// subscription; stopped when dropped.
struct Server {
    url: String,
    addr: std::net::SocketAddr,
    _stop: oneshot::Sender<()>,
    _dir: tempfile::TempDir,
}

async fn start() -> Server {
    let dir = tempfile::TempDir::new().unwrap();
    let maps = concat!(env!("CARGO_MANIFEST_DIR"), "/../../maps");
    let mut config = pathd::Config::with_dirs(maps, dir.path().join("data"));
    config.admin_token = Some(ADMIN.to_owned());
    config.pool_threads = 2;
    config.subscription_event_buffer = 1;
    let state = pathd::AppState::new(config).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(pathd::run(listener, state.clone(), async move {
        let _ = rx.await;
    }));
    for _ in 0..6000 {
        if state.is_ready() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(state.is_ready(), "server ready");
    Server {
        url: format!("http://{addr}"),
        addr,
        _stop: tx,
        _dir: dir,
    }
}

/// A TCP proxy to `target`; `cut` drops every open connection.
#[derive(Clone)]
struct Proxy {
    url: String,
    conns: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

async fn proxy(target: std::net::SocketAddr) -> Proxy {
    let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let p = Proxy {
        url: format!("http://{}", ln.local_addr().unwrap()),
        conns: Arc::default(),
    };
    let conns = p.conns.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = ln.accept().await {
            let Ok(mut upstream) = TcpStream::connect(target).await else {
                continue;
            };
            let task = tokio::spawn(async move {
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            });
            conns.lock().unwrap().push(task.abort_handle());
        }
    });
    p
}

impl Proxy {
    /// Drops every open connection (both ends close when the task is aborted).
    fn cut(&self) -> usize {
        let mut conns = self.conns.lock().unwrap();
        let n = conns.iter().filter(|c| !c.is_finished()).count();
        for c in conns.drain(..) {
            c.abort();
        }
        n
    }
}

/// serde_json (without `float_roundtrip`) may read the last digit differently: 1e-9, as
/// scripts/readme-test.sh compares.
fn close(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-9, "{got} != {want}");
}

fn code(r: Result<impl std::fmt::Debug, Error>) -> (u16, String) {
    let e = r.expect_err("an error answer");
    (e.status().unwrap_or(0), e.code().unwrap_or("").to_owned())
}

async fn wait_seq(c: &Client, id: &str, seq: u64) {
    for _ in 0..1500 {
        if c.get_subscription(id).await.unwrap().seq == seq {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("event {seq} never published");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shared_scenario() {
    let s = start().await;
    let px = proxy(s.addr).await;
    let admin = Client::new(&s.url).with_admin_token(ADMIN);
    let anon = Client::new(&s.url);
    let mut via_proxy = Client::new(&px.url);
    via_proxy.reconnect_delay = Duration::from_millis(50);

    // Health and the token: an anonymous write is refused with a typed error.
    assert_eq!(admin.ready().await.unwrap()["status"], "ready");
    assert_eq!(
        code(anon.put_map_text("tiny", TINY).await),
        (401, "unauthorized".into())
    );

    // Upload (201 created), a JSON map with costs.
    let (created, tiny) = admin.put_map_text("tiny", TINY).await.unwrap();
    assert!(created);
    assert_eq!((tiny.version, tiny.width, tiny.height), (1, 4, 3));
    let hills = json!({"width": 3, "height": 2, "costs": [1, 5, 1, 1, 0, 1], "movement": "octile"});
    assert!(admin.put_map_json("hills", &hills).await.unwrap().0);

    // Paths, as in the README.
    let p = admin
        .find_path("tiny", &PathRequest::new([0, 1], [3, 1]))
        .await
        .unwrap();
    assert_eq!(p.status, "found");
    assert_eq!(p.path, [[0, 1], [0, 0], [1, 0], [2, 0], [3, 0], [3, 1]]);
    assert_eq!(
        (p.cost, p.algorithm.as_str(), p.map_version),
        (5.0, "astar", 1)
    );
    let mut q = PathRequest::new([70, 50], [200, 200]);
    q.algorithm = Some("jps".into());
    q.smooth = true;
    let d = admin.find_path("den520d", &q).await.unwrap();
    close(d.cost, 215.89051812430688);
    close(d.path_cost, 225.52186130069825);
    assert_eq!(
        d.waypoints.unwrap(),
        [
            [70, 50],
            [71, 73],
            [140, 109],
            [149, 114],
            [200, 174],
            [200, 200]
        ]
    );

    // A batch, answered in order; a bad query is an error item of its own.
    let b = admin
        .find_paths(
            "arena2",
            &[
                PathRequest::new([5, 100], [100, 100]),
                PathRequest::new([250, 190], [250, 190]),
                PathRequest::new([9999, 0], [1, 1]),
            ],
        )
        .await
        .unwrap();
    assert_eq!(b.map_version, 1);
    match &b.results[..] {
        [
            BatchItem::Result(r0),
            BatchItem::Result(r1),
            BatchItem::Error { error },
        ] => {
            close(r0.cost, 99.14213562373095);
            assert_eq!(r0.path[..4], [[5, 100], [6, 100], [7, 100], [8, 101]]);
            assert_eq!((r1.path.clone(), r1.cost), (vec![[250, 190]], 0.0));
            assert_eq!(error.code, "out_of_bounds");
        }
        other => panic!("batch items {other:?}"),
    }

    // min_version: a version the map has is answered at once; one never written is 409.
    let mut q = PathRequest::new([0, 0], [2, 0]);
    q.min_version = Some(1);
    assert_eq!(admin.find_path("hills", &q).await.unwrap().status, "found");
    q.min_version = Some(99);
    assert_eq!(
        code(admin.find_path("hills", &q).await),
        (409, "version_conflict".into())
    );
    assert_eq!(admin.get_map("hills", Some(1)).await.unwrap().version, 1);

    // A subscription, followed through the proxy.
    let sub = admin
        .create_subscription("tiny", &PathRequest::new([0, 1], [3, 1]))
        .await
        .unwrap();
    let secret = sub.secret.clone().expect("a secret");
    assert_eq!((sub.cost, sub.id.len()), (5.0, 32));
    let mut events = via_proxy.subscription_events(&sub.id, None);
    let e1 = events.next().await.unwrap().unwrap();
    assert_eq!((e1.reason.as_str(), e1.seq, e1.cost), ("initial", 1, 5.0));

    // Forced reconnect 1: the connection drops, a patch lands meanwhile; the stream comes
    // back with Last-Event-ID 1 and the server replays the missed event.
    assert_eq!(px.cut(), 1, "the stream's connection was open");
    let wall = |x, y, cost| MapPatch {
        cells: vec![CellChange { x, y, cost }],
        ..Default::default()
    };
    let mut patch = wall(1, 0, 0);
    patch.if_version = Some(1);
    let pr = admin.patch_map("tiny", &patch).await.unwrap();
    assert_eq!((pr.version, pr.changed_cells), (2, 1));
    wait_seq(&anon, &sub.id, 2).await;
    let e2 = events.next().await.unwrap().unwrap();
    assert_eq!(
        (e2.reason.as_str(), e2.seq, e2.map_version),
        ("blocked", 2, 2)
    );
    assert!(events.reconnects >= 1);

    // A stale if_version is a typed conflict.
    let mut stale = wall(0, 0, 1);
    stale.if_version = Some(1);
    assert_eq!(
        code(admin.patch_map("tiny", &stale).await),
        (409, "version_conflict".into())
    );

    // The agent moves along its path, with the secret.
    let moved = anon
        .move_subscription(&sub.id, Some(&secret), [0, 2])
        .await
        .unwrap();
    assert_eq!(moved.path, [[0, 2], [1, 2], [2, 2], [3, 2], [3, 1]]);
    assert_eq!(
        (moved.cost, moved.map_version, moved.position),
        (4.0, 2, [0, 2])
    );

    // Forced reconnect 2: two events while away, more than the server keeps (one): the
    // stream comes back with one resync holding the full state.
    let before = events.reconnects;
    px.cut();
    admin.patch_map("tiny", &wall(2, 2, 0)).await.unwrap();
    admin.patch_map("tiny", &wall(2, 2, 1)).await.unwrap();
    wait_seq(&anon, &sub.id, 4).await;
    let e3 = events.next().await.unwrap().unwrap();
    assert_eq!(
        (e3.reason.as_str(), e3.seq, e3.map_version, e3.cost),
        ("resync", 4, 4, 4.0)
    );
    assert_eq!(e3.path, moved.path);
    assert!(events.reconnects > before);

    // Deleting needs the secret: 403 without, then the stream's final event.
    assert_eq!(
        code(
            anon.delete_subscription(&sub.id, Some("not-the-secret"))
                .await
        ),
        (403, "forbidden".into())
    );
    anon.delete_subscription(&sub.id, Some(&secret))
        .await
        .unwrap();
    assert_eq!(events.next().await.unwrap().unwrap().reason, "deleted");
    assert!(events.next().await.is_none());
    assert_eq!(
        code(anon.get_subscription(&sub.id).await),
        (404, "subscription_not_found".into())
    );

    // A flow field, streamed from its seq: a patch's changed cells match a fresh read.
    let ff = admin
        .create_flow_field("hills", &json!({"goal": [0, 0]}))
        .await
        .unwrap();
    let ff_secret = ff.secret.clone().expect("a secret");
    assert_eq!((ff.cost([0, 0]), ff.cost([1, 0])), (0.0, 3.0));
    let mut fevents = admin.flow_field_events(&ff.id, Some(ff.seq));
    admin.patch_map("hills", &wall(1, 0, 1)).await.unwrap();
    let fe = fevents.next().await.unwrap().unwrap();
    assert_eq!(fe.reason, "changed");
    assert!(
        fe.cells
            .iter()
            .any(|c| (c.0, c.1, c.3) == (1, 0, Some(1.0)))
    );
    assert_eq!(
        admin.get_flow_field(&ff.id).await.unwrap().cost([1, 0]),
        1.0
    );
    assert_eq!(
        code(anon.delete_flow_field(&ff.id, Some("wrong")).await),
        (403, "forbidden".into())
    );
    anon.delete_flow_field(&ff.id, Some(&ff_secret))
        .await
        .unwrap();
    assert_eq!(fevents.next().await.unwrap().unwrap().reason, "deleted");
    assert!(fevents.next().await.is_none());

    // The rest of the README's session.
    let names: Vec<String> = admin
        .list_maps()
        .await
        .unwrap()
        .maps
        .into_iter()
        .map(|m| m.name)
        .collect();
    assert!(names.is_sorted() && names.contains(&"tiny".into()));
    assert_eq!(
        admin.get_map_text("tiny").await.unwrap(),
        "type octile\nheight 3\nwidth 4\nmap\n.@..\n.@@.\n....\n"
    );
    admin.delete_map("tiny").await.unwrap();
    assert_eq!(
        code(admin.get_map("tiny", None).await),
        (404, "map_not_found".into())
    );
    assert!(admin.metrics().await.unwrap().contains("pathd_"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_abstraction_building_is_retried_after_retry_after() {
    let s = start().await;
    let c = Client::new(&s.url).with_admin_token(ADMIN);
    let rows: Vec<String> = (0..512).map(|_| ".".repeat(512)).collect();
    c.put_map_json(
        "open512",
        &json!({"width": 512, "height": 512, "rows": rows}),
    )
    .await
    .unwrap();
    let mut q = PathRequest::new([0, 0], [511, 511]);
    q.algorithm = Some("jps_plus".into());
    let r = c.find_path("open512", &q).await.unwrap();
    assert_eq!(
        (r.status.as_str(), r.algorithm.as_str()),
        ("found", "jps_plus")
    );
}

/// A scripted server: answers each connection's request with the next canned response.
async fn scripted(answers: Vec<String>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", ln.local_addr().unwrap());
    tokio::spawn(async move {
        for answer in answers {
            let Ok((mut sock, _)) = ln.accept().await else {
                return;
            };
            let mut buf = vec![0u8; 65536];
            let _ = sock.read(&mut buf).await;
            let _ = sock.write_all(answer.as_bytes()).await;
            let _ = sock.shutdown().await;
        }
    });
    url
}

fn answer(status: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\n{headers}content-length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn retries_honour_retry_after_and_stop_after_retries() {
    let busy = answer(
        "503 Service Unavailable",
        "retry-after: 1\r\n",
        r#"{"error":{"code":"overloaded","message":"busy"}}"#,
    );
    let found = answer(
        "200 OK",
        "",
        r#"{"status":"found","path":[[0,0]],"cost":0,"path_cost":0,"expanded":0,"generated":0,"algorithm":"astar","map_version":1,"elapsed_us":0}"#,
    );
    let url = scripted(vec![busy.clone(), found]).await;
    let r = Client::new(&url)
        .find_path("m", &PathRequest::new([0, 0], [0, 0]))
        .await
        .unwrap();
    assert_eq!(r.status, "found");

    let url = scripted(vec![busy.clone(), busy]).await;
    let mut c = Client::new(&url);
    c.retries = 1;
    match c.find_path("m", &PathRequest::new([0, 0], [0, 0])).await {
        Err(Error::Api {
            status: 503,
            code,
            retry_after: Some(1),
            ..
        }) => assert_eq!(code, "overloaded"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_request_without_an_answer_times_out() {
    let ln = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", ln.local_addr().unwrap());
    let _held = tokio::spawn(async move {
        let (_sock, _) = ln.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(600)).await;
    });
    let mut c = Client::new(&url);
    c.timeout = Duration::from_millis(100);
    assert!(matches!(c.get_map("m", None).await, Err(Error::Timeout)));
}

#[tokio::test]
async fn matrix_los_and_random() {
    let s = start().await;
    let admin = Client::new(&s.url).with_admin_token(ADMIN);
    admin.put_map_text("games", TINY).await.unwrap();
    let m = admin
        .matrix(
            "games",
            &MatrixRequest {
                sources: vec![[0, 1], [3, 0]],
                targets: vec![[3, 1], [1, 1], [0, 1]],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        m.costs,
        vec![
            vec![Some(5.0), None, Some(0.0)],
            vec![Some(1.0), None, Some(4.0)]
        ]
    );
    let wide = MatrixRequest {
        sources: vec![[0, 0]; 257],
        ..Default::default()
    };
    assert_eq!(
        code(admin.matrix("games", &wide).await),
        (400, "matrix_too_large".into())
    );
    let l = admin.los("games", [0, 0], [3, 2]).await.unwrap();
    assert_eq!((l.visible, l.blocked_at), (false, Some([1, 1])));
    let r = admin.random("games", [0, 1], 2.0, Some(7)).await.unwrap();
    assert!(
        r.distance <= 2.0 && r.candidates == 5 && r.seed == 7,
        "{r:?}"
    );
    assert_eq!(
        admin.random("games", [0, 1], 2.0, Some(7)).await.unwrap(),
        r
    );
    assert_eq!(
        code(admin.random("games", [1, 1], 2.0, None).await),
        (400, "start_blocked".into())
    );
}

#[tokio::test]
async fn healthz_posthoc_cells_and_batch_and_plan_options() {
    let s = start().await;
    let admin = Client::new(&s.url).with_admin_token(ADMIN);
    admin.put_map_text("games", TINY).await.unwrap();
    let h = Client::new(&s.url).healthz().await.unwrap();
    assert_eq!(h.status, "ok");
    assert!(h.maps >= 1 && h.damaged_maps.is_empty() && h.cut_logs.is_empty());
    assert!(h.store.is_none() && h.cluster.is_none());

    // The cells as the profile sees them, row-major: the wall of row 1 is 0.
    let cells = admin
        .get_map_cells("games", &pathd_client::CellsRequest::default())
        .await
        .unwrap();
    assert_eq!(cells, [1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1]);
    let unknown = pathd_client::CellsRequest {
        profile: Some("nope".into()),
        ..Default::default()
    };
    assert_eq!(
        code(admin.get_map_cells("games", &unknown).await),
        (404, "profile_not_found".into())
    );

    // A Posthoc trace: source and destination first, `end` at the goal.
    let q = PathRequest {
        algorithm: Some("dijkstra".into()),
        ..PathRequest::new([0, 0], [3, 0])
    };
    let t = admin.find_path_posthoc("games", &q).await.unwrap();
    let kinds: Vec<&str> = t.events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(&kinds[..2], ["source", "destination"]);
    let end = t.events.last().unwrap();
    assert_eq!((end.kind.as_str(), end.id, end.x, end.y), ("end", 3, 3, 0));
    let summary = t.pathd.unwrap();
    assert_eq!(summary["cost"], json!(3.0));
    assert_eq!(
        code(admin.find_path_posthoc("nope", &q).await),
        (404, "map_not_found".into())
    );

    // A batch-level `min_version` newer than the map's: a version never written.
    let batch = pathd_client::BatchRequest {
        queries: vec![PathRequest::new([0, 0], [3, 0])],
        min_version: Some(9),
    };
    assert_eq!(
        code(admin.find_paths_with("games", &batch).await),
        (409, "version_conflict".into())
    );
    let batch = pathd_client::BatchRequest {
        min_version: Some(1),
        ..batch
    };
    let b = admin.find_paths_with("games", &batch).await.unwrap();
    assert_eq!((b.map_version, b.results.len()), (1, 1));

    // A plan's `size` other than 1, or any `profile`: not applicable.
    let agents = vec![pathd_client::PlanAgent {
        start: [0, 0],
        goal: [3, 0],
    }];
    for req in [
        pathd_client::PlanRequest {
            agents: agents.clone(),
            size: Some(2),
            ..Default::default()
        },
        pathd_client::PlanRequest {
            agents: agents.clone(),
            profile: Some("ground".into()),
            ..Default::default()
        },
    ] {
        assert_eq!(
            code(admin.plan_agents("games", &req).await),
            (400, "not_applicable".into())
        );
    }
    let one = pathd_client::PlanRequest {
        agents,
        size: Some(1),
        min_version: Some(1),
        ..Default::default()
    };
    let p = admin.plan_agents("games", &one).await.unwrap();
    assert_eq!((p.status.as_str(), p.map_version), ("solved", 1));

    // A `movement` that overrides the file's `type` line.
    let (created, m) = admin
        .put_map_text_with("four", TINY, Some("cardinal"))
        .await
        .unwrap();
    assert!(created);
    assert_eq!(m.movement, "cardinal");
    let r = admin
        .find_path("four", &PathRequest::new([0, 0], [1, 2]))
        .await
        .unwrap();
    assert_eq!(r.cost, 3.0, "no diagonal on a cardinal map: {r:?}");
}
