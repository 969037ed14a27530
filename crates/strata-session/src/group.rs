//! Edit groups: the `context_edit` lines of one decision (a fold, a masking batch), which count
//! only together.
//!
//! A decision that omits a task's calls and results takes several lines; a kill or a full disk
//! between them would leave a tool result whose call is omitted, which providers refuse. So
//! each line of such a decision carries `strataGroup: {id, index, size}` (the first also the
//! `rest` of the plan), and readers apply a group's edits only when every member is on the
//! path. Pi ignores the field and applies each edit; the writer completes an unfinished group
//! at the tail by appending the rest of its plan ([`crate::Session::open_writable`]), so Pi
//! too reads the decision whole.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::entry::{ContextEditEntry, Replacement};
use crate::id::EntryId;

/// The field of a `context_edit` that marks it as a member of a group.
pub const GROUP_FIELD: &str = "strataGroup";

/// A `context_edit`'s membership in a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditGroup {
    /// The group's id, the same on every member.
    pub id: String,
    /// This member's place, from 0; members are written in order, each a child of the last.
    pub index: u32,
    /// How many members the group has.
    pub size: u32,
    /// On the first member only: the edits of members 1.., so that an unfinished group can
    /// be completed by appending them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rest: Vec<PlannedEdit>,
}

/// One edit of a group's plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedEdit {
    /// The entry edited.
    pub target_id: EntryId,
    /// `None` omits the target; `Some` replaces its content.
    pub replacement: Option<Replacement>,
}

impl ContextEditEntry {
    /// The group this edit belongs to, if it carries a well-formed `strataGroup`.
    pub fn group(&self) -> Option<EditGroup> {
        let value = self.extra.get(GROUP_FIELD)?;
        let group: EditGroup = serde_json::from_value(value.clone()).ok()?;
        (group.size > 0 && group.index < group.size).then_some(group)
    }
}

/// Which of a path's edits count (in their order): every edit outside a group, and the members
/// of the groups whose every member is among `edits`. An unfinished group (a write cut short)
/// counts for nothing; so does a member whose marker does not read.
pub fn counted_edits<'a>(
    edits: impl IntoIterator<Item = &'a ContextEditEntry>,
) -> Vec<&'a ContextEditEntry> {
    let edits: Vec<(&ContextEditEntry, Option<EditGroup>)> =
        edits.into_iter().map(|edit| (edit, edit.group())).collect();
    let mut seen: HashMap<&str, (u32, BTreeSet<u32>)> = HashMap::new();
    for (_, group) in &edits {
        if let Some(group) = group {
            let entry = seen
                .entry(group.id.as_str())
                .or_insert_with(|| (group.size, BTreeSet::new()));
            if entry.0 != group.size {
                // Members disagreeing on the size: never whole.
                entry.0 = 0;
            }
            entry.1.insert(group.index);
        }
    }
    let whole = |id: &str| {
        seen.get(id)
            .is_some_and(|(size, indices)| *size > 0 && indices.len() == *size as usize)
    };
    edits
        .iter()
        .filter(|(edit, group)| {
            edit.extra.get(GROUP_FIELD).is_none() || group.as_ref().is_some_and(|g| whole(&g.id))
        })
        .map(|(edit, _)| *edit)
        .collect()
}
