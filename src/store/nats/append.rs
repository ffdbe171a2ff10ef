//! Appending a mutation: the compare-and-set publish, a whole map inline or in the object
//! store, and the compaction of what it makes unneeded.

use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::connection::State;
use pathd_engine::{Grid, Point};

use super::codec::{encode_cells, subject};
use super::shared::{Meta, Op};
use super::{MAX_TAIL, NatsStore, REQUEST_TIMEOUT, io_err};
use crate::store::nats_publish::{self, Publish};
use crate::store::{Mutation, StoreError, snapshot};

impl NatsStore {
    pub(super) async fn publish(
        &self,
        name: &str,
        version: u64,
        mutation: Mutation<'_>,
    ) -> Result<(), StoreError> {
        let conn = self.conn()?;
        if conn.client.connection_state() != State::Connected {
            // Reconnecting to another node takes a moment; gone for longer, fail fast.
            let since = Instant::now();
            while conn.client.connection_state() != State::Connected {
                if since.elapsed() >= nats_publish::DOWN_FOR {
                    return Err(io_err("nats", "not connected"));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let st = self.state(name);
        let (op, cells, full): (&str, &[(Point, u8)], Option<&Grid>) = match mutation {
            Mutation::Put(g) => ("put", &[], Some(g)),
            Mutation::Patch { cells, after } => {
                let map_bytes = after.width() as u64 * after.height() as u64;
                let snap = !st.full
                    || st.tail_bytes + cells.len() as u64 * 9 > map_bytes
                    || st.tail_count >= MAX_TAIL;
                ("patch", cells, snap.then_some(after))
            }
            Mutation::Delete => ("delete", &[], None),
        };
        let cells_b = if op == "patch" {
            encode_cells(cells)
        } else {
            Vec::new()
        };
        let mut headers = HeaderMap::new();
        headers.insert(
            "Nats-Expected-Last-Subject-Sequence",
            st.seq.to_string().as_str(),
        );
        let subject = subject(name);
        // Deduplication holds the compare-and-set on a cluster (module nats_publish).
        let writer = format!("{:016x}", rand::random::<u64>());
        headers.insert(
            "Nats-Msg-Id",
            nats_publish::msg_id(&subject, st.seq, version).as_str(),
        );
        headers.insert(nats_publish::WRITER, writer.as_str());
        headers.insert("Pathd-Op", op);
        headers.insert("Pathd-Version", version.to_string().as_str());
        headers.insert("Pathd-Cells", cells_b.len().to_string().as_str());
        let mut payload = cells_b.clone();
        let mut object = None;
        if let Some(g) = full {
            let body = snapshot::encode(name, version, g);
            let limit = conn
                .client
                .server_info()
                .max_payload
                .saturating_sub(64 << 10)
                .max(64 << 10);
            if payload.len() + body.len() <= limit {
                headers.insert("Pathd-Body", "inline");
                payload.extend_from_slice(&body);
            } else {
                let key = format!("{}-v{version}-{:016x}", name, rand::random::<u64>());
                let bucket = Self::bucket(conn, self.opts.replicas)
                    .await
                    .map_err(|e| io_err("object store", e))?;
                tokio::time::timeout(
                    REQUEST_TIMEOUT * 5,
                    bucket.put(key.as_str(), &mut body.as_slice()),
                )
                .await
                .map_err(|e| io_err("object store put", e))?
                .map_err(|e| io_err("object store put", e))?;
                headers.insert("Pathd-Body", "object");
                headers.insert("Pathd-Object", key.as_str());
                object = Some(key);
            }
        }
        let meta = Meta {
            op: match op {
                "put" => Op::Put,
                "patch" => Op::Patch,
                _ => Op::Delete,
            },
            body: full.map(|_| object.clone()),
            cells_bytes: cells_b.len() as u64,
        };
        let started = Instant::now();
        let acked = nats_publish::publish(
            &conn.client,
            &conn.js,
            &conn.stream,
            &subject,
            headers,
            payload.into(),
            &writer,
        )
        .await;
        metrics::histogram!("pathd_store_append_seconds").record(started.elapsed().as_secs_f64());
        let ack = match acked {
            Publish::Stored(a) => a,
            Publish::Conflict => {
                if let Some(key) = object {
                    self.drop_object(key);
                }
                tracing::debug!(map = %name, expected = st.seq, "lost the compare-and-set");
                metrics::counter!("pathd_store_conflicts_total").increment(1);
                return Err(StoreError::Conflict {
                    name: name.to_owned(),
                    last: st.version,
                    offered: version,
                });
            }
            Publish::Failed(e) => {
                if let Some(key) = object {
                    self.drop_object(key);
                }
                return Err(io_err("nats publish", e));
            }
        };
        {
            let mut names = self.shared.names.lock().expect("names lock");
            let s = names.entry(name.to_owned()).or_default();
            s.advance(version, ack.sequence, &meta);
        }
        // A whole map or a tombstone: what came before it on this subject is not needed.
        // (Only when there is something before it: a purge below sequence 1 would be read
        // as a purge of the whole subject.)
        if (meta.body.is_some() || meta.op == Op::Delete) && st.seq > 0 {
            let old = st.object.clone();
            let replicas = self.opts.replicas;
            let seq = ack.sequence;
            let c = conn.clone();
            self.rt.spawn(async move {
                if let Err(e) = c.stream.purge().filter(subject.clone()).sequence(seq).await {
                    tracing::warn!(%subject, error = %e, "compaction purge failed");
                }
                if let Some(key) = old
                    && let Ok(b) = Self::bucket(&c, replicas).await
                {
                    let _ = b.delete(&key).await;
                }
            });
        }
        Ok(())
    }

    pub(super) fn drop_object(&self, key: String) {
        let Ok(conn) = self.conn() else { return };
        let c = conn.clone();
        let replicas = self.opts.replicas;
        self.rt.spawn(async move {
            if let Ok(b) = Self::bucket(&c, replicas).await {
                let _ = b.delete(&key).await;
            }
        });
    }
}
