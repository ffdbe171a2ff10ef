//! A real pathd server on 127.0.0.1:0 for the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use pathd::{AppState, Config};
use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A Moving AI file or scenario (`maps/NAME.map`, `scen/NAME.map.scen`) of the benchmark
/// set: `PATHD_BENCHMARKS` when set and not empty, else `../shared/benchmarks/movingai`
/// beside the repository when it exists (the full set), else the subset carried in
/// `tests/data/movingai` (see its README).
pub fn bench(rel: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = match std::env::var_os("PATHD_BENCHMARKS").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None if root.join("../shared/benchmarks/movingai").is_dir() => {
            root.join("../shared/benchmarks/movingai")
        }
        None => root.join("tests/data/movingai"),
    };
    dir.join(rel)
}

/// A small test map: 5x3, a wall at x=2 except the bottom row.
pub const SMALL_MAP: &str = "type octile\nheight 3\nwidth 5\nmap\n..@..\n..@..\n.....\n";

/// A running server and the temp directories it owns.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Its state (pool stats, registry).
    pub state: AppState,
    /// An HTTP client.
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<std::io::Result<()>>>,
    /// Kept alive for the server's lifetime.
    pub dirs: Dirs,
}

/// The maps and data directories of a test server.
pub struct Dirs {
    /// Bundled maps (may be empty).
    pub maps: PathBuf,
    /// Data directory.
    pub data: PathBuf,
    _tmp: Option<std::sync::Arc<TempDir>>,
}

impl Dirs {
    /// Fresh empty directories.
    pub fn new() -> Self {
        let tmp = TempDir::new().unwrap();
        let maps = tmp.path().join("maps");
        let data = tmp.path().join("data");
        std::fs::create_dir_all(&maps).unwrap();
        Dirs {
            maps,
            data,
            _tmp: Some(std::sync::Arc::new(tmp)),
        }
    }

    /// The same directories (for a restart).
    pub fn share(&self) -> Self {
        Dirs {
            maps: self.maps.clone(),
            data: self.data.clone(),
            _tmp: self._tmp.clone(),
        }
    }

    /// Copies a benchmark map into the maps directory.
    pub fn bundle(&self, map: &str) {
        std::fs::copy(
            bench(&format!("maps/{map}.map")),
            self.maps.join(format!("{map}.map")),
        )
        .unwrap();
    }

    /// A config for these directories with a small pool.
    pub fn config(&self) -> Config {
        let mut c = Config::with_dirs(&self.maps, &self.data);
        c.pool_threads = 2;
        c.queue_depth = 16;
        c.shutdown_grace_ms = 5_000;
        c
    }
}

impl Default for Dirs {
    fn default() -> Self {
        Self::new()
    }
}

impl TestServer {
    /// A server with default test config in fresh directories.
    pub async fn new() -> Self {
        let dirs = Dirs::new();
        let config = dirs.config();
        Self::start(dirs, config).await
    }

    /// Starts a server and waits until it is ready.
    pub async fn start(dirs: Dirs, config: Config) -> Self {
        let state = AppState::new(config).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = oneshot::channel::<()>();
        let handle = tokio::spawn(pathd::run(listener, state.clone(), async move {
            let _ = rx.await;
        }));
        let server = TestServer {
            url,
            state,
            client: reqwest::Client::new(),
            stop: Some(tx),
            handle: Some(handle),
            dirs,
        };
        server.wait_ready().await;
        server
    }

    /// Polls until the startup maps are loaded (fails after 60 s).
    pub async fn wait_ready(&self) {
        wait_until("server ready", || self.state.is_ready()).await;
    }

    /// Sends the shutdown signal without waiting.
    pub fn signal_stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }

    /// Stops the server and waits for `run` to return.
    pub async fn stop(mut self) -> std::io::Result<()> {
        self.signal_stop();
        let handle = self.handle.take().unwrap();
        tokio::time::timeout(Duration::from_secs(60), handle)
            .await
            .expect("run returned")
            .unwrap()
    }

    /// Full URL of `path`.
    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// The Rust client (`clients/rust`) for this server: the tests call it wherever they
    /// only need an operation's answer, not its HTTP details.
    pub fn pathd(&self) -> pathd_client::Client {
        pathd_client::Client::new(&self.url)
    }

    /// `PUT /v1/maps/{name}` with a Moving AI text body.
    pub async fn put_text(&self, name: &str, text: &str) -> reqwest::Response {
        put_map_text(&self.client, self.at(&format!("/v1/maps/{name}")), text).await
    }

    /// `PUT /v1/maps/{name}` with a JSON body.
    pub async fn put_json(&self, name: &str, body: &Value) -> reqwest::Response {
        self.client
            .put(self.at(&format!("/v1/maps/{name}")))
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// `POST /v1/maps/{name}/path`.
    pub async fn path(&self, name: &str, body: &Value) -> reqwest::Response {
        self.client
            .post(self.at(&format!("/v1/maps/{name}/path")))
            .json(body)
            .send()
            .await
            .unwrap()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.signal_stop();
    }
}

// Helpers for the tests that call the Rust client (`TestServer::pathd`).
impl TestServer {
    /// The client without retries: for the tests that assert a `503` (which the client
    /// would otherwise retry when it carries `Retry-After`).
    pub fn pathd_once(&self) -> pathd_client::Client {
        client_without_retries(&self.url)
    }

    /// Uploads a Moving AI map through the client and asserts that it was new (`201`).
    pub async fn upload(&self, name: &str, text: &str) -> pathd_client::MapSummary {
        let (created, summary) = self.pathd().put_map_text(name, text).await.unwrap();
        assert!(created, "{name} was not new");
        summary
    }

    /// Patches a map through the client; the answer, which must be a success.
    pub async fn patch_ok(
        &self,
        name: &str,
        patch: &pathd_client::MapPatch,
    ) -> pathd_client::PatchResult {
        (self.pathd().patch_map(name, patch).await)
            .unwrap_or_else(|e| panic!("patch of {name}: {e}"))
    }

    /// Replaces a map with a JSON map through the client and asserts that it was not new.
    pub async fn replace_json(&self, name: &str, map: &Value) -> pathd_client::MapSummary {
        let (created, summary) = self.pathd().put_map_json(name, map).await.unwrap();
        assert!(!created, "{name} was new");
        summary
    }

    /// Uploads a JSON map (costs or rows) through the client and asserts that it was new.
    pub async fn upload_json(&self, name: &str, map: &Value) -> pathd_client::MapSummary {
        let (created, summary) = self.pathd().put_map_json(name, map).await.unwrap();
        assert!(created, "{name} was not new");
        summary
    }
}

/// Asserts that a client call answered an error with this status and stable code (and a
/// message); returns the message.
#[track_caller]
pub fn api_error<T: std::fmt::Debug>(
    r: Result<T, pathd_client::Error>,
    status: u16,
    code: &str,
) -> String {
    match r {
        Err(pathd_client::Error::Api {
            status: s,
            code: c,
            message,
            ..
        }) => {
            assert_eq!((s, c.as_str()), (status, code), "{message}");
            assert!(!message.is_empty(), "{status} {code} without a message");
            message
        }
        other => panic!("expected {status} {code}, got {other:?}"),
    }
}

/// The engine's points of a client answer's path.
pub fn cells(path: &[pathd_client::Point]) -> Vec<pathd_engine::Point> {
    path.iter()
        .map(|p| pathd_engine::Point::new(p[0], p[1]))
        .collect()
}

/// A patch of rectangles `[x, y, width, height, cost]`, in order.
pub fn rects_patch(rects: &[[u32; 5]]) -> pathd_client::MapPatch {
    pathd_client::MapPatch {
        rects: (rects.iter())
            .map(|&[x, y, width, height, cost]| pathd_client::RectChange {
                x,
                y,
                width,
                height,
                cost,
            })
            .collect(),
        ..Default::default()
    }
}

/// A patch of cells `(x, y, cost)`, in order.
pub fn cells_patch(cells: &[(u32, u32, u32)]) -> pathd_client::MapPatch {
    pathd_client::MapPatch {
        cells: (cells.iter())
            .map(|&(x, y, cost)| pathd_client::CellChange { x, y, cost })
            .collect(),
        ..Default::default()
    }
}

/// A path query with an algorithm.
pub fn query(start: [u32; 2], goal: [u32; 2], algorithm: &str) -> pathd_client::PathRequest {
    pathd_client::PathRequest {
        algorithm: Some(algorithm.to_owned()),
        ..pathd_client::PathRequest::new(start, goal)
    }
}

/// Polls `cond` (every 5 ms) until it holds; panics after 60 s. Used to wait for a state,
/// never to assert on timing.
pub async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Reads until the server closes the connection (EOF or reset); returns what was read.
/// Panics if the connection is still open after 30 s (a hang guard, not a timing claim).
pub async fn read_until_closed(stream: &mut (impl tokio::io::AsyncReadExt + Unpin)) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let closed = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the server kept the connection open");
    out
}

/// Status and JSON body of a response.
pub async fn json(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (status, v)
}

/// Asserts an error response with this status and code.
pub async fn expect_error(resp: reqwest::Response, status: u16, code: &str) -> Value {
    let (s, v) = json(resp).await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (status, Some(code)),
        "body: {v}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
    v
}

/// Reads a file of the repo.
pub fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// `pathd serve` as a process of its own on a free loopback port, with empty maps and data
/// directories: for tests that read `/metrics`, whose registry is per process (shared by
/// the in-process servers of the other tests). Killed on drop.
pub struct ProcessServer {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    pub client: reqwest::Client,
    _dir: TempDir,
}

impl ProcessServer {
    /// Starts it and waits until it answers `/readyz`.
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_pathd"))
            .arg("serve")
            .args(["--addr", &format!("127.0.0.1:{port}"), "--maps-dir"])
            .arg(dir.path())
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            // The allocator as the binary sets it up, not as this environment may tune it.
            .env_remove("GLIBC_TUNABLES")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let server = ProcessServer {
            child,
            base: format!("http://127.0.0.1:{port}"),
            client: reqwest::Client::new(),
            _dir: dir,
        };
        for _ in 0..500 {
            if server.client.get(server.at("/readyz")).send().await.is_ok() {
                return server;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("pathd did not start");
    }

    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The server's resident memory in bytes (`VmRSS` of `/proc/PID/status`).
    pub fn rss_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/PID/status");
        kib * 1024
    }

    /// The `/metrics` text.
    pub async fn metrics(&self) -> String {
        let r = self.client.get(self.at("/metrics")).send().await.unwrap();
        r.text().await.unwrap()
    }

    /// `PUT /v1/maps/{name}` with a Moving AI text body; the status.
    pub async fn put_text(&self, name: &str, text: &str) -> u16 {
        let url = self.at(&format!("/v1/maps/{name}"));
        put_map_text(&self.client, url, text)
            .await
            .status()
            .as_u16()
    }
}

/// `PUT url` with a Moving AI text body.
async fn put_map_text(client: &reqwest::Client, url: String, text: &str) -> reqwest::Response {
    client
        .put(url)
        .header("content-type", "text/plain")
        .body(text.to_owned())
        .send()
        .await
        .unwrap()
}

impl Drop for ProcessServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `pathd` with empty maps and data directories and `args`, `env`, until it exits
/// (at most 20 s, else the test fails): (exit code, stdout + stderr).
pub fn run_to_exit(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pathd"))
        .args(["--addr", "127.0.0.1:0", "--maps-dir"])
        .arg(tmp.path())
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .args(args)
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pathd {args:?} did not exit");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    use std::io::Read;
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    (status.code(), out)
}

/// The next event of one of the client's event streams, which must come: panics when the
/// stream ends or fails, or after 60 s of silence (a hang guard, not a timing claim).
pub async fn next_event<E: pathd_client::Event>(s: &mut pathd_client::EventStream<E>) -> E {
    tokio::time::timeout(Duration::from_secs(60), s.next())
        .await
        .expect("an event within 60 s")
        .expect("the stream ended early")
        .unwrap_or_else(|e| panic!("event stream: {e}"))
}

/// The Rust client of the server at `url` without retries of `503`: for tests that assert
/// a `503` (or count every answer that is not a result).
pub fn client_without_retries(url: &str) -> pathd_client::Client {
    let mut c = pathd_client::Client::new(url);
    c.retries = 0;
    c
}
