//! Small holes closed: weight bounds, bounded metric labels and their `# HELP` lines,
//! subscription secrets, JSON path-parameter rejections, duplicate map header lines.

use crate::common::{Dirs, SMALL_MAP, TestServer, api_error, expect_error, query};
use pathd_client::{BatchItem, CellChange, MapPatch, PathRequest};

/// `weight` must be a number in 1..=100 for every algorithm (`400 invalid_request`).
#[tokio::test]
async fn weight_is_bounded_for_every_algorithm() {
    let s = TestServer::new().await;
    s.upload("small", SMALL_MAP).await;
    let pathd = s.pathd();
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
            let q = PathRequest {
                weight: Some(w),
                ..query([0, 0], [4, 0], algorithm)
            };
            let message = api_error(pathd.find_path("small", &q).await, 400, "invalid_request");
            assert!(message.contains("100"), "{algorithm} {w}: {message}");
        }
    }
    // The bounds themselves are accepted.
    for w in [1.0, 100.0] {
        let q = PathRequest {
            weight: Some(w),
            ..query([0, 0], [4, 0], "weighted_astar")
        };
        let v = pathd.find_path("small", &q).await.unwrap();
        assert_eq!(v.status, "found", "{v:?}");
    }
    // In a batch the bad query alone gets the error.
    let weighted = |w: f64| PathRequest {
        weight: Some(w),
        ..PathRequest::new([0, 0], [4, 0])
    };
    let v = pathd
        .find_paths("small", &[weighted(0.0), weighted(2.0)])
        .await
        .unwrap();
    match &v.results[..] {
        [BatchItem::Error { error }, BatchItem::Result(r)] => {
            assert_eq!(error.code, "invalid_request", "{v:?}");
            assert_eq!(r.status, "found", "{v:?}");
        }
        other => panic!("{other:?}"),
    }
    // Subscriptions validate it too.
    api_error(
        pathd.create_subscription("small", &weighted(-2.0)).await,
        400,
        "invalid_request",
    );
}

async fn metrics_text(s: &TestServer) -> String {
    s.pathd().metrics().await.unwrap()
}

/// Invented methods and paths do not create series: methods outside the standard set are
/// `other`, routes are templates (or `unmatched`).
#[tokio::test]
async fn metric_labels_are_bounded() {
    let s = TestServer::new().await;
    s.upload("small", SMALL_MAP).await;
    // Invented methods and routes: requests no client sends, raw.
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
    s.upload("small", SMALL_MAP).await;
    let pathd = s.pathd();
    // Touch most metrics: a query, a subscription, a patch, a rejected request.
    let q = PathRequest::new([0, 0], [4, 0]);
    pathd.find_path("small", &q).await.unwrap();
    pathd.create_subscription("small", &q).await.unwrap();
    let patch = MapPatch {
        cells: vec![CellChange {
            x: 3,
            y: 0,
            cost: 0,
        }],
        ..Default::default()
    };
    pathd.patch_map("small", &patch).await.unwrap();
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

fn is_hex128(v: Option<&str>) -> bool {
    v.is_some_and(|s| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Ids are 128 random bits; moving or deleting needs the subscription's secret (or the
/// admin token): `403 forbidden` otherwise.
#[tokio::test]
async fn subscriptions_need_their_secret_to_change() {
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.admin_token = Some("admin".into());
    let s = TestServer::start(dirs, config).await;
    let admin = s.pathd().with_admin_token("admin");
    // Without a token: a query caller (queries are open here).
    let pathd = s.pathd();
    admin.put_map_text("small", SMALL_MAP).await.unwrap();
    let create = || async {
        pathd
            .create_subscription("small", &PathRequest::new([0, 0], [4, 0]))
            .await
            .unwrap()
    };
    let (a, b) = (create().await, create().await);
    for v in [&a, &b] {
        assert!(is_hex128(Some(&v.id)), "{v:?}");
        assert!(is_hex128(v.secret.as_deref()), "{v:?}");
    }
    assert_ne!(a.id, b.id);
    assert_ne!(a.secret, b.secret);
    let id = a.id.as_str();
    let secret = a.secret.as_deref().unwrap();
    let wrong = b.secret.as_deref().unwrap();

    // Reading is open to query callers and never shows the secret.
    let v = pathd.get_subscription(id).await.unwrap();
    assert!(v.secret.is_none(), "{v:?}");

    api_error(
        pathd.move_subscription(id, None, [1, 2]).await,
        403,
        "forbidden",
    );
    api_error(
        pathd.move_subscription(id, Some(wrong), [1, 2]).await,
        403,
        "forbidden",
    );
    let v = pathd
        .move_subscription(id, Some(secret), [1, 2])
        .await
        .unwrap();
    assert_eq!(v.position, [1, 2], "{v:?}");
    // The admin token stands in for any secret.
    admin.move_subscription(id, None, [0, 2]).await.unwrap();

    api_error(pathd.delete_subscription(id, None).await, 403, "forbidden");
    api_error(
        pathd.delete_subscription(id, Some(wrong)).await,
        403,
        "forbidden",
    );
    pathd.delete_subscription(id, Some(secret)).await.unwrap();
    admin.delete_subscription(&b.id, None).await.unwrap();
}

/// A path parameter that cannot be decoded is a JSON `400 invalid_request` (raw: the
/// content type, and names no client would send).
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
        let message = api_error(
            s.pathd().put_map_text("dup", text).await,
            400,
            "invalid_map",
        );
        assert!(
            message.contains(&format!("line {line}")) && message.contains("duplicate"),
            "{message}"
        );
    }
}
