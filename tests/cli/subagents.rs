//! Delegation from the `strata` binary: `task` offered when `tools` names it, a child held to
//! the run's permission mode, its answer back as the call's result, its file linked to the
//! parent, its progress in `--mode json` as the call's updates; the child under its spawning
//! entry in `strata tree` and the export, its start's reason in `strata context`; and in the
//! terminal UI the footer's cost split, `/agents` opening the child, `/tree` listing it.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::{mock_with, project, strata_ok, text, tmux_available};
use crate::tui::{Tmux, quoted, strata_command_on, type_line};

/// The parent delegates; the child runs `echo ran > ran.txt` and answers; the parent ends.
fn delegation_scenario() -> strata_mock::Scenario {
    let toml = r#"name = "delegate"
playback = "sequence"
[[turn]]
[[turn.tool_call]]
tool = "task"
args = { description = "make a file", prompt = "Run `echo ran > ran.txt` and say what happened." }

[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "echo ran > ran.txt" }

[[turn]]
text = "the child's answer: the command was refused"

[[turn]]
text = "done"
"#;
    strata_mock::Scenario::from_toml(toml, "test").unwrap()
}

/// `strata -p go` in `dir` (also its HOME) with delegation on, writing `session`.
fn run(dir: &Path, url: &str, session: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir)
        .args([
            "-p",
            "go",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--base-url",
            url,
            "--tools",
            "read,bash,edit,write,task",
            "--session",
        ])
        .arg(session)
        .args(extra)
        .env("HOME", dir)
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .env_remove("STRATA_API_KEY")
        .output()
        .expect("strata runs")
}

/// The text of every `tool_result` block in a request body, in order.
fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|block| block["type"] == "tool_result")
        .map(|block| block["content"].to_string())
        .collect()
}

#[test]
fn a_child_is_held_to_the_runs_permission_mode_and_its_answer_is_the_result() {
    let dir = project();
    let server = mock_with(delegation_scenario());
    let session = dir.path().join("parent.jsonl");
    let out = run(
        dir.path(),
        &server.base_url(),
        &session,
        &["--permission-mode", "plan"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        "done",
        "{}\n{}",
        text(&out.stderr),
        std::fs::read_to_string(&session).unwrap_or_default()
    );
    // The child's bash call met the parent's gate.
    assert!(!dir.path().join("ran.txt").exists());
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "parent, child twice, parent");
    // The parent's first request offered `task`, after the built-in tools.
    let first = requests[0].body.clone().unwrap();
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let position = |name: &str| names.iter().position(|n| *n == name);
    assert!(position("task") > position("write"), "{names:?}");
    // The child read the refusal; the parent read only the child's answer.
    let child = requests[2].body.clone().unwrap();
    assert!(
        tool_results(&child)
            .iter()
            .any(|r| r.contains("Permission denied")),
        "{:?}",
        tool_results(&child)
    );
    let parent = requests[3].body.clone().unwrap();
    let results = tool_results(&parent);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].contains("the child's answer: the command was refused"),
        "{results:?}"
    );
    // The child's file sits beside the parent's and names it.
    let children: Vec<_> = std::fs::read_dir(dir.path().join("parent.subagents"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(children.len(), 1, "{children:?}");
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&children[0])
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        header["parentSession"].as_str(),
        Some(session.display().to_string().as_str()),
        "{header}"
    );
    assert_eq!(header["spawnedBy"]["depth"], 1, "{header}");
    assert_eq!(
        header["spawnedBy"]["description"], "make a file",
        "{header}"
    );

    // `strata stats` counts the child under its parent, with what the fork read of the
    // parent's prefix.
    let session_arg = session.display().to_string();
    let stats = strata_ok(&["stats", &session_arg]);
    assert!(
        stats.contains("delegated: 2 requests in child sessions"),
        "{stats}"
    );
    assert!(stats.contains("└ child (fork): make a file"), "{stats}");
    let json: Value = serde_json::from_str(&strata_ok(&["stats", "--json", &session_arg])).unwrap();
    let child = &json[0]["children"][0];
    assert_eq!(child["start"], "fork", "{json}");
    assert!(
        child["read_from_parent"].as_u64().unwrap_or(0) > 0,
        "a fork's first request reads the parent's prefix: {child}"
    );
    assert_eq!(
        child["requests"].as_array().map(Vec::len),
        Some(2),
        "{child}"
    );

    // `strata tree`: the child right under the assistant entry that spawned it.
    let tree = strata_ok(&["tree", &session_arg]);
    let lines: Vec<&str> = tree.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("↳ child (fork): make a file"))
        .unwrap_or_else(|| panic!("no child line: {tree}"));
    assert!(lines[at - 1].contains("assistant → task("), "{tree}");
    assert!(
        lines[at].contains("parent.subagents") && lines[at].contains("msgs"),
        "{tree}"
    );

    // `strata context`: how the child started and why (the `auto` estimate).
    let context = strata_ok(&["context", &session_arg]);
    let reason = context
        .lines()
        .find(|l| l.trim_start().starts_with("make a file [fork, "))
        .unwrap_or_else(|| panic!("no spawn decision: {context}"));
    assert!(reason.contains("]: fork: $"), "{reason}");
    assert!(reason.contains("against fresh $"), "{reason}");

    // The export: the child under its spawning entry, with its reason and its own messages.
    let html = dir.path().join("parent.html");
    let html_arg = html.display().to_string();
    strata_ok(&["export", &session_arg, "-o", &html_arg]);
    let page = std::fs::read_to_string(&html).unwrap();
    let listed = page
        .find("Delegated to 1 child agent:")
        .expect("the child is listed");
    let spawning = page.find("<span class=\"kind\">assistant</span>").unwrap();
    assert!(spawning < listed, "after the spawning entry");
    assert!(
        page.contains("child (fork): make a file — started "),
        "{page}"
    );
    assert!(page.contains("parent.subagents/"), "the child's file");
    assert!(page.contains("Started fork: fork: $"), "the reason");
    // The child's own conversation: the refusal its bash call met.
    assert!(page.contains("child-entry"), "the child's entries");
    assert!(
        page.contains("Permission denied"),
        "the child's tool result"
    );
}

#[test]
fn strata_sessions_lists_a_child_under_its_parent() {
    let dir = project();
    let server = mock_with(delegation_scenario());
    let root = dir.path().join("store");
    let cwd = dir.path().display().to_string();
    let session = root
        .join(strata_session::dir_name_for_cwd(&cwd))
        .join("parent.jsonl");
    std::fs::create_dir_all(session.parent().unwrap()).unwrap();
    let out = run(dir.path(), &server.base_url(), &session, &["--yes"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let root_arg = root.display().to_string();
    let listing = strata_ok(&["sessions", "--root", &root_arg, "--cwd", &cwd]);
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 2, "the parent, then its child: {listing}");
    assert!(lines[0].ends_with("parent.jsonl"), "{listing}");
    assert!(
        lines[1].contains("└ child (fork): make a file") && lines[1].contains("parent.subagents"),
        "{listing}"
    );
    let json = strata_ok(&["sessions", "--root", &root_arg, "--cwd", &cwd, "--json"]);
    let parent: Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(
        parent["children"][0]["spawnedBy"]["start"], "fork",
        "{parent}"
    );
}

#[test]
fn json_mode_carries_the_childs_progress_as_the_calls_updates() {
    let dir = project();
    let server = mock_with(delegation_scenario());
    let session = dir.path().join("parent.jsonl");
    let out = run(
        dir.path(),
        &server.base_url(),
        &session,
        &["--mode", "json", "--yes"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Without a gate the child's command ran.
    assert!(dir.path().join("ran.txt").exists());
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let call_id = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_start" && l["toolName"] == "task")
        .map(|l| l["toolCallId"].clone())
        .expect("the task call started");
    let updates: Vec<String> = lines
        .iter()
        .filter(|l| l["type"] == "tool_execution_update" && l["toolCallId"] == call_id)
        .map(|l| l["partialResult"].to_string())
        .collect();
    assert!(
        updates
            .iter()
            .any(|u| u.contains("child (") && u.contains("bash")),
        "{updates:?}"
    );
    // The same facts as fields: running while it works, done with its requests and cost last.
    let details: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "tool_execution_update" && l["toolCallId"] == call_id)
        .map(|l| &l["partialResult"]["details"]["subagent"])
        .collect();
    assert_eq!(details[0]["status"], "running", "{details:?}");
    assert_eq!(details[0]["description"], "make a file", "{details:?}");
    assert!(
        details[0]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("fork: ")),
        "{details:?}"
    );
    let last = details.last().unwrap();
    assert_eq!(last["status"], "done", "{last}");
    assert_eq!(last["requests"], 2, "{last}");
    assert!(
        last["usage"]["cost"].as_f64().unwrap_or(0.0) > 0.0,
        "{last}"
    );
    let end = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end" && l["toolCallId"] == call_id)
        .expect("the task call ended");
    assert_eq!(end["isError"], false, "{end}");
    assert_child_records(&lines, &call_id, &dir.path().join("parent.subagents"));
}

/// The child's own events as `strata_child` records tagged by the call, its file and its
/// depth: its start, its loop's events (its bash call among them), its end, in that order.
fn assert_child_records(lines: &[Value], call_id: &Value, children_dir: &Path) {
    let records: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "strata_child")
        .collect();
    assert!(records.len() > 2, "{lines:?}");
    for record in &records {
        assert_eq!(&record["child"], call_id, "{record}");
        assert_eq!(record["depth"], 1, "{record}");
        let session = record["session"].as_str().unwrap_or_default();
        assert!(Path::new(session).starts_with(children_dir), "{record}");
    }
    let kinds: Vec<&str> = records
        .iter()
        .filter_map(|r| r["event"]["type"].as_str())
        .collect();
    assert_eq!(kinds.first(), Some(&"started"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"ended"), "{kinds:?}");
    assert!(kinds.contains(&"agent_start"), "{kinds:?}");
    let ended = &records.last().unwrap()["event"];
    assert_eq!(ended["outcome"], "stop", "{ended}");
    assert!(ended["cost"].as_f64().unwrap_or(0.0) > 0.0, "{ended}");
}

/// The parent delegates; the child answers without tools; the parent ends.
const TUI_DELEGATION: &str = r#"name = "tui-delegate"
playback = "sequence"
[[turn]]
[[turn.tool_call]]
tool = "task"
args = { description = "look around", prompt = "Say what you see." }

[[turn]]
text = "the child saw a greeting"

[[turn]]
text = "the parent is done"
"#;

const LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

#[test]
fn the_tui_splits_the_childrens_cost_out_lists_the_child_and_opens_it() {
    if !tmux_available() {
        return;
    }
    let server = mock_with(strata_mock::Scenario::from_toml(TUI_DELEGATION, "tui").unwrap());
    let dir = project();
    let tmux = Tmux::new();
    let command = strata_command_on(
        dir.path(),
        &server.base_url(),
        "anthropic/claude-sonnet-4-5",
    )
    .replacen("--model", "--tools read,task --model", 1);
    tmux.start(dir.path(), &command);
    tmux.wait_for_all("the editor", LIMIT, &["prompt (/ for commands)"]);
    type_line(&tmux, "delegate it");
    tmux.wait_for_all("the answer", LIMIT, &["the parent is done"]);
    // The footer: the session's cost with the child's in it, and the child's apart.
    let screen = tmux.wait_for_all("the footer", LIMIT, &[" (children $"]);
    let footer = screen
        .lines()
        .find(|l| l.contains("(children $"))
        .unwrap_or_default()
        .to_owned();
    let session_part = footer.split("session:").nth(1).unwrap_or_default();
    let amounts: Vec<f64> = session_part
        .split('$')
        .skip(1)
        .filter_map(|part| {
            let number: String = part
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            number.parse().ok()
        })
        .collect();
    assert_eq!(amounts.len(), 2, "{footer}");
    assert!(
        amounts[1] > 0.0 && amounts[0] > amounts[1],
        "the total holds the children's and more: {footer}"
    );

    // `/agents`: the child, done; Enter shows its conversation read-only; Esc comes back.
    type_line(&tmux, "/agents");
    tmux.wait_for_all(
        "the children",
        LIMIT,
        &["Child agents", "child (fork): look around", "done · "],
    );
    tmux.ok(&["send-keys", "-t", "strata", "Enter"]);
    tmux.wait_for_all(
        "the child's view",
        LIMIT,
        &[
            "viewing child (fork): look around (read-only)",
            "Say what you see.",
            "the child saw a greeting",
        ],
    );
    tmux.ok(&["send-keys", "-t", "strata", "Escape"]);
    tmux.wait_for("the parent's transcript", LIMIT, |s| {
        s.contains("the parent is done") && !s.contains("viewing child")
    });

    // `/tree`: the child under the entry that spawned it.
    type_line(&tmux, "/tree");
    tmux.wait_for_all(
        "the tree",
        LIMIT,
        &["Session tree", "↳ child (fork): look around"],
    );
    tmux.ok(&["send-keys", "-t", "strata", "Escape"]);
}

/// The parent starts a child in the background; past the script every request echoes its
/// last user text: the child answers with its task, the parent with what it last read.
const BACKGROUND: &str = r#"name = "background"
[[turn]]
[[turn.tool_call]]
tool = "task"
args = { description = "look around", prompt = "Say what you see.", run_in_background = true }
"#;

const FORK_RESULT: &str = "Running in a child agent: your task follows.";

/// The parent's requests (not the forked child's), in order, without cache markers (where
/// the breakpoints sit is not content).
fn parent_requests(server: &strata_mock::MockServer) -> Vec<Value> {
    server
        .requests()
        .into_iter()
        .filter_map(|r| r.body)
        // A fork's copy of the call reads its own result (`strata_subagents::FORK_RESULT`).
        .filter(|body| !body["messages"][2].to_string().contains(FORK_RESULT))
        .map(|mut body| {
            strip_cache_control(&mut body);
            body
        })
        .collect()
}

fn strip_cache_control(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("cache_control");
            map.values_mut().for_each(strip_cache_control);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}

/// `next` starts with every byte of `previous`: the same tools and system, and `previous`'s
/// messages, serialized, a prefix of `next`'s.
fn assert_extends(previous: &Value, next: &Value) {
    assert_eq!(previous["tools"], next["tools"]);
    assert_eq!(previous["system"], next["system"]);
    let before = previous["messages"].to_string();
    let after = next["messages"].to_string();
    let open = before.strip_suffix(']').unwrap_or(&before);
    assert!(after.starts_with(open), "{before}\n---\n{after}");
}

/// Runs the background scenario in `dir`; returns the output, the parent's requests and the
/// parent's file.
fn run_background(dir: &Path) -> (Output, Vec<Value>, std::path::PathBuf) {
    let server = mock_with(strata_mock::Scenario::from_toml(BACKGROUND, "test").unwrap());
    let session = dir.join("parent.jsonl");
    let out = run(dir, &server.base_url(), &session, &["--yes"]);
    (out, parent_requests(&server), session)
}

#[test]
fn a_background_childs_answer_reaches_the_parent_later_at_the_end_of_its_conversation() {
    let dir = project();
    let (out, parent, session) = run_background(dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        parent.len(),
        3,
        "the call, after its result, after the answer"
    );
    // The call returned at once: the parent's next request holds the result naming the
    // child, and no answer yet.
    let second = parent[1]["messages"].to_string();
    assert!(second.contains("in the background"), "{second}");
    assert!(second.contains("parent.subagents"), "{second}");
    assert!(!second.contains("task-notification"), "{second}");
    // The answer came later, at the end: the request before is a prefix of the one after.
    assert_extends(&parent[1], &parent[2]);
    let last = parent[2]["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user", "{last}");
    let arrived = last["content"].to_string();
    assert!(arrived.contains("<task-notification>"), "{arrived}");
    assert!(arrived.contains("(look around) completed"), "{arrived}");
    assert!(
        arrived.contains("Say what you see."),
        "the child's answer: {arrived}"
    );
    // Print mode waited for it: the last run read it (the mock echoes it).
    assert!(
        text(&out.stdout).contains("completed"),
        "{}\n{}",
        text(&out.stdout),
        std::fs::read_to_string(&session).unwrap_or_default()
    );
    // The parent's file was only appended to, the notification its last user message.
    let file = std::fs::read_to_string(&session).unwrap();
    assert!(file.contains("task-notification"), "{file}");
}

#[test]
fn a_resumed_sessions_footer_counts_its_ended_background_childs_cost() {
    if !tmux_available() {
        return;
    }
    let dir = project();
    let (out, _, session) = run_background(dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let session_arg = session.display().to_string();
    // What the child spent, as `strata stats` reads it from the child's own file.
    let printed: Value =
        serde_json::from_str(&strata_ok(&["stats", "--json", &session_arg])).unwrap();
    let child_cost: f64 = printed[0]["children"][0]["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cost"].as_f64().unwrap())
        .sum();
    assert!(child_cost > 0.0, "{printed}");
    // Resumed in the TUI: no child runs, yet the footer adds the ended one's cost.
    let server = mock_with(strata_mock::Scenario::from_toml(BACKGROUND, "tui").unwrap());
    let tmux = Tmux::new();
    let command = strata_command_on(
        dir.path(),
        &server.base_url(),
        "anthropic/claude-sonnet-4-5",
    )
    .replacen(
        "--model",
        &format!("--session {} --model", quoted(&session_arg)),
        1,
    );
    tmux.start(dir.path(), &command);
    let screen = tmux.wait_for_all("the footer", LIMIT, &[" (children $"]);
    let footer = screen
        .lines()
        .find(|l| l.contains("(children $"))
        .unwrap_or_default();
    let shown: f64 = footer
        .split("(children $")
        .nth(1)
        .unwrap_or_default()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("{footer}"));
    // The footer rounds to its last shown digit (4 under a cent, 3 under $10).
    assert!(
        (shown - child_cost).abs() <= 0.0005,
        "{footer} against {child_cost}"
    );
}

#[test]
fn a_failing_background_childs_error_arrives_as_a_message() {
    let dir = project();
    let global = dir.path().join(".config/strata");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(global.join("config.toml"), "[subagents]\nmax_tokens = 1\n").unwrap();
    let (out, parent, _) = run_background(dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(parent.len(), 3, "{parent:?}");
    let last = parent[2]["messages"].as_array().unwrap().last().unwrap();
    let arrived = last["content"].to_string();
    assert!(arrived.contains("(look around) failed"), "{arrived}");
    assert!(
        arrived.contains("stopped at its budget (1 tokens)"),
        "{arrived}"
    );
}

#[test]
fn rpc_session_stats_add_the_childrens_cost_as_strata_stats_counts_it() {
    let server = mock_with(strata_mock::Scenario::from_toml(TUI_DELEGATION, "rpc").unwrap());
    let dir = project();
    let session = dir.path().join("parent.jsonl");
    let session_arg = session.display().to_string();
    let mut rpc = crate::rpc::Rpc::start(
        dir.path(),
        &server,
        &[
            "--tools",
            "read,bash,edit,write,task",
            "--session",
            &session_arg,
        ],
    );
    rpc.prompt_and_wait("delegate it");
    let stats = rpc.ok(serde_json::json!({"type": "get_session_stats"}));
    rpc.close();
    // `strata stats` reads the same files: the children's requests and cost, and what the
    // fork read of the parent's prefix.
    let printed: Value =
        serde_json::from_str(&strata_ok(&["stats", "--json", &session_arg])).unwrap();
    let child = &printed[0]["children"][0];
    let child_cost: f64 = child["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cost"].as_f64().unwrap())
        .sum();
    let children = &stats["children"];
    assert_eq!(children["sessions"], 1, "{stats}");
    assert_eq!(children["requests"], 1, "{stats}");
    assert!(child_cost > 0.0, "{child}");
    assert!(
        (children["cost"].as_f64().unwrap() - child_cost).abs() < 1e-12,
        "{stats}\n{child}"
    );
    assert_eq!(children["cacheReadFromParent"], child["read_from_parent"]);
    assert!(
        children["cacheReadFromParent"].as_u64().unwrap() > 0,
        "{stats}"
    );
    // Pi's figures stay the file's own; the total with children adds theirs.
    let own = stats["cost"].as_f64().unwrap();
    let with = &stats["withChildren"];
    assert!((with["cost"].as_f64().unwrap() - (own + child_cost)).abs() < 1e-12);
    assert_eq!(
        with["requests"], 3,
        "the parent's two and the child's one: {stats}"
    );
    assert_eq!(
        with["tokens"]["total"].as_u64().unwrap(),
        stats["tokens"]["total"].as_u64().unwrap() + children["tokens"]["total"].as_u64().unwrap()
    );
}

#[test]
fn rpc_sends_the_childs_own_events_tagged_by_child_session_and_depth() {
    let server = mock_with(delegation_scenario());
    let dir = project();
    let session = dir.path().join("parent.jsonl");
    let session_arg = session.display().to_string();
    let mut rpc = crate::rpc::Rpc::start(
        dir.path(),
        &server,
        &[
            "--tools",
            "read,bash,edit,write,task",
            "--session",
            &session_arg,
            "--yes",
        ],
    );
    let events = rpc.prompt_and_wait("go");
    rpc.close();
    let call_id = events
        .iter()
        .find(|e| e["type"] == "tool_execution_start" && e["toolName"] == "task")
        .map(|e| e["toolCallId"].clone())
        .expect("the task call started");
    assert_child_records(&events, &call_id, &dir.path().join("parent.subagents"));
    // Its bash call among its own events, never as the parent's.
    assert!(events.iter().any(|e| e["type"] == "strata_child"
        && e["event"]["type"] == "tool_start"
        && e["event"]["name"] == "bash"));
    assert!(
        !events
            .iter()
            .any(|e| e["type"] == "tool_execution_start" && e["toolName"] == "bash")
    );
}
