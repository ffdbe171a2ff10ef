//! Patches are durable: a restart replays them to exactly the last acknowledged version
//! (uploaded and bundled maps, through log compaction), and a torn last record is ignored.

use std::io::Write;

use crate::common::{Dirs, TestServer, json};
use pathd_client::{CellChange, MapPatch, PathRequest};
use serde_json::{Value, json};

/// `PATCH` with a JSON body, raw: the client's `MapPatch` carries no `rects`.
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

/// Sets cells `(x, y, cost)`; the map's new version.
async fn patch_cells(s: &TestServer, map: &str, cells: &[(u32, u32, u32)]) -> u64 {
    let p = MapPatch {
        cells: (cells.iter())
            .map(|&(x, y, cost)| CellChange { x, y, cost })
            .collect(),
        if_version: None,
        ..Default::default()
    };
    s.pathd().patch_map(map, &p).await.unwrap().version
}

/// Summary and a few queries that depend on every patched cell. (The summary raw: its
/// `blocked_cells`, `max_cost` and `min_cost` are not in the client's `MapSummary`.)
async fn fingerprint(s: &TestServer, map: &str, queries: &[PathRequest]) -> Value {
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
        let v = s.pathd().find_path(map, q).await.unwrap();
        costs.push(json!([v.status, v.cost, v.path, v.map_version]));
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
        let version = patch_cells(&s, "u", &[(i % 32, i / 32 * 2 + 5, 2 + i % 7)]).await;
        assert_eq!(version, u64::from(i) + 3);
    }
    // A bundled map: its first patch writes a snapshot, later ones go to the log.
    patch_ok(
        &s,
        "arena2",
        json!({"rects": [{"x": 0, "y": 0, "width": 49, "height": 49, "cost": 1}]}),
    )
    .await;
    patch_cells(&s, "arena2", &[(20, 20, 0), (21, 20, 7)]).await;
    let uq = [
        PathRequest::new([0, 31], [31, 0]),
        PathRequest::new([0, 5], [31, 7]),
    ];
    let aq = [
        PathRequest::new([1, 1], [40, 40]),
        PathRequest::new([20, 19], [20, 21]),
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
    assert_eq!(patch_cells(&s, "u", &[(0, 0, 0)]).await, 63);
    s.stop().await.unwrap();
    let s = TestServer::start(dirs.share(), config).await;
    assert_eq!(s.pathd().get_map("u", None).await.unwrap().version, 63);
}

#[tokio::test]
async fn a_torn_last_record_is_ignored_and_cut_off() {
    let dirs = Dirs::new();
    let config = dirs.config();
    let s = TestServer::start(dirs.share(), config.clone()).await;
    let map = json!({"width": 64, "height": 64, "costs": vec![1; 64 * 64]});
    assert_eq!(s.put_json("m", &map).await.status(), 201);
    patch_cells(&s, "m", &[(1, 1, 0)]).await;
    patch_cells(&s, "m", &[(2, 2, 9)]).await;
    let q = [PathRequest::new([0, 0], [3, 3])];
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
    assert_eq!(patch_cells(&s, "m", &[(3, 3, 5)]).await, 4);
    s.stop().await.unwrap();
    let s = TestServer::start(dirs.share(), config).await;
    // Raw: `max_cost` is not in the client's `MapSummary`.
    let (_, m) = json(s.client.get(s.at("/v1/maps/m")).send().await.unwrap()).await;
    assert_eq!(
        (m["version"].as_u64(), m["max_cost"].as_u64()),
        (Some(4), Some(9))
    );
}
