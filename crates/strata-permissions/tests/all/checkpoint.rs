//! Checkpoints: file changes recorded and restored byte for byte.

use std::collections::HashSet;

use strata_permissions::checkpoint::Checkpoints;

#[test]
fn files_return_to_any_point_and_forward_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = Checkpoints::beside(&dir.path().join("s.jsonl"));
    let a = dir.path().join("a.bin");
    let b = dir.path().join("new/b.txt");
    std::fs::write(&a, [0u8, 159, 146, 150]).unwrap();
    let snap = store.before_files(std::slice::from_ref(&a)).unwrap();
    std::fs::write(&a, "v2").unwrap();
    assert_eq!(store.after_files("c1", &snap).unwrap().len(), 1);
    let snap = store.before_files(&[a.clone(), b.clone()]).unwrap();
    std::fs::write(&a, "v3").unwrap();
    std::fs::create_dir_all(b.parent().unwrap()).unwrap();
    std::fs::write(&b, "born").unwrap();
    assert_eq!(store.after_files("c2", &snap).unwrap().len(), 2);
    let path = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<HashSet<_>>();
    let report = store.restore(&path(&[])).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), [0u8, 159, 146, 150]);
    assert!(!b.exists());
    assert_eq!(report.removed, vec![b.clone()]);
    store.restore(&path(&["c1"])).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), b"v2");
    store.restore(&path(&["c1", "c2"])).unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), b"v3");
    assert_eq!(std::fs::read(&b).unwrap(), b"born");
    // Nothing to do the second time.
    assert_eq!(
        store.restore(&path(&["c1", "c2"])).unwrap(),
        Default::default()
    );
}

#[test]
fn bash_outside_git_is_listed_as_not_restorable() {
    let dir = tempfile::tempdir().unwrap();
    let store = Checkpoints::beside(&dir.path().join("s.jsonl"));
    let snap = store.before_bash(dir.path()).unwrap();
    store.after_bash("b1", &snap).unwrap();
    let report = store.restore(&HashSet::new()).unwrap();
    assert_eq!(report.not_restorable.len(), 1);
    assert!(report.not_restorable[0].contains("not a git repository"));
}

#[test]
fn a_preview_lists_what_a_restore_would_do_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Checkpoints::beside(&dir.path().join("s.jsonl"));
    let a = dir.path().join("a.txt");
    let b = dir.path().join("b.txt");
    std::fs::write(&a, "one").unwrap();
    let snap = store.before_files(&[a.clone(), b.clone()]).unwrap();
    std::fs::write(&a, "two").unwrap();
    std::fs::write(&b, "born").unwrap();
    store.after_files("c1", &snap).unwrap();
    let preview = store.preview(&HashSet::new()).unwrap();
    assert_eq!(preview.restored, vec![a.clone()]);
    assert_eq!(preview.removed, vec![b.clone()]);
    assert!(preview.changes_files());
    assert_eq!(
        std::fs::read(&a).unwrap(),
        b"two",
        "a preview writes nothing"
    );
    assert!(b.exists(), "a preview removes nothing");
    assert_eq!(store.restore(&HashSet::new()).unwrap(), preview);
    // At the point the files are at, there is nothing to offer.
    let at_c1: HashSet<String> = ["c1".to_owned()].into();
    store.restore(&at_c1).unwrap();
    assert!(!store.preview(&at_c1).unwrap().changes_files());
}

#[test]
fn a_fork_carries_the_records_and_blobs_of_its_path_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = Checkpoints::beside(&dir.path().join("s.jsonl"));
    let shared = dir.path().join("shared.txt");
    let mine = dir.path().join("mine.txt");
    let theirs = dir.path().join("theirs.txt");
    std::fs::write(&shared, "original").unwrap();
    std::fs::write(&theirs, "theirs before").unwrap();
    // Another branch ("other") changed shared.txt first and theirs.txt; then, without a
    // restore, the forked path's call ("mine") changed shared.txt again and made mine.txt.
    let snap = store
        .before_files(&[shared.clone(), theirs.clone()])
        .unwrap();
    std::fs::write(&shared, "by the other branch").unwrap();
    std::fs::write(&theirs, "theirs after").unwrap();
    store.after_files("other", &snap).unwrap();
    let snap = store.before_files(&[shared.clone(), mine.clone()]).unwrap();
    std::fs::write(&shared, "by my branch").unwrap();
    std::fs::write(&mine, "mine").unwrap();
    store.after_files("mine", &snap).unwrap();
    let bash = store.before_bash(dir.path()).unwrap();
    store.after_bash("other-bash", &bash).unwrap();

    let fork = Checkpoints::beside(&dir.path().join("fork.jsonl"));
    let calls: HashSet<String> = ["mine".to_owned()].into();
    store.carry_to(&fork, &calls).unwrap();
    let index = std::fs::read_to_string(fork.dir().join("index.jsonl")).unwrap();
    assert!(!index.contains("theirs.txt"), "{index}");
    assert!(!index.contains("other-bash"), "{index}");
    let blobs = std::fs::read_dir(fork.dir().join("blobs")).unwrap().count();
    // original, by the other branch (shared.txt's two records), by my branch, mine.
    assert_eq!(blobs, 4);

    // Rewinding in the fork to before its call: shared.txt is as it was before strata
    // changed it, mine.txt goes, theirs.txt is not the fork's business.
    let report = fork.restore(&HashSet::new()).unwrap();
    assert!(report.not_restorable.is_empty(), "{report:?}");
    assert_eq!(std::fs::read(&shared).unwrap(), b"original");
    assert!(!mine.exists());
    assert_eq!(std::fs::read(&theirs).unwrap(), b"theirs after");
    fork.restore(&calls).unwrap();
    assert_eq!(std::fs::read(&shared).unwrap(), b"by my branch");
    assert_eq!(std::fs::read(&mine).unwrap(), b"mine");

    // Nothing on the path changed a file: nothing is carried.
    let empty = Checkpoints::beside(&dir.path().join("empty.jsonl"));
    store.carry_to(&empty, &HashSet::new()).unwrap();
    assert!(!empty.dir().exists());
}
