//! Reading the stream back: the bootstrap at start (the whole stream folded per map, then
//! the feed started) and one map's messages (a map placed here).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use async_nats::connection::State;
use async_nats::jetstream::stream;
use tokio::sync::mpsc;

use super::codec::{Decoded, Fold, header, name_of_subject, subject};
use super::feed::feed;
use super::follow::Follower;
use super::lag::watch_heads;
use super::shared::NameState;
use super::{NatsStore, REQUEST_TIMEOUT, io_err};
use crate::store::{Recovered, StoreError};

impl NatsStore {
    /// Reads the stream up to its current end, folds it per map, and starts the feed.
    pub(super) async fn bootstrap(&self) -> Result<Vec<Recovered>, StoreError> {
        let conn = self.open().await?;
        let replicas = self.opts.replicas;
        let mut delay = Duration::from_millis(100);
        let last = loop {
            match conn.stream.get_info().await {
                Ok(info) if info.state.messages == 0 => break 0,
                Ok(info) => break info.state.last_sequence,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the JetStream stream yet; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
            }
        };
        let mut messages = Follower::new(conn.clone());
        messages.window = self.feed_window;
        messages.idle = Some(Arc::clone(&self.shared));
        let mut folded: BTreeMap<String, Fold> = BTreeMap::new();
        let mut states: HashMap<String, NameState> = HashMap::new();
        let mut seen = 0u64;
        while seen < last {
            // The stream's last message may be compacted away while this reads: then
            // nothing more comes, and the feed takes whatever does later.
            let Ok((msg, seq, _, _)) =
                tokio::time::timeout(Duration::from_secs(5), messages.next()).await
            else {
                tracing::warn!(
                    seen,
                    last,
                    "bootstrap: the stream went quiet before its last sequence"
                );
                break;
            };
            seen = seq;
            let d = match Self::decode(
                conn,
                replicas,
                msg.subject.as_str(),
                msg.headers.as_ref(),
                &msg.payload,
                seq,
            )
            .await
            {
                Ok(d) => d,
                Err(e) => {
                    if let Some(name) = name_of_subject(msg.subject.as_str()) {
                        let v = match folded.get(&name) {
                            Some(Fold::Live(v, _) | Fold::Deleted(v) | Fold::Broken(v, _)) => *v,
                            None => 0,
                        };
                        folded.insert(name, Fold::Broken(v, format!("message {seq}: {e}")));
                    }
                    continue;
                }
            };
            let Decoded { rep, meta } = d;
            let st = states.entry(rep.name.clone()).or_default();
            st.advance(rep.version, seq, &meta);
            let prev = folded.remove(&rep.name);
            let next = Fold::next(prev, rep.version, rep.change);
            folded.insert(rep.name, next);
        }
        *self.shared.names.lock().expect("names lock") = states;
        self.shared.progress.send_replace(last);
        let (tx, rx) = mpsc::channel(256);
        *self.feed.lock().expect("feed lock") = Some(rx);
        tracing::info!(
            maps = folded.len(),
            last_sequence = last,
            "bootstrapped from JetStream"
        );
        let found = folded
            .into_iter()
            .map(|(name, f)| f.recovered(name))
            .collect::<Vec<_>>();
        // The feed: every later message, in stream order.
        self.rt.spawn(feed(
            conn.clone(),
            replicas,
            messages,
            tx,
            Arc::clone(&self.shared),
            self.apply_delay,
        ));
        self.rt.spawn(watch_heads(
            Follower::heads(conn.clone()),
            Arc::clone(&self.shared),
        ));
        Ok(found)
    }

    /// Reads the messages of map `name` from its first to its last now, one get each (a
    /// map's subject holds its newest whole map and the patches after it), and folds them.
    pub(super) async fn load_one(&self, name: &str) -> Result<Option<Recovered>, StoreError> {
        let conn = self.conn()?;
        let last = self.last_seq(name).await?;
        if last == 0 {
            return Ok(None);
        }
        let subject = subject(name);
        let mut fold: Option<Fold> = None;
        let mut after = 0u64;
        while after < last {
            let get = conn
                .stream
                .raw_message_builder()
                .sequence(after + 1)
                .next_by_subject(subject.clone())
                .send();
            let m = match tokio::time::timeout(REQUEST_TIMEOUT, get).await {
                Err(_) => return Err(io_err("nats load", "get timed out")),
                Ok(Err(e)) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => break,
                Ok(Err(e)) => return Err(io_err("nats load", e)),
                Ok(Ok(m)) => m,
            };
            after = m.sequence;
            let version = match Self::decode(
                conn,
                self.opts.replicas,
                m.subject.as_str(),
                Some(&m.headers),
                &m.payload,
                m.sequence,
            )
            .await
            {
                Ok(d) => {
                    let v = d.rep.version;
                    fold = Some(Fold::next(fold, v, d.rep.change));
                    continue;
                }
                Err(e) => (
                    header(Some(&m.headers), "Pathd-Version").and_then(|v| v.parse().ok()),
                    e,
                ),
            };
            let (v, why) = version;
            fold = Some(Fold::Broken(
                v.unwrap_or(0),
                format!("message {}: {why}", m.sequence),
            ));
        }
        Ok(fold.map(|f| f.recovered(name.to_owned())))
    }

    pub(super) async fn last_seq(&self, name: &str) -> Result<u64, StoreError> {
        let conn = self.conn()?;
        if conn.client.connection_state() != State::Connected {
            return Err(io_err("nats", "not connected"));
        }
        let r = tokio::time::timeout(
            REQUEST_TIMEOUT,
            conn.stream.get_last_raw_message_by_subject(&subject(name)),
        )
        .await
        .map_err(|e| io_err("nats", e))?;
        match r {
            Ok(m) => Ok(m.sequence),
            Err(e) if e.kind() == stream::LastRawMessageErrorKind::NoMessageFound => Ok(0),
            Err(e) => Err(io_err("nats", e)),
        }
    }
}
