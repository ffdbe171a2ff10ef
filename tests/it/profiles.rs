//! Unit types on one map (terrain classes read through named profiles) over a real server:
//! every algorithm's answer per profile against a reference Dijkstra on seeded random
//! terrain, before and after patches to cells and to profiles; Moving AI terrain under
//! `ground`, `boat` and a weighted profile; subscriptions repaired only by what their
//! profile sees; profiles surviving a restart; the errors.

use std::collections::BTreeMap;

use pathd_client::{
    CellChange, CellsRequest, Client, MapPatch, MatrixRequest, PathRequest, PathResult,
};
use pathd_engine::{Grid, Movement, Point};
use serde_json::{Value, json};

use crate::common::{Dirs, TestServer, api_error, cells};
use crate::flowfields::reference;

/// xorshift64*: seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const W: usize = 28;
const H: usize = 20;
/// Classes in use on the random maps (0 is a wall for everybody).
const CLASSES: u64 = 7;

fn random_terrain(rng: &mut Rng) -> Vec<u8> {
    (0..W * H)
        .map(|_| {
            if rng.below(10) == 0 {
                0
            } else {
                1 + rng.below(CLASSES - 1) as u8
            }
        })
        .collect()
}

/// A random cost table over the classes in use: some impassable, some weighted; `uniform`
/// makes every passable class cost 1 (so JPS applies).
fn random_table(rng: &mut Rng, uniform: bool) -> Vec<u8> {
    let mut t = vec![0u8; 256];
    for cost in t.iter_mut().take(CLASSES as usize).skip(1) {
        *cost = match rng.below(5) {
            0 => 0,
            _ if uniform => 1,
            k => [1, 2, 3, 7][k as usize - 1],
        };
    }
    t
}

fn under(terrain: &[u8], table: &[u8]) -> Vec<u8> {
    terrain.iter().map(|&c| table[c as usize]).collect()
}

/// A query for a profile (`None`: the map's default).
fn for_profile(
    start: (usize, usize),
    goal: (usize, usize),
    algorithm: Option<&str>,
    profile: Option<&str>,
) -> PathRequest {
    PathRequest {
        algorithm: algorithm.map(str::to_owned),
        profile: profile.map(str::to_owned),
        ..PathRequest::new(
            [start.0 as u32, start.1 as u32],
            [goal.0 as u32, goal.1 as u32],
        )
    }
}

/// A patch of cells `(x, y, cost)`.
fn cell_patch(changes: impl IntoIterator<Item = (usize, usize, u32)>) -> MapPatch {
    MapPatch {
        cells: changes
            .into_iter()
            .map(|(x, y, cost)| CellChange {
                x: x as u32,
                y: y as u32,
                cost,
            })
            .collect(),
        ..Default::default()
    }
}

/// Profile changes of a patch: name to a cost table, or `null` to remove it.
fn profile_changes(v: Value) -> Option<serde_json::Map<String, Value>> {
    Some(v.as_object().unwrap().clone())
}

/// Checks `queries` random pairs per profile with each algorithm against the reference.
async fn check_profiles(
    s: &TestServer,
    name: &str,
    terrain: &[u8],
    tables: &BTreeMap<String, Vec<u8>>,
    rng: &mut Rng,
    queries: usize,
) {
    for (profile, table) in tables {
        let costs = under(terrain, table);
        let grid = Grid::from_costs(W as u32, H as u32, costs.clone(), Movement::Octile).unwrap();
        let mut algorithms = vec!["astar", "dijkstra", "weighted_astar", "auto"];
        if grid.is_uniform() {
            algorithms.push("jps");
        }
        for _ in 0..queries {
            let (sx, sy) = (rng.below(W as u64) as usize, rng.below(H as u64) as usize);
            let (gx, gy) = (rng.below(W as u64) as usize, rng.below(H as u64) as usize);
            let dist = reference(&costs, W, H, (gx, gy), 1);
            for algorithm in &algorithms {
                let q = PathRequest {
                    weight: Some(1.5),
                    ..for_profile((sx, sy), (gx, gy), Some(algorithm), Some(profile))
                };
                let r = s.pathd().find_path(name, &q).await;
                let what = format!("{profile} {algorithm} ({sx},{sy})->({gx},{gy}): {r:?}");
                if costs[sy * W + sx] == 0 {
                    api_error(r, 400, "start_blocked");
                    continue;
                }
                if costs[gy * W + gx] == 0 {
                    api_error(r, 400, "goal_blocked");
                    continue;
                }
                let v = r.unwrap();
                let best = dist[sy * W + sx];
                if best.is_infinite() {
                    assert_eq!(v.status, "no_path", "{what}");
                    continue;
                }
                assert_eq!(v.status, "found", "{what}");
                let path = cells(&v.path);
                assert_eq!(path[0], Point::new(sx as u32, sy as u32), "{what}");
                assert_eq!(
                    *path.last().unwrap(),
                    Point::new(gx as u32, gy as u32),
                    "{what}"
                );
                let walked = grid
                    .path_cost(&path)
                    .expect("every step legal for the profile");
                let cost = v.cost;
                assert!((walked - cost).abs() < 1e-6, "{what}");
                if *algorithm == "weighted_astar" {
                    assert!(cost <= best * 1.5 + 1e-6, "{what}");
                } else {
                    assert!((cost - best).abs() < 1e-6, "{what}: reference {best}");
                }
            }
        }
    }
}

fn upload(terrain: &[u8], tables: &BTreeMap<String, Vec<u8>>, default: &str) -> Value {
    json!({"width": W, "height": H, "terrain": terrain, "profiles": tables,
        "default_profile": default})
}

async fn patch(s: &TestServer, name: &str, p: &MapPatch) -> pathd_client::PatchResult {
    s.pathd().patch_map(name, p).await.unwrap()
}

/// The summary of a map's profile.
async fn profile_summary(pathd: &Client, map: &str, profile: &str) -> pathd_client::ProfileSummary {
    let m = pathd.get_map(map, None).await.unwrap();
    m.profiles
        .into_iter()
        .find(|p| p.name == profile)
        .unwrap_or_else(|| panic!("no profile {profile}"))
}

#[tokio::test]
async fn every_algorithm_per_profile_equals_the_reference_before_and_after_patches() {
    let s = TestServer::new().await;
    let mut rng = Rng(0x5eed_0001);
    for round in 0..3 {
        let name = format!("units{round}");
        let mut terrain = random_terrain(&mut rng);
        let mut tables: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        tables.insert("infantry".into(), random_table(&mut rng, true));
        tables.insert("tank".into(), random_table(&mut rng, false));
        tables.insert("hover".into(), random_table(&mut rng, false));
        let v = s
            .upload_json(&name, &upload(&terrain, &tables, "infantry"))
            .await;
        assert_eq!(v.default_profile.as_deref(), Some("infantry"));
        assert_eq!(v.profiles.len(), 3);
        check_profiles(&s, &name, &terrain, &tables, &mut rng, 8).await;
        for step in 0..4 {
            // Cells to random classes, and now and then a profile's costs (a flood season),
            // a profile added or removed.
            let changes: Vec<_> = (0..6)
                .map(|_| {
                    let (x, y) = (rng.below(W as u64) as usize, rng.below(H as u64) as usize);
                    let c = rng.below(CLASSES) as u8;
                    terrain[y * W + x] = c;
                    (x, y, c as u32)
                })
                .collect();
            let mut body = cell_patch(changes);
            match step {
                1 => {
                    let t = random_table(&mut rng, false);
                    tables.insert("tank".into(), t.clone());
                    body.profiles = profile_changes(json!({"tank": t}));
                }
                2 => {
                    let t = random_table(&mut rng, true);
                    tables.insert("scout".into(), t.clone());
                    tables.remove("hover");
                    body.profiles = profile_changes(json!({"scout": t, "hover": null}));
                }
                3 => {
                    body.default_profile = Some("tank".into());
                }
                _ => {}
            }
            patch(&s, &name, &body).await;
            check_profiles(&s, &name, &terrain, &tables, &mut rng, 6).await;
        }
        // The removed profile is gone; the default moved.
        let pathd = s.pathd();
        api_error(
            pathd
                .find_path(&name, &for_profile((0, 0), (1, 1), None, Some("hover")))
                .await,
            404,
            "profile_not_found",
        );
        let summary = pathd.get_map(&name, None).await.unwrap();
        assert_eq!(summary.default_profile.as_deref(), Some("tank"));
        // A request without `profile` is the default's.
        let tank = under(&terrain, &tables["tank"]);
        let r = pathd
            .find_path(&name, &for_profile((0, 0), (W - 1, H - 1), None, None))
            .await;
        if tank[0] != 0 && tank[W * H - 1] != 0 {
            let best = reference(&tank, W, H, (W - 1, H - 1), 1)[0];
            if best.is_finite() {
                let v = r.unwrap();
                assert!((v.cost - best).abs() < 1e-6, "{v:?}");
            }
        }
    }
}

/// A seeded Moving AI map with all of its terrain: `.` ground, `T` trees, `W` water, `S`
/// swamp, `G` grass, `@` walls.
fn moving_ai_map(rng: &mut Rng) -> (String, Vec<u8>) {
    let chars = b"....GSSTWWW@";
    let cells: Vec<u8> = (0..W * H)
        .map(|_| chars[rng.below(chars.len() as u64) as usize])
        .collect();
    let mut text = format!("type octile\nheight {H}\nwidth {W}\nmap\n");
    for row in cells.chunks(W) {
        text.push_str(std::str::from_utf8(row).unwrap());
        text.push('\n');
    }
    (text, cells)
}

fn table_of(pairs: &[(u8, u8)]) -> Vec<u8> {
    let mut t = vec![0u8; 256];
    for &(c, cost) in pairs {
        t[c as usize] = cost;
    }
    t
}

#[tokio::test]
async fn moving_ai_terrain_under_ground_boat_and_a_weighted_profile() {
    let s = TestServer::new().await;
    let mut rng = Rng(0x5eed_0002);
    let (text, cells) = moving_ai_map(&mut rng);
    s.upload("wc3", &text).await;
    let profiles = json!({"boat": {"W": 1}, "slog": {".": 1, "G": 1, "S": 4, "W": 9}});
    let p = MapPatch {
        profiles: profile_changes(profiles),
        ..Default::default()
    };
    patch(&s, "wc3", &p).await;
    let mut tables = BTreeMap::new();
    // `ground`, the default: today's rule.
    tables.insert(
        "ground".to_owned(),
        table_of(&[(b'.', 1), (b'G', 1), (b'S', 1)]),
    );
    tables.insert("boat".to_owned(), table_of(&[(b'W', 1)]));
    tables.insert(
        "slog".to_owned(),
        table_of(&[(b'.', 1), (b'G', 1), (b'S', 4), (b'W', 9)]),
    );
    check_profiles(&s, "wc3", &cells, &tables, &mut rng, 10).await;
    // The default profile is today's map: the same answer as a plain parse.
    let plain = pathd_engine::movingai::parse_map(&text).unwrap();
    assert_eq!(plain.costs(), under(&cells, &tables["ground"]));
    // `/cells` per profile, and the terrain itself (the octet stream).
    let pathd = s.pathd();
    let profile = |p: &str| CellsRequest {
        profile: Some(p.to_owned()),
        terrain: false,
    };
    let terrain = CellsRequest {
        profile: None,
        terrain: true,
    };
    for (query, want) in [
        (CellsRequest::default(), under(&cells, &tables["ground"])),
        (profile("boat"), under(&cells, &tables["boat"])),
        (profile("slog"), under(&cells, &tables["slog"])),
        (terrain, cells.clone()),
    ] {
        let got = pathd.get_map_cells("wc3", &query).await.unwrap();
        assert_eq!(got, want, "{query:?}");
    }
    api_error(
        pathd.get_map_cells("wc3", &profile("nope")).await,
        404,
        "profile_not_found",
    );
    // The map as a Moving AI file again: trees, water and swamp as they were read.
    let back = s.pathd().get_map_text("wc3").await.unwrap();
    assert_eq!(back, text);
}

/// Uploads `lake`: a lake of `W` (columns 2..18 of rows 2..10) in a 20x12 field of `.`,
/// with the profile `boat` (only `W`) beside `ground`; the summary.
async fn put_lake(s: &TestServer) -> pathd_client::MapSummary {
    let rows: Vec<String> = (0..12)
        .map(|y| {
            (0..20)
                .map(|x| {
                    if (2..18).contains(&x) && (2..10).contains(&y) {
                        'W'
                    } else {
                        '.'
                    }
                })
                .collect()
        })
        .collect();
    let body = json!({"width": 20, "height": 12, "rows": rows, "profiles": {"boat": {"W": 1}}});
    s.upload_json("lake", &body).await
}

#[tokio::test]
async fn a_boat_subscription_is_repaired_by_water_and_not_by_ground() {
    let s = TestServer::new().await;
    // The boat crosses the lake.
    let v = put_lake(&s).await;
    assert_eq!(v.default_profile.as_deref(), Some("ground"));
    let pathd = s.pathd();
    let sub = pathd
        .create_subscription("lake", &for_profile((2, 5), (17, 5), None, Some("boat")))
        .await
        .unwrap();
    assert_eq!(sub.profile.as_deref(), Some("boat"));
    assert_eq!(sub.map, "lake");
    assert!((sub.cost - 15.0).abs() < 1e-9, "{sub:?}");
    let id = sub.id.clone();
    let mut events = pathd.subscription_events(&id, None);
    let mut next = async || {
        tokio::time::timeout(std::time::Duration::from_secs(30), events.next())
            .await
            .expect("an event within 30 s")
            .expect("the stream is open")
            .unwrap()
    };
    let first = next().await;
    let seq0 = first.seq;
    // Ground-only changes: a wall on the field, a tree on the shore. The boat sees nothing.
    for (x, y, c) in [(0, 0, 0), (19, 11, b'T' as u32), (1, 5, 0)] {
        let v = patch(&s, "lake", &cell_patch([(x, y, c)])).await;
        assert_eq!(v.affected_subscriptions, 0, "{v:?}");
    }
    // Water on its path becomes land: the boat goes around it.
    let v = patch(&s, "lake", &cell_patch((3..8).map(|y| (9, y, b'.' as u32)))).await;
    assert_eq!(v.affected_subscriptions, 1, "{v:?}");
    let ev = next().await;
    assert_eq!(ev.seq, seq0 + 1, "exactly one event, for the water: {ev:?}");
    assert!(ev.cost > 15.0, "{ev:?}");
    let now = pathd.get_subscription(&id).await.unwrap();
    assert_eq!(now.seq, seq0 + 1, "{now:?}");
    // The profile removed: its subscriptions end.
    let p = MapPatch {
        profiles: profile_changes(json!({"boat": null})),
        ..Default::default()
    };
    patch(&s, "lake", &p).await;
    let end = next().await;
    assert_eq!(end.reason, "profile_removed", "{end:?}");
}

#[tokio::test]
async fn profiles_survive_a_restart_from_snapshot_and_log() {
    let dirs = Dirs::new();
    let mut rng = Rng(0x5eed_0003);
    let mut terrain = random_terrain(&mut rng);
    let mut tables = BTreeMap::new();
    tables.insert("walker".to_owned(), random_table(&mut rng, true));
    tables.insert("swimmer".to_owned(), random_table(&mut rng, false));
    let s = TestServer::start(dirs.share(), dirs.config()).await;
    s.upload_json("kept", &upload(&terrain, &tables, "walker"))
        .await;
    // A profile change (stored as the whole map), then cell patches (logged).
    let t = random_table(&mut rng, false);
    tables.insert("swimmer".to_owned(), t.clone());
    let p = MapPatch {
        profiles: profile_changes(json!({ "swimmer": t })),
        ..Default::default()
    };
    patch(&s, "kept", &p).await;
    for (x, y, c) in [(3usize, 4usize, 2u8), (10, 10, 0), (5, 5, 6)] {
        terrain[y * W + x] = c;
        patch(&s, "kept", &cell_patch([(x, y, c as u32)])).await;
    }
    s.stop().await.unwrap();
    let s = TestServer::start(dirs.share(), dirs.config()).await;
    let v = s.pathd().get_map("kept", None).await.unwrap();
    assert_eq!(v.version, 5, "{v:?}");
    assert_eq!(v.default_profile.as_deref(), Some("walker"));
    let swimmer = profile_summary(&s.pathd(), "kept", "swimmer").await;
    assert_eq!(swimmer.costs, tables["swimmer"]);
    check_profiles(&s, "kept", &terrain, &tables, &mut rng, 8).await;
}

#[tokio::test]
async fn profile_errors_have_codes() {
    let s = TestServer::new().await;
    let tables: BTreeMap<String, Vec<u8>> = [("a".to_owned(), vec![0, 1, 1])].into_iter().collect();
    let terrain = vec![1u8; W * H];
    // `terrain` without profiles; class 0 made passable; a bad name; two profiles, no default.
    for body in [
        json!({"width": W, "height": H, "terrain": terrain}),
        json!({"width": W, "height": H, "terrain": terrain, "profiles": {"a": [1, 1]}}),
        json!({"width": W, "height": H, "terrain": terrain, "profiles": {"no way": [0, 1]}}),
        json!({"width": W, "height": H, "terrain": terrain,
            "profiles": {"a": [0, 1], "b": [0, 2]}}),
        json!({"width": W, "height": H, "terrain": terrain, "profiles": {"a": [0, 300]}}),
    ] {
        api_error(
            s.pathd().put_map_json("bad", &body).await,
            400,
            "invalid_map",
        );
    }
    s.upload_json("ok", &upload(&terrain, &tables, "a")).await;
    let pathd = s.pathd();
    api_error(
        pathd
            .find_path("ok", &for_profile((0, 0), (1, 1), None, Some("nope")))
            .await,
        404,
        "profile_not_found",
    );
    let p = MapPatch {
        profiles: profile_changes(json!({"a": null})),
        ..Default::default()
    };
    api_error(pathd.patch_map("ok", &p).await, 400, "invalid_patch");
    let p = MapPatch {
        default_profile: Some("zzz".into()),
        ..Default::default()
    };
    api_error(pathd.patch_map("ok", &p).await, 400, "invalid_patch");
    // A plain map takes profiles: its costs become classes under `default`.
    let plain = json!({"width": 3, "height": 1, "costs": [1, 5, 1]});
    s.upload_json("plain", &plain).await;
    let p = MapPatch {
        profiles: profile_changes(json!({"fast": [0, 1, 1, 1, 1, 1]})),
        ..Default::default()
    };
    patch(&s, "plain", &p).await;
    let d = pathd
        .find_path("plain", &for_profile((0, 0), (2, 0), None, None))
        .await
        .unwrap();
    assert_eq!(d.cost, 6.0, "{d:?}");
    let f = pathd
        .find_path("plain", &for_profile((0, 0), (2, 0), None, Some("fast")))
        .await
        .unwrap();
    assert_eq!(f.cost, 2.0, "{f:?}");
}

/// Polls a query until it is no longer `503` (a structure being built); at most 60 s.
async fn settled(s: &TestServer, name: &str, q: &PathRequest) -> PathResult {
    let pathd = s.pathd_once();
    for _ in 0..600 {
        match pathd.find_path(name, q).await {
            Err(e) if e.status() == Some(503) => {}
            r => return r.unwrap(),
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{q:?} stayed 503");
}

#[tokio::test]
async fn each_profile_gets_its_own_derived_structures_sizes_and_flow_fields() {
    const N: usize = 64;
    let dirs = Dirs::new();
    let mut config = dirs.config();
    config.hpa_min_cells = (N * N) as u64;
    let s = TestServer::start(dirs, config).await;
    let mut rng = Rng(0x5eed_0004);
    // Classes 1 (open), 2 (water), 3 (rough), 0 (rock); `walker` is uniform (JPS+, subgoal
    // graph), `amphibian` weighted (HPA*).
    let terrain: Vec<u8> = (0..N * N)
        .map(|_| [1, 1, 1, 1, 1, 1, 2, 3, 3, 0][rng.below(10) as usize])
        .collect();
    let walker = table_of(&[(1, 1), (3, 1)]);
    let amphibian = table_of(&[(1, 1), (2, 3), (3, 2)]);
    let body = json!({"width": N, "height": N, "terrain": terrain,
        "profiles": {"walker": walker, "amphibian": amphibian}, "default_profile": "amphibian"});
    s.upload_json("big", &body).await;
    let wcosts = under(&terrain, &walker);
    let acosts = under(&terrain, &amphibian);
    let wgrid = Grid::from_costs(N as u32, N as u32, wcosts.clone(), Movement::Octile).unwrap();
    let agrid = Grid::from_costs(N as u32, N as u32, acosts.clone(), Movement::Octile).unwrap();
    let mut checked = 0;
    for _ in 0..40 {
        let (sx, sy) = (rng.below(N as u64) as usize, rng.below(N as u64) as usize);
        let (gx, gy) = (rng.below(N as u64) as usize, rng.below(N as u64) as usize);
        if wcosts[sy * N + sx] == 0 || wcosts[gy * N + gx] == 0 {
            continue;
        }
        let best = reference(&wcosts, N, N, (gx, gy), 1)[sy * N + sx];
        if best.is_infinite() {
            continue;
        }
        checked += 1;
        for algorithm in ["jps_plus", "subgoal", "jps"] {
            let q = for_profile((sx, sy), (gx, gy), Some(algorithm), Some("walker"));
            let v = settled(&s, "big", &q).await;
            assert_eq!(v.algorithm, algorithm, "{v:?}");
            let cost = v.cost;
            assert!((cost - best).abs() < 1e-6, "{algorithm}: {cost} vs {best}");
            assert!(
                wgrid.path_cost(&cells(&v.path)).is_some(),
                "{algorithm} legal"
            );
        }
        // HPA* on the weighted default: near-optimal and legal for it.
        if acosts[sy * N + sx] != 0 && acosts[gy * N + gx] != 0 {
            let abest = reference(&acosts, N, N, (gx, gy), 1)[sy * N + sx];
            let q = for_profile((sx, sy), (gx, gy), Some("hpa"), None);
            let v = settled(&s, "big", &q).await;
            if abest.is_finite() {
                let cost = v.cost;
                assert!(
                    cost >= abest - 1e-6 && cost <= abest * 1.2 + 1e-6,
                    "hpa {cost} {abest}"
                );
                assert!(agrid.path_cost(&cells(&v.path)).is_some());
            }
        }
        // A 2x2 agent of the walker profile: A* on its eroded map equals the reference.
        let fits = |x: usize, y: usize| {
            x + 1 < N
                && y + 1 < N
                && [(0, 0), (1, 0), (0, 1), (1, 1)]
                    .iter()
                    .all(|(dx, dy)| wcosts[(y + dy) * N + x + dx] != 0)
        };
        if fits(sx, sy) && fits(gx, gy) {
            let sized = reference(&wcosts, N, N, (gx, gy), 2)[sy * N + sx];
            let q = PathRequest {
                size: Some(2),
                ..for_profile((sx, sy), (gx, gy), None, Some("walker"))
            };
            let v = s.pathd().find_path("big", &q).await.unwrap();
            if sized.is_finite() {
                assert!((v.cost - sized).abs() < 1e-6, "{v:?}");
            } else {
                assert_eq!(v.status, "no_path");
            }
        }
    }
    assert!(checked >= 10, "enough reachable pairs: {checked}");
    // The summary shows the walker's own structures.
    let w = profile_summary(&s.pathd(), "big", "walker").await;
    let jps_plus = w.jps_plus.as_ref().expect("the walker's JPS+ table");
    assert_eq!(jps_plus.status, "ready", "{w:?}");
    assert_eq!(
        w.passable_cells,
        Some(wgrid.passable_cells() as u64),
        "{w:?}"
    );
    // Patches carry the walker's view over; its JPS+ table follows on the views lane
    // (derived from the previous version's, `made_by: update`) and stays exact.
    let mut terrain = terrain;
    for round in 0..3 {
        let changes: Vec<_> = (0..8)
            .map(|_| {
                let (x, y) = (rng.below(N as u64) as usize, rng.below(N as u64) as usize);
                let c = [0u8, 1, 3][rng.below(3) as usize];
                terrain[y * N + x] = c;
                (x, y, c as u32)
            })
            .collect();
        patch(&s, "big", &cell_patch(changes)).await;
        let wcosts = under(&terrain, &walker);
        let mut asked = 0;
        while asked < 5 {
            let (sx, sy) = (rng.below(N as u64) as usize, rng.below(N as u64) as usize);
            let (gx, gy) = (rng.below(N as u64) as usize, rng.below(N as u64) as usize);
            if wcosts[sy * N + sx] == 0 || wcosts[gy * N + gx] == 0 {
                continue;
            }
            asked += 1;
            let best = reference(&wcosts, N, N, (gx, gy), 1)[sy * N + sx];
            for algorithm in ["jps_plus", "auto", "astar"] {
                let q = for_profile((sx, sy), (gx, gy), Some(algorithm), Some("walker"));
                let v = settled(&s, "big", &q).await;
                if best.is_finite() {
                    let cost = v.cost;
                    assert!(
                        (cost - best).abs() < 1e-6,
                        "round {round} {algorithm}: {cost} vs {best}"
                    );
                } else {
                    assert_eq!(v.status, "no_path", "round {round} {algorithm}: {v:?}");
                }
            }
        }
    }
    let w = profile_summary(&s.pathd(), "big", "walker").await;
    let jps_plus = w.jps_plus.as_ref().expect("the walker's JPS+ table");
    assert_eq!(
        (jps_plus.status.as_str(), jps_plus.made_by.as_str()),
        ("ready", "update"),
        "{w:?}"
    );
    // A flow field for the walker: every reachable cell's cost is the walker's distance.
    let goal = (0..N * N).find(|&i| wcosts[i] != 0).unwrap();
    let (gx, gy) = (goal % N, goal / N);
    let f = s
        .pathd()
        .create_flow_field("big", &json!({"goal": [gx, gy], "profile": "walker"}))
        .await
        .unwrap();
    assert_eq!(f.profile.as_deref(), Some("walker"), "{f:?}");
    let dist = reference(&wcosts, N, N, (gx, gy), 1);
    let reachable = dist.iter().filter(|d| d.is_finite()).count() as u64;
    assert_eq!(f.reachable, reachable);
}

#[tokio::test]
async fn goals_snapping_and_nearest_follow_the_profile() {
    let s = TestServer::new().await;
    put_lake(&s).await;
    // Two water goals: the boat reaches the nearer; for the walker they are walls.
    let pathd = s.pathd();
    let q = PathRequest {
        profile: Some("boat".into()),
        ..PathRequest::to_goals([3, 3], &[[17, 9], [3, 9]])
    };
    let v = pathd.find_path("lake", &q).await.unwrap();
    assert_eq!(v.goal_index, Some(1), "{v:?}");
    assert!((v.cost - 6.0).abs() < 1e-9, "{v:?}");
    let q = PathRequest::to_goals([0, 0], &[[17, 9], [3, 9]]);
    api_error(pathd.find_path("lake", &q).await, 400, "goal_blocked");
    // The nearest cell a boat can use from the shore is water; the walker's is the shore.
    let near = |profile: Option<&str>| pathd_client::NearestRequest {
        at: [1, 5],
        radius: Some(4),
        profile: profile.map(str::to_owned),
        ..Default::default()
    };
    let v = pathd.nearest("lake", &near(Some("boat"))).await.unwrap();
    assert_eq!((v.x, v.y), (2, 5), "{v:?}");
    let v = pathd.nearest("lake", &near(None)).await.unwrap();
    assert_eq!((v.x, v.y), (1, 5), "{v:?}");
    api_error(
        pathd.nearest("lake", &near(Some("nope"))).await,
        404,
        "profile_not_found",
    );
    // A boat asked to start on the shore snaps into the water.
    let q = PathRequest {
        snap: Some(2),
        ..for_profile((1, 5), (16, 5), None, Some("boat"))
    };
    let v = pathd.find_path("lake", &q).await.unwrap();
    assert_eq!(v.snapped, Some(true), "{v:?}");
    assert_eq!(v.start, Some([2, 5]), "{v:?}");
}

#[tokio::test]
async fn distance_tables_sight_and_random_points_follow_the_profile() {
    let s = TestServer::new().await;
    put_lake(&s).await;
    let pathd = s.pathd();
    let matrix = |profile: Option<&str>| MatrixRequest {
        sources: vec![[3, 3]],
        targets: vec![[16, 3], [0, 0]],
        profile: profile.map(str::to_owned),
        ..Default::default()
    };
    // The boat crosses the lake and cannot reach the field; ground walkers cannot start
    // in the water.
    let v = pathd.matrix("lake", &matrix(Some("boat"))).await.unwrap();
    assert_eq!(v.costs, vec![vec![Some(13.0), None]], "{v:?}");
    let v = pathd.matrix("lake", &matrix(None)).await.unwrap();
    assert_eq!(v.costs, vec![vec![None, None]], "{v:?}");
    // Sight: each profile's walls block its view (water is a wall for ground walkers).
    let boat = pathd_client::LosRequest {
        from: [3, 3],
        to: [16, 3],
        profile: Some("boat".into()),
        ..Default::default()
    };
    let v = pathd.los_with("lake", &boat).await.unwrap();
    assert!(v.visible, "{v:?}");
    let v = pathd.los("lake", [0, 3], [19, 3]).await.unwrap();
    assert_eq!((v.visible, v.blocked_at), (false, Some([2, 3])), "{v:?}");
    // Random points of a boat stay in the water.
    for seed in 0..20 {
        let q = pathd_client::RandomRequest {
            at: [5, 5],
            radius: 6.0,
            seed: Some(seed),
            profile: Some("boat".into()),
            ..Default::default()
        };
        let v = pathd.random_with("lake", &q).await.unwrap();
        assert!((2..18).contains(&v.x) && (2..10).contains(&v.y), "{v:?}");
    }
}
