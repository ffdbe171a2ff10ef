//! D* Lite repair versus replanning with a fresh A*, on Moving AI maps.
//!
//! For scenario rows of `den520d`, `16room_000` and `Berlin_1_1024` (long rows, from the upper
//! buckets), a 3x3 wall lands either on the current path (at 1/8, 1/2 or 7/8 of the way from
//! the agent to the goal) or far from everything the search touched. Expansion counts are
//! printed once per map (averaged over the rows), for the wall and for its removal. Criterion
//! times, for one row, a long-lived search repaired for the wall and then for its removal
//! (at 1/8 of the path, next to the agent; at 1/2; far away), and a fresh A* on the map
//! walled mid-path. Every timed iteration asserts
//! that the repaired cost equals A*'s.
//!
//! The same walls are also repaired the way subscriptions are served: a shared goal tree
//! ([`GoalTree`]) with the agent's forward repair (A* with the tree's old values as
//! heuristic; the expansions the agent waits for, counting the vertices its walks step to
//! and those whose exactness it decides, a vertex expanded with its exactness walk's look
//! once), then the tree's own settling (done after the
//! event is out), each checked against A*'s cost.
//!
//! Run: `cargo bench -p pathd-bench --bench repair -- --warm-up-time 1 --measurement-time 3`
//! (the expansion tables alone: `cargo bench -p pathd-bench --bench repair -- tables-only`).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use pathd_engine::movingai::{self, ScenRow};
use pathd_engine::{
    Agent, DStarLite, GoalTree, Grid, Interest, Limits, Patch, Point, Query, Rect, Searcher,
    find_path,
};

/// The full Moving AI set: `PATHD_BENCHMARKS` when set, else `../shared/benchmarks/movingai`
/// beside the repository (the repository's own `tests/data/movingai` is only a subset).
fn bench_dir() -> std::path::PathBuf {
    std::env::var_os("PATHD_BENCHMARKS")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/benchmarks/movingai"
            ))
        })
}

fn load(map: &str) -> (Grid, Vec<ScenRow>) {
    let dir = bench_dir();
    let text = std::fs::read_to_string(dir.join("maps").join(map)).expect("map");
    let grid = movingai::parse_map(&text).expect("map parses");
    let text = std::fs::read_to_string(dir.join("scen").join(format!("{map}.scen"))).expect("scen");
    (grid, movingai::parse_scen(&text).expect("scen parses"))
}

/// A 3x3 wall centred on `c` (clipped to the map), or `None` when it would cover the
/// start or the goal.
fn wall_at(grid: &Grid, c: Point, row: &ScenRow) -> Option<Patch> {
    let x0 = c.x.saturating_sub(1);
    let y0 = c.y.saturating_sub(1);
    let rect = Rect {
        x: x0,
        y: y0,
        width: (c.x + 2).min(grid.width()) - x0,
        height: (c.y + 2).min(grid.height()) - y0,
        cost: 0,
    };
    let inside =
        |p: Point| (x0..x0 + rect.width).contains(&p.x) && (y0..y0 + rect.height).contains(&p.y);
    (!inside(row.start) && !inside(row.goal)).then(|| Patch {
        cells: vec![],
        rects: vec![rect],
    })
}

/// A passable cell whose 3x3 block lies outside what the search can be affected by.
fn far_cell(grid: &Grid, d: &DStarLite) -> Option<Point> {
    let Interest::Region { min, max } = d.interest() else {
        return None;
    };
    let outside = |x: u32, y: u32| x + 2 < min.x || x > max.x + 2 || y + 2 < min.y || y > max.y + 2;
    // Scan from the far corner inwards so the pick is deterministic and really far.
    (0..grid.height())
        .rev()
        .flat_map(|y| (0..grid.width()).rev().map(move |x| (x, y)))
        .find_map(|(x, y)| {
            (outside(x, y) && grid.is_passable(Point::new(x, y))).then_some(Point::new(x, y))
        })
}

/// One prepared case: a settled search, the map before and after the patch, and A*'s
/// answer on both.
struct Case {
    d: DStarLite,
    before: Grid,
    next: Grid,
    changed: Vec<Point>,
    base_cost: f64,
    astar_cost: f64,
    astar_expanded: u64,
}

fn prepare(grid: &Grid, row: &ScenRow, d: &DStarLite, patch: Patch) -> Option<Case> {
    let (next, changed) = grid.apply_patch(&patch).expect("patch fits")?;
    let r = find_path(&next, &Query::new(row.start, row.goal)).expect("valid query");
    Some(Case {
        d: d.clone(),
        before: grid.clone(),
        next,
        changed,
        base_cost: d.path().expect("reachable").1,
        astar_cost: r.cost,
        astar_expanded: r.stats.expanded,
    })
}

fn assert_cost(d: &DStarLite, want: f64) {
    let cost = d.path().map_or(0.0, |p| p.1);
    assert!(
        (cost - want).abs() <= 1e-9 * want.max(1.0),
        "repair {cost} vs A* {want}"
    );
}

/// Repairs `d` for the wall, then for its removal, checking both answers; returns the
/// expansions of each.
fn wall_and_back(d: &mut DStarLite, case: &Case) -> (u64, u64) {
    let wall = d.update(&case.next, &case.changed);
    assert_cost(d, case.astar_cost);
    let back = d.update(&case.before, &case.changed);
    assert_cost(d, case.base_cost);
    (wall.stats.expanded, back.stats.expanded)
}

fn rows(all: &[ScenRow]) -> Vec<ScenRow> {
    [0.6, 0.7, 0.8, 0.9, 0.99]
        .iter()
        .map(|f| &all[(all.len() as f64 * f) as usize..])
        .filter_map(|rest| rest.iter().find(|r| !r.unreachable()).cloned())
        .collect()
}

fn bench_map(c: &mut Criterion, map: &str) {
    let (grid, all) = load(map);
    let rows = rows(&all);
    // Expansion table: D* Lite repair vs fresh A*, averaged over the rows.
    let labels = ["near 1/8", "near 1/2", "near 7/8", "far"];
    // Per spot: wall repair, removal repair, fresh A* on the walled map, cases.
    let mut sums = [(0u64, 0u64, 0u64, 0u32); 4];
    // Per spot: goal tree forward repair, then its background settle.
    let mut tree_sums = [(0u64, 0u64); 4];
    let mut initial = (0u64, 0u64);
    // Memory: D* Lite search, settled goal tree, one agent (bytes, summed over rows).
    let mut bytes = (0usize, 0usize, 0usize);
    for row in &rows {
        let d = DStarLite::new(&grid, row.start, row.goal, Limits::default()).expect("valid row");
        let mut tree = GoalTree::new(&grid, row.goal, 1).expect("valid goal");
        let (agent, _) =
            Agent::new(&mut tree, &grid, row.start, Limits::default()).expect("valid start");
        bytes.0 += d.memory_bytes();
        bytes.1 += tree.memory_bytes();
        bytes.2 += agent.memory_bytes();
        let a = find_path(&grid, &Query::new(row.start, row.goal)).unwrap();
        initial.0 += d.initial_stats().expanded;
        initial.1 += a.stats.expanded;
        let path = d.path().expect("reachable row").0.to_vec();
        let spots = [
            Some(path[path.len() / 8]),
            Some(path[path.len() / 2]),
            Some(path[path.len() * 7 / 8]),
            far_cell(&grid, &d),
        ];
        for (k, spot) in spots.into_iter().enumerate() {
            let Some(case) = spot
                .and_then(|p| wall_at(&grid, p, row))
                .and_then(|w| prepare(&grid, row, &d, w))
            else {
                continue;
            };
            let (wall, back) = wall_and_back(&mut case.d.clone(), &case);
            let (mut t, mut a) = (tree.clone(), agent.clone());
            t.apply(&case.next, &case.changed, false);
            let out = a.on_patch(&mut t, &case.next, &case.changed, false);
            assert!(
                (a.cost() - case.astar_cost).abs() <= 1e-9 * case.astar_cost.max(1.0),
                "goal tree {} vs A* {}",
                a.cost(),
                case.astar_cost
            );
            let settle = t.settle(&case.next, a.cost());
            tree_sums[k].0 += out.stats.expanded;
            tree_sums[k].1 += settle.expanded;
            sums[k].0 += wall;
            sums[k].1 += back;
            sums[k].2 += case.astar_expanded;
            sums[k].3 += 1;
        }
    }
    let n_rows = rows.len() as u64;
    eprintln!(
        "[repair] {map}: {n_rows} rows; initial search: D* Lite {} vs A* {} expansions (mean)",
        initial.0 / n_rows,
        initial.1 / n_rows
    );
    let n = rows.len();
    eprintln!(
        "[repair] {map}: memory (mean): D* Lite search {} KiB; goal tree settled up to \
         the agent {} KiB, shared by its agents; one agent {} KiB",
        bytes.0 / n / 1024,
        bytes.1 / n / 1024,
        bytes.2 / n / 1024,
    );
    for (label, ((wall, back, astar, n), (fwd, settle))) in
        labels.iter().zip(sums.into_iter().zip(tree_sums))
    {
        if n == 0 {
            eprintln!("[repair] {map} {label}: no case");
            continue;
        }
        let n = n as u64;
        eprintln!(
            "[repair] {map} {label}: 3x3 wall: D* Lite {} vs fresh A* {} expansions ({:.1}x less); \
             wall removed again: D* Lite {} (mean of {n})",
            wall / n,
            astar / n,
            astar as f64 / wall.max(1) as f64,
            back / n,
        );
        eprintln!(
            "[repair] {map} {label}: 3x3 wall: goal tree forward repair {} vs fresh A* {} \
             expansions ({:.1}x less); tree settled afterwards: {} (mean of {n})",
            fwd / n,
            astar / n,
            astar as f64 / fwd.max(1) as f64,
            settle / n,
        );
    }

    // Timing: one row (the 0.8 one). Each iteration repairs one long-lived search twice
    // (wall, then wall removed), so per repair is half the figure; A* runs once.
    let row = &rows[rows.len().min(3) - 1];
    let d = DStarLite::new(&grid, row.start, row.goal, Limits::default()).unwrap();
    let path = d.path().unwrap().0.to_vec();
    let case_at = |p: Point| wall_at(&grid, p, row).and_then(|w| prepare(&grid, row, &d, w));
    let agent = case_at(path[path.len() / 8]);
    let mid = case_at(path[path.len() / 2]);
    let far = far_cell(&grid, &d).and_then(case_at);
    let mut group = c.benchmark_group(format!("repair/{map}"));
    group.sample_size(10);
    for (name, case) in [
        ("dstar_wall_and_back_near_agent", &agent),
        ("dstar_wall_and_back_near_mid", &mid),
        ("dstar_wall_and_back_far", &far),
    ] {
        let Some(case) = case else { continue };
        let mut d = case.d.clone();
        group.bench_function(name, |b| b.iter(|| wall_and_back(&mut d, case)));
    }
    if let Some(case) = &mid {
        let mut searcher = Searcher::new();
        group.bench_function("astar_fresh", |b| {
            b.iter(|| {
                let r = searcher
                    .find_path(black_box(&case.next), &Query::new(row.start, row.goal))
                    .unwrap();
                assert!((r.cost - case.astar_cost).abs() <= 1e-9 * case.astar_cost.max(1.0));
                r
            })
        });
    }
    group.finish();
}

fn repair_benches(c: &mut Criterion) {
    for map in ["den520d.map", "16room_000.map", "Berlin_1_1024.map"] {
        bench_map(c, map);
    }
}

criterion_group!(benches, repair_benches);
criterion_main!(benches);
