//! Properties over random session trees: projection reads only the path, and incremental
//! assembly equals a fresh build.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};
use strata_context::{Assembler, ContextError, EntrySource, LoadedEntry, build};
use strata_session::{EntryId, EntryKind, Tree};

use crate::support::{Lines, tool};

/// What a generated entry is.
#[derive(Debug, Clone)]
enum Kind {
    User,
    Assistant,
    System {
        rules: u8,
        add: bool,
    },
    Exclude {
        target: usize,
    },
    Compaction {
        first_kept: Option<usize>,
        snapshot: bool,
    },
    ModelChange,
    Thinking,
    Label {
        target: usize,
    },
    BranchSummary {
        empty: bool,
    },
    CustomMessage,
}

#[derive(Debug, Clone)]
struct Node {
    parent: Option<usize>,
    kind: Kind,
}

fn kind(index: usize) -> impl Strategy<Value = Kind> {
    let earlier = 0..index.max(1);
    prop_oneof![
        4 => Just(Kind::User),
        4 => Just(Kind::Assistant),
        2 => (any::<u8>(), any::<bool>()).prop_map(|(rules, add)| Kind::System { rules, add }),
        1 => earlier.clone().prop_map(|target| Kind::Exclude { target }),
        1 => (proptest::option::of(earlier.clone()), any::<bool>())
            .prop_map(|(first_kept, snapshot)| Kind::Compaction { first_kept, snapshot }),
        1 => Just(Kind::ModelChange),
        1 => Just(Kind::Thinking),
        1 => earlier.prop_map(|target| Kind::Label { target }),
        1 => any::<bool>().prop_map(|empty| Kind::BranchSummary { empty }),
        1 => Just(Kind::CustomMessage),
    ]
}

/// Trees of up to 40 entries; most entries continue from the one before (long paths), some
/// branch off an earlier entry, a few start a new root.
fn trees() -> impl Strategy<Value = Vec<Node>> {
    (1usize..40).prop_flat_map(|len| {
        let nodes: Vec<_> = (0..len)
            .map(|index| {
                let parent = if index == 0 {
                    Just(None).boxed()
                } else {
                    prop_oneof![
                        6 => Just(Some(index - 1)),
                        3 => (0..index).prop_map(Some),
                        1 => Just(None),
                    ]
                    .boxed()
                };
                (parent, kind(index)).prop_map(|(parent, kind)| Node { parent, kind })
            })
            .collect();
        nodes
    })
}

fn id(index: usize) -> String {
    format!("e{index:07}")
}

/// The session text; entries in `poisoned` get bodies that fail to parse as their type.
fn session(nodes: &[Node], poisoned: &HashSet<usize>) -> Lines {
    let mut lines = Lines::new();
    for (index, node) in nodes.iter().enumerate() {
        let own = id(index);
        let parent = node.parent.map(id);
        let parent = parent.as_deref();
        let poison = poisoned.contains(&index);
        let bad = json!(42);
        match &node.kind {
            Kind::User if poison => lines.entry(
                "message",
                &own,
                parent,
                json!({"message": {"role": "user", "content": bad}}),
            ),
            Kind::Assistant if poison => lines.entry(
                "message",
                &own,
                parent,
                json!({"message": {"role": "assistant", "content": bad, "stopReason": "stop"}}),
            ),
            Kind::User => lines.user(&own, parent, &format!("question {index}")),
            Kind::Assistant => lines.assistant(&own, parent, &format!("answer {index}")),
            Kind::System { rules, add } => {
                let sections = if poison {
                    bad
                } else {
                    json!({"rules": format!("rules v{rules}")})
                };
                let added: Vec<Value> = if *add {
                    vec![tool(&format!("t{}", rules % 4))]
                } else {
                    vec![]
                };
                let removed: Vec<String> = if *add {
                    vec![]
                } else {
                    vec![format!("t{}", rules % 4)]
                };
                lines.entry(
                    "system",
                    &own,
                    parent,
                    json!({"sections": sections, "toolsAdded": added, "toolsRemoved": removed}),
                )
            }
            Kind::Exclude { target } => {
                let targets = if poison { bad } else { json!([id(*target)]) };
                lines.entry(
                    "context_edit",
                    &own,
                    parent,
                    json!({"targets": targets, "action": "exclude"}),
                )
            }
            Kind::Compaction {
                first_kept,
                snapshot,
            } => {
                let summary = if poison {
                    bad
                } else {
                    json!(format!("summary {index}"))
                };
                let mut fields = json!({
                    "summary": summary,
                    "firstKeptEntryId": first_kept.map_or_else(|| "missing".to_owned(), id),
                    "tokensBefore": index * 100,
                });
                if *snapshot {
                    fields["system"] = json!({"intro": format!("intro at {index}")});
                    fields["tools"] = json!([tool("read")]);
                }
                lines.entry("compaction", &own, parent, fields)
            }
            Kind::ModelChange => {
                let provider = if poison {
                    bad
                } else {
                    json!(format!("p{index}"))
                };
                lines.entry(
                    "model_change",
                    &own,
                    parent,
                    json!({"provider": provider, "modelId": "m"}),
                )
            }
            Kind::Thinking => {
                let level = if poison { bad } else { json!("high") };
                lines.entry(
                    "thinking_level_change",
                    &own,
                    parent,
                    json!({"thinkingLevel": level}),
                )
            }
            Kind::Label { target } => {
                let target = if poison { bad } else { json!(id(*target)) };
                lines.entry(
                    "label",
                    &own,
                    parent,
                    json!({"targetId": target, "label": "x"}),
                )
            }
            Kind::BranchSummary { empty } => {
                let summary = if poison {
                    bad
                } else if *empty {
                    json!("")
                } else {
                    json!(format!("branch {index}"))
                };
                lines.entry(
                    "branch_summary",
                    &own,
                    parent,
                    json!({"fromId": "root", "summary": summary}),
                )
            }
            Kind::CustomMessage => {
                let content = if poison {
                    bad
                } else {
                    json!(format!("note {index}"))
                };
                lines.entry(
                    "custom_message",
                    &own,
                    parent,
                    json!({"customType": "note", "content": content, "display": true}),
                )
            }
        };
    }
    lines
}

fn path_of(nodes: &[Node], leaf: usize) -> HashSet<usize> {
    let mut path = HashSet::new();
    let mut current = Some(leaf);
    while let Some(index) = current {
        path.insert(index);
        current = nodes[index].parent;
    }
    path
}

/// A tree that records every entry it is asked to parse.
struct Recording<'a> {
    tree: &'a Tree,
    loads: RefCell<Vec<EntryId>>,
}

impl EntrySource for Recording<'_> {
    fn len(&self) -> usize {
        self.tree.len()
    }
    fn contains(&self, id: &EntryId) -> bool {
        EntrySource::contains(self.tree, id)
    }
    fn parent_of(&self, id: &EntryId) -> Option<EntryId> {
        EntrySource::parent_of(self.tree, id)
    }
    fn kind_of(&self, id: &EntryId) -> Option<EntryKind> {
        self.tree.kind_of(id)
    }
    fn load(&self, id: &EntryId) -> Result<Arc<LoadedEntry>, ContextError> {
        self.loads.borrow_mut().push(id.clone());
        self.tree.load(id)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn projecting_a_chain_never_reads_an_entry_off_the_path(
        nodes in trees(),
        leaf_pick in any::<prop::sample::Index>(),
    ) {
        let leaf = leaf_pick.index(nodes.len());
        let path = path_of(&nodes, leaf);
        let off_path: HashSet<usize> = (0..nodes.len()).filter(|index| !path.contains(index)).collect();
        let clean = session(&nodes, &HashSet::new()).tree();
        let poisoned = session(&nodes, &off_path).tree();
        let leaf_id = EntryId::new(id(leaf));

        let recording = Recording { tree: &poisoned, loads: RefCell::new(Vec::new()) };
        let from_poisoned = build(&recording, Some(&leaf_id));
        let from_clean = build(&clean, Some(&leaf_id));
        prop_assert!(from_clean.is_ok(), "{:?}", from_clean.err());
        prop_assert!(from_poisoned.is_ok(), "read a poisoned entry: {:?}", from_poisoned.err());
        prop_assert_eq!(from_poisoned.ok(), from_clean.ok());
        // The poison bites: every off-path entry fails to parse when asked for directly.
        for index in &off_path {
            prop_assert!(poisoned.load(&EntryId::new(id(*index))).is_err(), "{} parsed", id(*index));
        }
        let path_ids: HashSet<String> = path.iter().map(|index| id(*index)).collect();
        for loaded in recording.loads.borrow().iter() {
            prop_assert!(path_ids.contains(loaded.as_str()), "loaded {} off the path", loaded);
        }
    }

    #[test]
    fn incremental_assembly_equals_a_fresh_build(nodes in trees()) {
        let tree = session(&nodes, &HashSet::new()).tree();
        let mut assembler = Assembler::new();
        for index in 0..nodes.len() {
            let leaf = EntryId::new(id(index));
            let fresh = build(&tree, Some(&leaf));
            prop_assert!(fresh.is_ok());
            let assembled = assembler.context(&tree, Some(&leaf)).map(|(context, _)| context.clone());
            prop_assert_eq!(assembled.ok(), fresh.ok(), "leaf {}", leaf);
        }
    }
}
