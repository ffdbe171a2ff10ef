//! Publishing one mutation to the JetStream stream: a compare-and-set that holds on a
//! cluster, and that rides out a node loss instead of failing the write.
//!
//! # The compare-and-set on a cluster
//!
//! `Nats-Expected-Last-Subject-Sequence` alone is not enough on a clustered stream
//! (nats-server 2.9): the stream leader checks it against what it has *applied*, so two
//! publishes on the same base that arrive while the first is still being replicated both
//! pass, and both get stored and acknowledged with the same map version
//! (`scripts/nats-node-loss.sh KILL=0`: 101 of 1,358 acknowledged writes given a version
//! twice, the replicas diverged). So each publish also carries `Nats-Msg-Id:
//! <subject>@<base sequence>:v<version>`, the same for every writer on that base: the
//! leader's duplicate check *does* see messages still in flight (it stages the id before it
//! proposes the message), so the second is answered `duplicate`. A duplicate is ours only
//! when the stored message carries our `Pathd-Writer` nonce (an earlier attempt of this same
//! write, answered too late); otherwise another writer won and the write is a
//! [`Publish::Conflict`], which the maps service resolves by catching up, as for a refused
//! expected sequence. Stream sequences never repeat, so neither does an id for another
//! base (a deleted and re-created map has a tombstone's sequence as its base).
//!
//! # A node loss
//!
//! When the node leading the stream dies, the others elect a new leader; until then every
//! publish is answered "no stream found for given subject" (no responders) or times out,
//! and a client connected to the dead node reconnects to another. A write retries its
//! publish (the same message: the id above makes a retry of a publish that was in fact
//! stored harmless) for up to [`RETRY_FOR`]; it gives up at once on an answer that is final
//! (a refused expected sequence), and after [`DOWN_FOR`] without any connection (NATS is
//! gone, not failing over: the write fails fast).

use std::time::{Duration, Instant};

use async_nats::connection::State;
use async_nats::jetstream::context::{PublishError, PublishErrorKind};
use async_nats::jetstream::{self, publish::PublishAck};
use async_nats::{Client, HeaderMap};
use tokio_util::bytes::Bytes;

/// How long one write keeps retrying its publish while the stream elects a leader: above
/// nats-server's election timeout (randomised between 4 and 9 s in 2.9, not configurable)
/// plus a heartbeat and a reconnect.
pub const RETRY_FOR: Duration = Duration::from_secs(15);
/// Without a connection to any node this long, a write fails at once.
pub const DOWN_FOR: Duration = Duration::from_millis(1500);
/// Pause between two attempts.
pub const PAUSE: Duration = Duration::from_millis(100);

/// The header naming the writer of one append (a nonce per call).
pub const WRITER: &str = "Pathd-Writer";

/// How a publish ended.
pub enum Publish {
    /// Stored (by this attempt or an earlier one of the same write).
    Stored(PublishAck),
    /// Another writer stored a mutation on the same base first.
    Conflict,
    /// Not stored, and retrying did not help within the bounds: the last error.
    Failed(String),
}

/// The bounds of the module docs for one operation that rides out a leader election: at
/// most [`RETRY_FOR`] in all, and not past [`DOWN_FOR`] without a connection.
pub struct Patience {
    started: Instant,
    down_since: Option<Instant>,
}

impl Patience {
    /// Starts counting now.
    pub fn start() -> Self {
        Patience {
            started: Instant::now(),
            down_since: None,
        }
    }

    /// Whether another attempt is worth it, given whether the client is connected now.
    pub fn keep_trying(&mut self, connected: bool) -> bool {
        if connected {
            self.down_since = None;
        } else if self.down_since.get_or_insert_with(Instant::now).elapsed() >= DOWN_FOR {
            return false;
        }
        self.started.elapsed() < RETRY_FOR
    }
}

/// The deduplication id of a publish on `subject` after stream sequence `base`, producing
/// `version` (see module docs).
pub fn msg_id(subject: &str, base: u64, version: u64) -> String {
    format!("{subject}@{base}:v{version}")
}

/// Publishes `payload` with `headers` (which must carry `Nats-Msg-Id` from [`msg_id`] and
/// [`WRITER`] = `writer`), retrying within the bounds of the module docs.
pub async fn publish(
    client: &Client,
    js: &jetstream::Context,
    stream: &jetstream::stream::Stream,
    subject: &str,
    headers: HeaderMap,
    payload: Bytes,
    writer: &str,
) -> Publish {
    let mut patience = Patience::start();
    let mut last = String::from("not connected");
    loop {
        let connected = client.connection_state() == State::Connected;
        if !patience.keep_trying(connected) {
            return Publish::Failed(last);
        }
        if !connected {
            tokio::time::sleep(PAUSE / 2).await;
            continue;
        }
        let acked = async {
            js.publish_with_headers(subject.to_owned(), headers.clone(), payload.clone())
                .await?
                .await
        }
        .await;
        match acked {
            Ok(ack) if !ack.duplicate => return Publish::Stored(ack),
            Ok(ack) => return ours_or_conflict(stream, ack, writer).await,
            Err(e) if final_error(&e) => return Publish::Conflict,
            Err(e) => {
                last = format!("nats publish: {e}");
                tracing::debug!(%subject, error = %e, "publish not acknowledged; retrying");
            }
        }
        metrics::counter!("pathd_store_publish_retries_total").increment(1);
        tokio::time::sleep(PAUSE).await;
    }
}

/// A refused expected sequence (or message id): another writer was first, retrying the same
/// message cannot succeed.
fn final_error(e: &PublishError) -> bool {
    matches!(
        e.kind(),
        PublishErrorKind::WrongLastSequence | PublishErrorKind::WrongLastMessageId
    )
}

/// A duplicate: ours when the stored message carries our writer nonce (an earlier attempt of
/// this write), else another writer's on the same base.
async fn ours_or_conflict(
    stream: &jetstream::stream::Stream,
    ack: PublishAck,
    writer: &str,
) -> Publish {
    if ack.sequence == 0 {
        // The first is still in flight, ours (an attempt given up on) or another writer's:
        // a conflict either way, which a catch-up resolves (it applies whichever is stored).
        return Publish::Conflict;
    }
    let got =
        tokio::time::timeout(Duration::from_secs(2), stream.get_raw_message(ack.sequence)).await;
    match got {
        Ok(Ok(m)) if m.headers.get(WRITER).map(|v| v.as_str()) == Some(writer) => {
            Publish::Stored(ack)
        }
        // Another writer's, or gone (compacted after a whole map: then not the newest, so a
        // catch-up shows what the map is now).
        _ => Publish::Conflict,
    }
}
