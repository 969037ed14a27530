//! The scripted model: a TOML list of assistant turns, with tool calls resolved against the
//! declared tools.
//!
//! Two playbacks pick the turn that answers a request:
//!
//! - `playback = "assistant_count"` (the default): turn *n* answers a request that already
//!   holds *n* assistant messages.
//! - `playback = "sequence"`: each request takes the next `[[turn]]`; a request whose
//!   conversation (its messages, cache markers left out) equals one already answered — a
//!   retry — gets that same turn again. Summary requests (strata's and Pi's compaction,
//!   split-turn and branch-summary requests, recognised by their fixed instruction text) are
//!   answered from `[[summary]]` entries in order (an entry with a `kind` answers only that
//!   kind), or a deterministic default summary when none are left, and never take a turn. A turn may carry `user = "..."`: the prompt a driver
//!   sends before it ([`Scenario::user_prompts`]). Past the last turn the model echoes.
//!
//! Under either playback a reply cut by the request's output cap (`max_tokens`,
//! `max_output_tokens`, …; see [`crate::output`]) does not consume its turn or summary entry,
//! and does not set off the turn's `fault`: the same turn answers the next request. A harness
//! that pings the cache with `max_tokens: 1` to keep it warm, then continues, gets the
//! script's turns unchanged.
//!
//! ```
//! let scenario = strata_mock::Scenario::from_toml(r#"
//! playback = "sequence"
//!
//! [[turn]]
//! user = "Fix the failing test."
//! text = "Reading the test first."
//! [[turn.tool_call]]
//! tool = "read"
//! args = { path = "test.sh" }
//!
//! [[turn]]
//! text = "Done."
//!
//! [[summary]]
//! text = "Goal: fix the failing test. Done: nothing yet."
//! "#, "inline")?;
//! assert_eq!(scenario.user_prompts(), ["Fix the failing test."]);
//! # Ok::<(), strata_mock::ScenarioError>(())
//! ```

use std::hash::{DefaultHasher, Hash, Hasher};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::fault::FaultKind;
use crate::summary::SummaryKind;

/// A scenario file: the assistant turns, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A name shown in records.
    #[serde(default)]
    pub name: String,
    /// How a request picks its turn.
    #[serde(default)]
    pub playback: Playback,
    /// The scripted assistant turns.
    #[serde(default, rename = "turn")]
    pub turns: Vec<TurnSpec>,
    /// Answers to summary requests, in order (`sequence` playback).
    #[serde(default, rename = "summary")]
    pub summaries: Vec<SummarySpec>,
    /// The model the script plays. A request for another model (a harness's side request:
    /// a title, a quota check, a small-model helper) gets [`SIDE_REPLY`] and takes no turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The fixed short reply to a request for another model than the scenario's.
pub const SIDE_REPLY: &str = "ok";

impl Scenario {
    /// Whether a request for `model` is a side request this script does not play.
    pub fn is_side_request(&self, model: &str) -> bool {
        self.model.as_deref().is_some_and(|own| own != model)
    }
}

/// How a request picks the turn that answers it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Playback {
    /// Turn `n` answers a request that already holds `n` assistant messages.
    #[default]
    AssistantCount,
    /// Each new request takes the next turn; retries replay theirs; summary requests are
    /// answered from `[[summary]]` entries.
    Sequence,
}

/// A scripted answer to a summary request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummarySpec {
    /// The summary text the model returns.
    pub text: String,
    /// Only answer this kind of summary request (`history`, `turn_prefix`, `branch`); any
    /// kind when absent. A compaction that splits a turn sends its history and turn-prefix
    /// requests at once, so their order of arrival is not fixed, but their kinds are.
    #[serde(default)]
    pub kind: Option<SummaryKind>,
}

/// One scripted assistant turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnSpec {
    /// The user prompt a driver sends before this turn (see [`Scenario::user_prompts`]).
    #[serde(default)]
    pub user: Option<String>,
    /// Reasoning text, streamed before everything else.
    #[serde(default)]
    pub thinking: Option<String>,
    /// The visible answer.
    #[serde(default)]
    pub text: Option<String>,
    /// Tool calls, in order.
    #[serde(default, rename = "tool_call")]
    pub tool_calls: Vec<ToolCallSpec>,
    /// A fault played the first time this turn is reached (a retry then gets the turn).
    #[serde(default)]
    pub fault: Option<FaultKind>,
    /// The turn needs a fact an earlier tool output held (`sequence` playback): see
    /// [`RecallSpec`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall: Option<RecallSpec>,
}

/// A fact a turn needs, as a model uses what it has read: when the request still holds the
/// fact (the text after `marker`), the turn plays with `{recall}` in its tool-call arguments
/// replaced by the fact's value; when it does not (the output was compacted away or masked),
/// the model re-fetches it first — the reply is the `fetch` calls, and the turn waits for the
/// next request. A fact still missing after [`RecallSpec::MAX_FETCHES`] fetches is played as
/// `unknown`, so a harness that cannot bring it back fails the task instead of looping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallSpec {
    /// The text right before the fact's value, e.g. `fact-17: `. The value runs to the next
    /// character that is not alphanumeric, `-` or `_`.
    pub marker: String,
    /// The calls that bring the fact back.
    #[serde(rename = "fetch")]
    pub fetch: Vec<ToolCallSpec>,
    /// What the model says with the fetch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch_text: Option<String>,
}

impl RecallSpec {
    /// Fetches the model tries for one turn before it gives up on the fact.
    pub const MAX_FETCHES: usize = 2;

    /// The fact's value in `transcript`: the last occurrence of the marker wins (a fetch
    /// brings the newest copy).
    pub fn find(&self, transcript: &str) -> Option<String> {
        let start = transcript.rfind(&self.marker)? + self.marker.len();
        let value: String = transcript[start..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        (!value.is_empty()).then_some(value)
    }

    /// The turn that re-fetches the fact.
    pub fn fetch_turn(&self) -> TurnSpec {
        TurnSpec {
            text: self.fetch_text.clone(),
            tool_calls: self.fetch.clone(),
            ..TurnSpec::default()
        }
    }
}

impl TurnSpec {
    /// This turn with `{recall}` in its tool-call arguments replaced by `value`.
    pub fn with_recalled(&self, value: &str) -> TurnSpec {
        let mut turn = self.clone();
        for call in &mut turn.tool_calls {
            for arg in call.args.values_mut() {
                if let Value::String(text) = arg {
                    *text = text.replace("{recall}", value);
                }
            }
        }
        turn.recall = None;
        turn
    }
}

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallSpec {
    /// A declared tool name, or a role: `read`, `bash`, `edit`, `write`.
    pub tool: String,
    /// Arguments, named as strata's tools name them; renamed to the declared schema's names.
    #[serde(default)]
    pub args: Map<String, Value>,
}

/// A tool the request declares.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredTool {
    /// Its name.
    pub name: String,
    /// The property names of its input schema.
    pub properties: Vec<String>,
}

impl DeclaredTool {
    /// Reads the property names from a JSON schema.
    pub fn new(name: &str, schema: Option<&Value>) -> Self {
        let properties = schema
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
            .map(|props| props.keys().cloned().collect())
            .unwrap_or_default();
        Self {
            name: name.to_owned(),
            properties,
        }
    }
}

/// What the request says about the conversation, as the scripted model needs it.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    /// Assistant messages already in the request.
    pub assistant_turns: usize,
    /// The text of the last user message, if the last message is user text.
    pub last_user_text: Option<String>,
    /// The text of every user message that carries text, in order.
    pub user_texts: Vec<String>,
    /// The system prompt's text, its blocks joined by newlines.
    pub system_text: String,
    /// Identity of the conversation: a hash of its messages with cache markers left out, so a
    /// retried request has the key of the one it retries.
    pub key: u64,
    /// Declared tools.
    pub tools: Vec<DeclaredTool>,
    /// Every string of the request body, newline-joined: where a recall turn looks for its
    /// fact ([`RecallSpec`]). Filled by the server for `sequence` playback.
    pub transcript: String,
}

/// Every string in `value`, depth first, newline-joined (see [`Conversation::transcript`]).
pub fn transcript_of(value: &Value) -> String {
    fn walk(value: &Value, out: &mut String) {
        match value {
            Value::String(text) => {
                out.push_str(text);
                out.push('\n');
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, out)),
            Value::Object(map) => map.values().for_each(|item| walk(item, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    walk(value, &mut out);
    out
}

/// Why the reply ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// A finished answer.
    EndTurn,
    /// The reply asks for tool calls.
    ToolUse,
    /// The request's output cap cut the reply ([`crate::output::cut`]).
    MaxTokens,
}

/// A resolved tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    /// A call id, stable for the same turn and position.
    pub id: String,
    /// The declared name it resolved to.
    pub name: String,
    /// The arguments.
    pub arguments: Value,
}

impl ToolCall {
    /// The arguments as a JSON string.
    pub fn arguments_json(&self) -> String {
        self.arguments.to_string()
    }
}

/// The assistant reply to play for one request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reply {
    /// Reasoning, if any.
    pub thinking: Option<String>,
    /// Visible text, if any.
    pub text: Option<String>,
    /// Tool calls.
    pub tool_calls: Vec<ToolCall>,
    /// Why it stops.
    pub stop: Stop,
    /// The scripted turn played, `None` for the echo default.
    pub turn: Option<usize>,
}

/// Error reading a scenario.
#[derive(Debug, thiserror::Error)]
#[error("scenario {origin}: {message}")]
pub struct ScenarioError {
    /// The file or source it came from.
    pub origin: String,
    /// What is wrong, with line and column.
    pub message: String,
}

impl Scenario {
    /// Parses TOML; `origin` names the source in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, ScenarioError> {
        toml::from_str(text).map_err(|e| ScenarioError {
            origin: origin.to_owned(),
            message: e.to_string(),
        })
    }

    /// Reads a scenario file.
    pub fn from_file(path: &std::path::Path) -> Result<Self, ScenarioError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            origin: origin.clone(),
            message: e.to_string(),
        })?;
        Self::from_toml(&text, &origin)
    }

    /// The user prompts of the turns that carry one, in order: what a driver sends.
    pub fn user_prompts(&self) -> Vec<&str> {
        self.turns
            .iter()
            .filter_map(|turn| turn.user.as_deref())
            .collect()
    }

    /// The turn `assistant_count` playback picks: the one indexed by the assistant messages
    /// already in the request, if the script has it.
    pub fn turn(&self, conversation: &Conversation) -> Option<(usize, &TurnSpec)> {
        self.turns
            .get(conversation.assistant_turns)
            .map(|t| (conversation.assistant_turns, t))
    }
}

/// Plays a turn (or the echo default when `turn` is `None`) against the declared tools.
pub fn reply(turn: Option<(usize, &TurnSpec)>, conversation: &Conversation) -> Reply {
    let Some((index, spec)) = turn else {
        return Reply {
            thinking: None,
            text: Some(
                conversation
                    .last_user_text
                    .clone()
                    .unwrap_or_else(|| "ok".to_owned()),
            ),
            tool_calls: Vec::new(),
            stop: Stop::EndTurn,
            turn: None,
        };
    };
    let tool_calls: Vec<ToolCall> = spec
        .tool_calls
        .iter()
        .enumerate()
        .map(|(position, call)| resolve_call(index, position, call, &conversation.tools))
        .collect();
    let stop = if tool_calls.is_empty() {
        Stop::EndTurn
    } else {
        Stop::ToolUse
    };
    let text = match (&spec.text, tool_calls.is_empty(), &spec.thinking) {
        (Some(text), _, _) => Some(text.clone()),
        // A turn with nothing in it still says something.
        (None, true, None) => Some(String::new()),
        _ => None,
    };
    Reply {
        thinking: spec.thinking.clone(),
        text,
        tool_calls,
        stop,
        turn: Some(index),
    }
}

/// The reply to a summary request: the summary text, nothing else.
pub fn summary_reply(text: &str) -> Reply {
    Reply {
        thinking: None,
        text: Some(text.to_owned()),
        tool_calls: Vec::new(),
        stop: Stop::EndTurn,
        turn: None,
    }
}

const ROLES: &[(&str, &[&str])] = &[
    (
        "read",
        &[
            "read",
            "read_file",
            "readfile",
            "view",
            "cat",
            "file_read",
            "open_file",
            "view_file",
        ],
    ),
    (
        "bash",
        &[
            "bash",
            "shell",
            "run_shell_command",
            "exec_command",
            "execute_command",
            "run_command",
            "terminal",
            "exec",
            "run_terminal_cmd",
        ],
    ),
    (
        "edit",
        &[
            "edit",
            "edit_file",
            "str_replace",
            "str_replace_editor",
            "str_replace_based_edit_tool",
            "replace",
            "multiedit",
            "apply_patch",
            "search_replace",
        ],
    ),
    (
        "write",
        &[
            "write",
            "write_file",
            "create_file",
            "writefile",
            "file_write",
        ],
    ),
];

const ARGUMENTS: &[&[&str]] = &[
    &[
        "path",
        "file_path",
        "filePath",
        "absolute_path",
        "file",
        "filename",
        "target_file",
    ],
    &["command", "cmd"],
    &["oldText", "old_text", "old_string", "old_str", "search"],
    &[
        "newText",
        "new_text",
        "new_string",
        "new_str",
        "replacement",
    ],
    &["content", "contents", "file_text", "text"],
];

fn resolve_tool<'a>(wanted: &str, tools: &'a [DeclaredTool]) -> Option<&'a DeclaredTool> {
    if let Some(exact) = tools.iter().find(|t| t.name == wanted) {
        return Some(exact);
    }
    if let Some(folded) = tools.iter().find(|t| t.name.eq_ignore_ascii_case(wanted)) {
        return Some(folded);
    }
    let (_, names) = ROLES
        .iter()
        .find(|(role, _)| role.eq_ignore_ascii_case(wanted))?;
    names
        .iter()
        .find_map(|name| tools.iter().find(|t| t.name.eq_ignore_ascii_case(name)))
}

fn rename_argument(key: &str, declared: &[String]) -> String {
    if declared.is_empty() || declared.iter().any(|p| p == key) {
        return key.to_owned();
    }
    ARGUMENTS
        .iter()
        .find(|group| group.contains(&key))
        .and_then(|group| {
            group
                .iter()
                .find(|alias| declared.iter().any(|p| p == *alias))
        })
        .map_or_else(|| key.to_owned(), |alias| (*alias).to_owned())
}

fn resolve_call(
    turn: usize,
    position: usize,
    call: &ToolCallSpec,
    tools: &[DeclaredTool],
) -> ToolCall {
    let declared = resolve_tool(&call.tool, tools);
    let name = declared.map_or_else(|| call.tool.clone(), |t| t.name.clone());
    let properties = declared
        .map(|t| t.properties.as_slice())
        .unwrap_or_default();
    let arguments: Map<String, Value> = call
        .args
        .iter()
        .map(|(k, v)| (rename_argument(k, properties), v.clone()))
        .collect();
    let mut hasher = DefaultHasher::new();
    (turn, position, &name).hash(&mut hasher);
    ToolCall {
        id: format!(
            "{:016x}{:08x}",
            hasher.finish(),
            (turn * 64 + position) as u32
        ),
        name,
        arguments: Value::Object(arguments),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(names: &[(&str, &[&str])]) -> Vec<DeclaredTool> {
        names
            .iter()
            .map(|(n, props)| DeclaredTool {
                name: (*n).to_owned(),
                properties: props.iter().map(|p| (*p).to_owned()).collect(),
            })
            .collect()
    }

    #[test]
    fn roles_resolve_to_other_harnesses_tool_names_and_arguments() {
        let scenario = Scenario::from_toml(
            r#"
            [[turn]]
            text = "reading"
            [[turn.tool_call]]
            tool = "read"
            args = { path = "src/lib.rs" }
            "#,
            "inline",
        )
        .unwrap();
        let conversation = Conversation {
            tools: tools(&[("Bash", &["command"]), ("Read", &["file_path", "limit"])]),
            ..Conversation::default()
        };
        let reply = reply(scenario.turn(&conversation), &conversation);
        assert_eq!(reply.stop, Stop::ToolUse);
        assert_eq!(reply.tool_calls[0].name, "Read");
        assert_eq!(
            reply.tool_calls[0].arguments,
            serde_json::json!({"file_path": "src/lib.rs"})
        );
    }

    #[test]
    fn past_the_script_the_model_echoes() {
        let conversation = Conversation {
            assistant_turns: 3,
            last_user_text: Some("hello".into()),
            ..Conversation::default()
        };
        let r = reply(Scenario::default().turn(&conversation), &conversation);
        assert_eq!(r.text.as_deref(), Some("hello"));
        assert_eq!(r.turn, None);
    }

    #[test]
    fn bad_toml_names_the_line() {
        let err = Scenario::from_toml("[[turn]]\ntext = \n", "demo.toml").unwrap_err();
        assert!(err.to_string().contains("demo.toml"), "{err}");
        assert!(err.to_string().contains("line 2"), "{err}");
    }
}
