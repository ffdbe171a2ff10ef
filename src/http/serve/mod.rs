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

mod fds;
mod reject;
mod watch;

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
pub use fds::{FD_RESERVE, effective_cap, open_file_limit};
use reject::reject;
use watch::{ConnService, Phase, WatchedIo, watchdog};

/// Most `503 too_many_connections` answers in progress at once (see module docs).
pub const MAX_REJECTING: usize = 64;

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
    let conns = Conns::new(router, limits, shutdown.clone());
    let mut backoff = Duration::ZERO;
    loop {
        let stream = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            stream = accept(&listener, &mut backoff) => stream,
        };
        conns.take(stream);
    }
    drop(listener);
    conns.closed().await
}

/// The connections of [`serve`]: their slots under the cap, and what each is served with.
struct Conns {
    /// The cap applied ([`effective_cap`]).
    cap: u32,
    /// One permit per connection served, held until it has closed.
    slots: Arc<Semaphore>,
    /// One permit per `503` answer in progress past the cap ([`MAX_REJECTING`]).
    rejecting: Arc<Semaphore>,
    builder: Arc<Http>,
    router: Router,
    limits: Limits,
    shutdown: CancellationToken,
}

impl Conns {
    fn new(router: Router, limits: Limits, shutdown: CancellationToken) -> Self {
        let cap = effective_cap(limits.max_connections);
        Conns {
            cap,
            slots: Arc::new(Semaphore::new(cap as usize)),
            rejecting: Arc::new(Semaphore::new(MAX_REJECTING)),
            builder: Arc::new(http()),
            router,
            limits,
            shutdown,
        }
    }

    /// Serves `stream` on a task of its own, or rejects it past the cap.
    fn take(&self, stream: TcpStream) {
        let Ok(slot) = Arc::clone(&self.slots).try_acquire_owned() else {
            return reject(stream, &self.rejecting, &self.router);
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(
            stream,
            slot,
            Arc::clone(&self.builder),
            self.router.clone(),
            self.limits,
            self.shutdown.clone(),
        ));
    }

    /// Waits until every connection has closed (each holds a slot until then).
    async fn closed(self) -> io::Result<()> {
        let _all = self
            .slots
            .acquire_many(self.cap)
            .await
            .map_err(io::Error::other)?;
        Ok(())
    }
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

/// Serves one connection until it closes, times out, or shutdown has drained it.
async fn connection(
    stream: TcpStream,
    slot: OwnedSemaphorePermit,
    builder: Arc<Http>,
    router: Router,
    limits: Limits,
    shutdown: CancellationToken,
) {
    let _open = Open::count(slot);
    let (io, service, phase) = watched(stream, router, limits.body_timeout);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let watchdog = watchdog(phase, limits);
    tokio::pin!(watchdog);
    let mut draining = false;
    loop {
        tokio::select! {
            done = conn.as_mut() => {
                if let Err(e) = done {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            _ = shutdown.cancelled(), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
            why = &mut watchdog => {
                tracing::debug!(why, "closing connection");
                metrics::counter!("pathd_connections_timed_out_total", "phase" => why)
                    .increment(1);
                return; // dropping the connection closes the socket
            }
        }
    }
}

/// The socket and the service of one connection, and the phase they report to its watchdog.
fn watched(
    stream: TcpStream,
    router: Router,
    body_timeout: Duration,
) -> (
    TokioIo<WatchedIo>,
    ConnService,
    tokio::sync::watch::Receiver<Phase>,
) {
    let (phase, watch_rx) = tokio::sync::watch::channel(Phase::Idle(Instant::now()));
    let phase = Arc::new(phase);
    let peer = stream.peer_addr().ok();
    let io = TokioIo::new(WatchedIo {
        inner: stream,
        phase: Arc::clone(&phase),
    });
    let service = ConnService {
        router,
        phase,
        body_timeout,
        peer,
    };
    (io, service, watch_rx)
}

/// A connection open: counted in `pathd_connections_open`, holding its slot, until dropped.
struct Open {
    _slot: OwnedSemaphorePermit,
}

impl Open {
    fn count(slot: OwnedSemaphorePermit) -> Self {
        metrics::gauge!("pathd_connections_open").increment(1.0);
        Open { _slot: slot }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        metrics::gauge!("pathd_connections_open").decrement(1.0);
    }
}
