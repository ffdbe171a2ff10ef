//! Live maps: subscriptions kept on an optimal path while their map changes and their
//! agents move, with the repaired paths pushed to their event streams.
//!
//! # Shape
//!
//! The [`Hub`] holds every subscription ([`Sub`]: its agent's position and last path, and
//! its [`Feed`] of events). Subscriptions of one map with the same goal and agent size form
//! a *group* that shares one goal-rooted search ([`GoalTree`], see its docs): a patch
//! reaches the tree once, then the members it can reach answer from it (see "Which groups a
//! patch reaches" below), so a subscription costs about
//! its path, not a search of its own. After a raise-only patch, a member whose path the
//! patch touched repairs forward from its agent with the tree's old values as heuristic
//! (cheap wherever the wall fell); the tree itself is settled after the events are out.
//! Subscriptions live in memory only; after a restart clients resubscribe.
//!
//! # Which groups a patch reaches
//!
//! Per map, an index of 64x64-cell buckets maps to the groups whose interest box (the
//! tree's, see [`GoalTree::interest`]) touches the bucket; a set `wide` holds the groups
//! whose interest is [`Interest::Everything`] (a member without a path) and those with work
//! queued or running. A patch looks up the buckets of its changed cells, adds `wide`, and
//! checks each candidate's exact box: far patches cost a few hash look-ups. Boxes only
//! grow, so buckets are only added after a drain; they are removed when the group ends.
//!
//! Within a group, a raise-only patch reaches only the members whose paths pass by a changed
//! cell, found through the group's path index by tile (module `reach`, which says why that
//! is exact); a lowering patch reaches every member. Only those are repaired and counted in
//! [`Delivery`], so a patch costs its cells, the groups whose region it falls in and the
//! members it reaches, on the write's path a few look-ups each; the repairs run on the pool.
//!
//! A group with work queued or running gets every patch regardless of its box: its box is
//! being recomputed. This is decided under the group's `work` lock, which the worker also
//! takes to finish (publish its new box and clear `scheduled`), so no patch can fall
//! between the old box and the new one.
//!
//! # Where repairs run
//!
//! (The driver is one piece for every kind, module `driver`: subscription groups, flow
//! fields and live plans each queue their own work and schedule the thing; the reapers
//! share one idle list, [`lease::idle`].)
//!
//! On the search pool ([`Compute`]), never on the async runtime. A driver task takes the
//! scheduled groups in arrival order and runs them in two passes, first every group's
//! answers (the tree takes the patch in, the members repair and publish), then every tree's
//! settling, so no group's background work holds up another's events; each pass in jobs of
//! at most [`JOB_SUBS`] groups, at most one job per worker thread at a time, each admitted with
//! [`Compute::run_background`]: a repair *waits* for a worker instead of being dropped when
//! the pool is saturated, while queries keep their own admission (repairs and flow-field
//! repairs together hold at most `threads` of the `threads + queue_depth` permits, one lane
//! budget for every background driver, so they never make a query get `503` on their own),
//! and short jobs let queued queries interleave with a large fan-out.
//!
//! Calls on one tree see patches, moves and joins in order: they are queued per group
//! (under the hub's index lock, which also orders them against other patches of the map),
//! and one worker at a time drains a group's queue; consecutive patches are merged into
//! one update with the union of their changed cells and the newest grid.
//!
//! # Metrics
//!
//! `pathd_subscriptions` (gauge), `pathd_subscription_memory_bytes` (gauge: shared searches
//! and paths, updated after every repair), `pathd_repairs_total{change}` (per member answer that
//! searched or changed, and per move; `change` is the outcome, `move` for moves),
//! `pathd_repair_duration_seconds` (histogram), `pathd_subscription_events_total` (events
//! published), `pathd_sse_events_sent_total` (frames written to streams),
//! `pathd_patches_total`, `pathd_patch_deliveries_total` (subscriptions patches reached). Each drained group runs in a `repair` span (map, goal).

mod driver;
mod error;
pub mod feed;
pub mod flows;
mod group;
mod join;
pub mod lease;
mod patches;
pub mod plans;
mod reach;
mod sub;
mod tasks;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pathd_engine::grid::bounding_box;
use pathd_engine::{GoalTree, Grid, Interest, Limits, Point, QueryError};
use tokio::sync::oneshot;

pub use error::LiveError;
use error::{not_found, too_many};
use group::{Group, GroupKey, Item};
use tasks::{drive, finish, memory_gauge, reap};
use tokio_util::sync::CancellationToken;

use crate::compute::Compute;
use crate::config::Config;
use crate::live::flows::Flows;
use crate::live::plans::Plans;
pub use feed::{Event, Feed, Next};
use sub::random_hex128;
pub use sub::{StreamGuard, Sub};

/// Side of an index bucket in cells.
const BUCKET: u32 = 64;
/// Most groups one repair job drains before giving its worker back.
pub const JOB_SUBS: usize = 32;

type Bucket = (u32, u32);

/// The subscriptions of one map.
struct MapSubs {
    /// The map's newest grid and version the hub has seen (moves and joins run on it).
    grid: Arc<Grid>,
    version: u64,
    subs: HashMap<String, Arc<Sub>>,
    groups: HashMap<GroupKey, Arc<Group>>,
    buckets: HashMap<Bucket, HashSet<GroupKey>>,
    wide: HashSet<GroupKey>,
}

impl MapSubs {
    /// Bytes held by the map's groups (trees and agents, as of their last drain).
    fn bytes(&self) -> usize {
        self.groups
            .values()
            .map(|g| g.bytes.load(std::sync::atomic::Ordering::Relaxed))
            .sum()
    }

    fn unindex(&mut self, key: GroupKey, buckets: Option<(Bucket, Bucket)>) {
        if let Some((lo, hi)) = buckets {
            for by in lo.1..=hi.1 {
                for bx in lo.0..=hi.0 {
                    if let Some(set) = self.buckets.get_mut(&(bx, by)) {
                        set.remove(&key);
                        if set.is_empty() {
                            self.buckets.remove(&(bx, by));
                        }
                    }
                }
            }
        }
        self.wide.remove(&key);
    }

    /// Indexes group `key` under `interest` (growing its bucket rectangle) and clears or
    /// sets its `wide` membership.
    fn index(&mut self, key: GroupKey, interest: Interest, w: &mut group::Work) {
        match interest {
            Interest::Everything => {
                self.wide.insert(key);
            }
            Interest::Region { min, max } => {
                self.wide.remove(&key);
                let lo = (min.x / BUCKET, min.y / BUCKET);
                let hi = (max.x / BUCKET, max.y / BUCKET);
                let (lo, hi) = match w.buckets {
                    Some((a, b)) => (
                        (a.0.min(lo.0), a.1.min(lo.1)),
                        (b.0.max(hi.0), b.1.max(hi.1)),
                    ),
                    None => (lo, hi),
                };
                if w.buckets != Some((lo, hi)) {
                    for by in lo.1..=hi.1 {
                        for bx in lo.0..=hi.0 {
                            self.buckets.entry((bx, by)).or_default().insert(key);
                        }
                    }
                    w.buckets = Some((lo, hi));
                }
            }
        }
    }

    /// Drops group `key` when it has no members and no work (lock order: index, work,
    /// members).
    fn drop_if_idle(&mut self, key: GroupKey) {
        let Some(g) = self.groups.get(&key) else {
            return;
        };
        let w = g.work.lock().expect("work lock");
        if w.scheduled || !g.members.lock().expect("members lock").is_empty() {
            return;
        }
        let buckets = w.buckets;
        drop(w);
        self.groups.remove(&key);
        self.unindex(key, buckets);
    }
}

/// Counters of the hub (tests and `GET` answers read them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HubStats {
    /// Live subscriptions.
    pub subscriptions: usize,
    /// Repairs run (`update` calls and moves).
    pub repairs: u64,
    /// Events published.
    pub events: u64,
}

/// Handle to every subscription (cheap to clone).
#[derive(Clone)]
pub struct Hub {
    inner: Arc<HubInner>,
}

struct HubInner {
    compute: Compute,
    per_map: usize,
    total: usize,
    /// Memory budgets (bytes) per map and per server.
    bytes_per_map: usize,
    bytes_total: usize,
    ttl: Duration,
    ring: usize,
    shutdown: CancellationToken,
    /// Every subscription by id.
    subs: Mutex<HashMap<String, Arc<Sub>>>,
    /// The index lock: per-map subscriptions, buckets and newest grid. Held for patch
    /// delivery, move queueing and a worker's finish; never across an `.await`.
    maps: Mutex<HashMap<String, MapSubs>>,
    /// Groups with work, in arrival order, for the driver.
    driver: driver::Driver<Group>,
    /// The driver and the reaper start with the first subscription (inside the runtime).
    started: AtomicBool,
    repairs: AtomicU64,
    events: AtomicU64,
    /// Live flow fields: patches, map deletions and replacements reach them through the hub.
    flows: Flows,
    /// Live multi-agent plans: reached the same way.
    plans: Plans,
}

/// What a patch did to the subscriptions of its map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// Subscriptions the patch reaches (module `reach`): their repairs are queued.
    pub delivered: usize,
}

impl Hub {
    /// A hub under `config`'s limits, running repairs on `compute`, ending streams when
    /// `shutdown` is cancelled.
    pub fn new(config: &Config, compute: Compute, shutdown: CancellationToken) -> Self {
        Hub {
            inner: Arc::new(HubInner {
                compute: compute.clone(),
                per_map: config.max_subscriptions_per_map,
                total: config.max_subscriptions,
                bytes_per_map: config.max_subscription_bytes_per_map,
                bytes_total: config.max_subscription_bytes,
                ttl: Duration::from_secs(config.subscription_ttl_secs.max(1)),
                ring: config.subscription_event_buffer.max(1),
                shutdown: shutdown.clone(),
                subs: Mutex::default(),
                maps: Mutex::default(),
                driver: driver::Driver::default(),
                started: AtomicBool::new(false),
                repairs: AtomicU64::new(0),
                events: AtomicU64::new(0),
                flows: Flows::new(config, compute.clone(), shutdown.clone()),
                plans: Plans::new(config, compute.clone(), shutdown.clone()),
            }),
        }
    }

    /// The hub's counters now.
    pub fn stats(&self) -> HubStats {
        HubStats {
            subscriptions: self.inner.subs.lock().expect("subs lock").len(),
            repairs: self.inner.repairs.load(Ordering::Relaxed),
            events: self.inner.events.load(Ordering::Relaxed),
        }
    }

    /// Cancelled when the server shuts down (streams end).
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    /// The live flow fields (patches reach them through [`Hub::on_patch`]).
    pub fn flows(&self) -> &Flows {
        &self.inner.flows
    }

    /// The live multi-agent plans (patches reach them through [`Hub::on_patch`]).
    pub fn plans(&self) -> &Plans {
        &self.inner.plans
    }

    /// The subscription `id`, marked active, or `404 subscription_not_found`.
    pub fn get(&self, id: &str) -> Result<Arc<Sub>, LiveError> {
        let sub = self.inner.subs.lock().expect("subs lock").get(id).cloned();
        let sub = sub.ok_or_else(|| not_found(id))?;
        sub.touch();
        Ok(sub)
    }

    /// Subscriptions of `map` and the bytes they hold (shared searches and paths, as of
    /// their groups' last repair).
    pub fn usage(&self, map: &str) -> (usize, usize) {
        let maps = self.inner.maps.lock().expect("index lock");
        maps.get(map)
            .map_or((0, 0), |ms| (ms.subs.len(), ms.bytes()))
    }

    /// `429 too_many_subscriptions` when `map` (or the server) is full: by count or by
    /// memory budget.
    pub fn check_room(&self, map: &str) -> Result<(), LiveError> {
        let (map_bytes, all_bytes) = {
            let maps = self.inner.maps.lock().expect("index lock");
            let all: usize = maps.values().map(MapSubs::bytes).sum();
            (maps.get(map).map_or(0, MapSubs::bytes), all)
        };
        if all_bytes >= self.inner.bytes_total {
            return Err(too_many(format!(
                "the subscriptions on this server use {all_bytes} bytes, the budget is {}",
                self.inner.bytes_total
            )));
        }
        if map_bytes >= self.inner.bytes_per_map {
            return Err(too_many(format!(
                "the subscriptions on map {map:?} use {map_bytes} bytes, the budget is {}",
                self.inner.bytes_per_map
            )));
        }
        let total = self.inner.subs.lock().expect("subs lock").len();
        let on_map = self
            .inner
            .maps
            .lock()
            .expect("index lock")
            .get(map)
            .map_or(0, |m| m.subs.len());
        if total >= self.inner.total {
            return Err(too_many(format!(
                "this server holds at most {} subscriptions",
                self.inner.total
            )));
        }
        if on_map >= self.inner.per_map {
            return Err(too_many(format!(
                "map {map:?} holds at most {} subscriptions",
                self.inner.per_map
            )));
        }
        Ok(())
    }

    /// Queues a move of `sub`'s agent to `to` and waits for the repair (`400` on a wall or
    /// off the map; the state is then unchanged).
    pub async fn move_to(&self, sub: &Arc<Sub>, to: Point) -> Result<(), LiveError> {
        let (tx, rx) = oneshot::channel();
        {
            let mut maps = self.inner.maps.lock().expect("index lock");
            let Some(ms) = maps.get_mut(&sub.map) else {
                return Err(not_found(&sub.id));
            };
            if !ms.subs.contains_key(&sub.id) {
                return Err(not_found(&sub.id));
            }
            let group = &sub.group;
            let mut w = group.work.lock().expect("work lock");
            w.queue.push_back(Item::Move {
                sub: Arc::clone(sub),
                to,
                grid: Arc::clone(&ms.grid),
                version: ms.version,
                reply: tx,
            });
            if !w.scheduled {
                w.scheduled = true;
                ms.wide.insert(group.key);
                drop(w);
                let group = Arc::clone(group);
                drop(maps);
                self.schedule(vec![group]);
            }
        }
        match rx.await {
            Ok(r) => r.map_err(LiveError::from),
            Err(_) => Err(not_found(&sub.id)), // ended while the move waited
        }
    }

    /// Ends subscription `id` with a final event `reason`; false when there was none.
    pub fn remove(&self, id: &str, reason: &'static str) -> bool {
        let Some(sub) = self.inner.subs.lock().expect("subs lock").remove(id) else {
            return false;
        };
        {
            let mut maps = self.inner.maps.lock().expect("index lock");
            if let Some(ms) = maps.get_mut(&sub.map) {
                ms.subs.remove(id);
            }
            leave_group(&mut maps, &sub);
        }
        sub.close(reason);
        self.gauge();
        true
    }

    fn gauge(&self) {
        let n = self.inner.subs.lock().expect("subs lock").len();
        metrics::gauge!("pathd_subscriptions").set(n as f64);
    }

    fn schedule(&self, groups: Vec<Arc<Group>>) {
        self.inner.driver.schedule(groups);
    }

    fn start_tasks(&self) {
        if self.inner.started.swap(true, Ordering::AcqRel) {
            return;
        }
        tokio::spawn(drive(Arc::clone(&self.inner)));
        tokio::spawn(reap(self.clone()));
    }
}

/// Takes `sub` out of its group, and the group (and the map's entry) out of the index when
/// that leaves them empty and idle. Under the index lock (`maps`).
fn leave_group(maps: &mut HashMap<String, MapSubs>, sub: &Arc<Sub>) {
    sub.group.leave(sub);
    if let Some(ms) = maps.get_mut(&sub.map) {
        ms.drop_if_idle(sub.group.key);
        if ms.subs.is_empty() && ms.groups.is_empty() {
            maps.remove(&sub.map);
        }
    }
    memory_gauge(maps);
}
