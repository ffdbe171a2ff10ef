//! Conformance: real responses of every operation validate against `openapi.yaml`, and
//! every status a test sees is declared for its operation.

use std::collections::BTreeSet;

use crate::common::{Dirs, SMALL_MAP, TestServer, repo_file};
use serde_json::{Value, json};

struct Contract {
    spec: Value,
    seen: BTreeSet<String>,
}

impl Contract {
    /// The contract as these tests hold the server to it: every object schema closed
    /// (see [`close`]), so an answer's field the contract does not name fails here.
    fn load() -> Self {
        let mut spec = Self::raw();
        close(&mut spec);
        Contract {
            spec,
            seen: BTreeSet::new(),
        }
    }

    /// `openapi.yaml` as written (response schemas open to new fields).
    fn raw() -> Value {
        let text = std::fs::read_to_string(repo_file("openapi.yaml")).unwrap();
        let spec: Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(spec["openapi"].as_str().map(|v| &v[..3]), Some("3.2"));
        spec
    }

    fn resolve<'a>(&'a self, v: &'a Value) -> &'a Value {
        match v.get("$ref").and_then(Value::as_str) {
            Some(r) => {
                let ptr = r.strip_prefix('#').expect("local ref");
                self.resolve(
                    self.spec
                        .pointer(ptr)
                        .unwrap_or_else(|| panic!("dangling {r}")),
                )
            }
            None => v,
        }
    }

    fn operation_ids(&self) -> BTreeSet<String> {
        let mut ids = BTreeSet::new();
        for item in self.spec["paths"].as_object().unwrap().values() {
            for (method, op) in item.as_object().unwrap() {
                if method != "parameters" {
                    ids.insert(op["operationId"].as_str().unwrap().to_owned());
                }
            }
        }
        ids
    }

    /// Validates one real response of `method template`.
    async fn check(
        &mut self,
        method: &str,
        template: &str,
        resp: reqwest::Response,
    ) -> (u16, Value) {
        let status = resp.status().as_u16();
        let ct = resp.headers().get("content-type").map(|v| {
            v.to_str()
                .unwrap()
                .split(';')
                .next()
                .unwrap()
                .trim()
                .to_owned()
        });
        let text = resp.text().await.unwrap();
        let op = &self.spec["paths"][template][method];
        assert!(op.is_object(), "{method} {template} is not in the spec");
        let id = op["operationId"].as_str().unwrap().to_owned();
        let declared = self.resolve(&op["responses"][status.to_string()]).clone();
        assert!(
            declared.is_object(),
            "{id}: status {status} is not declared (body {text})"
        );
        let body = match declared.get("content") {
            None => {
                assert!(
                    text.is_empty(),
                    "{id} {status}: body where none is declared"
                );
                Value::Null
            }
            Some(content) => {
                let ct = ct.unwrap_or_else(|| panic!("{id} {status}: no content type"));
                let media = &content[&ct];
                assert!(
                    media.is_object(),
                    "{id} {status}: content type {ct} not declared"
                );
                let instance = match ct.as_str() {
                    "application/json" => serde_json::from_str(&text).unwrap(),
                    "application/yaml" => serde_yaml_ng::from_str(&text).unwrap(),
                    _ => Value::String(text.clone()),
                };
                let mut schema = media["schema"].clone();
                schema["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
                schema["components"] = self.spec["components"].clone();
                let validator = jsonschema::validator_for(&schema).unwrap();
                let errors: Vec<String> = validator
                    .iter_errors(&instance)
                    .map(|e| format!("{e} at {}", e.instance_path()))
                    .collect();
                assert!(errors.is_empty(), "{id} {status}: {errors:?}\nbody: {text}");
                instance
            }
        };
        self.seen.insert(id);
        (status, body)
    }
}

/// Closes every object schema of `v` that names its properties and says nothing of others
/// (`additionalProperties: false`). The contract leaves response schemas open so that a
/// client generated from it keeps working when the server adds a field; the server itself
/// must still document every field it writes, which is what these tests check. (No schema
/// of the contract combines objects with `allOf`, where this would be wrong.)
fn close(v: &mut Value) {
    match v {
        Value::Object(m) => {
            assert!(!m.contains_key("allOf"), "allOf: close() would be wrong");
            if m.get("properties").is_some_and(Value::is_object)
                && !m.contains_key("additionalProperties")
                && !m.contains_key("unevaluatedProperties")
            {
                m.insert("additionalProperties".into(), Value::Bool(false));
            }
            for (k, child) in m.iter_mut() {
                if k != "example" && k != "examples" {
                    close(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(close),
        _ => {}
    }
}

#[tokio::test]
async fn every_operation_matches_the_contract() {
    let mut c = Contract::load();
    let dirs = Dirs::new();
    dirs.bundle("arena2");
    let mut config = dirs.config();
    config.admin_token = Some("admin".into());
    config.query_token = Some("reader".into());
    config.pool_threads = 1;
    config.queue_depth = 0;
    config.max_maps = 3;
    config.max_batch = 4;
    config.max_body_bytes = 64 << 10;
    let s = TestServer::start(dirs, config).await;
    let cl = &s.client;
    let put = |name: &str| {
        cl.put(s.at(&format!("/v1/maps/{name}")))
            .bearer_auth("admin")
    };
    let m = "/v1/maps/{name}";

    assert_eq!(
        c.check(
            "put",
            m,
            put("small")
                .header("content-type", "text/plain")
                .body(SMALL_MAP)
                .send()
                .await
                .unwrap()
        )
        .await
        .0,
        201
    );
    assert_eq!(
        c.check(
            "put",
            m,
            put("small")
                .header("content-type", "text/plain")
                .body(SMALL_MAP)
                .send()
                .await
                .unwrap()
        )
        .await
        .0,
        200
    );
    let w = json!({"width": 2, "height": 1, "costs": [1, 7]});
    assert_eq!(
        c.check("put", m, put("w").json(&w).send().await.unwrap())
            .await
            .0,
        201
    );
    assert_eq!(
        c.check("put", m, put("x").json(&w).send().await.unwrap())
            .await
            .0,
        409
    );
    assert_eq!(
        c.check(
            "put",
            m,
            put("x").json(&json!({"width": 1})).send().await.unwrap()
        )
        .await
        .0,
        400
    );
    assert_eq!(
        c.check(
            "put",
            m,
            put("x")
                .header("content-type", "text/plain")
                .body("nope")
                .send()
                .await
                .unwrap()
        )
        .await
        .0,
        400
    );
    assert_eq!(
        c.check("put", m, put("x").body("x").send().await.unwrap())
            .await
            .0,
        415
    );
    assert_eq!(
        c.check(
            "put",
            m,
            put("x")
                .header("content-type", "text/plain")
                .body(vec![b'.'; 80 << 10])
                .send()
                .await
                .unwrap()
        )
        .await
        .0,
        413
    );
    assert_eq!(
        c.check(
            "put",
            m,
            cl.put(s.at("/v1/maps/x")).body("x").send().await.unwrap()
        )
        .await
        .0,
        401
    );

    let (_, v) = c
        .check(
            "get",
            "/v1/maps",
            cl.get(s.at("/v1/maps"))
                .bearer_auth("reader")
                .send()
                .await
                .unwrap(),
        )
        .await;
    assert_eq!(v["maps"].as_array().unwrap().len(), 3);
    assert_eq!(
        c.check(
            "get",
            "/v1/maps",
            cl.get(s.at("/v1/maps")).send().await.unwrap()
        )
        .await
        .0,
        401
    );
    let get = |name: &str| {
        cl.get(s.at(&format!("/v1/maps/{name}")))
            .bearer_auth("reader")
    };
    assert_eq!(
        c.check("get", m, get("arena2").send().await.unwrap())
            .await
            .0,
        200
    );
    assert_eq!(
        c.check(
            "get",
            m,
            get("arena2")
                .header("accept", "text/plain")
                .send()
                .await
                .unwrap()
        )
        .await
        .0,
        200
    );
    assert_eq!(
        c.check(
            "get",
            m,
            get("w")
                .header("accept", "text/plain")
                .send()
                .await
                .unwrap()
        )
        .await
        .0,
        406
    );
    assert_eq!(
        c.check("get", m, get("nope").send().await.unwrap()).await.0,
        404
    );
    // A name that is not UTF-8 once decoded: a JSON 400, like every rejection.
    assert_eq!(
        c.check("get", m, get("%ff").send().await.unwrap()).await.0,
        400
    );
    assert_eq!(
        c.check("get", m, cl.get(s.at("/v1/maps/w")).send().await.unwrap())
            .await
            .0,
        401
    );

    let p = "/v1/maps/{name}/path";
    let path = |name: &str, body: Value| {
        cl.post(s.at(&format!("/v1/maps/{name}/path")))
            .bearer_auth("reader")
            .json(&body)
    };
    for body in [
        json!({"start": [0, 0], "goal": [4, 0]}),
        json!({"start": [0, 0], "goal": [4, 0], "debug": true, "algorithm": "auto"}),
        json!({"start": [0, 0], "goal": [4, 0], "max_expansions": 2}),
        json!({"start": [0, 0], "goal": [4, 0], "algorithm": "theta"}),
        json!({"start": [0, 0], "goal": [4, 0], "algorithm": "jps", "smooth": true}),
        json!({"start": [0, 0], "goal": [4, 0], "max_expansions": 2, "partial": true}),
        json!({"start": [0, 0], "goal": [4, 0], "algorithm": "weighted_astar", "weight": 3}),
        json!({"start": [0, 0], "goal": [4, 0], "trace": true}),
        json!({"start": [0, 0], "goal": [4, 0], "trace": true, "algorithm": "theta"}),
        json!({"start": [0, 0], "goal": [0, 0], "trace": true}),
        json!({"start": [0, 0], "goals": [[4, 0], [1, 2]]}),
        json!({"start": [0, 0], "goals": [[4, 0]], "max_expansions": 1}),
        json!({"start": [0, 0], "goal": [4, 0], "goal_radius": 1.5, "goal_visible": true}),
        json!({"start": [0, 0], "flee": {"from": [1, 0], "distance": 3}}),
        json!({"start": [2, 0], "goal": [4, 0], "snap": 1}),
    ] {
        assert_eq!(
            c.check("post", p, path("small", body).send().await.unwrap())
                .await
                .0,
            200
        );
    }
    for body in [
        json!({"start": [0, 0], "goal": [40, 0]}),
        json!({"start": [2, 0], "goal": [4, 0]}),
        json!({"start": [0, 0], "goal": [2, 1]}),
        json!({"start": [0, 0], "goal": [4, 0], "algorithm": "weighted_astar", "weight": 0.5}),
        json!({"start": [0, 0], "goal": [4, 0], "bogus": 1}),
        json!({"start": [0, 0]}),
        json!({"start": [0, 0], "goal": [4, 0], "goals": [[4, 0]]}),
        json!({"start": [0, 0], "goals": vec![[4, 0]; 1025]}),
        json!({"start": [0, 0], "goals": [[4, 0]], "algorithm": "jps"}),
    ] {
        assert_eq!(
            c.check("post", p, path("small", body).send().await.unwrap())
                .await
                .0,
            400
        );
    }
    assert_eq!(
        c.check(
            "post",
            p,
            path("nope", json!({"start": [0, 0], "goal": [0, 0]}))
                .send()
                .await
                .unwrap()
        )
        .await
        .0,
        404
    );
    let raw = cl
        .post(s.at("/v1/maps/small/path"))
        .bearer_auth("reader")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(c.check("post", p, raw).await.0, 415);
    let huge = cl
        .post(s.at("/v1/maps/small/path"))
        .bearer_auth("reader")
        .header("content-type", "application/json")
        .body(vec![b' '; 80 << 10])
        .send()
        .await
        .unwrap();
    assert_eq!(c.check("post", p, huge).await.0, 413);
    assert_eq!(
        c.check(
            "post",
            p,
            cl.post(s.at("/v1/maps/small/path"))
                .json(&json!({}))
                .send()
                .await
                .unwrap()
        )
        .await
        .0,
        401
    );

    let b = "/v1/maps/{name}/paths";
    let batch = |body: Value| {
        cl.post(s.at("/v1/maps/small/paths"))
            .bearer_auth("reader")
            .json(&body)
    };
    let q = json!({"start": [0, 0], "goal": [4, 0]});
    let (_, v) = c
        .check(
            "post",
            b,
            batch(json!({"queries": [q, {"start": [9, 9], "goal": [0, 0]}]}))
                .send()
                .await
                .unwrap(),
        )
        .await;
    assert_eq!(v["results"][1]["error"]["code"], "out_of_bounds");
    assert_eq!(
        c.check(
            "post",
            b,
            batch(json!({"queries": [q, q, q, q, q]}))
                .send()
                .await
                .unwrap()
        )
        .await
        .0,
        413
    );
    assert_eq!(
        c.check("post", b, batch(json!({"query": []})).send().await.unwrap())
            .await
            .0,
        400
    );
    let nope = cl
        .post(s.at("/v1/maps/nope/paths"))
        .bearer_auth("reader")
        .json(&json!({"queries": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(c.check("post", b, nope).await.0, 404);

    // Overload: 503 with Retry-After on every operation that needs a worker.
    let hold = s.state.compute().hold(1).await.unwrap();
    assert_eq!(
        c.check("post", p, path("small", q.clone()).send().await.unwrap())
            .await
            .0,
        503
    );
    assert_eq!(
        c.check(
            "post",
            b,
            batch(json!({"queries": [q]})).send().await.unwrap()
        )
        .await
        .0,
        503
    );
    assert_eq!(
        c.check(
            "put",
            m,
            put("small")
                .header("content-type", "text/plain")
                .body(SMALL_MAP)
                .send()
                .await
                .unwrap()
        )
        .await
        .0,
        503
    );
    assert_eq!(
        c.check(
            "get",
            m,
            get("arena2")
                .header("accept", "text/plain")
                .send()
                .await
                .unwrap()
        )
        .await
        .0,
        503
    );
    drop(hold);

    for (route, status) in [
        ("/healthz", 200),
        ("/readyz", 200),
        ("/metrics", 200),
        ("/openapi.yaml", 200),
    ] {
        assert_eq!(
            c.check("get", route, cl.get(s.at(route)).send().await.unwrap())
                .await
                .0,
            status
        );
    }

    let del = |name: &str| cl.delete(s.at(&format!("/v1/maps/{name}")));
    assert_eq!(
        c.check(
            "delete",
            m,
            del("%ff").bearer_auth("admin").send().await.unwrap()
        )
        .await
        .0,
        400
    );
    assert_eq!(
        c.check("delete", m, del("w").send().await.unwrap()).await.0,
        401
    );
    assert_eq!(
        c.check(
            "delete",
            m,
            del("w").bearer_auth("admin").send().await.unwrap()
        )
        .await
        .0,
        204
    );
    assert_eq!(
        c.check(
            "delete",
            m,
            del("w").bearer_auth("admin").send().await.unwrap()
        )
        .await
        .0,
        404
    );

    // Live maps: patches first (no subscription yet, so no repair holds the one worker).
    let pm = |body: Value| {
        cl.patch(s.at("/v1/maps/small"))
            .bearer_auth("admin")
            .json(&body)
    };
    for (req, status) in [
        (pm(json!({"cells": [{"x": 0, "y": 2, "cost": 3}]})), 200),
        (pm(json!({"cells": [{"x": 0, "y": 2, "cost": 300}]})), 400),
        (pm(json!({"cells": [{"x": 9, "y": 2, "cost": 1}]})), 422),
        (pm(json!({"cells": [], "if_version": 1})), 409),
        (
            pm(json!({"rects": [{"x": 0, "y": 0, "width": 4096, "height": 4096, "cost": 1}]})),
            413,
        ),
        (cl.patch(s.at("/v1/maps/small")).json(&json!({})), 401),
        (
            cl.patch(s.at("/v1/maps/nope"))
                .bearer_auth("admin")
                .json(&json!({})),
            404,
        ),
    ] {
        assert_eq!(
            c.check("patch", m, req.send().await.unwrap()).await.0,
            status
        );
    }
    let sp = "/v1/maps/{name}/subscriptions";
    let sub = |name: &str, body: Value| {
        cl.post(s.at(&format!("/v1/maps/{name}/subscriptions")))
            .bearer_auth("reader")
            .json(&body)
    };
    let q = json!({"start": [0, 0], "goal": [4, 0]});
    let (status, created) = c
        .check("post", sp, sub("small", q.clone()).send().await.unwrap())
        .await;
    assert_eq!(status, 201);
    let id = created["id"].as_str().unwrap().to_owned();
    let secret = created["secret"].as_str().unwrap().to_owned();
    for (req, status) in [
        (sub("small", json!({"start": [2, 0], "goal": [4, 0]})), 400),
        (sub("nope", q.clone()), 404),
        (cl.post(s.at("/v1/maps/small/subscriptions")).json(&q), 401),
    ] {
        assert_eq!(
            c.check("post", sp, req.send().await.unwrap()).await.0,
            status
        );
    }
    let one = "/v1/subscriptions/{id}";
    let at = |id: &str| s.at(&format!("/v1/subscriptions/{id}"));
    for (req, status) in [
        (cl.get(at(&id)).bearer_auth("reader"), 200),
        (cl.get(at("nope")).bearer_auth("reader"), 404),
        (cl.get(at("%ff")).bearer_auth("reader"), 400),
        (cl.get(at(&id)), 401),
    ] {
        assert_eq!(
            c.check("get", one, req.send().await.unwrap()).await.0,
            status
        );
    }
    let mv = |id: &str, p: Value| {
        cl.patch(at(id))
            .bearer_auth("reader")
            .header("x-subscription-secret", &secret)
            .json(&json!({"position": p}))
    };
    for (req, status) in [
        (mv(&id, json!([1, 2])), 200),
        (mv(&id, json!([2, 0])), 400),
        (mv("nope", json!([1, 2])), 404),
        (cl.patch(at(&id)).json(&json!({"position": [1, 2]})), 401),
        (
            cl.patch(at(&id))
                .bearer_auth("reader")
                .json(&json!({"position": [1, 2]})),
            403,
        ),
    ] {
        assert_eq!(
            c.check("patch", one, req.send().await.unwrap()).await.0,
            status
        );
    }
    // The stream's `200` never ends, so its frames are checked in tests/live.rs; here its
    // JSON error answers.
    let ev = "/v1/subscriptions/{id}/events";
    for (req, status) in [
        (
            cl.get(s.at("/v1/subscriptions/nope/events"))
                .bearer_auth("reader"),
            404,
        ),
        (cl.get(format!("{}/events", at(&id))), 401),
    ] {
        assert_eq!(
            c.check("get", ev, req.send().await.unwrap()).await.0,
            status
        );
    }
    let del = |id: &str| {
        cl.delete(at(id))
            .bearer_auth("reader")
            .header("x-subscription-secret", &secret)
    };
    for (req, status) in [
        (cl.delete(at(&id)), 401),
        (cl.delete(at(&id)).bearer_auth("reader"), 403),
        (cl.delete(at("%ff")).bearer_auth("reader"), 400),
        (del(&id), 204),
        (del(&id), 404),
    ] {
        assert_eq!(
            c.check("delete", one, req.send().await.unwrap()).await.0,
            status
        );
    }

    let fp = "/v1/maps/{name}/flowfields";
    let ff = |name: &str, body: Value| {
        cl.post(s.at(&format!("/v1/maps/{name}/flowfields")))
            .bearer_auth("reader")
            .json(&body)
    };
    let (status, created) = c
        .check(
            "post",
            fp,
            ff("small", json!({"goal": [4, 0]})).send().await.unwrap(),
        )
        .await;
    assert_eq!(status, 201);
    let fid = created["id"].as_str().unwrap().to_owned();
    let fsecret = created["secret"].as_str().unwrap().to_owned();
    for (req, status) in [
        (ff("small", json!({"goal": [2, 0]})), 400),
        (ff("nope", json!({"goal": [4, 0]})), 404),
        (cl.post(s.at("/v1/maps/small/flowfields")).json(&q), 401),
    ] {
        assert_eq!(
            c.check("post", fp, req.send().await.unwrap()).await.0,
            status
        );
    }
    let fone = "/v1/flowfields/{id}";
    let fat = |id: &str| s.at(&format!("/v1/flowfields/{id}"));
    // A patch reaches the field: its next GET holds an event.
    assert_eq!(
        c.check(
            "patch",
            m,
            pm(json!({"cells": [{"x": 0, "y": 2, "cost": 1}]}))
                .send()
                .await
                .unwrap()
        )
        .await
        .0,
        200
    );
    // The patch's repair of the field runs on the pool's one worker with no queue, so a GET
    // that arrives while it runs is `503 overloaded` (documented, and checked against the
    // contract too); it is asked again until the repair has let go of the worker.
    let mut got = 503;
    for _ in 0..200 {
        let resp = cl
            .get(fat(&fid))
            .bearer_auth("reader")
            .send()
            .await
            .unwrap();
        got = c.check("get", fone, resp).await.0;
        if got != 503 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(got, 200);
    for (req, status) in [
        (cl.get(fat("nope")).bearer_auth("reader"), 404),
        (cl.get(fat("%ff")).bearer_auth("reader"), 400),
        (cl.get(fat(&fid)), 401),
    ] {
        assert_eq!(
            c.check("get", fone, req.send().await.unwrap()).await.0,
            status
        );
    }
    let fev = "/v1/flowfields/{id}/events";
    for (req, status) in [
        (
            cl.get(s.at("/v1/flowfields/nope/events"))
                .bearer_auth("reader"),
            404,
        ),
        (cl.get(format!("{}/events", fat(&fid))), 401),
    ] {
        assert_eq!(
            c.check("get", fev, req.send().await.unwrap()).await.0,
            status
        );
    }
    let fdel = |id: &str| {
        cl.delete(fat(id))
            .bearer_auth("reader")
            .header("x-flowfield-secret", &fsecret)
    };
    for (req, status) in [
        (cl.delete(fat(&fid)), 401),
        (cl.delete(fat(&fid)).bearer_auth("reader"), 403),
        (fdel(&fid), 204),
        (fdel(&fid), 404),
    ] {
        assert_eq!(
            c.check("delete", fone, req.send().await.unwrap()).await.0,
            status
        );
    }

    let cells = "/v1/maps/{name}/cells";
    let get_cells = |name: &str| {
        cl.get(s.at(&format!("/v1/maps/{name}/cells")))
            .bearer_auth("reader")
    };
    for (req, status) in [
        (get_cells("small"), 200),
        (
            get_cells("small").header("accept", "application/octet-stream"),
            200,
        ),
        (get_cells("nope"), 404),
        (cl.get(s.at("/v1/maps/small/cells")), 401),
    ] {
        assert_eq!(
            c.check("get", cells, req.send().await.unwrap()).await.0,
            status
        );
    }

    let ph = "/v1/maps/{name}/posthoc";
    let posthoc = |name: &str, body: Value| {
        cl.post(s.at(&format!("/v1/maps/{name}/posthoc")))
            .bearer_auth("reader")
            .json(&body)
    };
    for (req, status) in [
        (
            posthoc("small", json!({"start": [0, 0], "goal": [4, 0]})),
            200,
        ),
        (
            posthoc("small", json!({"start": [2, 0], "goal": [4, 0]})),
            400,
        ),
        (
            posthoc("nope", json!({"start": [0, 0], "goal": [4, 0]})),
            404,
        ),
        (
            cl.post(s.at("/v1/maps/small/posthoc"))
                .json(&json!({"start": [0, 0], "goal": [4, 0]})),
            401,
        ),
    ] {
        assert_eq!(
            c.check("post", ph, req.send().await.unwrap()).await.0,
            status
        );
    }

    let pl = "/v1/maps/{name}/plans";
    let plans = |name: &str, body: Value| {
        cl.post(s.at(&format!("/v1/maps/{name}/plans")))
            .bearer_auth("reader")
            .json(&body)
    };
    let two = json!({"agents": [{"start": [0, 0], "goal": [4, 0]}, {"start": [4, 0], "goal": [0, 0]}],
        "time_limit_ms": 200});
    let many: Vec<Value> = (0..2001)
        .map(|_| json!({"start": [0, 0], "goal": [4, 0]}))
        .collect();
    for (req, status) in [
        (plans("small", two.clone()), 200),
        (
            plans(
                "small",
                json!({"agents": [{"start": [2, 0], "goal": [4, 0]}]}),
            ),
            400,
        ),
        (plans("small", json!({"agents": many})), 413),
        (plans("nope", two.clone()), 404),
        (cl.post(s.at("/v1/maps/small/plans")).json(&two), 401),
    ] {
        assert_eq!(
            c.check("post", pl, req.send().await.unwrap()).await.0,
            status
        );
    }

    // A live plan: created, read, progressed, followed, deleted.
    let mut live = two.clone();
    live["subscribe"] = json!(true);
    let (status, created) = c
        .check("post", pl, plans("small", live).send().await.unwrap())
        .await;
    assert_eq!(status, 201);
    let pid = created["id"].as_str().unwrap().to_owned();
    let psecret = created["secret"].as_str().unwrap().to_owned();
    let pone = "/v1/plans/{id}";
    let pat = |id: &str| s.at(&format!("/v1/plans/{id}"));
    for (req, status) in [
        (cl.get(pat(&pid)).bearer_auth("reader"), 200),
        (cl.get(pat("nope")).bearer_auth("reader"), 404),
        (cl.get(pat(&pid)), 401),
    ] {
        assert_eq!(
            c.check("get", pone, req.send().await.unwrap()).await.0,
            status
        );
    }
    let prog = |id: &str, body: Value| {
        cl.patch(pat(id))
            .bearer_auth("reader")
            .header("x-plan-secret", &psecret)
            .json(&body)
    };
    for (req, status) in [
        (prog(&pid, json!({"time_step": 1})), 200),
        (prog(&pid, json!({"time_step": 0})), 400),
        (prog("nope", json!({"time_step": 1})), 404),
        (
            cl.patch(pat(&pid))
                .bearer_auth("reader")
                .json(&json!({"time_step": 2})),
            403,
        ),
        (cl.patch(pat(&pid)).json(&json!({"time_step": 2})), 401),
    ] {
        assert_eq!(
            c.check("patch", pone, req.send().await.unwrap()).await.0,
            status
        );
    }
    let pev = "/v1/plans/{id}/events";
    for (req, status) in [
        (
            cl.get(s.at("/v1/plans/nope/events")).bearer_auth("reader"),
            404,
        ),
        (cl.get(format!("{}/events", pat(&pid))), 401),
        (
            cl.get(format!("{}/events", pat(&pid)))
                .bearer_auth("reader")
                .header("last-event-id", "x"),
            400,
        ),
    ] {
        assert_eq!(
            c.check("get", pev, req.send().await.unwrap()).await.0,
            status
        );
    }
    let pdel = |id: &str| {
        cl.delete(pat(id))
            .bearer_auth("reader")
            .header("x-plan-secret", &psecret)
    };
    for (req, status) in [
        (cl.delete(pat(&pid)), 401),
        (cl.delete(pat(&pid)).bearer_auth("reader"), 403),
        (pdel(&pid), 204),
        (pdel(&pid), 404),
    ] {
        assert_eq!(
            c.check("delete", pone, req.send().await.unwrap()).await.0,
            status
        );
    }

    let mx = "/v1/maps/{name}/matrix";
    let post = |name: &str, what: &str, body: Value| {
        cl.post(s.at(&format!("/v1/maps/{name}/{what}")))
            .bearer_auth("reader")
            .json(&body)
    };
    let table = json!({"sources": [[0, 0], [2, 0]], "targets": [[4, 0], [0, 0]]});
    let wide: Vec<Value> = (0..257).map(|_| json!([0, 0])).collect();
    for (req, status) in [
        (post("small", "matrix", table.clone()), 200),
        (
            post("small", "matrix", json!({"sources": wide, "targets": []})),
            400,
        ),
        (post("nope", "matrix", table.clone()), 404),
        (cl.post(s.at("/v1/maps/small/matrix")).json(&table), 401),
    ] {
        assert_eq!(
            c.check("post", mx, req.send().await.unwrap()).await.0,
            status
        );
    }
    let ls = "/v1/maps/{name}/los";
    for (req, status) in [
        (
            post("small", "los", json!({"from": [0, 0], "to": [4, 0]})),
            200,
        ),
        (
            post("small", "los", json!({"from": [0, 0], "to": [0, 2]})),
            200,
        ),
        (
            post("small", "los", json!({"from": [0, 0], "to": [9, 0]})),
            400,
        ),
        (
            post("nope", "los", json!({"from": [0, 0], "to": [0, 2]})),
            404,
        ),
    ] {
        assert_eq!(
            c.check("post", ls, req.send().await.unwrap()).await.0,
            status
        );
    }
    let rn = "/v1/maps/{name}/random";
    let get = |path: &str| cl.get(s.at(path)).bearer_auth("reader");
    for (req, status) in [
        (get("/v1/maps/small/random?x=0&y=0&radius=3&seed=1"), 200),
        (get("/v1/maps/small/random?x=2&y=0&radius=3"), 400),
        (get("/v1/maps/nope/random?x=0&y=0&radius=3"), 404),
        (cl.get(s.at("/v1/maps/small/random?x=0&y=0&radius=3")), 401),
    ] {
        assert_eq!(
            c.check("get", rn, req.send().await.unwrap()).await.0,
            status
        );
    }
    let nr = "/v1/maps/{name}/nearest";
    let near = |url: &str| cl.get(s.at(url)).bearer_auth("reader");
    for (req, status) in [
        (near("/v1/maps/small/nearest?x=2&y=0&radius=1"), 200),
        (near("/v1/maps/small/nearest?x=0&y=0&size=2"), 200),
        (near("/v1/maps/small/nearest?x=2&y=0&radius=0"), 404),
        (near("/v1/maps/small/nearest?x=9&y=0"), 400),
        (near("/v1/maps/small/nearest?x=0&y=0&radius=65"), 400),
        (near("/v1/maps/small/nearest?x=0"), 400),
        (near("/v1/maps/nope/nearest?x=0&y=0"), 404),
        (cl.get(s.at("/v1/maps/small/nearest?x=0&y=0")), 401),
    ] {
        assert_eq!(
            c.check("get", nr, req.send().await.unwrap()).await.0,
            status
        );
    }

    assert_eq!(c.seen, c.operation_ids(), "every operation is exercised");
}

#[tokio::test]
async fn not_ready_matches_the_contract() {
    use axum::body::Body;
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let c = Contract::load();
    let dir = tempfile::TempDir::new().unwrap();
    let state = pathd::AppState::new(pathd::Config::with_dirs(
        dir.path().join("m"),
        dir.path().join("d"),
    ))
    .unwrap();
    let resp = pathd::app(state)
        .oneshot(
            axum::http::Request::get("/readyz")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(resp.status(), 503);
    let body: Value =
        serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    let mut schema = c.spec["paths"]["/readyz"]["get"]["responses"]["503"]["content"]["application/json"]["schema"].clone();
    schema["components"] = c.spec["components"].clone();
    assert!(
        jsonschema::validator_for(&schema).unwrap().is_valid(&body),
        "{body}"
    );
}

/// Error codes are one enum in the server; the contract lists exactly those.
#[test]
fn error_codes_are_the_enum_of_the_contract() {
    let spec = Contract::load();
    let listed: BTreeSet<String> = spec.spec["components"]["schemas"]["Error"]["properties"]
        ["error"]["properties"]["code"]["enum"]
        .as_array()
        .expect("the Error schema lists its codes")
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    let server: BTreeSet<String> = pathd::http::error::ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_owned())
        .collect();
    assert_eq!(listed, server);
    assert_eq!(
        server.len(),
        pathd::http::error::ErrorCode::ALL.len(),
        "codes are distinct"
    );
}

/// Asserts that `body` is a valid `200` answer of `GET path` per `openapi.yaml` (for
/// responses other modules get from processes of their own, e.g. replicas).
#[cfg(feature = "nats")]
pub(crate) fn assert_get_200_matches(path: &str, body: &Value) {
    let c = Contract::load();
    let schema =
        c.spec["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
            .clone();
    assert!(!schema.is_null(), "no 200 JSON answer of GET {path}");
    let errors = schema_errors(&c, schema, body);
    assert!(errors.is_empty(), "GET {path}: {errors:?}\n{body}");
}

/// Asserts that `value` validates against `components.schemas.<name>` of the contract (for
/// payloads that no response check sees whole, such as SSE events and HPA* traces).
pub(crate) fn assert_schema(name: &str, value: &Value) {
    let c = Contract::load();
    let mut schema = json!({"$ref": format!("#/components/schemas/{name}")});
    schema["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    let errors = schema_errors(&c, schema, value);
    assert!(errors.is_empty(), "{name}: {errors:?}\n{value}");
}

/// What is wrong with `value` under `schema`, which may refer to the contract's components.
fn schema_errors(c: &Contract, mut schema: Value, value: &Value) -> Vec<String> {
    schema["components"] = c.spec["components"].clone();
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// The component schemas `v` refers to, directly or through others (`$ref`s followed).
fn referenced(spec: &Value, v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                if k == "$ref" {
                    let r = child.as_str().unwrap();
                    if let Some(name) = r.strip_prefix("#/components/schemas/") {
                        let name = name.split('/').next().unwrap();
                        if out.insert(name.to_owned()) {
                            referenced(spec, &spec["components"]["schemas"][name], out);
                        }
                    } else {
                        let target = spec.pointer(r.strip_prefix('#').unwrap()).unwrap();
                        referenced(spec, target, out);
                    }
                } else if k != "example" && k != "examples" && k != "links" {
                    referenced(spec, child, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| referenced(spec, i, out)),
        _ => {}
    }
}

/// Whether `v` closes an object schema anywhere, not looking through `$ref`s.
fn closes_somewhere(v: &Value) -> bool {
    match v {
        Value::Object(m) => {
            m.get("additionalProperties") == Some(&Value::Bool(false))
                || m.iter()
                    .any(|(k, c)| k != "example" && k != "examples" && closes_somewhere(c))
        }
        Value::Array(items) => items.iter().any(closes_somewhere),
        _ => false,
    }
}

/// A client generated from the contract must keep working when an answer gains a field:
/// no schema that only answers use is closed (`additionalProperties: false`), and no
/// answer's inline schema is. Request schemas stay strict (an unknown field is `400`).
#[test]
fn response_schemas_are_open_and_request_schemas_strict() {
    let spec = Contract::raw();
    let (mut requests, mut responses) = (BTreeSet::new(), BTreeSet::new());
    for item in spec["paths"].as_object().unwrap().values() {
        for (method, op) in item.as_object().unwrap() {
            if method == "parameters" {
                continue;
            }
            referenced(&spec, &op["requestBody"], &mut requests);
            referenced(&spec, &op["parameters"], &mut requests);
            referenced(&spec, &op["responses"], &mut responses);
            for (status, resp) in op["responses"].as_object().unwrap() {
                assert!(
                    !closes_somewhere(resp),
                    "{} {status}: an inline answer schema is closed",
                    op["operationId"]
                );
            }
        }
    }
    let schemas = spec["components"]["schemas"].as_object().unwrap();
    for name in responses.difference(&requests) {
        assert!(
            !closes_somewhere(&schemas[name]),
            "{name} is only answered, yet closed: a new field would break strict clients"
        );
    }
    for name in [
        "PathRequest",
        "BatchRequest",
        "MapPatch",
        "FlowFieldRequest",
        "PlanRequest",
    ] {
        assert_eq!(
            schemas[name]["additionalProperties"],
            Value::Bool(false),
            "{name} stays strict"
        );
    }
    assert!(responses.contains("PathResult") && responses.contains("BatchError"));
}

/// Every operation shows what it takes and what it answers: each request body's media
/// types and each success answer with a body have an example, and so do the shared error
/// answers; every example is valid under its schema as these tests read it (closed), and
/// every JSON example of an event stream's frames parses as its event schema.
#[test]
fn every_operation_has_examples_that_match_the_contract() {
    let c = Contract::load();
    let mut checked = 0;
    let mut check = |what: &str, media_type: &str, media: &Value| {
        let examples: Vec<Value> = match (media.get("example"), media.get("examples")) {
            (Some(e), _) => vec![e.clone()],
            (None, Some(es)) => es
                .as_object()
                .unwrap()
                .values()
                .map(|e| c.resolve(e)["value"].clone())
                .collect(),
            (None, None) => panic!("{what} {media_type}: no example"),
        };
        for ex in examples {
            match media_type {
                "application/json" => {
                    let errors = schema_errors(&c, media["schema"].clone(), &ex);
                    assert!(errors.is_empty(), "{what}: {errors:?}\n{ex}");
                }
                "text/event-stream" => {
                    // OpenAPI 3.2: `itemSchema` is one frame (`id`, `event`, `data`); the
                    // frame's `data` carries the typed event as JSON (`contentSchema`).
                    let frame_schema = c.resolve(&media["itemSchema"]).clone();
                    assert_eq!(frame_schema["type"], "object", "{what}: itemSchema");
                    let schema = frame_schema["properties"]["data"]["contentSchema"].clone();
                    assert!(schema.get("$ref").is_some(), "{what}: a typed event");
                    let mut frames = pathd_client::Frames::default();
                    frames.push(ex.as_str().unwrap().as_bytes());
                    frames.push(b"\n\n");
                    let mut n = 0;
                    while let Some(frame) = frames.next_frame() {
                        let data = frame.data.expect("a data line");
                        assert_eq!(
                            frame.id,
                            serde_json::from_str::<Value>(&data).unwrap()["seq"]
                                .as_u64()
                                .map(|s| s.to_string()),
                            "{what}: id is seq"
                        );
                        let mut as_sent = json!({"data": data});
                        if let Some(id) = &frame.id {
                            as_sent["id"] = json!(id);
                        }
                        let errors = schema_errors(&c, frame_schema.clone(), &as_sent);
                        assert!(errors.is_empty(), "{what}: frame {errors:?}\n{as_sent}");
                        let event: Value = serde_json::from_str(&data).unwrap();
                        let errors = schema_errors(&c, schema.clone(), &event);
                        assert!(errors.is_empty(), "{what}: {errors:?}\n{event}");
                        n += 1;
                    }
                    assert!(n > 0, "{what}: no data line");
                }
                _ => assert!(ex.is_string() || ex.is_object(), "{what} {media_type}"),
            }
            checked += 1;
        }
    };
    for item in c.spec["paths"].as_object().unwrap().values() {
        for (method, op) in item.as_object().unwrap() {
            if method == "parameters" {
                continue;
            }
            let id = op["operationId"].as_str().unwrap();
            if let Some(content) = op["requestBody"]["content"].as_object() {
                for (ct, media) in content {
                    check(&format!("{id} request"), ct, media);
                }
            }
            for (status, resp) in op["responses"].as_object().unwrap() {
                let resp = c.resolve(resp);
                let Some(content) = resp["content"].as_object() else {
                    continue;
                };
                for (ct, media) in content {
                    if status.starts_with('2') && ct != "application/octet-stream" {
                        check(&format!("{id} {status}"), ct, media);
                    }
                }
            }
        }
    }
    for (name, resp) in c.spec["components"]["responses"].as_object().unwrap() {
        check(
            name,
            "application/json",
            &resp["content"]["application/json"],
        );
    }
    assert!(checked > 50, "{checked} examples");
}
