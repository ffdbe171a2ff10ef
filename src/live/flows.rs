//! Live flow fields: per-goal cost and direction fields of a map region, repaired after
//! every patch and announced to their event streams.
//!
//! # Shape
//!
//! [`Flows`] holds every field ([`Flow`]): the engine's [`FlowField`] (which repairs itself
//! incrementally, see `pathd_engine::FlowField::update`), a queue of pending patches, and a
//! bounded feed of change events. Fields live in memory only, like subscriptions.
//!
//! # Where repairs run, and in which order
//!
//! The maps service calls [`Flows::on_patch`] (through the live hub) under the map's writer
//! lock, so patches are queued per field in version order. A driver task hands each field
//! with queued patches to the search pool ([`Compute::run_waiting`]: repairs wait for a
//! worker rather than being dropped, and hold at most one permit per worker thread, so they
//! never crowd out queries on their own), never to the async runtime. One worker at a time
//! drains a field's queue; consecutive patches merge into one repair on the newest grid.
//!
//! # Events
//!
//! Each repair that changes cells publishes one event with the next `seq`: the changed cells
//! with their new direction and cost (absolute values, so applying an event twice is
//! harmless). A repair changing more than [`MAX_EVENT_CELLS`] cells publishes a `resync`
//! event instead (fetch the field again), as does a stream that fell behind the recent-event
//! buffer. `GET` reports the `seq` its data includes, read under the same lock the repair
//! publishes under, so "GET, then stream from its `seq`" misses nothing.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pathd_engine::{FlowField, Grid, Point};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

mod error;
mod feed;
mod registered;
mod repair;

pub use error::FlowError;
pub use feed::{
    CellChange, FELL_BEHIND, FlowEvent, MAX_EVENT_CELLS, MOVED, Next, TAKEN_OVER, TOO_MANY_CELLS,
};
pub(crate) use repair::changed_between;

use feed::Feed;
use registered::Registered;

use crate::compute::Compute;
use crate::config::Config;
use crate::live::driver::Driver;
use crate::live::lease::{self, Lease, Leased, Streamed};

/// Where a field being registered comes from.
#[derive(Clone, Debug)]
pub enum Origin {
    /// Created here: a new id and secret.
    New,
    /// Taken over from a replica that died: its id, and the `seq` of its last event there.
    TakenOver {
        /// Its id.
        id: String,
        /// The `seq` its stored record names.
        seq: u64,
    },
}

/// Patches waiting for a worker.
#[derive(Default)]
struct Queue {
    scheduled: bool,
    items: Vec<(Arc<Grid>, u64, Arc<Vec<Point>>)>,
}

/// One live flow field.
pub struct Flow {
    /// Its public id: 128 random bits in hex.
    pub id: String,
    /// The secret that authorizes deletion; `None` for a field taken over from another
    /// replica (the cluster keeps only its hash and checks it).
    secret: Option<String>,
    /// The map it covers.
    pub map: String,
    /// Region and agent size, copied out of the field for the patch filter.
    reach: (Point, Point),
    field: Mutex<FlowField>,
    feed: Mutex<Feed>,
    changed: watch::Sender<u64>,
    queue: Mutex<Queue>,
    lease: Lease,
}

impl Flow {
    /// The secret that authorizes deletion (for the create answer only).
    pub fn secret(&self) -> &str {
        self.secret.as_deref().unwrap_or_default()
    }

    /// Whether `given` is this field's secret, compared in constant time (never for a
    /// field taken over: its secret is checked against the stored hash).
    pub fn secret_matches(&self, given: &str) -> bool {
        self.secret
            .as_deref()
            .is_some_and(|s| crate::secret::same(given, s))
    }

    /// The `seq` of its newest event, and whether it ended.
    pub fn status(&self) -> (u64, bool) {
        let feed = self.feed.lock().expect("feed lock");
        (feed.seq, feed.last.is_some())
    }

    /// Runs `f` on the field with the map version and `seq` it holds for (the lock the
    /// repairs publish under, so the three agree).
    pub fn read<T>(&self, f: impl FnOnce(&FlowField, u64, u64) -> T) -> T {
        let field = self.field.lock().expect("field lock");
        let (version, seq) = {
            let feed = self.feed.lock().expect("feed lock");
            (feed.version, feed.seq)
        };
        f(&field, version, seq)
    }

    /// What a stream that has sent up to `last` sends next.
    pub fn next_after(&self, last: Option<u64>) -> Next<FlowEvent> {
        self.feed
            .lock()
            .expect("feed lock")
            .next_after(&self.id, last)
    }

    /// A receiver that sees every later change of the feed.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Marks activity now (idle expiry).
    pub fn touch(&self) {
        self.lease.touch();
    }

    /// Counts an open stream until the guard is dropped.
    pub fn open_stream(self: &Arc<Self>) -> StreamGuard {
        Streamed::open(self)
    }

    /// Whether a change at `p` can matter: inside the region, or within `size - 1` right of
    /// or below it (the footprint of an anchor inside).
    fn concerns(&self, lo: Point, hi: Point) -> bool {
        let (a, b) = self.reach;
        !(hi.x < a.x || lo.x > b.x || hi.y < a.y || lo.y > b.y)
    }

    fn close(&self, reason: &'static str, why: Option<&'static str>) {
        let seq = {
            let mut f = self.feed.lock().expect("feed lock");
            if f.last.is_some() {
                return;
            }
            f.seq += 1;
            let ev = Arc::new(FlowEvent {
                why,
                ..f.bare(&self.id, reason)
            });
            f.last = Some(ev);
            f.seq
        };
        self.changed.send_replace(seq);
    }
}

/// Keeps a flow field counted as streamed (not idle) while a stream is open.
pub type StreamGuard = Streamed<Flow>;

impl Leased for Flow {
    fn lease(&self) -> &Lease {
        &self.lease
    }

    fn id(&self) -> &str {
        &self.id
    }
}

/// Every live flow field (cheap to clone).
#[derive(Clone)]
pub struct Flows {
    inner: Arc<Inner>,
}

struct Inner {
    compute: Compute,
    max_total: usize,
    max_cells: u64,
    ttl: Duration,
    ring: usize,
    shutdown: CancellationToken,
    /// Every field, by id and by map (so a patch looks only at its own map's fields).
    flows: Mutex<Registered>,
    /// Fields with queued patches, for the driver.
    driver: Driver<Flow>,
    started: AtomicBool,
    /// With `--store nats://...`: this replica's id, the first part of every field id
    /// (`<replica>-<32 hex>`), so that any replica can forward a request for the field to
    /// the one that holds it (`crate::cluster::gate`).
    prefix: std::sync::OnceLock<String>,
}

impl Flows {
    /// The registry under `config`'s limits, repairing on `compute`.
    pub fn new(config: &Config, compute: Compute, shutdown: CancellationToken) -> Self {
        Flows {
            inner: Arc::new(Inner {
                compute,
                max_total: config.flowfields.max_flowfields,
                max_cells: config.flowfields.max_flowfield_cells,
                ttl: Duration::from_secs(config.subscription_ttl_secs.max(1)),
                ring: config.subscription_event_buffer.max(1),
                shutdown,
                flows: Mutex::default(),
                driver: Driver::default(),
                started: AtomicBool::new(false),
                prefix: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Ids of fields created from now on start with `replica` and a `-` (a cluster's).
    pub fn set_id_prefix(&self, replica: &str) {
        let _ = self.inner.prefix.set(replica.to_owned());
    }

    fn new_id(&self) -> String {
        match self.inner.prefix.get() {
            Some(p) => format!("{p}-{}", random_hex128()),
            None => random_hex128(),
        }
    }

    /// How long a field lives without a request or an open stream.
    pub fn ttl(&self) -> Duration {
        self.inner.ttl
    }

    /// Cancelled when the server shuts down (streams end).
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    /// Live fields.
    pub fn len(&self) -> usize {
        self.inner.flows.lock().expect("flows lock").len()
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The field `id`, marked active, or `404 flowfield_not_found`.
    pub fn get(&self, id: &str) -> Result<Arc<Flow>, FlowError> {
        let flow = self
            .inner
            .flows
            .lock()
            .expect("flows lock")
            .get(id)
            .cloned();
        let flow = flow.ok_or_else(|| not_found(id))?;
        flow.touch();
        Ok(flow)
    }

    /// `429 too_many_flowfields` when the server is full; `400 invalid_request` when a
    /// region of `cells` cells is above the per-field limit.
    pub fn check_room(&self, cells: u64) -> Result<(), FlowError> {
        if cells > self.inner.max_cells {
            return Err(FlowError::RegionTooLarge(format!(
                "the region has {cells} cells; a flow field covers at most {} \
                 (give a smaller `region`)",
                self.inner.max_cells
            )));
        }
        if self.len() >= self.inner.max_total {
            return Err(FlowError::TooMany(format!(
                "this server holds at most {} flow fields",
                self.inner.max_total
            )));
        }
        Ok(())
    }

    /// Registers `field`, computed on `base` (version `version` of `map`), and brings it
    /// up to the map's version now (`current()`, read under the fields' lock): when a write
    /// landed meanwhile, the cells that differ between `base` and the current grid are
    /// queued as the field's first repair. `Ok(None)` when the map is gone or changed shape
    /// (the caller looks again).
    ///
    /// Why no write order is needed: a write installs its version before it hands its cells
    /// to [`Self::on_patch`], which takes the same lock. So either `current()` already sees
    /// the newer version (and its cells are in the diff), or the write's `on_patch` comes
    /// after this registration and repairs the field like any other.
    ///
    /// A field [`Origin::TakenOver`] keeps its id, has no secret here (the cluster checks
    /// the stored hash), and its feed goes on after the stored `seq` with a `resync`
    /// ([`TAKEN_OVER`]).
    pub fn register(
        &self,
        origin: &Origin,
        map: &str,
        version: u64,
        field: FlowField,
        base: &Arc<Grid>,
        current: impl FnOnce() -> Option<(u64, Arc<Grid>)>,
    ) -> Result<Option<Arc<Flow>>, FlowError> {
        self.start_tasks();
        let r = field.region();
        self.check_room(r.cells() as u64)?;
        let k = field.size() - 1;
        let reach = (
            Point::new(r.x, r.y),
            Point::new(r.x + r.width - 1 + k, r.y + r.height - 1 + k),
        );
        let mut flows = self.inner.flows.lock().expect("flows lock");
        let catch_up = match current() {
            None => return Ok(None),
            Some((v, _)) if v == version => None,
            Some((v, grid)) => match changed_between(base, &grid) {
                Some(cells) => Some((grid, v, Arc::new(cells))),
                None => return Ok(None),
            },
        };
        let (id, secret, seq) = match origin {
            Origin::New => {
                let mut id = self.new_id();
                while flows.contains_key(&id) {
                    id = self.new_id();
                }
                (id, Some(random_hex128()), 0)
            }
            Origin::TakenOver { id, seq } if !flows.contains_key(id) => (id.clone(), None, *seq),
            Origin::TakenOver { id, .. } => {
                return Err(FlowError::TooMany(format!(
                    "flow field {id:?} is held here already"
                )));
            }
        };
        let mut feed = Feed {
            cap: self.inner.ring,
            ring: VecDeque::new(),
            seq,
            version,
            last: None,
        };
        if matches!(origin, Origin::TakenOver { .. }) {
            let resync = FlowEvent {
                why: Some(TAKEN_OVER),
                ..feed.bare(&id, "resync")
            };
            feed.push(resync);
        }
        let flow = Arc::new(Flow {
            id: id.clone(),
            secret,
            map: map.to_owned(),
            reach,
            field: Mutex::new(field),
            feed: Mutex::new(feed),
            changed: watch::channel(0).0,
            queue: Mutex::default(),
            lease: Lease::new(),
        });
        flows.insert(Arc::clone(&flow));
        metrics::gauge!("pathd_flowfields").set(flows.len() as f64);
        if let Some(item) = catch_up {
            metrics::counter!("pathd_flowfield_caught_up_total").increment(1);
            let mut q = flow.queue.lock().expect("queue lock");
            q.items.push(item);
            q.scheduled = true;
            drop(q);
            self.inner.driver.schedule([Arc::clone(&flow)]);
        }
        Ok(Some(flow))
    }

    /// The maps (hub keys) starting with `prefix` that have fields.
    pub fn maps_with_prefix(&self, prefix: &str) -> Vec<String> {
        let flows = self.inner.flows.lock().expect("flows lock");
        flows
            .by_map
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect()
    }

    /// True when `map` has a field.
    pub fn has_map(&self, map: &str) -> bool {
        self.inner
            .flows
            .lock()
            .expect("flows lock")
            .of_map(map)
            .next()
            .is_some()
    }

    /// Queues a patch of `map` (now `grid` at `version`, `changed` cells) for every field
    /// it may concern. Called under the map's writer lock, after the new version is in.
    pub fn on_patch(&self, map: &str, grid: &Arc<Grid>, version: u64, changed: &[Point]) {
        let Some(first) = changed.first() else {
            return;
        };
        let (lo, hi) = changed.iter().fold((*first, *first), |(lo, hi), p| {
            (
                Point::new(lo.x.min(p.x), lo.y.min(p.y)),
                Point::new(hi.x.max(p.x), hi.y.max(p.y)),
            )
        });
        let mut cells: Option<Arc<Vec<Point>>> = None;
        let mut to_schedule = Vec::new();
        for flow in self.inner.flows.lock().expect("flows lock").of_map(map) {
            if !flow.concerns(lo, hi) {
                continue;
            }
            let cells = cells.get_or_insert_with(|| Arc::new(changed.to_vec()));
            let mut q = flow.queue.lock().expect("queue lock");
            q.items.push((Arc::clone(grid), version, Arc::clone(cells)));
            if !q.scheduled {
                q.scheduled = true;
                to_schedule.push(Arc::clone(flow));
            }
        }
        self.inner.driver.schedule(to_schedule);
    }

    /// Ends field `id` with a final event `reason`; false when there was none.
    pub fn remove(&self, id: &str, reason: &'static str) -> bool {
        self.end(id, reason, None)
    }

    /// Ends field `id` with a final `resync` that says why ([`MOVED`]): another replica
    /// holds it now.
    pub fn moved(&self, id: &str) -> bool {
        self.end(id, "resync", Some(MOVED))
    }

    fn end(&self, id: &str, reason: &'static str, why: Option<&'static str>) -> bool {
        let removed = {
            let mut flows = self.inner.flows.lock().expect("flows lock");
            let f = flows.remove(id);
            metrics::gauge!("pathd_flowfields").set(flows.len() as f64);
            f
        };
        match removed {
            Some(f) => {
                f.close(reason, why);
                true
            }
            None => false,
        }
    }

    /// Ends every field of `map` with a final event `reason`; returns how many.
    pub fn end_map(&self, map: &str, reason: &'static str) -> usize {
        let ended: Vec<Arc<Flow>> = {
            let mut flows = self.inner.flows.lock().expect("flows lock");
            let out = flows.remove_map(map);
            metrics::gauge!("pathd_flowfields").set(flows.len() as f64);
            out
        };
        for f in &ended {
            f.close(reason, None);
        }
        ended.len()
    }

    fn start_tasks(&self) {
        if self.inner.started.swap(true, Ordering::AcqRel) {
            return;
        }
        tokio::spawn(repair::drive(Arc::clone(&self.inner)));
        tokio::spawn(reap(self.clone()));
    }
}

/// Drops fields idle for longer than the TTL (no open stream, no request).
async fn reap(flows: Flows) {
    let idle = |ttl| lease::idle(flows.inner.flows.lock().expect("flows lock").values(), ttl);
    let shutdown = flows.inner.shutdown.clone();
    lease::reap("flow field", flows.inner.ttl, shutdown, idle, |id| {
        flows.remove(id, "expired")
    })
    .await
}

fn not_found(id: &str) -> FlowError {
    FlowError::NotFound(id.to_owned())
}

fn random_hex128() -> String {
    format!("{:032x}", rand::random::<u128>())
}
