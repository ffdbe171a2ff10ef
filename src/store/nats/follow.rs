//! The ordered reader of the stream ([`Follower`]), shared by the feed and the head
//! watcher.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::connection::State;
use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt;

use super::shared::{Conn, Shared};
use super::{REQUEST_TIMEOUT, SUBJECT_PREFIX};

/// Heartbeat the follower's consumer asks for; three missed ones re-create it.
const HEARTBEAT: Duration = Duration::from_secs(1);
/// How often the follower looks at the connection while no message comes.
const POLL: Duration = Duration::from_millis(100);

/// An ordered reader of the stream: an ephemeral push consumer (subscribed before it is
/// created, so nothing is missed), re-created from the last stream sequence read whenever
/// a consumer sequence is skipped (messages lost in a reconnect) or heartbeats stop.
///
/// **The server may move the consumer past messages it never sent.** nats-server before
/// 2.10.11 moves every consumer of the stream to the first remaining message of a subject
/// purged below a sequence (our compaction), so a consumer behind the purge skips the other
/// maps' messages in between without a gap in its own sequence. So whenever the stream
/// sequence jumps, the messages the stream holds in between are fetched one by one
/// (`next_by_subj` gets) before the delivered one is handed on; a heartbeat naming a
/// later stream sequence than read does the same. A jump over messages really purged
/// costs one get.
pub(super) struct Follower {
    conn: Conn,
    sub: Option<async_nats::Subscriber>,
    consumer: Option<String>,
    /// Last stream and consumer sequence read.
    sseq: u64,
    cseq: u64,
    /// The connection dropped since the consumer was created.
    disconnected: bool,
    /// Headers only, starting from each subject's last message (the head watcher); else
    /// whole messages from the stream's start.
    heads: bool,
    /// At most this many messages out at once, each acknowledged when the next is asked
    /// for (0: no limit, no acknowledgements; tests only).
    pub(super) window: u64,
    /// The acknowledgement subject of the message handed out last (with a window).
    unacked: Option<async_nats::Subject>,
    /// Messages of the stream below this sequence are fetched, not awaited (after a jump).
    fill_to: u64,
    /// The message delivered after a jump, handed on once the ones before it are.
    held: Option<Read>,
    /// Where an idle heartbeat records that the server has nothing more to send (the feed:
    /// the pending count the server puts on each message is not reliable after a purge).
    pub(super) idle: Option<Arc<Shared>>,
}

impl Follower {
    pub(super) fn new(conn: Conn) -> Self {
        Follower {
            conn,
            sub: None,
            consumer: None,
            sseq: 0,
            cseq: 0,
            disconnected: false,
            heads: false,
            window: 0,
            unacked: None,
            fill_to: 0,
            held: None,
            idle: None,
        }
    }

    /// A reader of every subject's last message and then of every new one, headers only
    /// (JetStream delivers `LastPerSubject` in stream order, so the sequence checks hold).
    pub(super) fn heads(conn: Conn) -> Self {
        Follower {
            heads: true,
            ..Follower::new(conn)
        }
    }

    async fn open(&mut self) -> Result<(), String> {
        self.sub = None;
        if let Some(old) = self.consumer.take() {
            // Best effort, and not waited for: a consumer on a dead node cannot answer, and
            // the server drops an idle one by itself (`inactive_threshold`).
            let stream = self.conn.stream.clone();
            tokio::spawn(async move {
                let _ = tokio::time::timeout(REQUEST_TIMEOUT, stream.delete_consumer(&old)).await;
            });
        }
        let inbox = self.conn.client.new_inbox();
        let sub = self
            .conn
            .client
            .subscribe(inbox.clone())
            .await
            .map_err(|e| e.to_string())?;
        let deliver_policy = if self.sseq == 0 && self.heads {
            consumer::DeliverPolicy::LastPerSubject
        } else if self.sseq == 0 {
            consumer::DeliverPolicy::All
        } else {
            consumer::DeliverPolicy::ByStartSequence {
                start_sequence: self.sseq + 1,
            }
        };
        tracing::debug!(
            sseq = self.sseq,
            heads = self.heads,
            window = self.window,
            "opening the stream consumer"
        );
        let create = self.conn.stream.create_consumer(consumer::push::Config {
            deliver_subject: inbox,
            filter_subject: format!("{SUBJECT_PREFIX}>"),
            deliver_policy,
            ack_policy: if self.window > 0 {
                consumer::AckPolicy::Explicit
            } else {
                consumer::AckPolicy::None
            },
            max_ack_pending: i64::try_from(self.window).unwrap_or(i64::MAX),
            max_deliver: 1,
            idle_heartbeat: HEARTBEAT,
            inactive_threshold: Duration::from_secs(10),
            memory_storage: true,
            num_replicas: 1,
            headers_only: self.heads,
            ..Default::default()
        });
        let c = tokio::time::timeout(REQUEST_TIMEOUT, create)
            .await
            .map_err(|_| "creating the consumer timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        self.consumer = Some(c.cached_info().name.clone());
        self.sub = Some(sub);
        self.cseq = 0;
        Ok(())
    }

    /// The next message of the stream: (message, stream sequence, pending, stored at).
    /// Never fails: it re-creates its consumer until it can read again.
    pub(super) async fn next(&mut self) -> Read {
        if let Some(reply) = self.unacked.take() {
            // Best effort: an acknowledgement lost makes the server send the rest late.
            let _ = self.conn.client.publish(reply, Default::default()).await;
        }
        let mut delay = Duration::from_millis(100);
        let mut silent = Duration::ZERO;
        loop {
            if self.fill_to > self.sseq + 1 {
                match self.fetch_after(self.sseq).await {
                    Ok(Some(mut found)) if found.1 < self.fill_to => {
                        tracing::debug!(seq = found.1, "fetched a message the consumer skipped");
                        found.2 = self.held.as_ref().map_or(0, |h| h.2 + 1);
                        self.sseq = found.1;
                        return found;
                    }
                    Ok(_) => self.sseq = self.fill_to - 1,
                    Err(e) => {
                        tracing::warn!(error = %e, after = self.sseq, "cannot fetch from the stream; retrying");
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(Duration::from_secs(2));
                        continue;
                    }
                }
            }
            if let Some(held) = self.held.take() {
                self.sseq = held.1;
                if self.window > 0 {
                    self.unacked = held.0.reply.clone();
                }
                return held;
            }
            if self.sub.is_none() {
                if let Err(e) = self.open().await {
                    tracing::warn!(error = %e, "cannot (re)create the stream consumer; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                    continue;
                }
                delay = Duration::from_millis(100);
            }
            let sub = self.sub.as_mut().expect("opened");
            let got = tokio::time::timeout(POLL, sub.next()).await;
            let msg = match got {
                Ok(Some(m)) => {
                    silent = Duration::ZERO;
                    m
                }
                Ok(None) => {
                    self.sub = None;
                    continue;
                }
                Err(_) => {
                    // A reconnect loses the consumer's in-flight messages (and a restarted
                    // server the consumer itself): read again from the last sequence as
                    // soon as the connection is back, or after three missed heartbeats.
                    silent += POLL;
                    let connected = self.conn.client.connection_state() == State::Connected;
                    if !connected {
                        self.disconnected = true;
                    } else if self.disconnected || silent >= HEARTBEAT * 3 {
                        tracing::debug!("re-creating the stream consumer");
                        self.disconnected = false;
                        self.sub = None;
                        silent = Duration::ZERO;
                    }
                    continue;
                }
            };
            if msg.status.is_some() {
                // A heartbeat: it names the last consumer sequence sent; a higher one than
                // read means messages were lost on the way.
                let last = msg
                    .headers
                    .as_ref()
                    .and_then(|h| h.get("Nats-Last-Consumer"))
                    .and_then(|v| v.as_str().parse::<u64>().ok());
                if last.is_some_and(|l| l > self.cseq) {
                    tracing::debug!(?last, cseq = self.cseq, "heartbeat says messages lost");
                    self.sub = None;
                } else if let Some(shared) = &self.idle
                    && self.window == 0
                    && msg
                        .description
                        .as_deref()
                        .is_some_and(|d| d.eq_ignore_ascii_case("idle heartbeat"))
                {
                    // Idle: everything the consumer had is sent (and read).
                    *shared.pending.lock().expect("pending lock") = 0;
                }
                if self.sub.is_some()
                    && !self.heads
                    && let Some(stream) = msg
                        .headers
                        .as_ref()
                        .and_then(|h| h.get("Nats-Last-Stream"))
                        .and_then(|v| v.as_str().parse::<u64>().ok())
                    && stream > self.sseq
                {
                    // The consumer is past messages it never sent: see the type's docs.
                    self.fill_to = stream + 1;
                }
                if let Some(reply) = msg.reply.clone() {
                    let _ = self.conn.client.publish(reply, Default::default()).await;
                }
                continue;
            }
            let jm = jetstream::Message {
                message: msg,
                context: self.conn.js.clone(),
            };
            let Ok(info) = jm.info() else { continue };
            let (sseq, cseq, pending) =
                (info.stream_sequence, info.consumer_sequence, info.pending);
            let stored = UNIX_EPOCH
                + Duration::from_nanos(
                    u64::try_from(info.published.unix_timestamp_nanos()).unwrap_or(0),
                );
            if cseq != self.cseq + 1 {
                tracing::debug!(sseq, cseq, last_cseq = self.cseq, "consumer gap");
                self.sub = None; // a gap: read again from the last stream sequence
                continue;
            }
            self.cseq = cseq;
            if sseq <= self.sseq {
                continue;
            }
            // The heads watcher starts from each subject's last message: jumps are its rule.
            if !self.heads && sseq > self.sseq + 1 {
                self.fill_to = sseq;
            }
            self.held = Some((jm.message, sseq, pending, stored));
        }
    }

    /// The first message of ours the stream holds after sequence `after`, if any.
    async fn fetch_after(&self, after: u64) -> Result<Option<Read>, String> {
        let get = self
            .conn
            .stream
            .raw_message_builder()
            .sequence(after + 1)
            .next_by_subject(format!("{SUBJECT_PREFIX}>"))
            .send();
        match tokio::time::timeout(REQUEST_TIMEOUT, get).await {
            Err(_) => Err("get timed out".into()),
            Ok(Err(e)) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Ok(Err(e)) => Err(e.to_string()),
            Ok(Ok(m)) => {
                let stored = UNIX_EPOCH
                    + Duration::from_nanos(
                        u64::try_from(m.time.unix_timestamp_nanos()).unwrap_or(0),
                    );
                let message = async_nats::Message {
                    subject: m.subject,
                    reply: None,
                    length: m.payload.len(),
                    payload: m.payload,
                    headers: Some(m.headers),
                    status: None,
                    description: None,
                };
                Ok(Some((message, m.sequence, 0, stored)))
            }
        }
    }
}

/// A message read from the stream: (message, stream sequence, messages the server still
/// had to send, stored at).
pub(super) type Read = (async_nats::Message, u64, u64, SystemTime);
