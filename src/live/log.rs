//! The per-map patch log: how a patch is durable before it is acknowledged.
//!
//! File `<name>.plog` next to the map's snapshot `<name>.pmap` (see [`crate::storage`]):
//! the line `PATHD-PLOG 1`, then one record per acknowledged patch,
//!
//! ```text
//! [payload length: u32 LE][FNV-1a 64 of the payload: u64 LE][payload]
//! payload = [version: u64 LE][n: u32 LE] n x ([x: u32 LE][y: u32 LE][cost: u8])
//! ```
//!
//! holding the map version the patch produced and the cells it *actually changed* with their
//! new costs (so replay is exact and independent of how the request was phrased). A record
//! is appended and the file fsynced before the patch is swapped in and answered.
//!
//! Replay at start takes the snapshot's version `v` and applies the records in order: a
//! record with version `<= v` is older than the snapshot (left by a crash during compaction,
//! or by a replacement) and skipped; the next record must have version `v + 1`. The first
//! record that is short, fails its checksum, skips a version or does not fit the map ends
//! the replay, and the file is truncated there: that is the torn tail of a write that was
//! never acknowledged, and new records must not land behind it.
//!
//! Compaction: when the log grows past the map's cell count in bytes (replaying it would
//! cost more than reading a snapshot), the server rewrites the snapshot atomically at the
//! current version and then removes the log. A crash between the two leaves a log whose
//! records are all `<= v`, which replay skips.
//!
//! Like [`crate::storage`], these functions block: run them on `spawn_blocking`.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use pathd_engine::{Grid, Patch, Point};

const MAGIC: &[u8] = b"PATHD-PLOG 1\n";
const EXT: &str = "plog";
/// Bytes before a record's payload.
const FRAME: usize = 12;

/// The log file of map `name` in `dir`.
pub fn path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.{EXT}"))
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The framed bytes of one record.
pub fn encode_record(version: u64, cells: &[(Point, u8)]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(12 + cells.len() * 9);
    payload.extend_from_slice(&version.to_le_bytes());
    payload.extend_from_slice(&(cells.len() as u32).to_le_bytes());
    for &(p, c) in cells {
        payload.extend_from_slice(&p.x.to_le_bytes());
        payload.extend_from_slice(&p.y.to_le_bytes());
        payload.push(c);
    }
    let mut out = Vec::with_capacity(FRAME + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&fnv1a(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// Durably appends the record of the patch that produced `version` (changed `cells`);
/// returns the log's size afterwards.
pub fn append(dir: &Path, name: &str, version: u64, cells: &[(Point, u8)]) -> io::Result<u64> {
    let p = path(dir, name);
    let mut f = OpenOptions::new().create(true).append(true).open(&p)?;
    let fresh = f.metadata()?.len() == 0;
    let mut bytes = if fresh { MAGIC.to_vec() } else { Vec::new() };
    bytes.extend_from_slice(&encode_record(version, cells));
    f.write_all(&bytes)?;
    f.sync_data()?;
    if fresh {
        // A new directory entry: make it durable too.
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(f.metadata()?.len())
}

/// Removes the log of `name` (after compaction, replacement or deletion).
pub fn remove(dir: &Path, name: &str) -> io::Result<()> {
    match fs::remove_file(path(dir, name)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// What [`replay`] did.
#[derive(Debug)]
pub struct Replayed {
    /// The map after the log.
    pub grid: Grid,
    /// Its version.
    pub version: u64,
    /// Records applied.
    pub applied: usize,
    /// Bytes of torn or invalid tail cut off the file.
    pub truncated: u64,
}

/// Applies the log of `name` (if any) to its snapshot `grid` at `version`, truncating a
/// torn tail (see module docs).
pub fn replay(dir: &Path, name: &str, grid: Grid, version: u64) -> io::Result<Replayed> {
    let p = path(dir, name);
    let bytes = match fs::read(&p) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Replayed {
                grid,
                version,
                applied: 0,
                truncated: 0,
            });
        }
        Err(e) => return Err(e),
    };
    let mut out = Replayed {
        grid,
        version,
        applied: 0,
        truncated: 0,
    };
    let mut good = if bytes.starts_with(MAGIC) {
        MAGIC.len()
    } else {
        0 // not even the magic line survived: nothing in it was acknowledged
    };
    if good > 0 {
        while let Some((rec_version, cells, len)) = decode_record(&bytes[good..]) {
            if rec_version <= out.version {
                good += len;
                continue;
            }
            if rec_version != out.version + 1 {
                break;
            }
            let patch = Patch {
                cells,
                rects: Vec::new(),
            };
            match out.grid.apply_patch(&patch) {
                Ok(Some((next, _))) => out.grid = next,
                Ok(None) => {}
                Err(_) => break,
            }
            out.version = rec_version;
            out.applied += 1;
            good += len;
        }
    }
    if good < bytes.len() {
        out.truncated = (bytes.len() - good) as u64;
        tracing::warn!(map = %name, bytes = out.truncated, "cutting a torn tail off the patch log");
        if good == 0 {
            fs::remove_file(&p)?;
        } else {
            let f = OpenOptions::new().write(true).open(&p)?;
            f.set_len(good as u64)?;
            f.sync_all()?;
        }
    }
    Ok(out)
}

/// Cells and their new costs, as a record holds them.
type Cells = Vec<(Point, u8)>;

/// One record at the start of `b`: version, cells, framed length; `None` when torn.
fn decode_record(b: &[u8]) -> Option<(u64, Cells, usize)> {
    let len = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?) as usize;
    let sum = u64::from_le_bytes(b.get(4..12)?.try_into().ok()?);
    let payload = b.get(FRAME..FRAME + len)?;
    if fnv1a(payload) != sum || len < 12 {
        return None;
    }
    let version = u64::from_le_bytes(payload[0..8].try_into().ok()?);
    let n = u32::from_le_bytes(payload[8..12].try_into().ok()?) as usize;
    if len != 12 + n * 9 {
        return None;
    }
    let cells = payload[12..]
        .chunks_exact(9)
        .map(|c| {
            let x = u32::from_le_bytes(c[0..4].try_into().expect("4 bytes"));
            let y = u32::from_le_bytes(c[4..8].try_into().expect("4 bytes"));
            (Point::new(x, y), c[8])
        })
        .collect();
    Some((version, cells, FRAME + len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathd_engine::Movement;

    #[test]
    fn replays_in_order_skips_old_records_and_cuts_a_torn_tail() {
        let dir = tempfile::TempDir::new().unwrap();
        let d = dir.path();
        let g = Grid::from_costs(3, 1, vec![1, 1, 1], Movement::Octile).unwrap();
        append(d, "m", 2, &[(Point::new(0, 0), 5)]).unwrap(); // older than the snapshot
        append(d, "m", 4, &[(Point::new(1, 0), 0)]).unwrap();
        let size = append(d, "m", 5, &[(Point::new(2, 0), 9)]).unwrap();
        // A torn third record: half its bytes.
        let torn = encode_record(6, &[(Point::new(0, 0), 3)]);
        let mut f = OpenOptions::new().append(true).open(path(d, "m")).unwrap();
        f.write_all(&torn[..torn.len() / 2]).unwrap();
        drop(f);
        let r = replay(d, "m", g.clone(), 3).unwrap();
        assert_eq!((r.version, r.applied), (5, 2));
        assert_eq!(r.grid.costs(), vec![1, 0, 9]);
        assert_eq!(r.truncated, (torn.len() / 2) as u64);
        assert_eq!(fs::metadata(path(d, "m")).unwrap().len(), size);
        // A gap in versions stops the replay: record 4 cannot follow snapshot 2.
        let r = replay(d, "m", g, 2).unwrap();
        assert_eq!((r.version, r.applied), (2, 0));
    }
}
