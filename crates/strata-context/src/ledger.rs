//! The tool ledger: every tool declared since the chain's start, in declaration order.

use serde::Serialize;
use serde_json::Value;
use strata_session::EntryId;

/// One declared tool and whether it is still live.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerTool {
    /// The tool's name (from its definition's `name`).
    pub name: String,
    /// The full definition as declared (`name`, `description`, `parameters`, …).
    pub definition: Value,
    /// The entry that declared it (a `system` entry or the chain's compaction).
    pub declared_by: EntryId,
    /// The entry that withdrew it, while it stays withdrawn.
    pub removed_by: Option<EntryId>,
    /// The last entry that re-declared it with a definition different from the one it had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redefined_by: Option<EntryId>,
}

impl LedgerTool {
    /// Whether the tool may be called at the chain's end.
    pub fn is_live(&self) -> bool {
        self.removed_by.is_none()
    }
}

/// Every tool declared since the chain's start, never shortened; removals are marks.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct ToolLedger {
    tools: Vec<LedgerTool>,
}

impl ToolLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares tools: a new name goes to the end; a known name keeps its place, takes the
    /// new definition (noting `by` as its redefiner when the definition differs) and is live
    /// again.
    pub fn declare<'a>(&mut self, definitions: impl IntoIterator<Item = &'a Value>, by: &EntryId) {
        for definition in definitions {
            let Some(name) = definition.get("name").and_then(Value::as_str) else {
                continue;
            };
            if let Some(known) = self.tools.iter_mut().find(|tool| tool.name == name) {
                if known.definition != *definition {
                    known.definition = definition.clone();
                    known.redefined_by = Some(by.clone());
                }
                known.removed_by = None;
            } else {
                self.tools.push(LedgerTool {
                    name: name.to_owned(),
                    definition: definition.clone(),
                    declared_by: by.clone(),
                    removed_by: None,
                    redefined_by: None,
                });
            }
        }
    }

    /// Marks tools as withdrawn; names never declared are ignored.
    pub fn remove<'a>(&mut self, names: impl IntoIterator<Item = &'a str>, by: &EntryId) {
        for name in names {
            if let Some(known) = self.tools.iter_mut().find(|tool| tool.name == name) {
                known.removed_by = Some(by.clone());
            }
        }
    }

    /// Every declared tool, in declaration order.
    pub fn all(&self) -> &[LedgerTool] {
        &self.tools
    }

    /// The tools not withdrawn, in declaration order.
    pub fn live(&self) -> impl Iterator<Item = &LedgerTool> {
        self.tools.iter().filter(|tool| tool.is_live())
    }

    /// Whether no tool was ever declared.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn removal_marks_and_redeclaration_keeps_place() {
        let mut ledger = ToolLedger::new();
        let start = EntryId::new("s");
        ledger.declare(&[json!({"name": "read"}), json!({"name": "bash"})], &start);
        ledger.remove(["read", "never-declared"], &EntryId::new("p1"));
        ledger.declare(&[json!({"name": "grep"})], &EntryId::new("p1"));
        let names: Vec<&str> = ledger.all().iter().map(|tool| tool.name.as_str()).collect();
        assert_eq!(names, ["read", "bash", "grep"]);
        let live: Vec<&str> = ledger.live().map(|tool| tool.name.as_str()).collect();
        assert_eq!(live, ["bash", "grep"]);
        ledger.declare(
            &[json!({"name": "read", "description": "v2"})],
            &EntryId::new("p2"),
        );
        assert_eq!(
            ledger.all()[0].definition,
            json!({"name": "read", "description": "v2"})
        );
        assert!(ledger.all()[0].is_live());
        assert_eq!(ledger.all()[0].declared_by, start);
        assert_eq!(ledger.all()[0].redefined_by, Some(EntryId::new("p2")));
    }

    #[test]
    fn only_a_different_definition_counts_as_a_redefinition() {
        let mut ledger = ToolLedger::new();
        let read = json!({"name": "read", "description": "v1"});
        ledger.declare(std::slice::from_ref(&read), &EntryId::new("s"));
        ledger.remove(["read"], &EntryId::new("p1"));
        ledger.declare(std::slice::from_ref(&read), &EntryId::new("p2"));
        assert_eq!(ledger.all()[0].redefined_by, None, "re-added unchanged");
        ledger.declare(
            &[json!({"name": "read", "description": "v2"})],
            &EntryId::new("p3"),
        );
        ledger.declare(
            &[json!({"name": "read", "description": "v2"})],
            &EntryId::new("p4"),
        );
        assert_eq!(
            ledger.all()[0].redefined_by,
            Some(EntryId::new("p3")),
            "the same definition again changes nothing"
        );
    }
}
