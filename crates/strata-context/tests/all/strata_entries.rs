//! strata's additions: system snapshot and patches, context edits, compaction snapshots.

use pretty_assertions::assert_eq;
use serde_json::json;
use strata_context::{
    Assembler, Assembly, SnapshotSource, build, join_sections, to_json, to_pi_json, to_text,
};
use strata_session::EntryId;

use crate::support::{Lines, tool};

fn id(text: &str) -> EntryId {
    EntryId::new(text)
}

fn message_ids(context: &strata_context::Context) -> Vec<&str> {
    context
        .messages
        .iter()
        .map(|message| message.entry_id.as_str())
        .collect()
}

fn tool_names(context: &strata_context::Context, live_only: bool) -> Vec<&str> {
    context
        .tools
        .all()
        .iter()
        .filter(|tool| !live_only || tool.is_live())
        .map(|tool| tool.name.as_str())
        .collect()
}

#[test]
fn first_system_entry_is_the_snapshot_and_later_ones_are_patches() {
    let mut lines = Lines::new();
    lines
        .system(
            "s1",
            None,
            json!({"tools": "T1", "intro": "I1", "cwd": "/w"}),
            &["read", "bash"],
            &[],
        )
        .user("u1", Some("s1"), "hello")
        .assistant("a1", Some("u1"), "hi")
        .system(
            "s2",
            Some("a1"),
            json!({"rules": "R2", "tools": "T2"}),
            &["grep"],
            &["bash"],
        )
        .user("u2", Some("s2"), "next");
    let tree = lines.tree();
    let context = build(&tree, Some(&id("u2"))).expect("builds");

    assert_eq!(message_ids(&context), ["u1", "a1", "u2"]);
    assert_eq!(context.system.source, SnapshotSource::SystemEntry(id("s1")));
    assert_eq!(join_sections(&context.system.snapshot), "I1\n\nT1\n\n/w");
    assert_eq!(context.system.patches.len(), 1);
    let patch = &context.system.patches[0];
    assert_eq!(patch.entry_id, id("s2"));
    assert_eq!(patch.after_messages, 2, "the patch sits after u1 and a1");
    assert_eq!(patch.tools_added, vec![tool("grep")]);
    assert_eq!(patch.tools_removed, vec!["bash".to_owned()]);
    assert_eq!(
        join_sections(&context.system.folded()),
        "I1\n\nT2\n\nR2\n\n/w"
    );
    assert_eq!(
        tool_names(&context, false),
        ["read", "bash", "grep"],
        "the ledger never shrinks"
    );
    assert_eq!(tool_names(&context, true), ["read", "grep"]);
    assert_eq!(
        context.tools.all()[2].definition,
        tool("grep"),
        "full definitions are kept"
    );

    // Pi's shape has no room for system entries: only the three messages.
    let pi = to_pi_json(&context);
    assert_eq!(pi["messages"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        pi["model"],
        json!({"provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    );
}

#[test]
fn context_edits_exclude_their_targets_only_on_their_own_chain() {
    let mut lines = Lines::new();
    lines
        .system("s1", None, json!({"intro": "I"}), &[], &[])
        .user("u1", Some("s1"), "q1")
        .assistant("a1", Some("u1"), "long answer")
        .system("s2", Some("a1"), json!({"rules": "R"}), &[], &[])
        .user("u2", Some("s2"), "q2")
        // Branch A drops a1 and the patch s2.
        .exclude("e1", Some("u2"), &["a1", "s2"])
        .assistant("a2", Some("e1"), "answer 2")
        // Branch B, from u2, never saw the edit.
        .assistant("b2", Some("u2"), "other answer");
    let tree = lines.tree();

    let on_a = build(&tree, Some(&id("a2"))).expect("builds");
    assert_eq!(message_ids(&on_a), ["u1", "u2", "a2"]);
    assert!(on_a.system.patches.is_empty(), "the excluded patch is gone");

    let on_b = build(&tree, Some(&id("b2"))).expect("builds");
    assert_eq!(message_ids(&on_b), ["u1", "a1", "u2", "b2"]);
    assert_eq!(on_b.system.patches.len(), 1);

    // Exactly the edit's own position: the edit counts from the moment it is on the chain.
    let at_edit = build(&tree, Some(&id("e1"))).expect("builds");
    assert_eq!(message_ids(&at_edit), ["u1", "u2"]);
}

#[test]
fn a_compaction_snapshot_replaces_everything_before_it() {
    let mut lines = Lines::new();
    lines
        .system(
            "s1",
            None,
            json!({"intro": "I1", "tools": "T1"}),
            &["read", "bash"],
            &[],
        )
        .user("u1", Some("s1"), "q1")
        .assistant("a1", Some("u1"), "a1")
        .system("s2", Some("a1"), json!({"rules": "R2"}), &[], &["bash"])
        .user("u2", Some("s2"), "q2")
        .system("s3", Some("u2"), json!({"rules": "R3"}), &[], &[])
        .assistant("a2", Some("s3"), "a2")
        .entry(
            "compaction",
            "c1",
            Some("a2"),
            json!({
                "summary": "before u2", "firstKeptEntryId": "u2", "tokensBefore": 900,
                "system": {"intro": "I1", "tools": "T-folded", "rules": "R3"},
                "tools": [tool("read"), tool("write")],
            }),
        )
        .user("u3", Some("c1"), "q3")
        .system(
            "s4",
            Some("u3"),
            json!({"docs": "D4"}),
            &["grep"],
            &["write"],
        );
    let tree = lines.tree();
    let context = build(&tree, Some(&id("s4"))).expect("builds");

    assert_eq!(message_ids(&context), ["c1", "u2", "a2", "u3"]);
    assert_eq!(context.messages[0].message.role(), "compactionSummary");
    assert_eq!(context.system.source, SnapshotSource::Compaction(id("c1")));
    assert_eq!(
        join_sections(&context.system.snapshot),
        "I1\n\nT-folded\n\nR3"
    );
    // s3 lies in the kept span but is folded into the snapshot, not replayed as a patch.
    let patch_ids: Vec<&str> = context
        .system
        .patches
        .iter()
        .map(|p| p.entry_id.as_str())
        .collect();
    assert_eq!(patch_ids, ["s4"]);
    assert_eq!(context.system.patches[0].after_messages, 4);
    // bash is gone: the compaction's tool snapshot starts a new ledger.
    assert_eq!(tool_names(&context, false), ["read", "write", "grep"]);
    assert_eq!(tool_names(&context, true), ["read", "grep"]);
    assert_eq!(context.tools.all()[0].declared_by, id("c1"));
}

#[test]
fn a_compaction_without_snapshot_folds_the_system_entries_before_the_cut() {
    let mut lines = Lines::new();
    lines
        .system("s1", None, json!({"intro": "I1"}), &["read"], &[])
        .user("u1", Some("s1"), "q1")
        .assistant("a1", Some("u1"), "a1")
        .system(
            "s2",
            Some("a1"),
            json!({"rules": "R2"}),
            &["grep"],
            &["read"],
        )
        .user("u2", Some("s2"), "q2")
        .entry(
            "compaction",
            "c1",
            Some("u2"),
            json!({"summary": "s", "firstKeptEntryId": "u2", "tokensBefore": 5}),
        )
        .assistant("a3", Some("c1"), "a3");
    let tree = lines.tree();
    let context = build(&tree, Some(&id("a3"))).expect("builds");

    assert_eq!(message_ids(&context), ["c1", "u2", "a3"]);
    assert_eq!(
        context.system.source,
        SnapshotSource::FoldedBeforeCompaction(id("c1"))
    );
    assert_eq!(join_sections(&context.system.snapshot), "I1\n\nR2");
    assert!(context.system.patches.is_empty());
    assert_eq!(tool_names(&context, false), ["read", "grep"]);
    assert_eq!(tool_names(&context, true), ["grep"]);
}

#[test]
fn a_leaf_entry_moves_the_context_to_its_target() {
    let mut lines = Lines::new();
    lines
        .user("u1", None, "q1")
        .assistant("a1", Some("u1"), "a1")
        .user("u2", Some("a1"), "q2")
        .assistant("a2", Some("u2"), "a2")
        .entry("leaf", "l1", Some("a1"), json!({}));
    let tree = lines.tree();
    assert_eq!(tree.leaf(), Some(&id("a1")));
    let at_leaf_entry = build(&tree, Some(&id("l1"))).expect("builds");
    let at_target = build(&tree, tree.leaf()).expect("builds");
    assert_eq!(to_pi_json(&at_leaf_entry), to_pi_json(&at_target));
    assert_eq!(message_ids(&at_target), ["u1", "a1"]);
}

#[test]
fn no_leaf_gives_an_empty_context_and_an_unknown_leaf_an_error() {
    let mut lines = Lines::new();
    lines.user("u1", None, "q1");
    let tree = lines.tree();
    let empty = build(&tree, None).expect("builds");
    assert_eq!(
        to_pi_json(&empty),
        json!({"messages": [], "thinkingLevel": "off", "model": null})
    );
    let error = build(&tree, Some(&id("nope"))).expect_err("unknown leaf");
    assert!(error.to_string().contains("nope"), "{error}");
}

#[test]
fn assembler_extends_on_append_and_rebuilds_on_compaction_or_edit() {
    let mut lines = Lines::new();
    lines
        .system("s1", None, json!({"intro": "I"}), &["read"], &[])
        .user("u1", Some("s1"), "q1")
        .assistant("a1", Some("u1"), "a1")
        .system("s2", Some("a1"), json!({"rules": "R"}), &["grep"], &[])
        .exclude("e1", Some("s2"), &["a1"])
        .user("u2", Some("e1"), "q2")
        .entry(
            "compaction",
            "c1",
            Some("u2"),
            json!({"summary": "s", "firstKeptEntryId": "u2", "tokensBefore": 5}),
        )
        .assistant("a3", Some("c1"), "a3");
    let tree = lines.tree();
    let mut assembler = Assembler::new();
    let expected_assembly = [
        ("s1", Assembly::Rebuilt),
        ("u1", Assembly::Extended),
        ("a1", Assembly::Extended),
        ("s2", Assembly::Extended),
        ("e1", Assembly::Rebuilt),
        ("u2", Assembly::Extended),
        ("c1", Assembly::Rebuilt),
        ("a3", Assembly::Extended),
        ("a1", Assembly::Rebuilt),
    ];
    for (leaf, expected) in expected_assembly {
        let fresh = build(&tree, Some(&id(leaf))).expect("builds");
        let (context, how) = assembler
            .context(&tree, Some(&id(leaf)))
            .expect("assembles");
        assert_eq!(how, expected, "leaf {leaf}");
        assert_eq!(*context, fresh, "leaf {leaf}");
    }
    assert_eq!(assembler.cached_entries(), tree.len());
}

#[test]
fn json_and_text_views_carry_entry_ids() {
    let mut lines = Lines::new();
    lines
        .system("s1", None, json!({"intro": "I"}), &["read"], &[])
        .user("u1", Some("s1"), "first question\nwith two lines")
        .assistant("a1", Some("u1"), "answer")
        .system(
            "s2",
            Some("a1"),
            json!({"rules": "R"}),
            &["grep"],
            &["read"],
        );
    let tree = lines.tree();
    let context = build(&tree, tree.leaf()).expect("builds");

    let value = to_json(&context);
    assert_eq!(value["messages"][0]["entryId"], json!("u1"));
    assert_eq!(
        value["messages"][0]["message"]["content"],
        json!("first question\nwith two lines")
    );
    assert_eq!(value["system"]["snapshot"], json!({"intro": "I"}));
    assert_eq!(value["system"]["patches"][0]["afterMessages"], json!(2));
    assert_eq!(value["tools"][0]["removedBy"], json!("s2"));
    assert_eq!(value["thinkingLevel"], json!("off"));

    let text = to_text(&context);
    assert!(text.contains("u1  user"), "{text}");
    assert!(text.contains("a1  assistant"), "{text}");
    assert!(text.contains("first question…"), "{text}");
    assert!(
        text.contains("system patch s2: rules (1 B); +grep; -read"),
        "{text}"
    );
    assert!(text.contains(" B "), "sizes are shown: {text}");
}

/// An entry on the path that is JSON but has a field of the wrong type is left out like a torn
/// line and reported once, with its file, line and field; the rest of the path still builds
/// (before, the whole context failed), and the file is not touched.
#[test]
fn a_wrongly_typed_entry_on_the_path_is_skipped_and_reported_once() {
    let mut lines = Lines::new();
    lines
        .user("u1", None, "hello")
        .entry(
            "message",
            "a1",
            Some("u1"),
            json!({"message": {"role": "assistant", "content": 5, "timestamp": 2}}),
        )
        .user("u2", Some("a1"), "still here");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("wrong-type.jsonl");
    std::fs::write(&path, lines.text()).expect("write");
    let before = std::fs::read(&path).expect("read");
    let opened = strata_session::Session::open(&path).expect("opens");
    assert!(opened.diagnostics.is_empty(), "{:?}", opened.diagnostics);
    let tree = opened.session.tree();

    let context = build(tree, tree.leaf()).expect("builds without the bad entry");
    assert_eq!(message_ids(&context), ["u1", "u2"]);
    assert_eq!(context.skipped.len(), 1, "{:?}", context.skipped);
    let skipped = &context.skipped[0];
    assert_eq!(skipped.line, 3);
    assert_eq!(skipped.path, path);
    match &skipped.problem {
        strata_session::Problem::InvalidEntry {
            id, field, reason, ..
        } => {
            assert_eq!(id.as_str(), "a1");
            assert_eq!(field.as_deref(), Some("message.content"));
            assert!(reason.contains("invalid type"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let text = skipped.to_string();
    assert!(
        text.contains("wrong-type.jsonl:3:") && text.contains("`message.content`"),
        "{text}"
    );

    // The agent's incremental assembler leaves it out the same way, once.
    let mut assembler = Assembler::new();
    let (assembled, _) = assembler.context(tree, tree.leaf()).expect("assembles");
    assert_eq!(message_ids(assembled), ["u1", "u2"]);
    assert_eq!(assembled.skipped.len(), 1);
    assert_eq!(std::fs::read(&path).expect("read"), before);
}
