//! HPA* abstractions, one per map version, built off the request path.
//!
//! A map entry carries an [`HpaSlot`]: empty while the abstraction is being built (queries
//! then use plain search, and `"algorithm": "hpa"` answers `400 not_applicable`), filled
//! once. The slot belongs to one immutable entry, so a query never sees an abstraction of
//! another map version, nor a half-built one.
//!
//! Who fills it: a patch derives the next version's abstraction from the previous one
//! ([`Abstraction::update`] rebuilds only the clusters the patch touched, a few ms), so a
//! patched map never loses HPA*; a new or replaced map gets a from-scratch build from the
//! single background builder thread ([`HpaBuilder`]), which works through its queue one map
//! at a time and skips entries that were replaced or deleted meanwhile. One thread, because
//! a build is seconds of CPU at most and must not starve the search pool.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak, mpsc};
use std::time::Instant;

use pathd_engine::{Abstraction, Grid, HpaConfig, Point};
use serde::Serialize;

use crate::state::MapEntry;

/// When and how abstractions are built.
#[derive(Clone, Copy, Debug)]
pub struct HpaSettings {
    /// Maps with at least this many cells get an abstraction (0 disables HPA*).
    pub min_cells: u64,
    /// Cluster side in cells.
    pub cluster_size: u32,
}

impl Default for HpaSettings {
    fn default() -> Self {
        HpaSettings {
            min_cells: 512 * 512,
            cluster_size: HpaConfig::default().cluster_size,
        }
    }
}

impl HpaSettings {
    /// True when a grid of this size should have an abstraction.
    pub fn wants(&self, grid: &Grid) -> bool {
        self.min_cells > 0 && grid.width() as u64 * grid.height() as u64 >= self.min_cells
    }
}

/// The abstraction of one map version, once built.
#[derive(Debug, Default)]
pub struct HpaSlot {
    /// Set exactly once.
    ready: OnceLock<Arc<Abstraction>>,
    /// True once a build was queued or derived, so it happens once per entry.
    started: AtomicBool,
    /// Cluster side of the queued build (reported while building).
    cluster_size: AtomicU32,
}

/// The `hpa` object of a map summary.
#[derive(Clone, Debug, Serialize)]
pub struct HpaInfo {
    /// `building` or `ready`.
    pub status: &'static str,
    /// Cluster side in cells.
    pub cluster_size: u32,
    /// Abstract nodes (entrance transitions); 0 while building.
    pub nodes: usize,
    /// Abstract edges; 0 while building.
    pub edges: usize,
    /// Heap bytes the abstraction holds; 0 while building.
    pub memory_bytes: usize,
    /// How long the from-scratch build took, in milliseconds (0 while building).
    pub build_ms: u64,
}

impl HpaSlot {
    /// The abstraction, when ready.
    pub fn get(&self) -> Option<&Abstraction> {
        self.ready.get().map(|a| a.as_ref())
    }

    /// What the map summary reports (`None` for maps too small to get one).
    pub fn info(&self) -> Option<HpaInfo> {
        if !self.started.load(Ordering::Acquire) {
            return None;
        }
        Some(match self.ready.get() {
            Some(a) => {
                let s = a.summary();
                HpaInfo {
                    status: "ready",
                    cluster_size: s.cluster_size,
                    nodes: s.nodes,
                    edges: s.edges,
                    memory_bytes: s.memory_bytes,
                    build_ms: a.build_time().as_millis() as u64,
                }
            }
            None => HpaInfo {
                status: "building",
                cluster_size: self.cluster_size.load(Ordering::Relaxed),
                nodes: 0,
                edges: 0,
                memory_bytes: 0,
                build_ms: 0,
            },
        })
    }

    /// Derives this version's abstraction from the previous version's, if that one is ready
    /// and fits (same size and movement). Runs in the patch's blocking job.
    pub fn derive(&self, name: &str, previous: &HpaSlot, grid: &Grid, changed: &[Point]) {
        if let Some(prev) = previous.ready.get().filter(|p| p.fits(grid)) {
            let started = Instant::now();
            let next = prev.update(grid, changed);
            metrics::histogram!("pathd_hpa_update_seconds").record(started.elapsed());
            metrics::gauge!("pathd_hpa_memory_bytes", "map" => name.to_owned())
                .set(next.memory_bytes() as f64);
            self.cluster_size
                .store(next.config().cluster_size, Ordering::Relaxed);
            self.started.store(true, Ordering::Release);
            let _ = self.ready.set(Arc::new(next));
        }
    }
}

/// The background builder: one thread, a queue of entries waiting for a build.
pub struct HpaBuilder {
    settings: HpaSettings,
    /// Entries to build; weak, so a replaced or deleted entry is dropped, not built.
    tx: Mutex<mpsc::Sender<Weak<MapEntry>>>,
}

impl HpaBuilder {
    /// Starts the builder thread (it ends when the builder is dropped).
    pub fn new(settings: HpaSettings) -> Self {
        let (tx, rx) = mpsc::channel::<Weak<MapEntry>>();
        let spawned = std::thread::Builder::new()
            .name("pathd-hpa".into())
            .spawn(move || {
                while let Ok(weak) = rx.recv() {
                    if let Some(entry) = weak.upgrade() {
                        build(&entry, settings);
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "could not start the HPA* builder; HPA* is off");
        }
        HpaBuilder {
            settings,
            tx: Mutex::new(tx),
        }
    }

    /// The settings in force.
    pub fn settings(&self) -> &HpaSettings {
        &self.settings
    }

    /// Queues a build for `entry` if its map wants one and none was started.
    pub fn ensure(&self, entry: &Arc<MapEntry>) {
        if !self.settings.wants(&entry.grid) || entry.hpa.started.load(Ordering::Acquire) {
            return;
        }
        entry
            .hpa
            .cluster_size
            .store(self.settings.cluster_size, Ordering::Relaxed);
        if entry.hpa.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let tx = self.tx.lock().expect("hpa queue lock");
        let _ = tx.send(Arc::downgrade(entry));
    }
}

fn build(entry: &MapEntry, settings: HpaSettings) {
    let config = HpaConfig {
        cluster_size: settings.cluster_size,
        ..HpaConfig::default()
    };
    let abs = Abstraction::build_with(&entry.grid, config);
    let took = abs.build_time();
    metrics::histogram!("pathd_hpa_build_seconds").record(took);
    entry.report_unless_retired(|| {
        metrics::gauge!("pathd_hpa_memory_bytes", "map" => entry.name.clone())
            .set(abs.memory_bytes() as f64);
    });
    tracing::info!(
        map = %entry.name,
        version = entry.version,
        build_ms = took.as_millis() as u64,
        memory_bytes = abs.memory_bytes(),
        "HPA* abstraction ready"
    );
    let _ = entry.hpa.ready.set(Arc::new(abs));
}
