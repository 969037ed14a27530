//! ① branch: the path from a leaf to the root, cut at the latest compaction as Pi cuts it.

use std::ops::Range;
use std::sync::Arc;

use serde::Serialize;
use strata_session::{Diagnostic, Entry, EntryId, EntryKind, MessageRead, Role};

use crate::error::ContextError;
use crate::source::{EntrySource, LoadedEntry, SourcePath};

/// The default thinking level when the path sets none (Pi's `"off"`).
pub const DEFAULT_THINKING_LEVEL: &str = "off";

/// One entry of a chain.
#[derive(Debug, Clone)]
pub struct Link {
    /// The entry's id.
    pub id: EntryId,
    /// The entry, parsed.
    pub loaded: Arc<LoadedEntry>,
}

impl Link {
    /// The parsed entry.
    pub fn entry(&self) -> &Entry {
        &self.loaded.entry
    }
}

/// The model a path selects: the last `model_change` or assistant message on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRef {
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model_id: String,
}

/// The entries a context is built from: `[compaction?, kept…, after…]`, plus the settings
/// resolved over the whole path.
#[derive(Debug, Clone)]
pub struct Chain {
    /// The leaf the chain ends at (`None`: before the first entry, an empty chain).
    pub leaf: Option<EntryId>,
    /// The entries in context order; when `compacted` is set, the first one is the compaction.
    pub links: Vec<Link>,
    /// Whether `links[0]` is the compaction the chain is cut at.
    pub compacted: bool,
    /// How many links after the compaction were kept from before it (`links[1..=kept]`).
    pub kept: usize,
    /// System messages (and strata's earlier `system` entries) on the path before the
    /// compaction, oldest first. Read only when the compaction carries no checkpoint, to fold
    /// them into the chain's start.
    pub before_cut_system: Vec<Link>,
    /// The last `model_change` or assistant message on the whole path.
    pub model: Option<ModelRef>,
    /// The last `thinking_level_change` on the whole path, else `"off"`.
    pub thinking_level: String,
    /// Entries on the path that are JSON but not valid entries of their type (a field of the
    /// wrong type): left out of the chain like a torn line, each reported once, by line.
    pub skipped: Vec<Diagnostic>,
}

impl Chain {
    /// The chain of no entries (leaf before the first entry).
    pub fn empty() -> Self {
        Self {
            leaf: None,
            links: Vec::new(),
            compacted: false,
            kept: 0,
            before_cut_system: Vec::new(),
            model: None,
            thinking_level: DEFAULT_THINKING_LEVEL.to_owned(),
            skipped: Vec::new(),
        }
    }

    /// The compaction the chain starts with.
    pub fn compaction(&self) -> Option<&Link> {
        if self.compacted {
            self.links.first()
        } else {
            None
        }
    }
}

/// Builds the chain ending at `leaf` (`None`: an empty chain), exactly as Pi's
/// `buildSessionContext` orders it.
pub fn branch(source: &impl EntrySource, leaf: Option<&EntryId>) -> Result<Chain, ContextError> {
    branch_with(source, leaf, MessageRead::Parse)
}

/// [`branch`], with the chain's entries loaded as `read` says ([`EntrySource::load_path`]):
/// [`MessageRead::KeepJson`] for a context that is only printed.
pub fn branch_with(
    source: &impl EntrySource,
    leaf: Option<&EntryId>,
    read: MessageRead,
) -> Result<Chain, ContextError> {
    let Some(leaf) = leaf else {
        return Ok(Chain::empty());
    };
    let path = source.path_kinds(leaf)?;
    let kinds = path.kinds();
    let mut loader = Loader {
        source,
        read,
        skipped: Vec::new(),
    };

    let model = resolve_model(&mut loader, &path)?;
    let thinking_level = resolve_thinking(&mut loader, &path)?;

    // The latest compaction that reads; one that does not is skipped like any other entry.
    let mut search = kinds.len();
    let found = loop {
        let Some(cut) = kinds[..search]
            .iter()
            .rposition(|kind| *kind == EntryKind::Compaction)
        else {
            break None;
        };
        match loader.load(&path.id(cut))? {
            Some(compaction) => break Some((cut, compaction)),
            None => search = cut,
        }
    };
    let Some((cut, compaction)) = found else {
        let links = loader.load_range(&path, 0..path.len())?;
        return Ok(Chain {
            leaf: Some(leaf.clone()),
            links,
            compacted: false,
            kept: 0,
            before_cut_system: Vec::new(),
            model,
            thinking_level,
            skipped: loader.finish(),
        });
    };
    let Entry::Compaction(compaction_entry) = compaction.entry() else {
        return Err(ContextError::KindMismatch { id: path.id(cut) });
    };
    // Pi keeps from the first path entry before the compaction whose id matches; none found
    // keeps nothing.
    let kept_from = compaction_entry
        .first_kept_entry_id
        .as_ref()
        .and_then(|first| path.first_position_of(first, cut))
        .unwrap_or(cut);
    // Pi 1.x's checkpoint (or strata's earlier snapshot) holds the whole start; without one,
    // the system messages before the cut are folded into it.
    let needs_fold = compaction_entry.system_message.is_none()
        && (compaction_entry.system.is_none() || compaction_entry.tools.is_none());
    let before_cut_system = if needs_fold {
        let ids: Vec<EntryId> = kinds[..cut]
            .iter()
            .enumerate()
            .filter(|(_, kind)| {
                matches!(kind, EntryKind::System | EntryKind::Message(Role::System))
            })
            .map(|(position, _)| path.id(position))
            .collect();
        loader.load_all(&ids)?
    } else {
        Vec::new()
    };

    let mut links = Vec::with_capacity(1 + path.len() - kept_from);
    links.push(compaction);
    let kept = loader.load_range(&path, kept_from..cut)?;
    let kept_count = kept.len();
    links.extend(kept);
    links.extend(loader.load_range(&path, cut + 1..path.len())?);
    Ok(Chain {
        leaf: Some(leaf.clone()),
        links,
        compacted: true,
        kept: kept_count,
        before_cut_system,
        model,
        thinking_level,
        skipped: loader.finish(),
    })
}

/// Ids from the root down to `leaf`, following `parentId` until it is missing or unknown.
pub fn path_to_root(
    source: &impl EntrySource,
    leaf: &EntryId,
) -> Result<Vec<EntryId>, ContextError> {
    Ok(source.path_ids_and_kinds(leaf)?.0)
}

/// Loads chain entries, skipping (and noting) those that are not valid entries of their type.
struct Loader<'a, S> {
    source: &'a S,
    /// How the chain's runs of entries are read (single entries are always parsed).
    read: MessageRead,
    skipped: Vec<Diagnostic>,
}

impl<S: EntrySource> Loader<'_, S> {
    /// The entry, or `None` when it does not parse as its type (noted in `skipped`). Every
    /// other failure (the file unreadable, the entry gone) is an error.
    fn load(&mut self, id: &EntryId) -> Result<Option<Link>, ContextError> {
        self.link(id, self.source.load(id))
    }

    fn link(
        &mut self,
        id: &EntryId,
        loaded: Result<Arc<LoadedEntry>, ContextError>,
    ) -> Result<Option<Link>, ContextError> {
        match loaded {
            Ok(loaded) => Ok(Some(Link {
                id: id.clone(),
                loaded,
            })),
            Err(ContextError::Load { source, .. }) if source.diagnostic().is_some() => {
                self.skipped.extend(source.diagnostic());
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }

    fn load_all(&mut self, ids: &[EntryId]) -> Result<Vec<Link>, ContextError> {
        let mut links = Vec::with_capacity(ids.len());
        for (id, loaded) in ids.iter().zip(self.source.load_many(ids)) {
            links.extend(self.link(id, loaded)?);
        }
        Ok(links)
    }

    /// The entries at `positions` of `path`, read as the loader's `read` says.
    fn load_range(
        &mut self,
        path: &SourcePath<'_>,
        positions: Range<usize>,
    ) -> Result<Vec<Link>, ContextError> {
        let loaded = self.source.load_path(path, positions.clone(), self.read);
        let mut links = Vec::with_capacity(loaded.len());
        for (position, loaded) in positions.zip(loaded) {
            links.extend(self.link(&path.id(position), loaded)?);
        }
        Ok(links)
    }

    /// The skipped entries, each once (the model and thinking walks may read one twice), in
    /// file order.
    fn finish(mut self) -> Vec<Diagnostic> {
        self.skipped.sort_by_key(|diagnostic| diagnostic.line);
        self.skipped.dedup();
        self.skipped
    }
}

/// The last `model_change` or assistant message on the path (walked from the leaf, so only
/// the entries after the answer are read).
fn resolve_model<S: EntrySource>(
    loader: &mut Loader<'_, S>,
    path: &SourcePath<'_>,
) -> Result<Option<ModelRef>, ContextError> {
    for (position, kind) in path.kinds().iter().enumerate().rev() {
        match kind {
            EntryKind::ModelChange => {
                if let Some(link) = loader.load(&path.id(position))?
                    && let Entry::ModelChange(change) = link.entry()
                {
                    return Ok(Some(ModelRef {
                        provider: change.provider.clone(),
                        model_id: change.model_id.clone(),
                    }));
                }
            }
            // The fast scan may not see a role; such messages are parsed to find out.
            EntryKind::Message(Role::Assistant | Role::Other) => {
                if let Some(link) = loader.load(&path.id(position))?
                    && let Entry::Message(message) = link.entry()
                    && let strata_session::AgentMessage::Assistant(assistant) = &*message.message
                {
                    return Ok(Some(ModelRef {
                        provider: assistant.provider.clone(),
                        model_id: assistant.model.clone(),
                    }));
                }
            }
            _ => {}
        }
    }
    Ok(None)
}

/// The last `thinking_level_change` on the path, else `"off"`.
fn resolve_thinking<S: EntrySource>(
    loader: &mut Loader<'_, S>,
    path: &SourcePath<'_>,
) -> Result<String, ContextError> {
    for (position, kind) in path.kinds().iter().enumerate().rev() {
        if *kind == EntryKind::ThinkingLevelChange
            && let Some(link) = loader.load(&path.id(position))?
            && let Entry::ThinkingLevelChange(change) = link.entry()
        {
            return Ok(change.thinking_level.clone());
        }
    }
    Ok(DEFAULT_THINKING_LEVEL.to_owned())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;

    /// Entries held in memory, parent links as written (cycles allowed).
    struct Memory(HashMap<EntryId, Entry>);

    impl Memory {
        fn new(entries: &[serde_json::Value]) -> Self {
            let parsed = entries.iter().map(|value| {
                let serde_json::Value::Object(map) = value.clone() else {
                    panic!("object")
                };
                let entry = Entry::from_json_map(map).expect("entry");
                (entry.id().clone(), entry)
            });
            Self(parsed.collect())
        }
    }

    impl EntrySource for Memory {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn contains(&self, id: &EntryId) -> bool {
            self.0.contains_key(id)
        }
        fn parent_of(&self, id: &EntryId) -> Option<EntryId> {
            let parent = self.0.get(id)?.parent_id()?;
            self.0.contains_key(parent).then(|| parent.clone())
        }
        fn kind_of(&self, id: &EntryId) -> Option<EntryKind> {
            self.0.get(id).map(Entry::kind)
        }
        fn load(&self, id: &EntryId) -> Result<Arc<LoadedEntry>, ContextError> {
            let entry = self
                .0
                .get(id)
                .cloned()
                .ok_or_else(|| ContextError::UnknownLeaf { id: id.clone() })?;
            Ok(Arc::new(LoadedEntry::new(entry)))
        }
    }

    fn change(id: &str, parent: Option<&str>, level: &str) -> serde_json::Value {
        json!({"type": "thinking_level_change", "id": id, "parentId": parent, "timestamp": "2026-01-01T00:00:00Z", "thinkingLevel": level})
    }

    #[test]
    fn a_parent_cycle_is_an_error_not_a_hang() {
        let memory = Memory::new(&[
            change("a", Some("b"), "low"),
            change("b", Some("a"), "high"),
        ]);
        let error = branch(&memory, Some(&EntryId::new("a"))).expect_err("cycle");
        assert!(matches!(error, ContextError::ParentCycle { .. }), "{error}");
    }

    #[test]
    fn a_missing_parent_ends_the_path_and_settings_come_from_the_last_change() {
        let memory = Memory::new(&[
            change("a", Some("gone"), "low"),
            change("b", Some("a"), "high"),
            change("c", Some("b"), "minimal"),
        ]);
        let chain = branch(&memory, Some(&EntryId::new("b"))).expect("chain");
        let ids: Vec<&str> = chain.links.iter().map(|link| link.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(chain.thinking_level, "high");
        assert_eq!(chain.model, None);
        assert!(!chain.compacted);
    }
}
