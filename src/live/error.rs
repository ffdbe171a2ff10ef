//! Why the hub refused. The edge maps each to HTTP (`http/error.rs`).

use super::*;

pub(super) fn not_found(id: &str) -> LiveError {
    LiveError::NotFound(id.to_owned())
}

pub(super) fn too_many(message: String) -> LiveError {
    LiveError::TooMany(message)
}

/// Why the hub refused. The edge maps each to HTTP (`http/error.rs`).
#[derive(Debug)]
pub enum LiveError {
    /// No subscription with this id (`404 subscription_not_found`).
    NotFound(String),
    /// The map or the server is full, by count or by memory (`429 too_many_subscriptions`):
    /// the message says which.
    TooMany(String),
    /// The query is malformed for this map (`400`, as a search of its own answers).
    Query(QueryError),
    /// A broken invariant (`500 internal`, the detail logged).
    Internal(&'static str),
}

impl From<QueryError> for LiveError {
    fn from(e: QueryError) -> Self {
        LiveError::Query(e)
    }
}

impl std::fmt::Display for LiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LiveError::NotFound(id) => write!(f, "no subscription {id:?}"),
            LiveError::TooMany(m) => f.write_str(m),
            LiveError::Query(e) => e.fmt(f),
            LiveError::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for LiveError {}
