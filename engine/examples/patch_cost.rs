//! What a small patch costs JPS+ on a big map, the way pathd handles it:
//! `cargo run --release -p pathd-engine --example patch_cost -- MAP.map [QUERIES] [--subgoal]`
//! (`ROUNDS=7` by default).
//!
//! It derives what pathd derives for the map with its default settings (JPS+'s jump table
//! and as many landmarks as `--landmark-memory-mb`'s default affords) and picks `QUERIES`
//! (default 20) seeded queries in the largest component. Each round walls one cell in the
//! middle of one query's optimal path, opens it again, then walls and opens the 3x3 square
//! around it. After each patch it updates the derived structures as the server does
//! (`src/derived/jump.rs`), on the patch's write path, before the new version is served:
//! the jump table with `JumpTable::update`; the landmarks carried over a patch that only
//! blocks cells, otherwise updated with `Landmarks::update_within` (an update too big for
//! the write path goes to the landmark lane, `Landmarks::update`, and JPS+ runs without
//! landmarks until then: the `no-lm` column). It prints the medians and minimums over the rounds of the
//! update times and of the first and second pass of the queries on the new version (every
//! answer checked against A*, after the timing), and the derived memory in bytes per map
//! cell (`--subgoal` adds the subgoal graph's, built once).
use std::time::Instant;

use pathd_engine::{
    Algorithm, DEFAULT_LANDMARK_MEMORY, Derived, Grid, JumpTable, Landmarks, Patch, Point, Query,
    Rect, Searcher, Status, SubgoalGraph,
};

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// One pass of `queries` on `grid`: the time in ms, and the costs found.
fn pass(
    searcher: &mut Searcher,
    grid: &Grid,
    table: &JumpTable,
    landmarks: Option<&Landmarks>,
    queries: &[(Point, Point)],
) -> (f64, Vec<f64>) {
    let derived = Derived {
        jump_table: Some(table),
        landmarks,
        ..Derived::default()
    };
    let started = Instant::now();
    let costs = queries
        .iter()
        .map(|&(s, g)| {
            let q = Query::new(s, g).with_algorithm(Algorithm::JpsPlus);
            let r = searcher.find_path_derived(grid, derived, &q).unwrap();
            assert_eq!(r.status, Status::Found);
            r.cost
        })
        .collect();
    (ms(started), costs)
}

/// Checks `costs` against A*'s on `grid`.
fn check(grid: &Grid, queries: &[(Point, Point)], costs: &[f64]) {
    for (c, (r, q)) in reference(grid, queries)
        .iter()
        .zip(costs.iter().zip(queries))
    {
        assert!((c - r).abs() < 1e-6, "{q:?}: JPS+ {r}, A* {c}");
    }
}

/// The median of `v`.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A*'s costs of `queries` on `grid` (the reference).
fn reference(grid: &Grid, queries: &[(Point, Point)]) -> Vec<f64> {
    queries
        .iter()
        .map(|&(s, g)| {
            let q = Query::new(s, g).with_algorithm(Algorithm::AStar);
            let r = Searcher::new().find_path(grid, &q).unwrap();
            assert_eq!(r.status, Status::Found);
            r.cost
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: patch_cost MAP.map [QUERIES] [--subgoal]";
    let path = args.first().expect(usage);
    let n: usize = args
        .get(1)
        .filter(|a| !a.starts_with("--"))
        .map_or(20, |a| a.parse().expect(usage));
    let subgoal = args.iter().any(|a| a == "--subgoal");
    let rounds: usize = std::env::var("ROUNDS").map_or(7, |r| r.parse().expect("ROUNDS"));
    let text = std::fs::read_to_string(path).expect("a readable map");
    let mut grid = pathd_engine::movingai::parse_map(&text).expect("a Moving AI map");
    let cells = grid.width() as f64 * grid.height() as f64;
    println!(
        "map {path}: {}x{}, {} open cells",
        grid.width(),
        grid.height(),
        grid.passable_cells()
    );

    let t = Instant::now();
    let mut table = JumpTable::build(&grid).expect("a uniform octile map");
    println!("jump table build {:.1} ms", ms(t));
    let k = Landmarks::affordable(&grid, DEFAULT_LANDMARK_MEMORY);
    let t = Instant::now();
    let mut landmarks = Landmarks::build(&grid, k);
    println!("landmarks build ({k}) {:.1} ms", ms(t));
    let lm_bytes = landmarks.as_ref().map_or(0, |l| l.memory_bytes());
    let mut memory = format!(
        "bytes/cell: jps+ table {:.2}, landmarks {:.2}, jps+ total {:.2}",
        table.memory_bytes() as f64 / cells,
        lm_bytes as f64 / cells,
        (table.memory_bytes() + lm_bytes) as f64 / cells,
    );
    if subgoal {
        let t = Instant::now();
        let sg = SubgoalGraph::build(&grid).expect("a uniform octile map");
        let took = ms(t);
        memory += &format!(
            ", subgoal graph {:.2} (build {took:.0} ms)",
            sg.memory_bytes() as f64 / cells
        );
    }
    println!("{memory}");

    // Seeded queries between open cells of the largest component.
    let component = |p: Point| grid.component(p);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut random = |m: u32| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % u64::from(m)) as u32
    };
    let open: Vec<Point> = (0..4000)
        .map(|_| Point::new(random(grid.width()), random(grid.height())))
        .filter(|&p| grid.is_passable(p))
        .collect();
    let big = landmarks
        .as_ref()
        .and_then(|l| component(l.points()[0]))
        .or_else(|| open.first().and_then(|&p| component(p)));
    let open: Vec<Point> = open.into_iter().filter(|&p| component(p) == big).collect();
    let queries: Vec<(Point, Point)> = open
        .chunks(2)
        .filter(|c| c.len() == 2 && c[0].x.abs_diff(c[1].x) + c[0].y.abs_diff(c[1].y) > 300)
        .map(|c| (c[0], c[1]))
        .take(n)
        .collect();
    assert!(!queries.is_empty(), "no far-apart open pairs");
    let mut searcher = Searcher::new();
    let (t1, costs) = pass(&mut searcher, &grid, &table, landmarks.as_ref(), &queries);
    let (t2, _) = pass(&mut searcher, &grid, &table, landmarks.as_ref(), &queries);
    let (t3, _) = pass(&mut searcher, &grid, &table, None, &queries);
    check(&grid, &queries, &costs);
    println!(
        "{} queries (JPS+, ms a pass): 1st {t1:.2}, 2nd {t2:.2}, without landmarks {t3:.2}",
        queries.len()
    );

    let kinds = ["1-cell wall", "1-cell opening", "3x3 wall", "3x3 opening"];
    // times[kind][column]: table update, landmark update, 1st pass, 2nd pass, no-lm pass.
    let mut times = vec![vec![Vec::new(); 5]; kinds.len()];
    let mut how = ["-"; 4];
    let mut done = Vec::new();
    for round in 0..rounds {
        // The patch site: the middle of a query's optimal path (JPS+'s, a query like the
        // others: an A* here would leave the caches cold for the next pass).
        let (s, g) = queries[round % queries.len()];
        let derived = Derived {
            jump_table: Some(&table),
            landmarks: landmarks.as_ref(),
            ..Derived::default()
        };
        let q = Query::new(s, g).with_algorithm(Algorithm::JpsPlus);
        let path = searcher.find_path_derived(&grid, derived, &q).unwrap().path;
        let mid = path[path.len() / 2];
        let rect = |cost| Patch {
            cells: vec![],
            rects: vec![Rect {
                x: mid.x.saturating_sub(1),
                y: mid.y.saturating_sub(1),
                width: 3,
                height: 3,
                cost,
            }],
        };
        let cell = |cost| Patch {
            cells: vec![(mid, cost)],
            rects: vec![],
        };
        let patches = [cell(0), cell(1), rect(0), rect(1)];
        for (kind, patch) in patches.iter().enumerate() {
            let Some((next, changed)) = grid.apply_patch(patch).unwrap() else {
                continue;
            };
            // The write path: the table, and landmarks carried over blocks.
            let t = Instant::now();
            let next_table = table.update(&next, &changed);
            times[kind][0].push(ms(t));
            // The landmark lane, for anything else.
            let next_landmarks = match &landmarks {
                Some(l) if l.carry_over(&next, &changed) => {
                    how[kind] = "carried";
                    times[kind][1].push(0.0);
                    Some(l.clone())
                }
                Some(l) => {
                    let t = Instant::now();
                    // The server's `WRITE_PATH_WORK`.
                    let u = match l.update_within(&next, &changed, 1 << 15) {
                        Some(u) => {
                            how[kind] = "write";
                            Some(u)
                        }
                        None => {
                            how[kind] = "lane";
                            l.update(&next, &changed)
                        }
                    };
                    times[kind][1].push(ms(t));
                    u
                }
                None => None,
            };
            // The new version is served; the old one goes once its last query is done (its
            // flat cost array then passes to the new one instead of being copied).
            grid = next;
            let next = &grid;
            let (t1, costs) = pass(
                &mut searcher,
                next,
                &next_table,
                next_landmarks.as_ref(),
                &queries,
            );
            let (t2, _) = pass(
                &mut searcher,
                next,
                &next_table,
                next_landmarks.as_ref(),
                &queries,
            );
            // What the server answers with while the landmark lane updates them (openings).
            let (t3, _) = pass(&mut searcher, next, &next_table, None, &queries);
            times[kind][2].push(t1);
            times[kind][3].push(t2);
            times[kind][4].push(t3);
            // Checked against A* at the end (an A* here would leave the caches cold).
            done.push((patch.clone(), costs));
            table = next_table;
            landmarks = next_landmarks;
        }
    }
    // The median, and the fastest round (the figure least touched by the machine's other
    // work: on a shared machine a pass can come out 10x slow).
    let stats: [(&str, Stat); 2] = [
        ("median", median),
        ("fastest", |v| {
            v.iter().copied().fold(f64::INFINITY, f64::min)
        }),
    ];
    for (name, stat) in stats {
        println!("{name} of {rounds} rounds (each: the 4 patches on one query's path), ms:");
        println!(
            "{:<15} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9}",
            "patch", "table upd", "lm upd", "lm", "1st pass", "2nd pass", "1st/2nd", "no-lm"
        );
        for (kind, t) in times.iter_mut().enumerate() {
            if t[0].is_empty() {
                continue;
            }
            let m: Vec<f64> = t.iter_mut().map(|c| stat(c)).collect();
            println!(
                "{:<15} {:>9.3} {:>9.3} {:>8} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
                kinds[kind],
                m[0],
                m[1],
                how[kind],
                m[2],
                m[3],
                m[2] / m[3],
                m[4]
            );
        }
    }
    // The answers of every version against A*'s, replaying the patches.
    let mut replay = pathd_engine::movingai::parse_map(&text).expect("a Moving AI map");
    for (patch, costs) in &done {
        replay = replay
            .apply_patch(patch)
            .unwrap()
            .expect("the same change")
            .0;
        check(&replay, &queries, costs);
    }
    println!(
        "{} patched versions: every JPS+ answer optimal (A*'s cost)",
        done.len()
    );
    let lm_bytes = landmarks.as_ref().map_or(0, |l| l.memory_bytes());
    println!(
        "after the patches, bytes/cell: jps+ table {:.2}, landmarks {:.2}",
        table.memory_bytes() as f64 / cells,
        lm_bytes as f64 / cells,
    );
}

/// One summary of a column's rounds (it may reorder them).
type Stat = fn(&mut [f64]) -> f64;
