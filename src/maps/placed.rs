//! Maps placed, not copied everywhere (`--placement K`): which replica holds which map is
//! decided outside the service (the cluster's membership), behind [`Placer`]; the service
//! loads a map placed here, drops one placed elsewhere, and keeps the summary of a map held
//! elsewhere with the placer.

use std::sync::Arc;

use super::{Maps, MapsError};
use crate::derived::summary::MapSummary;
use crate::derived::{MapEntry, MapSource};
use crate::store::{Change, Recovered};

/// Which maps this replica holds, and the summaries of the ones held elsewhere (the
/// cluster's placement implements it). The maps service asks it for every map it loads or
/// follows; without `--placement K` there is none.
pub trait Placer: Send + Sync + 'static {
    /// True when maps are placed (`--placement K`); an inactive placer is ignored.
    fn active(&self) -> bool;
    /// True when this replica should hold `name`.
    fn wants(&self, name: &str) -> bool;
    /// Keeps `summary` as the map's, held elsewhere (its derived-state parts dropped).
    fn set_stub(&self, summary: MapSummary);
    /// A mutation of `name` (held elsewhere) produced `version`.
    fn bump_stub(&self, name: &str, version: u64);
    /// `name` is held here now, or deleted.
    fn drop_stub(&self, name: &str);
}

impl Maps {
    /// Places this replica's maps with `p` (`--placement K`; set once, before recovery).
    pub fn place_with(&self, p: Arc<dyn Placer>) {
        let _ = self.inner.placement.set(p);
    }

    /// The placement, when maps are placed (`--placement K`).
    pub fn placed(&self) -> Option<&dyn Placer> {
        self.inner
            .placement
            .get()
            .map(|p| p.as_ref())
            .filter(|p| p.active())
    }

    /// True when a replicated mutation of `name` (not held here) is only followed in its
    /// summary: the map is held elsewhere, or will be loaded here whole from the stream (a
    /// patch without its whole map cannot make a map here). A whole map this replica
    /// should hold is installed instead.
    pub(super) fn held_elsewhere(&self, p: &dyn Placer, name: &str, change: &Change) -> bool {
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
}
