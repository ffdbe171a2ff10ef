//! Joining a goal group: a subscription's first path, from the group's shared search, on
//! the map's current version without holding its write order.

use super::*;

impl Hub {
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
