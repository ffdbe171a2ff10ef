//! Recovery at start: the store's maps and the maps directory's bundled files.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pathd_engine::movingai;

use super::{LoadReport, Maps, valid_name};
use crate::derived::{MapEntry, MapSource};
use crate::store::Recovered;

impl Maps {
    /// Loads the startup maps: everything the store holds, then the bundled `*.map` files
    /// of `maps_dir` whose names the store knows nothing of (at version 1). A damaged name
    /// is reported and stays offline, bundled file or not. Writes wait until this is done.
    pub async fn recover(&self, maps_dir: &Path) -> LoadReport {
        let mut report = LoadReport::default();
        let store = Arc::clone(&self.inner.store);
        let found = match tokio::task::spawn_blocking(move || store.recover()).await {
            Ok(Ok(found)) => found,
            Ok(Err(e)) => {
                tracing::error!(error = %e, "cannot read the store; serving bundled maps only");
                Vec::new()
            }
            Err(e) => {
                tracing::error!(error = %e, "store recovery failed");
                Vec::new()
            }
        };
        let registry = &self.inner.registry;
        let mut seen = HashSet::new();
        for r in found {
            match r {
                Recovered::Live {
                    name,
                    version,
                    grid,
                    lost,
                } => {
                    seen.insert(name.clone());
                    if let Some(l) = lost {
                        let mut cut = self.inner.cut.write().expect("cut lock");
                        cut.insert(name.clone(), l);
                    }
                    // O(1): the grid keeps its own statistics.
                    let entry = MapEntry::new(name, version, *grid, MapSource::Uploaded);
                    match self.placed() {
                        // Placed: held only once the membership says where (the summary
                        // until then; `placed.rs`).
                        Some(p) => p.set_stub(entry.summary()),
                        None => {
                            registry.insert(Arc::new(entry));
                        }
                    }
                    report.uploaded += 1;
                }
                Recovered::Deleted { name, version } => {
                    registry.note_deleted(&name, version);
                    seen.insert(name);
                    report.deleted += 1;
                }
                Recovered::Damaged(d) => {
                    seen.insert(d.name.clone());
                    // Versions continue past whatever was acknowledged before the damage.
                    if let Some(v) = d.dropped.iter().copied().chain(d.last_good).max() {
                        registry.note_deleted(&d.name, v);
                    }
                    self.mark_damaged(d);
                    report.damaged += 1;
                }
            }
        }
        for (name, path) in bundled_files(maps_dir) {
            if seen.contains(&name) {
                continue;
            }
            let n = name.clone();
            let p = path.clone();
            let read = self
                .inner
                .compute
                .run_waiting(move |_| {
                    let text = fs::read_to_string(&p).map_err(|e| e.to_string())?;
                    let grid = movingai::parse_map_terrain(&text).map_err(|e| e.to_string())?;
                    Ok::<_, String>(MapEntry::new(n, 1, grid, MapSource::Bundled))
                })
                .await;
            match read {
                Ok(Ok(entry)) => {
                    registry.insert(Arc::new(entry));
                    report.bundled += 1;
                }
                Ok(Err(reason)) => skip(&mut report, &path, &reason),
                Err(e) => skip(&mut report, &path, &e.to_string()),
            }
        }
        metrics::gauge!("pathd_maps_loaded").set(registry.len() as f64);
        tracing::info!(
            bundled = report.bundled,
            uploaded = report.uploaded,
            deleted = report.deleted,
            failed = report.failed,
            damaged = report.damaged,
            "startup maps loaded"
        );
        self.follow();
        self.inner.loaded.send_replace(true);
        report
    }
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
