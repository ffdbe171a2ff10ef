//! How path answers are written. A long path is most of its answer's bytes (arena2 corner
//! to corner: ~300 cells, ~3 KB of JSON), so the cells go from the engine's points straight
//! into the body: no vector of pairs, flat numbers or turns is built for the format asked,
//! and the body is one buffer sized up front from the cell counts, not a buffer grown by
//! doubling as it is written.

use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pathd_engine::Point;
use serde::{Serialize, Serializer};

use crate::http::dto::{BatchItem, BatchResponse, PathResponse};
use crate::http::error::{ApiError, ErrorCode};

/// How an answer writes its `path`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PathFormat {
    /// Every cell, as `[x, y]` pairs.
    #[default]
    Pairs,
    /// Every cell, as one flat array of coordinates (half the brackets).
    Flat,
    /// The cells where the direction changes, start and end included: between two of
    /// them the path steps one cell at a time in one of the eight directions, so the
    /// client walks each leg to get every cell back.
    Turns,
}

impl PathFormat {
    /// The format a request names (`None`: pairs), or `400 invalid_request`.
    pub fn parse(name: Option<&str>) -> Result<Self, ApiError> {
        match name {
            None | Some("pairs") => Ok(PathFormat::Pairs),
            Some("flat") => Ok(PathFormat::Flat),
            Some("turns") => Ok(PathFormat::Turns),
            Some(other) => Err(ApiError::invalid_request(format!(
                "unknown path_format {other:?}; expected pairs, flat or turns"
            ))),
        }
    }
}

/// Cells as an answer writes them: the engine's points and the format they are written
/// in (`[[x, y], ...]`, `[x0, y0, x1, y1, ...]`, or only the turning cells as pairs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathCells {
    /// Every cell, in order.
    cells: Vec<Point>,
    /// How they are written.
    format: PathFormat,
}

impl PathCells {
    /// `cells` written as `format` asks.
    pub fn new(cells: Vec<Point>, format: PathFormat) -> Self {
        PathCells { cells, format }
    }

    /// `cells` as `[x, y]` pairs.
    pub fn pairs(cells: Vec<Point>) -> Self {
        Self::new(cells, PathFormat::Pairs)
    }

    /// The same cells, to be written as `format` asks.
    pub fn with_format(self, format: PathFormat) -> Self {
        Self::new(self.cells, format)
    }

    /// Every cell (whatever the format writes).
    pub fn cells(&self) -> &[Point] {
        &self.cells
    }

    /// The cells the format writes (all of them, or the turning ones).
    pub fn written(&self) -> impl Iterator<Item = Point> + '_ {
        let keep_all = self.format != PathFormat::Turns;
        let c = &self.cells;
        c.iter()
            .enumerate()
            .filter(move |&(i, _)| keep_all || is_turn(c, i))
            .map(|(_, &p)| p)
    }

    /// An upper bound on the bytes the cells take in JSON (for sizing a body).
    pub fn json_len_bound(&self) -> usize {
        // `[65535,65535],` is 14 bytes; coordinates are u32 but maps are far smaller, and a
        // longer number only costs the buffer one growth.
        2 + 14 * self.cells.len()
    }
}

/// Whether cell `i` of `path` is written as a turn: an end, or a cell where the step
/// direction changes.
fn is_turn(path: &[Point], i: usize) -> bool {
    if i == 0 || i + 1 == path.len() {
        return true;
    }
    step(path[i - 1], path[i]) != step(path[i], path[i + 1])
}

impl Serialize for PathCells {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.format {
            PathFormat::Pairs | PathFormat::Turns => s.collect_seq(self.written().map(pair)),
            PathFormat::Flat => s.collect_seq(self.cells.iter().flat_map(|p| [p.x, p.y])),
        }
    }
}

fn pair(p: Point) -> [u32; 2] {
    [p.x, p.y]
}

impl PathResponse {
    /// An estimate of its JSON's length from above (a trace, when asked for, is not
    /// counted: its buffer grows).
    fn json_len_bound(&self) -> usize {
        let cells = |c: &Option<PathCells>| c.as_ref().map_or(0, PathCells::json_len_bound);
        // The fixed fields with their longest values, and the games' ends.
        512 + self.path.json_len_bound() + cells(&self.expanded_cells) + cells(&self.waypoints)
    }

    /// Appends its JSON to `buf`: the same bytes as its `Serialize` (the unit tests hold
    /// them equal), with the cells written by [`put_cells`] instead of serde's sequence
    /// machinery, which cost more than the search on long paths.
    pub fn write_json(&self, buf: &mut Vec<u8>) -> serde_json::Result<()> {
        buf.extend_from_slice(b"{\"status\":");
        put(buf, self.status)?;
        key(buf, "path");
        put_cells(buf, &self.path);
        field(buf, "cost", &self.cost)?;
        field(buf, "path_cost", &self.path_cost)?;
        field(buf, "expanded", &self.expanded)?;
        field(buf, "generated", &self.generated)?;
        field(buf, "algorithm", self.algorithm)?;
        field(buf, "map_version", &self.map_version)?;
        field(buf, "elapsed_us", &self.elapsed_us)?;
        if let Some(limit) = self.limit {
            field(buf, "limit", limit)?;
        }
        if let Some(cells) = &self.expanded_cells {
            key(buf, "expanded_cells");
            put_cells(buf, cells);
        }
        if let Some(cells) = &self.waypoints {
            key(buf, "waypoints");
            put_cells(buf, cells);
        }
        if let Some(cost) = &self.waypoints_cost {
            field(buf, "waypoints_cost", cost)?;
        }
        if let Some(trace) = &self.trace {
            field(buf, "trace", trace)?;
        }
        if let Some(optimal) = &self.optimal {
            field(buf, "optimal", optimal)?;
        }
        if let Some(ends) = &self.ends {
            // Flattened: its fields, without its braces.
            let at = buf.len();
            put(buf, ends)?;
            if buf.len() - at > 2 {
                buf[at] = b',';
                buf.pop();
            } else {
                buf.truncate(at);
            }
        }
        buf.push(b'}');
        Ok(())
    }
}

impl BatchResponse {
    /// Appends its JSON to `buf` (the same bytes as its `Serialize`; see
    /// [`PathResponse::write_json`]).
    pub fn write_json(&self, buf: &mut Vec<u8>) -> serde_json::Result<()> {
        buf.extend_from_slice(b"{\"map_version\":");
        put(buf, &self.map_version)?;
        buf.extend_from_slice(b",\"results\":[");
        for (i, item) in self.results.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            match item {
                BatchItem::Ok(ok) => ok.write_json(buf)?,
                BatchItem::Err(e) => put(buf, e)?,
            }
        }
        buf.extend_from_slice(b"]}");
        Ok(())
    }
}

/// Appends `value` as serde_json writes it.
fn put<T: Serialize + ?Sized>(buf: &mut Vec<u8>, value: &T) -> serde_json::Result<()> {
    serde_json::to_writer(&mut *buf, value)
}

/// Appends `,"name":`.
fn key(buf: &mut Vec<u8>, name: &str) {
    buf.extend_from_slice(b",\"");
    buf.extend_from_slice(name.as_bytes());
    buf.extend_from_slice(b"\":");
}

/// Appends `,"name":value`.
fn field<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    name: &str,
    value: &T,
) -> serde_json::Result<()> {
    key(buf, name);
    put(buf, value)
}

/// A `200` JSON answer already written (on a search worker, see
/// [`crate::compute::Compute::run_parts`]), or why it could not be.
#[derive(Debug)]
pub struct Written(Result<Vec<u8>, String>);

impl Written {
    /// The JSON `write` puts into one buffer of `capacity` bytes (grown only if the
    /// estimate was short).
    fn new(capacity: usize, write: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>) -> Self {
        let mut buf = Vec::with_capacity(capacity);
        Written(write(&mut buf).map(|()| buf).map_err(|e| e.to_string()))
    }
}

impl IntoResponse for Written {
    /// The buffer, handed to the connection without a copy.
    fn into_response(self) -> Response {
        match self.0 {
            Ok(buf) => (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                Bytes::from(buf),
            )
                .into_response(),
            Err(e) => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                ErrorCode::Internal,
                format!("the answer could not be written: {e}"),
            )
            .into_response(),
        }
    }
}

impl PathResponse {
    /// Its JSON, written now (see [`Written`]).
    pub fn written(&self) -> Written {
        Written::new(self.json_len_bound(), |buf| self.write_json(buf))
    }
}

impl IntoResponse for PathResponse {
    fn into_response(self) -> Response {
        self.written().into_response()
    }
}

impl IntoResponse for BatchResponse {
    fn into_response(self) -> Response {
        let items: usize = self
            .results
            .iter()
            .map(|r| match r {
                BatchItem::Ok(ok) => ok.json_len_bound(),
                // An error body: its code and a message of a line or two.
                BatchItem::Err(_) => 256,
            })
            .sum();
        Written::new(64 + items + self.results.len(), |buf| self.write_json(buf)).into_response()
    }
}

mod batch;
mod cells;

pub use batch::{BatchBody, BatchPart};
#[cfg(test)]
use cells::number;
use cells::{put_cells, step};

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> Vec<Point> {
        // East twice, then north-east twice, then north once.
        [(0, 5), (1, 5), (2, 5), (3, 4), (4, 3), (4, 2)]
            .into_iter()
            .map(|(x, y)| Point::new(x, y))
            .collect()
    }

    fn json(cells: &PathCells) -> String {
        serde_json::to_string(cells).unwrap()
    }

    #[test]
    fn every_format_writes_the_cells_it_promises() {
        let p = path();
        assert_eq!(
            json(&PathCells::new(p.clone(), PathFormat::Pairs)),
            "[[0,5],[1,5],[2,5],[3,4],[4,3],[4,2]]"
        );
        assert_eq!(
            json(&PathCells::new(p.clone(), PathFormat::Flat)),
            "[0,5,1,5,2,5,3,4,4,3,4,2]"
        );
        assert_eq!(
            json(&PathCells::new(p, PathFormat::Turns)),
            "[[0,5],[2,5],[4,3],[4,2]]"
        );
    }

    #[test]
    fn short_paths_keep_their_ends() {
        for n in 0..3 {
            let p: Vec<Point> = path().into_iter().take(n).collect();
            let pairs = json(&PathCells::new(p.clone(), PathFormat::Pairs));
            assert_eq!(json(&PathCells::new(p, PathFormat::Turns)), pairs);
        }
    }

    #[test]
    fn the_size_bound_holds() {
        let big = Point::new(65535, 65535);
        for format in [PathFormat::Pairs, PathFormat::Flat, PathFormat::Turns] {
            for n in [0, 1, 2, 300] {
                let cells = PathCells::new(vec![big; n], format);
                assert!(
                    json(&cells).len() <= cells.json_len_bound(),
                    "{format:?} {n}"
                );
            }
        }
    }

    fn response(format: PathFormat, all: bool) -> PathResponse {
        let opt = |p: Vec<Point>| all.then(|| PathCells::pairs(p));
        PathResponse {
            status: "found",
            path: PathCells::new(path(), format),
            cost: 6.414213562373095,
            path_cost: 1.0 / 3.0,
            expanded: 12,
            generated: 40,
            algorithm: "jps_plus",
            map_version: 7,
            elapsed_us: 15,
            limit: all.then_some("expansions"),
            expanded_cells: opt(path()),
            waypoints: opt(vec![Point::new(0, 5), Point::new(4, 2)]),
            waypoints_cost: all.then_some(f64::NAN),
            trace: None,
            optimal: all.then_some(false),
            ends: all.then_some(crate::http::dto::Ends {
                start: [0, 5],
                goal: Some([4, 2]),
                goal_index: Some(1),
                snapped: None,
            }),
        }
    }

    #[test]
    fn the_hand_written_answers_are_serdes_bytes() {
        let formats = [PathFormat::Pairs, PathFormat::Flat, PathFormat::Turns];
        for format in formats {
            for all in [false, true] {
                let r = response(format, all);
                let mut hand = Vec::new();
                r.write_json(&mut hand).unwrap();
                assert_eq!(
                    String::from_utf8(hand).unwrap(),
                    serde_json::to_string(&r).unwrap(),
                    "{format:?} {all}"
                );
            }
            // Paths of every short length and a long one.
            for n in [0, 1, 2, 3, 327] {
                let cells: Vec<Point> = (0..n).map(|i| Point::new(i * 7 % 13, i)).collect();
                let c = PathCells::new(cells, format);
                let mut hand = Vec::new();
                put_cells(&mut hand, &c);
                assert_eq!(String::from_utf8(hand).unwrap(), json(&c), "{format:?} {n}");
            }
        }
        let batch = BatchResponse {
            map_version: 7,
            results: vec![
                BatchItem::Ok(Box::new(response(PathFormat::Flat, true))),
                BatchItem::Err(
                    ApiError::invalid_request("unknown path_format \"zip\"")
                        .body()
                        .into(),
                ),
                BatchItem::Ok(Box::new(response(PathFormat::Turns, false))),
            ],
        };
        let mut hand = Vec::new();
        batch.write_json(&mut hand).unwrap();
        assert_eq!(
            String::from_utf8(hand).unwrap(),
            serde_json::to_string(&batch).unwrap()
        );
        let empty = BatchResponse {
            map_version: 1,
            results: vec![],
        };
        let mut hand = Vec::new();
        empty.write_json(&mut hand).unwrap();
        assert_eq!(hand, serde_json::to_vec(&empty).unwrap());
    }

    /// The items of the batch the tests write: answers in every format, and errors.
    fn items() -> Vec<Result<PathResponse, ApiError>> {
        vec![
            Ok(response(PathFormat::Flat, true)),
            Err(ApiError::invalid_request("unknown path_format \"zip\"")),
            Ok(response(PathFormat::Turns, false)),
            Ok(response(PathFormat::Pairs, true)),
            Err(ApiError::invalid_request(
                "goals must hold at least one point",
            )),
        ]
    }

    /// The same items as serde writes them in a batch.
    fn whole() -> String {
        let whole = BatchResponse {
            map_version: 9,
            results: items()
                .into_iter()
                .map(|i| match i {
                    Ok(ok) => BatchItem::Ok(Box::new(ok)),
                    Err(e) => BatchItem::Err(e.body().into()),
                })
                .collect(),
        };
        serde_json::to_string(&whole).unwrap()
    }

    #[tokio::test]
    async fn a_batch_answer_is_its_pieces_with_their_exact_length() {
        let mut part = BatchPart::default();
        for item in items() {
            part.push(item);
        }
        let batch = BatchBody {
            map_version: 9,
            parts: vec![BatchPart::default(), part],
        };
        let resp = batch.into_response();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
        let want = whole();
        let body = resp.into_body();
        let len = hyper::body::Body::size_hint(&body).exact();
        assert_eq!(len, Some(want.len() as u64), "hyper sends Content-Length");
        let got = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        assert_eq!(String::from_utf8(got.to_vec()).unwrap(), want);
    }

    #[test]
    fn a_batch_written_in_parts_is_serdes_batch() {
        let want = whole();
        // However the chunks' turns cut the items into parts (empty parts included).
        for cuts in [
            &[5][..],
            &[1, 4],
            &[2, 0, 2, 1],
            &[1, 1, 1, 1, 1],
            &[0, 5, 0],
        ] {
            let mut items = items().into_iter();
            let parts = cuts
                .iter()
                .map(|&n| {
                    let mut part = BatchPart::default();
                    for item in items.by_ref().take(n) {
                        part.push(item);
                    }
                    part
                })
                .collect();
            let body = BatchBody {
                map_version: 9,
                parts,
            };
            let got = body.pieces().unwrap().concat();
            assert_eq!(String::from_utf8(got).unwrap(), want, "{cuts:?}");
        }
        let empty = BatchBody {
            map_version: 1,
            parts: vec![],
        };
        let got = empty.pieces().unwrap().concat();
        assert_eq!(got, br#"{"map_version":1,"results":[]}"#);
    }

    #[test]
    fn every_format_writes_far_and_long_paths_as_serde_does() {
        // Coordinates of every width up to u32::MAX, and runs longer than a block.
        let far: Vec<Point> = (0..200u32)
            .map(|i| match i / 50 {
                0 => Point::new(i, 7),
                1 => Point::new(u32::MAX - i, u32::MAX),
                2 => Point::new(1_000_000 + i, 99_999 + i),
                _ => Point::new(9, 123_456_789 - i),
            })
            .collect();
        for format in [PathFormat::Pairs, PathFormat::Flat, PathFormat::Turns] {
            for n in [3, 64, 65, 128, 200] {
                let c = PathCells::new(far[..n].to_vec(), format);
                let mut hand = Vec::new();
                put_cells(&mut hand, &c);
                assert_eq!(String::from_utf8(hand).unwrap(), json(&c), "{format:?} {n}");
            }
        }
    }

    #[test]
    fn numbers_are_written_as_itoa_writes_them() {
        let mut out = [0u8; 24];
        let edges = [0, 9, 10, 99, 100, 999, 1000, 9999, 10000, 65535, u32::MAX];
        for n in edges.into_iter().chain(0..12_000) {
            let end = number(n, &mut out, 3);
            assert_eq!(&out[3..end], n.to_string().as_bytes());
        }
    }

    #[test]
    fn unknown_formats_are_refused() {
        assert_eq!(PathFormat::parse(None).unwrap(), PathFormat::Pairs);
        assert_eq!(PathFormat::parse(Some("flat")).unwrap(), PathFormat::Flat);
        assert_eq!(PathFormat::parse(Some("turns")).unwrap(), PathFormat::Turns);
        assert!(PathFormat::parse(Some("zip")).is_err());
    }
}
