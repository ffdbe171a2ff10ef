//! What the store, its feed and its head watcher share: per map, what this replica has
//! applied and what the stream holds beyond it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::SystemTime;

use async_nats::Client;
use async_nats::jetstream::{self, stream};
use tokio::sync::watch;

/// What the store and its feed task share.
#[derive(Default)]
pub(super) struct Shared {
    /// Per map: what this replica has applied (the compare-and-set base).
    pub(super) names: Mutex<HashMap<String, NameState>>,
    /// Read from the stream, not yet applied: by stream sequence.
    pub(super) unapplied: Mutex<BTreeMap<u64, Pending>>,
    /// Highest stream sequence applied; bumped on every [`MapStore::applied`].
    pub(super) progress: watch::Sender<u64>,
    /// Messages the server still had to deliver after the last one read.
    pub(super) pending: Mutex<u64>,
    /// Per map: the newest version the stream holds, as the head watcher reads it.
    pub(super) heads: Mutex<HashMap<String, Head>>,
}

/// What the stream holds of one map beyond what is applied here (see `lag::watch_heads`).
#[derive(Debug, Default)]
pub(super) struct Head {
    /// The newest version stored.
    pub(super) version: u64,
    /// Versions stored but (maybe) not applied yet, with when they were stored; pruned
    /// up to the applied version at every new message of the map and every status read,
    /// so it holds little more than the versions the map is behind.
    pub(super) unapplied: BTreeMap<u64, SystemTime>,
}

impl Head {
    /// Forgets the versions up to `applied`.
    pub(super) fn prune(&mut self, applied: u64) {
        while let Some(e) = self.unapplied.first_entry()
            && *e.key() <= applied
        {
            e.remove();
        }
    }
}

impl Shared {
    /// Records that the mutation at `seq` of `name` (producing `version`) is applied.
    pub(super) fn applied(&self, name: &str, version: u64, seq: u64) {
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
pub(super) struct Conn {
    pub(super) client: Client,
    pub(super) js: jetstream::Context,
    pub(super) stream: stream::Stream,
}

#[derive(Clone, Debug, Default)]
pub(super) struct NameState {
    /// The map's version (or last version, deleted).
    pub(super) version: u64,
    /// Stream sequence of its last mutation.
    pub(super) seq: u64,
    /// True when the stream holds a whole map of the current chain.
    pub(super) full: bool,
    /// The object holding that whole map, if it is one.
    pub(super) object: Option<String>,
    /// Patch bytes and count after the whole map.
    pub(super) tail_bytes: u64,
    pub(super) tail_count: u64,
    /// The last mutation was a delete.
    pub(super) deleted: bool,
}

/// What a message read but not yet applied changes in its map's [`NameState`].
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) meta: Meta,
    /// When it was stored (for the lag in seconds).
    pub(super) stored: SystemTime,
}

#[derive(Clone, Debug)]
pub(super) struct Meta {
    pub(super) op: Op,
    pub(super) body: Option<Option<String>>,
    pub(super) cells_bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Put,
    Patch,
    Delete,
}

impl NameState {
    pub(super) fn advance(&mut self, version: u64, seq: u64, meta: &Meta) {
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
