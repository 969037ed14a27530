//! The cache rules of issue 4's "Must show" list, on every protocol over real HTTP: the same
//! conversation is rendered in each provider's own request shape, and each assertion reads the
//! provider's own usage fields (cross-checked against the record).

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use strata_mock::prompt::Chapter;
use strata_mock::{Accounting, RequestRecord};

use crate::common::{Harness, filler, start, tokens};

/// One provider route and the cache rule it is documented to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Anthropic,
    Bedrock,
    Chat,
    Deepseek,
    Responses,
    Gemini,
}

const ROUTES: [Route; 6] = [
    Route::Anthropic,
    Route::Bedrock,
    Route::Chat,
    Route::Deepseek,
    Route::Responses,
    Route::Gemini,
];

/// The automatic styles' documented storage unit and minimum (tokens).
struct Automatic {
    unit: u64,
    min: u64,
}

impl Route {
    fn path(self) -> &'static str {
        match self {
            Self::Anthropic => "/v1/messages",
            Self::Bedrock => "/model/us.anthropic.claude-sonnet-4-5-v1:0/converse",
            Self::Chat | Self::Deepseek => "/v1/chat/completions",
            Self::Responses => "/v1/responses",
            Self::Gemini => "/v1beta/models/gemini-2.5-flash:generateContent",
        }
    }

    /// `None` for explicit breakpoints; the unit and minimum of the automatic caches
    /// (OpenAI 1024 / 128, DeepSeek 64 / 64, Gemini 2.5 2048 / 128).
    fn automatic(self) -> Option<Automatic> {
        match self {
            Self::Anthropic | Self::Bedrock => None,
            Self::Chat | Self::Responses => Some(Automatic {
                unit: 128,
                min: 1024,
            }),
            Self::Deepseek => Some(Automatic { unit: 64, min: 64 }),
            Self::Gemini => Some(Automatic {
                unit: 128,
                min: 2048,
            }),
        }
    }

    /// The documented lifetime of an unused entry: 5 minutes (Anthropic, Bedrock default),
    /// 10 minutes (OpenAI in-memory), 6 hours (DeepSeek disk), 1 hour (Gemini implicit).
    fn ttl(self) -> Duration {
        Duration::from_secs(match self {
            Self::Anthropic | Self::Bedrock => 5 * 60,
            Self::Chat | Self::Responses => 10 * 60,
            Self::Deepseek => 6 * 60 * 60,
            Self::Gemini => 60 * 60,
        })
    }

    fn schema() -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}})
    }

    /// A tool definition as this provider declares it, without a cache marker: the block whose
    /// tokens the cache counts.
    fn tool(self, name: &str, description: &str) -> Value {
        match self {
            Self::Anthropic => {
                json!({"name": name, "description": description, "input_schema": Self::schema()})
            }
            Self::Bedrock => {
                json!({"toolSpec": {"name": name, "description": description, "inputSchema": {"json": Self::schema()}}})
            }
            Self::Chat | Self::Deepseek => {
                json!({"type": "function", "function": {"name": name, "description": description, "parameters": Self::schema()}})
            }
            Self::Responses => {
                json!({"type": "function", "name": name, "description": description, "parameters": Self::schema()})
            }
            Self::Gemini => {
                json!({"name": name, "description": description, "parameters": Self::schema()})
            }
        }
    }

    /// The conversation in this provider's request shape. Explicit routes carry strata's
    /// breakpoints — after each marked tool, after the system prompt, on the last history
    /// message — so the final question is the only part after the last breakpoint.
    fn body(self, conversation: &Conversation) -> Value {
        let marked = |i: usize| conversation.tool_marks.contains(&i);
        let history_end = conversation.messages.len().saturating_sub(2);
        match self {
            Self::Anthropic => {
                let tools: Vec<Value> = conversation
                    .tools
                    .iter()
                    .enumerate()
                    .map(|(i, (name, description))| {
                        let mut tool = self.tool(name, description);
                        if marked(i) {
                            tool["cache_control"] = json!({"type": "ephemeral"});
                        }
                        tool
                    })
                    .collect();
                let messages: Vec<Value> = conversation
                    .messages
                    .iter()
                    .enumerate()
                    .map(|(i, (role, text))| {
                        let mut block = json!({"type": "text", "text": text});
                        if i == history_end {
                            block["cache_control"] = json!({"type": "ephemeral"});
                        }
                        json!({"role": role, "content": [block]})
                    })
                    .collect();
                json!({
                    "model": "claude-sonnet-4-5", "max_tokens": 64, "tools": tools,
                    "system": [{"type": "text", "text": conversation.system, "cache_control": {"type": "ephemeral"}}],
                    "messages": messages,
                })
            }
            Self::Bedrock => {
                let mut tools = Vec::new();
                for (i, (name, description)) in conversation.tools.iter().enumerate() {
                    tools.push(self.tool(name, description));
                    if marked(i) {
                        tools.push(json!({"cachePoint": {"type": "default"}}));
                    }
                }
                let messages: Vec<Value> = conversation
                    .messages
                    .iter()
                    .enumerate()
                    .map(|(i, (role, text))| {
                        let mut content = vec![json!({"text": text})];
                        if i == history_end {
                            content.push(json!({"cachePoint": {"type": "default"}}));
                        }
                        json!({"role": role, "content": content})
                    })
                    .collect();
                json!({
                    "toolConfig": {"tools": tools},
                    "system": [{"text": conversation.system}, {"cachePoint": {"type": "default"}}],
                    "messages": messages,
                })
            }
            Self::Chat | Self::Deepseek => {
                let mut messages = vec![json!({"role": "system", "content": conversation.system})];
                for (role, text) in &conversation.messages {
                    messages.push(json!({"role": role, "content": text}));
                }
                json!({
                    "model": if self == Self::Chat { "gpt-5" } else { "deepseek-chat" },
                    "tools": self.tools(conversation),
                    "messages": messages,
                    "prompt_cache_key": "session-1",
                })
            }
            Self::Responses => {
                let input: Vec<Value> = conversation
                    .messages
                    .iter()
                    .map(|(role, text)| json!({"role": role, "content": text}))
                    .collect();
                json!({
                    "model": "gpt-5", "instructions": conversation.system, "input": input,
                    "tools": self.tools(conversation), "prompt_cache_key": "session-1", "store": false,
                })
            }
            Self::Gemini => {
                let contents: Vec<Value> = conversation
                    .messages
                    .iter()
                    .map(|(role, text)| {
                        let role = if *role == "assistant" {
                            "model"
                        } else {
                            "user"
                        };
                        json!({"role": role, "parts": [{"text": text}]})
                    })
                    .collect();
                json!({
                    "tools": [{"functionDeclarations": self.tools(conversation)}],
                    "systemInstruction": {"parts": [{"text": conversation.system}]},
                    "contents": contents,
                })
            }
        }
    }

    /// The system prompt's block as the automatic caches tokenize it (the explicit routes
    /// only match whole blocks at breakpoints, so they never need it).
    fn system_block(self, system: &str) -> String {
        match self {
            Self::Chat | Self::Deepseek => json!({"role": "system", "content": system}).to_string(),
            Self::Gemini => json!({"text": system}).to_string(),
            Self::Responses | Self::Anthropic | Self::Bedrock => system.to_owned(),
        }
    }

    fn tools(self, conversation: &Conversation) -> Vec<Value> {
        conversation
            .tools
            .iter()
            .map(|(name, description)| self.tool(name, description))
            .collect()
    }

    /// (tokens read, all prompt tokens) from the provider's own usage fields.
    fn usage(self, reply: &Value) -> (u64, u64) {
        let n = |pointer: &str| reply.pointer(pointer).and_then(Value::as_u64);
        let field = |pointer: &str| {
            n(pointer).unwrap_or_else(|| panic!("{self:?}: no {pointer} in {reply}"))
        };
        match self {
            Self::Anthropic => {
                let read = field("/usage/cache_read_input_tokens");
                let written = field("/usage/cache_creation_input_tokens");
                let creation = field("/usage/cache_creation/ephemeral_5m_input_tokens")
                    + field("/usage/cache_creation/ephemeral_1h_input_tokens");
                assert_eq!(creation, written, "the 5m/1h split adds up");
                (read, read + written + field("/usage/input_tokens"))
            }
            Self::Bedrock => {
                let read = field("/usage/cacheReadInputTokens");
                let written = field("/usage/cacheWriteInputTokens");
                (read, read + written + field("/usage/inputTokens"))
            }
            Self::Chat => (
                field("/usage/prompt_tokens_details/cached_tokens"),
                field("/usage/prompt_tokens"),
            ),
            Self::Deepseek => {
                let hit = field("/usage/prompt_cache_hit_tokens");
                let miss = field("/usage/prompt_cache_miss_tokens");
                assert_eq!(hit + miss, field("/usage/prompt_tokens"));
                (hit, hit + miss)
            }
            Self::Responses => (
                field("/usage/input_tokens_details/cached_tokens"),
                field("/usage/input_tokens"),
            ),
            // `cachedContentTokenCount` is absent when nothing was read.
            Self::Gemini => (
                n("/usageMetadata/cachedContentTokenCount").unwrap_or(0),
                field("/usageMetadata/promptTokenCount"),
            ),
        }
    }

    /// Rounds a shared prefix down to what the cache can serve.
    fn servable(self, shared: u64) -> u64 {
        match self.automatic() {
            Some(Automatic { unit, min }) => {
                let read = shared / unit * unit;
                if read >= min { read } else { 0 }
            }
            None => shared,
        }
    }
}

/// A provider-neutral conversation.
#[derive(Debug, Clone)]
struct Conversation {
    tools: Vec<(String, String)>,
    /// Tools with a breakpoint after them (explicit routes).
    tool_marks: Vec<usize>,
    system: String,
    messages: Vec<(&'static str, String)>,
}

fn conversation() -> Conversation {
    let tool = |name: &str, words: usize| (name.to_owned(), filler(name, words));
    Conversation {
        // The first tool alone passes every minimum; the first two pass Gemini's 2048.
        tools: vec![
            tool("read", 700),
            tool("bash", 400),
            tool("edit", 400),
            tool("write", 400),
        ],
        tool_marks: vec![3],
        system: filler("system", 300),
        messages: vec![
            ("user", filler("context", 300)),
            ("assistant", "Understood.".to_owned()),
            ("user", "What now?".to_owned()),
        ],
    }
}

/// Posts, checks the status, and returns the provider's usage and the record.
async fn send(h: &Harness, route: Route, conversation: &Conversation) -> (u64, u64, Accounting) {
    let reply = h.post(route.path(), &route.body(conversation)).await;
    assert_eq!(reply.status, 200, "{route:?}: {}", reply.text);
    let (read, total) = route.usage(&reply.json());
    let record: RequestRecord = h.last_record();
    let cache = record.cache.unwrap();
    assert_eq!(
        (read, total),
        (cache.cache_read, cache.input_tokens),
        "{route:?}: the wire and the record agree"
    );
    (read, total, cache)
}

/// How many leading tokens two blocks share: an automatic cache matches token by token, so
/// a changed block still shares the tokens before its first difference.
fn shared_tokens(a: &str, b: &str) -> u64 {
    let tokenizer = strata_mock::tokens::Tokenizer::new();
    let (a, b) = (tokenizer.tokens(a), tokenizer.tokens(b));
    a.iter().zip(b.iter()).take_while(|(x, y)| x == y).count() as u64
}

fn chapter_total(split: strata_mock::Split) -> u64 {
    split.read + split.written + split.uncached
}

#[tokio::test]
async fn the_same_request_twice_reads_everything_up_to_its_last_breakpoint_on_every_route() {
    for route in ROUTES {
        let h = start().await;
        let conversation = conversation();
        let (read, total, first) = send(&h, route, &conversation).await;
        assert_eq!(read, 0, "{route:?}: a cold cache reads nothing");
        let (read, again, second) = send(&h, route, &conversation).await;
        assert_eq!(again, total, "{route:?}: deterministic token counts");
        match route.automatic() {
            // Everything up to the breakpoint on the last history message: only the final
            // question (its blocks after that breakpoint) is neither read nor written.
            None => {
                assert_eq!(read, first.cache_write, "{route:?}");
                assert_eq!(second.cache_write, 0, "{route:?}");
                assert_eq!(second.uncached, first.uncached, "{route:?}");
                assert_eq!(
                    (second.tools.uncached, second.system.uncached),
                    (0, 0),
                    "{route:?}"
                );
                assert!(second.uncached > 0 && second.uncached < 20, "{route:?}");
            }
            Some(Automatic { unit, .. }) => {
                assert_eq!(read, total / unit * unit, "{route:?}: whole units");
                assert!(total - read < unit, "{route:?}");
            }
        }
        assert_eq!(
            h.last_record().changed,
            None,
            "{route:?}: a repeat changes nothing"
        );
    }
}

#[tokio::test]
async fn a_changed_system_chapter_reads_the_tools_and_writes_the_rest_on_every_route() {
    for route in ROUTES {
        let h = start().await;
        let before = conversation();
        let (_, _, first) = send(&h, route, &before).await;
        let tools_tokens = chapter_total(first.tools);
        let mut after = before.clone();
        after.system = filler("changed", 300);
        let (read, _, second) = send(&h, route, &after).await;
        let expected = match route.automatic() {
            // Whole units of the shared tokens: the tools, and the system block's opening
            // up to its first changed token.
            Some(_) => route.servable(
                tools_tokens
                    + shared_tokens(
                        &route.system_block(&before.system),
                        &route.system_block(&after.system),
                    ),
            ),
            // The entry at the breakpoint after the last tool.
            None => tools_tokens,
        };
        assert_eq!(read, expected, "{route:?}: the tools chapter reads");
        assert_eq!(
            second.tools.read,
            tools_tokens.min(read),
            "{route:?}: all of the tools chapter the cache can serve"
        );
        assert_eq!(second.messages.read, 0, "{route:?}");
        assert_eq!(
            second.system.read,
            read - second.tools.read,
            "{route:?}: at most the unchanged opening of the system block"
        );
        assert_eq!(
            second.system.written + second.system.read,
            chapter_total(second.system),
            "{route:?}: the rest of the system chapter is written again"
        );
        assert!(second.messages.written > 0, "{route:?}");
        assert_eq!(
            h.last_record().changed.map(|c| (c.chapter, c.block)),
            Some((Chapter::System, 4)),
            "{route:?}: four tools, then the system block"
        );
    }
}

#[tokio::test]
async fn a_tool_removed_from_the_middle_misses_from_that_tool_on_every_route() {
    for route in ROUTES {
        let h = start().await;
        let mut before = conversation();
        // An explicit cache only has entries at breakpoints: one after the first tool gives
        // the removal something to read.
        before.tool_marks = vec![0, 3];
        send(&h, route, &before).await;
        let mut after = before.clone();
        after.tools.remove(2);
        after.tool_marks = vec![0, 2];
        let (read, _, second) = send(&h, route, &after).await;
        let count = |i: usize| {
            let (name, description) = &before.tools[i];
            tokens(&route.tool(name, description).to_string())
        };
        let text = |i: usize| {
            let (name, description) = &before.tools[i];
            route.tool(name, description).to_string()
        };
        // The tools before the removed one, and the opening its successor shares with it.
        let shared = count(0) + count(1) + shared_tokens(&text(2), &text(3));
        let expected = match route.automatic() {
            Some(_) => route.servable(shared),
            // Entries exist only at breakpoints: the one after the first tool, within the
            // 20-block lookback of the next breakpoint.
            None => count(0),
        };
        assert_eq!(read, expected, "{route:?}");
        assert!(read > 0 && read <= shared, "{route:?}");
        assert_eq!(second.tools.read, read, "{route:?}");
        assert_eq!(
            (second.system.read, second.messages.read),
            (0, 0),
            "{route:?}: a miss from the removed tool on"
        );
        assert!(second.tools.written > 0, "{route:?}");
        assert_eq!(
            h.last_record().changed.map(|c| (c.chapter, c.block)),
            Some((Chapter::Tools, 2)),
            "{route:?}"
        );
    }
}

#[tokio::test]
async fn entries_expire_on_the_virtual_clock_and_hits_refresh_them_on_every_route() {
    for route in ROUTES {
        let h = start().await;
        let conversation = conversation();
        let margin = Duration::from_secs(5);
        send(&h, route, &conversation).await;
        h.server.advance_clock(route.ttl() - margin);
        let (warm, _, _) = send(&h, route, &conversation).await;
        assert!(warm > 0, "{route:?}: a hit just before the lifetime ends");
        // That hit refreshed the entries: another almost-lifetime later they still read.
        h.server.advance_clock(route.ttl() - margin);
        let (refreshed, _, _) = send(&h, route, &conversation).await;
        assert_eq!(refreshed, warm, "{route:?}: the hit refreshed the lifetime");
        h.server.advance_clock(route.ttl() + margin);
        let (expired, _, cache) = send(&h, route, &conversation).await;
        assert_eq!(expired, 0, "{route:?}: expired after an idle lifetime");
        assert!(cache.cache_write > 0, "{route:?}: and written again");
    }
}
