//! Durable maps: one file per uploaded map in the data directory, written atomically.
//!
//! File `<name>.pmap`: a line `PATHD-MAP 1`, a JSON header line (`name`, `version`, `width`,
//! `height`, `movement`), the `width * height` row-major cost bytes, and an FNV-1a 64-bit
//! checksum of everything before it (little endian). Costs and movement survive exactly,
//! which a `.map` file could not carry.
//!
//! A write goes to a dot-prefixed temp file, is fsynced, renamed over the target and the
//! directory is fsynced: a crash leaves the old file or the new one, never half of one (a
//! stray temp file is removed at the next start). Map names never start with a dot, so temp
//! files cannot collide with maps.
//!
//! Deleting writes a tombstone `<name>.deleted` holding the last version before removing the
//! map file, so a deleted bundled map stays deleted after a restart and a re-created map's
//! version continues past the old one. At start a map file wins over a tombstone only when
//! its version is newer.
//!
//! These functions block (file I/O and fsync): async callers run them in `spawn_blocking`,
//! which is I/O waiting, not CPU work, so it stays off the search pool.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use pathd_engine::{Grid, Movement};
use serde::{Deserialize, Serialize};

const MAGIC: &[u8] = b"PATHD-MAP 1\n";
const MAP_EXT: &str = "pmap";
const TOMBSTONE_EXT: &str = "deleted";

/// The data directory.
#[derive(Clone, Debug)]
pub struct Storage {
    dir: PathBuf,
}

/// A map read back from the data directory.
#[derive(Debug)]
pub struct StoredMap {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: u64,
    /// Its cells and movement rule.
    pub grid: Grid,
}

/// What the data directory holds, as listed at start.
#[derive(Debug, Default)]
pub struct Scan {
    /// Map files: name and path, sorted.
    pub maps: Vec<(String, PathBuf)>,
    /// Last versions of deleted maps.
    pub tombstones: HashMap<String, u64>,
    /// Files that could not be read (path, reason); they are left in place.
    pub failures: Vec<(PathBuf, String)>,
}

#[derive(Serialize, Deserialize)]
struct Header {
    name: String,
    version: u64,
    width: u32,
    height: u32,
    movement: String,
    /// A map with unit-type profiles: its cells are terrain classes, read through these
    /// (absent for a plain map, and in files written before profiles existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    profiles: Option<StoredProfiles>,
}

/// A profile set in a map file's header.
#[derive(Serialize, Deserialize)]
struct StoredProfiles {
    default: String,
    /// Per profile, the cost of each of the 256 classes.
    tables: std::collections::BTreeMap<String, Vec<u8>>,
}

impl StoredProfiles {
    fn of(p: &pathd_engine::Profiles) -> Self {
        StoredProfiles {
            default: p.default_name().to_owned(),
            tables: p.iter().map(|(k, t)| (k.to_owned(), t.to_vec())).collect(),
        }
    }

    fn to_profiles(&self) -> Result<pathd_engine::Profiles, String> {
        let tables = self
            .tables
            .iter()
            .map(|(k, t)| {
                let t: pathd_engine::CostTable = t
                    .as_slice()
                    .try_into()
                    .map_err(|_| format!("profile {k:?} does not have 256 costs"))?;
                Ok((k.clone(), t))
            })
            .collect::<Result<_, String>>()?;
        pathd_engine::Profiles::new(self.default.clone(), tables).map_err(|e| e.to_string())
    }
}

impl Storage {
    /// Opens (creating if needed) the data directory and removes temp files left by a crash.
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        fs::create_dir_all(&dir)?;
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with('.') && name.ends_with(".tmp") {
                tracing::warn!(path = %path.display(), "removing temp file left by an interrupted write");
                fs::remove_file(&path)?;
            }
        }
        Ok(Storage { dir })
    }

    /// The data directory as it is, without cleaning it (for read-only inspection).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Storage { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, name: &str, ext: &str) -> PathBuf {
        self.dir.join(format!("{name}.{ext}"))
    }

    /// Durably writes `grid` as map `name` at `version` (see module docs for atomicity).
    pub fn save(&self, name: &str, version: u64, grid: &Grid) -> io::Result<()> {
        self.write_atomic(&self.path(name, MAP_EXT), &encode(name, version, grid))?;
        // The new file supersedes any tombstone (its version is newer); remove it so the
        // directory stays tidy. A crash before this line is harmless for the same reason.
        remove_if_exists(&self.path(name, TOMBSTONE_EXT))?;
        sync_dir(&self.dir)
    }

    /// Durably deletes map `name`, remembering `version` as its last one.
    pub fn delete(&self, name: &str, version: u64) -> io::Result<()> {
        self.write_atomic(
            &self.path(name, TOMBSTONE_EXT),
            format!("{version}\n").as_bytes(),
        )?;
        remove_if_exists(&self.path(name, MAP_EXT))?;
        sync_dir(&self.dir)
    }

    fn write_atomic(&self, target: &Path, bytes: &[u8]) -> io::Result<()> {
        let file_name = target
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| io::Error::other("bad target file name"))?;
        let tmp = self.dir.join(format!(".{file_name}.tmp"));
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, target)?;
        sync_dir(&self.dir)
    }

    /// Lists the map files and reads the tombstones (cheap; map files are read one by one
    /// with [`read_map`]). Unreadable tombstones are reported, not fatal.
    pub fn scan(&self) -> io::Result<Scan> {
        let mut out = Scan::default();
        for entry in fs::read_dir(&self.dir)? {
            let path = entry?.path();
            let (Some(stem), Some(ext)) = (
                path.file_stem().and_then(|s| s.to_str()),
                path.extension().and_then(|s| s.to_str()),
            ) else {
                continue;
            };
            if stem.starts_with('.') {
                continue;
            }
            match ext {
                MAP_EXT => out.maps.push((stem.to_owned(), path)),
                TOMBSTONE_EXT => match fs::read_to_string(&path)
                    .map_err(|e| e.to_string())
                    .and_then(|t| t.trim().parse::<u64>().map_err(|e| e.to_string()))
                {
                    Ok(v) => {
                        out.tombstones.insert(stem.to_owned(), v);
                    }
                    Err(reason) => out.failures.push((path, reason)),
                },
                _ => {}
            }
        }
        out.maps.sort();
        Ok(out)
    }
}

/// Reads and checks one map file, which must hold map `name`.
pub fn read_map(path: &Path, name: &str) -> Result<StoredMap, String> {
    let bytes = fs::read(path).map_err(|e| e.to_string())?;
    let m = decode(&bytes)?;
    if m.name != name {
        return Err(format!("file holds map {:?}, not {name:?}", m.name));
    }
    Ok(m)
}

/// The version in a map file's header, if the header can be read (even when the rest of
/// the file is damaged): what a repair needs so that versions never go backwards.
pub fn peek_version(path: &Path) -> Option<u64> {
    let bytes = fs::read(path).ok()?;
    let body = bytes.strip_prefix(MAGIC)?;
    let nl = body.iter().position(|&b| b == b'\n')?;
    let header: Header = serde_json::from_slice(&body[..nl]).ok()?;
    Some(header.version)
}

fn remove_if_exists(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    // Makes the rename itself durable (POSIX); opening a directory fails on some platforms,
    // where there is nothing more we can do.
    match fs::File::open(dir) {
        Ok(d) => d.sync_all().or(Ok(())),
        Err(_) => Ok(()),
    }
}

/// FNV-1a, 64 bit: detects torn or corrupted files (not an integrity guarantee against an
/// adversary, which the data directory's permissions are for).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The file bytes of a map.
pub fn encode(name: &str, version: u64, grid: &Grid) -> Vec<u8> {
    let header = Header {
        name: name.to_owned(),
        version,
        width: grid.width(),
        height: grid.height(),
        movement: grid.movement().as_str().to_owned(),
        profiles: grid.profiles().map(|p| StoredProfiles::of(p)),
    };
    let mut out = MAGIC.to_vec();
    serde_json::to_writer(&mut out, &header).expect("header serializes");
    out.push(b'\n');
    out.extend_from_slice(&grid.costs());
    let sum = fnv1a(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Reads the file bytes of a map.
pub fn decode(bytes: &[u8]) -> Result<StoredMap, String> {
    let body = bytes
        .strip_prefix(MAGIC)
        .ok_or("not a pathd map file (bad magic)")?;
    if bytes.len() < MAGIC.len() + 8 {
        return Err("file too short".into());
    }
    let (content, sum) = bytes.split_at(bytes.len() - 8);
    if fnv1a(content) != u64::from_le_bytes(sum.try_into().expect("8 bytes")) {
        return Err("checksum mismatch (corrupt file)".into());
    }
    let body = &body[..body.len() - 8];
    let nl = body
        .iter()
        .position(|&b| b == b'\n')
        .ok_or("missing header line")?;
    let header: Header = serde_json::from_slice(&body[..nl]).map_err(|e| e.to_string())?;
    let movement = Movement::parse(&header.movement).ok_or("unknown movement")?;
    let costs = body[nl + 1..].to_vec();
    let profiles = header
        .profiles
        .as_ref()
        .map(StoredProfiles::to_profiles)
        .transpose()?;
    let grid = Grid::from_costs(header.width, header.height, costs, movement)
        .map_err(|e| e.to_string())?
        .with_profiles(profiles.map(std::sync::Arc::new));
    Ok(StoredMap {
        name: header.name,
        version: header.version,
        grid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_costs_and_movement_and_rejects_corruption() {
        let g = Grid::from_costs(3, 2, vec![1, 0, 7, 255, 1, 2], Movement::Cardinal).unwrap();
        let bytes = encode("m-1", 9, &g);
        let back = decode(&bytes).unwrap();
        assert_eq!((back.name.as_str(), back.version), ("m-1", 9));
        assert_eq!(back.grid.costs(), g.costs());
        assert_eq!(back.grid.movement(), Movement::Cardinal);
        let mut bad = bytes.clone();
        let i = bad.len() - 10;
        bad[i] ^= 1;
        assert!(decode(&bad).unwrap_err().contains("checksum"));
        assert!(decode(&bytes[..bytes.len() - 3]).is_err());
        assert!(decode(b"hello").is_err());
    }
}
