//! A map version and what is derived from it: the grid, its profile views, and the slots
//! of its HPA* abstraction, JPS+ table and landmarks, subgoal graph and eroded views.
//!
//! Snapshot isolation: a map is an immutable [`MapEntry`] behind an `Arc`. A reader clones
//! the `Arc` under a short read lock and lets go; a writer builds the next entry off to the
//! side and swaps it in. A query that already holds the old `Arc` finishes on it, whatever
//! happens to the name meanwhile.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use pathd_engine::{Derived, Grid};

use super::summary::{MapSummary, ProfileSummary};
use crate::derived::Status;
use crate::derived::subgoal::SubgoalSlot;
use crate::hpa::{HpaSlot, SizedViews};
use crate::jump::JumpSlot;

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
    pub(super) pending: AtomicBool,
    /// Set once the registry was asked for this view's builds ([`Registry::adopt_view`]).
    pub(super) adopted: AtomicBool,
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
    /// Derives this version's structures from `prev`'s (its previous version) after
    /// `changed` cells changed: only what the change touches is rebuilt (see
    /// [`crate::hpa`], [`crate::jump`]). (The subgoal graph is rebuilt on its lane:
    /// contracting its hierarchy anew costs about a build, too much for a write's path; see
    /// `derived::subgoal`.)
    pub fn derive_from(
        &self,
        prev: &MapEntry,
        jump: &crate::jump::JumpSettings,
        changed: &[pathd_engine::Point],
    ) {
        self.hpa.derive(&self.name, &prev.hpa, &self.grid, changed);
        self.sized.derive(&prev.sized, &self.grid, changed);
        self.jump
            .derive(&self.name, &prev.jump, jump, &self.grid, changed);
    }

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
    fn profile_summaries(&self) -> Vec<ProfileSummary> {
        let views = self.views();
        let view = |p: &str| views.iter().find(|(q, _)| q == p).map(|(_, v)| v);
        let summary = |name: &str, default: bool, costs: Vec<u8>| {
            let v = view(name);
            ProfileSummary {
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
    pub(super) fn retire(&self, then: impl FnOnce()) {
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
