//! One subscription: its id and secret, its agent and feed, its lease.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use pathd_engine::{Agent, Point};
use tokio::sync::watch;

use super::feed::{Event, Feed};
use super::group::Group;
use super::lease::{Lease, Leased, Streamed};

/// One subscription.
pub struct Sub {
    /// Its public id: 128 random bits in hex (unguessable, so ids cannot be enumerated).
    pub id: String,
    /// 128 random bits in hex, handed out once on creation: moving or deleting the
    /// subscription needs it (or the admin token). Compare with [`Sub::secret_matches`].
    pub(super) secret: String,
    /// The map it follows.
    pub map: String,
    /// Its goal.
    pub goal: Point,
    /// The group whose tree it shares.
    pub(super) group: Arc<Group>,
    /// Its agent (position, last path); locked by the worker draining its group and by
    /// memory readers, so it is uncontended.
    pub(super) agent: Mutex<Agent>,
    /// Events (short critical sections: push, or pick the next event of a stream).
    pub(super) feed: Mutex<Feed>,
    /// Bumped after every change of the feed; streams wait on it.
    pub(super) changed: watch::Sender<u64>,
    /// Last request or stream activity (idle expiry).
    pub(super) lease: Lease,
    /// The agent's position, `x << 32 | y` (readable without the agent lock, which a
    /// running repair holds).
    pub(super) position: AtomicU64,
}

/// 128 random bits from the thread-local CSPRNG, as 32 lowercase hex digits.
pub(super) fn random_hex128() -> String {
    format!("{:032x}", rand::random::<u128>())
}

impl Sub {
    /// The secret that authorizes moving and deleting this subscription (for the create
    /// answer only; check a presented one with [`Sub::secret_matches`]).
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// Whether `given` is this subscription's secret, compared in constant time.
    pub fn secret_matches(&self, given: &str) -> bool {
        crate::secret::same(given, &self.secret)
    }

    /// The feed (lock briefly; never across an `.await`).
    pub fn feed(&self) -> std::sync::MutexGuard<'_, Feed> {
        self.feed.lock().expect("feed lock")
    }

    /// The map version its state is known to hold for: its own last event's or repair's,
    /// or its group's last patch, when that patch did not reach it (module `reach`).
    pub fn map_version(&self) -> u64 {
        let own = self.feed().version;
        own.max(self.group.version.load(Ordering::Relaxed))
    }

    /// A receiver that sees every later change of the feed.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The agent's current position.
    pub fn position(&self) -> Point {
        let v = self.position.load(Ordering::Relaxed);
        Point::new((v >> 32) as u32, v as u32)
    }

    pub(super) fn set_position(&self, p: Point) {
        self.position
            .store((p.x as u64) << 32 | p.y as u64, Ordering::Relaxed);
    }

    /// Marks activity now (idle expiry).
    pub fn touch(&self) {
        self.lease.touch();
    }

    /// Counts an open stream until the guard is dropped.
    pub fn open_stream(self: &Arc<Self>) -> StreamGuard {
        Streamed::open(self)
    }

    pub(super) fn publish(&self, ev: Event) {
        let seq = self.feed().push(ev);
        self.changed.send_replace(seq);
    }

    pub(super) fn close(&self, reason: &'static str) {
        let seq = {
            let mut f = self.feed();
            f.close(reason);
            f.current().seq
        };
        self.changed.send_replace(seq);
    }
}

/// Keeps a subscription counted as streamed (not idle) while a stream is open.
pub type StreamGuard = Streamed<Sub>;

impl Leased for Sub {
    fn lease(&self) -> &Lease {
        &self.lease
    }

    fn id(&self) -> &str {
        &self.id
    }
}
