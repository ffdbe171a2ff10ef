//! Subscriptions and flow fields behind a plain round-robin load balancer: a real `nginx`
//! on loopback in front of three real pathd replicas sharing one NATS JetStream
//! (`src/cluster/`).
//!
//! Needs `nginx` and `nats-server` (Debian packages; `scripts/test.sh` installs both through
//! `scripts/ensure-nats.sh` and `scripts/ensure-nginx.sh`). Without them these tests say so
//! and pass, except under CI (`CI` set), where they fail.
//!
//! Requests that check `X-Pathd-Replica`/`X-Pathd-Forwarded-By` stay raw, and so do the
//! event streams that the tests follow connection by connection, to see each end with its
//! dead owner (or after `deleted`) and resume it by hand with `Last-Event-ID`, which the
//! client would do unseen.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{next_event, rects_patch};
use crate::live::sse::{Ev, Sse};
use crate::replicas::{Nats, Replica, api_error, free_port, nats_server, open_text};
use pathd_client::MapPatch;

pub(crate) fn nginx() -> Option<PathBuf> {
    let found = ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "nginx is not installed (scripts/test.sh installs it)"
        );
        eprintln!("SKIPPED: nginx is not installed (apt-get install nginx)");
    }
    found
}

/// One `nginx` balancing round-robin over `upstreams`, killed by pid on drop.
pub(crate) struct Proxy {
    pub(crate) port: u16,
    child: Child,
}

impl Proxy {
    pub(crate) fn start(bin: &Path, dir: &Path, upstreams: &[u16]) -> Proxy {
        let port = free_port();
        std::fs::create_dir_all(dir).unwrap();
        let servers: String = upstreams
            .iter()
            .map(|p| format!("    server 127.0.0.1:{p};\n"))
            .collect();
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
        let d = dir.display();
        let conf = format!(
            "{user}worker_processes 1;\n\
             events {{ worker_connections 512; }}\n\
             http {{\n\
               access_log off;\n\
               client_body_temp_path {d}/body;\n\
               proxy_temp_path {d}/proxy;\n\
               fastcgi_temp_path {d}/fastcgi;\n\
               uwsgi_temp_path {d}/uwsgi;\n\
               scgi_temp_path {d}/scgi;\n\
               upstream pathd {{\n{servers}  }}\n\
               server {{\n\
                 listen 127.0.0.1:{port};\n\
                 location / {{\n\
                   proxy_pass http://pathd;\n\
                   proxy_http_version 1.1;\n\
                   proxy_set_header Connection \"\";\n\
                   proxy_buffering off;\n\
                   proxy_read_timeout 1h;\n\
                   proxy_connect_timeout 1s;\n\
                 }}\n\
               }}\n\
             }}\n",
            user = if root { "user root;\n" } else { "" },
        );
        let path = dir.join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        let child = Command::new(bin)
            .arg("-p")
            .arg(dir)
            .arg("-e")
            .arg("stderr")
            .arg("-c")
            .arg(&path)
            .arg("-g")
            .arg(format!(
                "daemon off; pid {}/nginx.pid; error_log stderr;",
                dir.display()
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "nginx never listened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Proxy { port, child }
    }

    pub(crate) fn at(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Proxy {
    /// SIGTERM, not SIGKILL: nginx's master then stops its worker, which a killed master
    /// would leave running (and listening) as an orphan.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until every replica's `/readyz` lists `n` live members.
pub(crate) async fn members(rs: &[&Replica], n: usize) {
    let t = Instant::now();
    loop {
        let mut counts = Vec::new();
        for r in rs {
            let v = r.pathd.ready().await.unwrap();
            counts.push(v["cluster"]["members"].as_array().map_or(0, Vec::len));
        }
        if counts.iter().all(|&c| c == n) {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "members never {n}: {counts:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Three replicas on one NATS behind a round-robin nginx (with a client), the 60x20 open
/// map `open` put through it; `None` (the test passes, saying so) without nats-server or
/// nginx.
async fn fleet() -> Option<(
    Proxy,
    Vec<Replica>,
    Nats,
    reqwest::Client,
    tempfile::TempDir,
)> {
    let (Some(nats_bin), Some(nginx_bin)) = (nats_server(), nginx()) else {
        return None;
    };
    let tmp = tempfile::tempdir().unwrap();
    let nats = Nats::start(&nats_bin, &tmp.path().join("js"), vec![]);
    let rs: Vec<Replica> = (0..3)
        .map(|_| Replica::start(&nats.url(), tmp.path(), &[]))
        .collect();
    for r in &rs {
        r.ready().await;
    }
    members(&rs.iter().collect::<Vec<_>>(), 3).await;
    let proxy = Proxy::start(
        &nginx_bin,
        &tmp.path().join("nginx"),
        &rs.iter().map(|r| r.port).collect::<Vec<_>>(),
    );
    let http = reqwest::Client::new();
    let (created, m) = through(&proxy)
        .put_map_text("open", &open_text(60, 20))
        .await
        .unwrap();
    assert!(created, "{m:?}");
    Some((proxy, rs, nats, http, tmp))
}

/// The Rust client through the proxy, without retries.
fn through(proxy: &Proxy) -> pathd_client::Client {
    crate::common::client_without_retries(&proxy.at(""))
}

/// The replicas of `rs` but the `killed`th.
fn others(rs: &[Replica], killed: usize) -> Vec<&Replica> {
    let all = rs.iter().enumerate();
    all.filter(|(i, _)| *i != killed).map(|(_, r)| r).collect()
}

/// Kills the replica whose id is `id` with -9; its index in `rs`.
async fn kill9(rs: &mut [Replica], id: &str) -> usize {
    let mut found = None;
    for (i, r) in rs.iter().enumerate() {
        if r.pathd.ready().await.unwrap()["cluster"]["replica"] == id {
            found = Some(i);
        }
    }
    let i = found.expect("the owner is one of the replicas");
    rs[i].kill9();
    i
}

/// A wall across the 60x20 map at column `x`, leaving row `gap` open; `clear` is the column
/// of the previous wall, opened again.
fn wall(x: u32, gap: u32, clear: Option<u32>) -> MapPatch {
    let mut rects = Vec::new();
    if let Some(c) = clear {
        rects.push([c, 0, 1, 20, 1]);
    }
    if gap > 0 {
        rects.push([x, 0, 1, gap, 0]);
    }
    if gap < 19 {
        rects.push([x, gap + 1, 1, 19 - gap, 0]);
    }
    rects_patch(&rects)
}

/// One subscription followed through the proxy: its stream and the last `seq` it saw.
struct Followed {
    id: String,
    secret: String,
    events: Sse,
    last: u64,
}

impl Followed {
    /// The next event, asserting it follows `last` exactly (no gap, no duplicate).
    fn take(&mut self, ev: Ev) -> Ev {
        assert_eq!(
            ev.seq(),
            self.last + 1,
            "{}: after {} came {:?}",
            self.id,
            self.last,
            ev.data
        );
        assert_eq!(ev.id.as_deref(), Some(ev.seq().to_string().as_str()));
        assert_eq!(ev.data["id"], self.id.as_str());
        self.last = ev.seq();
        ev
    }
}

async fn send(req: reqwest::RequestBuilder) -> (u16, reqwest::header::HeaderMap, Value) {
    let r = req.send().await.unwrap();
    let headers = r.headers().clone();
    let (s, v) = crate::common::json(r).await;
    (s, headers, v)
}

/// Asserts `ev` is event `seq` with `reason`.
fn is(ev: &Ev, seq: u64, reason: &str) {
    assert_eq!((ev.seq(), ev.reason()), (seq, reason), "{:?}", ev.data);
}

/// Patches the map `open` through the proxy (the client, without retries).
async fn patch_open(proxy: &Proxy, patch: MapPatch) {
    (through(proxy).patch_map("open", &patch).await)
        .unwrap_or_else(|e| panic!("patch through the proxy: {e}"));
}

fn served_by(h: &reqwest::header::HeaderMap) -> String {
    h.get("x-pathd-replica")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// Subscriptions created, read, moved, followed and deleted through a round-robin nginx;
/// patches through it repair them; the owner of one is killed with -9 and every stream goes
/// on through the proxy (reconnecting with `Last-Event-ID`), with no gap or duplicate where
/// the resume is exact and a `resync` at the next `seq` where the owner died.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_work_behind_round_robin_nginx_and_survive_their_owner() {
    let Some((proxy, mut rs, nats, http, _tmp)) = fleet().await else {
        return;
    };

    // Three subscriptions, created through the proxy (so on different replicas).
    let mut subs = Vec::new();
    let mut owners = Vec::new();
    for row in [3, 10, 16] {
        let (s, h, v) = send(
            http.post(proxy.at("/v1/maps/open/subscriptions"))
                .json(&json!({"start": [2, row], "goal": [57, row], "min_version": 1})),
        )
        .await;
        assert_eq!(s, 201, "{v}");
        let id = v["id"].as_str().unwrap().to_owned();
        assert!(id.starts_with(&format!("{}-", served_by(&h))), "{id} {h:?}");
        owners.push(served_by(&h));
        let mut events = Sse::open(
            &http,
            &proxy.at(&format!("/v1/subscriptions/{id}/events")),
            None,
        )
        .await;
        let first = events.expect().await;
        assert_eq!((first.seq(), first.reason()), (1, "initial"));
        subs.push(Followed {
            id,
            secret: v["secret"].as_str().unwrap().to_owned(),
            events,
            last: 1,
        });
    }

    // Reads through the proxy reach every replica; the owner answers each one.
    for f in &subs {
        let mut forwarded = 0;
        for _ in 0..3 {
            let (s, h, v) = send(http.get(proxy.at(&format!("/v1/subscriptions/{}", f.id)))).await;
            assert_eq!((s, v["id"].as_str()), (200, Some(f.id.as_str())), "{v}");
            assert_eq!(served_by(&h), f.id[..12], "{h:?}");
            forwarded += h.contains_key("x-pathd-forwarded-by") as usize;
        }
        assert_eq!(
            forwarded, 2,
            "two of three round-robin reads were forwarded"
        );
    }

    // A patch through the proxy repairs every subscription, whoever owns it.
    patch_open(&proxy, wall(30, 19, None)).await;
    for f in &mut subs {
        let ev = f.events.expect().await;
        let ev = f.take(ev);
        assert_eq!(ev.reason(), "blocked", "{:?}", ev.data);
    }

    // Moves through the proxy need the secret, and reach the owner (no admin token here:
    // without the secret the request carries none).
    let pathd = through(&proxy);
    let id = subs[1].id.clone();
    api_error(
        pathd.move_subscription(&id, None, [2, 11]).await,
        403,
        "forbidden",
    );
    let v = pathd
        .move_subscription(&id, Some(&subs[1].secret), [3, 12])
        .await
        .unwrap();
    assert_eq!(v.position, [3, 12], "{v:?}");
    if v.seq > subs[1].last {
        let ev = subs[1].events.expect().await;
        subs[1].take(ev);
    }

    // Kill -9 the owner of the first subscription.
    let victim = owners[0].clone();
    let killed = kill9(&mut rs, &victim).await;
    let alive = others(&rs, killed);

    // A patch while the owner is gone: streams still open get its event at once; the ones
    // that ran through the dead replica ended, and reconnect through the proxy.
    patch_open(&proxy, wall(40, 0, Some(30))).await;
    for f in &mut subs {
        let next = tokio::time::timeout(Duration::from_secs(5), f.events.next()).await;
        match next {
            Ok(Some(ev)) => {
                f.take(ev);
            }
            Ok(None) => {
                // Ended with the dead replica: reconnect where we stopped.
                let url = proxy.at(&format!("/v1/subscriptions/{}/events", f.id));
                f.events = Sse::open(&http, &url, Some(f.last)).await;
                let ev = f.events.expect().await;
                let ev = f.take(ev);
                if f.id[..12] == victim {
                    assert_eq!(ev.reason(), "resync", "{:?}", ev.data);
                    assert_eq!(ev.data["map_version"], 3, "{:?}", ev.data);
                }
            }
            Err(_) => panic!("{}: neither an event nor the end within 5 s", f.id),
        }
    }

    // The next patch reaches every stream within 5 s, the taken-over one included.
    patch_open(&proxy, wall(20, 10, Some(40))).await;
    for f in &mut subs {
        let ev = tokio::time::timeout(Duration::from_secs(5), f.events.expect())
            .await
            .unwrap_or_else(|_| panic!("{}: no event within 5 s of the patch", f.id));
        let ev = f.take(ev);
        assert_eq!(ev.data["map_version"], 4, "{:?}", ev.data);
    }
    let (s, h, v) = send(http.get(proxy.at(&format!("/v1/subscriptions/{}", subs[0].id)))).await;
    assert_eq!((s, v["seq"].as_u64()), (200, Some(subs[0].last)), "{v}");
    let new_owner = served_by(&h);
    assert!(!new_owner.is_empty() && new_owner != victim, "{new_owner}");

    // Signals: takeovers and forwarded requests are counted; /readyz shows the members.
    let mut takeovers = 0.0;
    let mut forwarded = 0.0;
    for r in &alive {
        let text = r.pathd.metrics().await.unwrap();
        for line in text.lines() {
            let value = || line.rsplit(' ').next().unwrap().parse::<f64>().unwrap();
            if line.starts_with("pathd_subscription_takeovers_total") {
                takeovers += value();
            } else if line.starts_with("pathd_forwarded_requests_total{") {
                forwarded += value();
            }
        }
    }
    assert!(takeovers >= 1.0, "{takeovers}");
    assert!(forwarded >= 1.0, "{forwarded}");
    members(&alive, 2).await;

    // Deletes through the proxy end every stream with `deleted`.
    for f in &mut subs {
        pathd
            .delete_subscription(&f.id, Some(&f.secret))
            .await
            .unwrap();
        let ev = f.events.expect().await;
        assert_eq!(f.take(ev).reason(), "deleted");
        assert!(f.events.next().await.is_none(), "the stream ends");
        for _ in 0..2 {
            api_error(
                pathd.get_subscription(&f.id).await,
                404,
                "subscription_not_found",
            );
        }
    }
    drop(proxy);
    drop(nats);
}

/// Records follow their subscription: one whose map is deleted ends and its record goes (no
/// replica answers for it); a replica stopped with SIGTERM leaves the membership at once and
/// its subscription is served by the other, same id and secret, `seq` continued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_follow_their_subscription_and_a_stopped_replica_hands_over() {
    let Some(nats_bin) = nats_server() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let nats = Nats::start(&nats_bin, &tmp.path().join("js"), vec![]);
    let mut a = Replica::start(&nats.url(), tmp.path(), &[]);
    let b = Replica::start(&nats.url(), tmp.path(), &[]);
    a.ready().await;
    b.ready().await;
    members(&[&a, &b], 2).await;
    let owner_a = a.pathd.ready().await.unwrap()["cluster"]["replica"]
        .as_str()
        .unwrap()
        .to_owned();
    for name in ["gone", "kept"] {
        assert!(a.put(name, &open_text(30, 10)).await.0);
    }
    let create = async |map: &str| {
        let (s, h, v) = send(
            a.client
                .post(a.at(&format!("/v1/maps/{map}/subscriptions")))
                .json(&json!({"start": [1, 1], "goal": [28, 8], "min_version": 1})),
        )
        .await;
        assert_eq!((s, served_by(&h)), (201, owner_a.clone()), "{v}");
        v
    };

    // Its map deleted: the stream (through B) ends with `map_deleted`, and the record goes.
    let sub = create("gone").await;
    let id = sub["id"].as_str().unwrap();
    let url = b.at(&format!("/v1/subscriptions/{id}"));
    let (s, h, v) = send(b.client.get(&url)).await;
    assert_eq!((s, served_by(&h)), (200, owner_a.clone()), "{v}");
    assert!(h.contains_key("x-pathd-forwarded-by"), "{h:?}");
    let (s, h, v) = send(
        b.client
            .patch(&url)
            .header("x-subscription-secret", "wrong")
            .json(&json!({"position": [2, 2]})),
    )
    .await;
    assert_eq!((s, served_by(&h)), (403, owner_a.clone()), "{v}");
    let mut events = b.pathd.subscription_events(id, None);
    assert_eq!(next_event(&mut events).await.reason, "initial");
    b.pathd.delete_map("gone").await.unwrap();
    assert_eq!(next_event(&mut events).await.reason, "map_deleted");
    let t = Instant::now();
    loop {
        let e = match b.pathd.get_subscription(id).await {
            Err(e) if e.status() == Some(404) => e,
            other => {
                assert!(
                    t.elapsed() < Duration::from_secs(10),
                    "record never went: {other:?}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        assert_eq!(e.code(), Some("subscription_not_found"), "{e}");
        break;
    }

    // A stopped with SIGTERM: B serves its subscription, moves included (same secret).
    let sub = create("kept").await;
    let id = sub["id"].as_str().unwrap();
    let secret = sub["secret"].as_str().unwrap();
    let url = b.at(&format!("/v1/subscriptions/{id}"));
    let pid = a.pid().unwrap();
    let ok = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    members(&[&b], 1).await;
    let (s, h, v) = send(b.client.get(&url)).await;
    assert_eq!(
        (s, v["seq"].as_u64()),
        (200, Some(2)),
        "the resync after 1: {v}"
    );
    assert_ne!(served_by(&h), owner_a, "{h:?}");
    let mut events = b.pathd.subscription_events(id, Some(1));
    let ev = next_event(&mut events).await;
    assert_eq!((ev.seq, ev.reason.as_str()), (2, "resync"), "{ev:?}");
    let v = b
        .pathd
        .move_subscription(id, Some(secret), [1, 8])
        .await
        .unwrap();
    assert_eq!(v.position, [1, 8], "{v:?}");
    a.kill9();
    drop(nats);
}

/// Flow fields belong to the world too (issue 28): one created through a round-robin nginx
/// is read, followed and deleted through any replica; its owner is killed with -9 and a
/// live replica recomputes it from its stored record on the current map and serves it on,
/// same id and secret, its stream continuing through the proxy with a `resync` that says
/// why (the repairs the dead owner made cannot be replayed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_fields_survive_their_owner_behind_round_robin_nginx() {
    let Some((proxy, mut rs, nats, http, _tmp)) = fleet().await else {
        return;
    };
    let create = json!({"goal": [57, 10], "region": {"x": 0, "y": 0, "width": 60, "height": 20}});
    let (s, h, v) = send(
        http.post(proxy.at("/v1/maps/open/flowfields"))
            .json(&create),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_owned();
    let secret = v["secret"].as_str().unwrap().to_owned();
    let victim = served_by(&h);
    assert!(id.starts_with(&format!("{victim}-")), "{id} {h:?}");
    let url = proxy.at(&format!("/v1/flowfields/{id}"));

    // Reads through the proxy reach every replica; the owner answers each one.
    let mut forwarded = 0;
    for _ in 0..3 {
        let (s, h, v) = send(http.get(&url)).await;
        assert_eq!((s, v["id"].as_str()), (200, Some(id.as_str())), "{v}");
        assert_eq!(served_by(&h), victim, "{h:?}");
        forwarded += h.contains_key("x-pathd-forwarded-by") as usize;
    }
    assert_eq!(
        forwarded, 2,
        "two of three round-robin reads were forwarded"
    );

    // Followed through the proxy; a patch repairs it.
    let mut events = Sse::open(&http, &format!("{url}/events"), None).await;
    let first = events.expect().await;
    is(&first, 0, "current");
    let mut last = 0;
    patch_open(&proxy, wall(30, 19, None)).await;
    let ev = events.expect().await;
    is(&ev, last + 1, "changed");
    last = ev.seq();

    // Kill -9 its owner, and patch the map while it is gone.
    let killed = kill9(&mut rs, &victim).await;
    patch_open(&proxy, wall(40, 0, Some(30))).await;

    // The stream ran through the dead owner: it ends, and goes on through the proxy where
    // it stopped, with a `resync` at the next `seq` that says why.
    let ended = tokio::time::timeout(Duration::from_secs(5), events.next()).await;
    assert!(
        matches!(ended, Ok(None)),
        "the stream ends with its owner: {ended:?}"
    );
    let mut events = Sse::open(&http, &format!("{url}/events"), Some(last)).await;
    let ev = events.expect().await;
    is(&ev, last + 1, "resync");
    assert_eq!(ev.data["why"], "taken_over", "{:?}", ev.data);
    assert_eq!(ev.data["map_version"], 3, "{:?}", ev.data);
    assert_eq!(ev.data["id"], id.as_str());
    last = ev.seq();

    // Served again through the proxy by a live replica, recomputed on the current map: the
    // same field as one made fresh now.
    let (s, h, taken) = send(http.get(&url)).await;
    assert_eq!((s, taken["seq"].as_u64()), (200, Some(last)), "{taken}");
    let new_owner = served_by(&h);
    assert!(!new_owner.is_empty() && new_owner != victim, "{new_owner}");
    assert_eq!(taken["map_version"], 3, "{taken}");
    let (s, _, fresh) = send(
        http.post(proxy.at("/v1/maps/open/flowfields"))
            .json(&create),
    )
    .await;
    assert_eq!(s, 201, "{fresh}");
    for k in ["directions", "costs", "reachable", "goal", "region", "size"] {
        assert_eq!(taken[k], fresh[k], "{k}");
    }

    // The next patch reaches the stream within 5 s, from the new owner.
    patch_open(&proxy, wall(20, 10, Some(40))).await;
    let ev = tokio::time::timeout(Duration::from_secs(5), events.expect())
        .await
        .expect("an event within 5 s of the patch");
    is(&ev, last + 1, "changed");
    assert_eq!(ev.data["map_version"], 4, "{:?}", ev.data);

    // GET and DELETE through the proxy reach the new owner from any replica; the secret
    // from the create answer still rules.
    let alive = others(&rs, killed);
    for r in &alive {
        let (s, h, v) = send(r.client.get(r.at(&format!("/v1/flowfields/{id}")))).await;
        assert_eq!((s, served_by(&h)), (200, new_owner.clone()), "{v}");
    }
    let pathd = through(&proxy);
    api_error(
        pathd.delete_flow_field(&id, Some("wrong")).await,
        403,
        "forbidden",
    );
    pathd.delete_flow_field(&id, Some(&secret)).await.unwrap();
    let ev = events.expect().await;
    is(&ev, last + 2, "deleted");
    assert!(events.next().await.is_none(), "the stream ends");
    for r in &alive {
        api_error(
            r.pathd.get_flow_field(&id).await,
            404,
            "flowfield_not_found",
        );
    }
    drop(proxy);
    drop(nats);
}
