//! Map summaries, lists, uploads and damage reports.

use super::*;
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

/// `GET /v1/maps`.
#[derive(Debug, Serialize)]
pub struct MapList {
    /// Every map, sorted by name.
    pub maps: Vec<MapSummary>,
    /// Maps whose durable data is damaged and which are not served, sorted by name.
    pub damaged: Vec<DamagedMap>,
}

/// A map whose durable data cannot be trusted (`DamagedMap` in `openapi.yaml`).
#[derive(Debug, Serialize)]
pub struct DamagedMap {
    /// Its name.
    pub name: String,
    /// What is wrong.
    pub reason: String,
    /// The newest version a repair would keep, if any.
    pub last_good_version: Option<u64>,
    /// Acknowledged versions a repair would drop, as far as they can be read.
    pub dropped_versions: Vec<u64>,
}

impl From<crate::store::Damage> for DamagedMap {
    fn from(d: crate::store::Damage) -> Self {
        DamagedMap {
            name: d.name,
            reason: d.reason,
            last_good_version: d.last_good,
            dropped_versions: d.dropped,
        }
    }
}

/// The JSON body of `PUT /v1/maps/{name}`: `costs`, `rows` or `terrain`, exactly one.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapUpload {
    /// Width in cells.
    pub width: u32,
    /// Height in cells.
    pub height: u32,
    /// Row-major costs, `0` blocked, `1..=255` terrain cost (wider ints are rejected as
    /// `invalid_map` with their index, not as a parse error).
    pub costs: Option<Vec<u32>>,
    /// Rows of Moving AI terrain characters.
    pub rows: Option<Vec<String>>,
    /// Row-major terrain classes `0..=255` (class 0 a wall for every profile), read
    /// through `profiles`.
    pub terrain: Option<Vec<u32>>,
    /// Unit-type profiles: per profile, a cost per terrain class (see
    /// [`crate::profiles::ProfileSpec`]). With `costs` the costs are the classes; with
    /// `rows` these join the Moving AI profile `ground`.
    pub profiles: Option<std::collections::BTreeMap<String, crate::profiles::ProfileSpec>>,
    /// The profile of requests that name none (default: `ground` for `rows`, else the
    /// only profile).
    pub default_profile: Option<String>,
    /// `octile` (default) or `cardinal`.
    pub movement: Option<String>,
}

/// The query string of `PUT /v1/maps/{name}` for text bodies.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UploadParams {
    /// Overrides the file's `type` line: `octile` or `cardinal`.
    pub movement: Option<String>,
}
