//! The server reads requests as `openapi.yaml` describes them (the findings of a
//! schemathesis run, issue 24): an integral float is an integer, `null` is not a value of
//! an optional field, a version past every one is a version never written (`409`), and an
//! over-long batch is answered with the status the contract declares for it.

use serde_json::{Value, json};

use crate::common::{SMALL_MAP, TestServer, expect_error, json};

async fn server() -> TestServer {
    let s = TestServer::new().await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    s
}

async fn send(s: &TestServer, method: &str, path: &str, body: &Value) -> reqwest::Response {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    s.client
        .request(method, s.at(path))
        .json(body)
        .send()
        .await
        .unwrap()
}

/// JSON Schema's `integer` is the mathematical one, so `3.0` and `1e3` are integers: a
/// client whose numbers are all doubles writes them so, and schemathesis sends them.
/// Every body with integers takes them; a fraction is still refused.
#[tokio::test]
async fn integral_floats_are_integers_wherever_the_contract_says_integer() {
    let s = server().await;
    let (st, v) = json(
        send(
            &s,
            "POST",
            "/v1/maps/small/path",
            &json!({"start": [0.0, 0.0], "goal": [4.0, 0e0], "size": 1.0,
                    "max_expansions": 1e3, "timeout_ms": 14535332.0, "snap": 0.0}),
        )
        .await,
    )
    .await;
    assert_eq!((st, &v["status"]), (200, &json!("found")), "{v}");
    assert_eq!(v["path"][0], json!([0, 0]));

    let (st, v) = json(
        send(
            &s,
            "POST",
            "/v1/maps/small/paths",
            &json!({"min_version": 1.0, "queries": [{"start": [0.0, 2.0], "goal": [4, 2.0]}]}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (st, &v["results"][0]["status"]),
        (200, &json!("found")),
        "{v}"
    );

    for (path, body) in [
        (
            "/v1/maps/small/matrix",
            json!({"sources": [[0.0, 0.0]], "targets": [[4.0, 0.0]], "timeout_ms": 1e3}),
        ),
        (
            "/v1/maps/small/los",
            json!({"from": [0.0, 2.0], "to": [4.0, 2.0], "min_version": 1.0}),
        ),
        (
            "/v1/maps/small/plans",
            json!({"agents": [{"start": [0.0, 0.0], "goal": [1.0, 0.0]}], "seed": 7.0,
                   "time_limit_ms": 100.0}),
        ),
    ] {
        let (st, v) = json(send(&s, "POST", path, &body).await).await;
        assert_eq!(st, 200, "{path}: {v}");
    }

    let (st, v) = json(
        send(
            &s,
            "POST",
            "/v1/maps/small/flowfields",
            &json!({"goal": [4.0, 0.0], "size": 1.0,
                    "region": {"x": 0.0, "y": 0.0, "width": 5.0, "height": 3.0}}),
        )
        .await,
    )
    .await;
    assert_eq!((st, &v["region"]["width"]), (201, &json!(5)), "{v}");

    let (st, sub) = json(
        send(
            &s,
            "POST",
            "/v1/maps/small/subscriptions",
            &json!({"start": [0.0, 0.0], "goal": [4.0, 0.0]}),
        )
        .await,
    )
    .await;
    assert_eq!(st, 201, "{sub}");
    let moved = s
        .client
        .patch(s.at(&format!(
            "/v1/subscriptions/{}",
            sub["id"].as_str().unwrap()
        )))
        .header("x-subscription-secret", sub["secret"].as_str().unwrap())
        .json(&json!({"position": [1.0, 1.0]}))
        .send()
        .await
        .unwrap();
    let (st, v) = json(moved).await;
    assert_eq!((st, &v["position"]), (200, &json!([1, 1])), "{v}");

    let (st, v) = json(
        send(
            &s,
            "PATCH",
            "/v1/maps/small",
            &json!({"cells": [{"x": 0.0, "y": 1.0, "cost": 3.0}], "if_version": 1.0,
                    "rects": [{"x": 3.0, "y": 0.0, "width": 1.0, "height": 1.0, "cost": 2.0}]}),
        )
        .await,
    )
    .await;
    assert_eq!((st, &v["changed_cells"]), (200, &json!(2)), "{v}");

    let (st, v) = json(
        s.put_json(
            "floats",
            &json!({"width": 2.0, "height": 1.0, "costs": [1.0, 7e0]}),
        )
        .await,
    )
    .await;
    assert_eq!((st, &v["max_cost"]), (201, &json!(7)), "{v}");

    // A fraction is not an integer, nor is a number past 64 bits one the field can hold.
    for body in [
        json!({"start": [0.5, 0], "goal": [4, 0]}),
        json!({"start": [0, 0], "goal": [4, 0], "size": 1.5}),
        json!({"start": [1e10, 0], "goal": [4, 0]}),
    ] {
        let v = expect_error(
            send(&s, "POST", "/v1/maps/small/path", &body).await,
            400,
            "invalid_request",
        )
        .await;
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("Failed to deserialize"),
            "{v}"
        );
    }
}

/// The contract's optional fields are absent or of their type: `null` is refused
/// (`400 invalid_request` naming the field), as the contract refuses it, rather than read
/// as absent. Where `null` has a meaning (a patch's profile entry: remove it), it keeps it.
#[tokio::test]
async fn null_is_refused_where_the_contract_has_no_null() {
    let s = server().await;
    for (method, path, body, field) in [
        (
            "POST",
            "/v1/maps/small/path",
            json!({"start": [0, 0], "goal": [4, 0], "size": null}),
            "size",
        ),
        (
            "POST",
            "/v1/maps/small/path",
            json!({"start": [0, 0], "goal": [4, 0], "algorithm": null}),
            "algorithm",
        ),
        (
            "POST",
            "/v1/maps/small/paths",
            json!({"queries": [{"start": [0, 0], "goal": null}]}),
            "queries[0].goal",
        ),
        (
            "POST",
            "/v1/maps/small/paths",
            json!({"min_version": null, "queries": []}),
            "min_version",
        ),
        (
            "PATCH",
            "/v1/maps/small",
            json!({"cells": [], "if_version": null}),
            "if_version",
        ),
        (
            "POST",
            "/v1/maps/small/flowfields",
            json!({"goal": [4, 0], "profile": null}),
            "profile",
        ),
        (
            "POST",
            "/v1/maps/small/los",
            json!({"from": [0, 0], "to": [4, 0], "profile": null}),
            "profile",
        ),
        (
            "POST",
            "/v1/maps/small/matrix",
            json!({"sources": [], "targets": [], "size": null}),
            "size",
        ),
        (
            "POST",
            "/v1/maps/small/subscriptions",
            json!({"start": [0, 0], "goal": [4, 0], "timeout_ms": null}),
            "timeout_ms",
        ),
    ] {
        let v = expect_error(send(&s, method, path, &body).await, 400, "invalid_request").await;
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("{field}: null is not a value here")),
            "{method} {path}: {message}"
        );
    }
    // The map did not change: the refused patch was not applied.
    let (_, v) = json(s.client.get(s.at("/v1/maps/small")).send().await.unwrap()).await;
    assert_eq!(v["version"], 1);

    // `null` removes a profile.
    let (st, v) = json(
        send(
            &s,
            "PATCH",
            "/v1/maps/small",
            &json!({"profiles": {"boat": [0, 2]}}),
        )
        .await,
    )
    .await;
    assert_eq!(st, 200, "{v}");
    let (st, v) = json(
        send(
            &s,
            "PATCH",
            "/v1/maps/small",
            &json!({"profiles": {"boat": null}}),
        )
        .await,
    )
    .await;
    assert_eq!(st, 200, "{v}");
    let (_, v) = json(s.client.get(s.at("/v1/maps/small")).send().await.unwrap()).await;
    let names: Vec<&Value> = v["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["name"])
        .collect();
    assert_eq!(
        names,
        [&json!("ground")],
        "the Moving AI map's own profile only: {v}"
    );
}

/// `min_version` (and `if_version`) has no maximum in the contract: a version past every
/// one there can be is, as the docs of `min_version` say of any version newer than the
/// map's, a version never written - `409 version_conflict`, in a body or a query, however
/// many digits it has. Budgets past the server's maximum are capped to it, not refused.
#[tokio::test]
async fn a_version_past_every_version_is_a_version_conflict() {
    let s = server().await;
    let huge = "100000000000000000000000000000";
    let max = u64::MAX.to_string();
    for n in [huge, max.as_str(), "18446744073709551616", "1e30"] {
        for (method, path, body) in [
            (
                "POST",
                "/v1/maps/small/path",
                format!(r#"{{"start": [0, 0], "goal": [4, 0], "min_version": {n}}}"#),
            ),
            (
                "POST",
                "/v1/maps/small/paths",
                format!(r#"{{"min_version": {n}, "queries": []}}"#),
            ),
            (
                "POST",
                "/v1/maps/small/paths",
                format!(
                    r#"{{"queries": [{{"start": [0, 0], "goal": [4, 0], "min_version": {n}}}]}}"#
                ),
            ),
            (
                "POST",
                "/v1/maps/small/los",
                format!(r#"{{"from": [0, 0], "to": [4, 0], "min_version": {n}}}"#),
            ),
            (
                "POST",
                "/v1/maps/small/matrix",
                format!(r#"{{"sources": [], "targets": [], "min_version": {n}}}"#),
            ),
            (
                "POST",
                "/v1/maps/small/plans",
                format!(
                    r#"{{"agents": [{{"start": [0, 0], "goal": [1, 0]}}], "min_version": {n}}}"#
                ),
            ),
            (
                "POST",
                "/v1/maps/small/subscriptions",
                format!(r#"{{"start": [0, 0], "goal": [4, 0], "min_version": {n}}}"#),
            ),
            (
                "PATCH",
                "/v1/maps/small",
                format!(r#"{{"if_version": {n}}}"#),
            ),
        ] {
            let resp = s
                .client
                .request(
                    reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                    s.at(path),
                )
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            let v = expect_error(resp, 409, "version_conflict").await;
            assert!(v["error"]["message"].is_string(), "{body}");
        }
    }
    for n in [huge, max.as_str()] {
        for path in [
            format!("/v1/maps/small?min_version={n}"),
            format!("/v1/maps/small/random?x=0&y=0&radius=2&min_version={n}"),
        ] {
            let resp = s.client.get(s.at(&path)).send().await.unwrap();
            expect_error(resp, 409, "version_conflict").await;
        }
    }
    // Capped, not refused.
    let body = format!(
        r#"{{"start": [0, 0], "goal": [4, 0], "max_expansions": {huge}, "timeout_ms": {huge}}}"#
    );
    let resp = s
        .client
        .post(s.at("/v1/maps/small/path"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let (st, v) = json(resp).await;
    assert_eq!((st, &v["status"]), (200, &json!("found")), "{v}");
    let resp = s
        .client
        .get(s.at(&format!(
            "/v1/maps/small/random?x=0&y=0&radius=2&timeout_ms={huge}"
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    // Still integers: a fraction or a negative number is refused.
    for n in ["1.5", "-1"] {
        let resp = s
            .client
            .post(s.at("/v1/maps/small/path"))
            .header("content-type", "application/json")
            .body(format!(
                r#"{{"start": [0, 0], "goal": [4, 0], "min_version": {n}}}"#
            ))
            .send()
            .await
            .unwrap();
        expect_error(resp, 400, "invalid_request").await;
    }
    let resp = s
        .client
        .get(s.at("/v1/maps/small?min_version=-1"))
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "invalid_request").await;
}

/// A batch's size limit is the server's configuration (`PATHD_MAX_BATCH`), not a shape the
/// contract can give the request, so the contract sets `queries` no `maxItems` (which
/// would promise `400` for a schema violation) and declares the `413 too_many_queries`
/// the server answers.
#[tokio::test]
async fn an_over_long_batch_is_answered_as_the_contract_says() {
    let text = std::fs::read_to_string(crate::common::repo_file("openapi.yaml")).unwrap();
    let spec: Value = serde_yaml_ng::from_str(&text).unwrap();
    let queries = &spec["components"]["schemas"]["BatchRequest"]["properties"]["queries"];
    assert!(queries.is_object());
    assert!(
        queries.get("maxItems").is_none(),
        "a maxItems promises 400 for a longer batch; the server answers 413"
    );
    let declared = &spec["paths"]["/v1/maps/{name}/paths"]["post"]["responses"]["413"];
    assert_eq!(declared["$ref"], "#/components/responses/TooLarge");

    let s = server().await;
    let max = s.state.config().max_batch;
    let q = json!({"start": [0, 0], "goal": [4, 0]});
    let over: Vec<Value> = (0..=max).map(|_| q.clone()).collect();
    let resp = send(
        &s,
        "POST",
        "/v1/maps/small/paths",
        &json!({"queries": over}),
    )
    .await;
    expect_error(resp, 413, "too_many_queries").await;
    let full: Vec<Value> = (0..max).map(|_| q.clone()).collect();
    let (st, v) = json(
        send(
            &s,
            "POST",
            "/v1/maps/small/paths",
            &json!({"queries": full}),
        )
        .await,
    )
    .await;
    assert_eq!(
        (st, v["results"].as_array().map(Vec::len)),
        (200, Some(max))
    );
}

/// A batch item says which it is in `status` (the contract's discriminator): a result's
/// outcome, or `error` beside the error of that query alone.
#[tokio::test]
async fn batch_items_say_whether_they_are_results_or_errors() {
    let s = server().await;
    let (st, v) = json(
        send(
            &s,
            "POST",
            "/v1/maps/small/paths",
            &json!({"queries": [
                {"start": [0, 0], "goal": [4, 0]},
                {"start": [9, 9], "goal": [0, 0]},
                {"start": [0, 0], "goal": [2, 0]},
                {"start": [0, 0], "goal": [4, 0], "max_expansions": 0},
            ]}),
        )
        .await,
    )
    .await;
    assert_eq!(st, 200, "{v}");
    let statuses: Vec<&Value> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["status"])
        .collect();
    assert_eq!(
        statuses,
        [
            &json!("found"),
            &json!("error"),
            &json!("error"),
            &json!("limit_reached")
        ],
        "{v}"
    );
    assert_eq!(v["results"][1]["error"]["code"], "out_of_bounds");
    assert_eq!(v["results"][2]["error"]["code"], "goal_blocked");
    crate::openapi::assert_schema("BatchResponse", &v);
}
