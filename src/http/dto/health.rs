//! `/healthz` and `/readyz`.

use super::*;
/// `GET /healthz` and `GET /readyz`.
#[derive(Debug, Serialize)]
pub struct Health {
    /// `ok`, `ready` or `loading`.
    pub status: &'static str,
    /// Maps loaded.
    pub maps: usize,
    /// Maps not served because their durable data is damaged (`pathd data check`).
    pub damaged_maps: Vec<String>,
    /// Maps served after recovery found their patch log cut (versions lost; see the map
    /// summary's `recovery`).
    pub cut_logs: Vec<String>,
    /// The replicated store's connection and lag (`--store nats://...` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreHealth>,
    /// This replica and the live members (`--store nats://...` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<crate::cluster::ClusterHealth>,
}

/// The replicated store as `/healthz` and `/readyz` report it.
#[derive(Debug, Serialize)]
pub struct StoreHealth {
    /// `nats`.
    pub kind: &'static str,
    /// Whether NATS is reachable now (writes answer `503 store_unavailable` while not).
    pub connected: bool,
    /// Stream sequence of the last mutation applied here.
    pub applied_position: u64,
    /// Mutations stored but not yet applied here.
    pub lag_messages: u64,
    /// Map versions stored but not yet applied here, summed over the maps.
    pub lag_versions: u64,
    /// Age of the oldest stored mutation not yet applied here, in seconds.
    pub lag_seconds: f64,
    /// Per map: the stream's newest version, the applied one, and the lag.
    pub maps: Vec<MapLagHealth>,
}

/// One map's replication lag, as `/healthz` and `/readyz` report it.
#[derive(Debug, Serialize)]
pub struct MapLagHealth {
    /// The map.
    pub name: String,
    /// The newest version the stream holds.
    pub stream_version: u64,
    /// The version applied (and served) here.
    pub applied_version: u64,
    /// `stream_version - applied_version`.
    pub lag_versions: u64,
    /// Age of the oldest stored version not yet applied here, in seconds.
    pub lag_seconds: f64,
}

impl From<crate::store::StoreStatus> for StoreHealth {
    fn from(s: crate::store::StoreStatus) -> Self {
        StoreHealth {
            kind: s.kind,
            connected: s.connected,
            applied_position: s.applied_position,
            lag_messages: s.lag_messages,
            lag_versions: s.lag_versions,
            lag_seconds: s.lag_seconds,
            maps: s
                .maps
                .into_iter()
                .map(|m| MapLagHealth {
                    name: m.name,
                    stream_version: m.stream_version,
                    applied_version: m.applied_version,
                    lag_versions: m.lag_versions,
                    lag_seconds: m.lag_seconds,
                })
                .collect(),
        }
    }
}
