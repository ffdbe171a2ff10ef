//! Hardening against slow, big and greedy clients: JSON bodies are parsed off the async
//! runtime and batches are cut at the first query past the limit; one batch cannot hold
//! the search pool; idle, slow-header and slow-body connections are closed; and the
//! number of connections is capped.
//!
//! No test asserts wall-clock speed: bounds below are hang guards (generous), and the
//! properties are checked by ordering and counts.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{
    Dirs, SMALL_MAP, TestServer, expect_error, json, read_until_closed, wait_until,
};
use axum::body::Body;
use axum::http::Request;
use pathd::compute::Compute;
use pathd::{AppState, app};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tower::ServiceExt;

/// Generous bound for anything that should happen "soon": only a hang guard.
const HANG: Duration = Duration::from_secs(30);

// ---- 1. big JSON bodies --------------------------------------------------------------

/// A batch body of about `mib` MiB: `n` queries, each padded with a long (unknown)
/// algorithm name so parsing takes a while.
fn big_batch(n: usize, mib: usize) -> Vec<u8> {
    let pad = "x".repeat((mib << 20) / n);
    let q = format!(r#"{{"start":[0,0],"goal":[1,0],"algorithm":"{pad}"}}"#);
    let mut body = String::from(r#"{"queries":["#);
    for i in 0..n {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&q);
    }
    body.push_str("]}");
    body.into_bytes()
}

/// On a current-thread runtime a parse on the runtime would block the only thread until it
/// is done: here `/healthz` answers while the big body is still being parsed, so the parse
/// runs elsewhere.
#[tokio::test(flavor = "current_thread")]
async fn big_bodies_are_parsed_off_the_runtime() {
    let dirs = Dirs::new();
    let state = AppState::new(dirs.config()).unwrap();
    let router = app(state);
    let req = Request::post("/v1/maps/nope/paths")
        .header("content-type", "application/json")
        .body(Body::from(big_batch(256, 48)))
        .unwrap();
    let big = tokio::spawn(router.clone().oneshot(req));
    // Let the big request start (its body is in memory: nothing else makes it wait).
    tokio::task::yield_now().await;
    let health = router
        .clone()
        .oneshot(Request::get("/healthz").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    assert!(
        !big.is_finished(),
        "the big body was parsed before /healthz could answer: parsing blocked the runtime"
    );
    let resp = tokio::time::timeout(HANG, big)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    // Parsed in full, then the (missing) map is looked up.
    assert_eq!(resp.status(), 404);
}

async fn server_with(f: impl FnOnce(&mut pathd::Config)) -> TestServer {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    f(&mut config);
    TestServer::start(dirs, config).await
}

/// The batch limit cuts the parse at the start of query `max + 1`: what follows it is never
/// read, so even a truncated body answers `413 too_many_queries`, not a parse error.
#[tokio::test]
async fn over_long_batch_is_refused_at_the_first_extra_query() {
    let s = server_with(|c| c.max_batch = 4).await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    let q = r#"{"start":[0,0],"goal":[4,0]}"#;
    let body = format!(r#"{{"queries":[{q},{q},{q},{q},{{"start": this is never parsed"#);
    let resp = s
        .client
        .post(s.at("/v1/maps/small/paths"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    expect_error(resp, 413, "too_many_queries").await;
    // Exactly `max` queries still work, and a bad body within the limit is a 400.
    let ok = json!({"queries": vec![json!({"start": [0, 0], "goal": [4, 0]}); 4]});
    let resp = s
        .client
        .post(s.at("/v1/maps/small/paths"))
        .json(&ok)
        .send()
        .await
        .unwrap();
    let (st, v) = json(resp).await;
    assert_eq!((st, v["results"].as_array().map(Vec::len)), (200, Some(4)));
    let resp = s
        .client
        .post(s.at("/v1/maps/small/paths"))
        .header("content-type", "application/json")
        .body(format!(r#"{{"queries":[{q},{q}"#))
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "invalid_request").await;
    let resp = s
        .client
        .post(s.at("/v1/maps/small/paths"))
        .header("content-type", "application/json")
        .body(format!(r#"{{"queries":[{q}],"extra":1}}"#))
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "invalid_request").await;
}

/// The body limit still applies to bodies parsed off the runtime.
#[tokio::test]
async fn parsed_off_the_runtime_bodies_keep_the_body_limit() {
    let s = server_with(|c| c.max_body_bytes = 1000).await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    for route in ["/v1/maps/small/path", "/v1/maps/small/paths"] {
        let resp = s
            .client
            .post(s.at(route))
            .header("content-type", "application/json")
            .body(
                big_batch(2, 0)
                    .into_iter()
                    .chain([b' '; 2000])
                    .collect::<Vec<u8>>(),
            )
            .send()
            .await
            .unwrap();
        expect_error(resp, 413, "payload_too_large").await;
        let resp = s
            .client
            .post(s.at(route))
            .header("content-type", "text/plain")
            .body("{}")
            .send()
            .await
            .unwrap();
        expect_error(resp, 415, "unsupported_media_type").await;
    }
}

/// Four clients post big batch bodies at once; `/healthz` still answers meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_answers_while_big_bodies_are_parsed() {
    let s = server_with(|_| {}).await;
    let body = big_batch(256, 24);
    let posts: Vec<_> = (0..4)
        .map(|_| {
            let (client, url, body) = (s.client.clone(), s.at("/v1/maps/nope/paths"), body.clone());
            tokio::spawn(async move {
                client
                    .post(url)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
            })
        })
        .collect();
    let health = tokio::time::timeout(HANG, s.client.get(s.at("/healthz")).send())
        .await
        .expect("/healthz answered")
        .unwrap();
    assert_eq!(health.status(), 200);
    for p in posts {
        let resp = tokio::time::timeout(HANG, p)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        expect_error(resp, 404, "map_not_found").await;
    }
}

// ---- 2. fair scheduling ----------------------------------------------------------------

/// With one worker, a single query submitted behind a 50-job batch runs after at most a
/// couple of the batch's jobs, not after all of them.
#[tokio::test]
async fn a_single_query_does_not_wait_for_a_whole_batch() {
    let c = Compute::new(1, 4);
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    let started = Mutex::new(Some(started_tx));
    let gate = Mutex::new(gate_rx);
    let batch = {
        let (c, log) = (c.clone(), Arc::clone(&log));
        tokio::spawn(async move {
            c.run_batch((0..50).collect(), move |i: u32, _| {
                if i == 0 {
                    if let Some(tx) = started.lock().unwrap().take() {
                        let _ = tx.send(());
                    }
                    let _ = gate.lock().unwrap().recv_timeout(HANG);
                }
                log.lock().unwrap().push(format!("batch {i}"));
                i
            })
            .await
        })
    };
    started_rx.await.unwrap();
    let queued_before = c.stats().queued;
    let single = {
        let (c, log) = (c.clone(), Arc::clone(&log));
        tokio::spawn(async move {
            c.run(move |_| log.lock().unwrap().push("single".into()))
                .await
        })
    };
    wait_until("single query queued", || {
        c.stats().queued == queued_before + 1
    })
    .await;
    gate_tx.send(()).unwrap();
    single.await.unwrap().unwrap();
    let out = batch.await.unwrap().unwrap();
    assert_eq!(
        out,
        (0..50).collect::<Vec<_>>(),
        "batch answers stay in order"
    );
    let log = log.lock().unwrap();
    let pos = log.iter().position(|e| e == "single").unwrap();
    assert!(
        pos <= 2,
        "the single query ran after {pos} batch jobs: {:?}",
        &log[..pos]
    );
}

// ---- 3. connection timeouts and cap ----------------------------------------------------

#[tokio::test]
async fn an_idle_connection_is_closed() {
    let s = server_with(|c| c.connections.idle_timeout_ms = 200).await;
    let addr = s.url.trim_start_matches("http://").to_owned();
    // Never sends a byte.
    let mut idle = TcpStream::connect(&addr).await.unwrap();
    assert!(read_until_closed(&mut idle).await.is_empty());
    // Kept alive after one request, then idle.
    let mut kept = TcpStream::connect(&addr).await.unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let answer = read_until_closed(&mut kept).await;
    assert!(
        String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
}

#[tokio::test]
async fn a_slow_header_connection_is_closed() {
    let s = server_with(|c| c.connections.header_timeout_ms = 300).await;
    let addr = s.url.trim_start_matches("http://").to_owned();
    let stream = TcpStream::connect(&addr).await.unwrap();
    let (mut rd, mut wr) = stream.into_split();
    // One byte every 50 ms, forever: the header never completes.
    let trickle = tokio::spawn(async move {
        let head = b"GET /healthz HTTP/1.1\r\nx-slow: ".iter().copied();
        for b in head.chain(std::iter::repeat(b'a')) {
            if wr.write_all(&[b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    read_until_closed(&mut rd).await;
    trickle.abort();
}

#[tokio::test]
async fn a_slow_body_gets_408() {
    let s = server_with(|c| c.connections.body_timeout_ms = 300).await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    let addr = s.url.trim_start_matches("http://").to_owned();
    let stream = TcpStream::connect(&addr).await.unwrap();
    let (mut rd, mut wr) = stream.into_split();
    let trickle = tokio::spawn(async move {
        let head = "POST /v1/maps/small/path HTTP/1.1\r\nhost: x\r\n\
                    content-type: application/json\r\ncontent-length: 1000\r\n\r\n";
        if wr.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        loop {
            if wr.write_all(b" ").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let answer = String::from_utf8(read_until_closed(&mut rd).await).unwrap();
    trickle.abort();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let body = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["error"]["code"], "body_timeout", "{v}");
}

#[tokio::test]
async fn connections_beyond_the_cap_get_503() {
    let s = server_with(|c| c.connections.max_connections = 3).await;
    let addr = s.url.trim_start_matches("http://").to_owned();
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut c = TcpStream::connect(&addr).await.unwrap();
        // A request answered proves the connection was accepted and holds a slot.
        c.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 1024];
        let n = tokio::time::timeout(HANG, c.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
        held.push(c);
    }
    let mut extra = TcpStream::connect(&addr).await.unwrap();
    extra
        .write_all(b"GET /v1/maps HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let answer = String::from_utf8(read_until_closed(&mut extra).await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("retry-after: 1"),
        "{answer}"
    );
    let body = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["error"]["code"], "too_many_connections", "{v}");
    // Free a slot: a new connection is served again.
    drop(held.pop());
    let fresh = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let mut tries = 0;
    loop {
        let resp = fresh.get(s.at("/healthz")).send().await;
        if resp.as_ref().is_ok_and(|r| r.status() == 200) {
            break;
        }
        tries += 1;
        assert!(tries < 600, "no slot freed: {resp:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Defect 13 of issue 22: idle sockets filling the cap made `/healthz` answer `503
/// too_many_connections` for the whole idle timeout, so a liveness probe would kill a
/// healthy server. Probes past the cap are answered (in the room kept for `503` answers).
#[tokio::test]
async fn probes_past_the_cap_are_answered() {
    let s = server_with(|c| c.connections.max_connections = 2).await;
    let addr = s.url.trim_start_matches("http://").to_owned();
    let mut idle = Vec::new();
    for _ in 0..2 {
        // Idle sockets that never send a byte: they hold their slots until the idle
        // timeout (60 s by default).
        idle.push(TcpStream::connect(&addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    for probe in ["/healthz", "/readyz"] {
        let mut c = TcpStream::connect(&addr).await.unwrap();
        c.write_all(format!("GET {probe} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let answer = String::from_utf8(read_until_closed(&mut c).await).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{probe}: {answer}");
        let body = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert!(v["status"] == "ok" || v["status"] == "ready", "{v}");
    }
    // Anything else past the cap still gets the 503.
    let mut c = TcpStream::connect(&addr).await.unwrap();
    c.write_all(b"GET /v1/maps HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let answer = String::from_utf8(read_until_closed(&mut c).await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    drop(idle);
}

#[test]
fn serve_help_names_the_connection_flags() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pathd"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for env in [
        "PATHD_HEADER_TIMEOUT_MS",
        "PATHD_BODY_TIMEOUT_MS",
        "PATHD_IDLE_TIMEOUT_MS",
        "PATHD_MAX_CONNECTIONS",
    ] {
        assert!(help.contains(env), "{env} missing from --help");
    }
}
