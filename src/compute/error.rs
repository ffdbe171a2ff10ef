//! Why the pool did not run a job.

/// Why the pool did not run a job. The edge maps it to HTTP (`http/error.rs`): `Overloaded`
/// is `503 overloaded` with `Retry-After`, the others `500 internal` (their detail logged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolError {
    /// Every worker is busy and the queue is full.
    Overloaded,
    /// The job panicked (the message); the worker carried on.
    Panicked(String),
    /// The pool stopped before the job answered.
    Stopped(&'static str),
}

impl std::fmt::Display for PoolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PoolError::Overloaded => {
                f.write_str("every search worker is busy and the queue is full; retry shortly")
            }
            PoolError::Panicked(m) => write!(f, "search job panicked: {m}"),
            PoolError::Stopped(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for PoolError {}
