//! HPA*'s refinement: an abstract chain turned into cells.

use super::super::Inner;
use super::super::build::NO_PATH;
use super::{Ends, Scratch, step};
use crate::grid::Grid;
use crate::query::Stats;
use crate::search::trace::Recorder;
use crate::trace::RefineKind;

/// Turns an abstract chain (starting at S) into cells in `sc.cells`.
pub(super) fn refine(
    me: &Inner,
    grid: &Grid,
    sc: &mut Scratch,
    chain: &[u32],
    ends: &Ends,
    stats: &mut Stats,
    tr: &mut Option<Recorder>,
) {
    let Ends {
        s_id,
        g_id,
        s_cell,
        g_cell,
        ..
    } = *ends;
    let pw = grid.padded_width();
    let off = grid.offsets();
    let layout = me.layout;
    let locate = |id: u32| {
        let c = me.gnodes[id as usize].cluster as usize;
        (c, (id - me.offsets[c]) as usize)
    };
    sc.cells.push(s_cell);
    for w in chain.windows(2) {
        let (a, b) = (w[0], w[1]);
        sc.seg.clear();
        // Which kind of step this edge is, for a trace.
        let kind;
        if a == s_id {
            kind = RefineKind::Start;
            let rs = sc.s.rect();
            let to = if b == g_id {
                g_cell
            } else {
                let (c, i) = locate(b);
                me.clusters[c].nodes[i].cell
            };
            sc.s.path_to(rs.local(pw, to), &mut sc.seg);
        } else if b == g_id {
            kind = RefineKind::Goal;
            let (c, i) = locate(a);
            let rg = sc.g.rect();
            sc.g.path_to(rg.local(pw, me.clusters[c].nodes[i].cell), &mut sc.seg);
            sc.seg.reverse();
        } else {
            let ((ca, ia), (cb, ib)) = (locate(a), locate(b));
            let cl = &*me.clusters[ca];
            if ca != cb {
                kind = RefineKind::Cross;
                sc.seg.push(cl.nodes[ia].cell);
                sc.seg.push(me.clusters[cb].nodes[ib].cell);
            } else {
                let edge = cl
                    .edges(ia)
                    .iter()
                    .find(|e| e.to as usize == ib)
                    .expect("abstract paths follow edges");
                if edge.path != NO_PATH {
                    kind = RefineKind::Cached;
                    // Cached: replay the step codes from the lower node, reversed if needed.
                    let (start, len) = cl.spans[edge.path as usize];
                    let mut cur = cl.nodes[ia.min(ib)].cell;
                    sc.seg.push(cur);
                    for &code in &cl.codes[start as usize..(start + len) as usize] {
                        cur = (cur as usize).wrapping_add_signed(off[code as usize]) as u32;
                        sc.seg.push(cur);
                    }
                    if ia > ib {
                        sc.seg.reverse();
                    }
                } else {
                    kind = RefineKind::Search;
                    let r = layout.rect(ca);
                    let (from, to) = (cl.nodes[ia].cell, cl.nodes[ib].cell);
                    let found =
                        sc.work
                            .astar(grid, r, r.local(pw, from), r.local(pw, to), u64::MAX, tr);
                    debug_assert!(found, "an intra-cluster edge has an in-cluster path");
                    sc.work.path_to(r.local(pw, to), &mut sc.seg);
                    stats.expanded += sc.work.expanded;
                    stats.generated += sc.work.generated;
                }
            }
        }
        debug_assert_eq!(sc.seg.first(), sc.cells.last());
        sc.cells.extend_from_slice(&sc.seg[1..]);
        step(tr, kind, &sc.seg);
    }
}
