//! Copy-on-write tiled storage for per-cell data shared between grid versions.
//!
//! A map version is mostly its predecessor: a patch writes a few cells. [`Tiles`] keeps the
//! cells in 64x64 tiles behind [`Arc`]s, grouped in bands (one band = one row of tiles, also
//! behind an `Arc`). Cloning is one reference count; writing a cell copies the band's tile
//! pointers and the one tile it lands in (4096 cells), so a 1-cell patch costs
//! `O(bands + tiles per band + tile area)` = `O(sqrt(cells) / 64 + 4096)` instead of
//! `O(cells)`.
//!
//! Why 64: a tile of `u8` costs are 4 KB and a tile of `u32` labels 16 KB, cheap to copy for
//! a one-cell write, while a 4096x4096 map has only 64 bands of 64 tiles, so the pointer copies
//! stay small too. Why two levels and not a flat vector of tiles: a flat vector of 4096 tile
//! pointers would be 4096 reference-count increments per patch on a 4096x4096 map.

use std::sync::Arc;

/// Tile side, as a shift.
const SHIFT: u32 = 6;
/// Tile side in cells.
pub(crate) const TILE: usize = 1 << SHIFT;
const MASK: u32 = TILE as u32 - 1;

type Tile<T> = Arc<Vec<T>>;
type Band<T> = Arc<Vec<Tile<T>>>;

/// A `width x height` array of `T` in shared 64x64 tiles (see the module docs). Cells outside
/// the map in the last tiles hold the fill value.
#[derive(Clone)]
pub(crate) struct Tiles<T: Copy> {
    width: u32,
    height: u32,
    bands: Arc<Vec<Band<T>>>,
}

impl<T: Copy + PartialEq> Tiles<T> {
    /// From row-major `width * height` values.
    pub(crate) fn from_rows(width: u32, height: u32, values: &[T], fill: T) -> Self {
        debug_assert_eq!(values.len(), width as usize * height as usize);
        let w = width as usize;
        let tw = w.div_ceil(TILE);
        let th = (height as usize).div_ceil(TILE);
        let bands = (0..th)
            .map(|ty| {
                let tiles = (0..tw)
                    .map(|tx| {
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
                        Arc::new(tile)
                    })
                    .collect();
                Arc::new(tiles)
            })
            .collect();
        Tiles {
            width,
            height,
            bands: Arc::new(bands),
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

    /// The value at `(x, y)`, which must be on the map.
    #[inline]
    pub(crate) fn get(&self, x: u32, y: u32) -> T {
        debug_assert!(x < self.width && y < self.height);
        let tile = &self.bands[(y >> SHIFT) as usize][(x >> SHIFT) as usize];
        tile[(((y & MASK) << SHIFT) | (x & MASK)) as usize]
    }

    /// The tile holding `(x, y)`, made unique (copied if shared).
    #[inline]
    fn tile_mut(&mut self, x: u32, y: u32) -> &mut Vec<T> {
        let bands = Arc::make_mut(&mut self.bands);
        let band = Arc::make_mut(&mut bands[(y >> SHIFT) as usize]);
        Arc::make_mut(&mut band[(x >> SHIFT) as usize])
    }

    /// Writes `v` at `(x, y)` and returns the previous value. Copies the tile (and the tile
    /// pointers of its band) on the first write after a clone.
    #[inline]
    pub(crate) fn set(&mut self, x: u32, y: u32, v: T) -> T {
        if self.get(x, y) == v {
            // No write, no copy: the tile stays shared.
            return v;
        }
        let i = (((y & MASK) << SHIFT) | (x & MASK)) as usize;
        let tile = self.tile_mut(x, y);
        std::mem::replace(&mut tile[i], v)
    }

    /// Writes `v` to the cells `x0..x1` of row `y`, a tile at a time.
    pub(crate) fn fill_span(&mut self, y: u32, x0: u32, x1: u32, v: T) {
        let mut x = x0;
        while x < x1 {
            let end = ((x | MASK) + 1).min(x1);
            let row = ((y & MASK) << SHIFT) as usize;
            let span = row + (x & MASK) as usize..row + ((end - 1) & MASK) as usize + 1;
            let shared = &self.bands[(y >> SHIFT) as usize][(x >> SHIFT) as usize];
            if shared[span.clone()].iter().any(|&c| c != v) {
                self.tile_mut(x, y)[span].fill(v);
            }
            x = end;
        }
    }

    /// Copies row `y` into `out` (`width` values).
    pub(crate) fn read_row(&self, y: u32, out: &mut [T]) {
        let w = self.width as usize;
        debug_assert_eq!(out.len(), w);
        let band = &self.bands[(y >> SHIFT) as usize];
        let row = ((y & MASK) << SHIFT) as usize;
        for (tx, tile) in band.iter().enumerate() {
            let x0 = tx * TILE;
            let n = TILE.min(w - x0);
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
