//! Every leaf of every fixture written by the real Pi projects exactly as Pi's own
//! `buildSessionContext` did: Pi 0.73's fixtures (`tests/fixtures/pi/README.md`) and Pi 1.6's
//! (`tests/fixtures/pi1/README.md`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::Value;
use strata_context::{Assembler, build, to_pi_json, write_pi_json};
use strata_session::{EntryId, Session, Tree};

/// Each fixture as `(directory under tests/fixtures, name)`.
const FIXTURES: [(&str, &str); 11] = [
    ("pi", "every-entry-type"),
    ("pi", "compactions"),
    ("pi", "branches"),
    ("pi", "images"),
    ("pi", "strata-entries"),
    ("pi", "legacy-v1"),
    ("pi", "legacy-v2"),
    ("pi1", "system-and-compactions"),
    ("pi1", "context-edits"),
    ("pi1", "late-system"),
    ("pi1", "legacy-v1-no-api"),
];

fn fixture_dir(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(dir)
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Pi's id for each strata id. Pi's v1 migration draws fresh ids, so legacy files are matched
/// by position against the file Pi rewrote; other files share ids.
fn pi_ids((dir, name): (&str, &str), tree: &Tree) -> HashMap<String, EntryId> {
    let migrated = fixture_dir(dir).join(format!("{name}.migrated.jsonl"));
    if !migrated.exists() {
        return tree
            .iter()
            .map(|entry| (entry.id().to_string(), entry.id().clone()))
            .collect();
    }
    let text = std::fs::read_to_string(&migrated).unwrap_or_else(|e| panic!("{e}"));
    let pi_ids: Vec<String> = text
        .lines()
        .skip(1)
        .map(|line| {
            let value: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}"));
            value["id"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    assert_eq!(
        pi_ids.len(),
        tree.len(),
        "{name}: Pi and strata see different entry counts"
    );
    pi_ids
        .into_iter()
        .zip(tree.iter().map(|entry| entry.id().clone()))
        .collect()
}

fn open((dir, name): (&str, &str)) -> Session {
    let path = fixture_dir(dir).join(format!("{name}.jsonl"));
    let opened = Session::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        opened.diagnostics.is_empty(),
        "{name}: {:?}",
        opened.diagnostics
    );
    opened.session
}

#[test]
fn every_leaf_of_every_fixture_projects_as_pi_does() {
    let mut compared = 0;
    for fixture in FIXTURES {
        let (dir, name) = fixture;
        let session = open(fixture);
        let tree = session.tree();
        let expected = read_json(&fixture_dir(dir).join(format!("{name}.expected.json")));
        let Value::Object(expected) = expected else {
            panic!("{name}: expected file is not an object")
        };
        let ids = pi_ids(fixture, tree);
        assert_eq!(
            expected.len(),
            tree.len() + 1,
            "{name}: one expectation per entry plus $default"
        );
        for (pi_leaf, pi_context) in &expected {
            let leaf = if pi_leaf == "$default" {
                tree.leaf().cloned()
            } else {
                Some(
                    ids.get(pi_leaf)
                        .unwrap_or_else(|| panic!("{name}: Pi's {pi_leaf} unknown"))
                        .clone(),
                )
            };
            let context =
                build(tree, leaf.as_ref()).unwrap_or_else(|e| panic!("{name} {pi_leaf}: {e}"));
            assert_eq!(to_pi_json(&context), *pi_context, "{name}, leaf {pi_leaf}");
            compared += 1;
        }
    }
    assert!(compared > 180, "only {compared} leaves compared");
}

#[test]
fn assembler_matches_a_fresh_build_for_every_leaf_in_file_order() {
    for fixture in FIXTURES {
        let name = fixture.1;
        let session = open(fixture);
        let tree = session.tree();
        let mut assembler = Assembler::new();
        for entry in tree.iter() {
            let leaf = Some(entry.id().clone());
            let fresh = build(tree, leaf.as_ref()).unwrap_or_else(|e| panic!("{name}: {e}"));
            let (assembled, _) = assembler
                .context(tree, leaf.as_ref())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(*assembled, fresh, "{name}, leaf {}", entry.id());
        }
    }
}

#[test]
fn text_and_json_views_name_every_message_of_every_fixture() {
    for fixture in FIXTURES {
        let name = fixture.1;
        let session = open(fixture);
        let tree = session.tree();
        let context = build(tree, tree.leaf()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let text = strata_context::to_text(&context);
        let json = strata_context::to_json(&context);
        let listed = json["messages"].as_array().map_or(0, Vec::len);
        assert_eq!(listed, context.messages.len(), "{name}");
        for (index, message) in context.messages.iter().enumerate() {
            let line = text
                .lines()
                .find(|line| {
                    line.trim_start()
                        .starts_with(&format!("{}  {}", index + 1, message.entry_id))
                })
                .unwrap_or_else(|| panic!("{name}: no line for message {} in\n{text}", index + 1));
            assert!(
                line.contains(" B ") || line.contains(" KiB "),
                "{name}: no size in {line:?}"
            );
            assert_eq!(
                json["messages"][index]["entryId"],
                message.entry_id.as_str(),
                "{name}"
            );
            assert_eq!(
                json["messages"][index]["message"],
                message.message.to_json(),
                "{name}"
            );
        }
    }
}

/// The streaming writer prints what pretty-printing `to_pi_json` prints, byte for byte, at
/// every leaf of every fixture.
#[test]
fn the_streamed_pi_json_is_the_pretty_printed_value_byte_for_byte() {
    let mut compared = 0;
    for fixture in FIXTURES {
        let session = open(fixture);
        let tree = session.tree();
        let leaves = tree.iter().map(|entry| Some(entry.id().clone()));
        for leaf in leaves.chain([None, tree.leaf().cloned()]) {
            let context = build(tree, leaf.as_ref()).unwrap_or_else(|e| panic!("{e}"));
            let expected = serde_json::to_vec_pretty(&to_pi_json(&context)).unwrap_or_default();
            let mut streamed = Vec::new();
            write_pi_json(&context, &mut streamed).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                String::from_utf8_lossy(&streamed),
                String::from_utf8_lossy(&expected),
                "{}, leaf {leaf:?}",
                fixture.1
            );
            compared += 1;
        }
    }
    assert!(compared > 180, "only {compared} leaves compared");
}

/// Built for printing, every leaf of every fixture prints exactly the bytes Pi printed for it
/// (the expected files are Pi's `JSON.stringify(contexts, null, 2)`), with what the typed
/// build reads: most messages are printed from their lines, re-indented.
#[test]
fn a_context_built_for_printing_prints_the_bytes_pi_printed() {
    let (mut compared, mut from_lines) = (0, 0);
    for fixture in FIXTURES {
        let (dir, name) = fixture;
        let session = open(fixture);
        let tree = session.tree();
        let expected_path = fixture_dir(dir).join(format!("{name}.expected.json"));
        let expected_text = std::fs::read_to_string(&expected_path).unwrap_or_default();
        let expected = read_json(&expected_path);
        let ids = pi_ids(fixture, tree);
        let mut printed_all = Vec::new();
        for (pi_leaf, pi_context) in expected.as_object().into_iter().flatten() {
            let leaf = match pi_leaf.as_str() {
                "$default" => tree.leaf().cloned(),
                other => ids.get(other).cloned(),
            };
            let for_print = strata_context::build_for_print(tree, leaf.as_ref())
                .unwrap_or_else(|e| panic!("{name} {pi_leaf}: {e}"));
            let typed = build(tree, leaf.as_ref()).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(for_print.skipped, typed.skipped, "{name}, leaf {pi_leaf}");
            assert_eq!(
                to_pi_json(&for_print),
                *pi_context,
                "{name}, leaf {pi_leaf}"
            );
            let mut out = Vec::new();
            write_pi_json(&for_print, &mut out).unwrap_or_else(|e| panic!("{e}"));
            let text = String::from_utf8(out).unwrap_or_else(|e| panic!("{e}"));
            // One level deeper, as a member of the expected file's object.
            printed_all.push(format!(
                "  {}: {}",
                serde_json::to_string(pi_leaf).unwrap_or_default(),
                text.replace('\n', "\n  ")
            ));
            from_lines += for_print
                .messages
                .iter()
                .filter(|message| message.message.json().is_some())
                .count();
            compared += 1;
        }
        let printed_file = format!("{{\n{}\n}}\n", printed_all.join(",\n"));
        assert_eq!(printed_file, expected_text, "{name}");
    }
    assert!(compared > 180, "only {compared} leaves compared");
    assert!(
        from_lines > 300,
        "only {from_lines} messages printed from their lines"
    );
}

/// Printing reads kept messages from the file again: bytes changed since they were checked
/// are reported, not printed.
#[test]
fn a_session_file_changed_before_printing_is_reported() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("session.jsonl");
    let source = fixture_dir("pi").join("every-entry-type.jsonl");
    let text = std::fs::read_to_string(&source).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{e}"));
    let opened = Session::open(&path).unwrap_or_else(|e| panic!("{e}"));
    let tree = opened.session.tree();
    let context =
        strata_context::build_for_print(tree, tree.leaf()).unwrap_or_else(|e| panic!("{e}"));
    let in_file = context
        .messages
        .iter()
        .filter(|message| message.message.file_span().is_some())
        .count();
    assert!(in_file > 5, "{in_file} messages kept in the file");
    // The same length, a raw control byte inside the first user message's text.
    let changed = text.replacen("List the files", "List\u{1}the files", 1);
    assert_eq!(changed.len(), text.len());
    std::fs::write(&path, changed).unwrap_or_else(|e| panic!("{e}"));
    let error = write_pi_json(&context, Vec::new()).expect_err("the change is seen");
    assert!(error.to_string().contains("changed"), "{error}");
}
