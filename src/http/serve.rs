//! Serving connections: the accept loop, per-connection timeouts, the connection cap and
//! graceful shutdown.
//!
//! Why not `axum::serve`: it cannot bound how long a client takes, so idle sockets,
//! 1-byte-per-second headers and 1-byte-per-second bodies each hold a connection (and a
//! file descriptor) forever; a few hundred of them exhaust the open-file limit and the
//! server stops accepting (`/healthz` times out). Here each connection is served with
//! hyper's connection builder and a watchdog that knows which phase the connection
//! is in:
//!
//! * **idle** (no request in flight, no byte of the next one yet): closed after
//!   `idle_timeout_ms`. This covers a fresh connection that never sends anything and a
//!   kept-alive one between requests.
//! * **head** (the first byte of a request arrived, its headers are not complete): closed
//!   after `header_timeout_ms`, counted from that first byte, however slowly the rest
//!   trickles in.
//! * **busy** (a request is being handled or its response written): no connection-level
//!   timeout, since searches are bounded by their own limits and event streams are meant to
//!   last. The request *body* has a total deadline of `body_timeout_ms` from the end of the
//!   headers (not a per-chunk one, which a trickle defeats): past it the handler's read
//!   fails and the client gets `408 body_timeout` and the connection is closed.
//!
//! Hyper's own `header_read_timeout` is not used: its clock starts when the connection
//! starts waiting for a request, so it cannot tell an idle keep-alive connection from a
//! slow header.
//!
//! HTTP versions: HTTP/1.1 always; HTTP/2 without TLS (h2c, prior knowledge: the client
//! opens with the HTTP/2 preface, told apart from HTTP/1 by the connection's first bytes)
//! only in a build with the `http2` feature. Without it a connection that opens with the
//! preface is closed unanswered (hyper's HTTP/1 parser refuses it). HTTP/2 connections get
//! the same watchdog per connection: any bytes while no request is in flight (pings,
//! settings) count as a request head, and the connection is busy while any of its
//! streams is.
//!
//! The connection cap: at most `max_connections` connections are served. Past it, a new
//! connection is answered `503 too_many_connections` (with `Retry-After: 1` and
//! `Connection: close`) by a minimal HTTP/1 exchange bounded to a second, then closed, so
//! load balancers and clients get a clear answer instead of a hang in the accept backlog.
//! At most [`MAX_REJECTING`] such answers are in progress at once; beyond that a connection
//! is closed at once. Health probes (`GET /healthz`, `GET /readyz`) are the exception: in
//! that same bounded room they are answered by the router, so a cap filled by idle sockets
//! never fails a liveness probe. The cap is lowered to fit the open-file limit (see [`effective_cap`]).
//!
//! Metrics: `pathd_connections_open` (gauge), `pathd_connections_rejected_total`,
//! `pathd_connections_timed_out_total{phase="idle"|"header"}`, `pathd_accept_errors_total`.
//!
//! Accept errors (e.g. `EMFILE`, out of file descriptors) back off exponentially from
//! 5 ms to 500 ms instead of spinning, and log once per streak.
//!
//! Shutdown: when the token is cancelled the listener is dropped (new connections are
//! refused), every connection is told to finish its current request and close, and
//! [`serve`] returns once all have closed. The caller bounds that wait.

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
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::config::Config;
use crate::http::error::ApiError;

/// Most `503 too_many_connections` answers in progress at once (see module docs).
pub const MAX_REJECTING: usize = 64;

/// How long answering a connection past the cap may take before it is just closed.
const REJECT_WITHIN: Duration = Duration::from_secs(1);

const MIN_BACKOFF: Duration = Duration::from_millis(5);
const MAX_BACKOFF: Duration = Duration::from_millis(500);

/// Serves the HTTP of one connection: HTTP/1.1, and with the `http2` feature also HTTP/2
/// by prior knowledge (see module docs).
#[cfg(feature = "http2")]
type Http = hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor>;
/// Serves the HTTP of one connection: HTTP/1.1 only (see module docs).
#[cfg(not(feature = "http2"))]
type Http = hyper::server::conn::http1::Builder;

/// The connection builder, with hyper's defaults (the watchdog does the timeouts).
fn http() -> Http {
    #[cfg(feature = "http2")]
    {
        Http::new(hyper_util::rt::TokioExecutor::new())
    }
    #[cfg(not(feature = "http2"))]
    {
        Http::new()
    }
}

/// The connection limits of [`serve`], from the configuration.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// See [`crate::config::ConnectionLimits::header_timeout_ms`].
    pub header_timeout: Duration,
    /// See [`crate::config::ConnectionLimits::body_timeout_ms`].
    pub body_timeout: Duration,
    /// See [`crate::config::ConnectionLimits::idle_timeout_ms`].
    pub idle_timeout: Duration,
    /// See [`crate::config::ConnectionLimits::max_connections`].
    pub max_connections: u32,
}

impl Limits {
    /// The limits `config` sets.
    pub fn from_config(config: &Config) -> Self {
        let config = &config.connections;
        Limits {
            header_timeout: Duration::from_millis(config.header_timeout_ms),
            body_timeout: Duration::from_millis(config.body_timeout_ms),
            idle_timeout: Duration::from_millis(config.idle_timeout_ms),
            max_connections: config.max_connections,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` is cancelled and every connection has
/// closed (see the module docs). Errors of single connections are logged, not returned.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let cap = effective_cap(limits.max_connections);
    let slots = Arc::new(Semaphore::new(cap as usize));
    let rejecting = Arc::new(Semaphore::new(MAX_REJECTING));
    let builder = Arc::new(http());
    let mut backoff = Duration::ZERO;
    loop {
        let stream = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            stream = accept(&listener, &mut backoff) => stream,
        };
        match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => {
                let _ = stream.set_nodelay(true);
                tokio::spawn(connection(
                    stream,
                    slot,
                    Arc::clone(&builder),
                    router.clone(),
                    limits,
                    shutdown.clone(),
                ));
            }
            Err(_) => reject(stream, &rejecting, &router),
        }
    }
    drop(listener);
    // Every connection holds a slot until it has closed.
    let _all = slots.acquire_many(cap).await.map_err(io::Error::other)?;
    Ok(())
}

/// File descriptors kept out of the connection cap's reach: the listener, map and data
/// files being read or written, logs, and the `503` answers in progress.
pub const FD_RESERVE: u64 = 64 + MAX_REJECTING as u64;

/// The connection cap applied: `configured`, lowered (with a warning) when connections
/// plus [`FD_RESERVE`] would not fit the process's open-file limit, because past that
/// limit `accept` itself fails and nobody gets an answer, not even `/healthz`.
pub fn effective_cap(configured: u32) -> u32 {
    if let Some(limit) = open_file_limit() {
        let room = limit.saturating_sub(FD_RESERVE).max(1);
        if u64::from(configured) > room {
            let cap = u32::try_from(room).unwrap_or(u32::MAX);
            tracing::warn!(
                configured,
                cap,
                open_file_limit = limit,
                "max connections lowered to fit the open-file limit"
            );
            return cap;
        }
    }
    configured
}

/// The process's soft limit on open files (`ulimit -n`), where it can be read; `None` when
/// unlimited or unknown. On Linux it is read from `/proc/self/limits`, which needs neither
/// `unsafe` nor a system-call crate (one less dependency to compile); other Unixes ask
/// `getrlimit` through rustix.
pub fn open_file_limit() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        parse_open_file_limit(&std::fs::read_to_string("/proc/self/limits").ok()?)
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        rustix::process::getrlimit(rustix::process::Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The soft limit of the `Max open files` row of a `/proc/PID/limits` table.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_open_file_limit(limits: &str) -> Option<u64> {
    let row = limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))?;
    row.split_whitespace().next()?.parse().ok()
}

/// The next connection; accept errors back off (see module docs).
async fn accept(listener: &TcpListener, backoff: &mut Duration) -> TcpStream {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                *backoff = Duration::ZERO;
                return stream;
            }
            // The peer gave up before we accepted: nothing to wait for.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionAborted
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::ConnectionRefused
                ) => {}
            Err(e) => {
                if backoff.is_zero() {
                    tracing::warn!(error = %e, "accept failed; backing off until it succeeds");
                }
                *backoff = (*backoff * 2).clamp(MIN_BACKOFF, MAX_BACKOFF);
                metrics::counter!("pathd_accept_errors_total").increment(1);
                tokio::time::sleep(*backoff).await;
            }
        }
    }
}

/// True for the health probes, which are answered even past the connection cap.
fn is_probe(req: &Request<Incoming>) -> bool {
    req.method() == axum::http::Method::GET && matches!(req.uri().path(), "/healthz" | "/readyz")
}

/// Answers a connection past the cap with `503 too_many_connections` and closes it; a
/// health probe (`GET /healthz`, `/readyz`) is answered by the router instead, so that idle
/// sockets filling the cap never make a liveness probe kill a healthy server.
fn reject(stream: TcpStream, rejecting: &Arc<Semaphore>, router: &Router) {
    metrics::counter!("pathd_connections_rejected_total").increment(1);
    let Ok(permit) = Arc::clone(rejecting).try_acquire_owned() else {
        return; // too many already: close at once
    };
    let router = router.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let mut http1 = hyper::server::conn::http1::Builder::new();
        http1.keep_alive(false);
        let answer = hyper::service::service_fn(move |req: Request<Incoming>| {
            let router = router.clone();
            async move {
                if is_probe(&req) {
                    let resp = router.oneshot(req.map(Body::new)).await;
                    return Ok::<_, Infallible>(resp.unwrap_or_else(|e| match e {}));
                }
                Ok(ApiError::too_many_connections().into_response())
            }
        });
        let conn = http1.serve_connection(TokioIo::new(stream), answer);
        let _ = tokio::time::timeout(REJECT_WITHIN, conn).await;
    });
}

/// Serves one connection until it closes, times out, or shutdown has drained it.
async fn connection(
    stream: TcpStream,
    slot: OwnedSemaphorePermit,
    builder: Arc<Http>,
    router: Router,
    limits: Limits,
    shutdown: CancellationToken,
) {
    let (phase, watch_rx) = watch::channel(Phase::Idle(Instant::now()));
    let phase = Arc::new(phase);
    let peer = stream.peer_addr().ok();
    let io = TokioIo::new(WatchedIo {
        inner: stream,
        phase: Arc::clone(&phase),
    });
    let service = ConnService {
        router,
        phase,
        body_timeout: limits.body_timeout,
        peer,
    };
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let watchdog = watchdog(watch_rx, limits);
    tokio::pin!(watchdog);
    let mut draining = false;
    let open = metrics::gauge!("pathd_connections_open");
    open.increment(1.0);
    loop {
        tokio::select! {
            done = conn.as_mut() => {
                if let Err(e) = done {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                break;
            }
            _ = shutdown.cancelled(), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
            why = &mut watchdog => {
                tracing::debug!(why, "closing connection");
                metrics::counter!("pathd_connections_timed_out_total", "phase" => why)
                    .increment(1);
                break; // dropping the connection closes the socket
            }
        }
    }
    open.decrement(1.0);
    drop(slot);
}

/// Where a connection is in its request cycle (see module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No request in flight and no byte of the next one, since this instant.
    Idle(Instant),
    /// Bytes of a request head arrived, the first at this instant.
    Head(Instant),
    /// This many requests are being handled (more than one only with HTTP/2).
    Busy(usize),
}

/// Resolves (with the phase's name) when the connection has overstayed its phase.
async fn watchdog(mut phase: watch::Receiver<Phase>, limits: Limits) -> &'static str {
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
struct WatchedIo {
    inner: TcpStream,
    phase: Arc<watch::Sender<Phase>>,
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
struct ConnService {
    router: Router,
    phase: Arc<watch::Sender<Phase>>,
    body_timeout: Duration,
    /// The client's address, handed to handlers as `ConnectInfo` (the write gate's
    /// loopback rule, see `crate::http::auth`).
    peer: Option<std::net::SocketAddr>,
}

impl hyper::service::Service<Request<Incoming>> for ConnService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let busy = Busy::begin(Arc::clone(&self.phase));
        let timed_out = Arc::new(AtomicBool::new(false));
        let deadline = Instant::now() + self.body_timeout;
        let body_timeout = self.body_timeout;
        let mut req = req.map(|inner| {
            Body::new(DeadlineBody {
                inner,
                sleep: Box::pin(tokio::time::sleep_until(deadline)),
                timed_out: Arc::clone(&timed_out),
            })
        });
        if let Some(peer) = self.peer {
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
        }
        let router = self.router.clone();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_fits_the_open_file_limit() {
        assert_eq!(effective_cap(3), 3);
        let cap = effective_cap(u32::MAX);
        assert!(cap >= 1);
        if let Some(limit) = open_file_limit() {
            assert!(u64::from(cap) + FD_RESERVE <= limit.max(FD_RESERVE + 1));
        }
        #[cfg(target_os = "linux")]
        assert!(open_file_limit().is_some(), "/proc/self/limits unreadable");
    }

    #[test]
    fn reads_the_soft_open_file_limit_from_proc() {
        let table = "\
Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 1048576              files
Max locked memory         8388608              8388608              bytes
";
        assert_eq!(parse_open_file_limit(table), Some(1024));
        let unlimited = table.replace("1024                 1048576", "unlimited unlimited");
        assert_eq!(parse_open_file_limit(&unlimited), None);
        assert_eq!(parse_open_file_limit("Limit Soft Hard\n"), None);
    }
}
