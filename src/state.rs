//! Shared server state: the registry of named maps, the search pool, storage, readiness.
//!
//! Snapshot isolation: a map is an immutable [`MapEntry`] behind an `Arc`. A reader clones
//! the `Arc` under a short read lock and lets go; a writer builds the next entry off to the
//! side and swaps it in. A query that already holds the old `Arc` finishes on it, whatever
//! happens to the name meanwhile.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use pathd_engine::{Derived, Grid, Point};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::compute::Compute;
use crate::config::Config;
use crate::derived::subgoal::{SubgoalBuilder, SubgoalSlot};
use crate::derived::{Budget, Builders, Status};
use crate::hpa::{HpaBuilder, HpaSettings, HpaSlot, SizedViews};
use crate::http::dto::MapSummary;
use crate::jump::{JumpBuilder, JumpSettings, JumpSlot};
use crate::live::Hub;
use crate::maps::Maps;
use crate::store::{LocalStore, MapStore};

/// Where a map came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapSource {
    /// A `.map` file of the maps directory.
    Bundled,
    /// Uploaded over HTTP (stored in the data directory).
    Uploaded,
}

impl MapSource {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            MapSource::Bundled => "bundled",
            MapSource::Uploaded => "uploaded",
        }
    }
}

/// One immutable version of a named map. Later versions (patches) and derived state (e.g.
/// hierarchical abstractions) are new entries, never mutations of this one.
#[derive(Debug)]
pub struct MapEntry {
    /// The map's name.
    pub name: String,
    /// Version: 1 when first created, +1 on every change; never reused for a name.
    pub version: u64,
    /// The cells this entry's units see (shared with running searches): the map's default
    /// profile, or for a profile's view (see [`MapEntry::view`]) that profile.
    pub grid: Arc<Grid>,
    /// The stored cells: a map with unit-type profiles keeps its terrain classes here, with
    /// the profile set ([`Grid::profiles`]); a plain map's terrain is its grid (the same
    /// `Arc`). This is what is made durable and replicated.
    pub terrain: Arc<Grid>,
    /// The profile this entry answers for when it is a view of another profile than the
    /// default (its `name` is then `map~profile`, which no map name can be, so the
    /// derived-state budget, the builders and the live hub keep it apart).
    pub profile: Option<String>,
    /// The other profiles' views of this version, made when first asked for (and carried
    /// over, incrementally, by the next version's patch).
    views: Mutex<BTreeMap<String, Arc<MapEntry>>>,
    /// A view carried over by a patch whose structures are still being derived from the
    /// previous version's on the `views` lane (see [`Registry::derive_view`]): it asks for
    /// no builds meanwhile.
    pending: AtomicBool,
    /// Set once the registry was asked for this view's builds ([`Registry::adopt_view`]).
    adopted: AtomicBool,
    /// Where it came from.
    pub source: MapSource,
    /// Largest passable cell cost (computed once; the summary needs it).
    pub max_cost: u8,
    /// This version's HPA* abstraction, once built (see [`crate::hpa`]).
    pub hpa: HpaSlot,
    /// This version's JPS+ jump table, once built (see [`crate::jump`]).
    pub jump: JumpSlot,
    /// This version's maps eroded for agent sizes, with their HPA* abstractions (see
    /// [`crate::hpa::SizedViews`]).
    pub sized: SizedViews,
    /// This version's subgoal graph, once built (see [`crate::derived::subgoal`]).
    pub subgoal: SubgoalSlot,
    /// Set when the registry stops serving this version (deleted or replaced); guards the
    /// per-map gauges a background build sets, so one finishing late cannot bring back a
    /// deleted map's gauges or overwrite the newer version's.
    retired: Mutex<bool>,
}

impl MapEntry {
    /// Wraps a grid (O(1): the grid keeps its own cost statistics).
    ///
    /// `stored` is the map as stored: with a profile set its costs are terrain classes and
    /// the entry serves the default profile's grid (made here, `O(cells)`).
    pub fn new(name: String, version: u64, stored: Grid, source: MapSource) -> Self {
        let terrain = Arc::new(stored);
        let grid = match terrain.profiles() {
            Some(p) => Arc::new(terrain.under_profile(p.default_table())),
            None => Arc::clone(&terrain),
        };
        Self::of_grids(name, version, terrain, grid, None, source)
    }

    /// An entry serving `grid`, the view of `terrain` for `profile` (`None`: the default).
    pub fn of_grids(
        name: String,
        version: u64,
        terrain: Arc<Grid>,
        grid: Arc<Grid>,
        profile: Option<String>,
        source: MapSource,
    ) -> Self {
        let max_cost = grid.max_cost();
        MapEntry {
            name,
            version,
            grid,
            terrain,
            profile,
            views: Mutex::default(),
            pending: AtomicBool::new(false),
            adopted: AtomicBool::new(false),
            source,
            max_cost,
            hpa: HpaSlot::default(),
            jump: JumpSlot::default(),
            sized: SizedViews::default(),
            subgoal: SubgoalSlot::default(),
            retired: Mutex::new(false),
        }
    }

    /// The map's name (a view's too).
    pub fn map_name(&self) -> &str {
        self.name.split_once('~').map_or(&self.name, |(m, _)| m)
    }

    /// The profile this entry serves: its view's, or the map's default (`default` on a
    /// plain map).
    pub fn profile_name(&self) -> &str {
        match (&self.profile, self.terrain.profiles()) {
            (Some(p), _) => p,
            (None, Some(set)) => set.default_name(),
            (None, None) => pathd_engine::profiles::DEFAULT_PROFILE,
        }
    }

    /// Where `profile` (`None`: the default) is served on this version: this entry, a
    /// view already made, or a view to make ([`Self::make_view`]); `Err` names the
    /// profiles there are.
    pub fn find_view(self: &Arc<Self>, profile: Option<&str>) -> Result<Found, Vec<String>> {
        let names = || self.profile_names();
        let Some(p) = profile else {
            return Ok(Found::Ready(Arc::clone(self)));
        };
        match self.terrain.profiles() {
            None if p == pathd_engine::profiles::DEFAULT_PROFILE => {
                Ok(Found::Ready(Arc::clone(self)))
            }
            None => Err(names()),
            Some(set) if set.default_name() == p => Ok(Found::Ready(Arc::clone(self))),
            Some(set) if set.get(p).is_some() => {
                match self.views.lock().expect("views lock").get(p) {
                    Some(v) => Ok(Found::Ready(Arc::clone(v))),
                    None => Ok(Found::Missing),
                }
            }
            Some(_) => Err(names()),
        }
    }

    /// Makes (`O(cells)`: call it off the runtime) or takes the view of `profile`, one of
    /// this version's non-default profiles; `None` if there is no such profile.
    pub fn make_view(&self, profile: &str) -> Option<Arc<MapEntry>> {
        let table = self.terrain.profiles()?.get(profile)?;
        if let Some(v) = self.views.lock().expect("views lock").get(profile) {
            return Some(Arc::clone(v));
        }
        let grid = Arc::new(self.terrain.under_profile(table));
        let view = Arc::new(self.view_entry(profile, grid));
        let mut views = self.views.lock().expect("views lock");
        Some(Arc::clone(views.entry(profile.to_owned()).or_insert(view)))
    }

    /// A view of this version for `profile` serving `grid` (not yet installed).
    pub fn view_entry(&self, profile: &str, grid: Arc<Grid>) -> MapEntry {
        MapEntry::of_grids(
            format!("{}~{profile}", self.map_name()),
            self.version,
            Arc::clone(&self.terrain),
            grid,
            Some(profile.to_owned()),
            self.source,
        )
    }

    /// Installs `view` as this version's view of its profile (a patch carrying an earlier
    /// version's view over).
    pub fn set_view(&self, view: Arc<MapEntry>) {
        let p = view.profile.clone().expect("a view has a profile");
        self.views.lock().expect("views lock").insert(p, view);
    }

    /// This version's views made so far, by profile.
    pub fn views(&self) -> Vec<(String, Arc<MapEntry>)> {
        self.views
            .lock()
            .expect("views lock")
            .iter()
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect()
    }

    /// Each profile of the map with its costs (and passable cells, for views made).
    fn profile_summaries(&self) -> Vec<crate::http::dto::ProfileSummary> {
        let views = self.views();
        let view = |p: &str| views.iter().find(|(q, _)| q == p).map(|(_, v)| v);
        let summary = |name: &str, default: bool, costs: Vec<u8>| {
            let v = view(name);
            crate::http::dto::ProfileSummary {
                name: name.to_owned(),
                default,
                costs,
                passable_cells: if default {
                    Some(self.grid.passable_cells() as u64)
                } else {
                    v.map(|v| v.grid.passable_cells() as u64)
                },
                hpa: v.and_then(|v| v.hpa.info()),
                jps_plus: v.and_then(|v| v.jump.info()),
                subgoal: v.and_then(|v| v.subgoal.info()),
            }
        };
        match self.terrain.profiles() {
            Some(set) => set
                .iter()
                .map(|(name, t)| summary(name, name == set.default_name(), t.to_vec()))
                .collect(),
            None => vec![summary(
                pathd_engine::profiles::DEFAULT_PROFILE,
                true,
                pathd_engine::profiles::identity_table().to_vec(),
            )],
        }
    }

    /// The profiles this map has.
    pub fn profile_names(&self) -> Vec<String> {
        match self.terrain.profiles() {
            Some(set) => set.iter().map(|(n, _)| n.to_owned()).collect(),
            None => vec![pathd_engine::profiles::DEFAULT_PROFILE.to_owned()],
        }
    }

    /// Runs `report` (setting this map's gauges) unless this version was retired.
    pub fn report_unless_retired(&self, report: impl FnOnce()) {
        let retired = self.retired.lock().expect("retired lock");
        if !*retired {
            report();
        }
    }

    /// Marks this version as no longer served, then runs `then` (under the same lock, so
    /// no [`Self::report_unless_retired`] comes after it).
    fn retire(&self, then: impl FnOnce()) {
        let mut retired = self.retired.lock().expect("retired lock");
        *retired = true;
        for (_, v) in self.views() {
            *v.retired.lock().expect("retired lock") = true;
        }
        then();
    }

    /// What the planner may use beside the grid: the HPA* abstraction, the JPS+ table and
    /// its landmarks, those of them that are ready (held for the query's duration, so an
    /// eviction meanwhile does not pull them away).
    pub fn derived(&self) -> DerivedNow {
        DerivedNow {
            hpa: self.hpa.get(),
            jump_table: self.jump.get(),
            landmarks: self.jump.landmarks(),
            subgoal: self.subgoal.get(),
        }
    }

    /// True when one of this version's structures was evicted (a query then asks for its
    /// rebuild).
    pub fn has_evicted(&self) -> bool {
        [
            self.hpa.status(),
            self.jump.table_slot().status(),
            self.jump.landmark_slot().status(),
            self.subgoal.slot().status(),
        ]
        .contains(&Status::Evicted)
    }

    /// The summary the API reports.
    pub fn summary(&self) -> MapSummary {
        let g = &self.grid;
        MapSummary {
            name: self.name.clone(),
            version: self.version,
            width: g.width(),
            height: g.height(),
            movement: g.movement().as_str(),
            passable_cells: g.passable_cells() as u64,
            blocked_cells: g.width() as u64 * g.height() as u64 - g.passable_cells() as u64,
            components: g.component_count(),
            uniform: g.is_uniform(),
            min_cost: if g.passable_cells() == 0 {
                0
            } else {
                g.min_cost()
            },
            max_cost: self.max_cost,
            source: self.source.as_str(),
            hpa: self.hpa.info(),
            subscriptions: None,
            jps_plus: self.jump.info(),
            subgoal: self.subgoal.info(),
            sized: self.sized.info(),
            recovery: None,
            default_profile: self.profile_name().to_owned(),
            profiles: self.profile_summaries(),
        }
    }
}

/// Where a profile is served (see [`MapEntry::find_view`]).
#[derive(Debug)]
pub enum Found {
    /// By this entry.
    Ready(Arc<MapEntry>),
    /// By a view not made yet.
    Missing,
}

/// The derived structures a query holds while it runs (see [`MapEntry::derived`]).
#[derive(Debug, Default)]
pub struct DerivedNow {
    /// The HPA* abstraction.
    pub hpa: Option<Arc<pathd_engine::Abstraction>>,
    /// The JPS+ jump table.
    pub jump_table: Option<Arc<pathd_engine::JumpTable>>,
    /// The JPS+ landmarks.
    pub landmarks: Option<Arc<pathd_engine::Landmarks>>,
    /// The subgoal graph.
    pub subgoal: Option<Arc<pathd_engine::SubgoalGraph>>,
}

impl DerivedNow {
    /// The planner's view of them.
    pub fn view(&self) -> Derived<'_> {
        Derived {
            hpa: self.hpa.as_deref(),
            jump_table: self.jump_table.as_deref(),
            landmarks: self.landmarks.as_deref(),
            subgoal: self.subgoal.as_deref(),
            sized: None,
        }
    }
}

/// Named maps. The std locks here guard only `HashMap` operations (clone or swap an `Arc`)
/// and are never held across an `.await`.
pub struct Registry {
    /// Current entry per name.
    maps: RwLock<HashMap<String, Arc<MapEntry>>>,
    /// Last version of each deleted name, so a re-created map continues past it.
    tombstones: Mutex<HashMap<String, u64>>,
    /// Bumped on every change (`min_version` waits on it).
    changes: watch::Sender<u64>,
    /// Builds HPA* abstractions of inserted big maps in the background.
    hpa: HpaBuilder,
    /// Builds JPS+ jump tables of inserted uniform octile maps in the background.
    jump: JumpBuilder,
    /// Builds subgoal graphs of the same maps in the background.
    subgoal: SubgoalBuilder,
    /// Derives profile views carried over by patches, off the write's path.
    views: crate::derived::pool::Lane,
    /// Bounds derived memory across all maps.
    budget: Arc<Budget>,
}

impl Registry {
    /// An empty registry whose big maps get HPA* abstractions per `hpa`, and whose uniform
    /// octile maps get JPS+ jump tables per `jump`.
    /// Builds run on `builders`' lanes; derived memory is bounded by `budget`.
    pub fn new(
        hpa: HpaSettings,
        jump: JumpSettings,
        subgoal: crate::derived::subgoal::SubgoalSettings,
        builders: &Builders,
        budget: Arc<Budget>,
    ) -> Self {
        Registry {
            maps: RwLock::default(),
            tombstones: Mutex::default(),
            changes: watch::Sender::new(0),
            hpa: HpaBuilder::new(hpa, builders, Arc::clone(&budget)),
            jump: JumpBuilder::new(jump, builders, Arc::clone(&budget)),
            subgoal: SubgoalBuilder::new(subgoal, builders, Arc::clone(&budget)),
            views: builders.lane("views"),
            budget,
        }
    }

    /// The derived-memory budget.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Queues the rebuild of whatever of `entry`'s structures was evicted (a query wants
    /// them back; it takes the fallback meanwhile).
    pub fn revive(&self, entry: &Arc<MapEntry>) {
        if entry.has_evicted() {
            self.hpa.ensure(entry);
            self.jump.ensure(entry);
            self.subgoal.ensure(entry);
        }
    }

    /// The JPS+ settings in force.
    pub fn jump_settings(&self) -> &JumpSettings {
        self.jump.settings()
    }

    /// The subgoal-graph settings in force.
    pub fn subgoal_settings(&self) -> &crate::derived::subgoal::SubgoalSettings {
        self.subgoal.settings()
    }

    /// The HPA* settings in force.
    pub fn hpa_settings(&self) -> &HpaSettings {
        self.hpa.settings()
    }

    /// Queues the HPA* build of `entry`'s map eroded for `size` unless started; true once
    /// it is ready (see [`crate::hpa::SizedViews`]).
    pub fn ensure_sized_hpa(&self, entry: &Arc<MapEntry>, size: u32) -> bool {
        self.hpa.ensure_sized(entry, size)
    }

    /// The current entry of `name`.
    pub fn get(&self, name: &str) -> Option<Arc<MapEntry>> {
        self.maps.read().expect("registry lock").get(name).cloned()
    }

    /// Every current entry, sorted by name.
    pub fn list(&self) -> Vec<Arc<MapEntry>> {
        let mut all: Vec<_> = self
            .maps
            .read()
            .expect("registry lock")
            .values()
            .cloned()
            .collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Number of maps.
    pub fn len(&self) -> usize {
        self.maps.read().expect("registry lock").len()
    }

    /// True when no map is loaded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Installs `entry` under its name, returning the entry it replaced.
    pub fn insert(&self, entry: Arc<MapEntry>) -> Option<Arc<MapEntry>> {
        self.tombstones
            .lock()
            .expect("tombstone lock")
            .remove(&entry.name);
        let old = self
            .maps
            .write()
            .expect("registry lock")
            .insert(entry.name.clone(), Arc::clone(&entry));
        if let Some(old) = &old {
            old.retire(|| {});
        }
        // A patched entry already derived its abstraction and table; others queue builds
        // (its carried-over views derive theirs on the `views` lane first).
        self.adopt(&entry);
        for (_, view) in entry.views() {
            self.adopt_view(&view);
        }
        self.changes.send_modify(|n| *n += 1);
        metrics::gauge!("pathd_maps_loaded").set(self.len() as f64);
        old
    }

    /// Queues the builds `entry` (a map's version or one of its profile views) wants and
    /// counts it in the derived-memory budget.
    pub fn adopt(&self, entry: &Arc<MapEntry>) {
        self.hpa.ensure(entry);
        self.jump.ensure(entry);
        self.subgoal.ensure(entry);
        self.budget.admit(entry);
    }

    /// [`Self::adopt`] for a profile's view, once, and not while its structures are being
    /// derived from the previous version's.
    pub fn adopt_view(&self, view: &Arc<MapEntry>) {
        if !view.pending.load(Ordering::Acquire) && !view.adopted.swap(true, Ordering::AcqRel) {
            self.adopt(view);
        }
    }

    /// Derives `next`, a profile's view carried over by a patch, from `prev` (the previous
    /// version's view; `changed` the cells whose cost moved for that profile) on the
    /// `views` lane: a patch pays for the profiles' cells on its path, not for their
    /// derived structures, so a map with four profiles writes about as fast as one with
    /// one. Meanwhile queries on the view take the fallbacks of a structure being built
    /// (`auto` runs JPS, `jps_plus` answers `503 abstraction_building`). What could not be
    /// derived (the previous version had not built it) is queued as a build by the next
    /// query ([`Self::adopt_view`]). One lane, in order: each version derives from the one
    /// before, whose own derivation ran first.
    pub fn derive_view(&self, next: &Arc<MapEntry>, prev: Arc<MapEntry>, changed: Vec<Point>) {
        next.pending.store(true, Ordering::Release);
        let jump = *self.jump.settings();
        let budget = Arc::clone(&self.budget);
        self.views.send(
            next,
            move |next| {
                crate::maps::patch::derive_from(next, &prev, &jump, &changed);
                next.pending.store(false, Ordering::Release);
                budget.admit(next);
            },
            |next, _| next.pending.store(false, Ordering::Release),
        );
    }

    /// Removes `name`, remembering its last version.
    pub fn remove(&self, name: &str) -> Option<Arc<MapEntry>> {
        let old = self.maps.write().expect("registry lock").remove(name);
        if let Some(e) = &old {
            self.note_deleted(name, e.version);
            e.retire(|| {
                crate::metrics::handle().forget_gauges("map", name);
                for (_, v) in e.views() {
                    crate::metrics::handle().forget_gauges("map", &v.name);
                }
            });
        }
        self.changes.send_modify(|n| *n += 1);
        metrics::gauge!("pathd_maps_loaded").set(self.len() as f64);
        old
    }

    /// Records that `name` was deleted at `version` (read back from storage at start).
    pub fn note_deleted(&self, name: &str, version: u64) {
        let mut t = self.tombstones.lock().expect("tombstone lock");
        let v = t.entry(name.to_owned()).or_insert(0);
        *v = (*v).max(version);
        drop(t);
        self.changes.send_modify(|n| *n += 1);
    }

    /// Wakes on every change of the registry.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The newest version of `name` known here, live or deleted (0: never seen).
    pub fn known_version(&self, name: &str) -> u64 {
        self.next_version(name) - 1
    }

    /// The version a new map under `name` gets: one past the current or deleted one.
    pub fn next_version(&self, name: &str) -> u64 {
        let current = self.get(name).map_or(0, |e| e.version);
        let deleted = self
            .tombstones
            .lock()
            .expect("tombstone lock")
            .get(name)
            .copied()
            .unwrap_or(0);
        current.max(deleted) + 1
    }
}

/// The state every handler sees (cheap to clone).
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    /// The maps service: registry, write order, store.
    maps: Maps,
    compute: Compute,
    metrics: &'static crate::metrics::Registry,
    /// Set once the startup maps are loaded (`/readyz`).
    ready: AtomicBool,
    /// Set when shutdown was asked for (SIGTERM): `/readyz` answers `503` from then on.
    draining: AtomicBool,
    /// Cancelled when shutdown begins, so long-lived responses (streams) can end.
    shutdown: CancellationToken,
    /// Live subscriptions and their repairs.
    live: Hub,
    /// The supervised builder pool of derived state (joined by [`crate::run`]).
    builders: Arc<Builders>,
    /// Membership, subscription ownership and forwarding (`--store nats://...`).
    cluster: crate::cluster::Cluster,
}

impl AppState {
    /// Opens the data directory and starts the search pool. Maps are loaded by
    /// [`crate::run`] (or [`crate::load_maps`]) afterwards.
    pub fn new(config: Config) -> io::Result<Self> {
        let metrics = crate::metrics::handle(); // first, so the pool's gauges are recorded
        let store: Arc<dyn MapStore> = match config.nats().map_err(io::Error::other)? {
            Some(opts) => nats_store(&config, opts)?,
            None => Arc::new(LocalStore::open(
                &config.data_dir,
                config.test_store_delay(),
            )?),
        };
        let compute = Compute::new(config.worker_threads(), config.queue_depth);
        let shutdown = CancellationToken::new();
        let live = Hub::new(&config, compute.clone(), shutdown.clone());
        let builders = Builders::new(config.test_fail_builds_of.clone());
        let maps = Maps::new(
            store,
            compute.clone(),
            live.clone(),
            Registry::new(
                config.hpa_settings(),
                config.jump_settings(),
                crate::derived::subgoal::SubgoalSettings::from_config(&config),
                &builders,
                Arc::new(Budget::new(config.derived_memory())),
            ),
            config.max_maps,
            config.max_pending_writes,
        );
        // Maps are placed only on a cluster (`--store nats://...`).
        let placement = crate::cluster::Placement::new(
            config
                .replication
                .placement
                .filter(|_| config.replication.store.is_some() && cfg!(feature = "nats")),
        );
        maps.place_with(placement.clone());
        let cluster = crate::cluster::Cluster::new(&config, placement);
        if let Some(r) = cluster.replica() {
            live.flows().set_id_prefix(r);
        }
        Ok(AppState {
            inner: Arc::new(Inner {
                maps,
                compute,
                metrics,
                ready: AtomicBool::new(false),
                draining: AtomicBool::new(false),
                builders,
                shutdown,
                live,
                cluster,
                config,
            }),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The supervised builder pool of derived state.
    pub fn builders(&self) -> &Arc<Builders> {
        &self.inner.builders
    }

    /// The maps service (every map write goes through it).
    pub fn maps(&self) -> &Maps {
        &self.inner.maps
    }

    /// The map registry (read side of the maps service).
    pub fn registry(&self) -> &Registry {
        self.inner.maps.registry()
    }

    /// The search pool.
    pub fn compute(&self) -> &Compute {
        &self.inner.compute
    }

    /// The Prometheus handle `/metrics` renders.
    pub fn metrics(&self) -> &'static crate::metrics::Registry {
        self.inner.metrics
    }

    /// True once the startup maps are loaded.
    pub fn is_ready(&self) -> bool {
        self.inner.ready.load(Ordering::Acquire)
    }

    /// Marks the server ready.
    pub fn set_ready(&self) {
        self.inner.ready.store(true, Ordering::Release);
    }

    /// True once shutdown was asked for: not ready any more, whatever else.
    pub fn is_draining(&self) -> bool {
        self.inner.draining.load(Ordering::Acquire)
    }

    /// Marks the server as shutting down (`/readyz` answers `503`).
    pub fn set_draining(&self) {
        self.inner.draining.store(true, Ordering::Release);
    }

    /// Cancelled when shutdown begins.
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    /// Live subscriptions.
    pub fn live(&self) -> &Hub {
        &self.inner.live
    }

    /// The cluster of replicas (disabled without `--store nats://...`).
    pub fn cluster(&self) -> &crate::cluster::Cluster {
        &self.inner.cluster
    }
}

/// The replicated store for `--store nats://...`.
#[cfg(feature = "nats")]
fn nats_store(config: &Config, opts: crate::store::NatsOptions) -> io::Result<Arc<dyn MapStore>> {
    let rt = tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
    let delay = std::time::Duration::from_millis(config.test_apply_delay_ms);
    Ok(Arc::new(
        crate::store::NatsStore::new(opts, rt)
            .with_test_apply_delay(delay)
            .with_test_feed_window(config.test_feed_window),
    ))
}

/// Without the `nats` feature, `--store nats://...` is refused at start, saying how to get
/// a build that has it (the flag still parses, so a deployment's configuration is checked
/// the same way in every build).
#[cfg(not(feature = "nats"))]
fn nats_store(config: &Config, _opts: crate::store::NatsOptions) -> io::Result<Arc<dyn MapStore>> {
    let url = config.replication.store.as_deref().unwrap_or_default();
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        crate::store::NatsOptions::unavailable(url),
    ))
}
