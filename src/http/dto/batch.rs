//! Batches of path queries: the bounded parse of the request, and the answer.

use super::*;
/// `POST /v1/maps/{name}/paths`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// Wait until this replica has applied this map version (see [`PathRequest`]).
    pub min_version: Option<u64>,
    /// The queries, answered in order.
    pub queries: Vec<PathRequest>,
}

impl BatchRequest {
    /// Parses a batch body with at most `max` queries. The parse stops as soon as query
    /// `max + 1` starts (nothing of it or after it is read, so an over-long batch costs no
    /// more than a full one) and answers `413 too_many_queries`; other failures are
    /// `400 invalid_request` naming where the body went wrong.
    /// The path is tracked only when a body fails (see
    /// [`crate::http::body::from_slice_seed`]).
    pub fn from_json(body: &[u8], max: usize) -> Result<Self, ApiError> {
        let over = std::cell::Cell::new(false);
        let seed = batch_seed::Batch { max, over: &over };
        crate::http::body::from_slice_seed(body, seed).map_err(|unparsed| {
            if over.get() {
                too_many_queries(max)
            } else {
                unparsed.error()
            }
        })
    }
}

/// `413 too_many_queries`: the batch has more than `max` queries.
fn too_many_queries(max: usize) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::TooManyQueries,
        format!("a batch holds at most {max} queries; this one has more"),
    )
}

/// The bounded parse of [`BatchRequest`]: `{"queries": [...]}`, no other field.
mod batch_seed {
    use std::cell::Cell;
    use std::fmt;

    use serde::Deserialize;
    use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

    use super::{BatchRequest, PathRequest};

    /// The body; sets `over` when the queries run past `max`.
    #[derive(Clone, Copy)]
    pub(super) struct Batch<'a> {
        pub(super) max: usize,
        pub(super) over: &'a Cell<bool>,
    }

    #[derive(Deserialize)]
    #[serde(field_identifier, rename_all = "snake_case")]
    enum Field {
        Queries,
        MinVersion,
    }

    impl<'de> DeserializeSeed<'de> for Batch<'_> {
        type Value = BatchRequest;

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<BatchRequest, D::Error> {
            d.deserialize_struct("BatchRequest", &["queries", "min_version"], self)
        }
    }

    impl<'de> Visitor<'de> for Batch<'_> {
        type Value = BatchRequest;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object with a `queries` array")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<BatchRequest, A::Error> {
            let mut queries = None;
            let mut min_version = None;
            while let Some(field) = map.next_key()? {
                match field {
                    Field::Queries => {
                        if queries.is_some() {
                            return Err(de::Error::duplicate_field("queries"));
                        }
                        queries = Some(map.next_value_seed(Queries {
                            max: self.max,
                            over: self.over,
                        })?);
                    }
                    Field::MinVersion => {
                        if min_version.is_some() {
                            return Err(de::Error::duplicate_field("min_version"));
                        }
                        min_version = Some(map.next_value::<super::Saturating>()?.0);
                    }
                }
            }
            let queries = queries.ok_or_else(|| de::Error::missing_field("queries"))?;
            Ok(BatchRequest {
                min_version,
                queries,
            })
        }
    }

    struct Queries<'a> {
        max: usize,
        over: &'a Cell<bool>,
    }

    impl<'de> DeserializeSeed<'de> for Queries<'_> {
        type Value = Vec<PathRequest>;

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_seq(self)
        }
    }

    impl<'de> Visitor<'de> for Queries<'_> {
        type Value = Vec<PathRequest>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an array of path queries")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(self.max));
            while out.len() < self.max {
                match seq.next_element()? {
                    Some(q) => out.push(q),
                    None => return Ok(out),
                }
            }
            // Full: one more element is an error before any of it is parsed.
            match seq.next_element_seed(Refuse(self.over))? {
                Some(()) => Err(de::Error::custom("too many queries")),
                None => Ok(out),
            }
        }
    }

    /// Fails at the start of an element, without reading it.
    struct Refuse<'a>(&'a Cell<bool>);

    impl<'de> DeserializeSeed<'de> for Refuse<'_> {
        type Value = ();

        fn deserialize<D: Deserializer<'de>>(self, _: D) -> Result<(), D::Error> {
            self.0.set(true);
            Err(de::Error::custom("too many queries"))
        }
    }
}

/// One answer of a batch: a result, or the error that query alone got. `status` tells them
/// apart (the contract's discriminator): a result's outcome, or `error`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum BatchItem {
    /// The query ran.
    Ok(Box<PathResponse>),
    /// The query was invalid for this map (e.g. `out_of_bounds`).
    Err(BatchError),
}

/// The error item of a batch (`BatchError` in `openapi.yaml`): `{"status": "error",
/// "error": {...}}`.
#[derive(Debug, Serialize)]
pub struct BatchError {
    /// Always `error`.
    pub status: &'static str,
    /// The error, as a whole request's error body holds it.
    #[serde(flatten)]
    pub body: ErrorBody,
}

impl From<ErrorBody> for BatchError {
    fn from(body: ErrorBody) -> Self {
        BatchError {
            status: "error",
            body,
        }
    }
}

/// The answer to a batch.
#[derive(Debug, Serialize)]
pub struct BatchResponse {
    /// Version of the map snapshot every query searched.
    pub map_version: u64,
    /// One item per query, in order.
    pub results: Vec<BatchItem>,
}
