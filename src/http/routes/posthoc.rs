//! `/v1/maps/{name}/posthoc`: a path query's search trace in the Posthoc search-trace
//! format (ShortestPathLab's trace viewer), so a search can be opened and stepped there.
//!
//! The document is JSON (a subset of the YAML Posthoc reads): `version`, a `render` block
//! drawing each event's cell as a unit tile coloured by event type, and `events`: `source`
//! and `destination` (the query's start and goal), then in search order `generating` (first
//! reached), `updating` (reached more cheaply, open or reopened), `expanding` (taken off the
//! open list) and `closing` (its successors done), and `end` at the goal when the search
//! found it. Each event has `id` (the cell's row-major index `y * width + x`), `pId` (the
//! parent's id; `null` for the start), `g`, `f`, `x` and `y`.
//!
//! HPA* runs several searches; each event also carries its `phase` (`window`, `insert`,
//! `abstract`, `refine`, `corridor`; an `abstract` event's cell is an entrance and its
//! parent the previous abstract node), and `pathd.hpa` holds the entrances, the abstract
//! path and the refinement steps as in a `SearchTrace`. Events of their own show them in
//! search order: `entrance` (one per entrance, after `destination`), `abstract` (one per
//! abstract path node, `pId` the previous one, with its `g`, before the refinement) and
//! `refine` (one per cell of each refinement step, `step` naming its kind, `pId` the
//! previous cell; a replacing step's cells are the whole new path), each where it happened
//! among the search events; `end` is the answer's last cell.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::routing::post;
use pathd_engine::trace::{HpaTrace, TraceEvent, TraceKind};
use pathd_engine::{Point, Status};
use serde_json::{Value, json};

use crate::compute::{Cancel, Compute};
use crate::http::auth::QueryAuth;
use crate::http::body::BlockingJson;
use crate::http::dto::PathRequest;
use crate::http::error::{ApiError, Json};
use crate::http::routes::trace::HpaTraceWire;
use crate::query::{self, Prepared, Tracing};
use crate::state::AppState;

/// Posthoc format version the document follows.
pub const POSTHOC_VERSION: &str = "1.4.0";

/// The routes of this module.
pub fn router() -> Router<AppState> {
    Router::new().route("/v1/maps/{name}/posthoc", post(posthoc))
}

/// `POST /v1/maps/{name}/posthoc` (operationId `findPathPosthoc`): runs the query through
/// the query service like `/path` (same waits, checks, sized views and answers), with a
/// trace (capped by `--max-debug-cells` expansions, like `"trace": true`), and answers the
/// Posthoc document.
async fn posthoc(
    _: QueryAuth,
    State(state): State<AppState>,
    Path(name): Path<String>,
    BlockingJson(req): BlockingJson<PathRequest>,
) -> Result<Json<Value>, ApiError> {
    if req.path_format.is_some() {
        return Err(ApiError::invalid_request(
            "`path_format` does not apply to /posthoc (the trace file has its own format)",
        ));
    }
    let q = req.path_query(state.config());
    let prepared = query::prepare(&state, &name, q, Tracing::Always).await?;
    let compute = state.compute().clone();
    let doc = state
        .compute()
        .run(move |cancel| traced(prepared, cancel, &compute))
        .await??;
    Ok(Json(doc))
}

/// Runs `prepared` with its trace on the calling worker and builds its document.
fn traced(prepared: Prepared, cancel: &Cancel, compute: &Compute) -> Result<Value, ApiError> {
    let (start, goal) = (prepared.query.start, prepared.query.goal);
    let snapshot = Arc::clone(&prepared.entry);
    let (r, t) = prepared.run(cancel, compute)?;
    let t = t.expect("a posthoc query is always traced");
    let found = r.status == Status::Found;
    Ok(document(
        snapshot.grid.width(),
        start,
        goal,
        &t.events,
        found,
        t.hpa.as_ref(),
        json!({
            "map": snapshot.name,
            "map_version": snapshot.version,
            "algorithm": r.algorithm.as_str(),
            "status": r.status.as_str(),
            // As in a path answer: the cost of the answer to follow.
            "cost": r.smoothed_length.unwrap_or(r.cost),
            "path_cost": r.cost,
            "expanded": r.stats.expanded,
            "truncated": t.truncated,
            "hpa": t.hpa.as_ref().map(HpaTraceWire::new),
        }),
    ))
}

/// Builds the Posthoc document of `events` (and HPA*'s record, if any) on a map `width`
/// cells wide.
pub fn document(
    width: u32,
    start: Point,
    goal: Point,
    events: &[TraceEvent],
    found: bool,
    hpa: Option<&HpaTrace>,
    pathd: Value,
) -> Value {
    let id = |p: Point| u64::from(p.y) * u64::from(width) + u64::from(p.x);
    let ev = |kind: &str, e: &TraceEvent| {
        let parent = (e.parent != e.node).then(|| id(e.parent));
        let mut v = json!({
            "type": kind,
            "id": id(e.node),
            "pId": parent,
            "g": e.g,
            "f": e.f,
            "x": e.node.x,
            "y": e.node.y,
        });
        if hpa.is_some() {
            v["phase"] = json!(e.phase.as_str());
        }
        v
    };
    // HPA*'s abstract path and refinement steps, emitted where they happened.
    let mut steps = hpa.map_or(&[][..], |h| &h.refinement[..]).iter().peekable();
    let mut abstract_done = false;
    let mut flush = |out: &mut Vec<Value>, upto: usize| {
        while let Some(s) = steps.next_if(|s| s.after_events <= upto) {
            if !abstract_done {
                abstract_done = true;
                let path = hpa.map_or(&[][..], |h| &h.abstract_path[..]);
                for (i, (p, g)) in path.iter().enumerate() {
                    let parent = i.checked_sub(1).map(|j| id(path[j].0));
                    out.push(json!({
                        "type": "abstract", "id": id(*p), "pId": parent, "g": g,
                        "x": p.x, "y": p.y,
                    }));
                }
            }
            for (i, p) in s.cells.iter().enumerate() {
                let parent = i.checked_sub(1).map(|j| id(s.cells[j]));
                out.push(json!({
                    "type": "refine", "step": s.kind.as_str(), "id": id(*p), "pId": parent,
                    "x": p.x, "y": p.y,
                }));
            }
        }
    };
    let mut out = vec![
        json!({"type": "source", "id": id(start), "x": start.x, "y": start.y}),
        json!({"type": "destination", "id": id(goal), "x": goal.x, "y": goal.y}),
    ];
    if let Some(h) = hpa {
        for p in &h.entrances {
            out.push(json!({"type": "entrance", "id": id(*p), "x": p.x, "y": p.y}));
        }
    }
    let mut open: Option<&TraceEvent> = None;
    for (i, e) in events.iter().enumerate() {
        flush(&mut out, i);
        match e.kind {
            TraceKind::Push => out.push(ev("generating", e)),
            TraceKind::Decrease | TraceKind::Reopen => out.push(ev("updating", e)),
            TraceKind::Expand => {
                if let Some(prev) = open.take() {
                    out.push(ev("closing", prev));
                }
                out.push(ev("expanding", e));
                open = Some(e);
            }
        }
    }
    if let Some(last) = open {
        if found && last.node == goal && hpa.is_none() {
            out.push(ev("end", last));
        } else {
            out.push(ev("closing", last));
        }
    }
    flush(&mut out, usize::MAX);
    // HPA*'s last search need not end at the goal: its answer is the refined path.
    if let (true, Some(h)) = (found, hpa)
        && let Some(last) = h.refinement.last().and_then(|s| s.cells.last())
    {
        out.push(json!({"type": "end", "id": id(*last), "x": last.x, "y": last.y}));
    }
    json!({
        "version": POSTHOC_VERSION,
        "pathd": pathd,
        "render": {
            "components": {
                "tile": [{
                    "$": "rect",
                    "width": 1,
                    "height": 1,
                    "x": "{{$.event.x}}",
                    "y": "{{$.event.y}}",
                    "fill": "{{$.color[$.event.type]}}",
                }],
            },
            "views": {"main": {"renderer": "2d-pixi", "components": [{"$": "tile"}]}},
        },
        "events": out,
    })
}
