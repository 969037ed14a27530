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
