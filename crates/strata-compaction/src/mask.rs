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
use strata_session::{AgentMessage, ContentBlock, EntryId};

use crate::cost::CachePrices;
use crate::estimate::estimate_message_tokens;

/// Masking settings (`[compaction.masking]` in config).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct MaskingSettings {
    /// Masking runs at all (default on).
    pub enabled: bool,
    /// Tool outputs of the latest this many tasks (user prompts) are never masked; at least
    /// the current one is always kept, whatever this says. With 1 (the default) a finished
    /// task's outputs are masked as the next task starts, when only the stubs and the new
    /// prompt follow them: the rewrite is as small as it gets.
    pub keep_recent_tasks: usize,
    /// Outputs smaller than this many tokens are left alone: their stub saves nothing.
    pub min_output_tokens: u64,
    /// Finished tasks before the kept recent ones are folded when that pays: the calls and
    /// results left out, the final answer opening with a line a call (`crate::plan_folding`).
    pub fold_tasks: bool,
}

impl Default for MaskingSettings {
    /// On, folding too: with the cost trigger, the lowest bill with every task done on the
    /// bench's workloads, the recall workloads' re-reads included (docs/benchmarks.md,
    /// "Choosing the default" and "Task folding").
    fn default() -> Self {
        Self {
            enabled: true,
            keep_recent_tasks: 1,
            min_output_tokens: 200,
            fold_tasks: true,
        }
    }
}

/// Tokens a stub takes at least (its text is one short line, longer by what it keeps).
pub const STUB_TOKENS: u64 = 40;

/// One entry of the chain as the planner sees it, in chain order.
#[derive(Debug, Clone, PartialEq)]
pub struct MaskEntry {
    /// The session entry.
    pub id: EntryId,
    /// Its tokens in the request.
    pub tokens: u64,
    /// Its content blocks in the request (text, tool calls, a tool result: one each): what an
    /// explicit-breakpoint cache counts when it looks back for an earlier prefix.
    pub blocks: usize,
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
        /// What the output showed, in the few lines a note keeps ([`key_lines`]), for the
        /// stub.
        facts: StubFacts,
    },
    /// A tool result already replaced by a stub.
    Masked,
    /// Anything else (assistant messages, summaries, system messages).
    Other,
}

/// What the planner knows of the rest of the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaskingOutlook {
    /// Requests still expected before the next compaction or the session's end.
    pub remaining_requests: u64,
    /// The cached prefix has outlived its lifetime (an idle pause longer than it), or the
    /// messages are rewritten anyway (right after a compaction): stubs written now cost no
    /// rewrite.
    pub prefix_cold: bool,
    /// On an explicit-breakpoint cache, how many blocks before a breakpoint it looks for an
    /// earlier cached prefix ([`EXPLICIT_LOOKBACK_BLOCKS`] on Anthropic's): when the first
    /// stub lies farther back than that from the end, no cached prefix reaches it and the whole
    /// chain is written again, not only what follows the stub. `None`: the cache finds any
    /// earlier prefix (automatic prefix caches).
    pub lookback_blocks: Option<usize>,
}

/// How far back an explicit cache breakpoint finds an earlier cached prefix, in content
/// blocks: Anthropic's prompt-caching documentation says the system checks about 20 block
/// boundaries before each breakpoint.
pub const EXPLICIT_LOOKBACK_BLOCKS: usize = 20;

impl MaskingOutlook {
    /// `remaining_requests` ahead of a prefix still in the cache, which finds any earlier
    /// prefix.
    pub fn warm(remaining_requests: u64) -> Self {
        Self {
            remaining_requests,
            prefix_cold: false,
            lookback_blocks: None,
        }
    }
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
                        facts: StubFacts::of(&joined_text(&result.content, "\n")),
                    }
                }
            }
            _ => MaskEntryKind::Other,
        };
        entries.push(MaskEntry {
            id: message.entry_id.clone(),
            tokens: estimate_message_tokens(&message.message),
            blocks: content_blocks(message.message.as_ref()),
            kind,
        });
    }
    entries
}

/// Content blocks `message` takes in a request (at least one).
fn content_blocks(message: &AgentMessage) -> usize {
    let blocks = match message {
        AgentMessage::User(user) => match &user.content {
            strata_session::MessageContent::Text(_) => 1,
            strata_session::MessageContent::Blocks(blocks) => blocks.len(),
        },
        AgentMessage::Assistant(assistant) => assistant.content.len(),
        _ => 1,
    };
    blocks.max(1)
}

/// Where the cache can still read from when the request changes from entry `first` on (a
/// stub or a fold): right before it, unless an explicit breakpoint cache cannot look back
/// `lookback_blocks` that far, and then only the fixed chapters before the chain stay.
pub(crate) fn rewrite_start(
    entries: &[MaskEntry],
    first: usize,
    lookback_blocks: Option<usize>,
) -> usize {
    let blocks_after: usize = entries[first..].iter().map(|entry| entry.blocks).sum();
    match lookback_blocks {
        Some(lookback) if blocks_after > lookback => {
            // strata-context's renderer keeps a breakpoint before the prompt of the latest
            // task with results, refreshed by every request of that task: the cache reads up
            // to there when no change comes before it.
            latest_task_with_results(entries)
                .filter(|&start| start <= first)
                .unwrap_or(0)
        }
        _ => first,
    }
}

/// Index of the latest user prompt that a tool result follows: where strata-context's
/// renderer puts its fourth breakpoint (just before it) on an explicit-breakpoint cache.
fn latest_task_with_results(entries: &[MaskEntry]) -> Option<usize> {
    let mut seen_result = false;
    for (index, entry) in entries.iter().enumerate().rev() {
        match entry.kind {
            MaskEntryKind::ToolResult { .. } | MaskEntryKind::Masked => seen_result = true,
            MaskEntryKind::UserPrompt if seen_result => return Some(index),
            _ => {}
        }
    }
    None
}

/// The text blocks of `content` (thinking, calls and images left out), joined by
/// `separator`.
pub(crate) fn joined_text(content: &[ContentBlock], separator: &str) -> String {
    let texts: Vec<&str> = content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    texts.join(separator)
}

/// What a stub keeps of the output it replaces: what a good note of it would say — how long
/// it was and the few lines that name or set something ([`key_lines`]) — so the model needs
/// the tool again only for what the note leaves out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StubFacts {
    /// Lines of the output.
    pub lines: usize,
    /// The lines kept, in output order (at most [`KEY_LINES`]).
    pub key_lines: Vec<String>,
}

/// Most lines a stub keeps.
pub const KEY_LINES: usize = 4;

/// Longest line a stub keeps, in characters: a longer one is prose or code, not a setting.
const KEY_LINE_CHARS: usize = 72;

impl StubFacts {
    /// The facts of `output`.
    pub fn of(output: &str) -> Self {
        Self {
            lines: output.lines().count(),
            key_lines: key_lines(output),
        }
    }
}

/// The lines of `output` a note keeps, at most [`KEY_LINES`], each at most
/// 72 characters: a first line that is a heading (`# …`), and lines that set one named
/// value — `name: value` or `name = value`, the name one word (letters, digits, `_ - . /`),
/// the value one token: the settings, versions, ids and counts an output shows, what a reader
/// would copy into a note before closing it. Prose, code and listings keep nothing but
/// their line count.
pub fn key_lines(output: &str) -> Vec<String> {
    let mut kept = Vec::new();
    for (index, line) in output.lines().enumerate() {
        if kept.len() == KEY_LINES {
            break;
        }
        let line = line.trim();
        if line.is_empty() || line.chars().count() > KEY_LINE_CHARS {
            continue;
        }
        let heading = index == 0 && line.starts_with('#');
        if heading || sets_one_value(line) {
            kept.push(line.to_owned());
        }
    }
    kept
}

/// `name: value` or `name = value` (a list marker `- ` allowed before it), with a one-word
/// name and a one-token value.
fn sets_one_value(line: &str) -> bool {
    let line = line.strip_prefix("- ").unwrap_or(line);
    let Some(at) = line.find([':', '=']) else {
        return false;
    };
    let (name, value) = (line[..at].trim_end(), line[at + 1..].trim());
    let name_ok = !name.is_empty()
        && name.chars().count() <= 40
        && name.chars().next().is_some_and(char::is_alphabetic)
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
    let value_ok =
        !value.is_empty() && value.chars().count() <= 40 && !value.chars().any(char::is_whitespace);
    name_ok && value_ok
}

/// `read {"path":"src/lib.rs"}`, the arguments cut to [`CALL_CHARS`].
pub(crate) fn describe_call(name: &str, arguments: &Value) -> String {
    let args = arguments.to_string();
    let cut: String = args.chars().take(CALL_CHARS).collect();
    let ellipsis = if cut.len() < args.len() { "…" } else { "" };
    format!("{name} {cut}{ellipsis}")
}

/// The stub that replaces the output of `call` (`tokens` long, with `facts`).
pub fn stub_text(tool: &str, call: &str, tokens: u64, facts: &StubFacts) -> String {
    let lines = match facts.lines {
        0 | 1 => String::new(),
        lines => format!(", {lines} lines"),
    };
    let showed = if facts.key_lines.is_empty() {
        String::new()
    } else {
        format!("; it showed: {}", facts.key_lines.join(" | "))
    };
    format!(
        "{STUB_OPENING} {call} returned about {tokens} tokens{lines} here{showed}; call {tool} \
         again with the same arguments to see it all]"
    )
}

/// Tokens `stub` takes in a request (about four characters a token, at least
/// [`STUB_TOKENS`]).
fn stub_tokens(stub: &str) -> u64 {
    (stub.len() as u64).div_ceil(4).max(STUB_TOKENS)
}

/// The batch worth masking now, if one is: every maskable tool output before the kept recent
/// tasks, when its saved reads over the remaining requests exceed the rewrite of everything
/// from the first stub to the end of the request, priced at `prices` (the write of the
/// lifetime in use: a 1-hour breakpoint's rewrite costs more than a 5-minute one's), and the
/// batch has grown to the size that costs least per request (a rewrite per batch against the
/// reads of what waits for the next one). A cold prefix (`outlook.prefix_cold`) is written
/// again whatever is sent, so there the rewrite is free and any saving pays. `None` when
/// nothing pays.
pub fn plan_masking(
    entries: &[MaskEntry],
    settings: &MaskingSettings,
    prices: &CachePrices,
    outlook: MaskingOutlook,
) -> Option<MaskPlan> {
    let remaining_requests = outlook.remaining_requests;
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
        if let MaskEntryKind::ToolResult { tool, call, facts } = &entry.kind
            && entry.tokens >= settings.min_output_tokens.max(STUB_TOKENS + 1)
        {
            let stub = stub_text(tool, call, entry.tokens, facts);
            let Some(saved) = entry.tokens.checked_sub(stub_tokens(&stub)) else {
                continue;
            };
            first.get_or_insert(index);
            saved_tokens += saved;
            stubs.push((entry.id.clone(), stub));
        }
    }
    let first = first?;
    let rewrite_from = rewrite_start(entries, first, outlook.lookback_blocks);
    let after_first: u64 = entries[rewrite_from..]
        .iter()
        .map(|entry| entry.tokens)
        .sum();
    let rewritten_tokens = after_first.saturating_sub(saved_tokens);
    let per_token = |usd_per_million: f64| usd_per_million / 1_000_000.0;
    let saved_usd = per_token(prices.read) * saved_tokens as f64 * remaining_requests as f64;
    // The rewritten part is written once instead of read once; on a cold prefix it is
    // written anyway.
    let rewrite_usd = if outlook.prefix_cold {
        0.0
    } else {
        per_token(prices.rewrite_premium()) * rewritten_tokens as f64
    };
    // Each batch pays its own rewrite, and outputs not masked now can go in the next batch.
    // Part of a rewrite grows with the batch (what stays of the masked span itself); the
    // rest is paid once per batch whatever its size: what lies between the cache's last
    // reachable point and the first stub (the whole chain on an explicit cache that cannot
    // look back that far) and what follows the batch (the kept tasks). The batch that costs
    // least per request holds sqrt(2 × that fixed rewrite × growth / read) tokens, the growth
    // being the maskable tokens each request has added since the first of them.
    let requests_since_first = entries[first..]
        .iter()
        .filter(|entry| entry.kind == MaskEntryKind::Other)
        .count()
        .max(1);
    let growth = saved_tokens as f64 / requests_since_first as f64;
    let fixed_tokens: u64 = entries[rewrite_from..first]
        .iter()
        .chain(&entries[boundary..])
        .map(|entry| entry.tokens)
        .sum();
    let fixed_usd = if outlook.prefix_cold {
        0.0
    } else {
        per_token(prices.rewrite_premium()) * fixed_tokens as f64
    };
    let best_batch = if prices.read > 0.0 {
        (2.0 * fixed_usd * growth / per_token(prices.read)).sqrt()
    } else {
        0.0
    };
    let batch_is_due = saved_tokens as f64 >= best_batch;
    (saved_usd > rewrite_usd && batch_is_due).then_some(MaskPlan {
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

    fn opus_prices() -> strata_provider::Prices {
        strata_provider::Prices {
            input: 5.0,
            output: 25.0,
            cache_read: 0.5,
            cache_write_5m: 6.25,
            cache_write_1h: 10.0,
            cache_storage: 0.0,
        }
    }

    fn opus() -> CachePrices {
        CachePrices::new(&opus_prices(), false)
    }

    fn ahead(requests: u64) -> MaskingOutlook {
        MaskingOutlook::warm(requests)
    }

    fn on() -> MaskingSettings {
        MaskingSettings {
            enabled: true,
            keep_recent_tasks: 1,
            min_output_tokens: 200,
            fold_tasks: false,
        }
    }

    fn id(n: usize) -> EntryId {
        EntryId::from(format!("{n:08x}").as_str())
    }

    /// Appends an entry with the next id.
    fn push(entries: &mut Vec<MaskEntry>, tokens: u64, blocks: usize, kind: MaskEntryKind) {
        entries.push(MaskEntry {
            id: id(entries.len()),
            tokens,
            blocks,
            kind,
        });
    }

    /// A read's result, as the planner sees it.
    fn read(call: String) -> MaskEntryKind {
        MaskEntryKind::ToolResult {
            tool: "read".into(),
            call,
            facts: StubFacts::default(),
        }
    }

    /// `tasks` tasks of a prompt, eight short assistant steps, an assistant call and a
    /// `tokens`-long read each: 290 + `tokens` tokens and 12 blocks a task.
    fn chain(tasks: usize, tokens: u64) -> Vec<MaskEntry> {
        let mut entries = Vec::new();
        for task in 0..tasks {
            push(&mut entries, 20, 1, MaskEntryKind::UserPrompt);
            for _ in 0..8 {
                push(&mut entries, 30, 1, MaskEntryKind::Other);
            }
            push(&mut entries, 30, 2, MaskEntryKind::Other);
            push(
                &mut entries,
                tokens,
                1,
                read(format!("read src/file_{task}.rs")),
            );
        }
        entries
    }

    /// Index of the first maskable read.
    fn first_read(entries: &[MaskEntry]) -> usize {
        entries
            .iter()
            .position(|e| matches!(e.kind, MaskEntryKind::ToolResult { .. }))
            .unwrap()
    }

    #[test]
    fn the_current_tasks_results_are_never_masked() {
        let entries = chain(6, 5_000);
        let plan = plan_masking(&entries, &on(), &opus(), ahead(1_000)).unwrap();
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
        assert_eq!(
            plan_masking(&chain(1, 50_000), &on(), &opus(), ahead(1_000)),
            None
        );
    }

    #[test]
    fn keep_recent_tasks_keeps_that_many_tasks_and_never_fewer_than_one() {
        let entries = chain(6, 5_000);
        let keep_three = MaskingSettings {
            keep_recent_tasks: 3,
            ..on()
        };
        let plan = plan_masking(&entries, &keep_three, &opus(), ahead(1_000)).unwrap();
        assert_eq!(plan.stubs.len(), 3);
        let keep_none = MaskingSettings {
            keep_recent_tasks: 0,
            ..on()
        };
        assert_eq!(
            plan_masking(&entries, &keep_none, &opus(), ahead(1_000))
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
        assert_eq!(plan_masking(&entries, &on(), &opus(), ahead(2)), None);
        let plan = plan_masking(&entries, &on(), &opus(), ahead(200)).unwrap();
        assert!(plan.saved_usd > plan.rewrite_usd);
        let stubs: u64 = plan.stubs.iter().map(|(_, stub)| stub_tokens(stub)).sum();
        assert_eq!(plan.saved_tokens, 5 * 5_000 - stubs);
        let tail: u64 = entries[first_read(&entries)..]
            .iter()
            .map(|e| e.tokens)
            .sum();
        assert_eq!(plan.rewritten_tokens, tail - plan.saved_tokens);
    }

    #[test]
    fn small_outputs_and_masked_entries_are_left_alone_and_off_means_off() {
        assert_eq!(
            plan_masking(&chain(6, 100), &on(), &opus(), ahead(1_000)),
            None
        );
        let mut entries = chain(6, 5_000);
        for entry in &mut entries {
            if matches!(entry.kind, MaskEntryKind::ToolResult { .. }) {
                entry.kind = MaskEntryKind::Masked;
            }
        }
        assert_eq!(plan_masking(&entries, &on(), &opus(), ahead(1_000)), None);
        assert_eq!(
            plan_masking(
                &chain(6, 5_000),
                &MaskingSettings {
                    enabled: false,
                    ..on()
                },
                &opus(),
                ahead(1_000)
            ),
            None
        );
    }

    #[test]
    fn the_one_hour_lifetime_masks_later_than_the_five_minute_one() {
        let entries = chain(6, 5_000);
        let hour = CachePrices::new(&opus_prices(), true);
        // Saved per request 5 × 4,960 tokens × $0.50/M = $0.0124; the rewrite of the tail
        // after the first stub (31,450 − 24,800 = 6,650 tokens) costs $0.0382 at 5 minutes
        // ($5.75/M over the read) and $0.0632 at an hour ($9.50/M): 4 requests pay the
        // first, 6 the second.
        let five_minutes = plan_masking(&entries, &on(), &opus(), ahead(4)).expect("5m pays");
        assert_eq!(five_minutes.rewritten_tokens, 6_650);
        assert!((five_minutes.rewrite_usd - 6_650.0 * 5.75e-6).abs() < 1e-9);
        assert_eq!(plan_masking(&entries, &on(), &opus(), ahead(3)), None);
        assert_eq!(plan_masking(&entries, &on(), &hour, ahead(5)), None);
        let plan = plan_masking(&entries, &on(), &hour, ahead(6)).expect("1h pays later");
        assert!((plan.rewrite_usd - 6_650.0 * 9.5e-6).abs() < 1e-9);
    }

    #[test]
    fn a_batch_waits_until_it_is_worth_its_own_rewrite() {
        // Two tasks: only task 0's read can go, and a later batch would take it along with
        // the next ones. Its 4,960 tokens came over 9 requests (551 a request); every batch
        // rewrites the current task after it (5,290 tokens, $0.0304), so the best batch is
        // sqrt(2 × 0.0304 × 551 / 0.5e-6) ≈ 8,200 tokens: one read waits, however many
        // requests are ahead.
        let two = chain(2, 5_000);
        let plan_two = plan_masking(&two, &on(), &opus(), ahead(1_000_000));
        assert_eq!(plan_two, None);
        // With five reads waiting, the batch is due.
        assert!(plan_masking(&chain(6, 5_000), &on(), &opus(), ahead(1_000)).is_some());
    }

    #[test]
    fn a_cold_prefix_masks_whatever_the_rewrite_would_have_cost() {
        let entries = chain(6, 5_000);
        // One request left: warm, the rewrite costs more than one request's reads.
        assert_eq!(plan_masking(&entries, &on(), &opus(), ahead(1)), None);
        let cold = MaskingOutlook {
            prefix_cold: true,
            ..ahead(1)
        };
        let plan = plan_masking(&entries, &on(), &opus(), cold).expect("cold pays");
        assert_eq!(plan.rewrite_usd, 0.0);
        assert_eq!(plan.stubs.len(), 5);
    }

    #[test]
    fn past_an_explicit_caches_lookback_the_whole_chain_is_rewritten() {
        // A 10k-token summary, then six tasks of 12 blocks each; keeping one, the first stub
        // (task 0's read) has 61 blocks from it to the end. A cache that looks back 20 blocks
        // cannot reach the prefix before it, so the summary is written again too; one that
        // looks back 100 can.
        let mut entries = vec![MaskEntry {
            id: id(999),
            tokens: 10_000,
            blocks: 1,
            kind: MaskEntryKind::Other,
        }];
        entries.extend(chain(6, 5_000));
        let far = |requests| MaskingOutlook {
            lookback_blocks: Some(20),
            ..ahead(requests)
        };
        let near = MaskingOutlook {
            lookback_blocks: Some(100),
            ..ahead(1_000)
        };
        let all: u64 = entries.iter().map(|e| e.tokens).sum();
        let plan = plan_masking(&entries, &on(), &opus(), far(1_000)).unwrap();
        assert_eq!(plan.rewritten_tokens, all - plan.saved_tokens);
        let plan = plan_masking(&entries, &on(), &opus(), near).unwrap();
        let tail: u64 = entries[first_read(&entries)..]
            .iter()
            .map(|e| e.tokens)
            .sum();
        assert_eq!(plan.rewritten_tokens, tail - plan.saved_tokens);
        // The dearer rewrite needs more requests ahead to pay: 4 pay the tail's 6,650 tokens,
        // not the 16,940 of the whole chain.
        assert!(plan_masking(&entries, &on(), &opus(), ahead(4)).is_some());
        assert_eq!(plan_masking(&entries, &on(), &opus(), far(4)), None);
    }

    #[test]
    fn a_stub_says_what_was_there_and_how_to_get_it_back() {
        let text = stub_text("read", "read src/lib.rs", 1234, &StubFacts::default());
        assert!(text.contains("read src/lib.rs"), "{text}");
        assert!(text.contains("1234 tokens"), "{text}");
        assert!(text.contains("call read again"), "{text}");
    }

    #[test]
    fn a_stub_keeps_the_heading_and_the_named_values_an_output_showed() {
        let output = "# Release notes\n\
                      The parser was rewritten and now streams its input line by line.\n\
                      version: 2.4.1\n\
                      - max_connections = 512\n\
                      pub fn parse(input: &str) -> Result<Ast, Error> {\n\
                      see: the docs for details\n\
                      build-id: 7f3a9c2e\n";
        let facts = StubFacts::of(output);
        assert_eq!(facts.lines, 7);
        assert_eq!(
            facts.key_lines,
            [
                "# Release notes",
                "version: 2.4.1",
                "- max_connections = 512",
                "build-id: 7f3a9c2e"
            ],
            "prose, code and a value of several words are left to the tool"
        );
        let text = stub_text("read", "read NOTES.md", 900, &facts);
        assert!(text.contains("7 lines"), "{text}");
        assert!(
            text.contains("version: 2.4.1 | - max_connections = 512"),
            "{text}"
        );
        assert!(text.contains("call read again"), "{text}");
        // Listings, code and prose keep only their length.
        let listing = "src/lib.rs\nsrc/main.rs:3:fn main() {}\n  42 src/lib.rs\n";
        assert!(StubFacts::of(listing).key_lines.is_empty());
        // At most KEY_LINES lines, whatever the output holds.
        let many: String = (0..20).map(|n| format!("key_{n}: {n}\n")).collect();
        assert_eq!(StubFacts::of(&many).key_lines.len(), KEY_LINES);
    }

    #[test]
    fn a_finished_task_is_rewritten_from_its_prompt_when_it_is_longer_than_the_lookback() {
        // A 10k-token summary, then a task whose read comes first and 30 short steps after it,
        // then the next prompt. The renderer's fourth breakpoint sits before the finished
        // task's prompt, so masking its read rewrites from that prompt on, not the summary.
        let mut entries = vec![MaskEntry {
            id: id(999),
            tokens: 10_000,
            blocks: 1,
            kind: MaskEntryKind::Other,
        }];
        let prompt = entries.len();
        push(&mut entries, 20, 1, MaskEntryKind::UserPrompt);
        push(&mut entries, 30, 2, MaskEntryKind::Other);
        push(&mut entries, 5_000, 1, read("read src/a.rs".into()));
        for _ in 0..30 {
            push(&mut entries, 30, 1, MaskEntryKind::Other);
        }
        push(&mut entries, 20, 1, MaskEntryKind::UserPrompt);
        let explicit = MaskingOutlook {
            lookback_blocks: Some(EXPLICIT_LOOKBACK_BLOCKS),
            ..ahead(1_000)
        };
        let plan = plan_masking(&entries, &on(), &opus(), explicit).unwrap();
        let from_prompt: u64 = entries[prompt..].iter().map(|e| e.tokens).sum();
        assert_eq!(plan.rewritten_tokens, from_prompt - plan.saved_tokens);
    }
}
