//! What context assembly reads from a session tree, and entries as loaded for it.

use std::ops::Range;
use std::sync::Arc;

use serde_json::Map;
use strata_session::{
    AgentMessage, BranchSummaryMessage, CompactionSummaryMessage, CustomMessage, Entry, EntryId,
    EntryKind, LazyMessage, MessageRead,
};

use crate::error::ContextError;
use crate::timestamp::epoch_millis_of;

/// Read access to a session tree: parent links and kinds by id, entries parsed on demand.
///
/// Context assembly reads only entries on the path it builds; an implementation may count or
/// refuse other reads (the property tests do).
pub trait EntrySource {
    /// How many entries the tree holds (bounds the walk against parent cycles).
    fn len(&self) -> usize;
    /// Whether the tree holds no entries.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Whether the tree holds `id`.
    fn contains(&self, id: &EntryId) -> bool;
    /// The parent of `id`: `None` for a root, an unknown id, or a parent not in the tree.
    fn parent_of(&self, id: &EntryId) -> Option<EntryId>;
    /// The entry's kind, known without parsing it.
    fn kind_of(&self, id: &EntryId) -> Option<EntryKind>;
    /// The entry, parsed, with the message it projects to.
    fn load(&self, id: &EntryId) -> Result<Arc<LoadedEntry>, ContextError>;

    /// [`Self::load`] of each id, in order. Sources that can parse several entries at once
    /// (on several threads) override it.
    fn load_many(&self, ids: &[EntryId]) -> Vec<Result<Arc<LoadedEntry>, ContextError>> {
        ids.iter().map(|id| self.load(id)).collect()
    }

    /// [`Self::load_many`] of the entries at `positions` of `path` (one of this source's
    /// paths). With [`MessageRead::KeepJson`] a source may leave messages as their line's JSON
    /// ([`LazyMessage::line_json`]), for a context that is only printed; the default parses.
    fn load_path(
        &self,
        path: &SourcePath<'_>,
        positions: Range<usize>,
        read: MessageRead,
    ) -> Vec<Result<Arc<LoadedEntry>, ContextError>> {
        let _ = read;
        self.load_many(&path.ids(positions))
    }

    /// The ids and kinds from the root down to `leaf`, following `parentId` until it is
    /// missing. Sources with a faster walk than one lookup per step override it.
    fn path_from_root(&self, leaf: &EntryId) -> Result<Vec<(EntryId, EntryKind)>, ContextError> {
        if !self.contains(leaf) {
            return Err(ContextError::UnknownLeaf { id: leaf.clone() });
        }
        let mut path = Vec::new();
        let mut current = Some(leaf.clone());
        while let Some(id) = current {
            if path.len() >= self.len() {
                return Err(ContextError::ParentCycle { id: leaf.clone() });
            }
            current = self.parent_of(&id);
            let kind = self.kind_of(&id).unwrap_or(EntryKind::Unknown);
            path.push((id, kind));
        }
        path.reverse();
        Ok(path)
    }

    /// [`Self::path_from_root`] as two lists, the ids and their kinds. Sources that can fill
    /// both in one walk override it: a long session's path is most of what a context build
    /// allocates before it parses, and the list of pairs was then copied into these two.
    fn path_ids_and_kinds(
        &self,
        leaf: &EntryId,
    ) -> Result<(Vec<EntryId>, Vec<EntryKind>), ContextError> {
        Ok(self.path_from_root(leaf)?.into_iter().unzip())
    }
    /// The path from the root down to `leaf` as a branch reads it: every entry's kind, and
    /// its id when asked. Sources that can name entries more cheaply than by id override it
    /// (a long session's path is walked whole for its kinds, but few of its ids are read).
    fn path_kinds(&self, leaf: &EntryId) -> Result<SourcePath<'_>, ContextError> {
        let (ids, kinds) = self.path_ids_and_kinds(leaf)?;
        Ok(SourcePath {
            kinds,
            ids: PathIds::Listed(ids),
        })
    }
}

/// A path from the root down to a leaf ([`EntrySource::path_kinds`]): each entry's kind, and its id
/// on demand.
pub struct SourcePath<'a> {
    kinds: Vec<EntryKind>,
    ids: PathIds<'a>,
}

/// How a [`SourcePath`] knows its entries' ids.
enum PathIds<'a> {
    /// Every id, root first.
    Listed(Vec<EntryId>),
    /// The entries' numbers in a tree's file order, root first.
    Numbered {
        tree: &'a strata_session::Tree,
        numbers: Vec<u32>,
    },
}

impl SourcePath<'_> {
    /// The kinds, root first.
    pub fn kinds(&self) -> &[EntryKind] {
        &self.kinds
    }

    /// How many entries the path holds.
    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    /// Whether the path is empty.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// The id of the entry at `position` (root first).
    ///
    /// # Panics
    ///
    /// When `position` is past the path's end, as indexing a list does.
    pub fn id(&self, position: usize) -> EntryId {
        match &self.ids {
            PathIds::Listed(ids) => ids[position].clone(),
            PathIds::Numbered { tree, numbers } => tree
                .get_index(numbers[position] as usize)
                .map(|entry| entry.id().clone())
                .unwrap_or_else(|| EntryId::new("")),
        }
    }

    /// The ids of the entries at `positions`, in order.
    pub fn ids(&self, positions: std::ops::Range<usize>) -> Vec<EntryId> {
        match &self.ids {
            PathIds::Listed(ids) => ids[positions].to_vec(),
            PathIds::Numbered { .. } => positions.map(|position| self.id(position)).collect(),
        }
    }

    /// The entries' numbers in `tree`'s file order, root first, when the path was walked
    /// on `tree`.
    fn numbers_in(&self, tree: &strata_session::Tree) -> Option<&[u32]> {
        match &self.ids {
            PathIds::Numbered {
                tree: walked,
                numbers,
            } if std::ptr::eq(*walked, tree) => Some(numbers),
            _ => None,
        }
    }

    /// The first position before `end` whose entry has the id `id`.
    pub fn first_position_of(&self, id: &EntryId, end: usize) -> Option<usize> {
        match &self.ids {
            PathIds::Listed(ids) => ids[..end].iter().position(|listed| listed == id),
            // One number per id unless some id repeats: then each entry's own id is compared.
            PathIds::Numbered { tree, numbers } if !tree.has_repeated_ids() => {
                let number = u32::try_from(tree.number_of(id.as_str())?).ok()?;
                numbers[..end].iter().position(|&listed| listed == number)
            }
            PathIds::Numbered { .. } => (0..end).find(|&position| self.id(position) == *id),
        }
    }
}

/// A parsed entry together with the message Pi would build from it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedEntry {
    /// The entry as parsed.
    pub entry: Entry,
    /// Its message, for entries that can produce one (`message`, `custom_message`, a
    /// non-empty `branch_summary`, `compaction`). Whether it is used depends on the chain.
    pub message: Option<LazyMessage>,
}

impl LoadedEntry {
    /// Wraps a parsed entry, building the message it projects to.
    pub fn new(entry: Entry) -> Self {
        let message = message_of(&entry);
        Self { entry, message }
    }
}

/// The message an entry becomes, as Pi's `buildSessionContext` builds it. A `message` entry's
/// is shared, not copied: it is most of what a large context holds.
fn message_of(entry: &Entry) -> Option<LazyMessage> {
    let millis = || epoch_millis_of(entry.timestamp());
    let built = match entry {
        Entry::Message(e) => return Some(e.message.clone()),
        Entry::CustomMessage(e) => AgentMessage::Custom(CustomMessage {
            custom_type: e.custom_type.clone(),
            content: e.content.clone(),
            display: e.display,
            details: e.details.clone(),
            timestamp: millis(),
            extra: Map::new(),
        }),
        Entry::BranchSummary(e) if !e.summary.is_empty() => {
            AgentMessage::BranchSummary(BranchSummaryMessage {
                summary: e.summary.clone(),
                from_id: e.from_id.clone(),
                timestamp: millis(),
                extra: Map::new(),
            })
        }
        Entry::Compaction(e) => AgentMessage::CompactionSummary(CompactionSummaryMessage {
            summary: e.summary.clone(),
            tokens_before: e.tokens_before,
            timestamp: millis(),
            extra: Map::new(),
        }),
        _ => return None,
    };
    Some(LazyMessage::new(built))
}

impl EntrySource for strata_session::Tree {
    fn len(&self) -> usize {
        strata_session::Tree::len(self)
    }

    fn contains(&self, id: &EntryId) -> bool {
        strata_session::Tree::contains(self, id.as_str())
    }

    fn parent_of(&self, id: &EntryId) -> Option<EntryId> {
        strata_session::Tree::parent_of(self, id.as_str()).cloned()
    }

    fn kind_of(&self, id: &EntryId) -> Option<EntryKind> {
        self.get(id.as_str()).map(|entry| entry.kind())
    }

    fn path_from_root(&self, leaf: &EntryId) -> Result<Vec<(EntryId, EntryKind)>, ContextError> {
        let (ids, kinds) = self.path_ids_and_kinds(leaf)?;
        Ok(ids.into_iter().zip(kinds).collect())
    }

    fn path_ids_and_kinds(
        &self,
        leaf: &EntryId,
    ) -> Result<(Vec<EntryId>, Vec<EntryKind>), ContextError> {
        let path = self.path_kinds(leaf)?;
        Ok((path.ids(0..path.len()), path.kinds))
    }

    fn path_kinds(&self, leaf: &EntryId) -> Result<SourcePath<'_>, ContextError> {
        if !strata_session::Tree::contains(self, leaf.as_str()) {
            return Err(ContextError::UnknownLeaf { id: leaf.clone() });
        }
        // Walks parent links by number: no id hashing per step, no id copied.
        let (numbers, kinds) = self
            .numbers_and_kinds_from_root(leaf.as_str(), strata_session::Tree::len(self))
            .ok_or_else(|| ContextError::ParentCycle { id: leaf.clone() })?;
        Ok(SourcePath {
            kinds,
            ids: PathIds::Numbered {
                tree: self,
                numbers,
            },
        })
    }

    fn load(&self, id: &EntryId) -> Result<Arc<LoadedEntry>, ContextError> {
        let entry = self
            .entry(id.as_str())
            .map_err(|source| ContextError::Load {
                id: id.clone(),
                source,
            })?;
        Ok(Arc::new(LoadedEntry::new(entry)))
    }

    fn load_many(&self, ids: &[EntryId]) -> Vec<Result<Arc<LoadedEntry>, ContextError>> {
        // Each part reads its lines in long runs (`Tree::entries`), not one read a line.
        in_parts(ids, |part: &[EntryId]| {
            self.entries(part)
                .into_iter()
                .zip(part)
                .map(|(entry, id)| {
                    entry
                        .map(|entry| Arc::new(LoadedEntry::new(entry)))
                        .map_err(|source| ContextError::Load {
                            id: id.clone(),
                            source,
                        })
                })
                .collect()
        })
    }

    fn load_path(
        &self,
        path: &SourcePath<'_>,
        positions: Range<usize>,
        read: MessageRead,
    ) -> Vec<Result<Arc<LoadedEntry>, ContextError>> {
        // A path walked on this tree names its entries by number: no id looked up again.
        let Some(numbers) = path
            .numbers_in(self)
            .and_then(|numbers| numbers.get(positions.clone()))
        else {
            return self.load_many(&path.ids(positions));
        };
        in_parts(numbers, |part: &[u32]| {
            self.entries_at(part, read)
                .into_iter()
                .zip(part)
                .map(|(entry, &number)| {
                    entry
                        .map(|entry| Arc::new(LoadedEntry::new(entry)))
                        .map_err(|source| ContextError::Load {
                            id: self
                                .get_index(number as usize)
                                .map_or_else(|| EntryId::new(""), |entry| entry.id().clone()),
                            source,
                        })
                })
                .collect()
        })
    }
}

/// `load` of consecutive chunks of `ids`, concatenated, the chunks taken by the machine's
/// processors in turn (all on this thread below [`PARALLEL_FROM`] ids).
fn in_parts<T: Sync, F>(ids: &[T], load: F) -> Vec<Result<Arc<LoadedEntry>, ContextError>>
where
    F: Fn(&[T]) -> Vec<Result<Arc<LoadedEntry>, ContextError>> + Sync,
{
    if ids.len() < PARALLEL_FROM {
        return load(ids);
    }
    crate::parallel::map_chunks(ids, CHUNK, crate::parallel::threads(), load)
}

/// Ids one thread parses at a time: lines enough for long reads, chunks enough that two
/// threads finish together.
const CHUNK: usize = 256;

/// Chains shorter than this are parsed on the calling thread: a thread costs more. Parsing the
/// chain's lines is most of building a large context, and each line parses on its own.
const PARALLEL_FROM: usize = 2 * CHUNK;

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}"#;

    fn tree(lines: &[(&str, &str)]) -> strata_session::Tree {
        let mut text = format!("{HEADER}\n");
        for (id, parent) in lines {
            text.push_str(&format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-15T10:00:01.000Z","message":{{"role":"user","content":"x","timestamp":1}}}}"#
            ));
            text.push('\n');
        }
        strata_session::Tree::parse(std::path::Path::new("t.jsonl"), text.into_bytes())
            .expect("tree")
            .0
    }

    /// The tree's numbered path against the same path listed by id.
    fn both<'a>(tree: &'a strata_session::Tree, leaf: &str) -> (SourcePath<'a>, SourcePath<'a>) {
        let leaf = EntryId::new(leaf);
        let numbered = tree.path_kinds(&leaf).expect("path");
        let (ids, kinds) = tree.path_ids_and_kinds(&leaf).expect("path");
        let listed = SourcePath {
            kinds,
            ids: PathIds::Listed(ids),
        };
        (numbered, listed)
    }

    #[test]
    fn a_numbered_path_names_and_finds_entries_as_a_listed_one() {
        let tree = tree(&[
            ("a1", "null"),
            ("b2", "\"a1\""),
            ("z9", "\"a1\""),
            ("c3", "\"b2\""),
        ]);
        let (numbered, listed) = both(&tree, "c3");
        assert_eq!(numbered.len(), 3);
        assert_eq!(numbered.kinds(), listed.kinds());
        assert_eq!(numbered.ids(0..3), listed.ids(0..3));
        assert_eq!(numbered.id(1).as_str(), "b2");
        for (id, end) in [
            ("a1", 3),
            ("b2", 3),
            ("b2", 1),
            ("c3", 3),
            ("z9", 3),
            ("gone", 3),
        ] {
            let id = EntryId::new(id);
            assert_eq!(
                numbered.first_position_of(&id, end),
                listed.first_position_of(&id, end),
                "{id} before {end}"
            );
        }
    }

    #[test]
    fn a_repeated_id_is_found_where_the_path_holds_it() {
        // The second `a1` wins lookups by id, but the path runs through the first.
        let tree = tree(&[
            ("a1", "null"),
            ("b2", "\"a1\""),
            ("a1", "null"),
            ("c3", "\"b2\""),
        ]);
        assert!(tree.has_repeated_ids());
        let (numbered, listed) = both(&tree, "c3");
        let a1 = EntryId::new("a1");
        assert_eq!(listed.first_position_of(&a1, 3), Some(0));
        assert_eq!(numbered.first_position_of(&a1, 3), Some(0));
    }
}
