//! Passability as bit planes: one bit per cell, by rows and by columns, shared between
//! versions chunk by chunk. A grid keeps its own ([`Grid::jps_planes`](super::Grid)); the
//! algorithms that scan 64 cells at a time (JPS, see `algo::jps`) read them. The planes are
//! the grid's data, not an algorithm's: how a scan finds a jump point stays in `algo::jps`.

use std::sync::Arc;

use super::{ChangeList, Grid, Point};
/// Passability as bit planes for word-at-a-time scans: one bit per padded cell (1 = open),
/// once by rows and once by columns (the transpose), every line with a 64-bit margin of
/// zeros on both sides so a 64-bit window never leaves its line. A vertical scan is then a
/// horizontal scan of the column plane: 64 cells per step in every direction.
///
/// Built in one pass over the grid (`O(cells)`, 1/4 byte per cell). The lines are stored in
/// shared chunks (see [`Plane`]), so a patched grid derives its planes from its
/// predecessor's ([`Planes::derive`]) by copying only the chunks holding the rows and columns
/// of the changed cells: the first JPS query after a patch costs about what the next one does.
pub(crate) struct Planes {
    /// Width of the padded grid.
    pub(crate) pw: usize,
    /// Words per row line and per column line.
    rw: usize,
    cw: usize,
    /// The row plane: line `y` holds padded row `y`.
    pub(crate) rows: Plane,
    /// The column plane: line `x` holds padded column `x`.
    pub(crate) cols: Plane,
}

/// Lines per shared chunk of a plane, as a shift (32 lines).
const CHUNK_SHIFT: usize = 5;

/// One plane: lines of `lw` words, in shared chunks of 32 lines.
///
/// Why 32: deriving a plane copies every chunk pointer (a reference-count increment each)
/// and the chunk of each changed line. On a 4096x4096 map that is 129 pointers and one
/// 17 KB chunk per plane; measured on that map (the time a trivial JPS query takes first
/// on a patched version), 16-line and 64-line chunks derive no faster.
/// Why one level: a scan looks its three lines up through one pointer (see
/// [`Plane::lines3`]), as fast as one flat array; a second level of sharing made JPS
/// measurably slower.
#[derive(Clone)]
pub(crate) struct Plane {
    lw: usize,
    chunks: Vec<Arc<[u64]>>,
}

impl Plane {
    /// From all lines' words, line after line.
    fn from_words(words: Vec<u64>, lw: usize) -> Self {
        let chunks = words.chunks(lw << CHUNK_SHIFT).map(Arc::from).collect();
        Plane { lw, chunks }
    }

    /// Line `l`.
    #[inline(always)]
    fn line(&self, l: usize) -> &[u64] {
        let o = (l & ((1 << CHUNK_SHIFT) - 1)) * self.lw;
        &self.chunks[l >> CHUNK_SHIFT][o..o + self.lw]
    }

    /// Lines `l - 1`, `l` and `l + 1`: one chunk lookup when they share a chunk (30 lines in
    /// 32), the scans' common case.
    #[inline(always)]
    pub(crate) fn lines3(&self, l: usize) -> (&[u64], &[u64], &[u64]) {
        let k = l & ((1 << CHUNK_SHIFT) - 1);
        if k == 0 || k == (1 << CHUNK_SHIFT) - 1 {
            return (self.line(l - 1), self.line(l), self.line(l + 1));
        }
        let lw = self.lw;
        let chunk = &self.chunks[l >> CHUNK_SHIFT][(k - 1) * lw..(k + 2) * lw];
        let (a, rest) = chunk.split_at(lw);
        let (cur, b) = rest.split_at(lw);
        (a, cur, b)
    }

    /// Sets bit `b` of line `l` to `open`, copying the chunk if it is shared.
    fn set(&mut self, l: usize, b: usize, open: bool) {
        if (self.line(l)[b / 64] >> (b % 64) & 1 == 1) == open {
            return;
        }
        let chunk = &mut self.chunks[l >> CHUNK_SHIFT];
        if Arc::get_mut(chunk).is_none() {
            *chunk = Arc::from(&chunk[..]);
        }
        let words = Arc::get_mut(chunk).expect("unique after the copy");
        words[(l & ((1 << CHUNK_SHIFT) - 1)) * self.lw + b / 64] ^= 1 << (b % 64);
    }
}

/// Whether bits `lo..=hi` of `line` are all set.
#[inline(always)]
fn all_set(line: &[u64], lo: usize, hi: usize) -> bool {
    let (first, last) = (lo / 64, hi / 64);
    let from = !0u64 << (lo % 64);
    let to = !0u64 >> (63 - hi % 64);
    if first == last {
        return line[first] & from & to == from & to;
    }
    line[first] & from == from
        && line[first + 1..last].iter().all(|&w| w == !0)
        && line[last] & to == to
}

/// Bit position of padded coordinate 0 within a line.
pub(crate) const MARGIN: usize = 64;

impl Planes {
    pub(crate) fn new(grid: &Grid) -> Self {
        let pw = grid.padded_width();
        let ph = grid.padded_len() / pw;
        let rw = (pw + 2 * MARGIN) / 64 + 2;
        let cw = (ph + 2 * MARGIN) / 64 + 2;
        let mut rows = vec![0u64; rw * ph];
        let mut cols = vec![0u64; cw * pw];
        let cells = grid.cells();
        for (y, line) in cells.chunks_exact(pw).enumerate() {
            for (x, &c) in line.iter().enumerate() {
                if c != 0 {
                    let b = x + MARGIN;
                    rows[y * rw + b / 64] |= 1 << (b % 64);
                    let b = y + MARGIN;
                    cols[x * cw + b / 64] |= 1 << (b % 64);
                }
            }
        }
        Planes {
            pw,
            rw,
            cw,
            rows: Plane::from_words(rows, rw),
            cols: Plane::from_words(cols, cw),
        }
    }

    /// The planes of `grid`, a later version of the grid these planes were made for, whose
    /// cells differ from it at most at `changes`. Copies the chunk pointers and the chunks
    /// holding changed rows and columns.
    pub(crate) fn derive(&self, grid: &Grid, changes: &ChangeList) -> Self {
        debug_assert_eq!(self.pw, grid.padded_width());
        let mut rows = self.rows.clone();
        let mut cols = self.cols.clone();
        changes.for_each(|p| {
            let open = grid.is_passable(p);
            let (x, y) = (p.x as usize + 1, p.y as usize + 1);
            rows.set(y, x + MARGIN, open);
            cols.set(x, y + MARGIN, open);
        });
        Planes {
            pw: self.pw,
            rw: self.rw,
            cw: self.cw,
            rows,
            cols,
        }
    }

    /// Whether every step of the run from `a` to `b` is legal, for the unpadded ends of a
    /// straight or diagonal run (as JPS's jump points are joined): every cell of a straight
    /// run open, and for a diagonal run also both side cells of each step. Read a line at
    /// a time: a straight run is one range of one line (a row, or a column of the column
    /// plane), a diagonal one two or three cells of each row it crosses.
    pub(crate) fn run_open(&self, a: Point, b: Point) -> bool {
        let (ax, ay) = (a.x as usize + 1, a.y as usize + 1);
        let (bx, by) = (b.x as usize + 1, b.y as usize + 1);
        if ay == by {
            return all_set(self.rows.line(ay), ax.min(bx) + MARGIN, ax.max(bx) + MARGIN);
        }
        if ax == bx {
            return all_set(self.cols.line(ax), ay.min(by) + MARGIN, ay.max(by) + MARGIN);
        }
        debug_assert_eq!(ax.abs_diff(bx), ay.abs_diff(by), "a diagonal run");
        let k = ay.abs_diff(by);
        // Row `j` of the run (from `a`) holds the run's cell `j`, the side cell of step
        // `j - 1` beside it (offset `j - 1`) and that of step `j` (offset `j + 1`).
        let (down, right) = (by > ay, bx > ax);
        for j in 0..=k {
            let y = if down { ay + j } else { ay - j };
            let (lo, hi) = (j.saturating_sub(1), (j + 1).min(k));
            let (x0, x1) = if right {
                (ax + lo, ax + hi)
            } else {
                (ax - hi, ax - lo)
            };
            if !all_set(self.rows.line(y), x0 + MARGIN, x1 + MARGIN) {
                return false;
            }
        }
        true
    }

    /// Whether padded `(x, y)` is open, from the row plane.
    #[inline]
    pub(crate) fn open(&self, x: usize, y: usize) -> bool {
        let b = x + MARGIN;
        self.rows.line(y)[b / 64] >> (b % 64) & 1 == 1
    }
}
