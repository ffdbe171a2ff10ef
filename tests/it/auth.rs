//! Bearer tokens: admin for changes, query for reads and queries.

use crate::common::{Dirs, SMALL_MAP, TestServer, expect_error};
use serde_json::json;

async fn server(admin: Option<&str>, query: Option<&str>) -> TestServer {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.admin_token = admin.map(str::to_owned);
    config.query_token = query.map(str::to_owned);
    TestServer::start(dirs, config).await
}

fn put(s: &TestServer, token: Option<&str>) -> reqwest::RequestBuilder {
    let req = s
        .client
        .put(s.at("/v1/maps/m"))
        .header("content-type", "text/plain")
        .body(SMALL_MAP);
    match token {
        Some(t) => req.bearer_auth(t),
        None => req,
    }
}

#[tokio::test]
async fn admin_token_guards_changes_only() {
    let s = server(Some("sekret"), None).await;
    let resp = put(&s, None).send().await.unwrap();
    assert_eq!(resp.headers()["www-authenticate"], "Bearer");
    expect_error(resp, 401, "unauthorized").await;
    expect_error(
        put(&s, Some("wrong")).send().await.unwrap(),
        401,
        "unauthorized",
    )
    .await;
    let resp = s
        .client
        .put(s.at("/v1/maps/m"))
        .header("authorization", "Basic c2VrcmV0")
        .body(SMALL_MAP)
        .send()
        .await
        .unwrap();
    expect_error(resp, 401, "unauthorized").await;
    assert_eq!(put(&s, Some("sekret")).send().await.unwrap().status(), 201);
    // Queries and reads stay open.
    assert_eq!(
        s.path("m", &json!({"start": [0, 0], "goal": [4, 0]}))
            .await
            .status(),
        200
    );
    assert_eq!(
        s.client
            .get(s.at("/v1/maps"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    expect_error(
        s.client.delete(s.at("/v1/maps/m")).send().await.unwrap(),
        401,
        "unauthorized",
    )
    .await;
    assert_eq!(
        s.client
            .delete(s.at("/v1/maps/m"))
            .bearer_auth("sekret")
            .send()
            .await
            .unwrap()
            .status(),
        204
    );
}

#[tokio::test]
async fn query_token_guards_reads_and_queries() {
    let s = server(Some("admin"), Some("reader")).await;
    assert_eq!(put(&s, Some("admin")).send().await.unwrap().status(), 201);
    // The query token cannot change maps.
    expect_error(
        put(&s, Some("reader")).send().await.unwrap(),
        401,
        "unauthorized",
    )
    .await;
    let body = json!({"start": [0, 0], "goal": [4, 0]});
    expect_error(s.path("m", &body).await, 401, "unauthorized").await;
    let url = s.at("/v1/maps/m/path");
    for token in ["reader", "admin"] {
        let resp = s
            .client
            .post(&url)
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
    }
    let resp = s
        .client
        .post(s.at("/v1/maps/m/paths"))
        .json(&json!({"queries": []}))
        .send()
        .await
        .unwrap();
    expect_error(resp, 401, "unauthorized").await;
    expect_error(
        s.client.get(s.at("/v1/maps")).send().await.unwrap(),
        401,
        "unauthorized",
    )
    .await;
    expect_error(
        s.client.get(s.at("/v1/maps/m")).send().await.unwrap(),
        401,
        "unauthorized",
    )
    .await;
    assert_eq!(
        s.client
            .get(s.at("/v1/maps/m"))
            .bearer_auth("reader")
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    // Operations routes stay open.
    for path in ["/healthz", "/readyz", "/metrics", "/openapi.yaml"] {
        assert_eq!(
            s.client.get(s.at(path)).send().await.unwrap().status(),
            200,
            "{path}"
        );
    }
}

#[tokio::test]
async fn unauthorized_comes_before_body_checks() {
    let s = server(Some("admin"), None).await;
    // Even a body of the wrong type is refused as unauthorized, not 415.
    let resp = s
        .client
        .put(s.at("/v1/maps/m"))
        .header("content-type", "image/png")
        .body("x")
        .send()
        .await
        .unwrap();
    expect_error(resp, 401, "unauthorized").await;
}
