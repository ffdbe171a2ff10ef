//! Loading the startup maps: the bundled `*.map` files of the maps directory and the
//! uploaded maps of the data directory.
//!
//! Per name: an uploaded map wins (it replaced or added to the bundle) unless a tombstone
//! at least as new says it was deleted; a tombstone hides a bundled map too; otherwise the
//! bundled file is loaded at version 1. A file that cannot be read is logged and skipped:
//! one bad file must not keep the other maps offline.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pathd_engine::movingai;

use crate::routes::maps::valid_name;
use crate::state::{AppState, MapEntry, MapSource};
use crate::storage;

/// What [`load_maps`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LoadReport {
    /// Bundled maps loaded.
    pub bundled: usize,
    /// Uploaded maps loaded.
    pub uploaded: usize,
    /// Names hidden by a tombstone.
    pub deleted: usize,
    /// Files skipped because they could not be read.
    pub failed: usize,
}

/// Loads every startup map into the registry, then marks the server ready.
pub async fn load_maps(state: AppState) -> LoadReport {
    let mut report = LoadReport::default();
    let storage = state.storage().clone();
    let scan = match tokio::task::spawn_blocking(move || storage.scan()).await {
        Ok(Ok(scan)) => scan,
        Ok(Err(e)) => {
            tracing::error!(error = %e, "cannot list the data directory");
            storage::Scan::default()
        }
        Err(e) => {
            tracing::error!(error = %e, "data directory scan failed");
            storage::Scan::default()
        }
    };
    for (path, reason) in &scan.failures {
        tracing::error!(path = %path.display(), %reason, "skipping unreadable file");
        report.failed += 1;
    }
    let registry = state.registry();
    for (name, version) in &scan.tombstones {
        registry.note_deleted(name, *version);
    }
    let mut seen: HashSet<String> = scan.tombstones.keys().cloned().collect();

    for (name, path) in scan.maps {
        let n = name.clone();
        let p = path.clone();
        let dir = state.storage().dir().to_owned();
        let read = state
            .compute()
            .run_waiting(move |_| {
                let m = storage::read_map(&p, &n)?;
                // Patches acknowledged after the snapshot (see `live::log`).
                let r = crate::live::log::replay(&dir, &m.name, m.grid, m.version)
                    .map_err(|e| format!("patch log: {e}"))?;
                Ok::<_, String>(MapEntry::new(
                    m.name,
                    r.version,
                    r.grid,
                    MapSource::Uploaded,
                ))
            })
            .await;
        match read {
            Ok(Ok(entry)) => {
                let hidden = scan
                    .tombstones
                    .get(&name)
                    .is_some_and(|&t| t >= entry.version);
                seen.insert(name);
                if hidden {
                    report.deleted += 1;
                } else {
                    registry.insert(Arc::new(entry));
                    report.uploaded += 1;
                }
            }
            Ok(Err(reason)) => skip(&mut report, &path, &reason),
            Err(e) => skip(&mut report, &path, &e.message),
        }
    }

    for (name, path) in bundled_files(&state.config().maps_dir) {
        if seen.contains(&name) {
            if scan.tombstones.contains_key(&name) && registry.get(&name).is_none() {
                tracing::info!(map = %name, "bundled map stays deleted");
            }
            continue;
        }
        let n = name.clone();
        let p = path.clone();
        let read = state
            .compute()
            .run_waiting(move |_| {
                let text = fs::read_to_string(&p).map_err(|e| e.to_string())?;
                let grid = movingai::parse_map(&text).map_err(|e| e.to_string())?;
                Ok::<_, String>(MapEntry::new(n, 1, grid, MapSource::Bundled))
            })
            .await;
        match read {
            Ok(Ok(entry)) => {
                registry.insert(Arc::new(entry));
                report.bundled += 1;
            }
            Ok(Err(reason)) => skip(&mut report, &path, &reason),
            Err(e) => skip(&mut report, &path, &e.message),
        }
    }
    metrics::gauge!("pathd_maps_loaded").set(registry.len() as f64);
    tracing::info!(
        bundled = report.bundled,
        uploaded = report.uploaded,
        deleted = report.deleted,
        failed = report.failed,
        "startup maps loaded"
    );
    state.set_ready();
    report
}

fn skip(report: &mut LoadReport, path: &Path, reason: &str) {
    tracing::error!(path = %path.display(), %reason, "skipping unreadable map file");
    report.failed += 1;
}

/// `*.map` files with a valid map name, sorted. A missing directory is no maps.
fn bundled_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = fs::read_dir(dir) else {
        tracing::warn!(dir = %dir.display(), "maps directory not found; no bundled maps");
        return Vec::new();
    };
    let mut out: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("map"))
        .filter_map(|p| {
            let name = p.file_stem()?.to_str()?.to_owned();
            if valid_name(&name) {
                Some((name, p))
            } else {
                tracing::warn!(path = %p.display(), "skipping map file: not a valid map name");
                None
            }
        })
        .collect();
    out.sort();
    out
}
