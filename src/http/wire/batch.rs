//! A batch's answer written in parts on the workers that ran it, and sent as those parts.

use axum::body::Bytes;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use super::{Written, put};
use crate::http::dto::{BatchError, PathResponse};
use crate::http::error::ApiError;

/// Consecutive answers of a batch, written on the worker that ran them (see
/// [`crate::compute::Compute::run_parts`]): their JSON, each with a comma before it (the
/// first part's first comma is cut when the body is sent, without a copy).
#[derive(Debug, Default)]
pub struct BatchPart {
    /// The items' JSON so far.
    json: Vec<u8>,
    /// Why an item could not be written (the batch then answers `500 internal`).
    failed: Option<String>,
}

impl BatchPart {
    /// Appends one query's item: its answer, or the error that query alone got (as
    /// [`BatchItem`] writes them).
    pub fn push(&mut self, item: Result<PathResponse, ApiError>) {
        let written = match item {
            Ok(ok) => {
                let bound = ok.json_len_bound();
                // Room for a chunk's worth of such answers at once, not a doubling a few
                // answers (each a copy of the part so far).
                let want = if self.json.capacity() == 0 {
                    bound * PART_ITEMS
                } else {
                    bound
                };
                self.json.reserve(want);
                self.json.push(b',');
                ok.write_json(&mut self.json)
            }
            Err(e) => {
                self.json.push(b',');
                put(&mut self.json, &BatchError::from(e.body()))
            }
        };
        if let Err(e) = written {
            self.failed.get_or_insert_with(|| e.to_string());
        }
    }
}

/// Answers a part makes room for at its first: a chunk's most (16 queries, see
/// `routes::paths`), so that a turn of a full chunk writes into one buffer without a
/// copy (with 8, every full chunk of long paths grew its part once, copying half of it).
const PART_ITEMS: usize = 16;

/// A batch's answer from its parts in order: the same bytes as the [`BatchResponse`] of
/// their items.
#[derive(Debug)]
pub struct BatchBody {
    /// Version of the map snapshot every query searched.
    pub map_version: u64,
    /// The items, part after part.
    pub parts: Vec<BatchPart>,
}

impl BatchBody {
    /// Its JSON in the pieces it is sent in (the opening, each part, the closing), or the
    /// first error an item's writing met: together the same bytes as the
    /// [`BatchResponse`] of its items (the unit tests hold them equal).
    pub(super) fn pieces(self) -> serde_json::Result<Vec<Bytes>> {
        if let Some(e) = self.parts.iter().find_map(|p| p.failed.as_deref()) {
            return Err(serde::ser::Error::custom(e));
        }
        let mut head = Vec::with_capacity(48);
        head.extend_from_slice(b"{\"map_version\":");
        put(&mut head, &self.map_version)?;
        head.extend_from_slice(b",\"results\":[");
        let mut pieces = Vec::with_capacity(self.parts.len() + 2);
        pieces.push(Bytes::from(head));
        for part in self.parts.into_iter().filter(|p| !p.json.is_empty()) {
            let json = Bytes::from(part.json);
            // The first item of all goes without its comma.
            let first = pieces.len() == 1;
            pieces.push(if first { json.slice(1..) } else { json });
        }
        pieces.push(Bytes::from_static(b"]}"));
        Ok(pieces)
    }
}

impl IntoResponse for BatchBody {
    /// The pieces as they are, one body frame each: no copy into one buffer (a batch of
    /// long paths is hundreds of kilobytes), and the exact length known, so the answer
    /// still carries `Content-Length`.
    fn into_response(self) -> Response {
        match self.pieces() {
            Ok(pieces) => (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                axum::body::Body::new(Pieces::new(pieces)),
            )
                .into_response(),
            Err(e) => Written(Err(e.to_string())).into_response(),
        }
    }
}

/// A body of pieces sent one frame each, of exactly their length.
struct Pieces {
    /// The pieces not yet sent, in order.
    left: std::collections::VecDeque<Bytes>,
    /// Their length.
    len: u64,
}

impl Pieces {
    fn new(pieces: Vec<Bytes>) -> Self {
        let len = pieces.iter().map(|p| p.len() as u64).sum();
        Pieces {
            left: pieces.into(),
            len,
        }
    }
}

impl hyper::body::Body for Pieces {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        let next = self.left.pop_front().map(|piece| {
            self.len -= piece.len() as u64;
            Ok(hyper::body::Frame::data(piece))
        });
        std::task::Poll::Ready(next)
    }

    fn is_end_stream(&self) -> bool {
        self.left.is_empty()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::SizeHint::with_exact(self.len)
    }
}
