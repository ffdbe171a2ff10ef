//! The bytes of path answers (src/http/wire/, and the engine's path building beneath it):
//! the same query gets the same bytes from build to build, and the request parse that
//! tracks its place only on a failure names the same place as one that always tracked.

use serde_json::{Value, json};

use crate::common::{Dirs, TestServer};

/// The answers `golden_queries` got, one a line (single queries in order, then the batch
/// of them all), `elapsed_us` and request ids masked: written by the build before the
/// block cell writer and the run-at-a-time path filling.
const GOLDEN: &str = include_str!("../data/wire/arena2.golden");

/// arena2 corner to corner (the wire benchmark's ends) in every path format, with
/// waypoints, smoothing, expanded cells and an error item.
fn golden_queries() -> Vec<Value> {
    let (from, to) = (json!([5, 100]), json!([250, 190]));
    vec![
        json!({"start": from, "goal": to, "algorithm": "jps"}),
        json!({"start": from, "goal": to, "algorithm": "jps", "path_format": "flat"}),
        json!({"start": from, "goal": to, "algorithm": "jps", "path_format": "turns"}),
        json!({"start": from, "goal": [30, 99], "algorithm": "astar", "debug": true}),
        json!({"start": from, "goal": to, "algorithm": "theta", "path_format": "turns"}),
        json!({"start": from, "goal": to, "algorithm": "jps", "smooth": true, "path_format": "flat"}),
        json!({"start": [9999, 0], "goal": to}),
    ]
}

/// `bytes` with every `"elapsed_us":N` made `"elapsed_us":0` and every request id `-`.
fn masked(bytes: &[u8]) -> String {
    let text = std::str::from_utf8(bytes).expect("UTF-8 JSON");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let at = [("\"elapsed_us\":", 0), ("\"request_id\":\"", 1)]
            .into_iter()
            .filter_map(|(key, kind)| rest.find(key).map(|i| (i, key, kind)))
            .min();
        let Some((i, key, kind)) = at else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..i + key.len()]);
        rest = &rest[i + key.len()..];
        if kind == 0 {
            out.push('0');
            rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
        } else {
            out.push_str("-\"");
            let end = rest.find('"').expect("a closed string");
            rest = &rest[end + 1..];
        }
    }
}

async fn arena2() -> TestServer {
    let dirs = Dirs::new();
    dirs.bundle("arena2");
    let config = dirs.config();
    TestServer::start(dirs, config).await
}

async fn post(s: &TestServer, path: &str, body: &Value) -> (u16, Vec<u8>) {
    let resp = s.client.post(s.at(path)).json(body).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.bytes().await.unwrap().to_vec())
}

#[tokio::test]
async fn answers_are_the_bytes_they_were() {
    let s = arena2().await;
    let queries = golden_queries();
    let want: Vec<&str> = GOLDEN.lines().collect();
    assert_eq!(want.len(), queries.len() + 1, "one line per answer");
    for (i, q) in queries.iter().enumerate() {
        let (status, body) = post(&s, "/v1/maps/arena2/path", q).await;
        let expected = if i + 1 == queries.len() { 400 } else { 200 };
        assert_eq!(status, expected, "query {i}: {}", masked(&body));
        assert_eq!(masked(&body), want[i], "query {i}: {q}");
    }
    let (status, body) = post(&s, "/v1/maps/arena2/paths", &json!({ "queries": queries })).await;
    assert_eq!(status, 200, "{}", masked(&body));
    assert_eq!(masked(&body), want[queries.len()], "the batch");
    s.stop().await.unwrap();
}

/// Bodies the path routes refuse, and what they answer: the messages the build that
/// always tracked the parse's place gave (recorded from it).
const REFUSED: &[(&str, &str, &str)] = &[
    (
        "path",
        r#"{"start": [5, "x"], "goal": [6, 100]}"#,
        r#"Failed to deserialize the JSON body into the target type: start[1]: invalid type: string "x", expected u32 at line 1 column 17"#,
    ),
    (
        "path",
        r#"{"start": [5, 100], "goal": [6, 100], "size": null}"#,
        r#"Failed to deserialize the JSON body into the target type: size: null is not a value here: leave the field out for its default at line 1 column 51"#,
    ),
    (
        "path",
        r#"{"start": [5, 100], "goal": [6, 100], "flee": {"from": [1, 1], "distance": "far"}}"#,
        r#"Failed to deserialize the JSON body into the target type: flee.distance: invalid type: string "far", expected f64 at line 1 column 80"#,
    ),
    (
        "path",
        r#"{"start": [5, 100], "goal": [6, 100], "no_such_field": 1}"#,
        r#"Failed to deserialize the JSON body into the target type: no_such_field: unknown field `no_such_field`, expected one of `min_version`, `start`, `goal`, `profile`, `algorithm`, `weight`, `max_expansions`, `timeout_ms`, `partial`, `debug`, `smooth`, `trace`, `path_format`, `size`, `heuristic`, `tie_break`, `goals`, `goal_radius`, `goal_visible`, `flee`, `snap` at line 1 column 53"#,
    ),
    (
        "path",
        r#"{"start": [5, 100]}"#,
        r#"a path query names exactly one of goal, goals and flee"#,
    ),
    (
        "path",
        r#"{"start": [5, 100"#,
        r#"Failed to parse the request body as JSON: EOF while parsing a list at line 1 column 17"#,
    ),
    (
        "paths",
        r#"{"queries": [{"start": [5, 100], "goal": [6, 100]}, {"start": [5, -1], "goal": [6, 100]}]}"#,
        r#"Failed to deserialize the JSON body into the target type: queries[1].start[1]: invalid value: integer `-1`, expected u32 at line 1 column 68"#,
    ),
    (
        "paths",
        r#"{"queries": [{"start": [5, 100], "goal": [6, 100], "goals": [[1, 2], [3]]}]}"#,
        r#"Failed to deserialize the JSON body into the target type: queries[0].goals[1]: invalid length 1, expected an array of length 2 at line 1 column 72"#,
    ),
    (
        "paths",
        r#"{"min_version": "7", "queries": []}"#,
        r#"Failed to deserialize the JSON body into the target type: min_version: invalid type: string "7", expected a non-negative integer at line 1 column 19"#,
    ),
    (
        "paths",
        r#"{"queries": [{"start": [5, 100], "goal": [6, 100], "algorithm": 3}]}"#,
        r#"Failed to deserialize the JSON body into the target type: queries[0].algorithm: invalid type: integer `3`, expected a string at line 1 column 65"#,
    ),
    (
        "paths",
        r#"{"queries": [], "extra": 1}"#,
        r#"Failed to deserialize the JSON body into the target type: extra: unknown field `extra`, expected `queries` or `min_version` at line 1 column 23"#,
    ),
    (
        "paths",
        r#"{"start": [5, 100"#,
        r#"Failed to deserialize the JSON body into the target type: start: unknown field `start`, expected `queries` or `min_version` at line 1 column 8"#,
    ),
];

#[tokio::test]
async fn parse_errors_name_the_place_a_tracked_parse_names() {
    let s = arena2().await;
    for &(route, body, want) in REFUSED {
        let resp = s
            .client
            .post(s.at(&format!("/v1/maps/arena2/{route}")))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 400, "{route} {body}");
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["error"]["code"], "invalid_request", "{route} {body}: {v}");
        assert_eq!(v["error"]["message"], want, "{route} {body}");
    }
    s.stop().await.unwrap();
}
