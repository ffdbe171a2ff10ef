//! Why the flow fields refused.

/// Why the flow fields refused. The edge maps each to HTTP (`http/error.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowError {
    /// No flow field with this id (`404 flowfield_not_found`).
    NotFound(String),
    /// The region is above the per-field limit (`400 invalid_request`): the message.
    RegionTooLarge(String),
    /// The server holds as many fields as it may (`429 too_many_flowfields`): the message.
    TooMany(String),
}

impl std::fmt::Display for FlowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlowError::NotFound(id) => write!(f, "no flow field {id:?}"),
            FlowError::RegionTooLarge(m) | FlowError::TooMany(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for FlowError {}
