//! Every server integration test, as one test binary (one link instead of one per file);
//! each module is one area, sharing the support code in `common`.

mod common;

mod auth;
mod cli;
mod damage;
mod durability;
mod flowfields;
mod hardening;
mod holes;
mod hpa;
mod jps_plus;
mod live;
mod live_durability;
mod maps;
mod movingai;
mod oneshot;
mod openapi;
mod paths;
mod pool;
mod replicas;
mod shutdown;
mod sizes;
mod ui;
mod write_safety;
