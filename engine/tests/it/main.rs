//! Every engine integration test, as one test binary (one link instead of one per file);
//! each module is one area, sharing the support code in `common`.

mod common;

mod dstar_lite;
mod eroded;
mod expansions;
mod flowfield;
mod goal_tree;
mod hpa;
mod jps_plus;
mod jps_theta;
mod lessons;
mod mapf;
mod mapf_checker;
mod movingai;
mod oracle;
mod parser;
mod patch;
mod scenarios;
mod subgoal;
mod targets;
mod trace;
