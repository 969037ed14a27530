//! `cargo xtask bench --only transport`: the Responses WebSocket mode against plain HTTP on a
//! long tool loop. The same scripted loop (a system prompt and tools of an agent's size, then
//! one file read per turn) is played twice through strata's Responses adapter against
//! strata-mock: with the WebSocket mode (each turn's new items after `previous_response_id`)
//! and without (every turn the whole conversation). Bytes uploaded are what the mock received;
//! time to first token is the mock's latency model (`strata_mock::latency`: per-request setup,
//! upload, the server's reading of what it received, prefill of what the cache did not serve)
//! on each request as the mock accounted it. The bill is the same either way (the same prompt
//! reaches the cache), so it is not repeated here.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::json;
use strata_mock::{MockConfig, MockServer, RequestRecord, Scenario};
use strata_openai_responses::ResponsesProvider;
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{
    ApiKey, Catalog, ContentBlock, Message, Provider, Request, Role, StreamOptions, SystemBlock,
    ThinkingLevel, ToolDefinition, ToolResultContent,
};

/// The workload's name (`--only transport`).
pub const NAME: &str = "transport";

/// Tool calls in the loop (OpenAI's figure is for "20+ tool calls").
const TOOL_CALLS: usize = 40;

/// Bytes of each file the loop reads.
const RESULT_BYTES: usize = 3_000;

/// Where the document goes.
const OUT: &str = "docs/bench-transport.md";

/// Whether the arguments select this workload.
pub fn selected(args: &[String]) -> bool {
    args.windows(2)
        .any(|pair| pair[0] == "--only" && pair[1] == NAME)
}

/// The loop's script: a read per turn, then the answer.
fn script() -> Result<Scenario> {
    let mut text = String::new();
    for i in 0..TOOL_CALLS {
        writeln!(
            text,
            "[[turn]]\ntext = \"Reading part {i}.\"\n[[turn.tool_call]]\ntool = \"read\"\nargs = {{ path = \"src/part{i}.rs\" }}"
        )?;
    }
    text.push_str("[[turn]]\ntext = \"Every part read.\"\n");
    Scenario::from_toml(&text, "transport").context("the transport script")
}

/// The first request: an agent-sized system prompt and tool list, and the task.
fn first_request(model: &str) -> Request {
    let mut request = Request::new(model);
    request.system.push(SystemBlock::text(
        "You are a coding agent working in a repository. Read before you edit. ".repeat(400),
    ));
    for name in ["read", "write", "edit", "bash", "grep", "find", "ls"] {
        request.tools.push(ToolDefinition {
            name: name.into(),
            description: format!("The {name} tool. ").repeat(40),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            defer_loading: false,
        });
    }
    request.thinking = ThinkingLevel::Medium;
    request
        .messages
        .push(Message::user_text("Read every part of the module."));
    request
}

/// Plays the loop with the WebSocket mode `on` or off; the mock's records.
async fn play(on: bool) -> Result<Vec<RequestRecord>> {
    let server = MockServer::start(MockConfig::new())
        .await
        .context("starting strata-mock")?;
    server.load_scenario(script()?);
    let catalog = Catalog::builtin().context("loading the capability table")?;
    let row = catalog.provider("openai").context("no openai row")?.clone();
    let model = catalog
        .model("openai", "gpt-5.5")
        .context("no gpt-5.5 in the table")?;
    let client = HttpClient::new(&TransportConfig::default()).context("the HTTP client")?;
    let provider = ResponsesProvider::new(row, client).with_websocket(on);
    let options = StreamOptions {
        api_key: Some(ApiKey::new("sk-bench")),
        base_url: Some(format!("{}/v1", server.base_url())),
        session_id: Some("transport-bench".into()),
        cache_key: Some("transport-bench".into()),
        ..StreamOptions::default()
    };
    let mut request = first_request(&model.id);
    for _ in 0..=TOOL_CALLS {
        let message = provider
            .complete(&model, &request, &options)
            .await
            .context("a turn of the loop")?
            .message;
        let calls: Vec<String> = message
            .tool_calls()
            .map(|(id, _, _)| id.to_owned())
            .collect();
        request.messages.push(message);
        if calls.is_empty() {
            break;
        }
        request.messages.push(Message {
            role: Role::User,
            content: calls
                .into_iter()
                .map(|id| ContentBlock::ToolResult {
                    tool_call_id: id,
                    content: vec![ToolResultContent::Text {
                        text: "x".repeat(RESULT_BYTES),
                    }],
                    is_error: false,
                })
                .collect(),
        });
    }
    let records = server.requests();
    if records.len() != TOOL_CALLS + 1 || records.iter().any(|r| r.status != 200) {
        bail!(
            "the loop did not run as scripted: {} requests",
            records.len()
        );
    }
    if records.iter().any(|r| r.websocket != on) {
        bail!("a request went over the other transport");
    }
    Ok(records)
}

/// One row's figures.
struct Figures {
    requests: usize,
    upload_bytes: u64,
    first_ttft_ms: f64,
    median_ttft_ms: f64,
    last_ttft_ms: f64,
    total_ttft_ms: f64,
}

fn figures(records: &[RequestRecord]) -> Figures {
    let mut ttft: Vec<f64> = records.iter().map(|r| r.ttft_ms).collect();
    let (first, last) = (
        ttft.first().copied().unwrap_or_default(),
        ttft.last().copied().unwrap_or_default(),
    );
    ttft.sort_by(f64::total_cmp);
    Figures {
        requests: records.len(),
        upload_bytes: records.iter().map(|r| r.upload_bytes).sum(),
        first_ttft_ms: first,
        median_ttft_ms: ttft.get(ttft.len() / 2).copied().unwrap_or_default(),
        last_ttft_ms: last,
        total_ttft_ms: ttft.iter().sum(),
    }
}

/// Runs both rows, prints them and writes `OUT` under `root`.
pub fn main(root: &Path, args: &[String]) -> Result<()> {
    let runtime = super::driver::runtime()?;
    let http = figures(&runtime.block_on(play(false))?);
    let socket = figures(&runtime.block_on(play(true))?);
    let command = std::iter::once("cargo xtask bench".to_owned())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    let mut doc = String::new();
    writeln!(doc, "# Responses over HTTP and over the WebSocket mode\n")?;
    writeln!(
        doc,
        "A tool loop of {TOOL_CALLS} file reads ({RESULT_BYTES} bytes each) after an agent-sized \
         system prompt and seven tools, on openai/gpt-5.5 against strata-mock; time to first token \
         on the mock's latency model (`strata_mock::latency`, round assumed rates, not a \
         provider's measurements), bytes as the mock received them. Command: `{command}`.\n"
    )?;
    writeln!(
        doc,
        "| transport | requests | bytes uploaded | TTFT first (ms) | TTFT median (ms) | TTFT last (ms) | TTFT summed over the loop (ms) |"
    )?;
    writeln!(doc, "|---|---:|---:|---:|---:|---:|---:|")?;
    for (name, f) in [
        ("HTTP (full input each turn)", &http),
        ("WebSocket (new items after previous_response_id)", &socket),
    ] {
        writeln!(
            doc,
            "| {name} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
            f.requests,
            f.upload_bytes,
            f.first_ttft_ms,
            f.median_ttft_ms,
            f.last_ttft_ms,
            f.total_ttft_ms
        )?;
    }
    writeln!(
        doc,
        "\nWebSocket against HTTP: {:.3}x the bytes uploaded, {:.3}x the summed time to first token.",
        socket.upload_bytes as f64 / http.upload_bytes.max(1) as f64,
        socket.total_ttft_ms / http.total_ttft_ms.max(f64::MIN_POSITIVE)
    )?;
    print!("{doc}");
    let out = root.join(OUT);
    std::fs::write(&out, &doc).with_context(|| format!("writing {}", out.display()))?;
    println!("wrote {OUT}");
    Ok(())
}
