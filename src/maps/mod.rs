//! The maps service: the one owner of every map write.
//!
//! It owns the registry of served snapshots, the per-map write order, the durable store
//! ([`crate::store::MapStore`]), derived state (the HPA* abstraction is derived inside the
//! write; components and JPS planes belong to the grid snapshot) and the events the live hub
//! consumes. Handlers parse, call one method here, and map the result.
//!
//! **Writes are cancellation-safe by construction.** Every write (`put`, `patch`,
//! `delete`) runs on a task of its own, spawned before the first `.await`, that no client
//! can cancel: a handler whose client went away is dropped, the task is not, and it takes
//! the write through order, pool work, the durable append, the swap of the served snapshot
//! and the events to the end. So a version is never handed out twice, and the durable
//! record and the served state never diverge: the only window between them is a process
//! crash, after which recovery serves what is durable. The tasks are tracked; shutdown
//! waits for them ([`Maps::drain`]).
//!
//! Order per map: a FIFO async mutex per name, taken by the write task. Reads never take
//! it: they clone the current `Arc<MapEntry>` and go.

mod error;
pub(crate) mod patch;
mod placed;
mod queue;
mod recover;
mod replicated;
mod write;

pub use patch::ProfileChange;
pub use placed::Placer;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::watch;
use tokio_util::task::TaskTracker;

pub use queue::WriteOrder;
use queue::WriteQueue;

pub use error::MapsError;

use crate::compute::Compute;
use crate::derived::{MapEntry, Registry};
use crate::live::Hub;
use crate::store::{Damage, LostTail, MapStore, StoreError, StoreStatus};

/// True for 1-64 characters of `[A-Za-z0-9_.-]` not starting with a dot.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// The maps service (cheap to clone).
#[derive(Clone)]
pub struct Maps {
    inner: Arc<Inner>,
}

struct Inner {
    /// The served snapshots.
    registry: Registry,
    /// Where writes become durable.
    store: Arc<dyn MapStore>,
    /// The search pool: startup loading reads bundled files on it, and subscriptions'
    /// repairs run there (a write's own CPU work does not: see `build_patched`).
    compute: Compute,
    /// Consumes map events (patched, replaced, deleted).
    live: Hub,
    /// Per name: the write order of that map (a FIFO mutex) and how many of its writes
    /// are admitted and not yet answered (at most `max_pending`). An entry lives only while
    /// something uses it (see [`Maps::release`]), so names seen once cost nothing.
    writers: Mutex<HashMap<String, WriteQueue>>,
    /// Writes of one map admitted and not yet answered, at most (`--max-pending-writes`).
    max_pending: usize,
    /// Cancelled when shutdown begins: writes still waiting for startup recovery are
    /// refused (never admitted, never acknowledged) instead of keeping the drain waiting.
    closing: tokio_util::sync::CancellationToken,
    /// Maps whose durable data cannot be trusted: not served, not written.
    damaged: RwLock<BTreeMap<String, Damage>>,
    /// Maps whose patch log was found cut at start (served, under a version past the lost
    /// ones): reported until the process ends.
    cut: RwLock<BTreeMap<String, LostTail>>,
    /// Every write task, so shutdown can wait for them.
    writes: TaskTracker,
    /// True once recovery is done: writes wait for it, so a write is never overtaken by
    /// the loading of an older version of its map.
    loaded: watch::Sender<bool>,
    /// Maps held at most.
    max_maps: usize,
    /// The task applying a replicated store's feed, and its stop signal.
    follower: Mutex<Option<tokio::task::JoinHandle<()>>>,
    stop: tokio_util::sync::CancellationToken,
    /// Which maps this replica holds (`--placement K`: the cluster's placement; see `placed.rs`).
    placement: std::sync::OnceLock<Arc<dyn Placer>>,
}

/// How long shutdown waits for admitted writes to finish before it gives up on them (they
/// go on until the process ends; a write is durable before it is acknowledged, so one cut
/// short was never acknowledged).
pub const DRAIN_WRITES_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);

/// Attempts of a write that keeps losing the compare-and-set to other replicas (then
/// `503` "other replicas kept writing this map first", [`MapsError::Conflicted`]).
const MAX_ATTEMPTS: usize = 8;

/// What a `put` did.
#[derive(Debug)]
pub struct PutOutcome {
    /// The new entry.
    pub entry: Arc<MapEntry>,
    /// True when the name was free (`201`), false when a map was replaced.
    pub created: bool,
}

/// What a `patch` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatchOutcome {
    /// The map's version after the patch (unchanged for a no-op).
    pub version: u64,
    /// Cells whose cost changed.
    pub changed_cells: u64,
    /// Subscriptions the patch was handed to.
    pub affected_subscriptions: u64,
}

/// What recovery at start did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LoadReport {
    /// Bundled maps loaded.
    pub bundled: usize,
    /// Uploaded (or patched) maps loaded from the store.
    pub uploaded: usize,
    /// Names hidden by a delete.
    pub deleted: usize,
    /// Bundled files skipped because they could not be read.
    pub failed: usize,
    /// Maps whose durable data is damaged (not served).
    pub damaged: usize,
}

impl Maps {
    /// A service over `store`, running its CPU work on `compute` and telling `live` about
    /// changes.
    pub fn new(
        store: Arc<dyn MapStore>,
        compute: Compute,
        live: Hub,
        registry: Registry,
        max_maps: usize,
        max_pending: usize,
    ) -> Self {
        Maps {
            inner: Arc::new(Inner {
                registry,
                store,
                compute,
                live,
                writers: Mutex::default(),
                max_pending: max_pending.max(1),
                closing: tokio_util::sync::CancellationToken::new(),
                damaged: RwLock::default(),
                cut: RwLock::default(),
                writes: TaskTracker::new(),
                loaded: watch::Sender::new(false),
                max_maps,
                follower: Mutex::default(),
                stop: tokio_util::sync::CancellationToken::new(),
                placement: std::sync::OnceLock::new(),
            }),
        }
    }

    /// The served snapshots.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The current entry of `name`.
    pub fn get(&self, name: &str) -> Result<Arc<MapEntry>, MapsError> {
        if let Some(d) = self.damage(name) {
            return Err(MapsError::Damaged(d));
        }
        self.inner
            .registry
            .get(name)
            .ok_or_else(|| MapsError::NotFound(name.to_owned()))
    }

    /// The damage report of `name`, if its data is damaged.
    pub fn damage(&self, name: &str) -> Option<Damage> {
        self.inner
            .damaged
            .read()
            .expect("damaged lock")
            .get(name)
            .cloned()
    }

    /// Every damaged map, by name.
    pub fn damaged(&self) -> Vec<Damage> {
        self.inner
            .damaged
            .read()
            .expect("damaged lock")
            .values()
            .cloned()
            .collect()
    }

    /// The versions `name`'s cut patch log lost at start, if it was cut.
    pub fn lost_tail(&self, name: &str) -> Option<LostTail> {
        self.inner.cut.read().expect("cut lock").get(name).copied()
    }

    /// The maps whose patch log was found cut at start, by name.
    pub fn cut_logs(&self) -> Vec<String> {
        self.inner
            .cut
            .read()
            .expect("cut lock")
            .keys()
            .cloned()
            .collect()
    }

    fn mark_damaged(&self, d: Damage) {
        tracing::error!(map = %d.name, reason = %d.reason, "map damaged: not served until repaired (`pathd data check`)");
        self.inner.registry.remove(&d.name);
        let mut all = self.inner.damaged.write().expect("damaged lock");
        all.insert(d.name.clone(), d);
    }

    /// Waits (up to `max_wait`; with a local store not at all) until this replica has
    /// applied version `min` of `name` (or a later one, or its deletion at or past it);
    /// `None` returns at once. Else [`MapsError::ReplicaBehind`].
    pub async fn wait_version(
        &self,
        name: &str,
        min: Option<u64>,
        max_wait: std::time::Duration,
    ) -> Result<(), MapsError> {
        let Some(min) = min else { return Ok(()) };
        // A store only this process writes: every acknowledged version is already applied,
        // so waiting cannot help.
        let replicated = self.inner.store.replicated();
        let max_wait = if replicated {
            max_wait
        } else {
            std::time::Duration::ZERO
        };
        let registry = &self.inner.registry;
        let mut changes = registry.changes();
        let deadline = tokio::time::Instant::now() + max_wait;
        loop {
            let have = registry.known_version(name);
            if have >= min {
                return Ok(());
            }
            if !replicated {
                // Alone, this server has applied everything it ever acknowledged: a newer
                // version was never written. That is the client's mistake, not a lag.
                if registry.get(name).is_none() {
                    return Err(MapsError::NotFound(name.to_owned()));
                }
                return Err(MapsError::VersionConflict {
                    current: have,
                    expected: min,
                });
            }
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_err()
            {
                metrics::counter!("pathd_replica_behind_total").increment(1);
                return Err(MapsError::ReplicaBehind(format!(
                    "map {name:?} is at version {have} here; version {min} was not applied within {} ms",
                    max_wait.as_millis()
                )));
            }
        }
    }

    /// The replicated store's connection and lag (`None` with the local data directory);
    /// also sets the replication gauges.
    pub fn store_status(&self) -> Option<StoreStatus> {
        let s = self.inner.store.status()?;
        metrics::gauge!("pathd_store_connected").set(if s.connected { 1.0 } else { 0.0 });
        metrics::gauge!("pathd_replication_lag_messages").set(s.lag_messages as f64);
        metrics::gauge!("pathd_replication_lag_seconds").set(s.lag_seconds);
        metrics::gauge!("pathd_replication_lag_versions").set(s.lag_versions as f64);
        // Per map: bounded by the maps this replica holds (`--max-maps`) plus the ones
        // with something not applied yet.
        for m in &s.maps {
            let map = m.name.clone();
            metrics::gauge!("pathd_replication_map_lag_versions", "map" => map.clone())
                .set(m.lag_versions as f64);
            metrics::gauge!("pathd_replication_map_lag_seconds", "map" => map).set(m.lag_seconds);
        }
        metrics::gauge!("pathd_replication_applied_position").set(s.applied_position as f64);
        Some(s)
    }

    /// Starts applying the replicated store's feed (if it has one): a task that applies
    /// every mutation in store order until [`Maps::drain`] stops it.
    fn follow(&self) {
        let Some(mut feed) = self.inner.store.feed() else {
            return;
        };
        let me = self.clone();
        let stop = self.inner.stop.clone();
        let task = tokio::spawn(async move {
            loop {
                let rep = tokio::select! {
                    _ = stop.cancelled() => return,
                    rep = feed.recv() => rep,
                };
                let Some(rep) = rep else { return };
                me.apply_replicated(rep).await;
            }
        });
        *self.inner.follower.lock().expect("follower lock") = Some(task);
    }

    /// Waits until every write task has finished (shutdown; new writes are still taken
    /// until the server stops accepting requests).
    pub async fn drain(&self) {
        // A startup recovery still waiting for the store stops waiting (writes queued
        // behind it then fail fast, unacknowledged, like any write to an unreachable store),
        // and writes parked on a recovery that will not finish (the loader is stopped
        // first) are refused.
        self.inner.store.close();
        self.inner.closing.cancel();
        self.inner.writes.close();
        if tokio::time::timeout(DRAIN_WRITES_WITHIN, self.inner.writes.wait())
            .await
            .is_err()
        {
            tracing::error!(
                running = self.inner.writes.len(),
                "writes still running after {DRAIN_WRITES_WITHIN:?}; stopping without them \
                 (none of them was acknowledged)"
            );
        }
        self.inner.stop.cancel();
        let follower = self.inner.follower.lock().expect("follower lock").take();
        if let Some(task) = follower {
            let _ = task.await;
        }
    }

    /// Checks that the store can be used as configured ([`MapStore::connect`]): at start,
    /// before anything is served. Idempotent (a connected store answers at once).
    pub async fn connect_store(&self) -> Result<(), StoreError> {
        let store = Arc::clone(&self.inner.store);
        tokio::task::spawn_blocking(move || store.connect())
            .await
            .map_err(|e| StoreError::Io(std::io::Error::other(e)))?
    }
}
