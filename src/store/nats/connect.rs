//! Connecting: the client's options (credentials, TLS), the first attempt that tells a
//! configuration error from a server not up yet, the stream and the object store.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use async_nats::jetstream::{self, stream};
use async_nats::{Client, ConnectOptions};

use super::shared::Conn;
use super::{BUCKET, NatsStore, REQUEST_TIMEOUT, STREAM, SUBJECT_PREFIX, io_err};
use crate::store::StoreError;
use crate::store::nats_options::NatsOptions;

impl NatsStore {
    /// The client options: name, reconnect policy, credentials, TLS.
    pub(super) async fn options(&self) -> Result<ConnectOptions, String> {
        connect_options(&self.opts).await
    }

    /// Connects. A first attempt that reaches a server but is refused (TLS: certificate,
    /// CA; authentication) is a configuration error, reported as such and not retried; a
    /// server that cannot be reached yet is retried in the background for ever (NATS may
    /// start after pathd).
    pub(super) async fn connect_client(&self) -> Result<Client, String> {
        if let Some(c) = self.client.get() {
            return Ok(c.clone());
        }
        let servers = self.opts.servers.as_slice();
        let client = match self.options().await?.connect(servers).await {
            Ok(c) => c,
            Err(e) => {
                if let Some(why) = refused(&e) {
                    return Err(format!(
                        "NATS at {} refused the connection: {why}",
                        servers.join(",")
                    ));
                }
                tracing::warn!(error = %e, servers = %servers.join(","), "NATS not reachable yet; retrying");
                self.options()
                    .await?
                    .retry_on_initial_connect()
                    .connect(servers)
                    .await
                    .map_err(|e| e.to_string())?
            }
        };
        Ok(self.client.get_or_init(|| client).clone())
    }

    /// Connects and opens (creating if needed) the stream, retrying until it works.
    pub(super) async fn open(&self) -> Result<&Conn, StoreError> {
        if let Some(c) = self.conn.get() {
            return Ok(c);
        }
        let client = self
            .connect_client()
            .await
            .map_err(|e| io_err("nats connect", e))?;
        let mut js = jetstream::new(client.clone());
        js.set_timeout(REQUEST_TIMEOUT);
        let mut delay = Duration::from_millis(100);
        let stream = loop {
            let config = stream::Config {
                name: STREAM.to_owned(),
                subjects: vec![format!("{SUBJECT_PREFIX}>")],
                storage: stream::StorageType::File,
                num_replicas: self.opts.replicas.max(1),
                ..Default::default()
            };
            match js.get_or_create_stream(config).await {
                Ok(s) => break s,
                Err(e) => {
                    if self.closed.is_cancelled() {
                        return Err(io_err("nats open", "the store is closed"));
                    }
                    tracing::warn!(error = %e, "JetStream stream not available yet; retrying");
                    tokio::select! {
                        biased;
                        _ = self.closed.cancelled() => {
                            return Err(io_err("nats open", "the store is closed"));
                        }
                        _ = tokio::time::sleep(delay) => {}
                    }
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
            }
        };
        let _ = self.conn.set(Conn { client, js, stream });
        Ok(self.conn.get().expect("just set"))
    }

    pub(super) async fn bucket(
        conn: &Conn,
        replicas: usize,
    ) -> Result<jetstream::object_store::ObjectStore, String> {
        if let Ok(b) = conn.js.get_object_store(BUCKET).await {
            return Ok(b);
        }
        conn.js
            .create_object_store(jetstream::object_store::Config {
                bucket: BUCKET.to_owned(),
                num_replicas: replicas.max(1),
                ..Default::default()
            })
            .await
            .map_err(|e| e.to_string())
    }
}

/// Why a failed connection attempt is a configuration error (the server answered, and said
/// no), with what to check; `None` for a server that could not be reached (worth retrying).
fn refused(e: &async_nats::ConnectError) -> Option<String> {
    use async_nats::ConnectErrorKind as K;
    use std::error::Error;
    const TLS_HINT: &str = "check --nats-tls-ca (the CA that signed the server's \
        certificate), --nats-tls-cert/--nats-tls-key and --nats-require-tls";
    const AUTH_HINT: &str = "check the credentials (user:password@ or token@ in --store, \
        --nats-user/--nats-password, --nats-token, --nats-creds)";
    // A failed TLS handshake comes back as an I/O error of kind `InvalidData`.
    let bad_handshake = e
        .source()
        .and_then(|s| s.downcast_ref::<io::Error>())
        .is_some_and(|io| io.kind() == io::ErrorKind::InvalidData);
    match e.kind() {
        K::Tls => Some(format!("TLS: {e}; {TLS_HINT}")),
        K::Io if bad_handshake => Some(format!("TLS handshake failed: {e}; {TLS_HINT}")),
        K::Authentication | K::AuthorizationViolation => Some(format!("{e}; {AUTH_HINT}")),
        _ => None,
    }
}

/// The client options of `opts`: name, reconnect policy, credentials, TLS (the store's
/// connection and the cluster's, `crate::cluster`, use the same).
pub(crate) async fn connect_options(opts: &NatsOptions) -> Result<ConnectOptions, String> {
    let mut o = ConnectOptions::new()
        .name("pathd")
        .max_reconnects(None)
        .connection_timeout(REQUEST_TIMEOUT)
        .reconnect_delay_callback(|n| Duration::from_millis((100 * n as u64).min(1000)))
        .event_callback(|e| async move {
            tracing::info!(event = %e, "nats connection event");
        });
    let readable = |flag: &str, p: &PathBuf| {
        std::fs::File::open(p)
            .map(drop)
            .map_err(|e| format!("{flag} {}: {e}", p.display()))
    };
    if let Some(c) = &opts.creds {
        readable("--nats-creds", c)?;
        o = o
            .credentials_file(c)
            .await
            .map_err(|e| format!("--nats-creds {}: {e}", c.display()))?;
    }
    if let (Some(u), Some(p)) = (&opts.user, &opts.password) {
        o = o.user_and_password(u.clone(), p.clone());
    }
    if let Some(t) = &opts.token {
        o = o.token(t.clone());
    }
    let tls = &opts.tls;
    if let Some(ca) = &tls.ca {
        readable("--nats-tls-ca", ca)?;
        o = o.add_root_certificates(ca.clone());
    }
    if let Some((cert, key)) = &tls.client_cert {
        readable("--nats-tls-cert", cert)?;
        readable("--nats-tls-key", key)?;
        o = o.add_client_certificate(cert.clone(), key.clone());
    }
    Ok(o.require_tls(tls.required))
}
