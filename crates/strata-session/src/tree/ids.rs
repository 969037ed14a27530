//! The id table of a [`Tree`](super::Tree): ids to node indices without a second copy of the ids.

use super::*;

/// Id → node index, as an open-addressing table of node indices (4 bytes a slot): the ids
/// themselves live in the nodes, so the table adds about 1 MB per 100,000 entries.
#[derive(Debug, Clone)]
pub(super) struct IdIndex {
    pub(super) slots: Vec<u32>,
    pub(super) len: usize,
}

impl IdIndex {
    pub(super) fn with_capacity(entries: usize) -> Self {
        Self {
            slots: vec![NONE; Self::slot_count(entries)],
            len: 0,
        }
    }

    /// The table size for `entries` ids: at most half full.
    pub(super) fn slot_count(entries: usize) -> usize {
        (entries.max(8) * 2).next_power_of_two()
    }

    /// The index of `nodes` when no two share an id (`None` otherwise: the full build
    /// reports those), for a sidecar to store.
    pub(super) fn of_distinct(nodes: &[Node]) -> Option<Self> {
        let mut by_id = Self::with_capacity(nodes.len());
        for index in 0..nodes.len() as u32 {
            if by_id.insert(nodes, index).is_some() {
                return None;
            }
        }
        Some(by_id)
    }

    /// An index of `entries` nodes from its stored slots: `None` unless the table has the
    /// size [`Self::with_capacity`] gives and as many used slots as nodes, each naming a
    /// node. (The sidecar's hash already vouches for the bytes; this keeps a lookup from
    /// ever indexing past the nodes.)
    pub(super) fn from_slots(slots: Vec<u32>, entries: usize) -> Option<Self> {
        if slots.len() != Self::slot_count(entries) {
            return None;
        }
        let used = slots.iter().filter(|&&slot| slot != NONE).count();
        let in_range = slots
            .iter()
            .all(|&slot| slot == NONE || (slot as usize) < entries);
        (used == entries && in_range).then_some(Self {
            slots,
            len: entries,
        })
    }

    /// A fixed value of the slot hash: a stored table is only taken by a build that hashes
    /// ids as the one that stored it.
    pub(super) fn hash_fingerprint() -> u64 {
        let mut hasher = IdHasher::default();
        std::hash::Hasher::write(&mut hasher, b"strata id table");
        std::hash::Hasher::finish(&hasher)
    }

    pub(super) fn slot_of(&self, id: &[u8]) -> usize {
        let mut hasher = IdHasher::default();
        std::hash::Hasher::write(&mut hasher, id);
        // The multiplicative hash puts its best bits high.
        let hash = std::hash::Hasher::finish(&hasher);
        (hash >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    pub(super) fn get(&self, nodes: &[Node], id: &str) -> Option<u32> {
        let id = id.as_bytes();
        let mask = self.slots.len() - 1;
        let mut slot = self.slot_of(id);
        loop {
            let index = self.slots[slot];
            if index == NONE {
                return None;
            }
            if nodes[index as usize].id.as_bytes() == id {
                return Some(index);
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Maps the node's id to `index`; returns the index it replaced (a duplicate id).
    pub(super) fn insert(&mut self, nodes: &[Node], index: u32) -> Option<u32> {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow(nodes);
        }
        let id = nodes[index as usize].id.as_bytes();
        let mask = self.slots.len() - 1;
        let mut slot = self.slot_of(id);
        loop {
            let current = self.slots[slot];
            if current == NONE {
                self.slots[slot] = index;
                self.len += 1;
                return None;
            }
            if nodes[current as usize].id.as_bytes() == id {
                self.slots[slot] = index;
                return Some(current);
            }
            slot = (slot + 1) & mask;
        }
    }

    pub(super) fn grow(&mut self, nodes: &[Node]) {
        let doubled = self.slots.len() * 2;
        let old = std::mem::replace(&mut self.slots, vec![NONE; doubled]);
        self.len = 0;
        for index in old.into_iter().filter(|&index| index != NONE) {
            self.insert(nodes, index);
        }
    }
}
