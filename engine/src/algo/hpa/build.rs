//! Building the abstract graph: cluster layout, entrances on the borders, and intra-cluster
//! edges (with their cached cell paths).
//!
//! Everything a cluster stores is a function of its own cells and of the transitions on its
//! four borders, and a border's transitions are a function of the cells on its two sides.
//! That is what makes the incremental update exact: rebuild the borders a changed cell lies
//! on, then every cluster whose own cells or border transitions changed, and nothing else.

use std::sync::Arc;

use super::local::{Local, Rect};
use crate::grid::{DIRS, Grid, Point};

/// Entrances shorter than this get one transition in the middle; longer ones get one at
/// each end (Botea, Müller & Schaeffer 2004, who use 6).
pub(super) const LONG_ENTRANCE: u32 = 6;

/// Marks an edge whose cell path is not cached.
pub(super) const NO_PATH: u32 = u32::MAX;

/// How the map is cut into clusters: `size x size` squares, the last column and row
/// narrower where the map does not divide evenly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    pub width: u32,
    pub height: u32,
    pub size: u32,
    /// Clusters per row.
    pub ncx: u32,
    /// Clusters per column.
    pub ncy: u32,
}

impl Layout {
    pub(super) fn new(width: u32, height: u32, size: u32) -> Self {
        Layout {
            width,
            height,
            size,
            ncx: width.div_ceil(size),
            ncy: height.div_ceil(size),
        }
    }

    pub(super) fn count(&self) -> usize {
        self.ncx as usize * self.ncy as usize
    }

    pub(super) fn rect(&self, c: usize) -> Rect {
        let (cx, cy) = (c as u32 % self.ncx, c as u32 / self.ncx);
        let (x0, y0) = (cx * self.size, cy * self.size);
        Rect {
            x0,
            y0,
            w: self.size.min(self.width - x0),
            h: self.size.min(self.height - y0),
        }
    }

    pub(super) fn cluster_of(&self, p: Point) -> usize {
        (p.y / self.size * self.ncx + p.x / self.size) as usize
    }

    /// The cluster across side `side` (0 N, 1 E, 2 S, 3 W) of cluster `c`, if any.
    pub(super) fn neighbour(&self, c: usize, side: usize) -> Option<usize> {
        let (cx, cy) = (c as u32 % self.ncx, c as u32 / self.ncx);
        let ncx = self.ncx as usize;
        match side {
            0 if cy > 0 => Some(c - ncx),
            1 if cx + 1 < self.ncx => Some(c + 1),
            2 if cy + 1 < self.ncy => Some(c + ncx),
            3 if cx > 0 => Some(c - 1),
            _ => None,
        }
    }
}

/// One transition: a pair of facing passable cells on a border, one on each side.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Transition {
    /// Position along the border (row for an east border, column for a south border),
    /// relative to the cluster's corner.
    pub off: u16,
    /// Cost of the step across the border.
    pub cross: f64,
}

/// The borders a cluster owns: with its east and its south neighbour.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Borders {
    pub east: Vec<Transition>,
    pub south: Vec<Transition>,
}

impl Borders {
    pub(super) fn bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + (self.east.capacity() + self.south.capacity()) * std::mem::size_of::<Transition>()
    }
}

/// An abstract node: the cell of one transition on one side of its cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Node {
    /// Padded cell index.
    pub cell: u32,
    /// Side of the cluster (0 N, 1 E, 2 S, 3 W), which is also the `DIRS` index of the
    /// step across the border.
    pub side: u8,
    /// Index of the transition in its border's list.
    pub k: u16,
}

/// An intra-cluster edge.
#[derive(Clone, Copy, Debug)]
pub(super) struct Edge {
    pub to: u16,
    /// Exact cost of the cheapest path inside the cluster.
    pub cost: f64,
    /// Index into [`Cluster::spans`], or [`NO_PATH`].
    pub path: u32,
}

/// One cluster's part of the abstract graph.
#[derive(Clone, Debug, Default)]
pub(super) struct Cluster {
    /// Nodes grouped by side (N, E, S, W), each group in border order.
    pub nodes: Vec<Node>,
    /// `nodes[side_start[s]..side_start[s + 1]]` are the nodes on side `s`.
    pub side_start: [u16; 5],
    /// `adj[adj_start[i]..adj_start[i + 1]]` are node `i`'s edges, by target.
    pub adj_start: Vec<u32>,
    pub adj: Vec<Edge>,
    /// Cached paths, one per node pair `i < j`: `(start, len)` in `codes`.
    pub spans: Vec<(u32, u32)>,
    /// Direction indices (into `DIRS`) of the steps from the lower node to the higher one.
    pub codes: Vec<u8>,
}

impl Cluster {
    pub(super) fn edges(&self, i: usize) -> &[Edge] {
        &self.adj[self.adj_start[i] as usize..self.adj_start[i + 1] as usize]
    }

    pub(super) fn bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.adj_start.capacity() * 4
            + self.adj.capacity() * std::mem::size_of::<Edge>()
            + self.spans.capacity() * 8
            + self.codes.capacity()
    }
}

/// Where transitions go on one entrance of `len` cells starting at `start`; `cost(i)` is the
/// cost of crossing at position `i` (the sum of the two cells).
///
/// Botea's rule on uniform maps: one transition in the middle of a short entrance, one at
/// each end of a long one (plus evenly spread extras with a `spacing`). On weighted maps the
/// crossing cost varies along an entrance, and a transition forced onto an expensive cell
/// can cost more than the rest of the path, so a short entrance gets its transition at the
/// cheapest crossing (nearest the middle among equals), and a long one also gets its
/// cheapest interior crossing when that is cheaper than both ends. Uniform entrances are
/// placed exactly as Botea places them.
fn place(start: u32, len: u32, spacing: u32, cost: impl Fn(u32) -> u32, out: &mut Vec<u32>) {
    let mid = start + (len - 1) / 2;
    // Cheapest crossing among `from..to`, nearest the middle on ties.
    let cheapest = |from: u32, to: u32| {
        (from..to)
            .min_by_key(|&i| (cost(i), i.abs_diff(mid), i))
            .expect("entrance is not empty")
    };
    if len < LONG_ENTRANCE {
        out.push(cheapest(start, start + len));
        return;
    }
    let last = start + len - 1;
    // Botea's two ends; with a spacing, evenly spread extra transitions in between.
    let parts = if spacing == 0 {
        1
    } else {
        (len - 1).div_ceil(spacing)
    };
    let from = out.len();
    for i in 0..=parts {
        out.push(start + (i * (len - 1) + parts / 2) / parts);
    }
    debug_assert_eq!(out.last(), Some(&last));
    let inner = cheapest(start + 1, last);
    if out[from..].iter().all(|&t| cost(inner) < cost(t)) {
        let at = out[from..].partition_point(|&t| t < inner) + from;
        out.insert(at, inner);
    }
}

/// Scans one border: `first` is the padded cell of the first position on the near side,
/// `along` the padded step along the border, `across` the step to the far side.
fn scan(
    grid: &Grid,
    first: usize,
    along: usize,
    across: usize,
    len: u32,
    spacing: u32,
) -> Vec<Transition> {
    let cells = grid.cells();
    let open = |i: u32| {
        let a = first + i as usize * along;
        cells[a] != 0 && cells[a + across] != 0
    };
    let mut picks = Vec::new();
    let mut i = 0;
    while i < len {
        if !open(i) {
            i += 1;
            continue;
        }
        let start = i;
        while i < len && open(i) {
            i += 1;
        }
        let crossing = |i: u32| {
            let a = first + i as usize * along;
            cells[a] as u32 + cells[a + across] as u32
        };
        place(start, i - start, spacing, crossing, &mut picks);
    }
    picks
        .into_iter()
        .map(|off| {
            let a = first + off as usize * along;
            Transition {
                off: off as u16,
                cross: (cells[a] as f64 + cells[a + across] as f64) * 0.5,
            }
        })
        .collect()
}

/// The east and south borders of cluster `c`.
pub(super) fn borders(grid: &Grid, layout: &Layout, c: usize, spacing: u32) -> Borders {
    let r = layout.rect(c);
    let pw = grid.padded_width();
    let mut b = Borders::default();
    if layout.neighbour(c, 1).is_some() {
        let first = grid.pidx(Point::new(r.x0 + r.w - 1, r.y0));
        b.east = scan(grid, first, pw, 1, r.h, spacing);
    }
    if layout.neighbour(c, 2).is_some() {
        let first = grid.pidx(Point::new(r.x0, r.y0 + r.h - 1));
        b.south = scan(grid, first, 1, pw, r.w, spacing);
    }
    b
}

/// The transitions on side `side` of cluster `c`, read from the border's owner.
pub(super) fn side_transitions<'a>(
    layout: &Layout,
    borders: &'a [Arc<Borders>],
    c: usize,
    side: usize,
) -> &'a [Transition] {
    match (side, layout.neighbour(c, side)) {
        (0, Some(n)) => &borders[n].south,
        (1, Some(_)) => &borders[c].east,
        (2, Some(_)) => &borders[c].south,
        (3, Some(n)) => &borders[n].east,
        _ => &[],
    }
}

/// Builds cluster `c` from its cells and its border transitions. Cell paths are cached when
/// they fit in `cache_bytes`.
pub(super) fn cluster(
    grid: &Grid,
    layout: &Layout,
    borders: &[Arc<Borders>],
    c: usize,
    cache_bytes: usize,
    local: &mut Local,
) -> Cluster {
    let r = layout.rect(c);
    let pw = grid.padded_width();
    let mut cl = Cluster::default();
    for side in 0..4 {
        cl.side_start[side] = cl.nodes.len() as u16;
        for (k, t) in side_transitions(layout, borders, c, side)
            .iter()
            .enumerate()
        {
            let off = t.off as u32;
            let p = match side {
                0 => Point::new(r.x0 + off, r.y0),
                1 => Point::new(r.x0 + r.w - 1, r.y0 + off),
                2 => Point::new(r.x0 + off, r.y0 + r.h - 1),
                _ => Point::new(r.x0, r.y0 + off),
            };
            cl.nodes.push(Node {
                cell: grid.pidx(p) as u32,
                side: side as u8,
                k: k as u16,
            });
        }
    }
    let n = cl.nodes.len();
    cl.side_start[4] = n as u16;
    let locals: Vec<u32> = cl.nodes.iter().map(|nd| r.local(pw, nd.cell)).collect();

    // One Dijkstra per node i settles every j > i: all pair costs and paths at once.
    let mut pairs: Vec<(u16, u16, f64, u32)> = Vec::new();
    let mut cell_path = Vec::new();
    for i in 0..n.saturating_sub(1) {
        local.dijkstra(grid, r, locals[i], &locals[i + 1..], &mut None);
        for (j, &lj) in locals.iter().enumerate().skip(i + 1) {
            let d = local.dist(lj);
            if !d.is_finite() {
                continue;
            }
            cell_path.clear();
            local.path_to(lj, &mut cell_path);
            let start = cl.codes.len() as u32;
            cl.codes
                .extend(cell_path.windows(2).map(|s| dir_code(pw, s[0], s[1])));
            cl.spans.push((start, cl.codes.len() as u32 - start));
            pairs.push((i as u16, j as u16, d, cl.spans.len() as u32 - 1));
        }
    }
    if cl.codes.len() + cl.spans.len() * 8 > cache_bytes {
        cl.codes = Vec::new();
        cl.spans = Vec::new();
        pairs.iter_mut().for_each(|p| p.3 = NO_PATH);
    }
    cl.codes.shrink_to_fit();
    cl.spans.shrink_to_fit();

    // Adjacency in both directions, each list sorted by target.
    let mut lists: Vec<Vec<Edge>> = vec![Vec::new(); n];
    for &(i, j, cost, path) in &pairs {
        lists[i as usize].push(Edge { to: j, cost, path });
        lists[j as usize].push(Edge { to: i, cost, path });
    }
    cl.adj_start = Vec::with_capacity(n + 1);
    cl.adj = Vec::with_capacity(pairs.len() * 2);
    for mut list in lists {
        list.sort_by_key(|e| e.to);
        cl.adj_start.push(cl.adj.len() as u32);
        cl.adj.extend(list);
    }
    cl.adj_start.push(cl.adj.len() as u32);
    cl
}

/// `DIRS` index of the step between two adjacent padded cells.
pub(super) fn dir_code(pw: usize, a: u32, b: u32) -> u8 {
    let d = b as i64 - a as i64;
    let pw = pw as i64;
    DIRS.iter()
        .position(|&(dx, dy)| dy as i64 * pw + dx as i64 == d)
        .expect("cells of a path are adjacent") as u8
}
