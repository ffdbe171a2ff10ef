//! Takeover: a record (of any [`Kind`]) whose owner left the membership is claimed by the
//! live replica that rendezvous hashing of its id gives it to (with `--placement K`, among
//! the holders of its map), and made again there from the record.

use std::sync::Arc;
use std::time::Instant;

use super::node::Inner;
use super::records::{Kind, Record, own};
use super::services::{ClusterError, Refused, Services};
use super::{HEARTBEAT, members};

/// Takes over every record of kind `K` whose owner is gone and that rendezvous hashing gives
/// to this replica.
pub(super) async fn scan<K: Kind>(inner: &Arc<Inner>, services: &Services) {
    let live = inner.members.live();
    if !live.iter().any(|m| m.id == inner.replica) {
        return; // not a member (yet, or cut off): take nothing
    }
    // With `--placement K` a live thing can only live where its map is held: the takeover
    // goes to the members whose heartbeat says they hold it.
    let candidates = |map: &str| {
        if inner.placement.active() {
            inner.members.holding(map)
        } else {
            live.clone()
        }
    };
    let records = K::records(inner);
    let orphans: Vec<(String, Record<K::Body>, u64)> = {
        let m = records.mirror.lock().expect("mirror lock");
        let owned = records.owned.lock().expect("owned lock");
        m.iter()
            .filter(|(id, (r, _, seen))| {
                // A record seen for less than a heartbeat may be one its owner is still
                // registering (its membership key and the record race to the watchers).
                seen.elapsed() >= HEARTBEAT
                    && !owned.contains_key(*id)
                    && (r.owner == inner.replica || !live.iter().any(|l| l.id == r.owner))
                    && members::rendezvous(id, &candidates(&r.map))
                        .is_some_and(|w| w.id == inner.replica)
            })
            .map(|(id, (r, rev, _))| (id.clone(), r.clone(), *rev))
            .collect()
    };
    for (id, rec, revision) in orphans {
        let started = Instant::now();
        match take_over::<K>(inner, services, &id, rec, revision).await {
            Ok(true) => {
                K::taken_over(started.elapsed().as_secs_f64());
                tracing::info!(id = %id, kind = K::NOUN, "taken over");
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(id = %id, kind = K::NOUN, error = %e, "takeover failed"),
        }
    }
}

/// Claims record `id` (at `revision`) and makes it again here; `Ok(false)` when another
/// replica claimed it first or it changed meanwhile.
async fn take_over<K: Kind>(
    inner: &Arc<Inner>,
    services: &Services,
    id: &str,
    rec: Record<K::Body>,
    revision: u64,
) -> Result<bool, ClusterError> {
    let records = K::records(inner);
    let Some(claimed) = records.claim(&inner.replica, id, &rec, revision).await else {
        return Ok(false);
    };
    let (live, view) = match K::rejoin(services, id, &claimed).await {
        Ok(joined) => joined,
        Err(Refused::Ended(why)) => {
            // The map (or profile) is gone, or the agent's cell or the goal is a wall now:
            // it cannot live on; its record goes.
            tracing::info!(id = %id, kind = K::NOUN, error = %why, "not taken over; ended");
            records.drop_record(id).await;
            return Ok(false);
        }
        // Not now (a full hub, an overloaded pool): tried again at the next scan (the
        // record is claimed, and a claimed record not held here is taken over again).
        Err(Refused::Later(why)) => return Err(ClusterError::Internal(why)),
    };
    let local = view.local.clone();
    let i = Arc::clone(inner);
    let owned = tokio::spawn(async move { own::<K>(&i, live, view, claimed).await })
        .await
        .map_err(|e| ClusterError::Internal(e.to_string()))
        .and_then(|r| r);
    if let Err(e) = owned {
        // Not recorded as held here: the copy goes too (the next scan tries again).
        K::end(&services.hub, &local);
        return Err(e);
    }
    Ok(true)
}
