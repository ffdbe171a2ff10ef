//! Maps placed, not copied everywhere (`--placement K`).
//!
//! Each map is held by the `K` live members that rank highest for its name under the
//! membership's rendezvous hashing ([`super::members::ranked`], the rule that gives a
//! subscription its owner). A replica that does not hold a map keeps only its summary
//! ([`Placement::stub`]: name, version, size and the figures of the last whole map it
//! read) and follows its mutations in the stream by version; the gate
//! (`crate::http::gate::place`) forwards the map's requests to a member that holds it.
//!
//! **Moves.** Every member's heartbeat names the maps it holds and has ready. When the
//! membership changes, a replica that now ranks among a map's `K` loads the map from the
//! stream ([`crate::maps::Maps::acquire`], under the map's write order, so no mutation is
//! missed or applied twice) and says so in its next heartbeat (sent at once); a replica
//! that no longer ranks drops its copy only once a member that does rank says it holds the
//! map ([`crate::maps::Maps::release_placed`]), and keeps it while subscriptions of this replica
//! run on it. So a map stays answerable throughout; while no member has it ready (its only
//! holder killed, the next one still loading), requests wait up to
//! [`super::FORWARD_WAIT`] and then answer `503 store_unavailable` with `Retry-After`.
//!
//! Without `--placement` (or with `all`) every replica holds every map and nothing here
//! runs. Bundled maps (files of the maps directory that were never written) are held by
//! every replica: only maps in the stream are placed.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use serde::Serialize;

use super::Member;
use crate::derived::summary::MapSummary;

/// Who holds what (cheap to clone); inactive without `--placement K`.
#[derive(Clone, Default)]
pub struct Placement {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Replicas per map (`None`: every replica holds every map).
    k: Option<usize>,
    /// This replica's id (set by the cluster).
    me: OnceLock<String>,
    /// The live members as the cluster last saw them (this one included once registered).
    live: RwLock<Vec<Member>>,
    /// Set once this replica is a member and has watched the membership for a heartbeat:
    /// before that it holds nothing placed (it would take every map for its own).
    settled: AtomicBool,
    /// Summaries of the maps held elsewhere, by name.
    stubs: RwLock<BTreeMap<String, MapSummary>>,
    /// Maps being loaded here now.
    loading: Mutex<HashSet<String>>,
    /// Maps loaded here (placement moves in) and dropped (moves out).
    acquired: AtomicU64,
    released: AtomicU64,
    /// Requests for maps forwarded to their holders.
    forwarded: AtomicU64,
}

/// What `/readyz` and `/healthz` show of placement.
#[derive(Debug, Serialize)]
pub struct PlacementHealth {
    /// Replicas that hold each map.
    pub replicas_per_map: usize,
    /// Maps held here (loaded, with their derived state), by name.
    pub held: Vec<String>,
    /// Maps held elsewhere, of which this replica keeps only the summary.
    pub summaries_only: usize,
    /// Maps loaded here because placement moved them here, since start.
    pub moves_in: u64,
    /// Maps dropped here because placement moved them elsewhere, since start.
    pub moves_out: u64,
    /// Requests for maps held elsewhere forwarded to a holder, since start.
    pub forwarded_requests: u64,
    /// Cells of the maps held here.
    pub map_cells: u64,
    /// Bytes of their derived state (JPS+ tables, landmarks, subgoal graphs, HPA*).
    pub derived_bytes: u64,
}

impl Placement {
    /// `k` replicas per map (`None`: all). Only a cluster (`--store nats://...`) places.
    pub fn new(k: Option<usize>) -> Placement {
        Placement {
            inner: Arc::new(Inner {
                k,
                ..Inner::default()
            }),
        }
    }

    /// True with `--placement K`.
    pub fn active(&self) -> bool {
        self.inner.k.is_some()
    }

    /// Replicas per map (`None`: all).
    pub fn k(&self) -> Option<usize> {
        self.inner.k
    }

    #[cfg_attr(not(feature = "nats"), allow(dead_code))]
    pub(super) fn set_me(&self, id: &str) {
        let _ = self.inner.me.set(id.to_owned());
    }

    /// The membership as the cluster sees it now; `settled` once this replica is a member
    /// whose view of the others is complete.
    #[cfg_attr(not(feature = "nats"), allow(dead_code))]
    pub(super) fn set_live(&self, live: Vec<Member>, settled: bool) {
        *self.inner.live.write().expect("placement lock") = live;
        self.inner.settled.store(settled, Ordering::Release);
    }

    /// The ids of the members that should hold `name`, best first.
    pub fn holders(&self, name: &str) -> Vec<String> {
        let live = self.inner.live.read().expect("placement lock");
        let k = self.inner.k.unwrap_or(usize::MAX);
        ranked(name, &live).into_iter().take(k).collect()
    }

    /// True when this replica should hold `name` (always without placement; never before
    /// it is a settled member).
    pub fn wants(&self, name: &str) -> bool {
        if !self.active() {
            return true;
        }
        if !self.inner.settled.load(Ordering::Acquire) {
            return false;
        }
        let Some(me) = self.inner.me.get() else {
            return false;
        };
        self.holders(name).iter().any(|h| h == me)
    }

    /// The summary of `name`, held elsewhere.
    pub fn stub(&self, name: &str) -> Option<MapSummary> {
        self.inner
            .stubs
            .read()
            .expect("stubs lock")
            .get(name)
            .cloned()
    }

    /// Every map held elsewhere, by name.
    pub fn stubs(&self) -> Vec<MapSummary> {
        self.inner
            .stubs
            .read()
            .expect("stubs lock")
            .values()
            .cloned()
            .collect()
    }

    /// Names of the maps held elsewhere.
    pub fn stub_names(&self) -> Vec<String> {
        self.inner
            .stubs
            .read()
            .expect("stubs lock")
            .keys()
            .cloned()
            .collect()
    }

    /// Keeps `summary` (the derived-state parts dropped) as the map's, held elsewhere.
    pub fn set_stub(&self, mut summary: MapSummary) {
        summary.hpa = None;
        summary.jps_plus = None;
        summary.subgoal = None;
        summary.sized = Vec::new();
        summary.subscriptions = None;
        summary.recovery = None;
        self.inner
            .stubs
            .write()
            .expect("stubs lock")
            .insert(summary.name.clone(), summary);
        self.gauges();
    }

    /// A mutation of `name` (held elsewhere) produced `version`.
    pub fn bump_stub(&self, name: &str, version: u64) {
        if let Some(s) = self.inner.stubs.write().expect("stubs lock").get_mut(name) {
            s.version = s.version.max(version);
        }
    }

    /// `name` is held here now, or deleted.
    pub fn drop_stub(&self, name: &str) {
        self.inner.stubs.write().expect("stubs lock").remove(name);
        self.gauges();
    }

    /// Marks `name` as being loaded here; false when it already is.
    pub fn start_loading(&self, name: &str) -> bool {
        self.inner
            .loading
            .lock()
            .expect("loading lock")
            .insert(name.to_owned())
    }

    /// `name` is no longer being loaded (`moved`: it was, and is held here now).
    pub fn done_loading(&self, name: &str, moved: bool) {
        self.inner
            .loading
            .lock()
            .expect("loading lock")
            .remove(name);
        if moved {
            self.inner.acquired.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("pathd_placement_moves_total", "direction" => "in").increment(1);
        }
    }

    /// `name` was dropped here (held by others now).
    pub fn released(&self) {
        self.inner.released.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("pathd_placement_moves_total", "direction" => "out").increment(1);
    }

    /// A request was forwarded to a holder.
    pub fn forwarded(&self) {
        self.inner.forwarded.fetch_add(1, Ordering::Relaxed);
    }

    fn gauges(&self) {
        let n = self.inner.stubs.read().expect("stubs lock").len();
        metrics::gauge!("pathd_maps_summaries_only").set(n as f64);
    }

    /// The health figures (`held` and the memory figures come from the registry).
    pub fn health(&self, held: Vec<String>, map_cells: u64, derived_bytes: u64) -> PlacementHealth {
        PlacementHealth {
            replicas_per_map: self.inner.k.unwrap_or(0),
            held,
            summaries_only: self.inner.stubs.read().expect("stubs lock").len(),
            moves_in: self.inner.acquired.load(Ordering::Relaxed),
            moves_out: self.inner.released.load(Ordering::Relaxed),
            forwarded_requests: self.inner.forwarded.load(Ordering::Relaxed),
            map_cells,
            derived_bytes,
        }
    }
}

/// The maps service asks the placement which maps to hold (`crate::maps::Placer`).
impl crate::maps::Placer for Placement {
    fn active(&self) -> bool {
        Placement::active(self)
    }
    fn wants(&self, name: &str) -> bool {
        Placement::wants(self, name)
    }
    fn set_stub(&self, summary: MapSummary) {
        Placement::set_stub(self, summary)
    }
    fn bump_stub(&self, name: &str, version: u64) {
        Placement::bump_stub(self, name, version)
    }
    fn drop_stub(&self, name: &str) {
        Placement::drop_stub(self, name)
    }
}

/// The ids of `live` ordered by rendezvous score for `name`, best first.
#[cfg(feature = "nats")]
fn ranked(name: &str, live: &[Member]) -> Vec<String> {
    super::members::ranked(name, live)
        .into_iter()
        .map(|m| m.id.clone())
        .collect()
}

#[cfg(not(feature = "nats"))]
fn ranked(_name: &str, live: &[Member]) -> Vec<String> {
    // Without the cluster nothing is placed (`Placement::active` is never true).
    live.iter().map(|m| m.id.clone()).collect()
}

/// One round of placement (the cluster's loop, every half heartbeat): follows the
/// membership, loads the maps that moved here, and drops the ones that moved elsewhere once
/// a member they moved to says it holds them.
#[cfg(feature = "nats")]
pub(super) async fn tick(inner: &Arc<super::node::Inner>, maps: &crate::maps::Maps, settled: bool) {
    let p = &inner.placement;
    if !p.active() {
        return;
    }
    let live = inner.members.live();
    let member = live.iter().any(|m| m.id == inner.replica);
    p.set_live(live, settled && member);
    if !(settled && member) {
        return;
    }
    for name in p.stub_names() {
        if !p.wants(&name) || !p.start_loading(&name) {
            continue;
        }
        let (p, maps, i) = (p.clone(), maps.clone(), Arc::clone(inner));
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            match maps.acquire(&name).await {
                Ok(moved) => {
                    if moved {
                        metrics::histogram!("pathd_placement_move_seconds")
                            .record(started.elapsed().as_secs_f64());
                        i.beat_now.store(true, Ordering::Release);
                        i.kick.notify_one();
                    }
                    p.done_loading(&name, moved);
                }
                Err(e) => {
                    tracing::warn!(map = %name, error = %e, "placed here but not loaded; retrying");
                    p.done_loading(&name, false);
                }
            }
        });
    }
    for entry in maps.registry().list() {
        let name = &entry.name;
        if p.wants(name) {
            continue;
        }
        // Dropped only once a member it moved to has it ready.
        let holding = inner.members.holding(name);
        let ready_elsewhere = p
            .holders(name)
            .iter()
            .any(|h| *h != inner.replica && holding.iter().any(|m| &m.id == h));
        if ready_elsewhere && maps.release_placed(name).await {
            p.released();
            inner.beat_now.store(true, Ordering::Release);
        }
    }
    metrics::gauge!("pathd_maps_held").set(maps.registry().len() as f64);
}
