//! Map summaries, lists, uploads and damage reports.

use super::*;
pub use crate::derived::summary::{MapSummary, ProfileSummary, Recovery, SubscriptionUsage};

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
