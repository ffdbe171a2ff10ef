//! pathd-engine: grid maps and the searches pathd runs on them.
//!
//! This crate knows nothing of HTTP or async: it is plain functions over immutable
//! [`Grid`] snapshots, so a server can share one snapshot between many threads and swap in
//! the next version when a patch lands.
//!
//! # Overview
//!
//! - [`Grid`]: `width x height` cells, cost `0` blocked or `1..=255`; a step between adjacent
//!   cells costs `step * (cost(a) + cost(b)) / 2` (`step` 1 or sqrt 2). [`Movement`] is
//!   octile without corner cutting (the Moving AI rule) or cardinal.
//! - [`movingai`]: the Moving AI `.map` and `.scen` formats.
//! - [`Searcher`] / [`find_path`]: one entry point for every algorithm, one [`SearchResult`]
//!   (found, partial, no path, limit reached) with [`Stats`].
//! - Lessons: [`Query::heuristic`] ([`HeuristicKind`]) and [`Query::tie_break`]
//!   ([`TieBreak`]) make A*, Dijkstra and weighted A* show what a mismatched heuristic or
//!   tie-breaking does; a choice that gives up optimality clears
//!   [`SearchResult::keeps_guarantee`]. The default search never goes through them.
//! - [`targets`]: the questions games ask, each one search: the nearest of many goals, a
//!   cell within range (and sight) of a goal, a cell far enough from a threat
//!   ([`Searcher::find_target`]); snapping a blocked or unreachable end to the nearest usable
//!   cell ([`targets::snap_ends`]).
//! - [`clock`]: `wasm32-unknown-unknown` has no clock; the engine builds and runs there
//!   (the `wasm/` crate) with a stopped one.
//!
//! | algorithm | optimal | maps | notes |
//! |---|---|---|---|
//! | [`Algorithm::AStar`] | yes | all | octile/Manhattan heuristic scaled by the smallest cost |
//! | [`Algorithm::Dijkstra`] | yes | all | h = 0 |
//! | [`Algorithm::WeightedAStar`] | within `w` | all | `f = g + w h` |
//! | [`Algorithm::Jps`] | yes | uniform (every cell costs 1), octile or cardinal | Jump Point Search without corner cutting, 64-cell block scans, diagonal jump points pruned (JPS2); full cell path plus jump points in `waypoints`; `NotApplicable` on weighted maps |
//! | [`Algorithm::JpsPlus`] | yes | uniform octile with a [`JumpTable`] | JPS+ over precomputed jump distances, the same answers as JPS; [`JumpTable::update`] keeps a table current under patches; with [`Landmarks`] (differential heuristics) it expands several times fewer nodes; see [`Searcher::find_path_derived`] |
//! | [`Algorithm::Subgoal`] | yes | uniform octile with a [`SubgoalGraph`] | subgoal graph (cells outside convex obstacle corners, joined where directly h-reachable) under a contraction hierarchy: connect start and goal, search upward from both, refine to cells; several times faster than JPS+ on maps full of small obstacles and on mazes, slower on open ones; `auto` takes it where [`SubgoalGraph::pays_off`]; [`SubgoalGraph::update`] rescans locally and contracts anew; see [`Searcher::find_path_derived`] |
//! | [`Algorithm::Theta`] | any-angle, never above the octile optimum | octile | Theta*: `waypoints` are the any-angle corners, `smoothed_length` their cost, `path` the cells they cross; `NotApplicable` on cardinal maps |
//! | [`Algorithm::Auto`] | yes | all | JPS (JPS+ when a jump table is given) on uniform maps, A* on weighted ones ([`resolve_auto`]) |
//! | [`DStarLite`] | yes | all | incremental: repairs one start-goal path after patches and moves |
//! | [`Algorithm::Hpa`] | near (0.3% over on average) | all; pays from 512x512 | [`Abstraction`] per map version, [`Abstraction::update`] on patches; see [`hpa`] |
//!
//! # Line of sight and smoothing
//!
//! Theta* and [`Query::smooth`] (string pulling, on any algorithm) share one line-of-sight
//! rule: a segment between cell centres may not touch the interior of a blocked cell, and
//! where it passes exactly through a grid corner all four cells there must be open (the
//! no-corner-cutting rule, so it never squeezes between diagonal walls). On cardinal maps only
//! axis-parallel segments count. A segment costs each crossed cell's cost times the length
//! inside it (its Euclidean length when cells cost 1); a unit step costs exactly its grid step
//! cost. A smoothed path is never dearer than the path it smooths, and its reported
//! `smoothed_length` is the true cost of its segments.
//!
//! # Example
//!
//! ```
//! use pathd_engine::{movingai, find_path, Point, Query, Status};
//! let grid = movingai::parse_map("type octile\nheight 2\nwidth 3\nmap\n...\n.@.\n").unwrap();
//! let r = find_path(&grid, &Query::new(Point::new(0, 1), Point::new(2, 1))).unwrap();
//! assert_eq!(r.status, Status::Found);
//! // (0,1) -> (1,0) would cut the wall's corner, so the path goes round: 4 steps.
//! assert_eq!(r.path.len(), 5);
//! assert_eq!(r.cost, 4.0);
//! ```

mod algo;
pub mod clearance;
pub mod clock;
mod components;
mod eroded;
pub mod grid;
mod landmarks;
pub mod mapf;
pub mod movingai;
pub mod patch;
mod planner;
pub mod profiles;
pub mod query;
mod search;
pub mod targets;
mod tiles;
pub mod trace;

pub use algo::dstar_lite::{Change, DStarLite, Interest, RepairOutcome};
pub use algo::flowfield::{
    AT_GOAL, FlowError, FlowField, FlowSpec, FlowStats, MAX_AGENT_SIZE, Region, UNREACHABLE,
};
pub use algo::goal_tree::{Agent, GoalTree, REPAIRED_KEEP};
pub use algo::hpa::{self, Abstraction, HpaConfig, HpaSummary, Refine, UpdateReport};
pub use algo::jps_plus::JumpTable;
pub use algo::subgoal::SubgoalGraph;
pub use clearance::Clearance;
pub use eroded::Eroded;
pub use grid::{Grid, GridError, MAX_DIM, Movement, Point};
pub use landmarks::{DEFAULT_LANDMARK_MEMORY, Landmarks, MAX_LANDMARKS};
pub use patch::{Patch, PatchError, Rect};
pub use planner::{
    Derived, Searcher, SizedDerived, find_path, find_path_derived, find_path_with, resolve_auto,
};
pub use profiles::{CostTable, ProfileError, Profiles};
pub use query::{
    Algorithm, HeuristicKind, LimitKind, Limits, Query, QueryError, SearchResult, Stats, Status,
    TieBreak,
};
