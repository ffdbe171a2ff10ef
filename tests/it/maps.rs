//! Map routes over a real server: create, replace, read, list, delete, and their errors.

use crate::common::{SMALL_MAP, TestServer, expect_error, json};
use serde_json::json;

#[tokio::test]
async fn create_replace_read_list_delete() {
    let s = TestServer::new().await;
    let resp = s.put_text("small", SMALL_MAP).await;
    assert_eq!(resp.headers()["location"], "/v1/maps/small");
    let (st, v) = json(resp).await;
    assert_eq!(st, 201, "{v}");
    assert_eq!(v["name"], "small");
    assert_eq!(v["version"], 1);
    assert_eq!(
        (v["width"].as_u64(), v["height"].as_u64()),
        (Some(5), Some(3))
    );
    assert_eq!(v["movement"], "octile");
    assert_eq!(v["passable_cells"], 13);
    assert_eq!(v["blocked_cells"], 2);
    assert_eq!(v["components"], 1);
    assert_eq!(v["source"], "uploaded");

    // Replacing answers 200 with the next version.
    let (st, v) = json(s.put_text("small", SMALL_MAP).await).await;
    assert_eq!((st, v["version"].as_u64()), (200, Some(2)));

    let (st, v) = json(s.client.get(s.at("/v1/maps/small")).send().await.unwrap()).await;
    assert_eq!((st, v["version"].as_u64()), (200, Some(2)));

    // As a Moving AI file.
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

    let (_, v) = json(s.client.get(s.at("/v1/maps")).send().await.unwrap()).await;
    let names: Vec<_> = v["maps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].clone())
        .collect();
    assert_eq!(names, vec![json!("small")]);

    let resp = s
        .client
        .delete(s.at("/v1/maps/small"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
    expect_error(
        s.client.get(s.at("/v1/maps/small")).send().await.unwrap(),
        404,
        "map_not_found",
    )
    .await;
    expect_error(
        s.client
            .delete(s.at("/v1/maps/small"))
            .send()
            .await
            .unwrap(),
        404,
        "map_not_found",
    )
    .await;

    // Re-created: the version continues past the deleted one.
    let (st, v) = json(s.put_text("small", SMALL_MAP).await).await;
    assert_eq!((st, v["version"].as_u64()), (201, Some(3)));
}

#[tokio::test]
async fn json_bodies_costs_rows_and_movement() {
    let s = TestServer::new().await;
    let (st, v) = json(
        s.put_json(
            "w",
            &json!({"width": 3, "height": 2, "costs": [1, 5, 0, 2, 255, 1], "movement": "cardinal"}),
        )
        .await,
    )
    .await;
    assert_eq!(st, 201, "{v}");
    assert_eq!(v["movement"], "cardinal");
    assert_eq!(
        (v["min_cost"].as_u64(), v["max_cost"].as_u64()),
        (Some(1), Some(255))
    );
    assert_eq!(v["uniform"], false);
    assert_eq!(v["passable_cells"], 5);

    let (st, v) = json(
        s.put_json(
            "r",
            &json!({"width": 3, "height": 2, "rows": ["..@", "T.G"]}),
        )
        .await,
    )
    .await;
    assert_eq!(st, 201, "{v}");
    assert_eq!(
        (v["passable_cells"].as_u64(), v["uniform"].as_bool()),
        (Some(4), Some(true))
    );
    assert_eq!(v["movement"], "octile");

    // ?movement= overrides a text file's type line.
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
    let resp = s
        .client
        .get(s.at("/v1/maps/w"))
        .header("accept", "text/plain")
        .send()
        .await
        .unwrap();
    expect_error(resp, 406, "not_acceptable").await;
}

#[tokio::test]
async fn upload_errors() {
    let s = TestServer::new().await;
    for bad in [".hidden", "has space", "a%2Fb", "x".repeat(65).as_str()] {
        expect_error(s.put_text(bad, SMALL_MAP).await, 400, "invalid_request").await;
    }
    expect_error(
        s.put_text("m", "type octile\nheight 2\nwidth 2\nmap\n..\n.x\n")
            .await,
        400,
        "invalid_map",
    )
    .await;
    expect_error(s.put_text("m", "hello").await, 400, "invalid_map").await;
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
        expect_error(s.put_json("m", &body).await, 400, "invalid_map").await;
    }
    let bad_request = [
        json!({"width": 2, "height": 1, "costs": [1, 1], "extra": true}),
        json!({"width": "2", "height": 1, "costs": [1, 1]}),
        json!({"width": 2, "height": 1, "costs": [1, 1], "movement": "hex"}),
        json!([1, 2]),
    ];
    for body in bad_request {
        expect_error(s.put_json("m", &body).await, 400, "invalid_request").await;
    }
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
    let (_, v) = json(s.client.get(s.at("/v1/maps")).send().await.unwrap()).await;
    assert_eq!(v["maps"], json!([]));
}

#[tokio::test]
async fn size_limits() {
    let dirs = crate::common::Dirs::new();
    let mut config = dirs.config();
    config.max_body_bytes = 4096;
    config.max_map_cells = 100;
    config.max_maps = 2;
    let s = TestServer::start(dirs, config).await;
    let big = format!(
        "type octile\nheight 1\nwidth 5000\nmap\n{}\n",
        ".".repeat(5000)
    );
    expect_error(s.put_text("big", &big).await, 413, "payload_too_large").await;
    let wide = format!(
        "type octile\nheight 1\nwidth 101\nmap\n{}\n",
        ".".repeat(101)
    );
    expect_error(s.put_text("wide", &wide).await, 413, "map_too_large").await;
    expect_error(
        s.put_json("wide", &json!({"width": 11, "height": 10, "rows": []}))
            .await,
        413,
        "map_too_large",
    )
    .await;
    assert_eq!(s.put_text("a", SMALL_MAP).await.status(), 201);
    assert_eq!(s.put_text("b", SMALL_MAP).await.status(), 201);
    expect_error(s.put_text("c", SMALL_MAP).await, 409, "too_many_maps").await;
    // Replacing is still fine at the limit.
    assert_eq!(s.put_text("b", SMALL_MAP).await.status(), 200);
}

#[tokio::test]
async fn unknown_routes_and_methods() {
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
    let (st, v) = json(s.client.get(s.at("/v1/maps/arena2")).send().await.unwrap()).await;
    assert_eq!(st, 200);
    assert_eq!(
        (v["width"].as_u64(), v["height"].as_u64()),
        (Some(281), Some(209))
    );
    assert_eq!(
        (v["source"].as_str(), v["version"].as_u64()),
        (Some("bundled"), Some(1))
    );
    expect_error(
        s.client.get(s.at("/v1/maps/broken")).send().await.unwrap(),
        404,
        "map_not_found",
    )
    .await;
    let (st, v) = json(s.client.get(s.at("/readyz")).send().await.unwrap()).await;
    assert_eq!((st, v["maps"].as_u64()), (200, Some(1)));
}

/// A single server has applied every version it acknowledged: `min_version` at or below the
/// map's version answers at once, above it is a version never written (`409`), and an
/// unknown map stays `404` (not a 5xx "replica behind").
#[tokio::test]
async fn min_version_on_a_single_server() {
    let s = TestServer::new().await;
    assert_eq!(
        s.put_text("small", crate::common::SMALL_MAP).await.status(),
        201
    );
    let get = |q: &str| s.client.get(s.at(&format!("/v1/maps/{q}"))).send();
    assert_eq!(get("small?min_version=1").await.unwrap().status(), 200);
    expect_error(
        get("small?min_version=99").await.unwrap(),
        409,
        "version_conflict",
    )
    .await;
    expect_error(
        get("nope?min_version=3").await.unwrap(),
        404,
        "map_not_found",
    )
    .await;
    let q = serde_json::json!({"start": [0, 0], "goal": [1, 0], "min_version": 5});
    expect_error(s.path("small", &q).await, 409, "version_conflict").await;
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
    for name in ["gone", "kept"] {
        assert_eq!(s.put_text(name, &text).await, 201);
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
    let r = s.client.delete(s.at("/v1/maps/gone")).send().await.unwrap();
    assert_eq!(r.status(), 204);
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
    assert_eq!(s.put_text("brief", &text).await, 201);
    let r = s
        .client
        .delete(s.at("/v1/maps/brief"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
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
