//! End-to-end tests of `strata export` on real Pi sessions (branches, compactions, every
//! entry type, images).

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::{fixture, strata, strata_ok};

/// As the page escapes text.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn export(file: &Path) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("page.html");
    let printed = strata_ok(&[
        "export",
        file.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(printed.trim(), out.to_str().unwrap());
    std::fs::read_to_string(&out).unwrap()
}

fn entries(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The texts a reader must find for an entry: message text, thinking, tool output, bash
/// command and output, summaries, names and labels.
fn texts(entry: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut content = |value: &Value| match value {
        Value::String(s) => found.push(s.clone()),
        Value::Array(blocks) => {
            for block in blocks {
                for key in ["text", "thinking"] {
                    if let Some(s) = block[key].as_str() {
                        found.push(s.to_owned());
                    }
                }
                if let Some(name) = block["name"].as_str() {
                    found.push(format!("Tool call: {name}"));
                }
            }
        }
        _ => {}
    };
    let message = &entry["message"];
    content(&message["content"]);
    content(&entry["content"]);
    for (value, key) in [
        (message, "command"),
        (message, "output"),
        (message, "summary"),
        (message, "errorMessage"),
        (entry, "summary"),
        (entry, "name"),
        (entry, "label"),
        (entry, "thinkingLevel"),
        (entry, "modelId"),
        (entry, "customType"),
    ] {
        if let Some(s) = value[key].as_str() {
            found.push(s.to_owned());
        }
    }
    found.retain(|s| !s.is_empty());
    found
}

#[test]
fn every_entry_and_its_text_appears_in_the_page() {
    for name in [
        "branches",
        "compactions",
        "every-entry-type",
        "images",
        "strata-entries",
        "legacy-v1",
        "legacy-v2",
    ] {
        let file = fixture(&format!("pi/{name}.jsonl"));
        let page = export(&file);
        for entry in entries(&file) {
            // A `leaf` marker says where the user stood: no entry of its own, no branch.
            if entry["type"] == "leaf" {
                let id = entry["id"].as_str().unwrap();
                assert!(
                    !page.contains(&format!("id=\"entry-{id}\"")),
                    "{name}: {id}"
                );
                assert!(!page.contains(&format!("from {id}")), "{name}: {id}");
                continue;
            }
            if let Some(id) = entry["id"].as_str() {
                assert!(
                    page.contains(&format!("id=\"entry-{}\"", escape(id))),
                    "{name}: entry {id} missing"
                );
            }
            for text in texts(&entry) {
                // Each line on its own: long texts are whole in the page, but check line by
                // line for a useful failure message.
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    assert!(
                        page.contains(&escape(line)),
                        "{name}: text of {} missing: {line}",
                        entry["id"]
                    );
                }
            }
        }
    }
}

#[test]
fn every_branch_is_present_and_the_leaf_is_marked() {
    for name in ["branches", "compactions", "strata-entries"] {
        let file = fixture(&format!("pi/{name}.jsonl"));
        let page = export(&file);
        // `leaf` markers are not drawn: no entry, no branch of their own.
        let all: Vec<Value> = entries(&file)
            .into_iter()
            .filter(|e| e["type"] != "leaf")
            .collect();
        let mut children: HashMap<String, usize> = HashMap::new();
        let mut roots = 0;
        for entry in &all {
            match entry["parentId"].as_str() {
                Some(parent) => *children.entry(parent.to_owned()).or_default() += 1,
                None => roots += 1,
            }
        }
        let forks = children.values().filter(|&&n| n > 1).count() + usize::from(roots > 1);
        let branches: usize = children.values().filter(|&&n| n > 1).sum::<usize>()
            + if roots > 1 { roots } else { 0 };
        assert!(forks > 0 || name == "strata-entries", "{name} has branches");
        assert_eq!(page.matches("<div class=\"fork\"").count(), forks, "{name}");
        assert_eq!(
            page.matches("<details class=\"branch").count(),
            branches,
            "{name}"
        );

        // The leaf strata resolves (Pi's: the last entry, unless a `leaf` entry moved it).
        let session = strata_session::Session::open(&file).unwrap().session;
        let leaf = session.tree().leaf().unwrap().as_str().to_owned();
        assert_eq!(page.matches("current leaf</span>").count(), 1, "{name}");
        let section = page
            .split("<section ")
            .find(|s| s.contains(&format!("id=\"entry-{leaf}\"")))
            .unwrap();
        assert!(
            section.starts_with("class=\"entry") && section.contains(" leaf\""),
            "{section}"
        );
        assert!(section.contains("current leaf</span>"));
        // Exactly one branch per fork on the way to the leaf is unfolded and marked.
        let path = session
            .tree()
            .path_to_root(session.tree().leaf().unwrap())
            .len();
        assert_eq!(page.matches("class=\"entry ").count(), all.len(), "{name}");
        assert!(page.matches(" on-path").count() >= path, "{name}");
    }
}

#[test]
fn compaction_and_branch_summaries_and_usage_are_shown() {
    let file = fixture("pi/compactions.jsonl");
    let page = export(&file);
    let compactions = entries(&file)
        .into_iter()
        .filter(|e| e["type"] == "compaction")
        .count();
    assert_eq!(page.matches("compaction-summary").count(), compactions);
    let page = export(&fixture("pi/branches.jsonl"));
    assert!(page.contains("branch-summary"));
    // Per-request usage from the assistant messages: `input 1200 · output 340 · cache read 800`.
    assert!(page.contains("input 1200 · output 340 · cache read 800 · cache write 400"));
    assert!(page.contains("$0.0104"));
    let page = export(&fixture("pi/every-entry-type.jsonl"));
    assert!(page.contains("<details class=\"thinking\"><summary>Thinking</summary>"));
    assert!(page.contains("<details class=\"tool-call\">"));
    assert!(page.contains("<details class=\"tool-result"));
    assert!(page.contains("Label “"));
}

#[test]
fn the_page_is_self_contained() {
    let page = export(&fixture("pi/images.jsonl"));
    assert!(page.contains("src=\"data:image/"));
    assert!(!page.contains("src=\"http"));
    assert!(!page.contains("<link"));
    assert!(!page.contains("@import"));
    assert_eq!(page.matches("<script>").count(), 1);
    assert_eq!(page.matches("<style>").count(), 1);
}

#[test]
fn markup_in_messages_is_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("evil.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"type":"session","version":3,"id":"s-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}"#,
            "\n",
            r#"{"type":"session_info","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","name":"<b>bold</b> name"}"#,
            "\n",
            r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"<script>alert('x')</script> & <img src=x onerror=alert(1)>","timestamp":1}}"#,
            "\n",
            r#"{"type":"message","id":"a3","parentId":"a2","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"</details></section><script>bad()</script>"},{"type":"toolCall","id":"c1","name":"<i>tool</i>","arguments":{"x":"</pre><script>"}}],"api":"a","provider":"p","model":"m\"><script>","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}}"#,
            "\n",
            r#"{"type":"message","id":"a4","parentId":"a3","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"user","content":[{"type":"image","data":"\"><script>x</script>","mimeType":"image/png"}],"timestamp":3}}"#,
            "\n",
        ),
    )
    .unwrap();
    let page = export(&file);
    assert_eq!(
        page.matches("<script>").count(),
        1,
        "only the page's own script"
    );
    assert!(!page.contains("<img src=x"));
    assert!(!page.contains("<b>bold"));
    assert!(!page.contains("<i>tool"));
    assert!(page.contains(
        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(1)&gt;"
    ));
    assert!(page.contains("&lt;/details&gt;&lt;/section&gt;&lt;script&gt;bad()&lt;/script&gt;"));
    assert!(page.contains("<title>&lt;b&gt;bold&lt;/b&gt; name</title>"));
}

#[test]
fn the_default_output_is_the_session_name_in_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    let source = fixture("pi/branches.jsonl");
    let output = Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir.path())
        .args(["export", source.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let expected = dir.path().join("branches.html");
    assert!(expected.is_file());
    let printed = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        Path::new(printed.trim()).canonicalize().unwrap(),
        expected.canonicalize().unwrap()
    );
}

#[test]
fn a_damaged_session_is_exported_and_what_was_skipped_is_said_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("damaged.jsonl");
    let mut text = std::fs::read_to_string(fixture("pi/branches.jsonl")).unwrap();
    text.push_str("{\"type\":\"message\",\"id\":\"torn\n");
    std::fs::write(&session, &text).unwrap();
    let page = dir.path().join("page.html");
    let output = strata(&[
        "export",
        session.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(page.is_file());
    let line = text.lines().count();
    assert!(
        stderr.contains(&format!("{}:{line}", session.display())),
        "{stderr}"
    );
}

#[test]
fn a_missing_file_is_a_clear_error() {
    let output = strata(&["export", "/nonexistent/session.jsonl"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("/nonexistent/session.jsonl"));
}

#[test]
fn export_never_replaces_a_session_and_needs_force_for_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("a.jsonl");
    std::fs::copy(fixture("pi/branches.jsonl"), &session).unwrap();
    let before = std::fs::read(&session).unwrap();
    let path = session.to_str().unwrap();
    for args in [
        vec!["export", path, "-o", path],
        vec!["export", path, "-o", path, "--force"],
    ] {
        let out = strata(&args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("session"), "{err}");
        assert_eq!(std::fs::read(&session).unwrap(), before);
    }
    let page = dir.path().join("page.html");
    std::fs::write(&page, "mine").unwrap();
    let out = strata(&["export", path, "-o", page.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    assert_eq!(std::fs::read_to_string(&page).unwrap(), "mine");
    strata_ok(&["export", path, "-o", page.to_str().unwrap(), "--force"]);
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .starts_with("<!DOCTYPE html>")
    );
}
