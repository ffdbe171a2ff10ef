//! Uploaded maps survive a restart with the same version, costs and movement; deletes
//! survive too; debris of an interrupted write is ignored.

use crate::common::{Dirs, SMALL_MAP, TestServer, api_error, json};
use pathd_client::PathRequest;
use serde_json::json;

#[tokio::test]
async fn maps_come_back_after_a_restart() {
    let dirs = Dirs::new();
    dirs.bundle("arena2");
    dirs.bundle("den520d");
    let config = dirs.config();
    let s = TestServer::start(dirs.share(), config.clone()).await;
    let pathd = s.pathd();
    s.upload("small", SMALL_MAP).await;
    let (created, _) = pathd.put_map_text("small", SMALL_MAP).await.unwrap(); // version 2
    assert!(!created);
    let weighted =
        json!({"width": 3, "height": 2, "costs": [1, 9, 1, 1, 1, 200], "movement": "cardinal"});
    s.upload_json("weighted", &weighted).await;
    // Replace a bundled map (version 2) and delete another.
    let (created, _) = pathd.put_map_text("arena2", SMALL_MAP).await.unwrap();
    assert!(!created);
    pathd.delete_map("den520d").await.unwrap();
    // The lists are compared whole (every field, as sent), raw.
    let (_, before) = json(s.client.get(s.at("/v1/maps")).send().await.unwrap()).await;
    s.stop().await.unwrap();

    let s = TestServer::start(dirs.share(), config.clone()).await;
    let pathd = s.pathd();
    let (_, after) = json(s.client.get(s.at("/v1/maps")).send().await.unwrap()).await;
    // The JPS+ jump table and the subgoal graph are derived state, rebuilt after the
    // restart (their status and build time are those of this run), not stored: compare
    // everything else.
    let stored = |mut list: serde_json::Value| {
        for m in list["maps"].as_array_mut().unwrap() {
            m.as_object_mut().unwrap().remove("jps_plus");
            m.as_object_mut().unwrap().remove("subgoal");
        }
        list
    };
    assert_eq!(stored(before), stored(after.clone()));
    let names: Vec<_> = after["maps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["arena2", "small", "weighted"]);
    let v = pathd.get_map("small", None).await.unwrap();
    assert_eq!(v.version, 2);
    let v = pathd.get_map("arena2", None).await.unwrap();
    assert_eq!((v.version, v.width, v.source.as_str()), (2, 5, "uploaded"));
    // Costs and movement survived: straight through the 9 costs 10 (the detour would pay
    // for the 200 cell); a uniform map would say 2.
    let v = pathd
        .find_path("weighted", &PathRequest::new([0, 0], [2, 0]))
        .await
        .unwrap();
    assert_eq!(v.cost, 10.0);
    assert_eq!(v.path, [[0, 0], [1, 0], [2, 0]]);
    let v = pathd.get_map("weighted", None).await.unwrap();
    assert_eq!((v.movement.as_str(), v.max_cost), ("cardinal", 200));
    api_error(pathd.get_map("den520d", None).await, 404, "map_not_found");

    // Re-creating the deleted bundled map continues its versions.
    let (created, v) = pathd.put_map_text("den520d", SMALL_MAP).await.unwrap();
    assert_eq!((created, v.version), (true, 2));
    s.stop().await.unwrap();
    let s = TestServer::start(dirs.share(), config).await;
    let v = s.pathd().get_map("den520d", None).await.unwrap();
    assert_eq!((v.version, v.width), (2, 5));
}

#[tokio::test]
async fn interrupted_writes_are_skipped_and_corrupt_files_reported() {
    let dirs = Dirs::new();
    let config = dirs.config();
    let s = TestServer::start(dirs.share(), config.clone()).await;
    s.upload("good", SMALL_MAP).await;
    s.upload("bad", SMALL_MAP).await;
    s.stop().await.unwrap();

    // A crash mid-write leaves only a temp file; a disk error flips a byte.
    let tmp = dirs.data.join(".good.pmap.tmp");
    std::fs::write(&tmp, b"PATHD-MAP 1\n{\"name\":\"go").unwrap();
    let bad = dirs.data.join("bad.pmap");
    let mut bytes = std::fs::read(&bad).unwrap();
    let i = bytes.len() - 9;
    bytes[i] ^= 0xff;
    std::fs::write(&bad, bytes).unwrap();

    let s = TestServer::start(dirs.share(), config).await;
    // Retries off: a `503` is asserted.
    let pathd = s.pathd_once();
    let v = pathd.get_map("good", None).await.unwrap();
    assert_eq!(v.version, 1);
    // A corrupt snapshot is not skipped quietly: the map is reported damaged, not served.
    api_error(pathd.get_map("bad", None).await, 503, "map_damaged");
    let list = pathd.list_maps().await.unwrap();
    assert_eq!(list.damaged[0].name, "bad");
    assert!(!tmp.exists(), "temp debris is removed at start");
    assert!(bad.exists(), "a corrupt file is left for inspection");
}
