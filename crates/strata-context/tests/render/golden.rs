//! Rendered requests, checked against reviewed snapshots (`tests/render/snapshots/`).

use insta::assert_json_snapshot;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use strata_context::render::{Chapter, DEFERRED_PLACEHOLDER, Divergence};
use strata_context::{RenderNote, RenderOptions, render_with};
use strata_provider::{Capabilities, Request, Role};
use strata_session::EntryId;

use super::support::{Script, full, no_mid, sections, tool, tools};

/// The request with each tool (in chapter 1 and in `tool_addition` blocks) shortened to its
/// name, deferred ones marked, for snapshots of long tool lists.
fn with_tool_names(request: &Request) -> Value {
    let mut value = serde_json::to_value(request).expect("a request serializes");
    let names: Vec<String> = request
        .tools
        .iter()
        .map(|tool| {
            if tool.defer_loading {
                format!("{} (deferred)", tool.name)
            } else {
                tool.name.clone()
            }
        })
        .collect();
    value["tools"] = json!(names);
    if let Some(messages) = value["messages"].as_array_mut() {
        for block in messages
            .iter_mut()
            .filter_map(|message| message["content"].as_array_mut())
            .flatten()
        {
            if block["type"] == "tool_addition"
                && let Some(tools) = block["tools"].as_array_mut()
            {
                for tool in tools.iter_mut() {
                    *tool = json!(format!(
                        "{} (defer_loading: {})",
                        tool["name"].as_str().unwrap_or(""),
                        tool.get("defer_loading").is_some()
                    ));
                }
            }
        }
    }
    value
}

fn options() -> RenderOptions {
    RenderOptions::new()
        .cache_key("render-session")
        .max_tokens(8192)
}

#[test]
fn system_patch_mid_session() {
    let mut script = Script::new();
    script.entry(
        "model_change",
        json!({"provider": "anthropic", "modelId": "claude-opus-4-8"}),
    );
    script.system(sections(), &tools(&["read", "bash"]), &[]);
    script.user("Add a test for the parser.");
    script.assistant("Done: tests/parser.rs covers the empty input.");
    let before = render_with(&script.context(), &full(), &options());
    script.system(
        json!({"rules": "Be brief. Run the tests before you answer."}),
        &[],
        &[],
    );
    script.user("Now fix the failing case.");
    let after = render_with(&script.context(), &full(), &options());

    assert_json_snapshot!("system_patch_mid_session", after.request);
    let patch = &after.request.messages[3];
    assert_eq!(patch.role, Role::System);
    assert_eq!(
        after.request.messages[2].role,
        Role::User,
        "the patch directly follows a user message"
    );
    assert_eq!(
        after.request.system, before.request.system,
        "chapter 2 stays the snapshot"
    );
    assert_eq!(
        after.report(Some(&before)).divergence,
        Some(Divergence::Extends {
            at: before.bytes.len()
        }),
        "the patched request byte-extends the previous one"
    );
}

/// The seeds' session: 22 tools and the placeholder (23 in the array); one patch withdraws 7
/// and re-adds `recall`; the array stays 23 byte for byte; the next compaction collapses it
/// to the 16 live ones.
#[test]
fn seven_removed_one_added_keeps_twenty_three_then_compaction_collapses_to_sixteen() {
    let start = [
        "read",
        "bash",
        "edit",
        "write",
        "web_search",
        "web_fetch",
        "grep",
        "find",
        "ls",
        "todo",
        "task",
        "notebook",
        "diff",
        "lsp",
    ];
    let later = [
        "compress",
        "decompress",
        "search_context",
        "acp_status",
        "acp_cache",
        "absorb",
        "acp_rule",
        "recall",
    ];
    let withdrawn = [
        "compress",
        "decompress",
        "search_context",
        "acp_status",
        "acp_cache",
        "absorb",
        "acp_rule",
    ];

    let mut script = Script::new();
    script.entry(
        "model_change",
        json!({"provider": "anthropic", "modelId": "claude-opus-4-8"}),
    );
    script.system(sections(), &tools(&start), &[]);
    script.user("Start.");
    script.assistant("Started.");
    script.system(json!({}), &tools(&later), &[]);
    script.user("Use the memory tools.");
    script.assistant("Using them.");
    script.system(json!({}), &[], &["recall"]);
    script.user("Pause recall.");
    script.assistant("Paused.");
    let before = render_with(&script.context(), &full(), &options());
    assert_eq!(before.request.tools.len(), 23);

    script.system(
        json!({"tools": "<tools>\n- read: read a file\n- recall: search memory\n</tools>", "rules": "Memory tools are gone; use recall."}),
        &[tool("recall")],
        &withdrawn,
    );
    let first_kept = script.user("Switch to recall only.");
    let after = render_with(&script.context(), &full(), &options());
    assert_eq!(after.request.tools.len(), 23, "23 tools stay 23");
    assert_eq!(
        after.bytes.tools, before.bytes.tools,
        "the tools chapter is byte-identical"
    );
    assert_eq!(after.bytes.deferred, before.bytes.deferred);
    assert_eq!(
        after.report(Some(&before)).divergence,
        Some(Divergence::Extends {
            at: before.bytes.len()
        })
    );
    assert_json_snapshot!("seven_removed_one_added", with_tool_names(&after.request));

    // The same patch without the re-add of `recall`: the array hashes the same.
    let mut without = Script::new();
    without.entry(
        "model_change",
        json!({"provider": "anthropic", "modelId": "claude-opus-4-8"}),
    );
    without.system(sections(), &tools(&start), &[]);
    without.system(json!({}), &tools(&later), &[]);
    without.system(json!({}), &[], &withdrawn);
    without.user("Switch.");
    let without = render_with(&without.context(), &full(), &options());
    assert_eq!(without.report(None).tools, after.report(None).tools);
    assert_eq!(without.bytes.deferred, after.bytes.deferred);

    // The next compaction folds the patch: 15 live tools and the placeholder.
    let live: Vec<Value> = after
        .request
        .tools
        .iter()
        .filter(|tool| {
            tool.name != DEFERRED_PLACEHOLDER && !withdrawn.contains(&tool.name.as_str())
        })
        .map(|tool| tool.name.as_str())
        .map(tool)
        .collect();
    let folded = json!({
        "intro": "You are strata, a coding agent.",
        "tools": "<tools>\n- read: read a file\n- recall: search memory\n</tools>",
        "rules": "Memory tools are gone; use recall.",
        "docs": "See AGENTS.md.",
        "skills": "<skills>\n- pdf: read PDFs\n</skills>",
        "cwd": "Working directory: /w",
    });
    script.assistant("Switched.");
    script.compaction(
        "The user moved memory work to recall.",
        &first_kept,
        folded,
        &live,
    );
    script.user("Continue.");
    let compacted = render_with(&script.context(), &full(), &options());
    assert_eq!(
        compacted.request.tools.len(),
        16,
        "the compaction collapses the array to the live tools"
    );
    assert!(
        compacted
            .request
            .tools
            .iter()
            .all(|tool| !withdrawn.contains(&tool.name.as_str()))
    );
    assert_eq!(
        compacted
            .request
            .tools
            .last()
            .map(|tool| tool.name.as_str()),
        Some(DEFERRED_PLACEHOLDER),
        "the placeholder follows the chain's starting tools"
    );
    let report = compacted.report(Some(&after));
    assert!(
        matches!(
            report.divergence,
            Some(Divergence::At {
                chapter: Chapter::Tools,
                ..
            })
        ),
        "{report:?}"
    );
    assert_json_snapshot!(
        "seven_removed_one_added_after_compaction",
        with_tool_names(&compacted.request)
    );
}

#[test]
fn patch_between_tool_call_and_result_waits_for_the_next_user_message() {
    let mut script = Script::new();
    script.entry(
        "model_change",
        json!({"provider": "anthropic", "modelId": "claude-opus-4-8"}),
    );
    script.system(sections(), &tools(&["read", "bash"]), &[]);
    script.user("Read the manifest.");
    script.calls(&[("call_1", "read")]);
    let patch = script.system(
        json!({"cwd": "Working directory: /w/crates"}),
        &[tool("grep")],
        &["bash"],
    );
    script.result("call_1", "read", "[package]\nname = \"demo\"");
    let waiting = render_with(&script.context(), &full(), &options());
    assert!(
        waiting
            .request
            .messages
            .iter()
            .all(|message| message.role != Role::System)
    );
    assert!(waiting.notes.contains(&RenderNote::PatchPending {
        entry_id: EntryId::new(patch.clone())
    }));

    script.assistant("The crate is called demo.");
    script.user("Search for its tests.");
    let placed = render_with(&script.context(), &full(), &options());
    assert_json_snapshot!("patch_between_tool_call_and_result", placed.request);
    let roles: Vec<Role> = placed
        .request
        .messages
        .iter()
        .map(|message| message.role)
        .collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::User,
            Role::System
        ]
    );
    assert_eq!(
        placed.report(Some(&waiting)).divergence,
        Some(Divergence::Extends {
            at: waiting.bytes.len()
        })
    );
}

#[test]
fn fallback_folds_patches_for_a_model_without_mid_conversation_system_messages() {
    let mut script = Script::new();
    script.entry(
        "model_change",
        json!({"provider": "amazon-bedrock", "modelId": "claude-sonnet-5"}),
    );
    script.system(sections(), &tools(&["read", "bash", "edit"]), &[]);
    script.user("Tidy the README.");
    script.assistant("Tidied.");
    let before = render_with(&script.context(), &no_mid(), &options());
    script.system(
        json!({"rules": "Be brief. Never edit files outside /w.", "tools": "<tools>\n- read: read a file\n- edit: edit a file\n- grep: search\n</tools>"}),
        &[tool("grep")],
        &["bash"],
    );
    script.user("Now search for TODOs.");
    let after = render_with(&script.context(), &no_mid(), &options());
    assert_json_snapshot!("fallback_fold", after.request);
    let names: Vec<&str> = after
        .request
        .tools
        .iter()
        .map(|tool| tool.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["read", "edit", "grep"],
        "the array is rewritten to the live set"
    );
    assert!(
        after
            .request
            .messages
            .iter()
            .all(|message| message.role != Role::System)
    );
    assert!(
        after
            .notes
            .contains(&RenderNote::PatchesFolded { patches: 1 })
    );
    let report = after.report(Some(&before));
    assert!(
        matches!(
            report.divergence,
            Some(Divergence::At {
                chapter: Chapter::Tools,
                ..
            })
        ),
        "{report:?}"
    );
    assert!(report.notes.contains(&RenderNote::ToolsRewritten {
        tool: Some("edit".to_owned())
    }));
}

#[test]
fn the_reminder_fallback_keeps_the_prefix_and_says_the_change_after_the_next_user_message() {
    let reminders = Capabilities {
        system_reminders: true,
        ..no_mid()
    };
    let mut script = Script::new();
    script.entry(
        "model_change",
        json!({"provider": "deepseek", "modelId": "deepseek-v4-flash"}),
    );
    script.system(sections(), &tools(&["read", "bash", "edit"]), &[]);
    script.user("Tidy the README.");
    script.assistant("Tidied.");
    let before = render_with(&script.context(), &reminders, &options());
    script.system(
        json!({"rules": "Be brief. Never edit files outside /w."}),
        &[],
        &["bash"],
    );
    script.user("Now search for TODOs.");
    let after = render_with(&script.context(), &reminders, &options());
    // Tools and system chapters are the ones sent before: the removed tool stays declared.
    assert_eq!(after.request.tools, before.request.tools);
    assert_eq!(after.request.system, before.request.system);
    let report = after.report(Some(&before));
    assert!(
        matches!(report.divergence, Some(Divergence::Extends { .. })),
        "the request only appends: {report:?}"
    );
    assert!(
        !after
            .notes
            .iter()
            .any(|note| matches!(note, RenderNote::PatchesFolded { .. }))
    );
    // The change is a marked user message right after the user's prompt, never a system one.
    let messages = &after.request.messages;
    assert!(messages.iter().all(|message| message.role != Role::System));
    let last = messages.last().unwrap();
    assert_eq!(last.role, Role::User);
    let text = serde_json::to_string(&last.content).unwrap();
    assert!(text.contains("<system-reminder>"), "{text}");
    assert!(text.contains("not from the user"), "{text}");
    assert!(text.contains("Never edit files outside /w."), "{text}");
    assert!(text.contains("bash"), "the removal is said: {text}");
    let prompt = serde_json::to_string(&messages[messages.len() - 2].content).unwrap();
    assert!(prompt.contains("Now search for TODOs."), "{prompt}");
    // With the flag off the same change folds, as before.
    let folded = render_with(&script.context(), &no_mid(), &options());
    assert_ne!(folded.request.system, before.request.system);
}

/// Names of the tools announced in `tool_addition` blocks, in order.
fn announced(request: &Request) -> Vec<String> {
    let value = serde_json::to_value(request).expect("a request serializes");
    let mut names = Vec::new();
    for message in value["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_addition" {
                for tool in block["tools"].as_array().into_iter().flatten() {
                    names.push(tool["name"].as_str().unwrap_or("").to_owned());
                }
            }
        }
    }
    names
}

#[test]
fn a_tool_that_asked_for_deferral_is_left_to_the_rows_tool_search_not_announced() {
    let mut searched = tool("mcp__everything__echo");
    searched["defer_loading"] = json!(true);
    let mut script = Script::new();
    script.system(sections(), &tools(&["read"]), &[]);
    script.user("Start.");
    script.assistant("Started.");
    script.system(json!({}), &[searched, tool("grep")], &[]);
    script.user("Go on.");

    // With tool search, the announcement would load the definition inline (a tool_reference)
    // at every reconnect; the search finds the deferred declaration instead.
    let with_search = render_with(&script.context(), &full(), &options()).request;
    assert_eq!(announced(&with_search), ["grep"]);
    assert!(
        with_search
            .tools
            .iter()
            .any(|t| t.name == "mcp__everything__echo" && t.defer_loading),
        "declared deferred for the search to find: {:?}",
        with_search.tools
    );

    // A row that takes tool additions but has no tool search announces both.
    let without_search = Capabilities {
        deferred_tools: false,
        deferred_tool_placeholder: false,
        ..full()
    };
    let announced_without =
        announced(&render_with(&script.context(), &without_search, &options()).request);
    assert_eq!(announced_without, ["mcp__everything__echo", "grep"]);
}
