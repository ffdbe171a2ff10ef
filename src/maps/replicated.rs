//! Mutations read back from a replicated store (written by any replica, this one
//! included), and whole maps installed in place of others.

use std::sync::Arc;

use pathd_engine::{Grid, Patch};

use super::{Maps, ProfileChange};
use crate::derived::{MapEntry, MapSource};
use crate::store::{Change, Damage, Replicated};

impl Maps {
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
