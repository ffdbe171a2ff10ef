//! Wire types (JSON bodies) and their conversion to and from engine types. Every request
//! type rejects unknown fields. Points are `[x, y]` arrays.

use std::time::Duration;

use pathd_engine::{
    Algorithm, HeuristicKind, LimitKind, Limits, Point, Query, SearchResult, TieBreak,
};
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::http::error::{ApiError, ErrorBody, ErrorCode};
pub use crate::http::wire::{PathCells, PathFormat};

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

/// A non-negative integer of any size, read as a `u64` that saturates: `u64::MAX` for one
/// past it. For the fields the server only compares or caps (`min_version`, `if_version`,
/// `max_expansions`, `timeout_ms`): the contract sets them no maximum, and a version past
/// every one there can be is still just newer than the map's (`409 version_conflict`), a
/// budget past the server's still just capped to it. A fraction, a negative number or any
/// other type is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Saturating(pub u64);

impl<'de> Deserialize<'de> for Saturating {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SaturatingVisitor { text: false })
    }
}

/// `#[serde(default, deserialize_with = "saturating")]` on an `Option<u64>` of a JSON body.
///
/// `null` is read as an `Option` reads it: refused in a request (`crate::http::body::Contract`),
/// `None` elsewhere (e.g. a subscription's stored definition, read back by a takeover in
/// `crate::cluster`).
pub fn saturating<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    d.deserialize_option(OptionalSaturating { text: false })
}

/// [`saturating`] for a query parameter (its value is text: decimal digits).
pub fn saturating_param<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    d.deserialize_option(OptionalSaturating { text: true })
}

/// [`SaturatingVisitor`] under an `Option`.
struct OptionalSaturating {
    /// Reads decimal text (query parameters) rather than JSON numbers.
    text: bool,
}

impl<'de> serde::de::Visitor<'de> for OptionalSaturating {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a non-negative integer")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Option<u64>, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Option<u64>, E> {
        Ok(None)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<u64>, D::Error> {
        d.deserialize_any(SaturatingVisitor { text: self.text })
            .map(|s| Some(s.0))
    }
}

struct SaturatingVisitor {
    /// Reads decimal text (query parameters) rather than JSON numbers.
    text: bool,
}

impl serde::de::Visitor<'_> for SaturatingVisitor {
    type Value = Saturating;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a non-negative integer")
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Saturating, E> {
        Ok(Saturating(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Saturating, E> {
        u64::try_from(v)
            .map(Saturating)
            .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
    }

    fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<Saturating, E> {
        Ok(Saturating(u64::try_from(v).unwrap_or(u64::MAX)))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Saturating, E> {
        // Integral doubles below 2^64 arrive as integers (`crate::http::body::Contract`); an
        // integral one here is past `u64::MAX`, and so are integer literals serde_json
        // could only read as doubles.
        if v.is_finite() && v.fract() == 0.0 && v >= 0.0 {
            return Ok(Saturating(u64::MAX));
        }
        Err(E::invalid_value(serde::de::Unexpected::Float(v), &self))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Saturating, E> {
        Err(E::custom(crate::http::body::strict::NULL))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Saturating, E> {
        if !self.text || v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
            return Err(E::invalid_type(serde::de::Unexpected::Str(v), &self));
        }
        Ok(Saturating(v.parse().unwrap_or(u64::MAX)))
    }
}

/// `POST /v1/maps/{name}/path` (and each item of a batch).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathRequest {
    /// Wait (bounded by `--max-wait-ms`) until this replica has applied this map version
    /// (read-your-writes across replicas); else `503 replica_behind`.
    #[serde(default, deserialize_with = "saturating")]
    pub min_version: Option<u64>,
    /// `[x, y]`.
    pub start: [u32; 2],
    /// `[x, y]`; exactly one of `goal`, `goals` and `flee`.
    pub goal: Option<[u32; 2]>,
    /// The unit-type profile to search for (default: the map's default profile).
    pub profile: Option<String>,
    /// Algorithm wire name (default `astar`).
    pub algorithm: Option<String>,
    /// Weight of `weighted_astar` (default 1.5); `1..=100` for every algorithm.
    pub weight: Option<f64>,
    /// Expansion budget (capped by the server's maximum).
    #[serde(default, deserialize_with = "saturating")]
    pub max_expansions: Option<u64>,
    /// Search time budget in ms (capped by, and defaulting to, the server's maximum).
    #[serde(default, deserialize_with = "saturating")]
    pub timeout_ms: Option<u64>,
    /// On a limit or no path, answer the path to the closest expanded cell.
    pub partial: Option<bool>,
    /// Return the expanded cells (capped by the server).
    pub debug: Option<bool>,
    /// String-pull the path into any-angle waypoints (`waypoints`, `waypoints_cost`; `cost` is then theirs).
    pub smooth: Option<bool>,
    /// Return the search's events (`trace`, capped by the server's `--max-debug-cells`
    /// expansions).
    pub trace: Option<bool>,
    /// How the answer's `path` is written: `pairs` (default, `[[x, y], ...]`), `flat`
    /// (`[x0, y0, x1, y1, ...]`) or `turns` (only the cells where the direction changes,
    /// as pairs, start and end included).
    pub path_format: Option<String>,
    /// Agent side in cells (default 1, at most 8): a `size x size` agent anchored at its
    /// top-left cell; the path is its anchor's.
    pub size: Option<u32>,
    /// Lessons: a heuristic other than the map's own (`octile`, `manhattan`, `euclidean`,
    /// `chebyshev`, `zero`); astar, dijkstra and weighted_astar only.
    pub heuristic: Option<String>,
    /// Lessons: how ties of equal `f` are broken (`none`, `high_g` the default,
    /// `cross_product`, `epsilon`); astar, dijkstra and weighted_astar only.
    pub tie_break: Option<String>,
    /// The questions games ask (see [`Games`]): the nearest of these goals instead of `goal`.
    pub goals: Option<Vec<[u32; 2]>>,
    /// Stop at the first cell within this Euclidean distance of `goal`.
    pub goal_radius: Option<f64>,
    /// With `goal_radius`: that cell must also see `goal`.
    pub goal_visible: Option<bool>,
    /// Instead of a goal: get at least `distance` (path cost) away from `from`.
    pub flee: Option<FleeRequest>,
    /// Move a blocked or unreachable start or goal to the nearest usable cell at most this
    /// many cells away (in x and in y).
    pub snap: Option<u32>,
}

/// `flee` of a path query.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleeRequest {
    /// The threat, `[x, y]`.
    pub from: [u32; 2],
    /// How far to get from it, as the path cost of a one-cell unit there.
    pub distance: f64,
}

/// What a path query asks beyond a plain start-goal search (`goals`, `goal_radius`,
/// `flee`, `snap`), checked ([`PathRequest::games`]).
#[derive(Clone, Debug, Default)]
pub struct Games {
    /// What the path should reach instead of `goal`.
    pub target: Option<pathd_engine::targets::Target>,
    /// The snapping radius.
    pub snap: Option<u32>,
}

impl Games {
    /// True when the query asks for none of them.
    pub fn is_plain(&self) -> bool {
        self.target.is_none() && self.snap.is_none()
    }
}

/// Default weight of `weighted_astar`.
pub const DEFAULT_WEIGHT: f64 = 1.5;

fn point(p: [u32; 2]) -> Point {
    Point::new(p[0], p[1])
}

pub(crate) fn pair(p: Point) -> [u32; 2] {
    [p.x, p.y]
}

impl PathRequest {
    /// The engine query under the server's limits, and its time budget. The deadline is
    /// left unset: the worker sets it when the search starts, so queueing does not eat it.
    pub fn to_query(&self, config: &Config) -> Result<(Query, Duration), ApiError> {
        let algorithm = match self.algorithm.as_deref() {
            None => Algorithm::AStar,
            Some(name) => Algorithm::parse(name).ok_or_else(|| {
                let names: Vec<_> = Algorithm::ALL.iter().map(|a| a.as_str()).collect();
                ApiError::invalid_request(format!(
                    "unknown algorithm {name:?}; expected one of {}",
                    names.join(", ")
                ))
            })?,
        };
        let weight = self.weight.unwrap_or(DEFAULT_WEIGHT);
        pathd_engine::query::check_weight(weight)?;
        let timeout = self
            .timeout_ms
            .unwrap_or(config.max_timeout_ms)
            .min(config.max_timeout_ms);
        let expansions = self
            .max_expansions
            .unwrap_or(config.max_expansions)
            .min(config.max_expansions);
        // `goals` and `flee` leave `goal` to the engine's target (see `games`); the query's
        // own is then a placeholder.
        let goal = match (self.goal, &self.goals, &self.flee) {
            (Some(g), None, None) => g,
            (None, Some(goals), None) => goals.first().copied().unwrap_or(self.start),
            (None, None, Some(_)) => self.start,
            _ => {
                return Err(ApiError::invalid_request(
                    "a path query names exactly one of goal, goals and flee",
                ));
            }
        };
        let query = Query {
            start: point(self.start),
            goal: point(goal),
            algorithm,
            weight,
            limits: Limits {
                max_expansions: Some(expansions),
                deadline: None,
                cancel: None,
            },
            partial: self.partial.unwrap_or(false),
            debug_cap: if self.debug.unwrap_or(false) {
                config.max_debug_cells
            } else {
                0
            },
            smooth: self.smooth.unwrap_or(false),
            size: self.size.unwrap_or(1),
            heuristic: lesson_option(
                self.heuristic.as_deref(),
                "heuristic",
                HeuristicKind::parse,
                |h| h.as_str(),
                &HeuristicKind::ALL,
            )?,
            tie_break: lesson_option(
                self.tie_break.as_deref(),
                "tie_break",
                TieBreak::parse,
                |t| t.as_str(),
                &TieBreak::ALL,
            )?
            .unwrap_or_default(),
        };
        pathd_engine::query::check_size(query.size)?;
        Ok((query, Duration::from_millis(timeout)))
    }
}

impl PathRequest {
    /// Checks the games' options: `goals` (1 to [`MAX_GOALS`], else `400 too_many_goals`),
    /// `goal_radius` and `goal_visible` (with `goal`), `flee` (without a goal), `snap` (0 to
    /// [`MAX_SNAP`]). The exclusivity of `goal`, `goals` and `flee` is [`Self::to_query`]'s.
    ///
    /// [`MAX_GOALS`]: pathd_engine::targets::MAX_GOALS
    /// [`MAX_SNAP`]: pathd_engine::targets::MAX_SNAP
    pub fn games(&self) -> Result<Games, ApiError> {
        use pathd_engine::targets::{MAX_GOALS, MAX_SNAP, Target};
        if self.goal_visible.is_some() && self.goal_radius.is_none() {
            return Err(ApiError::invalid_request(
                "goal_visible goes with goal_radius",
            ));
        }
        if self.goal_radius.is_some() && self.goal.is_none() {
            return Err(ApiError::invalid_request(
                "goal_radius needs a single goal (not goals or flee)",
            ));
        }
        if let Some(s) = self.snap.filter(|&s| s > MAX_SNAP) {
            return Err(ApiError::invalid_request(format!(
                "snap {s} is too far: at most {MAX_SNAP} cells"
            )));
        }
        let target = match (&self.goals, self.goal_radius, &self.flee) {
            (Some(goals), _, _) if goals.len() > MAX_GOALS => {
                return Err(ApiError::new(
                    axum::http::StatusCode::BAD_REQUEST,
                    ErrorCode::TooManyGoals,
                    format!(
                        "goals holds {} points; a query names at most {MAX_GOALS}",
                        goals.len()
                    ),
                ));
            }
            (Some(goals), _, _) if goals.is_empty() => {
                return Err(ApiError::invalid_request(
                    "goals must hold at least one point",
                ));
            }
            (Some(goals), _, _) => Some(Target::Any(goals.iter().copied().map(point).collect())),
            (None, Some(radius), _) => Some(Target::Near {
                goal: point(self.goal.unwrap_or(self.start)),
                radius,
                visible: self.goal_visible.unwrap_or(false),
            }),
            (None, None, Some(f)) => Some(Target::Flee {
                from: point(f.from),
                distance: f.distance,
            }),
            (None, None, None) => None,
        };
        Ok(Games {
            target,
            snap: self.snap,
        })
    }
}

/// Parses a lesson option's wire name (`None` when absent).
fn lesson_option<T: Copy>(
    value: Option<&str>,
    field: &str,
    parse: fn(&str) -> Option<T>,
    name: fn(T) -> &'static str,
    all: &[T],
) -> Result<Option<T>, ApiError> {
    value
        .map(|v| {
            parse(v).ok_or_else(|| {
                let names: Vec<_> = all.iter().map(|&t| name(t)).collect();
                ApiError::invalid_request(format!(
                    "unknown {field} {v:?}; expected one of {}",
                    names.join(", ")
                ))
            })
        })
        .transpose()
}

/// The answer to a path query (`PathResult` in `openapi.yaml`).
#[derive(Debug, Serialize)]
pub struct PathResponse {
    /// `found`, `partial`, `no_path` or `limit_reached`.
    pub status: &'static str,
    /// Cells from start to goal (or to the closest cell, for `partial`), as `path_format`
    /// asks.
    pub path: PathCells,
    /// Cost of the answer to follow: the polyline through `waypoints` for any-angle answers
    /// (Theta*, `smooth`), else the cell path.
    pub cost: f64,
    /// Cost of the cell `path`, step by step.
    pub path_cost: f64,
    /// Nodes expanded.
    pub expanded: u64,
    /// Nodes generated.
    pub generated: u64,
    /// The algorithm that ran (`auto` resolved).
    pub algorithm: &'static str,
    /// Version of the map snapshot searched.
    pub map_version: u64,
    /// Search time in microseconds.
    pub elapsed_us: u64,
    /// Which limit stopped the search: `expansions`, `timeout` or `cancelled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<&'static str>,
    /// Expanded cells in order, when `debug` was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expanded_cells: Option<PathCells>,
    /// Corner points (start and end included), each in line of sight of the next: the
    /// smoothed corners with `smooth`, Theta*'s vertices, JPS's jump points.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waypoints: Option<PathCells>,
    /// Cost of the polyline through `waypoints`, for any-angle answers (Theta*, `smooth`):
    /// then equal to `cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waypoints_cost: Option<f64>,
    /// The search's events, when `trace` was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::http::routes::trace::SearchTrace>,
    /// `false` when a lesson option (`heuristic`, `tie_break`) gave up the algorithm's
    /// guarantee (Manhattan on an octile map, the epsilon nudge); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optimal: Option<bool>,
    /// The games' answers (`start`, `goal`, `goal_index`, `snapped`), when asked for.
    #[serde(flatten)]
    pub ends: Option<Ends>,
}

/// What a query with `goals`, `goal_radius`, `flee` or `snap` answers beside its path.
#[derive(Debug, Clone, Serialize)]
pub struct Ends {
    /// The start searched from (after snapping).
    pub start: [u32; 2],
    /// The goal as used (snapped) or reached (`goals`, `goal_radius`, `flee`); absent
    /// when none was reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goal: Option<[u32; 2]>,
    /// With `goals`: the index of the goal reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goal_index: Option<usize>,
    /// With `snap`: whether an end moved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapped: Option<bool>,
}

impl PathResponse {
    /// Converts an engine result on map version `map_version`, its path to be written as
    /// `format` asks. The engine's cell vectors are kept as they are (see [`crate::http::wire`]).
    pub fn new(r: SearchResult, map_version: u64, debug: bool, format: PathFormat) -> Self {
        PathResponse {
            status: r.status.as_str(),
            path: PathCells::new(r.path, format),
            // Any-angle answers are followed along their waypoints, so that is their cost.
            cost: r.smoothed_length.unwrap_or(r.cost),
            path_cost: r.cost,
            expanded: r.stats.expanded,
            generated: r.stats.generated,
            algorithm: r.algorithm.as_str(),
            map_version,
            elapsed_us: r.stats.elapsed.as_micros() as u64,
            limit: r.limit.map(|l| match l {
                LimitKind::Expansions => "expansions",
                LimitKind::Deadline => "timeout",
                LimitKind::Cancelled => "cancelled",
            }),
            expanded_cells: debug.then(|| PathCells::pairs(r.expanded_cells)),
            waypoints: r.waypoints.map(PathCells::pairs),
            waypoints_cost: r.smoothed_length,
            trace: None,
            optimal: (!r.keeps_guarantee).then_some(false),
            ends: None,
        }
    }
}

/// `POST /v1/maps/{name}/paths`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// Wait until this replica has applied this map version (see [`PathRequest`]).
    pub min_version: Option<u64>,
    /// The queries, answered in order.
    pub queries: Vec<PathRequest>,
}

impl BatchRequest {
    /// Parses a batch body with at most `max` queries. The parse stops as soon as query
    /// `max + 1` starts (nothing of it or after it is read, so an over-long batch costs no
    /// more than a full one) and answers `413 too_many_queries`; other failures are
    /// `400 invalid_request` naming where the body went wrong.
    pub fn from_json(
        de: &mut crate::http::body::SliceDeserializer<'_>,
        max: usize,
    ) -> Result<Self, ApiError> {
        use serde::de::DeserializeSeed;
        let over = std::cell::Cell::new(false);
        let mut track = serde_path_to_error::Track::new();
        let seed = batch_seed::Batch { max, over: &over };
        let de = crate::http::body::Contract(de);
        match seed.deserialize(serde_path_to_error::Deserializer::new(de, &mut track)) {
            Ok(batch) => Ok(batch),
            Err(_) if over.get() => Err(ApiError::new(
                axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                ErrorCode::TooManyQueries,
                format!("a batch holds at most {max} queries; this one has more"),
            )),
            Err(e) => Err(crate::http::body::parse_error(
                &serde_path_to_error::Error::new(track.path(), e),
            )),
        }
    }
}

/// The bounded parse of [`BatchRequest`]: `{"queries": [...]}`, no other field.
mod batch_seed {
    use std::cell::Cell;
    use std::fmt;

    use serde::Deserialize;
    use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

    use super::{BatchRequest, PathRequest};

    /// The body; sets `over` when the queries run past `max`.
    pub(super) struct Batch<'a> {
        pub(super) max: usize,
        pub(super) over: &'a Cell<bool>,
    }

    #[derive(Deserialize)]
    #[serde(field_identifier, rename_all = "snake_case")]
    enum Field {
        Queries,
        MinVersion,
    }

    impl<'de> DeserializeSeed<'de> for Batch<'_> {
        type Value = BatchRequest;

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<BatchRequest, D::Error> {
            d.deserialize_struct("BatchRequest", &["queries", "min_version"], self)
        }
    }

    impl<'de> Visitor<'de> for Batch<'_> {
        type Value = BatchRequest;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object with a `queries` array")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<BatchRequest, A::Error> {
            let mut queries = None;
            let mut min_version = None;
            while let Some(field) = map.next_key()? {
                match field {
                    Field::Queries => {
                        if queries.is_some() {
                            return Err(de::Error::duplicate_field("queries"));
                        }
                        queries = Some(map.next_value_seed(Queries {
                            max: self.max,
                            over: self.over,
                        })?);
                    }
                    Field::MinVersion => {
                        if min_version.is_some() {
                            return Err(de::Error::duplicate_field("min_version"));
                        }
                        min_version = Some(map.next_value::<super::Saturating>()?.0);
                    }
                }
            }
            let queries = queries.ok_or_else(|| de::Error::missing_field("queries"))?;
            Ok(BatchRequest {
                min_version,
                queries,
            })
        }
    }

    struct Queries<'a> {
        max: usize,
        over: &'a Cell<bool>,
    }

    impl<'de> DeserializeSeed<'de> for Queries<'_> {
        type Value = Vec<PathRequest>;

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_seq(self)
        }
    }

    impl<'de> Visitor<'de> for Queries<'_> {
        type Value = Vec<PathRequest>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an array of path queries")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(self.max));
            while out.len() < self.max {
                match seq.next_element()? {
                    Some(q) => out.push(q),
                    None => return Ok(out),
                }
            }
            // Full: one more element is an error before any of it is parsed.
            match seq.next_element_seed(Refuse(self.over))? {
                Some(()) => Err(de::Error::custom("too many queries")),
                None => Ok(out),
            }
        }
    }

    /// Fails at the start of an element, without reading it.
    struct Refuse<'a>(&'a Cell<bool>);

    impl<'de> DeserializeSeed<'de> for Refuse<'_> {
        type Value = ();

        fn deserialize<D: Deserializer<'de>>(self, _: D) -> Result<(), D::Error> {
            self.0.set(true);
            Err(de::Error::custom("too many queries"))
        }
    }
}

/// One answer of a batch: a result, or the error that query alone got. `status` tells them
/// apart (the contract's discriminator): a result's outcome, or `error`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum BatchItem {
    /// The query ran.
    Ok(Box<PathResponse>),
    /// The query was invalid for this map (e.g. `out_of_bounds`).
    Err(BatchError),
}

/// The error item of a batch (`BatchError` in `openapi.yaml`): `{"status": "error",
/// "error": {...}}`.
#[derive(Debug, Serialize)]
pub struct BatchError {
    /// Always `error`.
    pub status: &'static str,
    /// The error, as a whole request's error body holds it.
    #[serde(flatten)]
    pub body: ErrorBody,
}

impl From<ErrorBody> for BatchError {
    fn from(body: ErrorBody) -> Self {
        BatchError {
            status: "error",
            body,
        }
    }
}

/// The answer to a batch.
#[derive(Debug, Serialize)]
pub struct BatchResponse {
    /// Version of the map snapshot every query searched.
    pub map_version: u64,
    /// One item per query, in order.
    pub results: Vec<BatchItem>,
}

/// `GET /healthz` and `GET /readyz`.
#[derive(Debug, Serialize)]
pub struct Health {
    /// `ok`, `ready` or `loading`.
    pub status: &'static str,
    /// Maps loaded.
    pub maps: usize,
    /// Maps not served because their durable data is damaged (`pathd data check`).
    pub damaged_maps: Vec<String>,
    /// Maps served after recovery found their patch log cut (versions lost; see the map
    /// summary's `recovery`).
    pub cut_logs: Vec<String>,
    /// The replicated store's connection and lag (`--store nats://...` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreHealth>,
    /// This replica and the live members (`--store nats://...` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<crate::cluster::ClusterHealth>,
}

/// The replicated store as `/healthz` and `/readyz` report it.
#[derive(Debug, Serialize)]
pub struct StoreHealth {
    /// `nats`.
    pub kind: &'static str,
    /// Whether NATS is reachable now (writes answer `503 store_unavailable` while not).
    pub connected: bool,
    /// Stream sequence of the last mutation applied here.
    pub applied_position: u64,
    /// Mutations stored but not yet applied here.
    pub lag_messages: u64,
    /// Map versions stored but not yet applied here, summed over the maps.
    pub lag_versions: u64,
    /// Age of the oldest stored mutation not yet applied here, in seconds.
    pub lag_seconds: f64,
    /// Per map: the stream's newest version, the applied one, and the lag.
    pub maps: Vec<MapLagHealth>,
}

/// One map's replication lag, as `/healthz` and `/readyz` report it.
#[derive(Debug, Serialize)]
pub struct MapLagHealth {
    /// The map.
    pub name: String,
    /// The newest version the stream holds.
    pub stream_version: u64,
    /// The version applied (and served) here.
    pub applied_version: u64,
    /// `stream_version - applied_version`.
    pub lag_versions: u64,
    /// Age of the oldest stored version not yet applied here, in seconds.
    pub lag_seconds: f64,
}

impl From<crate::store::StoreStatus> for StoreHealth {
    fn from(s: crate::store::StoreStatus) -> Self {
        StoreHealth {
            kind: s.kind,
            connected: s.connected,
            applied_position: s.applied_position,
            lag_messages: s.lag_messages,
            lag_versions: s.lag_versions,
            lag_seconds: s.lag_seconds,
            maps: s
                .maps
                .into_iter()
                .map(|m| MapLagHealth {
                    name: m.name,
                    stream_version: m.stream_version,
                    applied_version: m.applied_version,
                    lag_versions: m.lag_versions,
                    lag_seconds: m.lag_seconds,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: serde_json::Value) -> Result<PathRequest, String> {
        let text = body.to_string();
        let mut de = serde_json::Deserializer::from_str(&text);
        serde_path_to_error::deserialize(crate::http::body::Contract(&mut de))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn saturating_fields_saturate_and_read_null_as_an_option_does() {
        let r = request(serde_json::json!({"start": [0, 0], "goal": [1, 0],
            "min_version": 1e30, "max_expansions": 7.0, "timeout_ms": u64::MAX}))
        .unwrap();
        assert_eq!(
            (r.min_version, r.max_expansions, r.timeout_ms),
            (Some(u64::MAX), Some(7), Some(u64::MAX))
        );
        // A request refuses null; a subscription's stored definition, read back with plain
        // serde (a takeover, `crate::cluster`), holds it for "unset".
        let e = request(serde_json::json!({"start": [0, 0], "max_expansions": null})).unwrap_err();
        assert!(
            e.starts_with("max_expansions: null is not a value here"),
            "{e}"
        );
        let r: PathRequest = serde_json::from_value(serde_json::json!(
            {"start": [0, 0], "max_expansions": null, "timeout_ms": null, "min_version": null}))
        .unwrap();
        assert_eq!(
            (r.max_expansions, r.timeout_ms, r.min_version),
            (None, None, None)
        );
        assert!(request(serde_json::json!({"start": [0, 0], "timeout_ms": -1})).is_err());
        assert!(request(serde_json::json!({"start": [0, 0], "timeout_ms": "5"})).is_err());
    }
}
