//! A client for pathd, the pathfinding microservice (`reqwest`-based, async).
//!
//! Every method maps to one operation of `openapi.yaml`. Error answers are
//! [`Error::Api`] with the stable code; a `503` that carries `Retry-After` is retried after
//! the time the server asked for ([`Client::retries`] times); each attempt has
//! [`Client::timeout`]; dropping a call's future cancels it. Event streams
//! ([`Client::subscription_events`]) resume after a dropped connection with
//! `Last-Event-ID`, so no event is missed (the server replays, or sends one `resync` with
//! the full state).
//!
//! ```no_run
//! # async fn run() -> Result<(), pathd_client::Error> {
//! let pathd = pathd_client::Client::new("http://localhost:8080");
//! let r = pathd
//!     .find_path("arena2", &pathd_client::PathRequest::new([5, 100], [100, 100]))
//!     .await?;
//! println!("{} {}", r.status, r.cost);
//! # Ok(()) }
//! ```

mod error;
mod live;
mod sse;
mod types;

use std::time::Duration;

use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::json;

pub use error::Error;
use error::error_of;
pub use sse::{Event, EventStream, Frame, Frames};
pub use types::*;

/// Which token a request carries.
#[derive(Clone, Copy)]
enum Auth {
    None,
    Query,
    Admin,
}

/// A pathd client; cheap to clone (one connection pool).
#[derive(Clone)]
pub struct Client {
    base: String,
    http: reqwest::Client,
    /// Bearer token for map writes.
    pub admin_token: Option<String>,
    /// Bearer token for reads and queries (the admin token when unset).
    pub query_token: Option<String>,
    /// Bound on each attempt (headers and body; for streams, the headers).
    pub timeout: Duration,
    /// Retries of a `503` with `Retry-After`.
    pub retries: u32,
    /// Cap on each wait before a retry.
    pub max_retry_delay: Duration,
    /// Wait before an event stream reconnects (`retry:` overrides).
    pub reconnect_delay: Duration,
    /// Failed reconnects in a row before a stream gives up.
    pub max_reconnect_failures: u32,
}

impl Client {
    /// A client of the server at `base_url` (e.g. `http://localhost:8080`) with the
    /// defaults: 30 s per attempt, 3 retries of at most 30 s each, reconnects after 500 ms.
    pub fn new(base_url: &str) -> Self {
        Client {
            base: base_url.trim_end_matches('/').to_owned(),
            http: reqwest::Client::new(),
            admin_token: None,
            query_token: None,
            timeout: Duration::from_secs(30),
            retries: 3,
            max_retry_delay: Duration::from_secs(30),
            reconnect_delay: Duration::from_millis(500),
            max_reconnect_failures: 10,
        }
    }

    /// The same client with an admin token.
    pub fn with_admin_token(mut self, token: &str) -> Self {
        self.admin_token = Some(token.to_owned());
        self
    }

    fn request(&self, method: Method, path: &str, auth: Auth) -> RequestBuilder {
        let token = match auth {
            Auth::None => None,
            Auth::Query => self.query_token.as_ref().or(self.admin_token.as_ref()),
            Auth::Admin => self.admin_token.as_ref().or(self.query_token.as_ref()),
        };
        let b = self.http.request(method, format!("{}{path}", self.base));
        match token {
            Some(t) => b.bearer_auth(t),
            None => b,
        }
    }

    /// Sends with retries; `build` makes each attempt's request.
    async fn send(&self, build: impl Fn() -> RequestBuilder) -> Result<Response, Error> {
        let mut attempt = 0;
        loop {
            let resp = build().timeout(self.timeout).send().await?;
            if resp.status().is_success() {
                return Ok(resp);
            }
            let err = error_of(resp).await;
            match err {
                Error::Api {
                    status: 503,
                    retry_after: Some(s),
                    ..
                } if attempt < self.retries => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_secs(s).min(self.max_retry_delay)).await;
                }
                _ => return Err(err),
            }
        }
    }

    async fn json<T: DeserializeOwned>(
        &self,
        build: impl Fn() -> RequestBuilder,
    ) -> Result<T, Error> {
        Ok(self.send(build).await?.json().await?)
    }

    /// `GET /readyz`.
    pub async fn ready(&self) -> Result<serde_json::Value, Error> {
        self.json(|| self.request(Method::GET, "/readyz", Auth::None))
            .await
    }

    /// `GET /healthz`: liveness, with the damaged maps and cut logs (and the store and
    /// cluster with `--store nats://...`).
    pub async fn healthz(&self) -> Result<Health, Error> {
        self.json(|| self.request(Method::GET, "/healthz", Auth::None))
            .await
    }

    /// `GET /metrics`: Prometheus text.
    pub async fn metrics(&self) -> Result<String, Error> {
        let r = self
            .send(|| self.request(Method::GET, "/metrics", Auth::None))
            .await?;
        Ok(r.text().await?)
    }

    /// `GET /v1/maps`.
    pub async fn list_maps(&self) -> Result<MapList, Error> {
        self.json(|| self.request(Method::GET, "/v1/maps", Auth::Query))
            .await
    }

    /// `GET /v1/maps/{name}` (with `min_version`, wait for this replica to have it).
    pub async fn get_map(&self, name: &str, min_version: Option<u64>) -> Result<MapSummary, Error> {
        let path = format!("/v1/maps/{name}");
        self.json(|| {
            let b = self.request(Method::GET, &path, Auth::Query);
            match min_version {
                Some(v) => b.query(&[("min_version", v)]),
                None => b,
            }
        })
        .await
    }

    /// `GET /v1/maps/{name}` as a Moving AI file.
    pub async fn get_map_text(&self, name: &str) -> Result<String, Error> {
        let path = format!("/v1/maps/{name}");
        let r = self
            .send(|| {
                self.request(Method::GET, &path, Auth::Query)
                    .header("accept", "text/plain")
            })
            .await?;
        Ok(r.text().await?)
    }

    /// `PUT /v1/maps/{name}` with a Moving AI file: the summary and whether it was new.
    pub async fn put_map_text(&self, name: &str, text: &str) -> Result<(bool, MapSummary), Error> {
        self.put_map_text_with(name, text, None).await
    }

    /// `PUT /v1/maps/{name}` with a Moving AI file and a `movement` (`octile` or
    /// `cardinal`) that overrides its `type` line: the summary and whether it was new.
    pub async fn put_map_text_with(
        &self,
        name: &str,
        text: &str,
        movement: Option<&str>,
    ) -> Result<(bool, MapSummary), Error> {
        let path = format!("/v1/maps/{name}");
        let r = self
            .send(|| {
                let b = self
                    .request(Method::PUT, &path, Auth::Admin)
                    .header("content-type", "text/plain")
                    .body(text.to_owned());
                match movement {
                    Some(m) => b.query(&[("movement", m)]),
                    None => b,
                }
            })
            .await?;
        let created = r.status() == StatusCode::CREATED;
        Ok((created, r.json().await?))
    }

    /// `PUT /v1/maps/{name}` with JSON (costs or rows): the summary and whether it was new.
    pub async fn put_map_json(
        &self,
        name: &str,
        map: &serde_json::Value,
    ) -> Result<(bool, MapSummary), Error> {
        let path = format!("/v1/maps/{name}");
        let r = self
            .send(|| self.request(Method::PUT, &path, Auth::Admin).json(map))
            .await?;
        let created = r.status() == StatusCode::CREATED;
        Ok((created, r.json().await?))
    }

    /// `DELETE /v1/maps/{name}`.
    pub async fn delete_map(&self, name: &str) -> Result<(), Error> {
        let path = format!("/v1/maps/{name}");
        self.send(|| self.request(Method::DELETE, &path, Auth::Admin))
            .await?;
        Ok(())
    }

    /// `PATCH /v1/maps/{name}`.
    pub async fn patch_map(&self, name: &str, patch: &MapPatch) -> Result<PatchResult, Error> {
        let path = format!("/v1/maps/{name}");
        self.json(|| self.request(Method::PATCH, &path, Auth::Admin).json(patch))
            .await
    }

    /// `POST /v1/maps/{name}/path`.
    pub async fn find_path(&self, name: &str, q: &PathRequest) -> Result<PathResult, Error> {
        let path = format!("/v1/maps/{name}/path");
        self.json(|| self.request(Method::POST, &path, Auth::Query).json(q))
            .await
    }

    /// `POST /v1/maps/{name}/paths`.
    pub async fn find_paths(
        &self,
        name: &str,
        queries: &[PathRequest],
    ) -> Result<BatchResponse, Error> {
        let path = format!("/v1/maps/{name}/paths");
        let body = json!({ "queries": queries });
        self.json(|| self.request(Method::POST, &path, Auth::Query).json(&body))
            .await
    }

    /// `POST /v1/maps/{name}/paths` with its options (a batch-level `min_version`).
    pub async fn find_paths_with(
        &self,
        name: &str,
        batch: &BatchRequest,
    ) -> Result<BatchResponse, Error> {
        let path = format!("/v1/maps/{name}/paths");
        self.json(|| self.request(Method::POST, &path, Auth::Query).json(batch))
            .await
    }

    /// `POST /v1/maps/{name}/posthoc`: the query's search trace in the Posthoc format.
    pub async fn find_path_posthoc(
        &self,
        name: &str,
        q: &PathRequest,
    ) -> Result<PosthocTrace, Error> {
        let path = format!("/v1/maps/{name}/posthoc");
        self.json(|| self.request(Method::POST, &path, Auth::Query).json(q))
            .await
    }

    /// `GET /v1/maps/{name}/cells` as `application/octet-stream`: the `width * height`
    /// row-major cost bytes (`0` blocked) of the current version, as a profile sees them
    /// (or the terrain classes).
    pub async fn get_map_cells(&self, name: &str, q: &CellsRequest) -> Result<Vec<u8>, Error> {
        let path = format!("/v1/maps/{name}/cells");
        let r = self
            .send(|| {
                let mut b = self
                    .request(Method::GET, &path, Auth::Query)
                    .header("accept", "application/octet-stream");
                if let Some(p) = &q.profile {
                    b = b.query(&[("profile", p)]);
                }
                if q.terrain {
                    b = b.query(&[("terrain", true)]);
                }
                b
            })
            .await?;
        Ok(r.bytes().await?.to_vec())
    }

    /// `POST /v1/maps/{name}/matrix`: path costs from each source to each target.
    pub async fn matrix(&self, name: &str, m: &MatrixRequest) -> Result<MatrixResponse, Error> {
        let path = format!("/v1/maps/{name}/matrix");
        self.json(|| self.request(Method::POST, &path, Auth::Query).json(m))
            .await
    }

    /// `POST /v1/maps/{name}/los`: line of sight, with the first blocking cell.
    pub async fn los(&self, name: &str, from: Point, to: Point) -> Result<LosResponse, Error> {
        self.los_with(
            name,
            &LosRequest {
                from,
                to,
                ..Default::default()
            },
        )
        .await
    }

    /// `POST /v1/maps/{name}/los` with its options (a profile, `min_version`).
    pub async fn los_with(&self, name: &str, q: &LosRequest) -> Result<LosResponse, Error> {
        let path = format!("/v1/maps/{name}/los");
        self.json(|| self.request(Method::POST, &path, Auth::Query).json(q))
            .await
    }

    /// `GET /v1/maps/{name}/nearest`: the usable cell (where a `size` agent of the
    /// profile fits) nearest to `at`, at most `radius` cells away in x and in y; `404
    /// no_usable_cell` when there is none.
    pub async fn nearest(&self, name: &str, q: &NearestRequest) -> Result<NearestCell, Error> {
        let path = format!("/v1/maps/{name}/nearest");
        self.json(|| {
            let mut b = self
                .request(Method::GET, &path, Auth::Query)
                .query(&[("x", q.at[0]), ("y", q.at[1])]);
            if let Some(r) = q.radius {
                b = b.query(&[("radius", r)]);
            }
            if let Some(s) = q.size {
                b = b.query(&[("size", s)]);
            }
            if let Some(p) = &q.profile {
                b = b.query(&[("profile", p)]);
            }
            b
        })
        .await
    }

    /// `GET /v1/maps/{name}/random`: a uniformly random cell within path cost `radius` of
    /// `at` (`seed`: the same cell for the same seed and map version).
    pub async fn random(
        &self,
        name: &str,
        at: Point,
        radius: f64,
        seed: Option<u64>,
    ) -> Result<RandomResponse, Error> {
        let q = RandomRequest {
            at,
            radius,
            seed,
            ..Default::default()
        };
        self.random_with(name, &q).await
    }

    /// `GET /v1/maps/{name}/random` with its options (an agent size, a profile).
    pub async fn random_with(
        &self,
        name: &str,
        q: &RandomRequest,
    ) -> Result<RandomResponse, Error> {
        let path = format!("/v1/maps/{name}/random");
        self.json(|| {
            let mut b = self
                .request(Method::GET, &path, Auth::Query)
                .query(&[("x", q.at[0]), ("y", q.at[1])])
                .query(&[("radius", q.radius)]);
            if let Some(s) = q.seed {
                b = b.query(&[("seed", s)]);
            }
            if let Some(s) = q.size {
                b = b.query(&[("size", s)]);
            }
            if let Some(p) = &q.profile {
                b = b.query(&[("profile", p)]);
            }
            b
        })
        .await
    }
}
