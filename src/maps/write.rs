//! The writes of whole maps (`put`, `delete`) and what every write runs on: its own
//! tracked task ([`Maps::spawn_write`], see the module docs of [`super`]), the durable
//! append off the runtime, and the catch-up after a lost compare-and-set.

use std::sync::Arc;

use pathd_engine::Grid;

use super::{MAX_ATTEMPTS, Maps, MapsError, PutOutcome, valid_name};
use crate::derived::{MapEntry, MapSource};
use crate::store::{MapStore, Mutation, StoreError};

impl Maps {
    /// Runs a write of `name` on its own tracked task (see the module docs) and waits for
    /// its answer; dropping the returned future does not stop the write. At most
    /// `--max-pending-writes` writes of a map are admitted at once (`Overloaded` beyond);
    /// one still waiting for startup recovery when shutdown begins is refused.
    pub(super) async fn spawn_write<T, F, Fut>(&self, name: &str, f: F) -> Result<T, MapsError>
    where
        T: Send + 'static,
        F: FnOnce(Maps) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, MapsError>> + Send + 'static,
    {
        let admitted = self.admit(name)?;
        let me = self.clone();
        let task = self.inner.writes.spawn(async move {
            let _admitted = admitted;
            let mut loaded = me.inner.loaded.subscribe();
            let ready = tokio::select! {
                biased;
                _ = loaded.wait_for(|l| *l) => true,
                _ = me.inner.closing.cancelled() => false,
            };
            if !ready && !*me.inner.loaded.borrow() {
                return Err(MapsError::ShuttingDown);
            }
            f(me).await
        });
        task.await
            .map_err(|e| MapsError::Internal(format!("write task failed: {e}")))?
    }

    /// Makes a write durable off the runtime; on a damaged store, marks the map. A lost
    /// compare-and-set (another replica wrote first) is [`MapsError::Conflicted`].
    pub(super) async fn persist(
        &self,
        name: &str,
        version: u64,
        m: impl FnOnce(&dyn MapStore) -> Result<(), StoreError> + Send + 'static,
    ) -> Result<(), MapsError> {
        let store = Arc::clone(&self.inner.store);
        let r = tokio::task::spawn_blocking(move || m(store.as_ref()))
            .await
            .map_err(|e| MapsError::Internal(format!("store task failed: {e}")))?;
        match r {
            Ok(()) => Ok(()),
            Err(StoreError::Damaged(d)) => {
                self.mark_damaged(d.clone());
                Err(MapsError::Store(d.reason))
            }
            Err(StoreError::Conflict { .. }) => Err(MapsError::Conflicted),
            Err(e) => {
                tracing::error!(map = %name, version, error = %e, "write not made durable");
                Err(MapsError::Store(e.to_string()))
            }
        }
    }

    /// Waits (off the runtime) until this replica has applied every mutation of `name` the
    /// store holds: after a lost compare-and-set, or before answering a conflict that may
    /// only be this replica lagging. A store only this process writes returns at once.
    pub(super) async fn catch_up(&self, name: &str) -> Result<(), MapsError> {
        let store = Arc::clone(&self.inner.store);
        let n = name.to_owned();
        match tokio::task::spawn_blocking(move || store.catch_up(&n)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(StoreError::Behind(m))) => Err(MapsError::ReplicaBehind(m)),
            Ok(Err(e)) => Err(MapsError::Store(e.to_string())),
            Err(e) => Err(MapsError::Internal(format!("store task failed: {e}"))),
        }
    }

    /// Creates or replaces map `name` with `grid`.
    pub async fn put(&self, name: String, grid: Grid) -> Result<PutOutcome, MapsError> {
        if !valid_name(&name) {
            return Err(MapsError::InvalidName);
        }
        self.spawn_write(&name.clone(), move |me| async move {
            let mut grid = grid;
            for _ in 0..MAX_ATTEMPTS {
                match me.try_put(&name, grid).await? {
                    Ok(out) => return Ok(out),
                    Err(back) => {
                        grid = back;
                        me.catch_up(&name).await?;
                    }
                }
            }
            Err(MapsError::Conflicted)
        })
        .await
    }

    /// One attempt of `put`; `Ok(Err(grid))` when another replica wrote first.
    async fn try_put(&self, name: &str, grid: Grid) -> Result<Result<PutOutcome, Grid>, MapsError> {
        let _order = self.write_order(name).await;
        // A replicated store takes a whole map as the repair of a damaged one; a local one
        // is repaired by `pathd data check`.
        let replicated = self.inner.store.replicated();
        if let Some(d) = self.damage(name)
            && !replicated
        {
            return Err(MapsError::Damaged(d));
        }
        let registry = &self.inner.registry;
        let old = registry.get(name);
        if old.is_none() && registry.len() >= self.inner.max_maps {
            return Err(MapsError::TooManyMaps(self.inner.max_maps));
        }
        let version = registry.next_version(name);
        let entry = Arc::new(MapEntry::new(
            name.to_owned(),
            version,
            grid,
            MapSource::Uploaded,
        ));
        let e = Arc::clone(&entry);
        match self
            .persist(name, version, move |s| {
                s.append(&e.name, e.version, Mutation::Put(&e.terrain))
            })
            .await
        {
            Ok(()) => {}
            Err(MapsError::Conflicted) => return Ok(Err((*entry.terrain).clone())),
            Err(e) => return Err(e),
        }
        self.clear_damage(name);
        self.install_replacement(name, &entry).await;
        tracing::info!(map = %name, version, "map stored");
        Ok(Ok(PutOutcome {
            entry,
            created: old.is_none(),
        }))
    }

    /// The current entry of `name`; when it is not known here, after catching up with the
    /// store first (another replica may have created it).
    pub(super) async fn get_caught_up(&self, name: &str) -> Result<Arc<MapEntry>, MapsError> {
        match self.get(name) {
            Err(MapsError::NotFound(_)) if valid_name(name) => {
                self.catch_up(name).await?;
                self.get(name)
            }
            other => other,
        }
    }

    /// Deletes map `name`; returns its last version. Queries already running on it finish
    /// on their snapshot; its subscriptions end with `map_deleted`.
    pub async fn delete(&self, name: String) -> Result<u64, MapsError> {
        self.get_caught_up(&name).await?;
        self.spawn_write(&name.clone(), move |me| async move {
            for _ in 0..MAX_ATTEMPTS {
                let order = me.write_order(&name).await;
                let entry = me.get(&name)?;
                let version = entry.version;
                let n = name.clone();
                match me
                    .persist(&name, version, move |s| {
                        s.append(&n, version, Mutation::Delete)
                    })
                    .await
                {
                    Ok(()) => {}
                    Err(MapsError::Conflicted) => {
                        drop(order);
                        me.catch_up(&name).await?;
                        continue;
                    }
                    Err(e) => return Err(e),
                }
                me.inner.registry.remove(&name);
                me.inner.live.end_map_all(&name, "map_deleted");
                tracing::info!(map = %name, version, "map deleted");
                return Ok(version);
            }
            Err(MapsError::Conflicted)
        })
        .await
    }
}
