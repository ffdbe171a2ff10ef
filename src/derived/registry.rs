//! The registry of named maps: the current [`MapEntry`] of each name, the tombstones of
//! deleted ones, and the builders that derive structures of inserted versions.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock};

use pathd_engine::Point;
use tokio::sync::watch;

use crate::derived::subgoal::SubgoalBuilder;
use crate::derived::{Budget, Builders};
use crate::hpa::{HpaBuilder, HpaSettings};
use crate::jump::{JumpBuilder, JumpSettings};

use super::entry::MapEntry;

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
                next.derive_from(&prev, &jump, &changed);
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
