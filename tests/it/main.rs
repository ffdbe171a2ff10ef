//! Every server integration test, as one test binary (one link instead of one per file);
//! each module is one area, sharing the support code in `common`.

mod common;

mod auth;
mod cli;
mod compression;
mod config;
mod contract;
mod damage;
mod derived;
mod durability;
mod expiry;
mod flowfields;
mod games;
mod hardening;
mod holes;
mod hpa;
#[cfg(feature = "http2")]
mod http2;
mod jps_plus;
mod layout;
#[cfg(feature = "nats")]
mod lb;
mod live;
mod live_durability;
mod maps;
mod movingai;
#[cfg(feature = "nats")]
mod nats_node_loss;
#[cfg(feature = "nats")]
mod nats_security;
#[cfg(not(feature = "http2"))]
mod no_http2;
#[cfg(not(feature = "nats"))]
mod no_nats;
mod oneshot;
mod openapi;
mod ops;
mod paths;
#[cfg(feature = "nats")]
mod placement;
mod plans;
mod plans_live;
mod pool;
mod profiles;
#[cfg(feature = "nats")]
mod replicas;
mod same_answer;
mod shutdown;
mod sizes;
mod tables;
mod ui;
mod wire;
mod write_queue;
mod write_safety;
