//! JPS+ jump tables, one per map version, built off the request path (the pattern of
//! [`crate::hpa`]).
//!
//! A map entry carries a [`JumpSlot`]: empty while the table is being built (`auto` then
//! runs plain JPS, and `"algorithm": "jps_plus"` answers `503 abstraction_building`), filled
//! once. Who fills it: a patch derives the next version's table from the previous one
//! ([`JumpTable::update`] recomputes only the entries the patch can change, and shares the
//! untouched chunks), so a patched map keeps JPS+ without a rebuild; a new or replaced map
//! gets a from-scratch build on the `jps-plus` lane of the supervised builder pool
//! ([`super::Builders`]), which skips entries that were replaced or deleted meanwhile. Its
//! own lane, not HPA*'s: a table takes tens of milliseconds, and should not wait behind an
//! abstraction's seconds. A build that panics leaves the slot `failed` (`jps_plus` then
//! answers `503 derivation_failed`, `auto` runs JPS); the next version builds again.
//!
//! Only uniform octile maps get one (JPS+ needs every passable cell to cost 1, and the
//! table knows octile moves only), up to `--jps-plus-max-cells` cells: a table costs 16
//! bytes a cell.
//!
//! With the table, a map gets landmarks ([`Landmarks`]: distances from 16, 8 or 4 cells to
//! every cell, 2 bytes a cell each, the most that `--landmark-memory-mb` affords: 16 up to
//! about 780 K cells, 8 on a 1024x1024 map, whose table and landmarks then take 32 bytes a
//! cell), which sharpen JPS+'s heuristic. A thread of their own measures them once the
//! table is there (JPS+ runs without them meanwhile; they take most of a second on big
//! maps, and no table waits behind them). A patch that only blocks cells keeps them
//! (distances can only have grown, so they stay admissible: [`Landmarks::carry_over`]);
//! after one that opens a cell the patch's job updates them with the table
//! ([`Landmarks::update_within`]: only the distances the patch shortened are lowered, only
//! their chunks copied; tens of microseconds for a few cells on a 1024x1024 map), so that
//! the new version is served with them. An update too big for the write path (more than
//! `WRITE_PATH_WORK` cells settled: an opening that shortens the way to much of the map)
//! goes to the landmark thread instead, and JPS+ runs with none until then. When patches
//! come faster than that, the pending update takes the newer patches' cells too, and
//! versions replaced meanwhile are skipped.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pathd_engine::{Grid, JumpTable, Landmarks, Movement, Point};
use serde::Serialize;

use super::budget::Budget;
use super::pool::{Builders, Lane};
use super::slot::{Slot, Status};
use crate::derived::MapEntry;

/// The most cells (over all landmarks) a landmark update may settle on a patch's write
/// path: a few milliseconds at most; a patch whose update needs more (a door that shortens
/// the way to much of the map) leaves it to the landmark lane.
const WRITE_PATH_WORK: usize = 1 << 15;

/// Which maps get a table.
#[derive(Clone, Copy, Debug)]
pub struct JumpSettings {
    /// Largest map (in cells) that gets one; 0 disables JPS+.
    pub max_cells: u64,
    /// Bytes a map's landmarks may take (16, 8 or 4 of them at 2 bytes a cell, the most
    /// that fit); 0 disables them.
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

/// The jump table of one map version, once built, and its landmarks.
#[derive(Debug, Default)]
pub struct JumpSlot {
    /// The table (`made_by` `build` or `update`).
    table: Slot<JumpTable>,
    /// The landmarks (`made_by` `build`, `carried` or `update`).
    landmarks: Slot<Landmarks>,
    /// What to derive them from instead of measuring: an earlier version's landmarks and
    /// the cells changed since (set by a patch that did not only block cells; cleared once
    /// they are made).
    landmarks_base: Mutex<Option<(Arc<Landmarks>, Vec<Point>)>>,
}

/// The `jps_plus` object of a map summary.
#[derive(Clone, Debug, Serialize)]
pub struct JumpInfo {
    /// `building`, `ready`, `failed` or `evicted`.
    pub status: &'static str,
    /// Why the build failed (`failed` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
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
    /// `building`, `ready`, `failed` or `evicted`.
    pub status: &'static str,
    /// Why the measurement failed (`failed` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
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
    /// The table, when ready (a use, for eviction).
    pub fn get(&self) -> Option<Arc<JumpTable>> {
        self.table.get()
    }

    /// The landmarks, when ready (a use, for eviction).
    pub fn landmarks(&self) -> Option<Arc<Landmarks>> {
        self.landmarks.get()
    }

    /// The table's slot (readiness checks and the budget go through it).
    pub fn table_slot(&self) -> &Slot<JumpTable> {
        &self.table
    }

    /// The landmarks' slot.
    pub fn landmark_slot(&self) -> &Slot<Landmarks> {
        &self.landmarks
    }

    fn landmark_info(&self) -> Option<LandmarkInfo> {
        let status = self.landmarks.status();
        let wire = status.as_str()?;
        // While being made from an earlier version's, they are an update already.
        let made_by = if status == Status::Building && self.base().is_some() {
            "update"
        } else {
            self.landmarks.made_by()
        };
        Some(match self.landmarks.peek() {
            Some(l) => LandmarkInfo {
                status: wire,
                error: None,
                made_by,
                count: l.points().len(),
                memory_bytes: l.memory_bytes(),
                took_us: self.landmarks.took_us(),
            },
            None => LandmarkInfo {
                status: wire,
                error: self.landmarks.error(),
                made_by,
                count: 0,
                memory_bytes: 0,
                took_us: 0,
            },
        })
    }

    /// What the map summary reports (`None` for maps that get no table).
    pub fn info(&self) -> Option<JumpInfo> {
        let status = self.table.status().as_str()?;
        let made_by = self.table.made_by();
        Some(match self.table.peek() {
            Some(t) => JumpInfo {
                status,
                error: None,
                made_by,
                memory_bytes: t.memory_bytes(),
                took_us: self.table.took_us(),
                landmarks: self.landmark_info(),
            },
            None => JumpInfo {
                status,
                error: self.table.error(),
                made_by,
                memory_bytes: 0,
                took_us: 0,
                landmarks: self.landmark_info(),
            },
        })
    }

    /// True when a build was queued or the table derived.
    pub fn started(&self) -> bool {
        self.table.status() != Status::Idle
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
        self.derive_within(name, previous, settings, grid, changed, WRITE_PATH_WORK);
    }

    /// [`JumpSlot::derive`], updating the landmarks on the write path when that settles at
    /// most `work` cells.
    fn derive_within(
        &self,
        name: &str,
        previous: &JumpSlot,
        settings: &JumpSettings,
        grid: &Grid,
        changed: &[Point],
        work: usize,
    ) {
        let Some(prev) = previous.table.peek().filter(|t| t.fits(grid)) else {
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
        self.table.set(Arc::new(next), "update", took);
        if settings.landmarks(grid) == 0 {
            return;
        }
        // Landmarks outlive a patch that only blocks cells. Otherwise they are updated here
        // when that is cheap (most patches: `WRITE_PATH_WORK`), so that the first query on
        // the new version has them; if not, the landmark lane updates the previous
        // version's (or, while those are still being made, their base with this patch's
        // cells added) once the entry is installed (`JumpBuilder::ensure`).
        // Read under the previous version's base lock: `measure` sets the landmarks before it
        // clears the base under that lock, so one of the two is always seen.
        let previous_base = previous.base();
        match previous.landmarks.peek() {
            Some(l) if l.carry_over(grid, changed) => {
                self.landmarks.set(l, "carried", Duration::ZERO);
            }
            Some(l) => {
                let started = Instant::now();
                match l.update_within(grid, changed, work) {
                    Some(next) => {
                        let took = started.elapsed();
                        metrics::histogram!("pathd_landmarks_update_seconds").record(took);
                        self.landmarks.set(Arc::new(next), "update", took);
                    }
                    None => *self.base() = Some((l, changed.to_vec())),
                }
            }
            None => {
                *self.base() = previous_base.clone().map(|(l, mut since)| {
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

/// The background builders: the pool's `jps-plus` lane for jump tables and its
/// `landmarks` lane for landmarks. Landmarks have their own lane because they take much
/// longer (8 on a 1024x1024 map: about 0.5 s, against 70 ms for its table), and a map's
/// table should not wait behind another map's landmarks.
pub struct JumpBuilder {
    settings: JumpSettings,
    /// Entries to build a table for. A built table's entry goes on to `landmarks`.
    tables: Lane,
    /// Entries to measure (or update) landmarks for.
    landmarks: Arc<Lane>,
    /// Where built tables and landmarks are accounted.
    budget: Arc<Budget>,
}

impl JumpBuilder {
    /// Takes its lanes of `builders`.
    pub fn new(settings: JumpSettings, builders: &Builders, budget: Arc<Budget>) -> Self {
        JumpBuilder {
            settings,
            tables: builders.lane("jps-plus"),
            landmarks: Arc::new(builders.lane("landmarks")),
            budget,
        }
    }

    /// The settings in force.
    pub fn settings(&self) -> &JumpSettings {
        &self.settings
    }

    /// Queues a build for `entry` if its map wants a table and none was started (or it was
    /// evicted; the landmarks follow it); or, for a ready table, the landmarks if they are
    /// neither there nor being made.
    pub fn ensure(&self, entry: &Arc<MapEntry>) {
        if !self.settings.wants(&entry.grid) {
            return;
        }
        let budget = Arc::clone(&self.budget);
        if entry.jump.table.start() {
            let (settings, landmarks) = (self.settings, Arc::clone(&self.landmarks));
            self.tables.send(
                entry,
                move |e| {
                    build(e);
                    budget.admit(e);
                    if settings.landmarks(&e.grid) > 0 && e.jump.landmarks.start() {
                        queue_landmarks(&landmarks, e, settings, budget);
                    }
                },
                |e, why| e.jump.table.fail(why),
            );
        } else if self.settings.landmarks(&entry.grid) > 0
            && entry.jump.table.status() == Status::Ready
            && entry.jump.landmarks.start()
        {
            queue_landmarks(&self.landmarks, entry, self.settings, budget);
        }
    }
}

fn queue_landmarks(
    lane: &Lane,
    entry: &Arc<MapEntry>,
    settings: JumpSettings,
    budget: Arc<Budget>,
) {
    lane.send(
        entry,
        move |e| {
            measure(e, settings);
            budget.admit(e);
        },
        |e, why| e.jump.landmarks.fail(why),
    );
}

/// Measures `entry`'s landmarks (or updates an earlier version's), unless it gets none.
fn measure(entry: &MapEntry, settings: JumpSettings) {
    let k = settings.landmarks(&entry.grid);
    if k == 0 {
        entry.jump.landmarks.reset();
        return;
    }
    let started = Instant::now();
    let base = entry.jump.base().clone();
    let updated = base.and_then(|(l, since)| l.update(&entry.grid, &since));
    let made_by = if updated.is_some() { "update" } else { "build" };
    let Some(landmarks) = updated.or_else(|| Landmarks::build(&entry.grid, k)) else {
        // No open cell: nothing to measure, nothing to report.
        entry.jump.landmarks.reset();
        return;
    };
    let took = started.elapsed();
    if made_by == "update" {
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
        made_by,
        "landmarks ready"
    );
    entry.jump.landmarks.set(Arc::new(landmarks), made_by, took);
    // A patch derived meanwhile saw either these or the base; the base is not needed now.
    *entry.jump.base() = None;
}

fn build(entry: &MapEntry) {
    let started = Instant::now();
    let Some(table) = JumpTable::build(&entry.grid) else {
        entry.jump.table.reset();
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
    entry.jump.table.set(Arc::new(table), "build", took);
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

    /// A wall across row 4 of a 12x9 map with one gap at x = 0, and its first version's
    /// slot with the jump table and 4 landmarks built.
    fn walled() -> (Grid, JumpSlot, Arc<Landmarks>) {
        let costs = (0..12 * 9)
            .map(|i| u8::from(i / 12 != 4 || i % 12 == 0))
            .collect();
        let g0 = Grid::from_costs(12, 9, costs, Movement::Octile).unwrap();
        let v0 = JumpSlot::default();
        v0.table.set(
            Arc::new(JumpTable::build(&g0).unwrap()),
            "build",
            Duration::ZERO,
        );
        let l0 = Arc::new(Landmarks::build(&g0, 4).unwrap());
        v0.landmarks.set(Arc::clone(&l0), "build", Duration::ZERO);
        (g0, v0, l0)
    }

    /// A patch on a version whose landmarks are still being updated extends that update's
    /// base (the same earlier landmarks, both patches' cells), rather than leaving the new
    /// version to a measurement from scratch; the extended update is right.
    #[test]
    fn a_patch_during_a_pending_update_extends_its_base() {
        let (g0, v0, l0) = walled();
        let settings = JumpSettings::default();

        let (g1, c1) = open(&g0, &[(5, 4)]);
        // Updates too big for the write path (here: any) go to the lane.
        let v1 = JumpSlot::default();
        v1.derive_within("m", &v0, &settings, &g1, &c1, 0);
        assert!(v1.landmarks().is_none(), "an opening is not carried over");
        let (base, since) = v1.base().clone().expect("an update from v0's");
        assert!(Arc::ptr_eq(&base, &l0) && since == c1);

        // v1's update has not run: v2 takes the same base and both patches' cells.
        let (g2, c2) = open(&g1, &[(11, 4)]);
        let v2 = JumpSlot::default();
        v2.derive_within("m", &v1, &settings, &g2, &c2, 0);
        let (base, since) = v2.base().clone().expect("v1's pending update, extended");
        assert!(Arc::ptr_eq(&base, &l0));
        assert_eq!(since, [c1, c2].concat());
        let updated = base.update(&g2, &since).unwrap();
        let fresh = updated.remeasured(&g2).unwrap();
        for y in 0..9 {
            for x in 0..12 {
                let p = Point::new(x, y);
                for i in 0..updated.points().len() {
                    let (a, b) = (updated.distance(i, p), fresh.distance(i, p));
                    assert_eq!(a, b, "{p} {i}");
                }
            }
        }
    }

    /// A small opening's landmark update runs on the write path: the new version has them
    /// at once, equal to a fresh measurement.
    #[test]
    fn a_small_opening_updates_the_landmarks_on_the_write_path() {
        let (g0, v0, _) = walled();
        let (g1, c1) = open(&g0, &[(5, 4)]);
        let v1 = JumpSlot::default();
        v1.derive("m", &v0, &JumpSettings::default(), &g1, &c1);
        let l1 = v1.landmarks().expect("updated on the write path");
        assert_eq!(v1.landmarks.made_by(), "update");
        assert!(v1.base().is_none());
        let fresh = l1.remeasured(&g1).unwrap();
        for (x, y) in (0..12).flat_map(|x| (0..9).map(move |y| (x, y))) {
            for i in 0..4 {
                let p = Point::new(x, y);
                assert_eq!(l1.distance(i, p), fresh.distance(i, p), "{p} {i}");
            }
        }
    }
}
