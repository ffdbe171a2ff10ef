//! What a connection is doing, for its watchdog: the phase (idle, head, busy), the socket
//! that notes a request's first byte, the service that marks requests busy and puts the
//! deadline on their bodies.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, header};
use axum::response::IntoResponse;
use hyper::body::{Frame, Incoming, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

use super::Limits;
use crate::http::error::ApiError;

/// Where a connection is in its request cycle (see module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// No request in flight and no byte of the next one, since this instant.
    Idle(Instant),
    /// Bytes of a request head arrived, the first at this instant.
    Head(Instant),
    /// This many requests are being handled (more than one only with HTTP/2).
    Busy(usize),
}

/// Resolves (with the phase's name) when the connection has overstayed its phase.
pub(super) async fn watchdog(mut phase: watch::Receiver<Phase>, limits: Limits) -> &'static str {
    loop {
        let now = *phase.borrow_and_update();
        let deadline = match now {
            Phase::Idle(since) => Some((since + limits.idle_timeout, "idle")),
            Phase::Head(since) => Some((since + limits.header_timeout, "header")),
            Phase::Busy(_) => None,
        };
        let changed = match deadline {
            Some((at, why)) => tokio::select! {
                biased;
                changed = phase.changed() => changed,
                _ = tokio::time::sleep_until(at) => return why,
            },
            None => phase.changed().await,
        };
        if changed.is_err() {
            // The connection is gone; its task will not poll this again.
            std::future::pending::<()>().await;
        }
    }
}

/// The socket, noting the first byte of each request head for the watchdog.
pub(super) struct WatchedIo {
    pub(super) inner: TcpStream,
    pub(super) phase: Arc<watch::Sender<Phase>>,
}

impl AsyncRead for WatchedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.phase.send_if_modified(|p| match *p {
                Phase::Idle(_) => {
                    *p = Phase::Head(Instant::now());
                    true
                }
                _ => false,
            });
        }
        polled
    }
}

impl AsyncWrite for WatchedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Marks the connection busy from a request's headers until its response is written (or
/// abandoned): then idle again, once no other request is in flight.
struct Busy(Arc<watch::Sender<Phase>>);

impl Busy {
    fn begin(phase: Arc<watch::Sender<Phase>>) -> Self {
        phase.send_modify(|p| {
            *p = match *p {
                Phase::Busy(n) => Phase::Busy(n + 1),
                _ => Phase::Busy(1),
            }
        });
        Busy(phase)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.send_modify(|p| {
            if let Phase::Busy(n) = *p {
                *p = if n > 1 {
                    Phase::Busy(n - 1)
                } else {
                    Phase::Idle(Instant::now())
                };
            }
        });
    }
}

/// The router as a hyper service of one connection: tracks the phase, puts the deadline
/// on request bodies, and turns a body that missed it into `408 body_timeout`.
#[derive(Clone)]
pub(super) struct ConnService {
    pub(super) router: Router,
    pub(super) phase: Arc<watch::Sender<Phase>>,
    pub(super) body_timeout: Duration,
    /// The client's address, handed to handlers as `ConnectInfo` (the write gate's
    /// loopback rule, see `crate::http::auth`).
    pub(super) peer: Option<std::net::SocketAddr>,
}

impl hyper::service::Service<Request<Incoming>> for ConnService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let busy = Busy::begin(Arc::clone(&self.phase));
        let timed_out = Arc::new(AtomicBool::new(false));
        let req = self.with_deadline(req, &timed_out);
        let (router, body_timeout) = (self.router.clone(), self.body_timeout);
        Box::pin(async move {
            let Ok(mut resp) = router.oneshot(req).await;
            if timed_out.load(Ordering::Relaxed) {
                resp = ApiError::body_timeout(body_timeout).into_response();
                resp.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok(resp.map(|inner| Body::new(BusyBody { inner, _busy: busy })))
        })
    }
}

impl ConnService {
    /// `req` with its body under the deadline (noting in `timed_out` when it is missed)
    /// and the client's address as `ConnectInfo`.
    fn with_deadline(&self, req: Request<Incoming>, timed_out: &Arc<AtomicBool>) -> Request<Body> {
        let deadline = Instant::now() + self.body_timeout;
        let mut req = req.map(|inner| {
            Body::new(DeadlineBody {
                inner,
                sleep: Box::pin(tokio::time::sleep_until(deadline)),
                timed_out: Arc::clone(timed_out),
            })
        });
        if let Some(peer) = self.peer {
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
        }
        req
    }
}

/// A request body that fails once its deadline has passed, and says so in `timed_out`.
struct DeadlineBody {
    inner: Incoming,
    sleep: Pin<Box<Sleep>>,
    timed_out: Arc<AtomicBool>,
}

/// The error a [`DeadlineBody`] yields past its deadline.
#[derive(Debug)]
struct BodyTimedOut;

impl std::fmt::Display for BodyTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive in time")
    }
}

impl std::error::Error for BodyTimedOut {}

impl hyper::body::Body for DeadlineBody {
    type Data = axum::body::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if self.sleep.as_mut().poll(cx).is_ready() {
            self.timed_out.store(true, Ordering::Relaxed);
            return Poll::Ready(Some(Err(Box::new(BodyTimedOut))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that keeps its connection busy until it is written or dropped.
struct BusyBody {
    inner: Body,
    _busy: Busy,
}

impl hyper::body::Body for BusyBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
