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
use crate::live::feed::{Feed, FeedEvent, Next};
use crate::live::lease::{self, Lease, Leased, Streamed};
use crate::plans::PlanError;
use crate::plans::{NODE_MEMORY, PlanJob};

/// Most recent events kept per live plan (each holds the whole plan, so fewer than a
/// subscription's `--subscription-event-buffer`, which caps it too).
pub const MAX_RING: usize = 16;

/// One event of a live plan (`LivePlanEvent` in `openapi.yaml`), also its current state.
#[derive(Clone, Debug, Serialize)]
pub struct PlanEvent {
    /// The plan's id.
    pub id: String,
    /// 1 for the first event, +1 per event.
    pub seq: u64,
    /// The map version the plan holds for.
    pub map_version: u64,
    /// Why it was sent: `initial`, `blocked`, `delayed`, `restored`, `resync`, or a final
    /// `deleted`, `map_deleted`, `map_replaced`, `expired`.
    pub reason: &'static str,
    /// `solved`, `partial` or `failed`.
    pub status: &'static str,
    /// The time step of the paths' first cells.
    pub start_step: u64,
    /// `[x, y]` per time step from `start_step` for every agent, all one length.
    pub paths: Vec<Vec<[u32; 2]>>,
    /// Sum over agents of the steps (from `start_step`) until each rests at its goal.
    pub sum_of_costs: u64,
    /// Time steps of the paths.
    pub makespan: u64,
    /// The sum of the agents' own distances from their cells at `start_step`.
    pub lower_bound: u64,
    /// Agents whose paths this event changed (every agent for `initial`).
    pub replanned: Vec<usize>,
    /// True when only `replanned` were re-planned, everybody else keeping their path.
    pub repaired: bool,
    /// Time the re-plan took, ms.
    pub elapsed_ms: f64,
}

impl FeedEvent for PlanEvent {
    fn seq(&self) -> u64 {
        self.seq
    }
    fn set_seq(&mut self, seq: u64) {
        self.seq = seq;
    }
    fn map_version(&self) -> u64 {
        self.map_version
    }
    fn reason(&self) -> &'static str {
        self.reason
    }
    fn set_reason(&mut self, reason: &'static str) {
        self.reason = reason;
    }
}

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

    /// Registers `made` and brings it up to the map's version now (`current()`, read under
    /// the plans' lock): when a write landed since the plan was made, the cells that differ
    /// between its grid and the current one are queued as its first patch (a write installs
    /// its version before it hands its cells to [`Self::on_patch`], which takes the same
    /// lock, so every change reaches the plan exactly once). `Ok(None)` when the map is
    /// gone or changed shape.
    pub fn register(
        &self,
        made: Created,
        current: impl FnOnce() -> Option<(u64, Arc<Grid>)>,
    ) -> Result<Option<Arc<LivePlan>>, PlanError> {
        self.start_tasks();
        let Created {
            map,
            grid,
            version,
            job,
            plan,
        } = made;
        let mut plans = self.inner.plans.lock().expect("plans lock");
        if plans.by_id.len() >= self.inner.max_total {
            drop(plans);
            self.check_room()?;
            return Err(PlanError::Internal("the plans' room check disagreed"));
        }
        let catch_up = match current() {
            None => return Ok(None),
            Some((v, _)) if v == version => None,
            Some((v, now)) => match changed_between(&grid, &now) {
                Some(cells) => Some(Item::Patch {
                    grid: now,
                    version: v,
                    changed: Arc::new(cells),
                }),
                None => return Ok(None),
            },
        };
        let mut id = random_hex128();
        while plans.by_id.contains_key(&id) {
            id = random_hex128();
        }
        let cur = Current {
            grid,
            version,
            status: plan.status,
            start_step: 0,
            paths: plan.paths.clone(),
            time_step: 0,
            positions: job.starts.clone(),
        };
        let live = Arc::new(LivePlan {
            id: id.clone(),
            secret: random_hex128(),
            map,
            goals: job.goals.clone(),
            job,
            current: Mutex::new(cur),
            feed: Mutex::new(Feed::new(
                PlanEvent {
                    id: id.clone(),
                    seq: 1,
                    map_version: version,
                    reason: "initial",
                    status: plan.status.as_str(),
                    start_step: 0,
                    paths: plan
                        .paths
                        .iter()
                        .map(|p| p.iter().map(|c| [c.x, c.y]).collect())
                        .collect(),
                    sum_of_costs: plan.sum_of_costs,
                    makespan: plan.makespan,
                    lower_bound: plan.lower_bound,
                    replanned: (0..plan.paths.len()).collect(),
                    repaired: false,
                    elapsed_ms: plan.stats.elapsed.as_secs_f64() * 1e3,
                },
                self.inner.ring,
            )),
            changed: watch::channel(1).0,
            work: Mutex::default(),
            lease: Lease::new(),
        });
        plans.insert(Arc::clone(&live));
        metrics::gauge!("pathd_live_plans").set(plans.by_id.len() as f64);
        drop(plans);
        if let Some(item) = catch_up {
            self.enqueue(&live, item);
        }
        Ok(Some(live))
    }

    /// Queues a patch of `map` (now `grid` at `version`, `changed` cells) for every plan
    /// on it. Called under the map's writer lock, after the new version is in: it only
    /// queues.
    pub fn on_patch(&self, map: &str, grid: &Arc<Grid>, version: u64, changed: &[Point]) {
        let plans: Vec<Arc<LivePlan>> = {
            let reg = self.inner.plans.lock().expect("plans lock");
            match reg.by_map.get(map) {
                Some(m) => m.values().cloned().collect(),
                None => return,
            }
        };
        let cells = Arc::new(changed.to_vec());
        for plan in plans {
            self.enqueue(
                &plan,
                Item::Patch {
                    grid: Arc::clone(grid),
                    version,
                    changed: Arc::clone(&cells),
                },
            );
        }
    }

    /// Queues a progress report of `plan` and waits for it to be taken in (and any
    /// re-plan it causes): `400` when it is malformed (the plan is then unchanged).
    pub async fn progress(
        &self,
        plan: &Arc<LivePlan>,
        time_step: Option<u64>,
        positions: Option<Vec<Point>>,
    ) -> Result<(), PlanError> {
        let (reply, rx) = oneshot::channel();
        self.enqueue(
            plan,
            Item::Progress {
                time_step,
                positions,
                reply,
            },
        );
        match rx.await {
            Ok(r) => r,
            Err(_) => Err(not_found(&plan.id)),
        }
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

    fn enqueue(&self, plan: &Arc<LivePlan>, item: Item) {
        let mut w = plan.work.lock().expect("work lock");
        w.items.push_back(item);
        if w.scheduled {
            return;
        }
        w.scheduled = true;
        drop(w);
        let (plan, compute) = (Arc::clone(plan), self.inner.compute.clone());
        tokio::spawn(async move {
            let p = Arc::clone(&plan);
            if let Err(e) = compute.run_background(move |_| drain(&p)).await {
                tracing::error!(error = %e, plan = %plan.id, "live plan work failed");
                // The pool stopped: answer whoever waits.
                let mut w = plan.work.lock().expect("work lock");
                w.scheduled = false;
                w.items.clear();
            }
        });
    }

    fn start_tasks(&self) {
        if self.inner.started.swap(true, Ordering::AcqRel) {
            return;
        }
        tokio::spawn(reap(self.clone()));
    }
}

/// Works off `plan`'s queue on a pool thread, in order.
fn drain(plan: &LivePlan) {
    loop {
        let items: Vec<Item> = {
            let mut w = plan.work.lock().expect("work lock");
            if w.items.is_empty() {
                w.scheduled = false;
                return;
            }
            w.items.drain(..).collect()
        };
        let mut patch: Option<(Arc<Grid>, u64, Vec<Point>)> = None;
        for item in items {
            match item {
                Item::Patch {
                    grid,
                    version,
                    changed,
                } => {
                    let p = patch.get_or_insert_with(|| (Arc::clone(&grid), version, Vec::new()));
                    p.0 = grid;
                    p.1 = version;
                    p.2.extend(changed.iter().copied());
                }
                Item::Progress {
                    time_step,
                    positions,
                    reply,
                } => {
                    if let Some((grid, version, cells)) = patch.take() {
                        take_patch(plan, grid, version, &cells);
                    }
                    let _ = reply.send(take_progress(plan, time_step, positions));
                }
            }
        }
        if let Some((grid, version, cells)) = patch.take() {
            take_patch(plan, grid, version, &cells);
        }
    }
}

/// A patch: re-plans the agents whose remaining paths (or cells) it walls.
fn take_patch(plan: &LivePlan, grid: Arc<Grid>, version: u64, changed: &[Point]) {
    let mut cur = plan.current.lock().expect("plan lock");
    cur.grid = grid;
    cur.version = version;
    let walled: HashSet<Point> = changed
        .iter()
        .copied()
        .filter(|&p| !cur.grid.is_passable(p))
        .collect();
    let opened = changed.iter().any(|&p| cur.grid.is_passable(p));
    let hit: Vec<usize> = (0..cur.paths.len())
        .filter(|&i| {
            walled.contains(&cur.positions[i])
                || cur.remaining(i).iter().any(|c| walled.contains(c))
        })
        .collect();
    if !hit.is_empty() {
        replan(plan, &mut cur, hit, "blocked");
    } else if opened && cur.status != MapfStatus::Solved {
        let all = (0..cur.paths.len()).collect();
        replan(plan, &mut cur, all, "restored");
    } else {
        // Nothing of the plan changed: it holds for this version too.
        let mut feed = plan.feed.lock().expect("feed lock");
        feed.version = feed.version.max(version);
    }
}

/// A progress report: checked, then delayed agents re-planned.
fn take_progress(
    plan: &LivePlan,
    time_step: Option<u64>,
    positions: Option<Vec<Point>>,
) -> Result<(), PlanError> {
    let mut cur = plan.current.lock().expect("plan lock");
    let t = time_step.unwrap_or(cur.time_step);
    if t < cur.time_step {
        return Err(PlanError::Invalid(format!(
            "time_step {t} is before the last reported one, {}",
            cur.time_step
        )));
    }
    let n = cur.paths.len();
    let positions = match positions {
        None => (0..n).map(|i| cur.planned(i, t)).collect(),
        Some(p) => {
            check_positions(&cur, &p)?;
            p
        }
    };
    let delayed: Vec<usize> = (0..n)
        .filter(|&i| positions[i] != cur.planned(i, t))
        .collect();
    cur.time_step = t;
    cur.positions = positions;
    if !delayed.is_empty() {
        replan(plan, &mut cur, delayed, "delayed");
    }
    Ok(())
}

/// Positions reported for every agent: one each, on the map, passable (or where the agent
/// stood when a patch walled it), on distinct cells.
fn check_positions(cur: &Current, p: &[Point]) -> Result<(), PlanError> {
    if p.len() != cur.paths.len() {
        return Err(PlanError::Invalid(format!(
            "{} positions for {} agents",
            p.len(),
            cur.paths.len()
        )));
    }
    let mut seen = HashMap::new();
    for (i, &c) in p.iter().enumerate() {
        if !cur.grid.in_bounds(c) {
            return Err(PlanError::OutOfBounds(format!(
                "agent {i}'s position {c} is off the map"
            )));
        }
        if !cur.grid.is_passable(c) && c != cur.positions[i] {
            return Err(PlanError::StartBlocked(format!(
                "agent {i}'s position {c} is blocked"
            )));
        }
        if let Some(j) = seen.insert(c, i) {
            return Err(PlanError::Invalid(format!(
                "agents {j} and {i} are both at {c}"
            )));
        }
    }
    Ok(())
}

/// Re-plans from the reported time step and positions: `agents` alone where a repair
/// suffices, else everybody; publishes the new plan with `reason`.
fn replan(plan: &LivePlan, cur: &mut Current, agents: Vec<usize>, reason: &'static str) {
    let started = Instant::now();
    let n = cur.paths.len();
    let goals = &plan.goals;
    let grid = Arc::clone(&cur.grid);
    let movement = plan.job.movement;
    let opts = MapfOptions {
        objective: plan.job.objective,
        deadline: started.checked_add(plan.job.time_limit),
        cancel: None,
        first_solution: true,
        seed: plan.job.seed,
        max_nodes: Some(NODE_MEMORY / (8 * n.max(1) + 160)),
    };
    let old: Vec<Vec<Point>> = (0..n).map(|i| cur.remaining(i).to_vec()).collect();
    let mut replanned = agents.clone();
    let mut repaired = false;
    let outcome = if goals.iter().any(|&g| !grid.is_passable(g)) {
        None
    } else {
        let mut done = None;
        if cur.status == MapfStatus::Solved {
            let mut rest = old.clone();
            for &a in &agents {
                rest[a] = vec![cur.positions[a]];
            }
            if let Ok(Some(p)) = mapf::repair(&grid, movement, &rest, goals, &agents, &opts) {
                metrics::counter!("pathd_plan_replans_total", "kind" => "repair").increment(1);
                repaired = true;
                done = Some(p);
            }
        }
        if done.is_none() {
            metrics::counter!("pathd_plan_replans_total", "kind" => "full").increment(1);
            done = mapf::solve_live(&grid, movement, &cur.positions, goals, &opts).ok();
            if let Some(p) = &done {
                replanned = (0..n)
                    .filter(|&i| !same_path(&old[i], &p.paths[i]))
                    .collect();
            }
        }
        done
    };
    let (status, paths, lower_bound) = match outcome {
        Some(p) => (p.status, p.paths, p.lower_bound),
        // A goal walled: nobody can finish; everybody waits where they are.
        None => {
            replanned = (0..n).collect();
            (
                MapfStatus::Failed,
                cur.positions.iter().map(|&p| vec![p]).collect(),
                0,
            )
        }
    };
    cur.status = status;
    cur.start_step = cur.time_step;
    cur.paths = paths;
    let elapsed = started.elapsed();
    metrics::histogram!("pathd_plan_replan_duration_seconds").record(elapsed.as_secs_f64());
    tracing::debug!(plan = %plan.id, reason, repaired, replanned = replanned.len(), ms = elapsed.as_secs_f64() * 1e3, "live plan re-planned");
    let ev = plan.event(cur, reason, lower_bound, replanned, repaired, elapsed);
    plan.publish(ev);
}

/// True when two paths visit the same cells at the same steps (the shorter one resting at
/// its last cell).
fn same_path(a: &[Point], b: &[Point]) -> bool {
    let len = a.len().max(b.len());
    (0..len).all(|t| a[t.min(a.len() - 1)] == b[t.min(b.len() - 1)])
}

/// The cells whose cost differs between `a` and `b`, if they have one shape.
fn changed_between(a: &Grid, b: &Grid) -> Option<Vec<Point>> {
    if a.width() != b.width() || a.height() != b.height() || a.movement() != b.movement() {
        return None;
    }
    let w = a.width() as usize;
    let (x, y) = (a.costs(), b.costs());
    Some(
        (0..x.len())
            .filter(|&i| x[i] != y[i])
            .map(|i| Point::new((i % w) as u32, (i / w) as u32))
            .collect(),
    )
}

/// Drops plans idle for longer than the TTL (no open stream, no request).
async fn reap(plans: Plans) {
    let idle = |ttl| {
        let all = plans.inner.plans.lock().expect("plans lock");
        all.by_id
            .values()
            .filter(|p| p.lease.idle(ttl))
            .map(|p| p.id.clone())
            .collect()
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
