//! Several pathd replicas sharing one world through NATS JetStream (`--store nats://...`):
//! real `nats-server` processes with JetStream on loopback ports in temporary directories,
//! and real pathd processes, all stopped by pid.
//!
//! Needs `nats-server` (Debian package `nats-server`; `scripts/test.sh` installs it). Without
//! it these tests say so and pass, except under CI (`CI` set), where they fail.

pub(crate) use crate::common::api_error;
use crate::common::{next_event, rects_patch};

use std::collections::{BTreeMap, HashSet};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pathd_client::{CellChange, Error, MapPatch, PatchResult, PathRequest};
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

pub(crate) fn nats_server() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|d| d.join("nats-server"))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "nats-server is not installed (scripts/test.sh installs it)"
        );
        eprintln!("SKIPPED: nats-server is not installed (apt-get install nats-server)");
    }
    found
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_port(port: u16) {
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "port {port} never opened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One `nats-server -js`, killed on drop.
pub(crate) struct Nats {
    bin: PathBuf,
    pub(crate) port: u16,
    dir: PathBuf,
    extra: Vec<String>,
    child: Option<Child>,
}

impl Nats {
    pub(crate) fn start(bin: &Path, dir: &Path, extra: Vec<String>) -> Nats {
        let mut n = Nats {
            bin: bin.to_owned(),
            port: free_port(),
            dir: dir.to_owned(),
            extra,
            child: None,
        };
        n.restart();
        n
    }

    fn restart(&mut self) {
        let child = Command::new(&self.bin)
            .args([
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-sd",
            ])
            .arg(&self.dir)
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server starts");
        self.child = Some(child);
        wait_port(self.port);
    }

    pub(crate) fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One pathd replica process, killed (-9) on drop.
pub(crate) struct Replica {
    args: Vec<String>,
    pub(crate) port: u16,
    child: Option<Child>,
    /// Raw HTTP, for what the tests check on the wire (forwarding headers, framing).
    pub(crate) client: reqwest::Client,
    /// The Rust client for this replica, without retries: the tests assert the `503`s
    /// (`store_unavailable`, `replica_behind`, `map_damaged`) and retry themselves where
    /// they mean to.
    pub(crate) pathd: pathd_client::Client,
}

impl Replica {
    pub(crate) fn start(store: &str, scratch: &Path, extra: &[&str]) -> Replica {
        let port = free_port();
        let empty = scratch.join("maps");
        std::fs::create_dir_all(&empty).unwrap();
        let mut args: Vec<String> = vec![
            "--addr".into(),
            format!("127.0.0.1:{port}"),
            "--maps-dir".into(),
            empty.display().to_string(),
            "--data-dir".into(),
            scratch.join(format!("data-{port}")).display().to_string(),
            "--store".into(),
            store.into(),
            "--pool-threads".into(),
            "1".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut r = Replica {
            args,
            port,
            child: None,
            client: reqwest::Client::new(),
            pathd: crate::common::client_without_retries(&format!("http://127.0.0.1:{port}")),
        };
        r.restart();
        r
    }

    fn restart(&mut self) {
        // PATHD_REPLICA_LOGS=DIR keeps each replica's log there (debugging).
        let log = match std::env::var_os("PATHD_REPLICA_LOGS") {
            Some(dir) => Stdio::from(
                std::fs::File::create(Path::new(&dir).join(format!("pathd-{}.log", self.port)))
                    .unwrap(),
            ),
            None => Stdio::null(),
        };
        let child = Command::new(env!("CARGO_BIN_EXE_pathd"))
            .args(&self.args)
            .env(
                "RUST_LOG",
                std::env::var("PATHD_REPLICA_LOG_LEVEL").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(log)
            .stderr(Stdio::null())
            .spawn()
            .expect("pathd starts");
        self.child = Some(child);
    }

    /// The process id, while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub(crate) fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub(crate) fn at(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub(crate) async fn ready(&self) -> Value {
        let t = Instant::now();
        loop {
            if let Ok(v) = self.pathd.ready().await {
                return v;
            }
            // A hang guard, not a timing claim: a restarted replica first replays every map
            // from the stream, and the whole suite shares two cores (20 s was once too few).
            assert!(t.elapsed() < Duration::from_secs(60), "replica never ready");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// `PUT` of a Moving AI map that must succeed: whether it was new, and its version.
    pub(crate) async fn put(&self, name: &str, text: &str) -> (bool, u64) {
        let (created, m) = self
            .pathd
            .put_map_text(name, text)
            .await
            .unwrap_or_else(|e| panic!("PUT {name}: {e}"));
        (created, m.version)
    }

    /// `PATCH` of cells `(x, y, cost)`, optionally at `if_version`.
    pub(crate) async fn patch_cells(
        &self,
        name: &str,
        cells: &[(u32, u32, u32)],
        if_version: Option<u64>,
    ) -> Result<PatchResult, Error> {
        self.pathd
            .patch_map(name, &cells_patch(cells, if_version))
            .await
    }

    /// Every map's version and cells (`Accept: text/plain`).
    async fn world(&self) -> BTreeMap<String, (u64, String)> {
        let mut out = BTreeMap::new();
        for m in self.pathd.list_maps().await.unwrap().maps {
            let text = self.pathd.get_map_text(&m.name).await.unwrap();
            out.insert(m.name, (m.version, text));
        }
        out
    }

    pub(crate) async fn store(&self) -> Value {
        self.pathd.ready().await.unwrap()["store"].clone()
    }
}

/// A patch of cells `(x, y, cost)`, optionally at `if_version`.
pub(crate) fn cells_patch(cells: &[(u32, u32, u32)], if_version: Option<u64>) -> MapPatch {
    MapPatch {
        cells: cells
            .iter()
            .map(|&(x, y, cost)| CellChange { x, y, cost })
            .collect(),
        if_version,
        ..Default::default()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A uniform map (`.` and `@` only), `w` x `h`, with a random sprinkle of walls.
fn map_text(w: usize, h: usize, rng: &mut impl Rng) -> String {
    let mut s = format!("type octile\nheight {h}\nwidth {w}\nmap\n");
    for _ in 0..h {
        for _ in 0..w {
            s.push(if rng.random_bool(0.1) { '@' } else { '.' });
        }
        s.push('\n');
    }
    s
}

/// A map of `w` x `h` open cells.
pub(crate) fn open_text(w: usize, h: usize) -> String {
    let mut s = format!("type octile\nheight {h}\nwidth {w}\nmap\n");
    for _ in 0..h {
        s.push_str(&".".repeat(w));
        s.push('\n');
    }
    s
}

/// A NATS server and two ready replicas of it (`None`: no nats-server here).
async fn two_replicas(tmp: &Path) -> Option<(Nats, Replica, Replica)> {
    let nats = Nats::start(&nats_server()?, &tmp.join("js"), vec![]);
    let a = Replica::start(&nats.url(), tmp, &[]);
    let b = Replica::start(&nats.url(), tmp, &[]);
    a.ready().await;
    b.ready().await;
    Some((nats, a, b))
}

/// Waits until every replica has applied the same stream position with no lag.
async fn settle(rs: &[&Replica]) {
    let t = Instant::now();
    loop {
        let mut pos = HashSet::new();
        let mut lag = 0;
        let mut stores = Vec::new();
        for r in rs {
            let s = r.store().await;
            pos.insert(s["applied_position"].as_u64().unwrap_or(0));
            lag += s["lag_messages"].as_u64().unwrap_or(1);
            stores.push(s);
        }
        if pos.len() == 1 && lag == 0 {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "replicas never settled: {pos:?} {stores:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_writes_through_random_replicas_converge() {
    let Some(bin) = nats_server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let nats = Nats::start(&bin, &tmp.path().join("js"), vec![]);
    let rs: Vec<Arc<Replica>> = (0..3)
        .map(|_| Arc::new(Replica::start(&nats.url(), tmp.path(), &[])))
        .collect();
    for r in &rs {
        r.ready().await;
    }
    let names = ["alpha", "beta.v2", "gamma"];
    // Every acknowledged (map, version) of a put or patch: never handed out twice.
    let acked: Arc<Mutex<Vec<(String, u64)>>> = Arc::default();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut tasks = Vec::new();
    for worker in 0..4u64 {
        let (rs, acked) = (rs.clone(), Arc::clone(&acked));
        tasks.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(worker);
            let mut n = 0;
            while Instant::now() < deadline {
                n += 1;
                let r = &rs[rng.random_range(0..rs.len())];
                let name = names[rng.random_range(0..names.len())];
                match rng.random_range(0..10) {
                    0 => {
                        let (_, version) = r.put(name, &map_text(24, 12, &mut rng)).await;
                        acked.lock().unwrap().push((name.into(), version));
                    }
                    1 => {
                        if let Err(e) = r.pathd.delete_map(name).await {
                            assert_eq!(e.code(), Some("map_not_found"), "delete: {e}");
                        }
                    }
                    k => {
                        let (x, y) = (rng.random_range(0..24), rng.random_range(0..12));
                        let cost = u32::from(rng.random_bool(0.5));
                        let mut if_version = None;
                        if k % 2 == 0 {
                            let Ok(m) = r.pathd.get_map(name, None).await else {
                                continue;
                            };
                            if_version = Some(m.version);
                        }
                        let p = match r.patch_cells(name, &[(x, y, cost)], if_version).await {
                            Ok(p) => p,
                            Err(e) => {
                                assert!(
                                    matches!(e.status(), Some(404 | 409)),
                                    "patch (worker {worker}, op {n}): {e}"
                                );
                                continue;
                            }
                        };
                        if p.changed_cells == 1 {
                            acked.lock().unwrap().push((name.into(), p.version));
                            // Read-your-writes through another replica.
                            let other = &rs[rng.random_range(0..rs.len())];
                            match other.pathd.get_map(name, Some(p.version)).await {
                                Ok(m) => assert!(m.version >= p.version, "min_version read: {m:?}"),
                                Err(e) => {
                                    assert_eq!(e.status(), Some(404), "min_version read: {e}")
                                }
                            }
                        }
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let unique: HashSet<_> = acked.iter().cloned().collect();
    assert_eq!(unique.len(), acked.len(), "a version was handed out twice");
    assert!(acked.len() > 20, "too few writes landed: {}", acked.len());

    // Conflicting if_version writes through two replicas: exactly one wins.
    rs[0].put("duel", &open_text(8, 8)).await;
    for round in 0..5u32 {
        let version = rs[1].pathd.get_map("duel", Some(1)).await.unwrap().version;
        let (cell_a, cell_b) = ([(round, 0, 0)], [(round, 1, 0)]);
        let (a, b) = tokio::join!(
            rs[1].patch_cells("duel", &cell_a, Some(version)),
            rs[2].patch_cells("duel", &cell_b, Some(version)),
        );
        let (won, lost) = match (a, b) {
            (Ok(won), lost) | (lost, Ok(won)) => (won, lost),
            (a, b) => panic!("round {round}: neither won: {a:?} {b:?}"),
        };
        api_error(lost, 409, "version_conflict");
        // Both replicas must have applied the winner before the next round reads.
        for r in &rs[1..] {
            r.pathd.get_map("duel", Some(won.version)).await.unwrap();
        }
    }

    let refs: Vec<&Replica> = rs.iter().map(|r| r.as_ref()).collect();
    settle(&refs).await;
    let w0 = rs[0].world().await;
    assert!(w0.contains_key("duel"));
    for r in &rs[1..] {
        assert_eq!(r.world().await, w0, "replicas diverged");
    }
}

/// A replica whose stream consumer the server holds back must still apply every mutation
/// when another map is compacted meanwhile. (nats-server before 2.10.11 moves every
/// consumer past a subject-filtered purge, other subjects' unsent messages included: the
/// replica then skipped map x's patches, served x at version 1 for good, and a write through
/// it could hand out one of x's versions a second time.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_back_replica_misses_nothing_when_another_map_is_compacted() {
    let Some(bin) = nats_server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let nats = Nats::start(&bin, &tmp.path().join("js"), vec![]);
    let a = Replica::start(&nats.url(), tmp.path(), &[]);
    // B takes 300 ms over each mutation it reads, and the server sends it one at a time:
    // the server's side of B's feed lags behind the stream.
    let b = Replica::start(
        &nats.url(),
        tmp.path(),
        &[
            "--test-apply-delay-ms",
            "300",
            "--test-feed-window",
            "1",
            "--max-wait-ms",
            "30000",
        ],
    );
    a.ready().await;
    b.ready().await;
    // Stream sequences 1-6: x v1, y v1, x v2-v4, y v2. y's second version compacts y (a
    // purge of its subject below it), which removes sequence 2 and moves B's reader to 6:
    // B must find x's patches behind a message that is gone.
    assert!(a.put("x", &open_text(8, 8)).await.0);
    assert!(a.put("y", &open_text(4, 4)).await.0);
    for i in 0..3 {
        a.patch_cells("x", &[(i, 0, 0)], None).await.unwrap();
    }
    assert!(!a.put("y", &open_text(5, 5)).await.0);

    assert_eq!(b.pathd.get_map("x", Some(4)).await.unwrap().version, 4);
    settle(&[&a, &b]).await;
    assert_eq!(b.world().await, a.world().await, "replicas diverged");
    // Writes through B go on from where A left x.
    let p = b.patch_cells("x", &[(7, 7, 0)], None).await.unwrap();
    assert_eq!(p.version, 5);
}

/// A mutation a replica cannot apply (here: a patch whose base version the stream does not
/// hold) marks its map damaged there, instead of serving the older version as if current
/// while writes go on from the newer one; a whole map written afterwards repairs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutation_without_its_base_marks_the_map_damaged_until_a_whole_map_arrives() {
    let tmp = tempfile::tempdir().unwrap();
    let Some((nats, a, b)) = two_replicas(tmp.path()).await else {
        return;
    };
    assert!(a.put("x", &open_text(8, 8)).await.0);
    settle(&[&a, &b]).await;

    // Version 5 of x, a patch of one cell, straight into the stream: versions 2-4 are not
    // there to apply it to.
    let client = async_nats::connect(nats.url()).await.unwrap();
    let js = async_nats::jetstream::new(client);
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Pathd-Op", "patch");
    headers.insert("Pathd-Version", "5");
    headers.insert("Pathd-Cells", "13");
    let mut cells = 1u32.to_le_bytes().to_vec();
    cells.extend_from_slice(&3u32.to_le_bytes());
    cells.extend_from_slice(&3u32.to_le_bytes());
    cells.push(0);
    js.publish_with_headers("pathd.maps.x", headers, cells.into())
        .await
        .unwrap()
        .await
        .unwrap();
    settle(&[&a, &b]).await;
    for r in [&a, &b] {
        api_error(r.pathd.get_map("x", None).await, 503, "map_damaged");
        let list = r.pathd.list_maps().await.unwrap();
        assert!(list.maps.iter().all(|m| m.name != "x"), "{list:?}");
        api_error(
            r.patch_cells("x", &[(1, 1, 0)], None).await,
            503,
            "map_damaged",
        );
    }
    // A whole map through B repairs x everywhere, past the version it could not apply.
    assert_eq!(b.put("x", &open_text(6, 6)).await, (true, 6));
    settle(&[&a, &b]).await;
    let world = a.world().await;
    assert_eq!(world["x"].0, 6);
    assert_eq!(b.world().await, world, "replicas diverged");

    // A message nobody can read (an operation pathd does not know) damages x the same way.
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Pathd-Op", "transmogrify");
    headers.insert("Pathd-Version", "7");
    js.publish_with_headers("pathd.maps.x", headers, Vec::new().into())
        .await
        .unwrap()
        .await
        .unwrap();
    settle(&[&a, &b]).await;
    for r in [&a, &b] {
        let message = api_error(r.pathd.get_map("x", None).await, 503, "map_damaged");
        assert!(
            message.contains("transmogrify") && message.contains("PUT"),
            "{message}"
        );
    }
    assert_eq!(a.put("x", &open_text(7, 7)).await, (true, 8));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscription_on_b_is_repaired_by_a_patch_through_a() {
    let tmp = tempfile::tempdir().unwrap();
    let Some((_nats, a, b)) = two_replicas(tmp.path()).await else {
        return;
    };
    // 60x20 open map.
    assert!(a.put("open", &open_text(60, 20)).await.0);
    let q = PathRequest {
        min_version: Some(1),
        ..PathRequest::new([2, 3], [57, 3])
    };
    let sub = b.pathd.create_subscription("open", &q).await.unwrap();
    let mut events = b.pathd.subscription_events(&sub.id, None);
    assert_eq!(next_event(&mut events).await.reason, "initial");
    // A wall across the path, written through A.
    let wall = rects_patch(&[[30, 0, 1, 9, 0]]);
    let p = a.pathd.patch_map("open", &wall).await.unwrap();
    assert_eq!(p.version, 2, "{p:?}");
    let ev = next_event(&mut events).await;
    assert_eq!(ev.reason, "blocked", "{ev:?}");
    assert_eq!(ev.map_version, 2);
    assert_eq!((ev.seq, events.last_frame_id.as_deref()), (2, Some("2")));

    // A map body above NATS's message size (1 MiB) goes through the object store.
    let mut big = String::from("type octile\nheight 1000\nwidth 1100\nmap\n");
    for y in 0..1000 {
        for x in 0..1100 {
            big.push(if (x * 7 + y * 13) % 31 == 0 { '@' } else { '.' });
        }
        big.push('\n');
    }
    assert!(a.put("big", &big).await.0);
    // A megabyte through the object store and a 1.1M-cell build can take B longer than one
    // `min_version` wait on a loaded machine: `503 replica_behind` is the documented answer
    // then, and a client asks again (here by hand: B's client does not retry).
    let mut got = b.pathd.get_map("big", Some(1)).await;
    for _ in 0..20 {
        match got {
            Err(e) if e.status() == Some(503) => {
                assert_eq!(e.code(), Some("replica_behind"), "{e}");
                got = b.pathd.get_map("big", Some(1)).await;
            }
            _ => break,
        }
    }
    assert_eq!(got.unwrap().width, 1100);
    assert_eq!(b.pathd.get_map_text("big").await.unwrap(), big);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_version_waits_then_times_out_with_replica_behind() {
    let Some(bin) = nats_server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let nats = Nats::start(&bin, &tmp.path().join("js"), vec![]);
    let a = Replica::start(&nats.url(), tmp.path(), &[]);
    let b = Replica::start(&nats.url(), tmp.path(), &["--max-wait-ms", "400"]);
    a.ready().await;
    b.ready().await;
    assert!(a.put("m", &open_text(16, 16)).await.0);

    // Too new: answered after the bounded wait.
    let t = Instant::now();
    let r = b.pathd.get_map("m", Some(9)).await;
    let waited = t.elapsed();
    assert!(
        matches!(
            &r,
            Err(Error::Api {
                retry_after: Some(_),
                ..
            })
        ),
        "no Retry-After: {r:?}"
    );
    api_error(r, 503, "replica_behind");
    assert!(
        waited >= Duration::from_millis(380) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    let q = PathRequest {
        min_version: Some(9),
        ..PathRequest::new([0, 0], [1, 1])
    };
    api_error(b.pathd.find_path("m", &q).await, 503, "replica_behind");
    let batch = pathd_client::BatchRequest {
        queries: vec![],
        min_version: Some(9),
    };
    api_error(
        b.pathd.find_paths_with("m", &batch).await,
        503,
        "replica_behind",
    );

    // A wait that a write through A ends: answered as soon as B applied it.
    let waiting = tokio::spawn({
        let pathd = b.pathd.clone();
        async move { pathd.get_map("m", Some(2)).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    a.patch_cells("m", &[(0, 0, 0)], None).await.unwrap();
    assert_eq!(waiting.await.unwrap().unwrap().version, 2);
    // An old version is there at once.
    b.pathd.get_map("m", Some(1)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_replica_catches_up_and_nats_outage_fails_writes_fast() {
    let Some(bin) = nats_server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut nats = Nats::start(&bin, &tmp.path().join("js"), vec![]);
    let a = Replica::start(&nats.url(), tmp.path(), &[]);
    let mut b = Replica::start(&nats.url(), tmp.path(), &[]);
    a.ready().await;
    b.ready().await;
    assert!(a.put("w", &open_text(32, 32)).await.0);

    // A stream of writes through A; B is killed -9 in the middle and restarted.
    let mut last = 1;
    for i in 0..60u32 {
        if i == 20 {
            b.kill9();
        }
        if i == 40 {
            b.restart();
        }
        let p = a
            .patch_cells("w", &[(i % 32, i / 32, i % 2)], None)
            .await
            .unwrap();
        last = p.version.max(last);
    }
    b.ready().await;
    assert_eq!(
        b.pathd.get_map("w", Some(last)).await.unwrap().version,
        last
    );
    settle(&[&a, &b]).await;
    assert_eq!(a.world().await, b.world().await);

    // NATS down: writes fail fast with 503 store_unavailable; queries are still answered.
    nats.kill();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = Instant::now();
    api_error(
        a.patch_cells("w", &[(5, 5, 0)], None).await,
        503,
        "store_unavailable",
    );
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    let put = b
        .pathd
        .put_map_text("new", &map_text(8, 8, &mut rand::rng()))
        .await;
    assert_eq!(put.unwrap_err().status(), Some(503));
    for r in [&a, &b] {
        let q = PathRequest::new([31, 31], [30, 30]);
        r.pathd.find_path("w", &q).await.unwrap();
        assert_eq!(r.pathd.get_map("w", None).await.unwrap().version, last);
        let st = r.store().await;
        assert_eq!(st["connected"], false, "{st}");
    }

    // NATS back: the replicas reconnect by themselves and writes work again.
    nats.restart();
    let t = Instant::now();
    let p = loop {
        match b.patch_cells("w", &[(6, 6, 0)], None).await {
            Ok(p) => break p,
            Err(e) => assert!(
                t.elapsed() < Duration::from_secs(20),
                "writes never resumed: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let version = p.version;
    assert_eq!(version, last + 1, "{p:?}");
    // A caught up too (its consumer is re-created once the connection is back).
    let t = Instant::now();
    while let Err(e) = a.pathd.get_map("w", Some(version)).await {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "A never caught up: {e}"
        );
    }
    settle(&[&a, &b]).await;
    assert_eq!(a.world().await, b.world().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_node_cluster_keeps_acknowledged_writes_when_a_node_dies() {
    let Some(bin) = nats_server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let cluster: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let routes = cluster
        .iter()
        .map(|p| format!("nats://127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut nodes: Vec<Nats> = (0..3)
        .map(|i| {
            Nats::start(
                &bin,
                &tmp.path().join(format!("js{i}")),
                vec![
                    "-n".into(),
                    format!("n{i}"),
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
    let a = Replica::start(&store, tmp.path(), &["--nats-replicas", "3"]);
    let b = Replica::start(&store, tmp.path(), &["--nats-replicas", "3"]);
    a.ready().await;
    b.ready().await;
    assert!(a.put("c", &open_text(40, 40)).await.0);
    // Walls, one new cell per write, through A and B in turn; a NATS node dies midway.
    let mut acked = Vec::new();
    for i in 0..40u32 {
        if i == 15 {
            nodes[2].kill();
        }
        let r = if i % 2 == 0 { &a } else { &b };
        let cell = (i % 40, 1 + i / 40);
        let t = Instant::now();
        loop {
            let e = match r.patch_cells("c", &[(cell.0, cell.1, 0)], None).await {
                Ok(p) => {
                    acked.push((cell, p.version));
                    break;
                }
                Err(e) => e,
            };
            assert_eq!(e.status(), Some(503), "write {i}: unexpected {e}");
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "writes never resumed: {e}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let versions: HashSet<u64> = acked.iter().map(|(_, v)| *v).collect();
    assert_eq!(
        versions.len(),
        acked.len(),
        "a version was handed out twice"
    );
    let last = acked.iter().map(|(_, v)| *v).max().unwrap();
    for r in [&a, &b] {
        let t = Instant::now();
        while r.pathd.get_map("c", Some(last)).await.is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(15),
                "a replica never caught up"
            );
        }
    }
    let (wa, wb) = (a.world().await, b.world().await);
    assert_eq!(wa, wb);
    let (version, text) = &wa["c"];
    assert_eq!(*version, last);
    let rows: Vec<&str> = text.lines().skip(4).collect();
    for ((x, y), _) in &acked {
        assert_eq!(
            rows[*y as usize].as_bytes()[*x as usize],
            b'@',
            "acknowledged wall at ({x}, {y}) missing"
        );
    }
}

/// `maps[name]` of a replica's `/readyz` store status.
fn map_lag<'a>(store: &'a Value, name: &str) -> Option<&'a Value> {
    store["maps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lag_is_reported_per_map_in_versions_and_seconds() {
    let Some(bin) = nats_server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let nats = Nats::start(&bin, &tmp.path().join("js"), vec![]);
    let a = Replica::start(&nats.url(), tmp.path(), &[]);
    // B applies each replicated mutation 600 ms after reading it: it lags on purpose.
    let b = Replica::start(&nats.url(), tmp.path(), &["--test-apply-delay-ms", "600"]);
    a.ready().await;
    b.ready().await;
    assert!(a.put("m", &open_text(8, 8)).await.0);
    for i in 0..3 {
        a.patch_cells("m", &[(i, 0, 0)], None).await.unwrap();
    }
    assert!(a.put("n", &open_text(4, 4)).await.0);

    // While B works through m's versions 1..=4 and n's 1, it reports what it has not
    // applied, per map, in versions and seconds; the sum is the total.
    let t = Instant::now();
    let mut lagging_seen = false;
    loop {
        let s = b.store().await;
        let mut sum = 0;
        for m in s["maps"].as_array().unwrap() {
            let (stream, applied) = (
                m["stream_version"].as_u64().unwrap(),
                m["applied_version"].as_u64().unwrap(),
            );
            assert_eq!(m["lag_versions"].as_u64(), Some(stream - applied), "{s}");
            sum += stream - applied;
        }
        assert_eq!(s["lag_versions"].as_u64(), Some(sum), "{s}");
        if let Some(m) = map_lag(&s, "m")
            && m["stream_version"] == 4
            && m["applied_version"].as_u64().unwrap() < 4
        {
            if !lagging_seen {
                let body = b.pathd.ready().await.unwrap();
                crate::openapi::assert_get_200_matches("/readyz", &body);
                assert!(m["lag_seconds"].as_f64().unwrap() > 0.0, "{s}");
                assert!(s["lag_seconds"].as_f64().unwrap() > 0.0, "{s}");
                let metrics = b.pathd.metrics().await.unwrap();
                let line = metrics
                    .lines()
                    .find(|l| l.starts_with("pathd_replication_map_lag_versions{map=\"m\"}"))
                    .unwrap_or_else(|| panic!("no per-map lag gauge:\n{metrics}"));
                let v: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
                assert!(v >= 1.0, "{line}");
                assert!(metrics.contains("# HELP pathd_replication_map_lag_versions"));
            }
            lagging_seen = true;
        }
        let caught_up = map_lag(&s, "m").is_some_and(|m| m["applied_version"] == 4)
            && map_lag(&s, "n").is_some_and(|m| m["applied_version"] == 1);
        if caught_up && s["lag_versions"] == 0 {
            assert_eq!(s["lag_seconds"].as_f64(), Some(0.0), "{s}");
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "B never caught up: {s}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(lagging_seen, "B never reported m's lag");

    // A wrote everything: no lag there. A replica started now reads each map's newest
    // version from the stream's last message per map.
    let c = Replica::start(&nats.url(), tmp.path(), &[]);
    for r in [&a, &c] {
        r.ready().await;
        let t = Instant::now();
        loop {
            let s = r.store().await;
            let ok = map_lag(&s, "m").is_some_and(|m| {
                m["stream_version"] == 4 && m["applied_version"] == 4 && m["lag_versions"] == 0
            }) && map_lag(&s, "n").is_some_and(|m| m["stream_version"] == 1);
            if ok && s["lag_versions"] == 0 {
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(10), "{s}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // A deleted map leaves the list once the deletion is applied.
    a.pathd.delete_map("n").await.unwrap();
    let t = Instant::now();
    while map_lag(&c.store().await, "n").is_some() {
        assert!(t.elapsed() < Duration::from_secs(10), "n still listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// SIGTERM while NATS has never been reachable, so startup recovery is still retrying: the
/// server stops promptly and cleanly. (The recovery thread used to panic when the runtime
/// went away under its retry timer: "A Tokio 1.x context was found, but it is being
/// shutdown".)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_while_nats_was_never_reachable_is_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let nobody = free_port(); // nothing listens there
    let port = free_port();
    let maps = tmp.path().join("maps");
    std::fs::create_dir_all(&maps).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_pathd"))
        .args(["--addr", &format!("127.0.0.1:{port}")])
        .arg("--maps-dir")
        .arg(&maps)
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .args(["--store", &format!("nats://127.0.0.1:{nobody}")])
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pathd starts");
    wait_port(port);
    // Recovery is waiting for the store: the replica is not ready.
    let pathd = crate::common::client_without_retries(&format!("http://127.0.0.1:{port}"));
    api_error(pathd.ready().await, 503, "not_ready");
    tokio::time::sleep(Duration::from_millis(700)).await;
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let t = Instant::now();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?} to stop",
        t.elapsed()
    );
    assert!(!log.contains("panicked"), "{log}");
    assert!(log.contains("server stopped"), "{log}");
    assert!(out.status.success(), "{:?}\n{log}", out.status);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_boat_subscription_on_b_follows_water_patched_through_a_and_not_ground() {
    let tmp = tempfile::tempdir().unwrap();
    let Some((_nats, a, b)) = two_replicas(tmp.path()).await else {
        return;
    };
    // A lake (columns 2..18 of rows 2..10) in a field; the boat profile added by a patch
    // (stored as the whole map), the boat subscribed on B.
    let mut text = String::from("type octile\nheight 12\nwidth 20\nmap\n");
    for y in 0..12 {
        for x in 0..20 {
            let water = (2..18).contains(&x) && (2..10).contains(&y);
            text.push(if water { 'W' } else { '.' });
        }
        text.push('\n');
    }
    assert!(a.put("lake", &text).await.0);
    let mut profiles = serde_json::Map::new();
    profiles.insert("boat".into(), json!({"W": 1}));
    let boat = MapPatch {
        profiles: Some(profiles),
        ..Default::default()
    };
    let p = a.pathd.patch_map("lake", &boat).await.unwrap();
    assert_eq!(p.version, 2, "{p:?}");
    let q = PathRequest {
        profile: Some("boat".into()),
        min_version: Some(2),
        ..PathRequest::new([2, 5], [17, 5])
    };
    let sub = b.pathd.create_subscription("lake", &q).await.unwrap();
    assert_eq!(sub.profile.as_deref(), Some("boat"), "{sub:?}");
    assert!((sub.cost - 15.0).abs() < 1e-9, "{sub:?}");
    let mut events = b.pathd.subscription_events(&sub.id, None);
    assert_eq!(next_event(&mut events).await.reason, "initial");
    // Ground-only changes through A (versions 3 and 4): trees along the shore.
    for y in [1, 10] {
        let trees = rects_patch(&[[0, y, 20, 1, u32::from(b'T')]]);
        a.pathd.patch_map("lake", &trees).await.unwrap();
    }
    // Water on the boat's path becomes land (version 5): the next event is this one.
    let land = rects_patch(&[[9, 3, 1, 5, u32::from(b'.')]]);
    let p = a.pathd.patch_map("lake", &land).await.unwrap();
    assert_eq!(p.version, 5, "{p:?}");
    let ev = next_event(&mut events).await;
    assert_eq!(
        (ev.seq, ev.map_version),
        (2, 5),
        "no event for the ground-only patches: {ev:?}"
    );
    assert!(ev.cost > 15.0, "{ev:?}");
}
