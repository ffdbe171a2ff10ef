//! Maps placed across replicas (`--placement 1`): three real pathd replicas sharing one real
//! NATS JetStream behind a real round-robin nginx (both started here, stopped by pid). Each
//! map is held by exactly one replica; every query through the proxy answers as a reference
//! Dijkstra on that map does; a patch through any replica is seen through every one; the
//! holder of maps killed with -9 hands them to the others, no acknowledged write lost.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use crate::common::{next_event, rects_patch};
use crate::lb::{Proxy, members, nginx};
use crate::replicas::{Nats, Replica, api_error, nats_server};
use pathd_client::{MapPatch, PathRequest};

/// Maps and their side (the 30 maps of 1024x1024 are `scripts/placement-bench.sh`).
const N: usize = 9;
const S: usize = 256;

/// A `S x S` map: random blocked cells (about 1 in 5), costs 1 elsewhere.
fn costs(seed: u64) -> Vec<u8> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..S * S)
        .map(|_| if rng.random_range(0..5) == 0 { 0 } else { 1 })
        .collect()
}

fn name(i: usize) -> String {
    format!("placed-{i}")
}

async fn send(req: reqwest::RequestBuilder) -> (u16, reqwest::header::HeaderMap, Value) {
    let r = req.send().await.unwrap();
    let headers = r.headers().clone();
    let (s, v) = crate::common::json(r).await;
    (s, headers, v)
}

fn served_by(h: &reqwest::header::HeaderMap) -> String {
    h.get("x-pathd-replica")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// Per replica id: the maps its `/readyz` says it holds (each replica saying it places
/// every map on `k` replicas).
async fn held(rs: &[&Replica], k: u64) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for r in rs {
        let v = r.pathd.ready().await.unwrap();
        let p = &v["cluster"]["placement"];
        assert_eq!(p["replicas_per_map"], k, "{v}");
        let maps = p["held"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap().to_owned())
            .collect();
        out.insert(v["cluster"]["replica"].as_str().unwrap().to_owned(), maps);
    }
    out
}

/// Waits until each of `names` is held by exactly one of `rs` (and nothing else is held);
/// returns each map's holder.
async fn placed_once(rs: &[&Replica], names: &[String]) -> BTreeMap<String, String> {
    placed(rs, names, 1)
        .await
        .into_iter()
        .map(|(m, h)| (m, h[0].clone()))
        .collect()
}

/// Waits until each of `names` is held by exactly `k` of `rs` (and nothing else is held);
/// returns each map's holders, sorted.
async fn placed(rs: &[&Replica], names: &[String], k: usize) -> BTreeMap<String, Vec<String>> {
    let t = Instant::now();
    loop {
        let by_replica = held(rs, k as u64).await;
        let mut holders: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (r, maps) in &by_replica {
            for m in maps {
                holders.entry(m.clone()).or_default().push(r.clone());
            }
        }
        let settled = holders.len() == names.len()
            && names
                .iter()
                .all(|n| holders.get(n).is_some_and(|h| h.len() == k));
        if settled {
            for h in holders.values_mut() {
                h.sort();
            }
            return holders;
        }
        // A hang guard, not a timing claim (loading maps from the stream on two shared
        // cores).
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "maps never held {k} times each: {by_replica:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Reference A* on `c` (octile moves, no corner cutting, a step costing its length times
/// the mean of its two cells' costs; octile distance as the heuristic, consistent for costs
/// of at least 1): the cost from `start` to `goal`, `inf` when unreachable.
fn astar(c: &[u8], start: (usize, usize), goal: (usize, usize)) -> f64 {
    let open = |x: i64, y: i64| {
        x >= 0 && y >= 0 && x < S as i64 && y < S as i64 && c[y as usize * S + x as usize] != 0
    };
    let h = |i: usize| {
        let (dx, dy) = (
            (i % S).abs_diff(goal.0) as f64,
            (i / S).abs_diff(goal.1) as f64,
        );
        dx.max(dy) + (std::f64::consts::SQRT_2 - 1.0) * dx.min(dy)
    };
    let mut dist = vec![f64::INFINITY; S * S];
    let (si, gi) = (start.1 * S + start.0, goal.1 * S + goal.0);
    dist[si] = 0.0;
    let mut heap = BinaryHeap::from([Reverse((h(si).to_bits(), si))]);
    while let Some(Reverse((_, i))) = heap.pop() {
        if i == gi {
            return dist[gi];
        }
        let g = dist[i];
        let (x, y) = ((i % S) as i64, (i / S) as i64);
        for (dx, dy) in [
            (0, -1),
            (1, 0),
            (0, 1),
            (-1, 0),
            (1, -1),
            (1, 1),
            (-1, 1),
            (-1, -1),
        ] {
            let (nx, ny) = (x + dx, y + dy);
            if !open(nx, ny) || (dx != 0 && dy != 0 && !(open(nx, y) && open(x, ny))) {
                continue;
            }
            let j = ny as usize * S + nx as usize;
            let step = if dx != 0 && dy != 0 {
                std::f64::consts::SQRT_2
            } else {
                1.0
            };
            let d = g + step * (c[i] as f64 + c[j] as f64) / 2.0;
            if d < dist[j] {
                dist[j] = d;
                heap.push(Reverse(((d + h(j)).to_bits(), j)));
            }
        }
    }
    f64::INFINITY
}

/// Start and goal pairs on open cells of `c` that the reference reaches (and one it does
/// not, if the map has one).
fn pairs(c: &[u8], seed: u64) -> Vec<((usize, usize), (usize, usize))> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    while out.len() < 3 {
        let a = (rng.random_range(0..S), rng.random_range(0..S));
        let b = (rng.random_range(0..S), rng.random_range(0..S));
        if c[a.1 * S + a.0] != 0 && c[b.1 * S + b.0] != 0 {
            out.push((a, b));
        }
    }
    out
}

/// Queries `name` through `url_of` for each pair and checks the cost against a reference
/// Dijkstra on `c`; returns the replicas that served them (raw requests: it reads
/// `X-Pathd-Replica`).
async fn check_queries(
    http: &reqwest::Client,
    url: &str,
    c: &[u8],
    seed: u64,
    version: u64,
) -> Vec<String> {
    let mut served = Vec::new();
    for (start, goal) in pairs(c, seed) {
        let want = astar(c, start, goal);
        let (s, h, v) = send(http.post(url).json(&json!({
            "start": [start.0, start.1],
            "goal": [goal.0, goal.1],
            "min_version": version,
        })))
        .await;
        assert_eq!(s, 200, "{url} {v}");
        assert!(v["map_version"].as_u64() >= Some(version), "{v}");
        if want.is_finite() {
            assert_eq!(v["status"], "found", "{url} {start:?}->{goal:?}: {v}");
            let got = v["cost"].as_f64().unwrap();
            assert!(
                (got - want).abs() < 1e-6,
                "{url} {start:?}->{goal:?}: cost {got}, reference {want}"
            );
        } else {
            assert_ne!(v["status"], "found", "{url} {start:?}->{goal:?}: {v}");
        }
        served.push(served_by(&h));
    }
    served
}

/// A wall across column `x` of `c` (rows 0..S-2; the last row open), as a patch body.
fn wall(c: &mut [u8], x: usize) -> MapPatch {
    for y in 0..S - 1 {
        c[y * S + x] = 0;
    }
    rects_patch(&[[x as u32, 0, 1, (S - 1) as u32, 0]])
}

fn metric(text: &str, prefix: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maps_are_placed_once_answer_exactly_through_any_replica_and_move_when_a_holder_dies() {
    let (Some(nats_bin), Some(nginx_bin)) = (nats_server(), nginx()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let nats = Nats::start(&nats_bin, &tmp.path().join("js"), vec![]);
    let mut rs: Vec<Replica> = (0..3)
        .map(|_| Replica::start(&nats.url(), tmp.path(), &["--placement", "1"]))
        .collect();
    for r in &rs {
        r.ready().await;
    }
    members(&rs.iter().collect::<Vec<_>>(), 3).await;
    let ids: Vec<String> = {
        let mut v = Vec::new();
        for r in &rs {
            v.push(
                r.pathd.ready().await.unwrap()["cluster"]["replica"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
        v
    };
    let proxy = Proxy::start(
        &nginx_bin,
        &tmp.path().join("nginx"),
        &rs.iter().map(|r| r.port).collect::<Vec<_>>(),
    );
    let http = reqwest::Client::new();

    // Maps created through the proxy: each answer names the replica that stored it (raw:
    // `X-Pathd-Replica`).
    let names: Vec<String> = (0..N).map(name).collect();
    let mut maps: Vec<Vec<u8>> = (0..N).map(|i| costs(i as u64)).collect();
    let mut versions = [1u64; N];
    for (i, n) in names.iter().enumerate() {
        let (s, h, v) = send(http.put(proxy.at(&format!("/v1/maps/{n}"))).json(&json!({
            "width": S, "height": S, "costs": maps[i], "movement": "octile"
        })))
        .await;
        assert_eq!(s, 201, "{v}");
        assert!(ids.contains(&served_by(&h)), "{h:?}");
    }
    let all: Vec<&Replica> = rs.iter().collect();
    let holder = placed_once(&all, &names).await;

    // Every replica lists every map (the ones held elsewhere from their summaries) and
    // keeps only the summary of the others.
    for r in &rs {
        let listed: Vec<(String, u64, u32)> = (r.pathd.list_maps().await.unwrap().maps)
            .into_iter()
            .map(|m| (m.name, m.version, m.width))
            .collect();
        let want: Vec<(String, u64, u32)> =
            names.iter().map(|n| (n.clone(), 1, S as u32)).collect();
        assert_eq!(listed, want);
        let ready = r.pathd.ready().await.unwrap();
        let p = &ready["cluster"]["placement"];
        let mine = p["held"].as_array().unwrap().len();
        assert_eq!(p["summaries_only"].as_u64(), Some((N - mine) as u64), "{p}");
        assert!(
            p["map_cells"].as_u64() == Some((mine * S * S) as u64),
            "{p}"
        );
    }

    // Queries through the proxy (so through every replica) answer as the reference does,
    // served by the holder; the summary too.
    for (i, n) in names.iter().enumerate() {
        let url = proxy.at(&format!("/v1/maps/{n}/path"));
        for by in check_queries(&http, &url, &maps[i], i as u64, 1).await {
            assert_eq!(&by, &holder[n], "{n} served by its holder");
        }
        for r in &rs {
            // Raw: `X-Pathd-Replica`.
            let (s, h, v) = send(r.client.get(r.at(&format!("/v1/maps/{n}")))).await;
            assert_eq!((s, v["version"].as_u64()), (200, Some(1)), "{v}");
            assert_eq!(served_by(&h), holder[n]);
        }
    }

    // A patch through each replica (held there or not) is seen through every replica.
    for (i, n) in names.iter().enumerate() {
        let r = &rs[i % 3];
        let body = wall(&mut maps[i], 100 + i);
        let v = (r.pathd.patch_map(n, &body).await).unwrap_or_else(|e| panic!("{n}: {e}"));
        versions[i] = v.version;
        assert_eq!(versions[i], 2, "{v:?}");
        for r in &rs {
            let url = r.at(&format!("/v1/maps/{n}/path"));
            check_queries(&http, &url, &maps[i], 100 + i as u64, versions[i]).await;
            // The list of a replica that holds only the summary follows the stream.
            let t = Instant::now();
            loop {
                let list = r.pathd.list_maps().await.unwrap();
                let listed = list.maps.into_iter().find(|m| m.name == *n).unwrap();
                if listed.version == versions[i] {
                    break;
                }
                assert!(t.elapsed() < Duration::from_secs(20), "{listed:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }

    // Flow fields behind the proxy: made by the map's holder (the create is forwarded
    // there), then read, followed, repaired and deleted through any replica. The create and
    // the reads stay raw: they check `X-Pathd-Replica` and `X-Pathd-Forwarded-By`.
    let n = &names[0];
    let goal = (0..64 * 64)
        .map(|i| (i % 64, i / 64))
        .find(|&(x, y)| maps[0][y * S + x] != 0)
        .unwrap();
    let (s, h, v) = send(
        http.post(proxy.at(&format!("/v1/maps/{n}/flowfields")))
            .json(&json!({"goal": [goal.0, goal.1], "region": {"x": 0, "y": 0, "width": 64, "height": 64}})),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(served_by(&h), holder[n]);
    let flow = v["id"].as_str().unwrap().to_owned();
    let secret = v["secret"].as_str().unwrap().to_owned();
    assert!(flow.starts_with(&format!("{}-", holder[n])), "{flow}");
    let flow_url = proxy.at(&format!("/v1/flowfields/{flow}"));
    let mut forwarded = 0;
    for _ in 0..3 {
        let (s, h, v) = send(http.get(&flow_url)).await;
        assert_eq!((s, v["id"].as_str()), (200, Some(flow.as_str())), "{v}");
        assert_eq!(served_by(&h), holder[n]);
        forwarded += h.contains_key("x-pathd-forwarded-by") as usize;
    }
    assert_eq!(
        forwarded, 2,
        "two of three round-robin reads were forwarded"
    );
    let through = crate::common::client_without_retries(&proxy.at(""));
    let mut events = through.flow_field_events(&flow, None);
    assert_eq!(next_event(&mut events).await.reason, "current");
    let v = (through
        .patch_map(n, &rects_patch(&[[0, 32, 63, 1, 0]]))
        .await)
        .unwrap_or_else(|e| panic!("{n}: {e}"));
    for x in 0..63 {
        maps[0][32 * S + x] = 0;
    }
    versions[0] = v.version;
    let ev = next_event(&mut events).await;
    assert!(matches!(ev.reason.as_str(), "changed" | "resync"), "{ev:?}");
    assert_eq!(ev.map_version, versions[0], "{ev:?}");
    // A delete needs the secret (no admin token here: the request has none).
    api_error(
        through.delete_flow_field(&flow, None).await,
        403,
        "forbidden",
    );
    through
        .delete_flow_field(&flow, Some(&secret))
        .await
        .unwrap();
    assert_eq!(next_event(&mut events).await.reason, "deleted");
    for _ in 0..3 {
        api_error(
            through.get_flow_field(&flow).await,
            404,
            "flowfield_not_found",
        );
    }

    // Kill -9 the replica holding the most maps; its maps move to the other two.
    let victim = ids
        .iter()
        .max_by_key(|id| holder.values().filter(|h| h == id).count())
        .unwrap()
        .clone();
    let moved: Vec<usize> = (0..N).filter(|&i| holder[&names[i]] == victim).collect();
    let k = ids.iter().position(|id| *id == victim).unwrap();
    rs[k].kill9();
    let alive: Vec<&Replica> = rs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != k)
        .map(|(_, r)| r)
        .collect();

    // Writes to its maps through the proxy while it is gone: acknowledged ones must last.
    for &i in &moved {
        let n = &names[i];
        let t = Instant::now();
        let expect = versions[i] + 1;
        loop {
            let mut c = maps[i].clone();
            let body = wall(&mut c, 150 + i);
            // Raw: nginx's `502` is asserted too.
            let (s, _, v) = send(http.patch(proxy.at(&format!("/v1/maps/{n}"))).json(&body)).await;
            if s == 200 {
                maps[i] = c;
                versions[i] = v["version"].as_u64().unwrap();
                assert_eq!(versions[i], expect, "{v}");
                break;
            }
            // Until a survivor holds it: `503` with `Retry-After`, or nginx's `502` while
            // it still tries the dead upstream first.
            assert!(matches!(s, 502 | 503), "{n}: {s} {v}");
            if s == 503 {
                assert_eq!(v["error"]["code"], "store_unavailable", "{v}");
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "{n} never writable again: {v}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    members(&alive, 2).await;
    placed_once(&alive, &names).await;
    for (i, n) in names.iter().enumerate() {
        for r in &alive {
            let url = r.at(&format!("/v1/maps/{n}/path"));
            check_queries(&http, &url, &maps[i], 200 + i as u64, versions[i]).await;
            let m = r.pathd.get_map(n, None).await.unwrap();
            assert_eq!(m.version, versions[i], "{m:?}");
        }
    }

    // Signals: the survivors counted the moves and the forwarded requests.
    let mut moves_in = 0.0;
    let mut forwarded = 0.0;
    let mut timed_moves = 0;
    for r in &alive {
        let text = r.pathd.metrics().await.unwrap();
        moves_in += metric(&text, "pathd_placement_moves_total{direction=\"in\"}");
        forwarded += metric(
            &text,
            "pathd_map_forwarded_requests_total{outcome=\"answered\"}",
        );
        // A survivor may have taken none of the dead replica's maps (rendezvous ranking can
        // give all of them to the other one): move durations are counted over the survivors.
        if text.contains("pathd_placement_move_seconds_count") {
            timed_moves += 1;
        }
        let ready = r.pathd.ready().await.unwrap();
        assert!(
            ready["cluster"]["placement"]["derived_bytes"].is_u64(),
            "{ready}"
        );
    }
    assert!(
        moves_in >= moved.len() as f64,
        "{moves_in} < {}",
        moved.len()
    );
    assert!(forwarded >= 1.0, "{forwarded}");
    assert!(timed_moves >= 1, "no survivor timed a move");
    drop(proxy);
    drop(nats);
}

/// The answers a poller found wrong (url, answer or error), and how many queries it sent.
type Polled = (Vec<(String, String)>, usize);

/// Queries every map of `maps` through every url of `bases`, round after round, until
/// `stop`; returns the answers that were not a result with the reference's cost (url,
/// answer or error; no retries) and how many queries were sent.
fn poll_all(
    bases: Vec<String>,
    maps: Vec<(String, Vec<u8>)>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<Polled> {
    tokio::spawn(async move {
        let clients: Vec<(String, pathd_client::Client)> = bases
            .iter()
            .map(|b| {
                let c = crate::common::client_without_retries(b);
                (b.clone(), c)
            })
            .collect();
        let mut bad = Vec::new();
        let mut sent = 0;
        let mut round = 0u64;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            round += 1;
            for (name, c) in &maps {
                let ((sx, sy), (gx, gy)) = pairs(c, round)[0];
                let want = astar(c, (sx, sy), (gx, gy));
                for (base, pathd) in &clients {
                    let q = PathRequest::new([sx as u32, sy as u32], [gx as u32, gy as u32]);
                    sent += 1;
                    let got = pathd.find_path(name, &q).await;
                    let right = got.as_ref().is_ok_and(|v| {
                        if want.is_finite() {
                            (v.cost - want).abs() < 1e-6
                        } else {
                            v.status != "found"
                        }
                    });
                    if !right {
                        bad.push((format!("{base}/v1/maps/{name}/path"), format!("{got:?}")));
                    }
                }
            }
        }
        (bad, sent)
    })
}

/// `--placement 2`: every map on two of three replicas; a fourth replica joining takes
/// maps only from the others' shares (rendezvous hashing moves nothing else) while every
/// map keeps answering exactly through every replica; then a holder killed with -9 leaves
/// every map answering through the survivors, on two holders again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_holders_a_map_a_join_moves_only_the_joiners_share_and_queries_never_stop() {
    let Some(nats_bin) = nats_server() else {
        return;
    };
    const MAPS: usize = 6;
    let tmp = tempfile::tempdir().unwrap();
    let nats = Nats::start(&nats_bin, &tmp.path().join("js"), vec![]);
    let mut rs: Vec<Replica> = (0..3)
        .map(|_| Replica::start(&nats.url(), tmp.path(), &["--placement", "2"]))
        .collect();
    for r in &rs {
        r.ready().await;
    }
    members(&rs.iter().collect::<Vec<_>>(), 3).await;
    let names: Vec<String> = (0..MAPS).map(name).collect();
    let maps: Vec<Vec<u8>> = (0..MAPS).map(|i| costs(50 + i as u64)).collect();
    for (i, n) in names.iter().enumerate() {
        let r = &rs[i % 3];
        let map = json!({"width": S, "height": S, "costs": maps[i], "movement": "octile"});
        let (created, m) = r.pathd.put_map_json(n, &map).await.unwrap();
        assert!(created, "{m:?}");
    }
    let three: Vec<&Replica> = rs.iter().collect();
    let before = placed(&three, &names, 2).await;
    let http = reqwest::Client::new();
    for (i, n) in names.iter().enumerate() {
        for r in &rs {
            let url = r.at(&format!("/v1/maps/{n}/path"));
            check_queries(&http, &url, &maps[i], 300 + i as u64, 1).await;
        }
    }

    // A fourth replica joins while every map is queried through the first three.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let bases: Vec<String> = rs.iter().map(|r| r.at("")).collect();
    let named: Vec<(String, Vec<u8>)> = names.iter().cloned().zip(maps.clone()).collect();
    let poller = poll_all(bases, named.clone(), stop.clone());
    rs.push(Replica::start(
        &nats.url(),
        tmp.path(),
        &["--placement", "2"],
    ));
    rs[3].ready().await;
    let joiner = rs[3].pathd.ready().await.unwrap()["cluster"]["replica"]
        .as_str()
        .unwrap()
        .to_owned();
    let four: Vec<&Replica> = rs.iter().collect();
    members(&four, 4).await;
    let after = placed(&four, &names, 2).await;
    // Let the old holders drop what moved while queries still run.
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (bad, sent) = poller.await.unwrap();
    assert!(sent > 0);
    assert!(
        bad.is_empty(),
        "{} of {sent} answers wrong during the join: {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
    for n in &names {
        let (b, a) = (&before[n], &after[n]);
        if a.contains(&joiner) {
            // The joiner took the place of exactly one old holder; the other stayed.
            assert_eq!(
                a.iter().filter(|h| b.contains(h)).count(),
                1,
                "{n}: {b:?} -> {a:?}"
            );
        } else {
            assert_eq!(a, b, "{n} moved between old replicas when a new one joined");
        }
    }
    for (i, n) in names.iter().enumerate() {
        let url = rs[3].at(&format!("/v1/maps/{n}/path"));
        check_queries(&http, &url, &maps[i], 400 + i as u64, 1).await;
    }

    // Kill -9 a replica holding maps; every map still has a holder, and answers through
    // the survivors (queries that reach the dead one first are the only ones let fail,
    // and only until the membership drops it).
    let mut ids = Vec::new();
    for r in &rs {
        let v = r.pathd.ready().await.unwrap();
        ids.push(v["cluster"]["replica"].as_str().unwrap().to_owned());
    }
    let victim = (0..rs.len())
        .max_by_key(|&i| after.values().filter(|h| h.contains(&ids[i])).count())
        .unwrap();
    let victim_id = ids[victim].clone();
    rs[victim].kill9();
    let alive: Vec<&Replica> = rs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != victim)
        .map(|(_, r)| r)
        .collect();
    members(&alive, 3).await;
    let last = placed(&alive, &names, 2).await;
    for n in &names {
        assert!(!last[n].contains(&victim_id), "{n}: {:?}", last[n]);
        // A map the dead replica did not hold kept its holders.
        if !after[n].contains(&victim_id) {
            assert_eq!(last[n], after[n], "{n}");
        }
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let poller = poll_all(
        alive.iter().map(|r| r.at("")).collect(),
        named,
        stop.clone(),
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (bad, sent) = poller.await.unwrap();
    assert!(sent > 0);
    assert!(
        bad.is_empty(),
        "{} of {sent} answers wrong after the kill: {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
    drop(nats);
}

/// A replica that places maps (`--placement 1`) and was just started: a new map PUT to it
/// as soon as it is ready is created there (placement gives a lone replica every map), not
/// refused `503` while it waits for its membership to settle. (It was: the forwarder checked
/// "a new map placement gives here" once, before its first heartbeat had settled, and then
/// waited for a holder that could only be itself.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_map_put_to_a_replica_that_just_started_is_created() {
    let Some(nats_bin) = nats_server() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let nats = Nats::start(&nats_bin, &tmp.path().join("js"), vec![]);
    let r = Replica::start(&nats.url(), tmp.path(), &["--placement", "1"]);
    r.ready().await;
    let c = costs(7);
    // Raw: the test checks the answer was not forwarded (`X-Pathd-Forwarded-By`).
    let put = r.client.put(r.at("/v1/maps/early")).json(&json!({
        "width": S, "height": S, "costs": c, "movement": "octile"
    }));
    let (s, h, v) = send(put).await;
    assert_eq!(s, 201, "{v}");
    assert!(!h.contains_key("x-pathd-forwarded-by"), "{h:?}");
    placed(&[&r], &["early".to_owned()], 1).await;
    check_queries(&r.client, &r.at("/v1/maps/early/path"), &c, 7, 1).await;
    drop(nats);
}
