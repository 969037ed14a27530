//! The JSONL reader on arbitrary bytes and on mutations of real Pi sessions: opening never
//! panics, every entry it indexed can be read and walked to a root, and appending to
//! whatever opened keeps every byte that was there.

use proptest::prelude::*;
use strata_session::{Session, WriteOptions};

use crate::common::user;

/// Real sessions written by Pi 1.x (the workspace's fixtures).
fn corpus() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pi");
    let mut files: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert!(!files.is_empty(), "no corpus in {}", dir.display());
    files.sort();
    files
}

/// A real session with bytes flipped, inserted, cut out, or a line repeated.
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    let corpus = corpus();
    let count = corpus.len();
    (
        0..count,
        proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..4), 0..10),
    )
        .prop_map(move |(index, edits)| {
            let mut bytes = corpus[index].clone();
            for (at, byte, kind) in edits {
                if bytes.is_empty() {
                    break;
                }
                let at = at % bytes.len();
                match kind {
                    0 => bytes[at] = byte,
                    1 => bytes.insert(at, byte),
                    2 => bytes.truncate(at.max(1)),
                    _ => {
                        // Repeat the line around `at` (duplicate ids, re-parented entries).
                        let start = bytes[..at]
                            .iter()
                            .rposition(|&b| b == b'\n')
                            .map_or(0, |i| i + 1);
                        let end = bytes[at..]
                            .iter()
                            .position(|&b| b == b'\n')
                            .map_or(bytes.len(), |i| at + i + 1);
                        let line = bytes[start..end].to_vec();
                        bytes.splice(end..end, line);
                    }
                }
            }
            bytes
        })
}

fn session_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        mutated(),
        proptest::collection::vec(any::<u8>(), 0..1024),
        // A valid header, then arbitrary bytes.
        proptest::collection::vec(any::<u8>(), 0..1024).prop_map(|tail| {
            let mut bytes =
                br#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}"#.to_vec();
            bytes.push(b'\n');
            bytes.extend(tail);
            bytes
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn opening_never_panics_and_appending_keeps_every_byte(bytes in session_bytes()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, &bytes).unwrap();
        if let Ok(opened) = Session::open(&path) {
            let tree = opened.session.tree();
            for entry in tree.iter() {
                let _ = tree.entry(entry.id());
                let path = tree.path_to_root(entry.id());
                prop_assert!(path.len() <= tree.len());
            }
            let _ = tree.leaf();
        }
        if let Ok(mut opened) = Session::open_writable(&path, WriteOptions::default())
            && opened.session.append_message(user("appended")).is_ok()
        {
            let after = std::fs::read(&path).unwrap();
            prop_assert!(after.starts_with(&bytes), "the old bytes changed");
            drop(opened);
            prop_assert!(Session::open(&path).is_ok(), "reopens after the append");
        }
    }
}

/// Test cases per property: `PROPTEST_CASES` when set (long runs), else 256.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// Found by the fuzz test above: a torn last line whose parent is not the line before it (so
/// its link waits for the id table) was dropped with its link still pending, and resolving the
/// link indexed past the end.
#[test]
fn a_torn_last_line_branching_off_an_earlier_entry_is_dropped_and_reported() {
    let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/"}"#;
    let line = |id: &str, parent: &str, content: &str| {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-15T10:00:01.000Z","message":{{"role":"assistant","content":{content}}}}}"#
        )
    };
    let text = [
        header.to_owned(),
        line("a", "null", r#""q""#),
        line("b", r#""a""#, r#""first answer""#),
        // Brackets that do not balance: a torn write, branching from `a`, not from `b`.
        line("t", r#""a""#, r#"[{"type":"text"[,"text":"x"}]"#),
    ]
    .join("\n");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, format!("{text}\n")).unwrap();
    let opened = Session::open(&path).unwrap();
    let tree = opened.session.tree();
    assert_eq!(tree.len(), 2);
    assert!(!tree.contains("t"));
    assert_eq!(tree.leaf().map(|id| id.as_str()), Some("b"));
    let reported: Vec<String> = opened.diagnostics.iter().map(|d| d.to_string()).collect();
    assert!(
        reported.iter().any(|d| d.contains(":4: malformed line")),
        "{reported:?}"
    );
}
