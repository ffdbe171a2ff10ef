//! Flow fields as a [`Kind`] of record (bucket `pathd-flows`, issue 28): goal, region, cost
//! bound, agent size and profile; a takeover computes the field again from them on the
//! map's current version, under the same id, its `seq` going on after the stored last one
//! with a `resync` (`why: taken_over`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::node::Inner;
use super::records::{Kind, Record, Records, adopt};
use super::services::{ClusterError, FlowDefinition, Refused, Services};
use super::{View, sha256_hex};
use crate::live::flows::{Flow, Origin};

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
        services: &Services,
        id: &str,
        rec: &Record<FlowBody>,
    ) -> Result<(Arc<Flow>, View), Refused> {
        let origin = Origin::TakenOver {
            id: id.to_owned(),
            seq: rec.last_seq,
        };
        let def = &rec.body.definition;
        let flow = services.rejoin.flow_field(&rec.map, def, origin).await?;
        Ok((flow, view_of(id)))
    }

    fn taken_over(seconds: f64) {
        metrics::counter!("pathd_flowfield_takeovers_total").increment(1);
        metrics::histogram!("pathd_flowfield_takeover_seconds").record(seconds);
    }
}

/// Stores the record of `flow` (just made here; its id is already `<replica>-<32 hex>`).
pub(super) async fn adopt_flow(inner: &Arc<Inner>, flow: &Arc<Flow>) -> Result<View, ClusterError> {
    let ttl_secs = inner
        .services()
        .map_or(0, |s| s.hub.flows().ttl().as_secs());
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
    use pathd_engine::Point;

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
