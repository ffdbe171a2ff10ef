//! Subscription churn client for `scripts/churn.sh`: creates N subscriptions on a map, deletes
//! them all, and repeats; after each cycle prints the server's resident memory (read from
//! `/proc/PID/status`) and the subscription memory it reports in `/metrics`.
//!
//! ```text
//! cargo run --release --example churn -- http://127.0.0.1:8080 SERVER_PID den520d 2000 6 GOALS
//! ```
//!
//! `GOALS` 0 gives every subscription a goal of its own (a tree each: the worst case for
//! memory); otherwise they share that many goals.

use std::time::Instant;

use futures_util::StreamExt;
use pathd_engine::{Point, movingai};
use serde_json::{Value, json};

/// A tiny deterministic generator (xorshift64*), so runs are repeatable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn rss_mib(pid: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

async fn subscription_bytes(client: &reqwest::Client, base: &str) -> String {
    let text = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("pathd_subscription_memory_bytes "))
        .unwrap_or("?")
        .to_owned()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let base = args[1].clone();
    let pid = args[2].clone();
    let map = args.get(3).cloned().unwrap_or("den520d".into());
    let n: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let cycles: usize = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(6);
    let goals: usize = args.get(6).and_then(|s| s.parse().ok()).unwrap_or(0);
    let client = reqwest::Client::new();
    let text = client
        .get(format!("{base}/v1/maps/{map}"))
        .header("accept", "text/plain")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let grid = movingai::parse_map(&text).expect("a Moving AI map");
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut random_cell = || loop {
        let p = Point::new(
            (rng.next() % grid.width() as u64) as u32,
            (rng.next() % grid.height() as u64) as u32,
        );
        if grid.is_passable(p) {
            break p;
        }
    };
    let anchor = random_cell();
    let mut cell_near_anchor = || loop {
        let p = random_cell();
        if grid.same_component(p, anchor) {
            break p;
        }
    };
    let goal_set: Vec<Point> = (0..goals).map(|_| cell_near_anchor()).collect();
    let pairs: Vec<(Point, Point)> = (0..n)
        .map(|i| {
            let s = cell_near_anchor();
            let g = if goals == 0 {
                cell_near_anchor()
            } else {
                goal_set[i % goals]
            };
            (s, g)
        })
        .collect();
    println!("rss before: {:.0} MiB", rss_mib(&pid));
    let url = format!("{base}/v1/maps/{map}/subscriptions");
    for cycle in 1..=cycles {
        let t = Instant::now();
        let made: Vec<(String, String)> = futures_util::stream::iter(pairs.iter().copied())
            .map(|(s, g)| {
                let (client, url) = (client.clone(), url.clone());
                async move {
                    loop {
                        let r = client
                            .post(&url)
                            .json(&json!({"start": [s.x, s.y], "goal": [g.x, g.y]}))
                            .send()
                            .await
                            .unwrap();
                        if r.status() == 503 {
                            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                            continue;
                        }
                        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
                        let v: Value = r.json().await.unwrap();
                        return (
                            v["id"].as_str().unwrap().to_owned(),
                            v["secret"].as_str().unwrap().to_owned(),
                        );
                    }
                }
            })
            .buffered(8)
            .collect()
            .await;
        let full_rss = rss_mib(&pid);
        let full_bytes = subscription_bytes(&client, &base).await;
        futures_util::stream::iter(made)
            .for_each_concurrent(8, |(id, secret)| {
                let client = client.clone();
                let base = base.clone();
                async move {
                    let r = client
                        .delete(format!("{base}/v1/subscriptions/{id}"))
                        .header("x-subscription-secret", secret)
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), 204);
                }
            })
            .await;
        // Let the server drop what the deleted subscriptions held.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        println!(
            "cycle {cycle}: {n} created and deleted in {:.1?}; with them: rss {full_rss:.0} MiB, \
             subscription memory {full_bytes} B; after: rss {:.0} MiB, subscription memory {} B",
            t.elapsed(),
            rss_mib(&pid),
            subscription_bytes(&client, &base).await
        );
    }
}
