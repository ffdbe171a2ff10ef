//! Why the query service did not answer a query.

use crate::maps::MapsError;

/// Why the query service did not answer a query. The edge maps it to HTTP
/// (`http/error/from.rs`), each variant to its status and stable code.
#[derive(Debug)]
pub enum QueryError {
    /// The request is not a valid query (`400 invalid_request`).
    Invalid(String),
    /// `goals` holds more points than a query may name (`400 too_many_goals`).
    TooManyGoals(String),
    /// The engine refused the query (out of bounds, blocked ends, a bad weight or size...).
    Engine(pathd_engine::QueryError),
    /// The map has no such profile (`404 profile_not_found`).
    ProfileNotFound(String),
    /// What the algorithm needs is being built in the background (`503
    /// abstraction_building`, retry shortly).
    Building(String),
    /// What the algorithm needs failed to build for this version (`503
    /// derivation_failed`).
    DerivationFailed(String),
    /// What the algorithm needs will never exist for this map (`400 not_applicable`).
    NotApplicable(String),
    /// The maps service did not give the map (missing, damaged, or this replica behind).
    Maps(MapsError),
    /// Something went wrong inside (`500 internal`; the detail is logged, not sent).
    Internal(String),
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueryError::Invalid(m)
            | QueryError::TooManyGoals(m)
            | QueryError::ProfileNotFound(m)
            | QueryError::Building(m)
            | QueryError::DerivationFailed(m)
            | QueryError::NotApplicable(m)
            | QueryError::Internal(m) => f.write_str(m),
            QueryError::Engine(e) => e.fmt(f),
            QueryError::Maps(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for QueryError {}

impl From<pathd_engine::QueryError> for QueryError {
    fn from(e: pathd_engine::QueryError) -> Self {
        QueryError::Engine(e)
    }
}

impl From<MapsError> for QueryError {
    fn from(e: MapsError) -> Self {
        QueryError::Maps(e)
    }
}
