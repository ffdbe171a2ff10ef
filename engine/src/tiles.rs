//! Copy-on-write tiled storage for per-cell data shared between grid versions.
//!
//! A map version is mostly its predecessor: a patch writes a few cells. [`Tiles`] keeps the
//! cells in 64x64 tiles behind [`Arc`]s, and the tiles (in row-major tile order) as the
//! leaves of a tree of fan-out 16, every node behind an `Arc` too. Cloning is one reference
//! count; writing a cell copies the nodes on its tile's path (16 pointers per level) and the
//! tile itself (4096 cells), so a 1-cell patch costs `O(16 log16(tiles) + 4096)` instead of
//! `O(cells)`.
//!
//! Why 64x64 tiles: a tile of `u8` costs is 4 KB and a tile of `u32` labels 16 KB, cheap to
//! copy for a one-cell write, and few enough tiles (4096 on a 4096x4096 map) for a shallow
//! tree. Why a tree of fan-out 16 rather than one row of tile pointers per band of tiles: a
//! copied pointer is a reference-count increment on a (cold) tile, and a 4096x4096 map would
//! copy 64 band pointers and 64 tile pointers per write, where the tree copies 3 x 16.

use std::sync::Arc;

/// Tile side, as a shift.
const SHIFT: u32 = 6;
/// Tile side in cells.
pub(crate) const TILE: usize = 1 << SHIFT;
const MASK: u32 = TILE as u32 - 1;
/// Tree fan-out, as a shift.
const FAN_SHIFT: u32 = 4;
const FAN_MASK: u32 = (1 << FAN_SHIFT) - 1;

/// A tree node: 16 (or, at the right edge, fewer) children, or one tile.
enum Node<T> {
    Inner(Arc<Vec<Node<T>>>),
    Leaf(Arc<[T]>),
}

impl<T> Clone for Node<T> {
    fn clone(&self) -> Self {
        match self {
            Node::Inner(a) => Node::Inner(Arc::clone(a)),
            Node::Leaf(a) => Node::Leaf(Arc::clone(a)),
        }
    }
}

/// A `width x height` array of `T` in shared 64x64 tiles (see the module docs). Cells outside
/// the map in the last tiles hold the fill value.
#[derive(Clone)]
pub(crate) struct Tiles<T: Copy> {
    width: u32,
    height: u32,
    /// Tiles per row of tiles.
    tw: u32,
    /// Levels of inner nodes above the tiles.
    depth: u32,
    root: Node<T>,
}

impl<T: Copy + PartialEq> Tiles<T> {
    /// From row-major `width * height` values.
    pub(crate) fn from_rows(width: u32, height: u32, values: &[T], fill: T) -> Self {
        debug_assert_eq!(values.len(), width as usize * height as usize);
        let w = width as usize;
        let tw = w.div_ceil(TILE);
        let th = (height as usize).div_ceil(TILE);
        let mut level: Vec<Node<T>> = Vec::with_capacity(tw * th);
        for ty in 0..th {
            for tx in 0..tw {
                let mut tile = vec![fill; TILE * TILE];
                let x0 = tx * TILE;
                let x1 = (x0 + TILE).min(w);
                for ly in 0..TILE {
                    let y = ty * TILE + ly;
                    if y >= height as usize {
                        break;
                    }
                    tile[ly * TILE..ly * TILE + (x1 - x0)]
                        .copy_from_slice(&values[y * w + x0..y * w + x1]);
                }
                level.push(Node::Leaf(Arc::from(tile)));
            }
        }
        Self::of_leaves(width, height, tw, level)
    }

    /// Every cell `value`: one tile shared by every position (writes copy it, as
    /// always), so it costs a tile and the tree, not the cells.
    pub(crate) fn filled(width: u32, height: u32, value: T) -> Self {
        let tw = (width as usize).div_ceil(TILE);
        let th = (height as usize).div_ceil(TILE);
        let leaf: Arc<[T]> = Arc::from(vec![value; TILE * TILE]);
        let level = (0..tw * th)
            .map(|_| Node::Leaf(Arc::clone(&leaf)))
            .collect();
        Self::of_leaves(width, height, tw, level)
    }

    /// The tree over `level`, the tiles in row-major order (`tw` a row).
    fn of_leaves(width: u32, height: u32, tw: usize, mut level: Vec<Node<T>>) -> Self {
        let mut depth = 0;
        while level.len() > 1 {
            level = level
                .chunks(1 << FAN_SHIFT)
                .map(|c| Node::Inner(Arc::new(c.to_vec())))
                .collect();
            depth += 1;
        }
        Tiles {
            width,
            height,
            tw: tw as u32,
            depth,
            root: level.pop().expect("at least one tile"),
        }
    }

    /// Width in cells.
    #[inline]
    pub(crate) fn width(&self) -> u32 {
        self.width
    }

    /// Height in cells.
    #[inline]
    pub(crate) fn height(&self) -> u32 {
        self.height
    }

    /// Tile number of `(x, y)`.
    #[inline]
    fn tile_of(&self, x: u32, y: u32) -> u32 {
        (y >> SHIFT) * self.tw + (x >> SHIFT)
    }

    /// Tile `t`.
    #[inline]
    fn leaf(&self, t: u32) -> &[T] {
        let mut node = &self.root;
        let mut shift = self.depth * FAN_SHIFT;
        loop {
            match node {
                Node::Inner(children) => {
                    shift -= FAN_SHIFT;
                    node = &children[(t >> shift & FAN_MASK) as usize];
                }
                Node::Leaf(tile) => return tile,
            }
        }
    }

    /// Tile `t`, made unique (it and the nodes above it copied if shared).
    fn leaf_mut(&mut self, t: u32) -> &mut [T] {
        let mut node = &mut self.root;
        let mut shift = self.depth * FAN_SHIFT;
        loop {
            match node {
                Node::Inner(children) => {
                    shift -= FAN_SHIFT;
                    node = &mut Arc::make_mut(children)[(t >> shift & FAN_MASK) as usize];
                }
                Node::Leaf(tile) => {
                    if Arc::get_mut(tile).is_none() {
                        *tile = Arc::from(&tile[..]);
                    }
                    return Arc::get_mut(tile).expect("unique after the copy");
                }
            }
        }
    }

    /// The value at `(x, y)`, which must be on the map.
    #[inline]
    pub(crate) fn get(&self, x: u32, y: u32) -> T {
        debug_assert!(x < self.width && y < self.height);
        self.leaf(self.tile_of(x, y))[(((y & MASK) << SHIFT) | (x & MASK)) as usize]
    }

    /// Writes `v` at `(x, y)` and returns the previous value. Copies the tile (and the nodes
    /// above it) on the first write after a clone; writing the value already there copies
    /// nothing.
    #[inline]
    pub(crate) fn set(&mut self, x: u32, y: u32, v: T) -> T {
        let old = self.get(x, y);
        if old != v {
            let t = self.tile_of(x, y);
            self.leaf_mut(t)[(((y & MASK) << SHIFT) | (x & MASK)) as usize] = v;
        }
        old
    }

    /// Writes `v` to the cells `x0..x1` of row `y`, a tile at a time.
    pub(crate) fn fill_span(&mut self, y: u32, x0: u32, x1: u32, v: T) {
        let mut x = x0;
        while x < x1 {
            let end = ((x | MASK) + 1).min(x1);
            let row = ((y & MASK) << SHIFT) as usize;
            let span = row + (x & MASK) as usize..row + ((end - 1) & MASK) as usize + 1;
            let t = self.tile_of(x, y);
            if self.leaf(t)[span.clone()].iter().any(|&c| c != v) {
                self.leaf_mut(t)[span].fill(v);
            }
            x = end;
        }
    }

    /// Copies row `y` into `out` (`width` values).
    pub(crate) fn read_row(&self, y: u32, out: &mut [T]) {
        let w = self.width as usize;
        debug_assert_eq!(out.len(), w);
        let row = ((y & MASK) << SHIFT) as usize;
        for tx in 0..self.tw {
            let x0 = tx as usize * TILE;
            let n = TILE.min(w - x0);
            let tile = self.leaf(self.tile_of(x0 as u32, y));
            out[x0..x0 + n].copy_from_slice(&tile[row..row + n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_copy_on_write() {
        let vals: Vec<u8> = (0..130 * 70).map(|i| (i % 251) as u8).collect();
        let a = Tiles::from_rows(130, 70, &vals, 0);
        let big = Tiles::from_rows(1100, 70, &vec![3u8; 1100 * 70], 0);
        assert_eq!(big.depth, 2);
        let mut big2 = big.clone();
        big2.set(1099, 69, 9);
        assert_eq!(
            (big.get(1099, 69), big2.get(1099, 69), big2.get(0, 0)),
            (3, 9, 3)
        );
        let mut b = a.clone();
        assert_eq!(b.set(129, 69, 7), vals[69 * 130 + 129]);
        b.fill_span(3, 60, 130, 9);
        let mut row = vec![0; 130];
        a.read_row(3, &mut row);
        assert_eq!(row, vals[3 * 130..4 * 130]);
        b.read_row(3, &mut row);
        assert!(row[60..].iter().all(|&v| v == 9));
        assert_eq!(row[..60], vals[3 * 130..3 * 130 + 60]);
        assert_eq!(b.get(129, 69), 7);
        assert_eq!(a.get(129, 69), vals[69 * 130 + 129]);
    }
}
