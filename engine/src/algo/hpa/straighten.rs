//! Botea-style straightening of a refined cell path.
//!
//! Refined HPA* paths bend towards transition cells at every cluster border. From each path
//! cell we cast straight rays in the map's move directions (8, or 4 on cardinal maps); a ray
//! that meets the path further on, and costs less than the stretch of path it would replace,
//! replaces that stretch. We take the hit furthest along the path, jump there and continue.
//!
//! What keeps it cheap (rays are long, up to 256 steps, because on open maps long rays are
//! what removes the last few tenths of a percent): a ray stops at a wall, when it leaves the
//! bounding box of the path cells it could still usefully meet (a stretch at most twice its
//! length: the detours HPA* leaves are small), and as soon as it
//! runs along the path (two hits in a row: anything further is found again from where the
//! path leaves the ray). A ray only takes legal steps (no corner cutting), and a final pass
//! cuts out any loop a ray may have closed, so the result is legal and never costs more than
//! the input.

use crate::grid::{DIAG_SIDES, DIRS, Grid, Movement, SQRT2};

/// "Is this cell on the path, and where": a bitset over the map answers the first question
/// from L2 (rays mostly miss), a map-sized index array the second, only on hits. Both are
/// cleared by walking the path again, so a pass costs nothing proportional to the map.
#[derive(Default)]
pub(super) struct Straightener {
    bits: Vec<u64>,
    pos: Vec<u32>,
    prefix: Vec<f64>,
    out: Vec<u32>,
    /// `[x0, y0, x1, y1]` of each block of `BLOCK` path cells.
    boxes: Vec<[i64; 4]>,
}

/// Path cells per bounding box.
const BLOCK: usize = 16;

/// Longest stretch of path a ray may replace, in multiples of the ray's length.
const DETOUR: usize = 2;

impl Straightener {
    #[inline]
    fn has(&self, c: usize) -> bool {
        self.bits[c >> 6] & (1 << (c & 63)) != 0
    }

    #[inline]
    fn put(&mut self, c: usize, i: usize) {
        self.bits[c >> 6] |= 1 << (c & 63);
        self.pos[c] = i as u32;
    }

    #[inline]
    fn clear(&mut self, c: usize) {
        self.bits[c >> 6] &= !(1 << (c & 63));
    }

    /// Straightens `path` (padded cells, legal steps) in place, with rays of at most
    /// `max_ray` steps.
    pub(super) fn straighten(&mut self, grid: &Grid, path: &mut Vec<u32>, max_ray: u32) {
        if path.len() < 3 {
            return;
        }
        let cells = grid.cells();
        let off = grid.offsets();
        let pw = grid.padded_width() as i64;
        let dirs = if grid.movement() == Movement::Octile {
            8
        } else {
            4
        };
        let step_cost = |a: u32, b: u32| {
            let d = (b as i64 - a as i64).abs();
            let len = if d == 1 || d == pw { 1.0 } else { SQRT2 };
            len * (cells[a as usize] as f64 + cells[b as usize] as f64) * 0.5
        };
        if self.pos.len() < cells.len() {
            self.pos.resize(cells.len(), 0);
            self.bits.resize(cells.len().div_ceil(64), 0);
        }

        // Where each cell sits on the path (its last occurrence), and prefix costs.
        self.prefix.clear();
        self.prefix.push(0.0);
        for (i, &c) in path.iter().enumerate() {
            self.put(c as usize, i);
            if i > 0 {
                let last = self.prefix[i - 1];
                self.prefix.push(last + step_cost(path[i - 1], c));
            }
        }

        // Bounding boxes of blocks of path cells. A ray of `len` steps that meets the path
        // at `j` replaces a stretch of `j - i >= len` steps; we only look for stretches up to
        // `DETOUR` times the ray (plus a block), so a ray stops once it leaves the box of
        // the path cells it could still meet that way.
        self.boxes.clear();
        for chunk in path.chunks(BLOCK) {
            let mut b = [i64::MAX, i64::MAX, i64::MIN, i64::MIN];
            for &c in chunk {
                let (x, y) = (c as i64 % pw, c as i64 / pw);
                b = [b[0].min(x), b[1].min(y), b[2].max(x), b[3].max(y)];
            }
            self.boxes.push(b);
        }
        let last_block = self.boxes.len() - 1;

        self.out.clear();
        self.out.push(path[0]);
        let mut i = 0usize;
        while i + 1 < path.len() {
            let p = path[i];
            let mut best_j = i + 1;
            let mut best_ray = None;
            // The ray along the next step only retraces the path; the one back along the
            // previous step only meets earlier cells.
            let ahead = code(pw, p, path[i + 1]);
            let back = if i > 0 {
                code(pw, p, path[i - 1])
            } else {
                usize::MAX
            };
            for k in (0..dirs).filter(|&k| k != ahead && k != back) {
                let mut cur = p as usize;
                let mut cost = 0.0;
                let mut last_hit = usize::MAX;
                let (dx, dy) = DIRS[k];
                let (mut x, mut y) = (p as i64 % pw, p as i64 / pw);
                let mut upto = i / BLOCK;
                let mut bx = self.boxes[upto];
                for len in 1..=max_ray {
                    let want = ((i + DETOUR * len as usize + BLOCK) / BLOCK).min(last_block);
                    while upto < want {
                        upto += 1;
                        let b = self.boxes[upto];
                        bx = [
                            bx[0].min(b[0]),
                            bx[1].min(b[1]),
                            bx[2].max(b[2]),
                            bx[3].max(b[3]),
                        ];
                    }
                    let next = cur.wrapping_add_signed(off[k]);
                    x += dx as i64;
                    y += dy as i64;
                    if cells[next] == 0 || x < bx[0] || x > bx[2] || y < bx[1] || y > bx[3] {
                        break;
                    }
                    if k >= 4 {
                        let (a, b) = DIAG_SIDES[k - 4];
                        let side_a = cells[cur.wrapping_add_signed(off[a])];
                        let side_b = cells[cur.wrapping_add_signed(off[b])];
                        if side_a == 0 || side_b == 0 {
                            break;
                        }
                    }
                    cost += step_cost(cur as u32, next as u32);
                    cur = next;
                    if !self.has(cur) {
                        continue;
                    }
                    let j = self.pos[cur] as usize;
                    let stretch = self.prefix[j] - self.prefix[i];
                    if j > best_j && cost < stretch - 1e-9 * stretch {
                        best_j = j;
                        best_ray = Some((k, len));
                    }
                    // Two hits in a row: the ray now runs along the path, and whatever lies
                    // beyond is found from the cell where the path leaves the ray.
                    if j == last_hit.wrapping_add(1) {
                        break;
                    }
                    last_hit = j;
                }
            }
            match best_ray {
                Some((k, len)) => {
                    let mut cur = p as usize;
                    for _ in 0..len {
                        cur = cur.wrapping_add_signed(off[k]);
                        self.out.push(cur as u32);
                    }
                }
                None => self.out.push(path[best_j]),
            }
            i = best_j;
        }
        for &c in path.iter() {
            self.clear(c as usize);
        }

        // Cut loops: a cell seen twice means the stretch between is a detour.
        path.clear();
        for k in 0..self.out.len() {
            let c = self.out[k] as usize;
            if self.has(c) {
                let keep = self.pos[c] as usize + 1;
                for &gone in &path[keep..] {
                    self.clear(gone as usize);
                }
                path.truncate(keep);
            } else {
                self.put(c, path.len());
                path.push(c as u32);
            }
        }
        for &c in path.iter() {
            self.clear(c as usize);
        }
    }
}

/// `DIRS` index of the step between adjacent padded cells `a` and `b`.
#[inline]
fn code(pw: i64, a: u32, b: u32) -> usize {
    let d = b as i64 - a as i64;
    let (dy, dx) = if d > pw / 2 {
        (1, d - pw)
    } else if d < -pw / 2 {
        (-1, d + pw)
    } else {
        (0, d)
    };
    match (dx, dy) {
        (0, -1) => 0,
        (1, 0) => 1,
        (0, 1) => 2,
        (-1, 0) => 3,
        (1, -1) => 4,
        (1, 1) => 5,
        (-1, 1) => 6,
        _ => 7,
    }
}
