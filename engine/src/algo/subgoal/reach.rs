//! Direct-h-reachability: the subgoals a cell reaches along an octile-shortest path with no
//! subgoal in between, found by scans that stop at the first blocked cell or subgoal.
//!
//! # h-reachable, and why diagonal-first scans find every needed edge
//!
//! `t` is *h-reachable* from `s` when some path from `s` to `t` costs exactly the octile
//! distance `h(s, t)` (an *h-path*): it uses only the two move kinds of the octant `t` lies
//! in, say `D` diagonal moves `d` and `C` cardinal moves `c`, in some order.
//!
//! **Lemma.** If `t` is h-reachable from `s` and the *diagonal-first* path (`d^D c^C`) is
//! not legal, then some h-path from `s` to `t` passes through a subgoal other than `s` and
//! `t`. Proof: write a cell of the octant as `P(a, b) = s + a d + b c`. Take any h-path and
//! swap one adjacent "cardinal, then diagonal" pair, `P(a, b) -> P(a, b + 1) -> P(a + 1,
//! b + 1)`, into "diagonal, then cardinal", `P(a, b) -> P(a + 1, b) -> P(a + 1, b + 1)`. The
//! new path needs `P(a + 1, b)` open (it is: a side cell of the old diagonal move),
//! `P(a, b + 1)` open (on the old path), and the other side cell of the new diagonal move,
//! `P(a, b) + d - c`, open. If that last one is blocked, then `y = P(a, b + 1)`, on the old
//! path and neither `s` (`b + 1 > 0`) nor `t` (a diagonal move follows it), is a subgoal:
//! its diagonal neighbour `y + d - 2c = P(a, b) + d - c` (direction `d - 2c`, a diagonal) is
//! blocked while the two cells beside that step, `y - c = P(a, b)` and `y + d - c =
//! P(a + 1, b)`, are open. Otherwise the swap gives an h-path; swapping until none is left
//! either meets such a subgoal or reaches the diagonal-first path, which was not legal. ∎
//!
//! **Mirror lemma.** The same holds for the *cardinal-first* path (`c^C d^D`): swapping a
//! "diagonal, then cardinal" pair `P(a, b) -> P(a + 1, b) -> P(a + 1, b + 1)` into
//! "cardinal, then diagonal" needs `P(a, b + 1)` open (it is: a side cell of the old
//! diagonal move) and the new diagonal move's other side cell `P(a, b + 2)` open; if that
//! one is blocked, `P(a + 1, b)` (on the old path, neither end) is a subgoal: its diagonal
//! neighbour `P(a, b + 2) = P(a + 1, b) + 2c - d` (a diagonal direction) is blocked while the two cells beside that step, `P(a, b + 1)` and
//! `P(a + 1, b + 1)`, are open. So a direct pair has both extreme h-paths legal and free of
//! other subgoals: each end's scan reports the other (the cardinal-first path from one end
//! is the diagonal-first path from the other). The graph keeps an edge only when both
//! ends' scans report it.
//!
//! So [`scan`] walks, for each diagonal `d`, the ray `s + i d` while its steps are legal and
//! its cells are not subgoals, and from each ray cell scans both cardinal components of `d`
//! up to the first blocked cell or subgoal (and scans the four cardinal rays from `s`
//! itself). It reports every subgoal that ends a scan: each is reached by a legal
//! diagonal-first h-path, and every subgoal `t` whose h-paths avoid all other subgoals (the
//! *direct*-h-reachable ones) is among them, by the lemma. Why those suffice is in the
//! parent module's docs.
//!
//! The scans end at the first stop cell in each direction, found a word at a time
//! ([`Placement::east`] and friends), so a scan costs the length of its diagonal rays, not
//! the area it covers.

use super::place::Placement;

/// The padded bounding box `[x0, y0, x1, y1]` of every cell a scan read: a later version
/// whose cells in it have the same state gives the same scan.
pub(crate) type Bbox = [u16; 4];

fn grow(b: &mut Bbox, x: usize, y: usize) {
    let (x, y) = (x as u16, y as u16);
    b[0] = b[0].min(x);
    b[1] = b[1].min(y);
    b[2] = b[2].max(x);
    b[3] = b[3].max(y);
}

/// Pushes onto `out` (padded indices) every subgoal that ends a scan from padded `(x, y)`
/// (see the module docs; `(x, y)` itself is never reported), and returns the bounding box
/// of the cells the scans read.
pub(crate) fn scan(pl: &Placement, x: usize, y: usize, out: &mut Vec<u32>) -> Bbox {
    let pw = pl.pw;
    let mut bbox = [x as u16, y as u16, x as u16, y as u16];
    let report = |out: &mut Vec<u32>, bbox: &mut Bbox, sx: usize, sy: usize| {
        grow(bbox, sx, sy);
        if pl.open(sx, sy) {
            out.push((sy * pw + sx) as u32);
        }
    };
    // The four cardinal rays.
    report(out, &mut bbox, pl.east(x, y), y);
    report(out, &mut bbox, pl.west(x, y), y);
    report(out, &mut bbox, x, pl.south(x, y));
    report(out, &mut bbox, x, pl.north(x, y));
    // The four diagonal rays, each with its two cardinal components from every ray cell.
    for (dx, dy) in [(1isize, 1isize), (1, -1), (-1, 1), (-1, -1)] {
        let (mut cx, mut cy) = (x, y);
        loop {
            let (nx, ny) = (cx.wrapping_add_signed(dx), cy.wrapping_add_signed(dy));
            grow(&mut bbox, nx, ny);
            if !(pl.open(nx, ny) && pl.open(nx, cy) && pl.open(cx, ny)) {
                break;
            }
            if pl.stop(nx, ny) {
                out.push((ny * pw + nx) as u32);
                break;
            }
            let ex = if dx > 0 {
                pl.east(nx, ny)
            } else {
                pl.west(nx, ny)
            };
            report(out, &mut bbox, ex, ny);
            let ey = if dy > 0 {
                pl.south(nx, ny)
            } else {
                pl.north(nx, ny)
            };
            report(out, &mut bbox, nx, ey);
            (cx, cy) = (nx, ny);
        }
    }
    bbox
}

/// An h-path between padded `a` and `b` as the cells after `a` (padded `(x, y)`), when the
/// diagonal-first or the cardinal-first one is legal: every edge of the graph and every
/// connection of a start or goal is one of the two (a scan from one end finds a
/// diagonal-first path, which is cardinal-first from the other end).
pub(crate) fn h_path(
    pl: &Placement,
    a: (usize, usize),
    b: (usize, usize),
    out: &mut Vec<(usize, usize)>,
) -> bool {
    let (adx, ady) = (a.0.abs_diff(b.0), a.1.abs_diff(b.1));
    let sx = if b.0 > a.0 { 1isize } else { -1 };
    let sy = if b.1 > a.1 { 1isize } else { -1 };
    let diag = adx.min(ady);
    let (cx, cy) = if adx > ady { (sx, 0) } else { (0, sy) };
    let straight = adx.max(ady) - diag;
    let mark = out.len();
    for first_diagonal in [true, false] {
        out.truncate(mark);
        let mut cur = a;
        let mut legal = true;
        let runs = if first_diagonal {
            [(diag, (sx, sy)), (straight, (cx, cy))]
        } else {
            [(straight, (cx, cy)), (diag, (sx, sy))]
        };
        'runs: for (len, (dx, dy)) in runs {
            for _ in 0..len {
                let next = (cur.0.wrapping_add_signed(dx), cur.1.wrapping_add_signed(dy));
                let ok = pl.open(next.0, next.1)
                    && (dx == 0 || dy == 0 || pl.open(next.0, cur.1) && pl.open(cur.0, next.1));
                if !ok {
                    legal = false;
                    break 'runs;
                }
                out.push(next);
                cur = next;
            }
        }
        if legal {
            return true;
        }
    }
    out.truncate(mark);
    false
}
