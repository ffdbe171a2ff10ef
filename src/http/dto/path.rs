//! Path queries: the request, its checks and conversion to an engine query, and the answer.

use super::*;
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

/// Default weight of `weighted_astar`.
pub const DEFAULT_WEIGHT: f64 = 1.5;

fn point(p: [u32; 2]) -> Point {
    Point::new(p[0], p[1])
}

pub(crate) fn pair(p: Point) -> [u32; 2] {
    [p.x, p.y]
}

impl PathRequest {
    /// The query service's query (see [`PathQuery`]): the request checked against the
    /// server's limits, its mistakes kept for the service to report in turn.
    pub fn path_query(&self, config: &Config) -> PathQuery {
        PathQuery {
            min_version: self.min_version,
            profile: self.profile.clone(),
            spec: self.spec(config),
        }
    }

    /// What the request asks, checked: [`Self::to_query`], then [`Self::games`].
    pub fn spec(&self, config: &Config) -> Result<QuerySpec, QueryError> {
        let (query, timeout) = self.to_query(config)?;
        Ok(QuerySpec {
            query,
            timeout,
            games: self.games()?,
            trace: self.trace.unwrap_or(false),
        })
    }

    /// The engine query under the server's limits, and its time budget. The deadline is
    /// left unset: the worker sets it when the search starts, so queueing does not eat it.
    pub fn to_query(&self, config: &Config) -> Result<(Query, Duration), QueryError> {
        let algorithm = match self.algorithm.as_deref() {
            None => Algorithm::AStar,
            Some(name) => Algorithm::parse(name).ok_or_else(|| {
                let names: Vec<_> = Algorithm::ALL.iter().map(|a| a.as_str()).collect();
                QueryError::Invalid(format!(
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
                return Err(QueryError::Invalid(
                    "a path query names exactly one of goal, goals and flee".into(),
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
    pub fn games(&self) -> Result<Games, QueryError> {
        use pathd_engine::targets::{MAX_GOALS, MAX_SNAP, Target};
        if self.goal_visible.is_some() && self.goal_radius.is_none() {
            return Err(QueryError::Invalid(
                "goal_visible goes with goal_radius".into(),
            ));
        }
        if self.goal_radius.is_some() && self.goal.is_none() {
            return Err(QueryError::Invalid(
                "goal_radius needs a single goal (not goals or flee)".into(),
            ));
        }
        if let Some(s) = self.snap.filter(|&s| s > MAX_SNAP) {
            return Err(QueryError::Invalid(format!(
                "snap {s} is too far: at most {MAX_SNAP} cells"
            )));
        }
        let target = match (&self.goals, self.goal_radius, &self.flee) {
            (Some(goals), _, _) if goals.len() > MAX_GOALS => {
                return Err(QueryError::TooManyGoals(format!(
                    "goals holds {} points; a query names at most {MAX_GOALS}",
                    goals.len()
                )));
            }
            (Some(goals), _, _) if goals.is_empty() => {
                return Err(QueryError::Invalid(
                    "goals must hold at least one point".into(),
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
) -> Result<Option<T>, QueryError> {
    value
        .map(|v| {
            parse(v).ok_or_else(|| {
                let names: Vec<_> = all.iter().map(|&t| name(t)).collect();
                QueryError::Invalid(format!(
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

impl From<crate::query::Ends> for Ends {
    fn from(e: crate::query::Ends) -> Self {
        Ends {
            start: pair(e.start),
            goal: e.goal.map(pair),
            goal_index: e.goal_index,
            snapped: e.snapped,
        }
    }
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
