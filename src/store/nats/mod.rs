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
//! Files: `shared` (what the store and its tasks share), `codec` (messages), `connect`,
//! `append` (publish and compaction), `recover` (bootstrap and one map's load), `follow`
//! (the ordered reader), `feed`, and `lag` (the head watcher and the status).
//!
//! Every method blocks on the async client (`Handle::block_on`): callers run them off the
//! runtime, as the trait asks.

mod append;
mod codec;
mod connect;
mod feed;
mod follow;
mod lag;
mod recover;
mod shared;

use std::io;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_nats::Client;
use async_nats::connection::State;
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::nats_options::NatsOptions;
use super::nats_publish;
use super::{LogRecord, MapStore, Mutation, Recovered, Replicated, StoreError, StoreStatus};
pub use codec::subject;
pub(crate) use connect::connect_options;
use shared::{Conn, NameState, Shared};

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

fn io_err(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Io(io::Error::other(format!("{what}: {e}")))
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
        Some(self.lag())
    }
}
