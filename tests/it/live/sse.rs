//! An event stream read raw: the Rust client's SSE framing ([`pathd_client::Frames`]) over
//! one reqwest response, without the client's reconnection, so a test sees exactly where
//! the server ends a stream (and each frame's `id:` and JSON as sent). Tests that only need
//! the events use the client's typed streams (`Client::subscription_events` and the like,
//! read with `common::next_event`).

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;

/// One open event stream.
pub struct Sse {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<axum::body::Bytes>>,
    frames: pathd_client::Frames,
}

/// One event: its `id:` and parsed `data:`.
#[derive(Debug, Clone)]
pub struct Ev {
    /// The SSE id.
    pub id: Option<String>,
    /// The JSON data.
    pub data: Value,
}

impl Ev {
    /// `seq` of the event.
    pub fn seq(&self) -> u64 {
        self.data["seq"].as_u64().expect("seq")
    }

    /// `reason` of the event.
    pub fn reason(&self) -> &str {
        self.data["reason"].as_str().expect("reason")
    }
}

impl Sse {
    /// Opens `url` (optionally with `Last-Event-ID`); asserts `200 text/event-stream`.
    pub async fn open(client: &reqwest::Client, url: &str, last: Option<u64>) -> Sse {
        let mut req = client.get(url);
        if let Some(l) = last {
            req = req.header("last-event-id", l.to_string());
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200);
        let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(ct.starts_with("text/event-stream"), "{ct}");
        Sse {
            body: resp.bytes_stream().boxed(),
            frames: pathd_client::Frames::default(),
        }
    }

    /// The next event, or `None` when the stream ended; panics after 60 s of silence.
    pub async fn next(&mut self) -> Option<Ev> {
        loop {
            if let Some(frame) = self.frames.next_frame() {
                let Some(data) = frame.data else { continue };
                let data = serde_json::from_str(&data).unwrap();
                return Some(Ev { id: frame.id, data });
            }
            let chunk = tokio::time::timeout(Duration::from_secs(60), self.body.next())
                .await
                .expect("an event within 60 s");
            match chunk {
                Some(Ok(b)) => self.frames.push(&b),
                Some(Err(_)) | None => return None,
            }
        }
    }

    /// The next event, which must exist.
    pub async fn expect(&mut self) -> Ev {
        self.next().await.expect("the stream ended early")
    }
}
