//! Appending: whole lines, torn and malformed lines, the lock, legacy files, leaf moves.

use std::fs;
use std::io::Write;

use pretty_assertions::assert_eq;
use serde_json::json;
use strata_session::{
    AgentMessage, ContextAction, Entry, EntryId, MessageContent, Problem, Session, SessionError,
    UserMessage, WriteOptions,
};

use crate::common::{pi_fixture, user};

#[test]
fn appended_entries_reopen_as_the_same_tree_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut session =
        Session::create(&path, "/work/project", WriteOptions { fsync: true }).unwrap();
    let model = session
        .append_model_change("anthropic", "claude-sonnet-4-5")
        .unwrap();
    session.append_thinking_level_change("medium").unwrap();
    let question = session.append_message(user("hello")).unwrap();
    let mut sections = std::collections::BTreeMap::new();
    sections.insert("intro".to_owned(), "You are strata.".to_owned());
    let system = session
        .append_system(
            sections,
            vec![strata_session::ToolDefinition {
                name: "read".into(),
                description: "Read a file".into(),
                parameters: json!({"type": "object"}),
                extra: Default::default(),
            }],
            vec![],
        )
        .unwrap();
    session
        .append_context_edit(vec![question.clone()], ContextAction::Exclude)
        .unwrap();
    session
        .append_custom("plan", Some(json!({"step": 1})))
        .unwrap();
    session
        .append_custom_message("note", MessageContent::Text("remember".into()), true, None)
        .unwrap();
    session.append_label(&model, Some("start")).unwrap();
    session.append_session_info("  my session  ").unwrap();
    let last = session.append_message(user("bye")).unwrap();
    assert_eq!(session.leaf(), Some(&last));

    let reopened = Session::open(&path).unwrap();
    assert_eq!(reopened.diagnostics, vec![]);
    let (a, b) = (session.tree(), reopened.session.tree());
    assert_eq!(b.len(), 10);
    assert_eq!(b.leaf(), Some(&last));
    assert_eq!(b.name(), Some("my session"));
    assert_eq!(b.label_of(&model), Some("start"));
    for (x, y) in a.iter().zip(b.iter()) {
        assert_eq!(x.raw_line(), y.raw_line());
        assert_eq!(x.line_number(), y.line_number());
        assert_eq!(x.parent_id(), y.parent_id());
        assert_eq!(x.entry().unwrap(), y.entry().unwrap());
    }
    // Pi 1.x's shapes: a system message, and a context edit of one target with `null`.
    let Entry::Message(stored) = b.entry(&system).unwrap() else {
        panic!("a system message entry")
    };
    let AgentMessage::System(stored) = &*stored.message else {
        panic!("role system")
    };
    assert_eq!(
        stored.section_changes().collect::<Vec<_>>(),
        [("intro", Some("You are strata.".to_owned()))]
    );
    assert_eq!(stored.tools_added()[0].name, "read");
    let edit_line = b.iter().nth(4).unwrap().raw_line().to_owned();
    let edit: serde_json::Value = serde_json::from_str(&edit_line).unwrap();
    assert_eq!(edit["type"], "context_edit");
    assert_eq!(edit["targetId"], question.as_str());
    assert_eq!(edit["replacement"], serde_json::Value::Null);
    assert!(edit.get("targets").is_none() && edit.get("action").is_none());
    // One line per entry, each ending in a newline.
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'));
    assert_eq!(text.lines().count(), 11);
}

/// Cuts the last entry at every byte offset: open reports the torn line with its number, keeps
/// everything before it, and the next append lands on a line of its own.
#[test]
fn torn_last_line_at_every_byte_offset() {
    let source = fs::read(pi_fixture("every-entry-type.jsonl")).unwrap();
    let body_end = source.len() - 1; // without the final newline
    let last_start = source[..body_end]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    let total_lines = source[..body_end].split(|&b| b == b'\n').count();
    let complete = Session::open(pi_fixture("every-entry-type.jsonl"))
        .unwrap()
        .session;
    let full_len = complete.tree().len();
    let dir = tempfile::tempdir().unwrap();
    for cut in last_start..=body_end {
        let path = dir.path().join(format!("torn-{cut}.jsonl"));
        fs::write(&path, &source[..cut]).unwrap();
        let opened = Session::open_writable(&path, WriteOptions::default()).unwrap();
        let torn = cut - last_start;
        let tree = opened.session.tree();
        if torn == 0 {
            assert_eq!(opened.diagnostics, vec![], "cut {cut}");
            assert_eq!(tree.len(), full_len - 1);
        } else if cut == body_end {
            // The whole line without its newline is a complete entry.
            assert_eq!(opened.diagnostics, vec![], "cut {cut}");
            assert_eq!(tree.len(), full_len);
        } else {
            assert_eq!(opened.diagnostics.len(), 1, "cut {cut}");
            let diagnostic = &opened.diagnostics[0];
            assert_eq!(diagnostic.line, total_lines, "cut {cut}");
            assert_eq!(diagnostic.problem, Problem::TornLastLine { bytes: torn });
            assert_eq!(diagnostic.path, path);
            assert_eq!(tree.len(), full_len - 1, "cut {cut}");
        }
        let kept: Vec<String> = tree.iter().map(|e| e.raw_line().to_owned()).collect();
        let mut session = opened.session;
        let new_id = session.append_message(user("after the crash")).unwrap();
        drop(session);
        let reopened = Session::open(&path).unwrap();
        let tree = reopened.session.tree();
        let expected_diagnostics = usize::from(torn != 0 && cut != body_end);
        assert_eq!(
            reopened.diagnostics.len(),
            expected_diagnostics,
            "cut {cut}: {:?}",
            reopened.diagnostics
        );
        if expected_diagnostics == 1 {
            // Torn bytes stay on their own line, reported as malformed now that a line follows.
            assert!(matches!(
                reopened.diagnostics[0].problem,
                Problem::MalformedLine { .. }
            ));
            assert_eq!(reopened.diagnostics[0].line, total_lines);
        }
        assert_eq!(tree.leaf(), Some(&new_id));
        let reread: Vec<String> = tree.iter().map(|e| e.raw_line().to_owned()).collect();
        assert_eq!(&reread[..kept.len()], &kept[..], "cut {cut}");
        assert!(matches!(tree.entry(&new_id).unwrap(), Entry::Message(_)));
        // The original bytes are untouched.
        assert!(fs::read(&path).unwrap().starts_with(&source[..cut]));
    }
}

#[test]
fn malformed_middle_line_is_reported_and_skipped() {
    let source = fs::read_to_string(pi_fixture("branches.jsonl")).unwrap();
    let mut lines: Vec<&str> = source.lines().collect();
    let dropped = lines[5].to_owned();
    let damaged = &dropped[..dropped.len() / 2];
    lines[5] = damaged;
    lines.insert(3, "this is not json");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.jsonl");
    fs::write(&path, lines.join("\n") + "\n").unwrap();
    let opened = Session::open(&path).unwrap();
    let lines_reported: Vec<usize> = opened.diagnostics.iter().map(|d| d.line).collect();
    assert_eq!(lines_reported[..2], [4, 7]);
    assert!(
        opened.diagnostics[..2]
            .iter()
            .all(|d| matches!(d.problem, Problem::MalformedLine { .. }))
    );
    assert!(
        opened.diagnostics[0]
            .to_string()
            .contains("m.jsonl:4: malformed line")
    );
    // Everything else is there.
    let original = Session::open(pi_fixture("branches.jsonl")).unwrap().session;
    let dropped_id: serde_json::Value = serde_json::from_str(&dropped).unwrap();
    let dropped_id = dropped_id["id"].as_str().unwrap();
    let tree = opened.session.tree();
    assert_eq!(tree.len(), original.tree().len() - 1);
    for entry in original.tree().iter().filter(|e| e.id() != dropped_id) {
        assert_eq!(tree.raw_line(entry.id()), Some(entry.raw_line()));
    }
    // Children of the lost entry become roots, reported as such.
    assert!(
        opened.diagnostics[2..]
            .iter()
            .all(|d| matches!(d.problem, Problem::UnknownParent { .. }))
    );
}

#[test]
fn unknown_types_and_fields_survive_open_append_reopen_byte_for_byte() {
    let mut source = fs::read_to_string(pi_fixture("strata-entries.jsonl")).unwrap();
    source.push_str(
        r#"{"type":"message","id":"77770001","parentId":"5e5e0004","timestamp":"2026-01-15T10:01:00.000Z","futureTopLevel":[1,{"a":null}],"message":{"role":"user","content":[{"type":"text","text":"x","newBlockField":true},{"type":"video","url":"v"}],"timestamp":1,"newMessageField":"kept"}}"#,
    );
    source.push('\n');
    source.push_str(r#"{"type":"future","id":"77770002","parentId":"77770001","timestamp":"2026-01-15T10:01:01.000Z","nested":{"deep":[1.50,"\u00e9"]}}"#);
    source.push('\n');
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.jsonl");
    fs::write(&path, &source).unwrap();
    let opened = Session::open_writable(&path, WriteOptions::default()).unwrap();
    assert_eq!(opened.diagnostics, vec![]);
    let mut session = opened.session;
    let entry = session.tree().entry("77770001").unwrap();
    // The typed value keeps every unknown field, in every nested struct.
    let retyped: serde_json::Value = serde_json::to_value(&entry).unwrap();
    let original: serde_json::Value =
        serde_json::from_str(session.tree().raw_line("77770001").unwrap()).unwrap();
    assert_eq!(retyped, original);
    let future = session.tree().entry("77770002").unwrap();
    assert_eq!(future.type_name(), "future");
    session.append_message(user("more")).unwrap();
    drop(session);
    let after = fs::read_to_string(&path).unwrap();
    assert!(after.starts_with(&source), "existing bytes changed");
    let reopened = Session::open(&path).unwrap();
    assert_eq!(reopened.diagnostics, vec![]);
    assert_eq!(
        reopened.session.tree().raw_line("77770002"),
        Some(
            r#"{"type":"future","id":"77770002","parentId":"77770001","timestamp":"2026-01-15T10:01:01.000Z","nested":{"deep":[1.50,"\u00e9"]}}"#
        )
    );
}

#[test]
fn a_repeated_key_takes_its_last_value_at_every_level_as_json_parse_does() {
    let mut source = fs::read_to_string(pi_fixture("strata-entries.jsonl")).unwrap();
    // Keys repeated on the line, in the message, in a block and in the usage; unknown keys
    // (one of them escaped, so not borrowable) beside them.
    source.push_str(
        r#"{"type":"message","id":"77770001","parentId":"5e5e0004","timestamp":"2026-01-15T10:00:59.000Z","timestamp":"2026-01-15T10:01:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"old","text":"new","\u0078tra":1}],"model":"m1","provider":"p","model":"m2","usage":{"input":1,"input":7,"cost":{"total":0.5}},"stopReason":"stop","timestamp":1}}"#,
    );
    source.push('\n');
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.jsonl");
    fs::write(&path, &source).unwrap();
    let opened = Session::open(&path).unwrap();
    assert_eq!(opened.diagnostics, vec![]);
    let entry = opened.session.tree().entry("77770001").unwrap();
    let Entry::Message(message) = &entry else {
        panic!("not a message: {entry:?}");
    };
    assert_eq!(message.base.timestamp, "2026-01-15T10:01:00.000Z");
    let AgentMessage::Assistant(assistant) = &*message.message else {
        panic!("not an assistant message: {:?}", message.message);
    };
    assert_eq!(assistant.model, "m2");
    assert_eq!(assistant.usage.input, 7);
    assert_eq!(assistant.usage.cost.total, 0.5);
    let strata_session::ContentBlock::Text(text) = &assistant.content[0] else {
        panic!("not a text block: {:?}", assistant.content[0]);
    };
    assert_eq!(text.text, "new");
    assert_eq!(text.extra.get("xtra"), Some(&json!(1)));
    // Written back, each key once with its last value, as JSON.stringify(JSON.parse(line)).
    let written = entry.to_json_line().unwrap();
    for (key, count) in [
        (r#""model":"#, 1),
        (r#""text":"#, 1),
        (r#""timestamp":"2026"#, 1),
    ] {
        assert_eq!(written.matches(key).count(), count, "{key} in {written}");
    }
    assert!(
        !written.contains("old") && !written.contains("m1"),
        "{written}"
    );
}

#[test]
fn a_second_writer_is_refused_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.jsonl");
    let first = Session::create(&path, "/p", WriteOptions::default()).unwrap();
    let error = Session::open_writable(&path, WriteOptions::default()).unwrap_err();
    assert!(matches!(&error, SessionError::Locked { path: locked } if *locked == path));
    assert!(error.to_string().contains("locked.jsonl"), "{error}");
    // Readers are never blocked.
    assert!(Session::open(&path).is_ok());
    drop(first);
    assert!(Session::open_writable(&path, WriteOptions::default()).is_ok());
}

#[test]
fn read_only_sessions_refuse_appends() {
    let mut session = Session::open(pi_fixture("branches.jsonl")).unwrap().session;
    let error = session.append_message(user("x")).unwrap_err();
    assert!(matches!(error, SessionError::ReadOnly { .. }));
}

#[test]
fn version_1_files_refuse_appends_and_fork_into_version_3() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.jsonl");
    fs::copy(pi_fixture("legacy-v1.jsonl"), &path).unwrap();
    let error = Session::open_writable(&path, WriteOptions::default()).unwrap_err();
    assert!(
        matches!(error, SessionError::LegacyFormat { version: 1, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("fork"));
    let legacy = Session::open(&path).unwrap().session;
    let leaf = legacy.tree().leaf().cloned();
    let forked = legacy
        .fork(leaf.as_ref(), dir.path().join("v3.jsonl"))
        .unwrap();
    let opened = Session::open_writable(&forked, WriteOptions::default()).unwrap();
    assert_eq!(opened.diagnostics, vec![]);
    let mut session = opened.session;
    assert_eq!(session.header().version, Some(3));
    assert_eq!(
        session.header().parent_session.as_deref(),
        Some(path.to_str().unwrap())
    );
    assert_eq!(session.tree().len(), legacy.tree().len());
    for (a, b) in legacy.tree().iter().zip(session.tree().iter()) {
        assert_eq!(a.entry().unwrap(), b.entry().unwrap());
    }
    session.append_message(user("continued")).unwrap();
}

#[test]
fn version_2_files_take_appends_that_pi_can_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.jsonl");
    fs::copy(pi_fixture("legacy-v2.jsonl"), &path).unwrap();
    let before = fs::read_to_string(&path).unwrap();
    let mut session = Session::open_writable(&path, WriteOptions::default())
        .unwrap()
        .session;
    let leaf = session.leaf().cloned().unwrap();
    let id = session
        .append_message(user("v3 entry in a v2 file"))
        .unwrap();
    drop(session);
    let after = fs::read_to_string(&path).unwrap();
    assert!(after.starts_with(&before));
    // The appended line is a v2-compatible entry: id and parentId, no new shape.
    let line: serde_json::Value = serde_json::from_str(after.lines().last().unwrap()).unwrap();
    assert_eq!(line["parentId"], json!(leaf.as_str()));
    assert_eq!(line["id"], json!(id.as_str()));
    let reopened = Session::open(&path).unwrap().session;
    assert_eq!(reopened.tree().leaf(), Some(&id));
}

#[test]
fn moving_the_leaf_is_persisted_and_pi_sees_the_same_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leaf.jsonl");
    let mut session = Session::create(&path, "/p", WriteOptions::default()).unwrap();
    let q1 = session.append_message(user("q1")).unwrap();
    let _q2 = session.append_message(user("q2")).unwrap();
    let marker = session.branch(&q1).unwrap();
    assert_eq!(session.leaf(), Some(&q1));
    drop(session);
    let mut session = Session::open_writable(&path, WriteOptions::default())
        .unwrap()
        .session;
    assert_eq!(session.leaf(), Some(&q1), "the jump survives a restart");
    // Pi takes the last line (the marker) as its leaf; its path is the same entries.
    let pi_path: Vec<_> = session
        .tree()
        .path_to_root(&marker)
        .into_iter()
        .skip(1)
        .cloned()
        .collect();
    assert_eq!(
        pi_path,
        session
            .tree()
            .path_to_root(&q1)
            .into_iter()
            .cloned()
            .collect::<Vec<_>>()
    );
    let q3 = session.append_message(user("q3")).unwrap();
    assert_eq!(session.tree().parent_of(&q3), Some(&q1));
    assert_eq!(session.tree().children(&q1).len(), 3); // q2, marker, q3
    session.reset_leaf().unwrap();
    assert_eq!(session.leaf(), None);
    let root2 = session.append_message(user("new root")).unwrap();
    assert_eq!(session.tree().parent_of(&root2), None);
    assert_eq!(session.tree().roots().len(), 3); // q1, the reset marker, root2
    let unknown = EntryId::new("nothere");
    assert!(matches!(
        session.move_leaf(Some(&unknown)),
        Err(SessionError::UnknownEntry { .. })
    ));
    assert!(matches!(
        session.append(Entry::Leaf(strata_session::LeafEntry {
            base: strata_session::EntryBase::pending(),
            extra: Default::default()
        })),
        Err(SessionError::InvalidArgument { .. })
    ));
}

#[test]
fn branch_with_summary_follows_pi() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bs.jsonl");
    let mut session = Session::create(&path, "/p", WriteOptions::default()).unwrap();
    let q1 = session.append_message(user("q1")).unwrap();
    session.append_message(user("q2")).unwrap();
    let summary = session
        .branch_with_summary(
            Some(&q1),
            "explored q2",
            Some(json!({"readFiles": []})),
            None,
        )
        .unwrap();
    assert_eq!(session.leaf(), Some(&summary));
    let Entry::BranchSummary(entry) = session.tree().entry(&summary).unwrap() else {
        panic!()
    };
    assert_eq!(entry.base.parent_id.as_ref(), Some(&q1));
    assert_eq!(entry.from_id, q1.as_str());
    let at_root = session
        .branch_with_summary(None, "from the top", None, None)
        .unwrap();
    let Entry::BranchSummary(entry) = session.tree().entry(&at_root).unwrap() else {
        panic!()
    };
    assert_eq!(entry.base.parent_id, None);
    assert_eq!(entry.from_id, "root");
}

#[test]
fn labels_set_clear_and_children_sort_by_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("labels.jsonl");
    let mut session = Session::create(&path, "/p", WriteOptions::default()).unwrap();
    let root = session.append_message(user("root")).unwrap();
    let mut late = user_entry("late child", "2026-01-15T10:00:09.000Z");
    let late_id = {
        late.base_mut().timestamp = "2026-01-15T10:00:09.000Z".into();
        session.append(late).unwrap()
    };
    session.branch(&root).unwrap();
    let early = session
        .append(user_entry("early child", "2026-01-15T10:00:01.000Z"))
        .unwrap();
    let children: Vec<_> = session
        .tree()
        .children(&root)
        .into_iter()
        .cloned()
        .collect();
    // The marker (written now) sorts last; early before late despite file order.
    assert_eq!(children[..2], [early.clone(), late_id.clone()]);
    session.append_label(&late_id, Some("keep")).unwrap();
    assert_eq!(session.tree().label_of(&late_id), Some("keep"));
    session.append_label(&late_id, None).unwrap();
    assert_eq!(session.tree().label_of(&late_id), None);
    session.append_label(&late_id, Some("again")).unwrap();
    let reopened = Session::open(&path).unwrap().session;
    assert_eq!(reopened.tree().label_of(&late_id), Some("again"));
    assert_eq!(reopened.tree().labels().count(), 1);
}

fn user_entry(text: &str, timestamp: &str) -> Entry {
    Entry::Message(strata_session::MessageEntry {
        base: strata_session::EntryBase {
            id: EntryId::new(""),
            parent_id: None,
            timestamp: timestamp.into(),
        },
        message: strata_session::LazyMessage::new(AgentMessage::User(UserMessage {
            content: MessageContent::Text(text.into()),
            timestamp: 0,
            extra: Default::default(),
        })),
        extra: Default::default(),
    })
}

#[test]
fn a_failed_line_never_merges_with_the_next_append() {
    // A file whose writer died mid-line: the torn bytes and no newline.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.jsonl");
    let mut session = Session::create(&path, "/p", WriteOptions::default()).unwrap();
    session.append_message(user("one")).unwrap();
    drop(session);
    fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(br#"{"type":"message","id":"dead"#)
        .unwrap();
    let mut session = Session::open_writable(&path, WriteOptions::default())
        .unwrap()
        .session;
    let two = session.append_message(user("two")).unwrap();
    let three = session.append_message(user("three")).unwrap();
    drop(session);
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 5);
    let reopened = Session::open(&path).unwrap();
    assert_eq!(reopened.diagnostics.len(), 1);
    assert_eq!(reopened.diagnostics[0].line, 3);
    assert_eq!(reopened.session.tree().parent_of(&three), Some(&two));
}

#[test]
fn duplicate_ids_forward_links_and_cycles_are_reported_not_fatal() {
    let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/p"}"#;
    let line = |id: &str, parent: &str, text: &str| {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-15T10:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
        )
    };
    let lines = [
        header.to_owned(),
        line("a", "null", "first a"),
        line("b", "\"c\"", "b points forward to c"),
        line("c", "\"a\"", "c"),
        line("a", "null", "second a"),
        line("x", "\"y\"", "x and y form a cycle"),
        line("y", "\"x\"", "y"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.jsonl");
    fs::write(&path, lines.join("\n") + "\n").unwrap();
    let opened = Session::open(&path).unwrap();
    let problems: Vec<(usize, &Problem)> = opened
        .diagnostics
        .iter()
        .map(|d| (d.line, &d.problem))
        .collect();
    assert!(
        problems.contains(&(
            5,
            &Problem::DuplicateId {
                id: EntryId::new("a")
            }
        )),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|(_, p)| matches!(p, Problem::ParentCycle { .. })),
        "{problems:?}"
    );
    let tree = opened.session.tree();
    // Lookups find the later `a`; the forward link resolves; the cycle is cut.
    assert_eq!(tree.get("a").unwrap().line_number(), 5);
    assert_eq!(tree.parent_of("b").map(|id| id.as_str()), Some("c"));
    for id in ["x", "y"] {
        let path = tree.path_to_root(id);
        assert!(path.len() <= 2);
        assert_eq!(tree.parent_of(path.last().unwrap()), None);
    }
}

/// A long file with damage scattered through it: every damaged line is reported at its own
/// number, the others keep their numbers and file order, and a torn last line is still caught.
#[test]
fn damage_anywhere_in_a_long_file_is_reported_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.jsonl");
    let mut text = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n",
    );
    let damaged_lines = [2_000usize, 4_097, 8_193, 12_001];
    let mut parent = "null".to_owned();
    for line in 2..=20_000usize {
        if damaged_lines.contains(&line) {
            text.push_str("{\"type\":\"message\",\"id\":\n");
            continue;
        }
        let id = format!("{line:08x}");
        text.push_str(&format!(
            "{{\"type\":\"custom\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"customType\":\"n\",\"data\":{line}}}\n"
        ));
        parent = format!("\"{id}\"");
    }
    text.push_str("{\"type\":\"custom\",\"id\":\"torn\"");
    fs::write(&path, &text).unwrap();

    let opened = Session::open(&path).unwrap();
    let malformed: Vec<usize> = opened
        .diagnostics
        .iter()
        .filter(|d| matches!(d.problem, Problem::MalformedLine { .. }))
        .map(|d| d.line)
        .collect();
    assert_eq!(malformed, damaged_lines);
    let torn: Vec<usize> = opened
        .diagnostics
        .iter()
        .filter(|d| matches!(d.problem, Problem::TornLastLine { .. }))
        .map(|d| d.line)
        .collect();
    assert_eq!(torn, [20_001]);
    let tree = opened.session.tree();
    assert_eq!(tree.len(), 19_999 - damaged_lines.len());
    // File order and line numbers survive the split.
    for (index, entry) in tree.iter().enumerate().step_by(997) {
        let number = entry.line_number();
        assert_eq!(
            entry.id().as_str(),
            format!("{number:08x}"),
            "entry {index}"
        );
    }
    assert_eq!(
        tree.leaf().map(|id| id.as_str()),
        Some(format!("{:08x}", 20_000).as_str())
    );
}
