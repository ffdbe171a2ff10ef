//! The algorithms. Each file is one algorithm over the shared core in [`crate::search`].

pub(crate) mod astar;
pub(crate) mod canonical;
pub(crate) mod dstar_lite;
pub(crate) mod flood;
pub(crate) mod flowfield;
pub(crate) mod goal_tree;
pub mod hpa;
pub(crate) mod jps;
pub(crate) mod jps_plus;
pub(crate) mod los;
pub(crate) mod lpa;
pub(crate) mod matrix;
pub(crate) mod reach;
pub(crate) mod sized;
pub(crate) mod smooth;
pub(crate) mod subgoal;
pub(crate) mod targets;
pub(crate) mod theta;
