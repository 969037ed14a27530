//! A list to choose from, drawn over the transcript: sessions for `/resume`, entries for
//! `/tree`, models, thinking levels, tools.

use std::path::PathBuf;

use strata_session::EntryId;

/// What choosing an item does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickerKind {
    /// Resume the session file in the item's key.
    Resume,
    /// Move to the tree entry in the item's key.
    Tree,
    /// How to leave the branch: the item's key is `plain` or `summary`; the query is the
    /// summary's focus instructions.
    TreeSummary {
        /// The entry to move to (`None`: before the first entry).
        target: Option<EntryId>,
        /// Text to put in the editor (a user message chosen to be edited).
        editor_text: Option<String>,
    },
    /// Fork before the user message in the item's key (empty key: at the current position).
    Fork,
    /// Switch to the model in the item's key.
    Model,
    /// Set the thinking level in the item's key.
    Thinking,
    /// Toggle tools (items are checkboxes); Enter applies.
    Tools,
    /// View the child session in the item's key (`/agents`).
    Child,
    /// Change the setting in the item's key (`/settings`).
    Settings,
    /// After a move: restore the files to the entry now current (key `restore`) or keep them.
    RestoreFiles,
    /// Answer the gate's question (the item's key: `once`, `session`, `project`, `deny`);
    /// Esc refuses it.
    Permission {
        /// The question.
        request: strata_runtime::permissions::PermissionRequest,
    },
    /// Answer an extension's `ui/confirm` (key `yes` / `no`) or `ui/select` (the option's
    /// index); Esc answers nothing.
    ExtensionAsk,
}

/// One row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickerItem {
    /// What the row says.
    pub label: String,
    /// Dimmer text after the label.
    pub detail: String,
    /// What choosing it acts on (a path, an entry id, a model name).
    pub key: String,
    /// A checkbox state for multi-choice lists.
    pub checked: Option<bool>,
}

impl PickerItem {
    /// A row with a label, detail and key.
    pub fn new(
        label: impl Into<String>,
        detail: impl Into<String>,
        key: impl Into<String>,
    ) -> Self {
        Self {
            label: label.into(),
            detail: detail.into(),
            key: key.into(),
            checked: None,
        }
    }
}

/// A list with a typed query and a selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picker {
    /// What choosing does.
    pub kind: PickerKind,
    /// The title.
    pub title: String,
    /// Every row.
    pub items: Vec<PickerItem>,
    /// Typed text: a filter, or input (tree-summary instructions).
    pub query: String,
    /// Index into [`Picker::visible`].
    pub selected: usize,
}

impl Picker {
    /// A picker over `items`, the first selected.
    pub fn new(kind: PickerKind, title: impl Into<String>, items: Vec<PickerItem>) -> Self {
        Self {
            kind,
            title: title.into(),
            items,
            query: String::new(),
            selected: 0,
        }
    }

    /// Whether typing filters the rows (otherwise it is input of its own).
    pub fn filters(&self) -> bool {
        !matches!(
            self.kind,
            PickerKind::TreeSummary { .. } | PickerKind::Tools
        )
    }

    /// Indices of the rows the query matches: every word of it, case-insensitively, in the
    /// label or the detail.
    pub fn visible(&self) -> Vec<usize> {
        if !self.filters() || self.query.trim().is_empty() {
            return (0..self.items.len()).collect();
        }
        let words: Vec<String> = self
            .query
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        self.items
            .iter()
            .enumerate()
            .filter(|(_, item)| {
                let haystack = format!("{} {}", item.label, item.detail).to_lowercase();
                words.iter().all(|word| haystack.contains(word))
            })
            .map(|(index, _)| index)
            .collect()
    }

    /// The selected row.
    pub fn current(&self) -> Option<&PickerItem> {
        self.visible()
            .get(self.selected)
            .and_then(|index| self.items.get(*index))
    }

    /// Moves the selection by `delta` rows, staying in the list.
    pub fn step(&mut self, delta: isize) {
        let count = self.visible().len();
        if count == 0 {
            self.selected = 0;
            return;
        }
        let at = self.selected as isize + delta;
        self.selected = at.clamp(0, count as isize - 1) as usize;
    }

    /// Types a char into the query.
    pub fn type_char(&mut self, ch: char) {
        self.query.push(ch);
        self.selected = 0;
    }

    /// Deletes the query's last char.
    pub fn backspace(&mut self) {
        self.query.pop();
        self.selected = 0;
    }

    /// Flips the selected checkbox.
    pub fn toggle(&mut self) {
        if let Some(index) = self.visible().get(self.selected).copied()
            && let Some(item) = self.items.get_mut(index)
            && let Some(checked) = item.checked.as_mut()
        {
            *checked = !*checked;
        }
    }

    /// Selects the row with `key`.
    pub fn select_key(&mut self, key: &str) {
        if let Some(at) = self
            .visible()
            .iter()
            .position(|index| self.items[*index].key == key)
        {
            self.selected = at;
        }
    }
}

/// The session file a `/resume` row stands for.
pub fn resume_path(item: &PickerItem) -> PathBuf {
    PathBuf::from(&item.key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions() -> Picker {
        Picker::new(
            PickerKind::Resume,
            "Resume",
            vec![
                PickerItem::new("Fix the parser", "3 messages", "/a.jsonl"),
                PickerItem::new("refactor tests", "named: cleanup", "/b.jsonl"),
                PickerItem::new("Parser benchmarks", "12 messages", "/c.jsonl"),
            ],
        )
    }

    #[test]
    fn the_query_filters_by_every_word_in_label_or_detail() {
        let mut picker = sessions();
        for ch in "parser".chars() {
            picker.type_char(ch);
        }
        assert_eq!(picker.visible(), vec![0, 2]);
        picker.step(5);
        assert_eq!(picker.current().map(|i| i.key.as_str()), Some("/c.jsonl"));
        picker.query = "cleanup".into();
        assert_eq!(picker.visible(), vec![1]);
        picker.query = "nothing here".into();
        assert!(picker.current().is_none());
    }

    #[test]
    fn checkboxes_toggle_and_tools_are_not_filtered() {
        let mut item = PickerItem::new("grep", "", "grep");
        item.checked = Some(false);
        let mut picker = Picker::new(PickerKind::Tools, "Tools", vec![item]);
        picker.type_char('x');
        assert_eq!(picker.visible(), vec![0]);
        picker.toggle();
        assert_eq!(picker.items[0].checked, Some(true));
    }
}
