//! A goal group: the subscriptions of one map that share a goal and an agent size, their
//! shared [`GoalTree`], and the queue of work (patches, moves, joins) a worker drains in
//! order on the search pool.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pathd_engine::{Agent, GoalTree, Grid, Interest, Limits, Point, QueryError, Status};
use tokio::sync::{oneshot, watch};

use super::feed::{Event, Feed};
use super::reach::PathIndex;
use super::{Bucket, HubInner, Sub, random_hex128};

/// What makes subscriptions share a tree (the map is the group's too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct GroupKey {
    pub goal: Point,
    pub size: u32,
}

/// Work queued for a group, in order.
pub(super) enum Item {
    /// A patch that may matter: the map's grid after it, its version, the cells it
    /// changed, and whether any of them got cheaper (see [`GoalTree::apply`]).
    Patch {
        grid: Arc<Grid>,
        version: u64,
        changed: Arc<Vec<Point>>,
        lowered: bool,
    },
    /// A subscription's agent moved; the answer goes back to the waiting request.
    Move {
        sub: Arc<Sub>,
        to: Point,
        grid: Arc<Grid>,
        version: u64,
        reply: oneshot::Sender<Result<(), QueryError>>,
    },
    /// A new subscription at `start`: its first path, then it is a member. Its `limits`
    /// have no deadline yet: `timeout` starts when the group's job takes the item, as a
    /// query's starts on its worker.
    Join {
        start: Point,
        limits: Limits,
        timeout: std::time::Duration,
        grid: Arc<Grid>,
        version: u64,
        reply: oneshot::Sender<Result<Arc<Sub>, QueryError>>,
    },
}

/// The part of a group patches and the worker hand over to each other.
pub(super) struct Work {
    /// Queued or being drained by a worker (then it gets every patch; see module docs).
    pub scheduled: bool,
    /// What the group's tree and agents can be affected by, as of its last drain.
    pub interest: Interest,
    /// The buckets it is indexed under: an inclusive bucket rectangle.
    pub buckets: Option<(Bucket, Bucket)>,
    /// Pending items.
    pub queue: VecDeque<Item>,
}

/// The subscriptions sharing one goal tree.
pub(super) struct Group {
    pub key: GroupKey,
    /// The map it follows.
    pub map: String,
    /// Patches, moves and joins waiting for the worker (lock order: hub index, then this).
    pub work: Mutex<Work>,
    /// The shared search; locked by the worker draining the group (and memory readers).
    pub tree: Mutex<GoalTree>,
    /// The subscriptions, in joining order (short critical sections).
    pub members: Mutex<Vec<Arc<Sub>>>,
    /// The members by the tiles of their paths: who a raise-only patch reaches (module
    /// `reach`). Written by the worker after each member's change, read by patches on the
    /// write's path (short critical sections; lock order: members, then this).
    pub paths: Mutex<PathIndex>,
    /// The newest map version whose patch the group's repair has taken in: members it did
    /// not reach hold their state for it too (what `GET` shows as `map_version`).
    pub version: AtomicU64,
    /// Bytes of the tree and the agents as of the last drain (for the memory budget).
    pub bytes: AtomicUsize,
    /// The newest grid the tree has taken in and not yet settled on (see [`drain`]).
    unsettled: Mutex<Option<Arc<Grid>>>,
}

impl Group {
    pub fn new(map: &str, key: GroupKey, tree: GoalTree) -> Self {
        let bytes = tree.memory_bytes();
        Group {
            key,
            map: map.to_owned(),
            work: Mutex::new(Work {
                scheduled: false,
                interest: Interest::Everything,
                buckets: None,
                queue: VecDeque::new(),
            }),
            tree: Mutex::new(tree),
            members: Mutex::default(),
            paths: Mutex::default(),
            version: AtomicU64::new(0),
            bytes: AtomicUsize::new(bytes),
            unsettled: Mutex::new(None),
        }
    }

    fn members(&self) -> Vec<Arc<Sub>> {
        self.members.lock().expect("members lock").clone()
    }

    /// Lists `sub` under `agent`'s current path in [`Self::paths`], unless it left.
    fn index(&self, sub: &Arc<Sub>, agent: &Agent) {
        let path = agent.path().map(|(p, _)| p);
        self.paths.lock().expect("paths lock").update(sub, path);
    }

    /// Takes `sub` out of the group (members and path index).
    pub fn leave(&self, sub: &Arc<Sub>) {
        self.members
            .lock()
            .expect("members lock")
            .retain(|s| !Arc::ptr_eq(s, sub));
        self.paths.lock().expect("paths lock").remove(sub);
    }

    /// Forgets every member (the map ended).
    pub fn clear(&self) {
        self.members.lock().expect("members lock").clear();
        self.paths.lock().expect("paths lock").clear();
    }
}

/// Works off `group`'s queue on a pool thread: every patch reaches the tree once and then
/// the members it can reach ([`repair`]). With `settle` false that is all (the answers phase: the group stays
/// scheduled, so it keeps getting every patch); with `settle` true the tree is then settled
/// (the background part of a repair) and the group's new interest published. A job runs
/// the answers phase of all its groups before settling any, so one group's settling never
/// holds up another group's events.
pub(super) fn drain(hub: &HubInner, group: &Arc<Group>, settle: bool) {
    let span = tracing::info_span!("repair", map = %group.map, goal = %group.key.goal);
    let _enter = span.enter();
    loop {
        let items: Vec<Item> = group
            .work
            .lock()
            .expect("work lock")
            .queue
            .drain(..)
            .collect();
        if items.is_empty() {
            if !settle {
                // The region as of the answers, until the settling publishes its own: what
                // `affected_subscriptions` is counted by meanwhile (the group still takes
                // every patch).
                let now = interest(group, &group.tree.lock().expect("tree lock"));
                group.work.lock().expect("work lock").interest = now;
                return;
            }
            let unsettled = group.unsettled.lock().expect("unsettled lock").take();
            if let Some(grid) = unsettled {
                settle_tree(group, &mut group.tree.lock().expect("tree lock"), &grid);
                continue;
            }
            if super::finish(hub, group) {
                return;
            }
            continue;
        }
        let mut tree = group.tree.lock().expect("tree lock");
        let mut pending: Option<(Arc<Grid>, u64, Vec<Point>, bool)> = None;
        let mut newest: Option<Arc<Grid>> = None;
        for item in items {
            match item {
                Item::Patch {
                    grid,
                    version,
                    changed,
                    lowered,
                } => {
                    newest = Some(Arc::clone(&grid));
                    pending = Some(match pending.take() {
                        Some((_, _, mut cells, low)) => {
                            cells.extend_from_slice(&changed);
                            (grid, version, cells, low || lowered)
                        }
                        None => (grid, version, changed.to_vec(), lowered),
                    });
                }
                Item::Move {
                    sub,
                    to,
                    grid,
                    version,
                    reply,
                } => {
                    if let Some((g, v, cells, low)) = pending.take() {
                        repair(hub, group, &mut tree, &g, v, cells, low);
                    }
                    newest = Some(Arc::clone(&grid));
                    if sub.feed().is_closed() {
                        continue; // dropping `reply` answers "gone"
                    }
                    let started = Instant::now();
                    let mut agent = sub.agent.lock().expect("agent lock");
                    let out = agent.move_to(&mut tree, &grid, to);
                    sub.set_position(agent.start());
                    group.index(&sub, &agent);
                    let result = out.map(|o| {
                        record(hub, "move", started);
                        let reason = o.change.as_str();
                        if o.should_notify() {
                            publish(hub, &sub, &agent, version, reason);
                        } else {
                            // Along the path: no event, but the state starts further on.
                            sub.feed()
                                .refresh(Event::of(&sub.id, &agent, version, reason));
                        }
                    });
                    let _ = reply.send(result);
                }
                Item::Join {
                    start,
                    mut limits,
                    timeout,
                    grid,
                    version,
                    reply,
                } => {
                    limits.deadline = Instant::now().checked_add(timeout);
                    if let Some((g, v, cells, low)) = pending.take() {
                        repair(hub, group, &mut tree, &g, v, cells, low);
                    }
                    newest = Some(Arc::clone(&grid));
                    let joined = Agent::new(&mut tree, &grid, start, limits).map(|(agent, _)| {
                        let path = agent.path().map(|(p, _)| p.to_vec());
                        let sub = new_sub(hub, group, agent, version);
                        group
                            .members
                            .lock()
                            .expect("members lock")
                            .push(Arc::clone(&sub));
                        group
                            .paths
                            .lock()
                            .expect("paths lock")
                            .set(&sub, path.as_deref());
                        sub
                    });
                    let unclaimed = match joined {
                        Ok(sub) => reply.send(Ok(Arc::clone(&sub))).is_err().then_some(sub),
                        Err(e) => {
                            let _ = reply.send(Err(e));
                            None
                        }
                    };
                    if let Some(sub) = unclaimed {
                        // The request went away before it learnt the id: nobody can reach
                        // the subscription, so it ends here.
                        group.leave(&sub);
                    }
                }
            }
        }
        if let Some((g, v, cells, low)) = pending.take() {
            repair(hub, group, &mut tree, &g, v, cells, low);
        }
        if let Some(grid) = newest {
            *group.unsettled.lock().expect("unsettled lock") = Some(grid);
        }
    }
}

/// The background part: work off the queued raises and cover every member's start, after
/// the answers are out; then account the group's memory.
fn settle_tree(group: &Group, tree: &mut GoalTree, grid: &Grid) {
    let members = group.members();
    let target = members
        .iter()
        .map(|s| s.agent.lock().expect("agent lock").cost())
        .fold(0.0, f64::max);
    tree.settle(grid, target);
    let agents: usize = members
        .iter()
        .map(|s| s.agent.lock().expect("agent lock").memory_bytes())
        .sum();
    group
        .bytes
        .store(tree.memory_bytes() + agents, Ordering::Relaxed);
}

/// One patch (or several merged: their union of cells, the newest grid): the tree takes it
/// in once, then every member it can reach answers (after a raise-only patch those whose
/// paths pass by a changed cell, module `reach`; after a lowering one, all of them).
fn repair(
    hub: &HubInner,
    group: &Group,
    tree: &mut GoalTree,
    grid: &Grid,
    version: u64,
    mut cells: Vec<Point>,
    lowered: bool,
) {
    cells.sort_unstable_by_key(|p| (p.y, p.x));
    cells.dedup();
    tree.apply(grid, &cells, lowered);
    let reached = if lowered {
        group.members()
    } else {
        let probe = PathIndex::probe(&cells, group.key.size);
        group.paths.lock().expect("paths lock").reached(&probe)
    };
    // Nearest agents first: their repairs are short, and the longer ones after them stop
    // where they meet the paths learnt so far (`GoalTree::learn`).
    let mut members: Vec<(f64, Arc<Sub>)> = reached
        .into_iter()
        .map(|sub| {
            let cost = sub.agent.lock().expect("agent lock").cost();
            (cost, sub)
        })
        .collect();
    members.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (_, sub) in members {
        if sub.feed().is_closed() {
            continue;
        }
        let started = Instant::now();
        let mut agent = sub.agent.lock().expect("agent lock");
        let out = agent.on_patch(tree, grid, &cells, lowered);
        if out.path_changed {
            group.index(&sub, &agent);
        }
        if out.should_notify() {
            record(hub, out.change.as_str(), started);
            let reason = out.change.as_str();
            publish_event(hub, &sub, Event::repaired(&sub.id, &agent, version, reason));
        } else {
            if out.stats.expanded > 0 {
                record(hub, out.change.as_str(), started);
            }
            let mut f = sub.feed();
            f.version = f.version.max(version);
        }
    }
    // The members not reached hold their paths on this version too.
    group.version.fetch_max(version, Ordering::Relaxed);
}

fn new_sub(hub: &HubInner, group: &Arc<Group>, agent: Agent, version: u64) -> Arc<Sub> {
    let id = random_hex128();
    let first = Event::of(&id, &agent, version, "initial");
    let position = agent.start();
    let sub = Arc::new(Sub {
        id,
        secret: random_hex128(),
        map: group.map.clone(),
        goal: group.key.goal,
        group: Arc::clone(group),
        agent: Mutex::new(agent),
        feed: Mutex::new(Feed::new(first, hub.ring)),
        changed: watch::channel(1).0,
        lease: super::lease::Lease::new(),
        position: AtomicU64::new(0),
    });
    sub.set_position(position);
    sub
}

fn record(hub: &HubInner, kind: &'static str, started: Instant) {
    hub.repairs.fetch_add(1, Ordering::Relaxed);
    metrics::counter!("pathd_repairs_total", "change" => kind).increment(1);
    metrics::histogram!("pathd_repair_duration_seconds").record(started.elapsed().as_secs_f64());
}

/// Publishes `agent`'s state as `sub`'s next event: the one place a repaired event is
/// built.
fn publish(hub: &HubInner, sub: &Sub, agent: &Agent, version: u64, reason: &'static str) {
    publish_event(hub, sub, Event::of(&sub.id, agent, version, reason));
}

fn publish_event(hub: &HubInner, sub: &Sub, event: Event) {
    hub.events.fetch_add(1, Ordering::Relaxed);
    metrics::counter!("pathd_subscription_events_total").increment(1);
    sub.publish(event);
}

/// The interest of a group: its tree's, or everything while a member has no path (any
/// opening may give it one).
pub(super) fn interest(group: &Group, tree: &GoalTree) -> Interest {
    let all_found = group
        .members()
        .iter()
        .all(|s| s.agent.lock().expect("agent lock").status() == Status::Found);
    if all_found {
        tree.interest()
    } else {
        Interest::Everything
    }
}
