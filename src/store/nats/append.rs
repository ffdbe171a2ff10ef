//! Appending a mutation: the compare-and-set publish, a whole map inline or in the object
//! store, and the compaction of what it makes unneeded.

use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::connection::State;
use pathd_engine::{Grid, Point};

use super::codec::{encode_cells, subject};
use super::shared::{Conn, Meta, NameState, Op};
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
        let conn = self.connected().await?;
        let st = self.state(name);
        let (op, cells, full) = parts(&st, mutation);
        let cells_b = if op == "patch" {
            encode_cells(cells)
        } else {
            Vec::new()
        };
        let subject = subject(name);
        // Deduplication holds the compare-and-set on a cluster (module nats_publish).
        let writer = format!("{:016x}", rand::random::<u64>());
        let mut headers = headers(&st, &subject, version, op, &writer, cells_b.len());
        let mut payload = cells_b.clone();
        let object = match full {
            Some(g) => {
                self.attach(conn, name, version, g, &mut headers, &mut payload)
                    .await?
            }
            None => None,
        };
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
            self.compact(conn, subject, ack.sequence, st.object.clone());
        }
        Ok(())
    }

    /// The connection, once connected: reconnecting to another node takes a moment; gone
    /// for longer ([`nats_publish::DOWN_FOR`]), the write fails fast.
    async fn connected(&self) -> Result<&Conn, StoreError> {
        let conn = self.conn()?;
        if conn.client.connection_state() != State::Connected {
            let since = Instant::now();
            while conn.client.connection_state() != State::Connected {
                if since.elapsed() >= nats_publish::DOWN_FOR {
                    return Err(io_err("nats", "not connected"));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(conn)
    }

    /// Adds the whole map `g` to the message: inline after the cells when it fits the
    /// server's payload limit, else as an object of the object store, whose key it returns.
    async fn attach(
        &self,
        conn: &Conn,
        name: &str,
        version: u64,
        g: &Grid,
        headers: &mut HeaderMap,
        payload: &mut Vec<u8>,
    ) -> Result<Option<String>, StoreError> {
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
            return Ok(None);
        }
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
        Ok(Some(key))
    }

    /// Purges, in the background, the messages of `subject` below `seq` (a whole map or a
    /// tombstone stored at `seq` makes them unneeded), and the object `old` of the previous
    /// whole map.
    fn compact(&self, conn: &Conn, subject: String, seq: u64, old: Option<String>) {
        let replicas = self.opts.replicas;
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

/// What a mutation writes: its `Pathd-Op`, its cells, and the whole map when the message
/// carries one (a put; a patch when the log has no whole map yet, or its patches since the
/// last one outweigh the map, or there are [`MAX_TAIL`] of them).
fn parts<'m>(
    st: &NameState,
    mutation: Mutation<'m>,
) -> (&'static str, &'m [(Point, u8)], Option<&'m Grid>) {
    match mutation {
        Mutation::Put(g) => ("put", &[], Some(g)),
        Mutation::Patch { cells, after } => {
            let map_bytes = after.width() as u64 * after.height() as u64;
            let snap = !st.full
                || st.tail_bytes + cells.len() as u64 * 9 > map_bytes
                || st.tail_count >= MAX_TAIL;
            ("patch", cells, snap.then_some(after))
        }
        Mutation::Delete => ("delete", &[], None),
    }
}

/// The headers of a mutation's message: the compare-and-set on the subject's last sequence
/// applied here, the deduplication id and writer, and pathd's own.
fn headers(
    st: &NameState,
    subject: &str,
    version: u64,
    op: &str,
    writer: &str,
    cells_len: usize,
) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        "Nats-Expected-Last-Subject-Sequence",
        st.seq.to_string().as_str(),
    );
    headers.insert(
        "Nats-Msg-Id",
        nats_publish::msg_id(subject, st.seq, version).as_str(),
    );
    headers.insert(nats_publish::WRITER, writer);
    headers.insert("Pathd-Op", op);
    headers.insert("Pathd-Version", version.to_string().as_str());
    headers.insert("Pathd-Cells", cells_len.to_string().as_str());
    headers
}
