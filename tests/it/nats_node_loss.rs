//! A NATS node loss under write load (`scripts/nats-node-loss.sh` measures the same): three
//! nats-server nodes (one JetStream cluster, the stream at R=3), three pathd replicas, one
//! writer per replica, and the node leading the stream killed (`kill -9`) midway.
//!
//! A second test runs the same writers without a node loss: the compare-and-set must hold
//! on a cluster (no version acknowledged twice).
//!
//! What must hold: no write fails because of the node loss (a write retries its publish
//! while the cluster elects a new stream leader, `store::nats_publish`); writes stop being
//! acknowledged for at most [`OUTAGE_BOUND`]; no version is given to two writes; and every
//! acknowledged write is on every replica afterwards.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pathd_client::Error;
use serde_json::{Value, json};

use crate::replicas::{Nats, Replica, free_port, nats_server, open_text};

/// nats-server 2.9 elects a new leader of a raft group after an election timeout drawn
/// between 4 and 9 s once the leader stops sending heartbeats; add a reconnect of the
/// client that was on the dead node (well under 1 s on loopback) and slack for two shared
/// cores: writes resume within this (measured: about 5 s).
const OUTAGE_BOUND: Duration = Duration::from_secs(15);

/// The name of the node leading `PATHD_MAPS`, from any node's monitoring endpoint.
async fn stream_leader(monitors: &[u16]) -> Option<String> {
    for port in monitors {
        let Ok(r) = reqwest::get(format!("http://127.0.0.1:{port}/jsz?streams=true")).await else {
            continue;
        };
        let Ok(v) = r.json::<Value>().await else {
            continue;
        };
        for acc in v["account_details"].as_array().into_iter().flatten() {
            for st in acc["stream_detail"].as_array().into_iter().flatten() {
                if st["name"] == "PATHD_MAPS"
                    && let Some(l) = st["cluster"]["leader"].as_str()
                {
                    return Some(l.to_owned());
                }
            }
        }
    }
    None
}

/// One write's answer: when it was acknowledged (since the start), the cell, the version.
type Acked = (Duration, (u32, u32), u64);

/// Three nats-server nodes in one cluster (with their monitoring ports) and three ready
/// replicas on it with the stream at R=3, map `w` (64x64, open) created; `None` without
/// nats-server.
struct World {
    nodes: Vec<Nats>,
    monitors: Vec<u16>,
    replicas: Vec<Arc<Replica>>,
    _tmp: tempfile::TempDir,
}

async fn world() -> Option<World> {
    let bin = nats_server()?;
    let tmp = tempfile::tempdir().unwrap();
    let cluster: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let monitors: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let routes = cluster
        .iter()
        .map(|p| format!("nats://127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",");
    let nodes: Vec<Nats> = (0..3)
        .map(|i| {
            Nats::start(
                &bin,
                &tmp.path().join(format!("js{i}")),
                vec![
                    "-n".into(),
                    format!("n{i}"),
                    "-m".into(),
                    monitors[i].to_string(),
                    "--cluster_name".into(),
                    "pathd".into(),
                    "--cluster".into(),
                    format!("nats://127.0.0.1:{}", cluster[i]),
                    "--routes".into(),
                    routes.clone(),
                ],
            )
        })
        .collect();
    let store = format!(
        "nats://{}",
        nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect::<Vec<_>>()
            .join(",")
    );
    let replicas: Vec<Arc<Replica>> = (0..3)
        .map(|_| {
            Arc::new(Replica::start(
                &store,
                tmp.path(),
                &["--nats-replicas", "3"],
            ))
        })
        .collect();
    for r in &replicas {
        r.ready().await;
    }
    assert!(replicas[0].put("w", &open_text(64, 64)).await.0);

    Some(World {
        nodes,
        monitors,
        replicas,
        _tmp: tmp,
    })
}

/// One writer per replica, each a wall on a cell of its own per write, until stopped: what
/// was acknowledged, and the answers that were neither `200` nor contention.
struct Load {
    t0: Instant,
    acked: Arc<Mutex<Vec<Acked>>>,
    failed: Arc<Mutex<Vec<Value>>>,
    stopping: Arc<std::sync::atomic::AtomicBool>,
    writers: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(replicas: &[Arc<Replica>]) -> Load {
        let t0 = Instant::now();
        let acked: Arc<Mutex<Vec<Acked>>> = Arc::default();
        let failed: Arc<Mutex<Vec<Value>>> = Arc::default();
        let stopping = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut writers = Vec::new();
        for (w, r) in replicas.iter().enumerate() {
            let (r, acked, failed, stopping) = (
                Arc::clone(r),
                Arc::clone(&acked),
                Arc::clone(&failed),
                Arc::clone(&stopping),
            );
            writers.push(tokio::spawn(async move {
                let mut i = 0u32;
                while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
                    let cell = (i % 64, w as u32 * 21 + i / 64);
                    match r.patch_cells("w", &[(cell.0, cell.1, 0)], None).await {
                        Ok(p) => {
                            acked.lock().unwrap().push((t0.elapsed(), cell, p.version));
                            i += 1;
                        }
                        // Another replica wrote first eight times running: contention, not the
                        // node loss; the same cell again.
                        Err(Error::Api {
                            status: 503,
                            message,
                            ..
                        }) if message.starts_with("other replicas kept writing") => {}
                        Err(e) => {
                            failed.lock().unwrap().push(json!({
                                "status": e.status(),
                                "code": e.code(),
                                "answer": e.to_string(),
                                "at": t0.elapsed().as_secs_f64()
                            }));
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                }
            }));
        }

        Load {
            t0,
            acked,
            failed,
            stopping,
            writers,
        }
    }

    /// Stops the writers; returns what was acknowledged and what failed.
    async fn stop(self) -> (Vec<Acked>, Vec<Value>) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::Relaxed);
        for w in self.writers {
            w.await.unwrap();
        }
        let acked = self.acked.lock().unwrap().clone();
        let failed = self.failed.lock().unwrap().clone();
        (acked, failed)
    }
}

/// No version given twice, and every acknowledged wall on every replica.
async fn every_write_once_everywhere(replicas: &[Arc<Replica>], acked: &[Acked]) {
    let versions: HashSet<u64> = acked.iter().map(|(_, _, v)| *v).collect();
    assert_eq!(
        versions.len(),
        acked.len(),
        "a version was given to two writes"
    );
    // No acknowledged write lost: every acknowledged wall is on every replica.
    let last = *versions.iter().max().unwrap();
    for r in replicas {
        let t = Instant::now();
        while r.pathd.get_map("w", Some(last)).await.is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "a replica never caught up"
            );
        }
        let text = r.pathd.get_map_text("w").await.unwrap();
        let rows: Vec<&str> = text.lines().skip(4).collect();
        for (_, (x, y), v) in acked {
            assert_eq!(
                rows[*y as usize].as_bytes()[*x as usize],
                b'@',
                "acknowledged wall at ({x}, {y}), version {v}, missing on {}",
                r.at("")
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_leader_loss_fails_no_write_and_loses_none() {
    let Some(mut world) = world().await else {
        return;
    };
    let load = Load::start(&world.replicas);
    let (t0, acked) = (load.t0, Arc::clone(&load.acked));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let leader = stream_leader(&world.monitors)
        .await
        .expect("the stream has a leader");
    let victim: usize = leader[1..].parse().unwrap();
    let killed_at = t0.elapsed();
    world.nodes[victim].kill();
    // Past the election and then some: writes must be acknowledged again meanwhile.
    let deadline = Instant::now() + OUTAGE_BOUND + Duration::from_secs(3);
    loop {
        let after_kill = acked
            .lock()
            .unwrap()
            .iter()
            .filter(|(at, _, _)| *at > killed_at + Duration::from_secs(1))
            .count();
        if after_kill >= 30 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (acked, failed) = load.stop().await;
    assert!(failed.is_empty(), "writes failed: {failed:#?}");
    // The outage: the longest time without an acknowledged write, from the kill on.
    let mut ends: Vec<Duration> = acked.iter().map(|(at, _, _)| *at).collect();
    ends.sort();
    let from = ends.iter().rposition(|at| *at <= killed_at).unwrap_or(0);
    let outage = ends[from..]
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default();
    eprintln!(
        "killed {leader} at {killed_at:?}; {} writes acknowledged; outage {outage:?}",
        acked.len()
    );
    assert!(
        acked
            .iter()
            .any(|(at, _, _)| *at > killed_at + Duration::from_secs(1)),
        "no write acknowledged after the kill"
    );
    assert!(outage < OUTAGE_BOUND, "writes stopped for {outage:?}");
    every_write_once_everywhere(&world.replicas, &acked).await;
}

/// The compare-and-set on a cluster: writers on one map through three replicas, no node
/// lost. nats-server 2.9 checks the expected subject sequence against what the stream leader
/// has applied, so without the message id two writes on one base were both stored and
/// acknowledged with the same version (`scripts/nats-node-loss.sh KILL=0`: 101 of 1,358).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_through_three_replicas_never_share_a_version() {
    let Some(world) = world().await else {
        return;
    };
    let load = Load::start(&world.replicas);
    let acked = Arc::clone(&load.acked);
    let t = Instant::now();
    while acked.lock().unwrap().len() < 300 && t.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (acked, failed) = load.stop().await;
    assert!(failed.is_empty(), "writes failed: {failed:#?}");
    assert!(
        acked.len() >= 100,
        "only {} writes acknowledged",
        acked.len()
    );
    every_write_once_everywhere(&world.replicas, &acked).await;
}
