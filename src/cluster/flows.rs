//! Flow fields as a [`Kind`] of record (bucket `pathd-flows`, issue 28): goal, region, cost
//! bound, agent size and profile; a takeover computes the field again from them on the
//! map's current version, under the same id, its `seq` going on after the stored last one
//! with a `resync` (`why: taken_over`).

use std::sync::Arc;

use pathd_engine::{FlowSpec, Point, Region};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::node::Inner;
use super::records::{Kind, Record, Records, adopt};
use super::{View, sha256_hex};
use crate::http::error::{ApiError, ErrorCode};
use crate::live::flows::{Flow, Origin};
use crate::state::AppState;

/// Flow fields.
pub(super) struct FlowKind;

/// A flow field's part of its record.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct FlowBody {
    /// What it covers and how.
    pub definition: FlowDefinition,
    /// Its owner drops it after this many seconds without a request or an open stream
    /// (the owner's TTL when it was made; whoever takes it over applies its own).
    pub ttl_secs: u64,
}

/// A flow field's definition: what its computation takes.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct FlowDefinition {
    goal: [u32; 2],
    /// `[x, y, width, height]`: the region it was computed on (the whole map's when the
    /// create named none, so that a map grown meanwhile does not change it).
    region: [u32; 4],
    max_cost: Option<f64>,
    size: u32,
    profile: Option<String>,
}

impl FlowDefinition {
    /// The definition of `flow`.
    fn of(flow: &Flow) -> FlowDefinition {
        flow.read(|f, _, _| {
            let r = f.region();
            let max = f.max_cost();
            FlowDefinition {
                goal: [f.goal().x, f.goal().y],
                region: [r.x, r.y, r.width, r.height],
                max_cost: max.is_finite().then_some(max),
                size: f.size(),
                profile: flow.map.split_once('~').map(|(_, p)| p.to_owned()),
            }
        })
    }

    /// What the engine computes it from.
    fn spec(&self) -> FlowSpec {
        let [x, y, width, height] = self.region;
        FlowSpec {
            goal: Point::new(self.goal[0], self.goal[1]),
            region: Some(Region {
                x,
                y,
                width,
                height,
            }),
            max_cost: self.max_cost,
            size: self.size,
        }
    }
}

/// The view of flow field `id`: flow fields keep their id and `seq`s across a takeover
/// (the hub's field is registered under the public id, its feed going on after the stored
/// last `seq`), so the view only carries the secret's hash.
fn view_of(id: &str) -> View {
    View {
        id: id.to_owned(),
        local: id.to_owned(),
        offset: 0,
        taken_over: false,
        secret_sha256: None,
        poke: None,
    }
}

impl Kind for FlowKind {
    type Body = FlowBody;
    type Live = Flow;
    const BUCKET: &'static str = "pathd-flows";
    const NOUN: &'static str = "flow field";
    const NOT_FOUND: ErrorCode = ErrorCode::FlowfieldNotFound;

    fn records(inner: &Inner) -> &Records<Self> {
        &inner.flows
    }

    fn status(flow: &Flow) -> (u64, bool) {
        flow.status()
    }

    fn refresh(_: &Flow, stored: &FlowBody) -> FlowBody {
        stored.clone()
    }

    fn watch(flow: &Flow) -> watch::Receiver<u64> {
        flow.watch()
    }

    fn end(hub: &crate::live::Hub, local: &str) {
        hub.flows().moved(local);
    }

    async fn rejoin(
        state: &AppState,
        id: &str,
        rec: &Record<FlowBody>,
    ) -> Result<(Arc<Flow>, View), ApiError> {
        let def = &rec.body.definition;
        let origin = Origin::TakenOver {
            id: id.to_owned(),
            seq: rec.last_seq,
        };
        let flow = crate::http::routes::flowfields::compute_and_register(
            state,
            &rec.map,
            def.profile.as_deref(),
            def.spec(),
            &origin,
        )
        .await?;
        Ok((flow, view_of(id)))
    }

    fn taken_over(seconds: f64) {
        metrics::counter!("pathd_flowfield_takeovers_total").increment(1);
        metrics::histogram!("pathd_flowfield_takeover_seconds").record(seconds);
    }
}

/// Stores the record of `flow` (just made here; its id is already `<replica>-<32 hex>`).
pub(super) async fn adopt_flow(inner: &Arc<Inner>, flow: &Arc<Flow>) -> Result<View, ApiError> {
    let ttl_secs = inner.hub().map_or(0, |h| h.flows().ttl().as_secs());
    let rec = Record {
        owner: inner.replica.clone(),
        key: flow.map.clone(),
        map: flow.map.split('~').next().unwrap_or_default().to_owned(),
        body: FlowBody {
            definition: FlowDefinition::of(flow),
            ttl_secs,
        },
        last_seq: flow.status().0,
        secret_sha256: sha256_hex(flow.secret()),
    };
    adopt::<FlowKind>(inner, flow, view_of(&flow.id), rec).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_record_keeps_the_fields_beside_the_common_ones() {
        let rec = Record {
            owner: "a".into(),
            key: "m~boat".into(),
            map: "m".into(),
            body: FlowBody {
                definition: FlowDefinition {
                    goal: [3, 4],
                    region: [0, 0, 10, 8],
                    max_cost: Some(20.5),
                    size: 2,
                    profile: Some("boat".into()),
                },
                ttl_secs: 300,
            },
            last_seq: 7,
            secret_sha256: "ab".into(),
        };
        let v = serde_json::to_value(&rec).unwrap();
        assert_eq!(v["definition"]["region"], serde_json::json!([0, 0, 10, 8]));
        assert_eq!(
            (v["ttl_secs"].as_u64(), v["last_seq"].as_u64()),
            (Some(300), Some(7))
        );
        let back: Record<FlowBody> = serde_json::from_value(v).unwrap();
        assert_eq!(back, rec);
        let spec = back.body.definition.spec();
        assert_eq!(
            (spec.goal, spec.size, spec.max_cost),
            (Point::new(3, 4), 2, Some(20.5))
        );
        assert_eq!(spec.region.map(|r| (r.width, r.height)), Some((10, 8)));
    }
}
