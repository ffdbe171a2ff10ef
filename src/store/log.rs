//! The per-map patch log: how a patch is durable before it is acknowledged.
//!
//! File `<name>.plog` next to the map's snapshot `<name>.pmap` (see [`crate::store::snapshot`]):
//! the line `PATHD-PLOG 2`, two *high-water slots*, then one record per acknowledged patch,
//!
//! ```text
//! slot    = [version: u64 LE][FNV-1a 64 of those 8 bytes: u64 LE]
//! record  = [payload length: u32 LE][FNV-1a 64 of the payload: u64 LE][payload]
//! payload = [version: u64 LE][n: u32 LE] n x ([x: u32 LE][y: u32 LE][cost: u8])
//! ```
//!
//! A record holds the map version the patch produced and the cells it *actually changed*
//! with their new costs (so replay is exact and independent of how the request was
//! phrased). An append writes the version into slot `version % 2`, then the record at the
//! end, then fsyncs the file once, before the patch is swapped in and answered.
//!
//! Why the slots: the records alone cannot tell a log whose tail was cut (a lost write, a
//! restored backup, a disk that dropped its last sectors) from one that simply ends, so a
//! cut tail would hand out an acknowledged version again with other cells. The slots sit
//! at the head of the file, away from the tail, and say the highest version ever handed
//! out; two of them, alternating, so that a write torn inside one slot (a crash during an
//! append that was never acknowledged) leaves the other one whole. Recovery serves what
//! the records give under a version *past* the slots' (see [`crate::store::local`]).
//! Logs of the first format (`PATHD-PLOG 1`, no slots) are still read, and appended to as
//! they are until their next compaction.
//!
//! Replay at start takes the snapshot's version `v` and applies the records in order: a
//! record with version `<= v` is older than the snapshot (left by a crash during compaction,
//! or by a replacement) and skipped; the next record must have version `v + 1`. Only a last
//! record cut short with nothing readable after it is a torn tail (the append of a patch
//! that was never acknowledged, unless the slots say otherwise): it is cut off with a
//! warning. Any other bad record, a bad header, a version gap or a record that does not fit
//! the map marks the map damaged ([`scan`], [`crate::store::LocalStore`]): it is not served
//! as an older version.
//!
//! Compaction: when the log grows past the map's cell count in bytes (replaying it would
//! cost more than reading a snapshot), the server rewrites the snapshot atomically at the
//! current version and then removes the log. A crash between the two leaves a log whose
//! records are all `<= v`, which replay skips.
//!
//! Like [`crate::store::snapshot`], these functions block: run them on `spawn_blocking`.

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use pathd_engine::Point;

/// The first format's header line (no high-water slots).
const MAGIC_V1: &[u8] = b"PATHD-PLOG 1\n";
/// The header line of the format written now.
const MAGIC: &[u8] = b"PATHD-PLOG 2\n";
const EXT: &str = "plog";
/// Bytes of one high-water slot.
const SLOT: usize = 16;
/// Length of the current format's header: the line and both slots.
pub const HEADER_LEN: usize = MAGIC.len() + 2 * SLOT;
/// Bytes before a record's payload.
const FRAME: usize = 12;

/// One high-water slot's bytes.
fn encode_slot(version: u64) -> [u8; SLOT] {
    let mut out = [0; SLOT];
    out[..8].copy_from_slice(&version.to_le_bytes());
    out[8..].copy_from_slice(&fnv1a(&version.to_le_bytes()).to_le_bytes());
    out
}

/// The version a slot holds, if it is whole.
fn decode_slot(b: &[u8]) -> Option<u64> {
    let v: [u8; 8] = b.get(..8)?.try_into().ok()?;
    let sum = u64::from_le_bytes(b.get(8..SLOT)?.try_into().ok()?);
    (fnv1a(&v) == sum).then(|| u64::from_le_bytes(v))
}

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

/// Durably appends the record of the patch that produced `version` (changed `cells`),
/// raising the high-water slots to `version` first; returns the log's size afterwards.
pub fn append(dir: &Path, name: &str, version: u64, cells: &[(Point, u8)]) -> io::Result<u64> {
    let p = path(dir, name);
    // Not `append(true)`: on Linux a positioned write to an O_APPEND file lands at the end.
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&p)?;
    let len = f.metadata()?.len();
    let fresh = len == 0;
    let record = encode_record(version, cells);
    if fresh {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&encode_slot(version));
        bytes.extend_from_slice(&encode_slot(version));
        bytes.extend_from_slice(&record);
        f.write_all(&bytes)?;
    } else {
        let mut head = vec![0; MAGIC.len()];
        f.read_exact(&mut head)?;
        if head == MAGIC {
            let slot = MAGIC.len() + SLOT * (version % 2) as usize;
            f.seek(SeekFrom::Start(slot as u64))?;
            f.write_all(&encode_slot(version))?;
        }
        f.seek(SeekFrom::Start(len))?;
        f.write_all(&record)?;
    }
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
    /// The highest version ever appended, from the high-water slots (`None` in a log of
    /// the first format, or one whose header was cut short).
    pub high_water: Option<u64>,
    /// Where the first record starts (the header's length; 0 when there is no header).
    pub header_len: u64,
}

/// Reads a log file's bytes. A record that fails to decode ends the good part; it is a
/// torn tail only if it is incomplete (the file ends inside it) *and* no well-formed record
/// follows anywhere after it (an append is one write followed by fsync, so a crash can cut
/// only the last record short). Anything else is corruption.
pub fn scan(bytes: &[u8]) -> Scan {
    let mut records = Vec::new();
    let header = |tail: Tail| Scan {
        records: Vec::new(),
        tail,
        high_water: None,
        header_len: 0,
    };
    let (mut at, high_water) = if bytes.starts_with(MAGIC) {
        if bytes.len() < HEADER_LEN {
            // The first append was cut inside the slots: nothing was acknowledged.
            return header(Tail::Torn {
                at: 0,
                bytes: bytes.len() as u64,
            });
        }
        let slots = &bytes[MAGIC.len()..HEADER_LEN];
        let hw = decode_slot(&slots[..SLOT]).max(decode_slot(&slots[SLOT..]));
        if hw.is_none() {
            return header(Tail::Corrupt {
                at: MAGIC.len() as u64,
                reason: "both high-water slots of the log's header are unreadable".into(),
                later: later_versions(bytes, HEADER_LEN),
            });
        }
        (HEADER_LEN, hw)
    } else if bytes.starts_with(MAGIC_V1) {
        (MAGIC_V1.len(), None)
    } else if MAGIC.starts_with(bytes) || MAGIC_V1.starts_with(bytes) {
        // The first append was cut inside the header line: nothing was acknowledged.
        let tail = if bytes.is_empty() {
            Tail::Clean
        } else {
            Tail::Torn {
                at: 0,
                bytes: bytes.len() as u64,
            }
        };
        return header(tail);
    } else {
        return header(Tail::Corrupt {
            at: 0,
            reason: "the log does not start with its header line".into(),
            later: later_versions(bytes, 0),
        });
    };
    let header_len = at as u64;
    let done = |records, tail| Scan {
        records,
        tail,
        high_water,
        header_len,
    };
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
                return done(records, tail);
            }
        }
    }
    done(records, Tail::Clean)
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
/// repair); a length of 0 removes it. (A log cut back to its header keeps its high-water
/// slots.)
pub fn truncate(dir: &Path, name: &str, len: u64) -> io::Result<()> {
    if len == 0 {
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
    if len < 12 || !(len - 12).is_multiple_of(9) {
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
        let mut b = MAGIC_V1.to_vec();
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
        assert_eq!(scan(&MAGIC[..13]).tail, Tail::Torn { at: 0, bytes: 13 });
        assert!(matches!(
            scan(b"PATHD-XLOG 1\n").tail,
            Tail::Corrupt { at: 0, .. }
        ));
    }

    #[test]
    fn a_flipped_bit_in_the_middle_is_corruption_naming_what_follows() {
        let mut b = file(&[(2, 1), (3, 0), (4, 9), (5, 7)]);
        let second = MAGIC_V1.len() + encode_record(2, &[(Point::new(1, 2), 1)]).len();
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

    #[test]
    fn appends_keep_the_highest_version_in_the_slots_whatever_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        for v in 2..=6 {
            append(dir.path(), "m", v, &[(Point::new(v as u32, 0), 0)]).unwrap();
        }
        let bytes = fs::read(path(dir.path(), "m")).unwrap();
        let s = scan(&bytes);
        assert_eq!((s.high_water, s.header_len), (Some(6), HEADER_LEN as u64));
        let v: Vec<_> = s.records.iter().map(|r| r.version).collect();
        assert_eq!(v, [2, 3, 4, 5, 6]);
        // The whole last record cut: the records end at 5, the slots still say 6.
        let last = s.records[4].offset as usize;
        let cut = scan(&bytes[..last]);
        assert_eq!((cut.records.len(), cut.high_water), (4, Some(6)));
        assert_eq!(cut.tail, Tail::Clean);
        // One slot torn (a crash inside an unacknowledged append): the other one holds.
        let mut torn = bytes.clone();
        torn[MAGIC.len() + 3] ^= 0xff; // slot 0, written by version 6
        assert_eq!(scan(&torn).high_water, Some(5));
        // Both gone: not silently trusted.
        torn[MAGIC.len() + SLOT + 3] ^= 0xff;
        assert!(matches!(scan(&torn).tail, Tail::Corrupt { .. }));
    }

    #[test]
    fn logs_of_the_first_format_are_still_read_and_appended_to() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(path(dir.path(), "m"), file(&[(2, 1), (3, 0)])).unwrap();
        append(dir.path(), "m", 4, &[(Point::new(1, 2), 9)]).unwrap();
        let s = read(dir.path(), "m").unwrap().unwrap();
        let v: Vec<_> = s.records.iter().map(|r| r.version).collect();
        assert_eq!(
            (v, s.high_water, s.tail),
            (vec![2, 3, 4], None, Tail::Clean)
        );
    }
}
