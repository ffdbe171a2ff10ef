//! One world behind any load balancer: with `--store nats://...`, subscriptions belong to the
//! fleet, not to the replica that happened to receive the `POST`.
//!
//! # Shape
//!
//! - **Membership** ([`members`]): every ready replica puts `{id → advertised URL}` into the
//!   JetStream KV bucket `pathd-members` every [`HEARTBEAT`]; a replica whose key was not
//!   refreshed for [`MEMBER_TTL`] (by the watcher's own clock, so replica clocks may
//!   disagree) is gone. A replica shutting down deletes its key at once.
//! - **Ownership** ([`records`], one machinery for every kind of live thing): a
//!   subscription's or flow field's id is `<replica>-<32 hex>`; its definition is a record in
//!   a KV bucket of its kind, with its `owner`, its map, the SHA-256 of its secret and its
//!   last `seq`, written on create, after every event (and move) with a compare-and-set on
//!   the record's revision, and deleted when it ends (`DELETE`, idle expiry, its map gone).
//!   The id's replica part is only a hint; the record's `owner` is the truth.
//!   Subscriptions ([`subs`], bucket `pathd-subs`) store the create request (profile, goal,
//!   size, options) and the agent's position; flow fields ([`flows`], bucket `pathd-flows`)
//!   their goal, region, cost bound, size, profile and TTL.
//! - **Forwarding** (`crate::http::gate`, at the edge; [`directory`] says who holds what):
//!   a request for a subscription or flow field this replica does not hold is sent on to
//!   the owner's URL (the SSE body streamed through), headers kept; the answer says who served it in [`REPLICA_HEADER`]. While an owner is gone and nobody
//!   has taken its records over yet, the request waits (at most [`FORWARD_WAIT`]) and then
//!   answers `503 store_unavailable` with `Retry-After`.
//! - **Takeover** ([`takeover`]): when an owner leaves the membership, the live replica that
//!   wins rendezvous hashing of the id over the live members (with `--placement K`, over the
//!   holders of its map) claims the record (compare-and-set) and makes the thing again from
//!   its stored definition on its current map: a subscription joins its goal group again, a
//!   flow field is computed again. It keeps its id and secret; its `seq` continues after the
//!   stored last seq, and its first event there is a `resync` (a flow field's says
//!   `why: taken_over`): the repairs the old owner had computed died with it, so which of
//!   its events a client saw cannot be replayed.
//!
//! - **Placement** ([`placement`], `--placement K`): each map is held by the `K` live
//!   members that rank highest for its name under the same rendezvous hashing; the others
//!   keep its summary and the gate (`crate::http::gate::place`) forwards its requests to a member whose
//!   heartbeat says it holds it. A takeover goes to a holder of the map.
//!
//! - **Wiring** ([`services`]): the cluster imports neither the HTTP edge nor the server's
//!   state. `run` hands its tasks the [`Services`] they use (hub, maps service, readiness,
//!   shutdown) and a [`Rejoin`], which the edge implements with the code its create routes
//!   use, for takeovers; the edge's gate asks the cluster who holds what ([`directory`]) and
//!   does the HTTP itself; failures are [`ClusterError`]s the edge maps to answers.
//!
//! Inside a replica, the hub ([`crate::live::Hub`]) knows nothing of this: the cluster keeps
//! a [`View`] per subscription that maps the public id and `seq` onto the hub's own
//! subscription (after a takeover the hub's subscription is a new one, so its `seq`s start
//! at 1 again and the view adds the stored last seq). A flow field taken over is registered
//! under its public id with its feed going on after the stored `seq`; its view only checks
//! the secret against the stored hash.

mod directory;
#[cfg(feature = "nats")]
mod flows;
#[cfg(feature = "nats")]
mod members;
#[cfg(feature = "nats")]
mod node;
pub mod placement;
#[cfg(feature = "nats")]
mod records;
mod services;
#[cfg(feature = "nats")]
mod subs;
#[cfg(feature = "nats")]
mod takeover;

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::live::{Event, Sub};
pub use placement::{Placement, PlacementHealth};
pub use services::{ClusterError, FlowDefinition, Held, Refused, Rejoin, Services, SubDefinition};

/// The header that names the replica that served a subscription request.
pub const REPLICA_HEADER: &str = "x-pathd-replica";
/// Set on a request one replica forwards to another (which never forwards it again).
pub const FORWARDED_HEADER: &str = "x-pathd-forwarded-by";
/// How often a replica refreshes its membership key.
pub const HEARTBEAT: Duration = Duration::from_millis(1000);
/// A member whose key was not refreshed for this long is gone.
pub const MEMBER_TTL: Duration = Duration::from_millis(3000);
/// Longest a request for a subscription waits for its owner (or a takeover).
pub const FORWARD_WAIT: Duration = Duration::from_secs(8);

/// How a subscription of this replica's hub appears on the wire.
#[derive(Clone)]
pub struct View {
    /// The public id.
    pub id: String,
    /// The hub's id of the subscription.
    pub local: String,
    /// Added to the hub's `seq`s (the stored last seq when taken over; 0 otherwise).
    pub offset: u64,
    /// Taken over from another replica: the hub's first event is shown as `resync`.
    pub taken_over: bool,
    /// SHA-256 of the secret (hex), when the cluster keeps it (else the hub's secret rules).
    secret_sha256: Option<String>,
    /// Woken after a move, so the stored record follows the agent.
    poke: Option<Arc<tokio::sync::Notify>>,
}

impl View {
    /// The view of a subscription outside any cluster: ids and seqs as the hub has them.
    pub fn plain(sub: &Sub) -> View {
        View {
            id: sub.id.clone(),
            local: sub.id.clone(),
            offset: 0,
            taken_over: false,
            secret_sha256: None,
            poke: None,
        }
    }

    /// The public `seq` of the hub's `seq`.
    pub fn seq(&self, local: u64) -> u64 {
        local + self.offset
    }

    /// The hub's `seq` for a public `Last-Event-ID` (one before the hub's first event when
    /// it names an event from before a takeover, so the stream starts with the `resync`).
    pub fn local_last(&self, public: u64) -> u64 {
        public.saturating_sub(self.offset)
    }

    /// The hub's event as the public one.
    pub fn event(&self, ev: &Event) -> Event {
        let reason = if self.taken_over && ev.seq == 1 {
            "resync"
        } else {
            ev.reason
        };
        Event {
            id: self.id.clone(),
            seq: self.seq(ev.seq),
            reason,
            ..ev.clone()
        }
    }

    /// Whether `given` is the secret (constant-time comparisons): against the stored hash
    /// when the cluster keeps one, else by `plain` (the hub's own secret).
    pub fn secret_matches(&self, given: &str, plain: impl FnOnce(&str) -> bool) -> bool {
        match &self.secret_sha256 {
            Some(h) => crate::secret::same(&sha256_hex(given), h),
            None => plain(given),
        }
    }

    /// Tells the record keeper the agent moved.
    pub fn moved(&self) {
        if let Some(p) = &self.poke {
            p.notify_one();
        }
    }
}

/// SHA-256 of `s` in lowercase hex (secrets are stored only so).
#[cfg(feature = "nats")]
fn sha256_hex(s: &str) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(s.as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(not(feature = "nats"))]
fn sha256_hex(s: &str) -> String {
    // Without the cluster no view carries a hash; never called.
    s.to_owned()
}

/// One live member, as `/readyz` shows it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Member {
    /// Its replica id.
    pub id: String,
    /// Its advertised base URL.
    pub url: String,
}

/// The cluster as `/readyz` and `/healthz` report it.
#[derive(Debug, Serialize)]
pub struct ClusterHealth {
    /// This replica's id (the owner part of the subscription ids it creates).
    pub replica: String,
    /// The base URL other replicas forward to.
    pub advertise_url: String,
    /// Live members (this one included once registered), by id.
    pub members: Vec<Member>,
    /// Subscriptions this replica owns.
    pub owned_subscriptions: usize,
    /// Which maps this replica holds (`--placement K` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<PlacementHealth>,
}

/// The cluster handle (cheap to clone); disabled without `--store nats://...`.
#[derive(Clone, Default)]
pub struct Cluster {
    #[cfg(feature = "nats")]
    inner: Option<Arc<node::Inner>>,
}

impl Cluster {
    /// The cluster for `config`: enabled with `--store nats://...` (and the `nats` feature).
    pub fn new(config: &crate::Config, placement: Placement) -> Cluster {
        #[cfg(feature = "nats")]
        {
            if let Ok(Some(opts)) = config.nats() {
                return Cluster {
                    inner: Some(Arc::new(node::Inner::new(config, opts, placement))),
                };
            }
        }
        let _ = (config, placement);
        Cluster::default()
    }

    /// The placement of maps (`None`: no cluster, or every replica holds every map).
    pub fn placement(&self) -> Option<&Placement> {
        #[cfg(feature = "nats")]
        {
            self.inner
                .as_ref()
                .map(|i| &i.placement)
                .filter(|p| p.active())
        }
        #[cfg(not(feature = "nats"))]
        {
            None
        }
    }

    /// True with `--store nats://...`.
    pub fn enabled(&self) -> bool {
        #[cfg(feature = "nats")]
        {
            self.inner.is_some()
        }
        #[cfg(not(feature = "nats"))]
        {
            false
        }
    }

    /// Membership, health and `/readyz` figures (`None`: no cluster); `registry` gives
    /// the placement's figures of the maps held here.
    pub fn health(&self, registry: &crate::derived::Registry) -> Option<ClusterHealth> {
        #[cfg(feature = "nats")]
        {
            self.inner.as_ref().map(|i| {
                let mut h = i.health();
                if i.placement.active() {
                    let held = registry.list();
                    let cells = held
                        .iter()
                        .map(|e| e.grid.width() as u64 * e.grid.height() as u64)
                        .sum();
                    h.placement = Some(i.placement.health(
                        held.iter().map(|e| e.name.clone()).collect(),
                        cells,
                        registry.budget().resident_bytes(),
                    ));
                }
                h
            })
        }
        #[cfg(not(feature = "nats"))]
        {
            let _ = registry;
            None
        }
    }

    /// Starts the membership heartbeat, the watchers and the takeover loop ([`crate::run`]
    /// joins the task on shutdown); `None` without a cluster.
    /// `bound` is the listener's address (the default advertised URL is made from it).
    pub fn start(
        &self,
        services: Services,
        bound: std::net::SocketAddr,
    ) -> Option<tokio::task::JoinHandle<()>> {
        #[cfg(feature = "nats")]
        {
            self.inner
                .as_ref()
                .map(|i| tokio::spawn(node::run(Arc::clone(i), services, bound)))
        }
        #[cfg(not(feature = "nats"))]
        {
            let _ = (services, bound);
            None
        }
    }

    /// This replica's id (`None`: no cluster).
    pub fn replica(&self) -> Option<&str> {
        #[cfg(feature = "nats")]
        {
            self.inner.as_ref().map(|i| i.replica.as_str())
        }
        #[cfg(not(feature = "nats"))]
        {
            None
        }
    }

    /// Makes a subscription just joined on this replica the fleet's: gives it its public id
    /// and stores its record. Without a cluster its view is [`View::plain`].
    pub async fn adopt(
        &self,
        sub: &Arc<Sub>,
        definition: SubDefinition,
    ) -> Result<View, ClusterError> {
        #[cfg(feature = "nats")]
        if let Some(i) = &self.inner {
            return subs::adopt_sub(i, sub, definition).await;
        }
        let _ = definition;
        Ok(View::plain(sub))
    }

    /// Makes a flow field just made on this replica the fleet's: stores its record (its id
    /// is the public one already). Without a cluster: `None`.
    pub async fn adopt_flow(
        &self,
        flow: &Arc<crate::live::flows::Flow>,
    ) -> Result<Option<View>, ClusterError> {
        #[cfg(feature = "nats")]
        if let Some(i) = &self.inner {
            return flows::adopt_flow(i, flow).await.map(Some);
        }
        let _ = flow;
        Ok(None)
    }
}
