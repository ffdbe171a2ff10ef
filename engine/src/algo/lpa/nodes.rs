//! The sparse per-search vertex store: `g` and `rhs` for the cells a search has touched.
//!
//! A server keeps thousands of these searches on one map, so a search may not own map-sized
//! arrays: a hash map keyed by segment (16 consecutive padded cell ids) holds only the
//! segments a search has touched. A missing cell reads as `g = rhs = infinity`, exactly what
//! D* Lite initialises every vertex to. Segments rather than single cells because a search
//! touches a connected blob: per-cell hashing cost a cache miss per neighbour look-up on
//! large searches, segments keep an expansion's neighbours in three or four cache lines.
//!
//! Only `g` is stored per cell (8 bytes): `rhs` equals `g` on every consistent vertex, which
//! is all but the queue's, so a segment's bit mask marks the cells whose `rhs` differs and a
//! side map holds those. Segments live in fixed chunks (no doubling of a growing vector), so
//! a settled region costs about 8.5 bytes per cell plus its share of the index.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::grid::Point;

/// `g` and `rhs` of one vertex (cost-to-goal estimate and its one-step lookahead).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Node {
    pub g: f64,
    pub rhs: f64,
}

impl Node {
    /// What an untouched vertex reads as.
    pub const UNSEEN: Node = Node {
        g: f64::INFINITY,
        rhs: f64::INFINITY,
    };

    /// `g == rhs`: the vertex is not in the queue.
    #[inline]
    pub fn consistent(self) -> bool {
        self.g == self.rhs
    }

    /// `min(g, rhs)`, the value both key components are built from.
    #[inline]
    pub fn min(self) -> f64 {
        self.g.min(self.rhs)
    }
}

/// Multiplicative hash for `u32` cell ids. The std default (SipHash, randomly seeded) is
/// several times slower and would make iteration order differ between runs; cell ids are
/// not attacker-controlled keys of unbounded count (at most the map's cells), so
/// flooding resistance buys nothing here.
#[derive(Default, Clone, Copy)]
pub(crate) struct CellHasher(u64);

impl Hasher for CellHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        // The product's high bits are well mixed (hashbrown's tag byte); folding them down
        // mixes the low bits that pick the bucket.
        let h = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }
}

/// Cells per segment: the store allocates `g` in runs of this many consecutive padded ids (a
/// row piece), so an expansion's neighbours fall in a handful of segments that stay in cache,
/// and the index map is small (one entry per segment, not per cell).
const SEG_BITS: u32 = 4;
const SEG: usize = 1 << SEG_BITS;
/// Segments per full chunk (about 34 KiB). The first chunks grow from one segment by
/// doubling, so a small search stays small: chunk `c < FULL` holds `2^c` segments.
const CHUNK_BITS: u32 = 8;
const CHUNK: usize = 1 << CHUNK_BITS;
const FULL: usize = CHUNK_BITS as usize;
/// Segments in the growing chunks together (`1 + 2 + ... + CHUNK / 2`).
const GROWING: usize = CHUNK - 1;

/// Chunk and offset of segment position `i`.
#[inline]
fn locate(i: usize) -> (usize, usize) {
    if i < GROWING {
        let c = (usize::BITS - 1 - (i + 1).leading_zeros()) as usize;
        (c, i + 1 - (1 << c))
    } else {
        let j = i - GROWING;
        (FULL + j / CHUNK, j % CHUNK)
    }
}

/// `g` of 16 cells, and which of them have an `rhs` of their own (in [`Nodes::rhs`]).
#[derive(Clone, Copy)]
struct Segment {
    g: [f64; SEG],
    own_rhs: u16,
}

const EMPTY: Segment = Segment {
    g: [f64::INFINITY; SEG],
    own_rhs: 0,
};

/// The vertex store plus the bounding box of every cell it ever held.
#[derive(Clone)]
pub(crate) struct Nodes {
    /// Segment id (`cell >> SEG_BITS`) to its position in the chunks.
    index: HashMap<u32, u32, BuildHasherDefault<CellHasher>>,
    chunks: Vec<Box<[Segment]>>,
    /// Segments in use (positions `0..used` of the chunks).
    used: usize,
    /// `rhs` of the cells whose `rhs` differs from their `g` (the inconsistent ones).
    rhs: HashMap<u32, f64, BuildHasherDefault<CellHasher>>,
    /// Cells whose `g` or `rhs` is finite.
    live: usize,
    /// Padded width, to turn ids into coordinates for the bounding box.
    pw: u32,
    /// Inclusive padded-coordinate box `(min_x, min_y, max_x, max_y)`; grows only.
    bbox: Option<(u32, u32, u32, u32)>,
}

impl Nodes {
    pub fn new(pw: usize) -> Self {
        Nodes {
            index: HashMap::default(),
            chunks: Vec::new(),
            used: 0,
            rhs: HashMap::default(),
            live: 0,
            pw: pw as u32,
            bbox: None,
        }
    }

    #[inline]
    fn seg(&self, i: u32) -> &Segment {
        let (c, o) = locate(i as usize);
        &self.chunks[c][o]
    }

    #[inline]
    pub fn get(&self, n: u32) -> Node {
        match self.index.get(&(n >> SEG_BITS)) {
            Some(&i) => {
                let seg = self.seg(i);
                let k = n as usize % SEG;
                let g = seg.g[k];
                let rhs = if seg.own_rhs & (1 << k) != 0 {
                    self.rhs[&n]
                } else {
                    g
                };
                Node { g, rhs }
            }
            None => Node::UNSEEN,
        }
    }

    #[inline]
    pub fn g(&self, n: u32) -> f64 {
        match self.index.get(&(n >> SEG_BITS)) {
            Some(&i) => self.seg(i).g[n as usize % SEG],
            None => f64::INFINITY,
        }
    }

    /// Stores `node` for `n`.
    #[inline]
    pub fn put(&mut self, n: u32, node: Node) {
        let i = match self.index.get(&(n >> SEG_BITS)) {
            Some(&i) => i,
            None if node == Node::UNSEEN => return,
            None => {
                let i = self.used;
                if locate(i).1 == 0 {
                    let len = if i < GROWING { i + 1 } else { CHUNK };
                    self.chunks.push(vec![EMPTY; len].into_boxed_slice());
                }
                self.used += 1;
                self.index.insert(n >> SEG_BITS, i as u32);
                i as u32
            }
        };
        let was_live = self.get(n) != Node::UNSEEN;
        let k = n as usize % SEG;
        let own = node.rhs != node.g;
        let (c, o) = locate(i as usize);
        let seg = &mut self.chunks[c][o];
        seg.g[k] = node.g;
        let had_own = seg.own_rhs & (1 << k) != 0;
        if own {
            seg.own_rhs |= 1 << k;
            self.rhs.insert(n, node.rhs);
        } else if had_own {
            seg.own_rhs &= !(1 << k);
            self.rhs.remove(&n);
        }
        match (was_live, node != Node::UNSEEN) {
            (false, true) => {
                self.live += 1;
                let (x, y) = (n % self.pw, n / self.pw);
                self.bbox = Some(match self.bbox {
                    None => (x, y, x, y),
                    Some((x0, y0, x1, y1)) => (x0.min(x), y0.min(y), x1.max(x), y1.max(y)),
                });
            }
            (true, false) => self.live -= 1,
            _ => {}
        }
    }

    /// Number of cells with a finite `g` or `rhs`.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Heap bytes held: chunks, the index map and the `rhs` map (buckets and control bytes).
    pub fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.len()).sum::<usize>() * std::mem::size_of::<Segment>()
            + self.chunks.capacity() * std::mem::size_of::<usize>()
            + self.index.capacity() * (std::mem::size_of::<(u32, u32)>() + 1)
            + self.rhs.capacity() * (std::mem::size_of::<(u32, f64)>() + 1)
    }

    /// Inclusive box, in map coordinates, of every cell that ever had a finite value.
    pub fn bounds(&self) -> Option<(Point, Point)> {
        self.bbox.map(|(x0, y0, x1, y1)| {
            // Only interior cells get finite values; their padded coordinates are >= 1.
            (Point::new(x0 - 1, y0 - 1), Point::new(x1 - 1, y1 - 1))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_tile_the_positions() {
        let mut next = (0, 0);
        for i in 0..5000 {
            let (c, o) = locate(i);
            assert_eq!((c, o), next, "position {i}");
            let len = if c < FULL { 1 << c } else { CHUNK };
            next = if o + 1 == len { (c + 1, 0) } else { (c, o + 1) };
        }
    }

    #[test]
    fn reads_what_was_written() {
        let mut nodes = Nodes::new(100);
        let mut want = std::collections::HashMap::new();
        for k in 0..20_000u32 {
            let n = (k * 7919) % 9000 + 101;
            let g = (k % 13) as f64;
            let node = match k % 3 {
                0 => Node { g, rhs: g },
                1 => Node { g, rhs: g + 1.0 },
                _ => Node::UNSEEN,
            };
            nodes.put(n, node);
            want.insert(n, node);
        }
        for (&n, &node) in &want {
            assert_eq!(nodes.get(n), node);
            assert_eq!(nodes.g(n), node.g);
        }
        let live = want.values().filter(|&&v| v != Node::UNSEEN).count();
        assert_eq!(nodes.len(), live);
        assert_eq!(nodes.get(50_000), Node::UNSEEN);
    }
}
