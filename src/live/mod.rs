//! Live maps: subscriptions whose D* Lite searches are repaired after every patch, and
//! whose repaired paths are pushed to their event streams.
//!
//! # Shape
//!
//! The [`Hub`] holds every subscription ([`Sub`]): its own [`DStarLite`] search (one per
//! subscription, not shared per goal: agents move independently, and D* Lite's state is
//! tied to its start through the key modifier), a queue of pending work, and its [`Feed`]
//! of events. Subscriptions live in memory only; after a restart clients resubscribe.
//!
//! # Which subscriptions a patch reaches
//!
//! Per map, an index of 64x64-cell buckets maps to the subscriptions whose
//! [`DStarLite::interest`] box touches the bucket; a set `wide` holds those whose interest is
//! [`Interest::Everything`] and those with work queued or running. A patch looks up the
//! buckets of its changed cells, adds `wide`, and checks each candidate's exact box: far
//! patches cost a few hash look-ups. A patch that lowers the map's smallest cost reaches
//! every subscription (the heuristic scale must drop). Boxes only grow, so buckets are only
//! added after a repair; they are removed when the subscription ends.
//!
//! A subscription with work queued or running gets every patch regardless of its box: its
//! box is being recomputed. This is decided under the subscription's `work` lock, which the
//! worker also takes to finish (publish its new box and clear `scheduled`), so no patch can
//! fall between the old box and the new one.
//!
//! # Where repairs run
//!
//! On the search pool ([`Compute`]), never on the async runtime. A driver task takes the
//! scheduled subscriptions in arrival order and runs them in jobs of at most [`JOB_SUBS`]
//! subscriptions, at most one job per worker thread at a time, each admitted with
//! [`Compute::run_waiting`]: a repair *waits* for a worker instead of being dropped when the
//! pool is saturated, while queries keep their own admission (repairs hold at most
//! `threads` of the `threads + queue_depth` permits, so they never make a query get `503`
//! on their own), and short jobs let queued queries interleave with a large fan-out.
//!
//! Calls on one search see patches and moves in order: they are queued per subscription
//! (under the hub's index lock, which also orders them against other patches of the map),
//! and one worker at a time drains a subscription's queue; consecutive patches are merged
//! into one `update` with the union of their changed cells and the newest grid.

//!
//! # Metrics
//!
//! `pathd_subscriptions` (gauge), `pathd_repairs_total{change}` (one per `update` or move;
//! `change` is the outcome, `move` for moves), `pathd_repair_duration_seconds` (histogram),
//! `pathd_subscription_events_total` (events published), `pathd_sse_events_sent_total`
//! (frames written to streams), `pathd_patches_total`, `pathd_patch_deliveries_total`
//! (subscriptions patches were queued for). Each drained subscription runs in a `repair`
//! span (subscription id, map).

pub mod feed;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use pathd_engine::{DStarLite, Grid, Interest, Point, QueryError};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::compute::Compute;
use crate::config::Config;
use crate::error::{ApiError, ErrorCode};
use crate::flowfields::Flows;
pub use feed::{Event, Feed, Next};

/// Side of an index bucket in cells.
const BUCKET: u32 = 64;
/// Most subscriptions one repair job drains before giving its worker back.
pub const JOB_SUBS: usize = 32;

type Bucket = (u32, u32);

/// Work queued for one subscription, in order.
enum Item {
    /// A patch that may matter: the map's grid after it, its version, the cells it changed.
    Patch {
        grid: Arc<Grid>,
        version: u64,
        changed: Arc<Vec<Point>>,
    },
    /// The agent moved; the answer goes back to the waiting request.
    Move {
        to: Point,
        grid: Arc<Grid>,
        version: u64,
        reply: oneshot::Sender<Result<(), QueryError>>,
    },
}

/// The part of a subscription patches and the worker hand over to each other.
struct Work {
    /// Queued or being drained by a worker (then it gets every patch; see module docs).
    scheduled: bool,
    /// The search's interest as of its last finished repair.
    interest: Interest,
    /// The buckets it is indexed under: an inclusive bucket rectangle.
    buckets: Option<(Bucket, Bucket)>,
    /// Pending items.
    queue: VecDeque<Item>,
}

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
    /// Patches and moves waiting for the worker (lock order: hub index, then this).
    work: Mutex<Work>,
    /// The search; locked only by the worker draining this subscription (and readers of
    /// the position), so it is uncontended.
    search: Mutex<DStarLite>,
    /// Events (short critical sections: push, or pick the next event of a stream).
    feed: Mutex<Feed>,
    /// Bumped after every change of the feed; streams wait on it.
    changed: watch::Sender<u64>,
    /// Last request or stream activity (idle expiry).
    touched: Mutex<Instant>,
    /// Open event streams.
    streams: AtomicUsize,
    /// The agent's position, `x << 32 | y` (readable without the search lock, which a
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
        crate::auth::same(given, &self.secret)
    }

    /// The feed (lock briefly; never across an `.await`).
    pub fn feed(&self) -> std::sync::MutexGuard<'_, Feed> {
        self.feed.lock().expect("feed lock")
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
        *self.touched.lock().expect("touch lock") = Instant::now();
    }

    /// Counts an open stream until the guard is dropped.
    pub fn open_stream(self: &Arc<Self>) -> StreamGuard {
        self.streams.fetch_add(1, Ordering::Relaxed);
        self.touch();
        StreamGuard(Arc::clone(self))
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
pub struct StreamGuard(Arc<Sub>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.streams.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

/// The subscriptions of one map.
struct MapSubs {
    /// The map's newest grid and version the hub has seen (moves run on it).
    grid: Arc<Grid>,
    version: u64,
    subs: HashMap<String, Arc<Sub>>,
    buckets: HashMap<Bucket, HashSet<String>>,
    wide: HashSet<String>,
}

impl MapSubs {
    fn unindex(&mut self, id: &str, buckets: Option<(Bucket, Bucket)>) {
        if let Some((lo, hi)) = buckets {
            for by in lo.1..=hi.1 {
                for bx in lo.0..=hi.0 {
                    if let Some(set) = self.buckets.get_mut(&(bx, by)) {
                        set.remove(id);
                        if set.is_empty() {
                            self.buckets.remove(&(bx, by));
                        }
                    }
                }
            }
        }
        self.wide.remove(id);
    }

    /// Indexes `id` under `interest` (growing its bucket rectangle) and clears or sets
    /// its `wide` membership.
    fn index(&mut self, id: &str, interest: Interest, w: &mut Work) {
        match interest {
            Interest::Everything => {
                self.wide.insert(id.to_owned());
            }
            Interest::Region { min, max } => {
                self.wide.remove(id);
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
                            self.buckets
                                .entry((bx, by))
                                .or_default()
                                .insert(id.to_owned());
                        }
                    }
                    w.buckets = Some((lo, hi));
                }
            }
        }
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
    ttl: Duration,
    ring: usize,
    shutdown: CancellationToken,
    /// Every subscription by id.
    subs: Mutex<HashMap<String, Arc<Sub>>>,
    /// The index lock: per-map subscriptions, buckets and newest grid. Held for patch
    /// delivery, move queueing and a worker's finish; never across an `.await`.
    maps: Mutex<HashMap<String, MapSubs>>,
    /// Subscriptions with work, in arrival order, for the driver.
    dirty: Mutex<VecDeque<Arc<Sub>>>,
    wake: tokio::sync::Notify,
    /// The driver and the reaper start with the first subscription (inside the runtime).
    started: AtomicBool,
    repairs: AtomicU64,
    events: AtomicU64,
    /// Live flow fields: patches, map deletions and replacements reach them through the hub.
    flows: Flows,
}

/// What a patch did to the subscriptions of its map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// Subscriptions the patch was queued for (their search might change).
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

    /// The subscription `id`, marked active, or `404 subscription_not_found`.
    pub fn get(&self, id: &str) -> Result<Arc<Sub>, ApiError> {
        let sub = self.inner.subs.lock().expect("subs lock").get(id).cloned();
        let sub = sub.ok_or_else(|| not_found(id))?;
        sub.touch();
        Ok(sub)
    }

    /// `429 too_many_subscriptions` when `map` (or the server) is full.
    pub fn check_room(&self, map: &str) -> Result<(), ApiError> {
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

    /// Registers a subscription whose `search` ran on `grid` at `version` of `map`. The
    /// caller holds the map's writer lock, so no patch lands in between.
    pub fn register(
        &self,
        map: &str,
        grid: Arc<Grid>,
        version: u64,
        search: DStarLite,
    ) -> Result<Arc<Sub>, ApiError> {
        self.start_tasks();
        self.check_room(map)?;
        let id = {
            let subs = self.inner.subs.lock().expect("subs lock");
            let mut id = random_hex128();
            while subs.contains_key(&id) {
                id = random_hex128();
            }
            id
        };
        let first = Event::of(&id, &search, version, "initial");
        let interest = search.interest();
        let sub = Arc::new(Sub {
            id: id.clone(),
            secret: random_hex128(),
            map: map.to_owned(),
            goal: search.goal(),
            work: Mutex::new(Work {
                scheduled: false,
                interest,
                buckets: None,
                queue: VecDeque::new(),
            }),
            search: Mutex::new(search),
            feed: Mutex::new(Feed::new(first, self.inner.ring)),
            changed: watch::channel(1).0,
            touched: Mutex::new(Instant::now()),
            streams: AtomicUsize::new(0),
            position: AtomicU64::new(0),
        });
        sub.set_position(sub.search.lock().expect("search lock").start());
        {
            let mut maps = self.inner.maps.lock().expect("index lock");
            let ms = maps.entry(map.to_owned()).or_insert_with(|| MapSubs {
                grid: Arc::clone(&grid),
                version,
                subs: HashMap::new(),
                buckets: HashMap::new(),
                wide: HashSet::new(),
            });
            ms.grid = grid;
            ms.version = version;
            let mut w = sub.work.lock().expect("work lock");
            ms.index(&id, interest, &mut w);
            drop(w);
            ms.subs.insert(id.clone(), Arc::clone(&sub));
            self.inner
                .subs
                .lock()
                .expect("subs lock")
                .insert(id, Arc::clone(&sub));
        }
        self.gauge();
        Ok(sub)
    }

    /// Queues a patch of `map` (now `grid` at `version`, `changed` cells; the old grid's
    /// smallest cost was `old_min_cost`) for every subscription it may concern. Call it
    /// under the map's writer lock, after the new version is swapped in.
    pub fn on_patch(
        &self,
        map: &str,
        old_min_cost: u8,
        grid: Arc<Grid>,
        version: u64,
        changed: Vec<Point>,
    ) -> Delivery {
        self.inner.flows.on_patch(map, &grid, version, &changed);
        let mut to_schedule = Vec::new();
        let mut delivered = 0;
        {
            let mut maps = self.inner.maps.lock().expect("index lock");
            let Some(ms) = maps.get_mut(map) else {
                return Delivery { delivered: 0 };
            };
            ms.grid = Arc::clone(&grid);
            ms.version = version;
            let everyone = grid.min_cost() < old_min_cost;
            let candidates: Vec<String> = if everyone {
                ms.subs.keys().cloned().collect()
            } else {
                let mut seen: HashSet<&String> = ms.wide.iter().collect();
                let mut last = None;
                for p in &changed {
                    let b = (p.x / BUCKET, p.y / BUCKET);
                    if last == Some(b) {
                        continue;
                    }
                    last = Some(b);
                    if let Some(set) = ms.buckets.get(&b) {
                        seen.extend(set.iter());
                    }
                }
                seen.into_iter().cloned().collect()
            };
            let bbox = bounding_box(&changed);
            let changed = Arc::new(changed);
            for id in candidates {
                let Some(sub) = ms.subs.get(&id) else {
                    continue;
                };
                let mut w = sub.work.lock().expect("work lock");
                let hit = everyone || w.scheduled || concerns(w.interest, bbox, &changed);
                if !hit {
                    continue;
                }
                delivered += 1;
                w.queue.push_back(Item::Patch {
                    grid: Arc::clone(&grid),
                    version,
                    changed: Arc::clone(&changed),
                });
                if !w.scheduled {
                    w.scheduled = true;
                    ms.wide.insert(id.clone());
                    to_schedule.push(Arc::clone(sub));
                }
            }
        }
        self.schedule(to_schedule);
        metrics::counter!("pathd_patch_deliveries_total").increment(delivered as u64);
        Delivery { delivered }
    }

    /// Queues a move of `sub`'s agent to `to` and waits for the repair (`400` on a wall or
    /// off the map; the state is then unchanged).
    pub async fn move_to(&self, sub: &Arc<Sub>, to: Point) -> Result<(), ApiError> {
        let (tx, rx) = oneshot::channel();
        {
            let mut maps = self.inner.maps.lock().expect("index lock");
            let Some(ms) = maps.get_mut(&sub.map) else {
                return Err(not_found(&sub.id));
            };
            if !ms.subs.contains_key(&sub.id) {
                return Err(not_found(&sub.id));
            }
            let mut w = sub.work.lock().expect("work lock");
            w.queue.push_back(Item::Move {
                to,
                grid: Arc::clone(&ms.grid),
                version: ms.version,
                reply: tx,
            });
            if !w.scheduled {
                w.scheduled = true;
                ms.wide.insert(sub.id.clone());
                drop(w);
                drop(maps);
                self.schedule(vec![Arc::clone(sub)]);
            }
        }
        match rx.await {
            Ok(r) => r.map_err(ApiError::from),
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
                let buckets = sub.work.lock().expect("work lock").buckets;
                ms.unindex(id, buckets);
                if ms.subs.is_empty() {
                    maps.remove(&sub.map);
                }
            }
        }
        sub.close(reason);
        self.gauge();
        true
    }

    /// Ends every subscription (and flow field) of `map` with a final event `reason`;
    /// returns how many subscriptions.
    pub fn end_map(&self, map: &str, reason: &'static str) -> usize {
        self.inner.flows.end_map(map, reason);
        let ms = self.inner.maps.lock().expect("index lock").remove(map);
        let Some(ms) = ms else { return 0 };
        let mut subs = self.inner.subs.lock().expect("subs lock");
        for id in ms.subs.keys() {
            subs.remove(id);
        }
        drop(subs);
        for sub in ms.subs.values() {
            sub.close(reason);
        }
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
        if !has_subs && !self.inner.flows.has_map(map) {
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
                self.on_patch(map, old.min_cost(), new, version, changed);
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

    fn schedule(&self, subs: Vec<Arc<Sub>>) {
        if subs.is_empty() {
            return;
        }
        self.inner.dirty.lock().expect("dirty lock").extend(subs);
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

fn not_found(id: &str) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::NOT_FOUND,
        ErrorCode::SubscriptionNotFound,
        format!("no subscription {id:?}"),
    )
}

fn too_many(message: String) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::TooManySubscriptions,
        message,
    )
}

fn bounding_box(cells: &[Point]) -> Option<(Point, Point)> {
    let first = *cells.first()?;
    Some(cells.iter().fold((first, first), |(lo, hi), p| {
        (
            Point::new(lo.x.min(p.x), lo.y.min(p.y)),
            Point::new(hi.x.max(p.x), hi.y.max(p.y)),
        )
    }))
}

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

/// The repair driver: runs scheduled subscriptions on the pool (see module docs).
async fn drive(hub: Arc<HubInner>) {
    loop {
        let batch: Vec<Arc<Sub>> = hub.dirty.lock().expect("dirty lock").drain(..).collect();
        if batch.is_empty() {
            tokio::select! {
                _ = hub.wake.notified() => continue,
                _ = hub.shutdown.cancelled() => return,
            }
        }
        let lanes = hub.compute.threads();
        let jobs: Vec<Vec<Arc<Sub>>> = batch.chunks(JOB_SUBS).map(|c| c.to_vec()).collect();
        futures_util::stream::iter(jobs)
            .for_each_concurrent(lanes, |job| {
                let hub = Arc::clone(&hub);
                async move {
                    let h = Arc::clone(&hub);
                    let run = hub.compute.run_waiting(move |_| {
                        for sub in &job {
                            drain(&h, sub);
                        }
                    });
                    if let Err(e) = run.await {
                        tracing::error!(error = %e.message, "repair job failed");
                    }
                }
            })
            .await;
    }
}

/// Works off `sub`'s queue on a pool thread, then publishes its new interest.
fn drain(hub: &HubInner, sub: &Arc<Sub>) {
    let span = tracing::info_span!("repair", subscription = %sub.id, map = %sub.map);
    let _enter = span.enter();
    loop {
        let items: Vec<Item> = sub
            .work
            .lock()
            .expect("work lock")
            .queue
            .drain(..)
            .collect();
        if items.is_empty() {
            if finish(hub, sub) {
                return;
            }
            continue;
        }
        let closed = sub.feed().is_closed();
        let mut search = sub.search.lock().expect("search lock");
        let mut pending: Option<(Arc<Grid>, u64, Vec<Point>)> = None;
        for item in items {
            match item {
                Item::Patch {
                    grid,
                    version,
                    changed,
                } => {
                    if closed {
                        continue;
                    }
                    let cells = match pending.take() {
                        Some((_, _, mut cells)) => {
                            cells.extend_from_slice(&changed);
                            cells
                        }
                        None => changed.to_vec(),
                    };
                    pending = Some((grid, version, cells));
                }
                Item::Move {
                    to,
                    grid,
                    version,
                    reply,
                } => {
                    if closed {
                        continue; // dropping `reply` answers "gone"
                    }
                    if let Some((g, v, cells)) = pending.take() {
                        repair(hub, sub, &mut search, &g, v, &cells);
                    }
                    let started = Instant::now();
                    let out = search.move_start(&grid, to);
                    sub.set_position(search.start());
                    let result = out.map(|o| {
                        record(hub, "move", started);
                        let reason = o.change.as_str();
                        if o.should_notify() {
                            publish(hub, sub, &search, version, reason);
                        } else {
                            // Along the path: no event, but the state starts further on.
                            sub.feed()
                                .refresh(Event::of(&sub.id, &search, version, reason));
                        }
                    });
                    let _ = reply.send(result);
                }
            }
        }
        if let Some((g, v, mut cells)) = pending.take() {
            cells.sort_unstable_by_key(|p| (p.y, p.x));
            cells.dedup();
            repair(hub, sub, &mut search, &g, v, &cells);
        }
    }
}

fn repair(
    hub: &HubInner,
    sub: &Sub,
    search: &mut DStarLite,
    grid: &Grid,
    version: u64,
    changed: &[Point],
) {
    let started = Instant::now();
    let out = search.update(grid, changed);
    record(hub, out.change.as_str(), started);
    if out.should_notify() {
        let reason = out.change.as_str();
        publish_event(hub, sub, Event::repaired(&sub.id, search, version, reason));
    } else {
        let mut f = sub.feed();
        f.version = f.version.max(version);
    }
}

fn record(hub: &HubInner, kind: &'static str, started: Instant) {
    hub.repairs.fetch_add(1, Ordering::Relaxed);
    metrics::counter!("pathd_repairs_total", "change" => kind).increment(1);
    metrics::histogram!("pathd_repair_duration_seconds").record(started.elapsed().as_secs_f64());
}

fn publish(hub: &HubInner, sub: &Sub, search: &DStarLite, version: u64, reason: &'static str) {
    publish_event(hub, sub, Event::of(&sub.id, search, version, reason));
}

fn publish_event(hub: &HubInner, sub: &Sub, ev: Event) {
    hub.events.fetch_add(1, Ordering::Relaxed);
    metrics::counter!("pathd_subscription_events_total").increment(1);
    sub.publish(ev);
}

/// Clears `scheduled` and publishes the new interest, unless more work arrived meanwhile
/// (then false: drain again). Takes the index lock, then the work lock (the patch order).
fn finish(hub: &HubInner, sub: &Arc<Sub>) -> bool {
    let interest = sub.search.lock().expect("search lock").interest();
    let mut maps = hub.maps.lock().expect("index lock");
    let mut w = sub.work.lock().expect("work lock");
    if !w.queue.is_empty() {
        return false;
    }
    w.scheduled = false;
    w.interest = interest;
    if let Some(ms) = maps.get_mut(&sub.map)
        && ms.subs.contains_key(&sub.id)
    {
        ms.index(&sub.id, interest, &mut w);
    }
    true
}

/// Drops subscriptions idle for longer than the TTL (no open stream, no request).
async fn reap(hub: Hub) {
    let ttl = hub.inner.ttl;
    let mut tick =
        tokio::time::interval((ttl / 4).clamp(Duration::from_millis(250), Duration::from_secs(30)));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = hub.inner.shutdown.cancelled() => return,
        }
        let idle: Vec<String> = hub
            .inner
            .subs
            .lock()
            .expect("subs lock")
            .values()
            .filter(|s| {
                s.streams.load(Ordering::Relaxed) == 0
                    && s.touched.lock().expect("touch lock").elapsed() >= ttl
            })
            .map(|s| s.id.clone())
            .collect();
        for id in idle {
            if hub.remove(&id, "expired") {
                tracing::info!(subscription = %id, "idle subscription expired");
            }
        }
    }
}
