use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::{Env, text};

fn tree() -> Env {
    let env = Env::new();
    env.write(".gitignore", "ignored/\n*.log\n");
    env.write("src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n");
    env.write("src/lib.rs", "pub fn hello() {}\n// hello again\n");
    env.write("docs/readme.md", "Say HELLO\n");
    env.write("ignored/x.rs", "fn hello() {}\n");
    env.write("debug.log", "hello from log\n");
    env.write(".hidden/h.txt", "hello hidden\n");
    env.write(".git/config", "hello git\n");
    env
}

#[tokio::test]
async fn grep_finds_matches_with_paths_and_line_numbers_respecting_gitignore() {
    let env = tree();
    let out = env.call("grep", json!({"pattern": "hello"})).await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(
        text(&out),
        ".hidden/h.txt:1: hello hidden\nsrc/lib.rs:1: pub fn hello() {}\nsrc/lib.rs:2: // hello again"
    );
}

#[tokio::test]
async fn grep_options_ignore_case_literal_glob_context_limit() {
    let env = tree();
    let out = env
        .call(
            "grep",
            json!({"pattern": "hello", "ignoreCase": true, "glob": "*.md"}),
        )
        .await;
    assert_eq!(text(&out), "docs/readme.md:1: Say HELLO");

    let out = env
        .call("grep", json!({"pattern": "println!(", "literal": true}))
        .await;
    assert_eq!(text(&out), "src/main.rs:2:     println!(\"Hello\");");

    let out = env
        .call(
            "grep",
            json!({"pattern": "println", "path": "src", "context": 1}),
        )
        .await;
    assert_eq!(
        text(&out),
        "main.rs-1- fn main() {\nmain.rs:2:     println!(\"Hello\");\nmain.rs-3- }"
    );

    let out = env
        .call("grep", json!({"pattern": "hello", "limit": 1}))
        .await;
    assert_eq!(
        text(&out),
        ".hidden/h.txt:1: hello hidden\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern]"
    );
    assert_eq!(out.details["matchLimitReached"], 1);
}

#[tokio::test]
async fn grep_reports_no_matches_and_bad_regexes() {
    let env = tree();
    let out = env.call("grep", json!({"pattern": "zzz"})).await;
    assert!(!out.is_error);
    assert_eq!(text(&out), "No matches found");
    let out = env.call("grep", json!({"pattern": "("})).await;
    assert!(out.is_error);
    assert!(
        text(&out).starts_with("Invalid regex pattern"),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn grep_cuts_long_lines() {
    let env = Env::new();
    env.write("long.txt", format!("match {}\n", "z".repeat(600)));
    let out = env.call("grep", json!({"pattern": "match"})).await;
    let body = text(&out);
    assert!(body.contains("... [truncated]"));
    assert!(body.ends_with("[Some lines truncated to 500 chars. Use read tool to see full lines]"));
}

#[tokio::test]
async fn find_matches_names_and_paths_respecting_gitignore() {
    let env = tree();
    let out = env.call("find", json!({"pattern": "*.rs"})).await;
    assert_eq!(text(&out), "src/lib.rs\nsrc/main.rs");
    let out = env.call("find", json!({"pattern": "src/**/*.rs"})).await;
    assert_eq!(text(&out), "src/lib.rs\nsrc/main.rs");
    let out = env.call("find", json!({"pattern": "src"})).await;
    assert_eq!(text(&out), "src/");
    let out = env
        .call("find", json!({"pattern": "*.rs", "limit": 1}))
        .await;
    assert_eq!(
        text(&out),
        "src/lib.rs\n\n[1 results limit reached. Use limit=2 for more, or refine pattern]"
    );
    let out = env.call("find", json!({"pattern": "*.zig"})).await;
    assert_eq!(text(&out), "No files found matching pattern");
}

#[tokio::test]
async fn ls_sorts_marks_directories_includes_dotfiles_and_limits() {
    let env = tree();
    let out = env.call("ls", json!({})).await;
    assert_eq!(
        text(&out),
        ".git/\n.gitignore\n.hidden/\ndebug.log\ndocs/\nignored/\nsrc/"
    );
    let out = env.call("ls", json!({"path": "src", "limit": 1})).await;
    assert_eq!(
        text(&out),
        "lib.rs\n\n[1 entries limit reached. Use limit=2 for more]"
    );
    let out = env.call("ls", json!({"path": "src/lib.rs"})).await;
    assert!(out.is_error);
    assert_eq!(text(&out), "Not a directory: src/lib.rs");
    let out = env.call("ls", json!({"path": "nowhere"})).await;
    assert_eq!(text(&out), "Path not found: nowhere");
}
