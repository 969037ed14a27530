//! `strata fork`: a new file with one path, whose context equals the original's at that leaf.

use serde_json::Value;

use crate::support::{strata, strata_ok, workspace};

#[test]
fn fork_holds_one_path_with_the_same_context() {
    let dir = tempfile::tempdir().unwrap();
    let tour = workspace().join("examples/sessions/tour.jsonl");
    let tour = tour.to_str().unwrap();
    let out = dir.path().join("forked.jsonl");
    let printed = strata_ok(&[
        "fork",
        tour,
        "--leaf",
        "a100000e",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(printed.trim().ends_with("forked.jsonl"));

    let forked = std::fs::read_to_string(&out).unwrap();
    let header: Value = serde_json::from_str(forked.lines().next().unwrap()).unwrap();
    assert!(
        header["parentSession"]
            .as_str()
            .unwrap()
            .ends_with("tour.jsonl")
    );
    // The abandoned branch's leaf and its ancestors only: no branch summary, no compaction.
    assert!(!forked.contains("branch_summary") && !forked.contains("\"compaction\""));

    let original: Value = serde_json::from_str(&strata_ok(&[
        "context", tour, "--format", "pi", "--leaf", "a100000e",
    ]))
    .unwrap();
    let copy: Value = serde_json::from_str(&strata_ok(&[
        "context",
        out.to_str().unwrap(),
        "--format",
        "pi",
    ]))
    .unwrap();
    assert_eq!(original, copy);

    // Forking onto an existing file is refused rather than overwriting it.
    let again = strata(&[
        "fork",
        tour,
        "--leaf",
        "a100000e",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!again.status.success());
}
