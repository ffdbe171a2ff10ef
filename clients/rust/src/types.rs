//! The wire types of `openapi.yaml`. Answers are read leniently (unknown fields are
//! ignored, so a server that adds a field does not break this client); optional request
//! fields are skipped when `None`.

use serde::{Deserialize, Serialize};

/// `[x, y]`: column, row; `[0, 0]` is the top-left cell.
pub type Point = [u32; 2];

/// A path query (`findPath`, a batch item, `createSubscription`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct PathRequest {
    /// Start cell.
    pub start: Point,
    /// Goal cell (exactly one of `goal`, `goals` and `flee`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goal: Option<Point>,
    /// Instead of `goal`: the path to the cheapest reachable of these (at most 1024).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goals: Option<Vec<Point>>,
    /// Instead of a goal: the cheapest path to a cell at least this far from a threat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flee: Option<Flee>,
    /// With `goal`: stop at the cheapest cell within this Euclidean distance of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goal_radius: Option<f64>,
    /// With `goal_radius`: the cell must also see `goal`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub goal_visible: bool,
    /// Move a blocked or unreachable start (and a single goal) to the nearest usable cell
    /// at most this many cells away (0..=64).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snap: Option<u32>,
    /// The unit-type profile to search for (default the map's `default_profile`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// `astar` (default), `dijkstra`, `weighted_astar`, `jps`, `jps_plus`, `theta`, `hpa`, `auto`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
    /// Weight of `weighted_astar`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// Expansion budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_expansions: Option<u64>,
    /// Search time budget in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Answer the path to the closest cell on a limit or an unreachable goal.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// Also return the expanded cells.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub debug: bool,
    /// String-pull the path into `waypoints`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub smooth: bool,
    /// Agent side in cells (1..=8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    /// Lessons: a heuristic other than the map's own (`octile`, `manhattan`, `euclidean`,
    /// `chebyshev`, `zero`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heuristic: Option<String>,
    /// Wait until this replica has applied this map version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_version: Option<u64>,
}

impl PathRequest {
    /// A query from `start` to `goal` with the defaults.
    pub fn new(start: Point, goal: Point) -> Self {
        PathRequest {
            start,
            goal: Some(goal),
            ..Default::default()
        }
    }

    /// A query from `start` to the cheapest reachable of `goals`.
    pub fn to_goals(start: Point, goals: &[Point]) -> Self {
        PathRequest {
            start,
            goals: Some(goals.to_vec()),
            ..Default::default()
        }
    }

    /// A query from `start` to the cheapest cell whose path cost from `from` is at least
    /// `distance`.
    pub fn flee(start: Point, from: Point, distance: f64) -> Self {
        PathRequest {
            start,
            flee: Some(Flee { from, distance }),
            ..Default::default()
        }
    }
}

/// The threat a `flee` query runs from.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Flee {
    /// Where the threat is.
    pub from: Point,
    /// The path cost from it to reach at least.
    pub distance: f64,
}

/// The outcome of a query; "no path" is a status, not an error.
#[derive(Debug, Clone, Deserialize)]
pub struct PathResult {
    /// `found`, `partial`, `no_path` or `limit_reached`.
    pub status: String,
    /// The cells from start to goal.
    pub path: Vec<Point>,
    /// Cost of the answer to follow.
    pub cost: f64,
    /// Cost of the cell path.
    pub path_cost: f64,
    /// Expanded nodes.
    pub expanded: u64,
    /// The algorithm that ran.
    pub algorithm: String,
    /// The map version searched.
    pub map_version: u64,
    /// Corner points (smooth, theta, jps).
    #[serde(default)]
    pub waypoints: Option<Vec<Point>>,
    /// Cost through `waypoints`.
    #[serde(default)]
    pub waypoints_cost: Option<f64>,
    /// Which limit stopped the search (`expansions`, `timeout`, `cancelled`), only then.
    #[serde(default)]
    pub limit: Option<String>,
    /// The expanded cells in expansion order (with `debug`).
    #[serde(default)]
    pub expanded_cells: Option<Vec<Point>>,
    /// With `goals`, `goal_radius`, `flee` or `snap`: the start searched from.
    #[serde(default)]
    pub start: Option<Point>,
    /// With `snap`, the goal searched for; with `goals`, `goal_radius` or `flee`, the cell
    /// reached (absent when none was).
    #[serde(default)]
    pub goal: Option<Point>,
    /// With `goals`, the index of the goal reached (absent when none was).
    #[serde(default)]
    pub goal_index: Option<usize>,
    /// With `snap`, whether the start or the goal moved.
    #[serde(default)]
    pub snapped: Option<bool>,
    /// `Some(false)` when a lesson option gave up the algorithm's guarantee.
    #[serde(default)]
    pub optimal: Option<bool>,
}

/// The `error` object of an error body.
#[derive(Debug, Clone, Deserialize)]
pub struct ErrorDetail {
    /// The stable code.
    pub code: String,
    /// Human-readable text.
    pub message: String,
}

/// One item of a batch: a result, or that query's error; `status` tells them apart (the
/// contract's discriminator: `error`, or a result's outcome).
#[derive(Debug, Clone)]
pub enum BatchItem {
    /// The query's error.
    Error {
        /// The error.
        error: ErrorDetail,
    },
    /// The query's result.
    Result(Box<PathResult>),
}

impl<'de> Deserialize<'de> for BatchItem {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Failed {
            error: ErrorDetail,
        }
        let item = serde_json::Value::deserialize(d)?;
        if item.get("status").and_then(serde_json::Value::as_str) == Some("error") {
            let Failed { error } =
                serde_json::from_value(item).map_err(serde::de::Error::custom)?;
            return Ok(BatchItem::Error { error });
        }
        serde_json::from_value(item)
            .map(|r| BatchItem::Result(Box::new(r)))
            .map_err(serde::de::Error::custom)
    }
}

/// A batch of path queries (`findPaths`) with its options ([`crate::Client::find_paths_with`]).
#[derive(Debug, Clone, Default, Serialize)]
pub struct BatchRequest {
    /// The queries (at most the server's `PATHD_MAX_BATCH`, default 256).
    pub queries: Vec<PathRequest>,
    /// Wait until this replica has applied this map version (for the whole batch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_version: Option<u64>,
}

/// The answer of a batch, in order.
#[derive(Debug, Clone, Deserialize)]
pub struct BatchResponse {
    /// The map version searched.
    pub map_version: u64,
    /// One item per query.
    pub results: Vec<BatchItem>,
}

/// A map's summary (the fields most clients need; the rest are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct MapSummary {
    /// Name.
    pub name: String,
    /// Version.
    pub version: u64,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// `octile` or `cardinal`.
    pub movement: String,
    /// Whether every passable cell costs 1.
    pub uniform: bool,
    /// `bundled` or `uploaded`.
    pub source: String,
    /// Passable cells.
    pub passable_cells: u64,
    /// Blocked cells.
    pub blocked_cells: u64,
    /// Connected components of passable cells.
    pub components: u64,
    /// Smallest passable cost (0 when no cell is passable).
    pub min_cost: u8,
    /// Largest passable cost.
    pub max_cost: u8,
    /// The unit-type profile of requests that name none.
    #[serde(default)]
    pub default_profile: Option<String>,
    /// The map's unit-type profiles.
    #[serde(default)]
    pub profiles: Vec<ProfileSummary>,
    /// The JPS+ jump table (uniform octile maps up to a size).
    #[serde(default)]
    pub jps_plus: Option<JumpInfo>,
    /// The HPA* abstraction (maps from a size).
    #[serde(default)]
    pub hpa: Option<HpaInfo>,
    /// The subgoal graph (uniform octile maps up to a size).
    #[serde(default)]
    pub subgoal: Option<SubgoalInfo>,
    /// The map eroded for each agent size that sized `jps` or `hpa` queries asked for.
    #[serde(default)]
    pub sized: Vec<SizedView>,
    /// Only when recovery at start found the map's patch log cut.
    #[serde(default)]
    pub recovery: Option<Recovery>,
    /// The map's live subscriptions and their memory (only while it has some).
    #[serde(default)]
    pub subscriptions: Option<SubscriptionUsage>,
}

/// A map's live subscriptions, as of their last repair.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SubscriptionUsage {
    /// Live subscriptions of the map (at least 1).
    pub count: u64,
    /// Bytes their shared searches and paths hold.
    pub memory_bytes: u64,
}

/// How a map with a cut patch log is served.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Recovery {
    /// The first and the last version lost.
    pub lost_versions: [u64; 2],
    /// The version it is served as, past every lost one.
    pub served_as: u64,
}

/// The map eroded for an agent size.
#[derive(Debug, Clone, Deserialize)]
pub struct SizedView {
    /// Agent side in cells (2..=8).
    pub size: u32,
    /// Heap bytes of the eroded map.
    pub memory_bytes: u64,
    /// Its HPA* abstraction, once a sized `hpa` query asked for one.
    #[serde(default)]
    pub hpa: Option<HpaInfo>,
}

/// A map version's JPS+ jump table.
#[derive(Debug, Clone, Deserialize)]
pub struct JumpInfo {
    /// `building`, `ready`, `failed` or `evicted`.
    pub status: String,
    /// `build` or `update` (derived from the previous version's).
    pub made_by: String,
    /// Why its build failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Heap bytes.
    pub memory_bytes: u64,
    /// Its landmarks (ALT distances), when there are some.
    #[serde(default)]
    pub landmarks: Option<LandmarkInfo>,
}

/// The landmarks of a jump table.
#[derive(Debug, Clone, Deserialize)]
pub struct LandmarkInfo {
    /// `building`, `ready`, ...
    pub status: String,
    /// `build`, `carried` (kept over walls) or `update`.
    pub made_by: String,
    /// Landmarks.
    pub count: u64,
    /// Heap bytes.
    pub memory_bytes: u64,
}

/// A map version's subgoal graph with a contraction hierarchy.
#[derive(Debug, Clone, Deserialize)]
pub struct SubgoalInfo {
    /// `building`, `ready`, `failed` or `evicted`.
    pub status: String,
    /// `build` or `update`.
    pub made_by: String,
    /// Why its build failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Subgoals.
    pub subgoals: u64,
    /// Edges.
    pub edges: u64,
    /// Whether `auto` takes it (it pays off on this map).
    pub auto: bool,
    /// Heap bytes.
    pub memory_bytes: u64,
}

/// A map version's HPA* abstraction.
#[derive(Debug, Clone, Deserialize)]
pub struct HpaInfo {
    /// `building`, `ready`, `failed` or `evicted`.
    pub status: String,
    /// Why its build failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Cluster side in cells.
    pub cluster_size: u32,
    /// Abstract graph nodes.
    pub nodes: u64,
    /// Abstract graph edges.
    pub edges: u64,
    /// Heap bytes.
    pub memory_bytes: u64,
}

/// One unit-type profile of a map.
#[derive(Debug, Clone, Deserialize)]
pub struct ProfileSummary {
    /// Name.
    pub name: String,
    /// Whether it is the map's default.
    pub default: bool,
    /// The cost of each class 0..=255.
    pub costs: Vec<u8>,
    /// Cells its units can enter (once its view was made; always for the default).
    #[serde(default)]
    pub passable_cells: Option<u64>,
    /// Its JPS+ jump table.
    #[serde(default)]
    pub jps_plus: Option<JumpInfo>,
}

/// Every map's summary.
#[derive(Debug, Clone, Deserialize)]
pub struct MapList {
    /// Sorted by name.
    pub maps: Vec<MapSummary>,
    /// Maps whose durable data is damaged (not served until `pathd data repair`).
    #[serde(default)]
    pub damaged: Vec<DamagedMap>,
}

/// A map whose durable data is damaged.
#[derive(Debug, Clone, Deserialize)]
pub struct DamagedMap {
    /// Name.
    pub name: String,
    /// What is wrong.
    pub reason: String,
    /// The newest version a repair keeps (`None` when the snapshot itself is unreadable).
    pub last_good_version: Option<u64>,
    /// Acknowledged versions a repair would drop, as far as they can be read.
    pub dropped_versions: Vec<u64>,
}

/// One cell change of a patch.
#[derive(Debug, Clone, Serialize)]
pub struct CellChange {
    /// Column.
    pub x: u32,
    /// Row.
    pub y: u32,
    /// New cost (0 blocks it).
    pub cost: u32,
}

/// One rectangle of a patch.
#[derive(Debug, Clone, Serialize)]
pub struct RectChange {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// New cost (0 blocks it).
    pub cost: u32,
}

/// A patch: rectangles, then cells, changed atomically (with profile changes), optionally
/// only at `if_version`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MapPatch {
    /// Cells.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<CellChange>,
    /// Rectangles (applied before the cells).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rects: Vec<RectChange>,
    /// Profiles added or replaced (a cost table: an array per class or an object per
    /// Moving AI character) or removed (`null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profiles: Option<serde_json::Map<String, serde_json::Value>>,
    /// Another default profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_profile: Option<String>,
    /// `409 version_conflict` unless the map is at this version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub if_version: Option<u64>,
}

/// The answer of a patch.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PatchResult {
    /// The map's version after it.
    pub version: u64,
    /// Cells whose cost changed.
    pub changed_cells: u64,
    /// Subscriptions the patch reaches (their repairs run after the answer).
    pub affected_subscriptions: u64,
}

/// A subscription's state (the create answer also has its `secret`).
#[derive(Debug, Clone, Deserialize)]
pub struct Subscription {
    /// 32 hex digits.
    pub id: String,
    /// Only in the create answer: needed to move or delete it.
    #[serde(default)]
    pub secret: Option<String>,
    /// `found`, `no_path` or `limit_reached`.
    pub status: String,
    /// The path from the agent to the goal.
    pub path: Vec<Point>,
    /// Its cost.
    pub cost: f64,
    /// The map version.
    pub map_version: u64,
    /// The last event's `seq`.
    pub seq: u64,
    /// The agent's position.
    pub position: Point,
    /// The goal.
    pub goal: Point,
    /// The map it follows.
    pub map: String,
    /// The unit-type profile it follows, when it named one other than the map's default.
    #[serde(default)]
    pub profile: Option<String>,
}

/// One event of a subscription's stream; `resync` carries the full state.
#[derive(Debug, Clone, Deserialize)]
pub struct SubscriptionEvent {
    /// The subscription.
    pub id: String,
    /// 1, 2, ... (the SSE id).
    pub seq: u64,
    /// The map version.
    pub map_version: u64,
    /// `found`, `no_path` or `limit_reached`.
    pub status: String,
    /// The path.
    pub path: Vec<Point>,
    /// Its cost.
    pub cost: f64,
    /// `initial`, `blocked`, ..., `resync`, or a final one.
    pub reason: String,
}

/// A flow field's region.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Region {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

/// A flow field as sent (base64 arrays; see [`FlowField::cost`]).
#[derive(Debug, Clone, Deserialize)]
pub struct FlowField {
    /// 32 hex digits.
    pub id: String,
    /// Only in the create answer: needed to delete it.
    #[serde(default)]
    pub secret: Option<String>,
    /// The newest event's `seq` included.
    pub seq: u64,
    /// The region.
    pub region: Region,
    /// base64, one byte per region cell.
    pub directions: String,
    /// base64, one little-endian f64 per region cell.
    pub costs: String,
    /// The map.
    pub map: String,
    /// The unit-type profile, when one other than the map's default.
    #[serde(default)]
    pub profile: Option<String>,
    /// The goal cell.
    pub goal: Point,
    /// Agent side in cells.
    pub size: u32,
    /// The cost bound, if any.
    #[serde(default)]
    pub max_cost: Option<f64>,
    /// The map version the field holds for.
    pub map_version: u64,
    /// Region cells that reach the goal.
    pub reachable: u64,
}

impl FlowField {
    /// The cost to the goal from a map cell (`+inf` outside the region or unreachable).
    pub fn cost(&self, p: Point) -> f64 {
        use base64::Engine as _;
        let r = self.region;
        if p[0] < r.x || p[1] < r.y || p[0] >= r.x + r.width || p[1] >= r.y + r.height {
            return f64::INFINITY;
        }
        let i = ((p[1] - r.y) * r.width + (p[0] - r.x)) as usize;
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&self.costs)
            .unwrap_or_default();
        raw.get(i * 8..i * 8 + 8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
            .unwrap_or(f64::INFINITY)
    }
}

/// One event of a flow field's stream.
#[derive(Debug, Clone, Deserialize)]
pub struct FlowFieldEvent {
    /// The field.
    pub id: String,
    /// The SSE id.
    pub seq: u64,
    /// `current`, `changed`, `resync`, or a final one.
    pub reason: String,
    /// `[x, y, direction, cost]`, cost `null` when unreachable.
    pub cells: Vec<(u32, u32, u8, Option<f64>)>,
    /// The map version the field holds for after this event.
    pub map_version: u64,
    /// Why a `resync` came (`too_many_cells`, `fell_behind`, `taken_over`, `moved`).
    #[serde(default)]
    pub why: Option<String>,
}

/// A distance table (`costMatrix`): at most 256 sources and 256 targets.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MatrixRequest {
    /// A row per source.
    pub sources: Vec<Point>,
    /// An entry per target.
    pub targets: Vec<Point>,
    /// Agent side in cells (1..=8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    /// The unit-type profile (default the map's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Each row's search time budget in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Wait until this replica has applied this map version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_version: Option<u64>,
}

/// The answer of `costMatrix`.
#[derive(Debug, Clone, Deserialize)]
pub struct MatrixResponse {
    /// A row per source, an entry per target: the optimal cost, `None` when unreachable or
    /// an end is blocked.
    pub costs: Vec<Vec<Option<f64>>>,
    /// The map version every row ran on.
    pub map_version: u64,
}

/// `nearestCell`: the usable cell nearest to `at`.
#[derive(Debug, Clone, Default)]
pub struct NearestRequest {
    /// The point asked about.
    pub at: Point,
    /// At most this many cells away in x and in y (0..=64, default 8).
    pub radius: Option<u32>,
    /// Agent side in cells (1..=8): a cell is usable where the agent fits.
    pub size: Option<u32>,
    /// The unit-type profile whose cells count as usable (default the map's).
    pub profile: Option<String>,
}

/// The answer of `nearestCell`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct NearestCell {
    /// Column of the usable cell.
    pub x: u32,
    /// Row of the usable cell.
    pub y: u32,
    /// Euclidean distance from the point asked about (0 when it is usable).
    pub distance: f64,
    /// The map version it was answered on.
    pub map_version: u64,
}

/// `lineOfSight` with its options ([`crate::Client::los_with`]).
#[derive(Debug, Clone, Default, Serialize)]
pub struct LosRequest {
    /// From this cell's centre.
    pub from: Point,
    /// To this cell's centre.
    pub to: Point,
    /// The unit-type profile whose walls block (default the map's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Wait until this replica has applied this map version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_version: Option<u64>,
}

/// The answer of `lineOfSight`.
#[derive(Debug, Clone, Deserialize)]
pub struct LosResponse {
    /// True when the target's centre is visible.
    pub visible: bool,
    /// The first blocked cell along the segment (`None` when visible).
    pub blocked_at: Option<Point>,
    /// The map version it was answered on.
    pub map_version: u64,
}

/// `randomReachable` with its options ([`crate::Client::random_with`]).
#[derive(Debug, Clone, Default)]
pub struct RandomRequest {
    /// The start cell.
    pub at: Point,
    /// Path cost bound.
    pub radius: f64,
    /// The same cell for the same seed and map version.
    pub seed: Option<u64>,
    /// Agent side in cells (1..=8).
    pub size: Option<u32>,
    /// The unit-type profile (default the map's).
    pub profile: Option<String>,
}

/// The answer of `randomReachable`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RandomResponse {
    /// Column of the cell drawn.
    pub x: u32,
    /// Row of the cell drawn.
    pub y: u32,
    /// Its path cost from the start.
    pub distance: f64,
    /// Cells within the radius, each as likely.
    pub candidates: u64,
    /// The seed the pick used.
    pub seed: u64,
    /// The map version it was answered on.
    pub map_version: u64,
}

/// One agent of a multi-agent plan.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct PlanAgent {
    /// `[x, y]`.
    pub start: Point,
    /// `[x, y]`.
    pub goal: Point,
}

/// `POST /v1/maps/{name}/plans`: many agents at once, without collisions (MAPF).
#[derive(Debug, Clone, Default, Serialize)]
pub struct PlanRequest {
    /// The agents (distinct starts, distinct goals).
    pub agents: Vec<PlanAgent>,
    /// 1..30000 (default 1000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_limit_ms: Option<u64>,
    /// `sum_of_costs` (default) or `makespan`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// Answer with the first plan found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_solution: Option<bool>,
    /// Tie-breaking seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Keep the plan live (set by [`crate::Client::create_live_plan`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// Agent side in cells: only 1 is accepted (any other is `400 not_applicable`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    /// Profiles do not apply to plans: any is `400 not_applicable`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Wait until this replica has applied this map version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_version: Option<u64>,
}

/// A multi-agent plan; a live plan's create answer also has `id`, `secret`, `seq`,
/// `start_step` and `time_step`.
#[derive(Debug, Clone, Deserialize)]
pub struct PlanResult {
    /// `solved`, `partial` or `failed`.
    pub status: String,
    /// Per agent, its cell at every time step (from `start_step` for live plans).
    pub paths: Vec<Vec<Point>>,
    /// Sum over agents of the steps until each rests at its goal.
    pub sum_of_costs: u64,
    /// Time steps.
    pub makespan: u64,
    /// The sum of the agents' own distances.
    pub lower_bound: u64,
    /// The map version planned on.
    pub map_version: u64,
    /// A live plan's id.
    #[serde(default)]
    pub id: Option<String>,
    /// A live plan's secret (create answer only).
    #[serde(default)]
    pub secret: Option<String>,
    /// A live plan's newest event.
    #[serde(default)]
    pub seq: Option<u64>,
    /// A live plan's time step of `paths[*][0]`.
    #[serde(default)]
    pub start_step: Option<u64>,
    /// A live plan's last reported time step (`GET`, `PATCH`).
    #[serde(default)]
    pub time_step: Option<u64>,
    /// A live plan's event reason (`GET`, `PATCH`, events).
    #[serde(default)]
    pub reason: Option<String>,
    /// A live plan's re-planned agents (`GET`, `PATCH`, events).
    #[serde(default)]
    pub replanned: Option<Vec<usize>>,
    /// The agents' positions at `time_step` (`GET`, `PATCH`).
    #[serde(default)]
    pub positions: Option<Vec<Point>>,
    /// `sum_of_costs` or `makespan` (a plan's answer).
    #[serde(default)]
    pub objective: Option<String>,
    /// Whether the plan is proven optimal for its objective (a plan's answer).
    #[serde(default)]
    pub optimal: Option<bool>,
    /// Time spent planning (a plan's answer).
    #[serde(default)]
    pub elapsed_ms: Option<f64>,
    /// When the first solution was found (a plan's answer; none when none was).
    #[serde(default)]
    pub first_solution_ms: Option<f64>,
    /// Nodes expanded (a plan's answer).
    #[serde(default)]
    pub nodes: Option<u64>,
    /// Whether only `replanned` were re-planned (a live plan's state).
    #[serde(default)]
    pub repaired: Option<bool>,
}

/// `PATCH /v1/plans/{id}`: where the agents are (at least one of the two).
#[derive(Debug, Clone, Default, Serialize)]
pub struct PlanProgress {
    /// The time step the agents are at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_step: Option<u64>,
    /// `[x, y]` per agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub positions: Option<Vec<Point>>,
}

/// One event of a live plan's stream: the whole plan after it.
#[derive(Debug, Clone, Deserialize)]
pub struct LivePlanEvent {
    /// The plan.
    pub id: String,
    /// The SSE id.
    pub seq: u64,
    /// The map version the plan holds for.
    pub map_version: u64,
    /// `initial`, `blocked`, `delayed`, `restored`, `resync`, or a final one.
    pub reason: String,
    /// `solved`, `partial` or `failed`.
    pub status: String,
    /// `paths[i][k]` is agent `i`'s cell at time step `start_step + k`.
    pub start_step: u64,
    /// Per agent, all one length.
    pub paths: Vec<Vec<Point>>,
    /// Agents whose paths this event changed.
    pub replanned: Vec<usize>,
    /// Only `replanned` were re-planned; the others kept their paths.
    pub repaired: bool,
}

/// The answer of `healthz` (liveness).
#[derive(Debug, Clone, Deserialize)]
pub struct Health {
    /// `ok` or `ready`.
    pub status: String,
    /// Maps served.
    pub maps: u64,
    /// Maps not served because their durable data is damaged.
    pub damaged_maps: Vec<String>,
    /// Maps served after recovery found their patch log cut.
    pub cut_logs: Vec<String>,
    /// The replicated store (only with `--store nats://...`), as sent.
    #[serde(default)]
    pub store: Option<serde_json::Value>,
    /// The replicas sharing subscriptions (only with `--store nats://...`), as sent.
    #[serde(default)]
    pub cluster: Option<serde_json::Value>,
}

/// A search trace in the Posthoc format (`findPathPosthoc`).
#[derive(Debug, Clone, Deserialize)]
pub struct PosthocTrace {
    /// The format's version.
    pub version: String,
    /// pathd's own summary of the search (map, map_version, algorithm, status, cost,
    /// path_cost, expanded, truncated, and for `hpa` its trace); ignored by Posthoc.
    #[serde(default)]
    pub pathd: Option<serde_json::Value>,
    /// How Posthoc draws the events.
    pub render: serde_json::Value,
    /// The events in search order.
    pub events: Vec<PosthocEvent>,
}

/// One event of a Posthoc trace.
#[derive(Debug, Clone, Deserialize)]
pub struct PosthocEvent {
    /// `source`, `destination`, `generating`, `updating`, `expanding`, `closing`, `end`,
    /// and for `hpa` `entrance`, `abstract`, `refine`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The cell's row-major index `y * width + x`.
    pub id: u64,
    /// The parent's id (`None` for the start, and for events without one).
    #[serde(default, rename = "pId")]
    pub parent: Option<u64>,
    /// Cost from the start.
    #[serde(default)]
    pub g: Option<f64>,
    /// `g` plus the weighted heuristic.
    #[serde(default)]
    pub f: Option<f64>,
    /// Column.
    pub x: u32,
    /// Row.
    pub y: u32,
    /// `hpa` only: the search the event came from.
    #[serde(default)]
    pub phase: Option<String>,
    /// `refine` events: the refinement step's kind.
    #[serde(default)]
    pub step: Option<String>,
}

/// `getMapCells` with its options ([`crate::Client::get_map_cells`]).
#[derive(Debug, Clone, Default)]
pub struct CellsRequest {
    /// The costs this unit-type profile sees (default the map's default profile).
    pub profile: Option<String>,
    /// The terrain classes themselves (a plain map's are its costs).
    pub terrain: bool,
}
