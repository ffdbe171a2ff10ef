//! `/v1/maps/{name}/path` and `/v1/maps/{name}/paths`: path queries on the search pool,
//! through the query service ([`crate::query`]).

use axum::Router;
use axum::extract::{Path, State};
use axum::routing::post;

use crate::http::auth::QueryAuth;
use crate::http::body::{BlockingJson, JsonBytes, decode_off_runtime};
use crate::http::dto::{
    BatchItem, BatchRequest, BatchResponse, PathFormat, PathRequest, PathResponse,
};
use crate::http::error::ApiError;
use crate::http::routes::maps::lookup;
use crate::http::routes::trace::SearchTrace;
use crate::query::{self, Tracing};
use crate::state::AppState;

/// The routes of this module.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/maps/{name}/path", post(find_path))
        .route("/v1/maps/{name}/paths", post(find_paths))
}

pub use crate::query::wait_version;

/// `POST /v1/maps/{name}/path` (operationId `findPath`).
async fn find_path(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    BlockingJson(req): BlockingJson<PathRequest>,
) -> Result<PathResponse, ApiError> {
    let format = PathFormat::parse(req.path_format.as_deref())?;
    let prepared = query::prepare(&state, &name, &req, Tracing::AsAsked).await?;
    let (version, cap) = (prepared.entry.version, prepared.trace_cap);
    let compute = state.compute().clone();
    let answer = state
        .compute()
        .run(move |cancel| prepared.answer(cancel, &compute))
        .await??;
    let span = tracing::Span::current();
    span.record("algorithm", answer.result.algorithm.as_str());
    span.record("expanded", answer.result.stats.expanded);
    Ok(respond(
        answer,
        version,
        cap,
        req.debug.unwrap_or(false),
        format,
    ))
}

/// Most queries of a batch one pool job runs (see [`find_paths`]).
const BATCH_CHUNK: usize = 16;

/// `POST /v1/maps/{name}/paths` (operationId `findPaths`): every query on the same
/// snapshot, in chunks of the pool's fair queue (about one per worker, at most
/// [`BATCH_CHUNK`] queries each, one searcher a chunk; a chunk gives way to a waiting
/// single query between two of its queries, so a batch shares the workers with other
/// requests instead of holding them; each query keeps its own limits), answered in order;
/// a query's own error (e.g. `out_of_bounds`) is its item, not the batch's.
async fn find_paths(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    JsonBytes(body): JsonBytes,
) -> Result<BatchResponse, ApiError> {
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
    // Each profile the batch names, once (its view of this one snapshot).
    let mut views = std::collections::BTreeMap::new();
    for q in &req.queries {
        if let Some(p) = q.profile.as_deref()
            && !views.contains_key(p)
        {
            let view = query::on_profile(&state, &entry, Some(p)).await.ok();
            views.insert(p.to_owned(), view);
        }
    }
    let items: Vec<_> = req
        .queries
        .iter()
        .map(|q| {
            let on = match q.profile.as_deref() {
                Some(p) => views[p]
                    .clone()
                    .ok_or_else(|| query::no_profile(&entry, p))?,
                None => std::sync::Arc::clone(&entry),
            };
            let format = PathFormat::parse(q.path_format.as_deref())?;
            let prepared = query::prepare_on(&state, &on, q, Tracing::AsAsked)?;
            Ok((prepared, q.debug.unwrap_or(false), format))
        })
        .collect();
    let compute = state.compute().clone();
    let version = entry.version;
    let chunk = items
        .len()
        .div_ceil(compute.threads())
        .clamp(1, BATCH_CHUNK);
    let results = state
        .compute()
        .run_chunked(
            items,
            chunk,
            move |item: Result<_, ApiError>, cancel, searcher| {
                let answer = item.and_then(|(prepared, debug, format)| {
                    let cap = prepared.trace_cap;
                    prepared
                        .answer_with(cancel, &compute, searcher)
                        .map(|answer| respond(answer, version, cap, debug, format))
                        .map_err(ApiError::from)
                });
                match answer {
                    Ok(ok) => BatchItem::Ok(Box::new(ok)),
                    Err(e) => BatchItem::Err(e.body().into()),
                }
            },
        )
        .await?;
    tracing::Span::current().record("algorithm", "batch");
    Ok(BatchResponse {
        map_version: version,
        results,
    })
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
    resp.ends = answer.ends;
    resp
}
