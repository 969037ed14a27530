use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::{Env, entries, text};

#[tokio::test]
async fn creates_parent_directories_and_reports_bytes() {
    let env = Env::new();
    let out = env
        .call("write", json!({"path": "a/b/c.txt", "content": "héllo"}))
        .await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(text(&out), "Successfully wrote 6 bytes to a/b/c.txt");
    assert_eq!(env.read("a/b/c.txt"), "héllo");
    assert_eq!(out.details["bytes"], 6);
    assert_eq!(out.details["created"], true);
}

#[tokio::test]
async fn overwrites_atomically_without_leaving_temp_files() {
    let env = Env::new();
    env.write("f.txt", "old content");
    let out = env
        .call("write", json!({"path": "f.txt", "content": "new"}))
        .await;
    assert!(!out.is_error);
    assert_eq!(env.read("f.txt"), "new");
    assert_eq!(out.details["created"], false);
    assert_eq!(entries(env.cwd()), vec!["f.txt"]);
}

#[tokio::test]
async fn writing_onto_a_directory_is_an_error() {
    let env = Env::new();
    std::fs::create_dir(env.cwd().join("d")).unwrap();
    let out = env
        .call("write", json!({"path": "d", "content": "x"}))
        .await;
    assert!(out.is_error);
    assert_eq!(text(&out), "Could not write d: it is a directory.");
}

#[tokio::test]
async fn a_cancelled_context_writes_nothing() {
    let env = Env::new();
    env.ctx.cancel.cancel();
    let out = env
        .call("write", json!({"path": "f.txt", "content": "x"}))
        .await;
    assert!(out.is_error);
    assert_eq!(text(&out), "Operation aborted");
    assert!(!env.cwd().join("f.txt").exists());
}
