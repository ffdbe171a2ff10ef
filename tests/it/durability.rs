//! Uploaded maps survive a restart with the same version, costs and movement; deletes
//! survive too; debris of an interrupted write is ignored.

use crate::common::{Dirs, SMALL_MAP, TestServer, expect_error, json};
use serde_json::json;

#[tokio::test]
async fn maps_come_back_after_a_restart() {
    let dirs = Dirs::new();
    dirs.bundle("arena2");
    dirs.bundle("den520d");
    let config = dirs.config();
    let s = TestServer::start(dirs.share(), config.clone()).await;
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 201);
    assert_eq!(s.put_text("small", SMALL_MAP).await.status(), 200); // version 2
    let weighted =
        json!({"width": 3, "height": 2, "costs": [1, 9, 1, 1, 1, 200], "movement": "cardinal"});
    assert_eq!(s.put_json("weighted", &weighted).await.status(), 201);
    // Replace a bundled map (version 2) and delete another.
    assert_eq!(s.put_text("arena2", SMALL_MAP).await.status(), 200);
    assert_eq!(
        s.client
            .delete(s.at("/v1/maps/den520d"))
            .send()
            .await
            .unwrap()
            .status(),
        204
    );
    let (_, before) = json(s.client.get(s.at("/v1/maps")).send().await.unwrap()).await;
    s.stop().await.unwrap();

    let s = TestServer::start(dirs.share(), config.clone()).await;
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
    let (_, v) = json(s.client.get(s.at("/v1/maps/small")).send().await.unwrap()).await;
    assert_eq!(v["version"], 2);
    let (_, v) = json(s.client.get(s.at("/v1/maps/arena2")).send().await.unwrap()).await;
    assert_eq!(
        (
            v["version"].as_u64(),
            v["width"].as_u64(),
            v["source"].as_str()
        ),
        (Some(2), Some(5), Some("uploaded"))
    );
    // Costs and movement survived: straight through the 9 costs 10 (the detour would pay
    // for the 200 cell); a uniform map would say 2.
    let (_, v) = json(
        s.path("weighted", &json!({"start": [0, 0], "goal": [2, 0]}))
            .await,
    )
    .await;
    assert_eq!(v["cost"], 10.0);
    assert_eq!(v["path"], json!([[0, 0], [1, 0], [2, 0]]));
    let (_, v) = json(
        s.client
            .get(s.at("/v1/maps/weighted"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (v["movement"].as_str(), v["max_cost"].as_u64()),
        (Some("cardinal"), Some(200))
    );
    expect_error(
        s.client.get(s.at("/v1/maps/den520d")).send().await.unwrap(),
        404,
        "map_not_found",
    )
    .await;

    // Re-creating the deleted bundled map continues its versions.
    let (st, v) = json(s.put_text("den520d", SMALL_MAP).await).await;
    assert_eq!((st, v["version"].as_u64()), (201, Some(2)));
    s.stop().await.unwrap();
    let s = TestServer::start(dirs.share(), config).await;
    let (_, v) = json(s.client.get(s.at("/v1/maps/den520d")).send().await.unwrap()).await;
    assert_eq!(
        (v["version"].as_u64(), v["width"].as_u64()),
        (Some(2), Some(5))
    );
}

#[tokio::test]
async fn interrupted_writes_are_skipped_and_corrupt_files_reported() {
    let dirs = Dirs::new();
    let config = dirs.config();
    let s = TestServer::start(dirs.share(), config.clone()).await;
    assert_eq!(s.put_text("good", SMALL_MAP).await.status(), 201);
    assert_eq!(s.put_text("bad", SMALL_MAP).await.status(), 201);
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
    let (_, v) = json(s.client.get(s.at("/v1/maps/good")).send().await.unwrap()).await;
    assert_eq!(v["version"], 1);
    // A corrupt snapshot is not skipped quietly: the map is reported damaged, not served.
    expect_error(
        s.client.get(s.at("/v1/maps/bad")).send().await.unwrap(),
        503,
        "map_damaged",
    )
    .await;
    let (_, list) = json(s.client.get(s.at("/v1/maps")).send().await.unwrap()).await;
    assert_eq!(list["damaged"][0]["name"], "bad");
    assert!(!tmp.exists(), "temp debris is removed at start");
    assert!(bad.exists(), "a corrupt file is left for inspection");
}
