//! The one query service: every route that answers a path query (`/path`, each query of
//! `/paths`, `/posthoc`) takes it through here, so the same request gets the same answer
//! whichever route it came through: the same `min_version` wait, the same validation, the
//! same readiness rules for derived structures (HPA*'s abstraction, the JPS+ table), the
//! same sized views, limits and trace cap.
//!
//! It knows nothing of HTTP: the edge turns its wire request into a [`PathQuery`] and maps
//! a [`QueryError`] to its status and code.

use std::sync::Arc;
use std::time::Duration;

use pathd_engine::trace::Trace;
use pathd_engine::{Query, SearchResult};

use crate::derived::{Found, MapEntry};
use crate::state::AppState;

mod checks;
mod error;
mod request;
mod search;

pub use error::QueryError;
pub use request::{Ends, Games, PathQuery, QuerySpec};
pub use search::{EngineError, Run, search, search_target, search_target_with, search_with};

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

/// How much of a search a route records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tracing {
    /// As the request asks (`"trace": true`).
    AsAsked,
    /// Always (`/posthoc`).
    Always,
}

/// Everything before the pool for one query on map `name`: waits for `min_version`,
/// takes the current snapshot, checks the query, and checks that what it needs is ready.
pub async fn prepare(
    state: &AppState,
    name: &str,
    q: PathQuery,
    tracing: Tracing,
) -> Result<Prepared, QueryError> {
    wait_version(state, name, q.min_version).await?;
    let entry = lookup(state, name)?;
    let entry = on_profile(state, &entry, q.profile.as_deref()).await?;
    prepare_on(state, &entry, q.spec, tracing)
}

/// The current entry of map `name` (recorded in the request's span).
pub fn lookup(state: &AppState, name: &str) -> Result<Arc<MapEntry>, QueryError> {
    tracing::Span::current().record("map", name);
    Ok(state.maps().get(name)?)
}

/// The entry that serves `profile` (`None`: the map's default) on `entry`'s version: the
/// entry itself or its view of that profile, made off the runtime the first time a version
/// is asked for it (`O(cells)`; a patch carries views over to the next version), else
/// [`QueryError::ProfileNotFound`].
pub async fn on_profile(
    state: &AppState,
    entry: &Arc<MapEntry>,
    profile: Option<&str>,
) -> Result<Arc<MapEntry>, QueryError> {
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
                .map_err(|e| QueryError::Internal(format!("making the profile view failed: {e}")))?
                .ok_or_else(|| {
                    QueryError::Internal("the profile vanished from its version".into())
                })?;
            state.registry().adopt_view(&view);
            Ok(view)
        }
        Err(_) => Err(no_profile(entry, profile.unwrap_or_default())),
    }
}

/// [`QueryError::ProfileNotFound`]: `entry`'s map has no profile `profile`.
pub fn no_profile(entry: &MapEntry, profile: &str) -> QueryError {
    QueryError::ProfileNotFound(format!(
        "map {:?} has no profile {profile:?}; it has: {}",
        entry.map_name(),
        entry.profile_names().join(", ")
    ))
}

/// [`prepare`] on a snapshot already taken (a batch's queries share one), for the query
/// `spec` (or its mistake).
pub fn prepare_on(
    state: &AppState,
    entry: &Arc<MapEntry>,
    spec: Result<QuerySpec, QueryError>,
    tracing: Tracing,
) -> Result<Prepared, QueryError> {
    let QuerySpec {
        query,
        timeout,
        games,
        trace,
    } = spec?;
    let traced = tracing == Tracing::Always || trace;
    if !games.is_plain() && traced {
        return Err(QueryError::Invalid(
            "traces (`trace`, `/posthoc`) are not available with goals, goal_radius, flee \
             or snap"
                .into(),
        ));
    }
    // Structures evicted to keep derived memory within its budget come back on demand.
    state.registry().revive(entry);
    // A target's algorithms need no derived structure (the engine answers the others
    // `not_applicable`).
    if games.target.is_none() {
        checks::ready(state, entry, &query)?;
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

/// Waits until this replica has applied `min_version` of `name` (when given; bounded by
/// `--max-wait-ms`), else the maps service's `ReplicaBehind`.
pub async fn wait_version(
    state: &AppState,
    name: &str,
    min_version: Option<u64>,
) -> Result<(), QueryError> {
    state
        .maps()
        .wait_version(name, min_version, state.config().max_wait())
        .await
        .map_err(Into::into)
}
