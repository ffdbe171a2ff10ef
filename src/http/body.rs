//! JSON request bodies parsed off the async runtime.
//!
//! Why: parsing a 60 MiB JSON body takes seconds of CPU. Done inside a handler (as
//! `axum::Json` does), it blocks a runtime worker thread for that long, and a few such
//! bodies at once stall every other request, `/healthz` included. Here the bytes are
//! collected asynchronously (under the router's body limit) and the parse runs on tokio's
//! blocking pool, which grows as needed and is not the search pool (whose threads are
//! fixed and reserved for searches, see [`crate::compute`]).
//!
//! [`BlockingJson`] is the drop-in extractor for any `DeserializeOwned` body. A handler that
//! needs a custom parse (e.g. a [`serde::de::DeserializeSeed`] that stops a batch at its
//! limit) takes [`JsonBytes`] and calls [`decode_off_runtime`].
//!
//! Every body is read through [`Contract`] (see [`strict`]): integral floats are integers,
//! and `null` is refused where the contract has none.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, header};
use std::marker::PhantomData;

use serde::de::{DeserializeOwned, DeserializeSeed};

use crate::http::error::ApiError;

pub mod strict;

pub use strict::{Contract, Removal};

/// The raw bytes of a JSON request body: the `Content-Type` is checked
/// (`415 unsupported_media_type` unless `application/json` or `application/*+json`) and the
/// router's body limit applies (`413 payload_too_large`). Nothing is parsed yet.
#[derive(Debug, Clone)]
pub struct JsonBytes(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for JsonBytes {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(req.headers()) {
            return Err(ApiError::unsupported_media_type(
                "expected `Content-Type: application/json`",
            ));
        }
        Ok(JsonBytes(Bytes::from_request(req, state).await?))
    }
}

/// Like [`crate::http::error::Json`] as an extractor, but the body is deserialized on the
/// blocking pool (see the module docs). Rejections use the API's error shape: `415`,
/// `413`, or `400 invalid_request` naming where in the document the parse failed.
#[derive(Debug, Clone, Copy, Default)]
pub struct BlockingJson<T>(pub T);

impl<T, S> FromRequest<S> for BlockingJson<T>
where
    T: DeserializeOwned + Send + 'static,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let JsonBytes(bytes) = JsonBytes::from_request(req, state).await?;
        decode_off_runtime(bytes, |body| {
            from_slice_seed(body, PhantomData::<T>).map_err(Unparsed::error)
        })
        .await
        .map(BlockingJson)
    }
}

/// Bodies up to this size are parsed in place: that is microseconds of CPU, less than the
/// hop to a blocking thread and back, and the common case (a single path query).
pub const INLINE_PARSE_MAX: usize = 16 << 10;

/// Runs `decode` over `bytes` on the blocking pool (in place for bodies of at most
/// [`INLINE_PARSE_MAX`] bytes). `decode` answers its own errors (use [`from_slice_seed`]).
/// The bytes are dropped on the blocking thread too.
pub async fn decode_off_runtime<T, F>(bytes: Bytes, decode: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&[u8]) -> Result<T, ApiError> + Send + 'static,
{
    let inline = bytes.len() <= INLINE_PARSE_MAX;
    let run = move || decode(&bytes);
    if inline {
        return run();
    }
    tokio::task::spawn_blocking(run)
        .await
        .map_err(ApiError::internal)?
}

/// Deserializes one JSON value from `body` with `seed`, through [`Contract`], with only
/// whitespace after it. The parse does not track where it is (tracking costs a string per
/// key of every body); [`Unparsed::error`] parses a failed body again with the path tracked,
/// for the `400` to name where it went wrong.
pub fn from_slice_seed<'de, S>(body: &'de [u8], seed: S) -> Result<S::Value, Unparsed<'de, S>>
where
    S: DeserializeSeed<'de> + Clone,
{
    let mut de = serde_json::Deserializer::from_slice(body);
    let error = match seed.clone().deserialize(Contract(&mut de)) {
        Ok(value) => match de.end() {
            Ok(()) => return Ok(value),
            Err(e) => e,
        },
        Err(e) => e,
    };
    Err(Unparsed { body, seed, error })
}

/// A body [`from_slice_seed`] could not parse.
pub struct Unparsed<'de, S> {
    body: &'de [u8],
    seed: S,
    error: serde_json::Error,
}

impl<'de, S: DeserializeSeed<'de>> Unparsed<'de, S> {
    /// `400 invalid_request`. A value of the wrong shape is parsed again tracking the path,
    /// to name it (a parse is deterministic: it fails the same way); a syntax error needs no
    /// path.
    pub fn error(self) -> ApiError {
        if !self.error.is_data() {
            return syntax_error(&self.error);
        }
        let mut de = serde_json::Deserializer::from_slice(self.body);
        let mut track = serde_path_to_error::Track::new();
        let tracked = self
            .seed
            .deserialize(serde_path_to_error::Deserializer::new(
                Contract(&mut de),
                &mut track,
            ));
        // (`Ok` never: the same parse failed untracked.)
        let error = tracked.err().unwrap_or(self.error);
        parse_error(&serde_path_to_error::Error::new(track.path(), error))
    }
}

/// `400 invalid_request` for a failed parse, with the path to the bad value (e.g.
/// `queries[3].start`) when the document was well-formed but of the wrong shape.
pub fn parse_error(e: &serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let inner = e.inner();
    if inner.is_data() {
        ApiError::invalid_request(format!(
            "Failed to deserialize the JSON body into the target type: {e}"
        ))
    } else {
        syntax_error(inner)
    }
}

fn syntax_error(e: &serde_json::Error) -> ApiError {
    ApiError::invalid_request(format!("Failed to parse the request body as JSON: {e}"))
}

/// `application/json` or `application/<anything>+json`, parameters allowed (as axum).
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    let Some((kind, sub)) = essence.split_once('/') else {
        return false;
    };
    kind.eq_ignore_ascii_case("application")
        && (sub.eq_ignore_ascii_case("json")
            || sub.len() > 5 && sub[sub.len() - 5..].eq_ignore_ascii_case("+json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct P {
        x: u32,
    }

    async fn extract(ct: Option<&str>, body: &'static str) -> Result<P, ApiError> {
        let mut req = Request::post("/");
        if let Some(ct) = ct {
            req = req.header("content-type", ct);
        }
        let req = req.body(Body::from(body)).unwrap();
        BlockingJson::<P>::from_request(req, &()).await.map(|j| j.0)
    }

    #[tokio::test]
    async fn parses_and_rejects_in_the_api_shape() {
        assert_eq!(
            extract(Some("application/json"), r#"{"x": 1}"#)
                .await
                .unwrap(),
            P { x: 1 }
        );
        assert_eq!(
            extract(
                Some("Application/Problem+JSON; charset=utf-8"),
                r#"{"x": 2}"#
            )
            .await
            .unwrap(),
            P { x: 2 }
        );
        let e = extract(None, r#"{"x": 1}"#).await.unwrap_err();
        assert_eq!(
            (e.status.as_u16(), e.code.as_str()),
            (415, "unsupported_media_type")
        );
        let e = extract(Some("text/json"), r#"{"x": 1}"#).await.unwrap_err();
        assert_eq!(e.code, "unsupported_media_type");
        let e = extract(Some("application/json"), r#"{"x": "a"}"#)
            .await
            .unwrap_err();
        assert_eq!(
            (e.status.as_u16(), e.code.as_str()),
            (400, "invalid_request")
        );
        assert!(e.message.contains("x:"), "{}", e.message);
        let e = extract(Some("application/json"), r#"{"x": 1} trailing"#)
            .await
            .unwrap_err();
        assert_eq!(e.code, "invalid_request");
    }
}
