//! The one error type of the API and the extractors whose rejections use its shape.
//!
//! Every 4xx/5xx answer is `{"error": {"code": "...", "message": "..."}}` with a stable
//! `code` (listed in `openapi.yaml`). Details of 5xx errors go to the log, never to the
//! client.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

mod from;

/// Declares [`ErrorCode`]: one variant per stable code, its wire string, and the list of
/// all of them (which a test holds against `openapi.yaml`).
macro_rules! error_codes {
    ($($variant:ident => $code:literal),* $(,)?) => {
        /// Every stable error code of the API (the `code` of an error body).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $(
                #[doc = concat!("`", $code, "`")]
                $variant,
            )*
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: &[ErrorCode] = &[$(ErrorCode::$variant),*];

            /// The wire string.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $code,)*
                }
            }
        }
    };
}

error_codes! {
    InvalidRequest => "invalid_request",
    InvalidMap => "invalid_map",
    OutOfBounds => "out_of_bounds",
    StartBlocked => "start_blocked",
    GoalBlocked => "goal_blocked",
    NotApplicable => "not_applicable",
    Unauthorized => "unauthorized",
    Forbidden => "forbidden",
    MapNotFound => "map_not_found",
    NotFound => "not_found",
    MethodNotAllowed => "method_not_allowed",
    NotAcceptable => "not_acceptable",
    TooManyMaps => "too_many_maps",
    PayloadTooLarge => "payload_too_large",
    MapTooLarge => "map_too_large",
    TooManyQueries => "too_many_queries",
    MatrixTooLarge => "matrix_too_large",
    LimitReached => "limit_reached",
    UnsupportedMediaType => "unsupported_media_type",
    Internal => "internal",
    Overloaded => "overloaded",
    NotReady => "not_ready",
    InvalidPatch => "invalid_patch",
    PatchOutOfBounds => "patch_out_of_bounds",
    PatchTooLarge => "patch_too_large",
    VersionConflict => "version_conflict",
    SubscriptionNotFound => "subscription_not_found",
    TooManySubscriptions => "too_many_subscriptions",
    MapDamaged => "map_damaged",
    StoreUnavailable => "store_unavailable",
    BodyTimeout => "body_timeout",
    TooManyConnections => "too_many_connections",
    AbstractionBuilding => "abstraction_building",
    FlowfieldNotFound => "flowfield_not_found",
    TooManyFlowfields => "too_many_flowfields",
    ReplicaBehind => "replica_behind",
    DerivationFailed => "derivation_failed",
    TooManyAgents => "too_many_agents",
    ProfileNotFound => "profile_not_found",
    TooManyGoals => "too_many_goals",
    NoUsableCell => "no_usable_cell",
    PlanNotFound => "plan_not_found",
    TooManyPlans => "too_many_plans",
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error answer: HTTP status, stable code, human message.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable machine-readable code.
    pub code: ErrorCode,
    /// Human-readable message (for 5xx, a generic text; the detail is logged).
    pub message: String,
    /// Seconds for a `Retry-After` header (overload).
    pub retry_after: Option<u32>,
}

/// The wire shape of an error.
#[derive(Debug, Serialize)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// `code` and `message` of an error.
#[derive(Debug, Serialize)]
pub struct ErrorDetail {
    /// Stable machine-readable code.
    pub code: ErrorCode,
    /// Human-readable message.
    pub message: String,
    /// The request's id (its `X-Request-Id`, given or made), to find its log lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// `400 invalid_request`.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest, message)
    }

    /// `400 invalid_map`.
    pub fn invalid_map(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidMap, message)
    }

    /// `404 map_not_found`.
    pub fn map_not_found(name: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            ErrorCode::MapNotFound,
            format!("no map named {name:?}"),
        )
    }

    /// `404 not_found` (no such route).
    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, "no such route")
    }

    /// `405 method_not_allowed`.
    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::MethodNotAllowed,
            "this route does not take that method",
        )
    }

    /// `401 unauthorized`.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            ErrorCode::Unauthorized,
            "a valid `Authorization: Bearer <token>` header is required",
        )
    }

    /// `403 forbidden`: authenticated, but not allowed to change this resource.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, message)
    }

    /// `413 payload_too_large`.
    pub fn payload_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::PayloadTooLarge,
            format!("the request body exceeds the limit of {limit} bytes"),
        )
    }

    /// `415 unsupported_media_type`.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::UnsupportedMediaType,
            message,
        )
    }

    /// `503 overloaded` with `Retry-After: 1`.
    pub fn overloaded() -> Self {
        ApiError {
            retry_after: Some(1),
            ..Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::Overloaded,
                "every search worker is busy and the queue is full; retry shortly",
            )
        }
    }

    /// `408 body_timeout`: the request body did not arrive within `limit` (see
    /// [`crate::http::serve`]).
    pub fn body_timeout(limit: std::time::Duration) -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            ErrorCode::BodyTimeout,
            format!(
                "the request body did not arrive within {} ms",
                limit.as_millis()
            ),
        )
    }

    /// `503 too_many_connections` with `Retry-After: 1` and `Connection: close`: the
    /// server is at its connection cap (see [`crate::http::serve`]).
    pub fn too_many_connections() -> Self {
        ApiError {
            retry_after: Some(1),
            ..Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::TooManyConnections,
                "the server has as many connections open as it serves; retry shortly",
            )
        }
    }

    /// `500 internal`: logs `detail` and answers a generic message.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        tracing::error!(error = %detail, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Internal,
            "internal server error",
        )
    }

    /// The JSON body of this error.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: self.message.clone(),
                request_id: crate::metrics::request_id(),
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, axum::Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

/// `axum::Json`, but a rejection answers with [`ApiError`]'s shape and the body is read
/// as the contract says (see [`crate::http::body::strict`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<T, S> FromRequest<S> for Json<T>
where
    T: DeserializeOwned + Send + 'static,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let crate::http::body::BlockingJson(v) =
            crate::http::body::BlockingJson::<T>::from_request(req, state).await?;
        Ok(Json(v))
    }
}

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

/// `axum::extract::Path`, but a rejection (e.g. a parameter that is not valid UTF-8 once
/// percent-decoded, like `/v1/maps/%ff`) answers with [`ApiError`]'s shape:
/// `400 invalid_request`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Path<T>(pub T);

impl<T, S> FromRequestParts<S> for Path<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Path(v) =
            axum::extract::Path::<T>::from_request_parts(parts, state).await?;
        Ok(Path(v))
    }
}

/// The stable code for an error status whose handler did not give one.
fn code_for(status: StatusCode) -> ErrorCode {
    match status {
        StatusCode::UNAUTHORIZED => ErrorCode::Unauthorized,
        StatusCode::FORBIDDEN => ErrorCode::Forbidden,
        StatusCode::NOT_FOUND => ErrorCode::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => ErrorCode::MethodNotAllowed,
        StatusCode::NOT_ACCEPTABLE => ErrorCode::NotAcceptable,
        StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::PayloadTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ErrorCode::UnsupportedMediaType,
        s if s.is_server_error() => ErrorCode::Internal,
        _ => ErrorCode::InvalidRequest,
    }
}

/// Middleware: any 4xx/5xx answer that is not JSON (an extractor rejection such as
/// axum's own `Path`, which answers `text/plain`) is rewritten into the
/// `{"error": {"code", "message"}}` shape, keeping its status and headers. Handlers should
/// still use this module's extractors; this is the net under them.
pub async fn json_errors(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    if is_json {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let text = axum::body::to_bytes(body, 4096)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let code = code_for(status);
    let err = if status.is_server_error() {
        ApiError::internal(if text.is_empty() {
            status.as_str()
        } else {
            &text
        })
    } else {
        let message = if text.is_empty() {
            status.canonical_reason().unwrap_or("error").to_owned()
        } else {
            text
        };
        ApiError::new(status, code, message)
    };
    let mut out = ApiError { status, ..err }.into_response();
    let mut headers = parts.headers;
    headers.remove(header::CONTENT_TYPE);
    headers.remove(header::CONTENT_LENGTH);
    headers.extend(std::mem::take(out.headers_mut()));
    *out.headers_mut() = headers;
    out
}
