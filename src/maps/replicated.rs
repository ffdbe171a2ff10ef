//! Mutations read back from a replicated store (written by any replica, this one
//! included), and whole maps installed in place of others.

use std::sync::Arc;

use pathd_engine::{Grid, Patch};

use super::{Maps, MapsError, ProfileChange};
use crate::cluster::Placement;
use crate::derived::{MapEntry, MapSource};
use crate::store::{Change, Damage, Recovered, Replicated};

impl Maps {
    /// Places this replica's maps with `p` (`--placement K`; set once, before recovery).
    pub fn place_with(&self, p: Placement) {
        let _ = self.inner.placement.set(p);
    }

    /// The placement, when maps are placed (`--placement K`).
    pub fn placed(&self) -> Option<&Placement> {
        self.inner.placement.get().filter(|p| p.active())
    }

    /// True when a replicated mutation of `name` (not held here) is only followed in its
    /// summary: the map is held elsewhere, or will be loaded here whole from the stream (a
    /// patch without its whole map cannot make a map here). A whole map this replica
    /// should hold is installed instead.
    fn held_elsewhere(&self, p: &Placement, name: &str, change: &Change) -> bool {
        let whole = matches!(change, Change::Put(_) | Change::Patch { full: Some(_), .. });
        !(whole && p.wants(name))
    }

    /// Loads `name` from the store and holds it here (placement moved it here): under its
    /// write order, so every mutation of the stream is in it or applied after it, once.
    /// `Ok(false)`: held already, or the store has no live map of that name.
    pub async fn acquire(&self, name: &str) -> Result<bool, MapsError> {
        let _order = self.write_order(name).await;
        if self.inner.registry.get(name).is_some() {
            if let Some(p) = self.placed() {
                p.drop_stub(name);
            }
            return Ok(false);
        }
        let store = Arc::clone(&self.inner.store);
        let n = name.to_owned();
        let found = tokio::task::spawn_blocking(move || store.load(&n))
            .await
            .map_err(|e| MapsError::Internal(format!("store task failed: {e}")))?
            .map_err(|e| MapsError::Store(e.to_string()))?;
        match found {
            Some(Recovered::Live {
                name: n,
                version,
                grid,
                ..
            }) => {
                let entry = Arc::new(MapEntry::new(n, version, *grid, MapSource::Uploaded));
                self.install_replacement(name, &entry).await;
                if let Some(p) = self.placed() {
                    p.drop_stub(name);
                }
                tracing::info!(map = %name, version, "placed here: loaded from the stream");
                Ok(true)
            }
            Some(Recovered::Deleted { version, .. }) => {
                self.inner.registry.note_deleted(name, version);
                if let Some(p) = self.placed() {
                    p.drop_stub(name);
                }
                Ok(false)
            }
            Some(Recovered::Damaged(d)) => {
                if let Some(p) = self.placed() {
                    p.drop_stub(name);
                }
                self.mark_damaged(d);
                Ok(false)
            }
            None => Ok(false),
        }
    }

    /// Drops `name` here, keeping its summary (placement moved it to replicas that hold it
    /// now). Not while subscriptions or flow fields of this replica run on it: `false` then.
    pub async fn release_placed(&self, name: &str) -> bool {
        let Some(p) = self.placed() else { return false };
        let _order = self.write_order(name).await;
        let Some(entry) = self.inner.registry.get(name) else {
            return false;
        };
        if entry.source == MapSource::Bundled
            || self.inner.live.usage(name).0 > 0
            || self.inner.live.flows().has_map(name)
        {
            return false;
        }
        p.set_stub(entry.summary());
        self.inner.registry.remove(name);
        crate::memory::released(entry.grid.width() as usize * entry.grid.height() as usize);
        tracing::info!(map = %name, version = entry.version, "placed elsewhere: dropped here");
        true
    }

    /// Applies a mutation read back from a replicated store (written by any replica,
    /// this one included), in the map's write order: skipped when this replica already
    /// has that version; otherwise served, with derived state rebuilt and the live hub told
    /// exactly as for a local write (subscriptions here are repaired by a patch written
    /// through another replica).
    pub async fn apply_replicated(&self, rep: Replicated) {
        let Replicated {
            name,
            version,
            position,
            change,
        } = rep;
        let _order = self.write_order(&name).await;
        let registry = &self.inner.registry;
        let known = registry.known_version(&name);
        let current = registry.get(&name);
        if current.is_none()
            && let Some(p) = self.placed()
            && self.held_elsewhere(p, &name, &change)
        {
            match change {
                Change::Put(g) | Change::Patch { full: Some(g), .. } => {
                    let e = MapEntry::new(name.clone(), version, g, MapSource::Uploaded);
                    p.set_stub(e.summary());
                }
                Change::Patch { full: None, .. } => p.bump_stub(&name, version),
                Change::Delete => {
                    p.drop_stub(&name);
                    registry.note_deleted(&name, version);
                }
                Change::Unreadable(why) => {
                    p.drop_stub(&name);
                    self.damage_replicated(&name, version, known, why);
                }
            }
            metrics::counter!("pathd_replicated_mutations_total").increment(1);
            let store = Arc::clone(&self.inner.store);
            store.applied(&name, version, position);
            return;
        }
        match change {
            Change::Delete => {
                self.clear_damage(&name);
                if current.as_ref().is_some_and(|c| c.version <= version) {
                    registry.remove(&name);
                    self.inner.live.end_map_all(&name, "map_deleted");
                    tracing::info!(map = %name, version, "replicated delete applied");
                }
                registry.note_deleted(&name, version);
            }
            _ if version <= known => {} // already applied (this replica's own write)
            Change::Unreadable(why) => self.damage_replicated(&name, version, known, why),
            Change::Patch { cells, full } => {
                let patch = Patch {
                    cells,
                    rects: Vec::new(),
                };
                let base = current.filter(|c| c.version + 1 == version);
                let mut done = false;
                if let Some(prev) = base {
                    match self
                        .build_patched(Arc::clone(&prev), patch, ProfileChange::default())
                        .await
                    {
                        Ok(Some(p)) => {
                            self.install_patched(
                                &prev,
                                &Arc::new(p.entry),
                                p.changed,
                                p.by_profile,
                            )
                            .await;
                            done = true;
                        }
                        Ok(None) => {
                            // Nothing changed here: serve the same cells under the new version.
                            let g = (*prev.terrain).clone();
                            self.replace_replicated(&name, version, g).await;
                            done = true;
                        }
                        Err(e) => {
                            tracing::error!(map = %name, version, error = %e, "replicated patch does not apply")
                        }
                    }
                }
                if !done {
                    match full {
                        Some(g) => self.replace_replicated(&name, version, g).await,
                        None => self.damage_replicated(
                            &name,
                            version,
                            known,
                            format!(
                                "patch {version} cannot be applied here (have version {known})"
                            ),
                        ),
                    }
                }
            }
            Change::Put(g) => self.replace_replicated(&name, version, g).await,
        }
        metrics::counter!("pathd_replicated_mutations_total").increment(1);
        let store = Arc::clone(&self.inner.store);
        store.applied(&name, version, position);
    }

    /// A replicated mutation (to `version`; this replica has `known`) that cannot be
    /// applied here: the map is damaged, neither served as its older version nor written
    /// on from it, until a whole map of a later version arrives; its subscriptions end.
    /// Versions go on past `version`.
    pub(super) fn damage_replicated(&self, name: &str, version: u64, known: u64, why: String) {
        self.inner.registry.note_deleted(name, version);
        let mut all = self.inner.damaged.write().expect("damaged lock");
        if let Some(d) = all.get_mut(name) {
            d.dropped.push(version);
            return;
        }
        drop(all);
        self.mark_damaged(Damage {
            name: name.to_owned(),
            reason: format!("replicated {why}; a whole map (PUT) repairs it"),
            last_good: (known > 0).then_some(known),
            dropped: vec![version],
        });
        self.inner.live.end_map_all(name, "map_damaged");
    }

    /// Forgets the damage of `name` (a whole map or a delete replaced it).
    pub(super) fn clear_damage(&self, name: &str) {
        if self
            .inner
            .damaged
            .write()
            .expect("damaged lock")
            .remove(name)
            .is_some()
        {
            tracing::info!(map = %name, "damaged map replaced: served again");
        }
    }

    /// Serves `grid` as `version` of `name` (a replicated put, or a patch applied by its
    /// whole map), telling the live hub as a local replace does.
    pub(super) async fn replace_replicated(&self, name: &str, version: u64, grid: Grid) {
        self.clear_damage(name);
        // O(1): the grid keeps its own statistics, so no pool hop is needed.
        let entry = Arc::new(MapEntry::new(
            name.to_owned(),
            version,
            grid,
            MapSource::Uploaded,
        ));
        self.install_replacement(name, &entry).await;
        tracing::debug!(map = %name, version, "replicated map applied");
    }

    /// Serves `entry` in place of whatever `name` held, and hands a replaced map's
    /// subscriptions the difference (local and replicated puts alike).
    pub(super) async fn install_replacement(&self, name: &str, entry: &Arc<MapEntry>) {
        let old = self.inner.registry.insert(Arc::clone(entry));
        if let Some(old) = &old {
            self.inner
                .live
                .on_replace(
                    name,
                    Arc::clone(&old.grid),
                    Arc::clone(&entry.grid),
                    entry.version,
                )
                .await;
        }
        self.follow_profiles(old.as_deref(), entry, &std::collections::BTreeSet::new())
            .await;
    }
}
