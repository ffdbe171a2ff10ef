//! Bearer-token extractors. They run before the body is read, so an unauthorized upload is
//! refused without buffering it.
//!
//! - [`AdminAuth`]: map changes. Needs the admin token when one is configured; without
//!   one, writes are taken from loopback clients only (`--allow-anonymous-writes` opens
//!   them to every client), so a server started without thinking about tokens is not a
//!   map anyone on the network can rewrite.
//! - [`QueryAuth`]: reads and queries. Needs the query token (or the admin token) when a
//!   query token is configured; open otherwise.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};

use crate::http::error::ApiError;
use crate::secret::same;
use crate::state::AppState;

/// Proof that the request may change maps.
#[derive(Debug, Clone, Copy)]
pub struct AdminAuth;

/// Proof that the request may read maps and run queries.
#[derive(Debug, Clone, Copy)]
pub struct QueryAuth;

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

fn matches(parts: &Parts, tokens: &[Option<&String>]) -> bool {
    let given = bearer(&parts.headers);
    tokens
        .iter()
        .flatten()
        .any(|t| given.is_some_and(|g| same(g, t)))
}

/// Whether `headers` carry the configured admin token (false when none is configured).
pub fn carries_admin_token(headers: &HeaderMap, state: &AppState) -> bool {
    let admin = state.config().admin_token.as_ref();
    admin.is_some_and(|t| bearer(headers).is_some_and(|g| same(g, t)))
}

/// `Ok` when the request presents in `header` (its canonical spelling, as the messages name
/// it) a secret that `matches` accepts (trimmed), or carries the admin token; else `403
/// forbidden` saying that `action` needs it. The guard of every secret-held live resource
/// (subscriptions, flow fields, live plans).
pub fn secret_or_admin(
    state: &AppState,
    headers: &HeaderMap,
    header: &str,
    matches: impl Fn(&str) -> bool,
    action: &str,
) -> Result<(), ApiError> {
    let given = headers.get(header).and_then(|v| v.to_str().ok());
    if given.is_some_and(|g| matches(g.trim())) || carries_admin_token(headers, state) {
        return Ok(());
    }
    Err(ApiError::forbidden(format!(
        "{action} needs its secret (from the create answer) in `{header}`, or the admin \
         token; {}",
        if given.is_some() {
            "the secret given is wrong"
        } else {
            "none was given"
        }
    )))
}

impl FromRequestParts<AppState> for AdminAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let config = state.config();
        let admin = config.admin_token.as_ref();
        if admin.is_some() {
            return if matches(parts, &[admin]) {
                Ok(AdminAuth)
            } else {
                Err(ApiError::unauthorized())
            };
        }
        // A request that did not come through a socket (in-process) counts as local.
        let local = !config.test_remote_peers
            && parts
                .extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .is_none_or(|c| c.0.ip().is_loopback());
        if local || config.allow_anonymous_writes {
            Ok(AdminAuth)
        } else {
            Err(ApiError::forbidden(
                "this server has no admin token, so it takes writes only from clients on its \
                 own machine (loopback); start it with --admin-token and send `Authorization: \
                 Bearer <token>`, or with --allow-anonymous-writes to take them from anyone",
            ))
        }
    }
}

impl FromRequestParts<AppState> for QueryAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let config = state.config();
        let query = config.query_token.as_ref();
        if query.is_none() || matches(parts, &[query, config.admin_token.as_ref()]) {
            Ok(QueryAuth)
        } else {
            Err(ApiError::unauthorized())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::same;

    #[test]
    fn compares_exactly() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
        assert!(same("", ""));
    }
}
