//! Registering a plan and feeding it its map's patches and its agents' progress (queued
//! for the driver, which works them off on the pool: see [`super::work`]).

use super::*;

impl Plans {
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

    pub(super) fn enqueue(&self, plan: &Arc<LivePlan>, item: Item) {
        let mut w = plan.work.lock().expect("work lock");
        w.items.push_back(item);
        if w.scheduled {
            return;
        }
        w.scheduled = true;
        drop(w);
        self.inner.driver.schedule([Arc::clone(plan)]);
    }
}

/// The driver: each plan with queued work is drained on the pool, one plan a job (see
/// [`crate::live::driver`]).
pub(super) async fn drive(inner: Arc<Inner>) {
    let plan = Plan {
        what: "live plan",
        job: 1,
        passes: 1,
        work: |plan: &Arc<LivePlan>, _| work::drain(plan),
        failed: unjam,
    };
    let (compute, shutdown) = (inner.compute.clone(), inner.shutdown.clone());
    inner.driver.run(compute, shutdown, plan).await
}

/// The pool refused or lost `plan`'s job: its queue goes (whoever waits on a progress
/// report gets an answer: its reply is dropped) and it can be scheduled again.
fn unjam(plan: &Arc<LivePlan>) {
    tracing::error!(plan = %plan.id, "live plan work failed");
    let mut w = plan.work.lock().expect("work lock");
    w.scheduled = false;
    w.items.clear();
}
