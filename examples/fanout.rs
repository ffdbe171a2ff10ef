//! Fan-out load client for `scripts/fanout.sh`: N subscriptions on one map whose paths
//! cross one column near a chokepoint, all event streams open, one wall patch across that
//! column, and the time from sending the patch until every affected client has its event.
//!
//! "Affected" is computed independently of the server: the subscriptions whose current path
//! is no longer legal on the patched map (checked locally with the engine). The client
//! waits until each of them has received an event (or the timeout), then prints p50, p99
//! and max latency, plus how many other clients got an event.
//!
//! With `GOALS` > 0 the subscriptions head for that many goals (round robin), as units
//! gathering at a few rally points do; `SPREAD` is how far (in cells) starts and goals lie
//! left and right of the column.
//!
//! ```text
//! cargo run --release --example fanout -- http://127.0.0.1:8080 den520d 10000 60 100 25
//! #                                        base                  map    N  timeout GOALS SPREAD
//! ```

use std::collections::HashSet;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use pathd_engine::{Grid, Patch, Point, Rect, movingai};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// A tiny deterministic generator (xorshift64*), so runs are repeatable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
}

/// The server's resident memory, when `FANOUT_SERVER_PID` names it (the script sets it).
fn server_rss() -> String {
    std::env::var("FANOUT_SERVER_PID")
        .ok()
        .and_then(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or_else(String::new, |kb| format!("; server RSS {} MiB", kb / 1024))
}

/// The server's CPU time so far (user + system, in ms; clock ticks of 10 ms), when
/// `FANOUT_SERVER_PID` names it.
fn server_cpu_ms() -> Option<f64> {
    let pid = std::env::var("FANOUT_SERVER_PID").ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command's closing parenthesis: state is the 3rd, utime the 14th.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks * 10.0)
}

/// The server CPU time spent from `before` over the next second (the patch, its repairs
/// and the trees' settling), as text.
async fn cpu_after(before: Option<f64>) -> String {
    tokio::time::sleep(Duration::from_secs(1)).await;
    match (before, server_cpu_ms()) {
        (Some(a), Some(b)) => format!("; server CPU in the second after it: {:.0} ms", b - a),
        _ => String::new(),
    }
}

fn pt(v: &Value) -> Point {
    Point::new(v[0].as_u64().unwrap() as u32, v[1].as_u64().unwrap() as u32)
}

/// The passable cell nearest the middle of the map with open cells 20 to each side in the
/// same component: the column through it is what the paths cross.
fn pick_center(g: &Grid) -> Point {
    let (w, h) = (g.width() as i64, g.height() as i64);
    let mut best: Option<(i64, Point)> = None;
    for y in 15..h - 15 {
        for x in 30..w - 30 {
            let p = Point::new(x as u32, y as u32);
            let l = Point::new((x - 20) as u32, y as u32);
            let r = Point::new((x + 20) as u32, y as u32);
            if g.is_passable(p) && g.same_component(p, l) && g.same_component(p, r) {
                let d = (x - w / 2).pow(2) + (y - h / 2).pow(2);
                if best.is_none_or(|(bd, _)| d < bd) {
                    best = Some((d, p));
                }
            }
        }
    }
    best.expect("a map with open space").1
}

/// The passable cell farthest from `c` among the map's corners' nearest ones (a cell no
/// path of the run comes near).
fn far_cell(g: &Grid, c: Point) -> Point {
    let (w, h) = (g.width(), g.height());
    let corners = [(0, 0), (w - 1, 0), (0, h - 1), (w - 1, h - 1)];
    let mut best: Option<(u64, Point)> = None;
    for (x0, y0) in corners {
        // Spiral-free scan: the first passable cell of the corner's 64x64 block.
        let xs: Vec<u32> = if x0 == 0 {
            (0..64.min(w)).collect()
        } else {
            (w.saturating_sub(64)..w).rev().collect()
        };
        let ys: Vec<u32> = if y0 == 0 {
            (0..64.min(h)).collect()
        } else {
            (h.saturating_sub(64)..h).rev().collect()
        };
        let found = ys
            .iter()
            .flat_map(|&y| xs.iter().map(move |&x| Point::new(x, y)))
            .find(|&p| g.is_passable(p) && g.cost(p) < 255);
        if let Some(p) = found {
            let d = (p.x.abs_diff(c.x) as u64).pow(2) + (p.y.abs_diff(c.y) as u64).pow(2);
            if best.is_none_or(|(bd, _)| d > bd) {
                best = Some((d, p));
            }
        }
    }
    best.expect("a passable corner").1
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

/// Reads SSE frames; sends (index, seq, reason, elapsed since `t0` once set).
async fn follow(
    client: reqwest::Client,
    url: String,
    idx: usize,
    ready: mpsc::UnboundedSender<usize>,
    events: mpsc::UnboundedSender<(usize, u64, String, Instant)>,
) {
    let Ok(resp) = client.get(&url).send().await else {
        return;
    };
    let mut body = resp.bytes_stream();
    let mut buf = String::new();
    let mut first = true;
    while let Some(Ok(chunk)) = body.next().await {
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data:")) else {
                continue;
            };
            let at = Instant::now();
            let v: Value = serde_json::from_str(data.trim()).unwrap_or(Value::Null);
            if first {
                first = false;
                let _ = ready.send(idx);
                continue;
            }
            let seq = v["seq"].as_u64().unwrap_or(0);
            let reason = v["reason"].as_str().unwrap_or("").to_owned();
            let _ = events.send((idx, seq, reason, at));
        }
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let base = args
        .get(1)
        .cloned()
        .unwrap_or("http://127.0.0.1:8080".into());
    let map = args.get(2).cloned().unwrap_or("den520d".into());
    let n: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let timeout = Duration::from_secs(args.get(4).and_then(|s| s.parse().ok()).unwrap_or(60));
    let goals: usize = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(0);
    let spread: i64 = args.get(6).and_then(|s| s.parse().ok()).unwrap_or(25);
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();

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
    let c = pick_center(&grid);
    let (cx, cy) = (c.x as i64, c.y as i64);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut pairs = Vec::with_capacity(n);
    let mut goal_set: Vec<Point> = Vec::new();
    let half = (spread / 2).max(1);
    while pairs.len() < n {
        let s = (cx - rng.range(3, spread), cy + rng.range(-half, half));
        let g = match goals {
            0 => (cx + rng.range(3, spread), cy + rng.range(-half, half)),
            _ if goal_set.len() == goals => {
                let p = goal_set[pairs.len() % goals];
                (p.x as i64, p.y as i64)
            }
            _ => (cx + rng.range(3, spread), cy + rng.range(-half, half)),
        };
        let inside = |(x, y): (i64, i64)| {
            x >= 0 && y >= 0 && x < grid.width() as i64 && y < grid.height() as i64
        };
        if !inside(s) || !inside(g) {
            continue;
        }
        let (s, g) = (
            Point::new(s.0 as u32, s.1 as u32),
            Point::new(g.0 as u32, g.1 as u32),
        );
        if grid.is_passable(s)
            && grid.is_passable(g)
            && grid.same_component(s, c)
            && grid.same_component(g, c)
        {
            if goals > 0 && goal_set.len() < goals {
                if !goal_set.contains(&g) {
                    goal_set.push(g);
                }
                continue; // the goals first, then the starts
            }
            pairs.push((s, g));
        }
    }

    // The patch: a 1x9 wall across the column through the centre.
    let rect = Rect {
        x: c.x,
        y: (cy - 4).max(0) as u32,
        width: 1,
        height: 9,
        cost: 0,
    };

    // WALL_BASELINE=K: the same wall PATCHed K times on the map with no subscription (each
    // time opened again to its old costs by a second, untimed PATCH), the baseline the wall
    // with every subscription in place is set beside.
    let wall_baseline: usize = std::env::var("WALL_BASELINE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let wall = json!({"rects": [{"x": rect.x, "y": rect.y, "width": 1, "height": rect.height, "cost": 0}]});
    let reopen: Vec<Value> = (rect.y..rect.y + rect.height)
        .filter(|&y| y < grid.height())
        .map(|y| json!({"x": rect.x, "y": y, "cost": grid.cost(Point::new(rect.x, y))}))
        .collect();
    let reopen = json!({ "cells": reopen });
    if wall_baseline > 0 {
        let took = wall_cycles(&client, &base, &map, &wall, &reopen, wall_baseline, 20).await;
        println!(
            "the wall PATCHed {wall_baseline} times with no subscription: p50 {:.2} ms  max {:.2} ms",
            percentile(&took, 0.5),
            took.last().copied().unwrap_or(f64::NAN)
        );
    }

    // Subscribe (a few requests in flight; the server serializes them per map anyway).
    let t = Instant::now();
    let url = format!("{base}/v1/maps/{map}/subscriptions");
    let subs: Vec<(String, Vec<Point>)> = futures_util::stream::iter(pairs.iter().copied())
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
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        continue;
                    }
                    assert_eq!(
                        r.status(),
                        201,
                        "subscribe failed: {}",
                        r.text().await.unwrap()
                    );
                    let v: Value = r.json().await.unwrap();
                    let path = v["path"].as_array().unwrap().iter().map(pt).collect();
                    return (v["id"].as_str().unwrap().to_owned(), path);
                }
            }
        })
        .buffered(8)
        .collect()
        .await;
    let distinct: HashSet<Point> = pairs.iter().map(|p| p.1).collect();
    println!(
        "subscribed {n} ({} goals) in {:.2?} around {c} on {map}{}",
        distinct.len(),
        t.elapsed(),
        server_rss()
    );

    let next = grid
        .apply_patch(&Patch {
            cells: vec![],
            rects: vec![rect],
        })
        .unwrap()
        .map(|(g, _)| g)
        .unwrap_or(grid.clone());
    let expected: HashSet<usize> = subs
        .iter()
        .enumerate()
        .filter(|(_, (_, p))| !p.is_empty() && next.path_cost(p).is_none())
        .map(|(i, _)| i)
        .collect();

    // Open every stream and wait until each has its first event.
    let (ready_tx, mut ready_rx) = mpsc::unbounded_channel();
    let (ev_tx, mut ev_rx) = mpsc::unbounded_channel();
    let t = Instant::now();
    for (i, (id, _)) in subs.iter().enumerate() {
        let u = format!("{base}/v1/subscriptions/{id}/events");
        tokio::spawn(follow(
            client.clone(),
            u,
            i,
            ready_tx.clone(),
            ev_tx.clone(),
        ));
    }
    drop(ready_tx);
    let mut open = 0;
    while open < subs.len() {
        match tokio::time::timeout(timeout, ready_rx.recv()).await {
            Ok(Some(_)) => open += 1,
            _ => break,
        }
    }
    println!(
        "opened {open} event streams in {:.2?}{}",
        t.elapsed(),
        server_rss()
    );

    // A warm-up patch far from every path (a map's first patch pays for work of its own:
    // the store's first record of it, derived tables taken over), so the patch measured
    // below is a map's everyday patch; it should reach no subscription.
    let far = far_cell(&grid, c);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cpu = server_cpu_ms();
    let t = Instant::now();
    let warm: Value = client
        .patch(format!("{base}/v1/maps/{map}"))
        .json(&json!({"cells": [{"x": far.x, "y": far.y, "cost": grid.cost(far).saturating_add(1).max(2)}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let took = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "warm-up patch at {far} answered in {took:.2} ms: {warm}{}",
        cpu_after(cpu).await
    );
    let cpu = server_cpu_ms();

    let t0 = Instant::now();
    let r = client
        .patch(format!("{base}/v1/maps/{map}"))
        .json(&json!({"rects": [{"x": rect.x, "y": rect.y, "width": 1, "height": rect.height, "cost": 0}]}))
        .send()
        .await
        .unwrap();
    let answered = Instant::now();
    let patch_ms = (answered - t0).as_secs_f64() * 1e3;
    let answer: Value = r.json().await.unwrap();
    let mut got: HashSet<usize> = HashSet::new();
    let mut lat = Vec::new();
    // From the PATCH's answer (an event that came first counts 0).
    let mut lat_answer = Vec::new();
    let mut others = 0usize;
    let deadline = Instant::now() + timeout;
    while !expected.iter().all(|i| got.contains(i)) {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, ev_rx.recv()).await {
            Ok(Some((i, _seq, _reason, at))) => {
                if got.insert(i) {
                    if expected.contains(&i) {
                        lat.push((at - t0).as_secs_f64() * 1e3);
                        lat_answer.push(at.saturating_duration_since(answered).as_secs_f64() * 1e3);
                    } else {
                        others += 1;
                    }
                }
            }
            _ => break,
        }
    }
    lat.sort_by(f64::total_cmp);
    lat_answer.sort_by(f64::total_cmp);
    let missing = expected.iter().filter(|i| !got.contains(i)).count();
    let cpu = cpu_after(cpu).await;
    println!(
        "patch answered in {patch_ms:.2} ms: {answer}\n\
         affected (path no longer legal): {} of {n}; events received by them: {}; missing: {missing}; \
         events to others: {others}\n\
         latency patch-sent -> event-received (ms): p50 {:.2}  p99 {:.2}  max {:.2}\n\
         latency patch-answered -> event-received (ms): p50 {:.2}  p99 {:.2}  max {:.2}{}{cpu}",
        expected.len(),
        lat.len(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat.last().copied().unwrap_or(f64::NAN),
        percentile(&lat_answer, 0.5),
        percentile(&lat_answer, 0.99),
        lat_answer.last().copied().unwrap_or(f64::NAN),
        server_rss(),
    );
    if missing > 0 {
        std::process::exit(1);
    }

    // FAR_PATCHES=K: K more one-cell PATCHes of the far cell (its cost between two
    // values, reaching no subscription), every stream still open: the PATCH's own answer
    // time with the subscriptions in place, to set beside the same PATCH without them.
    let far_patches: usize = std::env::var("FAR_PATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if far_patches > 0 {
        let base_cost = grid.cost(far).saturating_add(1).max(2);
        let mut took = Vec::with_capacity(far_patches);
        for i in 0..far_patches {
            let cost = base_cost.saturating_add((i % 2) as u8);
            let t = Instant::now();
            let r = client
                .patch(format!("{base}/v1/maps/{map}"))
                .json(&json!({"cells": [{"x": far.x, "y": far.y, "cost": cost}]}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
            took.push(t.elapsed().as_secs_f64() * 1e3);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        took.sort_by(f64::total_cmp);
        println!(
            "{far_patches} far one-cell PATCHes with every subscription in place: p50 {:.2} ms  max {:.2} ms",
            percentile(&took, 0.5),
            took.last().copied().unwrap_or(f64::NAN)
        );
    }

    // WALL_AGAIN=K: the wall opened (untimed) and PATCHed again K times with every
    // subscription in place, each after the repairs of the one before had time to settle:
    // the wall's own answer time with the subscriptions, beside WALL_BASELINE's.
    let wall_again: usize = std::env::var("WALL_AGAIN")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if wall_again > 0 {
        // The wall measured above still stands: open it first.
        let r = client
            .patch(format!("{base}/v1/maps/{map}"))
            .json(&reopen)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
        tokio::time::sleep(Duration::from_millis(500)).await;
        let took = wall_cycles(&client, &base, &map, &wall, &reopen, wall_again, 500).await;
        println!(
            "the wall PATCHed {wall_again} more times with every subscription in place: p50 {:.2} ms  max {:.2} ms",
            percentile(&took, 0.5),
            took.last().copied().unwrap_or(f64::NAN)
        );
    }
}

/// `times` rounds of: PATCH `timed` (timed), wait `settle_ms`, PATCH `restore` (untimed),
/// wait `settle_ms`; the timed answers in milliseconds, sorted.
async fn wall_cycles(
    client: &reqwest::Client,
    base: &str,
    map: &str,
    timed: &Value,
    restore: &Value,
    times: usize,
    settle_ms: u64,
) -> Vec<f64> {
    let send = |body: &Value| {
        client
            .patch(format!("{base}/v1/maps/{map}"))
            .json(body)
            .send()
    };
    let mut took = Vec::with_capacity(times);
    for _ in 0..times {
        let t = Instant::now();
        let r = send(timed).await.unwrap();
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
        took.push(t.elapsed().as_secs_f64() * 1e3);
        tokio::time::sleep(Duration::from_millis(settle_ms)).await;
        let r = send(restore).await.unwrap();
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
        tokio::time::sleep(Duration::from_millis(settle_ms)).await;
    }
    took.sort_by(f64::total_cmp);
    took
}
