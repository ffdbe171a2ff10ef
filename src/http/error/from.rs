//! What each service's error means on the wire: one `From` impl per error enum below the
//! edge (the search pool, the engine's query checks, the maps service, the live hub, flow
//! fields, plans) and per axum rejection, each giving the status, the stable code and the
//! message the contract documents.

use axum::extract::rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use pathd_engine::QueryError;

use super::{ApiError, ErrorCode};

impl From<crate::compute::PoolError> for ApiError {
    fn from(e: crate::compute::PoolError) -> Self {
        match e {
            crate::compute::PoolError::Overloaded => ApiError::overloaded(),
            other => ApiError::internal(other),
        }
    }
}

impl From<crate::live::LiveError> for ApiError {
    fn from(e: crate::live::LiveError) -> Self {
        use crate::live::LiveError as E;
        let message = e.to_string();
        match e {
            E::NotFound(_) => ApiError::new(
                StatusCode::NOT_FOUND,
                ErrorCode::SubscriptionNotFound,
                message,
            ),
            E::TooMany(m) => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::TooManySubscriptions,
                m,
            ),
            E::Query(q) => ApiError::from(q),
            E::Internal(m) => ApiError::internal(m),
        }
    }
}

impl From<crate::live::flows::FlowError> for ApiError {
    fn from(e: crate::live::flows::FlowError) -> Self {
        use crate::live::flows::FlowError as E;
        let message = e.to_string();
        match e {
            E::NotFound(_) => {
                ApiError::new(StatusCode::NOT_FOUND, ErrorCode::FlowfieldNotFound, message)
            }
            E::RegionTooLarge(m) => ApiError::invalid_request(m),
            E::TooMany(m) => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::TooManyFlowfields,
                m,
            ),
        }
    }
}

impl From<crate::plans::PlanError> for ApiError {
    fn from(e: crate::plans::PlanError) -> Self {
        use crate::plans::PlanError as E;
        let message = e.to_string();
        let (status, code) = match e {
            E::Invalid(_) => (StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest),
            E::NotApplicable(_) => (StatusCode::BAD_REQUEST, ErrorCode::NotApplicable),
            E::TooManyAgents(_) => (StatusCode::PAYLOAD_TOO_LARGE, ErrorCode::TooManyAgents),
            E::OutOfBounds(_) => (StatusCode::BAD_REQUEST, ErrorCode::OutOfBounds),
            E::StartBlocked(_) => (StatusCode::BAD_REQUEST, ErrorCode::StartBlocked),
            E::GoalBlocked(_) => (StatusCode::BAD_REQUEST, ErrorCode::GoalBlocked),
            E::NotFound(_) => (StatusCode::NOT_FOUND, ErrorCode::PlanNotFound),
            E::TooMany(_) => (StatusCode::TOO_MANY_REQUESTS, ErrorCode::TooManyPlans),
            E::Internal(m) => return ApiError::internal(m),
        };
        ApiError::new(status, code, message)
    }
}

impl From<QueryError> for ApiError {
    fn from(e: QueryError) -> Self {
        let code = match e {
            QueryError::OutOfBounds { .. } => ErrorCode::OutOfBounds,
            QueryError::StartBlocked(_) => ErrorCode::StartBlocked,
            QueryError::GoalBlocked(_) => ErrorCode::GoalBlocked,
            QueryError::InvalidWeight(_) => ErrorCode::InvalidRequest,
            QueryError::NotApplicable { .. } => ErrorCode::NotApplicable,
            QueryError::InvalidSize(_) => ErrorCode::InvalidRequest,
            QueryError::InvalidTarget(_) => ErrorCode::InvalidRequest,
            QueryError::DoesNotFit { which: "start", .. } => ErrorCode::StartBlocked,
            QueryError::DoesNotFit { .. } => ErrorCode::GoalBlocked,
        };
        ApiError::new(StatusCode::BAD_REQUEST, code, e.to_string())
    }
}

impl From<crate::query::QueryError> for ApiError {
    fn from(e: crate::query::QueryError) -> Self {
        use crate::query::QueryError as E;
        match e {
            E::Invalid(m) => ApiError::invalid_request(m),
            E::TooManyGoals(m) => {
                ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::TooManyGoals, m)
            }
            E::Engine(e) => ApiError::from(e),
            E::ProfileNotFound(m) => {
                ApiError::new(StatusCode::NOT_FOUND, ErrorCode::ProfileNotFound, m)
            }
            E::Building(m) => ApiError {
                retry_after: Some(1),
                ..ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::AbstractionBuilding,
                    m,
                )
            },
            E::DerivationFailed(m) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::DerivationFailed,
                m,
            ),
            E::NotApplicable(m) => {
                ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::NotApplicable, m)
            }
            E::Maps(e) => ApiError::from(e),
            E::Internal(m) => ApiError::internal(m),
        }
    }
}

impl From<crate::maps::MapsError> for ApiError {
    fn from(e: crate::maps::MapsError) -> Self {
        use crate::maps::MapsError as E;
        let message = e.to_string();
        match e {
            E::NotFound(_) => ApiError::new(StatusCode::NOT_FOUND, ErrorCode::MapNotFound, message),
            E::InvalidName => ApiError::invalid_request(message),
            E::Damaged(_) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::MapDamaged,
                message,
            ),
            E::VersionConflict { .. } => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::VersionConflict, message)
            }
            E::TooManyMaps(_) => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::TooManyMaps, message)
            }
            E::PatchOutOfBounds(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::PatchOutOfBounds,
                message,
            ),
            E::InvalidProfiles(_) => {
                ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidPatch, message)
            }
            E::Store(_) => ApiError {
                retry_after: Some(1),
                ..ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::StoreUnavailable,
                    "the write could not be made durable and was not applied; retry shortly",
                )
            },
            E::Internal(m) => ApiError::internal(m),
            E::Conflicted => ApiError {
                retry_after: Some(1),
                ..ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::StoreUnavailable,
                    "other replicas kept writing this map first; retry shortly",
                )
            },
            E::ReplicaBehind(_) => ApiError {
                retry_after: Some(1),
                ..ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::ReplicaBehind,
                    message,
                )
            },
            E::Overloaded(_) => ApiError {
                retry_after: Some(1),
                ..ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::Overloaded,
                    message,
                )
            },
            E::ShuttingDown => ApiError {
                retry_after: Some(1),
                ..ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::NotReady,
                    message,
                )
            },
        }
    }
}

/// Maps a body/extractor rejection status to our codes (413 and 415 keep their meaning).
fn from_rejection(status: StatusCode, text: String) -> ApiError {
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            status,
            ErrorCode::PayloadTooLarge,
            "the request body is too large",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::unsupported_media_type(text),
        s if s.is_server_error() => ApiError::internal(text),
        _ => ApiError::invalid_request(text),
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let text = match &r {
            JsonRejection::MissingJsonContentType(_) => {
                "expected `Content-Type: application/json`".to_owned()
            }
            other => other.body_text(),
        };
        from_rejection(r.status(), text)
    }
}

impl From<BytesRejection> for ApiError {
    fn from(r: BytesRejection) -> Self {
        from_rejection(r.status(), r.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        from_rejection(r.status(), r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        from_rejection(r.status(), r.body_text())
    }
}
