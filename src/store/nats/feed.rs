//! The feed task: every message of the stream after the bootstrap, decoded, in order, to
//! the maps service.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::NatsStore;
use super::codec::{Decoded, header, name_of_subject};
use super::follow::Follower;
use super::shared::{Conn, Pending, Shared};
use crate::store::{Change, Replicated};

/// The feed task: turns stream messages into [`Replicated`] mutations, in order.
pub(super) async fn feed(
    conn: Conn,
    replicas: usize,
    mut messages: Follower,
    tx: mpsc::Sender<Replicated>,
    shared: Arc<Shared>,
    test_delay: Duration,
) {
    loop {
        let (msg, seq, pending, stored) = messages.next().await;
        *shared.pending.lock().expect("pending lock") = pending;
        let mut delay = Duration::from_millis(50);
        // Only a body in the object store can come back later; anything else is final.
        let from_object = header(msg.headers.as_ref(), "Pathd-Body") == Some("object");
        let decoded = loop {
            match NatsStore::decode(
                &conn,
                replicas,
                msg.subject.as_str(),
                msg.headers.as_ref(),
                &msg.payload,
                seq,
            )
            .await
            {
                Ok(d) => break Ok(d),
                // An object body may be unreachable for a moment (a reconnect).
                Err(e) if from_object && delay < Duration::from_secs(5) => {
                    tracing::warn!(seq, error = %e, "cannot decode a stream message yet");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
                Err(e) => {
                    tracing::error!(seq, error = %e, "an undecodable stream message");
                    break Err(e);
                }
            }
        };
        let Decoded { rep, meta } = match decoded {
            Ok(d) => d,
            // The maps service marks the map damaged (not served as its older version).
            Err(why) => {
                if let Some(name) = name_of_subject(msg.subject.as_str()) {
                    let version = header(msg.headers.as_ref(), "Pathd-Version")
                        .and_then(|v| v.parse::<u64>().ok())
                        .unwrap_or_else(|| {
                            let names = shared.names.lock().expect("names lock");
                            names.get(&name).map_or(0, |s| s.version) + 1
                        });
                    let rep = Replicated {
                        name,
                        version,
                        position: seq,
                        change: Change::Unreadable(format!(
                            "stream message {seq} is unreadable: {why}"
                        )),
                    };
                    if tx.send(rep).await.is_err() {
                        return;
                    }
                }
                continue;
            }
        };
        shared
            .unapplied
            .lock()
            .expect("unapplied lock")
            .insert(seq, Pending { meta, stored });
        if !test_delay.is_zero() {
            tokio::time::sleep(test_delay).await;
        }
        if tx.send(rep).await.is_err() {
            return;
        }
    }
}
