//! The cells of a path written as JSON: assembled in blocks on the stack, numbers from a
//! table of the small ones.

use pathd_engine::Point;

use super::{PathCells, PathFormat};

/// Most bytes one cell takes (`,[4294967295,4294967295]`), with room for the four bytes
/// [`number`] writes for a shorter number.
const CELL_MAX: usize = 28;

/// Appends the cells as their format writes them: cells are assembled in a block on the
/// stack and the block appended when full, so the buffer sees one copy per block instead
/// of a capacity check per byte (which, with a `memcpy` call per cell before it, cost more
/// than the search on long paths).
pub(super) fn put_cells(buf: &mut Vec<u8>, cells: &PathCells) {
    buf.reserve(cells.json_len_bound());
    buf.push(b'[');
    let mut out = Block::default();
    match cells.format {
        PathFormat::Pairs => {
            for (i, &p) in cells.cells.iter().enumerate() {
                out.pair(buf, p, i == 0);
            }
        }
        PathFormat::Turns => {
            let c = &cells.cells;
            if let Some(&first) = c.first() {
                out.pair(buf, first, true);
            }
            // The middle cells where the step changes (see `is_turn`), then the last.
            for w in c.windows(3) {
                if step(w[0], w[1]) != step(w[1], w[2]) {
                    out.pair(buf, w[1], false);
                }
            }
            if let [_, .., last] = c[..] {
                out.pair(buf, last, false);
            }
        }
        PathFormat::Flat => {
            for (i, &p) in cells.cells.iter().enumerate() {
                out.flat(buf, p, i == 0);
            }
        }
    }
    out.flush(buf);
    buf.push(b']');
}

/// The step from `a` to `b`.
pub(super) fn step(a: Point, b: Point) -> (i64, i64) {
    (
        i64::from(b.x) - i64::from(a.x),
        i64::from(b.y) - i64::from(a.y),
    )
}

/// Cells written but not yet appended (see [`put_cells`]).
struct Block {
    bytes: [u8; 64 * CELL_MAX],
    len: usize,
}

impl Default for Block {
    fn default() -> Self {
        Block {
            bytes: [0; 64 * CELL_MAX],
            len: 0,
        }
    }
}

impl Block {
    /// Room for one more cell, appending the block to `buf` when full.
    fn room(&mut self, buf: &mut Vec<u8>) -> usize {
        if self.len + CELL_MAX > self.bytes.len() {
            self.flush(buf);
        }
        self.len
    }

    fn flush(&mut self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(&self.bytes[..self.len]);
        self.len = 0;
    }

    /// `,[x,y]` (no comma before the first).
    fn pair(&mut self, buf: &mut Vec<u8>, p: Point, first: bool) {
        let mut n = self.room(buf);
        let out = &mut self.bytes;
        if !first {
            out[n] = b',';
            n += 1;
        }
        out[n] = b'[';
        n = number(p.x, out, n + 1);
        out[n] = b',';
        n = number(p.y, out, n + 1);
        out[n] = b']';
        self.len = n + 1;
    }

    /// `,x,y` (no comma before the first).
    fn flat(&mut self, buf: &mut Vec<u8>, p: Point, first: bool) {
        let mut n = self.room(buf);
        let out = &mut self.bytes;
        if !first {
            out[n] = b',';
            n += 1;
        }
        n = number(p.x, out, n);
        out[n] = b',';
        self.len = number(p.y, out, n + 1);
    }
}

/// The decimal digits of every number below 10 000, left-aligned in four bytes (the rest
/// zero): a cell's coordinates are written with one four-byte copy each.
static SMALL: [[u8; 4]; 10_000] = small_numbers();

const fn small_numbers() -> [[u8; 4]; 10_000] {
    let mut table = [[0u8; 4]; 10_000];
    let mut n = 0;
    while n < 10_000 {
        let digits = [n / 1000, n / 100 % 10, n / 10 % 10, n % 10];
        let skip = 4 - digits_of(n as u32);
        let mut i = 0;
        while i + skip < 4 {
            table[n][i] = b'0' + digits[i + skip] as u8;
            i += 1;
        }
        n += 1;
    }
    table
}

/// How many digits `n` has, for `n` below 10 000.
const fn digits_of(n: u32) -> usize {
    1 + (n >= 10) as usize + (n >= 100) as usize + (n >= 1000) as usize
}

/// Writes `n` in decimal into `out` from `at` (at most 10 bytes, and up to 4 bytes are
/// written even for a shorter number: the caller leaves that room); returns the end.
#[inline]
pub(super) fn number(n: u32, out: &mut [u8], at: usize) -> usize {
    if n < 10_000 {
        out[at..at + 4].copy_from_slice(&SMALL[n as usize]);
        return at + digits_of(n);
    }
    let mut digits = itoa::Buffer::new();
    let s = digits.format(n).as_bytes();
    out[at..at + s.len()].copy_from_slice(s);
    at + s.len()
}
