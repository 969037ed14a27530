//! Property tests on random trees built by appends, leaf moves, branch summaries, labels and forks.

use std::collections::HashSet;

use proptest::prelude::*;
use strata_session::{EntryId, EntryKind, Session, WriteOptions};

use crate::common::user;

#[derive(Debug, Clone)]
enum Op {
    Append,
    MoveLeaf(u16),
    Reset,
    BranchWithSummary(Option<u16>),
    Label(u16, bool),
    Name,
    Fork(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::Append),
        2 => any::<u16>().prop_map(Op::MoveLeaf),
        1 => Just(Op::Reset),
        1 => proptest::option::of(any::<u16>()).prop_map(Op::BranchWithSummary),
        1 => (any::<u16>(), any::<bool>()).prop_map(|(t, set)| Op::Label(t, set)),
        1 => Just(Op::Name),
        1 => any::<u16>().prop_map(Op::Fork),
    ]
}

fn pick(ids: &[EntryId], selector: u16) -> Option<EntryId> {
    (!ids.is_empty()).then(|| ids[selector as usize % ids.len()].clone())
}

fn check_paths(session: &Session) {
    let tree = session.tree();
    for entry in tree.iter() {
        let path = tree.path_to_root(entry.id());
        assert_eq!(path.first().copied(), Some(entry.id()));
        let root = path.last().unwrap();
        assert_eq!(
            tree.parent_of(*root),
            None,
            "path of {} ends at a root",
            entry.id()
        );
        assert!(tree.roots().contains(root));
        let unique: HashSet<_> = path.iter().collect();
        assert_eq!(unique.len(), path.len(), "no cycles");
        // Each step is a parent link, and each child is listed among its parent's children.
        for pair in path.windows(2) {
            assert_eq!(tree.parent_of(pair[0]), Some(pair[1]));
            assert!(tree.children(pair[1]).contains(&pair[0]));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn random_trees_stay_well_formed_and_reopen_identically(ops in proptest::collection::vec(op(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        let mut session = Session::create(&path, "/p", WriteOptions::default()).unwrap();
        let mut ids: Vec<EntryId> = Vec::new();
        let mut forks = 0;
        for op in ops {
            let leaf_before = session.leaf().cloned();
            match op {
                Op::Append => {
                    let id = session.append_message(user("m")).unwrap();
                    prop_assert_eq!(session.tree().parent_of(&id), leaf_before.as_ref());
                    prop_assert_eq!(session.leaf(), Some(&id));
                    ids.push(id);
                }
                Op::MoveLeaf(selector) => {
                    if let Some(target) = pick(&ids, selector) {
                        session.move_leaf(Some(&target)).unwrap();
                        prop_assert_eq!(session.leaf(), Some(&target));
                    }
                }
                Op::Reset => {
                    session.reset_leaf().unwrap();
                    prop_assert_eq!(session.leaf(), None);
                }
                Op::BranchWithSummary(selector) => {
                    let target = selector.and_then(|s| pick(&ids, s));
                    let id = session.branch_with_summary(target.as_ref(), "summary", None, None).unwrap();
                    prop_assert_eq!(session.tree().parent_of(&id), target.as_ref());
                    prop_assert_eq!(session.leaf(), Some(&id));
                    ids.push(id);
                }
                Op::Label(selector, set) => {
                    if let Some(target) = pick(&ids, selector) {
                        let label = set.then_some("tag");
                        let id = session.append_label(&target, label).unwrap();
                        prop_assert_eq!(session.tree().label_of(&target), label);
                        prop_assert_eq!(session.tree().parent_of(&id), leaf_before.as_ref());
                        ids.push(id);
                    }
                }
                Op::Name => {
                    let id = session.append_session_info("named").unwrap();
                    ids.push(id);
                }
                Op::Fork(selector) => {
                    if let Some(target) = pick(&ids, selector) {
                        forks += 1;
                        let fork_path = dir.path().join(format!("fork{forks}.jsonl"));
                        session.fork(Some(&target), &fork_path).unwrap();
                        let fork = Session::open(&fork_path).unwrap();
                        prop_assert!(fork.diagnostics.is_empty());
                        let expected: Vec<EntryId> = session.tree().path_from_root(&target).into_iter().cloned().collect();
                        let fork_tree = fork.session.tree();
                        let copied: Vec<EntryId> = fork_tree.iter().take(expected.len()).map(|e| e.id().clone()).collect();
                        // Every entry of the path, in order, and after it only re-created labels.
                        prop_assert_eq!(&copied, &expected);
                        prop_assert!(fork_tree.iter().skip(expected.len()).all(|e| e.kind() == EntryKind::Label));
                        for id in &expected {
                            prop_assert_eq!(fork_tree.raw_line(id), session.tree().raw_line(id));
                            prop_assert_eq!(fork_tree.label_of(id), session.tree().label_of(id));
                        }
                        // The fork's leaf path holds exactly the source path (plus label entries).
                        let fork_leaf = fork_tree.leaf().unwrap();
                        let leaf_path: Vec<EntryId> = fork_tree.path_from_root(fork_leaf).into_iter().filter(|id| fork_tree.get(*id).unwrap().kind() != EntryKind::Label || expected.contains(id)).cloned().collect();
                        prop_assert_eq!(leaf_path, expected);
                        check_paths(&fork.session);
                    }
                }
            }
        }
        // Branching never loses an entry.
        for id in &ids {
            prop_assert!(session.tree().contains(id));
        }
        check_paths(&session);
        let reopened = Session::open(&path).unwrap();
        prop_assert!(reopened.diagnostics.is_empty());
        let (a, b) = (session.tree(), reopened.session.tree());
        prop_assert_eq!(a.len(), b.len());
        prop_assert_eq!(a.leaf(), b.leaf());
        prop_assert_eq!(a.name(), b.name());
        for (x, y) in a.iter().zip(b.iter()) {
            prop_assert_eq!(x.id(), y.id());
            prop_assert_eq!(x.parent_id(), y.parent_id());
            prop_assert_eq!(x.raw_line(), y.raw_line());
            prop_assert_eq!(x.line_number(), y.line_number());
            prop_assert_eq!(x.label(), y.label());
            prop_assert_eq!(a.children(x.id()), b.children(y.id()));
        }
    }
}
