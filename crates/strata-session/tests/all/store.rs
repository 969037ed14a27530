//! Session directories and listing.

use std::fs;
use std::io::Write;

use pretty_assertions::assert_eq;
use strata_session::{INDEX_FILE_NAME, Session, SessionStore, WriteOptions, dir_name_for_cwd};

use crate::common::{pi_fixture, user};

#[test]
fn directories_are_named_like_pi() {
    assert_eq!(
        dir_name_for_cwd("/home/dev/project"),
        "--home-dev-project--"
    );
    assert_eq!(dir_name_for_cwd("C:\\Users\\dev"), "--C--Users-dev--");
    assert_eq!(dir_name_for_cwd("/"), "----");
    let store = SessionStore::new("/r");
    assert_eq!(
        store.dir_for_cwd("/a/b"),
        std::path::Path::new("/r/--a-b--")
    );
    assert_eq!(
        SessionStore::default_root(std::path::Path::new("/home/u")),
        std::path::Path::new("/home/u/.strata/sessions")
    );
}

#[test]
fn created_sessions_are_listed_with_name_first_message_and_counts() {
    let root = tempfile::tempdir().unwrap();
    let store = SessionStore::new(root.path());
    let mut session = store.create("/work/a", WriteOptions::default()).unwrap();
    let file_name = session
        .path()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(file_name.ends_with(&format!("_{}.jsonl", session.header().id)));
    assert!(session.path().starts_with(store.dir_for_cwd("/work/a")));
    session.append_model_change("anthropic", "m").unwrap();
    session.append_message(user("first question")).unwrap();
    session.append_session_info("named").unwrap();
    session.append_message(user("second")).unwrap();
    let listed = store.list("/work/a").unwrap();
    assert_eq!(listed.len(), 1);
    let summary = &listed[0];
    assert_eq!(summary.path, session.path());
    assert_eq!(summary.id, session.header().id);
    assert_eq!(summary.cwd, "/work/a");
    assert_eq!(summary.name.as_deref(), Some("named"));
    assert_eq!(summary.first_message.as_deref(), Some("first question"));
    assert_eq!(summary.message_count, 2);
    assert_eq!(summary.entry_count, 4);
    assert_eq!(summary.modified, 1_768_471_204_000);
    assert!(store.dir_for_cwd("/work/a").join(INDEX_FILE_NAME).exists());

    // Growth is picked up incrementally, and a rename later in the file wins.
    session.append_session_info("renamed").unwrap();
    session.append_message(user("third")).unwrap();
    let listed = store.list("/work/a").unwrap();
    assert_eq!(listed[0].name.as_deref(), Some("renamed"));
    assert_eq!(listed[0].message_count, 3);
    assert_eq!(listed[0].entry_count, 6);
    assert_eq!(listed[0].first_message.as_deref(), Some("first question"));
    assert_eq!(store.list("/elsewhere").unwrap(), vec![]);
    assert_eq!(
        store.most_recent("/work/a").unwrap().as_deref(),
        Some(session.path())
    );
}

#[test]
fn listing_matches_what_a_full_read_finds_for_pi_files() {
    let root = tempfile::tempdir().unwrap();
    let store = SessionStore::new(root.path());
    let dir = store.dir_for_cwd("/home/dev/project");
    fs::create_dir_all(&dir).unwrap();
    for name in [
        "every-entry-type.jsonl",
        "branches.jsonl",
        "compactions.jsonl",
    ] {
        fs::copy(pi_fixture(name), dir.join(name)).unwrap();
    }
    // Not a session: skipped.
    fs::write(dir.join("junk.jsonl"), "hello\n").unwrap();
    let cold = store.list_all().unwrap();
    let warm = store.list_all().unwrap();
    assert_eq!(cold, warm);
    assert_eq!(cold.len(), 3);
    for summary in &cold {
        let session = Session::open(&summary.path).unwrap().session;
        let tree = session.tree();
        assert_eq!(summary.entry_count, tree.len());
        assert_eq!(summary.name.as_deref(), tree.name());
        assert_eq!(summary.id, session.header().id);
        let messages = tree
            .iter()
            .filter(|e| matches!(e.kind(), strata_session::EntryKind::Message(_)))
            .count();
        assert_eq!(summary.message_count, messages);
    }
    let every = cold
        .iter()
        .find(|s| s.path.ends_with("every-entry-type.jsonl"))
        .unwrap();
    assert_eq!(every.name.as_deref(), Some("renamed session"));
    assert_eq!(
        every.first_message.as_deref(),
        Some("List the files in src and read main.rs")
    );
    // Sorted by last activity, newest first.
    assert!(cold.windows(2).all(|w| w[0].modified >= w[1].modified));
}

#[test]
fn a_torn_tail_is_not_counted_until_complete() {
    let root = tempfile::tempdir().unwrap();
    let store = SessionStore::new(root.path());
    let mut session = store.create("/w", WriteOptions::default()).unwrap();
    session.append_message(user("one")).unwrap();
    let path = session.path().to_path_buf();
    drop(session);
    let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(br#"{"type":"session_info","id":"abcd0001","parentId":null,"timestamp":"2026-01-15T10:00:00.000Z","na"#).unwrap();
    let listed = store.list("/w").unwrap();
    assert_eq!(listed[0].entry_count, 1);
    assert_eq!(listed[0].name, None);
    file.write_all(br#"me":"done"}"#).unwrap();
    file.write_all(b"\n").unwrap();
    let listed = store.list("/w").unwrap();
    assert_eq!(listed[0].entry_count, 2);
    assert_eq!(listed[0].name.as_deref(), Some("done"));
}

#[test]
fn delegated_sessions_are_read_from_their_headers_and_grouped_by_spawning_entry() {
    let dir = tempfile::tempdir().unwrap();
    let parent = dir.path().join("parent.jsonl");
    fs::write(&parent, "").unwrap();
    let children = strata_session::children_dir(&parent);
    assert_eq!(children, dir.path().join("parent.subagents"));
    fs::create_dir(&children).unwrap();
    let header = |id: &str, spawned_by: &str| {
        format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-01-0{}T00:00:00.000Z\",\"cwd\":\"/\"{spawned_by}}}\n",
            &id[1..]
        )
    };
    // Written before the reason was recorded: read without one.
    fs::write(
        children.join("1_a.jsonl"),
        header(
            "c1",
            ",\"spawnedBy\":{\"entryId\":\"e1\",\"toolCallId\":\"t1\",\"start\":\"fresh\",\"agent\":\"scout\",\"description\":\"look\",\"depth\":1}",
        ),
    )
    .unwrap();
    fs::write(
        children.join("2_b.jsonl"),
        header(
            "c2",
            ",\"spawnedBy\":{\"entryId\":\"e1\",\"toolCallId\":\"t2\",\"start\":\"fork\",\"description\":\"edit\",\"reason\":\"fork: cheaper\",\"depth\":1}",
        ),
    )
    .unwrap();
    // Not a delegated session: left out.
    fs::write(children.join("3_c.jsonl"), header("c3", "")).unwrap();
    let by_entry = strata_session::delegated_by_entry(&parent);
    assert_eq!(by_entry.len(), 1);
    let listed = &by_entry["e1"];
    let lines: Vec<(String, Option<&str>)> = listed
        .iter()
        .map(|child| (child.title(), child.reason.as_deref()))
        .collect();
    assert_eq!(
        lines,
        [
            ("child (fresh scout): look".to_owned(), None),
            ("child (fork): edit".to_owned(), Some("fork: cheaper")),
        ]
    );
    assert_eq!(listed[1].tool_call_id, "t2");
}
