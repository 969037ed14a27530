//! Pi's conversion of history, chapter 2's order and the breakpoints, through `render`.

use pretty_assertions::assert_eq;
use serde_json::json;
use strata_context::render::{DEFERRED_PLACEHOLDER, NO_RESULT_PROVIDED};
use strata_context::{RenderOptions, render, render_with};
use strata_provider::{
    Breakpoint, BreakpointPosition, CacheTtl, ContentBlock, Dialect, Message, Request, Role,
    ThinkingLevel, ToolResultContent,
};

use super::support::{Script, full, no_mid, sections, tool, tools};

/// Where the request's cache breakpoints sit, in order.
fn breakpoint_positions(request: &Request) -> Vec<BreakpointPosition> {
    request.breakpoints.iter().map(|b| b.position).collect()
}

fn texts(message: &Message) -> Vec<String> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn pi_roles_become_user_messages_with_pis_text() {
    let mut script = Script::new();
    script.system(sections(), &tools(&["read"]), &[]);
    script.user("hi");
    script.entry("message", json!({"message": {"role": "bashExecution", "command": "cargo test", "output": "ok",
        "exitCode": 101, "cancelled": false, "truncated": true, "fullOutputPath": "/tmp/full.log", "timestamp": 1}}));
    script.entry("message", json!({"message": {"role": "bashExecution", "command": "secret", "output": "x",
        "exitCode": 0, "cancelled": false, "truncated": false, "timestamp": 2, "excludeFromContext": true}}));
    script.entry(
        "custom_message",
        json!({"customType": "note", "content": "from an extension", "display": true}),
    );
    script.entry(
        "branch_summary",
        json!({"fromId": "00000001", "summary": "tried X"}),
    );
    let request = render(&script.context(), &full());
    let converted: Vec<(Role, Vec<String>)> = request
        .messages
        .iter()
        .map(|message| (message.role, texts(message)))
        .collect();
    assert_eq!(
        converted,
        vec![
            (Role::User, vec!["hi".to_owned()]),
            (
                Role::User,
                vec!["Ran `cargo test`\n```\nok\n```\n\nCommand exited with code 101\n\n[Output truncated. Full output: /tmp/full.log]".to_owned()]
            ),
            (Role::User, vec!["from an extension".to_owned()]),
            (
                Role::User,
                vec!["The following is a summary of a branch that this conversation came back from:\n\n<summary>\ntried X</summary>".to_owned()]
            ),
        ]
    );
}

#[test]
fn compaction_summary_opens_the_messages() {
    let mut script = Script::new();
    script.system(sections(), &tools(&["read"]), &[]);
    let kept = script.user("keep me");
    script.compaction("did things", &kept, sections(), &tools(&["read"]));
    let request = render(&script.context(), &full());
    assert_eq!(
        texts(&request.messages[0]),
        [
            "The conversation history before this point was compacted into the following summary:\n\n<summary>\ndid things\n</summary>"
        ]
    );
    assert_eq!(texts(&request.messages[1]), ["keep me"]);
}

#[test]
fn aborted_turns_are_dropped_and_open_calls_get_an_error_result() {
    let mut script = Script::new();
    script.system(sections(), &tools(&["read", "bash"]), &[]);
    script.user("go");
    script.calls(&[("c1", "read"), ("c2", "bash")]);
    script.result("c1", "read", "file");
    script.assistant_blocks(vec![json!({"type": "text", "text": "half"})], "aborted");
    script.user("again");
    script.calls(&[("c3", "read")]);
    let request = render(&script.context(), &full());
    let missing = |id: &str| Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult {
            tool_call_id: id.to_owned(),
            content: vec![ToolResultContent::Text {
                text: NO_RESULT_PROVIDED.to_owned(),
            }],
            is_error: true,
        }],
    };
    assert_eq!(request.messages.len(), 7);
    assert_eq!(
        request.messages[3],
        missing("c2"),
        "c2's result is synthesized before the next turn"
    );
    assert_eq!(
        texts(&request.messages[4]),
        ["again"],
        "the aborted turn is gone"
    );
    assert_eq!(
        request.messages[6],
        missing("c3"),
        "open calls at the end get one too"
    );
}

/// In Pi's dialect the system chapter is one block, the sections joined as Pi joins them
/// (a blank line between), and the request says its dialect to the adapter.
#[test]
fn the_pi_dialect_sends_the_system_prompt_as_one_block() {
    let mut script = Script::new();
    script.system(
        json!({"preamble": "P", "tools": "T", "docs": "", "cwd": "C"}),
        &tools(&["read"]),
        &[],
    );
    script.user("hi");
    let options = RenderOptions::new().dialect(Dialect::Pi);
    let request = render_with(&script.context(), &full(), &options).request;
    let blocks: Vec<&str> = request.system.iter().map(|b| b.text.as_str()).collect();
    assert_eq!(blocks, ["P\n\nT\n\nC"]);
    assert_eq!(request.dialect, Dialect::Pi);
    assert_eq!(
        request.breakpoints[1].position,
        BreakpointPosition::System,
        "the breakpoint follows the one block"
    );
    let own = render(&script.context(), &full());
    assert_eq!(own.system.len(), 3);
    assert_eq!(own.dialect, Dialect::Strata);
}

#[test]
fn chapters_settings_and_breakpoints() {
    let mut script = Script::new();
    script.entry(
        "model_change",
        json!({"provider": "anthropic", "modelId": "claude-opus-4-8"}),
    );
    script.entry("thinking_level_change", json!({"thinkingLevel": "high"}));
    script.system(
        json!({"cwd": "C", "intro": "I", "rules": "R", "docs": "", "tools": "T", "extra": "X"}),
        &tools(&["read"]),
        &[],
    );
    script.user("hi");
    let options = RenderOptions::new()
        .cache_key("session-1")
        .max_tokens(1000)
        .ttl(CacheTtl::OneHour);
    let rendered = render_with(&script.context(), &full(), &options);
    let request = &rendered.request;
    let sections: Vec<(&str, &str)> = request
        .system
        .iter()
        .map(|block| (block.section.as_deref().unwrap_or(""), block.text.as_str()))
        .collect();
    assert_eq!(
        sections,
        [
            ("intro", "I"),
            ("tools", "T"),
            ("rules", "R"),
            ("cwd", "C"),
            ("extra", "X")
        ]
    );
    assert_eq!(request.model, "claude-opus-4-8");
    assert_eq!(request.thinking, ThinkingLevel::High);
    assert_eq!(request.cache_key.as_deref(), Some("session-1"));
    assert_eq!(request.max_tokens, Some(1000));
    let names: Vec<&str> = request
        .tools
        .iter()
        .map(|tool| tool.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["read", DEFERRED_PLACEHOLDER],
        "the placeholder is there from the first request"
    );
    let at = |position| Breakpoint {
        position,
        ttl: CacheTtl::OneHour,
    };
    assert_eq!(
        request.breakpoints,
        [
            at(BreakpointPosition::Tools),
            at(BreakpointPosition::System),
            at(BreakpointPosition::Message { index: 0 })
        ]
    );
    let mut two = no_mid();
    two.max_breakpoints = 2;
    let trimmed = render(&script.context(), &two);
    assert_eq!(
        trimmed.breakpoints.len(),
        2,
        "the latest breakpoints are kept"
    );
    assert_eq!(trimmed.breakpoints[0].position, BreakpointPosition::System);
    assert!(
        trimmed
            .tools
            .iter()
            .all(|tool| tool.name != DEFERRED_PLACEHOLDER)
    );
}

#[test]
fn a_fourth_breakpoint_keeps_what_came_before_the_latest_prompt() {
    let mut script = Script::new();
    script.system(json!({"intro": "I", "tools": "T"}), &tools(&["read"]), &[]);
    script.user("one");
    script.assistant("done one");
    script.user("two");
    script.calls(&[("c1", "read")]);
    // A tool result travels in a user message but is not a prompt.
    script.result("c1", "read", "fn a() {}");
    let request = render(&script.context(), &full());
    let positions = breakpoint_positions(&request);
    assert_eq!(
        positions,
        [
            BreakpointPosition::Tools,
            BreakpointPosition::System,
            BreakpointPosition::Message { index: 1 },
            BreakpointPosition::Message { index: 4 },
        ],
        "after the answer that precedes prompt two, whatever the turn holds since"
    );
    // Where the row allows fewer, the chapters' breakpoints come first.
    let mut three = full();
    three.max_breakpoints = 3;
    let trimmed = render(&script.context(), &three);
    let positions = breakpoint_positions(&trimmed);
    assert_eq!(
        positions,
        [
            BreakpointPosition::Tools,
            BreakpointPosition::System,
            BreakpointPosition::Message { index: 4 },
        ]
    );
    // The first prompt has nothing before it but the chapters.
    let mut first = Script::new();
    first.system(json!({"intro": "I"}), &tools(&["read"]), &[]);
    first.user("one");
    assert_eq!(render(&first.context(), &full()).breakpoints.len(), 3);
}

#[test]
fn on_a_tasks_first_request_the_fourth_breakpoint_stays_before_the_task_just_finished() {
    let mut script = Script::new();
    script.system(json!({"intro": "I", "tools": "T"}), &tools(&["read"]), &[]);
    script.user("one");
    script.assistant("done one");
    script.user("two");
    script.calls(&[("c1", "read")]);
    script.result("c1", "read", "fn a() {}");
    script.assistant("done two");
    // Task three's first request: nothing answers prompt three yet, so the slot stays before
    // prompt two (index 1), the entry every request of task two refreshed: masking task two's
    // outputs now rewrites from prompt two on, not from the chain's start.
    script.user("three");
    let request = render(&script.context(), &full());
    let positions = breakpoint_positions(&request);
    assert_eq!(
        positions,
        [
            BreakpointPosition::Tools,
            BreakpointPosition::System,
            BreakpointPosition::Message { index: 1 },
            BreakpointPosition::Message { index: 6 },
        ]
    );
    // Once a result follows prompt three, the slot moves before it.
    script.calls(&[("c2", "read")]);
    script.result("c2", "read", "fn b() {}");
    let request = render(&script.context(), &full());
    let positions = breakpoint_positions(&request);
    assert_eq!(positions[2], BreakpointPosition::Message { index: 5 });
}

#[test]
fn later_tools_are_deferred_and_announced() {
    let mut script = Script::new();
    script.system(sections(), &tools(&["read"]), &[]);
    script.user("hi");
    script.system(json!({}), &[tool("grep")], &["read"]);
    script.user("search");
    let request = render(&script.context(), &full());
    let layout: Vec<(&str, bool)> = request
        .tools
        .iter()
        .map(|tool| (tool.name.as_str(), tool.defer_loading))
        .collect();
    assert_eq!(
        layout,
        [
            ("read", false),
            (DEFERRED_PLACEHOLDER, true),
            ("grep", true)
        ]
    );
    let patch = &request.messages[1];
    assert_eq!(patch.role, Role::System);
    assert!(
        matches!(&patch.content[..], [ContentBlock::ToolRemoval { names }, ContentBlock::ToolAddition { tools }]
        if names == &["read".to_owned()] && tools.len() == 1 && tools[0].name == "grep" && tools[0].defer_loading)
    );
}

#[test]
fn a_changed_definition_rewrites_the_array_and_says_so() {
    let mut script = Script::new();
    script.system(sections(), &tools(&["read", "bash"]), &[]);
    script.user("hi");
    script.system(json!({}), &[tool("grep")], &[]);
    script.user("search");
    let before = strata_context::render_with(&script.context(), &full(), &RenderOptions::new());

    // `grep` withdrawn, then re-declared with a new definition; `read` redefined in place.
    script.system(json!({}), &[], &["grep"]);
    script.user("stop searching");
    let mut grep = tool("grep");
    grep["description"] = json!("Search files with a regular expression.");
    let mut read = tool("read");
    read["description"] = json!("Read a file, with line numbers.");
    let redefined = script.system(json!({}), &[grep, read], &[]);
    script.user("search again");
    let after = strata_context::render_with(&script.context(), &full(), &RenderOptions::new());

    // The render says so on its own, without a previous request to compare with: for a tool
    // declared by a patch and for one the chain started with.
    let redefined_notes: Vec<&strata_context::RenderNote> = after
        .notes
        .iter()
        .filter(|note| matches!(note, strata_context::RenderNote::ToolRedefined { .. }))
        .collect();
    let by = strata_session::EntryId::new(redefined);
    assert_eq!(
        redefined_notes,
        [
            &strata_context::RenderNote::ToolRedefined {
                name: "read".to_owned(),
                by: by.clone(),
            },
            &strata_context::RenderNote::ToolRedefined {
                name: "grep".to_owned(),
                by,
            },
        ],
        "{:?}",
        after.notes
    );
    let report = after.report(Some(&before));
    assert!(
        report.deferred_changed,
        "grep is deferred: its new definition is outside the prefix"
    );
    assert!(
        report
            .notes
            .contains(&strata_context::RenderNote::ToolsRewritten {
                tool: Some("read".to_owned())
            }),
        "{report:?}"
    );
    assert!(matches!(
        report.divergence,
        Some(strata_context::render::Divergence::At {
            chapter: strata_context::render::Chapter::Tools,
            ..
        })
    ));
    let names: Vec<&str> = after
        .request
        .tools
        .iter()
        .map(|tool| tool.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["read", "bash", DEFERRED_PLACEHOLDER, "grep"],
        "order and length kept"
    );
}

#[test]
fn a_chain_without_tools_declares_the_placeholder_from_the_first_request() {
    let mut script = Script::new();
    script.system(sections(), &[], &[]);
    script.user("hi");
    let first = render_with(&script.context(), &full(), &RenderOptions::new());
    let names: Vec<(&str, bool)> = first
        .request
        .tools
        .iter()
        .map(|tool| (tool.name.as_str(), tool.defer_loading))
        .collect();
    assert_eq!(names, [(DEFERRED_PLACEHOLDER, true)]);

    script.assistant("hello");
    script.system(json!({}), &[tool("grep")], &[]);
    script.user("search");
    let later = render_with(&script.context(), &full(), &RenderOptions::new());
    let names: Vec<(&str, bool)> = later
        .request
        .tools
        .iter()
        .map(|tool| (tool.name.as_str(), tool.defer_loading))
        .collect();
    assert_eq!(names, [(DEFERRED_PLACEHOLDER, true), ("grep", true)]);
    assert_eq!(
        later.bytes.tools, first.bytes.tools,
        "the first dynamic tool leaves the tools chapter's prefix bytes alone"
    );
    assert_eq!(
        later.report(Some(&first)).divergence,
        Some(strata_context::render::Divergence::Extends {
            at: first.bytes.len()
        })
    );

    // A provider without deferred tools gets no placeholder.
    let plain = render(&script.context(), &super::support::mid_only());
    let names: Vec<&str> = plain.tools.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names, ["grep"]);
}

#[test]
fn patches_at_one_user_message_share_one_system_message() {
    let mut script = Script::new();
    script.system(sections(), &tools(&["read", "bash"]), &[]);
    script.user("hi");
    script.assistant("hello");
    script.system(json!({"rules": "Be terse."}), &[tool("grep")], &[]);
    script.system(json!({"cwd": "Working directory: /w/src"}), &[], &["bash"]);
    script.system(json!({}), &[], &[]);
    script.user("search");
    let request = render(&script.context(), &full());
    let roles: Vec<Role> = request
        .messages
        .iter()
        .map(|message| message.role)
        .collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::System]
    );
    let patch = &request.messages[3];
    assert!(
        matches!(&patch.content[..], [
            ContentBlock::Text { text: rules, .. },
            ContentBlock::ToolAddition { tools },
            ContentBlock::Text { text: cwd, .. },
            ContentBlock::ToolRemoval { names },
        ] if rules.contains("`rules` section changed") && rules.ends_with("Be terse.")
            && tools.len() == 1 && tools[0].name == "grep"
            && cwd.contains("`cwd` section changed") && cwd.ends_with("/w/src")
            && names == &["bash".to_owned()]),
        "each change in patch order: {:?}",
        patch.content
    );

    // Without tool-change blocks the same patches are one message of texts.
    let plain = render(&script.context(), &super::support::mid_only());
    assert_eq!(plain.messages.len(), 4);
    assert_eq!(plain.messages[3].role, Role::System);
    let said = texts(&plain.messages[3]);
    assert_eq!(said.len(), 4, "{said:?}");
    assert!(said[1].contains("now available: `grep`"), "{said:?}");
    assert!(
        said[3].contains("no longer available; do not call them: `bash`"),
        "{said:?}"
    );
}

/// With inline tool definitions (`Capabilities::inline_tools`) a tool declared mid-chain stays
/// out of the tools chapter: no placeholder from the first request, no deferred copy later,
/// the chapter's bytes the same before and after; the `tool_addition` carries the definition.
#[test]
fn inline_tools_leave_the_tools_chapter_as_the_chain_started_it() {
    let inline = strata_provider::Capabilities {
        inline_tools: true,
        ..full()
    };
    let mut script = Script::new();
    script.system(sections(), &[tool("read")], &[]);
    script.user("hi");
    let first = render_with(&script.context(), &inline, &RenderOptions::new());
    let names = |request: &strata_provider::Request| -> Vec<String> {
        request.tools.iter().map(|t| t.name.clone()).collect()
    };
    assert_eq!(names(&first.request), ["read"]);

    script.assistant("hello");
    script.system(json!({}), &[tool("grep")], &[]);
    script.user("search");
    let later = render_with(&script.context(), &inline, &RenderOptions::new());
    assert_eq!(names(&later.request), ["read"]);
    assert_eq!(later.bytes.tools, first.bytes.tools);
    let added = later
        .request
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .find_map(|block| match block {
            ContentBlock::ToolAddition { tools } => Some(tools.clone()),
            _ => None,
        })
        .expect("a tool_addition for grep");
    assert_eq!(added.len(), 1);
    assert_eq!(added[0].name, "grep");
}

/// With inline tool definitions, a tool withdrawn and added again unchanged stays out of the
/// tools chapter (the adapter refers to its first definition); one added again with another
/// definition goes to the chapter with it, since a request defines a name inline once.
#[test]
fn an_inline_tool_redefined_mid_chain_goes_to_the_tools_chapter() {
    let inline = strata_provider::Capabilities {
        inline_tools: true,
        ..full()
    };
    let names = |request: &strata_provider::Request| -> Vec<String> {
        request.tools.iter().map(|t| t.name.clone()).collect()
    };
    let mut script = Script::new();
    script.system(sections(), &[tool("read")], &[]);
    script.user("hi");
    script.assistant("hello");
    script.system(json!({}), &[tool("grep")], &[]);
    script.user("search");
    script.assistant("found");
    script.system(json!({}), &[], &["grep"]);
    script.user("stop searching");
    script.assistant("ok");
    script.system(json!({}), &[tool("grep")], &[]);
    script.user("search again");
    let readded = render_with(&script.context(), &inline, &RenderOptions::new());
    assert_eq!(names(&readded.request), ["read"]);

    script.assistant("found again");
    let mut changed = tool("grep");
    changed["description"] = json!("Search, version two.");
    script.system(json!({}), &[changed], &[]);
    script.user("search with the new one");
    let redefined = render_with(&script.context(), &inline, &RenderOptions::new());
    assert_eq!(names(&redefined.request), ["read", "grep"]);
    assert_eq!(
        redefined.request.tools[1].description,
        "Search, version two."
    );
}
