//! Small holes closed: weight bounds, bounded metric labels and their `# HELP` lines,
//! subscription secrets, JSON path-parameter rejections, duplicate map header lines.

use crate::common::{Dirs, SMALL_MAP, TestServer, expect_error, json};
use serde_json::{Value, json};

/// `weight` must be a number in 1..=100 for every algorithm (`400 invalid_request`).
#[tokio::test]
async fn weight_is_bounded_for_every_algorithm() {
    let s = TestServer::new().await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    let algorithms = [
        "astar",
        "dijkstra",
        "weighted_astar",
        "jps",
        "theta",
        "auto",
    ];
    for w in [1e308, 1e307, 100.5, 0.999, 0.0, -2.0] {
        for algorithm in algorithms {
            let body =
                json!({"start": [0, 0], "goal": [4, 0], "algorithm": algorithm, "weight": w});
            let v = expect_error(s.path("small", &body).await, 400, "invalid_request").await;
            let message = v["error"]["message"].as_str().unwrap();
            assert!(message.contains("100"), "{algorithm} {w}: {message}");
        }
    }
    // The bounds themselves are accepted.
    for w in [1.0, 100.0] {
        let body =
            json!({"start": [0, 0], "goal": [4, 0], "algorithm": "weighted_astar", "weight": w});
        let (status, v) = json(s.path("small", &body).await).await;
        assert_eq!((status, v["status"].as_str()), (200, Some("found")), "{v}");
    }
    // In a batch the bad query alone gets the error.
    let batch = json!({"queries": [
        {"start": [0, 0], "goal": [4, 0], "weight": 0},
        {"start": [0, 0], "goal": [4, 0], "weight": 2},
    ]});
    let (status, v) = json(
        s.client
            .post(s.at("/v1/maps/small/paths"))
            .json(&batch)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["results"][0]["error"]["code"], "invalid_request", "{v}");
    assert_eq!(v["results"][1]["status"], "found", "{v}");
    // Subscriptions validate it too.
    let sub = s
        .client
        .post(s.at("/v1/maps/small/subscriptions"))
        .json(&json!({"start": [0, 0], "goal": [4, 0], "weight": -2}))
        .send()
        .await
        .unwrap();
    expect_error(sub, 400, "invalid_request").await;
}

async fn metrics_text(s: &TestServer) -> String {
    let resp = s.client.get(s.at("/metrics")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap()
}

/// Invented methods and paths do not create series: methods outside the standard set are
/// `other`, routes are templates (or `unmatched`).
#[tokio::test]
async fn metric_labels_are_bounded() {
    let s = TestServer::new().await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    for i in 0..40 {
        let method = reqwest::Method::from_bytes(format!("INVENTED{i}").as_bytes()).unwrap();
        let resp = s
            .client
            .request(method, s.at("/v1/maps/small"))
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_client_error());
        let resp = s
            .client
            .get(s.at(&format!("/no/such/route/{i}")))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 404);
    }
    let text = metrics_text(&s).await;
    assert!(!text.contains("INVENTED"), "{text}");
    assert!(!text.contains("/no/such/route"), "{text}");
    assert!(text.contains(r#"method="other""#), "{text}");
    assert!(text.contains(r#"route="/v1/maps/{name}""#), "{text}");
}

/// Every metric family `/metrics` prints has a `# HELP` line.
#[tokio::test]
async fn every_metric_family_has_help() {
    let s = TestServer::new().await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    // Touch most metrics: a query, a subscription, a patch, a rejected request.
    let (status, _) = json(
        s.path("small", &json!({"start": [0, 0], "goal": [4, 0]}))
            .await,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = json(
        s.client
            .post(s.at("/v1/maps/small/subscriptions"))
            .json(&json!({"start": [0, 0], "goal": [4, 0]}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201);
    let patch = s
        .client
        .patch(s.at("/v1/maps/small"))
        .json(&json!({"cells": [{"x": 3, "y": 0, "cost": 0}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(patch.status(), 200);
    let text = metrics_text(&s).await;
    let families: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(families.len() >= 10, "{text}");
    for family in families {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("# HELP {family} "))),
            "no HELP line for {family}:\n{text}"
        );
    }
}

fn is_hex128(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Ids are 128 random bits; moving or deleting needs the subscription's secret (or the
/// admin token): `403 forbidden` otherwise.
#[tokio::test]
async fn subscriptions_need_their_secret_to_change() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.admin_token = Some("admin".into());
    let s = TestServer::start(dirs, config).await;
    let put = s
        .client
        .put(s.at("/v1/maps/small"))
        .bearer_auth("admin")
        .header("content-type", "text/plain")
        .body(SMALL_MAP)
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 201);
    let create = || async {
        let (status, v) = json(
            s.client
                .post(s.at("/v1/maps/small/subscriptions"))
                .json(&json!({"start": [0, 0], "goal": [4, 0]}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 201, "{v}");
        v
    };
    let (a, b) = (create().await, create().await);
    for v in [&a, &b] {
        assert!(is_hex128(&v["id"]), "{v}");
        assert!(is_hex128(&v["secret"]), "{v}");
    }
    assert_ne!(a["id"], b["id"]);
    assert_ne!(a["secret"], b["secret"]);
    let id = a["id"].as_str().unwrap();
    let secret = a["secret"].as_str().unwrap();
    let url = s.at(&format!("/v1/subscriptions/{id}"));

    // Reading is open to query callers and never shows the secret.
    let (status, v) = json(s.client.get(&url).send().await.unwrap()).await;
    assert_eq!(status, 200);
    assert!(v.get("secret").is_none(), "{v}");

    let mv = |p: [u32; 2]| s.client.patch(&url).json(&json!({"position": p}));
    expect_error(mv([1, 2]).send().await.unwrap(), 403, "forbidden").await;
    let wrong = b["secret"].as_str().unwrap();
    expect_error(
        mv([1, 2])
            .header("x-subscription-secret", wrong)
            .send()
            .await
            .unwrap(),
        403,
        "forbidden",
    )
    .await;
    let (status, v) = json(
        mv([1, 2])
            .header("x-subscription-secret", secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, v["position"].clone()), (200, json!([1, 2])), "{v}");
    // The admin token stands in for any secret.
    let (status, _) = json(mv([0, 2]).bearer_auth("admin").send().await.unwrap()).await;
    assert_eq!(status, 200);

    expect_error(
        s.client.delete(&url).send().await.unwrap(),
        403,
        "forbidden",
    )
    .await;
    expect_error(
        s.client
            .delete(&url)
            .header("x-subscription-secret", wrong)
            .send()
            .await
            .unwrap(),
        403,
        "forbidden",
    )
    .await;
    let del = s
        .client
        .delete(&url)
        .header("x-subscription-secret", secret)
        .send()
        .await
        .unwrap();
    assert_eq!(del.status(), 204);
    let other = s.at(&format!("/v1/subscriptions/{}", b["id"].as_str().unwrap()));
    let del = s
        .client
        .delete(&other)
        .bearer_auth("admin")
        .send()
        .await
        .unwrap();
    assert_eq!(del.status(), 204);
}

/// A path parameter that cannot be decoded is a JSON `400 invalid_request`.
#[tokio::test]
async fn bad_path_parameters_answer_json() {
    let s = TestServer::new().await;
    for (method, path) in [
        (reqwest::Method::GET, "/v1/maps/%ff"),
        (reqwest::Method::DELETE, "/v1/maps/%ff"),
        (reqwest::Method::GET, "/v1/subscriptions/%ff"),
        (reqwest::Method::DELETE, "/v1/subscriptions/%ff"),
        (reqwest::Method::GET, "/v1/subscriptions/%ff/events"),
    ] {
        let resp = s
            .client
            .request(method.clone(), s.at(path))
            .send()
            .await
            .unwrap();
        let ct = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned());
        assert_eq!(ct.as_deref(), Some("application/json"), "{method} {path}");
        expect_error(resp, 400, "invalid_request").await;
    }
}

/// A map file with a header line twice is `400 invalid_map` naming the line.
#[tokio::test]
async fn duplicate_map_header_lines_are_rejected() {
    let s = TestServer::new().await;
    for (text, line) in [
        (
            "type octile\nheight 5\nheight 3\nwidth 5\nmap\n..@..\n..@..\n.....\n",
            3,
        ),
        (
            "type octile\nheight 3\nwidth 5\nwidth 5\nmap\n..@..\n..@..\n.....\n",
            4,
        ),
        (
            "type octile\nheight 3\ntype octile\nwidth 5\nmap\n..@..\n..@..\n.....\n",
            3,
        ),
    ] {
        let v = expect_error(s.put_text("dup", text).await, 400, "invalid_map").await;
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("line {line}")) && message.contains("duplicate"),
            "{message}"
        );
    }
}
