//! Looking inside an abstraction: its transitions and edges, and a structural comparison
//! (what the update-equals-rebuild tests assert).

use super::Abstraction;
use crate::grid::Point;

impl Abstraction {
    /// Every transition as `(near, far)`: the cell on the west (or north) side of the border
    /// and the facing cell on the east (or south) side, in cluster order, east borders
    /// before south borders within a cluster.
    pub fn transitions(&self) -> Vec<(Point, Point)> {
        let me = &*self.inner;
        let mut out = Vec::new();
        for c in 0..me.layout.count() {
            let r = me.layout.rect(c);
            for t in &me.borders[c].east {
                let y = r.y0 + t.off as u32;
                out.push((Point::new(r.x0 + r.w - 1, y), Point::new(r.x0 + r.w, y)));
            }
            for t in &me.borders[c].south {
                let x = r.x0 + t.off as u32;
                out.push((Point::new(x, r.y0 + r.h - 1), Point::new(x, r.y0 + r.h)));
            }
        }
        out
    }

    /// Every intra-cluster edge once, as `(from, to, cost)`, in cluster and node order.
    pub fn edges(&self) -> Vec<(Point, Point, f64)> {
        let me = &*self.inner;
        let mut out = Vec::new();
        for cl in &me.clusters {
            for (i, n) in cl.nodes.iter().enumerate() {
                for e in cl.edges(i).iter().filter(|e| e.to as usize > i) {
                    let m = cl.nodes[e.to as usize];
                    out.push((self.point(n.cell), self.point(m.cell), e.cost));
                }
            }
        }
        out
    }

    fn point(&self, padded: u32) -> Point {
        let pw = self.inner.layout.width as usize + 2;
        let p = padded as usize;
        Point::new((p % pw - 1) as u32, (p / pw - 1) as u32)
    }

    /// `None` when both abstractions have the same layout, the same transitions (positions
    /// and crossing costs) and the same intra-cluster edges with bit-identical costs; else a
    /// description of the first difference. Cached cell paths and the query-time settings
    /// (cache budget, refinement) are not compared: two equally cheap paths are equally good.
    pub fn diff(&self, other: &Abstraction) -> Option<String> {
        let (a, b) = (&*self.inner, &*other.inner);
        let spacing = (a.config.entrance_spacing, b.config.entrance_spacing);
        if a.layout != b.layout || a.movement != b.movement || spacing.0 != spacing.1 {
            return Some(format!(
                "layouts differ: {:?} {:?} {:?} vs {:?} {:?} {:?}",
                a.layout, a.movement, spacing.0, b.layout, b.movement, spacing.1
            ));
        }
        for c in 0..a.layout.count() {
            let r = a.layout.rect(c);
            if a.borders[c] != b.borders[c] {
                return Some(format!(
                    "cluster {c} at ({}, {}): borders differ: {:?} vs {:?}",
                    r.x0, r.y0, a.borders[c], b.borders[c]
                ));
            }
            let (x, y) = (&a.clusters[c], &b.clusters[c]);
            if x.nodes != y.nodes || x.side_start != y.side_start {
                return Some(format!(
                    "cluster {c} at ({}, {}): nodes differ: {:?} vs {:?}",
                    r.x0, r.y0, x.nodes, y.nodes
                ));
            }
            for i in 0..x.nodes.len() {
                let ex: Vec<(u16, u64)> = x
                    .edges(i)
                    .iter()
                    .map(|e| (e.to, e.cost.to_bits()))
                    .collect();
                let ey: Vec<(u16, u64)> = y
                    .edges(i)
                    .iter()
                    .map(|e| (e.to, e.cost.to_bits()))
                    .collect();
                if ex != ey {
                    return Some(format!(
                        "cluster {c} at ({}, {}), node {i} at {}: edges differ: {:?} vs {:?}",
                        r.x0,
                        r.y0,
                        self.point(x.nodes[i].cell),
                        x.edges(i),
                        y.edges(i)
                    ));
                }
            }
        }
        None
    }

    /// True when [`Abstraction::diff`] finds no difference.
    pub fn same_graph(&self, other: &Abstraction) -> bool {
        self.diff(other).is_none()
    }
}
