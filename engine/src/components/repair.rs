//! Repairing the labels after a patch: blocked cells remove clusters (a component may
//! split), opened cells add them (components may merge); see the module docs of [`super`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasherDefault;
use std::sync::Arc;

use super::{CellHasher, Components};
use crate::grid::{NO_COMPONENT, Point};

type CellMap<V> = HashMap<u32, V, BuildHasherDefault<CellHasher>>;
type CellSet = HashSet<u32, BuildHasherDefault<CellHasher>>;

/// Search work (cells taken off a queue) after which a merge stops relabelling and aliases.
const MERGE_BUDGET: usize = 1 << 15;

impl Components {
    /// The labels after `changes` (cell, old cost, new cost; each cell once, old != new),
    /// repaired from this labelling. `None` when the repair would cost more than a fresh
    /// labelling (the caller then labels from scratch).
    pub(crate) fn repair(&self, changes: &[(Point, u8, u8)]) -> Option<Components> {
        let (w, h) = (self.labels.width(), self.labels.height());
        let cells = w as usize * h as usize;
        // Headroom for fresh labels, and a bounded alias table.
        if self.next as usize > u32::MAX as usize / 2 - changes.len() || self.alias.len() > cells {
            return None;
        }
        let mut r = Repair {
            c: self.clone(),
            width: w,
            height: h,
            budget: (cells / 8).max(1 << 14),
        };
        let removed: Vec<u32> = changes
            .iter()
            .filter(|&&(_, old, new)| old != 0 && new == 0)
            .map(|&(p, _, _)| p.y * w + p.x)
            .collect();
        let added: Vec<u32> = changes
            .iter()
            .filter(|&&(_, old, new)| old == 0 && new != 0)
            .map(|&(p, _, _)| p.y * w + p.x)
            .collect();
        for cluster in r.clusters(&removed) {
            r.remove_cluster(&cluster)?;
        }
        for cluster in r.clusters(&added) {
            r.add_cluster(&cluster);
        }
        Some(r.c)
    }
}

/// Repair state: the labels being rewritten and the search work still allowed.
struct Repair {
    c: Components,
    width: u32,
    height: u32,
    budget: usize,
}

impl Repair {
    #[inline]
    fn xy(&self, i: u32) -> (u32, u32) {
        (i % self.width, i / self.width)
    }

    /// Canonical label of cell index `i`.
    #[inline]
    fn lab(&self, i: u32) -> u32 {
        let (x, y) = self.xy(i);
        self.c.label(x, y)
    }

    #[inline]
    fn set(&mut self, i: u32, label: u32) {
        let (x, y) = self.xy(i);
        self.c.labels.set(x, y, label);
    }

    /// The on-map 4-neighbours of cell index `i`.
    #[inline]
    fn neighbours(&self, i: u32) -> impl Iterator<Item = u32> + use<> {
        let (x, y) = self.xy(i);
        let w = self.width;
        let mut out = [u32::MAX; 4];
        if y > 0 {
            out[0] = i - w;
        }
        if x + 1 < w {
            out[1] = i + 1;
        }
        if y + 1 < self.height {
            out[2] = i + w;
        }
        if x > 0 {
            out[3] = i - 1;
        }
        out.into_iter().filter(|&n| n != u32::MAX)
    }

    fn fresh(&mut self) -> u32 {
        let l = self.c.next;
        self.c.next += 1;
        l
    }

    /// Spends search work; `None` once the budget is gone.
    #[inline]
    fn spend(&mut self) -> Option<()> {
        self.budget = self.budget.checked_sub(1)?;
        Some(())
    }

    /// 4-connected groups of `cells`.
    fn clusters(&self, cells: &[u32]) -> Vec<Vec<u32>> {
        if cells.len() == 1 {
            return vec![cells.to_vec()];
        }
        let mut left: CellSet = cells.iter().copied().collect();
        let mut out = Vec::new();
        for &c in cells {
            if !left.remove(&c) {
                continue;
            }
            let mut group = vec![c];
            let mut k = 0;
            while k < group.len() {
                let g = group[k];
                k += 1;
                for n in self.neighbours(g) {
                    if left.remove(&n) {
                        group.push(n);
                    }
                }
            }
            out.push(group);
        }
        out
    }

    /// Blocks a cluster of cells and splits the components it cut.
    fn remove_cluster(&mut self, cluster: &[u32]) -> Option<()> {
        let mut lost = Vec::new();
        for &i in cluster {
            lost.push(self.lab(i));
            self.set(i, NO_COMPONENT);
        }
        lost.sort_unstable();
        lost.dedup();
        let mut seeds: Vec<(u32, u32)> = Vec::new();
        for &i in cluster {
            for n in self.neighbours(i) {
                let l = self.lab(n);
                if l != NO_COMPONENT {
                    seeds.push((l, n));
                }
            }
        }
        seeds.sort_unstable();
        seeds.dedup();
        // A component with no open cell left beside the cluster lay entirely inside it.
        for l in &lost {
            if seeds.binary_search_by_key(l, |s| s.0).is_err() {
                self.c.count -= 1;
            }
        }
        let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0, 0);
        for &i in cluster {
            let (x, y) = self.xy(i);
            (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
        }
        let window = (
            x0.saturating_sub(2),
            y0.saturating_sub(2),
            (x1 + 2).min(self.width - 1),
            (y1 + 2).min(self.height - 1),
        );
        for group in seeds.chunk_by(|a, b| a.0 == b.0) {
            if group.len() > 1 {
                let label = group[0].0;
                let seeds: Vec<u32> = group.iter().map(|s| s.1).collect();
                self.split(label, &seeds, window)?;
            }
        }
        Some(())
    }

    /// Relabels the pieces component `label` fell into, all of which contain a seed.
    fn split(&mut self, label: u32, seeds: &[u32], window: (u32, u32, u32, u32)) -> Option<()> {
        // Local check: which seeds connect inside the window.
        let (wx0, wy0, wx1, wy1) = window;
        let mut groups: Vec<Vec<u32>> = Vec::new();
        let seed_set: CellSet = seeds.iter().copied().collect();
        let mut seen = CellSet::default();
        for &s in seeds {
            if seen.contains(&s) {
                continue;
            }
            let mut members = vec![s];
            seen.insert(s);
            let mut queue = vec![s];
            while let Some(c) = queue.pop() {
                self.spend()?;
                for n in self.neighbours(c) {
                    let (x, y) = self.xy(n);
                    if x < wx0 || x > wx1 || y < wy0 || y > wy1 || self.lab(n) != label {
                        continue;
                    }
                    if seen.insert(n) {
                        queue.push(n);
                        if seed_set.contains(&n) {
                            members.push(n);
                        }
                    }
                }
            }
            groups.push(members);
        }
        if groups.len() == 1 {
            return Some(());
        }
        self.separate(label, groups)
    }

    /// Interleaved searches from groups of seeds of one label (see the module docs).
    fn separate(&mut self, label: u32, groups: Vec<Vec<u32>>) -> Option<()> {
        struct Side {
            queue: VecDeque<u32>,
            cells: Vec<u32>,
        }
        let mut owner: CellMap<usize> = CellMap::default();
        let mut parent: Vec<usize> = (0..groups.len()).collect();
        let mut sides: Vec<Side> = Vec::with_capacity(groups.len());
        for (g, members) in groups.into_iter().enumerate() {
            for &m in &members {
                owner.insert(m, g);
            }
            sides.push(Side {
                queue: members.iter().copied().collect(),
                cells: members,
            });
        }
        fn find(parent: &mut [usize], mut s: usize) -> usize {
            while parent[s] != s {
                parent[s] = parent[parent[s]];
                s = parent[s];
            }
            s
        }
        let mut active: Vec<usize> = (0..sides.len()).collect();
        let mut finished: Vec<usize> = Vec::new();
        while active.len() > 1 {
            let mut k = 0;
            while k < active.len() && active.len() > 1 {
                let s = active[k];
                let Some(c) = sides[s].queue.pop_front() else {
                    finished.push(s);
                    active.remove(k);
                    continue;
                };
                self.spend()?;
                for n in self.neighbours(c) {
                    if self.lab(n) != label {
                        continue;
                    }
                    match owner.get(&n) {
                        None => {
                            owner.insert(n, s);
                            sides[s].queue.push_back(n);
                            sides[s].cells.push(n);
                        }
                        Some(&o) => {
                            let r = find(&mut parent, o);
                            if r != s {
                                // Same piece: fold side r into s.
                                parent[r] = s;
                                let mut taken = std::mem::take(&mut sides[r].queue);
                                sides[s].queue.append(&mut taken);
                                let mut taken = std::mem::take(&mut sides[r].cells);
                                sides[s].cells.append(&mut taken);
                                let j = active.iter().position(|&a| a == r)?;
                                active.remove(j);
                                if j < k {
                                    k -= 1;
                                }
                            }
                        }
                    }
                }
                if sides[s].queue.is_empty() {
                    finished.push(s);
                    active.remove(k);
                } else {
                    k += 1;
                }
            }
        }
        let keep = match active.first() {
            Some(&a) => a,
            None => *finished.iter().max_by_key(|&&f| sides[f].cells.len())?,
        };
        for f in finished {
            if f == keep {
                continue;
            }
            let l = self.fresh();
            self.c.count += 1;
            for &c in &std::mem::take(&mut sides[f].cells) {
                self.set(c, l);
            }
        }
        Some(())
    }

    /// Opens a cluster of cells, joining the components around it.
    fn add_cluster(&mut self, cluster: &[u32]) {
        let mut reps: Vec<(u32, u32)> = Vec::new();
        for &i in cluster {
            for n in self.neighbours(i) {
                let l = self.lab(n);
                if l != NO_COMPONENT && !reps.iter().any(|r| r.0 == l) {
                    reps.push((l, n));
                }
            }
        }
        let label = match reps.len() {
            0 => {
                self.c.count += 1;
                self.fresh()
            }
            1 => reps[0].0,
            n => {
                self.c.count -= n as u32 - 1;
                self.merge(&reps)
            }
        };
        for &i in cluster {
            self.set(i, label);
        }
    }

    /// Merges the components `reps` (label, one of its cells) into one; returns its label.
    fn merge(&mut self, reps: &[(u32, u32)]) -> u32 {
        struct Side {
            label: u32,
            queue: VecDeque<u32>,
            cells: Vec<u32>,
        }
        let mut seen = CellSet::default();
        let mut sides: Vec<Side> = reps
            .iter()
            .map(|&(label, cell)| {
                seen.insert(cell);
                Side {
                    label,
                    queue: VecDeque::from([cell]),
                    cells: vec![cell],
                }
            })
            .collect();
        let mut active: Vec<usize> = (0..sides.len()).collect();
        let mut finished = Vec::new();
        let mut work = 0usize;
        while active.len() > 1 && work < MERGE_BUDGET {
            let mut k = 0;
            while k < active.len() && active.len() > 1 {
                let s = active[k];
                let c = sides[s]
                    .queue
                    .pop_front()
                    .expect("active sides have a frontier");
                work += 1;
                for n in self.neighbours(c) {
                    if self.lab(n) == sides[s].label && seen.insert(n) {
                        sides[s].queue.push_back(n);
                        sides[s].cells.push(n);
                    }
                }
                if sides[s].queue.is_empty() {
                    finished.push(s);
                    active.remove(k);
                } else {
                    k += 1;
                }
            }
        }
        // The side to keep: the one still growing, else the largest.
        let keep = *active
            .iter()
            .chain(&finished)
            .max_by_key(|&&s| (active.contains(&s), sides[s].cells.len()))
            .expect("at least two sides");
        let target = sides[keep].label;
        for &f in &finished {
            if f != keep {
                for &c in &std::mem::take(&mut sides[f].cells) {
                    self.set(c, target);
                }
            }
        }
        for &a in &active {
            if a != keep {
                self.alias(sides[a].label, target);
            }
        }
        target
    }

    /// Makes canonical label `from` an alias of canonical label `to`.
    fn alias(&mut self, from: u32, to: u32) {
        let table = Arc::make_mut(&mut self.c.alias);
        if table.len() <= from as usize {
            let n = table.len() as u32;
            table.extend(n..=from);
        }
        for e in table.iter_mut() {
            if *e == from {
                *e = to;
            }
        }
    }
}
