//! A flow field's events: what they say, and the recent ones a stream resumes from.

use std::collections::VecDeque;
use std::sync::Arc;

use serde::Serialize;

pub use crate::live::feed::Next;

/// Most cells one event lists; a larger change is announced as `resync`.
pub const MAX_EVENT_CELLS: usize = 16_384;

/// One changed cell: `[x, y, direction, cost]`, cost `null` when unreachable.
pub type CellChange = (u32, u32, u8, Option<f64>);

/// One event of a flow field (`FlowFieldEvent` in `openapi.yaml`).
#[derive(Clone, Debug, Serialize)]
pub struct FlowEvent {
    /// The field's id.
    pub id: String,
    /// 1 for the first change, +1 per event; a stream's first event carries the current one.
    pub seq: u64,
    /// The map version the field holds for after this event.
    pub map_version: u64,
    /// `current` (a stream's first event: where it stands), `changed`, `resync` (fetch the
    /// field again), or a final `deleted`, `map_deleted`, `map_replaced`, `expired`.
    pub reason: &'static str,
    /// The cells whose direction or cost changed (`changed` events only).
    pub cells: Vec<CellChange>,
    /// Why a `resync` (fetch the field again) came: [`TOO_MANY_CELLS`], [`FELL_BEHIND`],
    /// [`TAKEN_OVER`] or [`MOVED`]; absent on other events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<&'static str>,
}

crate::live::feed::feed_event!(FlowEvent);

/// A `resync`'s `why`: one repair changed more than [`MAX_EVENT_CELLS`] cells.
pub const TOO_MANY_CELLS: &str = "too_many_cells";
/// A `resync`'s `why`: the stream asked for events older than the recent-event buffer.
pub const FELL_BEHIND: &str = "fell_behind";
/// A `resync`'s `why`: the replica that held the field died; another one recomputed it from
/// its stored definition on the map's current version (the repairs the dead one made cannot
/// be replayed).
pub const TAKEN_OVER: &str = "taken_over";
/// A `resync`'s `why` on a stream's final event: another replica holds the field now (this
/// one was cut off from the cluster); reconnect to follow it there.
pub const MOVED: &str = "moved";

/// Recent events of one field.
#[derive(Debug)]
pub(super) struct Feed {
    pub(super) cap: usize,
    pub(super) ring: VecDeque<Arc<FlowEvent>>,
    pub(super) seq: u64,
    pub(super) version: u64,
    /// The final event, once the field ended.
    pub(super) last: Option<Arc<FlowEvent>>,
}

impl Feed {
    pub(super) fn push(&mut self, mut ev: FlowEvent) -> u64 {
        if self.last.is_some() {
            return self.seq;
        }
        self.seq += 1;
        ev.seq = self.seq;
        self.version = self.version.max(ev.map_version);
        if self.ring.len() >= self.cap {
            self.ring.pop_front();
        }
        self.ring.push_back(Arc::new(ev));
        self.seq
    }

    pub(super) fn bare(&self, id: &str, reason: &'static str) -> FlowEvent {
        FlowEvent {
            id: id.to_owned(),
            seq: self.seq,
            map_version: self.version,
            reason,
            cells: Vec::new(),
            why: None,
        }
    }

    pub(super) fn next_after(&self, id: &str, last: Option<u64>) -> Next<FlowEvent> {
        let Some(last) = last else {
            return Next::Send(match &self.last {
                Some(ev) => Arc::clone(ev),
                None => Arc::new(self.bare(id, "current")),
            });
        };
        if last >= self.seq {
            return if self.last.is_some() {
                Next::End
            } else {
                Next::Wait
            };
        }
        if let Some(ev) = &self.last
            && last + 1 >= self.seq
        {
            return Next::Send(Arc::clone(ev)); // the final event is not in the ring
        }
        let oldest = self.ring.front().map_or(self.seq, |e| e.seq);
        if last + 1 >= oldest {
            return Next::Send(Arc::clone(&self.ring[(last + 1 - oldest) as usize]));
        }
        match &self.last {
            Some(ev) => Next::Send(Arc::clone(ev)),
            None => Next::Send(Arc::new(FlowEvent {
                why: Some(FELL_BEHIND),
                ..self.bare(id, "resync")
            })),
        }
    }
}
