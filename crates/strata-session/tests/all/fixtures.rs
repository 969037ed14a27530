//! Reading the sessions written by the real Pi.

use pretty_assertions::assert_eq;
use serde_json::Value;
use strata_session::{AgentMessage, Entry, EntryKind, Role, Session};

use crate::common::{pi_fixture, pi_fixture_files};

#[test]
fn every_pi_fixture_opens_without_diagnostics_and_every_entry_parses() {
    let files = pi_fixture_files();
    assert!(files.len() >= 7, "fixtures missing: {files:?}");
    for path in files {
        let opened = Session::open(&path).unwrap();
        assert_eq!(opened.diagnostics, vec![], "{}", path.display());
        let tree = opened.session.tree();
        assert!(!tree.is_empty(), "{}", path.display());
        for entry in tree.iter() {
            let typed = entry.entry().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(typed.id(), entry.id());
            assert_eq!(
                typed.kind(),
                entry.kind(),
                "{}:{}",
                path.display(),
                entry.line_number()
            );
        }
    }
}

/// A typed entry written back is the same JSON value as the line it came from.
#[test]
fn typed_entries_reserialize_to_the_same_json_value() {
    for path in pi_fixture_files() {
        let opened = Session::open(&path).unwrap();
        let tree = opened.session.tree();
        if tree.version() < 3 {
            continue;
        }
        for entry in tree.iter() {
            let typed = entry.entry().unwrap();
            let original: Value = serde_json::from_str(entry.raw_line()).unwrap();
            let written: Value = serde_json::from_str(&typed.to_json_line().unwrap()).unwrap();
            assert_eq!(
                written,
                original,
                "{}:{}",
                path.display(),
                entry.line_number()
            );
        }
    }
}

#[test]
fn every_entry_type_fixture_has_the_expected_kinds_name_and_labels() {
    let opened = Session::open(pi_fixture("every-entry-type.jsonl")).unwrap();
    let tree = opened.session.tree();
    assert_eq!(tree.name(), Some("renamed session"));
    // The label on 23c9f8b6 was set, then cleared.
    assert_eq!(tree.label_of("23c9f8b6"), None);
    let kinds: Vec<EntryKind> = tree.iter().map(|e| e.kind()).collect();
    for wanted in [
        EntryKind::Message(Role::User),
        EntryKind::Message(Role::Assistant),
        EntryKind::Message(Role::ToolResult),
        EntryKind::Message(Role::BashExecution),
        EntryKind::Message(Role::Custom),
        EntryKind::Custom,
        EntryKind::CustomMessage,
        EntryKind::Label,
        EntryKind::SessionInfo,
        EntryKind::ModelChange,
        EntryKind::ThinkingLevelChange,
    ] {
        assert!(kinds.contains(&wanted), "{wanted:?} missing");
    }
    // The leaf is the last line, and the path reaches the root.
    let leaf = tree.leaf().unwrap().clone();
    assert_eq!(tree.iter().last().unwrap().id(), &leaf);
    let path = tree.path_to_root(&leaf);
    assert_eq!(path.first().copied(), Some(&leaf));
    assert_eq!(tree.parent_of(path.last().unwrap().as_str()), None);
    // A cancelled bash execution keeps its null exit code.
    let cancelled = tree.entry("b8387c8f").unwrap();
    let Entry::Message(message) = cancelled else {
        panic!("not a message")
    };
    let AgentMessage::BashExecution(bash) = &*message.message else {
        panic!("not bash")
    };
    assert_eq!(bash.exit_code, Some(None));
    assert!(bash.cancelled);
}

#[test]
fn strata_entries_fixture_keeps_unknown_types_and_follows_leaf_entries() {
    let opened = Session::open(pi_fixture("strata-entries.jsonl")).unwrap();
    let tree = opened.session.tree();
    // The last line is a `leaf` entry pointing at 5e5e0004 (the unknown entry).
    assert_eq!(tree.leaf().map(|id| id.as_str()), Some("5e5e0004"));
    let unknown = tree.entry("5e5e0004").unwrap();
    let Entry::Unknown(unknown) = unknown else {
        panic!("not unknown")
    };
    assert_eq!(unknown.entry_type, "future_entry_type");
    assert_eq!(unknown.extra["payload"], serde_json::json!({"x": 1}));
    assert!(matches!(tree.entry("5e5e0005").unwrap(), Entry::Leaf(_)));
}

#[test]
fn legacy_v1_migrates_in_memory_like_pi() {
    let path = pi_fixture("legacy-v1.jsonl");
    let before = std::fs::read(&path).unwrap();
    let opened = Session::open(&path).unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the file must not be rewritten"
    );
    let tree = opened.session.tree();
    let migrated = Session::open(pi_fixture("legacy-v1.migrated.jsonl")).unwrap();
    let pi_tree = migrated.session.tree();
    assert_eq!(tree.len(), pi_tree.len());
    // Same shape: a linear chain, entry n's parent is entry n-1.
    let ours: Vec<_> = tree.iter().collect();
    let theirs: Vec<_> = pi_tree.iter().collect();
    for (n, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(
            a.parent_id().is_none(),
            b.parent_id().is_none(),
            "entry {n}"
        );
        let mut ours_json: Value = serde_json::to_value(a.entry().unwrap()).unwrap();
        let mut pi_json: Value = serde_json::to_value(b.entry().unwrap()).unwrap();
        // Ids differ (Pi draws random ones); map Pi's to ours by position.
        for json in [&mut ours_json, &mut pi_json] {
            let object = json.as_object_mut().unwrap();
            object.remove("id");
            object.remove("parentId");
        }
        let pi_first_kept = pi_json.as_object_mut().unwrap().remove("firstKeptEntryId");
        let our_first_kept = ours_json
            .as_object_mut()
            .unwrap()
            .remove("firstKeptEntryId");
        if let Some(Value::String(pi_kept)) = pi_first_kept {
            let position = theirs
                .iter()
                .position(|e| e.id().as_str() == pi_kept)
                .unwrap();
            assert_eq!(
                our_first_kept,
                Some(Value::String(ours[position].id().to_string()))
            );
        }
        assert_eq!(ours_json, pi_json, "entry {n}");
    }
}

#[test]
fn legacy_v2_renames_hook_messages_to_custom() {
    let opened = Session::open(pi_fixture("legacy-v2.jsonl")).unwrap();
    let migrated = Session::open(pi_fixture("legacy-v2.migrated.jsonl")).unwrap();
    let (ours, theirs) = (opened.session.tree(), migrated.session.tree());
    assert_eq!(ours.len(), theirs.len());
    for (a, b) in ours.iter().zip(theirs.iter()) {
        assert_eq!(a.id(), b.id());
        assert_eq!(a.kind(), b.kind());
        assert_eq!(a.entry().unwrap(), b.entry().unwrap());
    }
}

/// What Pi's `buildSessionContext` reads from a path: how many messages, the thinking level
/// and the model. Computed here from the tree, compared with Pi's own output for every leaf.
fn pi_context_shape(tree: &strata_session::Tree, leaf: Option<&str>) -> (usize, String, Value) {
    let Some(leaf) = leaf else {
        return (0, "off".into(), Value::Null);
    };
    let path = tree.branch(leaf);
    let mut thinking = "off".to_owned();
    let mut model = Value::Null;
    for entry in &path {
        match entry.entry().unwrap() {
            Entry::ThinkingLevelChange(change) => thinking = change.thinking_level,
            Entry::ModelChange(change) => {
                model = serde_json::json!({"provider": change.provider, "modelId": change.model_id})
            }
            Entry::Message(message) => {
                if let AgentMessage::Assistant(assistant) = &*message.message {
                    model = serde_json::json!({"provider": assistant.provider, "modelId": assistant.model});
                }
            }
            _ => {}
        }
    }
    let produces = |entry: &strata_session::EntryRef<'_>| match entry.entry().unwrap() {
        Entry::Message(_) | Entry::CustomMessage(_) => 1,
        Entry::BranchSummary(summary) => usize::from(!summary.summary.is_empty()),
        _ => 0,
    };
    let count = match path.iter().rposition(|e| e.kind() == EntryKind::Compaction) {
        Some(at) => {
            let Entry::Compaction(compaction) = path[at].entry().unwrap() else {
                unreachable!()
            };
            let kept = path[..at]
                .iter()
                .position(|e| Some(e.id()) == compaction.first_kept_entry_id.as_ref())
                .map_or(0, |start| path[start..at].iter().map(produces).sum());
            1 + kept + path[at + 1..].iter().map(produces).sum::<usize>()
        }
        None => path.iter().map(produces).sum(),
    };
    (count, thinking, model)
}

#[test]
fn paths_and_compaction_cuts_match_pi_for_every_leaf() {
    for name in [
        "every-entry-type",
        "branches",
        "compactions",
        "images",
        "strata-entries",
        "legacy-v2",
        "legacy-v1",
    ] {
        let opened = Session::open(pi_fixture(&format!("{name}.jsonl"))).unwrap();
        let tree = opened.session.tree();
        let expected: Value = serde_json::from_slice(
            &std::fs::read(pi_fixture(&format!("{name}.expected.json"))).unwrap(),
        )
        .unwrap();
        // v1: Pi drew fresh ids; match its entries to ours by position in its migrated copy.
        let pi_ids: Option<Vec<String>> = (name == "legacy-v1").then(|| {
            let migrated = Session::open(pi_fixture("legacy-v1.migrated.jsonl")).unwrap();
            migrated
                .session
                .tree()
                .iter()
                .map(|e| e.id().to_string())
                .collect()
        });
        for (key, context) in expected.as_object().unwrap() {
            let leaf = if key == "$default" {
                tree.leaf().map(|id| id.to_string())
            } else if let Some(pi_ids) = &pi_ids {
                let position = pi_ids.iter().position(|id| id == key).unwrap();
                Some(tree.get_index(position).unwrap().id().to_string())
            } else {
                Some(key.clone())
            };
            let (count, thinking, model) = pi_context_shape(tree, leaf.as_deref());
            let what = format!("{name} leaf {key}");
            assert_eq!(
                count,
                context["messages"].as_array().unwrap().len(),
                "{what}"
            );
            assert_eq!(
                thinking,
                context["thinkingLevel"].as_str().unwrap(),
                "{what}"
            );
            assert_eq!(model, context["model"], "{what}");
        }
    }
}
