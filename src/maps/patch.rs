//! Patches: the next version of a map from cell changes and profile changes, its derived
//! state and profile views carried over, and the live hub told what changed for each
//! profile.

use std::sync::Arc;

use pathd_engine::{Grid, Patch, PatchError, Point};

use super::{MAX_ATTEMPTS, Maps, MapsError, PatchOutcome};
use crate::derived::{Found, MapEntry, MapSource};
use crate::store::Mutation;

/// A patched version of a map (see [`Maps::build_patched`]).
pub(super) struct Patched {
    /// The next entry, its profile views carried over.
    pub(super) entry: MapEntry,
    /// Cells whose cost changed under the default profile.
    pub(super) changed: Vec<Point>,
    /// Cells whose terrain (a plain map: cost) changed, with their new values: what the
    /// patch log records.
    pub(super) cells: Vec<(Point, u8)>,
    /// Per carried-over profile view, the cells whose cost changed for it, the view and
    /// the previous version's (its structures derive from that one's on a lane).
    pub(super) by_profile: Vec<ProfileStep>,
    /// True when the profile set changed (the write is then stored as a whole map).
    pub(super) profiles_changed: bool,
}

/// A profile view a patch carried over: its name, the cells whose cost changed for it, the
/// new view and the previous one.
pub(super) type ProfileStep = (String, Vec<Point>, Arc<MapEntry>, Arc<MapEntry>);

/// A patch's changes to a map's unit-type profiles.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfileChange {
    /// Profiles added or replaced (`Some`) and removed (`None`).
    pub tables: std::collections::BTreeMap<String, Option<pathd_engine::CostTable>>,
    /// Another default profile.
    pub default: Option<String>,
}

impl ProfileChange {
    /// True when it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty() && self.default.is_none()
    }
}

/// The cells whose cost differs between two grids of one shape.
fn diff(a: &Grid, b: &Grid) -> Vec<Point> {
    let (x, y) = (a.costs(), b.costs());
    let w = a.width() as usize;
    (0..x.len())
        .filter(|&i| x[i] != y[i])
        .map(|i| Point::new((i % w) as u32, (i / w) as u32))
        .collect()
}

/// The grid of the next version for a profile (`table_now`, was `table_before`) that saw
/// `before`, after the terrain became `terrain` at `changed` cells: patched cell by cell
/// when the table stayed, made anew (and diffed) when it moved. With the cells whose cost
/// changed for it.
fn follow(
    before: &Arc<Grid>,
    terrain: &Arc<Grid>,
    changed: &[Point],
    table_before: &pathd_engine::CostTable,
    table_now: &pathd_engine::CostTable,
) -> (Arc<Grid>, Vec<Point>) {
    if table_before == table_now {
        match before.follow_classes(terrain, changed, table_now) {
            Some((g, c)) => (Arc::new(g), c),
            None => (Arc::clone(before), Vec::new()),
        }
    } else {
        let g = terrain.under_profile(table_now);
        let c = diff(before, &g);
        (Arc::new(g), c)
    }
}

impl Maps {
    /// The entry after `patch` and `profiles` on `prev` (at version `prev.version + 1`,
    /// its derived state and its profile views derived from `prev`'s); `None` for a no-op.
    pub(super) async fn build_patched(
        &self,
        prev: Arc<MapEntry>,
        patch: Patch,
        profiles: ProfileChange,
    ) -> Result<Option<Patched>, MapsError> {
        let (n, next) = (prev.name.clone(), prev.version + 1);
        let jump_settings = *self.inner.registry.jump_settings();
        // On a blocking thread of its own, not the search pool: a write must not queue
        // behind searches (long flow-field creates hold a worker for a second). Writes are
        // bounded without the pool: one at a time per map, `--max-pending-writes` queued.
        tokio::task::spawn_blocking(move || {
            let identity = pathd_engine::profiles::identity_table();
            let set_before = prev.terrain.profiles().cloned();
            let table_before = |p: &str| match &set_before {
                Some(set) => set.get(p).copied(),
                None => (p == pathd_engine::profiles::DEFAULT_PROFILE).then_some(identity),
            };
            let (terrain, class_changed) = match prev
                .terrain
                .apply_patch(&patch)
                .map_err(|e: PatchError| MapsError::PatchOutOfBounds(e.to_string()))?
            {
                Some((g, c)) => (g, c),
                None => ((*prev.terrain).clone(), Vec::new()),
            };
            let set_now = if profiles.is_empty() {
                set_before.clone()
            } else {
                // A plain map taking profiles: its costs become its classes, under the
                // implicit `default` (the class itself).
                let base = set_before.as_deref().cloned().unwrap_or_else(|| {
                    pathd_engine::Profiles::new(
                        pathd_engine::profiles::DEFAULT_PROFILE,
                        [(pathd_engine::profiles::DEFAULT_PROFILE.to_owned(), identity)].into(),
                    )
                    .expect("the implicit profile set is valid")
                });
                Some(Arc::new(
                    base.changed(&profiles.tables, profiles.default.as_deref())
                        .map_err(|e| MapsError::InvalidProfiles(e.to_string()))?,
                ))
            };
            let profiles_changed = set_now != set_before;
            if class_changed.is_empty() && !profiles_changed {
                return Ok(None);
            }
            // A plain map taking its first profile: its costs become a terrain raster.
            let terrain = if terrain.profiles().is_none() && set_now.is_some() {
                Grid::raster(
                    terrain.width(),
                    terrain.height(),
                    terrain.costs(),
                    terrain.movement(),
                )
                .expect("the dimensions of a valid grid")
            } else {
                terrain
            };
            let terrain = Arc::new(terrain.with_profiles(set_now.clone()));
            let cells: Vec<(Point, u8)> = class_changed
                .iter()
                .map(|&p| (p, terrain.cost(p)))
                .collect();
            let (grid, changed) = match &set_now {
                None => (Arc::clone(&terrain), class_changed.clone()),
                Some(set) => {
                    let before = table_before(prev.profile_name()).unwrap_or(identity);
                    follow(
                        &prev.grid,
                        &terrain,
                        &class_changed,
                        &before,
                        set.default_table(),
                    )
                }
            };
            let next_entry = MapEntry::of_grids(
                n,
                next,
                Arc::clone(&terrain),
                grid,
                None,
                MapSource::Uploaded,
            );
            next_entry.derive_from(&prev, &jump_settings, &changed);
            let mut by_profile = Vec::new();
            if let Some(set) = &set_now {
                for (p, view) in prev.views() {
                    let (Some(now), Some(before)) = (set.get(&p), table_before(&p)) else {
                        continue; // removed: its subscriptions end
                    };
                    if set.default_name() == p {
                        continue; // now the default: the entry itself serves it
                    }
                    let (g, c) = follow(&view.grid, &terrain, &class_changed, &before, now);
                    let next_view = Arc::new(next_entry.view_entry(&p, g));
                    next_entry.set_view(Arc::clone(&next_view));
                    // Its derived structures follow on a lane (Registry::derive_view).
                    by_profile.push((p, c, next_view, view));
                }
            }
            Ok(Some(Patched {
                entry: next_entry,
                changed,
                cells,
                by_profile,
                profiles_changed,
            }))
        })
        .await
        .map_err(|e| MapsError::Internal(format!("applying the patch failed: {e}")))?
        .map_err(|e: MapsError| e)
    }

    /// Serves `new` (the patch of `prev`) and hands the change to the live hub, each
    /// profile's subscriptions the cells that changed for their profile; returns the
    /// subscriptions it reached.
    pub(super) async fn install_patched(
        &self,
        prev: &MapEntry,
        new: &Arc<MapEntry>,
        changed: Vec<Point>,
        by_profile: Vec<ProfileStep>,
    ) -> u64 {
        for (_, c, next_view, prev_view) in &by_profile {
            self.inner
                .registry
                .derive_view(next_view, Arc::clone(prev_view), c.clone());
        }
        self.inner.registry.insert(Arc::clone(new));
        let live = &self.inner.live;
        let delivery = live.on_patch(
            &new.name,
            &prev.grid,
            Arc::clone(&new.grid),
            new.version,
            changed,
        );
        let mut delivered = delivery.delivered as u64;
        let prev_views: std::collections::BTreeMap<String, Arc<MapEntry>> =
            prev.views().into_iter().collect();
        let mut done = std::collections::BTreeSet::new();
        for (p, c, _, _) in by_profile {
            let (Some(before), Found::Ready(view)) = (
                prev_views.get(&p),
                new.find_view(Some(&p)).unwrap_or(Found::Missing),
            ) else {
                continue;
            };
            delivered += live
                .on_patch(
                    &view.name,
                    &before.grid,
                    Arc::clone(&view.grid),
                    new.version,
                    c,
                )
                .delivered as u64;
            done.insert(p);
        }
        self.follow_profiles(Some(prev), new, &done).await;
        delivered
    }

    /// Brings the live hub's other profiles of `new`'s map (those with subscriptions or
    /// flow fields that `done` did not already serve) to `new`: a profile no longer there
    /// ends them; one whose view was not carried over gets it made and diffed.
    pub(super) async fn follow_profiles(
        &self,
        prev: Option<&MapEntry>,
        new: &Arc<MapEntry>,
        done: &std::collections::BTreeSet<String>,
    ) {
        let live = &self.inner.live;
        for (p, held) in live.profile_grids(new.map_name()) {
            if done.contains(&p) {
                continue;
            }
            let key = format!("{}~{p}", new.map_name());
            // The grid its subscriptions hold, else (flow fields only) the previous
            // version's view of it.
            let old = match (held, prev) {
                (Some(g), _) => g,
                (None, Some(prev)) => {
                    let from = prev.views().into_iter().find(|(q, _)| *q == p);
                    match from {
                        Some((_, v)) => Arc::clone(&v.grid),
                        None => {
                            live.end_map(&key, "profile_removed");
                            continue;
                        }
                    }
                }
                (None, None) => {
                    live.end_map(&key, "profile_removed");
                    continue;
                }
            };
            let view = match new.find_view(Some(&p)) {
                Ok(Found::Ready(v)) => v,
                Ok(Found::Missing) => {
                    let (e, q) = (Arc::clone(new), p.clone());
                    match tokio::task::spawn_blocking(move || e.make_view(&q)).await {
                        Ok(Some(v)) => {
                            self.inner.registry.adopt(&v);
                            v
                        }
                        _ => {
                            live.end_map(&key, "profile_removed");
                            continue;
                        }
                    }
                }
                Err(_) => {
                    live.end_map(&key, "profile_removed");
                    continue;
                }
            };
            if view.profile.is_none() {
                // The profile became the default: its subscriptions follow a profile that
                // the map's own key now serves; end them rather than serve two keys.
                live.end_map(&key, "profile_removed");
                continue;
            }
            live.on_replace(&key, old, Arc::clone(&view.grid), new.version)
                .await;
        }
    }

    /// Applies `patch` and `profiles` to map `name` (only at `if_version`, when given).
    pub async fn patch(
        &self,
        name: String,
        patch: Patch,
        profiles: ProfileChange,
        if_version: Option<u64>,
    ) -> Result<PatchOutcome, MapsError> {
        self.get_caught_up(&name).await?; // keeps unknown names away from the writer table
        self.spawn_write(&name.clone(), move |me| async move {
            let mut caught_up = false;
            for _ in 0..MAX_ATTEMPTS {
                let order = me.write_order(&name).await;
                let entry = me.get(&name)?;
                if let Some(expected) = if_version
                    && expected != entry.version
                {
                    // A newer expected version may only mean this replica lags: catch up
                    // once before answering.
                    if expected > entry.version && !caught_up {
                        drop(order);
                        me.catch_up(&name).await?;
                        caught_up = true;
                        continue;
                    }
                    return Err(MapsError::VersionConflict {
                        current: entry.version,
                        expected,
                    });
                }
                let Some(Patched {
                    entry: new,
                    changed,
                    cells,
                    by_profile,
                    profiles_changed,
                }) = me
                    .build_patched(Arc::clone(&entry), patch.clone(), profiles.clone())
                    .await?
                else {
                    return Ok(PatchOutcome {
                        version: entry.version,
                        changed_cells: 0,
                        affected_subscriptions: 0,
                    });
                };
                let new = Arc::new(new);
                let cells_len = cells.len();
                let e = Arc::clone(&new);
                match me
                    .persist(&name, new.version, move |s| {
                        // The patch log holds cells, not profile tables: a write that
                        // changes the profiles is stored as the whole map.
                        let m = if profiles_changed {
                            Mutation::Put(&e.terrain)
                        } else {
                            Mutation::Patch {
                                cells: &cells,
                                after: &e.terrain,
                            }
                        };
                        s.append(&e.name, e.version, m)
                    })
                    .await
                {
                    Ok(()) => {}
                    Err(MapsError::Conflicted) => {
                        drop(order);
                        me.catch_up(&name).await?;
                        caught_up = true;
                        continue;
                    }
                    Err(e) => return Err(e),
                }
                let changed_cells = cells_len as u64;
                let affected = me.install_patched(&entry, &new, changed, by_profile).await;
                metrics::counter!("pathd_patches_total").increment(1);
                tracing::info!(map = %name, version = new.version, changed_cells, affected, "map patched");
                return Ok(PatchOutcome {
                    version: new.version,
                    changed_cells,
                    affected_subscriptions: affected,
                });
            }
            Err(MapsError::Conflicted)
        })
        .await
    }
}
