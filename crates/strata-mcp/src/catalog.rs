//! One server's tools in the order they were first declared, and the diff a new listing makes.
//!
//! The order never follows the server's listing after the first: a reconnect that lists the
//! same tools in another order changes nothing, a new tool goes to the end, a withdrawn one
//! keeps its slot (marked not live) and takes it again when it comes back. So the tools the
//! agent declares keep their order across reconnects, and the ledger sees only real changes.

use serde_json::{Map, Value, json};
use strata_tools::ToolDefinition;

/// A tool as the server lists it (`tools/list`).
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    /// The server's name for it.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its `inputSchema`.
    pub input_schema: Value,
}

impl ListedTool {
    /// Reads one entry of a `tools/list` result; `None` without a name.
    pub fn from_json(value: &Value) -> Option<Self> {
        Some(Self {
            name: value.get("name")?.as_str()?.to_owned(),
            description: value
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            input_schema: value.get("inputSchema").cloned().unwrap_or(Value::Null),
        })
    }
}

/// One tool of the catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogTool {
    /// The server's name for it.
    pub server_name: String,
    /// The name the model calls it by.
    pub name: String,
    /// The definition declared to the model.
    pub definition: ToolDefinition,
    /// Whether the server lists it now (and the allow/deny lists pass it).
    pub live: bool,
}

/// What a listing changed, by model-facing name, in catalog order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// Tools that became live (new, or back after a withdrawal).
    pub added: Vec<String>,
    /// Tools no longer listed.
    pub removed: Vec<String>,
    /// Live tools whose definition changed.
    pub redefined: Vec<String>,
}

impl Diff {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.redefined.is_empty()
    }
}

/// A server's tools in first-declared order.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tools: Vec<CatalogTool>,
}

impl Catalog {
    /// An empty catalog.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes a new listing; `name_for` gives a new tool its model-facing name.
    pub fn apply(
        &mut self,
        listed: &[ListedTool],
        mut name_for: impl FnMut(&str) -> String,
    ) -> Diff {
        let mut diff = Diff::default();
        let mut seen = Vec::with_capacity(listed.len());
        for tool in listed {
            if seen.contains(&tool.name.as_str()) {
                continue;
            }
            seen.push(tool.name.as_str());
            match self
                .tools
                .iter_mut()
                .find(|known| known.server_name == tool.name)
            {
                Some(known) => {
                    let definition = definition(&known.name, tool);
                    if !known.live {
                        known.live = true;
                        known.definition = definition;
                        diff.added.push(known.name.clone());
                    } else if known.definition != definition {
                        known.definition = definition;
                        diff.redefined.push(known.name.clone());
                    }
                }
                None => {
                    let name = name_for(&tool.name);
                    diff.added.push(name.clone());
                    self.tools.push(CatalogTool {
                        server_name: tool.name.clone(),
                        definition: definition(&name, tool),
                        name,
                        live: true,
                    });
                }
            }
        }
        for known in &mut self.tools {
            if known.live && !seen.contains(&known.server_name.as_str()) {
                known.live = false;
                diff.removed.push(known.name.clone());
            }
        }
        diff
    }

    /// Marks every tool withdrawn (the server was disabled); returns their names.
    pub fn withdraw_all(&mut self) -> Vec<String> {
        let mut removed = Vec::new();
        for tool in &mut self.tools {
            if tool.live {
                tool.live = false;
                removed.push(tool.name.clone());
            }
        }
        removed
    }

    /// Every tool ever listed, in first-declared order.
    pub fn all(&self) -> &[CatalogTool] {
        &self.tools
    }

    /// The live tools, in first-declared order.
    pub fn live(&self) -> impl Iterator<Item = &CatalogTool> {
        self.tools.iter().filter(|tool| tool.live)
    }

    /// The tool the model calls `name`.
    pub fn get(&self, name: &str) -> Option<&CatalogTool> {
        self.tools.iter().find(|tool| tool.name == name)
    }
}

/// The definition declared to the model: the server's description and schema as sent (key
/// order kept), the schema given `type: object` and `properties` where it lacks them.
fn definition(name: &str, tool: &ListedTool) -> ToolDefinition {
    let parameters = match &tool.input_schema {
        Value::Object(schema) => {
            let mut schema = schema.clone();
            if !schema.contains_key("type") {
                schema.insert("type".into(), json!("object"));
            }
            if !schema.contains_key("properties") {
                schema.insert("properties".into(), Value::Object(Map::new()));
            }
            Value::Object(schema)
        }
        _ => json!({"type": "object", "properties": {}}),
    };
    ToolDefinition {
        name: name.to_owned(),
        description: tool.description.clone(),
        parameters,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(names: &[&str]) -> Vec<ListedTool> {
        names
            .iter()
            .map(|name| ListedTool {
                name: (*name).to_owned(),
                description: format!("{name} it"),
                input_schema: json!({"type": "object", "properties": {}}),
            })
            .collect()
    }

    fn names(catalog: &Catalog) -> Vec<&str> {
        catalog.live().map(|tool| tool.name.as_str()).collect()
    }

    #[test]
    fn a_reordered_listing_changes_nothing() {
        let mut catalog = Catalog::new();
        let first = catalog.apply(&listed(&["b", "a", "c"]), |n| format!("mcp__s__{n}"));
        assert_eq!(first.added, ["mcp__s__b", "mcp__s__a", "mcp__s__c"]);
        let again = catalog.apply(&listed(&["c", "a", "b"]), |n| format!("mcp__s__{n}"));
        assert!(again.is_empty(), "{again:?}");
        assert_eq!(names(&catalog), ["mcp__s__b", "mcp__s__a", "mcp__s__c"]);
    }

    #[test]
    fn removals_keep_their_slot_and_additions_append() {
        let mut catalog = Catalog::new();
        catalog.apply(&listed(&["a", "b", "c"]), |n| n.to_owned());
        let diff = catalog.apply(&listed(&["a", "c", "d"]), |n| n.to_owned());
        assert_eq!(diff.added, ["d"]);
        assert_eq!(diff.removed, ["b"]);
        assert_eq!(names(&catalog), ["a", "c", "d"]);
        let back = catalog.apply(&listed(&["d", "b", "a", "c"]), |n| n.to_owned());
        assert_eq!(back.added, ["b"]);
        assert_eq!(names(&catalog), ["a", "b", "c", "d"], "b back in its slot");
    }

    #[test]
    fn a_changed_description_is_a_redefinition() {
        let mut catalog = Catalog::new();
        catalog.apply(&listed(&["a"]), |n| n.to_owned());
        let mut changed = listed(&["a"]);
        changed[0].description = "new".into();
        let diff = catalog.apply(&changed, |n| n.to_owned());
        assert_eq!(diff.redefined, ["a"]);
        assert!(diff.added.is_empty() && diff.removed.is_empty());
    }

    #[test]
    fn schemas_without_type_or_properties_are_completed() {
        let mut catalog = Catalog::new();
        let tool = ListedTool {
            name: "t".into(),
            description: String::new(),
            input_schema: json!({"required": []}),
        };
        catalog.apply(&[tool], |n| n.to_owned());
        assert_eq!(
            catalog.all()[0].definition.parameters,
            json!({"required": [], "type": "object", "properties": {}})
        );
    }
}
