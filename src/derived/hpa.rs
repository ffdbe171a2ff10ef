//! HPA* abstractions, one per map version, built off the request path.
//!
//! A map entry carries an [`HpaSlot`]: empty while the abstraction is being built (queries
//! then use plain search, and `"algorithm": "hpa"` answers `400 not_applicable`), filled
//! once. The slot belongs to one immutable entry, so a query never sees an abstraction of
//! another map version, nor a half-built one.
//!
//! Who fills it: a patch derives the next version's abstraction from the previous one
//! ([`Abstraction::update`] rebuilds only the clusters the patch touched, a few ms), so a
//! patched map never loses HPA*; a new or replaced map gets a from-scratch build on the
//! `hpa` lane of the supervised builder pool ([`super::Builders`]), which works through its
//! queue one map at a time and skips entries that were replaced or deleted meanwhile. One
//! lane, because a build is seconds of CPU at most and must not starve the search pool. A
//! build that panics leaves the slot `failed` with its message; the next version builds
//! again from scratch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pathd_engine::{Abstraction, Eroded, Grid, HpaConfig, Point};
use serde::Serialize;

use super::budget::Budget;
use super::pool::{Builders, Lane};
use super::slot::{Slot, Status};
use crate::derived::MapEntry;

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
    /// The engine's build configuration for these settings.
    fn config(&self) -> HpaConfig {
        HpaConfig {
            cluster_size: self.cluster_size,
            ..HpaConfig::default()
        }
    }

    /// True when a grid of this size should have an abstraction.
    pub fn wants(&self, grid: &Grid) -> bool {
        self.min_cells > 0 && grid.width() as u64 * grid.height() as u64 >= self.min_cells
    }
}

/// The abstraction of one map version, once built.
#[derive(Debug, Default)]
pub struct HpaSlot {
    /// The abstraction and where it is in its life.
    slot: Slot<Abstraction>,
    /// Cluster side of the queued build (reported while building).
    cluster_size: AtomicU32,
}

/// The `hpa` object of a map summary.
#[derive(Clone, Debug, Serialize)]
pub struct HpaInfo {
    /// `building`, `ready`, `failed` or `evicted`.
    pub status: &'static str,
    /// Why the build failed (`failed` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
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
    /// The abstraction, when ready (a use, for eviction).
    pub fn get(&self) -> Option<Arc<Abstraction>> {
        self.slot.get()
    }

    /// Where the abstraction is.
    pub fn status(&self) -> Status {
        self.slot.status()
    }

    /// The slot itself (the budget evicts through it).
    pub fn slot(&self) -> &Slot<Abstraction> {
        &self.slot
    }

    /// What the map summary reports (`None` for maps too small to get one).
    pub fn info(&self) -> Option<HpaInfo> {
        let status = self.slot.status().as_str()?;
        Some(match self.slot.peek() {
            Some(a) => {
                let s = a.summary();
                HpaInfo {
                    status,
                    error: None,
                    cluster_size: s.cluster_size,
                    nodes: s.nodes,
                    edges: s.edges,
                    memory_bytes: s.memory_bytes,
                    build_ms: a.build_time().as_millis() as u64,
                }
            }
            None => HpaInfo {
                status,
                error: self.slot.error(),
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
        self.derive_with(previous, grid, changed, |next| {
            metrics::gauge!("pathd_hpa_memory_bytes", "map" => name.to_owned())
                .set(next.memory_bytes() as f64);
        });
    }

    /// [`Self::derive`], reporting the new abstraction to `report` (the per-map gauge is
    /// the one-cell abstraction's).
    fn derive_with(
        &self,
        previous: &HpaSlot,
        grid: &Grid,
        changed: &[Point],
        report: impl FnOnce(&Abstraction),
    ) {
        if let Some(prev) = previous.slot.peek().filter(|p| p.fits(grid)) {
            let started = Instant::now();
            let next = prev.update(grid, changed);
            let took = started.elapsed();
            metrics::histogram!("pathd_hpa_update_seconds").record(took);
            report(&next);
            self.cluster_size
                .store(next.config().cluster_size, Ordering::Relaxed);
            self.slot.set(Arc::new(next), "update", took);
        }
    }
}

/// The background builder: the pool's `hpa` lane, a queue of entries waiting for a build.
pub struct HpaBuilder {
    settings: HpaSettings,
    /// Builds to run.
    lane: Lane,
    /// Where a built abstraction is accounted.
    budget: Arc<Budget>,
}

impl HpaBuilder {
    /// Takes its lane of `builders`.
    pub fn new(settings: HpaSettings, builders: &Builders, budget: Arc<Budget>) -> Self {
        HpaBuilder {
            settings,
            lane: builders.lane("hpa"),
            budget,
        }
    }

    /// The settings in force.
    pub fn settings(&self) -> &HpaSettings {
        &self.settings
    }

    /// Queues a build for `entry` if its map wants one and none was started (or the last
    /// one was evicted).
    pub fn ensure(&self, entry: &Arc<MapEntry>) {
        if !self.settings.wants(&entry.grid) || !entry.hpa.slot.start() {
            return;
        }
        entry
            .hpa
            .cluster_size
            .store(self.settings.cluster_size, Ordering::Relaxed);
        let (settings, budget) = (self.settings, Arc::clone(&self.budget));
        self.lane.send(
            entry,
            move |e| {
                build(e, settings);
                budget.admit(e);
            },
            |e, why| e.hpa.slot.fail(why),
        );
    }

    /// Queues a build of the abstraction of `entry`'s map eroded for `size` (> 1), if its
    /// map wants one and none was started; true once that abstraction is ready.
    pub fn ensure_sized(&self, entry: &Arc<MapEntry>, size: u32) -> bool {
        if let Some(view) = entry.sized.get(size) {
            if view.hpa.get().is_some() {
                return true;
            }
            if view.hpa.status() == Status::Evicted {
                if view.hpa.slot.start() {
                    self.queue_sized(entry, size);
                }
                return false;
            }
        }
        if !self.settings.wants(&entry.grid) || !entry.sized.start_hpa(size) {
            return false;
        }
        self.queue_sized(entry, size);
        false
    }

    fn queue_sized(&self, entry: &Arc<MapEntry>, size: u32) {
        let settings = self.settings;
        self.lane.send(
            entry,
            move |e| build_sized(e, size, settings),
            move |e, why| {
                if let Some(view) = e.sized.get(size) {
                    view.hpa.slot.fail(why);
                }
            },
        );
    }
}

/// The eroded maps of one map version for the agent sizes that JPS or HPA* queries asked
/// for (see [`pathd_engine::Eroded`]), each with its own HPA* slot. A view is built on
/// first use, in the query's compute job (`O(cells)`), and derived from the previous
/// version's by a patch; its HPA* abstraction is built by the builder thread on the first
/// sized `hpa` query (`503 abstraction_building` meanwhile) and updated by patches.
#[derive(Debug, Default)]
pub struct SizedViews {
    views: Mutex<HashMap<u32, Arc<SizedView>>>,
    /// Sizes whose HPA* build was queued (once per version and size).
    hpa_started: Mutex<Vec<u32>>,
}

/// One eroded map and its HPA* abstraction.
#[derive(Debug)]
pub struct SizedView {
    /// The map as a `size x size` agent sees it.
    pub eroded: Eroded,
    /// Its HPA* abstraction, once built.
    pub hpa: HpaSlot,
}

/// An entry of a map summary's `sized`: a view kept for one agent size.
#[derive(Clone, Debug, Serialize)]
pub struct SizedInfo {
    /// Agent side in cells.
    pub size: u32,
    /// Heap bytes of the eroded map.
    pub memory_bytes: usize,
    /// Its HPA* abstraction, once a sized `hpa` query asked for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hpa: Option<HpaInfo>,
}

impl SizedViews {
    /// The view for `size`, if built.
    pub fn get(&self, size: u32) -> Option<Arc<SizedView>> {
        self.views.lock().expect("views lock").get(&size).cloned()
    }

    /// The view of `grid` for `size`, built now if missing (call it off the async runtime).
    pub fn get_or_build(&self, grid: &Grid, size: u32) -> Arc<SizedView> {
        if let Some(view) = self.get(size) {
            return view;
        }
        // Built outside the lock; a racing builder's view wins and this one is dropped.
        let view = Arc::new(SizedView {
            eroded: Eroded::build(grid, size),
            hpa: HpaSlot::default(),
        });
        let mut views = self.views.lock().expect("views lock");
        Arc::clone(views.entry(size).or_insert(view))
    }

    /// Marks the HPA* build of `size` as started; false when it already was.
    fn start_hpa(&self, size: u32) -> bool {
        let mut started = self.hpa_started.lock().expect("started lock");
        if started.contains(&size) {
            return false;
        }
        started.push(size);
        true
    }

    /// Derives this version's views from `previous`'s (`grid` is this version's map,
    /// differing at `changed`): each eroded map takes the patch's effect, and each ready
    /// abstraction is updated for the anchors that changed. Runs in the patch's job.
    pub fn derive(&self, previous: &SizedViews, grid: &Grid, changed: &[Point]) {
        let before: Vec<(u32, Arc<SizedView>)> = previous
            .views
            .lock()
            .expect("views lock")
            .iter()
            .map(|(&k, v)| (k, Arc::clone(v)))
            .collect();
        let mut views = self.views.lock().expect("views lock");
        let mut started = self.hpa_started.lock().expect("started lock");
        for (size, prev) in before {
            if !prev.eroded.fits(grid) {
                continue;
            }
            let (eroded, anchors) = prev.eroded.update(grid, changed);
            let hpa = HpaSlot::default();
            hpa.derive_with(&prev.hpa, eroded.grid(), &anchors, |_| {});
            if hpa.get().is_some() {
                started.push(size);
            }
            views.insert(size, Arc::new(SizedView { eroded, hpa }));
        }
    }

    /// What the map summary reports, by size.
    pub fn info(&self) -> Vec<SizedInfo> {
        let views = self.views.lock().expect("views lock");
        let mut out: Vec<SizedInfo> = views
            .iter()
            .map(|(&size, v)| SizedInfo {
                size,
                memory_bytes: v.eroded.memory_bytes(),
                hpa: v.hpa.info(),
            })
            .collect();
        out.sort_by_key(|i| i.size);
        out
    }
}

impl SizedViews {
    /// Where the abstraction of the view for `size` is.
    pub fn hpa_status(&self, size: u32) -> Status {
        self.get(size).map_or(Status::Idle, |v| v.hpa.status())
    }
}

/// Builds the abstraction of `entry`'s map eroded for `size`.
fn build_sized(entry: &MapEntry, size: u32, settings: HpaSettings) {
    let view = entry.sized.get_or_build(&entry.grid, size);
    view.hpa
        .cluster_size
        .store(settings.cluster_size, Ordering::Relaxed);
    view.hpa.slot.start();
    let config = settings.config();
    let abs = Abstraction::build_with(view.eroded.grid(), config);
    metrics::histogram!("pathd_hpa_build_seconds").record(abs.build_time());
    tracing::info!(
        map = %entry.name,
        version = entry.version,
        size,
        build_ms = abs.build_time().as_millis() as u64,
        memory_bytes = abs.memory_bytes(),
        "HPA* abstraction of the map eroded for a sized agent ready"
    );
    let took = abs.build_time();
    view.hpa.slot.set(Arc::new(abs), "build", took);
}

fn build(entry: &MapEntry, settings: HpaSettings) {
    let config = settings.config();
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
    entry.hpa.slot.set(Arc::new(abs), "build", took);
}
