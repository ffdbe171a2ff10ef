//! One subscription's events: the current state, a bounded ring of recent events by `seq`,
//! and what a stream that has sent up to some `seq` must send next.
//!
//! Streams pull from the feed instead of being pushed to, so a slow client never makes the
//! server buffer without bound or drop events silently: when the event it needs next has
//! left the ring, it gets one `resync` event carrying the full current state (and its
//! `seq`), and continues from there.

use std::collections::VecDeque;
use std::sync::Arc;

use pathd_engine::{Agent, Point};
use serde::Serialize;

/// One event of a subscription (`SubscriptionEvent` in `openapi.yaml`).
#[derive(Clone, Debug, Serialize)]
pub struct Event {
    /// The subscription's id.
    pub id: String,
    /// 1 for the first event, +1 per event.
    pub seq: u64,
    /// The map version the state was computed on.
    pub map_version: u64,
    /// `found`, `no_path` or `limit_reached`.
    pub status: &'static str,
    /// Cells from the agent's position to the goal (empty without a path).
    pub path: Vec<[u32; 2]>,
    /// Cost of `path` (0 without a path).
    pub cost: f64,
    /// Why it was sent: `initial`, `blocked`, `costlier`, `cheaper`, `unreachable`,
    /// `restored`, `moved`, `interrupted`, `resync`, `deleted`, `map_deleted`,
    /// `map_replaced`, `expired`, `shutdown`.
    pub reason: &'static str,
    /// After a repair (a patch reached the search): which cells it touched.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub repair: Option<Touched>,
}

/// Most cells listed in an event's `touched`: enough for a page to highlight a local
/// repair, bounded so that a repair that floods the map does not make a huge event.
pub const TOUCHED_CAP: usize = 4096;

/// The cells a repair touched (the shared tree's changed vertices, or the cells the agent's
/// forward repair expanded), as an event carries them.
#[derive(Clone, Debug, Serialize)]
pub struct Touched {
    /// At most [`TOUCHED_CAP`] of them, in row-major order.
    pub touched: Vec<[u32; 2]>,
    /// How many there were.
    pub touched_count: usize,
    /// True when `touched` lists fewer than `touched_count`.
    pub touched_truncated: bool,
}

impl Event {
    /// The state of `agent` as an event (`seq` is set by [`Feed::push`]).
    pub fn of(id: &str, agent: &Agent, map_version: u64, reason: &'static str) -> Self {
        let (path, cost) = match agent.path() {
            Some((p, c)) => (p.iter().map(|p: &Point| [p.x, p.y]).collect(), c),
            None => (Vec::new(), 0.0),
        };
        Event {
            id: id.to_owned(),
            seq: 0,
            map_version,
            status: agent.status().as_str(),
            path,
            cost,
            reason,
            repair: None,
        }
    }

    /// [`Event::of`] after a repair: also the cells it touched (at most [`TOUCHED_CAP`]).
    pub fn repaired(id: &str, agent: &Agent, map_version: u64, reason: &'static str) -> Self {
        let (cells, count) = agent.repaired_cells(TOUCHED_CAP);
        Event {
            repair: Some(Touched {
                touched_truncated: cells.len() < count,
                touched: cells.iter().map(|p| [p.x, p.y]).collect(),
                touched_count: count,
            }),
            ..Self::of(id, agent, map_version, reason)
        }
    }
}

/// An event a [`Feed`] can hold: subscriptions' [`Event`]s, live plans' events
/// ([`crate::live::plans`]).
pub trait FeedEvent: Clone {
    /// Its `seq`.
    fn seq(&self) -> u64;
    /// Sets its `seq` (the feed numbers events).
    fn set_seq(&mut self, seq: u64);
    /// The map version it holds for.
    fn map_version(&self) -> u64;
    /// Why it was sent.
    fn reason(&self) -> &'static str;
    /// Sets why it was sent.
    fn set_reason(&mut self, reason: &'static str);
    /// Drops what only the event that carried it means (a final event repeats the state
    /// without it).
    fn clear_transient(&mut self) {}
}

/// The [`FeedEvent`] accessors of an event type with the fields `seq: u64`,
/// `map_version: u64` and `reason: &'static str`; more items (say `clear_transient`) may
/// follow the type.
macro_rules! feed_event {
    ($t:ty $(, $item:item)*) => {
        impl $crate::live::feed::FeedEvent for $t {
            fn seq(&self) -> u64 {
                self.seq
            }
            fn set_seq(&mut self, seq: u64) {
                self.seq = seq;
            }
            fn map_version(&self) -> u64 {
                self.map_version
            }
            fn reason(&self) -> &'static str {
                self.reason
            }
            fn set_reason(&mut self, reason: &'static str) {
                self.reason = reason;
            }
            $($item)*
        }
    };
}
pub(crate) use feed_event;

feed_event!(
    Event,
    fn clear_transient(&mut self) {
        self.repair = None;
    }
);

/// What a stream sends next.
#[derive(Debug)]
pub enum Next<E = Event> {
    /// This event.
    Send(Arc<E>),
    /// Nothing new yet.
    Wait,
    /// The subscription ended and the stream has sent everything.
    End,
}

/// The event history of one subscription (or live plan).
#[derive(Debug)]
pub struct Feed<E = Event> {
    /// Most events kept.
    cap: usize,
    /// Recent events, oldest first, consecutive `seq`s ending at `current.seq`.
    ring: VecDeque<Arc<E>>,
    /// The newest event.
    current: Arc<E>,
    /// The full current state: `current`, or newer when a move along the path shortened it
    /// without an event (same `seq` and `reason` as `current`).
    state: Arc<E>,
    /// Set by the final event: nothing follows it.
    closed: bool,
    /// Map version the state is known to hold for (patches that did not change the path
    /// advance it without an event).
    pub version: u64,
}

impl<E: FeedEvent> Feed<E> {
    /// A feed whose first event (`seq` 1) is `first`.
    pub fn new(mut first: E, cap: usize) -> Self {
        first.set_seq(1);
        let version = first.map_version();
        let current = Arc::new(first);
        Feed {
            cap: cap.max(1),
            ring: VecDeque::from([Arc::clone(&current)]),
            state: Arc::clone(&current),
            current,
            closed: false,
            version,
        }
    }

    /// The newest event.
    pub fn current(&self) -> &Arc<E> {
        &self.current
    }

    /// The full current state (what `GET` and a fresh stream show).
    pub fn state(&self) -> &Arc<E> {
        &self.state
    }

    /// Replaces the current state without an event (a move along the path).
    pub fn refresh(&mut self, mut ev: E) {
        if self.closed {
            return;
        }
        self.version = self.version.max(ev.map_version());
        ev.set_seq(self.current.seq());
        ev.set_reason(self.current.reason());
        self.state = Arc::new(ev);
    }

    /// True once the final event was pushed.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Appends `ev` as the next `seq` (ignored after the final event); returns its `seq`.
    pub fn push(&mut self, mut ev: E) -> u64 {
        if self.closed {
            return self.current.seq();
        }
        ev.set_seq(self.current.seq() + 1);
        self.version = self.version.max(ev.map_version());
        let ev = Arc::new(ev);
        if self.ring.len() == self.cap {
            self.ring.pop_front();
        }
        self.ring.push_back(Arc::clone(&ev));
        self.state = Arc::clone(&ev);
        self.current = ev;
        self.current.seq()
    }

    /// Appends the final event: the current state with `reason`.
    pub fn close(&mut self, reason: &'static str) {
        if self.closed {
            return;
        }
        let mut ev = (*self.state).clone();
        ev.set_reason(reason);
        ev.clear_transient();
        self.push(ev);
        self.closed = true;
    }

    /// What a stream that has sent up to `last` (`None`: nothing yet) sends next. A fresh
    /// stream starts with the current state.
    pub fn next_after(&self, last: Option<u64>) -> Next<E> {
        let cur = self.current.seq();
        let Some(last) = last else {
            return Next::Send(Arc::clone(&self.state));
        };
        if last >= cur {
            return if self.closed { Next::End } else { Next::Wait };
        }
        let oldest = self.ring.front().map_or(cur, |e| e.seq());
        if last + 1 >= oldest {
            return Next::Send(Arc::clone(&self.ring[(last + 1 - oldest) as usize]));
        }
        if self.closed {
            // The final event is the full state already.
            return Next::Send(Arc::clone(&self.current));
        }
        let mut ev = (*self.state).clone();
        ev.set_reason("resync");
        Next::Send(Arc::new(ev))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(v: u64) -> Event {
        Event {
            id: "s".into(),
            seq: 0,
            map_version: v,
            status: "found",
            path: vec![],
            cost: 0.0,
            reason: "blocked",
            repair: None,
        }
    }

    fn seq_reason(n: Next) -> (u64, &'static str) {
        match n {
            Next::Send(e) => (e.seq, e.reason),
            other => panic!("expected an event, got {other:?}"),
        }
    }

    #[test]
    fn replays_from_the_ring_resyncs_past_it_and_ends_after_close() {
        let mut f = Feed::new(
            Event {
                reason: "initial",
                ..ev(1)
            },
            3,
        );
        assert_eq!(seq_reason(f.next_after(None)), (1, "initial"));
        assert!(matches!(f.next_after(Some(1)), Next::Wait));
        for v in 2..=5 {
            f.push(ev(v));
        }
        // Ring holds seqs 3, 4, 5.
        assert_eq!(seq_reason(f.next_after(Some(2))), (3, "blocked"));
        assert_eq!(seq_reason(f.next_after(Some(4))), (5, "blocked"));
        assert_eq!(seq_reason(f.next_after(Some(1))), (5, "resync"));
        f.close("deleted");
        assert_eq!(seq_reason(f.next_after(Some(5))), (6, "deleted"));
        assert_eq!(seq_reason(f.next_after(Some(1))), (6, "deleted"));
        assert!(matches!(f.next_after(Some(6)), Next::End));
        assert_eq!(f.push(ev(9)), 6, "nothing after the final event");
    }
}
