//! Per-search scratch memory, reused across queries.
//!
//! Each node record carries a generation stamp: a record whose stamp is older than the
//! current search reads as "never reached", so starting a search is O(1) and a search costs
//! time proportional to the nodes it touches, never to the map.

use super::OpenList;

/// One node's search state, kept together for locality.
#[derive(Clone, Copy, Default)]
struct NodeRec {
    g: f64,
    /// Unweighted heuristic, computed once when the node is first reached.
    h: f64,
    parent: u32,
    /// `gen` = reached, `gen + 1` = expanded; anything else = untouched this search.
    stamp: u32,
}

/// Node records of the current search.
#[derive(Default)]
pub(crate) struct Nodes {
    recs: Vec<NodeRec>,
    generation: u32,
}

impl Nodes {
    fn begin(&mut self, len: usize) {
        if self.recs.len() < len {
            self.recs.resize(len, NodeRec::default());
        }
        // Two stamps per search; on wrap-around, clear once and start over.
        if self.generation >= u32::MAX - 4 {
            self.recs.iter_mut().for_each(|r| r.stamp = 0);
            self.generation = 0;
        }
        self.generation += 2;
    }

    #[inline]
    fn touched(&self, n: u32) -> bool {
        self.recs[n as usize].stamp >= self.generation
    }

    /// `(g, h)` if reached this search, and whether it was expanded.
    #[inline]
    pub(crate) fn lookup(&self, n: u32) -> (Option<(f64, f64)>, bool) {
        let r = &self.recs[n as usize];
        if r.stamp >= self.generation {
            (Some((r.g, r.h)), r.stamp == self.generation + 1)
        } else {
            (None, false)
        }
    }

    /// Current g (infinity if unreached).
    #[inline]
    pub(crate) fn g(&self, n: u32) -> f64 {
        if self.touched(n) {
            self.recs[n as usize].g
        } else {
            f64::INFINITY
        }
    }

    #[inline]
    pub(crate) fn h(&self, n: u32) -> f64 {
        self.recs[n as usize].h
    }

    #[inline]
    pub(crate) fn parent(&self, n: u32) -> u32 {
        self.recs[n as usize].parent
    }

    #[inline]
    pub(crate) fn is_expanded(&self, n: u32) -> bool {
        self.recs[n as usize].stamp == self.generation + 1
    }

    /// Records a (better) way to reach `n`; the node is open again.
    #[inline]
    pub(crate) fn touch(&mut self, n: u32, g: f64, h: f64, parent: u32) {
        self.recs[n as usize] = NodeRec {
            g,
            h,
            parent,
            stamp: self.generation,
        };
    }

    #[inline]
    pub(crate) fn mark_expanded(&mut self, n: u32) {
        self.recs[n as usize].stamp = self.generation + 1;
    }
}

/// Everything one search needs besides the map; keep one per thread.
#[derive(Default)]
pub(crate) struct Scratch {
    nodes: Nodes,
    open: OpenList,
}

impl Scratch {
    /// Prepares for a search over `len` nodes (padded cells).
    pub(crate) fn begin(&mut self, len: usize) {
        self.nodes.begin(len);
        self.open.clear();
    }

    pub(crate) fn parts(&mut self) -> (&mut Nodes, &mut OpenList) {
        (&mut self.nodes, &mut self.open)
    }

    pub(crate) fn nodes(&self) -> &Nodes {
        &self.nodes
    }
}
