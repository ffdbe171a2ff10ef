//! The questions games ask besides "a path from here to there": distance tables
//! (`/matrix`), line of sight (`/los`) and a random reachable cell (`/random`).
//!
//! Each handler takes the grid it searches in one place ([`view`]): the map's, or the map
//! eroded for the agent's `size` (on which a one-cell search answers the sized question,
//! see `pathd_engine::Eroded`; built on the pool the first time a version is asked for a
//! size, and kept with the version like the sized views of path queries).
//!
//! A table runs as a batch does: one job per source row on the pool's fair queue (so a
//! 256-row table shares the workers with other requests instead of holding them), every
//! row on the same snapshot, each with its own limits (`timeout_ms` and the server's
//! `--max-expansions`, the clock started when the row starts on a worker), all cancelled
//! when the client goes away. Limits: at most [`MAX_TABLE_SIDE`] sources and as many
//! targets (else `400 matrix_too_large`). A row or region stopped by a limit answers
//! `400 limit_reached` (a partial table or region would be indistinguishable from
//! unreachable cells).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use pathd_engine::{CostRow, Grid, LimitKind, Limits, Point, QueryError, RandomPick, Searcher};
use serde::{Deserialize, Serialize};

use crate::compute::Cancel;
use crate::config::Config;
use crate::derived::MapEntry;
use crate::derived::hpa::SizedView;
use crate::http::auth::QueryAuth;
use crate::http::body::BlockingJson;
use crate::http::error::{ApiError, ErrorCode, Json, Path};
use crate::http::routes::maps::lookup;
use crate::http::routes::paths::wait_version;
use crate::state::AppState;

/// Most sources, and most targets, of one table (`400 matrix_too_large` above).
pub const MAX_TABLE_SIDE: usize = 256;

/// The routes of this module.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/maps/{name}/matrix", post(matrix))
        .route("/v1/maps/{name}/los", post(los))
        .route("/v1/maps/{name}/random", get(random))
}

/// `POST /v1/maps/{name}/matrix` (`MatrixRequest` in `openapi.yaml`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixRequest {
    /// Wait (bounded) until this replica has applied this map version.
    #[serde(default, deserialize_with = "crate::http::dto::saturating")]
    pub min_version: Option<u64>,
    /// `[x, y]` of each row's source.
    pub sources: Vec<[u32; 2]>,
    /// `[x, y]` of each column's target.
    pub targets: Vec<[u32; 2]>,
    /// Agent side in cells (default 1, at most 8), anchored at its top-left cell.
    pub size: Option<u32>,
    /// The unit-type profile (default the map's default profile).
    pub profile: Option<String>,
    /// Time budget of each row's search in ms (capped by, and defaulting to, the server's
    /// maximum).
    #[serde(default, deserialize_with = "crate::http::dto::saturating")]
    pub timeout_ms: Option<u64>,
}

/// The answer of `/matrix` (`MatrixResponse`).
#[derive(Debug, Serialize)]
pub struct MatrixResponse {
    /// A row per source, an entry per target: the optimal path cost, `null` when
    /// unreachable or when an end is blocked (or the agent does not fit there).
    pub costs: Vec<Vec<Option<f64>>>,
    /// The map version every row ran on.
    pub map_version: u64,
}

/// `POST /v1/maps/{name}/los` (`LosRequest`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LosRequest {
    /// Wait (bounded) until this replica has applied this map version.
    #[serde(default, deserialize_with = "crate::http::dto::saturating")]
    pub min_version: Option<u64>,
    /// `[x, y]` of the eye.
    pub from: [u32; 2],
    /// `[x, y]` of the cell looked at.
    pub to: [u32; 2],
    /// The unit-type profile whose walls block the view (default the map's default).
    pub profile: Option<String>,
}

/// The answer of `/los` (`LosResponse`).
#[derive(Debug, Serialize)]
pub struct LosResponse {
    /// True when `to`'s centre is visible from `from`'s (the Theta* rule).
    pub visible: bool,
    /// The first blocked cell along the segment, `null` when visible (or, on a cardinal
    /// map, when the segment is not axis-parallel: refused as a whole).
    pub blocked_at: Option<[u32; 2]>,
    /// The map version it was answered on.
    pub map_version: u64,
}

/// The query string of `GET /v1/maps/{name}/random`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomParams {
    /// Start column.
    pub x: u32,
    /// Start row.
    pub y: u32,
    /// Largest path cost from the start (finite, `>= 0`).
    pub radius: f64,
    /// Seed of the pick (the same seed, map version and query give the same cell); random
    /// when absent.
    pub seed: Option<u64>,
    /// Agent side in cells (default 1, at most 8).
    pub size: Option<u32>,
    /// The unit-type profile (default the map's default profile).
    pub profile: Option<String>,
    /// Wait (bounded) until this replica has applied this map version.
    #[serde(default, deserialize_with = "crate::http::dto::saturating_param")]
    pub min_version: Option<u64>,
    /// Search time budget in ms (capped by, and defaulting to, the server's maximum).
    #[serde(default, deserialize_with = "crate::http::dto::saturating_param")]
    pub timeout_ms: Option<u64>,
}

/// The answer of `/random` (`RandomResponse`).
#[derive(Debug, Serialize)]
pub struct RandomResponse {
    /// Column of the cell drawn.
    pub x: u32,
    /// Row of the cell drawn.
    pub y: u32,
    /// Its optimal path cost from the start (at most `radius`).
    pub distance: f64,
    /// How many cells were within `radius` (the pick is uniform among them).
    pub candidates: usize,
    /// The seed used (echoed, or the one drawn when none was given).
    pub seed: u64,
    /// The map version it was answered on.
    pub map_version: u64,
}

/// `POST /v1/maps/{name}/matrix` (operationId `costMatrix`).
async fn matrix(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    BlockingJson(req): BlockingJson<MatrixRequest>,
) -> Result<Json<MatrixResponse>, ApiError> {
    check_table(&req)?;
    let size = check_size(req.size)?;
    let entry = snapshot(&state, &name, req.min_version, req.profile.as_deref()).await?;
    let (sources, targets) = (points(&req.sources), Arc::new(points(&req.targets)));
    for (what, list) in [("sources", &sources), ("targets", &*targets)] {
        check_on_map(&entry.grid, what, list)?;
    }
    let view = view(&state, &entry, size).await?;
    let limits = RowLimits::new(state.config(), req.timeout_ms);
    let costs = rows(&state, view, sources, targets, limits).await?;
    tracing::Span::current().record("algorithm", "matrix");
    Ok(Json(MatrixResponse {
        costs,
        map_version: entry.version,
    }))
}

/// `POST /v1/maps/{name}/los` (operationId `lineOfSight`): on the pool, though a segment
/// walk touches at most `width + height` cells, because the first read of a version
/// materialises its flat cost array (`O(cells)`), as a search's does.
async fn los(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    BlockingJson(req): BlockingJson<LosRequest>,
) -> Result<Json<LosResponse>, ApiError> {
    let entry = snapshot(&state, &name, req.min_version, req.profile.as_deref()).await?;
    let view = view(&state, &entry, 1).await?;
    let sight = state
        .compute()
        .run(move |_| pathd_engine::line_of_sight(view.grid(), point(req.from), point(req.to)))
        .await??;
    Ok(Json(LosResponse {
        visible: sight.visible,
        blocked_at: sight.blocked_at.map(|p| [p.x, p.y]),
        map_version: entry.version,
    }))
}

/// `GET /v1/maps/{name}/random` (operationId `randomReachable`).
async fn random(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    params: Result<Query<RandomParams>, QueryRejection>,
) -> Result<Json<RandomResponse>, ApiError> {
    let Query(p) = params?;
    check_radius(p.radius)?;
    let size = check_size(p.size)?;
    let entry = snapshot(&state, &name, p.min_version, p.profile.as_deref()).await?;
    let start = Point::new(p.x, p.y);
    check_on_map(&entry.grid, "start", &[start])?;
    let view = view(&state, &entry, size).await?;
    let seed = p.seed.unwrap_or_else(rand::random);
    let limits = RowLimits::new(state.config(), p.timeout_ms);
    let pick = pick(&state, view, start, p.radius, seed, limits)
        .await?
        .map_err(|e| fitted(e, size))?
        .map_err(|limit| limit_reached(limit, "the region within radius"))?;
    tracing::Span::current().record("algorithm", "random");
    Ok(Json(RandomResponse {
        x: pick.point.x,
        y: pick.point.y,
        distance: pick.distance,
        candidates: pick.candidates,
        seed,
        map_version: entry.version,
    }))
}

/// The snapshot a request reads: after waiting for `min_version`, map `name`'s current
/// entry or its view of `profile`.
async fn snapshot(
    state: &AppState,
    name: &str,
    min_version: Option<u64>,
    profile: Option<&str>,
) -> Result<Arc<MapEntry>, ApiError> {
    wait_version(state, name, min_version).await?;
    let entry = lookup(state, name)?;
    Ok(crate::query::on_profile(state, &entry, profile).await?)
}

/// A table's rows on the pool, one job per source (see the module docs).
async fn rows(
    state: &AppState,
    view: View,
    sources: Vec<Point>,
    targets: Arc<Vec<Point>>,
    limits: RowLimits,
) -> Result<Vec<Vec<Option<f64>>>, ApiError> {
    let compute = state.compute().clone();
    let rows = state
        .compute()
        .run_batch(sources, move |source: Point, cancel| {
            let mut searcher = compute.searcher();
            let limits = limits.start(cancel);
            row(&mut searcher, view.grid(), source, &targets, &limits)
                .inspect_err(|(kind, _)| {
                    if *kind == Some(LimitKind::Cancelled) {
                        compute.note_cancelled();
                    }
                })
                .map_err(|(_, e)| e)
        })
        .await?;
    rows.into_iter().collect()
}

/// A random cell within `radius` of `start` on the pool: the engine's refusal, or the
/// limit that stopped the search, or the pick.
async fn pick(
    state: &AppState,
    view: View,
    start: Point,
    radius: f64,
    seed: u64,
    limits: RowLimits,
) -> Result<Picked, ApiError> {
    let compute = state.compute().clone();
    let pick = state
        .compute()
        .run(move |cancel| {
            let limits = limits.start(cancel);
            let pick =
                compute
                    .searcher()
                    .random_reachable(view.grid(), start, radius, seed, &limits);
            if matches!(pick, Ok(Err(LimitKind::Cancelled))) {
                compute.note_cancelled();
            }
            pick
        })
        .await?;
    Ok(pick)
}

/// What the engine says of a random pick: its refusal, the limit that stopped it, or the
/// pick.
type Picked = Result<Result<RandomPick, LimitKind>, QueryError>;

/// `400 invalid_request` unless `radius` is a finite number `>= 0`.
fn check_radius(radius: f64) -> Result<(), ApiError> {
    if radius.is_finite() && radius >= 0.0 {
        Ok(())
    } else {
        Err(ApiError::invalid_request(
            "radius must be a finite number >= 0",
        ))
    }
}

/// One row of a table on a worker: `400 limit_reached` when a limit stopped it (with the
/// limit, so that a cancelled row is counted).
fn row(
    searcher: &mut Searcher,
    grid: &Grid,
    source: Point,
    targets: &[Point],
    limits: &Limits,
) -> Result<Vec<Option<f64>>, (Option<LimitKind>, ApiError)> {
    let CostRow { costs, limit, .. } = searcher
        .cost_row(grid, source, targets, limits)
        .map_err(|e| (None, e.into()))?;
    match limit {
        None => Ok(costs),
        Some(kind) => Err((
            Some(kind),
            limit_reached(kind, &format!("the row of source {source}")),
        )),
    }
}

/// The grid a request searches (module docs).
#[derive(Clone)]
enum View {
    /// The map's own grid.
    Map(Arc<MapEntry>),
    /// The map eroded for an agent size above 1.
    Sized(Arc<SizedView>),
}

impl View {
    fn grid(&self) -> &Grid {
        match self {
            View::Map(entry) => &entry.grid,
            View::Sized(view) => view.eroded.grid(),
        }
    }
}

/// The one place each handler takes its grid: `entry`'s, or for `size > 1` the map eroded
/// for that size (built on the pool when this version has none yet).
async fn view(state: &AppState, entry: &Arc<MapEntry>, size: u32) -> Result<View, ApiError> {
    if size <= 1 {
        return Ok(View::Map(Arc::clone(entry)));
    }
    if let Some(view) = entry.sized.get(size) {
        return Ok(View::Sized(view));
    }
    let entry = Arc::clone(entry);
    let view = state
        .compute()
        .run(move |_| entry.sized.get_or_build(&entry.grid, size))
        .await?;
    Ok(View::Sized(view))
}

/// Each row's (or region's) limits: the server's expansion cap and a time budget that
/// starts when the job starts on a worker.
#[derive(Clone, Copy)]
struct RowLimits {
    max_expansions: u64,
    timeout: Duration,
}

impl RowLimits {
    fn new(config: &Config, timeout_ms: Option<u64>) -> Self {
        let ms = timeout_ms
            .unwrap_or(config.max_timeout_ms)
            .min(config.max_timeout_ms);
        RowLimits {
            max_expansions: config.max_expansions,
            timeout: Duration::from_millis(ms),
        }
    }

    fn start(self, cancel: &Cancel) -> Limits {
        Limits {
            max_expansions: Some(self.max_expansions),
            deadline: Instant::now().checked_add(self.timeout),
            cancel: Some(Arc::clone(cancel)),
        }
    }
}

/// `400 matrix_too_large` past [`MAX_TABLE_SIDE`] sources or targets.
fn check_table(req: &MatrixRequest) -> Result<(), ApiError> {
    for (what, n) in [
        ("sources", req.sources.len()),
        ("targets", req.targets.len()),
    ] {
        if n > MAX_TABLE_SIDE {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                ErrorCode::MatrixTooLarge,
                format!(
                    "{n} {what}; a table takes at most {MAX_TABLE_SIDE} sources and {MAX_TABLE_SIDE} targets"
                ),
            ));
        }
    }
    Ok(())
}

/// The agent size, default 1: `400 invalid_request` outside `1..=8`.
fn check_size(size: Option<u32>) -> Result<u32, ApiError> {
    let size = size.unwrap_or(1);
    pathd_engine::query::check_size(size)?;
    Ok(size)
}

/// `400 out_of_bounds` naming the first point of `list` off the map.
fn check_on_map(grid: &Grid, what: &str, list: &[Point]) -> Result<(), ApiError> {
    match list.iter().position(|&p| !grid.in_bounds(p)) {
        None => Ok(()),
        Some(i) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::OutOfBounds,
            format!(
                "{what}[{i}] {} is outside the {}x{} map",
                list[i],
                grid.width(),
                grid.height()
            ),
        )),
    }
}

/// An engine error on the eroded map, said of the agent: a start where a sized agent does
/// not fit is `start_blocked` as for a path query.
fn fitted(e: QueryError, size: u32) -> ApiError {
    match e {
        QueryError::StartBlocked(point) if size > 1 => QueryError::DoesNotFit {
            which: "start",
            point,
            size,
        }
        .into(),
        other => other.into(),
    }
}

/// `400 limit_reached`: `what` did not finish within its limits.
fn limit_reached(kind: LimitKind, what: &str) -> ApiError {
    let why = match kind {
        LimitKind::Expansions => "the server's expansion limit (--max-expansions)",
        LimitKind::Deadline => "its time budget (timeout_ms)",
        LimitKind::Cancelled => "the client going away",
    };
    ApiError::new(
        StatusCode::BAD_REQUEST,
        ErrorCode::LimitReached,
        format!("{what} was stopped by {why} before it was complete; ask for less"),
    )
}

fn point(p: [u32; 2]) -> Point {
    Point::new(p[0], p[1])
}

fn points(list: &[[u32; 2]]) -> Vec<Point> {
    list.iter().copied().map(point).collect()
}
