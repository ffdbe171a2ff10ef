//! The plan checker: every rule of a MAPF plan, checked on the [`Grid`] itself (not on the
//! solver's move graph), so a bug in the solver's graph cannot hide from it.
//!
//! Rules: one path per agent, all of one length, from the agent's start; every cell on the
//! map and passable; every step a wait or one move (4 neighbours on `cardinal` maps; on
//! `octile` maps also diagonals whose two side cells are passable); no two agents on one
//! cell at one time step; no two agents swapping cells in one step; on `octile` maps no two
//! agents crossing the diagonals of one 2x2 square in one step. Following (moving into a
//! cell its agent leaves in the same step) and rotations are allowed. A solved plan ends
//! with every agent on its goal.

use std::collections::HashMap;
use std::fmt;

use crate::grid::{Grid, Movement, Point};

/// The costs of a valid plan, recomputed from its paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanCosts {
    /// Sum over agents of the time step from which each rests at its goal (its last cell)
    /// for good.
    pub sum_of_costs: u64,
    /// Time steps (path length minus one).
    pub makespan: u64,
}

/// The first rule a plan breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// Not one path per agent, or paths of different lengths, or an empty path.
    Shape(String),
    /// Agent `agent`'s path does not start at its start (`t == 0`) or end at its goal.
    Endpoint {
        /// Agent.
        agent: usize,
        /// Time step.
        t: usize,
    },
    /// A wall or off the map.
    Blocked {
        /// Agent.
        agent: usize,
        /// Time step.
        t: usize,
    },
    /// A step that is neither a wait nor a legal move (from `t` to `t + 1`).
    Jump {
        /// Agent.
        agent: usize,
        /// Time step.
        t: usize,
    },
    /// Two agents on one cell.
    Vertex {
        /// Agents.
        agents: (usize, usize),
        /// Time step.
        t: usize,
    },
    /// Two agents swap cells (from `t` to `t + 1`).
    Swap {
        /// Agents.
        agents: (usize, usize),
        /// Time step.
        t: usize,
    },
    /// Two agents cross diagonals (from `t` to `t + 1`).
    Crossing {
        /// Agents.
        agents: (usize, usize),
        /// Time step.
        t: usize,
    },
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for PlanError {}

/// Checks `paths` on `grid` under `movement` for agents `starts` -> `goals` (`goals: None`
/// for a partial plan, which may end anywhere) and recomputes its costs.
pub fn check_plan(
    grid: &Grid,
    movement: Movement,
    starts: &[Point],
    goals: Option<&[Point]>,
    paths: &[Vec<Point>],
) -> Result<PlanCosts, PlanError> {
    if paths.len() != starts.len() || goals.is_some_and(|g| g.len() != starts.len()) {
        return Err(PlanError::Shape(format!(
            "{} paths for {} agents",
            paths.len(),
            starts.len()
        )));
    }
    let len = paths.first().map_or(1, Vec::len);
    if paths.iter().any(|p| p.len() != len || p.is_empty()) {
        return Err(PlanError::Shape(
            "paths of different lengths (or empty)".into(),
        ));
    }
    let mut soc = 0;
    for (i, p) in paths.iter().enumerate() {
        if p[0] != starts[i] {
            return Err(PlanError::Endpoint { agent: i, t: 0 });
        }
        if goals.is_some_and(|g| p[len - 1] != g[i]) {
            return Err(PlanError::Endpoint {
                agent: i,
                t: len - 1,
            });
        }
        for (t, &c) in p.iter().enumerate() {
            if !grid.is_passable(c) {
                return Err(PlanError::Blocked { agent: i, t });
            }
        }
        for t in 0..len - 1 {
            if !legal_step(grid, movement, p[t], p[t + 1]) {
                return Err(PlanError::Jump { agent: i, t });
            }
        }
        let last = p[len - 1];
        soc += p
            .iter()
            .rposition(|&c| c != last)
            .map_or(0, |t| t as u64 + 1);
    }
    let mut at: HashMap<Point, usize> = HashMap::new();
    for t in 0..len {
        at.clear();
        for (i, p) in paths.iter().enumerate() {
            if let Some(j) = at.insert(p[t], i) {
                return Err(PlanError::Vertex { agents: (j, i), t });
            }
        }
        if t + 1 == len {
            break;
        }
        for (i, p) in paths.iter().enumerate() {
            let (a, b) = (p[t], p[t + 1]);
            if a == b {
                continue;
            }
            if let Some(&j) = at.get(&b)
                && j != i
                && paths[j][t + 1] == a
            {
                return Err(PlanError::Swap { agents: (i, j), t });
            }
            if a.x != b.x && a.y != b.y {
                let (c, d) = (Point::new(b.x, a.y), Point::new(a.x, b.y));
                for (from, to) in [(c, d), (d, c)] {
                    if let Some(&j) = at.get(&from)
                        && paths[j][t + 1] == to
                    {
                        return Err(PlanError::Crossing { agents: (i, j), t });
                    }
                }
            }
        }
    }
    Ok(PlanCosts {
        sum_of_costs: soc,
        makespan: len as u64 - 1,
    })
}

/// [`check_plan`] for a live plan re-planned after a patch ([`super::solve_live`],
/// [`super::repair()`]): an agent may stand on a walled cell at the start of its path (a patch
/// walled the cell it stood on) and stay there for a while, but once it leaves nobody
/// (itself included) is ever on that cell again.
pub fn check_live_plan(
    grid: &Grid,
    movement: Movement,
    starts: &[Point],
    goals: Option<&[Point]>,
    paths: &[Vec<Point>],
) -> Result<PlanCosts, PlanError> {
    let walled: Vec<(usize, Point)> = starts
        .iter()
        .enumerate()
        .filter(|&(_, &p)| grid.in_bounds(p) && !grid.is_passable(p))
        .map(|(i, &p)| (i, p))
        .collect();
    if walled.is_empty() {
        return check_plan(grid, movement, starts, goals, paths);
    }
    let mut costs = grid.costs();
    let w = grid.width() as usize;
    for &(_, p) in &walled {
        costs[p.y as usize * w + p.x as usize] = 1;
    }
    let opened = Grid::from_costs(grid.width(), grid.height(), costs, grid.movement())
        .expect("same dimensions");
    let out = check_plan(&opened, movement, starts, goals, paths)?;
    for &(i, p) in &walled {
        let stay = paths[i].iter().take_while(|&&c| c == p).count();
        for (j, path) in paths.iter().enumerate() {
            let from = if j == i { stay } else { 0 };
            if let Some(t) = path.iter().skip(from).position(|&c| c == p) {
                return Err(PlanError::Blocked {
                    agent: j,
                    t: from + t,
                });
            }
        }
    }
    Ok(out)
}

/// A wait, or one move under `movement` (diagonals without corner cutting).
fn legal_step(grid: &Grid, movement: Movement, a: Point, b: Point) -> bool {
    let (dx, dy) = (a.x.abs_diff(b.x), a.y.abs_diff(b.y));
    match (dx, dy) {
        (0, 0) | (0, 1) | (1, 0) => true,
        (1, 1) => {
            movement == Movement::Octile
                && grid.is_passable(Point::new(b.x, a.y))
                && grid.is_passable(Point::new(a.x, b.y))
        }
        _ => false,
    }
}
