//! The cells of a path written as JSON: assembled in blocks on the stack, numbers from a
//! table of the small ones.

use pathd_engine::Point;

use super::{PathCells, PathFormat};

/// Most bytes one cell takes (`,[4294967295,4294967295]`), with room for the four bytes
/// [`number`] writes for a shorter number (and for the eight-byte stores of a cell of
/// small numbers).
const CELL_MAX: usize = 28;

/// Bytes of a block: 64 cells of the longest.
const BLOCK: usize = 64 * CELL_MAX;

/// Appends the cells as their format writes them: cells are assembled in a block on the
/// stack and the block appended when full (every 64 cells, for pairs and flat), so the
/// buffer sees one copy per block instead of a capacity check per byte (which, with a
/// `memcpy` call per cell before it, cost more than the search on long paths). A cell of
/// numbers below 10 000 (every map's) is two eight-byte stores of digits from a table.
pub(super) fn put_cells(buf: &mut Vec<u8>, cells: &PathCells) {
    buf.reserve(cells.json_len_bound());
    buf.push(b'[');
    let c = &cells.cells;
    match cells.format {
        PathFormat::Pairs => put_every::<true>(buf, c),
        PathFormat::Flat => put_every::<false>(buf, c),
        PathFormat::Turns => {
            let mut out = Block::default();
            if let Some(&first) = c.first() {
                out.pair(buf, first);
            }
            // The middle cells where the step changes (see `is_turn`), then the last.
            for w in c.windows(3) {
                if step(w[0], w[1]) != step(w[1], w[2]) {
                    out.pair(buf, w[1]);
                }
            }
            if let [_, .., last] = c[..] {
                out.pair(buf, last);
            }
            out.flush(buf);
        }
    }
    buf.push(b']');
}

/// Every cell, as pairs (`PAIRS`) or flat: 64 cells at a time into a block (no room
/// check a cell: a block holds 64 of the longest), the block appended after each 64.
fn put_every<const PAIRS: bool>(buf: &mut Vec<u8>, cells: &[Point]) {
    let mut block = [0u8; BLOCK];
    for (i, run) in cells.chunks(64).enumerate() {
        let mut n = 0;
        for &p in run {
            n = match (small(p.x), small(p.y)) {
                (Some(x), Some(y)) if PAIRS => put_pair(&mut block, n, x, y),
                (Some(x), Some(y)) => put_flat(&mut block, n, x, y),
                _ if PAIRS => put_pair_large(&mut block, n, p),
                _ => put_flat_large(&mut block, n, p),
            };
        }
        // The first cell of all goes without its comma.
        buf.extend_from_slice(&block[usize::from(i == 0)..n]);
    }
}

/// `,[x,y]` at `n` for [`small`] numbers, as `,[x` and `,y]` stored eight bytes each (what
/// follows them is overwritten); returns the end.
#[inline(always)]
fn put_pair(out: &mut [u8], n: usize, (x, lx): (u32, usize), (y, ly): (u32, usize)) -> usize {
    let head = u64::from(u16::from_le_bytes([b',', b'['])) | u64::from(x) << 16;
    let tail = u64::from(b',') | u64::from(y) << 8 | u64::from(b']') << (8 + 8 * ly);
    out[n..n + 8].copy_from_slice(&head.to_le_bytes());
    let m = n + 2 + lx;
    out[m..m + 8].copy_from_slice(&tail.to_le_bytes());
    m + 2 + ly
}

/// `,x,y` at `n` for [`small`] numbers, as `,x` and `,y` stored eight bytes each (what
/// follows them is overwritten); returns the end.
#[inline(always)]
fn put_flat(out: &mut [u8], n: usize, (x, lx): (u32, usize), (y, ly): (u32, usize)) -> usize {
    let head = u64::from(b',') | u64::from(x) << 8;
    let tail = u64::from(b',') | u64::from(y) << 8;
    out[n..n + 8].copy_from_slice(&head.to_le_bytes());
    let m = n + 1 + lx;
    out[m..m + 8].copy_from_slice(&tail.to_le_bytes());
    m + 1 + ly
}

/// `,[x,y]` at `n` for any numbers; returns the end.
#[inline(never)]
fn put_pair_large(out: &mut [u8], n: usize, p: Point) -> usize {
    out[n] = b',';
    out[n + 1] = b'[';
    let m = number(p.x, out, n + 2);
    out[m] = b',';
    let m = number(p.y, out, m + 1);
    out[m] = b']';
    m + 1
}

/// `,x,y` at `n` for any numbers; returns the end.
#[inline(never)]
fn put_flat_large(out: &mut [u8], n: usize, p: Point) -> usize {
    out[n] = b',';
    let m = number(p.x, out, n + 1);
    out[m] = b',';
    number(p.y, out, m + 1)
}

/// The step from `a` to `b`.
pub(super) fn step(a: Point, b: Point) -> (i64, i64) {
    (
        i64::from(b.x) - i64::from(a.x),
        i64::from(b.y) - i64::from(a.y),
    )
}

/// Cells written but not yet appended (see [`put_cells`]), each with a comma before it
/// (the first cell's is left out when the block is appended).
struct Block {
    bytes: [u8; BLOCK],
    len: usize,
    /// Whether a cell has been appended yet.
    started: bool,
}

impl Default for Block {
    fn default() -> Self {
        Block {
            bytes: [0; BLOCK],
            len: 0,
            started: false,
        }
    }
}

impl Block {
    /// Room for one more cell, appending the block to `buf` when full.
    #[inline(always)]
    fn room(&mut self, buf: &mut Vec<u8>) -> usize {
        if self.len > BLOCK - CELL_MAX {
            self.flush(buf);
        }
        self.len
    }

    fn flush(&mut self, buf: &mut Vec<u8>) {
        // The first cell of all goes without its comma.
        let from = usize::from(!self.started && self.len > 0);
        buf.extend_from_slice(&self.bytes[from..self.len]);
        self.started |= self.len > 0;
        self.len = 0;
    }

    /// `,[x,y]`.
    #[inline(always)]
    fn pair(&mut self, buf: &mut Vec<u8>, p: Point) {
        let n = self.room(buf);
        self.len = match (small(p.x), small(p.y)) {
            (Some(x), Some(y)) => put_pair(&mut self.bytes, n, x, y),
            _ => put_pair_large(&mut self.bytes, n, p),
        };
    }
}

/// The digits of `n` below 10 000 as a little-endian word (first digit in the low byte,
/// zeros above the last) and how many there are.
#[inline(always)]
fn small(n: u32) -> Option<(u32, usize)> {
    let entry = *SMALL.get(n as usize)?;
    Some((entry as u32, (entry >> 32) as usize))
}

/// The decimal digits of every number below 10 000, left-aligned in the low four bytes
/// (the rest zero), and their count above them: a cell's coordinates are written with one
/// lookup and one store each.
static SMALL: [u64; 10_000] = small_numbers();

const fn small_numbers() -> [u64; 10_000] {
    let mut table = [0u64; 10_000];
    let mut n = 0;
    while n < 10_000 {
        let digits = [n / 1000, n / 100 % 10, n / 10 % 10, n % 10];
        let count = digits_of(n as u32);
        let skip = 4 - count;
        let mut entry = (count as u64) << 32;
        let mut i = 0;
        while i + skip < 4 {
            entry |= ((b'0' + digits[i + skip] as u8) as u64) << (8 * i);
            i += 1;
        }
        table[n] = entry;
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
    if let Some((digits, count)) = small(n) {
        out[at..at + 4].copy_from_slice(&digits.to_le_bytes());
        return at + count;
    }
    let mut digits = itoa::Buffer::new();
    let s = digits.format(n).as_bytes();
    out[at..at + s.len()].copy_from_slice(s);
    at + s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_numbers_have_their_digits_and_count() {
        for n in 0..10_000u32 {
            let (digits, len) = small(n).unwrap();
            let want = n.to_string();
            assert_eq!(len, want.len(), "{n}");
            assert_eq!(&digits.to_le_bytes()[..len], want.as_bytes(), "{n}");
            assert!(digits.to_le_bytes()[len..].iter().all(|&b| b == 0), "{n}");
        }
        assert_eq!(small(10_000), None);
        assert_eq!(small(u32::MAX), None);
    }

    #[test]
    fn every_cell_of_small_numbers_is_written_as_serde_writes_it() {
        // Every coordinate below 10 000 on each side, beside numbers of every width, in
        // each format, with and without the first cell's missing comma.
        let mut cells: Vec<Point> = (0..10_000).map(|i| Point::new(i, 9_999 - i)).collect();
        cells.extend((0..10_000).map(|i| Point::new(i % 7 * 1_000_003, i)));
        for format in [PathFormat::Pairs, PathFormat::Flat, PathFormat::Turns] {
            for n in [1, 2, 65, cells.len()] {
                let c = PathCells::new(cells[..n].to_vec(), format);
                let mut hand = Vec::new();
                put_cells(&mut hand, &c);
                assert_eq!(
                    String::from_utf8(hand).unwrap(),
                    serde_json::to_string(&c).unwrap(),
                    "{format:?} {n}"
                );
            }
        }
    }
}
