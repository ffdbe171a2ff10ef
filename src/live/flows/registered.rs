//! The fields, indexed by id and by map (a patch looks only at its own map's fields).

use std::collections::HashMap;
use std::sync::Arc;

use super::Flow;

/// The fields, by id and by map.
#[derive(Default)]
pub(super) struct Registered {
    pub(super) by_id: HashMap<String, Arc<Flow>>,
    pub(super) by_map: HashMap<String, HashMap<String, Arc<Flow>>>,
}

impl Registered {
    pub(super) fn len(&self) -> usize {
        self.by_id.len()
    }

    pub(super) fn get(&self, id: &str) -> Option<&Arc<Flow>> {
        self.by_id.get(id)
    }

    pub(super) fn contains_key(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    pub(super) fn insert(&mut self, flow: Arc<Flow>) {
        let of_map = self.by_map.entry(flow.map.clone()).or_default();
        of_map.insert(flow.id.clone(), Arc::clone(&flow));
        self.by_id.insert(flow.id.clone(), flow);
    }

    pub(super) fn remove(&mut self, id: &str) -> Option<Arc<Flow>> {
        let flow = self.by_id.remove(id)?;
        if let Some(of_map) = self.by_map.get_mut(&flow.map) {
            of_map.remove(id);
            if of_map.is_empty() {
                self.by_map.remove(&flow.map);
            }
        }
        Some(flow)
    }

    /// The fields of `map`.
    pub(super) fn of_map(&self, map: &str) -> impl Iterator<Item = &Arc<Flow>> {
        self.by_map.get(map).into_iter().flat_map(|m| m.values())
    }

    /// Removes every field of `map`.
    pub(super) fn remove_map(&mut self, map: &str) -> Vec<Arc<Flow>> {
        let Some(of_map) = self.by_map.remove(map) else {
            return Vec::new();
        };
        for id in of_map.keys() {
            self.by_id.remove(id);
        }
        of_map.into_values().collect()
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &Arc<Flow>> {
        self.by_id.values()
    }
}
