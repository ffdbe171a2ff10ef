//! The visualiser: a single-page app served at `/` and `/ui/...`, its assets embedded in
//! the binary (no CDN, nothing fetched at run time; works offline and in the container).
//! The page is plain JavaScript drawing on a canvas, talking to the same JSON API every
//! other client uses, with the engine itself compiled to WebAssembly (`pathd-wasm.js`, the
//! module as base64, and `pathd.js`, its glue: see `scripts/build-wasm.sh`) so searches run
//! in the tab; its sources are `ui/` at the repository root.
//!
//! The page names its assets relatively (`app.js`), so that `ui/index.html` also works
//! opened as a file; served, each asset is at `/ui/{name}` and at `/{name}` (what the
//! relative names resolve to from `/` and `/ui`).
//!
//! Not part of `openapi.yaml` (it is not API). No authentication: the page holds no data;
//! the bearer token is typed into the page and sent by it with each API call.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::http::error::ApiError;
use crate::state::AppState;

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

/// Every file of the app.
const ASSETS: &[Asset] = &[
    Asset {
        name: "index.html",
        content_type: "text/html; charset=utf-8",
        body: include_bytes!("../../../ui/index.html"),
    },
    Asset {
        name: "app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../../ui/app.js"),
    },
    Asset {
        name: "app.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../../ui/app.css"),
    },
    Asset {
        name: "favicon.svg",
        content_type: "image/svg+xml",
        body: include_bytes!("../../../ui/favicon.svg"),
    },
    js("api.js", include_bytes!("../../../ui/api.js")),
    js("trace.js", include_bytes!("../../../ui/trace.js")),
    js("draw.js", include_bytes!("../../../ui/draw.js")),
    js("live.js", include_bytes!("../../../ui/live.js")),
    js("lessons.js", include_bytes!("../../../ui/lessons.js")),
    js("games.js", include_bytes!("../../../ui/games.js")),
    js("mapf.js", include_bytes!("../../../ui/mapf.js")),
    js("pathd.js", include_bytes!("../../../ui/pathd.js")),
    js("pathd-wasm.js", include_bytes!("../../../ui/pathd-wasm.js")),
];

/// A JavaScript asset.
const fn js(name: &'static str, body: &'static [u8]) -> Asset {
    Asset {
        name,
        content_type: "text/javascript; charset=utf-8",
        body,
    }
}

/// The routes of this module.
pub fn router() -> Router<AppState> {
    let mut r = Router::new()
        .route("/", get(index))
        .route("/ui", get(index))
        .route("/ui/", get(index))
        .route("/ui/{file}", get(asset));
    // The page's relative names seen from `/` and `/ui` (each one route, no catch-all).
    for (i, a) in ASSETS.iter().enumerate().skip(1) {
        r = r.route(
            &format!("/{}", a.name),
            get(move |headers: HeaderMap| async move { serve(&ASSETS[i], &headers) }),
        );
    }
    r
}

/// A strong validator of an asset's bytes (FNV-1a, 64 bits): assets change only with the
/// binary, so clients revalidate cheaply with `If-None-Match`.
fn etag(body: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in body {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("\"{h:016x}\"")
}

/// Serves `a`: `304` when the client's copy is current; `Cache-Control: no-cache` (use the
/// cached copy only after revalidating), so a new binary's page is never stale.
fn serve(a: &Asset, headers: &HeaderMap) -> Response {
    let tag = etag(a.body);
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag));
    let mut resp = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, a.content_type)], a.body).into_response()
    };
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if let Ok(v) = HeaderValue::from_str(&tag) {
        h.insert(header::ETAG, v);
    }
    resp
}

/// `GET /`, `/ui`, `/ui/`: the page.
async fn index(headers: HeaderMap) -> Response {
    serve(&ASSETS[0], &headers)
}

/// `GET /ui/{file}`: an asset, or the JSON `404 not_found`.
async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Result<Response, ApiError> {
    ASSETS
        .iter()
        .find(|a| a.name == file)
        .map(|a| serve(a, &headers))
        .ok_or_else(ApiError::not_found)
}
