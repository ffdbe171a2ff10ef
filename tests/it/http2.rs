//! HTTP/2 without TLS (h2c, prior knowledge), in a build with the `http2` feature: the same
//! answers as over HTTP/1.1 (errors included), many streams on one connection, and the
//! connection watchdog of `serve.rs` applied to HTTP/2 connections (busy while any stream
//! is, idle or head otherwise).
//!
//! No test asserts wall-clock speed: the bounds are hang guards, and "still open" is
//! checked after waiting longer than the timeout that would have closed it.

use std::convert::Infallible;
use std::time::Duration;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::common::{Dirs, SMALL_MAP, TestServer, expect_error, json, read_until_closed};

/// Generous bound for anything that should happen "soon": only a hang guard.
const HANG: Duration = Duration::from_secs(30);

/// The client's connection preface (RFC 9113 §3.4) and an empty SETTINGS frame.
const PREFACE_AND_SETTINGS: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";

async fn server_with(f: impl FnOnce(&mut pathd::Config)) -> TestServer {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    f(&mut config);
    TestServer::start(dirs, config).await
}

/// A reqwest client that speaks HTTP/2 from the first byte (no upgrade, no TLS).
fn h2c_client() -> reqwest::Client {
    reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap()
}

/// A path answer without its timing (which differs between any two runs).
fn without_timing(mut v: Value) -> Value {
    v.as_object_mut().unwrap().remove("elapsed_us");
    v
}

#[tokio::test]
async fn h2c_prior_knowledge_gets_the_answers_http1_gets() {
    let s = TestServer::new().await;
    let h2 = h2c_client();
    let put = h2
        .put(s.at("/v1/maps/small"))
        .header("content-type", "text/plain")
        .body(SMALL_MAP)
        .send()
        .await
        .unwrap();
    assert_eq!(
        (put.version(), put.status().as_u16()),
        (reqwest::Version::HTTP_2, 201)
    );
    let health = h2.get(s.at("/healthz")).send().await.unwrap();
    assert_eq!(health.version(), reqwest::Version::HTTP_2);
    assert_eq!(health.status(), 200);

    let query = json!({"start": [0, 0], "goal": [4, 0]});
    let over_h2 = h2
        .post(s.at("/v1/maps/small/path"))
        .json(&query)
        .send()
        .await
        .unwrap();
    assert_eq!(over_h2.version(), reqwest::Version::HTTP_2);
    let over_h1 = s.path("small", &query).await;
    assert_eq!(over_h1.version(), reqwest::Version::HTTP_11);
    let ((s2, v2), (s1, v1)) = (json(over_h2).await, json(over_h1).await);
    assert_eq!((s2, s1), (200, 200), "{v2} / {v1}");
    assert_eq!(v2["status"], "found", "{v2}");
    assert_eq!(without_timing(v2), without_timing(v1));

    // Errors keep their JSON shape and code.
    let missing = h2
        .post(s.at("/v1/maps/nowhere/path"))
        .json(&query)
        .send()
        .await
        .unwrap();
    assert_eq!(missing.version(), reqwest::Version::HTTP_2);
    expect_error(missing, 404, "map_not_found").await;
}

/// A `POST /v1/maps/small/path` request of the raw HTTP/2 client.
fn query_request(
    url: &str,
    body: BoxBody<Bytes, Infallible>,
) -> hyper::Request<BoxBody<Bytes, Infallible>> {
    hyper::Request::post(format!("{url}/v1/maps/small/path"))
        .header("content-type", "application/json")
        .body(body)
        .unwrap()
}

const QUERY: &str = r#"{"start": [0, 0], "goal": [4, 0]}"#;

/// Status and JSON body of a response of the raw HTTP/2 client.
async fn answer(resp: hyper::Response<hyper::body::Incoming>) -> (u16, Value) {
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap())
}

#[tokio::test]
async fn streams_keep_an_h2_connection_busy_until_the_last_ends_then_it_idles_out() {
    let s = server_with(|c| {
        c.connections.idle_timeout_ms = 300;
        c.connections.header_timeout_ms = 300;
        c.connections.body_timeout_ms = 60_000;
    })
    .await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    let expected = without_timing(
        json(s.path("small", &serde_json::from_str(QUERY).unwrap()).await)
            .await
            .1,
    );

    // One connection, several streams at once (hyper's client, so that the connection's end
    // is observable).
    let tcp = TcpStream::connect(s.url.trim_start_matches("http://"))
        .await
        .unwrap();
    let (mut send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap();
    let mut conn = tokio::spawn(conn);

    // A query whose body is held back: its stream stays in flight.
    let (body_tx, body_rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(1);
    let held = send.send_request(query_request(
        &s.url,
        StreamBody::new(ReceiverStream::new(body_rx)).boxed(),
    ));
    let held = tokio::spawn(held);

    // Meanwhile eight queries at once on other streams of the same connection.
    let mut quick = Vec::new();
    for _ in 0..8 {
        let body = Full::new(Bytes::from_static(QUERY.as_bytes())).boxed();
        quick.push(tokio::spawn(send.send_request(query_request(&s.url, body))));
    }
    for q in quick {
        let (status, v) = answer(q.await.unwrap().unwrap()).await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(without_timing(v), expected);
    }

    // Several idle timeouts later the held stream still keeps the connection open.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(
        !conn.is_finished(),
        "the connection was closed while a stream was in flight: {:?}",
        (&mut conn).await
    );
    body_tx
        .send(Ok(Frame::data(Bytes::from_static(QUERY.as_bytes()))))
        .await
        .unwrap();
    drop(body_tx);
    let (status, v) = answer(
        tokio::time::timeout(HANG, held)
            .await
            .unwrap()
            .unwrap()
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(without_timing(v), expected);

    // Nothing in flight any more: the watchdog closes the connection.
    let closed = tokio::time::timeout(HANG, &mut conn).await;
    assert!(closed.is_ok(), "the idle HTTP/2 connection was kept open");
}

#[tokio::test]
async fn an_h2_connection_that_never_sends_a_request_is_closed() {
    let s = server_with(|c| c.connections.header_timeout_ms = 300).await;
    let mut stream = TcpStream::connect(s.url.trim_start_matches("http://"))
        .await
        .unwrap();
    stream.write_all(PREFACE_AND_SETTINGS).await.unwrap();
    // The server answers the preface with its own SETTINGS frame (type 4 on stream 0), then
    // closes the connection once the header timeout has passed without a request.
    let got = read_until_closed(&mut stream).await;
    assert!(got.len() >= 9, "{got:?}");
    assert_eq!((got[3], &got[5..9]), (4, &[0u8; 4][..]), "{got:?}");
}
