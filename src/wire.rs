//! How path answers are written. A long path is most of its answer's bytes (arena2 corner
//! to corner: ~300 cells, ~3 KB of JSON), so the cells go from the engine's points straight
//! into the body: no vector of pairs, flat numbers or turns is built for the format asked,
//! and the body is one buffer sized up front from the cell counts, not a buffer grown by
//! doubling as it is written.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::body::Bytes;
use pathd_engine::Point;
use serde::{Serialize, Serializer};

use crate::dto::{BatchItem, BatchResponse, PathResponse};
use crate::error::{ApiError, ErrorCode};

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

/// A `200` JSON answer written into one buffer of `capacity` bytes (grown only if the
/// estimate was short), handed to the connection without a copy.
pub fn json_response<T: Serialize>(value: &T, capacity: usize) -> Response {
    let mut buf = Vec::with_capacity(capacity);
    match serde_json::to_writer(&mut buf, value) {
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

impl PathResponse {
    /// An estimate of its JSON's length from above (a trace, when asked for, is not
    /// counted: its buffer grows).
    fn json_len_bound(&self) -> usize {
        let cells = |c: &Option<PathCells>| c.as_ref().map_or(0, PathCells::json_len_bound);
        // The fixed fields with their longest values, and the games' ends.
        512 + self.path.json_len_bound() + cells(&self.expanded_cells) + cells(&self.waypoints)
    }
}

impl IntoResponse for PathResponse {
    fn into_response(self) -> Response {
        json_response(&self, self.json_len_bound())
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
        json_response(&self, 64 + items + self.results.len())
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
                assert!(json(&cells).len() <= cells.json_len_bound(), "{format:?} {n}");
            }
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
