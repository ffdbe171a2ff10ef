//! Patches are durable: a restart replays them to exactly the last acknowledged version
//! (uploaded and bundled maps, through log compaction), and a torn last record is ignored.

use std::io::Write;

use crate::common::{Dirs, TestServer, json};
use serde_json::{Value, json};

async fn patch_ok(s: &TestServer, map: &str, body: Value) -> Value {
    let r = s
        .client
        .patch(s.at(&format!("/v1/maps/{map}")))
        .json(&body)
        .send()
        .await
        .unwrap();
    let (status, v) = json(r).await;
    assert_eq!(status, 200, "{v}");
    v
}

/// Summary and a few queries that depend on every patched cell.
async fn fingerprint(s: &TestServer, map: &str, queries: &[Value]) -> Value {
    let (_, summary) = json(
        s.client
            .get(s.at(&format!("/v1/maps/{map}")))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let mut costs = Vec::new();
    for q in queries {
        let (_, v) = json(s.path(map, q).await).await;
        costs.push(json!([v["status"], v["cost"], v["path"], v["map_version"]]));
    }
    json!({"version": summary["version"], "blocked": summary["blocked_cells"],
           "max_cost": summary["max_cost"], "min_cost": summary["min_cost"], "paths": costs})
}

#[tokio::test]
async fn restart_replays_patches_to_the_same_version_and_cells() {
    let dirs = Dirs::new();
    dirs.bundle("arena2");
    let config = dirs.config();
    let s = TestServer::start(dirs.share(), config.clone()).await;
    // 32x32 = 1024 cells: the log is compacted into a snapshot once it outgrows 1 KiB
    // (about 40 single-cell records), so 60 patches go through a compaction.
    let map = json!({"width": 32, "height": 32, "costs": vec![1; 1024]});
    assert_eq!(s.put_json("u", &map).await.status(), 201);
    patch_ok(
        &s,
        "u",
        json!({"rects": [{"x": 10, "y": 0, "width": 1, "height": 30, "cost": 0}]}),
    )
    .await;
    for i in 0..60u32 {
        let v = patch_ok(
            &s,
            "u",
            json!({"cells": [{"x": i % 32, "y": i / 32 * 2 + 5, "cost": 2 + i % 7}]}),
        )
        .await;
        assert_eq!(v["version"], i + 3);
    }
    // A bundled map: its first patch writes a snapshot, later ones go to the log.
    patch_ok(
        &s,
        "arena2",
        json!({"rects": [{"x": 0, "y": 0, "width": 49, "height": 49, "cost": 1}]}),
    )
    .await;
    patch_ok(
        &s,
        "arena2",
        json!({"cells": [{"x": 20, "y": 20, "cost": 0}, {"x": 21, "y": 20, "cost": 7}]}),
    )
    .await;
    let uq = [
        json!({"start": [0, 31], "goal": [31, 0]}),
        json!({"start": [0, 5], "goal": [31, 7]}),
    ];
    let aq = [
        json!({"start": [1, 1], "goal": [40, 40]}),
        json!({"start": [20, 19], "goal": [20, 21]}),
    ];
    let (u_before, a_before) = (
        fingerprint(&s, "u", &uq).await,
        fingerprint(&s, "arena2", &aq).await,
    );
    assert_eq!(u_before["version"], 62);
    assert_eq!(a_before["version"], 3);
    let log = dirs.data.join("u.plog");
    assert!(log.exists(), "recent patches are in the log");
    assert!(
        std::fs::metadata(&log).unwrap().len() < 1024,
        "the log was compacted"
    );
    s.stop().await.unwrap();

    let s = TestServer::start(dirs.share(), config.clone()).await;
    assert_eq!(fingerprint(&s, "u", &uq).await, u_before);
    assert_eq!(fingerprint(&s, "arena2", &aq).await, a_before);
    // And patching continues from there.
    let v = patch_ok(&s, "u", json!({"cells": [{"x": 0, "y": 0, "cost": 0}]})).await;
    assert_eq!(v["version"], 63);
    s.stop().await.unwrap();
    let s = TestServer::start(dirs.share(), config).await;
    let (_, m) = json(s.client.get(s.at("/v1/maps/u")).send().await.unwrap()).await;
    assert_eq!(m["version"], 63);
}

#[tokio::test]
async fn a_torn_last_record_is_ignored_and_cut_off() {
    let dirs = Dirs::new();
    let config = dirs.config();
    let s = TestServer::start(dirs.share(), config.clone()).await;
    let map = json!({"width": 64, "height": 64, "costs": vec![1; 64 * 64]});
    assert_eq!(s.put_json("m", &map).await.status(), 201);
    patch_ok(&s, "m", json!({"cells": [{"x": 1, "y": 1, "cost": 0}]})).await;
    patch_ok(&s, "m", json!({"cells": [{"x": 2, "y": 2, "cost": 9}]})).await;
    let q = [json!({"start": [0, 0], "goal": [3, 3]})];
    let before = fingerprint(&s, "m", &q).await;
    s.stop().await.unwrap();
    // A crash in the middle of appending the next record: a length, a checksum, half a
    // payload.
    let log = dirs.data.join("m.plog");
    let good = std::fs::metadata(&log).unwrap().len();
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    f.write_all(&[21, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 4, 0, 0])
        .unwrap();
    drop(f);

    let s = TestServer::start(dirs.share(), config.clone()).await;
    assert_eq!(fingerprint(&s, "m", &q).await, before);
    assert_eq!(
        std::fs::metadata(&log).unwrap().len(),
        good,
        "the torn tail is cut off"
    );
    let v = patch_ok(&s, "m", json!({"cells": [{"x": 3, "y": 3, "cost": 5}]})).await;
    assert_eq!(v["version"], 4);
    s.stop().await.unwrap();
    let s = TestServer::start(dirs.share(), config).await;
    let (_, m) = json(s.client.get(s.at("/v1/maps/m")).send().await.unwrap()).await;
    assert_eq!(
        (m["version"].as_u64(), m["max_cost"].as_u64()),
        (Some(4), Some(9))
    );
}
