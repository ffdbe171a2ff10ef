//! The replicated store: NATS JetStream (`--store nats://HOST:PORT[,HOST:PORT...]`).
//!
//! One stream (`PATHD_MAPS`) holds every map's mutations, one subject per map:
//! `pathd.maps.<name>` (a `.` of the name is written `~`, which names cannot contain, so a
//! name is one subject token). Each message is one mutation, with headers
//!
//! * `Pathd-Op`: `put`, `patch` or `delete`;
//! * `Pathd-Version`: the map version it produced (a delete: the map's last version);
//! * `Pathd-Cells`: bytes of the changed-cells section at the start of the payload;
//! * `Pathd-Body`: `inline` (the whole map follows the cells, in the snapshot encoding of
//!   [`super::snapshot`]), `object` (the whole map is the object `Pathd-Object` of the
//!   `pathd_maps` object store: bodies near NATS's message size limit) or absent.
//!
//! **Compare-and-set.** [`MapStore::append`] publishes with
//! `Nats-Expected-Last-Subject-Sequence` set to the stream sequence of the map's last
//! mutation applied here, and returns only once the publish is acknowledged (stored, on a
//! quorum of the stream's replicas). If another replica wrote first the server refuses it
//! ([`StoreError::Conflict`]): the maps service catches up ([`MapStore::catch_up`]) and
//! retries or answers `409`. So every map has one total order and no version is handed out
//! twice, with no lock or consensus of pathd's own.
//!
//! **Snapshots and compaction.** A put carries the whole map. A patch carries its cells,
//! plus the whole map when the map's log has no whole map yet (a bundled map's first
//! patch) or its patches since the last one outweigh the map; after such a message is
//! stored, older messages of that subject are purged (a subject-filtered purge below its
//! sequence), as is the object of the previous whole map. A delete purges what came
//! before it and stays as the tombstone. The stream holds per map one whole map and the
//! patches after it.
//!
//! **Replay.** [`MapStore::recover`] reads the stream from its start up to its last
//! sequence at that moment (snapshot plus tail of every map) and then keeps the same
//! ordered consumer going: every later mutation, this replica's own included, goes to
//! [`MapStore::feed`] in stream order for the maps service to apply (its own writes are
//! skipped by version). An ordered consumer re-creates itself from the last sequence it
//! delivered after a reconnect, so a replica catches up by itself.
//!
//! **Lag.** A second ordered consumer, headers only, reads every map's last message and
//! then every new one (`watch_heads`): it knows each map's newest stored version while
//! the feed is still busy applying, so the status reports per map the stream's version
//! minus the applied one, and how long the oldest unapplied version has waited.
//!
//! **Connecting.** Credentials and TLS as NATS clients take them
//! ([`super::nats_options`]). A server that answers but refuses the certificate or the
//! credentials is a configuration error at start ([`MapStore::connect`]); one that cannot
//! be reached yet is retried for ever.
//!
//! Every method blocks on the async client (`Handle::block_on`): callers run them off the
//! runtime, as the trait asks.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_nats::connection::State;
use async_nats::jetstream::{self, consumer, stream};
use async_nats::{Client, ConnectOptions, HeaderMap};
use futures_util::StreamExt;
use pathd_engine::{Grid, Patch, Point};
use tokio::runtime::Handle;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::nats_options::NatsOptions;
use super::nats_publish::{self, Publish};
use super::{
    Change, Damage, LogRecord, MapLag, MapStore, Mutation, Recovered, Replicated, StoreError,
    StoreStatus, snapshot,
};

/// The stream of map mutations.
pub const STREAM: &str = "PATHD_MAPS";
/// Subject prefix of a map's mutations.
pub const SUBJECT_PREFIX: &str = "pathd.maps.";
/// The object store bucket of map bodies too large for one message.
pub const BUCKET: &str = "pathd_maps";
/// How long a publish (or a store request) may take before the write fails.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// How long [`MapStore::catch_up`] waits for this replica to apply a map's newest mutation:
/// long enough for the feed's consumer to be re-created after a stream leader election
/// (its creation waits for the new leader; 3 s was too short, `tests/it/nats_node_loss.rs`).
const CATCH_UP_WAIT: Duration = Duration::from_secs(10);
/// Patches after a whole map before the next patch carries the whole map again, at most.
const MAX_TAIL: u64 = 10_000;

/// The NATS JetStream [`MapStore`] (see the module docs).
pub struct NatsStore {
    rt: Handle,
    opts: NatsOptions,
    /// The client, once the first connection attempt has not found a configuration error
    /// ([`MapStore::connect`]).
    client: OnceLock<Client>,
    conn: OnceLock<Conn>,
    shared: Arc<Shared>,
    feed: Mutex<Option<mpsc::Receiver<Replicated>>>,
    /// Test-only: how long the feed holds each mutation before handing it on.
    apply_delay: Duration,
    /// Test-only: how many messages the server may have out to the feed (0: no limit).
    feed_window: u64,
    /// Cancelled by [`MapStore::close`] at shutdown: a recovery still waiting for NATS stops
    /// waiting, so its retry timers are dropped before the runtime that drives them.
    closed: CancellationToken,
}

/// What the store and its feed task share.
#[derive(Default)]
struct Shared {
    /// Per map: what this replica has applied (the compare-and-set base).
    names: Mutex<HashMap<String, NameState>>,
    /// Read from the stream, not yet applied: by stream sequence.
    unapplied: Mutex<BTreeMap<u64, Pending>>,
    /// Highest stream sequence applied; bumped on every [`MapStore::applied`].
    progress: watch::Sender<u64>,
    /// Messages the server still had to deliver after the last one read.
    pending: Mutex<u64>,
    /// Per map: the newest version the stream holds, as the head watcher reads it.
    heads: Mutex<HashMap<String, Head>>,
}

/// What the stream holds of one map beyond what is applied here (see [`watch_heads`]).
#[derive(Debug, Default)]
struct Head {
    /// The newest version stored.
    version: u64,
    /// Versions stored but (maybe) not applied yet, with when they were stored; pruned
    /// up to the applied version at every new message of the map and every status read,
    /// so it holds little more than the versions the map is behind.
    unapplied: BTreeMap<u64, SystemTime>,
}

impl Head {
    /// Forgets the versions up to `applied`.
    fn prune(&mut self, applied: u64) {
        while let Some(e) = self.unapplied.first_entry()
            && *e.key() <= applied
        {
            e.remove();
        }
    }
}

impl Shared {
    /// Records that the mutation at `seq` of `name` (producing `version`) is applied.
    fn applied(&self, name: &str, version: u64, seq: u64) {
        let p = self.unapplied.lock().expect("unapplied lock").remove(&seq);
        let mut names = self.names.lock().expect("names lock");
        let st = names.entry(name.to_owned()).or_default();
        if seq > st.seq {
            match p {
                Some(p) => st.advance(version, seq, &p.meta),
                None => {
                    st.version = version;
                    st.seq = seq;
                }
            }
        }
        drop(names);
        self.progress.send_modify(|v| *v = (*v).max(seq));
    }
}

#[derive(Clone)]
struct Conn {
    client: Client,
    js: jetstream::Context,
    stream: stream::Stream,
}

#[derive(Clone, Debug, Default)]
struct NameState {
    /// The map's version (or last version, deleted).
    version: u64,
    /// Stream sequence of its last mutation.
    seq: u64,
    /// True when the stream holds a whole map of the current chain.
    full: bool,
    /// The object holding that whole map, if it is one.
    object: Option<String>,
    /// Patch bytes and count after the whole map.
    tail_bytes: u64,
    tail_count: u64,
    /// The last mutation was a delete.
    deleted: bool,
}

/// What a message read but not yet applied changes in its map's [`NameState`].
#[derive(Debug)]
struct Pending {
    meta: Meta,
    /// When it was stored (for the lag in seconds).
    stored: SystemTime,
}

#[derive(Clone, Debug)]
struct Meta {
    op: Op,
    body: Option<Option<String>>,
    cells_bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Put,
    Patch,
    Delete,
}

impl NameState {
    fn advance(&mut self, version: u64, seq: u64, meta: &Meta) {
        self.version = version;
        self.seq = seq;
        self.deleted = meta.op == Op::Delete;
        match (&meta.op, &meta.body) {
            (Op::Delete, _) => {
                self.full = false;
                self.object = None;
                self.tail_bytes = 0;
                self.tail_count = 0;
            }
            (_, Some(object)) => {
                self.full = true;
                self.object = object.clone();
                self.tail_bytes = 0;
                self.tail_count = 0;
            }
            (_, None) => {
                self.tail_bytes += meta.cells_bytes;
                self.tail_count += 1;
            }
        }
    }
}

/// The subject of map `name`.
pub fn subject(name: &str) -> String {
    format!("{SUBJECT_PREFIX}{}", name.replace('.', "~"))
}

fn name_of_subject(subject: &str) -> Option<String> {
    subject
        .strip_prefix(SUBJECT_PREFIX)
        .map(|t| t.replace('~', "."))
}

fn io_err(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Io(io::Error::other(format!("{what}: {e}")))
}

fn encode_cells(cells: &[(Point, u8)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + cells.len() * 9);
    out.extend_from_slice(&(cells.len() as u32).to_le_bytes());
    for &(p, c) in cells {
        out.extend_from_slice(&p.x.to_le_bytes());
        out.extend_from_slice(&p.y.to_le_bytes());
        out.push(c);
    }
    out
}

fn decode_cells(b: &[u8]) -> Result<Vec<(Point, u8)>, String> {
    let n = b
        .get(..4)
        .map(|h| u32::from_le_bytes(h.try_into().expect("4 bytes")) as usize)
        .ok_or("cells section too short")?;
    if b.len() != 4 + n * 9 {
        return Err("cells section has the wrong length".into());
    }
    Ok(b[4..]
        .chunks_exact(9)
        .map(|c| {
            let x = u32::from_le_bytes(c[0..4].try_into().expect("4 bytes"));
            let y = u32::from_le_bytes(c[4..8].try_into().expect("4 bytes"));
            (Point { x, y }, c[8])
        })
        .collect())
}

fn header<'a>(h: Option<&'a HeaderMap>, key: &str) -> Option<&'a str> {
    h.and_then(|h| h.get(key)).map(|v| v.as_str())
}

/// A message of the stream, decoded.
struct Decoded {
    rep: Replicated,
    meta: Meta,
}

/// One map's mutations folded so far (recovery reads them in stream order).
enum Fold {
    Live(u64, Box<Grid>),
    Deleted(u64),
    Broken(u64, String),
}

impl Fold {
    /// The fold after the mutation producing `version`.
    fn next(prev: Option<Fold>, version: u64, change: Change) -> Fold {
        match (change, prev) {
            (Change::Put(g), _) => Fold::Live(version, Box::new(g)),
            (Change::Patch { full: Some(g), .. }, _) => Fold::Live(version, Box::new(g)),
            (Change::Patch { cells, full: None }, Some(Fold::Live(_, g))) => {
                match g.apply_patch(&Patch {
                    cells,
                    rects: Vec::new(),
                }) {
                    Ok(Some((g2, _))) => Fold::Live(version, Box::new(g2)),
                    Ok(None) => Fold::Live(version, g),
                    Err(e) => Fold::Broken(version, format!("patch {version}: {e}")),
                }
            }
            (Change::Patch { .. }, _) => {
                Fold::Broken(version, format!("patch {version} has no map to apply to"))
            }
            (Change::Delete, _) => Fold::Deleted(version),
            (Change::Unreadable(why), _) => Fold::Broken(version, why),
        }
    }

    fn recovered(self, name: String) -> Recovered {
        match self {
            Fold::Live(version, grid) => Recovered::Live {
                name,
                version,
                grid,
                lost: None,
            },
            Fold::Deleted(version) => Recovered::Deleted { name, version },
            Fold::Broken(version, reason) => Recovered::Damaged(Damage {
                name,
                reason,
                last_good: None,
                dropped: vec![version],
            }),
        }
    }
}

impl NatsStore {
    /// A store that will connect with `opts` (on the first [`MapStore::recover`]), running
    /// its client on `rt`.
    pub fn new(opts: NatsOptions, rt: Handle) -> Self {
        NatsStore {
            rt,
            opts,
            client: OnceLock::new(),
            conn: OnceLock::new(),
            shared: Arc::default(),
            feed: Mutex::new(None),
            apply_delay: Duration::ZERO,
            feed_window: 0,
            closed: CancellationToken::new(),
        }
    }

    /// Test-only: the feed holds each mutation read from the stream for `delay` before
    /// handing it to the maps service (a replica that lags on purpose).
    pub fn with_test_apply_delay(self, delay: Duration) -> Self {
        NatsStore {
            apply_delay: delay,
            ..self
        }
    }

    /// Test-only: the server has at most `window` messages out to the feed (0: no limit),
    /// each acknowledged once handed on; with an apply delay, the feed's consumer then falls
    /// behind the stream on the server's side.
    pub fn with_test_feed_window(self, window: u64) -> Self {
        NatsStore {
            feed_window: window,
            ..self
        }
    }

    fn conn(&self) -> Result<&Conn, StoreError> {
        self.conn
            .get()
            .ok_or_else(|| io_err("nats", "not connected yet"))
    }

    fn state(&self, name: &str) -> NameState {
        self.shared
            .names
            .lock()
            .expect("names lock")
            .get(name)
            .cloned()
            .unwrap_or_default()
    }

    /// The client options: name, reconnect policy, credentials, TLS.
    async fn options(&self) -> Result<ConnectOptions, String> {
        connect_options(&self.opts).await
    }

    /// Connects. A first attempt that reaches a server but is refused (TLS: certificate,
    /// CA; authentication) is a configuration error, reported as such and not retried; a
    /// server that cannot be reached yet is retried in the background for ever (NATS may
    /// start after pathd).
    async fn connect_client(&self) -> Result<Client, String> {
        if let Some(c) = self.client.get() {
            return Ok(c.clone());
        }
        let servers = self.opts.servers.as_slice();
        let client = match self.options().await?.connect(servers).await {
            Ok(c) => c,
            Err(e) => {
                if let Some(why) = refused(&e) {
                    return Err(format!(
                        "NATS at {} refused the connection: {why}",
                        servers.join(",")
                    ));
                }
                tracing::warn!(error = %e, servers = %servers.join(","), "NATS not reachable yet; retrying");
                self.options()
                    .await?
                    .retry_on_initial_connect()
                    .connect(servers)
                    .await
                    .map_err(|e| e.to_string())?
            }
        };
        Ok(self.client.get_or_init(|| client).clone())
    }

    /// Connects and opens (creating if needed) the stream, retrying until it works.
    async fn open(&self) -> Result<&Conn, StoreError> {
        if let Some(c) = self.conn.get() {
            return Ok(c);
        }
        let client = self
            .connect_client()
            .await
            .map_err(|e| io_err("nats connect", e))?;
        let mut js = jetstream::new(client.clone());
        js.set_timeout(REQUEST_TIMEOUT);
        let mut delay = Duration::from_millis(100);
        let stream = loop {
            let config = stream::Config {
                name: STREAM.to_owned(),
                subjects: vec![format!("{SUBJECT_PREFIX}>")],
                storage: stream::StorageType::File,
                num_replicas: self.opts.replicas.max(1),
                ..Default::default()
            };
            match js.get_or_create_stream(config).await {
                Ok(s) => break s,
                Err(e) => {
                    if self.closed.is_cancelled() {
                        return Err(io_err("nats open", "the store is closed"));
                    }
                    tracing::warn!(error = %e, "JetStream stream not available yet; retrying");
                    tokio::select! {
                        biased;
                        _ = self.closed.cancelled() => {
                            return Err(io_err("nats open", "the store is closed"));
                        }
                        _ = tokio::time::sleep(delay) => {}
                    }
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
            }
        };
        let _ = self.conn.set(Conn { client, js, stream });
        Ok(self.conn.get().expect("just set"))
    }

    async fn bucket(
        conn: &Conn,
        replicas: usize,
    ) -> Result<jetstream::object_store::ObjectStore, String> {
        if let Ok(b) = conn.js.get_object_store(BUCKET).await {
            return Ok(b);
        }
        conn.js
            .create_object_store(jetstream::object_store::Config {
                bucket: BUCKET.to_owned(),
                num_replicas: replicas.max(1),
                ..Default::default()
            })
            .await
            .map_err(|e| e.to_string())
    }

    /// Decodes one stream message (fetching an object body when it has one).
    async fn decode(
        conn: &Conn,
        replicas: usize,
        subject: &str,
        headers: Option<&HeaderMap>,
        payload: &[u8],
        seq: u64,
    ) -> Result<Decoded, String> {
        let name = name_of_subject(subject).ok_or("not a map subject")?;
        let version: u64 = header(headers, "Pathd-Version")
            .and_then(|v| v.parse().ok())
            .ok_or("no Pathd-Version header")?;
        let op = match header(headers, "Pathd-Op") {
            Some("put") => Op::Put,
            Some("patch") => Op::Patch,
            Some("delete") => Op::Delete,
            other => return Err(format!("unknown Pathd-Op {other:?}")),
        };
        let cells_len: usize = header(headers, "Pathd-Cells")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let (cells_b, rest) = payload
            .split_at_checked(cells_len)
            .ok_or("payload shorter than its cells section")?;
        let (body, full_bytes) = match header(headers, "Pathd-Body") {
            Some("inline") => (Some(None), Some(rest.to_vec())),
            Some("object") => {
                let key = header(headers, "Pathd-Object").ok_or("no Pathd-Object header")?;
                let bucket = Self::bucket(conn, replicas).await?;
                let mut obj = bucket
                    .get(key)
                    .await
                    .map_err(|e| format!("object {key}: {e}"))?;
                let mut buf = Vec::new();
                tokio::io::AsyncReadExt::read_to_end(&mut obj, &mut buf)
                    .await
                    .map_err(|e| format!("object {key}: {e}"))?;
                (Some(Some(key.to_owned())), Some(buf))
            }
            _ => (None, None),
        };
        let full = match full_bytes {
            Some(b) => Some(snapshot::decode(&b)?.grid),
            None => None,
        };
        let change = match op {
            Op::Put => Change::Put(full.ok_or("a put without a map")?),
            Op::Patch => Change::Patch {
                cells: decode_cells(cells_b)?,
                full,
            },
            Op::Delete => Change::Delete,
        };
        Ok(Decoded {
            rep: Replicated {
                name,
                version,
                position: seq,
                change,
            },
            meta: Meta {
                op,
                body,
                cells_bytes: cells_b.len() as u64,
            },
        })
    }

    /// Reads the stream up to its current end, folds it per map, and starts the feed.
    async fn bootstrap(&self) -> Result<Vec<Recovered>, StoreError> {
        let conn = self.open().await?;
        let replicas = self.opts.replicas;
        let mut delay = Duration::from_millis(100);
        let last = loop {
            match conn.stream.get_info().await {
                Ok(info) if info.state.messages == 0 => break 0,
                Ok(info) => break info.state.last_sequence,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the JetStream stream yet; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
            }
        };
        let mut messages = Follower::new(conn.clone());
        messages.window = self.feed_window;
        messages.idle = Some(Arc::clone(&self.shared));
        let mut folded: BTreeMap<String, Fold> = BTreeMap::new();
        let mut states: HashMap<String, NameState> = HashMap::new();
        let mut seen = 0u64;
        while seen < last {
            // The stream's last message may be compacted away while this reads: then
            // nothing more comes, and the feed takes whatever does later.
            let Ok((msg, seq, _, _)) =
                tokio::time::timeout(Duration::from_secs(5), messages.next()).await
            else {
                tracing::warn!(
                    seen,
                    last,
                    "bootstrap: the stream went quiet before its last sequence"
                );
                break;
            };
            seen = seq;
            let d = match Self::decode(
                conn,
                replicas,
                msg.subject.as_str(),
                msg.headers.as_ref(),
                &msg.payload,
                seq,
            )
            .await
            {
                Ok(d) => d,
                Err(e) => {
                    if let Some(name) = name_of_subject(msg.subject.as_str()) {
                        let v = match folded.get(&name) {
                            Some(Fold::Live(v, _) | Fold::Deleted(v) | Fold::Broken(v, _)) => *v,
                            None => 0,
                        };
                        folded.insert(name, Fold::Broken(v, format!("message {seq}: {e}")));
                    }
                    continue;
                }
            };
            let Decoded { rep, meta } = d;
            let st = states.entry(rep.name.clone()).or_default();
            st.advance(rep.version, seq, &meta);
            let prev = folded.remove(&rep.name);
            let next = Fold::next(prev, rep.version, rep.change);
            folded.insert(rep.name, next);
        }
        *self.shared.names.lock().expect("names lock") = states;
        self.shared.progress.send_replace(last);
        let (tx, rx) = mpsc::channel(256);
        *self.feed.lock().expect("feed lock") = Some(rx);
        tracing::info!(
            maps = folded.len(),
            last_sequence = last,
            "bootstrapped from JetStream"
        );
        let found = folded
            .into_iter()
            .map(|(name, f)| f.recovered(name))
            .collect::<Vec<_>>();
        // The feed: every later message, in stream order.
        self.rt.spawn(feed(
            conn.clone(),
            replicas,
            messages,
            tx,
            Arc::clone(&self.shared),
            self.apply_delay,
        ));
        self.rt.spawn(watch_heads(
            Follower::heads(conn.clone()),
            Arc::clone(&self.shared),
        ));
        Ok(found)
    }

    async fn publish(
        &self,
        name: &str,
        version: u64,
        mutation: Mutation<'_>,
    ) -> Result<(), StoreError> {
        let conn = self.conn()?;
        if conn.client.connection_state() != State::Connected {
            // Reconnecting to another node takes a moment; gone for longer, fail fast.
            let since = Instant::now();
            while conn.client.connection_state() != State::Connected {
                if since.elapsed() >= nats_publish::DOWN_FOR {
                    return Err(io_err("nats", "not connected"));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let st = self.state(name);
        let (op, cells, full): (&str, &[(Point, u8)], Option<&Grid>) = match mutation {
            Mutation::Put(g) => ("put", &[], Some(g)),
            Mutation::Patch { cells, after } => {
                let map_bytes = after.width() as u64 * after.height() as u64;
                let snap = !st.full
                    || st.tail_bytes + cells.len() as u64 * 9 > map_bytes
                    || st.tail_count >= MAX_TAIL;
                ("patch", cells, snap.then_some(after))
            }
            Mutation::Delete => ("delete", &[], None),
        };
        let cells_b = if op == "patch" {
            encode_cells(cells)
        } else {
            Vec::new()
        };
        let mut headers = HeaderMap::new();
        headers.insert(
            "Nats-Expected-Last-Subject-Sequence",
            st.seq.to_string().as_str(),
        );
        let subject = subject(name);
        // Deduplication holds the compare-and-set on a cluster (module nats_publish).
        let writer = format!("{:016x}", rand::random::<u64>());
        headers.insert(
            "Nats-Msg-Id",
            nats_publish::msg_id(&subject, st.seq, version).as_str(),
        );
        headers.insert(nats_publish::WRITER, writer.as_str());
        headers.insert("Pathd-Op", op);
        headers.insert("Pathd-Version", version.to_string().as_str());
        headers.insert("Pathd-Cells", cells_b.len().to_string().as_str());
        let mut payload = cells_b.clone();
        let mut object = None;
        if let Some(g) = full {
            let body = snapshot::encode(name, version, g);
            let limit = conn
                .client
                .server_info()
                .max_payload
                .saturating_sub(64 << 10)
                .max(64 << 10);
            if payload.len() + body.len() <= limit {
                headers.insert("Pathd-Body", "inline");
                payload.extend_from_slice(&body);
            } else {
                let key = format!("{}-v{version}-{:016x}", name, rand::random::<u64>());
                let bucket = Self::bucket(conn, self.opts.replicas)
                    .await
                    .map_err(|e| io_err("object store", e))?;
                tokio::time::timeout(
                    REQUEST_TIMEOUT * 5,
                    bucket.put(key.as_str(), &mut body.as_slice()),
                )
                .await
                .map_err(|e| io_err("object store put", e))?
                .map_err(|e| io_err("object store put", e))?;
                headers.insert("Pathd-Body", "object");
                headers.insert("Pathd-Object", key.as_str());
                object = Some(key);
            }
        }
        let meta = Meta {
            op: match op {
                "put" => Op::Put,
                "patch" => Op::Patch,
                _ => Op::Delete,
            },
            body: full.map(|_| object.clone()),
            cells_bytes: cells_b.len() as u64,
        };
        let started = Instant::now();
        let acked = nats_publish::publish(
            &conn.client,
            &conn.js,
            &conn.stream,
            &subject,
            headers,
            payload.into(),
            &writer,
        )
        .await;
        metrics::histogram!("pathd_store_append_seconds").record(started.elapsed().as_secs_f64());
        let ack = match acked {
            Publish::Stored(a) => a,
            Publish::Conflict => {
                if let Some(key) = object {
                    self.drop_object(key);
                }
                tracing::debug!(map = %name, expected = st.seq, "lost the compare-and-set");
                metrics::counter!("pathd_store_conflicts_total").increment(1);
                return Err(StoreError::Conflict {
                    name: name.to_owned(),
                    last: st.version,
                    offered: version,
                });
            }
            Publish::Failed(e) => {
                if let Some(key) = object {
                    self.drop_object(key);
                }
                return Err(io_err("nats publish", e));
            }
        };
        {
            let mut names = self.shared.names.lock().expect("names lock");
            let s = names.entry(name.to_owned()).or_default();
            s.advance(version, ack.sequence, &meta);
        }
        // A whole map or a tombstone: what came before it on this subject is not needed.
        // (Only when there is something before it: a purge below sequence 1 would be read
        // as a purge of the whole subject.)
        if (meta.body.is_some() || meta.op == Op::Delete) && st.seq > 0 {
            let old = st.object.clone();
            let replicas = self.opts.replicas;
            let seq = ack.sequence;
            let c = conn.clone();
            self.rt.spawn(async move {
                if let Err(e) = c.stream.purge().filter(subject.clone()).sequence(seq).await {
                    tracing::warn!(%subject, error = %e, "compaction purge failed");
                }
                if let Some(key) = old
                    && let Ok(b) = Self::bucket(&c, replicas).await
                {
                    let _ = b.delete(&key).await;
                }
            });
        }
        Ok(())
    }

    fn drop_object(&self, key: String) {
        let Ok(conn) = self.conn() else { return };
        let c = conn.clone();
        let replicas = self.opts.replicas;
        self.rt.spawn(async move {
            if let Ok(b) = Self::bucket(&c, replicas).await {
                let _ = b.delete(&key).await;
            }
        });
    }

    /// Reads the messages of map `name` from its first to its last now, one get each (a
    /// map's subject holds its newest whole map and the patches after it), and folds them.
    async fn load_one(&self, name: &str) -> Result<Option<Recovered>, StoreError> {
        let conn = self.conn()?;
        let last = self.last_seq(name).await?;
        if last == 0 {
            return Ok(None);
        }
        let subject = subject(name);
        let mut fold: Option<Fold> = None;
        let mut after = 0u64;
        while after < last {
            let get = conn
                .stream
                .raw_message_builder()
                .sequence(after + 1)
                .next_by_subject(subject.clone())
                .send();
            let m = match tokio::time::timeout(REQUEST_TIMEOUT, get).await {
                Err(_) => return Err(io_err("nats load", "get timed out")),
                Ok(Err(e)) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => break,
                Ok(Err(e)) => return Err(io_err("nats load", e)),
                Ok(Ok(m)) => m,
            };
            after = m.sequence;
            let version = match Self::decode(
                conn,
                self.opts.replicas,
                m.subject.as_str(),
                Some(&m.headers),
                &m.payload,
                m.sequence,
            )
            .await
            {
                Ok(d) => {
                    let v = d.rep.version;
                    fold = Some(Fold::next(fold, v, d.rep.change));
                    continue;
                }
                Err(e) => (
                    header(Some(&m.headers), "Pathd-Version").and_then(|v| v.parse().ok()),
                    e,
                ),
            };
            let (v, why) = version;
            fold = Some(Fold::Broken(
                v.unwrap_or(0),
                format!("message {}: {why}", m.sequence),
            ));
        }
        Ok(fold.map(|f| f.recovered(name.to_owned())))
    }

    async fn last_seq(&self, name: &str) -> Result<u64, StoreError> {
        let conn = self.conn()?;
        if conn.client.connection_state() != State::Connected {
            return Err(io_err("nats", "not connected"));
        }
        let r = tokio::time::timeout(
            REQUEST_TIMEOUT,
            conn.stream.get_last_raw_message_by_subject(&subject(name)),
        )
        .await
        .map_err(|e| io_err("nats", e))?;
        match r {
            Ok(m) => Ok(m.sequence),
            Err(e) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => Ok(0),
            Err(e) => Err(io_err("nats", e)),
        }
    }
}

/// Why a failed connection attempt is a configuration error (the server answered, and said
/// no), with what to check; `None` for a server that could not be reached (worth retrying).
fn refused(e: &async_nats::ConnectError) -> Option<String> {
    use async_nats::ConnectErrorKind as K;
    use std::error::Error;
    const TLS_HINT: &str = "check --nats-tls-ca (the CA that signed the server's \
        certificate), --nats-tls-cert/--nats-tls-key and --nats-require-tls";
    const AUTH_HINT: &str = "check the credentials (user:password@ or token@ in --store, \
        --nats-user/--nats-password, --nats-token, --nats-creds)";
    // A failed TLS handshake comes back as an I/O error of kind `InvalidData`.
    let bad_handshake = e
        .source()
        .and_then(|s| s.downcast_ref::<io::Error>())
        .is_some_and(|io| io.kind() == io::ErrorKind::InvalidData);
    match e.kind() {
        K::Tls => Some(format!("TLS: {e}; {TLS_HINT}")),
        K::Io if bad_handshake => Some(format!("TLS handshake failed: {e}; {TLS_HINT}")),
        K::Authentication | K::AuthorizationViolation => Some(format!("{e}; {AUTH_HINT}")),
        _ => None,
    }
}

/// Heartbeat the follower's consumer asks for; three missed ones re-create it.
const HEARTBEAT: Duration = Duration::from_secs(1);
/// How often the follower looks at the connection while no message comes.
const POLL: Duration = Duration::from_millis(100);

/// An ordered reader of the stream: an ephemeral push consumer (subscribed before it is
/// created, so nothing is missed), re-created from the last stream sequence read whenever
/// a consumer sequence is skipped (messages lost in a reconnect) or heartbeats stop.
///
/// **The server may move the consumer past messages it never sent.** nats-server before
/// 2.10.11 moves every consumer of the stream to the first remaining message of a subject
/// purged below a sequence (our compaction), so a consumer behind the purge skips the other
/// maps' messages in between without a gap in its own sequence. So whenever the stream
/// sequence jumps, the messages the stream holds in between are fetched one by one
/// (`next_by_subj` gets) before the delivered one is handed on; a heartbeat naming a
/// later stream sequence than read does the same. A jump over messages really purged
/// costs one get.
struct Follower {
    conn: Conn,
    sub: Option<async_nats::Subscriber>,
    consumer: Option<String>,
    /// Last stream and consumer sequence read.
    sseq: u64,
    cseq: u64,
    /// The connection dropped since the consumer was created.
    disconnected: bool,
    /// Headers only, starting from each subject's last message (the head watcher); else
    /// whole messages from the stream's start.
    heads: bool,
    /// At most this many messages out at once, each acknowledged when the next is asked
    /// for (0: no limit, no acknowledgements; tests only).
    window: u64,
    /// The acknowledgement subject of the message handed out last (with a window).
    unacked: Option<async_nats::Subject>,
    /// Messages of the stream below this sequence are fetched, not awaited (after a jump).
    fill_to: u64,
    /// The message delivered after a jump, handed on once the ones before it are.
    held: Option<Read>,
    /// Where an idle heartbeat records that the server has nothing more to send (the feed:
    /// the pending count the server puts on each message is not reliable after a purge).
    idle: Option<Arc<Shared>>,
}

impl Follower {
    fn new(conn: Conn) -> Self {
        Follower {
            conn,
            sub: None,
            consumer: None,
            sseq: 0,
            cseq: 0,
            disconnected: false,
            heads: false,
            window: 0,
            unacked: None,
            fill_to: 0,
            held: None,
            idle: None,
        }
    }

    /// A reader of every subject's last message and then of every new one, headers only
    /// (JetStream delivers `LastPerSubject` in stream order, so the sequence checks hold).
    fn heads(conn: Conn) -> Self {
        Follower {
            heads: true,
            ..Follower::new(conn)
        }
    }

    async fn open(&mut self) -> Result<(), String> {
        self.sub = None;
        if let Some(old) = self.consumer.take() {
            // Best effort, and not waited for: a consumer on a dead node cannot answer, and
            // the server drops an idle one by itself (`inactive_threshold`).
            let stream = self.conn.stream.clone();
            tokio::spawn(async move {
                let _ = tokio::time::timeout(REQUEST_TIMEOUT, stream.delete_consumer(&old)).await;
            });
        }
        let inbox = self.conn.client.new_inbox();
        let sub = self
            .conn
            .client
            .subscribe(inbox.clone())
            .await
            .map_err(|e| e.to_string())?;
        let deliver_policy = if self.sseq == 0 && self.heads {
            consumer::DeliverPolicy::LastPerSubject
        } else if self.sseq == 0 {
            consumer::DeliverPolicy::All
        } else {
            consumer::DeliverPolicy::ByStartSequence {
                start_sequence: self.sseq + 1,
            }
        };
        tracing::debug!(
            sseq = self.sseq,
            heads = self.heads,
            window = self.window,
            "opening the stream consumer"
        );
        let create = self.conn.stream.create_consumer(consumer::push::Config {
            deliver_subject: inbox,
            filter_subject: format!("{SUBJECT_PREFIX}>"),
            deliver_policy,
            ack_policy: if self.window > 0 {
                consumer::AckPolicy::Explicit
            } else {
                consumer::AckPolicy::None
            },
            max_ack_pending: i64::try_from(self.window).unwrap_or(i64::MAX),
            max_deliver: 1,
            idle_heartbeat: HEARTBEAT,
            inactive_threshold: Duration::from_secs(10),
            memory_storage: true,
            num_replicas: 1,
            headers_only: self.heads,
            ..Default::default()
        });
        let c = tokio::time::timeout(REQUEST_TIMEOUT, create)
            .await
            .map_err(|_| "creating the consumer timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        self.consumer = Some(c.cached_info().name.clone());
        self.sub = Some(sub);
        self.cseq = 0;
        Ok(())
    }

    /// The next message of the stream: (message, stream sequence, pending, stored at).
    /// Never fails: it re-creates its consumer until it can read again.
    async fn next(&mut self) -> Read {
        if let Some(reply) = self.unacked.take() {
            // Best effort: an acknowledgement lost makes the server send the rest late.
            let _ = self.conn.client.publish(reply, Default::default()).await;
        }
        let mut delay = Duration::from_millis(100);
        let mut silent = Duration::ZERO;
        loop {
            if self.fill_to > self.sseq + 1 {
                match self.fetch_after(self.sseq).await {
                    Ok(Some(mut found)) if found.1 < self.fill_to => {
                        tracing::debug!(seq = found.1, "fetched a message the consumer skipped");
                        found.2 = self.held.as_ref().map_or(0, |h| h.2 + 1);
                        self.sseq = found.1;
                        return found;
                    }
                    Ok(_) => self.sseq = self.fill_to - 1,
                    Err(e) => {
                        tracing::warn!(error = %e, after = self.sseq, "cannot fetch from the stream; retrying");
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(Duration::from_secs(2));
                        continue;
                    }
                }
            }
            if let Some(held) = self.held.take() {
                self.sseq = held.1;
                if self.window > 0 {
                    self.unacked = held.0.reply.clone();
                }
                return held;
            }
            if self.sub.is_none() {
                if let Err(e) = self.open().await {
                    tracing::warn!(error = %e, "cannot (re)create the stream consumer; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                    continue;
                }
                delay = Duration::from_millis(100);
            }
            let sub = self.sub.as_mut().expect("opened");
            let got = tokio::time::timeout(POLL, sub.next()).await;
            let msg = match got {
                Ok(Some(m)) => {
                    silent = Duration::ZERO;
                    m
                }
                Ok(None) => {
                    self.sub = None;
                    continue;
                }
                Err(_) => {
                    // A reconnect loses the consumer's in-flight messages (and a restarted
                    // server the consumer itself): read again from the last sequence as
                    // soon as the connection is back, or after three missed heartbeats.
                    silent += POLL;
                    let connected = self.conn.client.connection_state() == State::Connected;
                    if !connected {
                        self.disconnected = true;
                    } else if self.disconnected || silent >= HEARTBEAT * 3 {
                        tracing::debug!("re-creating the stream consumer");
                        self.disconnected = false;
                        self.sub = None;
                        silent = Duration::ZERO;
                    }
                    continue;
                }
            };
            if msg.status.is_some() {
                // A heartbeat: it names the last consumer sequence sent; a higher one than
                // read means messages were lost on the way.
                let last = msg
                    .headers
                    .as_ref()
                    .and_then(|h| h.get("Nats-Last-Consumer"))
                    .and_then(|v| v.as_str().parse::<u64>().ok());
                if last.is_some_and(|l| l > self.cseq) {
                    tracing::debug!(?last, cseq = self.cseq, "heartbeat says messages lost");
                    self.sub = None;
                } else if let Some(shared) = &self.idle
                    && self.window == 0
                    && msg
                        .description
                        .as_deref()
                        .is_some_and(|d| d.eq_ignore_ascii_case("idle heartbeat"))
                {
                    // Idle: everything the consumer had is sent (and read).
                    *shared.pending.lock().expect("pending lock") = 0;
                }
                if self.sub.is_some()
                    && !self.heads
                    && let Some(stream) = msg
                        .headers
                        .as_ref()
                        .and_then(|h| h.get("Nats-Last-Stream"))
                        .and_then(|v| v.as_str().parse::<u64>().ok())
                    && stream > self.sseq
                {
                    // The consumer is past messages it never sent: see the type's docs.
                    self.fill_to = stream + 1;
                }
                if let Some(reply) = msg.reply.clone() {
                    let _ = self.conn.client.publish(reply, Default::default()).await;
                }
                continue;
            }
            let jm = jetstream::Message {
                message: msg,
                context: self.conn.js.clone(),
            };
            let Ok(info) = jm.info() else { continue };
            let (sseq, cseq, pending) =
                (info.stream_sequence, info.consumer_sequence, info.pending);
            let stored = UNIX_EPOCH
                + Duration::from_nanos(
                    u64::try_from(info.published.unix_timestamp_nanos()).unwrap_or(0),
                );
            if cseq != self.cseq + 1 {
                tracing::debug!(sseq, cseq, last_cseq = self.cseq, "consumer gap");
                self.sub = None; // a gap: read again from the last stream sequence
                continue;
            }
            self.cseq = cseq;
            if sseq <= self.sseq {
                continue;
            }
            // The heads watcher starts from each subject's last message: jumps are its rule.
            if !self.heads && sseq > self.sseq + 1 {
                self.fill_to = sseq;
            }
            self.held = Some((jm.message, sseq, pending, stored));
        }
    }

    /// The first message of ours the stream holds after sequence `after`, if any.
    async fn fetch_after(&self, after: u64) -> Result<Option<Read>, String> {
        let get = self
            .conn
            .stream
            .raw_message_builder()
            .sequence(after + 1)
            .next_by_subject(format!("{SUBJECT_PREFIX}>"))
            .send();
        match tokio::time::timeout(REQUEST_TIMEOUT, get).await {
            Err(_) => Err("get timed out".into()),
            Ok(Err(e)) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Ok(Err(e)) => Err(e.to_string()),
            Ok(Ok(m)) => {
                let stored = UNIX_EPOCH
                    + Duration::from_nanos(
                        u64::try_from(m.time.unix_timestamp_nanos()).unwrap_or(0),
                    );
                let message = async_nats::Message {
                    subject: m.subject,
                    reply: None,
                    length: m.payload.len(),
                    payload: m.payload,
                    headers: Some(m.headers),
                    status: None,
                    description: None,
                };
                Ok(Some((message, m.sequence, 0, stored)))
            }
        }
    }
}

/// A message read from the stream: (message, stream sequence, messages the server still
/// had to send, stored at).
type Read = (async_nats::Message, u64, u64, SystemTime);

/// The head watcher: reads the headers of every map's last message, then of every new
/// one, so the status can say how many versions each map is behind (the stream's newest
/// version minus the applied one) and since when. It reads ahead of the feed, which waits
/// for the maps service and fetches whole maps; a headers-only consumer costs a few bytes
/// per mutation.
async fn watch_heads(mut heads: Follower, shared: Arc<Shared>) {
    loop {
        let (msg, _, _, stored) = heads.next().await;
        let Some(name) = name_of_subject(msg.subject.as_str()) else {
            continue;
        };
        let Some(version) =
            header(msg.headers.as_ref(), "Pathd-Version").and_then(|v| v.parse::<u64>().ok())
        else {
            continue;
        };
        let applied = shared
            .names
            .lock()
            .expect("names lock")
            .get(&name)
            .map_or(0, |s| s.version);
        let mut all = shared.heads.lock().expect("heads lock");
        let head = all.entry(name).or_default();
        head.version = head.version.max(version);
        head.prune(applied);
        if version > applied {
            head.unapplied.entry(version).or_insert(stored);
        }
    }
}

/// The feed task: turns stream messages into [`Replicated`] mutations, in order.
async fn feed(
    conn: Conn,
    replicas: usize,
    mut messages: Follower,
    tx: mpsc::Sender<Replicated>,
    shared: Arc<Shared>,
    test_delay: Duration,
) {
    loop {
        let (msg, seq, pending, stored) = messages.next().await;
        *shared.pending.lock().expect("pending lock") = pending;
        let mut delay = Duration::from_millis(50);
        // Only a body in the object store can come back later; anything else is final.
        let from_object = header(msg.headers.as_ref(), "Pathd-Body") == Some("object");
        let decoded = loop {
            match NatsStore::decode(
                &conn,
                replicas,
                msg.subject.as_str(),
                msg.headers.as_ref(),
                &msg.payload,
                seq,
            )
            .await
            {
                Ok(d) => break Ok(d),
                // An object body may be unreachable for a moment (a reconnect).
                Err(e) if from_object && delay < Duration::from_secs(5) => {
                    tracing::warn!(seq, error = %e, "cannot decode a stream message yet");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
                Err(e) => {
                    tracing::error!(seq, error = %e, "an undecodable stream message");
                    break Err(e);
                }
            }
        };
        let Decoded { rep, meta } = match decoded {
            Ok(d) => d,
            // The maps service marks the map damaged (not served as its older version).
            Err(why) => {
                if let Some(name) = name_of_subject(msg.subject.as_str()) {
                    let version = header(msg.headers.as_ref(), "Pathd-Version")
                        .and_then(|v| v.parse::<u64>().ok())
                        .unwrap_or_else(|| {
                            let names = shared.names.lock().expect("names lock");
                            names.get(&name).map_or(0, |s| s.version) + 1
                        });
                    let rep = Replicated {
                        name,
                        version,
                        position: seq,
                        change: Change::Unreadable(format!(
                            "stream message {seq} is unreadable: {why}"
                        )),
                    };
                    if tx.send(rep).await.is_err() {
                        return;
                    }
                }
                continue;
            }
        };
        shared
            .unapplied
            .lock()
            .expect("unapplied lock")
            .insert(seq, Pending { meta, stored });
        if !test_delay.is_zero() {
            tokio::time::sleep(test_delay).await;
        }
        if tx.send(rep).await.is_err() {
            return;
        }
    }
}

impl MapStore for NatsStore {
    fn connect(&self) -> Result<(), StoreError> {
        self.rt
            .block_on(self.connect_client())
            .map(drop)
            .map_err(|e| io_err("nats connect", e))
    }

    fn recover(&self) -> Result<Vec<Recovered>, StoreError> {
        self.rt.block_on(async {
            // Biased, the cancellation first: once the server is shutting down, the
            // recovery's retry timer must not be polled again (the runtime's timer may be
            // gone, and polling it then panics).
            tokio::select! {
                biased;
                _ = self.closed.cancelled() => Err(io_err(
                    "nats recover",
                    "the server is shutting down before the store could be read",
                )),
                found = self.bootstrap() => found,
            }
        })
    }

    fn close(&self) {
        self.closed.cancel();
    }

    fn replicated(&self) -> bool {
        true
    }

    fn append(&self, name: &str, version: u64, mutation: Mutation<'_>) -> Result<(), StoreError> {
        self.rt.block_on(self.publish(name, version, mutation))
    }

    fn load(&self, name: &str) -> Result<Option<Recovered>, StoreError> {
        self.rt.block_on(self.load_one(name))
    }

    fn replay(&self, _name: &str, _after: u64) -> Result<Vec<LogRecord>, StoreError> {
        // Patches are replayed through the feed; nothing reads them one map at a time.
        Ok(Vec::new())
    }

    fn feed(&self) -> Option<mpsc::Receiver<Replicated>> {
        self.feed.lock().expect("feed lock").take()
    }

    fn applied(&self, name: &str, version: u64, position: u64) {
        self.shared.applied(name, version, position);
    }

    fn catch_up(&self, name: &str) -> Result<(), StoreError> {
        // The stream's newest sequence, riding out a leader election as a publish does.
        let mut patience = nats_publish::Patience::start();
        let last = loop {
            match self.rt.block_on(self.last_seq(name)) {
                Ok(s) => break s,
                Err(e) => {
                    let connected = self
                        .conn
                        .get()
                        .is_some_and(|c| c.client.connection_state() == State::Connected);
                    if !patience.keep_trying(connected) {
                        return Err(e);
                    }
                    std::thread::sleep(nats_publish::PAUSE);
                }
            }
        };
        let deadline = tokio::time::Instant::now() + CATCH_UP_WAIT;
        let mut rx = self.shared.progress.subscribe();
        loop {
            if self.state(name).seq >= last {
                return Ok(());
            }
            let woke = self
                .rt
                .block_on(tokio::time::timeout_at(deadline, rx.changed()));
            if woke.is_err() {
                return Err(StoreError::Behind(format!(
                    "{name:?}: stream sequence {last} not applied within {CATCH_UP_WAIT:?}"
                )));
            }
        }
    }

    fn status(&self) -> Option<StoreStatus> {
        let connected = self
            .conn
            .get()
            .is_some_and(|c| c.client.connection_state() == State::Connected);
        let applied_position = *self.shared.progress.borrow();
        let (lag_messages, oldest_read) = {
            let unapplied = self.shared.unapplied.lock().expect("unapplied lock");
            let pending = *self.shared.pending.lock().expect("pending lock");
            (
                unapplied.len() as u64 + pending,
                unapplied.values().next().map(|p| p.stored),
            )
        };
        let now = SystemTime::now();
        let age = |t: SystemTime| now.duration_since(t).map_or(0.0, |d| d.as_secs_f64());
        // Applied versions first, then the heads: never both locks at once.
        let applied: HashMap<String, (u64, bool)> = self
            .shared
            .names
            .lock()
            .expect("names lock")
            .iter()
            .map(|(n, s)| (n.clone(), (s.version, s.deleted)))
            .collect();
        let mut maps = Vec::new();
        {
            let mut heads = self.shared.heads.lock().expect("heads lock");
            let names: std::collections::BTreeSet<String> =
                applied.keys().chain(heads.keys()).cloned().collect();
            for name in names {
                let (version, deleted) = applied.get(&name).copied().unwrap_or((0, false));
                let (stream_version, oldest) = match heads.get_mut(&name) {
                    Some(h) => {
                        h.prune(version);
                        (h.version.max(version), h.unapplied.values().next().copied())
                    }
                    None => (version, None),
                };
                let lag_versions = stream_version - version;
                // A deleted map that is caught up is not a map any more.
                if deleted && lag_versions == 0 && oldest.is_none() {
                    continue;
                }
                maps.push(MapLag {
                    name,
                    stream_version,
                    applied_version: version,
                    lag_versions,
                    lag_seconds: oldest.map_or(0.0, age),
                });
            }
        }
        let lag_versions = maps.iter().map(|m| m.lag_versions).sum();
        let lag_seconds = maps
            .iter()
            .map(|m| m.lag_seconds)
            .chain(oldest_read.map(age))
            .fold(0.0, f64::max);
        Some(StoreStatus {
            kind: "nats",
            connected,
            applied_position,
            lag_messages,
            lag_versions,
            lag_seconds,
            maps,
        })
    }
}

/// The client options of `opts`: name, reconnect policy, credentials, TLS (the store's
/// connection and the cluster's, `crate::cluster`, use the same).
pub(crate) async fn connect_options(opts: &NatsOptions) -> Result<ConnectOptions, String> {
    let mut o = ConnectOptions::new()
        .name("pathd")
        .max_reconnects(None)
        .connection_timeout(REQUEST_TIMEOUT)
        .reconnect_delay_callback(|n| Duration::from_millis((100 * n as u64).min(1000)))
        .event_callback(|e| async move {
            tracing::info!(event = %e, "nats connection event");
        });
    let readable = |flag: &str, p: &PathBuf| {
        std::fs::File::open(p)
            .map(drop)
            .map_err(|e| format!("{flag} {}: {e}", p.display()))
    };
    if let Some(c) = &opts.creds {
        readable("--nats-creds", c)?;
        o = o
            .credentials_file(c)
            .await
            .map_err(|e| format!("--nats-creds {}: {e}", c.display()))?;
    }
    if let (Some(u), Some(p)) = (&opts.user, &opts.password) {
        o = o.user_and_password(u.clone(), p.clone());
    }
    if let Some(t) = &opts.token {
        o = o.token(t.clone());
    }
    let tls = &opts.tls;
    if let Some(ca) = &tls.ca {
        readable("--nats-tls-ca", ca)?;
        o = o.add_root_certificates(ca.clone());
    }
    if let Some((cert, key)) = &tls.client_cert {
        readable("--nats-tls-cert", cert)?;
        readable("--nats-tls-key", key)?;
        o = o.add_client_certificate(cert.clone(), key.clone());
    }
    Ok(o.require_tls(tls.required))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_round_trip_names_with_dots() {
        for n in ["a", "a.b", "x..y.", "m-1_2"] {
            assert_eq!(name_of_subject(&subject(n)).as_deref(), Some(n));
        }
        assert_eq!(subject("a.b"), "pathd.maps.a~b");
    }

    #[test]
    fn cells_round_trip() {
        let cells = vec![(Point { x: 1, y: 2 }, 0), (Point { x: 70000, y: 3 }, 255)];
        assert_eq!(decode_cells(&encode_cells(&cells)).unwrap(), cells);
        assert!(decode_cells(&[1, 0, 0, 0]).is_err());
    }
}
