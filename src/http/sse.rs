//! The event-stream plumbing shared by feeds ([`crate::live::feed::Feed`]): `Last-Event-ID` parsing
//! and the stream that pulls a feed's next event each time it changes.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use serde::Serialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::http::error::ApiError;
use crate::live::feed::{FeedEvent, Next};

/// The `Last-Event-ID` a reconnecting stream sends (`None` without one), or `400
/// invalid_request` when it is not a `seq`.
pub fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    match headers.get("last-event-id") {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map(Some)
            .ok_or_else(|| ApiError::invalid_request("Last-Event-ID must be a seq number")),
    }
}

/// An SSE response following a feed: `next(last)` is the feed's [`Next`] after the `seq`
/// `last` sent (`None`: nothing yet, so the stream starts with the current state), `rx`
/// changes after every change of the feed, and the stream ends after the final event or
/// at `shutdown`. `guard` lives as long as the stream (an open-stream count).
pub fn follow<E, N, G>(
    next: N,
    rx: watch::Receiver<u64>,
    last: Option<u64>,
    shutdown: CancellationToken,
    guard: G,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>>
where
    E: FeedEvent + Serialize + Send + Sync + 'static,
    N: Fn(Option<u64>) -> Next<E> + Send + 'static,
    G: Send + 'static,
{
    struct St<N, G> {
        next: N,
        rx: watch::Receiver<u64>,
        last: Option<u64>,
        shutdown: CancellationToken,
        _guard: G,
    }
    let st = St {
        next,
        rx,
        last,
        shutdown,
        _guard: guard,
    };
    let stream = futures_util::stream::unfold(st, |mut st| async move {
        loop {
            st.rx.borrow_and_update();
            match (st.next)(st.last) {
                Next::Send(ev) => {
                    let ev: Arc<E> = ev;
                    st.last = Some(ev.seq());
                    let sse = SseEvent::default()
                        .id(ev.seq().to_string())
                        .json_data(&*ev)
                        .unwrap_or_else(|_| SseEvent::default().comment("unserializable event"));
                    metrics::counter!("pathd_sse_events_sent_total").increment(1);
                    return Some((Ok(sse), st));
                }
                Next::End => return None,
                Next::Wait => {}
            }
            tokio::select! {
                r = st.rx.changed() => if r.is_err() { return None },
                _ = st.shutdown.cancelled() => return None,
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
