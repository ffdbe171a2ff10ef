//! Patches are durable: a restart replays them to exactly the last acknowledged version
//! (uploaded and bundled maps, through log compaction), and a torn last record is ignored.

use std::io::Write;

use crate::common::{Dirs, TestServer, rects_patch};
use pathd_client::{CellChange, MapPatch, PathRequest};
use serde_json::{Value, json};

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

/// Summary and a few queries that depend on every patched cell.
async fn fingerprint(s: &TestServer, map: &str, queries: &[PathRequest]) -> Value {
    let summary = s.pathd().get_map(map, None).await.unwrap();
    let mut costs = Vec::new();
    for q in queries {
        let v = s.pathd().find_path(map, q).await.unwrap();
        costs.push(json!([v.status, v.cost, v.path, v.map_version]));
    }
    json!({"version": summary.version, "blocked": summary.blocked_cells,
           "max_cost": summary.max_cost, "min_cost": summary.min_cost, "paths": costs})
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
    s.upload_json("u", &map).await;
    s.patch_ok("u", &rects_patch(&[[10, 0, 1, 30, 0]])).await;
    for i in 0..60u32 {
        let version = patch_cells(&s, "u", &[(i % 32, i / 32 * 2 + 5, 2 + i % 7)]).await;
        assert_eq!(version, u64::from(i) + 3);
    }
    // A bundled map: its first patch writes a snapshot, later ones go to the log.
    s.patch_ok("arena2", &rects_patch(&[[0, 0, 49, 49, 1]]))
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
    s.upload_json("m", &map).await;
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
    let m = s.pathd().get_map("m", None).await.unwrap();
    assert_eq!((m.version, m.max_cost), (4, 9));
}
