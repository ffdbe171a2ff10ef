//! A plan's work on a pool thread: patches and progress reports, in order, and the
//! re-planning they call for.

use super::*;

/// Works off `plan`'s queue on a pool thread, in order.
pub(super) fn drain(plan: &LivePlan) {
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
