//! Event streams that survive dropped connections.

use std::marker::PhantomData;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use serde::de::DeserializeOwned;

use crate::{Client, Error, FlowFieldEvent, LivePlanEvent, SubscriptionEvent};

/// What a stream needs of its events.
pub trait Event: DeserializeOwned {
    /// The event's `seq` (the SSE id).
    fn seq(&self) -> u64;
    /// The event's reason.
    fn reason(&self) -> &str;
}

impl Event for SubscriptionEvent {
    fn seq(&self) -> u64 {
        self.seq
    }
    fn reason(&self) -> &str {
        &self.reason
    }
}

impl Event for FlowFieldEvent {
    fn seq(&self) -> u64 {
        self.seq
    }
    fn reason(&self) -> &str {
        &self.reason
    }
}

impl Event for LivePlanEvent {
    fn seq(&self) -> u64 {
        self.seq
    }
    fn reason(&self) -> &str {
        &self.reason
    }
}

/// Reasons after which a stream ends.
const FINAL: &[&str] = &["deleted", "map_deleted", "map_replaced", "expired"];

/// An event stream: [`EventStream::next`] reconnects with `Last-Event-ID` (the last `seq`
/// it returned) after a dropped connection, and returns `None` after a final event.
/// Dropping it closes the connection.
pub struct EventStream<E> {
    client: Client,
    path: String,
    body: Option<BoxStream<'static, reqwest::Result<bytes::Bytes>>>,
    buf: String,
    delay: Duration,
    done: bool,
    /// The `seq` of the last event returned.
    pub last_event_id: Option<u64>,
    /// Reconnections so far.
    pub reconnects: u32,
    _event: PhantomData<fn() -> E>,
}

impl<E: Event> EventStream<E> {
    pub(crate) fn new(client: Client, path: String, last_event_id: Option<u64>) -> Self {
        let delay = client.reconnect_delay;
        EventStream {
            client,
            path,
            body: None,
            buf: String::new(),
            delay,
            done: false,
            last_event_id,
            reconnects: 0,
            _event: PhantomData,
        }
    }

    /// The next event (`None` after a final one), reconnecting as needed.
    pub async fn next(&mut self) -> Option<Result<E, Error>> {
        let mut failures = 0;
        loop {
            if self.done {
                return None;
            }
            if let Some(data) = self.take_frame() {
                let ev: E = match serde_json::from_str(&data) {
                    Ok(ev) => ev,
                    Err(e) => {
                        return Some(Err(Error::Api {
                            status: 200,
                            code: "invalid_event".into(),
                            message: e.to_string(),
                            retry_after: None,
                        }));
                    }
                };
                self.last_event_id = Some(ev.seq());
                if FINAL.contains(&ev.reason()) {
                    self.done = true;
                    self.body = None;
                }
                return Some(Ok(ev));
            }
            let Some(body) = self.body.as_mut() else {
                match self
                    .client
                    .open_stream(&self.path, self.last_event_id)
                    .await
                {
                    Ok(resp) => {
                        self.buf.clear();
                        self.body = Some(resp.bytes_stream().boxed());
                    }
                    Err(
                        e @ Error::Api {
                            retry_after: None, ..
                        },
                    ) => return Some(Err(e)),
                    Err(e) => {
                        failures += 1;
                        if failures > self.client.max_reconnect_failures {
                            return Some(Err(e));
                        }
                        let wait = match &e {
                            Error::Api {
                                retry_after: Some(s),
                                ..
                            } => Duration::from_secs(*s),
                            _ => self.delay,
                        };
                        tokio::time::sleep(wait).await;
                        self.reconnects += 1;
                    }
                }
                continue;
            };
            match body.next().await {
                Some(Ok(chunk)) => self.buf.push_str(&String::from_utf8_lossy(&chunk)),
                Some(Err(_)) | None => {
                    // Dropped (or ended without a final event): reconnect.
                    self.body = None;
                    tokio::time::sleep(self.delay).await;
                    self.reconnects += 1;
                }
            }
        }
    }

    /// Takes one complete frame with data off the buffer (comments and keep-alives are
    /// skipped; `retry:` sets the reconnect delay).
    fn take_frame(&mut self) -> Option<String> {
        loop {
            let normalized = self.buf.replace("\r\n", "\n");
            if normalized.len() != self.buf.len() {
                self.buf = normalized;
            }
            let end = self.buf.find("\n\n")?;
            let frame: String = self.buf.drain(..end + 2).collect();
            let mut data: Option<String> = None;
            for line in frame.lines() {
                if line.starts_with(':') {
                    continue;
                }
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "data" => match &mut data {
                        Some(d) => {
                            d.push('\n');
                            d.push_str(value);
                        }
                        None => data = Some(value.to_owned()),
                    },
                    "retry" => {
                        if let Ok(ms) = value.parse() {
                            self.delay = Duration::from_millis(ms);
                        }
                    }
                    _ => {}
                }
            }
            if data.is_some() {
                return data;
            }
        }
    }
}
