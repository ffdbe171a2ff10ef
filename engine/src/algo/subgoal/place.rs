//! Subgoal placement: which cells are subgoals, as bit planes the scans read a word at a
//! time.
//!
//! A cell is a *subgoal* when it is open and, for some diagonal direction `(dx, dy)`, the
//! diagonal neighbour `(x + dx, y + dy)` is blocked while both cells beside that step,
//! `(x + dx, y)` and `(x, y + dy)`, are open: the cell just outside a convex corner of an
//! obstacle, where a taut path can bend round it (Uras, Hernández and Koenig 2013). Whether
//! a cell is a subgoal depends only on its eight neighbours, so a patch moves subgoals only
//! within one step of a changed cell ([`Placement::update`]).
//!
//! Three planes over the padded map (a ring of blocked cells, so every scan ends): `open`
//! by rows; `stop` (blocked or subgoal: where a scan for direct-h-reachable subgoals ends)
//! by rows and, transposed, by columns, so a scan in any of the four cardinal directions
//! finds its end 64 cells a step. 3/8 byte a cell.

use crate::grid::Grid;

/// The subgoals of one map version (see the module docs).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Placement {
    /// Padded width and height.
    pub pw: usize,
    pub ph: usize,
    /// Words per row line and per column line.
    rw: usize,
    cw: usize,
    /// Open cells, by rows.
    open: Vec<u64>,
    /// Blocked cells and subgoals, by rows.
    stop_r: Vec<u64>,
    /// The same, by columns.
    stop_c: Vec<u64>,
}

#[inline(always)]
fn bit(words: &[u64], i: usize) -> bool {
    words[i / 64] >> (i % 64) & 1 == 1
}

#[inline(always)]
fn put(words: &mut [u64], i: usize, on: bool) {
    let m = 1u64 << (i % 64);
    if on {
        words[i / 64] |= m;
    } else {
        words[i / 64] &= !m;
    }
}

/// The first set bit at or after `from` in `line` (some bit must be set there).
#[inline(always)]
fn next_set(line: &[u64], from: usize) -> usize {
    let mut w = from / 64;
    let mut bits = line[w] & (u64::MAX << (from % 64));
    while bits == 0 {
        w += 1;
        bits = line[w];
    }
    w * 64 + bits.trailing_zeros() as usize
}

/// The last set bit at or before `from` in `line` (some bit must be set there).
#[inline(always)]
fn prev_set(line: &[u64], from: usize) -> usize {
    let mut w = from / 64;
    let mut bits = line[w] & (u64::MAX >> (63 - from % 64));
    while bits == 0 {
        w -= 1;
        bits = line[w];
    }
    w * 64 + 63 - bits.leading_zeros() as usize
}

impl Placement {
    /// The placement of `grid` (any movement rule; the subgoal graph is only built for
    /// octile maps). `O(cells)`.
    pub(crate) fn new(grid: &Grid) -> Self {
        let pw = grid.padded_width();
        let ph = grid.padded_len() / pw;
        let (rw, cw) = (pw.div_ceil(64), ph.div_ceil(64));
        let mut p = Placement {
            pw,
            ph,
            rw,
            cw,
            open: vec![0; rw * ph],
            stop_r: vec![0; rw * ph],
            stop_c: vec![0; cw * pw],
        };
        let cells = grid.cells();
        for (i, &c) in cells.iter().enumerate() {
            if c != 0 {
                put(&mut p.open, (i / pw) * rw * 64 + i % pw, true);
            }
        }
        for y in 0..ph {
            for x in 0..pw {
                let stop = !p.open(x, y) || p.corner(x, y);
                p.set_stop(x, y, stop);
            }
        }
        p
    }

    /// Whether padded `(x, y)` is open.
    #[inline(always)]
    pub(crate) fn open(&self, x: usize, y: usize) -> bool {
        bit(&self.open, y * self.rw * 64 + x)
    }

    /// Whether padded `(x, y)` is blocked or a subgoal.
    #[inline(always)]
    pub(crate) fn stop(&self, x: usize, y: usize) -> bool {
        bit(&self.stop_r, y * self.rw * 64 + x)
    }

    /// Whether padded `(x, y)` is a subgoal.
    #[inline(always)]
    pub(crate) fn is_subgoal(&self, x: usize, y: usize) -> bool {
        self.open(x, y) && self.stop(x, y)
    }

    /// The subgoal rule of the module docs, read from the open plane (for an open interior
    /// cell).
    fn corner(&self, x: usize, y: usize) -> bool {
        if x == 0 || y == 0 || x + 1 >= self.pw || y + 1 >= self.ph {
            return false;
        }
        [(1, 1), (1, -1), (-1, 1), (-1, -1)]
            .iter()
            .any(|&(dx, dy)| {
                let (nx, ny) = (x.wrapping_add_signed(dx), y.wrapping_add_signed(dy));
                !self.open(nx, ny) && self.open(nx, y) && self.open(x, ny)
            })
    }

    fn set_stop(&mut self, x: usize, y: usize, stop: bool) {
        put(&mut self.stop_r, y * self.rw * 64 + x, stop);
        put(&mut self.stop_c, x * self.cw * 64 + y, stop);
    }

    /// The first blocked cell or subgoal east of padded `(x, y)`, as its x.
    #[inline(always)]
    pub(crate) fn east(&self, x: usize, y: usize) -> usize {
        next_set(&self.stop_r[y * self.rw..(y + 1) * self.rw], x + 1)
    }

    /// The first blocked cell or subgoal west of padded `(x, y)` (`x >= 1`), as its x.
    #[inline(always)]
    pub(crate) fn west(&self, x: usize, y: usize) -> usize {
        prev_set(&self.stop_r[y * self.rw..(y + 1) * self.rw], x - 1)
    }

    /// The first blocked cell or subgoal south of padded `(x, y)`, as its y.
    #[inline(always)]
    pub(crate) fn south(&self, x: usize, y: usize) -> usize {
        next_set(&self.stop_c[x * self.cw..(x + 1) * self.cw], y + 1)
    }

    /// The first blocked cell or subgoal north of padded `(x, y)` (`y >= 1`), as its y.
    #[inline(always)]
    pub(crate) fn north(&self, x: usize, y: usize) -> usize {
        prev_set(&self.stop_c[x * self.cw..(x + 1) * self.cw], y - 1)
    }

    /// The subgoals as padded indices, row-major.
    pub(crate) fn subgoals(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for y in 1..self.ph - 1 {
            for x in 1..self.pw - 1 {
                if self.is_subgoal(x, y) {
                    out.push((y * self.pw + x) as u32);
                }
            }
        }
        out
    }

    /// The placement of `grid`, a later version whose cells differ from this one's at most
    /// at the padded `changed` cells, and the padded cells whose state (open, blocked or
    /// subgoal) differs: the changed cells themselves and the subgoals they moved, all within
    /// one step of a changed cell (module docs).
    pub(crate) fn update(&self, grid: &Grid, changed: &[(usize, usize)]) -> (Self, Vec<usize>) {
        let mut next = self.clone();
        for &(x, y) in changed {
            let open = grid.cost(grid.ppoint(y * self.pw + x)) != 0;
            put(&mut next.open, y * self.rw * 64 + x, open);
        }
        let mut moved = Vec::new();
        for &(x, y) in changed {
            for ny in y - 1..=y + 1 {
                for nx in x - 1..=x + 1 {
                    let stop = !next.open(nx, ny) || next.corner(nx, ny);
                    let state = |p: &Placement| (p.open(nx, ny), p.stop(nx, ny));
                    next.set_stop(nx, ny, stop);
                    if state(&next) != state(self) {
                        moved.push(ny * self.pw + nx);
                    }
                }
            }
        }
        moved.sort_unstable();
        moved.dedup();
        (next, moved)
    }

    /// Heap bytes held.
    pub(crate) fn memory_bytes(&self) -> usize {
        (self.open.len() + self.stop_r.len() + self.stop_c.len()) * 8
    }
}
