//! A patch reaches the subscriptions it can change, not every member of the goal groups
//! whose search region it falls in: after a raise-only patch, only the members whose path
//! passes by a changed cell are repaired and counted in `affected_subscriptions`; after a
//! lowering one, every member of a group whose search region holds a changed cell (a
//! cheaper cell anywhere the tree has looked can open a shorter path).

use pathd_client::{PathRequest, Subscription};
use serde_json::{Value, json};

use super::{get_sub, patch_ok, subscribe, wait_seq};
use crate::common::{TestServer, cells_patch, rects_patch};

/// 120x40, all cost 1, octile: room for paths far apart.
fn open_field() -> Value {
    let (w, h) = (120usize, 40usize);
    json!({"width": w, "height": h, "costs": vec![1u32; w * h], "movement": "octile"})
}

/// Polls `id` until its `map_version` is `version` (the group's repair is over), bounded.
async fn wait_version(s: &TestServer, id: &str, version: u64) -> Subscription {
    for _ in 0..2_000 {
        let v = get_sub(s, id).await;
        if v.map_version == version {
            return v;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("subscription {id} never reached map version {version}");
}

#[tokio::test]
async fn a_patch_reaches_only_the_members_whose_paths_it_touches() {
    let s = TestServer::new().await;
    s.upload_json("f", &open_field()).await;
    // One goal group of three: starts far apart, so their paths share only the last cells.
    let a = subscribe(&s, "f", &PathRequest::new([2, 2], [110, 20])).await;
    let b = subscribe(&s, "f", &PathRequest::new([2, 37], [110, 20])).await;
    let c = subscribe(&s, "f", &PathRequest::new([60, 38], [110, 20])).await;
    let ids: Vec<&str> = [&a, &b, &c].iter().map(|v| v.id.as_str()).collect();
    for other in [&b, &c] {
        // The test's premise: the wall below lies nowhere near the others' paths.
        assert!(other.path.iter().all(|p| p[0] > 8 || p[1] >= 32));
    }
    // A wall across a's way near its start (x = 5, rows 0 to 25): a detour that costs more.
    let wall = |cost: u32| rects_patch(&[[5, 0, 1, 26, cost]]);
    let out = patch_ok(&s, "f", wall(0)).await;
    assert_eq!(out.version, 2);
    assert_eq!(out.affected_subscriptions, 1, "{out:?}");
    wait_seq(&s, ids[0], 2).await;
    for id in &ids[1..] {
        let v = wait_version(&s, id, 2).await;
        assert_eq!(v.seq, 1, "an untouched member got an event: {v:?}");
    }

    // A wall in a far corner no path comes near: inside the tree's region, reaching nobody.
    let out = patch_ok(&s, "f", cells_patch(&[(119, 0, 0)])).await;
    assert_eq!(out.affected_subscriptions, 0, "{out:?}");
    for (id, seq) in ids.iter().zip([2, 1, 1]) {
        let v = wait_version(&s, id, 3).await;
        assert_eq!(v.seq, seq, "{v:?}");
    }

    // Opening the wall again is a lowering: every member of the group may get a shorter
    // path, so all of them are reached, and a gets its old cost back.
    let out = patch_ok(&s, "f", wall(1)).await;
    assert_eq!(out.affected_subscriptions, 3, "{out:?}");
    wait_seq(&s, ids[0], 3).await;
    let v = get_sub(&s, ids[0]).await;
    assert_eq!(v.cost, a.cost, "{v:?}");
    for id in &ids[1..] {
        let v = wait_version(&s, id, 4).await;
        assert_eq!(v.seq, 1, "{v:?}");
    }
}
