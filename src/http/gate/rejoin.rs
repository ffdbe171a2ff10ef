//! How a takeover makes a subscription or flow field again ([`crate::cluster::Rejoin`]):
//! through the same code the create routes use, from the definition the record keeps.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::cluster::{FlowDefinition, Refused, Rejoin, SubDefinition};
use crate::http::dto::PathRequest;
use crate::http::error::ApiError;
use crate::live::Sub;
use crate::live::flows::{Flow, Origin};
use crate::state::AppState;

/// Makes things again on this server.
pub(super) struct Rejoiner(pub AppState);

/// `400` and `404` (the map or profile gone, a wall where the agent or goal is) end it; any
/// other refusal (say `429` for a full hub, `503` for an overloaded pool) is for later.
fn refused(e: ApiError) -> Refused {
    if matches!(e.status.as_u16(), 400 | 404) {
        Refused::Ended(e.message)
    } else {
        Refused::Later(e.message)
    }
}

impl Rejoin for Rejoiner {
    fn subscription<'a>(
        &'a self,
        map: &'a str,
        def: &'a SubDefinition,
        position: [u32; 2],
    ) -> BoxFuture<'a, Result<Arc<Sub>, Refused>> {
        Box::pin(async move {
            let state = &self.0;
            let req = request(def, position).map_err(refused)?;
            let (query, timeout) = req
                .to_query(state.config())
                .map_err(|e| refused(e.into()))?;
            let profile = req.profile.as_deref();
            crate::http::routes::subscriptions::join(state, map, profile, &query, timeout)
                .await
                .map_err(refused)
        })
    }

    fn flow_field<'a>(
        &'a self,
        map: &'a str,
        def: &'a FlowDefinition,
        origin: Origin,
    ) -> BoxFuture<'a, Result<Arc<Flow>, Refused>> {
        Box::pin(async move {
            let profile = def.profile.as_deref();
            crate::http::routes::flowfields::compute_and_register(
                &self.0,
                map,
                profile,
                def.spec(),
                &origin,
            )
            .await
            .map_err(refused)
        })
    }
}

/// The definition a subscription's record keeps of create request `r`, heading for `goal`
/// (the subscription's: the request may name it in more than one way).
pub fn definition(r: &PathRequest, goal: pathd_engine::Point) -> SubDefinition {
    SubDefinition {
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

/// The create request of `def` again, from `start` (through the request's own parser, so
/// that fields it gains later stay unset).
fn request(def: &SubDefinition, start: [u32; 2]) -> Result<PathRequest, ApiError> {
    let mut v = serde_json::to_value(def).map_err(ApiError::internal)?;
    v["start"] = serde_json::json!(start);
    serde_json::from_value(v).map_err(ApiError::internal)
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
        let d = definition(&req, pathd_engine::Point::new(7, 8));
        let stored: SubDefinition =
            serde_json::from_slice(&serde_json::to_vec(&d).unwrap()).unwrap();
        let again = request(&stored, [4, 5]).unwrap();
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
