//! What the cluster takes from the rest of the server, and what it hands back, in its own
//! terms: `run` gives its tasks the [`Services`] they use (not the whole server state, which
//! holds the cluster), a takeover makes things again through [`Rejoin`] (which the HTTP
//! edge implements with the same code its create routes use), and failures are
//! [`ClusterError`]s the edge maps to answers.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use pathd_engine::{FlowSpec, Point, Region};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::live::flows::{Flow, Origin};
use crate::live::{Hub, Sub};
use crate::maps::Maps;

/// The services the cluster's tasks use (given to [`super::Cluster::start`]).
#[derive(Clone)]
pub struct Services {
    /// The live hub: a copy whose record was taken ends there.
    pub hub: Hub,
    /// The maps service: placement loads and drops maps through it, and the heartbeat
    /// names the maps held here.
    pub maps: Maps,
    /// Cancelled when the server shuts down.
    pub shutdown: CancellationToken,
    /// True once this replica has loaded its maps (only then is it a member).
    pub ready: Arc<dyn Fn() -> bool + Send + Sync>,
    /// Makes a subscription or flow field again from its record (a takeover).
    pub rejoin: Arc<dyn Rejoin>,
}

/// Makes a live thing again from its stored definition, on its map's current version.
pub trait Rejoin: Send + Sync {
    /// Joins subscription `def` on map `map` again, its agent at `position`.
    fn subscription<'a>(
        &'a self,
        map: &'a str,
        def: &'a SubDefinition,
        position: [u32; 2],
    ) -> BoxFuture<'a, Result<Arc<Sub>, Refused>>;

    /// Computes flow field `def` of map `map` again, registered as `origin` says.
    fn flow_field<'a>(
        &'a self,
        map: &'a str,
        def: &'a FlowDefinition,
        origin: Origin,
    ) -> BoxFuture<'a, Result<Arc<Flow>, Refused>>;
}

/// Why a takeover could not make the thing again.
#[derive(Debug)]
pub enum Refused {
    /// It cannot live on (its map or profile is gone, its start or goal is a wall now): its
    /// record goes.
    Ended(String),
    /// Not now (a full hub, an overloaded pool, ...): tried again at the next scan.
    Later(String),
}

/// Why the cluster refused.
#[derive(Debug)]
pub enum ClusterError {
    /// The records in NATS are not reachable (`503 store_unavailable`, retry shortly).
    StoreUnavailable(String),
    /// A bug or a task that died (`500`).
    Internal(String),
}

impl std::fmt::Display for ClusterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClusterError::StoreUnavailable(m) | ClusterError::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ClusterError {}

/// The kinds of live things the fleet keeps records of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// `/v1/subscriptions/{id}`.
    Subscription,
    /// `/v1/flowfields/{id}`.
    FlowField,
}

impl Held {
    /// Its name in messages.
    pub fn noun(self) -> &'static str {
        match self {
            Held::Subscription => "subscription",
            Held::FlowField => "flow field",
        }
    }
}

/// A subscription's definition as its record keeps it: the create request's fields a
/// subscription's search takes (the start is the record's agent position).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SubDefinition {
    /// The goal.
    pub goal: [u32; 2],
    /// The unit-type profile.
    pub profile: Option<String>,
    /// Agent side in cells.
    pub size: Option<u32>,
    /// The algorithm asked for.
    pub algorithm: Option<String>,
    /// Heuristic weight.
    pub weight: Option<f64>,
    /// Expansion budget.
    pub max_expansions: Option<u64>,
    /// Time budget.
    pub timeout_ms: Option<u64>,
    /// Whether paths are smoothed.
    pub smooth: Option<bool>,
    /// The heuristic asked for.
    pub heuristic: Option<String>,
    /// The tie-break asked for.
    pub tie_break: Option<String>,
}

/// A flow field's definition as its record keeps it: what its computation takes.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FlowDefinition {
    /// The goal.
    pub goal: [u32; 2],
    /// `[x, y, width, height]`: the region it was computed on (the whole map's when the
    /// create named none, so that a map grown meanwhile does not change it).
    pub region: [u32; 4],
    /// The cost bound, if any.
    pub max_cost: Option<f64>,
    /// Agent side in cells.
    pub size: u32,
    /// The unit-type profile.
    pub profile: Option<String>,
}

impl FlowDefinition {
    /// The definition of `flow`.
    pub fn of(flow: &Flow) -> FlowDefinition {
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
    pub fn spec(&self) -> FlowSpec {
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
