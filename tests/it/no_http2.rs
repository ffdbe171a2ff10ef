//! A build without the `http2` feature (the default): HTTP/1.1 only. A client that opens
//! with the HTTP/2 preface (h2c prior knowledge) is closed unanswered instead of hanging,
//! and HTTP/1.1 keeps working (every other server test speaks it).

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::common::{TestServer, read_until_closed};

#[tokio::test]
async fn the_http2_preface_is_closed_unanswered_and_http1_still_works() {
    let s = TestServer::new().await;
    let addr = s.url.trim_start_matches("http://");
    let mut h2 = TcpStream::connect(addr).await.unwrap();
    h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .await
        .unwrap();
    let got = read_until_closed(&mut h2).await;
    assert!(got.is_empty(), "{}", String::from_utf8_lossy(&got));

    let health = s.client.get(s.at("/healthz")).send().await.unwrap();
    assert_eq!(health.version(), reqwest::Version::HTTP_11);
    assert_eq!(health.status(), 200);
}
