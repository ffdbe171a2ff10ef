//! Subscriptions as a [`Kind`] of record (bucket `pathd-subs`): the create request's
//! fields and the agent's position; a takeover joins the goal group again from them.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::node::Inner;
use super::records::{Kind, Record, Records, adopt};
use super::{View, sha256_hex};
use crate::http::dto::PathRequest;
use crate::http::error::{ApiError, ErrorCode};
use crate::live::Sub;
use crate::state::AppState;

/// Subscriptions.
pub(super) struct SubKind;

/// A subscription's part of its record.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct SubBody {
    /// What it was created with, but the start (the agent is at `position`).
    pub definition: Definition,
    /// The agent's position now.
    pub position: [u32; 2],
}

/// The create request of a subscription, as its record keeps it: the fields a
/// subscription's search takes (the start is the record's `position`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct Definition {
    goal: [u32; 2],
    profile: Option<String>,
    size: Option<u32>,
    algorithm: Option<String>,
    weight: Option<f64>,
    max_expansions: Option<u64>,
    timeout_ms: Option<u64>,
    smooth: Option<bool>,
    heuristic: Option<String>,
    tie_break: Option<String>,
}

impl Definition {
    /// `r`'s definition, heading for `goal` (the subscription's: the request may name it
    /// in more than one way).
    fn of(r: &PathRequest, goal: pathd_engine::Point) -> Definition {
        Definition {
            goal: [goal.x, goal.y],
            profile: r.profile.clone(),
            size: r.size,
            algorithm: r.algorithm.clone(),
            weight: r.weight,
            max_expansions: r.max_expansions,
            timeout_ms: r.timeout_ms,
            smooth: r.smooth,
            heuristic: r.heuristic.clone(),
            tie_break: r.tie_break.clone(),
        }
    }

    /// The create request again, from `start` (through the request's own parser, so that
    /// fields it gains later stay unset).
    pub(super) fn request(&self, start: [u32; 2]) -> Result<PathRequest, ApiError> {
        let mut v = serde_json::to_value(self).map_err(ApiError::internal)?;
        v["start"] = serde_json::json!(start);
        serde_json::from_value(v).map_err(ApiError::internal)
    }
}

impl Kind for SubKind {
    type Body = SubBody;
    type Live = Sub;
    const BUCKET: &'static str = "pathd-subs";
    const NOUN: &'static str = "subscription";
    const NOT_FOUND: ErrorCode = ErrorCode::SubscriptionNotFound;

    fn records(inner: &Inner) -> &Records<Self> {
        &inner.subs
    }

    fn status(sub: &Sub) -> (u64, bool) {
        let f = sub.feed();
        (f.current().seq, f.is_closed())
    }

    fn refresh(sub: &Sub, stored: &SubBody) -> SubBody {
        let p = sub.position();
        SubBody {
            position: [p.x, p.y],
            ..stored.clone()
        }
    }

    fn watch(sub: &Sub) -> watch::Receiver<u64> {
        sub.watch()
    }

    fn end(hub: &crate::live::Hub, local: &str) {
        hub.remove(local, "resync");
    }

    async fn rejoin(
        state: &AppState,
        id: &str,
        rec: &Record<SubBody>,
    ) -> Result<(Arc<Sub>, View), ApiError> {
        let req = rec.body.definition.request(rec.body.position)?;
        let (query, timeout) = req.to_query(state.config())?;
        let sub = crate::http::routes::subscriptions::join(
            state,
            &rec.map,
            req.profile.as_deref(),
            &query,
            timeout,
        )
        .await?;
        // The hub's `seq`s start again at 1: shown after the stored last seq, the first
        // as `resync`.
        let view = View {
            id: id.to_owned(),
            offset: rec.last_seq,
            taken_over: true,
            ..View::plain(&sub)
        };
        Ok((sub, view))
    }

    fn taken_over(seconds: f64) {
        metrics::counter!("pathd_subscription_takeovers_total").increment(1);
        metrics::histogram!("pathd_subscription_takeover_seconds").record(seconds);
    }
}

/// Stores the record of `sub` (just joined here) under a new public id.
pub(super) async fn adopt_sub(
    inner: &Arc<Inner>,
    sub: &Arc<Sub>,
    request: &PathRequest,
) -> Result<View, ApiError> {
    let view = View {
        id: format!("{}-{:032x}", inner.replica, rand::random::<u128>()),
        ..View::plain(sub)
    };
    let p = sub.position();
    let rec = Record {
        owner: inner.replica.clone(),
        key: sub.map.clone(),
        map: sub.map.split('~').next().unwrap_or_default().to_owned(),
        body: SubBody {
            definition: Definition::of(request, sub.goal),
            position: [p.x, p.y],
        },
        last_seq: sub.feed().current().seq,
        secret_sha256: sha256_hex(sub.secret()),
    };
    adopt::<SubKind>(inner, sub, view, rec).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_gives_back_the_request_from_the_agents_position() {
        let req: PathRequest = serde_json::from_value(serde_json::json!({
            "start": [1, 2], "goal": [7, 8], "profile": "boat", "size": 2,
            "max_expansions": 99, "timeout_ms": 50, "min_version": 3
        }))
        .unwrap();
        let d = Definition::of(&req, pathd_engine::Point::new(7, 8));
        let stored: Definition = serde_json::from_slice(&serde_json::to_vec(&d).unwrap()).unwrap();
        let again = stored.request([4, 5]).unwrap();
        assert_eq!(again.start, [4, 5]);
        assert_eq!(
            serde_json::to_value(stored).unwrap()["goal"],
            serde_json::json!([7, 8])
        );
        assert_eq!(
            (again.profile.as_deref(), again.size),
            (Some("boat"), Some(2))
        );
        assert_eq!(
            (again.max_expansions, again.timeout_ms),
            (Some(99), Some(50))
        );
        assert_eq!(again.min_version, None, "a takeover waits for no version");
    }
}
