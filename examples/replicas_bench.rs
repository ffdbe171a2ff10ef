//! Replication benchmark (run it with `scripts/replicas-bench.sh`): one `nats-server -js`
//! and three pathd replicas sharing it (`--store nats://...`), all on loopback.
//!
//! 1. Propagation: `PATCHES` patches written through replica A, one at a time; right after
//!    each acknowledgement, `GET /v1/maps/{name}?min_version=V` on B and on C (a replica
//!    answers it as soon as it has applied V), so the time from A's ack to B's (C's) answer
//!    is the propagation latency plus one loopback HTTP round trip. Prints p50 and p99.
//! 2. Query throughput: `CLIENTS` concurrent clients sending A* path queries for `SECS`
//!    seconds, first all to A, then round-robin over A, B and C. Prints queries per second.
//!
//! Usage: `replicas_bench PATHD_BINARY NATS_SERVER_BINARY` (env: PATCHES=300, CLIENTS=32,
//! SECS=5, MAP_SIDE=256).

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// Kills its child on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn ready(client: &reqwest::Client, url: &str) {
    let t = Instant::now();
    loop {
        if let Ok(r) = client.get(format!("{url}/readyz")).send().await
            && r.status() == 200
        {
            return;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "{url} never ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn throughput(
    client: &reqwest::Client,
    urls: &[String],
    clients: u64,
    secs: u64,
    side: u64,
) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (client, urls, done) = (client.clone(), urls.to_vec(), Arc::clone(&done));
        tasks.push(tokio::spawn(async move {
            let mut i = c as usize;
            while Instant::now() < until {
                let url = &urls[i % urls.len()];
                i += 1;
                let body = json!({"start": [1, 1 + (i as u64 % (side - 2))], "goal": [side - 2, side - 2]});
                let r = client
                    .post(format!("{url}/v1/maps/bench/path"))
                    .json(&body)
                    .send()
                    .await;
                if let Ok(r) = r
                    && r.status() == 200
                {
                    let _ = r.bytes().await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    done.load(Ordering::Relaxed) as f64 / secs as f64
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(pathd), Some(nats)) = (args.next(), args.next()) else {
        eprintln!("usage: replicas_bench PATHD_BINARY NATS_SERVER_BINARY");
        std::process::exit(2);
    };
    let (patches, clients, secs, side) = (
        env("PATCHES", 300),
        env("CLIENTS", 32),
        env("SECS", 5),
        env("MAP_SIDE", 256),
    );
    let tmp = std::env::temp_dir().join(format!("pathd-replicas-bench-{}", std::process::id()));
    std::fs::create_dir_all(tmp.join("maps")).expect("scratch dir");
    let nats_port = free_port();
    let _nats = Proc(
        Command::new(&nats)
            .args([
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                &nats_port.to_string(),
                "-sd",
            ])
            .arg(tmp.join("js"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server starts"),
    );
    let mut replicas = Vec::new();
    let mut urls = Vec::new();
    for i in 0..3 {
        let port = free_port();
        replicas.push(Proc(
            Command::new(&pathd)
                .args(["--addr", &format!("127.0.0.1:{port}"), "--maps-dir"])
                .arg(tmp.join("maps"))
                .arg("--data-dir")
                .arg(tmp.join(format!("data{i}")))
                .args(["--store", &format!("nats://127.0.0.1:{nats_port}")])
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("pathd starts"),
        ));
        urls.push(format!("http://127.0.0.1:{port}"));
    }
    let client = reqwest::Client::new();
    for u in &urls {
        ready(&client, u).await;
    }
    let mut map = format!("type octile\nheight {side}\nwidth {side}\nmap\n");
    for y in 0..side {
        for x in 0..side {
            map.push(if x == side / 2 && y > 2 { '@' } else { '.' });
        }
        map.push('\n');
    }
    let r = client
        .put(format!("{}/v1/maps/bench", urls[0]))
        .header("content-type", "text/plain")
        .body(map)
        .send()
        .await
        .expect("put");
    assert!(r.status().is_success(), "put: {}", r.status());

    // 1. Propagation.
    let (mut ack, mut to_b, mut to_c) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..patches {
        let (x, y) = (
            1 + i % (side / 2 - 2),
            1 + (i / (side / 2 - 2)) % (side - 2),
        );
        let t = Instant::now();
        let r: serde_json::Value = client
            .patch(format!("{}/v1/maps/bench", urls[0]))
            .json(&json!({"cells": [{"x": x, "y": y, "cost": 1 + (i % 2) * 4}]}))
            .send()
            .await
            .expect("patch")
            .json()
            .await
            .expect("patch answer");
        ack.push(t.elapsed());
        let v = r["version"].as_u64().expect("a version");
        let acked = Instant::now();
        let wait = |u: &String| {
            let url = format!("{u}/v1/maps/bench?min_version={v}");
            let c = client.clone();
            async move {
                let r = c.get(url).send().await.expect("get");
                assert_eq!(r.status(), 200);
                acked.elapsed()
            }
        };
        let (b, c) = tokio::join!(wait(&urls[1]), wait(&urls[2]));
        to_b.push(b);
        to_c.push(c);
    }
    for v in [&mut ack, &mut to_b, &mut to_c] {
        v.sort();
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("replication, {patches} patches through A (1 nats-server, 3 replicas, loopback):");
    println!(
        "  write ack on A (JetStream stored + applied on A): p50 {:.2} ms  p99 {:.2} ms",
        ms(percentile(&ack, 0.5)),
        ms(percentile(&ack, 0.99))
    );
    for (name, v) in [("B", &to_b), ("C", &to_c)] {
        println!(
            "  ack on A -> visible on {name}: p50 {:.2} ms  p99 {:.2} ms",
            ms(percentile(v, 0.5)),
            ms(percentile(v, 0.99))
        );
    }

    // 2. Query throughput.
    let one = throughput(&client, &urls[..1], clients, secs, side).await;
    let three = throughput(&client, &urls, clients, secs, side).await;
    println!("query throughput ({clients} clients, {secs} s each, {side}x{side} map, A*):");
    println!("  one replica:               {one:.0} queries/s");
    println!(
        "  three replicas round-robin: {three:.0} queries/s ({:.2}x)",
        three / one
    );
    drop(replicas);
    let _ = std::fs::remove_dir_all(&tmp);
}
