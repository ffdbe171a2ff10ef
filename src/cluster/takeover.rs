//! Takeover: a subscription whose owner left the membership is claimed by the live replica
//! that rendezvous hashing of its id gives it to, and joined again there from its record.

use std::sync::Arc;
use std::time::Instant;

use async_nats::jetstream::kv;

use super::subs::{Inner, Record, own};
use super::{HEARTBEAT, members};
use crate::http::error::ApiError;
use crate::state::AppState;

/// Takes over every record whose owner is gone and that rendezvous hashing gives to this
/// replica.
pub(super) async fn scan(inner: &Arc<Inner>, state: &AppState, subs: &kv::Store) {
    let live = inner.members.live();
    if !live.iter().any(|m| m.id == inner.replica) {
        return; // not a member (yet, or cut off): take nothing
    }
    // With `--placement K` a subscription can only live where its map is held: the
    // takeover goes to the members whose heartbeat says they hold it.
    let candidates = |map: &str| {
        if inner.placement.active() {
            inner.members.holding(map)
        } else {
            live.clone()
        }
    };
    let orphans: Vec<(String, Record, u64)> = {
        let m = inner.mirror.lock().expect("mirror lock");
        let owned = inner.owned.lock().expect("owned lock");
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
        match take_over(inner, state, subs, &id, rec, revision).await {
            Ok(true) => {
                metrics::counter!("pathd_subscription_takeovers_total").increment(1);
                metrics::histogram!("pathd_subscription_takeover_seconds")
                    .record(started.elapsed().as_secs_f64());
                tracing::info!(subscription = %id, "subscription taken over");
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(subscription = %id, error = %e.message, "takeover failed"),
        }
    }
}

/// Claims record `id` (at `revision`) and joins it here again; `Ok(false)` when another
/// replica claimed it first or it changed meanwhile.
async fn take_over(
    inner: &Arc<Inner>,
    state: &AppState,
    subs: &kv::Store,
    id: &str,
    rec: Record,
    revision: u64,
) -> Result<bool, ApiError> {
    let claimed = Record {
        owner: inner.replica.clone(),
        ..rec.clone()
    };
    let body = serde_json::to_vec(&claimed).map_err(ApiError::internal)?;
    if subs.update(id, body.into(), revision).await.is_err() {
        return Ok(false);
    }
    let req = rec.definition.request(rec.position)?;
    let (query, timeout) = req.to_query(state.config())?;
    let joined = crate::http::routes::subscriptions::join(
        state,
        &rec.map,
        req.profile.as_deref(),
        &query,
        timeout,
    )
    .await;
    let sub = match joined {
        Ok(sub) => sub,
        Err(e) if matches!(e.status.as_u16(), 400 | 404) => {
            // The map (or profile) is gone, or the agent's cell is a wall now: the
            // subscription cannot live on; its record goes. (Anything else, say `429` for a
            // full hub or an overloaded pool, is tried again at the next scan: the record
            // is claimed, and a claimed record not held here is taken over again.)
            tracing::info!(subscription = %id, error = %e.message, "subscription not taken over; ended");
            let _ = subs.delete(id).await;
            return Ok(false);
        }
        Err(e) => return Err(e),
    };
    let offset = rec.last_seq;
    let i = Arc::clone(inner);
    let id2 = id.to_owned();
    tokio::spawn(async move { own(&i, id2, sub, claimed, offset, true).await })
        .await
        .map_err(ApiError::internal)??;
    Ok(true)
}
