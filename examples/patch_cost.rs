//! What a patch costs as the map grows: a 1-cell `PATCH` (answered, so durable: appended
//! and fsynced) on 64x64, 1024x1024 and 4096x4096 maps in one run, and the first and second
//! JPS query after it, over real HTTP against an in-process server with a real data
//! directory. Prints the median and p90 of each, and the ratios the maps-service issue
//! sets targets for (4096 patch within 3x of 64; first JPS within 2x of second).
//!
//! ```text
//! cargo run --release --example patch_cost [-- ROUNDS]
//! ```

use std::time::{Duration, Instant};

use pathd::{AppState, Config};
use serde_json::{Value, json};

fn stats(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
    (at(0.5), at(0.9))
}

/// A map of open cells with a wall across the middle that has a gap at the bottom, so a
/// JPS query from left to right has to go around it.
fn map_text(side: u32) -> String {
    let mut t = format!("type octile\nheight {side}\nwidth {side}\nmap\n");
    for y in 0..side {
        for x in 0..side {
            let wall = x == side / 2 && y < side - 2;
            t.push(if wall { '@' } else { '.' });
        }
        t.push('\n');
    }
    t
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(25);
    let tmp = tempfile::TempDir::new().expect("temp dir");
    let maps = tmp.path().join("maps");
    std::fs::create_dir_all(&maps).expect("maps dir");
    let mut config = Config::with_dirs(&maps, tmp.path().join("data"));
    config.hpa_min_cells = 0; // measure the patch itself, not an HPA* derivation
    let state = AppState::new(config).expect("state");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(pathd::run(listener, state, std::future::pending()));
    let client = reqwest::Client::new();
    while client.get(format!("{url}/readyz")).send().await.is_err() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    println!("rounds {rounds}; times in ms (median / p90)");
    println!(
        "{:>10} {:>17} {:>17} {:>17}",
        "map", "1-cell PATCH", "1st JPS after", "2nd JPS after"
    );
    let mut medians = Vec::new();
    for side in [64u32, 1024, 4096] {
        let name = format!("m{side}");
        let r = client
            .put(format!("{url}/v1/maps/{name}"))
            .header("Content-Type", "text/plain")
            .body(map_text(side))
            .send()
            .await
            .expect("upload");
        assert_eq!(r.status(), 201, "upload {side}");
        let query = json!({"start": [0, 0], "goal": [side - 1, 0], "algorithm": "jps"});
        let (mut patch_t, mut first_t, mut second_t) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..rounds {
            // Toggle a cell far from the query's path, so every patch changes one cell.
            let cost = if i % 2 == 0 { 0 } else { 1 };
            let body = json!({"cells": [{"x": 1, "y": side - 1, "cost": cost}]});
            let t = Instant::now();
            let r = client
                .patch(format!("{url}/v1/maps/{name}"))
                .json(&body)
                .send()
                .await
                .expect("patch");
            let v: Value = r.json().await.expect("patch answer");
            patch_t.push(t.elapsed());
            assert_eq!(v["changed_cells"], 1, "{v}");
            for times in [&mut first_t, &mut second_t] {
                let t = Instant::now();
                let r = client
                    .post(format!("{url}/v1/maps/{name}/path"))
                    .json(&query)
                    .send()
                    .await
                    .expect("query");
                let v: Value = r.json().await.expect("query answer");
                times.push(t.elapsed());
                assert_eq!(v["status"], "found", "{v}");
            }
        }
        let (p, f, s) = (stats(patch_t), stats(first_t), stats(second_t));
        println!(
            "{:>10} {:>8.3} / {:>6.3} {:>8.3} / {:>6.3} {:>8.3} / {:>6.3}",
            format!("{side}x{side}"),
            p.0,
            p.1,
            f.0,
            f.1,
            s.0,
            s.1
        );
        medians.push((p.0, f.0, s.0));
    }
    let (small, big) = (medians[0], medians[2]);
    println!(
        "4096 patch / 64 patch = {:.2}x (target <= 3); 4096 first JPS / second = {:.2}x (target <= 2)",
        big.0 / small.0,
        big.1 / big.2
    );
}
