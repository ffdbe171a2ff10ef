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
    frames: Frames,
    delay: Duration,
    done: bool,
    /// The `seq` of the last event returned.
    pub last_event_id: Option<u64>,
    /// The `id:` field of the last event's frame, as the server sent it (`None` when the
    /// frame had none): the server sends the `seq`.
    pub last_frame_id: Option<String>,
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
            frames: Frames::default(),
            delay,
            done: false,
            last_event_id,
            last_frame_id: None,
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
            if let Some(frame) = self.frames.next_frame() {
                if let Some(retry) = frame.retry {
                    self.delay = retry;
                }
                let Some(data) = frame.data else { continue };
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
                self.last_frame_id = frame.id;
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
                        self.frames = Frames::default();
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
                Some(Ok(chunk)) => self.frames.push(&chunk),
                Some(Err(_)) | None => {
                    // Dropped (or ended without a final event): reconnect.
                    self.body = None;
                    tokio::time::sleep(self.delay).await;
                    self.reconnects += 1;
                }
            }
        }
    }
}

/// One frame of an event stream: its `id:`, its `data:` lines joined with newlines (`None`
/// for a frame without data, such as a bare `retry:`), and its `retry:`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frame {
    /// The `id:` field, if any.
    pub id: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: Option<String>,
    /// The `retry:` field: the reconnection delay the server asks for.
    pub retry: Option<Duration>,
}

/// The Server-Sent Events framing (the WHATWG rules pathd's streams use): feed it bytes as
/// they arrive with [`Frames::push`], take complete frames with [`Frames::next_frame`].
/// Comment lines (keep-alives) are skipped, a frame ends at a blank line, and lines may end
/// with LF or CRLF, split anywhere across chunks (multi-byte characters included).
#[derive(Debug, Default)]
pub struct Frames {
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no blank line: a frame that arrives in many
    /// chunks (a flow field's event is megabytes) is scanned once, not once per chunk.
    scanned: usize,
}

impl Frames {
    /// Appends received bytes.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend(chunk.iter().filter(|&&b| b != b'\r'));
    }

    /// The next complete frame that carries a field (comment-only frames are skipped), or
    /// `None` until more bytes arrive.
    pub fn next_frame(&mut self) -> Option<Frame> {
        loop {
            let from = self.scanned.saturating_sub(1);
            let Some(at) = self.buf[from..].windows(2).position(|w| w == b"\n\n") else {
                self.scanned = self.buf.len();
                return None;
            };
            let end = from + at;
            self.scanned = 0;
            let raw: Vec<u8> = self.buf.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&raw);
            let mut frame = Frame::default();
            let mut any = false;
            for line in text
                .lines()
                .filter(|l| !l.is_empty() && !l.starts_with(':'))
            {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                any = true;
                match field {
                    "data" => match &mut frame.data {
                        Some(d) => {
                            d.push('\n');
                            d.push_str(value);
                        }
                        None => frame.data = Some(value.to_owned()),
                    },
                    "id" => frame.id = Some(value.to_owned()),
                    "retry" => frame.retry = value.parse().ok().map(Duration::from_millis),
                    _ => {}
                }
            }
            if any {
                return Some(frame);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_anywhere_give_the_same_events() {
        let text =
            ": keep-alive\n\nid: 7\r\ndata: {\"seq\":7,\r\ndata: \"é\":1}\r\n\r\nretry: 250\n\n";
        let bytes = text.as_bytes();
        for cut in 0..bytes.len() {
            let mut f = Frames::default();
            f.push(&bytes[..cut]);
            let mut got = Vec::new();
            while let Some(fr) = f.next_frame() {
                got.push(fr);
            }
            f.push(&bytes[cut..]);
            while let Some(fr) = f.next_frame() {
                got.push(fr);
            }
            assert_eq!(
                got,
                vec![
                    Frame {
                        id: Some("7".into()),
                        data: Some("{\"seq\":7,\n\"é\":1}".into()),
                        retry: None
                    },
                    Frame {
                        id: None,
                        data: None,
                        retry: Some(Duration::from_millis(250))
                    },
                ],
                "cut at {cut}"
            );
        }
    }
}
