//! [`Budget`]: one memory budget for derived state across all maps, with
//! least-recently-used eviction.
//!
//! Per-map caps (`--landmark-memory-mb`, `--jps-plus-max-cells`) bound one map; this bounds
//! them all together (`--derived-memory-mb`): 100 maps of 1024x1024 would otherwise hold
//! about 8 GB of landmarks. Accounting is per map and kind, for the map's current version
//! (a structure carried over to the next version is the same memory, counted once). When a
//! structure becomes ready and the total is over the budget, the ready structure of any
//! map, any kind, used least recently (the slots' logical clock) is evicted until the total
//! fits; the one just admitted is never the victim (a single structure larger than the
//! whole budget stays, with a warning). An evicted structure is rebuilt on demand: the next
//! query that could use it queues its build and takes the fallback meanwhile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use super::slot::Status;
use crate::derived::MapEntry;

/// The kinds of derived structure the budget holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The HPA* abstraction of the map itself.
    Hpa,
    /// The JPS+ jump table.
    JumpTable,
    /// The JPS+ landmarks.
    Landmarks,
    /// The subgoal graph.
    Subgoal,
}

impl Kind {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Hpa => "hpa",
            Kind::JumpTable => "jps_plus",
            Kind::Landmarks => "landmarks",
            Kind::Subgoal => "subgoal",
        }
    }

    /// `entry`'s structure of this kind: its status, last use and bytes, if ready.
    fn probe(self, e: &MapEntry) -> (Status, u64, Option<u64>) {
        match self {
            Kind::Hpa => {
                let s = e.hpa.slot();
                let bytes = s.peek().map(|a| a.memory_bytes() as u64);
                (s.status(), s.last_used(), bytes)
            }
            Kind::JumpTable => {
                let s = e.jump.table_slot();
                let bytes = s.peek().map(|t| t.memory_bytes() as u64);
                (s.status(), s.last_used(), bytes)
            }
            Kind::Landmarks => {
                let s = e.jump.landmark_slot();
                let bytes = s.peek().map(|l| l.memory_bytes() as u64);
                (s.status(), s.last_used(), bytes)
            }
            Kind::Subgoal => {
                let s = e.subgoal.slot();
                let bytes = s.peek().map(|g| g.memory_bytes() as u64);
                (s.status(), s.last_used(), bytes)
            }
        }
    }

    fn evict(self, e: &MapEntry) -> bool {
        match self {
            Kind::Hpa => e.hpa.slot().evict(),
            Kind::JumpTable => e.jump.table_slot().evict(),
            Kind::Landmarks => e.jump.landmark_slot().evict(),
            Kind::Subgoal => e.subgoal.slot().evict(),
        }
    }

    const ALL: [Kind; 4] = [Kind::Hpa, Kind::JumpTable, Kind::Landmarks, Kind::Subgoal];
}

/// The budget (see module docs).
pub struct Budget {
    /// Bytes of derived state allowed across all maps.
    limit: u64,
    /// What is resident, per map and kind: the entry whose structure it is.
    resident: Mutex<HashMap<(String, Kind), Weak<MapEntry>>>,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub fn new(limit: u64) -> Self {
        Budget {
            limit,
            resident: Mutex::default(),
        }
    }

    /// The bytes allowed.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Accounts every ready structure of `entry` (just installed, or just built), then
    /// evicts the least recently used others until the total fits.
    pub fn admit(&self, entry: &Arc<MapEntry>) {
        let mut resident = self.resident.lock().expect("budget lock");
        for kind in Kind::ALL {
            if kind.probe(entry).2.is_some() {
                resident.insert((entry.name.clone(), kind), Arc::downgrade(entry));
            }
        }
        loop {
            // (kind, entry, last use) of every ready structure still served.
            let mut ready = Vec::new();
            let mut total = 0;
            resident.retain(|(_, kind), weak| {
                let Some(e) = weak.upgrade() else {
                    return false;
                };
                let (status, used, bytes) = kind.probe(&e);
                match (status, bytes) {
                    (Status::Ready, Some(b)) => {
                        total += b;
                        ready.push((*kind, e, used));
                        true
                    }
                    _ => false,
                }
            });
            metrics::gauge!("pathd_derived_resident_bytes").set(total as f64);
            if total <= self.limit {
                return;
            }
            let victim = ready
                .into_iter()
                .filter(|(_, e, _)| !Arc::ptr_eq(e, entry))
                .min_by_key(|(_, _, used)| *used);
            let Some((kind, e, _)) = victim else {
                tracing::warn!(
                    map = %entry.name, total, limit = self.limit,
                    "derived memory over --derived-memory-mb with nothing else to evict"
                );
                return;
            };
            if kind.evict(&e) {
                metrics::counter!("pathd_derived_evictions_total", "kind" => kind.as_str())
                    .increment(1);
                tracing::info!(map = %e.name, version = e.version, kind = kind.as_str(),
                    "derived structure evicted (--derived-memory-mb); rebuilt on demand");
            }
            resident.remove(&(e.name.clone(), kind));
        }
    }

    /// Bytes of ready derived structures now resident.
    pub fn resident_bytes(&self) -> u64 {
        let resident = self.resident.lock().expect("budget lock");
        resident
            .iter()
            .filter_map(|((_, kind), w)| w.upgrade().and_then(|e| kind.probe(&e).2))
            .sum()
    }
}
