//! The HTTP edge: everything that knows HTTP lives here and nothing below imports it.
//!
//! - [`routes`]: one router per area; handlers parse, call a service, map the result.
//! - [`dto`]: the wire types (serde), with `From<domain>` conversions.
//! - [`wire`]: hand-written JSON answers (long paths written straight into the body).
//! - [`body`], [`auth`], [`upload`]: extractors (strict JSON bodies, bearer tokens, map
//!   uploads).
//! - [`error`]: [`error::ApiError`], the one error answer, and the `From` impls that map
//!   each service's own error enum to a status, a stable code and a message.
//! - [`serve`]: the connection loop (timeouts, connection cap, graceful shutdown).

pub mod auth;
pub mod body;
pub mod dto;
pub mod error;
pub mod gate;
pub mod routes;
pub mod serve;
pub mod sse;
pub mod upload;
pub mod wire;
