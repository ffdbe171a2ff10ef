//! Response compression (`app()`'s `CompressionLayer`): gzip and brotli by `Accept-Encoding`,
//! the same content once decoded, nothing compressed unasked, and event streams never
//! compressed (a compressor would hold events back in its buffer).

use std::io::Read;

use reqwest::header::{ACCEPT_ENCODING, CONTENT_ENCODING, HeaderMap, HeaderValue, VARY};
use serde_json::{Value, json};

use crate::common::{Dirs, SMALL_MAP, TestServer};
use crate::live::sse::Sse;

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("a gzip body");
    out
}

async fn get(s: &TestServer, path: &str, encoding: Option<&str>) -> reqwest::Response {
    let mut req = s.client.get(s.at(path));
    if let Some(e) = encoding {
        req = req.header(ACCEPT_ENCODING, e);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), 200, "{path}");
    resp
}

#[tokio::test]
async fn a_large_cells_answer_is_gzipped_when_asked_with_equal_content() {
    let dirs = Dirs::new();
    dirs.bundle("arena2");
    let config = dirs.config();
    let s = TestServer::start(dirs, config).await;

    let plain = get(&s, "/v1/maps/arena2/cells", None).await;
    assert!(plain.headers().get(CONTENT_ENCODING).is_none());
    let plain = plain.bytes().await.unwrap();
    let cells: Value = serde_json::from_slice(&plain).unwrap();
    assert_eq!(
        (cells["width"].as_u64(), cells["height"].as_u64()),
        (Some(281), Some(209))
    );
    assert!(plain.len() > 70_000, "{} bytes", plain.len());

    let gz = get(&s, "/v1/maps/arena2/cells", Some("gzip")).await;
    assert_eq!(gz.headers()[CONTENT_ENCODING], "gzip");
    let vary: Vec<String> = gz
        .headers()
        .get_all(VARY)
        .iter()
        .map(|v| v.to_str().unwrap().to_ascii_lowercase())
        .collect();
    assert!(
        vary.iter().any(|v| v.contains("accept-encoding")),
        "{vary:?}"
    );
    let gz = gz.bytes().await.unwrap();
    assert!(
        gz.len() * 4 < plain.len(),
        "{} of {} bytes",
        gz.len(),
        plain.len()
    );
    assert_eq!(gunzip(&gz), plain.to_vec());

    // Brotli when preferred; gzip still when that is all the client takes.
    let br = get(&s, "/v1/maps/arena2/cells", Some("br;q=1.0, gzip;q=0.5")).await;
    assert_eq!(br.headers()[CONTENT_ENCODING], "br");
    let br = br.bytes().await.unwrap();
    assert!(
        br.len() * 4 < plain.len(),
        "{} of {} bytes",
        br.len(),
        plain.len()
    );
    assert_ne!(br.to_vec(), plain.to_vec());

    // A path answer (JSON from a POST) too.
    let body = json!({"start": [5, 100], "goal": [250, 190], "debug": true});
    let one = |enc: Option<&'static str>| {
        let mut req = s.client.post(s.at("/v1/maps/arena2/path")).json(&body);
        if let Some(e) = enc {
            req = req.header(ACCEPT_ENCODING, e);
        }
        req.send()
    };
    let plain = one(None).await.unwrap();
    assert!(plain.headers().get(CONTENT_ENCODING).is_none());
    let mut plain: Value = plain.json().await.unwrap();
    let gz = one(Some("gzip")).await.unwrap();
    assert_eq!(gz.headers()[CONTENT_ENCODING], "gzip");
    let mut unzipped: Value = serde_json::from_slice(&gunzip(&gz.bytes().await.unwrap())).unwrap();
    assert_eq!(unzipped["status"], "found");
    for v in [&mut plain, &mut unzipped] {
        v.as_object_mut().unwrap().remove("elapsed_us");
    }
    assert_eq!(unzipped, plain);
}

#[tokio::test]
async fn event_streams_are_not_compressed_and_deliver_events_as_they_happen() {
    let s = TestServer::new().await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    let mut headers = HeaderMap::new();
    headers.insert(
        ACCEPT_ENCODING,
        HeaderValue::from_static("gzip, br, deflate"),
    );
    let client = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap();

    let created: Value = s
        .client
        .post(s.at("/v1/maps/small/subscriptions"))
        .json(&json!({"start": [0, 0], "goal": [4, 0]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    let url = s.at(&format!("/v1/subscriptions/{id}/events"));
    let resp = client.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers().get(CONTENT_ENCODING).is_none(),
        "{:?}",
        resp.headers()
    );
    drop(resp);

    // Only the streams are asked with Accept-Encoding (`client`); the JSON calls go
    // through `s.client`, which asks for none.
    // The stream answers each event while it stays open: the patch's event arrives
    // before anything ends the stream.
    let mut events = Sse::open(&client, &url, None).await;
    assert_eq!(events.expect().await.reason(), "initial");
    let patch = s
        .client
        .patch(s.at("/v1/maps/small"))
        .json(&json!({"cells": [{"x": 2, "y": 2, "cost": 0}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(patch.status(), 200);
    let ev = events.expect().await;
    assert_eq!(ev.reason(), "unreachable");
    assert_eq!(ev.data["map_version"], 2);

    // Flow fields' streams likewise.
    let field: Value = s
        .client
        .post(s.at("/v1/maps/small/flowfields"))
        .json(&json!({"goal": [0, 0]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let url = s.at(&format!(
        "/v1/flowfields/{}/events",
        field["id"].as_str().unwrap()
    ));
    let resp = client.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers().get(CONTENT_ENCODING).is_none(),
        "{:?}",
        resp.headers()
    );
    drop(resp);
    let mut events = Sse::open(&client, &url, None).await;
    assert_eq!(events.expect().await.reason(), "current");
    let patch = s
        .client
        .patch(s.at("/v1/maps/small"))
        .json(&json!({"cells": [{"x": 1, "y": 1, "cost": 0}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(patch.status(), 200);
    assert_eq!(events.expect().await.reason(), "changed");
}
