//! The store refuses what it cannot append to safely: files that are not regular, unknown
//! versions, and files replaced or truncated under an open writer; new files are private.

use std::fs;

use strata_session::{Session, SessionError, WriteOptions};

use crate::common::user;

const V99: &str =
    r#"{"type":"session","version":99,"id":"s","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}"#;

#[cfg(unix)]
#[test]
fn a_device_or_directory_is_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    for path in [std::path::Path::new("/dev/zero"), dir.path()] {
        let error = Session::open(path).err();
        assert!(
            matches!(&error, Some(SessionError::NotRegularFile { path: p }) if p == path),
            "{path:?}: {error:?}"
        );
        let error = Session::open_writable(path, WriteOptions::default()).err();
        assert!(
            matches!(&error, Some(SessionError::NotRegularFile { .. })),
            "{path:?}: {error:?}"
        );
    }
    let message = Session::open("/dev/zero").err().unwrap().to_string();
    assert!(
        message.contains("/dev/zero") && message.contains("not a regular file"),
        "{message}"
    );
}

#[test]
fn an_unsupported_version_is_read_but_not_appended_to() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v99.jsonl");
    let body = format!(
        "{V99}\n{}\n",
        r#"{"type":"custom","customType":"x","id":"a1","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z"}"#
    );
    fs::write(&path, &body).unwrap();
    assert_eq!(Session::open(&path).unwrap().session.tree().len(), 1);
    let error = Session::open_writable(&path, WriteOptions::default()).err();
    assert!(
        matches!(
            &error,
            Some(SessionError::UnsupportedVersion { version: 99, .. })
        ),
        "{error:?}"
    );
    let message = error.unwrap().to_string();
    assert!(message.contains("version 99"), "{message}");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        body,
        "the file is untouched"
    );
}

#[test]
fn a_file_replaced_under_the_writer_stops_appends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut session = Session::create(&path, "/w", WriteOptions::default()).unwrap();
    session.append_message(user("one")).unwrap();
    // An editor saving by rename: the path now names another file.
    let replacement = dir.path().join("new.jsonl");
    fs::write(&replacement, "replaced\n").unwrap();
    fs::rename(&replacement, &path).unwrap();
    let error = session.append_message(user("two")).err();
    assert!(
        matches!(&error, Some(SessionError::FileChanged { .. })),
        "{error:?}"
    );
    let message = error.unwrap().to_string();
    assert!(message.contains("replaced"), "{message}");
    assert_eq!(fs::read_to_string(&path).unwrap(), "replaced\n");
    // It keeps refusing: nothing is written to the unlinked file either.
    assert!(session.append_message(user("three")).is_err());
}

#[test]
fn a_file_truncated_under_the_writer_stops_appends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut session = Session::create(&path, "/w", WriteOptions::default()).unwrap();
    session.append_message(user("one")).unwrap();
    let before = fs::read(&path).unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(10)
        .unwrap();
    let error = session.append_message(user("two")).err();
    assert!(
        matches!(&error, Some(SessionError::FileChanged { .. })),
        "{error:?}"
    );
    assert!(error.unwrap().to_string().contains("truncated"));
    assert_eq!(fs::read(&path).unwrap(), before[..10], "nothing appended");
}

#[test]
fn a_writer_reopened_after_appends_checks_against_its_own_length() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    drop(Session::create(&path, "/w", WriteOptions::default()).unwrap());
    let mut session = Session::open_writable(&path, WriteOptions::default())
        .unwrap()
        .session;
    for text in ["a", "b", "c"] {
        session.append_message(user(text)).unwrap();
    }
    assert_eq!(Session::open(&path).unwrap().session.tree().len(), 3);
}

#[cfg(unix)]
#[test]
fn session_files_are_created_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut session = Session::create(&path, "/w", WriteOptions::default()).unwrap();
    let leaf = session.append_message(user("hi")).unwrap();
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");
    let fork = dir.path().join("fork.jsonl");
    session.fork(Some(&leaf), &fork).unwrap();
    let mode = fs::metadata(&fork).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");
}

#[test]
fn a_file_replaced_under_the_writer_leaves_what_it_held_in_a_recovery_file_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut session = Session::create(&path, "/w", WriteOptions::default()).unwrap();
    session.append_message(user("one")).unwrap();
    let replacement = dir.path().join("new.jsonl");
    fs::write(&replacement, "replaced\n").unwrap();
    fs::rename(&replacement, &path).unwrap();
    let message = session.append_message(user("two")).unwrap_err().to_string();
    let recovery = fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains(".recovered-"))
        .expect("a recovery file");
    assert!(
        message.contains(&recovery.display().to_string()),
        "{message}"
    );
    // A later refused entry joins it.
    assert!(session.append_message(user("three")).is_err());
    let opened = Session::open(&recovery).unwrap();
    assert!(opened.diagnostics.is_empty(), "{:?}", opened.diagnostics);
    let text = fs::read_to_string(&recovery).unwrap();
    for word in ["one", "two", "three"] {
        assert!(
            text.contains(&format!("\"{word}\"")),
            "{word} missing: {text}"
        );
    }
    let tree = opened.session.tree();
    assert_eq!(tree.len(), 3);
    assert_eq!(fs::read_to_string(&path).unwrap(), "replaced\n");
}
