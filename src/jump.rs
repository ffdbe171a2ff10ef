//! JPS+ jump tables, one per map version, built off the request path (the pattern of
//! [`crate::hpa`]).
//!
//! A map entry carries a [`JumpSlot`]: empty while the table is being built (`auto` then
//! runs plain JPS, and `"algorithm": "jps_plus"` answers `503 abstraction_building`), filled
//! once. Who fills it: a patch derives the next version's table from the previous one
//! ([`JumpTable::update`] recomputes only the entries the patch can change, and shares the
//! untouched chunks), so a patched map keeps JPS+ without a rebuild; a new or replaced map
//! gets a from-scratch build from one background builder thread ([`JumpBuilder`]), which
//! skips entries that were replaced or deleted meanwhile. Its own thread, not HPA*'s: a
//! table takes tens of milliseconds, and should not wait behind an abstraction's seconds.
//!
//! Only uniform octile maps get one (JPS+ needs every passable cell to cost 1, and the
//! table knows octile moves only), up to `--jps-plus-max-cells` cells: a table costs 16
//! bytes a cell.
//!
//! With the table, a map gets landmarks ([`Landmarks`]: distances from 16, 8 or 4 cells to
//! every cell, 4 bytes a cell each, the most that `--landmark-memory-mb` affords), which
//! sharpen JPS+'s heuristic. A thread of their own measures them once the table is there
//! (JPS+ runs without them meanwhile; they take seconds on big maps, and no table waits
//! behind them). A patch that only blocks cells keeps them (distances can only have grown,
//! so they stay admissible: [`Landmarks::carry_over`]); after one that opens a cell that
//! thread derives the new version's from the previous version's ([`Landmarks::update`]:
//! only the distances the patch shortened are lowered), and JPS+ runs with none until then.
//! When patches come faster than that, the pending update takes the newer patches' cells
//! too, and versions replaced meanwhile are skipped.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak, mpsc};
use std::time::Instant;

use pathd_engine::{Grid, JumpTable, Landmarks, Movement, Point};
use serde::Serialize;

use crate::state::MapEntry;

/// Which maps get a table.
#[derive(Clone, Copy, Debug)]
pub struct JumpSettings {
    /// Largest map (in cells) that gets one; 0 disables JPS+.
    pub max_cells: u64,
    /// Bytes a map's landmarks may take (16, 8 or 4 of them, the most that fit); 0
    /// disables them.
    pub landmark_memory: u64,
}

impl Default for JumpSettings {
    fn default() -> Self {
        JumpSettings {
            max_cells: 1 << 22,
            landmark_memory: pathd_engine::DEFAULT_LANDMARK_MEMORY,
        }
    }
}

impl JumpSettings {
    /// True when `grid` should have a table: uniform, octile, not too big.
    pub fn wants(&self, grid: &Grid) -> bool {
        grid.is_uniform()
            && grid.movement() == Movement::Octile
            && grid.width() as u64 * grid.height() as u64 <= self.max_cells
    }

    /// How many landmarks `grid` gets (0: none).
    pub fn landmarks(&self, grid: &Grid) -> usize {
        if self.wants(grid) {
            Landmarks::affordable(grid, self.landmark_memory)
        } else {
            0
        }
    }
}

/// The jump table of one map version, once built.
#[derive(Debug, Default)]
pub struct JumpSlot {
    /// Set exactly once.
    ready: OnceLock<Arc<JumpTable>>,
    /// True once a build was queued or derived, so it happens once per entry.
    started: AtomicBool,
    /// Microseconds the build (or the update from the previous version) took.
    took_us: AtomicU64,
    /// True when the table was derived from the previous version's.
    derived: AtomicBool,
    /// The landmarks, once measured or carried over.
    landmarks: OnceLock<Arc<Landmarks>>,
    /// True once the landmarks were carried over or their measurement (or update) began.
    landmarks_started: AtomicBool,
    /// Microseconds their measurement or update took (0 when carried over).
    landmarks_took_us: AtomicU64,
    /// How they were made: [`BUILD`], [`CARRIED`] or [`UPDATE`].
    landmarks_made_by: AtomicU8,
    /// What to derive them from instead of measuring: an earlier version's landmarks and
    /// the cells changed since (set by a patch that did not only block cells; cleared once
    /// they are made).
    landmarks_base: Mutex<Option<(Arc<Landmarks>, Vec<Point>)>>,
}

/// `landmarks_made_by`: measured on this version.
const BUILD: u8 = 0;
/// Shared with the previous version (the patch only blocked cells).
const CARRIED: u8 = 1;
/// Derived from an earlier version's ([`Landmarks::update`]).
const UPDATE: u8 = 2;

/// The `jps_plus` object of a map summary.
#[derive(Clone, Debug, Serialize)]
pub struct JumpInfo {
    /// `building` or `ready`.
    pub status: &'static str,
    /// `build` (from scratch) or `update` (derived from the previous version's table by
    /// recomputing what the patch changed).
    pub made_by: &'static str,
    /// Heap bytes the table holds (chunks shared with other versions counted in full); 0
    /// while building.
    pub memory_bytes: usize,
    /// How long the build or update took, in microseconds (0 while building).
    pub took_us: u64,
    /// The landmarks that sharpen JPS+'s heuristic (absent for maps that get none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landmarks: Option<LandmarkInfo>,
}

/// The `landmarks` object of a map summary's `jps_plus`.
#[derive(Clone, Debug, Serialize)]
pub struct LandmarkInfo {
    /// `building` or `ready`.
    pub status: &'static str,
    /// `build` (measured on this version), `carried` (from an earlier version, which this
    /// one differs from only by blocked cells) or `update` (derived from an earlier
    /// version's by lowering the distances the patches shortened).
    pub made_by: &'static str,
    /// Number of landmarks (0 while building).
    pub count: usize,
    /// Heap bytes they hold (shared with the versions they were carried to; 0 while
    /// building).
    pub memory_bytes: usize,
    /// How long measuring or updating them took, in microseconds (0 while building or when
    /// carried).
    pub took_us: u64,
}

impl JumpSlot {
    /// The table, when ready.
    pub fn get(&self) -> Option<&JumpTable> {
        self.ready.get().map(|t| t.as_ref())
    }

    /// The landmarks, when ready.
    pub fn landmarks(&self) -> Option<&Landmarks> {
        self.landmarks.get().map(|l| l.as_ref())
    }

    fn landmark_info(&self) -> Option<LandmarkInfo> {
        if !self.landmarks_started.load(Ordering::Acquire) {
            return None;
        }
        let made_by = match self.landmarks_made_by.load(Ordering::Relaxed) {
            CARRIED => "carried",
            UPDATE => "update",
            _ => "build",
        };
        Some(match self.landmarks.get() {
            Some(l) => LandmarkInfo {
                status: "ready",
                made_by,
                count: l.points().len(),
                memory_bytes: l.memory_bytes(),
                took_us: self.landmarks_took_us.load(Ordering::Relaxed),
            },
            None => LandmarkInfo {
                status: "building",
                made_by,
                count: 0,
                memory_bytes: 0,
                took_us: 0,
            },
        })
    }

    /// What the map summary reports (`None` for maps that get no table).
    pub fn info(&self) -> Option<JumpInfo> {
        if !self.started.load(Ordering::Acquire) {
            return None;
        }
        let made_by = if self.derived.load(Ordering::Relaxed) {
            "update"
        } else {
            "build"
        };
        Some(match self.ready.get() {
            Some(t) => JumpInfo {
                status: "ready",
                made_by,
                memory_bytes: t.memory_bytes(),
                took_us: self.took_us.load(Ordering::Relaxed),
                landmarks: self.landmark_info(),
            },
            None => JumpInfo {
                status: "building",
                made_by,
                memory_bytes: 0,
                took_us: 0,
                landmarks: self.landmark_info(),
            },
        })
    }

    /// True when a build was queued or the table derived.
    pub fn started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// Derives this version's table from the previous version's, if that one is ready and
    /// this version still wants one. Runs in the patch's blocking job.
    pub fn derive(
        &self,
        name: &str,
        previous: &JumpSlot,
        settings: &JumpSettings,
        grid: &Grid,
        changed: &[Point],
    ) {
        let Some(prev) = previous.ready.get().filter(|t| t.fits(grid)) else {
            return;
        };
        if !settings.wants(grid) {
            return;
        }
        let started = Instant::now();
        let next = prev.update(grid, changed);
        let took = started.elapsed();
        metrics::histogram!("pathd_jps_plus_update_seconds").record(took);
        metrics::gauge!("pathd_jps_plus_memory_bytes", "map" => name.to_owned())
            .set(next.memory_bytes() as f64);
        self.took_us
            .store(took.as_micros() as u64, Ordering::Relaxed);
        self.derived.store(true, Ordering::Relaxed);
        self.started.store(true, Ordering::Release);
        let _ = self.ready.set(Arc::new(next));
        if settings.landmarks(grid) == 0 {
            return;
        }
        // Landmarks outlive a patch that only blocks cells. Otherwise the landmark thread
        // updates the previous version's (or, while those are still being made, their base
        // with this patch's cells added) once the entry is installed (`JumpBuilder::ensure`).
        // Read under the previous version's base lock: `measure` sets the landmarks before it
        // clears the base under that lock, so one of the two is always seen.
        let previous_base = previous.base();
        match previous.landmarks.get() {
            Some(l) if l.carry_over(grid, changed) => {
                self.landmarks_made_by.store(CARRIED, Ordering::Relaxed);
                self.landmarks_started.store(true, Ordering::Release);
                let _ = self.landmarks.set(Arc::clone(l));
            }
            Some(l) => {
                self.landmarks_made_by.store(UPDATE, Ordering::Relaxed);
                *self.base() = Some((Arc::clone(l), changed.to_vec()));
            }
            None => {
                let pending = previous_base.clone();
                if pending.is_some() {
                    self.landmarks_made_by.store(UPDATE, Ordering::Relaxed);
                }
                *self.base() = pending.map(|(l, mut since)| {
                    since.extend_from_slice(changed);
                    (l, since)
                });
            }
        }
    }

    fn base(&self) -> std::sync::MutexGuard<'_, Option<(Arc<Landmarks>, Vec<Point>)>> {
        self.landmarks_base.lock().expect("landmark base lock")
    }
}

/// The background builders: one thread for jump tables and one for landmarks, each with a
/// queue of entries. Landmarks have their own thread because they take much longer (16 on
/// a 1024x1024 map: about 1.7 s, against 70 ms for its table), and a map's table should not
/// wait behind another map's landmarks.
pub struct JumpBuilder {
    settings: JumpSettings,
    /// Entries to build a table for; weak, so a replaced or deleted entry is dropped, not
    /// built. A built table's entry goes on to `landmarks`.
    tables: Mutex<mpsc::Sender<Weak<MapEntry>>>,
    /// Entries to measure landmarks for (their tables derived by a patch that did not keep
    /// the previous version's landmarks).
    landmarks: Mutex<mpsc::Sender<Weak<MapEntry>>>,
}

/// Starts a thread named `name` that hands every entry still alive off its queue to `work`.
fn worker(
    name: &str,
    work: impl Fn(&Arc<MapEntry>) + Send + 'static,
) -> mpsc::Sender<Weak<MapEntry>> {
    let (tx, rx) = mpsc::channel::<Weak<MapEntry>>();
    let spawned = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            while let Ok(weak) = rx.recv() {
                if let Some(entry) = weak.upgrade() {
                    work(&entry);
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, thread = name, "could not start a JPS+ builder; its work is off");
    }
    tx
}

impl JumpBuilder {
    /// Starts the builder threads (they end when the builder is dropped).
    pub fn new(settings: JumpSettings) -> Self {
        let landmarks = worker("pathd-landmarks", move |entry| measure(entry, settings));
        let next = Mutex::new(landmarks.clone());
        let tables = worker("pathd-jps-plus", move |entry| {
            build(entry);
            if settings.landmarks(&entry.grid) > 0 {
                let _ = next
                    .lock()
                    .expect("landmark queue lock")
                    .send(Arc::downgrade(entry));
            }
        });
        JumpBuilder {
            settings,
            tables: Mutex::new(tables),
            landmarks: Mutex::new(landmarks),
        }
    }

    /// The settings in force.
    pub fn settings(&self) -> &JumpSettings {
        &self.settings
    }

    /// Queues a build for `entry` if its map wants a table and none was started (the
    /// landmarks follow it); or, for a table derived from the previous version's, the
    /// landmarks if they were not carried over.
    pub fn ensure(&self, entry: &Arc<MapEntry>) {
        if !self.settings.wants(&entry.grid) {
            return;
        }
        let queue = if !entry.jump.started.swap(true, Ordering::AcqRel) {
            &self.tables
        } else if self.settings.landmarks(&entry.grid) > 0
            && !entry.jump.landmarks_started.load(Ordering::Acquire)
        {
            &self.landmarks
        } else {
            return;
        };
        let _ = queue
            .lock()
            .expect("jps+ queue lock")
            .send(Arc::downgrade(entry));
    }
}

/// Measures `entry`'s landmarks, unless it gets none or has them.
fn measure(entry: &MapEntry, settings: JumpSettings) {
    let k = settings.landmarks(&entry.grid);
    if k == 0 || entry.jump.landmarks_started.swap(true, Ordering::AcqRel) {
        return;
    }
    let started = Instant::now();
    let base = entry.jump.base().clone();
    let updated = base.and_then(|(l, since)| l.update(&entry.grid, &since));
    let made_by = if updated.is_some() { UPDATE } else { BUILD };
    let Some(landmarks) = updated.or_else(|| Landmarks::build(&entry.grid, k)) else {
        // No open cell: nothing to measure, nothing to report.
        entry.jump.landmarks_started.store(false, Ordering::Release);
        return;
    };
    let took = started.elapsed();
    if made_by == UPDATE {
        metrics::histogram!("pathd_landmarks_update_seconds").record(took);
    } else {
        metrics::histogram!("pathd_landmarks_build_seconds").record(took);
    }
    entry.report_unless_retired(|| {
        metrics::gauge!("pathd_landmarks_memory_bytes", "map" => entry.name.clone())
            .set(landmarks.memory_bytes() as f64);
    });
    tracing::debug!(
        map = %entry.name,
        version = entry.version,
        landmarks = k,
        build_us = took.as_micros() as u64,
        updated = made_by == UPDATE,
        "landmarks ready"
    );
    entry
        .jump
        .landmarks_took_us
        .store(took.as_micros() as u64, Ordering::Relaxed);
    entry
        .jump
        .landmarks_made_by
        .store(made_by, Ordering::Relaxed);
    let _ = entry.jump.landmarks.set(Arc::new(landmarks));
    // A patch derived meanwhile saw either these or the base; the base is not needed now.
    *entry.jump.base() = None;
}

fn build(entry: &MapEntry) {
    let started = Instant::now();
    let Some(table) = JumpTable::build(&entry.grid) else {
        return;
    };
    let took = started.elapsed();
    metrics::histogram!("pathd_jps_plus_build_seconds").record(took);
    entry.report_unless_retired(|| {
        metrics::gauge!("pathd_jps_plus_memory_bytes", "map" => entry.name.clone())
            .set(table.memory_bytes() as f64);
    });
    tracing::debug!(
        map = %entry.name,
        version = entry.version,
        build_us = took.as_micros() as u64,
        memory_bytes = table.memory_bytes(),
        "JPS+ jump table ready"
    );
    entry
        .jump
        .took_us
        .store(took.as_micros() as u64, Ordering::Relaxed);
    let _ = entry.jump.ready.set(Arc::new(table));
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathd_engine::Patch;

    /// `grid` with `cells` opened.
    fn open(grid: &Grid, cells: &[(u32, u32)]) -> (Grid, Vec<Point>) {
        let patch = Patch {
            cells: cells.iter().map(|&(x, y)| (Point::new(x, y), 1)).collect(),
            rects: vec![],
        };
        grid.apply_patch(&patch).unwrap().unwrap()
    }

    /// A patch on a version whose landmarks are still being updated extends that update's
    /// base (the same earlier landmarks, both patches' cells), rather than leaving the new
    /// version to a measurement from scratch; the extended update is right.
    #[test]
    fn a_patch_during_a_pending_update_extends_its_base() {
        // A wall across row 4 of a 12x9 map with one gap at x = 0.
        let costs = (0..12 * 9)
            .map(|i| u8::from(i / 12 != 4 || i % 12 == 0))
            .collect();
        let g0 = Grid::from_costs(12, 9, costs, Movement::Octile).unwrap();
        let settings = JumpSettings::default();
        let v0 = JumpSlot::default();
        let _ = v0.ready.set(Arc::new(JumpTable::build(&g0).unwrap()));
        let l0 = Arc::new(Landmarks::build(&g0, 4).unwrap());
        let _ = v0.landmarks.set(Arc::clone(&l0));

        let (g1, c1) = open(&g0, &[(5, 4)]);
        let v1 = JumpSlot::default();
        v1.derive("m", &v0, &settings, &g1, &c1);
        assert!(v1.landmarks().is_none(), "an opening is not carried over");
        let (base, since) = v1.base().clone().expect("an update from v0's");
        assert!(Arc::ptr_eq(&base, &l0) && since == c1);

        // v1's update has not run: v2 takes the same base and both patches' cells.
        let (g2, c2) = open(&g1, &[(11, 4)]);
        let v2 = JumpSlot::default();
        v2.derive("m", &v1, &settings, &g2, &c2);
        let (base, since) = v2.base().clone().expect("v1's pending update, extended");
        assert!(Arc::ptr_eq(&base, &l0));
        assert_eq!(since, [c1, c2].concat());
        let updated = base.update(&g2, &since).unwrap();
        let fresh = Landmarks::at(&g2, updated.points()).unwrap();
        for y in 0..9 {
            for x in 0..12 {
                let p = Point::new(x, y);
                for i in 0..updated.points().len() {
                    let (a, b) = (updated.distance(i, p), fresh.distance(i, p));
                    assert!(a == b || (a - b).abs() <= 1e-5 * b, "{p} {i}: {a} vs {b}");
                }
            }
        }
    }
}
