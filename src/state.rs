//! Shared server state: the handle every handler and task holds (config, registry, maps
//! service, search pool, live hub, cluster, readiness, shutdown).

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

use crate::compute::Compute;
use crate::config::Config;
use crate::derived::{Budget, Builders, Registry};
use crate::live::Hub;
use crate::maps::Maps;
use crate::store::{LocalStore, MapStore};

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
                crate::hpa::HpaSettings::from_config(&config),
                crate::jump::JumpSettings::from_config(&config),
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
        maps.place_with(Arc::new(placement.clone()));
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
