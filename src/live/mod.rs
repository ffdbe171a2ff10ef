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

pub mod feed;
pub mod flows;
mod group;
pub mod lease;
pub mod plans;
mod reach;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use pathd_engine::grid::bounding_box;
use pathd_engine::{Agent, GoalTree, Grid, Interest, Limits, Point, QueryError};
use tokio::sync::{oneshot, watch};

use group::{Group, GroupKey, Item};
use lease::{Lease, Leased, Streamed};
use tokio_util::sync::CancellationToken;

use crate::compute::Compute;
use crate::config::Config;
use crate::live::flows::Flows;
use crate::live::plans::Plans;
pub use feed::{Event, Feed, Next};

/// Side of an index bucket in cells.
const BUCKET: u32 = 64;
/// Most groups one repair job drains before giving its worker back.
pub const JOB_SUBS: usize = 32;

type Bucket = (u32, u32);

/// One subscription.
pub struct Sub {
    /// Its public id: 128 random bits in hex (unguessable, so ids cannot be enumerated).
    pub id: String,
    /// 128 random bits in hex, handed out once on creation: moving or deleting the
    /// subscription needs it (or the admin token). Compare with [`Sub::secret_matches`].
    secret: String,
    /// The map it follows.
    pub map: String,
    /// Its goal.
    pub goal: Point,
    /// The group whose tree it shares.
    group: Arc<Group>,
    /// Its agent (position, last path); locked by the worker draining its group and by
    /// memory readers, so it is uncontended.
    agent: Mutex<Agent>,
    /// Events (short critical sections: push, or pick the next event of a stream).
    feed: Mutex<Feed>,
    /// Bumped after every change of the feed; streams wait on it.
    changed: watch::Sender<u64>,
    /// Last request or stream activity (idle expiry).
    lease: Lease,
    /// The agent's position, `x << 32 | y` (readable without the agent lock, which a
    /// running repair holds).
    position: AtomicU64,
}

/// 128 random bits from the thread-local CSPRNG, as 32 lowercase hex digits.
fn random_hex128() -> String {
    format!("{:032x}", rand::random::<u128>())
}

impl Sub {
    /// The secret that authorizes moving and deleting this subscription (for the create
    /// answer only; check a presented one with [`Sub::secret_matches`]).
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// Whether `given` is this subscription's secret, compared in constant time.
    pub fn secret_matches(&self, given: &str) -> bool {
        crate::secret::same(given, &self.secret)
    }

    /// The feed (lock briefly; never across an `.await`).
    pub fn feed(&self) -> std::sync::MutexGuard<'_, Feed> {
        self.feed.lock().expect("feed lock")
    }

    /// The map version its state is known to hold for: its own last event's or repair's,
    /// or its group's last patch, when that patch did not reach it (module `reach`).
    pub fn map_version(&self) -> u64 {
        let own = self.feed().version;
        own.max(self.group.version.load(Ordering::Relaxed))
    }

    /// A receiver that sees every later change of the feed.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The agent's current position.
    pub fn position(&self) -> Point {
        let v = self.position.load(Ordering::Relaxed);
        Point::new((v >> 32) as u32, v as u32)
    }

    fn set_position(&self, p: Point) {
        self.position
            .store((p.x as u64) << 32 | p.y as u64, Ordering::Relaxed);
    }

    /// Marks activity now (idle expiry).
    pub fn touch(&self) {
        self.lease.touch();
    }

    /// Counts an open stream until the guard is dropped.
    pub fn open_stream(self: &Arc<Self>) -> StreamGuard {
        Streamed::open(self)
    }

    fn publish(&self, ev: Event) {
        let seq = self.feed().push(ev);
        self.changed.send_replace(seq);
    }

    fn close(&self, reason: &'static str) {
        let seq = {
            let mut f = self.feed();
            f.close(reason);
            f.current().seq
        };
        self.changed.send_replace(seq);
    }
}

/// Keeps a subscription counted as streamed (not idle) while a stream is open.
pub type StreamGuard = Streamed<Sub>;

impl Leased for Sub {
    fn lease(&self) -> &Lease {
        &self.lease
    }
}

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
    /// Subscriptions with work, in arrival order, for the driver.
    dirty: Mutex<std::collections::VecDeque<Arc<Group>>>,
    wake: tokio::sync::Notify,
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
                dirty: Mutex::default(),
                wake: tokio::sync::Notify::new(),
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

    /// Creates a subscription on `map` (now `grid` at `version`) for an agent of side
    /// `size` at `start` heading for `goal`: it joins the group of that goal and size (made
    /// on first use), and its first path is the group's answer, computed in order with the
    /// group's patches. `limits` bound the first search, and `timeout` starts when it does.
    ///
    /// No write order is held: `Ok(None)` when `version` is no longer the map's version in
    /// the registry (`current()`, read under the hub's index lock) or in the hub (a write
    /// installed but whose cells the hub has not taken in yet); the caller reads the map
    /// again and retries. Why that is enough: a write installs its version in the registry
    /// before it hands its cells to [`Self::on_patch`], which takes the same index lock and
    /// queues them behind this join, so the group takes every change after the grid its
    /// join saw, exactly once.
    #[allow(clippy::too_many_arguments)]
    pub async fn join(
        &self,
        map: &str,
        grid: Arc<Grid>,
        version: u64,
        start: Point,
        goal: Point,
        size: u32,
        limits: Limits,
        timeout: std::time::Duration,
        current: impl FnOnce() -> Option<u64>,
        under_order: bool,
    ) -> Result<Option<Arc<Sub>>, LiveError> {
        self.start_tasks();
        self.check_room(map)?;
        // The same checks, in the same order, as a search of its own.
        pathd_engine::query::check_size(size)?;
        for (which, p) in [("start", start), ("goal", goal)] {
            if !grid.in_bounds(p) {
                return Err(pathd_engine::QueryError::OutOfBounds { which, point: p }.into());
            }
        }
        pathd_engine::query::check_fits(&grid, "start", start, size)?;
        pathd_engine::query::check_fits(&grid, "goal", goal, size)?;
        let (tx, rx) = oneshot::channel();
        let key = GroupKey { goal, size };
        {
            let mut maps = self.inner.maps.lock().expect("index lock");
            // `version` must be the map's version, here and in the registry: a write that
            // landed since, or whose cells the hub has not taken in yet, would leave the
            // group's search behind the grid of the join (see `Hub::join`'s docs).
            let hub_version = maps.get(map).map(|ms| ms.version);
            let behind = hub_version.is_some_and(|v| v != version);
            match current() {
                Some(v) if v == version && !behind => {}
                // Under the write order (the caller's last resort) the registry's version
                // is final, and the hub takes the join's grid, as before the optimism.
                Some(v) if v == version && under_order => {}
                _ => return Ok(None),
            }
            let ms = maps.entry(map.to_owned()).or_insert_with(|| MapSubs {
                grid: Arc::clone(&grid),
                version,
                subs: HashMap::new(),
                groups: HashMap::new(),
                buckets: HashMap::new(),
                wide: HashSet::new(),
            });
            ms.grid = Arc::clone(&grid);
            ms.version = version;
            let group = match ms.groups.get(&key) {
                Some(g) => Arc::clone(g),
                None => {
                    let tree = GoalTree::new(&grid, goal, size)?;
                    let g = Arc::new(Group::new(map, key, tree));
                    ms.groups.insert(key, Arc::clone(&g));
                    g
                }
            };
            let mut w = group.work.lock().expect("work lock");
            w.queue.push_back(Item::Join {
                start,
                limits,
                timeout,
                grid,
                version,
                reply: tx,
            });
            if !w.scheduled {
                w.scheduled = true;
                ms.wide.insert(key);
                drop(w);
                self.schedule(vec![group]);
            }
        }
        let mut joining = Joining {
            rx: Some(rx),
            hub: Arc::clone(&self.inner),
        };
        let answer = joining.rx.as_mut().expect("set above").await;
        // No await from here to the registration below: the request cannot go away
        // between the two.
        joining.rx = None;
        let sub = match answer {
            Ok(r) => r?,
            Err(_) => {
                return Err(LiveError::Internal("the subscription's group ended"));
            }
        };
        {
            let mut maps = self.inner.maps.lock().expect("index lock");
            if let Some(ms) = maps.get_mut(map) {
                ms.subs.insert(sub.id.clone(), Arc::clone(&sub));
            }
            self.inner
                .subs
                .lock()
                .expect("subs lock")
                .insert(sub.id.clone(), Arc::clone(&sub));
        }
        self.gauge();
        Ok(Some(sub))
    }

    /// Queues a patch of `map` (it was `old`, it is now `grid` at `version`; `changed`
    /// cells) for every group it may concern. Call it under the map's writer lock, after
    /// the new version is swapped in.
    pub fn on_patch(
        &self,
        map: &str,
        old: &Grid,
        grid: Arc<Grid>,
        version: u64,
        changed: Vec<Point>,
    ) -> Delivery {
        self.inner.flows.on_patch(map, &grid, version, &changed);
        self.inner.plans.on_patch(map, &grid, version, &changed);
        // 0 is a wall, the dearest cost.
        let rank = |c: u8| if c == 0 { u16::MAX } else { c as u16 };
        let lowered = changed
            .iter()
            .any(|&p| rank(grid.cost(p)) < rank(old.cost(p)));
        let mut to_schedule = Vec::new();
        let mut delivered = 0;
        {
            let mut maps = self.inner.maps.lock().expect("index lock");
            let Some(ms) = maps.get_mut(map) else {
                return Delivery { delivered: 0 };
            };
            ms.grid = Arc::clone(&grid);
            ms.version = version;
            let mut candidates: HashSet<GroupKey> = ms.wide.clone();
            let mut last = None;
            for p in &changed {
                let b = (p.x / BUCKET, p.y / BUCKET);
                if last == Some(b) {
                    continue;
                }
                last = Some(b);
                if let Some(set) = ms.buckets.get(&b) {
                    candidates.extend(set.iter());
                }
            }
            let bbox = bounding_box(&changed);
            // Tiles of the path index to probe, per agent size (module `reach`).
            let mut probes: HashMap<u32, Vec<reach::Tile>> = HashMap::new();
            let changed = Arc::new(changed);
            for key in candidates {
                let Some(group) = ms.groups.get(&key) else {
                    continue;
                };
                let mut w = group.work.lock().expect("work lock");
                // A busy group takes every patch (its region may grow meanwhile), but it
                // counts as affected only when a changed cell lies in its region.
                let concerned = concerns(w.interest, bbox, &changed);
                if !(w.scheduled || concerned) {
                    continue;
                }
                if concerned {
                    delivered += if lowered {
                        group.members.lock().expect("members lock").len()
                    } else {
                        let probe = probes
                            .entry(key.size)
                            .or_insert_with(|| reach::PathIndex::probe(&changed, key.size));
                        group.paths.lock().expect("paths lock").reached(probe).len()
                    };
                }
                w.queue.push_back(Item::Patch {
                    grid: Arc::clone(&grid),
                    version,
                    changed: Arc::clone(&changed),
                    lowered,
                });
                if !w.scheduled {
                    w.scheduled = true;
                    ms.wide.insert(key);
                    to_schedule.push(Arc::clone(group));
                }
            }
        }
        self.schedule(to_schedule);
        metrics::counter!("pathd_patch_deliveries_total").increment(delivered as u64);
        Delivery { delivered }
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

    /// The profiles of `map` other than its default (hub keys `map~profile`) that have
    /// subscriptions or flow fields here, with the grid this hub's subscriptions of each
    /// hold (`None`: flow fields only).
    pub fn profile_grids(&self, map: &str) -> Vec<(String, Option<Arc<Grid>>)> {
        let prefix = format!("{map}~");
        let mut out: std::collections::BTreeMap<String, Option<Arc<Grid>>> = self
            .inner
            .flows
            .maps_with_prefix(&prefix)
            .into_iter()
            .map(|k| (k[prefix.len()..].to_owned(), None))
            .collect();
        for (k, ms) in self.inner.maps.lock().expect("index lock").iter() {
            if let Some(p) = k.strip_prefix(&prefix) {
                out.insert(p.to_owned(), Some(Arc::clone(&ms.grid)));
            }
        }
        out.into_iter().collect()
    }

    /// [`Self::end_map`] for `map` and each of its profiles; returns how many
    /// subscriptions ended.
    pub fn end_map_all(&self, map: &str, reason: &'static str) -> usize {
        let mut n = self.end_map(map, reason);
        for (p, _) in self.profile_grids(map) {
            n += self.end_map(&format!("{map}~{p}"), reason);
        }
        n
    }

    /// Ends every subscription (and flow field) of `map` with a final event `reason`;
    /// returns how many subscriptions.
    pub fn end_map(&self, map: &str, reason: &'static str) -> usize {
        self.inner.flows.end_map(map, reason);
        self.inner.plans.end_map(map, reason);
        let ms = self.inner.maps.lock().expect("index lock").remove(map);
        let Some(ms) = ms else { return 0 };
        let mut subs = self.inner.subs.lock().expect("subs lock");
        for id in ms.subs.keys() {
            subs.remove(id);
        }
        drop(subs);
        for g in ms.groups.values() {
            g.clear();
        }
        for sub in ms.subs.values() {
            sub.close(reason);
        }
        memory_gauge(&self.inner.maps.lock().expect("index lock"));
        self.gauge();
        ms.subs.len()
    }

    /// A map was replaced by `PUT`: with the same size and movement rule the change is a
    /// patch of every differing cell; otherwise its subscriptions end (`map_replaced`),
    /// since their searches cannot run on other dimensions.
    pub async fn on_replace(&self, map: &str, old: Arc<Grid>, new: Arc<Grid>, version: u64) {
        let has_subs = self
            .inner
            .maps
            .lock()
            .expect("index lock")
            .contains_key(map);
        if !has_subs && !self.inner.flows.has_map(map) && !self.inner.plans.has_map(map) {
            return;
        }
        let same_shape = old.width() == new.width()
            && old.height() == new.height()
            && old.movement() == new.movement();
        if !same_shape {
            self.end_map(map, "map_replaced");
            return;
        }
        let (o, n) = (Arc::clone(&old), Arc::clone(&new));
        let diff = self
            .inner
            .compute
            .run_waiting(move |_| {
                let (a, b) = (o.costs(), n.costs());
                let w = o.width() as usize;
                (0..a.len())
                    .filter(|&i| a[i] != b[i])
                    .map(|i| Point::new((i % w) as u32, (i / w) as u32))
                    .collect::<Vec<_>>()
            })
            .await;
        match diff {
            Ok(changed) => {
                self.on_patch(map, &old, new, version, changed);
            }
            Err(_) => {
                self.end_map(map, "map_replaced");
            }
        }
    }

    fn gauge(&self) {
        let n = self.inner.subs.lock().expect("subs lock").len();
        metrics::gauge!("pathd_subscriptions").set(n as f64);
    }

    fn schedule(&self, groups: Vec<Arc<Group>>) {
        if groups.is_empty() {
            return;
        }
        self.inner.dirty.lock().expect("dirty lock").extend(groups);
        self.inner.wake.notify_one();
    }

    fn start_tasks(&self) {
        if self.inner.started.swap(true, Ordering::AcqRel) {
            return;
        }
        tokio::spawn(drive(Arc::clone(&self.inner)));
        tokio::spawn(reap(self.clone()));
    }
}

fn not_found(id: &str) -> LiveError {
    LiveError::NotFound(id.to_owned())
}

fn too_many(message: String) -> LiveError {
    LiveError::TooMany(message)
}

/// Why the hub refused. The edge maps each to HTTP (`http/error.rs`).
#[derive(Debug)]
pub enum LiveError {
    /// No subscription with this id (`404 subscription_not_found`).
    NotFound(String),
    /// The map or the server is full, by count or by memory (`429 too_many_subscriptions`):
    /// the message says which.
    TooMany(String),
    /// The query is malformed for this map (`400`, as a search of its own answers).
    Query(QueryError),
    /// A broken invariant (`500 internal`, the detail logged).
    Internal(&'static str),
}

impl From<QueryError> for LiveError {
    fn from(e: QueryError) -> Self {
        LiveError::Query(e)
    }
}

impl std::fmt::Display for LiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LiveError::NotFound(id) => write!(f, "no subscription {id:?}"),
            LiveError::TooMany(m) => f.write_str(m),
            LiveError::Query(e) => e.fmt(f),
            LiveError::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for LiveError {}

/// True when a changed cell lies in `interest` (the bounding box rules most out at once).
fn concerns(interest: Interest, bbox: Option<(Point, Point)>, changed: &[Point]) -> bool {
    let Some((lo, hi)) = bbox else { return false };
    match interest {
        Interest::Everything => true,
        Interest::Region { min, max } => {
            if hi.x < min.x || lo.x > max.x || hi.y < min.y || lo.y > max.y {
                return false;
            }
            changed.iter().any(|&p| interest.contains(p))
        }
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

/// A join's answer while its request waits for it. Dropped first (the client went away,
/// so the request's future is dropped while the join runs), it takes a subscription that
/// had already arrived out of its group again: nobody learnt its id, and a member nobody
/// can delete would keep its group and tree for good. (Had the answer come after the drop,
/// the worker's send fails and it drops the member itself, `group::drain`.)
struct Joining {
    rx: Option<oneshot::Receiver<Result<Arc<Sub>, pathd_engine::QueryError>>>,
    hub: Arc<HubInner>,
}

impl Drop for Joining {
    fn drop(&mut self) {
        if let Some(Ok(Ok(sub))) = self.rx.as_mut().map(|rx| rx.try_recv()) {
            leave_group(&mut self.hub.maps.lock().expect("index lock"), &sub);
        }
    }
}

/// The repair driver: runs scheduled groups on the pool (see module docs).
async fn drive(hub: Arc<HubInner>) {
    loop {
        let batch: Vec<Arc<Group>> = hub.dirty.lock().expect("dirty lock").drain(..).collect();
        if batch.is_empty() {
            tokio::select! {
                _ = hub.wake.notified() => continue,
                _ = hub.shutdown.cancelled() => return,
            }
        }
        // Every group's answers first, then the settling: no group's background work holds
        // up another group's events.
        run_jobs(&hub, &batch, false).await;
        run_jobs(&hub, &batch, true).await;
    }
}

/// Drains `groups` on the pool, at most [`JOB_SUBS`] per job and one job per worker thread.
async fn run_jobs(hub: &Arc<HubInner>, groups: &[Arc<Group>], settle: bool) {
    let lanes = hub.compute.threads();
    let jobs: Vec<Vec<Arc<Group>>> = groups.chunks(JOB_SUBS).map(|c| c.to_vec()).collect();
    futures_util::stream::iter(jobs)
        .for_each_concurrent(lanes, |job| {
            let hub = Arc::clone(hub);
            async move {
                let h = Arc::clone(&hub);
                let run = hub.compute.run_background(move |_| {
                    for group in &job {
                        group::drain(&h, group, settle);
                    }
                });
                if let Err(e) = run.await {
                    tracing::error!(error = %e, "repair job failed");
                }
            }
        })
        .await;
}

/// Clears `scheduled` and publishes the group's new interest, unless more work arrived
/// meanwhile (then false: drain again). Takes the index lock, then the work lock (the patch
/// order); a group left without members and work is dropped.
fn finish(hub: &HubInner, group: &Arc<Group>) -> bool {
    let interest = {
        let tree = group.tree.lock().expect("tree lock");
        group::interest(group, &tree)
    };
    let mut maps = hub.maps.lock().expect("index lock");
    let mut w = group.work.lock().expect("work lock");
    if !w.queue.is_empty() {
        return false;
    }
    w.scheduled = false;
    w.interest = interest;
    if let Some(ms) = maps.get_mut(&group.map)
        && ms
            .groups
            .get(&group.key)
            .is_some_and(|g| Arc::ptr_eq(g, group))
    {
        ms.index(group.key, interest, &mut w);
        drop(w);
        ms.drop_if_idle(group.key);
        if ms.subs.is_empty() && ms.groups.is_empty() {
            maps.remove(&group.map);
        }
    }
    memory_gauge(&maps);
    true
}

/// Sets `pathd_subscription_memory_bytes` from the groups still indexed, and tells the
/// allocator when that fell ([`crate::memory::released`]: deleted subscriptions' searches
/// go back to the system).
fn memory_gauge(maps: &HashMap<String, MapSubs>) {
    // The last figure set, per process like the gauge itself.
    static REPORTED: AtomicUsize = AtomicUsize::new(0);
    let bytes: usize = maps.values().map(MapSubs::bytes).sum();
    metrics::gauge!("pathd_subscription_memory_bytes").set(bytes as f64);
    let before = REPORTED.swap(bytes, Ordering::Relaxed);
    if before > bytes {
        crate::memory::released(before - bytes);
    }
}

/// Drops subscriptions idle for longer than the TTL (no open stream, no request).
async fn reap(hub: Hub) {
    let idle = |ttl| {
        let all = hub.inner.subs.lock().expect("subs lock");
        all.values()
            .filter(|s| s.lease.idle(ttl))
            .map(|s| s.id.clone())
            .collect()
    };
    let shutdown = hub.inner.shutdown.clone();
    lease::reap("subscription", hub.inner.ttl, shutdown, idle, |id| {
        hub.remove(id, "expired")
    })
    .await
}
