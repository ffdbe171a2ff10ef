//! The sparse per-search vertex store: `g` and `rhs` for the cells a search has touched.
//!
//! A server keeps thousands of these searches on one map, so a search may not own map-sized
//! arrays: a hash map keyed by padded cell index holds only the cells whose `g` or `rhs` is
//! finite. A missing cell reads as `g = rhs = infinity`, exactly what D* Lite initialises
//! every vertex to, so a record whose values both return to infinity is dropped again.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::grid::Point;

/// `g` and `rhs` of one vertex (cost-to-goal estimate and its one-step lookahead).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Node {
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
pub(super) struct CellHasher(u64);

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

/// The vertex store plus the bounding box of every cell it ever held.
#[derive(Clone)]
pub(super) struct Nodes {
    map: HashMap<u32, Node, BuildHasherDefault<CellHasher>>,
    /// Padded width, to turn ids into coordinates for the bounding box.
    pw: u32,
    /// Inclusive padded-coordinate box `(min_x, min_y, max_x, max_y)`; grows only.
    bbox: Option<(u32, u32, u32, u32)>,
}

impl Nodes {
    pub fn new(pw: usize) -> Self {
        Nodes {
            map: HashMap::default(),
            pw: pw as u32,
            bbox: None,
        }
    }

    #[inline]
    pub fn get(&self, n: u32) -> Node {
        self.map.get(&n).copied().unwrap_or(Node::UNSEEN)
    }

    #[inline]
    pub fn g(&self, n: u32) -> f64 {
        self.map.get(&n).map_or(f64::INFINITY, |r| r.g)
    }

    /// Stores `node` for `n` (drops the record when both values are infinite).
    #[inline]
    pub fn put(&mut self, n: u32, node: Node) {
        if node == Node::UNSEEN {
            self.map.remove(&n);
            return;
        }
        if self.map.insert(n, node).is_none() {
            let (x, y) = (n % self.pw, n / self.pw);
            self.bbox = Some(match self.bbox {
                None => (x, y, x, y),
                Some((x0, y0, x1, y1)) => (x0.min(x), y0.min(y), x1.max(x), y1.max(y)),
            });
        }
    }

    /// Number of live records.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Heap bytes held by the map (buckets plus one control byte each).
    pub fn heap_bytes(&self) -> usize {
        self.map.capacity() * (std::mem::size_of::<(u32, Node)>() + 1)
    }

    /// Inclusive box, in map coordinates, of every cell that ever had a record.
    pub fn bounds(&self) -> Option<(Point, Point)> {
        self.bbox.map(|(x0, y0, x1, y1)| {
            // Records are only ever made for interior cells, whose padded coordinates are >= 1.
            (Point::new(x0 - 1, y0 - 1), Point::new(x1 - 1, y1 - 1))
        })
    }
}
