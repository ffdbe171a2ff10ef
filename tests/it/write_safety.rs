//! Nothing acknowledged is ever lost: PUT, PATCH and DELETE sent by clients that give up at
//! random moments (some while the write is being made durable), then a graceful restart and
//! a `kill -9` restart of the real binary. Every acknowledged write must be there with its
//! version and cells, no version may be handed out twice, and nothing that was not
//! acknowledged may overwrite what was.
//!
//! Two kinds of maps keep the reference model exact:
//! - `p*` maps only ever get single-cell walls, each on a cell no other patch touches. So in
//!   any state the map's version is its upload's version plus its number of walls, and every
//!   acknowledged wall must be a wall.
//! - `d*` maps get PUT, PATCH and DELETE in any order; a final acknowledged write (the
//!   barrier) fixes a state that must come back exactly after a restart.
//!
//! The server's test-only store delay (`PATHD_TEST_STORE_DELAY_US`) widens the window in
//! which the durable write happens, so that client timeouts land in it often.

use std::collections::{HashMap, HashSet};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use pathd_client::{CellChange, Client, Error, MapPatch};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

const SIDE: u32 = 48;

struct Server {
    child: Child,
    url: String,
}

impl Server {
    async fn start(data: &Path, maps: &Path) -> Server {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_pathd"))
            .env("PATHD_ADDR", format!("127.0.0.1:{port}"))
            .env("PATHD_DATA_DIR", data)
            .env("PATHD_MAPS_DIR", maps)
            .env("PATHD_HPA_MIN_CELLS", "0")
            .env("PATHD_POOL_THREADS", "2")
            .env("PATHD_TEST_STORE_DELAY_US", "3000")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let s = Server {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let pathd = s.pathd();
        for _ in 0..600 {
            if pathd.ready().await.is_ok() {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("server did not become ready");
    }

    /// A client without retries (a write is sent once).
    fn pathd(&self) -> Client {
        let mut c = Client::new(&self.url);
        c.retries = 0;
        c
    }

    /// SIGTERM, then wait for the process (a graceful stop).
    fn stop(mut self) {
        let pid = self.child.id().to_string();
        let ok = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -TERM {pid}");
        let status = self.child.wait().unwrap();
        assert!(status.success(), "graceful stop exited with {status}");
    }

    /// SIGKILL: no chance to finish anything (by pid, so clients may still hold `&self`).
    fn kill(&self) {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-KILL", &pid]).status().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A map of open cells with walls where `walls` says, as a Moving AI file.
fn map_text(walls: &HashSet<(u32, u32)>) -> String {
    let mut t = format!("type octile\nheight {SIDE}\nwidth {SIDE}\nmap\n");
    for y in 0..SIDE {
        for x in 0..SIDE {
            t.push(if walls.contains(&(x, y)) { '@' } else { '.' });
        }
        t.push('\n');
    }
    t
}

/// A map's (version, file text), or None when it does not exist.
async fn state(pathd: &Client, name: &str) -> Option<(u64, String)> {
    let version = match pathd.get_map(name, None).await {
        Err(Error::Api { status: 404, .. }) => return None,
        r => r.unwrap_or_else(|e| panic!("GET {name}: {e}")).version,
    };
    let text = pathd.get_map_text(name).await.unwrap();
    // Nothing writes meanwhile: both reads saw the same version.
    Some((version, text))
}

fn walls_of(text: &str) -> HashSet<(u32, u32)> {
    let rows = text.lines().skip_while(|l| *l != "map").skip(1);
    let mut out = HashSet::new();
    for (y, row) in rows.enumerate() {
        for (x, c) in row.chars().enumerate() {
            if c == '@' {
                out.insert((x as u32, y as u32));
            }
        }
    }
    out
}

/// What the clients were told, per map.
#[derive(Default)]
struct Acked {
    /// Versions acknowledged for writes that made a new version.
    versions: Vec<u64>,
    /// `p*` maps: walls acknowledged.
    walls: HashSet<(u32, u32)>,
}

/// One client per map, sending `ops` writes one after another, each with a random timeout
/// (or none). Returns what was acknowledged.
async fn chaos(
    s: &Server,
    name: &str,
    ops: usize,
    seed: u64,
    free_cells: &mut Vec<(u32, u32)>,
) -> Acked {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut acked = Acked::default();
    let patch_only = name.starts_with('p');
    for _ in 0..ops {
        let mut pathd = s.pathd();
        // Without a timeout: an hour, as good as none here.
        pathd.timeout = if rng.random_bool(0.3) {
            Duration::from_secs(3600)
        } else {
            Duration::from_micros(rng.random_range(200..8000))
        };
        let op = if patch_only {
            0
        } else {
            rng.random_range(0..5)
        };
        // The version a write made, `None` for one that made none (a patch that changed
        // nothing, a delete); a failed send or read is not acknowledged.
        let (answer, wall) = match op {
            // PATCH one cell (p maps: a fresh cell to a wall).
            0..=2 => {
                let (x, y, cost) = if patch_only {
                    let Some(c) = free_cells.pop() else { break };
                    (c.0, c.1, 0)
                } else {
                    (
                        rng.random_range(0..SIDE),
                        rng.random_range(0..SIDE),
                        rng.random_range(0..2),
                    )
                };
                let patch = MapPatch {
                    cells: vec![CellChange { x, y, cost }],
                    ..Default::default()
                };
                let answer = pathd.patch_map(name, &patch).await;
                let made = answer.map(|p| (p.changed_cells == 1).then_some(p.version));
                (made, Some((x, y)))
            }
            3 => {
                let walls: HashSet<_> = (0..rng.random_range(0..40))
                    .map(|_| (rng.random_range(0..SIDE), rng.random_range(0..SIDE)))
                    .collect();
                let answer = pathd.put_map_text(name, &map_text(&walls)).await;
                (answer.map(|(_, summary)| Some(summary.version)), None)
            }
            _ => (pathd.delete_map(name).await.map(|()| None), None),
        };
        match answer {
            Ok(Some(version)) => {
                acked.versions.push(version);
                if patch_only {
                    acked.walls.insert(wall.unwrap());
                }
            }
            Ok(None) => {}
            // Gave up (or the connection went): not acknowledged.
            Err(Error::Timeout | Error::Transport(_)) => {}
            // A patch or a delete of a map a delete removed.
            Err(Error::Api { status: 404, .. }) if op != 3 => {}
            Err(e) => panic!("{name}: op {op} answered {e}"),
        }
    }
    acked
}

async fn put(pathd: &Client, name: &str) -> u64 {
    let (_, summary) = pathd
        .put_map_text(name, &map_text(&HashSet::new()))
        .await
        .unwrap();
    summary.version
}

/// Checks a `p*` map: version = upload version + walls, every acknowledged wall there.
fn check_patch_only(name: &str, base: u64, acked: &Acked, got: &(u64, String)) {
    let walls = walls_of(&got.1);
    let missing: Vec<_> = acked.walls.difference(&walls).collect();
    assert!(
        missing.is_empty(),
        "{name}: acknowledged walls lost: {missing:?}"
    );
    assert_eq!(
        got.0,
        base + walls.len() as u64,
        "{name}: version {} with {} walls over upload version {base}: a version was reused",
        got.0,
        walls.len()
    );
    let mut seen = HashSet::new();
    for v in &acked.versions {
        assert!(seen.insert(*v), "{name}: version {v} acknowledged twice");
        assert!(
            *v <= got.0,
            "{name}: acknowledged {v} but serving {}",
            got.0
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_client_timeouts_and_restarts() {
    let data = tempfile::TempDir::new().unwrap();
    let maps = tempfile::TempDir::new().unwrap();
    let patch_maps = ["p0", "p1", "p2"];
    let mixed_maps = ["d0", "d1", "d2"];
    let mut cells: HashMap<&str, Vec<(u32, u32)>> = HashMap::new();
    let mut rng = StdRng::seed_from_u64(9);
    for name in patch_maps {
        let mut all: Vec<_> = (0..SIDE)
            .flat_map(|y| (0..SIDE).map(move |x| (x, y)))
            .collect();
        all.shuffle(&mut rng);
        cells.insert(name, all);
    }

    let s = Server::start(data.path(), maps.path()).await;
    let pathd = s.pathd();
    let mut base = HashMap::new();
    for name in patch_maps.iter().chain(&mixed_maps) {
        base.insert(*name, put(&pathd, name).await);
    }

    // Phase 1: 6 x 200 writes with random timeouts, all maps at once.
    let mut acked: HashMap<&str, Acked> = HashMap::new();
    {
        let mut tasks = Vec::new();
        for (i, name) in patch_maps.iter().chain(&mixed_maps).enumerate() {
            let mut free = cells.remove(name).unwrap_or_default();
            let s = &s;
            tasks.push(async move {
                let a = chaos(s, name, 200, 100 + i as u64, &mut free).await;
                (*name, a, free)
            });
        }
        for (name, a, free) in futures_util::future::join_all(tasks).await {
            acked.insert(name, a);
            cells.insert(name, free);
        }
    }
    // Let writes whose clients gave up finish, then a barrier: one acknowledged write per
    // mixed map, after which nothing changes.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for name in mixed_maps {
        put(&pathd, name).await;
    }
    let mut before = HashMap::new();
    for name in patch_maps.iter().chain(&mixed_maps) {
        before.insert(*name, state(&pathd, name).await.unwrap());
    }
    for name in patch_maps {
        check_patch_only(name, base[name], &acked[name], &before[name]);
    }

    // Graceful restart: exactly the same state.
    s.stop();
    let s = Server::start(data.path(), maps.path()).await;
    let pathd = s.pathd();
    for name in patch_maps.iter().chain(&mixed_maps) {
        let after = state(&pathd, name).await;
        assert_eq!(
            after.as_ref(),
            Some(&before[name]),
            "{name} after a graceful restart"
        );
    }

    // Phase 2: more writes, and kill -9 while they are still being sent.
    let mut acked2: HashMap<&str, Acked> = HashMap::new();
    {
        let mut tasks = Vec::new();
        for (i, name) in patch_maps.iter().chain(&mixed_maps).enumerate() {
            let mut free = cells.remove(name).unwrap_or_default();
            let s = &s;
            tasks.push(async move {
                let a = chaos(s, name, 120, 200 + i as u64, &mut free).await;
                (*name, a)
            });
        }
        let all = futures_util::future::join_all(tasks);
        tokio::pin!(all);
        // Kill in the middle of the phase, with writes in flight.
        tokio::select! {
            done = &mut all => { for (n, a) in done { acked2.insert(n, a); } }
            _ = tokio::time::sleep(Duration::from_millis(1500)) => {}
        }
        s.kill();
        if acked2.is_empty() {
            for (n, a) in all.await {
                acked2.insert(n, a);
            }
        }
    }
    drop(s);
    let s = Server::start(data.path(), maps.path()).await;
    let pathd = s.pathd();
    for name in patch_maps {
        let mut a = std::mem::take(acked.get_mut(name).unwrap());
        a.walls.extend(&acked2[name].walls);
        a.versions.extend(&acked2[name].versions);
        let got = state(&pathd, name).await.unwrap();
        check_patch_only(name, base[name], &a, &got);
    }
    for name in mixed_maps {
        let max_acked = acked2[name]
            .versions
            .iter()
            .chain(&acked[name].versions)
            .max()
            .copied()
            .unwrap_or(0)
            .max(before[name].0);
        // A mixed map may be deleted by an unacknowledged DELETE; if it is there, it is at
        // least as new as the newest acknowledged version.
        if let Some(got) = state(&pathd, name).await {
            assert!(
                got.0 >= max_acked,
                "{name}: v{} < acked v{max_acked}",
                got.0
            );
        }
        // A new write gets a version never handed out before.
        let v = put(&pathd, name).await;
        assert!(
            v > max_acked,
            "{name}: version {v} reused (acked up to {max_acked})"
        );
    }
}
