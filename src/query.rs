//! The one query service: every route that answers a path query (`/path`, each query of
//! `/paths`, `/posthoc`) takes it through here, so the same request gets the same answer
//! whichever route it came through: the same `min_version` wait, the same validation, the
//! same readiness rules for derived structures (HPA*'s abstraction, the JPS+ table), the
//! same sized views, limits and trace cap.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use pathd_engine::trace::Trace;
use pathd_engine::{Algorithm, LimitKind, Query, QueryError, SearchResult, Searcher, SizedDerived};

use crate::compute::{Cancel, Compute};
use crate::derived::Status;
use crate::derived::{Found, MapEntry};
use crate::http::dto::{Ends, Games, PathRequest, pair};
use crate::http::error::{ApiError, ErrorCode};
use crate::http::routes::maps::lookup;
use crate::metrics::record_query;
use crate::state::AppState;

/// A query ready for the pool: its map snapshot, the engine query and its time limit.
#[derive(Debug)]
pub struct Prepared {
    /// The snapshot the query runs on.
    pub entry: Arc<MapEntry>,
    /// The validated query.
    pub query: Query,
    /// Its time limit, started when a worker picks it up.
    pub timeout: Duration,
    /// Expansions its trace may record (0: no trace).
    pub trace_cap: usize,
    /// The games' options (targets, snapping); plain for most queries.
    pub games: Games,
}

/// A query's answer, as the path routes report it.
#[derive(Debug)]
pub struct Answer {
    /// The search's result.
    pub result: SearchResult,
    /// Its trace, when one was asked for.
    pub trace: Option<Trace>,
    /// The ends used and reached, for a query with the games' options.
    pub ends: Option<Ends>,
}

impl Prepared {
    /// Runs the query on the calling worker (see [`search`]).
    pub fn run(
        self,
        cancel: &Cancel,
        compute: &Compute,
    ) -> Result<(SearchResult, Option<Trace>), QueryError> {
        search(
            &self.entry,
            self.query,
            self.timeout,
            cancel,
            compute,
            self.trace_cap,
        )
    }

    /// Runs the query on the calling worker with the games' options: snaps its ends (when
    /// asked), then searches for its goal (see [`search`]) or its target (see
    /// [`search_target`]).
    pub fn answer(self, cancel: &Cancel, compute: &Compute) -> Result<Answer, QueryError> {
        self.answer_with(cancel, compute, &mut compute.searcher())
    }

    /// [`Prepared::answer`] with the caller's searcher (a batch's chunk hands one searcher
    /// to each of its queries).
    pub fn answer_with(
        self,
        cancel: &Cancel,
        compute: &Compute,
        searcher: &mut Searcher,
    ) -> Result<Answer, QueryError> {
        let Prepared {
            entry,
            mut query,
            timeout,
            trace_cap,
            games,
        } = self;
        let mut snapped = None;
        if let Some(radius) = games.snap {
            // A target's goals are its own (a range's goal may well be a wall): only a
            // single goal snaps with the start.
            let goal = games.target.is_none().then_some(query.goal);
            let s = pathd_engine::targets::snap_ends(
                &entry.grid,
                query.start,
                goal,
                radius,
                query.size,
            );
            query.start = s.start;
            query.goal = s.goal.unwrap_or(query.goal);
            snapped = Some(s.moved);
        }
        let start = pair(query.start);
        match games.target {
            None => {
                let goal = pair(query.goal);
                let (result, trace) =
                    search_with(&entry, query, timeout, cancel, compute, trace_cap, searcher)?;
                Ok(Answer {
                    result,
                    trace,
                    ends: snapped.map(|moved| Ends {
                        start,
                        goal: Some(goal),
                        goal_index: None,
                        snapped: Some(moved),
                    }),
                })
            }
            Some(target) => {
                let t =
                    search_target_with(&entry, query, &target, timeout, cancel, compute, searcher)?;
                Ok(Answer {
                    result: t.result,
                    trace: None,
                    ends: Some(Ends {
                        start,
                        goal: t.reached.map(pair),
                        goal_index: t.goal_index,
                        snapped,
                    }),
                })
            }
        }
    }
}

/// How much of a search a route records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tracing {
    /// As the request asks (`"trace": true`).
    AsAsked,
    /// Always (`/posthoc`).
    Always,
}

/// Everything before the pool for one request on map `name`: waits for `min_version`,
/// takes the current snapshot, validates the body, and checks that what the query needs is
/// ready.
pub async fn prepare(
    state: &AppState,
    name: &str,
    req: &PathRequest,
    tracing: Tracing,
) -> Result<Prepared, ApiError> {
    wait_version(state, name, req.min_version).await?;
    let entry = lookup(state, name)?;
    let entry = on_profile(state, &entry, req.profile.as_deref()).await?;
    prepare_on(state, &entry, req, tracing)
}

/// The entry that serves `profile` (`None`: the map's default) on `entry`'s version: the
/// entry itself or its view of that profile, made off the runtime the first time a version
/// is asked for it (`O(cells)`; a patch carries views over to the next version), else
/// `404 profile_not_found`.
pub async fn on_profile(
    state: &AppState,
    entry: &Arc<MapEntry>,
    profile: Option<&str>,
) -> Result<Arc<MapEntry>, ApiError> {
    match entry.find_view(profile) {
        Ok(Found::Ready(e)) => {
            if e.profile.is_some() {
                // A view carried over by a patch asks for what it could not derive.
                state.registry().adopt_view(&e);
            }
            Ok(e)
        }
        Ok(Found::Missing) => {
            let (e, p) = (Arc::clone(entry), profile.unwrap_or_default().to_owned());
            let view = tokio::task::spawn_blocking(move || e.make_view(&p))
                .await
                .map_err(|e| ApiError::internal(format!("making the profile view failed: {e}")))?
                .ok_or_else(|| ApiError::internal("the profile vanished from its version"))?;
            state.registry().adopt_view(&view);
            Ok(view)
        }
        Err(_) => Err(no_profile(entry, profile.unwrap_or_default())),
    }
}

/// `404 profile_not_found`: `entry`'s map has no profile `profile`.
pub fn no_profile(entry: &MapEntry, profile: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        ErrorCode::ProfileNotFound,
        format!(
            "map {:?} has no profile {profile:?}; it has: {}",
            entry.map_name(),
            entry.profile_names().join(", ")
        ),
    )
}

/// [`prepare`] on a snapshot already taken (a batch's queries share one).
pub fn prepare_on(
    state: &AppState,
    entry: &Arc<MapEntry>,
    req: &PathRequest,
    tracing: Tracing,
) -> Result<Prepared, ApiError> {
    let (query, timeout) = req.to_query(state.config())?;
    let games = req.games()?;
    let traced = tracing == Tracing::Always || req.trace.unwrap_or(false);
    if !games.is_plain() && traced {
        return Err(ApiError::invalid_request(
            "traces (`trace`, `/posthoc`) are not available with goals, goal_radius, flee \
             or snap",
        ));
    }
    // Structures evicted to keep derived memory within its budget come back on demand.
    state.registry().revive(entry);
    // A target's algorithms need no derived structure (the engine answers the others
    // `not_applicable`).
    if games.target.is_none() {
        check_hpa(state, entry, &query)?;
        check_jump(state, entry, &query)?;
        check_subgoal(state, entry, &query)?;
    }
    Ok(Prepared {
        entry: Arc::clone(entry),
        query,
        timeout,
        trace_cap: if traced {
            state.config().max_debug_cells.max(1)
        } else {
            0
        },
        games,
    })
}

/// Runs one search on the calling worker: starts its deadline, wires the cancellation flag,
/// and counts it (here, because a cancelled request's handler no longer runs).
/// With `trace_cap > 0` the search also records a trace of at most that many expansions.
pub fn search(
    entry: &MapEntry,
    query: Query,
    timeout: Duration,
    cancel: &Cancel,
    compute: &Compute,
    trace_cap: usize,
) -> Result<(SearchResult, Option<Trace>), QueryError> {
    let mut searcher = compute.searcher();
    search_with(
        entry,
        query,
        timeout,
        cancel,
        compute,
        trace_cap,
        &mut searcher,
    )
}

/// [`search`] on the caller's searcher.
#[allow(clippy::too_many_arguments)]
pub fn search_with(
    entry: &MapEntry,
    mut query: Query,
    timeout: Duration,
    cancel: &Cancel,
    compute: &Compute,
    trace_cap: usize,
    searcher: &mut Searcher,
) -> Result<(SearchResult, Option<Trace>), QueryError> {
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
    let held = entry.derived();
    let sized_hpa = view.as_ref().and_then(|v| v.hpa.get());
    let mut derived = held.view();
    derived.sized = view.as_deref().map(|v| SizedDerived {
        eroded: &v.eroded,
        hpa: sized_hpa.as_deref(),
    });
    let (r, trace) = if trace_cap > 0 {
        let (r, t) = searcher.find_path_traced(&entry.grid, derived, &query, trace_cap)?;
        (r, Some(t))
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

/// [`search`] for a target ([`pathd_engine::targets`]): the same deadline, cancellation
/// and counting, on a pooled searcher.
pub fn search_target(
    entry: &MapEntry,
    query: Query,
    target: &pathd_engine::targets::Target,
    timeout: Duration,
    cancel: &Cancel,
    compute: &Compute,
) -> Result<pathd_engine::targets::TargetResult, QueryError> {
    let mut searcher = compute.searcher();
    search_target_with(
        entry,
        query,
        target,
        timeout,
        cancel,
        compute,
        &mut searcher,
    )
}

/// [`search_target`] on the caller's searcher.
pub fn search_target_with(
    entry: &MapEntry,
    mut query: Query,
    target: &pathd_engine::targets::Target,
    timeout: Duration,
    cancel: &Cancel,
    compute: &Compute,
    searcher: &mut Searcher,
) -> Result<pathd_engine::targets::TargetResult, QueryError> {
    query.limits.deadline = Instant::now().checked_add(timeout);
    query.limits.cancel = Some(Arc::clone(cancel));
    let t = searcher.find_target(&entry.grid, &query, target)?;
    let r = &t.result;
    if r.limit == Some(LimitKind::Cancelled) {
        compute.note_cancelled();
    }
    record_query(
        r.algorithm.as_str(),
        r.status.as_str(),
        r.stats.expanded,
        r.stats.elapsed.as_secs_f64(),
    );
    Ok(t)
}

/// `hpa` needs the map's abstraction: say why there is none (the map is too small to get
/// one, so it never will: `400 not_applicable`; or it is being built: `503
/// abstraction_building` with `Retry-After`).
fn check_hpa(state: &AppState, entry: &Arc<MapEntry>, query: &Query) -> Result<(), ApiError> {
    if query.algorithm != Algorithm::Hpa || query.size > 1 && query.smooth {
        return Ok(()); // (a smoothed sized query gets the planner's `not_applicable`)
    }
    let (ready, status) = if query.size > 1 {
        // The abstraction of the map eroded for this size, built on the first such query.
        let ready = state.registry().ensure_sized_hpa(entry, query.size);
        (ready, entry.sized.hpa_status(query.size))
    } else {
        (entry.hpa.get().is_some(), entry.hpa.status())
    };
    if ready {
        return Ok(());
    }
    if status == Status::Failed {
        return Err(failed("HPA* abstraction", "astar, jps or auto"));
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
    if entry.jump.table_slot().status() == Status::Failed {
        return Err(failed("JPS+ jump table", "jps or auto"));
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

/// `subgoal` needs the map's subgoal graph: say why there is none (being built: `503
/// abstraction_building`; its build failed: `503 derivation_failed`; a map that gets none:
/// the planner's `not_applicable`).
fn check_subgoal(state: &AppState, entry: &MapEntry, query: &Query) -> Result<(), ApiError> {
    if query.algorithm != Algorithm::Subgoal
        || query.size > 1
        || query.partial
        || entry.subgoal.get().is_some()
        || !state.registry().subgoal_settings().wants(&entry.grid)
    {
        return Ok(());
    }
    if entry.subgoal.slot().status() == Status::Failed {
        return Err(failed("subgoal graph", "jps, jps_plus or auto"));
    }
    Err(ApiError {
        retry_after: Some(1),
        ..ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::AbstractionBuilding,
            "this map's subgoal graph is being built in the background; retry shortly, or \
             use jps, jps_plus or auto meanwhile",
        )
    })
}

/// `503 derivation_failed`: this version's `what` failed to build (the map summary says
/// why); the next version builds it again.
fn failed(what: &str, instead: &str) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::DerivationFailed,
        format!(
            "this map version's {what} failed to build (its map summary says why); the \
             map's next version builds it again; use {instead} meanwhile"
        ),
    )
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
