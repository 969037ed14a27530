//! Cache-aware observation masking: stale tool outputs (old reads, test runs, listings) are
//! replaced by short stubs that say what was there and how to get it back, as context edits
//! (the full output stays in the session file). A stub changes the request from the first
//! masked entry on, so everything after it is written to the cache again; masking pays only
//! when the reads it saves over the rest of the epoch exceed that rewrite. [`plan_masking`]
//! decides, in batches: it never touches the current task's results (everything after the
//! latest user prompt), so a result the model is working with is never hidden.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use strata_context::Context;
use strata_provider::Prices;
use strata_session::{AgentMessage, ContentBlock, EntryId};

use crate::estimate::estimate_message_tokens;

/// Masking settings (`[compaction.masking]` in config).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct MaskingSettings {
    /// Masking runs at all (default on).
    pub enabled: bool,
    /// Tool outputs of the latest this many tasks (user prompts) are never masked; at least
    /// the current one is always kept, whatever this says.
    pub keep_recent_tasks: usize,
    /// Outputs smaller than this many tokens are left alone: their stub saves nothing.
    pub min_output_tokens: u64,
}

impl Default for MaskingSettings {
    /// On: with the cost trigger, the lowest bill with every task done on the bench's
    /// workloads (docs/benchmarks.md, "Choosing the default").
    fn default() -> Self {
        Self {
            enabled: true,
            keep_recent_tasks: 2,
            min_output_tokens: 200,
        }
    }
}

/// Tokens a stub takes (its text is one short line).
pub const STUB_TOKENS: u64 = 40;

/// One entry of the chain as the planner sees it, in chain order.
#[derive(Debug, Clone, PartialEq)]
pub struct MaskEntry {
    /// The session entry.
    pub id: EntryId,
    /// Its tokens in the request.
    pub tokens: u64,
    /// What it is.
    pub kind: MaskEntryKind,
}

/// What a chain entry is, for masking.
#[derive(Debug, Clone, PartialEq)]
pub enum MaskEntryKind {
    /// A user prompt: a task starts.
    UserPrompt,
    /// A tool result that can be masked.
    ToolResult {
        /// The tool's name.
        tool: String,
        /// The call in a few words (`read src/lib.rs`), for the stub.
        call: String,
    },
    /// A tool result already replaced by a stub.
    Masked,
    /// Anything else (assistant messages, summaries, system messages).
    Other,
}

/// A batch of stubs worth writing.
#[derive(Debug, Clone, PartialEq)]
pub struct MaskPlan {
    /// Each masked entry and its stub text, in chain order.
    pub stubs: Vec<(EntryId, String)>,
    /// Tokens the batch removes from every later request.
    pub saved_tokens: u64,
    /// Tokens written again because the request changes from the first stub on.
    pub rewritten_tokens: u64,
    /// USD the reads saved over the expected remaining requests.
    pub saved_usd: f64,
    /// USD of the rewrite (written instead of read once).
    pub rewrite_usd: f64,
}

/// How every stub opens: a context message whose text starts so is already masked.
pub const STUB_OPENING: &str = "[output masked to save context:";

/// Most characters of a call's arguments a stub repeats.
const CALL_CHARS: usize = 120;

/// The chain of `context` as [`plan_masking`] sees it: each message with its estimated tokens,
/// user prompts, tool results (with the call that made them, from the assistant message) and
/// results already replaced by a stub.
pub fn mask_entries(context: &Context) -> Vec<MaskEntry> {
    let mut calls: HashMap<&str, String> = HashMap::new();
    let mut entries = Vec::with_capacity(context.messages.len());
    for message in &context.messages {
        let kind = match message.message.as_ref() {
            AgentMessage::User(_) => MaskEntryKind::UserPrompt,
            AgentMessage::Assistant(assistant) => {
                for block in &assistant.content {
                    if let ContentBlock::ToolCall(call) = block {
                        calls.insert(call.id.as_str(), describe_call(&call.name, &call.arguments));
                    }
                }
                MaskEntryKind::Other
            }
            AgentMessage::ToolResult(result) => {
                let masked = result.content.iter().any(|block| {
                    matches!(block, ContentBlock::Text(text) if text.text.starts_with(STUB_OPENING))
                });
                if masked {
                    MaskEntryKind::Masked
                } else if result.is_error {
                    // An error says what went wrong; it is short and the model may need it.
                    MaskEntryKind::Other
                } else {
                    MaskEntryKind::ToolResult {
                        tool: result.tool_name.clone(),
                        call: calls
                            .get(result.tool_call_id.as_str())
                            .cloned()
                            .unwrap_or_else(|| result.tool_name.clone()),
                    }
                }
            }
            _ => MaskEntryKind::Other,
        };
        entries.push(MaskEntry {
            id: message.entry_id.clone(),
            tokens: estimate_message_tokens(&message.message),
            kind,
        });
    }
    entries
}

/// `read {"path":"src/lib.rs"}`, the arguments cut to [`CALL_CHARS`].
fn describe_call(name: &str, arguments: &Value) -> String {
    let args = arguments.to_string();
    let cut: String = args.chars().take(CALL_CHARS).collect();
    let ellipsis = if cut.len() < args.len() { "…" } else { "" };
    format!("{name} {cut}{ellipsis}")
}

/// The stub that replaces the output of `call` (`tokens` long).
pub fn stub_text(tool: &str, call: &str, tokens: u64) -> String {
    format!(
        "{STUB_OPENING} {call} returned about {tokens} tokens here; call {tool} again with the \
         same arguments to see it]"
    )
}

/// The batch worth masking now, if one is: every maskable tool output before the kept recent
/// tasks, when its saved reads over `remaining_requests` exceed the rewrite of everything from
/// the first stub to the end of the request (`tail_tokens` counts what follows the chain:
/// nothing, usually). `None` when nothing pays.
pub fn plan_masking(
    entries: &[MaskEntry],
    settings: &MaskingSettings,
    prices: &Prices,
    remaining_requests: u64,
) -> Option<MaskPlan> {
    if !settings.enabled || remaining_requests == 0 {
        return None;
    }
    let prompts: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, entry)| entry.kind == MaskEntryKind::UserPrompt)
        .map(|(index, _)| index)
        .collect();
    // Everything from the kept tasks' first prompt on stays; the current task always does.
    let keep = settings.keep_recent_tasks.max(1);
    let boundary = *prompts.get(prompts.len().checked_sub(keep)?)?;
    let mut stubs = Vec::new();
    let mut saved_tokens = 0;
    let mut first = None;
    for (index, entry) in entries[..boundary].iter().enumerate() {
        if let MaskEntryKind::ToolResult { tool, call } = &entry.kind
            && entry.tokens >= settings.min_output_tokens.max(STUB_TOKENS + 1)
        {
            first.get_or_insert(index);
            saved_tokens += entry.tokens - STUB_TOKENS;
            stubs.push((entry.id.clone(), stub_text(tool, call, entry.tokens)));
        }
    }
    let first = first?;
    let after_first: u64 = entries[first..].iter().map(|entry| entry.tokens).sum();
    let rewritten_tokens = after_first.saturating_sub(saved_tokens);
    let per_token = |usd_per_million: f64| usd_per_million / 1_000_000.0;
    let saved_usd = per_token(prices.cache_read) * saved_tokens as f64 * remaining_requests as f64;
    // The rewritten part is written once instead of read once.
    let rewrite_usd = (per_token(prices.cache_write_5m) - per_token(prices.cache_read)).max(0.0)
        * rewritten_tokens as f64;
    (saved_usd > rewrite_usd).then_some(MaskPlan {
        stubs,
        saved_tokens,
        rewritten_tokens,
        saved_usd,
        rewrite_usd,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opus() -> Prices {
        Prices {
            input: 5.0,
            output: 25.0,
            cache_read: 0.5,
            cache_write_5m: 6.25,
            cache_write_1h: 10.0,
        }
    }

    fn on() -> MaskingSettings {
        MaskingSettings {
            enabled: true,
            keep_recent_tasks: 1,
            min_output_tokens: 200,
        }
    }

    fn id(n: usize) -> EntryId {
        EntryId::from(format!("{n:08x}").as_str())
    }

    /// `tasks` tasks of a prompt, an assistant call and a `tokens`-long read each.
    fn chain(tasks: usize, tokens: u64) -> Vec<MaskEntry> {
        let mut entries = Vec::new();
        for task in 0..tasks {
            let n = entries.len();
            entries.push(MaskEntry {
                id: id(n),
                tokens: 20,
                kind: MaskEntryKind::UserPrompt,
            });
            entries.push(MaskEntry {
                id: id(n + 1),
                tokens: 30,
                kind: MaskEntryKind::Other,
            });
            entries.push(MaskEntry {
                id: id(n + 2),
                tokens,
                kind: MaskEntryKind::ToolResult {
                    tool: "read".into(),
                    call: format!("read src/file_{task}.rs"),
                },
            });
        }
        entries
    }

    #[test]
    fn the_current_tasks_results_are_never_masked() {
        let entries = chain(6, 5_000);
        let plan = plan_masking(&entries, &on(), &opus(), 1_000).unwrap();
        let last_prompt = entries
            .iter()
            .rposition(|e| e.kind == MaskEntryKind::UserPrompt)
            .unwrap();
        for (target, _) in &plan.stubs {
            let at = entries.iter().position(|e| &e.id == target).unwrap();
            assert!(at < last_prompt, "entry {at} is in the current task");
        }
        assert_eq!(plan.stubs.len(), 5, "every earlier task's read");
        // With only the current task, nothing is masked at all.
        assert_eq!(plan_masking(&chain(1, 50_000), &on(), &opus(), 1_000), None);
    }

    #[test]
    fn keep_recent_tasks_keeps_that_many_tasks_and_never_fewer_than_one() {
        let entries = chain(6, 5_000);
        let keep_three = MaskingSettings {
            keep_recent_tasks: 3,
            ..on()
        };
        let plan = plan_masking(&entries, &keep_three, &opus(), 1_000).unwrap();
        assert_eq!(plan.stubs.len(), 3);
        let keep_none = MaskingSettings {
            keep_recent_tasks: 0,
            ..on()
        };
        assert_eq!(
            plan_masking(&entries, &keep_none, &opus(), 1_000)
                .unwrap()
                .stubs
                .len(),
            5
        );
    }

    #[test]
    fn masking_waits_until_the_saved_reads_exceed_the_rewrite() {
        let entries = chain(6, 5_000);
        // Saved per request: 5 × 4,960 tokens at $0.50/M; the rewrite: the tail after the
        // first stub at $5.75/M. Few requests left: not worth it; many: worth it.
        assert_eq!(plan_masking(&entries, &on(), &opus(), 2), None);
        let plan = plan_masking(&entries, &on(), &opus(), 200).unwrap();
        assert!(plan.saved_usd > plan.rewrite_usd);
        assert_eq!(plan.saved_tokens, 5 * (5_000 - STUB_TOKENS));
        let tail: u64 = entries[2..].iter().map(|e| e.tokens).sum();
        assert_eq!(plan.rewritten_tokens, tail - plan.saved_tokens);
    }

    #[test]
    fn small_outputs_and_masked_entries_are_left_alone_and_off_means_off() {
        assert_eq!(plan_masking(&chain(6, 100), &on(), &opus(), 1_000), None);
        let mut entries = chain(6, 5_000);
        for entry in &mut entries {
            if matches!(entry.kind, MaskEntryKind::ToolResult { .. }) {
                entry.kind = MaskEntryKind::Masked;
            }
        }
        assert_eq!(plan_masking(&entries, &on(), &opus(), 1_000), None);
        assert_eq!(
            plan_masking(
                &chain(6, 5_000),
                &MaskingSettings {
                    enabled: false,
                    ..on()
                },
                &opus(),
                1_000
            ),
            None
        );
    }

    #[test]
    fn a_stub_says_what_was_there_and_how_to_get_it_back() {
        let text = stub_text("read", "read src/lib.rs", 1234);
        assert!(text.contains("read src/lib.rs"), "{text}");
        assert!(text.contains("1234 tokens"), "{text}");
        assert!(text.contains("call read again"), "{text}");
    }
}
