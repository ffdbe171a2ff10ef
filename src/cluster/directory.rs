//! Who holds what: the questions the HTTP edge asks before it serves a request here or
//! forwards it (`crate::http::gate`), answered from this replica's records and membership.
//! Without a cluster nothing is held elsewhere.

#[cfg(feature = "nats")]
use super::flows::FlowKind;
#[cfg(feature = "nats")]
use super::records::{Kind, Records, forget};
#[cfg(feature = "nats")]
use super::subs::SubKind;
use super::{Cluster, ClusterError, Held, Member, View};

impl Cluster {
    /// The view of `id` (of kind `held`) when this replica holds it.
    pub fn view(&self, held: Held, id: &str) -> Option<View> {
        #[cfg(feature = "nats")]
        if let Some(i) = &self.inner {
            return match held {
                Held::Subscription => i.subs.view(id),
                Held::FlowField => i.flows.view(id),
            };
        }
        let _ = (held, id);
        None
    }

    /// Forgets `id` (ended through this replica) and deletes its record.
    pub async fn forget(&self, held: Held, id: &str) {
        #[cfg(feature = "nats")]
        if let Some(i) = &self.inner {
            match held {
                Held::Subscription => forget::<SubKind>(i, id).await,
                Held::FlowField => forget::<FlowKind>(i, id).await,
            }
        }
        let _ = (held, id);
    }

    /// The owner its record names (`Ok(None)`: there is none): from the watcher's mirror
    /// of the records when `mirror` is set and it has one (no round trip to NATS), else
    /// from the bucket.
    pub async fn owner(
        &self,
        held: Held,
        id: &str,
        mirror: bool,
    ) -> Result<Option<String>, ClusterError> {
        #[cfg(feature = "nats")]
        if let Some(i) = &self.inner {
            return match held {
                Held::Subscription => owner_in(&i.subs, id, mirror).await,
                Held::FlowField => owner_in(&i.flows, id, mirror).await,
            };
        }
        let _ = (held, id, mirror);
        Ok(None)
    }

    /// The URL of live member `id`.
    pub fn member_url(&self, id: &str) -> Option<String> {
        #[cfg(feature = "nats")]
        if let Some(i) = &self.inner {
            return i.members.url(id);
        }
        let _ = id;
        None
    }

    /// Wakes the cluster's loop at once (an owner or holder was found gone).
    pub fn kick(&self) {
        #[cfg(feature = "nats")]
        if let Some(i) = &self.inner {
            i.kick.notify_one();
        }
    }

    /// The other live members whose heartbeat says they hold map `name`, best first by
    /// its rendezvous ranking.
    pub fn holders_of(&self, name: &str) -> Vec<Member> {
        #[cfg(feature = "nats")]
        if let Some(i) = &self.inner {
            let holding = i.members.holding(name);
            return super::members::ranked(name, &holding)
                .into_iter()
                .filter(|m| m.id != i.replica)
                .cloned()
                .collect();
        }
        let _ = name;
        Vec::new()
    }
}

#[cfg(feature = "nats")]
async fn owner_in<K: Kind>(
    records: &Records<K>,
    id: &str,
    mirror: bool,
) -> Result<Option<String>, ClusterError> {
    if mirror && let Some(r) = records.mirrored(id) {
        return Ok(Some(r.owner));
    }
    Ok(records.record(id).await?.map(|r| r.owner))
}
