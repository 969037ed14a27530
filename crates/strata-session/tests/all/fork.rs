//! Forking a path into a new file.

use std::fs;

use pretty_assertions::assert_eq;
use strata_session::{EntryKind, Session, SessionError, WriteOptions};

use crate::common::{pi_fixture, user};

#[test]
fn fork_copies_the_path_byte_for_byte_and_names_its_parent() {
    let source = Session::open(pi_fixture("branches.jsonl")).unwrap().session;
    let tree = source.tree();
    let dir = tempfile::tempdir().unwrap();
    for entry in tree.iter() {
        let target = dir.path().join(format!("fork-{}.jsonl", entry.id()));
        let written = source.fork(Some(entry.id()), &target).unwrap();
        assert_eq!(written, target);
        let fork = Session::open(&target).unwrap();
        assert_eq!(fork.diagnostics, vec![]);
        let fork = fork.session;
        assert_eq!(
            fork.header().parent_session.as_deref(),
            Some(pi_fixture("branches.jsonl").to_str().unwrap())
        );
        assert_eq!(fork.header().cwd, source.header().cwd);
        assert_ne!(fork.header().id, source.header().id);
        let path = tree.path_from_root(entry.id());
        // Every entry of the path, in order, with its exact line; nothing off the path except re-created labels.
        let ids: Vec<_> = fork.tree().iter().map(|e| e.id().clone()).collect();
        assert_eq!(ids[..path.len()].iter().collect::<Vec<_>>(), path);
        for id in &path {
            assert_eq!(fork.tree().raw_line(*id), tree.raw_line(*id));
        }
        for extra in fork.tree().iter().skip(path.len()) {
            assert_eq!(extra.kind(), EntryKind::Label, "only labels are added");
        }
        // Labels of the path's entries are what they were.
        for id in &path {
            assert_eq!(
                fork.tree().label_of(*id),
                tree.label_of(*id),
                "label of {id}"
            );
        }
        // The fork's leaf context is the source's path.
        let leaf = fork.tree().leaf().unwrap();
        let fork_path: Vec<_> = fork
            .tree()
            .path_from_root(leaf)
            .into_iter()
            .filter(|id| path.contains(id))
            .cloned()
            .collect();
        assert_eq!(fork_path, path.into_iter().cloned().collect::<Vec<_>>());
    }
}

#[test]
fn fork_recreates_labels_set_off_the_path_and_drops_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut session = Session::create(&path, "/p", WriteOptions::default()).unwrap();
    let a = session.append_message(user("a")).unwrap();
    session.append_label(&a, Some("on path")).unwrap();
    let b = session.append_message(user("b")).unwrap();
    session.branch(&a).unwrap();
    // A label on `a` written on another branch: the fork must still show it.
    session.append_label(&a, Some("renamed elsewhere")).unwrap();
    let fork_path = session
        .fork(Some(&b), dir.path().join("fork.jsonl"))
        .unwrap();
    let fork = Session::open(&fork_path).unwrap().session;
    assert_eq!(fork.tree().label_of(&a), Some("renamed elsewhere"));
    // The path (including its label entry) is intact: b still reaches a.
    assert_eq!(
        fork.tree().path_from_root(&b).first().map(|id| id.as_str()),
        Some(a.as_str())
    );
    // Forking with no leaf gives an empty session; an existing target is refused.
    let empty = session.fork(None, dir.path().join("empty.jsonl")).unwrap();
    assert!(Session::open(&empty).unwrap().session.tree().is_empty());
    assert!(matches!(
        session.fork(Some(&b), &fork_path),
        Err(SessionError::AlreadyExists { .. })
    ));
    let text = fs::read_to_string(&fork_path).unwrap();
    assert!(text.ends_with('\n'));
}
