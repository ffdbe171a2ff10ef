mod common;
use common::*;
use pathd_engine::*;
use std::time::{Duration, Instant};

fn cpu() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}
fn best_of(n: usize, mut f: impl FnMut()) -> Duration {
    (0..n)
        .map(|_| {
            let t = cpu();
            f();
            Duration::from_nanos(cpu() - t)
        })
        .min()
        .unwrap()
}

#[test]
#[ignore]
fn probe() {
    let maps: Vec<String> = std::env::var("MAPS")
        .unwrap_or("Berlin_1_1024".into())
        .split(',')
        .map(String::from)
        .collect();
    let sizes: Vec<u32> = std::env::var("SIZES")
        .unwrap_or("16".into())
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    let spacing: u32 = std::env::var("SPACING")
        .unwrap_or("0".into())
        .parse()
        .unwrap();
    let reps: usize = std::env::var("REPS").unwrap_or("5".into()).parse().unwrap();
    for m in &maps {
        let grid = load_map(&format!("{m}.map"));
        let rows: Vec<_> = load_scen(&format!("{m}.map.scen"))
            .into_iter()
            .filter(|r| !r.unreachable())
            .collect();
        let long: Vec<_> = rows.iter().rev().step_by(7).take(30).cloned().collect();
        let mixed = sample(&rows, 60);
        let astar = if std::env::var_os("SKIP_ASTAR").is_none() {
            best_of(reps.min(2), || {
                for r in &long {
                    std::hint::black_box(find_path(&grid, &Query::new(r.start, r.goal)).unwrap());
                }
            }) / long.len() as u32
        } else {
            Duration::from_secs(1)
        };
        println!("{m}: A* long {:?}/query", astar);
        for &cs in &sizes {
            let cfg = HpaConfig {
                cluster_size: cs,
                entrance_spacing: spacing,
                ..HpaConfig::default()
            };
            let t = Instant::now();
            let hpa = Abstraction::build_with(&grid, cfg);
            let bt = t.elapsed();
            let el = best_of(reps, || {
                for r in &long {
                    std::hint::black_box(
                        hpa.find_path(&grid, &Query::new(r.start, r.goal)).unwrap(),
                    );
                }
            }) / long.len() as u32;
            let mut ex = vec![];
            let mut exp = 0;
            for r in &long {
                let a = hpa.find_path(&grid, &Query::new(r.start, r.goal)).unwrap();
                exp += a.stats.expanded;
                ex.push(a.cost / r.optimal - 1.0);
            }
            let mut mx = vec![];
            for r in &mixed {
                let a = hpa.find_path(&grid, &Query::new(r.start, r.goal)).unwrap();
                if r.optimal > 0.0 {
                    mx.push(a.cost / r.optimal - 1.0);
                }
            }
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64 * 100.0;
            println!(
                "  cs {cs:3} sp {spacing}: build {:?} nodes {} mem {:.1}MiB | long {:?}/q ({:.1}x) exp {} excess {:.3}% | mixed excess {:.3}% max {:.2}%",
                bt,
                hpa.summary().nodes,
                hpa.memory_bytes() as f64 / 1048576.0,
                el,
                astar.as_secs_f64() / el.as_secs_f64(),
                exp / long.len() as u64,
                mean(&ex),
                mean(&mx),
                mx.iter().cloned().fold(0.0, f64::max) * 100.0
            );
        }
    }
}

#[test]
#[ignore]
fn weighted_worst() {
    use rand::{Rng, SeedableRng, rngs::StdRng};
    let mut rng = StdRng::seed_from_u64(1);
    let mut all = vec![];
    let mut worst = (0.0, String::new());
    for case in 0..200 {
        let w = rng.random_range(24..=48);
        let h = rng.random_range(24..=48);
        let weighted = std::env::var_os("UNIFORM").is_none();
        let grid = random_grid(&mut rng, w, h, 0.2, weighted, Movement::Octile);
        let hpa = Abstraction::build(&grid, 8);
        for _ in 0..5 {
            let (Some(s), Some(g)) = (
                random_passable(&mut rng, &grid),
                random_passable(&mut rng, &grid),
            ) else {
                continue;
            };
            let r = hpa.find_path(&grid, &Query::new(s, g)).unwrap();
            if r.status != Status::Found {
                continue;
            }
            let a = find_path(&grid, &Query::new(s, g)).unwrap();
            if a.cost == 0.0 {
                continue;
            }
            let ex = r.cost / a.cost - 1.0;
            all.push(ex);
            if ex > worst.0 {
                worst = (
                    ex,
                    format!(
                        "case {case} ex {ex} hpa {} astar {}\nHPA\n{}\nA*\n{}",
                        r.cost,
                        a.cost,
                        show(&grid, s, g, &r.path),
                        show(&grid, s, g, &a.path)
                    ),
                );
            }
        }
    }
    all.sort_by(f64::total_cmp);
    println!(
        "mean {} median {} p90 {}",
        all.iter().sum::<f64>() / all.len() as f64,
        all[all.len() / 2],
        all[all.len() * 9 / 10]
    );
    if std::env::var_os("SHOW").is_some() {
        println!("{}", worst.1);
    }
}

#[test]
#[ignore]
fn worst_rows() {
    let m = std::env::var("MAP").unwrap_or("brc999d".into());
    let cs: u32 = std::env::var("CS").unwrap_or("16".into()).parse().unwrap();
    let grid = load_map(&format!("{m}.map"));
    let rows: Vec<_> = load_scen(&format!("{m}.map.scen"))
        .into_iter()
        .filter(|r| !r.unreachable())
        .collect();
    let hpa = Abstraction::build(&grid, cs);
    let mut v: Vec<(f64, usize)> = vec![];
    for (i, r) in sample(&rows, 60).iter().enumerate() {
        let a = hpa.find_path(&grid, &Query::new(r.start, r.goal)).unwrap();
        v.push((a.cost / r.optimal - 1.0, i));
    }
    v.sort_by(|a, b| b.0.total_cmp(&a.0));
    let s = sample(&rows, 60);
    for &(ex, i) in v.iter().take(5) {
        let r = &s[i];
        println!(
            "{:.3}% {} -> {} opt {} h {}",
            ex * 100.0,
            r.start,
            r.goal,
            r.optimal,
            grid.heuristic(r.start, r.goal)
        );
    }
    if std::env::var_os("SHOW").is_some() {
        let r = &s[v[0].1];
        let a = hpa.find_path(&grid, &Query::new(r.start, r.goal)).unwrap();
        let b = find_path(&grid, &Query::new(r.start, r.goal)).unwrap();
        let (x0, y0) = (
            r.start.x.min(r.goal.x).saturating_sub(20),
            r.start.y.min(r.goal.y).saturating_sub(20),
        );
        let (x1, y1) = (
            (r.start.x.max(r.goal.x) + 20).min(grid.width() - 1),
            (r.start.y.max(r.goal.y) + 20).min(grid.height() - 1),
        );
        for y in y0..=y1 {
            let mut line = String::new();
            for x in x0..=x1 {
                let p = Point::new(x, y);
                line.push(if p == r.start {
                    'S'
                } else if p == r.goal {
                    'G'
                } else if a.path.contains(&p) && b.path.contains(&p) {
                    '#'
                } else if a.path.contains(&p) {
                    'h'
                } else if b.path.contains(&p) {
                    'a'
                } else if !grid.is_passable(p) {
                    '@'
                } else if x % cs == 0 || y % cs == 0 {
                    ','
                } else {
                    '.'
                });
            }
            println!("{line}");
        }
    }
}

#[test]
#[ignore]
fn build_only() {
    let m = std::env::var("MAP").unwrap_or("Berlin_1_1024".into());
    let cs: u32 = std::env::var("CS").unwrap_or("32".into()).parse().unwrap();
    let grid = load_map(&format!("{m}.map"));
    let t = best_of(3, || {
        std::hint::black_box(Abstraction::build(&grid, cs));
    });
    let a = Abstraction::build(&grid, cs);
    println!(
        "build {m} cs {cs}: {:?} cpu, nodes {}, edges {}",
        t,
        a.summary().nodes,
        a.summary().edges
    );
}

#[test]
#[ignore]
fn short_queries() {
    let m = std::env::var("MAP").unwrap_or("Berlin_1_1024".into());
    let cs: u32 = std::env::var("CS").unwrap_or("32".into()).parse().unwrap();
    let lo: f64 = std::env::var("LO").unwrap_or("0".into()).parse().unwrap();
    let hi: f64 = std::env::var("HI").unwrap_or("64".into()).parse().unwrap();
    let grid = load_map(&format!("{m}.map"));
    let rows: Vec<_> = load_scen(&format!("{m}.map.scen"))
        .into_iter()
        .filter(|r| {
            !r.unreachable() && {
                let d = grid.heuristic(r.start, r.goal);
                d >= lo && d < hi
            }
        })
        .collect();
    let rows = sample(&rows, 12);
    let hpa = Abstraction::build(&grid, cs);
    let reps: usize = std::env::var("REPS")
        .unwrap_or("50".into())
        .parse()
        .unwrap();
    let t = best_of(reps, || {
        for r in &rows {
            std::hint::black_box(hpa.find_path(&grid, &Query::new(r.start, r.goal)).unwrap());
        }
    });
    let ta = best_of(reps, || {
        for r in &rows {
            std::hint::black_box(find_path(&grid, &Query::new(r.start, r.goal)).unwrap());
        }
    });
    let exp: u64 = rows
        .iter()
        .map(|r| {
            hpa.find_path(&grid, &Query::new(r.start, r.goal))
                .unwrap()
                .stats
                .expanded
        })
        .sum();
    let expa: u64 = rows
        .iter()
        .map(|r| {
            find_path(&grid, &Query::new(r.start, r.goal))
                .unwrap()
                .stats
                .expanded
        })
        .sum();
    println!(
        "{} rows: hpa {:?}/q exp {}, astar {:?}/q exp {}",
        rows.len(),
        t / rows.len() as u32,
        exp / rows.len() as u64,
        ta / rows.len() as u32,
        expa / rows.len() as u64
    );
}
