//! The hub's background tasks (its repair driver and its reaper) and what a drained
//! group does last.

use super::*;

/// The repair driver: runs scheduled groups on the pool (see module docs), every group's
/// answers first, then the settling: no group's background work holds up another group's
/// events.
pub(super) async fn drive(hub: Arc<HubInner>) {
    let h = Arc::clone(&hub);
    let plan = driver::Plan {
        what: "subscription",
        job: JOB_SUBS,
        passes: 2,
        work: move |group: &Arc<Group>, pass: usize| group::drain(&h, group, pass == 1),
        failed: |_| {},
    };
    let (compute, shutdown) = (hub.compute.clone(), hub.shutdown.clone());
    hub.driver.run(compute, shutdown, plan).await
}

/// Clears `scheduled` and publishes the group's new interest, unless more work arrived
/// meanwhile (then false: drain again). Takes the index lock, then the work lock (the patch
/// order); a group left without members and work is dropped.
pub(super) fn finish(hub: &HubInner, group: &Arc<Group>) -> bool {
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
pub(super) fn memory_gauge(maps: &HashMap<String, MapSubs>) {
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
pub(super) async fn reap(hub: Hub) {
    let idle = |ttl| lease::idle(hub.inner.subs.lock().expect("subs lock").values(), ttl);
    let shutdown = hub.inner.shutdown.clone();
    lease::reap("subscription", hub.inner.ttl, shutdown, idle, |id| {
        hub.remove(id, "expired")
    })
    .await
}
