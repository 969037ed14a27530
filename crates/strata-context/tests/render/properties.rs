//! Properties over random sessions: appends only extend the request, compaction without
//! changes touches only chapter 3, a removal leaves chapter 1 byte-identical.

use proptest::prelude::*;
use serde_json::{Value, json};
use strata_context::render::{Chapter, Divergence, NO_RESULT_PROVIDED, RequestBytes};
use strata_context::{Context, ModelRef, RenderOptions, Rendered, render_with};
use strata_provider::{ContentBlock, Role, ToolResultContent};

use super::support::{Script, full, mid_only, no_mid, tool};

/// Tool names random sessions draw from.
pub const POOL: [&str; 12] = [
    "read", "bash", "edit", "write", "grep", "find", "ls", "web", "todo", "task", "recall", "lsp",
];
const SECTIONS: [&str; 6] = ["intro", "tools", "rules", "docs", "skills", "cwd"];

/// One step of a random session.
#[derive(Debug, Clone)]
pub enum Step {
    User(u8),
    Assistant(u8),
    /// An assistant turn calling `calls` tools; each call answered or not.
    ToolTurn(Vec<(usize, bool)>),
    /// An aborted assistant turn (dropped from requests).
    Aborted,
    /// A `!cmd` the user ran.
    Bash(u8),
    /// A switch to another model (assistant turns with thinking convert differently).
    SwitchModel(bool),
    /// A patch: one section rewritten, tools added and removed (pool indices).
    Patch {
        section: Option<(usize, u8)>,
        added: Vec<usize>,
        removed: Vec<usize>,
    },
}

pub fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => any::<u8>().prop_map(Step::User),
        3 => any::<u8>().prop_map(Step::Assistant),
        3 => prop::collection::vec((0..POOL.len(), prop::bool::weighted(0.85)), 1..3).prop_map(Step::ToolTurn),
        1 => Just(Step::Aborted),
        1 => any::<u8>().prop_map(Step::Bash),
        1 => any::<bool>().prop_map(Step::SwitchModel),
        2 => (
            prop::option::of((0..SECTIONS.len(), any::<u8>())),
            prop::collection::vec(0..POOL.len(), 0..3),
            prop::collection::vec(0..POOL.len(), 0..3),
        )
            .prop_map(|(section, added, removed)| Step::Patch { section, added, removed }),
    ]
}

/// Writes the session start: model, snapshot with the first `initial` pool tools.
pub fn start(script: &mut Script, initial: usize) {
    script.entry(
        "model_change",
        json!({"provider": "anthropic", "modelId": "claude-opus-4-8"}),
    );
    let sections: serde_json::Map<String, Value> = SECTIONS
        .iter()
        .map(|name| ((*name).to_owned(), json!(format!("{name} v0"))))
        .collect();
    let tools: Vec<Value> = POOL[..initial].iter().map(|name| tool(name)).collect();
    script.system(Value::Object(sections), &tools, &[]);
}

/// Writes one step; returns the ids of the entries it wrote.
pub fn write(script: &mut Script, step: &Step, counter: &mut usize) -> Vec<String> {
    *counter += 1;
    let n = *counter;
    match step {
        Step::User(seed) => vec![script.user(&format!("request {n} ({seed})"))],
        Step::Assistant(seed) => vec![script.assistant(&format!("answer {n} ({seed})"))],
        Step::ToolTurn(calls) => {
            let ids: Vec<(String, &str, bool)> = calls
                .iter()
                .enumerate()
                .map(|(index, (tool, answered))| (format!("call_{n}_{index}"), POOL[*tool], *answered))
                .collect();
            let pairs: Vec<(&str, &str)> = ids.iter().map(|(id, name, _)| (id.as_str(), *name)).collect();
            let mut written = vec![script.calls(&pairs)];
            for (id, name, answered) in &ids {
                if *answered {
                    written.push(script.result(id, name, &format!("output of {id}")));
                }
            }
            written
        }
        Step::SwitchModel(back) => {
            let (provider, model) = if *back { ("anthropic", "claude-opus-4-8") } else { ("openai", "gpt-5.6") };
            vec![script.entry("model_change", json!({"provider": provider, "modelId": model}))]
        }
        Step::Aborted => vec![script.assistant_blocks(vec![json!({"type": "text", "text": "partial"})], "aborted")],
        Step::Bash(seed) => vec![script.entry(
            "message",
            json!({"message": {"role": "bashExecution", "command": format!("echo {seed}"), "output": format!("{seed}"),
                "exitCode": 0, "cancelled": false, "truncated": false, "timestamp": 0}}),
        )],
        Step::Patch { section, added, removed } => {
            let sections = match section {
                Some((index, seed)) => json!({ SECTIONS[*index]: format!("{} v{n} ({seed})", SECTIONS[*index]) }),
                None => json!({}),
            };
            let added: Vec<Value> = added.iter().map(|index| tool(POOL[*index])).collect();
            let removed: Vec<&str> = removed.iter().map(|index| POOL[*index]).collect();
            vec![script.system(sections, &added, &removed)]
        }
    }
}

/// Start offset of each line of a chapter.
fn line_starts(chapter: &[u8]) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        chapter
            .iter()
            .enumerate()
            .filter(|(_, byte)| **byte == b'\n')
            .map(|(at, _)| at + 1),
    );
    starts.pop();
    starts
}

fn is_missing_result(message: &strata_provider::Message) -> bool {
    matches!(message.content.as_slice(), [ContentBlock::ToolResult { content, is_error: true, .. }]
        if content == &[ToolResultContent::Text { text: NO_RESULT_PROVIDED.to_owned() }])
}

/// Offset (in tools ‖ system ‖ messages) where the request's last message starts; trailing
/// "No result provided" results stand in for results not yet written and do not count.
pub fn last_message_start(rendered: &Rendered) -> usize {
    let bytes: &RequestBytes = &rendered.bytes;
    let base = bytes.tools.len() + bytes.system.len();
    let starts = line_starts(&bytes.messages);
    let messages = &rendered.request.messages;
    let mut last = messages.len();
    while last > 0 && is_missing_result(&messages[last - 1]) {
        last -= 1;
    }
    match last.checked_sub(1) {
        Some(index) => base + starts[index],
        None => base,
    }
}

fn tool_names(context: &Context) -> Vec<String> {
    context
        .tools
        .all()
        .iter()
        .map(|tool| tool.name.clone())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// With mid-conversation system messages, each appended entry leaves every byte before the
    /// previous request's last message alone, and every system message directly follows a
    /// user message. Without deferred tools, a newly declared tool
    /// is the one exception: it appends to chapter 1.
    #[test]
    fn appends_never_change_bytes_before_the_previous_last_message(
        initial in 0usize..6,
        steps in prop::collection::vec(step(), 1..24),
    ) {
        let mut script = Script::new();
        start(&mut script, initial);
        let mut counter = 0;
        for step in &steps {
            write(&mut script, step, &mut counter);
        }
        let tree = script.tree();
        let options = RenderOptions::new().cache_key("s");
        for capabilities in [full(), mid_only()] {
            let mut previous: Option<(Rendered, Vec<String>, Option<ModelRef>)> = None;
            for id in script.ids() {
                let context = script.context_at(&tree, id);
                let rendered = render_with(&context, &capabilities, &options);
                prop_assert_eq!(&rendered, &render_with(&context.clone(), &capabilities, &options), "deterministic");
                let messages = &rendered.request.messages;
                for index in (0..messages.len()).filter(|index| messages[*index].role == Role::System) {
                    prop_assert!(index > 0 && messages[index - 1].role == Role::User,
                        "system message {} of entry {} does not directly follow a user message", index, id);
                }
                let names = tool_names(&context);
                // A model switch re-renders history (Pi turns another model's thinking into
                // text); the property is about appends under one model.
                let same_model = previous.as_ref().is_some_and(|(_, _, model)| *model == context.model);
                if let Some((before, before_names, _)) = previous.as_ref().filter(|_| same_model) {
                    let divergence = rendered.report(Some(before)).divergence;
                    let grew = names.len() > before_names.len();
                    match divergence {
                        Some(Divergence::Identical | Divergence::Extends { .. }) => {}
                        Some(Divergence::At { offset, chapter: Chapter::Tools, .. })
                            if grew && !capabilities.deferred_tools =>
                        {
                            prop_assert!(rendered.bytes.tools.starts_with(&before.bytes.tools),
                                "a new undeferred tool only appends to chapter 1 (at {})", offset);
                        }
                        Some(Divergence::At { offset, chapter, .. }) => {
                            prop_assert!(offset >= last_message_start(before),
                                "entry {} changed byte {} in {:?}, before the previous last message at {}",
                                id, offset, chapter, last_message_start(before));
                        }
                        None => prop_assert!(false, "no divergence computed"),
                    }
                }
                previous = Some((rendered, names, context.model.clone()));
            }
        }
    }

    /// A compaction with no tool or section change since the chain began leaves chapters 1 and
    /// 2 byte-identical; only chapter 3 is rewritten.
    #[test]
    fn compaction_without_changes_rewrites_only_the_messages(
        initial in 1usize..8,
        steps in prop::collection::vec(step().prop_filter("no patches", |step| !matches!(step, Step::Patch { .. })), 2..16),
        compact_first in any::<bool>(),
    ) {
        let mut script = Script::new();
        start(&mut script, initial);
        let sections: serde_json::Map<String, Value> =
            SECTIONS.iter().map(|name| ((*name).to_owned(), json!(format!("{name} v0")))).collect();
        let live: Vec<Value> = POOL[..initial].iter().map(|name| tool(name)).collect();
        let mut counter = 0;
        let first_kept = script.user("first");
        if compact_first {
            script.compaction("earlier work", &first_kept, Value::Object(sections.clone()), &live);
        }
        let mut kept = first_kept.clone();
        for (index, step) in steps.iter().enumerate() {
            write(&mut script, step, &mut counter);
            if index == steps.len() / 2 {
                kept = script.user("kept from here");
            }
        }
        for capabilities in [full(), mid_only(), no_mid()] {
            let before = render_with(&script.context(), &capabilities, &RenderOptions::new());
            let mut compacted = script.clone();
            compacted.compaction("everything so far", &kept, Value::Object(sections.clone()), &live);
            let after = render_with(&compacted.context(), &capabilities, &RenderOptions::new());
            prop_assert_eq!(&after.bytes.tools, &before.bytes.tools);
            prop_assert_eq!(&after.bytes.deferred, &before.bytes.deferred);
            prop_assert_eq!(&after.bytes.system, &before.bytes.system);
            prop_assert_ne!(&after.bytes.messages, &before.bytes.messages);
            let divergence = after.report(Some(&before)).divergence;
            prop_assert!(matches!(divergence, Some(Divergence::At { chapter: Chapter::Messages, .. })), "{:?}", divergence);
        }
    }

    /// Withdrawing a tool from the middle of the array leaves chapter 1 byte-identical.
    #[test]
    fn removing_a_tool_in_the_middle_keeps_the_tools_chapter(
        initial in 3usize..8,
        added in prop::collection::vec(0..POOL.len(), 0..4),
        victim in 1usize..7,
        user_first in any::<bool>(),
    ) {
        let mut script = Script::new();
        start(&mut script, initial);
        script.user("go");
        let added: Vec<Value> = added.iter().map(|index| tool(POOL[*index])).collect();
        script.system(json!({}), &added, &[]);
        if user_first {
            script.user("more");
        }
        for capabilities in [full(), mid_only()] {
            let before_context = script.context();
            let names = tool_names(&before_context);
            let victim = &names[victim.min(names.len() - 2)];
            let before = render_with(&before_context, &capabilities, &RenderOptions::new());
            let mut after_script = script.clone();
            after_script.system(json!({"tools": format!("{victim} is gone")}), &[], &[victim]);
            after_script.user("after");
            let after = render_with(&after_script.context(), &capabilities, &RenderOptions::new());
            prop_assert_eq!(&after.request.tools, &before.request.tools);
            prop_assert_eq!(&after.bytes.tools, &before.bytes.tools);
            prop_assert_eq!(after.report(None).tools, before.report(None).tools);
        }
    }
}
