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

/// Appends the cells as their format writes them ([`PathCells::written`]): cells are
/// assembled in a block on the stack, 64 at a time with no room check a cell (a block holds
/// 64 of the longest), and the block appended when full, so the buffer sees one copy per
/// block instead of a capacity check per byte (which, with a `memcpy` call per cell before
/// it, cost more than the search on long paths). A cell of numbers below 10 000 (every
/// map's) is two eight-byte stores of digits from a table.
pub(super) fn put_cells(buf: &mut Vec<u8>, cells: &PathCells) {
    buf.reserve(cells.json_len_bound());
    buf.push(b'[');
    match cells.format {
        PathFormat::Pairs | PathFormat::Turns => put_blocks::<true>(buf, cells.written()),
        PathFormat::Flat => put_blocks::<false>(buf, cells.written()),
    }
    buf.push(b']');
}

/// `cells` as pairs (`PAIRS`) or flat, through a block of 64 (see [`put_cells`]).
fn put_blocks<const PAIRS: bool>(buf: &mut Vec<u8>, cells: impl Iterator<Item = Point>) {
    let mut block = [0u8; BLOCK];
    let (mut n, mut in_block, mut first_block) = (0, 0, true);
    for p in cells {
        n = match (small(p.x), small(p.y)) {
            (Some(x), Some(y)) if PAIRS => put_pair(&mut block, n, x, y),
            (Some(x), Some(y)) => put_flat(&mut block, n, x, y),
            _ if PAIRS => put_pair_large(&mut block, n, p),
            _ => put_flat_large(&mut block, n, p),
        };
        in_block += 1;
        if in_block == 64 {
            // The first cell of all goes without its comma.
            buf.extend_from_slice(&block[usize::from(first_block)..n]);
            (n, in_block, first_block) = (0, 0, false);
        }
    }
    if in_block > 0 {
        buf.extend_from_slice(&block[usize::from(first_block)..n]);
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
