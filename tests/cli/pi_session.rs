//! Sessions strata writes open in Pi 1.6: the demo's session files (a tool removed, an
//! AGENTS.md patch, two compactions, a branch summary), read by Pi 1.6's own `SessionManager`
//! through node, build the context strata builds, and the system prompt and tools Pi replays
//! from them are the ones strata sent. Skips with a message without node 22 and Pi 1.6
//! (`.ci/install-pi` installs them; `STRATA_PI16_DIR` says where).

use std::path::{Path, PathBuf};
use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use strata_session::{AgentMessage, Entry, Session};

use crate::support::{PiWire, strata, workspace};

/// Where `.ci/install-pi` put node 22 and Pi 1.6, when both are there.
fn pi16() -> Option<(PathBuf, PathBuf)> {
    crate::support::Pi16::find().map(|pi| (pi.dir, pi.node))
}

/// What Pi 1.6 makes of a copy of `file`.
fn open_in_pi(dir: &Path, node: &Path, file: &Path, scratch: &Path) -> Value {
    let copy = scratch.join(file.file_name().unwrap());
    std::fs::copy(file, &copy).unwrap();
    let script = workspace().join("tests/fixtures/pi1/open-in-pi.mjs");
    let output = Command::new(node)
        .arg(&script)
        .arg(&copy)
        .env("PI16_DIR", dir)
        .output()
        .expect("running node");
    assert!(
        output.status.success(),
        "Pi could not open {}: {}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("open-in-pi prints JSON")
}

fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(session_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "jsonl") {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// strata's system prompt and tools at the session's leaf, in the shape of Pi's replayed
/// system message: `{sections, tools}`.
fn strata_system(session: &Session) -> Value {
    let context =
        strata_context::build(session.tree(), session.tree().leaf()).expect("strata's context");
    let sections: serde_json::Map<String, Value> = context
        .system
        .folded()
        .into_iter()
        .filter(|(_, text)| !text.is_empty())
        .map(|(name, text)| (name.as_str().to_owned(), Value::String(text)))
        .collect();
    let tools: Vec<Value> = context
        .tools
        .live()
        .map(|tool| tool.definition.clone())
        .collect();
    json!({ "sections": sections, "tools": tools })
}

/// The shapes a session holds, to show the demo wrote what this test is about.
#[derive(Default, Debug)]
struct Shapes {
    system_messages: usize,
    tool_removals: usize,
    docs_patches: usize,
    checkpoints: usize,
    branch_summaries: usize,
    legacy_system_entries: usize,
}

fn shapes(session: &Session) -> Shapes {
    let mut shapes = Shapes::default();
    for entry in session.tree().iter() {
        match entry.entry().unwrap() {
            Entry::Message(message) => {
                if let AgentMessage::System(system) = &*message.message {
                    shapes.system_messages += 1;
                    shapes.tool_removals += usize::from(system.tools_removed().next().is_some());
                    shapes.docs_patches += usize::from(
                        shapes.system_messages > 1
                            && system.section_changes().any(|(name, _)| name == "docs"),
                    );
                }
            }
            Entry::Compaction(compaction) => {
                shapes.checkpoints += usize::from(compaction.system_message.is_some());
                assert!(
                    entry
                        .raw_line()
                        .contains(r#""systemMessage":{"role":"system""#),
                    "a checkpoint is a system message: {}",
                    entry.raw_line()
                );
            }
            Entry::BranchSummary(_) => shapes.branch_summaries += 1,
            Entry::System(_) => shapes.legacy_system_entries += 1,
            _ => {}
        }
    }
    shapes
}

#[test]
fn the_demos_sessions_open_in_pi_16_with_the_prompt_and_tools_strata_sent() {
    let Some((dir, node)) = pi16() else {
        eprintln!(
            "skipped: node 22 and Pi 1.6 not found (run .ci/install-pi, or set STRATA_PI16_DIR)"
        );
        return;
    };
    let keep = tempfile::tempdir().unwrap();
    let output = strata(&["demo", "--json", "--keep", keep.path().to_str().unwrap()]);
    assert!(
        output.status.success(),
        "strata demo failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let scratch = tempfile::tempdir().unwrap();
    let files = session_files(keep.path());
    assert!(!files.is_empty(), "the demo kept no session file");
    for file in &files {
        let label = file.display().to_string();
        let session = Session::open(file).unwrap().session;
        let shapes = shapes(&session);
        assert!(shapes.system_messages >= 3, "{label}: {shapes:?}");
        assert!(shapes.tool_removals >= 1, "{label}: {shapes:?}");
        assert!(shapes.docs_patches >= 1, "{label}: {shapes:?}");
        assert_eq!(shapes.checkpoints, 2, "{label}: {shapes:?}");
        assert_eq!(shapes.branch_summaries, 1, "{label}: {shapes:?}");
        assert_eq!(shapes.legacy_system_entries, 0, "{label}: {shapes:?}");

        let pi = open_in_pi(&dir, &node, file, scratch.path());
        assert_eq!(
            pi["leaf"].as_str(),
            session.tree().leaf().map(|id| id.as_str()),
            "{label}"
        );
        let context =
            strata_context::build(session.tree(), session.tree().leaf()).expect("strata context");
        assert_eq!(
            pi["context"],
            strata_context::to_pi_json(&context),
            "{label}"
        );
        let current = &pi["current"];
        let replayed = json!({
            "sections": current["sections"].clone(),
            "tools": current["toolsAdded"].clone(),
        });
        assert_eq!(replayed, strata_system(&session), "{label}");
    }
}

#[test]
fn a_keep_warm_ping_and_summary_usage_are_pi_usage_that_stays_out_of_context() {
    let Some((dir, node)) = pi16() else {
        eprintln!(
            "skipped: node 22 and Pi 1.6 not found (run .ci/install-pi, or set STRATA_PI16_DIR)"
        );
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("written.jsonl");
    let mut session = Session::create(&file, "/p", Default::default()).unwrap();
    let usage = |read: u64| strata_session::Usage {
        cache_read: read,
        output: 1,
        total_tokens: read + 1,
        ..Default::default()
    };
    session
        .append_system(
            [("intro".to_owned(), "You are strata.".to_owned())].into(),
            vec![],
            vec![],
        )
        .unwrap();
    let question = session
        .append_message(AgentMessage::User(strata_session::UserMessage {
            content: strata_session::MessageContent::Text("q1".into()),
            timestamp: 1,
            extra: Default::default(),
        }))
        .unwrap();
    session
        .append_usage(
            strata_session::CACHE_WARM_KIND,
            "anthropic",
            "m",
            usage(500),
        )
        .unwrap();
    session
        .branch_with_summary_usage(Some(&question), "left", None, None, Some(usage(9)))
        .unwrap();
    session
        .append_context_edit(
            vec![question.clone()],
            strata_session::ContextAction::Exclude,
        )
        .unwrap();
    drop(session);
    let session = Session::open(&file).unwrap().session;
    let context = strata_context::build(session.tree(), session.tree().leaf()).unwrap();
    let scratch_pi = tempfile::tempdir().unwrap();
    let pi = open_in_pi(&dir, &node, &file, scratch_pi.path());
    assert_eq!(pi["context"], strata_context::to_pi_json(&context));
    let roles: Vec<&str> = pi["context"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    // The edit omitted the question; the ping is no message; the summary is.
    assert_eq!(roles, ["system", "branchSummary"]);
    let types: Vec<&str> = pi["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "message",
            "message",
            "usage",
            "branch_summary",
            "context_edit"
        ]
    );
}

/// A session Pi 1.6 wrote on a strata-mock, continued by strata with one prompt.
struct Continued {
    server: strata_mock::MockServer,
    /// Requests Pi sent (strata's follow).
    pi_requests: usize,
    file: PathBuf,
    /// The session file as Pi left it.
    before: Vec<u8>,
    _dir: tempfile::TempDir,
}

/// Pi 1.6 fixes the greeting on the demo's scripted mock speaking `wire` (`-p`, its session
/// in the project), then strata continues that session with "and now?" on the same mock,
/// without `--model`.
fn pi_then_strata(pi: &crate::support::Pi16, wire: PiWire) -> Continued {
    let server = crate::support::demo_mock();
    let dir = crate::support::project();
    let sessions = dir.path().join("pi-sessions");
    let out = pi
        .command_on(dir.path(), &server.base_url(), wire)
        .args(["-p", "--session-dir"])
        .arg(&sessions)
        .arg("fix the greeting")
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = session_files(&sessions).pop().expect("Pi wrote a session");
    let before = std::fs::read(&file).unwrap();
    let pi_requests = server.requests().len();
    // No --model: the session's own, through Pi's models.json which strata reads too.
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir.path())
        .args(["-p", "and now?", "--session"])
        .arg(&file)
        .env("HOME", dir.path())
        .env("PI_CODING_AGENT_DIR", dir.path().join(".pi-agent"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .output()
        .expect("strata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Continued {
        server,
        pi_requests,
        file,
        before,
        _dir: dir,
    }
}

/// Continuing a session Pi 1.6 wrote: strata keeps Pi's prompt and tool definitions, the
/// session's model and thinking level, and writes no patch of its own, so what it sends
/// starts as Pi's requests started.
#[test]
fn a_pi_16_session_continued_in_strata_keeps_pis_prompt_model_and_tools() {
    let Some(pi) = crate::support::Pi16::find() else {
        println!("{}", crate::support::Pi16::skip_message());
        return;
    };
    let Continued {
        server,
        pi_requests,
        file,
        before,
        _dir,
    } = pi_then_strata(&pi, PiWire::AnthropicMessages);
    let after = std::fs::read(&file).unwrap();
    assert!(
        after.starts_with(&before),
        "the session was only appended to"
    );
    let appended: Vec<Value> = String::from_utf8_lossy(&after[before.len()..])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<String> = appended
        .iter()
        .map(|e| {
            let role = e["message"]["role"].as_str().unwrap_or("");
            format!(
                "{}{}",
                e["type"].as_str().unwrap_or(""),
                if role.is_empty() {
                    String::new()
                } else {
                    format!(":{role}")
                }
            )
        })
        .collect();
    // The prompt and the answer, nothing else: no model or thinking change, no system patch.
    assert_eq!(kinds, ["message:user", "message:assistant"], "{appended:?}");
    let requests = server.requests();
    let (pi_last, strata_first) = (&requests[pi_requests - 1], &requests[pi_requests]);
    assert_eq!(strata_first.model, pi_last.model);
    let system = |r: &strata_mock::RequestRecord| r.body.as_ref().unwrap()["system"].clone();
    let text_of = |v: Value| -> String {
        v.as_array()
            .unwrap()
            .iter()
            .map(|b| b["text"].as_str().unwrap_or("").to_owned())
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    assert_eq!(
        text_of(system(strata_first)),
        text_of(system(pi_last)),
        "Pi's system prompt, as Pi sent it"
    );
    let names = |r: &strata_mock::RequestRecord| -> Vec<String> {
        r.body.as_ref().unwrap()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| format!("{}: {}", t["name"], t["description"]))
            .collect()
    };
    assert_eq!(names(strata_first), names(pi_last), "Pi's tool definitions");
}

/// Continuing a session Pi 1.6 wrote reads the prefix Pi cached: strata's first request
/// repeats Pi's bytes (one system block, Pi's tool and tool-result shapes), so the mock's
/// cache serves at least 90% of Pi's last prompt from what Pi wrote.
#[test]
fn a_pi_16_session_continued_in_strata_reads_the_prefix_pi_cached() {
    let Some(pi) = crate::support::Pi16::find() else {
        println!("{}", crate::support::Pi16::skip_message());
        return;
    };
    let continued = pi_then_strata(&pi, PiWire::AnthropicMessages);
    let requests = continued.server.requests();
    let (pi_last, strata_first) = read_share(&requests, continued.pi_requests, "Anthropic");
    // Every block of Pi's last request is repeated as Pi sent it, key order included.
    let body = |r: &strata_mock::RequestRecord| r.body.clone().unwrap();
    let (pi_body, strata_body) = (body(pi_last), body(strata_first));
    let text = |mut v: Value| {
        strip_cache_control(&mut v);
        v.to_string()
    };
    for chapter in ["tools", "system"] {
        assert_eq!(
            text(strata_body[chapter].clone()),
            text(pi_body[chapter].clone()),
            "{chapter}"
        );
    }
    let pi_messages = pi_body["messages"].as_array().unwrap().clone();
    let strata_messages = strata_body["messages"].as_array().unwrap();
    assert_eq!(
        text(Value::Array(strata_messages[..pi_messages.len()].to_vec())),
        text(Value::Array(pi_messages))
    );
}

/// Pi's last request and strata's first after `pi_requests`, once it is shown that strata's
/// first request read at least 90% of Pi's last prompt from the mock's cache (the figures
/// are printed).
fn read_share<'a>(
    requests: &'a [strata_mock::RequestRecord],
    pi_requests: usize,
    wire: &str,
) -> (
    &'a strata_mock::RequestRecord,
    &'a strata_mock::RequestRecord,
) {
    let (pi_last, strata_first) = (&requests[pi_requests - 1], &requests[pi_requests]);
    let pi_prompt = pi_last.cache.as_ref().expect("accounted").input_tokens;
    let cache = strata_first.cache.as_ref().expect("accounted");
    println!(
        "{wire}: Pi 1.6's last prompt: {pi_prompt} tokens; strata's first request read {} of \
         its {} from the cache (wrote {}, uncached {})",
        cache.cache_read, cache.input_tokens, cache.cache_write, cache.uncached
    );
    assert!(
        cache.cache_read * 10 >= pi_prompt * 9,
        "{wire}: read {} of Pi's {pi_prompt}-token prompt (changed: {:?})\nPi: {}\nstrata: {}",
        cache.cache_read,
        strata_first.changed,
        pi_last
            .body
            .as_ref()
            .map(Value::to_string)
            .unwrap_or_default(),
        strata_first
            .body
            .as_ref()
            .map(Value::to_string)
            .unwrap_or_default(),
    );
    (pi_last, strata_first)
}

/// Asserts that strata's `list` (input items, messages) starts with Pi's, item by item and
/// byte for byte, and that each of `fields` is Pi's.
fn repeats_pis_bytes(pi: &Value, strata: &Value, list: &str, fields: &[&str]) {
    for field in fields {
        assert_eq!(
            strata[*field].to_string(),
            pi[*field].to_string(),
            "{field}"
        );
    }
    let pi_items = pi[list].as_array().unwrap();
    let strata_items = strata[list].as_array().unwrap();
    assert!(
        strata_items.len() > pi_items.len(),
        "strata's {list} extend Pi's"
    );
    for (i, (ours, theirs)) in strata_items.iter().zip(pi_items).enumerate() {
        assert_eq!(ours.to_string(), theirs.to_string(), "{list}[{i}]");
    }
}

/// A Pi 1.6 session on an OpenAI Responses model, continued in strata, reads the prefix Pi
/// cached: the same tools, instructions, input items and `prompt_cache_key` (the mock keys
/// OpenAI's cache on it).
#[test]
fn a_pi_16_responses_session_continued_in_strata_reads_the_prefix_pi_cached() {
    let Some(pi) = crate::support::Pi16::find() else {
        println!("{}", crate::support::Pi16::skip_message());
        return;
    };
    let continued = pi_then_strata(&pi, PiWire::OpenaiResponses);
    let requests = continued.server.requests();
    let (pi_last, strata_first) = read_share(&requests, continued.pi_requests, "Responses");
    assert!(pi_last.cache_key.is_some(), "Pi keys its Responses cache");
    // The shapes the prefix holds: a reasoning item, assistant texts, calls and outputs.
    let kinds: Vec<&str> = pi_last.body.as_ref().unwrap()["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|item| item["type"].as_str())
        .collect();
    for kind in [
        "reasoning",
        "message",
        "function_call",
        "function_call_output",
    ] {
        assert!(kinds.contains(&kind), "{kind} in Pi's input: {kinds:?}");
    }
    assert_eq!(
        strata_first.cache_key, pi_last.cache_key,
        "prompt_cache_key"
    );
    repeats_pis_bytes(
        pi_last.body.as_ref().unwrap(),
        strata_first.body.as_ref().unwrap(),
        "input",
        &["tools", "instructions", "prompt_cache_key", "reasoning"],
    );
}

/// A Pi 1.6 session on a Chat Completions model, continued in strata, reads the prefix Pi
/// cached: the same tools and messages, and no `prompt_cache_key` where Pi sends none.
#[test]
fn a_pi_16_chat_completions_session_continued_in_strata_reads_the_prefix_pi_cached() {
    let Some(pi) = crate::support::Pi16::find() else {
        println!("{}", crate::support::Pi16::skip_message());
        return;
    };
    let continued = pi_then_strata(&pi, PiWire::OpenaiCompletions);
    let requests = continued.server.requests();
    let (pi_last, strata_first) = read_share(&requests, continued.pi_requests, "Chat Completions");
    assert_eq!(
        strata_first.cache_key, pi_last.cache_key,
        "prompt_cache_key"
    );
    repeats_pis_bytes(
        pi_last.body.as_ref().unwrap(),
        strata_first.body.as_ref().unwrap(),
        "messages",
        &["tools", "prompt_cache_key"],
    );
}

/// Removes every `cache_control` marker (where breakpoints sit is not content).
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
