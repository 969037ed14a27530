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
    let AgentMessage::BashExecution(bash) = message.message else {
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
