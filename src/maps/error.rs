//! What the maps service can answer instead of a result. HTTP status codes are the routes'
//! business (`impl From<MapsError> for ApiError` in [`crate::http::error`]).

use std::fmt;

use crate::store::Damage;

/// Why a maps-service call did not do what it was asked.
#[derive(Debug)]
pub enum MapsError {
    /// No map of that name.
    NotFound(String),
    /// The name is not 1-64 characters of `[A-Za-z0-9_.-]` not starting with a dot.
    InvalidName,
    /// The map's durable data cannot be trusted; it is neither served nor written.
    Damaged(Damage),
    /// `if_version` did not match.
    VersionConflict {
        /// The map's version now.
        current: u64,
        /// The version the client expected.
        expected: u64,
    },
    /// The server holds its maximum number of maps.
    TooManyMaps(usize),
    /// A patch writes outside the map.
    PatchOutOfBounds(String),
    /// A patch's profile changes cannot be applied (a bad name, the default removed...).
    InvalidProfiles(String),
    /// The store refused or failed the write; nothing was acknowledged or changed.
    Store(String),
    /// Something that should not happen (a failed task); logged where it is mapped.
    Internal(String),
    /// Another replica wrote the map first (a lost compare-and-set); the maps service
    /// catches up and retries, so callers only see it if that keeps failing.
    Conflicted,
    /// The map already has this many writes admitted and not yet answered.
    Overloaded(usize),
    /// Shutdown began before startup recovery finished: the write was never admitted.
    ShuttingDown,
    /// This replica has not applied the version asked for (or the store's newest
    /// mutations of the map) in time.
    ReplicaBehind(String),
}

impl fmt::Display for MapsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapsError::NotFound(name) => write!(f, "no map named {name:?}"),
            MapsError::InvalidName => write!(
                f,
                "map names are 1-64 characters of [A-Za-z0-9_.-], not starting with a dot"
            ),
            // A replicated map's reason says how it is repaired (a whole map through any
            // replica); a local one is repaired offline.
            MapsError::Damaged(d) if d.reason.starts_with("replicated ") => write!(
                f,
                "map {:?} is damaged on this replica and is not served: {}",
                d.name, d.reason
            ),
            MapsError::Damaged(d) => write!(
                f,
                "map {:?} is damaged on disk and is not served: {}; see `pathd data check`",
                d.name, d.reason
            ),
            MapsError::VersionConflict { current, expected } => {
                write!(f, "the map is at version {current}, not {expected}")
            }
            MapsError::TooManyMaps(max) => {
                write!(f, "this server holds at most {max} maps; delete one first")
            }
            MapsError::PatchOutOfBounds(m) => write!(f, "{m}"),
            MapsError::InvalidProfiles(m) => write!(f, "{m}"),
            MapsError::Store(m) => write!(f, "the write could not be made durable: {m}"),
            MapsError::Internal(m) => write!(f, "{m}"),
            MapsError::Conflicted => write!(f, "another replica wrote the map first"),
            MapsError::ReplicaBehind(m) => write!(f, "this replica is behind: {m}"),
            MapsError::Overloaded(n) => write!(
                f,
                "this map already has {n} writes waiting (--max-pending-writes); retry shortly"
            ),
            MapsError::ShuttingDown => write!(
                f,
                "the server is shutting down before its startup maps were loaded; the write \
                 was not made"
            ),
        }
    }
}

impl std::error::Error for MapsError {}
