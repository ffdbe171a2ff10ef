//! `/v1/maps/{name}/path` and `/v1/maps/{name}/paths`: path queries on the search pool,
//! through the query service ([`crate::query`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::routing::post;

use crate::compute::{Cancel, Compute};
use crate::derived::MapEntry;
use crate::http::auth::QueryAuth;
use crate::http::body::{BlockingJson, JsonBytes, decode_off_runtime};
use crate::http::dto::{BatchRequest, PathFormat, PathRequest, PathResponse};
use crate::http::error::ApiError;
use crate::http::routes::maps::lookup;
use crate::http::routes::trace::SearchTrace;
use crate::http::wire::{BatchBody, BatchPart, Written};
use crate::metrics::QueryMetrics;
use crate::query::{self, Run, Tracing};
use crate::state::AppState;

/// The routes of this module.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/maps/{name}/path", post(find_path))
        .route("/v1/maps/{name}/paths", post(find_paths))
}

pub use crate::query::wait_version;

/// `POST /v1/maps/{name}/path` (operationId `findPath`): the answer is written on the
/// worker that searched (see [`crate::compute::Compute::run_parts`]).
async fn find_path(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    BlockingJson(req): BlockingJson<PathRequest>,
) -> Result<Written, ApiError> {
    let format = PathFormat::parse(req.path_format.as_deref())?;
    let q = req.path_query(state.config());
    let prepared = query::prepare(&state, &name, q, Tracing::AsAsked).await?;
    let asked = Asked::new(prepared, &req, format);
    let compute = state.compute().clone();
    let (algorithm, expanded, written) = state
        .compute()
        .run(move |cancel| asked.written(cancel, &compute))
        .await??;
    let span = tracing::Span::current();
    span.record("algorithm", algorithm);
    span.record("expanded", expanded);
    Ok(written)
}

/// Most queries of a batch one pool job runs (see [`find_paths`]).
const BATCH_CHUNK: usize = 16;

/// `POST /v1/maps/{name}/paths` (operationId `findPaths`): every query on the same
/// snapshot, in chunks of the pool's fair queue (about one per worker, at most
/// [`BATCH_CHUNK`] queries each, one searcher a chunk; a chunk gives way to a waiting
/// single query between two of its queries, so a batch shares the workers with other
/// requests instead of holding them; each query keeps its own limits), answered in order
/// and written on the workers; a query's own error (e.g. `out_of_bounds`) is its item, not
/// the batch's.
async fn find_paths(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    JsonBytes(body): JsonBytes,
) -> Result<BatchBody, ApiError> {
    // Parsed off the runtime, and cut at the first query past the limit (`413`).
    let max = state.config().max_batch;
    let req = decode_off_runtime(body, move |body| BatchRequest::from_json(body, max)).await?;
    wait_version(&state, &name, batch_min_version(&req)).await?;
    let entry = lookup(&state, &name)?;
    let items = prepare_batch(&state, &entry, &req).await;
    let parts = answer_batch(&state, items, entry.version).await?;
    tracing::Span::current().record("algorithm", "batch");
    Ok(BatchBody {
        map_version: entry.version,
        parts,
    })
}

/// The batch's `min_version`, or the highest one of its queries.
fn batch_min_version(req: &BatchRequest) -> Option<u64> {
    req.queries
        .iter()
        .filter_map(|q| q.min_version)
        .chain(req.min_version)
        .max()
}

/// Every query of a batch, prepared on `entry` (or the view of the profile it names) or
/// refused on its own.
async fn prepare_batch(
    state: &AppState,
    entry: &Arc<MapEntry>,
    req: &BatchRequest,
) -> Vec<Result<Asked, ApiError>> {
    let views = profile_views(state, entry, req).await;
    let prepare = |q: &PathRequest| {
        let on = match q.profile.as_deref() {
            Some(p) => views[p]
                .clone()
                .ok_or_else(|| query::no_profile(entry, p))?,
            None => Arc::clone(entry),
        };
        let format = PathFormat::parse(q.path_format.as_deref())?;
        let spec = q.spec(state.config());
        let prepared = query::prepare_on(state, &on, spec, Tracing::AsAsked)?;
        Ok(Asked::new(prepared, q, format))
    };
    req.queries.iter().map(prepare).collect()
}

/// Each profile the batch names, once: its view of this one snapshot (`None`: no such
/// profile).
async fn profile_views(
    state: &AppState,
    entry: &Arc<MapEntry>,
    req: &BatchRequest,
) -> BTreeMap<String, Option<Arc<MapEntry>>> {
    let mut views = BTreeMap::new();
    for q in &req.queries {
        if let Some(p) = q.profile.as_deref()
            && !views.contains_key(p)
        {
            let view = query::on_profile(state, entry, Some(p)).await.ok();
            views.insert(p.to_owned(), view);
        }
    }
    views
}

/// Runs a batch's queries on the pool in chunks (see [`find_paths`]), each answer written
/// on its worker; the parts come back in order.
async fn answer_batch(
    state: &AppState,
    items: Vec<Result<Asked, ApiError>>,
    version: u64,
) -> Result<Vec<BatchPart>, ApiError> {
    let compute = state.compute().clone();
    let chunk = items.len().div_ceil(compute.threads());
    let parts = state
        .compute()
        .run_parts(
            items,
            chunk.clamp(1, BATCH_CHUNK),
            move |item, cancel, searcher, part: &mut Part| {
                let run = Run {
                    cancel,
                    compute: &compute,
                    searcher,
                    metrics: &mut part.metrics,
                };
                part.json.push(item.and_then(|q| q.answer(run, version)));
            },
        )
        .await?;
    Ok(parts.into_iter().map(|p| p.json).collect())
}

/// A prepared query and how its answer is to be written.
struct Asked {
    prepared: query::Prepared,
    debug: bool,
    format: PathFormat,
}

impl Asked {
    fn new(prepared: query::Prepared, req: &PathRequest, format: PathFormat) -> Self {
        Asked {
            prepared,
            debug: req.debug.unwrap_or(false),
            format,
        }
    }

    /// Its answer on map version `version`, on the worker `run` is on.
    fn answer(self, run: Run<'_>, version: u64) -> Result<PathResponse, ApiError> {
        let cap = self.prepared.trace_cap;
        let answer = self.prepared.answer_with(run)?;
        Ok(respond(answer, version, cap, self.debug, self.format))
    }

    /// A query on its own: its answer written on the worker, with the algorithm that ran
    /// and the nodes it expanded (for the request's span).
    fn written(
        self,
        cancel: &Cancel,
        compute: &Compute,
    ) -> Result<(&'static str, u64, Written), ApiError> {
        let run = Run {
            cancel,
            compute,
            searcher: &mut compute.searcher(),
            metrics: &mut QueryMetrics::default(),
        };
        let version = self.prepared.entry.version;
        let resp = self.answer(run, version)?;
        Ok((resp.algorithm, resp.expanded, resp.written()))
    }
}

/// What a turn of a batch's chunk gathers: its answers, written, and its query metrics.
#[derive(Default)]
struct Part {
    json: BatchPart,
    metrics: QueryMetrics,
}

/// The wire answer of one query on map version `version` (`cap`: its trace's cap).
fn respond(
    answer: query::Answer,
    version: u64,
    cap: usize,
    debug: bool,
    format: PathFormat,
) -> PathResponse {
    let mut resp = PathResponse::new(answer.result, version, debug, format);
    resp.trace = answer.trace.map(|t| SearchTrace::new(t, cap));
    resp.ends = answer.ends.map(Into::into);
    resp
}
