//! Precomputed Jump Point Search (JPS+, Rabin's "JPS+" in Game AI Pro 2, 2015) for uniform
//! octile maps, with a jump table that is **kept current under patches**: a patched map's
//! table is derived from its predecessor's by recomputing only the entries the patch can
//! change ([`JumpTable::update`]), and equals a fresh build bit for bit.
//!
//! # The table
//!
//! For every cell and each of the eight directions (N, E, S, W, NE, SE, SW, NW) one `i16`:
//! `d > 0` means the first jump point in that direction is `d` steps away; `d <= 0` means
//! there is none before a wall or an illegal diagonal step, and `-d` steps are possible. A
//! blocked cell has all zeros. "Jump point" is exactly what [`super::jps`] scans for, so the
//! two searches expand the same kind of nodes:
//!
//! - straight, say east from `p`: the first cell `q` where a side cell of `q - 1` is blocked
//!   while the same side cell of `q` is open (a forced neighbour, no corner cutting);
//! - diagonal, say north-east: the first cell on the ray (every step legal, i.e. both side
//!   cells of the step open) whose east or north entry is a jump point (`> 0`).
//!
//! Both are one recurrence along the direction `dir`: the entry of `p` is a function of the
//! cells around `p` and `p + dir` and of the entries of `p + dir` ([`compute`]): its own
//! direction's, and for a diagonal its two straight components'. A fresh build evaluates it
//! downstream first; 16 bytes a cell (`Berlin_1_1024`: 16.8 MB).
//!
//! # The goal
//!
//! The table knows no goal, so the search adds the checks JPS+ needs ("goal bounding" in
//! the sense of Rabin's target jump points): a straight move stops at the goal when the goal
//! lies ahead on its line within reach (`|d|` steps); a diagonal move from `p` stops at the
//! one cell of its ray that shares the goal's row or column with the goal still ahead of
//! the matching arm (`min(kx, ky)` steps, where `kx`, `ky` > 0 are the goal's distances
//! ahead along each axis), when that cell is within reach and not beyond the ray's jump
//! point. That is the only ray cell whose arm can meet the goal, so the scan-based search
//! stops there too when the arm reaches it; if the arm does not, the ray just goes on from
//! there (an extra stop never changes a cost: the edges are the same straight runs).
//!
//! # Why updating only the seeds and their upstream chains is enough
//!
//! Write `E(p)` for the entry of cell `p` in direction `dir`. [`compute`] reads only:
//! (a) the passability of `p`, `p + dir` and the side cells of `p` and `p + dir` (straight)
//! or of the step's two side cells (diagonal); (b) for a diagonal, whether the straight
//! entries of `p + dir` along its two components are positive; (c) `E(p + dir)`. After a
//! patch, `E(p)` can differ from the old table only if one of these inputs differs. Inputs
//! (a) differ only for the cells within one step of a changed cell (the `seeds` below);
//! inputs (b) differ only where a straight entry's sign flipped, which the straight pass
//! records; input (c) differs only if `E(p + dir)` changed. So [`JumpTable::update`] runs the
//! four straight directions first, then the four diagonals, and per direction recomputes
//! every seed, and then walks upstream (`p - dir`, `p - 2 dir`, ...) from each cell whose
//! entry changed until one comes out unchanged. Seeds are taken downstream first (descending
//! padded index when `dir` points to higher indices), so `E(p + dir)` is final whenever
//! `E(p)` is computed: a later seed lies upstream of every earlier one on its line, and a
//! walk only moves upstream. Every cell whose entry could differ is thus recomputed from
//! final inputs, and every other cell's old entry equals the fresh one: the result is the
//! fresh table, which the tests check bit for bit on random patch sequences.
//!
//! The work is the seeds (a few per changed cell, plus the cells where a straight jump
//! flipped between "jump point" and "wall") plus the entries that actually change, not the
//! map: a patch changes whole rows, columns and diagonals only when it changes what their
//! rays find. The table is stored in shared chunks of 1024 cells, so a derived version
//! copies only the chunks it writes into.

mod expand;

use std::sync::Arc;

use crate::grid::{Grid, Movement, Point};
pub(crate) use expand::search;

/// The eight directions in the grid's documented order (N, E, S, W, NE, SE, SW, NW); the
/// first four are straight.
const DIRS: [(isize, isize); 8] = [
    (0, -1),
    (1, 0),
    (0, 1),
    (-1, 0),
    (1, -1),
    (1, 1),
    (-1, 1),
    (-1, -1),
];

/// Index in [`DIRS`] of a direction (a table lookup: the search calls this with directions
/// known only at run time, where a `match` compiled to branches).
#[inline(always)]
const fn dir_index(dx: isize, dy: isize) -> usize {
    // By `(dy + 1) * 3 + dx + 1`; the centre (no move) is never asked for.
    const BY_OFFSET: [u8; 9] = [7, 0, 4, 3, 0, 1, 6, 2, 5];
    BY_OFFSET[((dy + 1) * 3 + dx + 1) as usize] as usize
}

/// The two straight components (arms) of each diagonal direction `4..8`, as [`DIRS`] indices
/// `(dx, 0)` and `(0, dy)`: fixed per direction, so the search reads them instead of working
/// them out at every ray.
const ARMS: [(usize, usize); 4] = {
    let mut t = [(0, 0); 4];
    let mut d = 0;
    while d < 4 {
        let (dx, dy) = DIRS[4 + d];
        t[d] = (dir_index(dx, 0), dir_index(0, dy));
        d += 1;
    }
    t
};

/// For each straight direction `0..4`, its two sides as [`DIRS`] indices `(side, back,
/// forward)`: the side `s` itself, the diagonal `s - dir` towards the cell beside the previous
/// one, and the diagonal `dir + s` (see the forced-side rule of `PlusExpander`, `expand.rs`).
const SIDES: [[(usize, usize, usize); 2]; 4] = {
    let mut t = [[(0, 0, 0); 2]; 4];
    let mut d = 0;
    while d < 4 {
        let (dx, dy) = DIRS[d];
        let sides = if dy == 0 {
            [(0, -1), (0, 1)]
        } else {
            [(-1, 0), (1, 0)]
        };
        let mut k = 0;
        while k < 2 {
            let (sx, sy) = sides[k];
            t[d][k] = (
                dir_index(sx, sy),
                dir_index(sx - dx, sy - dy),
                dir_index(dx + sx, dy + sy),
            );
            k += 1;
        }
        d += 1;
    }
    t
};

/// One cell's entries, by [`DIRS`] index.
type Entry = [i16; 8];

/// Cells per shared chunk, as a shift (1024 cells, 16 KB).
const CHUNK_SHIFT: usize = 10;
const CHUNK: usize = 1 << CHUNK_SHIFT;

/// The JPS+ jump table of one octile map version (see the module docs).
#[derive(Clone, PartialEq, Eq)]
pub struct JumpTable {
    width: u32,
    height: u32,
    /// Padded width (the grid's, one blocked cell of border on each side).
    pw: usize,
    /// Entries by padded index, in chunks of [`CHUNK`] cells (the last one filled up with
    /// zeros); chunks are shared between versions until written.
    chunks: Vec<Arc<[Entry]>>,
}

impl std::fmt::Debug for JumpTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JumpTable")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("memory_bytes", &self.memory_bytes())
            .finish()
    }
}

/// The entry of padded cell `p` in direction `dir`, from the cells (`cells`, padded, 0 =
/// blocked) and the entries downstream (`at(q)`, final for `q = p + dir`). The one
/// recurrence both [`JumpTable::build`] and [`JumpTable::update`] evaluate.
#[inline(always)]
fn compute(cells: &[u8], pw: usize, p: usize, dir: usize, at: impl Fn(usize) -> Entry) -> i16 {
    if cells[p] == 0 {
        return 0;
    }
    let (dx, dy) = DIRS[dir];
    let q = p.wrapping_add_signed(dy * pw as isize + dx);
    if cells[q] == 0 {
        return 0;
    }
    let next = if dir < 4 {
        let side = if dy == 0 { pw as isize } else { 1 };
        let forced =
            |s: isize| cells[p.wrapping_add_signed(s)] == 0 && cells[q.wrapping_add_signed(s)] != 0;
        if forced(side) || forced(-side) {
            return 1;
        }
        at(q)
    } else {
        if cells[p.wrapping_add_signed(dx)] == 0
            || cells[p.wrapping_add_signed(dy * pw as isize)] == 0
        {
            return 0;
        }
        let e = at(q);
        if e[dir_index(dx, 0)] > 0 || e[dir_index(0, dy)] > 0 {
            return 1;
        }
        e
    };
    let v = next[dir];
    if v > 0 { v + 1 } else { v - 1 }
}

impl JumpTable {
    /// Builds the table of an octile grid (`None` for cardinal movement, which has no table).
    ///
    /// `O(cells)`: eight passes, each evaluating [`compute`] downstream first.
    ///
    /// ```
    /// use pathd_engine::{Grid, JumpTable, Movement};
    /// let grid = Grid::from_costs(4, 1, vec![1, 1, 1, 0], Movement::Octile).unwrap();
    /// let t = JumpTable::build(&grid).unwrap();
    /// assert!(t.fits(&grid));
    /// assert!(t.memory_bytes() >= 6 * 3 * 16);
    /// ```
    pub fn build(grid: &Grid) -> Option<JumpTable> {
        if grid.movement() != Movement::Octile {
            return None;
        }
        let pw = grid.padded_width();
        let len = grid.padded_len();
        let ph = len / pw;
        let cells = grid.cells();
        let mut flat = vec![[0i16; 8]; len.div_ceil(CHUNK) * CHUNK];
        for (dir, &(dx, dy)) in DIRS.iter().enumerate() {
            // Downstream first: rows against dy, cells within a row against dx.
            for yi in 1..ph - 1 {
                let y = if dy > 0 { ph - 1 - yi } else { yi };
                for xi in 1..pw - 1 {
                    let x = if dx > 0 { pw - 1 - xi } else { xi };
                    let p = y * pw + x;
                    let v = compute(&cells, pw, p, dir, |q| flat[q]);
                    flat[p][dir] = v;
                }
            }
        }
        Some(JumpTable {
            width: grid.width(),
            height: grid.height(),
            pw,
            chunks: flat.chunks(CHUNK).map(Arc::from).collect(),
        })
    }

    /// Whether this table can serve `grid`: same size, octile movement. (Being built for
    /// this very version of the map is the caller's business, as for HPA*.)
    pub fn fits(&self, grid: &Grid) -> bool {
        grid.width() == self.width
            && grid.height() == self.height
            && grid.movement() == Movement::Octile
    }

    /// Heap bytes the table holds (chunks shared with another version counted in full).
    pub fn memory_bytes(&self) -> usize {
        self.chunks.len() * (CHUNK * size_of::<Entry>() + size_of::<Arc<[Entry]>>())
    }

    /// The eight entries of cell `p` (N, E, S, W, NE, SE, SW, NW; see the module docs).
    ///
    /// ```
    /// use pathd_engine::{Grid, JumpTable, Movement, Point};
    /// // Row 1 east from (0, 1): (1, 0) is a wall and (2, 0) open, so (2, 1) is a jump point
    /// // two steps away; north of (0, 1) one open cell, then the edge.
    /// let grid = Grid::from_costs(3, 2, vec![1, 0, 1, 1, 1, 1], Movement::Octile).unwrap();
    /// let t = JumpTable::build(&grid).unwrap();
    /// let e = t.entries(Point::new(0, 1));
    /// assert_eq!((e[1], e[0]), (2, -1));
    /// ```
    pub fn entries(&self, p: Point) -> [i16; 8] {
        self.get((p.y as usize + 1) * self.pw + p.x as usize + 1)
    }

    #[inline(always)]
    fn get(&self, p: usize) -> Entry {
        self.chunks[p >> CHUNK_SHIFT][p & (CHUNK - 1)]
    }

    /// Sets entry `dir` of padded cell `p`, copying its chunk if it is shared.
    fn set(&mut self, p: usize, dir: usize, v: i16) {
        let chunk = &mut self.chunks[p >> CHUNK_SHIFT];
        if Arc::get_mut(chunk).is_none() {
            *chunk = Arc::from(&chunk[..]);
        }
        Arc::get_mut(chunk).expect("unique after the copy")[p & (CHUNK - 1)][dir] = v;
    }

    /// The table of `grid`, a later version of the map this table was built for whose cells
    /// differ from it at most at `changed` (duplicates allowed). Equal to
    /// [`JumpTable::build`]`(grid)`; recomputes only what the patch can change (module docs).
    ///
    /// ```
    /// use pathd_engine::{Grid, JumpTable, Movement, Patch, Point};
    /// let grid = Grid::from_costs(8, 8, vec![1; 64], Movement::Octile).unwrap();
    /// let t = JumpTable::build(&grid).unwrap();
    /// let patch = Patch { cells: vec![(Point::new(3, 4), 0)], rects: vec![] };
    /// let (next, changed) = grid.apply_patch(&patch).unwrap().unwrap();
    /// assert_eq!(t.update(&next, &changed), JumpTable::build(&next).unwrap());
    /// ```
    pub fn update(&self, grid: &Grid, changed: &[Point]) -> JumpTable {
        assert!(self.fits(grid), "a jump table updates only for its own map");
        let mut next = self.clone();
        let cells = grid.cells();
        let pw = self.pw as isize;
        let changed: Vec<usize> = changed.iter().map(|&p| grid.pidx(p)).collect();
        // Cells whose straight entry changed sign, per straight direction: input (b) of the
        // diagonals.
        let mut flipped: [Vec<usize>; 4] = Default::default();
        let mut seeds = Vec::new();
        for (dir, &(dx, dy)) in DIRS.iter().enumerate() {
            let step = dy * pw + dx;
            seeds.clear();
            // Input (a): every p whose compute() reads a changed cell.
            let reads: &[isize] = if dir < 4 {
                let side = if dy == 0 { pw } else { 1 };
                &[0, -step, side, -side, side - step, -side - step]
            } else {
                &[0, -step, -dx, -dy * pw]
            };
            for &c in &changed {
                seeds.extend(reads.iter().map(|&o| c.wrapping_add_signed(o)));
            }
            // Input (b): a flipped straight component at p + dir.
            if dir >= 4 {
                for s in [dir_index(dx, 0), dir_index(0, dy)] {
                    seeds.extend(flipped[s].iter().map(|&q| q.wrapping_add_signed(-step)));
                }
            }
            // Downstream first (see the module docs).
            if step > 0 {
                seeds.sort_unstable_by(|a, b| b.cmp(a));
            } else {
                seeds.sort_unstable();
            }
            seeds.dedup();
            for &seed in &seeds {
                let mut p = seed;
                loop {
                    let old = next.get(p)[dir];
                    let new = compute(&cells, self.pw, p, dir, |q| next.get(q));
                    if new == old {
                        break;
                    }
                    next.set(p, dir, new);
                    if dir < 4 && (old > 0) != (new > 0) {
                        flipped[dir].push(p);
                    }
                    // Only an open (interior) cell's entry can change, so p - dir is on the
                    // padded array.
                    p = p.wrapping_add_signed(-step);
                }
            }
        }
        next
    }
}
