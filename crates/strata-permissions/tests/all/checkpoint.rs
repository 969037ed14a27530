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
fn a_fork_carries_every_record_and_only_the_blobs_it_can_restore() {
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
    let blobs: HashSet<Vec<u8>> = std::fs::read_dir(fork.dir().join("blobs"))
        .unwrap()
        .map(|entry| std::fs::read(entry.unwrap().path()).unwrap())
        .collect();
    let want: HashSet<Vec<u8>> = ["original", "theirs before", "by my branch", "mine"]
        .iter()
        .map(|text| text.as_bytes().to_vec())
        .collect();
    assert_eq!(blobs, want, "what the other branch left is not carried");

    // Rewinding in the fork to before its call: every file as it was then, the other
    // branch's unseen bash change said.
    let report = fork.restore(&HashSet::new()).unwrap();
    assert_eq!(report.not_restorable.len(), 1, "{report:?}");
    assert_eq!(std::fs::read(&shared).unwrap(), b"original");
    assert_eq!(std::fs::read(&theirs).unwrap(), b"theirs before");
    assert!(!mine.exists());
    fork.restore(&calls).unwrap();
    assert_eq!(std::fs::read(&shared).unwrap(), b"by my branch");
    assert_eq!(std::fs::read(&mine).unwrap(), b"mine");

    // A fork of the fork carries from what the fork holds.
    let again = Checkpoints::beside(&dir.path().join("again.jsonl"));
    fork.carry_to(&again, &HashSet::new()).unwrap();
    std::fs::write(&shared, "later").unwrap();
    again.restore(&HashSet::new()).unwrap();
    assert_eq!(std::fs::read(&shared).unwrap(), b"original");

    // Nothing recorded: nothing is carried.
    let empty = Checkpoints::beside(&dir.path().join("empty.jsonl"));
    Checkpoints::beside(&dir.path().join("none.jsonl"))
        .carry_to(&empty, &HashSet::new())
        .unwrap();
    assert!(!empty.dir().exists());
}
