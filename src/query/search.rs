//! The worker side of the query service: a prepared query run on a search worker, with
//! its deadline, cancellation, sized views and counting.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pathd_engine::targets::{Target, TargetResult};
use pathd_engine::trace::Trace;
use pathd_engine::{Algorithm, LimitKind, Query, SearchResult, Searcher, SizedDerived};

use super::{Answer, Ends, Prepared};
use crate::compute::{Cancel, Compute};
use crate::derived::MapEntry;
use crate::metrics::QueryMetrics;

/// The engine's refusal of a query on its map (out of bounds, blocked ends...).
pub type EngineError = pathd_engine::QueryError;

/// What a search runs with on its worker: its request's cancellation flag, the pool (to
/// count a cancelled search), a searcher and the query metrics (a batch's chunk hands the
/// same two to each of its queries).
pub struct Run<'a> {
    /// Set when the request's client went away.
    pub cancel: &'a Cancel,
    /// The pool the search runs on.
    pub compute: &'a Compute,
    /// The search's scratch memory.
    pub searcher: &'a mut Searcher,
    /// Where it is counted.
    pub metrics: &'a mut QueryMetrics,
}

impl Run<'_> {
    /// Counts a finished search (and a cancelled one as such).
    fn count(&mut self, r: &SearchResult) {
        if r.limit == Some(LimitKind::Cancelled) {
            self.compute.note_cancelled();
        }
        self.metrics.record(
            r.algorithm.as_str(),
            r.status.as_str(),
            r.stats.expanded,
            r.stats.elapsed.as_secs_f64(),
        );
    }
}

impl Prepared {
    /// Runs the query on the calling worker (see [`search`]).
    pub fn run(
        self,
        cancel: &Cancel,
        compute: &Compute,
    ) -> Result<(SearchResult, Option<Trace>), EngineError> {
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
    pub fn answer(self, cancel: &Cancel, compute: &Compute) -> Result<Answer, EngineError> {
        let run = Run {
            cancel,
            compute,
            searcher: &mut compute.searcher(),
            metrics: &mut QueryMetrics::default(),
        };
        self.answer_with(run)
    }

    /// [`Prepared::answer`] with what the caller's worker holds (a batch's chunk hands one
    /// searcher and one set of metrics to all its queries).
    pub fn answer_with(self, run: Run<'_>) -> Result<Answer, EngineError> {
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
        let start = query.start;
        let Some(target) = games.target else {
            let goal = query.goal;
            let (result, trace) = search_with(&entry, query, timeout, trace_cap, run)?;
            let ends = snapped.map(|moved| Ends {
                start,
                goal: Some(goal),
                goal_index: None,
                snapped: Some(moved),
            });
            return Ok(Answer {
                result,
                trace,
                ends,
            });
        };
        let t = search_target_with(&entry, query, &target, timeout, run)?;
        Ok(Answer {
            result: t.result,
            trace: None,
            ends: Some(Ends {
                start,
                goal: t.reached,
                goal_index: t.goal_index,
                snapped,
            }),
        })
    }
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
) -> Result<(SearchResult, Option<Trace>), EngineError> {
    let run = Run {
        cancel,
        compute,
        searcher: &mut compute.searcher(),
        metrics: &mut QueryMetrics::default(),
    };
    search_with(entry, query, timeout, trace_cap, run)
}

/// [`search`] with what the caller's worker holds.
pub fn search_with(
    entry: &MapEntry,
    mut query: Query,
    timeout: Duration,
    trace_cap: usize,
    mut run: Run<'_>,
) -> Result<(SearchResult, Option<Trace>), EngineError> {
    query.limits.deadline = Instant::now().checked_add(timeout); // None: too far to matter
    query.limits.cancel = Some(Arc::clone(run.cancel));
    // JPS and HPA* answer a sized query on the map eroded for its size (built here, on the
    // pool, the first time a version is asked for it; HPA*'s abstraction of it is checked
    // by the readiness rules).
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
    let searcher = &mut *run.searcher;
    let (r, trace) = if trace_cap > 0 {
        let (r, t) = searcher.find_path_traced(&entry.grid, derived, &query, trace_cap)?;
        (r, Some(t))
    } else {
        let r = searcher.find_path_derived(&entry.grid, derived, &query)?;
        (r, None)
    };
    run.count(&r);
    Ok((r, trace))
}

/// [`search`] for a target ([`pathd_engine::targets`]): the same deadline, cancellation
/// and counting, on a pooled searcher.
pub fn search_target(
    entry: &MapEntry,
    query: Query,
    target: &Target,
    timeout: Duration,
    cancel: &Cancel,
    compute: &Compute,
) -> Result<TargetResult, EngineError> {
    let run = Run {
        cancel,
        compute,
        searcher: &mut compute.searcher(),
        metrics: &mut QueryMetrics::default(),
    };
    search_target_with(entry, query, target, timeout, run)
}

/// [`search_target`] with what the caller's worker holds.
pub fn search_target_with(
    entry: &MapEntry,
    mut query: Query,
    target: &Target,
    timeout: Duration,
    mut run: Run<'_>,
) -> Result<TargetResult, EngineError> {
    query.limits.deadline = Instant::now().checked_add(timeout);
    query.limits.cancel = Some(Arc::clone(run.cancel));
    let t = run.searcher.find_target(&entry.grid, &query, target)?;
    run.count(&t.result);
    Ok(t)
}
