//! Per-search scratch memory, reused across queries.
//!
//! Each node record carries a generation stamp: a record whose stamp is older than the
//! current search reads as "never reached", so starting a search is O(1) and a search costs
//! time proportional to the nodes it touches, never to the map.
//!
//! Records are 16 bytes (`g`, parent, stamp): four to a cache line. The heuristic is not stored;
//! recomputing it (a few multiplications, see [`super::Heuristic`]) is cheaper than the memory
//! traffic of a 24-byte record.

use super::trace::Recorder;
use super::{OpenList, Succ};

/// One node's search state, kept together for locality.
#[derive(Clone, Copy, Default)]
struct NodeRec {
    g: f64,
    parent: u32,
    /// `gen` = reached (open), `gen + 1` = expanded (closed); anything else = untouched.
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

    /// The node's recorded cost (infinity if unreached this search) and whether it is
    /// expanded: its state (unreached, open, expanded) as two values. Why: the core asks
    /// this of every successor, whose state is as good as random, and one comparison of
    /// the stamp plus a select (no branch) left the relaxation one hard-to-predict branch
    /// (does the new cost improve?) instead of three; A* on `arena2` mispredicted about 7
    /// branches an expansion.
    #[inline]
    pub(crate) fn cost_and_closed(&self, n: u32) -> (f64, bool) {
        let r = self.recs[n as usize];
        // 0 = open, 1 = expanded, anything else = untouched (older stamps wrap to large).
        let d = r.stamp.wrapping_sub(self.generation);
        let g = if d <= 1 { r.g } else { f64::INFINITY };
        (g, d == 1)
    }

    /// Current g (infinity if unreached).
    #[inline]
    pub(crate) fn g(&self, n: u32) -> f64 {
        let r = &self.recs[n as usize];
        if r.stamp >= self.generation {
            r.g
        } else {
            f64::INFINITY
        }
    }

    /// Parent of a reached node (the start is its own parent).
    #[inline]
    pub(crate) fn parent(&self, n: u32) -> u32 {
        self.recs[n as usize].parent
    }

    /// True when `n` was expanded and not reopened since.
    #[inline]
    pub(crate) fn is_expanded(&self, n: u32) -> bool {
        self.recs[n as usize].stamp == self.generation + 1
    }

    /// Records a (better) way to reach `n`; the node is open again.
    #[inline]
    pub(crate) fn touch(&mut self, n: u32, g: f64, parent: u32) {
        self.recs[n as usize] = NodeRec {
            g,
            parent,
            stamp: self.generation,
        };
    }

    #[inline]
    pub(crate) fn mark_expanded(&mut self, n: u32) {
        self.recs[n as usize].stamp = self.generation + 1;
    }
}

/// Everything one search needs besides the map; a [`crate::Searcher`] owns one.
#[derive(Default)]
pub(crate) struct Scratch {
    nodes: Nodes,
    open: OpenList,
    /// Successor buffer handed to the expander at each expansion.
    succs: Vec<Succ>,
    /// The recorder of a traced query, for the searches it runs on this scratch (see
    /// [`super::best_first`]); `None` for untraced queries.
    pub(crate) trace: Option<Recorder>,
}

impl Scratch {
    /// Prepares for a search over `len` nodes (padded cells).
    pub(crate) fn begin(&mut self, len: usize) {
        self.nodes.begin(len);
        self.open.begin(len);
        self.succs.clear();
    }

    pub(crate) fn parts(&mut self) -> (&mut Nodes, &mut OpenList, &mut Vec<Succ>) {
        (&mut self.nodes, &mut self.open, &mut self.succs)
    }

    pub(crate) fn nodes(&self) -> &Nodes {
        &self.nodes
    }
}
