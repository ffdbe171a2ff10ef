//! Membership: who is alive, by heartbeats in the KV bucket `pathd-members`.
//!
//! Liveness is judged by the watcher's own monotonic clock (when it last saw a key
//! refreshed), so replicas need not agree on the time. A value read at start is counted only
//! when the server stored it less than [`MEMBER_TTL`] ago (that one comparison uses the wall
//! clocks of the NATS server and this host).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use async_nats::jetstream::kv::{Operation, Store};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use super::{MEMBER_TTL, Member};

/// A member's value in the bucket.
#[derive(Serialize, Deserialize)]
pub(super) struct Beat {
    /// Its advertised base URL.
    pub url: String,
    /// The maps it holds and has ready (`--placement K` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<Vec<String>>,
}

/// What the watcher knows of one member.
struct Seen {
    url: String,
    at: Instant,
    held: Arc<HashSet<String>>,
}

/// The members seen, by id: URL and when their key was last seen refreshed.
#[derive(Default)]
pub(super) struct Members {
    seen: Mutex<HashMap<String, Seen>>,
}

impl Members {
    /// Live members, by id.
    pub fn live(&self) -> Vec<Member> {
        let seen = self.seen.lock().expect("members lock");
        let mut out: Vec<Member> = seen
            .iter()
            .filter(|(_, s)| s.at.elapsed() < MEMBER_TTL)
            .map(|(id, s)| Member {
                id: id.clone(),
                url: s.url.clone(),
            })
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    /// The URL of `id` when it is live.
    pub fn url(&self, id: &str) -> Option<String> {
        let seen = self.seen.lock().expect("members lock");
        seen.get(id)
            .filter(|s| s.at.elapsed() < MEMBER_TTL)
            .map(|s| s.url.clone())
    }

    /// The live members whose last heartbeat says they hold map `name`, by id.
    pub fn holding(&self, name: &str) -> Vec<Member> {
        let seen = self.seen.lock().expect("members lock");
        let mut out: Vec<Member> = seen
            .iter()
            .filter(|(_, s)| s.at.elapsed() < MEMBER_TTL && s.held.contains(name))
            .map(|(id, s)| Member {
                id: id.clone(),
                url: s.url.clone(),
            })
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    fn saw(&self, id: String, beat: Beat) {
        let held = Arc::new(beat.held.unwrap_or_default().into_iter().collect());
        self.seen.lock().expect("members lock").insert(
            id,
            Seen {
                url: beat.url,
                at: Instant::now(),
                held,
            },
        );
    }

    fn left(&self, id: &str) {
        self.seen.lock().expect("members lock").remove(id);
    }

    /// Follows the bucket until the watch ends (the caller watches again).
    pub async fn follow(&self, kv: &Store) -> Result<(), String> {
        let mut watch = kv.watch_all().await.map_err(|e| e.to_string())?;
        while let Some(entry) = watch.next().await {
            let entry = entry.map_err(|e| e.to_string())?;
            match entry.operation {
                Operation::Put => {
                    let now = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs() as i64);
                    let age = now - entry.created.unix_timestamp();
                    if age > MEMBER_TTL.as_secs() as i64 + 1 {
                        continue; // an old value, replayed at start: that member is gone
                    }
                    if let Ok(b) = serde_json::from_slice::<Beat>(&entry.value) {
                        self.saw(entry.key, b);
                    }
                }
                Operation::Delete | Operation::Purge => self.left(&entry.key),
            }
        }
        Ok(())
    }
}

/// The member of `live` that owns `id`: the highest score of `hash(member, id)`
/// (rendezvous hashing: a member leaving moves only the ids it owned, spread over the rest).
pub(super) fn rendezvous<'a>(id: &str, live: &'a [Member]) -> Option<&'a Member> {
    live.iter().max_by_key(|m| (score(&m.id, id), m.id.clone()))
}

/// The members of `live` by the same score for `id`, best first: the first is
/// [`rendezvous`]'s; a map placed on `K` replicas is held by the first `K`.
pub(super) fn ranked<'a>(id: &str, live: &'a [Member]) -> Vec<&'a Member> {
    let mut all: Vec<&Member> = live.iter().collect();
    all.sort_by_cached_key(|m| std::cmp::Reverse((score(&m.id, id), m.id.clone())));
    all
}

/// FNV-1a over `member`, a separator and `id`, then a 64-bit finaliser (splitmix64): stable
/// across builds and platforms, unlike `std`'s hasher.
fn score(member: &str, id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in member.bytes().chain([0u8]).chain(id.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(id: &str) -> Member {
        Member {
            id: id.into(),
            url: String::new(),
        }
    }

    #[test]
    fn rendezvous_moves_only_the_leavers_ids() {
        let all = vec![m("a"), m("b"), m("c")];
        let rest = vec![m("a"), m("c")];
        let mut moved = 0;
        for i in 0..300 {
            let id = format!("sub{i}");
            let before = rendezvous(&id, &all).unwrap().id.clone();
            let after = rendezvous(&id, &rest).unwrap().id.clone();
            if before != "b" {
                assert_eq!(before, after, "{id} moved although its owner stayed");
            } else {
                moved += 1;
            }
        }
        // Roughly a third each.
        assert!((60..140).contains(&moved), "{moved}");
    }

    #[test]
    fn ranked_starts_with_the_rendezvous_winner_and_moves_only_the_leavers_maps() {
        let all = vec![m("a"), m("b"), m("c"), m("d")];
        let rest = vec![m("a"), m("c"), m("d")];
        for i in 0..200 {
            let id = format!("map{i}");
            let r = ranked(&id, &all);
            assert_eq!(r[0].id, rendezvous(&id, &all).unwrap().id);
            // Placed on two: the pair changes only where "b" was in it.
            let two = |v: Vec<&Member>| v.iter().take(2).map(|m| m.id.clone()).collect::<Vec<_>>();
            let (before, after) = (two(ranked(&id, &all)), two(ranked(&id, &rest)));
            if !before.contains(&"b".to_owned()) {
                assert_eq!(before, after, "{id}");
            } else {
                let kept: Vec<_> = before.iter().filter(|x| *x != "b").collect();
                assert!(kept.iter().all(|k| after.contains(k)), "{id}");
            }
        }
    }
}
