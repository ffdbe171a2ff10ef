//! What keeps a live thing alive: subscriptions, flow fields and live plans each hold a
//! [`Lease`] (when it was last used, how many event streams are open on it) and are dropped
//! by one [`reap`] loop each once idle for the TTL with no stream open. One implementation
//! for the three kinds, so their expiry cannot drift apart.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// Last use and open streams of one live thing.
#[derive(Debug)]
pub struct Lease {
    touched: Mutex<Instant>,
    streams: AtomicUsize,
}

impl Default for Lease {
    fn default() -> Self {
        Self::new()
    }
}

impl Lease {
    /// A lease used now, with no stream open.
    pub fn new() -> Self {
        Lease {
            touched: Mutex::new(Instant::now()),
            streams: AtomicUsize::new(0),
        }
    }

    /// Marks activity now.
    pub fn touch(&self) {
        *self.touched.lock().expect("touch lock") = Instant::now();
    }

    /// Whether nothing streams it and it was last used `ttl` or longer ago.
    pub fn idle(&self, ttl: Duration) -> bool {
        self.streams.load(Ordering::Relaxed) == 0
            && self.touched.lock().expect("touch lock").elapsed() >= ttl
    }
}

/// Something that holds a [`Lease`].
pub trait Leased {
    /// Its lease.
    fn lease(&self) -> &Lease;
    /// Its id (what the reaper removes).
    fn id(&self) -> &str;
}

/// The ids of `things` idle for `ttl` (the reapers' idle list, one for every kind).
pub fn idle<'a, T: Leased + 'a>(
    things: impl IntoIterator<Item = &'a Arc<T>>,
    ttl: Duration,
) -> Vec<String> {
    things
        .into_iter()
        .filter(|t| t.lease().idle(ttl))
        .map(|t| t.id().to_owned())
        .collect()
}

/// Counts an open stream on `T` (not idle) until dropped; the drop is a use.
pub struct Streamed<T: Leased>(Arc<T>);

impl<T: Leased> Streamed<T> {
    /// Opens a stream on `t`: counted, and a use.
    pub fn open(t: &Arc<T>) -> Self {
        let lease = t.lease();
        lease.streams.fetch_add(1, Ordering::Relaxed);
        lease.touch();
        Streamed(Arc::clone(t))
    }
}

impl<T: Leased> Drop for Streamed<T> {
    fn drop(&mut self) {
        let lease = self.0.lease();
        lease.streams.fetch_sub(1, Ordering::Relaxed);
        lease.touch();
    }
}

/// Every `ttl / 4` (between 250 ms and 30 s) until `shutdown`: asks `idle` for the ids idle
/// for `ttl`, and ends each with `remove(id)` (reason `expired`; false when it was gone).
pub async fn reap(
    what: &'static str,
    ttl: Duration,
    shutdown: CancellationToken,
    idle: impl Fn(Duration) -> Vec<String>,
    remove: impl Fn(&str) -> bool,
) {
    let mut tick =
        tokio::time::interval((ttl / 4).clamp(Duration::from_millis(250), Duration::from_secs(30)));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.cancelled() => return,
        }
        for id in idle(ttl) {
            if remove(&id) {
                tracing::info!(%id, "idle {what} expired");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Thing(Lease);

    impl Leased for Thing {
        fn lease(&self) -> &Lease {
            &self.0
        }

        fn id(&self) -> &str {
            "thing"
        }
    }

    #[test]
    fn a_streamed_thing_is_never_idle_and_a_used_one_not_before_its_ttl() {
        let t = Arc::new(Thing(Lease::new()));
        assert!(t.0.idle(Duration::ZERO));
        assert!(!t.0.idle(Duration::from_secs(60)));
        let s = Streamed::open(&t);
        assert!(!t.0.idle(Duration::ZERO));
        drop(s);
        assert!(t.0.idle(Duration::ZERO));
        assert!(!t.0.idle(Duration::from_secs(60)));
    }
}
