//! What the rpc view answers from: the runtime's queue as its events said it, the modes set,
//! and a snapshot of the runtime's state as its read model answered (plus the messages of the
//! run so far, from its events).

use serde_json::{Map, Value, json};
use strata_runtime::{Answer, BashRecord, Model, QueueMode, QueuedTexts, Status};

/// Pi's answer to a read sent as a command's operation (`get_entries`, `get_tree`,
/// `get_fork_messages`).
pub fn read_json(answer: Option<Answer>) -> Result<Value, String> {
    match answer {
        Some(Answer::Entries { entries, leaf }) => Ok(json!({"entries": entries, "leafId": leaf})),
        Some(Answer::EntryTree { roots, leaf }) => Ok(json!({"tree": roots, "leafId": leaf})),
        Some(Answer::UserMessages { messages }) => Ok(json!({"messages": messages})),
        Some(Answer::Failed { error }) => Err(error),
        other => Err(format!("the runtime answered {other:?}")),
    }
}

/// Pi's `BashResult`: the `bash` response data.
pub fn bash_result(record: &BashRecord) -> Value {
    let mut data = json!({
        "output": record.output,
        "exitCode": record.exit_code,
        "cancelled": record.cancelled,
        "truncated": record.truncated,
    });
    if let Some(path) = &record.full_output_path {
        data["fullOutputPath"] = json!(path);
    }
    data
}

/// The agent's state as read between operations.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Pi's `Model` object of the current model (the view fills it from the catalog).
    pub model: Value,
    /// Provider id.
    pub provider: String,
    /// Model id.
    pub model_id: String,
    /// Protocol name (Pi's `api`).
    pub api: String,
    /// The model reasons.
    pub reasoning: bool,
    /// The model's context window in tokens.
    pub context_window: u64,
    /// The thinking level in effect.
    pub thinking_level: String,
    /// The session file.
    pub session_file: String,
    /// The session id.
    pub session_id: String,
    /// The display name, when set.
    pub session_name: Option<String>,
    /// Whether automatic compaction is on.
    pub auto_compaction: bool,
    /// The context's messages in Pi's shape.
    pub messages: Vec<Value>,
    /// Every request the session file records (all branches, summaries and pings), added up.
    pub totals: strata_runtime::Totals,
    /// The permission mode (`None`: no rules gate).
    pub permission_mode: Option<strata_runtime::permissions::Mode>,
}

impl Snapshot {
    /// The runtime's state and the context's messages (Pi's shape), as the runtime answered.
    pub fn of(state: &Status, messages: Vec<Value>) -> Self {
        Self {
            model: Value::Null,
            provider: state.provider.clone(),
            model_id: state.model.clone(),
            api: state.api.clone(),
            reasoning: state.reasoning,
            context_window: state.context_window,
            thinking_level: state.thinking.as_str().to_owned(),
            session_file: state.session_path.display().to_string(),
            session_id: state.session_id.clone(),
            session_name: state.session_name.clone(),
            auto_compaction: state.auto_compaction,
            permission_mode: state.permission_mode,
            messages,
            totals: state.totals,
        }
    }
}

/// What the view knows between the runtime's events.
#[derive(Debug, Default)]
pub struct View {
    /// A prompt run is going (from sending the prompt to its last `RunEnded`).
    pub streaming: bool,
    /// A manual compaction is going.
    pub compacting: bool,
    /// How steering messages are delivered (as last set).
    pub steering_mode: QueueMode,
    /// How follow-up messages are delivered (as last set).
    pub follow_up_mode: QueueMode,
    /// The texts waiting, as the runtime last said.
    pub queue: QueuedTexts,
    /// The agent's state.
    pub snapshot: Snapshot,
}

impl View {
    /// Pi's `queue_update` event (the queued texts).
    pub fn queue_update(&self) -> Value {
        json!({
            "type": "queue_update",
            "steering": self.queue.steering,
            "followUp": self.queue.follow_up,
        })
    }

    /// Pi's `get_state` data.
    pub fn state(&self) -> Value {
        let snapshot = &self.snapshot;
        let mut state = Map::new();
        state.insert("model".into(), snapshot.model.clone());
        state.insert("thinkingLevel".into(), json!(snapshot.thinking_level));
        state.insert("isStreaming".into(), json!(self.streaming));
        state.insert("isCompacting".into(), json!(self.compacting));
        state.insert("steeringMode".into(), json!(self.steering_mode.as_str()));
        state.insert("followUpMode".into(), json!(self.follow_up_mode.as_str()));
        state.insert("sessionFile".into(), json!(snapshot.session_file));
        state.insert("sessionId".into(), json!(snapshot.session_id));
        if let Some(name) = &snapshot.session_name {
            state.insert("sessionName".into(), json!(name));
        }
        state.insert(
            "autoCompactionEnabled".into(),
            json!(snapshot.auto_compaction),
        );
        state.insert("messageCount".into(), json!(snapshot.messages.len()));
        state.insert(
            "pendingMessageCount".into(),
            json!(self.queue.steering.len() + self.queue.follow_up.len()),
        );
        Value::Object(state)
    }

    /// Pi's `get_session_stats` data: counts over the context's messages, tokens and cost of
    /// every request the file records (as Pi 1.x totals answers, summaries and usage entries),
    /// and the context window in use.
    pub fn stats(&self) -> Value {
        let messages = &self.snapshot.messages;
        let count = |role: &str| messages.iter().filter(|m| m["role"] == role).count();
        let tool_calls = messages
            .iter()
            .filter(|m| m["role"] == "assistant")
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .filter(|b| b["type"] == "toolCall")
            .count();
        let (totals, usage) = (&self.snapshot.totals, &self.snapshot.totals.usage);
        let (input, output, cost) = (usage.input, usage.output, totals.cost);
        let (cache_read, cache_write) = (usage.cache_read, usage.cache_write());
        let mut stats = Map::new();
        stats.insert("sessionFile".into(), json!(self.snapshot.session_file));
        stats.insert("sessionId".into(), json!(self.snapshot.session_id));
        stats.insert("userMessages".into(), json!(count("user")));
        stats.insert("assistantMessages".into(), json!(count("assistant")));
        stats.insert("toolCalls".into(), json!(tool_calls));
        stats.insert("toolResults".into(), json!(count("toolResult")));
        stats.insert("totalMessages".into(), json!(messages.len()));
        stats.insert(
            "tokens".into(),
            json!({
                "input": input,
                "output": output,
                "cacheRead": cache_read,
                "cacheWrite": cache_write,
                "total": input + output + cache_read + cache_write,
            }),
        );
        stats.insert("cost".into(), json!(cost));
        // strata's: the children's requests (Pi's figures above are this file's alone).
        let file = &self.snapshot.session_file;
        stats.extend(strata_host::subagents::children_stats(file, totals));
        if let Some(usage) = context_usage(messages, self.snapshot.context_window) {
            stats.insert("contextUsage".into(), usage);
        }
        Value::Object(stats)
    }

    /// Text of the last assistant message that has any (Pi skips empty aborted ones).
    pub fn last_assistant_text(&self) -> Value {
        let last = self.snapshot.messages.iter().rev().find(|m| {
            m["role"] == "assistant"
                && !(m["stopReason"] == "aborted"
                    && m["content"].as_array().is_none_or(Vec::is_empty))
        });
        let text: String = last
            .and_then(|m| m["content"].as_array())
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        let text = text.trim();
        if text.is_empty() {
            Value::Null
        } else {
            json!(text)
        }
    }
}

/// Pi's `contextUsage`: the last valid assistant usage plus an estimate (4 bytes a token) of
/// the messages after it; `null` tokens right after a compaction, until a new answer.
fn context_usage(messages: &[Value], window: u64) -> Option<Value> {
    if window == 0 {
        return None;
    }
    let last_usage = messages.iter().enumerate().rev().find_map(|(index, m)| {
        let valid =
            m["role"] == "assistant" && m["stopReason"] != "aborted" && m["stopReason"] != "error";
        let usage = &m["usage"];
        let total: u64 = ["input", "output", "cacheRead", "cacheWrite"]
            .iter()
            .map(|k| usage[k].as_u64().unwrap_or(0))
            .sum();
        (valid && total > 0).then_some((index, total))
    });
    // Kept messages follow the summary in the context but predate it: only an answer newer
    // than the compaction measures the compacted context.
    let compacted_at = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "compactionSummary")
        .map(|m| m["timestamp"].as_i64().unwrap_or(0));
    let measured = match (compacted_at, last_usage) {
        (Some(at), Some((index, _))) => messages[index]["timestamp"].as_i64().unwrap_or(0) > at,
        (Some(_), None) => false,
        (None, _) => true,
    };
    if !measured {
        return Some(json!({"tokens": null, "contextWindow": window, "percent": null}));
    }
    let (tokens, from) = last_usage.map_or((0, 0), |(index, total)| (total, index + 1));
    let trailing: u64 = messages
        .iter()
        .skip(from)
        .map(|m| m.to_string().len() as u64 / 4)
        .sum();
    let tokens = tokens + trailing;
    Some(json!({
        "tokens": tokens,
        "contextWindow": window,
        "percent": tokens as f64 / window as f64 * 100.0,
    }))
}

/// Pi's `Model` object for a catalog model reached through `api` at `base_url`.
pub fn model_json(model: &Model, api: &str, base_url: &str) -> Value {
    json!({
        "id": model.id,
        "name": model.name,
        "api": api,
        "provider": model.provider,
        "baseUrl": base_url,
        "reasoning": model.reasoning,
        "input": model.input,
        "contextWindow": model.context_window,
        "maxTokens": model.max_output,
        "cost": {
            "input": model.prices.input,
            "output": model.prices.output,
            "cacheRead": model.prices.cache_read,
            "cacheWrite": model.prices.cache_write_5m,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_count_roles_and_report_the_accounted_totals() {
        let mut shared = View::default();
        shared.snapshot.context_window = 1000;
        shared.snapshot.totals = strata_runtime::Totals {
            requests: 2,
            pings: 0,
            usage: strata_runtime::Usage {
                input: 11,
                output: 7,
                cache_read: 230,
                cache_write_5m: 15,
                cache_write_1h: 5,
                ..Default::default()
            },
            cost: 0.75,
        };
        shared.snapshot.messages = vec![
            json!({"role": "user", "content": "hi"}),
            json!({"role": "assistant", "stopReason": "toolUse",
                "content": [{"type": "toolCall"}, {"type": "toolCall"}],
                "usage": {"input": 10, "output": 5, "cacheRead": 100, "cacheWrite": 20,
                    "cost": {"total": 0.5}}}),
            json!({"role": "toolResult"}),
            json!({"role": "toolResult"}),
            json!({"role": "assistant", "stopReason": "stop",
                "content": [{"type": "text", "text": " done "}],
                "usage": {"input": 1, "output": 2, "cacheRead": 130, "cacheWrite": 0,
                    "cost": {"total": 0.25}}}),
        ];
        let stats = shared.stats();
        assert_eq!(stats["userMessages"], 1);
        assert_eq!(stats["assistantMessages"], 2);
        assert_eq!(stats["toolCalls"], 2);
        assert_eq!(stats["toolResults"], 2);
        assert_eq!(stats["totalMessages"], 5);
        assert_eq!(
            stats["tokens"],
            json!({"input": 11, "output": 7, "cacheRead": 230, "cacheWrite": 20, "total": 268})
        );
        assert_eq!(stats["cost"], 0.75);
        assert_eq!(stats["contextUsage"]["tokens"], 133);
        assert_eq!(shared.last_assistant_text(), json!("done"));
    }

    #[test]
    fn context_tokens_are_unknown_after_a_compaction_until_a_new_answer() {
        let messages = vec![
            json!({"role": "compactionSummary", "summary": "s", "timestamp": 10}),
            json!({"role": "assistant", "stopReason": "stop", "usage": {"input": 50},
                "timestamp": 5}),
        ];
        let usage = context_usage(&messages, 100).unwrap();
        assert_eq!(usage["tokens"], Value::Null);
        assert_eq!(usage["percent"], Value::Null);
    }
}
