//! The algorithms. Each file is one algorithm over the shared core in [`crate::search`].

pub(crate) mod astar;
pub mod hpa;
