//! Everything derived from a map version: one model, one builder pool.
//!
//! A map version ([`crate::derived::MapEntry`]) is immutable; what is computed from it lives
//! beside it in *slots* ([`Slot`]), one per structure: the HPA* abstraction ([`hpa`]), the
//! JPS+ jump table and its landmarks ([`jump`]), the subgoal graph ([`subgoal`]), and the
//! maps eroded for agent sizes with their abstractions ([`hpa::SizedViews`]). Every structure follows the same life:
//!
//! - **built** from scratch on a lane of the supervised builder pool ([`Builders`]) when a
//!   new or replaced map wants one (`building`, then `ready`);
//! - **derived** from the previous version's by a patch, in the patch's own job, where that
//!   is local (`made_by: update`), or **carried** over unchanged where the patch cannot
//!   affect it (`made_by: carried`: landmarks after walls only);
//! - **failed** when its build panics: the pool catches it, the slot keeps the message, the
//!   summary shows it, queries that need it answer `503 derivation_failed` and those that
//!   can fall back do; the next version builds it again;
//! - **evicted** when derived memory is over `--derived-memory-mb`
//!   ([`Budget`]): the least recently used structure of any map is dropped, queries fall
//!   back meanwhile, and it is rebuilt on demand.
//!
//! What a query may do while a structure is not ready is the structure's *fallback*, one
//! rule per kind applied by the query service ([`crate::query`]): JPS+ without landmarks
//! runs on the octile distance alone; `jps_plus` without a table and `hpa` without an
//! abstraction answer `503 abstraction_building` (or `derivation_failed`), `auto` runs
//! plain JPS or A*.

pub mod budget;
mod entry;
pub mod hpa;
pub mod jump;
pub mod pool;
mod registry;
pub mod slot;
pub mod subgoal;
pub mod summary;

pub use budget::Budget;
pub use entry::{DerivedNow, Found, MapEntry, MapSource};
pub use pool::Builders;
pub use registry::Registry;
pub use slot::{Slot, Status};

/// The HPA* settings, as configured (`--hpa-min-cells`, `--hpa-cluster-size`). Here rather
/// than in `config`, so the configuration imports nothing it configures.
impl hpa::HpaSettings {
    /// From the server's configuration.
    pub fn from_config(config: &crate::config::Config) -> Self {
        hpa::HpaSettings {
            min_cells: config.hpa_min_cells,
            cluster_size: config.hpa_cluster_size,
        }
    }
}

/// The JPS+ settings, as configured (`--jps-plus-max-cells`, `--landmark-memory-mb`).
impl jump::JumpSettings {
    /// From the server's configuration.
    pub fn from_config(config: &crate::config::Config) -> Self {
        jump::JumpSettings {
            max_cells: config.jps_plus_max_cells,
            landmark_memory: config.landmark_memory_mb.saturating_mul(1 << 20),
        }
    }
}
