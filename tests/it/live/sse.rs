//! A minimal Server-Sent Events reader over a reqwest response (enough for pathd's streams:
//! `id:` and `data:` lines, comments ignored).

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;

/// One open event stream.
pub struct Sse {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<axum::body::Bytes>>,
    buf: String,
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
            buf: String::new(),
        }
    }

    /// The next event, or `None` when the stream ended; panics after 60 s of silence.
    pub async fn next(&mut self) -> Option<Ev> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let frame: String = self.buf.drain(..end + 2).collect();
                let mut id = None;
                let mut data = String::new();
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                let data = serde_json::from_str(&data).unwrap();
                return Some(Ev { id, data });
            }
            let chunk = tokio::time::timeout(Duration::from_secs(60), self.body.next())
                .await
                .expect("an event within 60 s");
            match chunk {
                Some(Ok(b)) => self.buf.push_str(std::str::from_utf8(&b).unwrap()),
                Some(Err(_)) | None => return None,
            }
        }
    }

    /// The next event, which must exist.
    pub async fn expect(&mut self) -> Ev {
        self.next().await.expect("the stream ended early")
    }
}
