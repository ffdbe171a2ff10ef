//! What a map version reports of itself (`MapSummary` in `openapi.yaml`): built from a
//! [`super::MapEntry`] ([`super::MapEntry::summary`]), kept by the cluster's placement as the
//! stub of a map held elsewhere, and answered by the edge as it is (`http::dto` re-exports
//! it). A plain serde shape: no HTTP type.

use serde::Serialize;

/// A map's summary (`MapSummary` in `openapi.yaml`).
#[derive(Clone, Debug, Serialize)]
pub struct MapSummary {
    /// Name.
    pub name: String,
    /// Version (1 on creation, +1 per change).
    pub version: u64,
    /// Width in cells.
    pub width: u32,
    /// Height in cells.
    pub height: u32,
    /// `octile` or `cardinal`.
    pub movement: &'static str,
    /// Passable cells.
    pub passable_cells: u64,
    /// Blocked cells.
    pub blocked_cells: u64,
    /// Connected components of passable cells.
    pub components: u32,
    /// True when every passable cell costs 1.
    pub uniform: bool,
    /// Smallest passable cost (0 when nothing is passable).
    pub min_cost: u8,
    /// Largest passable cost (0 when nothing is passable).
    pub max_cost: u8,
    /// `bundled` (maps directory) or `uploaded`.
    pub source: &'static str,
    /// The HPA* abstraction (maps of at least `PATHD_HPA_MIN_CELLS` cells).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hpa: Option<crate::hpa::HpaInfo>,
    /// The map's live subscriptions and the memory they hold (while it has any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscriptions: Option<SubscriptionUsage>,
    /// The JPS+ jump table (uniform octile maps of at most `PATHD_JPS_PLUS_MAX_CELLS`
    /// cells).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jps_plus: Option<crate::jump::JumpInfo>,
    /// The subgoal graph (the maps that get a JPS+ table).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subgoal: Option<crate::derived::subgoal::SubgoalInfo>,
    /// The map eroded for each agent size that sized `jps` or `hpa` queries asked for, with
    /// its HPA* abstraction (absent while there is none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sized: Vec<crate::hpa::SizedInfo>,
    /// What recovery at start found wrong but could serve (a cut patch log), until the
    /// process ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    /// The profile of requests that name none (`default` on a plain map).
    pub default_profile: String,
    /// The map's unit-type profiles (a plain map: its one implicit `default`).
    pub profiles: Vec<ProfileSummary>,
}

/// One profile of a map summary.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileSummary {
    /// Its name.
    pub name: String,
    /// True for the map's default profile.
    pub default: bool,
    /// The cost of each terrain class `0..=255` for its units (0: impassable).
    pub costs: Vec<u8>,
    /// Cells its units can enter, once this version's view of it was made (the default
    /// profile's always is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passable_cells: Option<u64>,
    /// A non-default profile's own derived structures, once its view was made (the
    /// default profile's are the summary's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hpa: Option<crate::hpa::HpaInfo>,
    /// Its JPS+ jump table (see the summary's `jps_plus`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jps_plus: Option<crate::jump::JumpInfo>,
    /// Its subgoal graph (see the summary's `subgoal`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subgoal: Option<crate::derived::subgoal::SubgoalInfo>,
}

/// `recovery` of a map summary: the patch log's tail was found cut at start.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Recovery {
    /// The first and last versions lost (handed out, no longer in the log).
    pub lost_versions: [u64; 2],
    /// The version the map was served as after recovery.
    pub served_as: u64,
}

impl From<crate::store::LostTail> for Recovery {
    fn from(l: crate::store::LostTail) -> Self {
        Recovery {
            lost_versions: [l.from, l.to],
            served_as: l.served_as,
        }
    }
}

/// `subscriptions` of a map summary.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SubscriptionUsage {
    /// Live subscriptions.
    pub count: usize,
    /// Bytes their shared searches and paths hold (as of their last repair).
    pub memory_bytes: usize,
}
