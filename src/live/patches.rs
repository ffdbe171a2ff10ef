//! How a map's changes reach its live things: patches (to the groups whose interest they
//! touch, and to the flow fields and plans), replacements and deletions.

use super::*;

impl Hub {
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
