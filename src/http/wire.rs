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
    let step = |a: Point, b: Point| {
        (
            i64::from(b.x) - i64::from(a.x),
            i64::from(b.y) - i64::from(a.y),
        )
    };
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

/// Appends the cells as their format writes them: each cell assembled on the stack, then
/// appended.
fn put_cells(buf: &mut Vec<u8>, cells: &PathCells) {
    buf.reserve(cells.json_len_bound());
    buf.push(b'[');
    let mut cell = [0u8; 24];
    match cells.format {
        PathFormat::Pairs | PathFormat::Turns => {
            for (i, p) in cells.written().enumerate() {
                // `,[x,y]` (no comma before the first).
                cell[0] = b',';
                cell[1] = b'[';
                let mut n = number(p.x, &mut cell, 2);
                cell[n] = b',';
                n = number(p.y, &mut cell, n + 1);
                cell[n] = b']';
                push_all(buf, &cell[usize::from(i == 0)..=n]);
            }
        }
        PathFormat::Flat => {
            for (i, p) in cells.cells.iter().enumerate() {
                // `,x,y`.
                cell[0] = b',';
                let mut n = number(p.x, &mut cell, 1);
                cell[n] = b',';
                n = number(p.y, &mut cell, n + 1);
                push_all(buf, &cell[usize::from(i == 0)..n]);
            }
        }
    }
    buf.push(b']');
}

/// Appends a few bytes one at a time: for a cell's 6-14 bytes this beats
/// `extend_from_slice`, whose copy of a length unknown at compile time is a call to
/// `memcpy` (18% of a batch answer's CPU in a `perf` profile).
fn push_all(buf: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        buf.push(b);
    }
}

/// The two digits of every number below 100.
const DIGIT_PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566\
676869707172737475767778798081828384858687888990919293949596979899";

/// Writes `n` in decimal into `out` from `at` (at most 10 bytes); returns the end.
fn number(n: u32, out: &mut [u8; 24], at: usize) -> usize {
    let two = |k: u32| {
        let k = k as usize * 2;
        [DIGIT_PAIRS[k], DIGIT_PAIRS[k + 1]]
    };
    match n {
        0..=9 => {
            out[at] = b'0' + n as u8;
            at + 1
        }
        10..=99 => {
            out[at..at + 2].copy_from_slice(&two(n));
            at + 2
        }
        100..=999 => {
            out[at] = b'0' + (n / 100) as u8;
            out[at + 1..at + 3].copy_from_slice(&two(n % 100));
            at + 3
        }
        1000..=9999 => {
            out[at..at + 2].copy_from_slice(&two(n / 100));
            out[at + 2..at + 4].copy_from_slice(&two(n % 100));
            at + 4
        }
        _ => {
            let mut digits = itoa::Buffer::new();
            let s = digits.format(n).as_bytes();
            out[at..at + s.len()].copy_from_slice(s);
            at + s.len()
        }
    }
}

/// A `200` JSON answer written by `write` into one buffer of `capacity` bytes (grown only
/// if the estimate was short), handed to the connection without a copy.
fn json_response(
    capacity: usize,
    write: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
) -> Response {
    let mut buf = Vec::with_capacity(capacity);
    match write(&mut buf) {
        Ok(()) => (
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

impl IntoResponse for PathResponse {
    fn into_response(self) -> Response {
        json_response(self.json_len_bound(), |buf| self.write_json(buf))
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
        json_response(64 + items + self.results.len(), |buf| self.write_json(buf))
    }
}

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
