//! Replication lag: the head watcher (what the stream holds of every map) and the store's
//! status (how far this replica is behind it).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use async_nats::connection::State;

use super::NatsStore;
use super::codec::{header, name_of_subject};
use super::follow::Follower;
use super::shared::Shared;
use crate::store::{MapLag, StoreStatus};

/// The head watcher: reads the headers of every map's last message, then of every new
/// one, so the status can say how many versions each map is behind (the stream's newest
/// version minus the applied one) and since when. It reads ahead of the feed, which waits
/// for the maps service and fetches whole maps; a headers-only consumer costs a few bytes
/// per mutation.
pub(super) async fn watch_heads(mut heads: Follower, shared: Arc<Shared>) {
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

impl NatsStore {
    /// The connection and lag ([`crate::store::MapStore::status`]).
    pub(super) fn lag(&self) -> StoreStatus {
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
        StoreStatus {
            kind: "nats",
            connected,
            applied_position,
            lag_messages,
            lag_versions,
            lag_seconds,
            maps,
        }
    }
}
