//! The Moving AI formats: `.map` (read and write) and `.scen` (read).
//!
//! Parsers never panic: a malformed file gives an error naming the 1-based line and what is
//! wrong. Quirks of the real benchmark files that are handled here: CRLF line endings,
//! `version 1.0` headers, space- instead of tab-separated columns, a path in the map
//! column (only its base name is kept) and trailing blank lines.

use std::fmt;

use crate::grid::{Grid, MAX_DIM, Movement, Point};
use crate::profiles::Profiles;

/// A parse failure: the 1-based line and what is wrong there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number (0 when the problem is the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for ParseError {}

fn err(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        message: message.into(),
    }
}

/// Cost of a terrain character, or `None` if it is not a known terrain.
///
/// `.`, `G` and `S` (swamp) are passable ground (cost 1); `@`, `O`, `T` (trees) and `W`
/// (water) are blocked.
pub fn terrain_cost(c: u8) -> Option<u8> {
    match c {
        b'.' | b'G' | b'S' => Some(1),
        b'@' | b'O' | b'T' | b'W' => Some(0),
        _ => None,
    }
}

/// Lines with their 1-based numbers, any trailing `\r` removed.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
}

/// Parses a Moving AI `.map` file. `type octile` gives [`Movement::Octile`]; `type cardinal`
/// is accepted as an extension. A header field (or `map`) given twice is an error naming
/// the second line.
///
/// ```
/// use pathd_engine::movingai::parse_map;
/// let g = parse_map("type octile\r\nheight 1\r\nwidth 3\r\nmap\r\n.@T\r\n").unwrap();
/// assert_eq!((g.width(), g.height(), g.passable_cells()), (3, 1, 1));
/// let e = parse_map("type octile\nheight 2\nwidth 3\nmap\n...\n.x.\n").unwrap_err();
/// assert_eq!(e.line, 6);
/// ```
pub fn parse_map(text: &str) -> Result<Grid, ParseError> {
    parse_cells(text, terrain_cost)
}

/// Parses a Moving AI `.map` file keeping its terrain: each character is its own class
/// (its ASCII code), read through the profile set [`Profiles::moving_ai`] (default
/// `ground`: today's rule), so a client can add e.g. `boat` (only `W`) on the same map.
/// The grid's costs are the classes; [`Grid::under_profile`] gives what a profile sees.
///
/// ```
/// use pathd_engine::movingai::parse_map_terrain;
/// let g = parse_map_terrain("type octile\nheight 1\nwidth 3\nmap\n.WT\n").unwrap();
/// assert_eq!(g.costs(), vec![b'.', b'W', b'T']);
/// let ground = g.under_profile(g.profiles().unwrap().default_table());
/// assert_eq!(ground.costs(), vec![1, 0, 0]);
/// ```
pub fn parse_map_terrain(text: &str) -> Result<Grid, ParseError> {
    let g = parse_cells(text, |b| terrain_cost(b).map(|_| b))?;
    Ok(g.with_profiles(Some(std::sync::Arc::new(Profiles::moving_ai()))))
}

/// Parses a `.map` file, each character's cell value given by `cell`.
fn parse_cells(text: &str, cell: impl Fn(u8) -> Option<u8>) -> Result<Grid, ParseError> {
    let mut it = lines(text);
    let (mut movement, mut height, mut width) = (None, None, None);
    // The line each header field was first seen on: a field given twice is an error.
    let (mut type_at, mut height_at, mut width_at) = (0, 0, 0);
    let mut map_line = 0;
    for (n, line) in it.by_ref() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line == "map" {
            map_line = n;
            break;
        }
        let (key, value) = line
            .split_once(char::is_whitespace)
            .map(|(k, v)| (k, v.trim()))
            .ok_or_else(|| err(n, format!("expected `key value` or `map`, found {line:?}")))?;
        let first = match key {
            "type" => &mut type_at,
            "height" => &mut height_at,
            "width" => &mut width_at,
            _ => return Err(err(n, format!("unknown header field {key:?}"))),
        };
        if *first != 0 {
            return Err(err(
                n,
                format!("duplicate `{key}` line (first given on line {})", *first),
            ));
        }
        *first = n;
        match key {
            "type" => {
                movement = Some(Movement::parse(value).ok_or_else(|| {
                    err(n, format!("unknown map type {value:?} (expected octile)"))
                })?)
            }
            "height" => height = Some(parse_dim(n, "height", value)?),
            "width" => width = Some(parse_dim(n, "width", value)?),
            _ => return Err(err(n, format!("unknown header field {key:?}"))),
        }
    }
    if map_line == 0 {
        return Err(err(0, "missing `map` line: the header never ended"));
    }
    let height = height.ok_or_else(|| err(map_line, "header has no `height`"))?;
    let width = width.ok_or_else(|| err(map_line, "header has no `width`"))?;
    let (w, h) = (width as usize, height as usize);
    // The body must hold h rows of w bytes; reject before allocating for a lying header.
    if text.len() < w * h {
        return Err(err(
            0,
            format!("file is too short for a {width}x{height} map (truncated?)"),
        ));
    }
    let mut costs = Vec::with_capacity(w * h);
    let mut rows = 0usize;
    for (n, line) in it.by_ref() {
        if line.trim() == "map" {
            return Err(err(
                n,
                format!("duplicate `map` line (the header ended on line {map_line})"),
            ));
        }
        if rows == h {
            if !line.trim().is_empty() {
                return Err(err(n, format!("extra row after the {height} declared")));
            }
            continue;
        }
        let bytes = line.as_bytes();
        if bytes.len() != w {
            return Err(err(
                n,
                format!("row {} has {} cells, expected {width}", rows, bytes.len()),
            ));
        }
        for (col, &b) in bytes.iter().enumerate() {
            let c = cell(b).ok_or_else(|| {
                err(
                    n,
                    format!(
                        "unknown terrain {:?} at column {col}",
                        char::from(b).escape_default().to_string()
                    ),
                )
            })?;
            costs.push(c);
        }
        rows += 1;
    }
    if rows < h {
        return Err(err(
            0,
            format!("map is truncated: {rows} of {height} rows present"),
        ));
    }
    Grid::from_costs(width, height, costs, movement.unwrap_or_default())
        .map_err(|e| err(map_line, e.to_string()))
}

fn parse_dim(line: usize, what: &str, value: &str) -> Result<u32, ParseError> {
    let v: u64 = value
        .parse()
        .map_err(|_| err(line, format!("{what} {value:?} is not a number")))?;
    if v == 0 || v > MAX_DIM as u64 {
        return Err(err(
            line,
            format!("{what} {v} is out of range 1..={MAX_DIM}"),
        ));
    }
    Ok(v as u32)
}

/// Why a grid cannot be written as a `.map` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightedMapError;

impl fmt::Display for WeightedMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the map has weighted cells (cost > 1), which the Moving AI format cannot hold")
    }
}

impl std::error::Error for WeightedMapError {}

/// Writes a grid as a Moving AI `.map` file (`.` passable, `@` blocked). Weighted grids
/// cannot be written: the format has no costs.
///
/// ```
/// use pathd_engine::movingai::{parse_map, write_map};
/// let text = "type octile\nheight 1\nwidth 2\nmap\n.@\n";
/// assert_eq!(write_map(&parse_map(text).unwrap()).unwrap(), text);
/// ```
pub fn write_map(grid: &Grid) -> Result<String, WeightedMapError> {
    if !grid.is_uniform() {
        return Err(WeightedMapError);
    }
    let (w, h) = (grid.width() as usize, grid.height() as usize);
    let mut out = String::with_capacity((w + 1) * h + 64);
    out.push_str(&format!(
        "type {}\nheight {h}\nwidth {w}\nmap\n",
        grid.movement().as_str()
    ));
    for row in grid.costs().chunks_exact(w) {
        out.extend(row.iter().map(|&c| if c == 0 { '@' } else { '.' }));
        out.push('\n');
    }
    Ok(out)
}

/// Writes a terrain grid (classes that are Moving AI characters, as
/// [`parse_map_terrain`] reads them) back as its `.map` file, every character as it was;
/// `None` when a class is not one of the format's characters.
///
/// ```
/// use pathd_engine::movingai::{parse_map_terrain, write_terrain};
/// let text = "type octile\nheight 1\nwidth 4\nmap\n.WT@\n";
/// assert_eq!(write_terrain(&parse_map_terrain(text).unwrap()).unwrap(), text);
/// ```
pub fn write_terrain(grid: &Grid) -> Option<String> {
    let (w, h) = (grid.width() as usize, grid.height() as usize);
    let mut out = String::with_capacity((w + 1) * h + 64);
    out.push_str(&format!(
        "type {}\nheight {h}\nwidth {w}\nmap\n",
        grid.movement().as_str()
    ));
    for row in grid.costs().chunks_exact(w) {
        for &c in row {
            terrain_cost(c)?;
            out.push(char::from(c));
        }
        out.push('\n');
    }
    Some(out)
}

/// One scenario row: a query with its stated optimal length.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenRow {
    /// Difficulty bucket.
    pub bucket: u32,
    /// Base name of the map file (`arena.map`), whatever path the file gave.
    pub map: String,
    /// Map width stated by the row.
    pub width: u32,
    /// Map height stated by the row.
    pub height: u32,
    /// Start cell.
    pub start: Point,
    /// Goal cell.
    pub goal: Point,
    /// Optimal octile length; `0` with `start != goal` means unreachable.
    pub optimal: f64,
}

impl ScenRow {
    /// True for the rows whose optimum is stated as 0 although start and goal differ: those
    /// pairs are unreachable.
    pub fn unreachable(&self) -> bool {
        self.optimal == 0.0 && self.start != self.goal
    }
}

/// Parses a `.scen` file (`version 1` or `version 1.0` header, then one row per query:
/// `bucket map width height start_x start_y goal_x goal_y optimal`).
///
/// ```
/// use pathd_engine::movingai::parse_scen;
/// let rows = parse_scen("version 1.0\n0 maps/bg/AR0011SR.map 512 512 1 2 3 4 5.41\n").unwrap();
/// assert_eq!(rows[0].map, "AR0011SR.map");
/// assert_eq!(rows[0].optimal, 5.41);
/// ```
pub fn parse_scen(text: &str) -> Result<Vec<ScenRow>, ParseError> {
    let mut it = lines(text);
    let mut rows = Vec::new();
    let mut saw_version = false;
    for (n, line) in it.by_ref() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if !saw_version {
            let v = line
                .strip_prefix("version")
                .map(str::trim)
                .ok_or_else(|| err(n, "expected `version 1` header"))?;
            if v.parse::<f64>().is_err() {
                return Err(err(n, format!("bad version {v:?}")));
            }
            saw_version = true;
            continue;
        }
        rows.push(parse_scen_row(n, line)?);
    }
    if !saw_version {
        return Err(err(0, "empty scenario file"));
    }
    Ok(rows)
}

fn parse_scen_row(n: usize, line: &str) -> Result<ScenRow, ParseError> {
    let cols: Vec<&str> = line.split_whitespace().collect();
    if cols.len() != 9 {
        return Err(err(n, format!("expected 9 columns, found {}", cols.len())));
    }
    let num = |i: usize, what: &str| -> Result<u32, ParseError> {
        cols[i]
            .parse::<u32>()
            .map_err(|_| err(n, format!("{what} {:?} is not a number", cols[i])))
    };
    let optimal: f64 = cols[8]
        .parse()
        .map_err(|_| err(n, format!("optimal length {:?} is not a number", cols[8])))?;
    if !optimal.is_finite() || optimal < 0.0 {
        return Err(err(n, format!("optimal length {optimal} is invalid")));
    }
    let map = cols[1].rsplit(['/', '\\']).next().unwrap_or(cols[1]);
    Ok(ScenRow {
        bucket: num(0, "bucket")?,
        map: map.to_string(),
        width: num(2, "width")?,
        height: num(3, "height")?,
        start: Point::new(num(4, "start x")?, num(5, "start y")?),
        goal: Point::new(num(6, "goal x")?, num(7, "goal y")?),
        optimal,
    })
}
