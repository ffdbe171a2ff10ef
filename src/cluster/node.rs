//! One replica's part in the cluster: its state ([`Inner`]), its connection to the
//! buckets, and the loop that beats, watches and takes over (see the module docs of
//! [`crate::cluster`]).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, kv};
use tokio::sync::Notify;

use super::flows::FlowKind;
use super::members::{Beat, Members};
use super::records::{Kind, Records};
use super::services::{ClusterError, Services};
use super::subs::SubKind;
use super::{ClusterHealth, HEARTBEAT};
use crate::config::Config;
use crate::store::NatsOptions;

const MEMBERS: &str = "pathd-members";

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
    /// The membership bucket, once connected.
    members_kv: OnceLock<kv::Store>,
    pub(super) members: Members,
    /// The subscriptions' records.
    pub(super) subs: Records<SubKind>,
    /// The flow fields' records.
    pub(super) flows: Records<FlowKind>,
    /// Set once this replica's membership key was written (a subscription or flow field is
    /// made here only after that, so that nobody takes it for an orphan).
    registered: std::sync::atomic::AtomicBool,
    /// Wakes the takeover scan (a forwarded request found the owner gone).
    pub(super) kick: Notify,
    /// Cancelled when the server shuts down (set by `run`).
    /// What the cluster's tasks use (set by `run`).
    services: OnceLock<Services>,
    /// Which maps this replica holds (`--placement K`; inactive otherwise).
    pub(super) placement: super::Placement,
    /// The maps held here as the last heartbeat said (`--placement K`).
    pub(super) held: Mutex<Option<Vec<String>>>,
    /// Set when the next heartbeat should go at once (a map was loaded or dropped here).
    pub(super) beat_now: std::sync::atomic::AtomicBool,
}

pub(super) fn store_unavailable(why: impl std::fmt::Display) -> ClusterError {
    tracing::warn!(error = %why, "cluster records unavailable");
    ClusterError::StoreUnavailable(
        "the records of subscriptions and flow fields in NATS are not reachable; retry shortly"
            .into(),
    )
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
            members_kv: OnceLock::new(),
            members: Members::default(),
            subs: Records::default(),
            flows: Records::default(),
            registered: std::sync::atomic::AtomicBool::new(false),
            kick: Notify::new(),
            services: OnceLock::new(),
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
            owned_subscriptions: self.subs.held(),
            placement: None,
        }
    }

    /// Cancelled when the server shuts down (a default token until `run` set it).
    pub(super) fn shutdown_token(&self) -> tokio_util::sync::CancellationToken {
        self.services
            .get()
            .map(|s| s.shutdown.clone())
            .unwrap_or_default()
    }

    /// What the cluster's tasks use (once `run` set it).
    pub(super) fn services(&self) -> Option<&Services> {
        self.services.get()
    }
}

/// Writes this replica's membership key unless the heartbeat already has (a replica serves
/// requests from its start; it becomes a member once ready, or at its first subscription).
pub(super) async fn register(inner: &Inner) -> Result<(), ClusterError> {
    if inner.registered.load(std::sync::atomic::Ordering::Acquire) {
        return Ok(());
    }
    let members = connected(&inner.members_kv).await?;
    let url = inner.advertise.get().cloned().unwrap_or_default();
    let held = inner.held.lock().expect("held lock").clone();
    let beat = serde_json::to_vec(&Beat { url, held })
        .map_err(|e| ClusterError::Internal(e.to_string()))?;
    members
        .put(&inner.replica, beat.into())
        .await
        .map_err(store_unavailable)?;
    inner
        .registered
        .store(true, std::sync::atomic::Ordering::Release);
    Ok(())
}

/// The bucket in `cell`; waits a little for it while the first connection is made (a
/// replica is ready before it has reached NATS).
pub(super) async fn connected(cell: &OnceLock<kv::Store>) -> Result<&kv::Store, ClusterError> {
    let t = Instant::now();
    loop {
        if let Some(kv) = cell.get() {
            return Ok(kv);
        }
        if t.elapsed() >= super::FORWARD_WAIT {
            return Err(store_unavailable("not connected yet"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Mirrors kind `K`'s bucket for as long as the cluster runs (watching again after a
/// watch ended).
fn mirror<K: Kind>(inner: &Arc<Inner>) -> tokio::task::JoinHandle<()> {
    let i = Arc::clone(inner);
    tokio::spawn(async move {
        loop {
            if let Err(e) = K::records(&i).follow().await {
                tracing::warn!(error = %e, kind = K::NOUN, "record watch ended; watching again");
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
}

/// Connects, then runs the heartbeat, the watchers and the takeover scan until shutdown.
pub(super) async fn run(inner: Arc<Inner>, services: Services, bound: std::net::SocketAddr) {
    let url = inner
        .configured_url
        .clone()
        .unwrap_or_else(|| default_url(bound));
    let _ = inner.advertise.set(url.clone());
    let token = services.shutdown.clone();
    let _ = inner.services.set(services.clone());
    let connected = tokio::select! {
        c = connect(&inner) => c,
        _ = token.cancelled() => return,
    };
    let Some((members_kv, subs_kv, flows_kv)) = connected else {
        return;
    };
    let _ = inner.members_kv.set(members_kv.clone());
    inner.subs.connected(subs_kv);
    inner.flows.connected(flows_kv);
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
    let watch_subs = mirror::<SubKind>(&inner);
    let watch_flows = mirror::<FlowKind>(&inner);
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
        if !(services.ready)() {
            continue;
        }
        let now = inner
            .beat_now
            .swap(false, std::sync::atomic::Ordering::AcqRel);
        if now || last_beat.is_none_or(|t| t.elapsed() >= HEARTBEAT) {
            let held = inner.placement.active().then(|| {
                services
                    .maps
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
        super::takeover::scan::<SubKind>(&inner, &services).await;
        super::takeover::scan::<FlowKind>(&inner, &services).await;
        // A member for a heartbeat has seen every other member's key refreshed at least
        // once: its view of the membership is whole, and placement can follow it.
        let settled = member_since.is_some_and(|t| t.elapsed() >= HEARTBEAT);
        super::placement::tick(&inner, &services.maps, settled).await;
    }
    // Leaving: the others take this replica's subscriptions and flow fields over at once.
    let _ = members_kv.delete(&inner.replica).await;
    watch_members.abort();
    watch_subs.abort();
    watch_flows.abort();
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

/// The buckets: members, subscriptions, flow fields.
type Buckets = (kv::Store, kv::Store, kv::Store);

async fn connect(inner: &Inner) -> Option<Buckets> {
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

async fn try_connect(inner: &Inner) -> Result<Buckets, String> {
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
    let file = jetstream::stream::StorageType::File;
    let subs = open(SubKind::BUCKET, Duration::ZERO, file).await?;
    let flows = open(FlowKind::BUCKET, Duration::ZERO, file).await?;
    Ok((members, subs, flows))
}
