//! `strata tree`: branches indent, the leaf is marked, labels and summaries show.

use crate::support::{strata_ok, workspace};

#[test]
fn tour_tree_marks_leaf_labels_branches_and_compaction() {
    let tour = workspace().join("examples/sessions/tour.jsonl");
    let text = strata_ok(&["tree", tour.to_str().unwrap()]);
    let leaf_line = text
        .lines()
        .find(|l| l.contains("← leaf"))
        .expect("a leaf line");
    assert!(leaf_line.contains("a100001a"), "{text}");
    assert!(text.contains("[add-fixed]"), "label shown: {text}");
    assert!(text.contains("branch summary:"), "{text}");
    assert!(text.contains("compaction (2480 tokens before"), "{text}");
    // The fork at a100000b has two children: both get connectors.
    assert!(text.contains("├─ a100000c"), "{text}");
    assert!(text.contains("└─ a100000f"), "{text}");
    // Long content is elided.
    assert!(text.lines().all(|l| l.chars().count() < 200), "{text}");
    assert!(
        text.contains("name: fix add() and add subtract()"),
        "{text}"
    );
}
