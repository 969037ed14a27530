//! Helpers for the UI's tests: a status, keys, messages, a drawn screen.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use strata_agent::AgentEvent;
use strata_provider::{Cost, Prices, Usage};
use strata_session::{AgentMessage, EntryId};

use super::app::App;
use super::view;
use super::worker::{ModelOption, Status, ToolInfo};

/// A status for Claude Sonnet on Anthropic, with read/bash/edit/write on.
pub fn status() -> Status {
    Status {
        model: "anthropic/claude-sonnet-4-5".into(),
        thinking: "medium".into(),
        context_window: 200_000,
        session_name: None,
        session_file: "/tmp/session.jsonl".into(),
        tools: ["read", "bash", "edit", "write", "grep", "find", "ls"]
            .iter()
            .enumerate()
            .map(|(index, name)| ToolInfo {
                name: (*name).into(),
                enabled: index < 4,
                tokens: 300,
            })
            .collect(),
        models: vec![
            option("anthropic/claude-sonnet-4-5", true, 3.75),
            option("openai/gpt-5", true, 1.25),
            option("google/gemini-2.5-pro", false, 1.625),
        ],
        reasoning: true,
        cwd: "/home/u/project".into(),
        branch: Some("main".into()),
        auto_compaction: true,
        mid_conversation_system: true,
        system_reminders: false,
        tool_addition: false,
        deferred_tools: false,
        prices: Prices {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write_5m: 3.75,
            cache_write_1h: 6.0,
            cache_storage: 0.0,
        },
        chapter_tokens: [1_200, 2_400, 8_000],
        tree: Vec::new(),
        attributed: Vec::new(),
    }
}

/// A model option with a cache-write price.
pub fn option(name: &str, usable: bool, write: f64) -> ModelOption {
    ModelOption {
        name: name.into(),
        detail: if usable {
            format!("{name} · 200k context")
        } else {
            "no key: set GEMINI_API_KEY or /login google".into()
        },
        usable,
        prices: Prices {
            input: write,
            output: write * 4.0,
            cache_read: write / 10.0,
            cache_write_5m: write,
            cache_write_1h: write * 2.0,
            cache_storage: 0.0,
        },
    }
}

/// An app showing [`status`].
pub fn app() -> App {
    let mut app = App::new(None, Vec::new());
    app.status = status();
    app
}

/// A plain key press.
pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// A key press with Ctrl.
pub fn ctrl(ch: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(ch), KeyModifiers::CONTROL)
}

/// Types `text` key by key.
pub fn type_text(app: &mut App, text: &str) {
    for ch in text.chars() {
        app.on_key(key(KeyCode::Char(ch)), std::time::Instant::now());
    }
}

/// The usage of one request.
pub fn usage(input: u64, read: u64, write: u64, output: u64) -> AgentEvent {
    let usage = Usage {
        input,
        output,
        cache_read: read,
        cache_write_5m: write,
        ..Default::default()
    };
    let prices = status().prices;
    let cost = Cost {
        input: input as f64 * prices.input / 1e6,
        output: output as f64 * prices.output / 1e6,
        cache_read: read as f64 * prices.cache_read / 1e6,
        cache_write_5m: write as f64 * prices.cache_write_5m / 1e6,
        ..Default::default()
    };
    AgentEvent::Usage { usage, cost }
}

/// A `message_end` for a message given as Pi JSON.
pub fn message_end(message: serde_json::Value) -> AgentEvent {
    let message: AgentMessage = serde_json::from_value(message).expect("test message parses");
    AgentEvent::MessageEnd {
        entry_id: EntryId::new("00000000"),
        message: Box::new(message),
    }
}

/// An assistant message with text and tool calls `(id, name, arguments)`.
pub fn assistant(text: &str, calls: &[(&str, &str, serde_json::Value)]) -> serde_json::Value {
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    for (id, name, arguments) in calls {
        content.push(json!({"type": "toolCall", "id": id, "name": name, "arguments": arguments}));
    }
    json!({
        "role": "assistant", "content": content, "api": "anthropic-messages",
        "provider": "anthropic", "model": "claude-sonnet-4-5",
        "stopReason": if calls.is_empty() { "stop" } else { "toolUse" }, "timestamp": 1
    })
}

/// A tool result message.
pub fn tool_result(id: &str, name: &str, text: &str, is_error: bool) -> serde_json::Value {
    json!({
        "role": "toolResult", "toolCallId": id, "toolName": name,
        "content": [{"type": "text", "text": text}], "isError": is_error, "timestamp": 2
    })
}

/// The screen as text, `width` × `height`.
pub fn screen(app: &App, width: u16, height: u16) -> String {
    let backend = TestBackend::new(width, height);
    let mut terminal = Terminal::new(backend).expect("test terminal");
    terminal
        .draw(|frame| {
            view::draw(frame, app, 0);
        })
        .expect("drawing");
    terminal.backend().to_string()
}
