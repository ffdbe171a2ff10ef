//! Subscriptions as a [`Kind`] of record (bucket `pathd-subs`): the create request's
//! fields and the agent's position; a takeover joins the goal group again from them.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::node::Inner;
use super::records::{Kind, Record, Records, adopt};
use super::services::{ClusterError, Refused, Services, SubDefinition};
use super::{View, sha256_hex};
use crate::live::Sub;

/// Subscriptions.
pub(super) struct SubKind;

/// A subscription's part of its record.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct SubBody {
    /// What it was created with, but the start (the agent is at `position`).
    pub definition: SubDefinition,
    /// The agent's position now.
    pub position: [u32; 2],
}

impl Kind for SubKind {
    type Body = SubBody;
    type Live = Sub;
    const BUCKET: &'static str = "pathd-subs";
    const NOUN: &'static str = "subscription";

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
        services: &Services,
        id: &str,
        rec: &Record<SubBody>,
    ) -> Result<(Arc<Sub>, View), Refused> {
        let body = &rec.body;
        let sub = (services.rejoin)
            .subscription(&rec.map, &body.definition, body.position)
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

/// Stores the record of `sub` (just joined here, as `definition` says) under a new public
/// id.
pub(super) async fn adopt_sub(
    inner: &Arc<Inner>,
    sub: &Arc<Sub>,
    definition: SubDefinition,
) -> Result<View, ClusterError> {
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
            definition,
            position: [p.x, p.y],
        },
        last_seq: sub.feed().current().seq,
        secret_sha256: sha256_hex(sub.secret()),
    };
    adopt::<SubKind>(inner, sub, view, rec).await
}
