//! pathd-engine in a browser tab (or Node): the engine built for `wasm32-unknown-unknown`
//! behind a few plain `extern "C"` functions, with hand-written JavaScript glue
//! (`clients/wasm/pathd.js`, also served to the visualiser as `/ui/pathd.js`).
//!
//! Why no wasm-bindgen: the interface is a handful of integers and one output buffer, and
//! wasm-bindgen's CLI must match the crate's version exactly (one more pinned tool to
//! install); plain exports build with `cargo` alone. `scripts/build-wasm.sh` builds the
//! module and `scripts/build-wasm.sh --check` holds the committed one against the source.
//!
//! # The interface
//!
//! Grids live in this module's memory, named by a handle (a positive integer). Every call
//! that answers more than a number writes its answer to one output buffer
//! ([`pathd_out_ptr`], [`pathd_out_len`]), valid until the next call; an error is a negative
//! return with its message (UTF-8) in the buffer. A search's answer is
//!
//! ```text
//! u32 json_len | json_len bytes of JSON | zero padding to a multiple of 8 | events
//! ```
//!
//! the JSON holding what the server's `PathResult` holds (status, cost, path, ...), and
//! `events` the trace, 32 bytes each: `u32 node` (the map index `y * width + x`),
//! `u32 parent | kind << 28` (kind 0 expand, 1 push, 2 decrease, 3 reopen), `f64 g`,
//! `f64 h`, `f64 f`.
//!
//! Single-threaded by construction: the state is a thread local (a wasm instance has one
//! thread).
// The exports take raw pointers into the module's own memory (what JS writes through).
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::fmt::Write as _;

use pathd_engine::trace::TraceKind;
use pathd_engine::{
    Algorithm, Derived, Grid, HeuristicKind, JumpTable, Movement, Patch, Point, Query, Searcher,
    TieBreak, movingai,
};

/// One grid and what is derived from it on demand.
struct Entry {
    grid: Grid,
    /// JPS+'s jump table, built at the first `jps_plus` query of this version.
    table: Option<Option<JumpTable>>,
}

#[derive(Default)]
struct State {
    /// Grids by handle - 1 (`None`: freed).
    grids: Vec<Option<Entry>>,
    searcher: Searcher,
    out: Vec<u8>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    STATE.with(|s| f(&mut s.borrow_mut()))
}

/// Puts `msg` in the output buffer and returns `code` (negative).
fn fail(s: &mut State, code: i32, msg: &str) -> i32 {
    s.out.clear();
    s.out.extend_from_slice(msg.as_bytes());
    code
}

fn add_grid(s: &mut State, grid: Grid) -> i32 {
    let e = Entry { grid, table: None };
    if let Some(i) = s.grids.iter().position(Option::is_none) {
        s.grids[i] = Some(e);
        i as i32 + 1
    } else {
        s.grids.push(Some(e));
        s.grids.len() as i32
    }
}

fn entry(s: &mut State, handle: i32) -> Option<&mut Entry> {
    let i = usize::try_from(handle).ok()?.checked_sub(1)?;
    s.grids.get_mut(i)?.as_mut()
}

/// Reserves `len` bytes in the module's memory for the caller to fill; give them back with
/// [`pathd_free`].
#[unsafe(no_mangle)]
pub extern "C" fn pathd_alloc(len: usize) -> *mut u8 {
    let mut v = Vec::<u8>::with_capacity(len.max(1));
    let p = v.as_mut_ptr();
    std::mem::forget(v);
    p
}

/// Frees what [`pathd_alloc`] reserved.
///
/// # Safety
/// `ptr` and `len` must be exactly what one `pathd_alloc` call took and returned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pathd_free(ptr: *mut u8, len: usize) {
    // SAFETY: the caller hands back an allocation of capacity `len.max(1)` (see above).
    drop(unsafe { Vec::from_raw_parts(ptr, 0, len.max(1)) });
}

/// The output buffer's address.
#[unsafe(no_mangle)]
pub extern "C" fn pathd_out_ptr() -> *const u8 {
    with(|s| s.out.as_ptr())
}

/// The output buffer's length.
#[unsafe(no_mangle)]
pub extern "C" fn pathd_out_len() -> usize {
    with(|s| s.out.len())
}

/// A `width x height` grid from row-major costs at `costs` (0 blocked, 1..=255), moving
/// `octile` (0) or `cardinal` (1): its handle, or a negative error.
///
/// # Safety
/// `costs` must point at `width * height` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pathd_grid_new(
    width: u32,
    height: u32,
    costs: *const u8,
    movement: u32,
) -> i32 {
    let n = width as usize * height as usize;
    // SAFETY: the caller guarantees `n` readable bytes.
    let cells = unsafe { std::slice::from_raw_parts(costs, n) }.to_vec();
    let movement = if movement == 1 {
        Movement::Cardinal
    } else {
        Movement::Octile
    };
    with(|s| match Grid::from_costs(width, height, cells, movement) {
        Ok(g) => add_grid(s, g),
        Err(e) => fail(s, -1, &e.to_string()),
    })
}

/// A grid from the Moving AI `.map` text at `text` (`len` bytes of UTF-8).
///
/// # Safety
/// `text` must point at `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pathd_grid_parse(text: *const u8, len: usize) -> i32 {
    // SAFETY: the caller guarantees `len` readable bytes.
    let bytes = unsafe { std::slice::from_raw_parts(text, len) };
    with(|s| {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return fail(s, -1, "the map file is not UTF-8 text");
        };
        match movingai::parse_map(text) {
            Ok(g) => add_grid(s, g),
            Err(e) => fail(s, -1, &e.to_string()),
        }
    })
}

/// Frees a grid.
#[unsafe(no_mangle)]
pub extern "C" fn pathd_grid_free(handle: i32) {
    with(|s| {
        if let Some(i) = usize::try_from(handle).ok().and_then(|h| h.checked_sub(1)) {
            if let Some(slot) = s.grids.get_mut(i) {
                *slot = None;
            }
        }
    });
}

/// The width (-1: no such grid).
#[unsafe(no_mangle)]
pub extern "C" fn pathd_grid_width(handle: i32) -> i32 {
    with(|s| entry(s, handle).map_or(-1, |e| e.grid.width() as i32))
}

/// The height.
#[unsafe(no_mangle)]
pub extern "C" fn pathd_grid_height(handle: i32) -> i32 {
    with(|s| entry(s, handle).map_or(-1, |e| e.grid.height() as i32))
}

/// The movement rule: 0 octile, 1 cardinal.
#[unsafe(no_mangle)]
pub extern "C" fn pathd_grid_movement(handle: i32) -> i32 {
    with(|s| entry(s, handle).map_or(-1, |e| i32::from(e.grid.movement() == Movement::Cardinal)))
}

/// The row-major costs into the output buffer; returns their count.
#[unsafe(no_mangle)]
pub extern "C" fn pathd_grid_costs(handle: i32) -> i32 {
    with(|s| {
        let Some(costs) = entry(s, handle).map(|e| e.grid.costs()) else {
            return fail(s, -2, "no such grid");
        };
        s.out = costs;
        s.out.len() as i32
    })
}

/// Applies `n` cell writes at `cells` (`u32` triples `x, y, cost`) to the grid, atomically:
/// the number of cells whose cost changed, or a negative error (nothing changed).
///
/// # Safety
/// `cells` must point at `3 * n` readable, aligned `u32`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pathd_grid_patch(handle: i32, cells: *const u32, n: usize) -> i32 {
    // SAFETY: the caller guarantees `3 n` readable, aligned u32s.
    let raw = unsafe { std::slice::from_raw_parts(cells, 3 * n) };
    with(|s| {
        let mut patch = Patch::default();
        for c in raw.chunks_exact(3) {
            let Ok(cost) = u8::try_from(c[2]) else {
                return fail(s, -1, &format!("cost {} is not 0..=255", c[2]));
            };
            patch.cells.push((Point::new(c[0], c[1]), cost));
        }
        let Some(e) = entry(s, handle) else {
            return fail(s, -2, "no such grid");
        };
        match e.grid.apply_patch(&patch) {
            Ok(None) => 0,
            Ok(Some((next, changed))) => {
                e.grid = next;
                e.table = None;
                changed.len() as i32
            }
            Err(err) => fail(s, -1, &err.to_string()),
        }
    })
}

/// The algorithm of wire number `n` (the order of [`Algorithm::ALL`]).
fn algorithm(n: u32) -> Option<Algorithm> {
    Algorithm::ALL.get(n as usize).copied()
}

/// Searches grid `handle` from `(sx, sy)` to `(gx, gy)`.
///
/// `algo` indexes [`Algorithm::ALL`] (`hpa` is not offered here: `NotApplicable`);
/// `heuristic` is 0 for the map's own or `1 +` an index of [`HeuristicKind::ALL`]; `tie`
/// indexes [`TieBreak::ALL`]; `max_expansions` below 0 means none; `flags`: 1 smooth,
/// 2 partial, 4 trace; `trace_cap` bounds a trace's expansions. Returns 0 with the answer
/// in the output buffer (see the crate docs), or a negative error.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn pathd_find_path(
    handle: i32,
    sx: u32,
    sy: u32,
    gx: u32,
    gy: u32,
    algo: u32,
    weight: f64,
    heuristic: u32,
    tie: u32,
    max_expansions: f64,
    flags: u32,
    size: u32,
    trace_cap: u32,
) -> i32 {
    with(|s| {
        let Some(algorithm) = algorithm(algo) else {
            return fail(s, -1, "unknown algorithm");
        };
        let heuristic = match heuristic {
            0 => None,
            k => match HeuristicKind::ALL.get(k as usize - 1) {
                Some(&h) => Some(h),
                None => return fail(s, -1, "unknown heuristic"),
            },
        };
        let Some(&tie_break) = TieBreak::ALL.get(tie as usize) else {
            return fail(s, -1, "unknown tie_break");
        };
        let mut q = Query::new(Point::new(sx, sy), Point::new(gx, gy)).with_algorithm(algorithm);
        q.weight = weight;
        q.heuristic = heuristic;
        q.tie_break = tie_break;
        q.smooth = flags & 1 != 0;
        q.partial = flags & 2 != 0;
        q.size = size;
        if max_expansions >= 0.0 {
            q.limits.max_expansions = Some(max_expansions as u64);
        }
        let traced = flags & 4 != 0;
        let State {
            grids, searcher, ..
        } = s;
        let Some(e) = usize::try_from(handle)
            .ok()
            .and_then(|h| h.checked_sub(1))
            .and_then(|i| grids.get_mut(i))
            .and_then(Option::as_mut)
        else {
            return fail(s, -2, "no such grid");
        };
        if algorithm == Algorithm::JpsPlus && e.table.is_none() {
            e.table = Some(JumpTable::build(&e.grid));
        }
        let derived = Derived {
            jump_table: if algorithm == Algorithm::JpsPlus {
                e.table.as_ref().and_then(Option::as_ref)
            } else {
                None
            },
            ..Derived::default()
        };
        let answer = if traced {
            searcher
                .find_path_traced(&e.grid, derived, &q, trace_cap as usize)
                .map(|(r, t)| (r, Some(t)))
        } else {
            searcher
                .find_path_derived(&e.grid, derived, &q)
                .map(|r| (r, None))
        };
        let width = e.grid.width();
        match answer {
            Ok((r, t)) => {
                s.out = encode(&r, t.as_ref(), width);
                0
            }
            Err(err) => fail(s, -3, &err.to_string()),
        }
    })
}

/// The flow field towards `(gx, gy)` for a `size x size` agent over the whole grid: one
/// direction byte per cell in the output buffer (an index of the engine's moves N, E, S, W,
/// NE, SE, SW, NW; [`pathd_engine::AT_GOAL`] at the goal; [`pathd_engine::UNREACHABLE`]);
/// returns their count, or a negative error.
#[unsafe(no_mangle)]
pub extern "C" fn pathd_flow_field(handle: i32, gx: u32, gy: u32, size: u32) -> i32 {
    with(|s| {
        let Some(e) = entry(s, handle) else {
            return fail(s, -2, "no such grid");
        };
        let mut spec = pathd_engine::FlowSpec::new(Point::new(gx, gy));
        spec.size = size;
        match pathd_engine::FlowField::new(&e.grid, &spec) {
            Ok(f) => {
                s.out = f.directions().to_vec();
                s.out.len() as i32
            }
            Err(err) => fail(s, -3, &err.to_string()),
        }
    })
}

/// Appends `[x0,y0,x1,y1,...]` to `json`.
fn points(json: &mut String, pts: &[Point]) {
    json.push('[');
    for (i, p) in pts.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        let _ = write!(json, "{},{}", p.x, p.y);
    }
    json.push(']');
}

/// The answer's bytes (see the crate docs).
fn encode(
    r: &pathd_engine::SearchResult,
    t: Option<&pathd_engine::trace::Trace>,
    width: u32,
) -> Vec<u8> {
    let mut j = String::new();
    let _ = write!(
        j,
        "{{\"status\":\"{}\",\"algorithm\":\"{}\",\"cost\":{:?},\"path_cost\":{:?},\"expanded\":{},\"generated\":{},\"optimal\":{}",
        r.status.as_str(),
        r.algorithm.as_str(),
        r.smoothed_length.unwrap_or(r.cost),
        r.cost,
        r.stats.expanded,
        r.stats.generated,
        r.keeps_guarantee,
    );
    if let Some(l) = r.limit {
        let name = match l {
            pathd_engine::LimitKind::Expansions => "expansions",
            pathd_engine::LimitKind::Deadline => "timeout",
            pathd_engine::LimitKind::Cancelled => "cancelled",
        };
        let _ = write!(j, ",\"limit\":\"{name}\"");
    }
    j.push_str(",\"path\":");
    points(&mut j, &r.path);
    if let Some(w) = &r.waypoints {
        j.push_str(",\"waypoints\":");
        points(&mut j, w);
    }
    if let Some(c) = r.smoothed_length {
        let _ = write!(j, ",\"waypoints_cost\":{c:?}");
    }
    if let Some(t) = t {
        let _ = write!(
            j,
            ",\"trace\":{{\"events\":{},\"expansions\":{},\"truncated\":{},\"weight\":{:?}}}",
            t.events.len(),
            t.expansions,
            t.truncated,
            t.weight
        );
    }
    j.push('}');
    let mut out = Vec::with_capacity(8 + j.len() + t.map_or(0, |t| 32 * t.events.len()));
    out.extend_from_slice(&(j.len() as u32).to_le_bytes());
    out.extend_from_slice(j.as_bytes());
    while out.len() % 8 != 0 {
        out.push(0);
    }
    if let Some(t) = t {
        let idx = |p: Point| p.y * width + p.x;
        for e in &t.events {
            let kind: u32 = match e.kind {
                TraceKind::Expand => 0,
                TraceKind::Push => 1,
                TraceKind::Decrease => 2,
                TraceKind::Reopen => 3,
            };
            out.extend_from_slice(&idx(e.node).to_le_bytes());
            out.extend_from_slice(&(idx(e.parent) | kind << 28).to_le_bytes());
            out.extend_from_slice(&e.g.to_le_bytes());
            out.extend_from_slice(&e.h.to_le_bytes());
            out.extend_from_slice(&e.f.to_le_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer() -> String {
        with(|s| {
            let n = u32::from_le_bytes(s.out[..4].try_into().unwrap()) as usize;
            String::from_utf8(s.out[4..4 + n].to_vec()).unwrap()
        })
    }

    #[test]
    fn a_parsed_map_answers_like_the_engine() {
        let text = "type octile\nheight 3\nwidth 3\nmap\n...\n.@.\n...\n";
        let h = unsafe { pathd_grid_parse(text.as_ptr(), text.len()) };
        assert!(h > 0);
        assert_eq!((pathd_grid_width(h), pathd_grid_height(h)), (3, 3));
        assert_eq!(
            pathd_find_path(h, 0, 0, 2, 2, 0, 1.0, 0, 1, -1.0, 4, 1, 1000),
            0
        );
        let j = answer();
        assert!(j.contains("\"status\":\"found\""), "{j}");
        assert!(j.contains("\"cost\":4.0"), "{j}");
        assert!(j.contains("\"optimal\":true"), "{j}");
        // Manhattan (1 + index 1) on an octile map: flagged.
        assert_eq!(
            pathd_find_path(h, 0, 0, 2, 2, 0, 1.0, 2, 1, -1.0, 0, 1, 0),
            0
        );
        assert!(answer().contains("\"optimal\":false"));
        // A patch walls the goal in; a blocked goal is an error.
        let cells = [2u32, 2, 0];
        assert_eq!(unsafe { pathd_grid_patch(h, cells.as_ptr(), 1) }, 1);
        assert_eq!(
            pathd_find_path(h, 0, 0, 2, 2, 0, 1.0, 0, 1, -1.0, 0, 1, 0),
            -3
        );
        pathd_grid_free(h);
        assert_eq!(pathd_grid_width(h), -1);
    }
}
