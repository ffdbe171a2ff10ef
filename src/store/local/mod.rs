//! The embedded store: the local data directory.
//!
//! Per map `<name>`: a snapshot `<name>.pmap` ([`super::snapshot`]), a patch log
//! `<name>.plog` ([`super::log`]) of the patches after it, or a tombstone `<name>.deleted`.
//! A patch appends a record (fsynced); once the log outweighs the snapshot, the snapshot is
//! rewritten at the current version and the log removed. An upload rewrites the snapshot
//! and removes the log; a delete writes the tombstone and removes both.
//!
//! Recovery is strict, as Redis treats its append-only file: a torn last record is cut off
//! with a warning. A log that ends before the highest version its high-water slots record
//! (its tail was cut: see [`super::log`]) is served as it ends, under a new version past
//! the lost ones, rewritten as a snapshot at once so that durable and served state agree,
//! and reported ([`super::LostTail`]: the map summary, `/readyz`, `pathd data check`). A bad
//! snapshot, a bad log header, a bad record with data after it, a
//! version gap, or a record that does not fit its map makes the map
//! [`Recovered::Damaged`], reported and never served as an older version (the bundled map
//! of that name included). [`check`] and [`repair`] are the operator's tools (`pathd data`), in `inspect.rs` with
//! the reading of the directory that recovery shares with them.

mod inspect;

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use pathd_engine::Grid;
use rand::Rng;

use super::log;
use super::snapshot::Storage;
use super::{Damage, LogRecord, MapStore, Mutation, Recovered, StoreError};
pub use inspect::{Inspected, check, inspect, name_of, repair};

/// The data directory as a [`MapStore`].
pub struct LocalStore {
    files: Storage,
    /// Per name: the last version durably recorded, whether a snapshot file exists, and the
    /// log's length (for compaction and for undoing a failed append). Guarded by a plain
    /// mutex: the maps service calls `append` for a name one at a time, so this only
    /// protects the map itself.
    names: Mutex<HashMap<String, NameState>>,
    /// Test-only: sleep up to this long at each step of a write, so that fault-injection
    /// tests can land client timeouts inside the durable write.
    delay: Duration,
}

#[derive(Clone, Copy, Debug, Default)]
struct NameState {
    last: u64,
    snapshot: bool,
    log_len: u64,
}

impl LocalStore {
    /// Opens (creating if needed) the data directory; `test_delay` is zero outside tests.
    pub fn open(dir: impl Into<PathBuf>, test_delay: Duration) -> io::Result<Self> {
        Ok(LocalStore {
            files: Storage::open(dir)?,
            names: Mutex::default(),
            delay: test_delay,
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        self.files.dir()
    }

    fn pause(&self) {
        if !self.delay.is_zero() {
            let us = rand::rng().random_range(0..=self.delay.as_micros() as u64);
            std::thread::sleep(Duration::from_micros(us));
        }
    }

    fn state(&self, name: &str) -> NameState {
        self.names
            .lock()
            .expect("store names lock")
            .get(name)
            .copied()
            .unwrap_or_default()
    }

    fn set_state(&self, name: &str, s: NameState) {
        self.names
            .lock()
            .expect("store names lock")
            .insert(name.to_owned(), s);
    }

    fn patch(
        &self,
        name: &str,
        version: u64,
        cells: &[(pathd_engine::Point, u8)],
        after: &Grid,
        mut st: NameState,
    ) -> Result<NameState, StoreError> {
        let map_bytes = after.width() as u64 * after.height() as u64;
        // A map without a snapshot here (a bundled one) starts with one; a log that would
        // outweigh the snapshot is compacted into one.
        if !st.snapshot || st.log_len > map_bytes {
            self.files.save(name, version, after)?;
            self.pause();
            log::remove(self.dir(), name)?;
            return Ok(NameState {
                last: version,
                snapshot: true,
                log_len: 0,
            });
        }
        match log::append(self.dir(), name, version, cells) {
            Ok(len) => {
                st.last = version;
                st.log_len = len;
                Ok(st)
            }
            Err(e) => {
                // Undo a partial append, so that the next record does not land behind
                // garbage; if even that fails, the log is no longer trusted.
                match log::truncate(self.dir(), name, st.log_len) {
                    Ok(()) => Err(StoreError::Io(e)),
                    Err(e2) => Err(StoreError::Damaged(Damage {
                        name: name.to_owned(),
                        reason: format!(
                            "a failed append ({e}) could not be undone ({e2}); run `pathd data check`"
                        ),
                        last_good: Some(st.last),
                        dropped: Vec::new(),
                    })),
                }
            }
        }
    }
}

impl MapStore for LocalStore {
    fn recover(&self) -> Result<Vec<Recovered>, StoreError> {
        let found = inspect(self.dir(), true)?;
        let mut names = self.names.lock().expect("store names lock");
        names.clear();
        for r in &found {
            let (name, st) = match &r.outcome {
                Recovered::Live { name, version, .. } => (
                    name,
                    NameState {
                        last: *version,
                        snapshot: true,
                        log_len: r.log_len,
                    },
                ),
                Recovered::Deleted { name, version } => (
                    name,
                    NameState {
                        last: *version,
                        ..NameState::default()
                    },
                ),
                Recovered::Damaged(d) => (
                    &d.name,
                    NameState {
                        last: d
                            .dropped
                            .iter()
                            .copied()
                            .chain(d.last_good)
                            .max()
                            .unwrap_or(0),
                        ..NameState::default()
                    },
                ),
            };
            names.insert(name.clone(), st);
        }
        Ok(found.into_iter().map(|r| r.outcome).collect())
    }

    fn append(&self, name: &str, version: u64, mutation: Mutation<'_>) -> Result<(), StoreError> {
        let st = self.state(name);
        let fresh_enough = match mutation {
            Mutation::Delete => version >= st.last,
            _ => version > st.last,
        };
        if !fresh_enough {
            return Err(StoreError::Conflict {
                name: name.to_owned(),
                last: st.last,
                offered: version,
            });
        }
        self.pause();
        let next = match mutation {
            Mutation::Put(grid) => {
                self.files.save(name, version, grid)?;
                self.pause();
                log::remove(self.dir(), name)?; // the old map's patches
                NameState {
                    last: version,
                    snapshot: true,
                    log_len: 0,
                }
            }
            Mutation::Patch { cells, after } => self.patch(name, version, cells, after, st)?,
            Mutation::Delete => {
                self.files.delete(name, version)?;
                self.pause();
                log::remove(self.dir(), name)?;
                NameState {
                    last: version,
                    ..NameState::default()
                }
            }
        };
        self.pause();
        self.set_state(name, next);
        Ok(())
    }

    fn replay(&self, name: &str, after: u64) -> Result<Vec<LogRecord>, StoreError> {
        let Some(scan) = log::read(self.dir(), name)? else {
            return Ok(Vec::new());
        };
        Ok(scan
            .records
            .into_iter()
            .filter(|r| r.version > after)
            .map(|r| LogRecord {
                version: r.version,
                cells: r.cells,
            })
            .collect())
    }
}
