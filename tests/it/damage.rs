//! Damaged data is never served silently: a bad record in the middle of a patch log, a bad
//! log header and a bad snapshot (of a patched bundled map) each mark the map `damaged`:
//! not served as an older version, writes refused with `503 map_damaged`, reported by the
//! map list, `/readyz` and `/metrics`, and by `pathd data check`; `pathd data repair`
//! drops only on request, saying which acknowledged versions go. (On the code before the
//! maps service, the first case served version 3 and deleted 17 acknowledged patches with a
//! warning, the second deleted the whole log, the third served the bundled version 1.)

use std::path::Path;
use std::process::Command;

use crate::common::{Dirs, TestServer, api_error};
use pathd_client::{CellChange, DamagedMap, MapPatch, PatchResult, PathRequest, Recovery};
use serde_json::json;

/// A wall at `(x, y)`.
fn wall_at(x: u32, y: u32, cost: u32) -> MapPatch {
    MapPatch {
        cells: vec![CellChange { x, y, cost }],
        ..Default::default()
    }
}

/// A wall at `(x, 0)`; retries off (a `503` is asserted).
async fn patch(s: &TestServer, map: &str, x: u32) -> Result<PatchResult, pathd_client::Error> {
    s.pathd_once().patch_map(map, &wall_at(x, 0, 0)).await
}

/// Uploads `m` (64x64, version 1) and applies `n` one-cell patches (versions 2..=n+1).
async fn patched_map(s: &TestServer, n: u32) {
    let map = json!({"width": 64, "height": 64, "costs": vec![1; 64 * 64]});
    s.upload_json("m", &map).await;
    for x in 0..n {
        patch(s, "m", x).await.unwrap();
    }
}

fn pathd_data(data: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pathd"))
        .arg("data")
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// Everything a damaged map must look like from outside.
async fn assert_damaged(s: &TestServer, name: &str) -> DamagedMap {
    // Retries off: the `503`s are asserted.
    let pathd = s.pathd_once();
    let small = json!({"width": 2, "height": 1, "costs": [1, 1], "movement": "octile"});
    api_error(pathd.get_map(name, None).await, 503, "map_damaged");
    api_error(
        pathd
            .find_path(name, &PathRequest::new([0, 1], [5, 5]))
            .await,
        503,
        "map_damaged",
    );
    api_error(patch(s, name, 63).await, 503, "map_damaged");
    api_error(pathd.put_map_json(name, &small).await, 503, "map_damaged");
    api_error(pathd.delete_map(name).await, 503, "map_damaged");
    let ready = pathd.ready().await.unwrap();
    assert_eq!(ready["damaged_maps"], json!([name]), "{ready}");
    let metrics = pathd.metrics().await.unwrap();
    assert!(
        metrics.lines().any(|l| l == "pathd_maps_damaged 1"),
        "{metrics}"
    );
    let list = pathd.list_maps().await.unwrap();
    assert!(
        list.maps.iter().all(|m| m.name != name),
        "a damaged map is not listed as served: {list:?}"
    );
    assert_eq!(list.damaged[0].name, name);
    list.damaged[0].clone()
}

async fn a_bad_record_in_the_middle_of_the_log_marks_the_map_damaged() {
    let dirs = Dirs::new();
    let config = dirs.config();
    let s = TestServer::start(dirs.share(), config.clone()).await;
    patched_map(&s, 20).await; // versions 2..=21 in the log
    s.stop().await.unwrap();

    // Flip one bit inside record 3 (version 4): the header, then 33 bytes per record.
    let log = dirs.data.join("m.plog");
    let mut bytes = std::fs::read(&log).unwrap();
    let len_before = bytes.len();
    let at = log_header(&bytes) + 2 * 33 + 20;
    bytes[at] ^= 1;
    std::fs::write(&log, &bytes).unwrap();

    let s = TestServer::start(dirs.share(), config.clone()).await;
    let d = assert_damaged(&s, "m").await;
    assert_eq!(d.last_good_version, Some(3), "{d:?}");
    // Version 4's record is the bad one: it is dropped too, though its bytes cannot say
    // so (versions are consecutive, so it can only be 4).
    assert_eq!(d.dropped_versions, (4..=21).collect::<Vec<u64>>(), "{d:?}");
    s.stop().await.unwrap();
    assert_eq!(
        std::fs::metadata(&log).unwrap().len() as usize,
        len_before,
        "nothing is cut without asking"
    );

    let (code, out) = pathd_data(&dirs.data, &["check"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("DAMAGED") && out.contains("m:"), "{out}");
    let (code, out) = pathd_data(&dirs.data, &["repair", "--map", "m"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("version 3") && out.contains("version 22"),
        "{out}"
    );
    assert!(out.contains("[4, 5, 6"), "says which versions go: {out}");
    let (code, out) = pathd_data(&dirs.data, &["check"]);
    assert_eq!(code, 0, "{out}");

    let s = TestServer::start(dirs.share(), config).await;
    let m = s.pathd().get_map("m", None).await.unwrap();
    // Version 3's cells (two walls) under a version past everything ever acknowledged.
    assert_eq!((m.version, m.blocked_cells), (22, 2));
    let v = patch(&s, "m", 40).await.unwrap();
    assert_eq!(v.version, 23, "{v:?}");
}

async fn a_bad_log_header_marks_the_map_damaged() {
    let dirs = Dirs::new();
    let config = dirs.config();
    let s = TestServer::start(dirs.share(), config.clone()).await;
    patched_map(&s, 3).await;
    s.stop().await.unwrap();
    let log = dirs.data.join("m.plog");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[2] = b'X';
    std::fs::write(&log, &bytes).unwrap();

    let s = TestServer::start(dirs.share(), config.clone()).await;
    let d = assert_damaged(&s, "m").await;
    assert_eq!(d.dropped_versions, [2, 3, 4], "{d:?}");
    s.stop().await.unwrap();
    assert!(log.exists(), "the log is kept for inspection");

    let (code, out) = pathd_data(&dirs.data, &["repair", "--map", "m"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("[2, 3, 4]"), "{out}");
    let s = TestServer::start(dirs.share(), config).await;
    let m = s.pathd().get_map("m", None).await.unwrap();
    assert_eq!((m.version, m.blocked_cells), (5, 0));
}

async fn a_bad_snapshot_of_a_patched_bundled_map_is_not_served_as_the_bundle() {
    let dirs = Dirs::new();
    dirs.bundle("arena2");
    let config = dirs.config();
    let s = TestServer::start(dirs.share(), config.clone()).await;
    for x in [3, 4] {
        s.pathd()
            .patch_map("arena2", &wall_at(x, 5, 7))
            .await
            .unwrap();
    }
    s.stop().await.unwrap();
    let snap = dirs.data.join("arena2.pmap");
    let mut bytes = std::fs::read(&snap).unwrap();
    let i = bytes.len() / 2;
    bytes[i] ^= 0x10;
    std::fs::write(&snap, &bytes).unwrap();

    let s = TestServer::start(dirs.share(), config.clone()).await;
    let d = assert_damaged(&s, "arena2").await;
    assert!(d.reason.contains("snapshot"), "{d:?}");
    s.stop().await.unwrap();

    let (code, out) = pathd_data(&dirs.data, &["repair", "--map", "arena2"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("deleted"), "{out}");
    let s = TestServer::start(dirs.share(), config).await;
    // The repair deleted it for good (the bundled file does not come back at version 1)...
    api_error(
        s.pathd().get_map("arena2", None).await,
        404,
        "map_not_found",
    );
    // ...and a new upload continues past every version ever acknowledged.
    let v = s
        .upload_json(
            "arena2",
            &json!({"width": 2, "height": 1, "costs": [1, 1], "movement": "octile"}),
        )
        .await;
    assert!(v.version > 3, "{v:?}");
}

/// The length of a patch log's header: the line `PATHD-PLOG 1`, or the line `PATHD-PLOG 2`
/// and its two 16-byte slots of the highest version handed out.
fn log_header(bytes: &[u8]) -> usize {
    if bytes.starts_with(b"PATHD-PLOG 2\n") {
        13 + 32
    } else {
        13
    }
}

/// How the tail of a log is lost.
#[derive(Clone, Copy, Debug)]
enum Cut {
    /// The last few bytes (a torn last record).
    Bytes(usize),
    /// The whole last record (nothing left to say it was there).
    Record,
}

/// Defect 11 of issue 22: after a cut log tail the version sequence went back. On the code
/// before, v20 was served (with a warning only, or none for a whole record) and the next
/// PATCH was answered `version 21` with other cells than the acknowledged v21.
async fn a_cut_log_tail_never_brings_a_version_back(cut: Cut) {
    let dirs = Dirs::new();
    let config = dirs.config();
    let s = TestServer::start(dirs.share(), config.clone()).await;
    patched_map(&s, 20).await; // versions 2..=21 acknowledged
    s.stop().await.unwrap();
    let log = dirs.data.join("m.plog");
    let bytes = std::fs::read(&log).unwrap();
    let keep = match cut {
        Cut::Bytes(n) => bytes.len() - n,
        Cut::Record => bytes.len() - 33,
    };
    std::fs::write(&log, &bytes[..keep]).unwrap();

    // The operator's check says what is missing before anything is served.
    let (code, out) = pathd_data(&dirs.data, &["check"]);
    assert_eq!(code, 0, "a cut tail is served, not damaged: {out}");
    assert!(
        out.contains("version 21") && out.contains("lost"),
        "{cut:?}: the check names the lost version: {out}"
    );

    let s = TestServer::start(dirs.share(), config.clone()).await;
    let pathd = s.pathd();
    let m = pathd.get_map("m", None).await.unwrap();
    // Version 20's cells (19 walls), under a version past every acknowledged one.
    assert_eq!((m.version, m.blocked_cells), (22, 19), "{cut:?}: {m:?}");
    assert_eq!(
        m.recovery,
        Some(Recovery {
            lost_versions: [21, 21],
            served_as: 22
        }),
        "{cut:?}: the summary reports the cut: {m:?}"
    );
    let ready = pathd.ready().await.unwrap();
    assert_eq!(ready["cut_logs"], json!(["m"]), "{cut:?}: {ready}");
    let v = patch(&s, "m", 40).await.unwrap();
    assert_eq!(v.version, 23, "{cut:?}: never 21 again: {v:?}");
    s.stop().await.unwrap();

    // Durable and served state agree after another restart: 20 walls, version 23.
    let s = TestServer::start(dirs.share(), config).await;
    let m = s.pathd().get_map("m", None).await.unwrap();
    assert_eq!((m.version, m.blocked_cells), (23, 20), "{cut:?}: {m:?}");
    s.stop().await.unwrap();
}

#[tokio::test]
async fn a_cut_log_tail_is_reported_and_versions_move_on() {
    a_cut_log_tail_never_brings_a_version_back(Cut::Bytes(5)).await;
    a_cut_log_tail_never_brings_a_version_back(Cut::Record).await;
}

/// One test, so the process-wide metrics (`pathd_maps_damaged`) belong to one server at a
/// time.
#[tokio::test]
async fn damaged_data_is_reported_never_served_and_repaired_on_request() {
    a_bad_record_in_the_middle_of_the_log_marks_the_map_damaged().await;
    a_bad_log_header_marks_the_map_damaged().await;
    a_bad_snapshot_of_a_patched_bundled_map_is_not_served_as_the_bundle().await;
}
