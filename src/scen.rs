//! `pathd scen MAP.map FILE.scen`: checks the engine against a Moving AI scenario file.
//!
//! Every row whose stated size matches the map is answered; a row matches when the cost is
//! within `6e-3 + 1e-5 * optimal` of the stated optimum (for weighted A*, `--weight W`: not
//! below it and at most `W` times it), or, for the rows stated as unreachable (optimal 0 with
//! start != goal), when the answer is "no path".

use std::path::PathBuf;
use std::time::Instant;

use pathd_engine::movingai::{self, ScenRow};
use pathd_engine::{
    Algorithm, Derived, Grid, JumpTable, Landmarks, Query, Searcher, Status, SubgoalGraph,
};
use serde::Serialize;

/// Arguments of `pathd scen`.
#[derive(Clone, Debug)]
pub struct ScenArgs {
    /// The Moving AI `.map` file.
    pub map: PathBuf,
    /// Its `.scen` file.
    pub scen: PathBuf,
    /// Algorithm wire name (astar, dijkstra, weighted_astar, jps, jps_plus, theta, hpa, auto,
    /// subgoal).
    pub algorithm: String,
    /// Heuristic weight `w` of weighted A* (`f = g + w h`, answers within `w` of optimal);
    /// checked like a query's weight, ignored by the other algorithms.
    pub weight: f64,
    /// Landmarks for `jps_plus` and `auto` (`None`: as many as the server's default budget
    /// affords, [`crate::jump::JumpSettings`]).
    pub landmarks: Option<usize>,
    /// Print one JSON object instead of a text line.
    pub json: bool,
}

/// The outcome of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ScenReport {
    /// Rows checked.
    pub rows: usize,
    /// Rows whose answer matched the stated optimum.
    pub matched: usize,
    /// Mean search time per row, microseconds: the time the engine reports as the search's
    /// ([`pathd_engine::Stats::elapsed`]: the best-first loop from pushing the start to
    /// expanding the goal), which is what warthog's `nanos` covers too (its timer runs around
    /// its search loop; turning the parent chain into a path comes after it). Validation, the
    /// reachability check and building the answer's path are in [`ScenReport::mean_call_us`];
    /// a row answered without a search (unreachable by the map's components) counts its
    /// whole call.
    pub mean_us: f64,
    /// Mean time of the whole call per row (validation, search, path and result building),
    /// microseconds.
    pub mean_call_us: f64,
    /// Median search time, microseconds.
    pub p50_us: f64,
    /// 99th percentile search time, microseconds.
    pub p99_us: f64,
    /// Mean expansions per row.
    pub mean_expanded: f64,
    /// Time to build the JPS+ jump table and the landmarks (`jps_plus` and `auto`) and the
    /// subgoal graph (`subgoal` and `auto`), milliseconds; not part of the per-row times.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precompute_ms: Option<f64>,
    /// Heap bytes of what was precomputed (the table and landmarks, or the subgoal graph).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precompute_bytes: Option<usize>,
    /// Landmarks the JPS+ searches used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landmarks: Option<usize>,
}

/// True when `cost`/`status` answer `row` correctly: the optimal grid length within the
/// benchmarks' print tolerance, or, for an any-angle answer (Theta*'s `smoothed_length`),
/// at most that length, or, for a bounded-suboptimal answer (weighted A*, `bound` = its
/// weight; 1 for the optimal algorithms), between the optimum and `bound` times it.
pub fn matches(row: &ScenRow, status: Status, cost: f64, any_angle: bool, bound: f64) -> bool {
    let tol = 6e-3 + 1e-5 * row.optimal;
    if row.unreachable() {
        status == Status::NoPath
    } else if any_angle {
        status == Status::Found && cost <= row.optimal + tol
    } else {
        status == Status::Found && cost + tol >= row.optimal && cost <= bound * row.optimal + tol
    }
}

/// Answers every row on `grid` with `algorithm` (and `weight`, for weighted A*; with `k`
/// landmarks for JPS+), reporting mismatches (at most 10) on stderr.
pub fn check(
    grid: &Grid,
    rows: &[ScenRow],
    algorithm: Algorithm,
    weight: f64,
    k: usize,
) -> Result<ScenReport, String> {
    let mut searcher = Searcher::new();
    let bound = if algorithm == Algorithm::WeightedAStar {
        weight
    } else {
        1.0
    };
    let started = Instant::now();
    let table = matches!(algorithm, Algorithm::JpsPlus | Algorithm::Auto)
        .then(|| JumpTable::build(grid))
        .flatten();
    let landmarks = table.as_ref().and_then(|_| Landmarks::build(grid, k));
    let subgoal = matches!(algorithm, Algorithm::Subgoal | Algorithm::Auto)
        .then(|| SubgoalGraph::build(grid))
        .flatten();
    let precompute_ms =
        (table.is_some() || subgoal.is_some()).then(|| started.elapsed().as_secs_f64() * 1e3);
    let precompute_bytes = precompute_ms.map(|_| {
        table.as_ref().map_or(0, JumpTable::memory_bytes)
            + landmarks.as_ref().map_or(0, Landmarks::memory_bytes)
            + subgoal.as_ref().map_or(0, SubgoalGraph::memory_bytes)
    });
    let derived = Derived {
        hpa: None,
        jump_table: table.as_ref(),
        subgoal: subgoal.as_ref(),
        landmarks: landmarks.as_ref(),
        sized: None,
    };
    // One untimed search first: a searcher sizes its scratch memory to the map on its first
    // search (node records of 16 bytes a cell, all written once, plus the open list's slots),
    // a one-time cost per searcher that, like the jump table's build above, is not a query's.
    // Timed into the first row it dominated a sampled run's mean: JPS+ on 250 rows of
    // Berlin_1_1024 took 137 us a query on the first pass over them and 71 on the next ones.
    if let Some(row) = rows.iter().find(|r| r.optimal > 0.0) {
        let mut query = Query::new(row.start, row.goal).with_algorithm(algorithm);
        query.weight = weight;
        // Errors are reported by the timed loop below.
        let _ = searcher.find_path_derived(grid, derived, &query);
    }
    let mut times = Vec::with_capacity(rows.len());
    let mut call_us = 0.0;
    let (mut matched, mut expanded, mut shown) = (0, 0u64, 0);
    for row in rows {
        let mut query = Query::new(row.start, row.goal).with_algorithm(algorithm);
        query.weight = weight;
        let t = Instant::now();
        let r = searcher
            .find_path_derived(grid, derived, &query)
            .map_err(|e| format!("row {} -> {}: {e}", row.start, row.goal))?;
        let call = t.elapsed().as_secs_f64() * 1e6;
        call_us += call;
        // A row answered without a search (the reachability check ruled it out) is timed
        // as its whole call: 0 µs would flatter pathd against a peer that searches.
        times.push(if r.stats.elapsed.is_zero() {
            call
        } else {
            r.stats.elapsed.as_secs_f64() * 1e6
        });
        expanded += r.stats.expanded;
        let any_angle = r.algorithm == Algorithm::Theta;
        let cost = if any_angle {
            r.smoothed_length.unwrap_or(r.cost)
        } else {
            r.cost
        };
        if matches(row, r.status, cost, any_angle, bound) {
            matched += 1;
        } else if shown < 10 {
            shown += 1;
            eprintln!(
                "mismatch: {} -> {}: {} cost {} (optimal {})",
                row.start,
                row.goal,
                r.status.as_str(),
                cost,
                row.optimal
            );
        }
    }
    let n = rows.len().max(1) as f64;
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        if sorted.is_empty() {
            0.0
        } else {
            sorted[((sorted.len() - 1) as f64 * p).round() as usize]
        }
    };
    Ok(ScenReport {
        rows: rows.len(),
        matched,
        mean_us: times.iter().sum::<f64>() / n,
        mean_call_us: call_us / n,
        p50_us: pct(0.5),
        p99_us: pct(0.99),
        mean_expanded: expanded as f64 / n,
        precompute_ms,
        precompute_bytes,
        landmarks: landmarks.map(|l| l.points().len()),
    })
}

/// Reads the files and runs [`check`] on the rows that belong to this map (by stated size).
pub fn run(args: &ScenArgs) -> Result<ScenReport, String> {
    let algorithm = Algorithm::parse(&args.algorithm)
        .ok_or_else(|| format!("unknown algorithm {:?}", args.algorithm))?;
    pathd_engine::query::check_weight(args.weight).map_err(|e| e.to_string())?;
    let read =
        |p: &PathBuf| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let grid = movingai::parse_map(&read(&args.map)?)
        .map_err(|e| format!("{}: {e}", args.map.display()))?;
    let rows: Vec<ScenRow> = movingai::parse_scen(&read(&args.scen)?)
        .map_err(|e| format!("{}: {e}", args.scen.display()))?
        .into_iter()
        .filter(|r| r.width == grid.width() && r.height == grid.height())
        .collect();
    let k = args.landmarks.unwrap_or_else(|| {
        Landmarks::affordable(&grid, crate::jump::JumpSettings::default().landmark_memory)
    });
    check(&grid, &rows, algorithm, args.weight, k)
}

impl ScenReport {
    /// The text line `pathd scen` prints.
    pub fn line(&self) -> String {
        format!(
            "rows {} matched {} mean_us {:.1} p50_us {:.1} p99_us {:.1} mean_call_us {:.1} \
             mean_expanded {:.1}",
            self.rows,
            self.matched,
            self.mean_us,
            self.p50_us,
            self.p99_us,
            self.mean_call_us,
            self.mean_expanded
        )
    }
}
