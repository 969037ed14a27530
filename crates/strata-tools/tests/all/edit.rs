use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::{Env, entries, text};

#[tokio::test]
async fn several_replacements_in_one_call_with_a_diff() {
    let env = Env::new();
    env.write("f.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    let out = env
        .call(
            "edit",
            json!({"path": "f.rs", "edits": [
                {"oldText": "fn a() {}", "newText": "fn alpha() {}"},
                {"oldText": "fn c() {}", "newText": "fn gamma() {}"}
            ]}),
        )
        .await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(text(&out), "Successfully replaced 2 block(s) in f.rs.");
    assert_eq!(
        env.read("f.rs"),
        "fn alpha() {}\nfn b() {}\nfn gamma() {}\n"
    );
    assert_eq!(
        out.details["diff"],
        "--- a/f.rs\n+++ b/f.rs\n@@ -1,3 +1,3 @@\n-fn a() {}\n+fn alpha() {}\n fn b() {}\n-fn c() {}\n+fn gamma() {}\n"
    );
    assert_eq!(out.details["firstChangedLine"], 1);
}

#[tokio::test]
async fn no_match_names_the_edit_and_leaves_the_file() {
    let env = Env::new();
    env.write("f.txt", "one\ntwo\n");
    let out = env
        .call(
            "edit",
            json!({"path": "f.txt", "edits": [
                {"oldText": "one", "newText": "1"},
                {"oldText": "three", "newText": "3"}
            ]}),
        )
        .await;
    assert!(out.is_error);
    assert_eq!(
        text(&out),
        "Could not find edits[1] in f.txt. The oldText must match exactly including all whitespace and newlines."
    );
    assert_eq!(env.read("f.txt"), "one\ntwo\n");
}

#[tokio::test]
async fn several_matches_are_refused_with_the_count() {
    let env = Env::new();
    env.write("f.txt", "x = 1\nx = 1\n");
    let out = env
        .call(
            "edit",
            json!({"path": "f.txt", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]}),
        )
        .await;
    assert!(out.is_error);
    assert_eq!(
        text(&out),
        "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique."
    );
    assert_eq!(env.read("f.txt"), "x = 1\nx = 1\n");
}

#[tokio::test]
async fn a_missing_file_is_an_error() {
    let env = Env::new();
    let out = env
        .call(
            "edit",
            json!({"path": "none.txt", "edits": [{"oldText": "a", "newText": "b"}]}),
        )
        .await;
    assert!(out.is_error);
    assert_eq!(text(&out), "Could not edit file: none.txt. File not found.");
}

#[tokio::test]
async fn crlf_and_bom_survive_an_edit() {
    let env = Env::new();
    env.write("w.txt", "\u{FEFF}first\r\nsecond\r\nthird\r\n");
    let out = env
        .call(
            "edit",
            json!({"path": "w.txt", "edits": [{"oldText": "first\nsecond", "newText": "1st\n2nd"}]}),
        )
        .await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(env.read("w.txt"), "\u{FEFF}1st\r\n2nd\r\nthird\r\n");
}

#[tokio::test]
async fn the_write_is_atomic_keeps_permissions_and_leaves_no_temp_file() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    env.write("run.sh", "echo old\n");
    let path = env.cwd().join("run.sh");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
    let inode_before = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).unwrap());
    let out = env
        .call(
            "edit",
            json!({"path": "run.sh", "edits": [{"oldText": "old", "newText": "new"}]}),
        )
        .await;
    assert!(!out.is_error);
    assert_eq!(env.read("run.sh"), "echo new\n");
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o750);
    // A rename put a new file in place (the old one was never written half-way).
    assert_ne!(std::os::unix::fs::MetadataExt::ino(&meta), inode_before);
    assert_eq!(entries(env.cwd()), vec!["run.sh"]);
}

#[tokio::test]
async fn the_legacy_single_edit_form_is_accepted() {
    let env = Env::new();
    env.write("f.txt", "hello world");
    let out = env
        .call(
            "edit",
            json!({"path": "f.txt", "oldText": "world", "newText": "there"}),
        )
        .await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(env.read("f.txt"), "hello there");
}

#[tokio::test]
async fn empty_edits_and_identical_replacements_are_errors() {
    let env = Env::new();
    env.write("f.txt", "abc");
    let out = env
        .call("edit", json!({"path": "f.txt", "edits": []}))
        .await;
    assert!(out.is_error);
    assert!(text(&out).contains("field `edits`"), "{}", text(&out));
    let out = env
        .call(
            "edit",
            json!({"path": "f.txt", "edits": [{"oldText": "b", "newText": "b"}]}),
        )
        .await;
    assert!(out.is_error);
    assert!(
        text(&out).starts_with("No changes made to f.txt."),
        "{}",
        text(&out)
    );
}
