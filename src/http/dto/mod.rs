//! Wire types (JSON bodies) and their conversion to and from engine types. Every request
//! type rejects unknown fields. Points are `[x, y]` arrays.

use std::time::Duration;

use pathd_engine::{
    Algorithm, HeuristicKind, LimitKind, Limits, Point, Query, SearchResult, TieBreak,
};
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::http::error::{ApiError, ErrorBody, ErrorCode};
pub use crate::http::wire::{PathCells, PathFormat};
use crate::query::{Games, PathQuery, QueryError, QuerySpec};
pub use crate::saturating::{Saturating, saturating, saturating_param};

mod batch;
mod health;
mod maps;
mod path;

pub use batch::*;
pub use health::*;
pub use maps::*;
pub use path::*;

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: serde_json::Value) -> Result<PathRequest, String> {
        let text = body.to_string();
        let mut de = serde_json::Deserializer::from_str(&text);
        serde_path_to_error::deserialize(crate::http::body::Contract(&mut de))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn saturating_fields_saturate_and_read_null_as_an_option_does() {
        let r = request(serde_json::json!({"start": [0, 0], "goal": [1, 0],
            "min_version": 1e30, "max_expansions": 7.0, "timeout_ms": u64::MAX}))
        .unwrap();
        assert_eq!(
            (r.min_version, r.max_expansions, r.timeout_ms),
            (Some(u64::MAX), Some(7), Some(u64::MAX))
        );
        // A request refuses null; a subscription's stored definition, read back with plain
        // serde (a takeover, `crate::cluster`), holds it for "unset".
        let e = request(serde_json::json!({"start": [0, 0], "max_expansions": null})).unwrap_err();
        assert!(
            e.starts_with("max_expansions: null is not a value here"),
            "{e}"
        );
        let r: PathRequest = serde_json::from_value(serde_json::json!(
            {"start": [0, 0], "max_expansions": null, "timeout_ms": null, "min_version": null}))
        .unwrap();
        assert_eq!(
            (r.max_expansions, r.timeout_ms, r.min_version),
            (None, None, None)
        );
        assert!(request(serde_json::json!({"start": [0, 0], "timeout_ms": -1})).is_err());
        assert!(request(serde_json::json!({"start": [0, 0], "timeout_ms": "5"})).is_err());
    }
}
