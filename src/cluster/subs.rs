//! Subscription records in the KV bucket `pathd-subs`: written by their owner, claimed by
//! a takeover when the owner is gone (see the module docs of [`crate::cluster`]).
//!
//! Every write of a record is a compare-and-set on the revision its writer last saw, so an
//! owner that lost its record (taken over while it was cut off from NATS) notices at its next
//! write, ends its copy, and stops writing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, kv};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use super::members::{Beat, Members};
use super::{ClusterHealth, HEARTBEAT, View, sha256_hex};
use crate::config::Config;
use crate::http::dto::PathRequest;
use crate::http::error::{ApiError, ErrorCode};
use crate::live::Sub;
use crate::state::AppState;
use crate::store::NatsOptions;

const MEMBERS: &str = "pathd-members";
const SUBS: &str = "pathd-subs";

/// A subscription's definition as stored.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct Record {
    /// The replica that computes its repairs and serves its streams.
    pub owner: String,
    /// The hub key it was joined under (`map` or `map~profile`).
    pub key: String,
    /// The map.
    pub map: String,
    /// What it was created with, but the start (the agent is at `position`).
    pub definition: Definition,
    /// The agent's position now.
    pub position: [u32; 2],
    /// The public `seq` of its newest event.
    pub last_seq: u64,
    /// SHA-256 of its secret, hex.
    pub secret_sha256: String,
}

/// The create request of a subscription, as its record keeps it: the fields a
/// subscription's search takes (the start is the record's `position`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct Definition {
    goal: [u32; 2],
    profile: Option<String>,
    size: Option<u32>,
    algorithm: Option<String>,
    weight: Option<f64>,
    max_expansions: Option<u64>,
    timeout_ms: Option<u64>,
    smooth: Option<bool>,
    heuristic: Option<String>,
    tie_break: Option<String>,
}

impl Definition {
    /// `r`'s definition, heading for `goal` (the subscription's: the request may name it
    /// in more than one way).
    fn of(r: &PathRequest, goal: pathd_engine::Point) -> Definition {
        Definition {
            goal: [goal.x, goal.y],
            profile: r.profile.clone(),
            size: r.size,
            algorithm: r.algorithm.clone(),
            weight: r.weight,
            max_expansions: r.max_expansions,
            timeout_ms: r.timeout_ms,
            smooth: r.smooth,
            heuristic: r.heuristic.clone(),
            tie_break: r.tie_break.clone(),
        }
    }

    /// The create request again, from `start` (through the request's own parser, so that
    /// fields it gains later stay unset).
    pub(super) fn request(&self, start: [u32; 2]) -> Result<PathRequest, ApiError> {
        let mut v = serde_json::to_value(self).map_err(ApiError::internal)?;
        v["start"] = serde_json::json!(start);
        serde_json::from_value(v).map_err(ApiError::internal)
    }
}

/// The cluster's state (one per server).
pub(crate) struct Inner {
    /// This replica's id: 12 random hex digits, new at every start.
    pub replica: String,
    /// Its advertised base URL (`--advertise-url`, else made from the bound address by
    /// `run`).
    advertise: OnceLock<String>,
    configured_url: Option<String>,
    opts: NatsOptions,
    replicas: usize,
    /// The buckets, once connected (members, subs).
    kv: OnceLock<(kv::Store, kv::Store)>,
    pub(super) members: Members,
    /// Subscriptions held here, by public id.
    pub(super) owned: Mutex<HashMap<String, View>>,
    /// Every record, as the watcher last saw it, with its revision and when the watcher
    /// first saw it (the takeover scan; forwarding's first guess of the owner).
    pub(super) mirror: Mutex<HashMap<String, (Record, u64, Instant)>>,
    /// Set once this replica's membership key was written (a subscription is created here
    /// only after that, so that nobody takes it for an orphan).
    registered: std::sync::atomic::AtomicBool,
    /// The client that forwards requests to other replicas.
    pub(super) http: reqwest::Client,
    /// Wakes the takeover scan (a forwarded request found the owner gone).
    pub(super) kick: Notify,
    /// Cancelled when the server shuts down (set by `run`).
    shutdown: OnceLock<tokio_util::sync::CancellationToken>,
    /// The hub (set by `run`): a copy whose record was taken ends there.
    hub: OnceLock<crate::live::Hub>,
    /// Which maps this replica holds (`--placement K`; inactive otherwise).
    pub(super) placement: super::Placement,
    /// The maps held here as the last heartbeat said (`--placement K`).
    pub(super) held: Mutex<Option<Vec<String>>>,
    /// Set when the next heartbeat should go at once (a map was loaded or dropped here).
    pub(super) beat_now: std::sync::atomic::AtomicBool,
}

fn store_unavailable(why: impl std::fmt::Display) -> ApiError {
    tracing::warn!(error = %why, "subscription records unavailable");
    ApiError {
        retry_after: Some(1),
        ..ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::StoreUnavailable,
            "the subscription records in NATS are not reachable; retry shortly",
        )
    }
}

impl Inner {
    pub fn new(config: &Config, opts: NatsOptions, placement: super::Placement) -> Inner {
        let replica = format!("{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff);
        placement.set_me(&replica);
        Inner {
            replica,
            advertise: OnceLock::new(),
            configured_url: config
                .replication
                .advertise_url
                .as_ref()
                .map(|u| u.trim_end_matches('/').to_owned()),
            replicas: opts.replicas.max(1),
            opts,
            kv: OnceLock::new(),
            members: Members::default(),
            owned: Mutex::default(),
            mirror: Mutex::default(),
            registered: std::sync::atomic::AtomicBool::new(false),
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(1))
                .build()
                .expect("an HTTP client"),
            kick: Notify::new(),
            shutdown: OnceLock::new(),
            hub: OnceLock::new(),
            placement,
            held: Mutex::default(),
            beat_now: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn health(&self) -> ClusterHealth {
        ClusterHealth {
            replica: self.replica.clone(),
            advertise_url: self.advertise.get().cloned().unwrap_or_default(),
            members: self.members.live(),
            owned_subscriptions: self.owned.lock().expect("owned lock").len(),
            placement: None,
        }
    }

    pub fn view(&self, id: &str) -> Option<View> {
        let owned = self.owned.lock().expect("owned lock");
        owned.get(id).cloned()
    }

    /// The URL of live member `id`.
    pub(super) fn member_url(&self, id: &str) -> Option<String> {
        self.members.url(id)
    }

    /// The subscription bucket; waits a little for it while the first connection is made
    /// (a replica is ready before it has reached NATS).
    async fn subs(&self) -> Result<&kv::Store, ApiError> {
        let t = Instant::now();
        loop {
            if let Some((_, subs)) = self.kv.get() {
                return Ok(subs);
            }
            if t.elapsed() >= super::FORWARD_WAIT {
                return Err(store_unavailable("not connected yet"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Record `id` as the watcher last saw it (may lag the bucket by a moment).
    pub(super) fn mirrored(&self, id: &str) -> Option<Record> {
        let m = self.mirror.lock().expect("mirror lock");
        m.get(id).map(|(r, _, _)| r.clone())
    }

    /// The subscription record `id` (`Ok(None)`: there is none).
    pub(super) async fn record(&self, id: &str) -> Result<Option<Record>, ApiError> {
        let subs = self.subs().await?;
        match subs.entry(id).await {
            Ok(Some(e)) if e.operation == kv::Operation::Put => {
                Ok(serde_json::from_slice(&e.value).ok())
            }
            Ok(_) => Ok(None),
            Err(e) => Err(store_unavailable(e)),
        }
    }
}

/// Stores the record of `sub` (just joined here) under a new public id.
pub(super) async fn adopt(
    inner: &Arc<Inner>,
    sub: &Arc<Sub>,
    request: &PathRequest,
) -> Result<View, ApiError> {
    register(inner).await?;
    let id = format!("{}-{:032x}", inner.replica, rand::random::<u128>());
    let rec = Record {
        owner: inner.replica.clone(),
        key: sub.map.clone(),
        map: sub.map.split('~').next().unwrap_or_default().to_owned(),
        definition: Definition::of(request, sub.goal),
        position: [sub.position().x, sub.position().y],
        last_seq: sub.feed().current().seq,
        secret_sha256: sha256_hex(sub.secret()),
    };
    // A write that must complete: on a task of its own, the request only waits for it.
    let i = Arc::clone(inner);
    let (sub2, id2) = (Arc::clone(sub), id.clone());
    let task = tokio::spawn(async move { own(&i, id2, sub2, rec, 0, false).await });
    task.await.map_err(ApiError::internal)?
}

/// Writes this replica's membership key unless the heartbeat already has (a replica serves
/// requests from its start; it becomes a member once ready, or at its first subscription).
async fn register(inner: &Inner) -> Result<(), ApiError> {
    if inner.registered.load(std::sync::atomic::Ordering::Acquire) {
        return Ok(());
    }
    inner.subs().await?; // connected
    let (members, _) = inner.kv.get().expect("connected above");
    let url = inner.advertise.get().cloned().unwrap_or_default();
    let held = inner.held.lock().expect("held lock").clone();
    let beat = serde_json::to_vec(&Beat { url, held }).map_err(ApiError::internal)?;
    members
        .put(&inner.replica, beat.into())
        .await
        .map_err(store_unavailable)?;
    inner
        .registered
        .store(true, std::sync::atomic::Ordering::Release);
    Ok(())
}

/// Writes `rec` (create, or claim at `revision`), registers the subscription as owned here
/// and starts its record keeper.
pub(super) async fn own(
    inner: &Arc<Inner>,
    id: String,
    sub: Arc<Sub>,
    rec: Record,
    offset: u64,
    taken_over: bool,
) -> Result<View, ApiError> {
    let subs = inner.subs().await?;
    let body = serde_json::to_vec(&rec).map_err(ApiError::internal)?;
    let revision = subs
        .put(&id, body.into())
        .await
        .map_err(store_unavailable)?;
    let view = View {
        id: id.clone(),
        local: sub.id.clone(),
        offset,
        taken_over,
        secret_sha256: Some(rec.secret_sha256.clone()),
        poke: Some(Arc::new(Notify::new())),
    };
    inner
        .owned
        .lock()
        .expect("owned lock")
        .insert(id.clone(), view.clone());
    tokio::spawn(keep(Arc::clone(inner), view.clone(), sub, rec, revision));
    Ok(view)
}

/// Deleted through this replica: drop the record (the keeper sees the closed feed too, but
/// the answer should not come before the record is gone).
pub(super) async fn forget(inner: &Arc<Inner>, id: &str) {
    inner.owned.lock().expect("owned lock").remove(id);
    if let Some((_, subs)) = inner.kv.get() {
        let subs = subs.clone();
        let id = id.to_owned();
        let _ = tokio::spawn(async move { subs.delete(&id).await }).await;
    }
}

/// Keeps `view`'s record up to date: after every event and move, and deletes it when the
/// subscription ends. Stops when the record was taken from it (then ends the copy here).
async fn keep(inner: Arc<Inner>, view: View, sub: Arc<Sub>, mut rec: Record, mut revision: u64) {
    let Some((_, subs)) = inner.kv.get().cloned() else {
        return;
    };
    let shutdown = inner.shutdown.get().cloned().unwrap_or_default();
    let poke = view.poke.clone().unwrap_or_default();
    let mut rx = sub.watch();
    loop {
        let (closed, seq) = {
            let f = sub.feed();
            (f.is_closed(), f.current().seq)
        };
        if closed {
            inner.owned.lock().expect("owned lock").remove(&view.id);
            let _ = subs.delete_expect_revision(&view.id, Some(revision)).await;
            return;
        }
        let p = sub.position();
        let next = Record {
            position: [p.x, p.y],
            last_seq: view.seq(seq),
            ..rec.clone()
        };
        if next != rec {
            let body = serde_json::to_vec(&next).unwrap_or_default();
            match subs.update(&view.id, body.into(), revision).await {
                Ok(r) => {
                    revision = r;
                    rec = next;
                }
                Err(e) => {
                    // Taken over (or deleted) meanwhile?
                    match subs.entry(&view.id).await {
                        Ok(Some(e)) if e.operation == kv::Operation::Put => {
                            let theirs: Option<Record> = serde_json::from_slice(&e.value).ok();
                            if theirs.is_some_and(|r| r.owner == inner.replica) {
                                revision = e.revision; // ours still: write again
                                continue;
                            }
                            lost(&inner, &view);
                            return;
                        }
                        Ok(_) => {
                            lost(&inner, &view);
                            return;
                        }
                        Err(_) => {
                            tracing::warn!(error = %e, subscription = %view.id, "record not written; retrying");
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

/// The record was taken from this replica (or deleted elsewhere): its copy here ends (its
/// streams get a final `resync` and end; clients reconnect and reach the owner).
fn lost(inner: &Inner, view: &View) {
    tracing::warn!(subscription = %view.id, "subscription owned elsewhere now; ending the copy here");
    inner.owned.lock().expect("owned lock").remove(&view.id);
    if let Some(hub) = inner.hub.get() {
        hub.remove(&view.local, "resync");
    }
}

/// Connects, then runs the heartbeat, the watchers and the takeover scan until shutdown.
pub(super) async fn run(inner: Arc<Inner>, state: AppState, bound: std::net::SocketAddr) {
    let url = inner
        .configured_url
        .clone()
        .unwrap_or_else(|| default_url(bound));
    let _ = inner.advertise.set(url.clone());
    let token = state.shutdown_token().clone();
    let _ = inner.shutdown.set(token.clone());
    let _ = inner.hub.set(state.live().clone());
    let connected = tokio::select! {
        c = connect(&inner) => c,
        _ = token.cancelled() => return,
    };
    let Some((members_kv, subs_kv)) = connected else {
        return;
    };
    let _ = inner.kv.set((members_kv.clone(), subs_kv.clone()));
    let watch_members = {
        let (i, kv) = (Arc::clone(&inner), members_kv.clone());
        tokio::spawn(async move {
            loop {
                if let Err(e) = i.members.follow(&kv).await {
                    tracing::warn!(error = %e, "membership watch ended; watching again");
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    let watch_subs = {
        let (i, kv) = (Arc::clone(&inner), subs_kv.clone());
        tokio::spawn(async move {
            loop {
                if let Err(e) = mirror(&i, &kv).await {
                    tracing::warn!(error = %e, "subscription watch ended; watching again");
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    let mut tick = tokio::time::interval(HEARTBEAT / 2);
    let mut last_beat: Option<Instant> = None;
    let mut member_since: Option<Instant> = None;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = inner.kick.notified() => {}
            _ = token.cancelled() => break,
        }
        // Members are ready replicas: nothing is forwarded to (or taken over by) one that
        // has not loaded its maps.
        if !state.is_ready() {
            continue;
        }
        let now = inner
            .beat_now
            .swap(false, std::sync::atomic::Ordering::AcqRel);
        if now || last_beat.is_none_or(|t| t.elapsed() >= HEARTBEAT) {
            let held = inner.placement.active().then(|| {
                state
                    .registry()
                    .list()
                    .iter()
                    .map(|e| e.name.clone())
                    .collect::<Vec<_>>()
            });
            *inner.held.lock().expect("held lock") = held.clone();
            let beat = serde_json::to_vec(&Beat {
                url: url.clone(),
                held,
            })
            .unwrap_or_default();
            match members_kv.put(&inner.replica, beat.into()).await {
                Ok(_) => {
                    last_beat = Some(Instant::now());
                    member_since.get_or_insert_with(Instant::now);
                    inner
                        .registered
                        .store(true, std::sync::atomic::Ordering::Release);
                }
                Err(e) => tracing::warn!(error = %e, "membership heartbeat not written"),
            }
        }
        super::takeover::scan(&inner, &state, &subs_kv).await;
        // A member for a heartbeat has seen every other member's key refreshed at least
        // once: its view of the membership is whole, and placement can follow it.
        let settled = member_since.is_some_and(|t| t.elapsed() >= HEARTBEAT);
        super::placement::tick(&inner, &state, settled).await;
    }
    // Leaving: the others take this replica's subscriptions over at once.
    let _ = members_kv.delete(&inner.replica).await;
    watch_members.abort();
    watch_subs.abort();
}

/// `http://<bound address>`; an unspecified address (`0.0.0.0`) is replaced by `$HOSTNAME`
/// (a container's name on its network), else `127.0.0.1`.
fn default_url(bound: std::net::SocketAddr) -> String {
    if bound.ip().is_unspecified() {
        let host = std::env::var("HOSTNAME")
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "127.0.0.1".into());
        format!("http://{host}:{}", bound.port())
    } else {
        format!("http://{bound}")
    }
}

async fn connect(inner: &Inner) -> Option<(kv::Store, kv::Store)> {
    let mut delay = Duration::from_millis(100);
    loop {
        match try_connect(inner).await {
            Ok(kvs) => return Some(kvs),
            Err(e) => tracing::warn!(error = %e, "cluster buckets not available yet; retrying"),
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

async fn try_connect(inner: &Inner) -> Result<(kv::Store, kv::Store), String> {
    let client = crate::store::nats::connect_options(&inner.opts)
        .await?
        .retry_on_initial_connect()
        .connect(inner.opts.servers.as_slice())
        .await
        .map_err(|e| e.to_string())?;
    let js = jetstream::new(client);
    // The bucket's stream made here, as async-nats's `create_key_value` would: that call
    // first asks for the account's info, which it cannot parse from nats-server 2.9
    // (Debian 12's).
    let open = async |bucket: &str, max_age: Duration, storage| {
        if let Ok(s) = js.get_key_value(bucket).await {
            return Ok(s);
        }
        let config = jetstream::stream::Config {
            name: format!("KV_{bucket}"),
            subjects: vec![format!("$KV.{bucket}.>")],
            max_messages_per_subject: 1,
            max_age,
            storage,
            allow_rollup: true,
            deny_delete: true,
            allow_direct: true,
            num_replicas: inner.replicas,
            discard: jetstream::stream::DiscardPolicy::New,
            ..Default::default()
        };
        js.get_or_create_stream(config)
            .await
            .map_err(|e| format!("{e:?}"))?;
        js.get_key_value(bucket).await.map_err(|e| format!("{e:?}"))
    };
    let members = open(
        MEMBERS,
        Duration::from_secs(60),
        jetstream::stream::StorageType::Memory,
    )
    .await?;
    let subs = open(SUBS, Duration::ZERO, jetstream::stream::StorageType::File).await?;
    Ok((members, subs))
}

/// Follows the subscription bucket into [`Inner::mirror`].
async fn mirror(inner: &Inner, kv: &kv::Store) -> Result<(), String> {
    let mut watch = kv.watch_all().await.map_err(|e| e.to_string())?;
    while let Some(entry) = watch.next().await {
        let entry = entry.map_err(|e| e.to_string())?;
        let mut m = inner.mirror.lock().expect("mirror lock");
        match entry.operation {
            kv::Operation::Put => {
                if let Ok(r) = serde_json::from_slice::<Record>(&entry.value) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_gives_back_the_request_from_the_agents_position() {
        let req: PathRequest = serde_json::from_value(serde_json::json!({
            "start": [1, 2], "goal": [7, 8], "profile": "boat", "size": 2,
            "max_expansions": 99, "timeout_ms": 50, "min_version": 3
        }))
        .unwrap();
        let d = Definition::of(&req, pathd_engine::Point::new(7, 8));
        let stored: Definition = serde_json::from_slice(&serde_json::to_vec(&d).unwrap()).unwrap();
        let again = stored.request([4, 5]).unwrap();
        assert_eq!(again.start, [4, 5]);
        assert_eq!(
            serde_json::to_value(stored).unwrap()["goal"],
            serde_json::json!([7, 8])
        );
        assert_eq!(
            (again.profile.as_deref(), again.size),
            (Some("boat"), Some(2))
        );
        assert_eq!(
            (again.max_expansions, again.timeout_ms),
            (Some(99), Some(50))
        );
        assert_eq!(again.min_version, None, "a takeover waits for no version");
    }
}
