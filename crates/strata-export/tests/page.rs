//! The page of a real Pi 1.x session (compactions, system changes) and of a file with a torn
//! line: every user text is there escaped, the leaf is named, the totals are the accounting's.

#![allow(clippy::unwrap_used)] // helpers of tests: a failure is the test failing

use std::path::PathBuf;

use strata_session::{AgentMessage, Entry, Session};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/pi1")
        .join(name)
}

#[test]
fn a_pi_session_becomes_one_page_with_every_user_text_and_the_leaf() {
    let opened = Session::open(fixture("system-and-compactions.jsonl")).unwrap();
    let page = strata_export::page(&opened.session, &opened.diagnostics);
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(
        !page.contains("<script src") && !page.contains("<link "),
        "nothing is fetched"
    );
    let tree = opened.session.tree();
    let mut users = 0;
    for entry in tree.iter() {
        if let Ok(Entry::Message(message)) = entry.entry()
            && let AgentMessage::User(user) = &*message.message
        {
            let text = match &user.content {
                strata_session::MessageContent::Text(text) => text.clone(),
                strata_session::MessageContent::Blocks(_) => continue,
            };
            users += 1;
            assert!(
                page.contains(&strata_export::escape(&text)),
                "the user text {text:?} is on the page"
            );
        }
    }
    assert!(users > 0);
    let leaf = tree.leaf().unwrap();
    assert!(page.contains(&format!(
        "Current leaf: <a href=\"#entry-{leaf}\">{leaf}</a>"
    )));
    let totals = strata_accounting::Totals::of(&strata_accounting::records(tree));
    let requests = format!(
        "{} — input {} · output {} · cache read {} · cache write {} · ${:.4}",
        totals.requests,
        totals.usage.input,
        totals.usage.output,
        totals.usage.cache_read,
        totals.usage.cache_write(),
        totals.cost
    );
    assert!(totals.requests > 0);
    assert!(
        page.contains(&strata_export::escape(&requests)),
        "{requests}"
    );
}

#[test]
fn a_torn_line_is_reported_on_the_page_not_fatal() {
    let text = std::fs::read_to_string(fixture("system-and-compactions.jsonl")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("torn.jsonl");
    std::fs::write(&file, format!("{text}{{\"type\":\"message\",\"id\":\"tor")).unwrap();
    let opened = Session::open(&file).unwrap();
    assert!(!opened.diagnostics.is_empty());
    let page = strata_export::page(&opened.session, &opened.diagnostics);
    assert!(
        page.contains("damaged line(s) skipped or repaired"),
        "the diagnostics are shown"
    );
}

/// A session with markdown, an edit, a branch, a leaf marker and an unexpected cache break.
fn rich_page() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rich.jsonl");
    let opened = Session::open(path).unwrap();
    assert!(opened.diagnostics.is_empty());
    strata_export::page(&opened.session, &opened.diagnostics)
}

#[test]
fn the_page_renders_markdown_diffs_code_the_chart_and_no_leaf_branch() {
    let page = rich_page();
    // The name is the title, not the session's UUID.
    assert!(page.contains("<title>Fix the greeting typo</title>"));
    assert!(page.contains("<h1>Fix the greeting typo</h1>"));
    // Markdown: emphasis, a numbered list, a heading, inline code; raw HTML shown, not run.
    assert!(page.contains("<strong>Helo</strong>"));
    assert!(page.contains("<li>find it</li>"));
    assert!(page.contains("<h2>Findings</h2>"));
    assert!(page.contains("<code>src/greeting.rs</code>"));
    assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
    assert_eq!(
        page.matches("<script>").count(),
        1,
        "only the page's own script"
    );
    // Highlighted code and a coloured diff under the edited path.
    assert!(page.contains("<span class=\"tok-k\">pub</span>"));
    assert!(page.contains("<code class=\"tool-target\">src/greeting.rs</code>"));
    assert!(page.contains("<span class=\"diff-del\">- pub fn greet() -&gt; &amp;&#39;static str { &quot;Helo&quot; }</span>"));
    assert!(page.contains("<span class=\"diff-add\">+ pub fn greet() -&gt; &amp;&#39;static str { &quot;Hello&quot; }</span>"));
    assert!(page.contains("<code class=\"tool-target\">$ cargo test --quiet</code>"));
    // Readable times.
    assert!(page.contains("2026-11-20 09:00:00 UTC"));
    // One fork (two user messages under the name), not two: the leaf marker is no branch.
    assert_eq!(page.matches("<div class=\"fork\"").count(), 1);
    assert!(!page.contains("entry-l0000001"));
    // The chart: a bar per request, the unexpected break at request 3 and the expected one at
    // request 4 marked and explained, the small prompt said as such.
    assert_eq!(page.matches("<g class=\"request\"").count(), 4);
    assert_eq!(
        page.matches("<g class=\"break break-unexpected\"").count(),
        1
    );
    assert_eq!(page.matches("<g class=\"break break-expected\"").count(), 1);
    assert!(page.contains("1 unexpected, 1 expected"));
    assert!(page.contains("moved to another branch, which leaves this one after n0000001"));
    assert!(page.contains("under the model's cache minimum of 1024"));
    // The sidebar lists every drawn entry, searchable.
    assert_eq!(page.matches("data-search=").count(), 9);
}

/// The installed Chromium, or `None` (the caller says why it skips).
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("STRATA_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser", "google-chrome"].map(|n| dir.join(n)))
        .find(|candidate| candidate.is_file())
}

/// The DOM after the page's script ran, as headless Chromium has it.
fn dom_in_chromium(browser: &std::path::Path, url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            &format!("--user-data-dir={}", profile.path().display()),
            "--dump-dom",
            url,
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{browser:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn in_chromium_the_search_filters_the_sidebar_and_the_page_renders() {
    let Some(browser) = chromium() else {
        eprintln!(
            "SKIPPED: no chromium on PATH (install Debian's `chromium`, see .ci/install-chromium, or set STRATA_CHROMIUM)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("page.html");
    std::fs::write(&file, rich_page()).unwrap();
    let url = format!("file://{}", file.display());

    // Without a query every sidebar line shows.
    let dom = dom_in_chromium(&browser, &url);
    assert!(
        dom.contains("<h2>Findings</h2>"),
        "markdown heading in the DOM"
    );
    assert!(dom.contains("class=\"diff-add\""), "the diff is coloured");
    assert_eq!(dom.matches("<li class=\"toc-").count(), 9);
    assert!(!dom.contains("hidden=\"\""));

    // `?q=` searches on load as typing would: only the lines mentioning "cargo test" stay.
    let dom = dom_in_chromium(&browser, &format!("{url}?q=cargo%20test"));
    let lines: Vec<&str> = dom
        .split("<li class=\"toc-")
        .skip(1)
        .map(|item| item.split("</li>").next().unwrap())
        .collect();
    assert_eq!(lines.len(), 9);
    let shown: Vec<&&str> = lines.iter().filter(|l| !l.contains("hidden=")).collect();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(shown[0].contains("entry-a0000002"), "{shown:?}");
    assert!(dom.contains("1 of 9 entries match"), "the count is said");
}

#[test]
fn calls_the_permission_rules_refused_or_asked_about_are_marked() {
    let header = r#"{"type":"session","version":3,"id":"019b0000-0000-7000-8000-00000000beef","timestamp":"2026-11-20T09:00:00.000Z","cwd":"/home/dev/p"}"#;
    let user = r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-11-20T09:00:01.000Z","message":{"role":"user","content":"clean up","timestamp":0}}"#;
    let assistant = r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-11-20T09:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"rm -rf build"}},{"type":"toolCall","id":"t2","name":"write","arguments":{"path":"a.txt","content":"x"}},{"type":"toolCall","id":"t3","name":"bash","arguments":{"command":"ls"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":0}}"#;
    let denied = r#"{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-11-20T09:00:03.000Z","message":{"role":"toolResult","toolCallId":"t1","toolName":"bash","content":[{"type":"text","text":"Permission denied: bash was not run"}],"isError":true,"details":{"strataPermission":{"verdict":"deny","ran":false,"rule":"Bash(rm:*)","source":"/home/dev/.claude/settings.json"}},"timestamp":0}}"#;
    let asked = r#"{"type":"message","id":"r2","parentId":"r1","timestamp":"2026-11-20T09:00:04.000Z","message":{"role":"toolResult","toolCallId":"t2","toolName":"write","content":[{"type":"text","text":"Wrote a.txt"}],"isError":false,"details":{"strataPermission":{"verdict":"ask","ran":true,"source":"permission mode ask","answer":{"answer":"allow_session"}}},"timestamp":0}}"#;
    let plain = r#"{"type":"message","id":"r3","parentId":"r2","timestamp":"2026-11-20T09:00:05.000Z","message":{"role":"toolResult","toolCallId":"t3","toolName":"bash","content":[{"type":"text","text":"a.txt"}],"isError":false,"timestamp":0}}"#;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(
        &path,
        [header, user, assistant, denied, asked, plain].join("\n") + "\n",
    )
    .unwrap();
    let opened = Session::open(&path).unwrap();
    assert!(opened.diagnostics.is_empty(), "{:?}", opened.diagnostics);
    let page = strata_export::page(&opened.session, &opened.diagnostics);
    assert!(
        page.contains(
            "Result of bash — refused by `Bash(rm:*)` (/home/dev/.claude/settings.json) (error)"
        ),
        "the refusal is marked"
    );
    assert!(page.contains("Result of write — asked the user: allowed for the session</span>"));
    assert!(
        page.contains("Result of bash</span>"),
        "a plain call is not marked"
    );
}

#[test]
fn a_child_agent_is_listed_under_its_spawning_entry_with_its_own_conversation() {
    let from = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/delegation");
    let dir = tempfile::tempdir().unwrap();
    let parent = dir.path().join("parent.jsonl");
    std::fs::copy(from.join("parent.jsonl"), &parent).unwrap();
    let alone = {
        let opened = Session::open(&parent).unwrap();
        strata_export::page(&opened.session, &opened.diagnostics)
    };
    std::fs::create_dir(dir.path().join("parent.subagents")).unwrap();
    let child = dir.path().join("parent.subagents/1000_call_1.jsonl");
    std::fs::copy(from.join("parent.subagents/1000_call_1.jsonl"), &child).unwrap();
    let opened = Session::open(&parent).unwrap();
    let page = strata_export::page(&opened.session, &opened.diagnostics);

    let spawning = page.find("id=\"entry-a1\"").unwrap();
    let listed = page.find("Delegated to 1 child agent:").unwrap();
    let next = page.find("id=\"entry-r1\"").unwrap();
    assert!(spawning < listed && listed < next, "between a1 and r1");
    assert!(page.contains(&format!(
        "child (fork): make a file — started 2026-11-20 09:00:03 UTC · 5 messages · {}",
        child.display()
    )));
    assert!(page.contains("Started fork: fork: $0.0072 against fresh $0.0174"));
    // The child's task, from its own file.
    assert!(page.contains("Task: make a file"));
    // A fork's copy of the parent's conversation is not drawn again.
    let count = |page: &str| page.matches("please delegate the file").count();
    assert_eq!(count(&page), count(&alone));
    // "Go to leaf" finds the parent's leaf, not the child's.
    assert!(page.contains("class=\"entry child-entry message role-assistant on-path leaf\""));
    assert!(page.contains("the child's last entry"));
}
