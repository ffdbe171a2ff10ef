//! The sparse per-search vertex store: `g` and `rhs` for the cells a search has touched.
//!
//! A server keeps thousands of these searches on one map, so a search may not own map-sized
//! arrays: a hash map keyed by segment (16 consecutive padded cell ids) holds only the
//! segments a search has touched. A missing cell reads as `g = rhs = infinity`, exactly what
//! D* Lite initialises every vertex to. Segments rather than single cells because a search
//! touches a connected blob: per-cell hashing cost a cache miss per neighbour look-up on
//! large searches, segments keep an expansion's neighbours in three or four cache lines.

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

/// Cells per segment: the store allocates `g`/`rhs` in runs of this many consecutive padded
/// ids (a row piece), so an expansion's neighbours fall in a handful of segments that stay in
/// cache, and the index map is small (one entry per segment, not per cell).
const SEG_BITS: u32 = 4;
const SEG: usize = 1 << SEG_BITS;
type Segment = [Node; SEG];

/// The vertex store plus the bounding box of every cell it ever held.
#[derive(Clone)]
pub(crate) struct Nodes {
    /// Segment id (`cell >> SEG_BITS`) to its position in `segs`.
    index: HashMap<u32, u32, BuildHasherDefault<CellHasher>>,
    segs: Vec<Segment>,
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
            segs: Vec::new(),
            live: 0,
            pw: pw as u32,
            bbox: None,
        }
    }

    #[inline]
    pub fn get(&self, n: u32) -> Node {
        match self.index.get(&(n >> SEG_BITS)) {
            Some(&i) => self.segs[i as usize][n as usize % SEG],
            None => Node::UNSEEN,
        }
    }

    #[inline]
    pub fn g(&self, n: u32) -> f64 {
        self.get(n).g
    }

    /// Stores `node` for `n`.
    #[inline]
    pub fn put(&mut self, n: u32, node: Node) {
        let i = match self.index.get(&(n >> SEG_BITS)) {
            Some(&i) => i as usize,
            None if node == Node::UNSEEN => return,
            None => {
                self.segs.push([Node::UNSEEN; SEG]);
                let i = self.segs.len() - 1;
                self.index.insert(n >> SEG_BITS, i as u32);
                i
            }
        };
        let slot = &mut self.segs[i][n as usize % SEG];
        let was_live = *slot != Node::UNSEEN;
        *slot = node;
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

    /// Heap bytes held: segments plus the index map (buckets and control bytes).
    pub fn heap_bytes(&self) -> usize {
        self.segs.capacity() * std::mem::size_of::<Segment>()
            + self.index.capacity() * (std::mem::size_of::<(u32, u32)>() + 1)
    }

    /// Inclusive box, in map coordinates, of every cell that ever had a finite value.
    pub fn bounds(&self) -> Option<(Point, Point)> {
        self.bbox.map(|(x0, y0, x1, y1)| {
            // Only interior cells get finite values; their padded coordinates are >= 1.
            (Point::new(x0 - 1, y0 - 1), Point::new(x1 - 1, y1 - 1))
        })
    }
}
