//! Incremental assembly: parsed entries cached by id, and an append to the leaf applied to the
//! previous context instead of rebuilding it.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use strata_session::{AgentMessage, Entry, EntryId, EntryKind};

use crate::chain::{ModelRef, branch};
use crate::error::ContextError;
use crate::flatten::{Context, flatten};
use crate::project::{Projection, SystemChange, project};
use crate::source::{EntrySource, LoadedEntry};

/// Builds contexts for one session, reusing work between calls.
///
/// Entries are immutable once written, so each is parsed once. When the requested leaf is a
/// child of the previous one and is neither a compaction nor a context edit, the previous
/// context is extended by that one entry; any other leaf is rebuilt from the cached entries.
/// Use one assembler per session: ids are only unique within a file.
#[derive(Debug, Default)]
pub struct Assembler {
    cache: RefCell<HashMap<EntryId, Arc<LoadedEntry>>>,
    built: Option<Built>,
}

#[derive(Debug)]
struct Built {
    context: Context,
    excluded: HashSet<EntryId>,
}

/// How the last call produced its context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assembly {
    /// Extended the previous context by the one entry appended after its leaf.
    Extended,
    /// Rebuilt through branch, project and flatten (from cached entries where possible).
    Rebuilt,
}

impl Assembler {
    /// An assembler with an empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The context for `leaf` (`None`: before the first entry), and how it was produced.
    pub fn context(
        &mut self,
        source: &impl EntrySource,
        leaf: Option<&EntryId>,
    ) -> Result<(&Context, Assembly), ContextError> {
        let cached = CachedSource {
            inner: source,
            cache: &self.cache,
        };
        let (built, assembly) = match try_extend(self.built.take(), &cached, leaf)? {
            Some(extended) => (extended, Assembly::Extended),
            None => {
                let projected = project(&branch(&cached, leaf)?);
                let excluded = projected.excluded.clone();
                (
                    Built {
                        context: flatten(projected),
                        excluded,
                    },
                    Assembly::Rebuilt,
                )
            }
        };
        let built = self.built.insert(built);
        Ok((&built.context, assembly))
    }

    /// How many parsed entries the cache holds.
    pub fn cached_entries(&self) -> usize {
        self.cache.borrow().len()
    }
}

/// The previous context extended to `leaf` when `leaf` is a plain child of its leaf (or is
/// its leaf); `None` when it needs a rebuild.
fn try_extend(
    built: Option<Built>,
    source: &impl EntrySource,
    leaf: Option<&EntryId>,
) -> Result<Option<Built>, ContextError> {
    let (Some(mut built), Some(leaf)) = (built, leaf) else {
        return Ok(None);
    };
    let Some(previous) = built.context.leaf.as_ref() else {
        return Ok(None);
    };
    if previous == leaf {
        return Ok(Some(built));
    }
    if source.parent_of(leaf).as_ref() != Some(previous) {
        return Ok(None);
    }
    // A compaction re-cuts the chain and a context edit re-projects it: rebuild those.
    match source.kind_of(leaf) {
        Some(EntryKind::Compaction | EntryKind::ContextEdit) | None => return Ok(None),
        Some(_) => {}
    }
    let loaded = match source.load(leaf) {
        Ok(loaded) => loaded,
        Err(ContextError::Load { source, .. }) if source.diagnostic().is_some() => {
            // Left out, as a rebuild leaves it out.
            built.context.skipped.extend(source.diagnostic());
            built.context.leaf = Some(leaf.clone());
            return Ok(Some(built));
        }
        Err(error) => return Err(error),
    };
    let context = &mut built.context;
    match &loaded.entry {
        Entry::ModelChange(change) => {
            context.model = Some(ModelRef {
                provider: change.provider.clone(),
                model_id: change.model_id.clone(),
            });
        }
        Entry::ThinkingLevelChange(change) => {
            context.thinking_level = change.thinking_level.clone()
        }
        Entry::Message(message) => {
            if let AgentMessage::Assistant(assistant) = &*message.message {
                context.model = Some(ModelRef {
                    provider: assistant.provider.clone(),
                    model_id: assistant.model.clone(),
                });
            }
        }
        _ => {}
    }
    if !built.excluded.contains(leaf) {
        let item = match (&loaded.entry, &loaded.message) {
            (Entry::System(system), _) => Some(Projection::System(SystemChange::of(system))),
            (Entry::Message(entry), message) => match &*entry.message {
                AgentMessage::System(system) => Some(Projection::System(SystemChange::of_message(
                    system,
                    message.clone(),
                ))),
                _ => message.clone().map(Projection::Message),
            },
            (_, message) => message.clone().map(Projection::Message),
        };
        if let Some(item) = item {
            context.push(leaf, item);
        }
    }
    context.leaf = Some(leaf.clone());
    Ok(Some(built))
}

/// An entry source that parses each entry once.
struct CachedSource<'a, S> {
    inner: &'a S,
    cache: &'a RefCell<HashMap<EntryId, Arc<LoadedEntry>>>,
}

impl<S: EntrySource> EntrySource for CachedSource<'_, S> {
    fn len(&self) -> usize {
        self.inner.len()
    }

    fn contains(&self, id: &EntryId) -> bool {
        self.inner.contains(id)
    }

    fn parent_of(&self, id: &EntryId) -> Option<EntryId> {
        self.inner.parent_of(id)
    }

    fn kind_of(&self, id: &EntryId) -> Option<EntryKind> {
        self.inner.kind_of(id)
    }

    fn path_from_root(&self, leaf: &EntryId) -> Result<Vec<(EntryId, EntryKind)>, ContextError> {
        self.inner.path_from_root(leaf)
    }

    fn path_ids_and_kinds(
        &self,
        leaf: &EntryId,
    ) -> Result<(Vec<EntryId>, Vec<EntryKind>), ContextError> {
        self.inner.path_ids_and_kinds(leaf)
    }

    fn path_kinds(&self, leaf: &EntryId) -> Result<crate::source::SourcePath<'_>, ContextError> {
        self.inner.path_kinds(leaf)
    }

    fn load(&self, id: &EntryId) -> Result<Arc<LoadedEntry>, ContextError> {
        if let Some(loaded) = self.cache.borrow().get(id) {
            return Ok(Arc::clone(loaded));
        }
        let loaded = self.inner.load(id)?;
        self.cache
            .borrow_mut()
            .insert(id.clone(), Arc::clone(&loaded));
        Ok(loaded)
    }

    fn load_many(&self, ids: &[EntryId]) -> Vec<Result<Arc<LoadedEntry>, ContextError>> {
        // The entries not cached yet are loaded together (in parallel where the source can).
        let missing: Vec<EntryId> = {
            let cache = self.cache.borrow();
            ids.iter()
                .filter(|id| !cache.contains_key(*id))
                .cloned()
                .collect()
        };
        let mut fresh = missing
            .iter()
            .zip(self.inner.load_many(&missing))
            .collect::<Vec<_>>()
            .into_iter();
        let mut cache = self.cache.borrow_mut();
        ids.iter()
            .map(|id| {
                if let Some(loaded) = cache.get(id) {
                    return Ok(Arc::clone(loaded));
                }
                // Not cached: the next of `missing` (same order as `ids`).
                match fresh.next() {
                    Some((fresh_id, Ok(loaded))) if fresh_id == id => {
                        cache.insert(id.clone(), Arc::clone(&loaded));
                        Ok(loaded)
                    }
                    Some((fresh_id, Err(error))) if fresh_id == id => Err(error),
                    _ => self.inner.load(id),
                }
            })
            .collect()
    }
}
