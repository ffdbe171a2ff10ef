//! Operations: request ids (given or made) in answers, error bodies and log lines, W3C
//! `traceparent` in log lines, readiness false from SIGTERM with in-flight work finishing,
//! no anonymous writes from the network by default, build and process metrics.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::common::{Dirs, TestServer, api_error, client_without_retries, json};
use pathd_client::{MapPatch, PathRequest};

/// Raw throughout: the test is about the `X-Request-Id` header.
#[tokio::test]
async fn a_request_id_is_given_back_in_the_header_and_the_error_body() {
    let s = TestServer::new().await;
    let r = s
        .client
        .get(s.at("/v1/maps/nope"))
        .header("x-request-id", "order-66")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-request-id"], "order-66");
    let (st, v) = json(r).await;
    assert_eq!(
        (st, v["error"]["request_id"].as_str()),
        (404, Some("order-66")),
        "{v}"
    );
    // None given (or one that is not sane): one is made, the same in both places.
    for given in [None, Some("x".repeat(200))] {
        let mut req = s.client.get(s.at("/v1/maps/nope"));
        if let Some(g) = &given {
            req = req.header("x-request-id", g.as_str());
        }
        let r = req.send().await.unwrap();
        let header = r.headers()["x-request-id"].to_str().unwrap().to_owned();
        assert_eq!(header.len(), 32, "{header}");
        assert!(header.bytes().all(|b| b.is_ascii_hexdigit()), "{header}");
        let (_, v) = json(r).await;
        assert_eq!(v["error"]["request_id"].as_str(), Some(header.as_str()));
    }
    // Answers that are not errors carry the header too.
    let r = s.client.get(s.at("/healthz")).send().await.unwrap();
    assert!(r.headers().contains_key("x-request-id"));
}

#[tokio::test]
async fn without_an_admin_token_writes_come_from_loopback_only() {
    let body = json!({"width": 2, "height": 1, "costs": [1, 1]});
    // Every client counts as remote here (the test-only switch; a second loopback address
    // would still be loopback).
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.test_remote_peers = true;
    let s = TestServer::start(dirs, config).await;
    let pathd = s.pathd();
    let message = api_error(pathd.put_map_json("m", &body).await, 403, "forbidden");
    assert!(
        message.contains("--admin-token") && message.contains("loopback"),
        "{message}"
    );
    api_error(
        pathd.patch_map("m", &MapPatch::default()).await,
        403,
        "forbidden",
    );
    // Reads work.
    pathd.list_maps().await.unwrap();
    s.stop().await.unwrap();
    // With --allow-anonymous-writes, or with the admin token, the remote client may write.
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.test_remote_peers = true;
    config.allow_anonymous_writes = true;
    let s = TestServer::start(dirs, config).await;
    assert!(s.pathd().put_map_json("m", &body).await.unwrap().0);
    s.stop().await.unwrap();
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.test_remote_peers = true;
    config.admin_token = Some("sesame".into());
    let s = TestServer::start(dirs, config).await;
    let admin = s.pathd().with_admin_token("sesame");
    assert!(admin.put_map_json("m", &body).await.unwrap().0);
    // And a loopback client of a default server writes as before.
    let s = TestServer::new().await;
    assert!(s.pathd().put_map_json("m", &body).await.unwrap().0);
}

#[tokio::test]
async fn metrics_say_the_build_and_the_process() {
    let s = TestServer::new().await;
    let text = s.pathd().metrics().await.unwrap();
    let value = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name) && !l.starts_with('#'))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    let info = text
        .lines()
        .find(|l| l.starts_with("pathd_build_info{"))
        .expect("pathd_build_info");
    assert!(
        info.contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION"))),
        "{info}"
    );
    assert!(info.ends_with(" 1"), "{info}");
    assert!(value("process_resident_memory_bytes") > 1e6);
    assert!(value("process_open_fds") >= 3.0);
    assert!(value("process_max_fds") >= value("process_open_fds"));
    assert!(value("process_cpu_seconds_total") > 0.0);
}

/// A pathd process with its log (standard output) in a file.
struct Logged {
    child: Child,
    base: String,
    log: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn start_logged(dir: tempfile::TempDir, extra: &[&str]) -> Logged {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = dir.path().join(format!("server-{port}.log"));
    let child = Command::new(env!("CARGO_BIN_EXE_pathd"))
        .arg("serve")
        .args(["--addr", &format!("127.0.0.1:{port}"), "--maps-dir"])
        .arg(dir.path())
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(extra)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .env_remove("GLIBC_TUNABLES")
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Logged {
        child,
        base: format!("http://127.0.0.1:{port}"),
        log,
        _dir: dir,
    }
}

impl Logged {
    fn at(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The Rust client of this server, without retries (the test asserts a `503`).
    fn pathd(&self) -> pathd_client::Client {
        client_without_retries(&self.base)
    }

    async fn ready(&self) {
        for _ in 0..600 {
            if self.pathd().ready().await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("pathd did not become ready");
    }

    fn term(&self) {
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn log_lines_carry_the_request_id_and_the_traceparents_trace_id() {
    // Raw requests: the test is about the `X-Request-Id` and `traceparent` headers.
    let client = reqwest::Client::new();
    let s = start_logged(tempfile::tempdir().unwrap(), &[]);
    s.ready().await;
    let r = client
        .get(s.at("/v1/maps/nope"))
        .header("x-request-id", "req-42")
        .header(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // A malformed traceparent is ignored, not logged.
    let r = client
        .get(s.at("/healthz"))
        .header("x-request-id", "req-43")
        .header("traceparent", "00-zz-00f067aa0ba902b7-01")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    s.term();
    let mut s = s;
    s.child.wait().unwrap();
    let log = std::fs::read_to_string(&s.log).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("req-42"))
        .unwrap_or_else(|| panic!("no log line of req-42 in:\n{log}"));
    assert!(line.contains("request_id=req-42"), "{line}");
    assert!(
        line.contains("trace_id=4bf92f3577b34da6a3ce929d0e0e4736"),
        "{line}"
    );
    let other = log
        .lines()
        .find(|l| l.contains("req-43"))
        .expect("req-43 logged");
    assert!(!other.contains("trace_id"), "{other}");
}

#[tokio::test]
async fn sigterm_turns_readiness_off_at_once_and_lets_in_flight_work_finish() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().to_owned();
    let s = start_logged(dir, &["--drain-delay-ms", "1500"]);
    s.ready().await;
    let pathd = s.pathd();
    // A 512x512 open map, and a write that is acknowledged before the signal.
    let mut text = String::from("type octile\nheight 512\nwidth 512\nmap\n");
    for _ in 0..512 {
        text.push_str(&".".repeat(512));
        text.push('\n');
    }
    assert!(pathd.put_map_text("open", &text).await.unwrap().0);
    // Traffic: searches in flight while the signal arrives.
    let flights: Vec<_> = (0..4)
        .map(|i| {
            let pathd = pathd.clone();
            tokio::spawn(async move {
                let q = PathRequest {
                    algorithm: Some("dijkstra".into()),
                    ..PathRequest::new([0, i], [511, 511 - i])
                };
                pathd.find_path("open", &q).await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(20)).await;
    s.term();
    // Not ready at once (within the drain delay the server still answers).
    let mut saw_503 = false;
    for _ in 0..50 {
        if let Err(e) = pathd.ready().await
            && e.status() == Some(503)
        {
            assert_eq!(e.code(), Some("not_ready"), "{e}");
            saw_503 = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(saw_503, "/readyz never answered 503 after SIGTERM");
    // Liveness stays.
    let health = pathd.healthz().await.unwrap();
    assert_eq!(health.status, "ok", "{health:?}");
    for f in flights {
        let r = f.await.unwrap();
        assert!(r.is_ok(), "an in-flight search was cut: {r:?}");
    }
    let mut s = s;
    let status = s.child.wait().unwrap();
    assert!(status.success(), "graceful stop exited with {status}");
    // The acknowledged write is kept.
    let s2 = {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_pathd"))
            .arg("serve")
            .args(["--addr", &format!("127.0.0.1:{port}"), "--maps-dir"])
            .arg(&keep)
            .arg("--data-dir")
            .arg(keep.join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        (child, format!("http://127.0.0.1:{port}"))
    };
    let (mut child, base) = s2;
    let restarted = client_without_retries(&base);
    let mut found = None;
    for _ in 0..600 {
        if let Ok(m) = restarted.get_map("open", None).await {
            found = Some(m);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    let v = found.expect("the map after a restart");
    assert_eq!((v.width, v.version), (512, 1), "{v:?}");
}
