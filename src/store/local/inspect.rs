//! Reading the data directory as recovery does ([`inspect`]), and the operator's tools on
//! it: [`check`] and [`repair`] (`pathd data`).

use std::io;
use std::path::Path;

use pathd_engine::{Grid, Patch};

use crate::store::log::{self, Tail};
use crate::store::snapshot::{self, Storage};
use crate::store::{Damage, LostTail, Recovered};

/// One name as the data directory holds it.
#[derive(Debug)]
pub struct Inspected {
    /// What recovery makes of it.
    pub outcome: Recovered,
    /// Patches replayed from the log.
    pub replayed: usize,
    /// Bytes of torn tail found (cut off when inspecting with `fix_torn`).
    pub torn_bytes: u64,
    /// The log's good length.
    pub log_len: u64,
}

impl Inspected {
    /// The versions a cut tail lost, if any.
    pub fn lost(&self) -> Option<LostTail> {
        match self.outcome {
            Recovered::Live { lost, .. } => lost,
            _ => None,
        }
    }
}

/// Reads every map of `dir` as recovery does; cuts torn tails only when `fix_torn`.
pub fn inspect(dir: &Path, fix_torn: bool) -> io::Result<Vec<Inspected>> {
    let files = if fix_torn {
        Storage::open(dir)?
    } else {
        Storage::at(dir)
    };
    let scan = files.scan()?;
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (path, reason) in &scan.failures {
        // An unreadable tombstone: the name's state is unknown.
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("?")
            .to_owned();
        seen.insert(name.clone());
        out.push(Inspected {
            outcome: Recovered::Damaged(Damage {
                name,
                reason: format!("unreadable tombstone: {reason}"),
                last_good: None,
                dropped: Vec::new(),
            }),
            replayed: 0,
            torn_bytes: 0,
            log_len: 0,
        });
    }
    for (name, path) in &scan.maps {
        seen.insert(name.clone());
        let tomb = scan.tombstones.get(name).copied();
        out.push(inspect_map(dir, name, path, tomb, fix_torn)?);
    }
    for (name, &version) in &scan.tombstones {
        if seen.insert(name.clone()) {
            // A log left beside a tombstone is older than the delete (the delete removes
            // it after writing the tombstone); anything newer would be damage.
            let mut outcome = Recovered::Deleted {
                name: name.clone(),
                version,
            };
            if let Some(s) = log::read(dir, name)? {
                let newer: Vec<u64> = s
                    .records
                    .iter()
                    .map(|r| r.version)
                    .filter(|&v| v > version)
                    .collect();
                if newer.is_empty() {
                    if fix_torn {
                        log::remove(dir, name)?;
                    }
                } else {
                    outcome = Recovered::Damaged(Damage {
                        name: name.clone(),
                        reason: "patches logged after the map was deleted".into(),
                        last_good: Some(version),
                        dropped: newer,
                    });
                }
            }
            out.push(Inspected {
                outcome,
                replayed: 0,
                torn_bytes: 0,
                log_len: 0,
            });
        }
    }
    out.sort_by(|a, b| name_of(&a.outcome).cmp(name_of(&b.outcome)));
    Ok(out)
}

/// The name a recovery outcome is about.
pub fn name_of(r: &Recovered) -> &str {
    match r {
        Recovered::Live { name, .. } | Recovered::Deleted { name, .. } => name,
        Recovered::Damaged(d) => &d.name,
    }
}

fn inspect_map(
    dir: &Path,
    name: &str,
    path: &Path,
    tomb: Option<u64>,
    fix_torn: bool,
) -> io::Result<Inspected> {
    let damaged = |reason: String, last_good: Option<u64>, dropped: Vec<u64>| Inspected {
        outcome: Recovered::Damaged(Damage {
            name: name.to_owned(),
            reason,
            last_good,
            dropped,
        }),
        replayed: 0,
        torn_bytes: 0,
        log_len: 0,
    };
    let log_scan = log::read(dir, name)?;
    let m = match snapshot::read_map(path, name) {
        Ok(m) => m,
        Err(reason) => {
            let dropped = log_scan
                .map(|s| s.records.iter().map(|r| r.version).collect())
                .unwrap_or_default();
            return Ok(damaged(format!("snapshot: {reason}"), None, dropped));
        }
    };
    if tomb.is_some_and(|t| t >= m.version) {
        if fix_torn {
            log::remove(dir, name)?;
        }
        return Ok(Inspected {
            outcome: Recovered::Deleted {
                name: name.to_owned(),
                version: tomb.unwrap_or(m.version),
            },
            replayed: 0,
            torn_bytes: 0,
            log_len: 0,
        });
    }
    let (mut grid, mut version) = (m.grid, m.version);
    let Some(scan) = log_scan else {
        return Ok(Inspected {
            outcome: Recovered::Live {
                name: name.to_owned(),
                version,
                grid: Box::new(grid),
                lost: None,
            },
            replayed: 0,
            torn_bytes: 0,
            log_len: 0,
        });
    };
    let mut replayed = 0;
    let mut good_len = if scan.records.is_empty() && scan.tail == Tail::Clean {
        0
    } else {
        scan.header_len
    };
    for (i, r) in scan.records.iter().enumerate() {
        good_len = r.offset + r.len;
        if r.version <= version {
            continue; // older than the snapshot: left by a compaction or an upload
        }
        let later = || -> Vec<u64> {
            let mut v: Vec<u64> = scan.records[i..].iter().map(|r| r.version).collect();
            if let Tail::Corrupt { later, .. } = &scan.tail {
                v.extend(later);
            }
            v
        };
        if r.version != version + 1 {
            return Ok(damaged(
                format!(
                    "patch log skips from version {version} to {} at byte {}",
                    r.version, r.offset
                ),
                Some(version),
                later(),
            ));
        }
        let patch = Patch {
            cells: r.cells.clone(),
            rects: Vec::new(),
        };
        match grid.apply_patch(&patch) {
            Ok(Some((next, _))) => grid = next,
            Ok(None) => {}
            Err(e) => {
                return Ok(damaged(
                    format!("patch log record {} does not fit the map: {e}", r.version),
                    Some(version),
                    later(),
                ));
            }
        }
        version = r.version;
        replayed += 1;
    }
    let mut torn_bytes = 0;
    match &scan.tail {
        Tail::Clean => {}
        Tail::Torn { at, bytes } => {
            torn_bytes = *bytes;
            tracing::warn!(map = %name, bytes, "cutting a torn tail off the patch log");
            if fix_torn {
                log::truncate(dir, name, *at)?;
            }
            good_len = *at;
        }
        Tail::Corrupt { reason, later, .. } => {
            // The bad record's own version is lost too: it can only be the next one, as
            // versions are consecutive.
            let last = later.iter().copied().max().unwrap_or(0).max(version + 1);
            return Ok(damaged(
                format!("patch log: {reason}"),
                Some(version),
                (version + 1..=last).collect(),
            ));
        }
    }
    let lost = scan
        .high_water
        .filter(|&hw| hw > version)
        .map(|hw| LostTail {
            from: version + 1,
            to: hw,
            served_as: hw + 1,
        });
    if let Some(l) = lost {
        tracing::warn!(
            map = %name, from = l.from, to = l.to, served_as = l.served_as,
            "the patch log ends before versions it handed out (its tail was cut): serving \
             what it holds under a new version past them"
        );
        if fix_torn {
            // Durable before served: the snapshot at the new version replaces the log.
            snapshot::Storage::at(dir).save(name, l.served_as, &grid)?;
            log::remove(dir, name)?;
            good_len = 0;
        }
        version = l.served_as;
    }
    Ok(Inspected {
        outcome: Recovered::Live {
            name: name.to_owned(),
            version,
            grid: Box::new(grid),
            lost,
        },
        replayed,
        torn_bytes,
        log_len: good_len,
    })
}

/// `pathd data check`: one line per map of `dir`; changes nothing. Returns the lines and
/// whether every map is good.
pub fn check(dir: &Path) -> io::Result<(Vec<String>, bool)> {
    let mut lines = Vec::new();
    let mut ok = true;
    for r in inspect(dir, false)? {
        lines.push(match &r.outcome {
            Recovered::Live { name, version, .. } => {
                let torn = if r.torn_bytes > 0 {
                    format!(
                        ", torn tail of {} bytes (an unacknowledged write; cut at start)",
                        r.torn_bytes
                    )
                } else {
                    String::new()
                };
                let lost = match r.lost() {
                    Some(l) => format!(
                        "; its tail was cut: {} lost, served as version {}",
                        if l.from == l.to {
                            format!("version {}", l.from)
                        } else {
                            format!("versions {} to {}", l.from, l.to)
                        },
                        l.served_as
                    ),
                    None => String::new(),
                };
                let logged = r.lost().map_or(*version, |l| l.from - 1);
                format!(
                    "ok       {name} version {logged} ({} logged patches{torn}{lost})",
                    r.replayed
                )
            }
            Recovered::Deleted { name, version } => {
                format!("deleted  {name} (last version {version})")
            }
            Recovered::Damaged(d) => {
                ok = false;
                format!("DAMAGED  {d}")
            }
        });
    }
    Ok((lines, ok))
}

/// The map `name` as of version `upto`: its snapshot plus the logged patches up to `upto`.
fn rebuild(dir: &Path, name: &str, upto: u64) -> io::Result<Grid> {
    let m =
        snapshot::read_map(&dir.join(format!("{name}.pmap")), name).map_err(io::Error::other)?;
    let mut grid = m.grid;
    if let Some(scan) = log::read(dir, name)? {
        for r in scan.records {
            if r.version > m.version && r.version <= upto {
                let patch = Patch {
                    cells: r.cells,
                    rects: Vec::new(),
                };
                if let Ok(Some((next, _))) = grid.apply_patch(&patch) {
                    grid = next;
                }
            }
        }
    }
    Ok(grid)
}

/// `pathd data repair --map NAME`: makes a damaged map servable again by dropping what
/// cannot be read, and says exactly what was dropped. With a good snapshot the map keeps
/// its last good state (a bad log header: the snapshot's), rewritten as a snapshot under a
/// version newer than every acknowledged one; with a bad snapshot the map is deleted, its
/// tombstone carrying the newest version known. Either way versions never go backwards or
/// get reused. Run it while the server is stopped.
pub fn repair(dir: &Path, name: &str) -> io::Result<String> {
    let found = inspect(dir, false)?;
    let Some(r) = found.into_iter().find(|r| name_of(&r.outcome) == name) else {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no map named {name:?} in {}", dir.display()),
        ));
    };
    let Recovered::Damaged(d) = r.outcome else {
        return Ok(format!("{name} is not damaged; nothing to do"));
    };
    let dropped = if d.dropped.is_empty() {
        "no readable acknowledged versions".to_owned()
    } else {
        format!("acknowledged versions {:?}", d.dropped)
    };
    let files = Storage::open(dir)?;
    match d.last_good {
        Some(good) if d.reason.starts_with("patches logged after") => {
            log::remove(dir, name)?;
            Ok(format!(
                "{name}: removed the log left after its deletion at version {good}; dropped {dropped}"
            ))
        }
        Some(good) => {
            // Keep the state at `good`, under a version past everything ever acknowledged:
            // versions never go backwards and never name two different maps.
            let grid = rebuild(dir, name, good)?;
            let version = d.dropped.iter().copied().max().map_or(good, |v| v + 1);
            files.save(name, version, &grid)?;
            log::remove(dir, name)?;
            Ok(format!(
                "{name}: kept the map as of version {good} and dropped {dropped}; it is served as version {version}"
            ))
        }
        None => {
            let last = d.dropped.iter().copied().max().unwrap_or(0);
            let header = snapshot::peek_version(&dir.join(format!("{name}.pmap")));
            let version = last.max(header.unwrap_or(0)).max(1);
            files.delete(name, version)?;
            log::remove(dir, name)?;
            Ok(format!(
                "{name}: the snapshot cannot be read; deleted the map (tombstone at version {version}, so a new upload continues past it); dropped {dropped}"
            ))
        }
    }
}
