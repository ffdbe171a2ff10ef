//! The per-map patch log: how a patch is durable before it is acknowledged.
//!
//! File `<name>.plog` next to the map's snapshot `<name>.pmap` (see [`crate::store::snapshot`]):
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
//! or by a replacement) and skipped; the next record must have version `v + 1`. Only a last
//! record cut short with nothing readable after it is a torn tail (the append of a patch
//! that was never acknowledged): it is cut off with a warning. Any other bad record, a bad
//! header, a version gap or a record that does not fit the map marks the map damaged
//! ([`scan`], [`crate::store::LocalStore`]): it is not served as an older version.
//!
//! Compaction: when the log grows past the map's cell count in bytes (replaying it would
//! cost more than reading a snapshot), the server rewrites the snapshot atomically at the
//! current version and then removes the log. A crash between the two leaves a log whose
//! records are all `<= v`, which replay skips.
//!
//! Like [`crate::store::snapshot`], these functions block: run them on `spawn_blocking`.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use pathd_engine::Point;

const MAGIC: &[u8] = b"PATHD-PLOG 1\n";
const EXT: &str = "plog";
/// Length of the header line.
pub const MAGIC_LEN: usize = MAGIC.len();
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

/// One record as it sits in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    /// Byte offset of its frame.
    pub offset: u64,
    /// Framed length.
    pub len: u64,
    /// The map version the patch produced.
    pub version: u64,
    /// Changed cells and their new costs.
    pub cells: Cells,
}

/// How a log file ends after its last good record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
    /// Nothing after the last record.
    Clean,
    /// The last record was cut short (a crash during an append that was never
    /// acknowledged): `bytes` from `at` on may be cut off.
    Torn {
        /// Where the torn record starts.
        at: u64,
        /// Its bytes.
        bytes: u64,
    },
    /// Something other than a cut-short last record: a bad header, a record that fails its
    /// checksum with more data after it. Not to be cut silently.
    Corrupt {
        /// Where the bad data starts.
        at: u64,
        /// What is wrong.
        reason: String,
        /// Versions of good-looking records found after the bad spot (acknowledged
        /// patches that a repair would drop).
        later: Vec<u64>,
    },
}

/// A log file read without judging versions: its good records and how it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// The records before the first bad byte, in file order.
    pub records: Vec<FileRecord>,
    /// What follows them.
    pub tail: Tail,
}

/// Reads a log file's bytes. A record that fails to decode ends the good part; it is a
/// torn tail only if it is incomplete (the file ends inside it) *and* no well-formed record
/// follows anywhere after it (an append is one write followed by fsync, so a crash can cut
/// only the last record short). Anything else is corruption.
pub fn scan(bytes: &[u8]) -> Scan {
    let mut records = Vec::new();
    if !bytes.starts_with(MAGIC) {
        if MAGIC.starts_with(bytes) {
            // The first append was cut inside the header line: nothing was acknowledged.
            let tail = if bytes.is_empty() {
                Tail::Clean
            } else {
                Tail::Torn {
                    at: 0,
                    bytes: bytes.len() as u64,
                }
            };
            return Scan { records, tail };
        }
        return Scan {
            records,
            tail: Tail::Corrupt {
                at: 0,
                reason: "the log does not start with its header line".into(),
                later: later_versions(bytes, 0),
            },
        };
    }
    let mut at = MAGIC.len();
    while at < bytes.len() {
        match decode_record(&bytes[at..]) {
            Ok((version, cells, len)) => {
                records.push(FileRecord {
                    offset: at as u64,
                    len: len as u64,
                    version,
                    cells,
                });
                at += len;
            }
            Err(incomplete) => {
                let later = later_versions(bytes, at + 1);
                let tail = if incomplete && later.is_empty() {
                    Tail::Torn {
                        at: at as u64,
                        bytes: (bytes.len() - at) as u64,
                    }
                } else {
                    Tail::Corrupt {
                        at: at as u64,
                        reason: format!("record at byte {at} fails its checksum or framing"),
                        later,
                    }
                };
                return Scan { records, tail };
            }
        }
    }
    Scan {
        records,
        tail: Tail::Clean,
    }
}

/// Versions of well-formed records starting anywhere at or after `from` (brute force: a
/// damaged log is rare and at most about a snapshot long).
fn later_versions(bytes: &[u8], from: usize) -> Vec<u64> {
    let mut out = Vec::new();
    let mut at = from;
    while at < bytes.len() {
        match decode_record(&bytes[at..]) {
            Ok((version, _, len)) => {
                out.push(version);
                at += len;
            }
            Err(_) => at += 1,
        }
    }
    out
}

/// Reads the log of `name` in `dir`; a missing file is an empty log.
pub fn read(dir: &Path, name: &str) -> io::Result<Option<Scan>> {
    match fs::read(path(dir, name)) {
        Ok(b) => Ok(Some(scan(&b))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Durably cuts the log of `name` to `len` bytes (a torn tail, a failed append, or a
/// repair); a length of 0 removes it.
pub fn truncate(dir: &Path, name: &str, len: u64) -> io::Result<()> {
    if len <= MAGIC.len() as u64 {
        return remove(dir, name);
    }
    let f = OpenOptions::new().write(true).open(path(dir, name))?;
    f.set_len(len)?;
    f.sync_all()
}

/// Cells and their new costs, as a record holds them.
pub type Cells = Vec<(Point, u8)>;

/// One record at the start of `b`: version, cells, framed length; `Err(true)` when the
/// bytes end inside it, `Err(false)` when it is malformed.
fn decode_record(b: &[u8]) -> Result<(u64, Cells, usize), bool> {
    let (Some(len), Some(sum)) = (b.get(0..4), b.get(4..12)) else {
        return Err(true);
    };
    let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
    let sum = u64::from_le_bytes(sum.try_into().expect("8 bytes"));
    if len < 12 || (len - 12) % 9 != 0 {
        return Err(false);
    }
    let Some(payload) = b.get(FRAME..FRAME + len) else {
        return Err(true);
    };
    let n = u32::from_le_bytes(payload[8..12].try_into().expect("4 bytes")) as usize;
    if len != 12 + n * 9 || fnv1a(payload) != sum {
        return Err(false);
    }
    let version = u64::from_le_bytes(payload[0..8].try_into().expect("8 bytes"));
    let cells = payload[12..]
        .chunks_exact(9)
        .map(|c| {
            let x = u32::from_le_bytes(c[0..4].try_into().expect("4 bytes"));
            let y = u32::from_le_bytes(c[4..8].try_into().expect("4 bytes"));
            (Point::new(x, y), c[8])
        })
        .collect();
    Ok((version, cells, FRAME + len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(records: &[(u64, u8)]) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        for &(v, c) in records {
            b.extend(encode_record(v, &[(Point::new(1, 2), c)]));
        }
        b
    }

    #[test]
    fn a_clean_log_reads_every_record() {
        let s = scan(&file(&[(2, 1), (3, 0), (4, 9)]));
        assert_eq!(s.tail, Tail::Clean);
        let v: Vec<_> = s.records.iter().map(|r| r.version).collect();
        assert_eq!(v, [2, 3, 4]);
        assert_eq!(s.records[2].cells, vec![(Point::new(1, 2), 9)]);
    }

    #[test]
    fn only_a_cut_short_last_record_is_a_torn_tail() {
        let whole = file(&[(2, 1), (3, 0), (4, 9)]);
        let last = whole.len() - encode_record(4, &[(Point::new(1, 2), 9)]).len();
        for cut in [1, 5, 13, 20] {
            let s = scan(&whole[..last + cut]);
            assert_eq!(s.records.len(), 2);
            assert_eq!(
                s.tail,
                Tail::Torn {
                    at: last as u64,
                    bytes: cut as u64
                }
            );
        }
        // A header cut short is torn too; a wrong header is not.
        assert_eq!(scan(&MAGIC[..4]).tail, Tail::Torn { at: 0, bytes: 4 });
        assert!(matches!(
            scan(b"PATHD-XLOG 1\n").tail,
            Tail::Corrupt { at: 0, .. }
        ));
    }

    #[test]
    fn a_flipped_bit_in_the_middle_is_corruption_naming_what_follows() {
        let mut b = file(&[(2, 1), (3, 0), (4, 9), (5, 7)]);
        let second = MAGIC.len() + encode_record(2, &[(Point::new(1, 2), 1)]).len();
        b[second + 14] ^= 1; // inside record 3's payload
        let s = scan(&b);
        assert_eq!(s.records.len(), 1);
        match s.tail {
            Tail::Corrupt { at, later, .. } => {
                assert_eq!(at, second as u64);
                assert_eq!(later, [4, 5]);
            }
            t => panic!("{t:?}"),
        }
        // A flipped length that runs past the end is not mistaken for a torn tail either.
        let mut b = file(&[(2, 1), (3, 0), (4, 9)]);
        b[second + 1] ^= 0x40;
        assert!(matches!(scan(&b).tail, Tail::Corrupt { .. }));
        // The same flip in the last record's checksum: complete, malformed, nothing after.
        let mut b = file(&[(2, 1), (3, 0)]);
        b[second + 5] ^= 1;
        assert!(matches!(scan(&b).tail, Tail::Corrupt { .. }));
    }
}
