//! The records of the fleet's live things (subscriptions, flow fields) in JetStream KV: one
//! machinery for every [`Kind`], so that storing, claiming, keeping, mirroring and taking
//! over cannot drift apart between them.
//!
//! A record is written by its owner when the thing is made here and after every event (a
//! compare-and-set on the revision its writer last saw, so an owner that lost its record,
//! taken over while it was cut off from NATS, notices at its next write, ends its copy and
//! stops writing), deleted when the thing ends, and claimed by a takeover when the owner is
//! gone (see [`super::takeover`]). Each kind has a bucket of its own; every replica mirrors
//! every bucket (the takeover scan; forwarding's first guess of the owner).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_nats::jetstream::kv;
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, watch};

use super::View;
use super::node::{Inner, store_unavailable};
use super::services::{ClusterError, Refused, Services};

/// A live thing's record: what every kind stores, and the kind's own part (`body`, whose
/// fields sit beside the others in the stored JSON).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct Record<B> {
    /// The replica that computes its repairs and serves its streams.
    pub owner: String,
    /// The hub key it lives under (`map` or `map~profile`).
    pub key: String,
    /// The map.
    pub map: String,
    /// The kind's own part (its definition, and what changes with it).
    #[serde(flatten)]
    pub body: B,
    /// The public `seq` of its newest event.
    pub last_seq: u64,
    /// SHA-256 of its secret, hex.
    pub secret_sha256: String,
}

/// One kind of live thing the fleet keeps records of.
pub(super) trait Kind: Sized + Send + Sync + 'static {
    /// The kind's part of a record.
    type Body: Clone + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// The live thing as this replica's hub holds it.
    type Live: Send + Sync + 'static;
    /// Its KV bucket.
    const BUCKET: &'static str;
    /// Its name in logs.
    const NOUN: &'static str;
    /// Its records in the cluster's state.
    fn records(inner: &Inner) -> &Records<Self>;
    /// The `seq` of its newest event here, and whether it ended.
    fn status(live: &Self::Live) -> (u64, bool);
    /// The body to store now (what changed since `stored`, say the agent's position).
    fn refresh(live: &Self::Live, stored: &Self::Body) -> Self::Body;
    /// A receiver that sees every later event.
    fn watch(live: &Self::Live) -> watch::Receiver<u64>;
    /// Ends the copy held here under the hub's id `local`: its record is another
    /// replica's now (its streams get a final `resync` and end; clients reconnect).
    fn end(hub: &crate::live::Hub, local: &str);
    /// Makes it again here from its record (a takeover), on the map's current version.
    fn rejoin(
        services: &Services,
        id: &str,
        rec: &Record<Self::Body>,
    ) -> impl Future<Output = Result<(Arc<Self::Live>, View), Refused>> + Send;
    /// Counts a takeover that took `seconds`.
    fn taken_over(seconds: f64);
}

/// The records of one kind, as this replica knows them.
pub(super) struct Records<K: Kind> {
    /// The bucket, once connected.
    kv: OnceLock<kv::Store>,
    /// The ones held here, by public id.
    pub owned: Mutex<HashMap<String, View>>,
    /// Every record, as the watcher last saw it, with its revision and when the watcher
    /// first saw it (the takeover scan; forwarding's first guess of the owner).
    pub mirror: Mutex<HashMap<String, Mirrored<K::Body>>>,
}

/// A record as the watcher saw it: with its revision and when the watcher first saw it.
pub(super) type Mirrored<B> = (Record<B>, u64, Instant);

impl<K: Kind> Default for Records<K> {
    fn default() -> Self {
        Records {
            kv: OnceLock::new(),
            owned: Mutex::default(),
            mirror: Mutex::default(),
        }
    }
}

impl<K: Kind> Records<K> {
    /// Sets the bucket (once connected).
    pub fn connected(&self, kv: kv::Store) {
        let _ = self.kv.set(kv);
    }

    /// How many are held here.
    pub fn held(&self) -> usize {
        self.owned.lock().expect("owned lock").len()
    }

    /// The view of `id` when it is held here.
    pub fn view(&self, id: &str) -> Option<View> {
        self.owned.lock().expect("owned lock").get(id).cloned()
    }

    /// The bucket (waits a little while the first connection is made).
    async fn store(&self) -> Result<&kv::Store, ClusterError> {
        super::node::connected(&self.kv).await
    }

    /// Record `id` as the watcher last saw it (may lag the bucket by a moment).
    pub fn mirrored(&self, id: &str) -> Option<Record<K::Body>> {
        let m = self.mirror.lock().expect("mirror lock");
        m.get(id).map(|(r, _, _)| r.clone())
    }

    /// Record `id` (`Ok(None)`: there is none).
    pub async fn record(&self, id: &str) -> Result<Option<Record<K::Body>>, ClusterError> {
        match self.store().await?.entry(id).await {
            Ok(Some(e)) if e.operation == kv::Operation::Put => {
                Ok(serde_json::from_slice(&e.value).ok())
            }
            Ok(_) => Ok(None),
            Err(e) => Err(store_unavailable(e)),
        }
    }

    /// Claims record `id` for `me` at `revision`: the claimed record, or `None` when
    /// another replica claimed it first or it changed meanwhile.
    pub async fn claim(
        &self,
        me: &str,
        id: &str,
        rec: &Record<K::Body>,
        revision: u64,
    ) -> Option<Record<K::Body>> {
        let claimed = Record {
            owner: me.to_owned(),
            ..rec.clone()
        };
        let body = serde_json::to_vec(&claimed).ok()?;
        let kv = self.kv.get()?;
        kv.update(id, body.into(), revision).await.ok()?;
        Some(claimed)
    }

    /// Deletes record `id` (one that cannot live on).
    pub async fn drop_record(&self, id: &str) {
        if let Some(kv) = self.kv.get() {
            let _ = kv.delete(id).await;
        }
    }

    /// Follows the bucket into [`Self::mirror`] until the watch ends (the caller watches
    /// again).
    pub async fn follow(&self) -> Result<(), String> {
        let kv = self.kv.get().ok_or("not connected")?;
        let mut watch = kv.watch_all().await.map_err(|e| e.to_string())?;
        while let Some(entry) = watch.next().await {
            let entry = entry.map_err(|e| e.to_string())?;
            let mut m = self.mirror.lock().expect("mirror lock");
            match entry.operation {
                kv::Operation::Put => {
                    if let Ok(r) = serde_json::from_slice::<Record<K::Body>>(&entry.value) {
                        let seen = m.get(&entry.key).map_or_else(Instant::now, |e| e.2);
                        m.insert(entry.key, (r, entry.revision, seen));
                    }
                }
                kv::Operation::Delete | kv::Operation::Purge => {
                    m.remove(&entry.key);
                }
            }
        }
        Ok(())
    }
}

fn internal(e: impl std::fmt::Display) -> ClusterError {
    ClusterError::Internal(e.to_string())
}

/// Stores the record `rec` of `live` (just made here, `view` its view) under `view.id`: on
/// a task of its own (a write that must complete), the request only waits for it.
pub(super) async fn adopt<K: Kind>(
    inner: &Arc<Inner>,
    live: &Arc<K::Live>,
    view: View,
    rec: Record<K::Body>,
) -> Result<View, ClusterError> {
    super::node::register(inner).await?;
    let i = Arc::clone(inner);
    let live = Arc::clone(live);
    tokio::spawn(async move { own::<K>(&i, live, view, rec).await })
        .await
        .map_err(internal)?
}

/// Writes `rec` (a create, or after a claim), registers `view` as held here and starts the
/// record's keeper.
pub(super) async fn own<K: Kind>(
    inner: &Arc<Inner>,
    live: Arc<K::Live>,
    view: View,
    rec: Record<K::Body>,
) -> Result<View, ClusterError> {
    let records = K::records(inner);
    let kv = records.store().await?;
    let body = serde_json::to_vec(&rec).map_err(internal)?;
    let revision = kv
        .put(&view.id, body.into())
        .await
        .map_err(store_unavailable)?;
    let view = View {
        secret_sha256: Some(rec.secret_sha256.clone()),
        poke: Some(Arc::new(Notify::new())),
        ..view
    };
    records
        .owned
        .lock()
        .expect("owned lock")
        .insert(view.id.clone(), view.clone());
    tokio::spawn(keep::<K>(
        Arc::clone(inner),
        view.clone(),
        live,
        rec,
        revision,
    ));
    Ok(view)
}

/// Ended through this replica: drop the record (the keeper sees the end too, but the answer
/// should not come before the record is gone).
pub(super) async fn forget<K: Kind>(inner: &Inner, id: &str) {
    let records = K::records(inner);
    records.owned.lock().expect("owned lock").remove(id);
    if let Some(kv) = records.kv.get() {
        let kv = kv.clone();
        let id = id.to_owned();
        let _ = tokio::spawn(async move { kv.delete(&id).await }).await;
    }
}

/// Keeps `view`'s record up to date after every event (and move), and deletes it when the
/// thing ends. Stops when the record was taken from it (then ends the copy here).
async fn keep<K: Kind>(
    inner: Arc<Inner>,
    view: View,
    live: Arc<K::Live>,
    mut rec: Record<K::Body>,
    mut revision: u64,
) {
    let records = K::records(&inner);
    let Some(kv) = records.kv.get().cloned() else {
        return;
    };
    let shutdown = inner.shutdown_token();
    let poke = view.poke.clone().unwrap_or_default();
    let mut rx = K::watch(&live);
    loop {
        let (seq, closed) = K::status(&live);
        if closed {
            records.owned.lock().expect("owned lock").remove(&view.id);
            let _ = kv.delete_expect_revision(&view.id, Some(revision)).await;
            return;
        }
        let next = Record {
            body: K::refresh(&live, &rec.body),
            last_seq: view.seq(seq),
            ..rec.clone()
        };
        if next != rec {
            let body = serde_json::to_vec(&next).unwrap_or_default();
            match kv.update(&view.id, body.into(), revision).await {
                Ok(r) => {
                    revision = r;
                    rec = next;
                }
                Err(e) => {
                    // Taken over (or deleted) meanwhile?
                    match kv.entry(&view.id).await {
                        Ok(Some(e)) if e.operation == kv::Operation::Put => {
                            let theirs: Option<Record<K::Body>> =
                                serde_json::from_slice(&e.value).ok();
                            if theirs.is_some_and(|r| r.owner == inner.replica) {
                                revision = e.revision; // ours still: write again
                                continue;
                            }
                            lost::<K>(&inner, &view);
                            return;
                        }
                        Ok(_) => {
                            lost::<K>(&inner, &view);
                            return;
                        }
                        Err(_) => {
                            tracing::warn!(error = %e, id = %view.id, kind = K::NOUN, "record not written; retrying");
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            continue;
                        }
                    }
                }
            }
        }
        tokio::select! {
            r = rx.changed() => if r.is_err() { return },
            _ = poke.notified() => {}
            _ = shutdown.cancelled() => return,
        }
    }
}

/// The record was taken from this replica (or deleted elsewhere): its copy here ends.
fn lost<K: Kind>(inner: &Inner, view: &View) {
    tracing::warn!(id = %view.id, kind = K::NOUN, "owned elsewhere now; ending the copy here");
    K::records(inner)
        .owned
        .lock()
        .expect("owned lock")
        .remove(&view.id);
    if let Some(s) = inner.services() {
        K::end(&s.hub, &view.local);
    }
}
