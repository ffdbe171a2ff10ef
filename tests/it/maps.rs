//! Map routes over a real server: create, replace, read, list, delete, and their errors.

use crate::common::{SMALL_MAP, TestServer, api_error, expect_error, json};
use pathd_client::{MapSummary, PathRequest};
use serde_json::json;

#[tokio::test]
async fn create_replace_read_list_delete() {
    let s = TestServer::new().await;
    let pathd = s.pathd();
    // Raw for the `Location` header of a creation.
    let resp = s.put_text("small", SMALL_MAP).await;
    assert_eq!(resp.status(), 201);
    assert_eq!(resp.headers()["location"], "/v1/maps/small");
    let v: MapSummary = resp.json().await.unwrap();
    assert_eq!(v.name, "small");
    assert_eq!(v.version, 1);
    assert_eq!((v.width, v.height), (5, 3));
    assert_eq!(v.movement, "octile");
    assert_eq!(v.passable_cells, 13);
    assert_eq!(v.blocked_cells, 2);
    assert_eq!(v.components, 1);
    assert_eq!(v.source, "uploaded");

    // Replacing answers 200 with the next version.
    let (created, v) = pathd.put_map_text("small", SMALL_MAP).await.unwrap();
    assert_eq!((created, v.version), (false, 2));

    let v = pathd.get_map("small", None).await.unwrap();
    assert_eq!(v.version, 2);

    // As a Moving AI file (raw for its content type).
    let resp = s
        .client
        .get(s.at("/v1/maps/small"))
        .header("accept", "text/plain")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    assert_eq!(resp.text().await.unwrap(), SMALL_MAP);
    assert_eq!(pathd.get_map_text("small").await.unwrap(), SMALL_MAP);

    let v = pathd.list_maps().await.unwrap();
    let names: Vec<_> = v.maps.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, vec!["small"]);

    pathd.delete_map("small").await.unwrap();
    api_error(pathd.get_map("small", None).await, 404, "map_not_found");
    api_error(pathd.delete_map("small").await, 404, "map_not_found");

    // Re-created: the version continues past the deleted one.
    let (created, v) = pathd.put_map_text("small", SMALL_MAP).await.unwrap();
    assert_eq!((created, v.version), (true, 3));
}

#[tokio::test]
async fn json_bodies_costs_rows_and_movement() {
    let s = TestServer::new().await;
    let v = s
        .upload_json(
            "w",
            &json!({"width": 3, "height": 2, "costs": [1, 5, 0, 2, 255, 1], "movement": "cardinal"}),
        )
        .await;
    assert_eq!(v.movement, "cardinal");
    assert_eq!((v.min_cost, v.max_cost), (1, 255));
    assert!(!v.uniform);
    assert_eq!(v.passable_cells, 5);

    let v = s
        .upload_json(
            "r",
            &json!({"width": 3, "height": 2, "rows": ["..@", "T.G"]}),
        )
        .await;
    assert_eq!((v.passable_cells, v.uniform), (4, true));
    assert_eq!(v.movement, "octile");

    // ?movement= overrides a text file's type line (raw: the client sends no query
    // parameters on uploads, nor a charset).
    let resp = s
        .client
        .put(s.at("/v1/maps/t?movement=cardinal"))
        .header("content-type", "text/plain; charset=utf-8")
        .body(SMALL_MAP)
        .send()
        .await
        .unwrap();
    let (st, v) = json(resp).await;
    assert_eq!((st, v["movement"].as_str()), (201, Some("cardinal")));

    // A weighted map cannot be written as a Moving AI file.
    api_error(s.pathd().get_map_text("w").await, 406, "not_acceptable");
}

#[tokio::test]
async fn upload_errors() {
    let s = TestServer::new().await;
    let pathd = s.pathd();
    for bad in [".hidden", "has space", "a%2Fb", "x".repeat(65).as_str()] {
        api_error(
            pathd.put_map_text(bad, SMALL_MAP).await,
            400,
            "invalid_request",
        );
    }
    api_error(
        pathd
            .put_map_text("m", "type octile\nheight 2\nwidth 2\nmap\n..\n.x\n")
            .await,
        400,
        "invalid_map",
    );
    api_error(pathd.put_map_text("m", "hello").await, 400, "invalid_map");
    let bad_json = [
        json!({"width": 2, "height": 1, "costs": [1, 256]}),
        json!({"width": 2, "height": 1, "costs": [1]}),
        json!({"width": 2, "height": 1, "rows": [".x"]}),
        json!({"width": 2, "height": 1, "rows": ["..", ".."]}),
        json!({"width": 2, "height": 1}),
        json!({"width": 2, "height": 1, "costs": [1, 1], "rows": [".."]}),
        json!({"width": 0, "height": 1, "costs": []}),
    ];
    for body in bad_json {
        api_error(pathd.put_map_json("m", &body).await, 400, "invalid_map");
    }
    let bad_request = [
        json!({"width": 2, "height": 1, "costs": [1, 1], "extra": true}),
        json!({"width": "2", "height": 1, "costs": [1, 1]}),
        json!({"width": 2, "height": 1, "costs": [1, 1], "movement": "hex"}),
        json!([1, 2]),
    ];
    for body in bad_request {
        api_error(pathd.put_map_json("m", &body).await, 400, "invalid_request");
    }
    // Broken JSON, query parameters and content types the client never sends: raw.
    let resp = s
        .client
        .put(s.at("/v1/maps/m"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "invalid_request").await;
    let resp = s
        .client
        .put(s.at("/v1/maps/m?movement=hex"))
        .header("content-type", "text/plain")
        .body(SMALL_MAP)
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "invalid_request").await;
    let resp = s
        .client
        .put(s.at("/v1/maps/m?nope=1"))
        .header("content-type", "text/plain")
        .body(SMALL_MAP)
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "invalid_request").await;
    for ct in [None, Some("application/xml")] {
        let mut req = s.client.put(s.at("/v1/maps/m")).body(SMALL_MAP);
        if let Some(ct) = ct {
            req = req.header("content-type", ct);
        }
        expect_error(req.send().await.unwrap(), 415, "unsupported_media_type").await;
    }
    // Nothing above created a map.
    assert!(pathd.list_maps().await.unwrap().maps.is_empty());
}

#[tokio::test]
async fn size_limits() {
    let dirs = crate::common::Dirs::new();
    let mut config = dirs.config();
    config.max_body_bytes = 4096;
    config.max_map_cells = 100;
    config.max_maps = 2;
    let s = TestServer::start(dirs, config).await;
    let pathd = s.pathd();
    let big = format!(
        "type octile\nheight 1\nwidth 5000\nmap\n{}\n",
        ".".repeat(5000)
    );
    api_error(
        pathd.put_map_text("big", &big).await,
        413,
        "payload_too_large",
    );
    let wide = format!(
        "type octile\nheight 1\nwidth 101\nmap\n{}\n",
        ".".repeat(101)
    );
    api_error(
        pathd.put_map_text("wide", &wide).await,
        413,
        "map_too_large",
    );
    api_error(
        pathd
            .put_map_json("wide", &json!({"width": 11, "height": 10, "rows": []}))
            .await,
        413,
        "map_too_large",
    );
    s.upload("a", SMALL_MAP).await;
    s.upload("b", SMALL_MAP).await;
    api_error(
        pathd.put_map_text("c", SMALL_MAP).await,
        409,
        "too_many_maps",
    );
    // Replacing is still fine at the limit.
    let (created, _) = pathd.put_map_text("b", SMALL_MAP).await.unwrap();
    assert!(!created);
}

#[tokio::test]
async fn unknown_routes_and_methods() {
    // Routes and methods no client operation has: raw.
    let s = TestServer::new().await;
    expect_error(
        s.client.get(s.at("/nope")).send().await.unwrap(),
        404,
        "not_found",
    )
    .await;
    expect_error(
        s.client.post(s.at("/v1/maps")).send().await.unwrap(),
        405,
        "method_not_allowed",
    )
    .await;
    expect_error(
        s.client.get(s.at("/v1/maps/x/path")).send().await.unwrap(),
        405,
        "method_not_allowed",
    )
    .await;
}

#[tokio::test]
async fn bundled_maps_are_served() {
    let dirs = crate::common::Dirs::new();
    dirs.bundle("arena2");
    std::fs::write(dirs.maps.join("broken.map"), "not a map").unwrap();
    let config = dirs.config();
    let s = TestServer::start(dirs, config).await;
    let pathd = s.pathd();
    let v = pathd.get_map("arena2", None).await.unwrap();
    assert_eq!((v.width, v.height), (281, 209));
    assert_eq!((v.source.as_str(), v.version), ("bundled", 1));
    api_error(pathd.get_map("broken", None).await, 404, "map_not_found");
    let v = pathd.ready().await.unwrap();
    assert_eq!(v["maps"].as_u64(), Some(1));
}

/// A single server has applied every version it acknowledged: `min_version` at or below the
/// map's version answers at once, above it is a version never written (`409`), and an
/// unknown map stays `404` (not a 5xx "replica behind").
#[tokio::test]
async fn min_version_on_a_single_server() {
    let s = TestServer::new().await;
    s.upload("small", crate::common::SMALL_MAP).await;
    let pathd = s.pathd();
    pathd.get_map("small", Some(1)).await.unwrap();
    api_error(
        pathd.get_map("small", Some(99)).await,
        409,
        "version_conflict",
    );
    api_error(pathd.get_map("nope", Some(3)).await, 404, "map_not_found");
    let q = PathRequest {
        min_version: Some(5),
        ..PathRequest::new([0, 0], [1, 0])
    };
    api_error(pathd.find_path("small", &q).await, 409, "version_conflict");
}

/// A deleted map's per-map gauges (its JPS+ table's and HPA* abstraction's memory) leave
/// `/metrics` with it, instead of reporting memory of a map that is gone. (A server
/// process of its own: the metrics registry is per process.)
#[tokio::test]
async fn deleting_a_map_drops_its_gauges() {
    let s = crate::common::ProcessServer::start().await;
    let mut text = String::from("type octile\nheight 64\nwidth 64\nmap\n");
    for y in 0..64 {
        let row: String = (0..64)
            .map(|x| if x == 32 && y < 60 { '@' } else { '.' })
            .collect();
        text.push_str(&row);
        text.push('\n');
    }
    let pathd = pathd_client::Client::new(&s.base);
    for name in ["gone", "kept"] {
        let (created, _) = pathd.put_map_text(name, &text).await.unwrap();
        assert!(created);
    }
    let series = |name: &str| format!("pathd_jps_plus_memory_bytes{{map=\"{name}\"}}");
    let mut metrics = String::new();
    for _ in 0..500 {
        metrics = s.metrics().await;
        if ["gone", "kept"]
            .iter()
            .all(|n| metrics.contains(&series(n)))
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(metrics.contains(&series("gone")), "{metrics}");
    pathd.delete_map("gone").await.unwrap();
    let metrics = s.metrics().await;
    assert!(
        !metrics.lines().any(|l| l.contains("map=\"gone\"") && {
            let family = l.split('{').next().unwrap_or("");
            metrics.contains(&format!("# TYPE {family} gauge"))
        }),
        "{metrics}"
    );
    assert!(metrics.contains(&series("kept")), "{metrics}");
}

/// A map deleted while its JPS+ table and HPA* abstraction are still being built in the
/// background: the builds finish, and the gauges of the map that is gone stay out of
/// `/metrics`. (A server process of its own: the metrics registry is per process.)
#[tokio::test]
async fn a_build_finishing_after_its_map_was_deleted_sets_no_gauge() {
    let s = crate::common::ProcessServer::start().await;
    let count = |metrics: &str, family: &str| -> u64 {
        metrics
            .lines()
            .find(|l| l.starts_with(&format!("{family}_count")))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let before = s.metrics().await;
    let families = ["pathd_jps_plus_build_seconds", "pathd_hpa_build_seconds"];
    // 1024 x 1024 cells: both builds start at once and take a while (a debug build).
    let mut text = String::from("type octile\nheight 1024\nwidth 1024\nmap\n");
    for y in 0..1024 {
        let row: String = (0..1024)
            .map(|x| {
                if x % 64 == 32 && y % 64 < 60 {
                    '@'
                } else {
                    '.'
                }
            })
            .collect();
        text.push_str(&row);
        text.push('\n');
    }
    let pathd = pathd_client::Client::new(&s.base);
    let (created, _) = pathd.put_map_text("brief", &text).await.unwrap();
    assert!(created);
    pathd.delete_map("brief").await.unwrap();
    // Wait for both builds to finish (their duration histograms count them).
    let mut metrics = String::new();
    for _ in 0..3000 {
        metrics = s.metrics().await;
        if families
            .iter()
            .all(|f| count(&metrics, f) > count(&before, f))
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for f in families {
        assert!(
            count(&metrics, f) > count(&before, f),
            "{f} never counted:\n{metrics}"
        );
    }
    assert!(
        !metrics.lines().any(|l| l.contains("map=\"brief\"")),
        "{metrics}"
    );
}
