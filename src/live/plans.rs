//! Live multi-agent plans: a plan kept valid while its map changes and its agents fall
//! behind, with every new plan pushed to its event stream.
//!
//! # Shape
//!
//! [`Plans`] holds every live plan ([`LivePlan`]): the agents' goals, the current plan
//! (paths from the time step `start_step` on), the progress the client reported (a time
//! step and the agents' positions), a queue of pending work and a [`Feed`] of events (the
//! subscriptions' feed: ring, `resync`, `Last-Event-ID`). Plans live in memory only, on the
//! replica that made them; after a restart clients plan again.
//!
//! # Time
//!
//! Time steps count from the plan's creation: `paths[i][k]` is agent `i`'s cell at time
//! step `start_step + k` (the last cell repeats). A progress report (`PATCH`) names the
//! time step the agents are at (never earlier than the last report) and, optionally,
//! where they are; without positions they are where the plan says.
//!
//! # When it re-plans
//!
//! - A patch that walls a cell some agent stands on or will still visit (its path from the
//!   reported time step on) re-plans (reason `blocked`); a patch that walls nothing of that
//!   pushes nothing (cost changes never matter: steps are unit). A patch that opens cells
//!   re-plans a plan that is not `solved` (reason `restored`).
//! - A progress report whose positions differ from the plan at that step (*delayed*
//!   agents) re-plans (reason `delayed`).
//!
//! Re-planning is a *repair* where that suffices: only the affected agents (the blocked or
//! delayed ones) are re-planned, by space-time A* against everybody else's remaining path,
//! which stays exactly as it was ([`mapf::repair()`]). When that fails (or the plan was not
//! `solved`), everybody is re-planned from the positions at the reported time step
//! ([`mapf::solve_live`], to its first plan within the plan's `time_limit_ms`). An agent
//! standing on a cell a patch walls may leave it; nobody enters it. A goal that a patch
//! walls makes the plan `failed` (every agent waits where it is) until a patch opens it.
//!
//! # Where the work runs
//!
//! On the search pool ([`Compute::run_background`]: it waits for a worker rather than
//! being dropped, and holds at most one permit per worker thread with the other background
//! work), never on the async runtime and never on a write's path: the maps service calls
//! [`Plans::on_patch`] (through the live hub) under the map's writer lock, which only
//! queues the patch. One worker at a time drains a plan's queue, in order; consecutive
//! patches are taken together (the newest grid, the union of their cells).
//!
//! # Metrics
//!
//! `pathd_live_plans` (gauge), `pathd_plan_replans_total{kind}` (`repair` or `full`),
//! `pathd_plan_replan_duration_seconds` (histogram), `pathd_plan_events_total`.

mod event;
mod register;
mod work;

pub use event::PlanEvent;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pathd_engine::mapf::{self, MapfOptions, MapfPlan, MapfStatus};
use pathd_engine::{Grid, Point};
use serde::Serialize;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::compute::Compute;
use crate::config::Config;
use crate::live::driver::{Driver, Plan};
use crate::live::feed::{Feed, Next};
use crate::live::flows::changed_between;
use crate::live::lease::{self, Lease, Leased, Streamed};
use crate::plans::PlanError;
use crate::plans::{NODE_MEMORY, PlanJob};

/// Most recent events kept per live plan (each holds the whole plan, so fewer than a
/// subscription's `--subscription-event-buffer`, which caps it too).
pub const MAX_RING: usize = 16;

/// The plan as it stands and the progress reported.
struct Current {
    /// The grid and version the plan holds for.
    grid: Arc<Grid>,
    version: u64,
    status: MapfStatus,
    start_step: u64,
    /// Per agent from `start_step`, all one length.
    paths: Vec<Vec<Point>>,
    /// The last reported time step and the agents' positions then.
    time_step: u64,
    positions: Vec<Point>,
}

impl Current {
    /// Agent `i`'s cell in the plan at time step `t` (its last cell after the end).
    fn planned(&self, i: usize, t: u64) -> Point {
        let p = &self.paths[i];
        let k = t.saturating_sub(self.start_step) as usize;
        p[k.min(p.len() - 1)]
    }

    /// Agent `i`'s remaining path from the reported time step.
    fn remaining(&self, i: usize) -> &[Point] {
        let p = &self.paths[i];
        let k = self.time_step.saturating_sub(self.start_step) as usize;
        &p[k.min(p.len() - 1)..]
    }
}

/// Work for the pool.
enum Item {
    Patch {
        grid: Arc<Grid>,
        version: u64,
        changed: Arc<Vec<Point>>,
    },
    Progress {
        time_step: Option<u64>,
        positions: Option<Vec<Point>>,
        reply: oneshot::Sender<Result<(), PlanError>>,
    },
}

#[derive(Default)]
struct Work {
    scheduled: bool,
    items: VecDeque<Item>,
}

/// One live plan.
pub struct LivePlan {
    /// Its public id: 128 random bits in hex.
    pub id: String,
    secret: String,
    /// The map it is on.
    pub map: String,
    goals: Vec<Point>,
    job: PlanJob,
    current: Mutex<Current>,
    feed: Mutex<Feed<PlanEvent>>,
    changed: watch::Sender<u64>,
    work: Mutex<Work>,
    lease: Lease,
}

/// A live plan's state for `GET` and `PATCH` (`LivePlan` in `openapi.yaml`).
#[derive(Clone, Debug, Serialize)]
pub struct PlanState {
    /// The current plan, as its newest event (`seq`, `reason`) carries it.
    #[serde(flatten)]
    pub plan: PlanEvent,
    /// The map it is on.
    pub map: String,
    /// The last reported time step.
    pub time_step: u64,
    /// The agents' positions at `time_step`.
    pub positions: Vec<[u32; 2]>,
}

impl LivePlan {
    /// The secret that authorizes progress reports and deletion (for the create answer).
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// Whether `given` is this plan's secret, compared in constant time.
    pub fn secret_matches(&self, given: &str) -> bool {
        crate::secret::same(given, &self.secret)
    }

    /// The current state.
    pub fn state(&self) -> PlanState {
        let cur = self.current.lock().expect("plan lock");
        let feed = self.feed.lock().expect("feed lock");
        let mut plan = (**feed.state()).clone();
        plan.map_version = plan.map_version.max(feed.version);
        PlanState {
            plan,
            map: self.map.clone(),
            time_step: cur.time_step,
            positions: cur.positions.iter().map(|p| [p.x, p.y]).collect(),
        }
    }

    /// What a stream that has sent up to `last` sends next.
    pub fn next_after(&self, last: Option<u64>) -> Next<PlanEvent> {
        self.feed.lock().expect("feed lock").next_after(last)
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

    fn publish(&self, ev: PlanEvent) {
        let seq = self.feed.lock().expect("feed lock").push(ev);
        metrics::counter!("pathd_plan_events_total").increment(1);
        self.changed.send_replace(seq);
    }

    fn close(&self, reason: &'static str) {
        let seq = {
            let mut f = self.feed.lock().expect("feed lock");
            f.close(reason);
            f.current().seq
        };
        self.changed.send_replace(seq);
    }

    /// The event of `cur` with `reason`.
    fn event(
        &self,
        cur: &Current,
        reason: &'static str,
        lower_bound: u64,
        replanned: Vec<usize>,
        repaired: bool,
        elapsed: Duration,
    ) -> PlanEvent {
        let sum_of_costs = cur
            .paths
            .iter()
            .map(|p| {
                let last = p[p.len() - 1];
                p.iter()
                    .rposition(|&c| c != last)
                    .map_or(0, |t| t as u64 + 1)
            })
            .sum();
        PlanEvent {
            id: self.id.clone(),
            seq: 0,
            map_version: cur.version,
            reason,
            status: cur.status.as_str(),
            start_step: cur.start_step,
            paths: cur
                .paths
                .iter()
                .map(|p| p.iter().map(|c| [c.x, c.y]).collect())
                .collect(),
            sum_of_costs,
            makespan: cur.paths.first().map_or(0, |p| p.len() as u64 - 1),
            lower_bound,
            replanned,
            repaired,
            elapsed_ms: elapsed.as_secs_f64() * 1e3,
        }
    }
}

/// Keeps a live plan counted as streamed (not idle) while a stream is open.
pub type StreamGuard = Streamed<LivePlan>;

impl Leased for LivePlan {
    fn lease(&self) -> &Lease {
        &self.lease
    }

    fn id(&self) -> &str {
        &self.id
    }
}

/// Every live plan (cheap to clone).
#[derive(Clone)]
pub struct Plans {
    inner: Arc<Inner>,
}

struct Inner {
    compute: Compute,
    max_total: usize,
    ttl: Duration,
    ring: usize,
    shutdown: CancellationToken,
    plans: Mutex<Registered>,
    /// Plans with work queued, for the driver.
    driver: Driver<LivePlan>,
    started: AtomicBool,
}

/// The plans, by id and by map.
#[derive(Default)]
struct Registered {
    by_id: HashMap<String, Arc<LivePlan>>,
    by_map: HashMap<String, HashMap<String, Arc<LivePlan>>>,
}

impl Registered {
    fn insert(&mut self, plan: Arc<LivePlan>) {
        self.by_map
            .entry(plan.map.clone())
            .or_default()
            .insert(plan.id.clone(), Arc::clone(&plan));
        self.by_id.insert(plan.id.clone(), plan);
    }

    fn remove(&mut self, id: &str) -> Option<Arc<LivePlan>> {
        let plan = self.by_id.remove(id)?;
        if let Some(m) = self.by_map.get_mut(&plan.map) {
            m.remove(id);
            if m.is_empty() {
                self.by_map.remove(&plan.map);
            }
        }
        Some(plan)
    }
}

/// The first plan of a live plan, to register.
pub struct Created {
    /// The map (its name), its grid and version the plan was made on.
    pub map: String,
    /// The grid planned on.
    pub grid: Arc<Grid>,
    /// Its version.
    pub version: u64,
    /// The request's job (starts, goals, options).
    pub job: PlanJob,
    /// The plan.
    pub plan: MapfPlan,
}

impl Plans {
    /// The registry under `config`'s limits, re-planning on `compute`.
    pub fn new(config: &Config, compute: Compute, shutdown: CancellationToken) -> Self {
        Plans {
            inner: Arc::new(Inner {
                compute,
                max_total: config.max_live_plans,
                ttl: Duration::from_secs(config.subscription_ttl_secs.max(1)),
                ring: config.subscription_event_buffer.clamp(1, MAX_RING),
                shutdown,
                plans: Mutex::default(),
                driver: Driver::default(),
                started: AtomicBool::new(false),
            }),
        }
    }

    /// Cancelled when the server shuts down (streams end).
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    /// Live plans.
    pub fn len(&self) -> usize {
        self.inner.plans.lock().expect("plans lock").by_id.len()
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when `map` has a live plan.
    pub fn has_map(&self, map: &str) -> bool {
        self.inner
            .plans
            .lock()
            .expect("plans lock")
            .by_map
            .contains_key(map)
    }

    /// `429 too_many_plans` when the server holds its most live plans.
    pub fn check_room(&self) -> Result<(), PlanError> {
        if self.len() >= self.inner.max_total {
            return Err(PlanError::TooMany(format!(
                "this server holds at most {} live plans",
                self.inner.max_total
            )));
        }
        Ok(())
    }

    /// The plan `id`, marked active, or `404 plan_not_found`.
    pub fn get(&self, id: &str) -> Result<Arc<LivePlan>, PlanError> {
        let plan = self
            .inner
            .plans
            .lock()
            .expect("plans lock")
            .by_id
            .get(id)
            .cloned();
        let plan = plan.ok_or_else(|| not_found(id))?;
        plan.touch();
        Ok(plan)
    }

    /// Ends plan `id` with a final event `reason`; false when there was none.
    pub fn remove(&self, id: &str, reason: &'static str) -> bool {
        let removed = {
            let mut plans = self.inner.plans.lock().expect("plans lock");
            let p = plans.remove(id);
            metrics::gauge!("pathd_live_plans").set(plans.by_id.len() as f64);
            p
        };
        match removed {
            Some(p) => {
                p.close(reason);
                true
            }
            None => false,
        }
    }

    /// Ends every plan of `map` with a final event `reason`; returns how many.
    pub fn end_map(&self, map: &str, reason: &'static str) -> usize {
        let ended: Vec<Arc<LivePlan>> = {
            let mut plans = self.inner.plans.lock().expect("plans lock");
            let Some(of_map) = plans.by_map.remove(map) else {
                return 0;
            };
            for id in of_map.keys() {
                plans.by_id.remove(id);
            }
            metrics::gauge!("pathd_live_plans").set(plans.by_id.len() as f64);
            of_map.into_values().collect()
        };
        for p in &ended {
            p.close(reason);
        }
        ended.len()
    }

    fn start_tasks(&self) {
        if self.inner.started.swap(true, Ordering::AcqRel) {
            return;
        }
        tokio::spawn(register::drive(Arc::clone(&self.inner)));
        tokio::spawn(reap(self.clone()));
    }
}

/// Drops plans idle for longer than the TTL (no open stream, no request).
async fn reap(plans: Plans) {
    let idle = |ttl| {
        lease::idle(
            plans.inner.plans.lock().expect("plans lock").by_id.values(),
            ttl,
        )
    };
    let shutdown = plans.inner.shutdown.clone();
    lease::reap("live plan", plans.inner.ttl, shutdown, idle, |id| {
        plans.remove(id, "expired")
    })
    .await
}

fn not_found(id: &str) -> PlanError {
    PlanError::NotFound(id.to_owned())
}

fn random_hex128() -> String {
    format!("{:032x}", rand::random::<u128>())
}
