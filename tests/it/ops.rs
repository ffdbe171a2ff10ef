//! Operations: request ids (given or made) in answers, error bodies and log lines, W3C
//! `traceparent` in log lines, readiness false from SIGTERM with in-flight work finishing,
//! no anonymous writes from the network by default, build and process metrics.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::common::{Dirs, TestServer, json};

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
    let (st, v) = json(s.put_json("m", &body).await).await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (403, Some("forbidden")),
        "{v}"
    );
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("--admin-token") && message.contains("loopback"),
        "{message}"
    );
    let r = s
        .client
        .patch(s.at("/v1/maps/m"))
        .json(&json!({"cells": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // Reads work.
    let (st, _) = json(s.client.get(s.at("/v1/maps")).send().await.unwrap()).await;
    assert_eq!(st, 200);
    s.stop().await.unwrap();
    // With --allow-anonymous-writes, or with the admin token, the remote client may write.
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.test_remote_peers = true;
    config.allow_anonymous_writes = true;
    let s = TestServer::start(dirs, config).await;
    assert_eq!(s.put_json("m", &body).await.status(), 201);
    s.stop().await.unwrap();
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.test_remote_peers = true;
    config.admin_token = Some("sesame".into());
    let s = TestServer::start(dirs, config).await;
    let r = s
        .client
        .put(s.at("/v1/maps/m"))
        .bearer_auth("sesame")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    // And a loopback client of a default server writes as before.
    let s = TestServer::new().await;
    assert_eq!(s.put_json("m", &body).await.status(), 201);
}

#[tokio::test]
async fn metrics_say_the_build_and_the_process() {
    let s = TestServer::new().await;
    let text = s
        .client
        .get(s.at("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
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

    async fn ready(&self, client: &reqwest::Client) {
        for _ in 0..600 {
            if let Ok(r) = client.get(self.at("/readyz")).send().await
                && r.status() == 200
            {
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
    let client = reqwest::Client::new();
    let s = start_logged(tempfile::tempdir().unwrap(), &[]);
    s.ready(&client).await;
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
    let client = reqwest::Client::new();
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().to_owned();
    let s = start_logged(dir, &["--drain-delay-ms", "1500"]);
    s.ready(&client).await;
    // A 512x512 open map, and a write that is acknowledged before the signal.
    let mut text = String::from("type octile\nheight 512\nwidth 512\nmap\n");
    for _ in 0..512 {
        text.push_str(&".".repeat(512));
        text.push('\n');
    }
    let r = client
        .put(s.at("/v1/maps/open"))
        .header("content-type", "text/plain")
        .body(text)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    // Traffic: searches in flight while the signal arrives.
    let flights: Vec<_> = (0..4)
        .map(|i| {
            let c = client.clone();
            let url = s.at("/v1/maps/open/path");
            tokio::spawn(async move {
                c.post(url)
                    .json(
                        &json!({"start": [0, i], "goal": [511, 511 - i], "algorithm": "dijkstra"}),
                    )
                    .send()
                    .await
                    .map(|r| r.status().as_u16())
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(20)).await;
    s.term();
    // Not ready at once (within the drain delay the server still answers).
    let mut saw_503 = false;
    for _ in 0..50 {
        if let Ok(r) = client.get(s.at("/readyz")).send().await
            && r.status() == 503
        {
            let (_, v) = json(r).await;
            assert_eq!(v["error"]["code"], "not_ready", "{v}");
            saw_503 = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(saw_503, "/readyz never answered 503 after SIGTERM");
    // Liveness stays.
    assert_eq!(
        client.get(s.at("/healthz")).send().await.unwrap().status(),
        200
    );
    for f in flights {
        assert_eq!(
            f.await.unwrap().unwrap(),
            200,
            "an in-flight search was cut"
        );
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
    let mut found = None;
    for _ in 0..600 {
        if let Ok(r) = client.get(format!("{base}/v1/maps/open")).send().await
            && r.status() == 200
        {
            found = Some(r.json::<serde_json::Value>().await.unwrap());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    let v = found.expect("the map after a restart");
    assert_eq!(
        (v["width"].as_u64(), v["version"].as_u64()),
        (Some(512), Some(1)),
        "{v}"
    );
}
