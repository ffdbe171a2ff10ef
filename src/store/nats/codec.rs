//! The stream's messages: subjects, the cells section, headers, decoding one message, and
//! folding a map's messages into what recovery found.

use async_nats::HeaderMap;
use pathd_engine::{Grid, Patch, Point};

use super::shared::{Conn, Meta, Op};
use super::{NatsStore, SUBJECT_PREFIX};
use crate::store::{Change, Damage, Recovered, Replicated, snapshot};

/// The subject of map `name`.
pub fn subject(name: &str) -> String {
    format!("{SUBJECT_PREFIX}{}", name.replace('.', "~"))
}

pub(super) fn name_of_subject(subject: &str) -> Option<String> {
    subject
        .strip_prefix(SUBJECT_PREFIX)
        .map(|t| t.replace('~', "."))
}

pub(super) fn encode_cells(cells: &[(Point, u8)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + cells.len() * 9);
    out.extend_from_slice(&(cells.len() as u32).to_le_bytes());
    for &(p, c) in cells {
        out.extend_from_slice(&p.x.to_le_bytes());
        out.extend_from_slice(&p.y.to_le_bytes());
        out.push(c);
    }
    out
}

pub(super) fn decode_cells(b: &[u8]) -> Result<Vec<(Point, u8)>, String> {
    let n = b
        .get(..4)
        .map(|h| u32::from_le_bytes(h.try_into().expect("4 bytes")) as usize)
        .ok_or("cells section too short")?;
    if b.len() != 4 + n * 9 {
        return Err("cells section has the wrong length".into());
    }
    Ok(b[4..]
        .chunks_exact(9)
        .map(|c| {
            let x = u32::from_le_bytes(c[0..4].try_into().expect("4 bytes"));
            let y = u32::from_le_bytes(c[4..8].try_into().expect("4 bytes"));
            (Point { x, y }, c[8])
        })
        .collect())
}

pub(super) fn header<'a>(h: Option<&'a HeaderMap>, key: &str) -> Option<&'a str> {
    h.and_then(|h| h.get(key)).map(|v| v.as_str())
}

/// A message of the stream, decoded.
pub(super) struct Decoded {
    pub(super) rep: Replicated,
    pub(super) meta: Meta,
}

/// One map's mutations folded so far (recovery reads them in stream order).
pub(super) enum Fold {
    Live(u64, Box<Grid>),
    Deleted(u64),
    Broken(u64, String),
}

impl Fold {
    /// The fold after the mutation producing `version`.
    pub(super) fn next(prev: Option<Fold>, version: u64, change: Change) -> Fold {
        match (change, prev) {
            (Change::Put(g), _) => Fold::Live(version, Box::new(g)),
            (Change::Patch { full: Some(g), .. }, _) => Fold::Live(version, Box::new(g)),
            (Change::Patch { cells, full: None }, Some(Fold::Live(_, g))) => {
                match g.apply_patch(&Patch {
                    cells,
                    rects: Vec::new(),
                }) {
                    Ok(Some((g2, _))) => Fold::Live(version, Box::new(g2)),
                    Ok(None) => Fold::Live(version, g),
                    Err(e) => Fold::Broken(version, format!("patch {version}: {e}")),
                }
            }
            (Change::Patch { .. }, _) => {
                Fold::Broken(version, format!("patch {version} has no map to apply to"))
            }
            (Change::Delete, _) => Fold::Deleted(version),
            (Change::Unreadable(why), _) => Fold::Broken(version, why),
        }
    }

    pub(super) fn recovered(self, name: String) -> Recovered {
        match self {
            Fold::Live(version, grid) => Recovered::Live {
                name,
                version,
                grid,
                lost: None,
            },
            Fold::Deleted(version) => Recovered::Deleted { name, version },
            Fold::Broken(version, reason) => Recovered::Damaged(Damage {
                name,
                reason,
                last_good: None,
                dropped: vec![version],
            }),
        }
    }
}

impl NatsStore {
    /// Decodes one stream message (fetching an object body when it has one).
    pub(super) async fn decode(
        conn: &Conn,
        replicas: usize,
        subject: &str,
        headers: Option<&HeaderMap>,
        payload: &[u8],
        seq: u64,
    ) -> Result<Decoded, String> {
        let name = name_of_subject(subject).ok_or("not a map subject")?;
        let version: u64 = header(headers, "Pathd-Version")
            .and_then(|v| v.parse().ok())
            .ok_or("no Pathd-Version header")?;
        let op = match header(headers, "Pathd-Op") {
            Some("put") => Op::Put,
            Some("patch") => Op::Patch,
            Some("delete") => Op::Delete,
            other => return Err(format!("unknown Pathd-Op {other:?}")),
        };
        let cells_len: usize = header(headers, "Pathd-Cells")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let (cells_b, rest) = payload
            .split_at_checked(cells_len)
            .ok_or("payload shorter than its cells section")?;
        let (body, full_bytes) = match header(headers, "Pathd-Body") {
            Some("inline") => (Some(None), Some(rest.to_vec())),
            Some("object") => {
                let key = header(headers, "Pathd-Object").ok_or("no Pathd-Object header")?;
                let bucket = Self::bucket(conn, replicas).await?;
                let mut obj = bucket
                    .get(key)
                    .await
                    .map_err(|e| format!("object {key}: {e}"))?;
                let mut buf = Vec::new();
                tokio::io::AsyncReadExt::read_to_end(&mut obj, &mut buf)
                    .await
                    .map_err(|e| format!("object {key}: {e}"))?;
                (Some(Some(key.to_owned())), Some(buf))
            }
            _ => (None, None),
        };
        let full = match full_bytes {
            Some(b) => Some(snapshot::decode(&b)?.grid),
            None => None,
        };
        let change = match op {
            Op::Put => Change::Put(full.ok_or("a put without a map")?),
            Op::Patch => Change::Patch {
                cells: decode_cells(cells_b)?,
                full,
            },
            Op::Delete => Change::Delete,
        };
        Ok(Decoded {
            rep: Replicated {
                name,
                version,
                position: seq,
                change,
            },
            meta: Meta {
                op,
                body,
                cells_bytes: cells_b.len() as u64,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_round_trip_names_with_dots() {
        for n in ["a", "a.b", "x..y.", "m-1_2"] {
            assert_eq!(name_of_subject(&subject(n)).as_deref(), Some(n));
        }
        assert_eq!(subject("a.b"), "pathd.maps.a~b");
    }

    #[test]
    fn cells_round_trip() {
        let cells = vec![(Point { x: 1, y: 2 }, 0), (Point { x: 70000, y: 3 }, 255)];
        assert_eq!(decode_cells(&encode_cells(&cells)).unwrap(), cells);
        assert!(decode_cells(&[1, 0, 0, 0]).is_err());
    }
}
