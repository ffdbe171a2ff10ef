//! Durable maps: the [`MapStore`] trait and its embedded implementation, the local data
//! directory ([`LocalStore`]).
//!
//! A store holds, per map name, a totally ordered sequence of mutations (upload, patch,
//! delete), each tagged with the map version it produced, plus snapshots that let recovery
//! skip most of the sequence. That shape is what a replicated store (a NATS JetStream stream
//! per map, say) provides too: [`MapStore::append`] is the compare-and-set on the version
//! (JetStream's expected last subject sequence), [`MapStore::recover`] is bootstrapping from
//! snapshot plus tail, and [`MapStore::replay`] reads the sequence from a position.
//!
//! The maps service ([`crate::maps`]) is the only caller, and calls `append` for a map only
//! under that map's write order, so the store sees each map's mutations one at a time and in
//! version order. Every method blocks (file I/O, fsync): callers run them off the async
//! runtime.

pub mod local;
pub mod log;
#[cfg(feature = "nats")]
pub mod nats;
pub mod nats_options;
#[cfg(feature = "nats")]
pub mod nats_publish;
pub mod snapshot;

use std::fmt;

use pathd_engine::{Grid, Point};

pub use local::LocalStore;
#[cfg(feature = "nats")]
pub use nats::NatsStore;
pub use nats_options::{NatsOptions, NatsTls};

/// One mutation of a map, as it is made durable.
#[derive(Clone, Copy, Debug)]
pub enum Mutation<'a> {
    /// The map was created or replaced by this grid.
    Put(&'a Grid),
    /// These cells changed to these costs; `after` is the whole map afterwards (a store
    /// may snapshot it instead of logging the cells).
    Patch {
        /// The changed cells with their new costs.
        cells: &'a [(Point, u8)],
        /// The map after the patch.
        after: &'a Grid,
    },
    /// The map was deleted; its name's next map continues past this version.
    Delete,
}

/// A logged patch: the version it produced and the cells it changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// The map version after the patch.
    pub version: u64,
    /// Changed cells and their new costs.
    pub cells: Vec<(Point, u8)>,
}

/// What recovery found for one name.
#[derive(Debug)]
pub enum Recovered {
    /// A map to serve.
    Live {
        /// Its name.
        name: String,
        /// Its version.
        version: u64,
        /// Its cells (boxed: a grid is much bigger than the other variants).
        grid: Box<Grid>,
        /// Versions the log's tail lost, when it was cut (the map is then served under a
        /// version past them).
        lost: Option<LostTail>,
    },
    /// A deleted map: the name is free, its next version continues past `version`.
    Deleted {
        /// Its name.
        name: String,
        /// Its last version.
        version: u64,
    },
    /// Data that cannot be trusted: never served as an older version (see [`Damage`]).
    Damaged(Damage),
}

/// Versions that a cut patch log lost: handed out (the log's high-water slots say so) but
/// no longer in the log. The map is served as the log leaves it, under `served_as`, a
/// version past them, so that no version ever names two different maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LostTail {
    /// The first version lost.
    pub from: u64,
    /// The last version lost (the highest ever handed out).
    pub to: u64,
    /// The version the map is served as from now on.
    pub served_as: u64,
}

/// Why a map's durable data cannot be served, and what repairing it would drop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// The map's name.
    pub name: String,
    /// What is wrong, for people.
    pub reason: String,
    /// The newest version that could be rebuilt from the good data, if any.
    pub last_good: Option<u64>,
    /// Versions after `last_good` that were acknowledged and would be dropped by a repair,
    /// as far as they can be read (a corrupt record's own version may be unreadable).
    pub dropped: Vec<u64>,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.reason)?;
        match self.last_good {
            Some(v) => write!(f, "; last good version {v}")?,
            None => write!(f, "; no good version")?,
        }
        if !self.dropped.is_empty() {
            write!(
                f,
                "; a repair drops acknowledged versions {:?}",
                self.dropped
            )?;
        }
        Ok(())
    }
}

/// Why a store operation failed.
#[derive(Debug)]
pub enum StoreError {
    /// The version does not follow the store's last version of the map (compare-and-set).
    Conflict {
        /// The map.
        name: String,
        /// The store's last version.
        last: u64,
        /// The version offered.
        offered: u64,
    },
    /// The store could not be written or read; nothing was recorded (the store undid any
    /// partial write).
    Io(std::io::Error),
    /// A failed write could not be undone: the map's durable data is no longer trusted.
    Damaged(Damage),
    /// This replica has not applied the store's newest mutations of a map in time.
    Behind(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Conflict {
                name,
                last,
                offered,
            } => write!(
                f,
                "store conflict on {name:?}: last version {last}, offered {offered}"
            ),
            StoreError::Io(e) => write!(f, "store I/O error: {e}"),
            StoreError::Damaged(d) => write!(f, "store damaged: {d}"),
            StoreError::Behind(m) => write!(f, "replica behind: {m}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> Self {
        StoreError::Io(e)
    }
}

/// A mutation read back from a replicated store, in the store's order: written by any
/// replica (this one included), for the maps service to apply
/// ([`crate::maps::Maps::apply_replicated`]).
#[derive(Debug)]
pub struct Replicated {
    /// The map.
    pub name: String,
    /// The map version the mutation produced (a delete: the map's last version).
    pub version: u64,
    /// Its position in the store (the stream sequence); increasing.
    pub position: u64,
    /// What changed.
    pub change: Change,
}

/// The content of a [`Replicated`] mutation.
#[derive(Debug)]
pub enum Change {
    /// The map was created or replaced.
    Put(Grid),
    /// Cells changed; `full` is the whole map afterwards when the writer stored it too (a
    /// snapshot point of the log).
    Patch {
        /// The changed cells with their new costs.
        cells: Vec<(Point, u8)>,
        /// The map afterwards, when stored.
        full: Option<Grid>,
    },
    /// The map was deleted.
    Delete,
    /// A message of the map this replica cannot read (why): the map is damaged here until
    /// a whole map of a later version arrives.
    Unreadable(String),
}

/// How a store is doing, for `/readyz` and `/metrics` (replicated stores only).
#[derive(Clone, Debug, PartialEq)]
pub struct StoreStatus {
    /// The store kind (`nats`).
    pub kind: &'static str,
    /// Whether the store is reachable now.
    pub connected: bool,
    /// Store position of the last mutation applied here.
    pub applied_position: u64,
    /// Mutations stored but not yet applied here (as of the last one read).
    pub lag_messages: u64,
    /// Versions stored but not yet applied here, summed over the maps.
    pub lag_versions: u64,
    /// Age of the oldest stored mutation not yet applied here, in seconds (0 when none).
    pub lag_seconds: f64,
    /// Per map (live, or with something not applied yet), by name.
    pub maps: Vec<MapLag>,
}

/// How far one map is behind the store here.
#[derive(Clone, Debug, PartialEq)]
pub struct MapLag {
    /// The map.
    pub name: String,
    /// The newest version the store holds (as far as this replica has heard).
    pub stream_version: u64,
    /// The version applied here.
    pub applied_version: u64,
    /// `stream_version - applied_version`. A delete keeps the map's last version, so a
    /// delete not applied yet shows in `lag_seconds`, not here.
    pub lag_versions: u64,
    /// Age of the oldest stored version not applied here, in seconds (0 when none).
    pub lag_seconds: f64,
}

/// Durable, per-map ordered mutations with snapshots (see the module docs).
pub trait MapStore: Send + Sync + 'static {
    /// Checks at start that the store can be used as configured: `Err` for a configuration
    /// error (bad credentials or certificates), which stops the server; a store that is
    /// merely not reachable yet is `Ok` and keeps trying by itself.
    fn connect(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Reads back every map: the newest snapshot of each plus the mutations after it. Cuts
    /// a torn tail (the last record of a write that was never acknowledged); reports
    /// anything else that does not read back as [`Recovered::Damaged`].
    fn recover(&self) -> Result<Vec<Recovered>, StoreError>;

    /// Shutdown: a [`MapStore::recover`] still waiting for a store that has not been
    /// reachable gives up (`Err`) instead of outliving the runtime that drives it.
    fn close(&self) {}

    /// Durably records `mutation` as `version` of `name`. Compare-and-set: `version` must
    /// be newer than every version the store holds for `name` (a `Delete` may carry the
    /// current one), else [`StoreError::Conflict`] and nothing is written. On `Ok` the
    /// mutation survives a crash.
    fn append(&self, name: &str, version: u64, mutation: Mutation<'_>) -> Result<(), StoreError>;

    /// The logged patches of `name` after version `after`, in order (from the last
    /// snapshot on: older ones were compacted away).
    fn replay(&self, name: &str, after: u64) -> Result<Vec<LogRecord>, StoreError>;

    /// A replicated store: the mutations stored after what [`MapStore::recover`] returned,
    /// by every replica, in store order, for the maps service to apply. Handed out once
    /// (after `recover`); `None` for a store only this process writes.
    fn feed(&self) -> Option<tokio::sync::mpsc::Receiver<Replicated>> {
        None
    }

    /// The maps service has applied (or found already applied) the mutation of `name` at
    /// `position`, producing `version`: the next `append` for `name` compares against it.
    fn applied(&self, name: &str, version: u64, position: u64) {
        let _ = (name, version, position);
    }

    /// Reads map `name` alone as the store holds it now (its newest whole map and the
    /// patches after it): a replica that holds only some maps (`--placement K`) loads one
    /// that placement moved to it. `Ok(None)`: the store holds nothing of it. Only a
    /// replicated store needs it.
    fn load(&self, name: &str) -> Result<Option<Recovered>, StoreError> {
        let _ = name;
        Ok(None)
    }

    /// Blocks until every mutation of `name` that the store holds now has been applied
    /// here (after [`StoreError::Conflict`]: another replica wrote first). A store only
    /// this process writes is always caught up.
    fn catch_up(&self, name: &str) -> Result<(), StoreError> {
        let _ = name;
        Ok(())
    }

    /// Whether other processes write to this store too (a version this server has not
    /// applied may exist). Cheap, unlike [`MapStore::status`]: asked on every `min_version`.
    fn replicated(&self) -> bool {
        false
    }

    /// Connection and replication lag of a replicated store; `None` for a local one.
    fn status(&self) -> Option<StoreStatus> {
        None
    }
}
