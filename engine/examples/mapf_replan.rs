//! Re-plan latency of a live plan after a blocking patch: N agents (first rows of a MAPF
//! scenario) planned to their first solution, advanced to time step T, then for each of the
//! K aisle cells that the most remaining paths cross (cells with walls left and right), the
//! cell is walled and the plan is re-planned from the positions at T, both ways the server
//! does it: the repair (only the agents whose remaining paths cross it, space-time A*
//! against the others' kept paths) and the full re-plan (LaCAM* to its first plan).
//!
//! ```sh
//! cargo run --release -p pathd-engine --example mapf_replan -- \
//!     tests/data/movingai/maps/warehouse-10-20-10-2-1.map \
//!     tests/data/movingai/scen/warehouse-10-20-10-2-1-random-1.scen 200 10 20
//! ```

use std::time::{Duration, Instant};

use pathd_engine::mapf::check::check_live_plan;
use pathd_engine::mapf::{self, MapfOptions};
use pathd_engine::{Grid, Movement, Point, movingai};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: &str| args.get(i).cloned().unwrap_or_else(|| d.to_owned());
    let map = arg(1, "tests/data/movingai/maps/warehouse-10-20-10-2-1.map");
    let scen = arg(
        2,
        "tests/data/movingai/scen/warehouse-10-20-10-2-1-random-1.scen",
    );
    let n: usize = arg(3, "200").parse().expect("N");
    let t: usize = arg(4, "10").parse().expect("T");
    let k: usize = arg(5, "20").parse().expect("K");
    let grid = movingai::parse_map(&std::fs::read_to_string(&map).expect("map")).expect("map");
    let rows = movingai::parse_scen(&std::fs::read_to_string(&scen).expect("scen")).expect("scen");
    let starts: Vec<Point> = rows[..n].iter().map(|r| r.start).collect();
    let goals: Vec<Point> = rows[..n].iter().map(|r| r.goal).collect();
    let mv = Movement::Cardinal;
    let opts = || {
        MapfOptions {
            first_solution: true,
            ..MapfOptions::new()
        }
        .with_time_limit(Duration::from_secs(10))
    };
    let started = Instant::now();
    let plan = mapf::solve(&grid, mv, &starts, &goals, &opts()).expect("instance");
    println!(
        "{n} agents: first plan {:?} in {:.1} ms, makespan {}",
        plan.status,
        started.elapsed().as_secs_f64() * 1e3,
        plan.makespan
    );
    let at = |p: &Vec<Point>, s: usize| p[s.min(p.len() - 1)];
    let pos: Vec<Point> = plan.paths.iter().map(|p| at(p, t)).collect();
    let rest: Vec<Vec<Point>> = plan
        .paths
        .iter()
        .map(|p| p[t.min(p.len() - 1)..].to_vec())
        .collect();
    let open =
        |x: i64, y: i64| x >= 0 && y >= 0 && grid.is_passable(Point::new(x as u32, y as u32));
    let mut cells: Vec<(usize, Point)> = Vec::new();
    for y in 0..grid.height() {
        for x in 0..grid.width() {
            let c = Point::new(x, y);
            let (xi, yi) = (x as i64, y as i64);
            if !grid.is_passable(c)
                || open(xi - 1, yi)
                || open(xi + 1, yi)
                || pos.contains(&c)
                || goals.contains(&c)
            {
                continue;
            }
            let crossing = rest.iter().filter(|p| p[1..].contains(&c)).count();
            if crossing > 0 {
                cells.push((crossing, c));
            }
        }
    }
    cells.sort_by_key(|&(m, c)| (std::cmp::Reverse(m), c.y, c.x));
    let (mut rep, mut full) = (Vec::new(), Vec::new());
    for &(m, c) in cells.iter().take(k) {
        let mut costs = grid.costs();
        costs[(c.y * grid.width() + c.x) as usize] = 0;
        let walled = Grid::from_costs(grid.width(), grid.height(), costs, mv).expect("grid");
        let hit: Vec<usize> = (0..n).filter(|&i| rest[i].contains(&c)).collect();
        let mut kept = rest.clone();
        for &a in &hit {
            kept[a] = vec![pos[a]];
        }
        let s = Instant::now();
        let r = mapf::repair(&walled, mv, &kept, &goals, &hit, &opts()).expect("instance");
        let r_ms = s.elapsed().as_secs_f64() * 1e3;
        if let Some(p) = &r {
            check_live_plan(&walled, mv, &pos, Some(&goals), &p.paths).expect("valid repair");
            rep.push(r_ms);
        }
        let s = Instant::now();
        let f = mapf::solve_live(&walled, mv, &pos, &goals, &opts()).expect("instance");
        let f_ms = s.elapsed().as_secs_f64() * 1e3;
        full.push(f_ms);
        println!(
            "wall {c} crossed by {m}: repair {} in {r_ms:.1} ms; full re-plan {:?} in {f_ms:.1} ms",
            if r.is_some() { "ok" } else { "failed" },
            f.status
        );
    }
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        if v.is_empty() {
            return "none".to_owned();
        }
        format!(
            "median {:.1} ms, max {:.1} ms over {}",
            v[v.len() / 2],
            v[v.len() - 1],
            v.len()
        )
    };
    println!("repair: {}", stats(&mut rep));
    println!("full re-plan: {}", stats(&mut full));
}
