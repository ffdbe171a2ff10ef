//! Repairs: the driver hands each field with queued patches to the pool, where its queue
//! is drained (consecutive patches merged into one repair on the newest grid) and each
//! repair that changed cells is published.

use std::sync::Arc;
use std::time::Instant;

use pathd_engine::{Grid, Point};

use super::{Flow, FlowEvent, Inner, MAX_EVENT_CELLS, TOO_MANY_CELLS};
use crate::live::driver::Plan;

/// The cells whose cost differs between `a` and `b`, if they have one shape (`O(cells)`,
/// a byte comparison: about a millisecond for a 1024x1024 map).
pub(crate) fn changed_between(a: &Grid, b: &Grid) -> Option<Vec<Point>> {
    if a.width() != b.width() || a.height() != b.height() || a.movement() != b.movement() {
        return None;
    }
    let w = a.width() as usize;
    let (x, y) = (a.costs(), b.costs());
    Some(
        (0..x.len())
            .filter(|&i| x[i] != y[i])
            .map(|i| Point::new((i % w) as u32, (i / w) as u32))
            .collect(),
    )
}

/// The repair driver: each field with queued patches is drained on the pool, one field a
/// job (see [`crate::live::driver`]).
pub(super) async fn drive(inner: Arc<Inner>) {
    let plan = Plan {
        what: "flow field",
        job: 1,
        passes: 1,
        work: |flow: &Arc<Flow>, _| drain(flow),
        failed: |_| {},
    };
    let (compute, shutdown) = (inner.compute.clone(), inner.shutdown.clone());
    inner.driver.run(compute, shutdown, plan).await
}

/// Works off `flow`'s queue on a pool thread.
fn drain(flow: &Flow) {
    loop {
        let items = {
            let mut q = flow.queue.lock().expect("queue lock");
            if q.items.is_empty() {
                q.scheduled = false;
                return;
            }
            std::mem::take(&mut q.items)
        };
        let Some((grid, version, _)) = items.last().cloned() else {
            continue;
        };
        let mut cells: Vec<Point> = items.iter().flat_map(|i| i.2.iter().copied()).collect();
        if items.len() > 1 {
            cells.sort_unstable_by_key(|p| (p.y, p.x));
            cells.dedup();
        }
        let started = Instant::now();
        let mut field = flow.field.lock().expect("field lock");
        let changed = field.update(&grid, &cells);
        let stats = field.stats();
        metrics::counter!("pathd_flowfield_repairs_total").increment(1);
        metrics::histogram!("pathd_flowfield_repair_duration_seconds")
            .record(started.elapsed().as_secs_f64());
        tracing::debug!(flowfield = %flow.id, changed = changed.len(), invalidated = stats.invalidated, expanded = stats.expanded, "flow field repaired");
        let mut feed = flow.feed.lock().expect("feed lock");
        if changed.is_empty() {
            feed.version = feed.version.max(version);
            continue;
        }
        let ev = if changed.len() > MAX_EVENT_CELLS {
            FlowEvent {
                map_version: version,
                why: Some(TOO_MANY_CELLS),
                ..feed.bare(&flow.id, "resync")
            }
        } else {
            FlowEvent {
                id: flow.id.clone(),
                seq: 0,
                map_version: version,
                reason: "changed",
                cells: changed
                    .iter()
                    .map(|&p| {
                        let c = field.cost_at(p);
                        (p.x, p.y, field.direction_at(p), c)
                    })
                    .collect(),
                why: None,
            }
        };
        let seq = feed.push(ev);
        drop(feed);
        drop(field);
        flow.changed.send_replace(seq);
    }
}
