//! Plain routes driven through the router with `oneshot`, no socket.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use pathd::{AppState, Config, app};
use tower::ServiceExt;

fn state() -> (AppState, tempfile::TempDir) {
    let dir = tempfile::TempDir::new().unwrap();
    let config = Config::with_dirs(dir.path().join("maps"), dir.path().join("data"));
    (AppState::new(config).unwrap(), dir)
}

async fn get(state: &AppState, uri: &str) -> (StatusCode, String) {
    let resp = app(state.clone())
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test]
async fn readiness_follows_loading() {
    let (state, _dir) = state();
    let (st, body) = get(&state, "/healthz").await;
    assert_eq!(
        (st, body.as_str()),
        (
            StatusCode::OK,
            r#"{"status":"ok","maps":0,"damaged_maps":[],"cut_logs":[]}"#
        )
    );
    let (st, body) = get(&state, "/readyz").await;
    assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains(r#""code":"not_ready""#), "{body}");
    let report = pathd::load_maps(state.clone()).await;
    assert_eq!(report, pathd::LoadReport::default());
    let (st, body) = get(&state, "/readyz").await;
    assert_eq!(
        (st, body.as_str()),
        (
            StatusCode::OK,
            r#"{"status":"ready","maps":0,"damaged_maps":[],"cut_logs":[]}"#
        )
    );
}

#[tokio::test]
async fn serves_its_contract_and_metrics() {
    let (state, _dir) = state();
    let (st, body) = get(&state, "/openapi.yaml").await;
    assert_eq!(st, StatusCode::OK);
    assert!(body.starts_with("openapi: 3.2"));
    // A request is counted by route and status.
    get(&state, "/healthz").await;
    let (st, body) = get(&state, "/metrics").await;
    assert_eq!(st, StatusCode::OK);
    assert!(body.contains("pathd_http_requests_total"), "{body}");
    assert!(body.contains(r#"route="/healthz""#), "{body}");
    assert!(body.contains("pathd_pool_threads"), "{body}");
}

#[test]
fn state_is_send_and_sync() {
    fn check<T: Send + Sync + Clone + 'static>() {}
    check::<AppState>();
    check::<pathd::compute::Compute>();
}
