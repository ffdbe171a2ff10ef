//! `/v1/maps/{name}/path` and `/v1/maps/{name}/paths`: path queries on the search pool.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::post;
use pathd_engine::{Algorithm, LimitKind, Query, QueryError, SearchResult, SizedDerived};

use crate::auth::QueryAuth;
use crate::body::{BlockingJson, JsonBytes, decode_off_runtime};
use crate::compute::{Cancel, Compute};
use crate::dto::{BatchItem, BatchRequest, BatchResponse, PathRequest, PathResponse};
use crate::error::{ApiError, ErrorCode, Json};
use crate::metrics::record_query;
use crate::routes::maps::lookup;
use crate::routes::trace::SearchTrace;
use crate::state::{AppState, MapEntry};

/// The routes of this module.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/maps/{name}/path", post(find_path))
        .route("/v1/maps/{name}/paths", post(find_paths))
}

/// Runs one search on the calling worker: starts its deadline, wires the cancellation flag,
/// and counts it (here, because a cancelled request's handler no longer runs).
/// With `trace_cap > 0` the search also records a trace of at most that many expansions.
fn search(
    entry: &MapEntry,
    mut query: Query,
    timeout: Duration,
    cancel: &Cancel,
    compute: &Compute,
    trace_cap: usize,
) -> Result<(SearchResult, Option<SearchTrace>), QueryError> {
    query.limits.deadline = Instant::now().checked_add(timeout); // None: too far to matter
    query.limits.cancel = Some(Arc::clone(cancel));
    // JPS and HPA* answer a sized query on the map eroded for its size (built here, on the
    // pool, the first time a version is asked for it; HPA*'s abstraction of it is checked
    // by `check_hpa`).
    let view = (query.size > 1 && !query.smooth)
        .then(|| match query.algorithm {
            Algorithm::Jps => Some(entry.sized.get_or_build(&entry.grid, query.size)),
            Algorithm::Hpa => entry.sized.get(query.size),
            _ => None,
        })
        .flatten();
    let mut derived = entry.derived();
    derived.sized = view.as_deref().map(|v| SizedDerived {
        eroded: &v.eroded,
        hpa: v.hpa.get(),
    });
    let mut searcher = compute.searcher();
    let (r, trace) = if trace_cap > 0 {
        let (r, t) = searcher.find_path_traced(&entry.grid, derived, &query, trace_cap)?;
        (r, Some(SearchTrace::new(t, trace_cap)))
    } else {
        let r = searcher.find_path_derived(&entry.grid, derived, &query)?;
        (r, None)
    };
    if r.limit == Some(LimitKind::Cancelled) {
        compute.note_cancelled();
    }
    record_query(
        r.algorithm.as_str(),
        r.status.as_str(),
        r.stats.expanded,
        r.stats.elapsed.as_secs_f64(),
    );
    Ok((r, trace))
}

/// The trace cap of a request: the server's `max_debug_cells` when it asks for a trace.
fn trace_cap(req: &PathRequest, state: &AppState) -> usize {
    if req.trace.unwrap_or(false) {
        state.config().max_debug_cells.max(1)
    } else {
        0
    }
}

/// `hpa` needs the map's abstraction: say why there is none (the map is too small to get
/// one, so it never will: `400 not_applicable`; or it is being built: `503
/// abstraction_building` with `Retry-After`).
fn check_hpa(state: &AppState, entry: &Arc<MapEntry>, query: &Query) -> Result<(), ApiError> {
    if query.algorithm != Algorithm::Hpa || query.size > 1 && query.smooth {
        return Ok(()); // (a smoothed sized query gets the planner's `not_applicable`)
    }
    let ready = if query.size > 1 {
        // The abstraction of the map eroded for this size, built on the first such query.
        state.registry().ensure_sized_hpa(entry, query.size)
    } else {
        entry.hpa.get().is_some()
    };
    if ready {
        return Ok(());
    }
    let settings = state.registry().hpa_settings();
    if settings.wants(&entry.grid) {
        return Err(ApiError {
            retry_after: Some(1),
            ..ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::AbstractionBuilding,
                "this map's HPA* abstraction is being built in the background; retry shortly, \
                 or use astar, jps or auto meanwhile",
            )
        });
    }
    let cells = entry.grid.width() as u64 * entry.grid.height() as u64;
    let why = if settings.min_cells == 0 {
        "this server builds no HPA* abstractions (--hpa-min-cells 0)".to_owned()
    } else {
        format!(
            "this map has {cells} cells, below --hpa-min-cells ({}), so it gets no HPA* \
             abstraction (plain search is fast enough at this size)",
            settings.min_cells
        )
    };
    Err(ApiError::new(
        StatusCode::BAD_REQUEST,
        ErrorCode::NotApplicable,
        format!("{why}; use astar, jps or auto"),
    ))
}

/// `jps_plus` needs the map's jump table: say why there is none (being built: `503
/// abstraction_building` with `Retry-After`; too big or switched off: `400
/// not_applicable`). Weighted and cardinal maps get the planner's `not_applicable`.
fn check_jump(state: &AppState, entry: &MapEntry, query: &Query) -> Result<(), ApiError> {
    let grid = &entry.grid;
    if query.algorithm != Algorithm::JpsPlus
        || query.size > 1
        || entry.jump.get().is_some()
        || !grid.is_uniform()
        || grid.movement() != pathd_engine::Movement::Octile
    {
        return Ok(());
    }
    let settings = state.registry().jump_settings();
    if settings.wants(grid) {
        return Err(ApiError {
            retry_after: Some(1),
            ..ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::AbstractionBuilding,
                "this map's JPS+ jump table is being built in the background; retry shortly, \
                 or use jps or auto meanwhile",
            )
        });
    }
    let cells = grid.width() as u64 * grid.height() as u64;
    Err(ApiError::new(
        StatusCode::BAD_REQUEST,
        ErrorCode::NotApplicable,
        format!(
            "this map has {cells} cells, above --jps-plus-max-cells ({}), so it gets no JPS+ \
             jump table (16 bytes a cell); use jps or auto",
            settings.max_cells
        ),
    ))
}

/// Waits until this replica has applied `min_version` of `name` (when given; bounded by
/// `--max-wait-ms`), else `503 replica_behind`.
pub async fn wait_version(
    state: &AppState,
    name: &str,
    min_version: Option<u64>,
) -> Result<(), ApiError> {
    state
        .maps()
        .wait_version(name, min_version, state.config().max_wait())
        .await
        .map_err(Into::into)
}

/// `POST /v1/maps/{name}/path` (operationId `findPath`).
async fn find_path(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    BlockingJson(req): BlockingJson<PathRequest>,
) -> Result<Json<PathResponse>, ApiError> {
    wait_version(&state, &name, req.min_version).await?;
    let entry = lookup(&state, &name)?;
    let debug = req.debug.unwrap_or(false);
    let (query, timeout) = req.to_query(state.config())?;
    check_hpa(&state, &entry, &query)?;
    check_jump(&state, &entry, &query)?;
    let cap = trace_cap(&req, &state);
    let snapshot = Arc::clone(&entry);
    let compute = state.compute().clone();
    let (r, trace) = state
        .compute()
        .run(move |cancel| search(&snapshot, query, timeout, cancel, &compute, cap))
        .await??;
    let span = tracing::Span::current();
    span.record("algorithm", r.algorithm.as_str());
    span.record("expanded", r.stats.expanded);
    let mut resp = PathResponse::new(r, entry.version, debug);
    resp.trace = trace;
    Ok(Json(resp))
}

/// `POST /v1/maps/{name}/paths` (operationId `findPaths`): every query on the same
/// snapshot, each a job of the pool's fair queue (so a batch shares the workers with other
/// requests instead of holding them; each query keeps its own limits), answered in order;
/// a query's own error (e.g. `out_of_bounds`) is its item, not the batch's.
async fn find_paths(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    JsonBytes(body): JsonBytes,
) -> Result<Json<BatchResponse>, ApiError> {
    // Parsed off the runtime, and cut at the first query past the limit (`413`).
    let max = state.config().max_batch;
    let req = decode_off_runtime(body, move |de| BatchRequest::from_json(de, max)).await?;
    // The batch's `min_version`, or the highest one of its queries.
    let min_version = req
        .queries
        .iter()
        .filter_map(|q| q.min_version)
        .chain(req.min_version)
        .max();
    wait_version(&state, &name, min_version).await?;
    let entry = lookup(&state, &name)?;
    let items: Vec<_> = req
        .queries
        .iter()
        .map(|q| -> Result<_, ApiError> {
            let (query, timeout) = q.to_query(state.config())?;
            check_hpa(&state, &entry, &query)?;
            check_jump(&state, &entry, &query)?;
            Ok((
                query,
                timeout,
                q.debug.unwrap_or(false),
                trace_cap(q, &state),
            ))
        })
        .collect();
    let snapshot = Arc::clone(&entry);
    let compute = state.compute().clone();
    let version = entry.version;
    let results = state
        .compute()
        .run_batch(items, move |item, cancel| {
            let (query, timeout, debug, cap) = item?;
            search(&snapshot, query, timeout, cancel, &compute, cap)
                .map(|(r, trace)| {
                    let mut resp = PathResponse::new(r, version, debug);
                    resp.trace = trace;
                    resp
                })
                .map_err(ApiError::from)
        })
        .await?;
    let results = results
        .into_iter()
        .map(|r| match r {
            Ok(ok) => BatchItem::Ok(Box::new(ok)),
            Err(e) => BatchItem::Err(e.body()),
        })
        .collect();
    tracing::Span::current().record("algorithm", "batch");
    Ok(Json(BatchResponse {
        map_version: version,
        results,
    }))
}
