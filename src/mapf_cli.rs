//! `pathd mapf MAP SCEN -N n --time-limit-ms T`: plans the first `n` agents of a Moving AI
//! MAPF scenario (`*-random-N.scen`) and prints the same JSON as `POST
//! /v1/maps/{name}/plans` answers, so it can run beside LaCAM3 on the benchmark files.
//!
//! The MAPF benchmark is 4-connected although its map files say `type octile`, so the
//! movement defaults to `cardinal` here (`--movement octile` for the octile rules).
//! `--plan-out FILE` writes the plan in the result format LaCAM3 writes and its
//! independent checker `validate` reads (`key=value` lines, then `solution=` and one line
//! `t:(x,y),...` per time step).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use lexopt::Arg::{Long, Short, Value};
use lexopt::{Parser, ValueExt};
use pathd_engine::mapf::{MapfPlan, MapfStatus, Objective};
use pathd_engine::{Movement, movingai};

use crate::plans::{PlanJob, PlanResponse};

/// Arguments of `pathd mapf`.
#[derive(Clone, Debug)]
pub struct MapfArgs {
    /// The Moving AI `.map` file.
    pub map: PathBuf,
    /// The scenario file; its first `agents` rows are the agents.
    pub scen: PathBuf,
    /// How many agents (`-N`).
    pub agents: usize,
    /// Time budget.
    pub time_limit: Duration,
    /// What to minimise.
    pub objective: Objective,
    /// Stop at the first plan.
    pub first_solution: bool,
    /// Tie-breaking seed.
    pub seed: u64,
    /// Move rule (default `cardinal`, the MAPF benchmark's).
    pub movement: Movement,
    /// Where to write the plan for LaCAM3's `validate`.
    pub plan_out: Option<PathBuf>,
    /// Leave `paths` empty in the JSON.
    pub no_paths: bool,
}

/// The help text.
pub const HELP: &str = "\
Plan the first N agents of a Moving AI MAPF scenario (collision-free, anytime) and print
the answer as JSON (the fields of POST /v1/maps/{name}/plans).

Usage: pathd mapf [OPTIONS] -N <N> MAP SCEN

Arguments:
  MAP   The Moving AI `.map` file.
  SCEN  A MAPF scenario (`<map>-random-K.scen`); its first N rows are the agents.

Options:
  -N, --agents <N>          Agents: the scenario's first N rows
      --time-limit-ms <T>   Time budget in ms; the plan improves until then [default: 10000]
      --objective <NAME>    sum_of_costs or makespan [default: sum_of_costs]
      --first-solution      Stop at the first plan
      --seed <S>            Tie-breaking seed [default: 0]
      --movement <M>        cardinal (the MAPF benchmark's) or octile [default: cardinal]
      --plan-out <FILE>     Write the plan in LaCAM3's result format (for its `validate`)
      --no-paths            Leave `paths` empty in the JSON
  -h, --help                Print help
";

/// Parses `pathd mapf`'s arguments; `Ok(None)` for `--help`.
pub fn parse(p: &mut Parser) -> Result<Option<MapfArgs>, String> {
    let e = |e: lexopt::Error| e.to_string();
    let mut files = Vec::new();
    let mut args = MapfArgs {
        map: PathBuf::new(),
        scen: PathBuf::new(),
        agents: 0,
        time_limit: Duration::from_secs(10),
        objective: Objective::SumOfCosts,
        first_solution: false,
        seed: 0,
        movement: Movement::Cardinal,
        plan_out: None,
        no_paths: false,
    };
    while let Some(arg) = p.next().map_err(e)? {
        match arg {
            Short('h') | Long("help") => return Ok(None),
            Short('N') | Long("agents") => {
                args.agents = p.value().map_err(e)?.parse().map_err(e)?
            }
            Long("time-limit-ms") => {
                args.time_limit = Duration::from_millis(p.value().map_err(e)?.parse().map_err(e)?)
            }
            Long("objective") => {
                let name = p.value().map_err(e)?.string().map_err(e)?;
                args.objective =
                    Objective::parse(&name).ok_or(format!("unknown objective {name:?}"))?;
            }
            Long("first-solution") => args.first_solution = true,
            Long("seed") => args.seed = p.value().map_err(e)?.parse().map_err(e)?,
            Long("movement") => {
                let name = p.value().map_err(e)?.string().map_err(e)?;
                args.movement =
                    Movement::parse(&name).ok_or(format!("unknown movement {name:?}"))?;
            }
            Long("plan-out") => args.plan_out = Some(PathBuf::from(p.value().map_err(e)?)),
            Long("no-paths") => args.no_paths = true,
            Value(v) if files.len() < 2 => files.push(PathBuf::from(v)),
            other => return Err(other.unexpected().to_string()),
        }
    }
    let [map, scen] = <[PathBuf; 2]>::try_from(files)
        .map_err(|_| "pathd mapf needs MAP and SCEN (see `pathd mapf --help`)".to_owned())?;
    if args.agents == 0 {
        return Err("pathd mapf needs -N (agents, at least 1)".into());
    }
    args.map = map;
    args.scen = scen;
    Ok(Some(args))
}

/// Reads the files, solves, writes the plan file if asked; the answer to print.
pub fn run(args: &MapfArgs) -> Result<PlanResponse, String> {
    let read =
        |p: &PathBuf| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let grid = movingai::parse_map(&read(&args.map)?)
        .map_err(|e| format!("{}: {e}", args.map.display()))?;
    let rows = movingai::parse_scen(&read(&args.scen)?)
        .map_err(|e| format!("{}: {e}", args.scen.display()))?;
    if rows.len() < args.agents {
        return Err(format!(
            "{} has {} rows, fewer than -N {}",
            args.scen.display(),
            rows.len(),
            args.agents
        ));
    }
    let rows = &rows[..args.agents];
    let job = PlanJob {
        starts: rows.iter().map(|r| r.start).collect(),
        goals: rows.iter().map(|r| r.goal).collect(),
        objective: args.objective,
        time_limit: args.time_limit,
        first_solution: args.first_solution,
        seed: args.seed,
        movement: args.movement,
    };
    let plan = job.run(&grid, None).map_err(|e| e.to_string())?;
    if let Some(out) = &args.plan_out {
        std::fs::write(out, plan_file(&plan)).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    let mut resp = PlanResponse::new(&plan, args.objective, 0);
    if args.no_paths {
        resp.paths.clear();
    }
    Ok(resp)
}

/// The plan in LaCAM3's result format (what its `validate` reads).
pub fn plan_file(plan: &MapfPlan) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut s = format!(
        "agents={}\nsolved={}\nsoc={}\nsoc_lb={}\nmakespan={}\ncomp_time={:.0}\ncomp_time_initial_solution={:.0}\nsolution=\n",
        plan.paths.len(),
        u8::from(plan.status == MapfStatus::Solved),
        plan.sum_of_costs,
        plan.lower_bound,
        plan.makespan,
        ms(plan.stats.elapsed),
        plan.stats.first_solution.map_or(-1.0, ms),
    );
    for t in 0..=plan.makespan as usize {
        let _ = write!(s, "{t}:");
        for p in &plan.paths {
            let c = p[t.min(p.len() - 1)];
            let _ = write!(s, "({},{}),", c.x, c.y);
        }
        s.push('\n');
    }
    s
}
