//! `cargo xtask bench --only threads`: Anthropic message threads on a long tool loop. One
//! prompt whose answer reads `READS` files one call at a time, played through the agent
//! (strata-agent, the Anthropic adapter) against strata-mock, with threads on and off; a third
//! run pauses past a thread's lifetime on the mock's clock halfway, so the thread expires and
//! the loop goes on through a full replay. Rows: requests, bytes uploaded, and time to first
//! token under a stated model of the wire (below), per run and per request.
//!
//! Time to first token is not measured on a network: the mock answers at once. It is computed
//! from each request the mock recorded as `BASE_MS + uploaded bytes / UPLINK + uncached tokens
//! / PREFILL + cached tokens / CACHED_PREFILL`. A thread changes only the bytes uploaded (the
//! cache accounting of a continue is the full request's), so the difference between the rows
//! is the upload at the stated uplink; with a faster uplink it shrinks.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use strata_agent::{Agent, AgentConfig, CacheSettings};
use strata_anthropic::AnthropicProvider;
use strata_mock::{MockConfig, MockServer, RequestRecord, Scenario};
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{ApiKey, Catalog, StreamOptions};
use strata_session::{Session, WriteOptions};
use strata_tools::ToolSet;

/// The `--only` name.
pub const NAME: &str = "threads";
/// Files the loop reads, one tool call each.
const READS: usize = 40;
/// Lines of each file.
const LINES: usize = 60;
/// Fixed time to first token of any request (connection, queue, first decode), ms.
const BASE_MS: f64 = 300.0;
/// Uplink, bytes per ms (20 Mbit/s).
const UPLINK: f64 = 2_500.0;
/// Uncached prefill, tokens per ms.
const PREFILL: f64 = 10.0;
/// Reading cached tokens, tokens per ms.
const CACHED_PREFILL: f64 = 200.0;
/// The model and row played.
const MODEL: &str = "claude-sonnet-4-5";

/// Whether the arguments ask for this bench.
pub fn selected(args: &[String]) -> bool {
    args.windows(2)
        .any(|pair| pair[0] == "--only" && pair[1] == NAME)
}

/// How a run uses threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    On,
    /// On, with a pause past the thread's lifetime halfway through the loop.
    OnExpiring,
}

impl Mode {
    const ALL: [Mode; 3] = [Mode::Off, Mode::On, Mode::OnExpiring];

    fn label(self) -> &'static str {
        match self {
            Mode::Off => "full requests (threads off)",
            Mode::On => "message threads",
            Mode::OnExpiring => "message threads, expired halfway",
        }
    }
}

/// One run's figures.
#[derive(Debug, Clone, PartialEq)]
struct Figures {
    mode: Mode,
    requests: usize,
    refused: usize,
    continued: usize,
    upload_bytes: u64,
    ttft_ms: Vec<f64>,
    cache_read: u64,
    answered: bool,
}

/// Time to first token of one recorded request under the model in the module doc.
fn ttft_ms(record: &RequestRecord) -> f64 {
    let (uncached, read) = record.cache.map_or((0, 0), |c| {
        (
            c.uncached + c.cache_write_5m + c.cache_write_1h,
            c.cache_read,
        )
    });
    BASE_MS
        + record.body_bytes as f64 / UPLINK
        + uncached as f64 / PREFILL
        + read as f64 / CACHED_PREFILL
}

fn scenario() -> String {
    let mut text = String::new();
    for i in 0..READS {
        text.push_str(&format!(
            "[[turn]]\ntext = \"Reading part {i}.\"\n[[turn.tool_call]]\ntool = \"read\"\nargs = {{ path = \"part{i}.txt\" }}\n"
        ));
    }
    text.push_str("[[turn]]\ntext = \"All parts read.\"\n");
    text
}

fn seed(dir: &Path) -> Result<()> {
    for i in 0..READS {
        let body: String = (0..LINES)
            .map(|line| format!("part {i} line {line}: let value_{line} = compute({i}, {line});\n"))
            .collect();
        let path = dir.join(format!("part{i}.txt"));
        std::fs::write(&path, body).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

async fn play(mode: Mode) -> Result<Figures> {
    let scenario = Scenario::from_toml(&scenario(), "threads bench")?;
    let server = Arc::new(
        MockServer::start(MockConfig::new().with_scenario(scenario))
            .await
            .context("starting strata-mock")?,
    );
    let catalog = Catalog::builtin().context("reading the capability table")?;
    let mut row = catalog
        .provider("anthropic")
        .context("no anthropic row")?
        .clone();
    row.features.message_threads = mode != Mode::Off;
    let model = catalog
        .model("anthropic", MODEL)
        .with_context(|| format!("no model {MODEL}"))?;
    let client = HttpClient::new(&TransportConfig::default())?;
    let provider = Arc::new(AnthropicProvider::for_row(&row, client));
    let cwd = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    seed(cwd.path())?;
    let session = Session::create(
        home.path().join("session.jsonl"),
        &cwd.path().display().to_string(),
        WriteOptions::default(),
    )?;
    let config = AgentConfig {
        cwd: cwd.path().to_path_buf(),
        capabilities: row.capabilities(&model.id),
        api: "anthropic-messages".into(),
        model,
        max_tokens: Some(4096),
        global_dir: None,
        custom_intro: None,
        append_system_prompt: None,
        stream: StreamOptions {
            base_url: Some(server.base_url()),
            api_key: Some(ApiKey::new("bench-key")),
            ..StreamOptions::default()
        },
        render_policy: strata_context::RenderPolicy::Strata,
        compaction: strata_compaction::CompactionSettings::default(),
        summary_model: None,
        cache: CacheSettings::default(),
        tool_settings: strata_tools::ToolSettings::default(),
    };
    let mut agent = Agent::new(session, provider, ToolSet::default_set(), config);
    // The pause: once the loop is halfway, the mock's clock jumps past the thread's lifetime
    // (the cache's five minutes too, so the replay writes again, as it would).
    let pauser = Arc::clone(&server);
    let mut events = agent.subscribe();
    let watcher = tokio::spawn(async move {
        let mut paused = false;
        while events.recv().await.is_some() {
            if mode == Mode::OnExpiring && !paused && pauser.requests().len() >= READS / 2 {
                pauser.advance_clock(Duration::from_millis(
                    strata_mock::thread::LIFETIME_MS + 60_000,
                ));
                paused = true;
            }
        }
    });
    let answer = agent
        .prompt("Read every part file, one at a time, then say you are done.")
        .await?
        .final_text;
    drop(agent);
    watcher.abort();
    let records = server.requests();
    Ok(Figures {
        mode,
        requests: records.len(),
        refused: records.iter().filter(|r| r.status != 200).count(),
        continued: records.iter().filter(|r| r.continued.is_some()).count(),
        upload_bytes: records.iter().map(|r| r.body_bytes).sum(),
        ttft_ms: records
            .iter()
            .filter(|r| r.status == 200)
            .map(ttft_ms)
            .collect(),
        cache_read: records
            .iter()
            .filter_map(|r| r.cache.map(|c| c.cache_read))
            .sum(),
        answered: answer == "All parts read.",
    })
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// The rows as a Markdown table, with the command and the model of the wire.
fn table(runs: &[Figures]) -> String {
    let mut out = format!(
        "Command: `cargo xtask bench --only threads`\n\n\
         {READS} reads of {LINES}-line files in one prompt on Anthropic `{MODEL}` (strata-mock). \
         Time to first token = {BASE_MS} ms + uploaded bytes at {UPLINK} B/ms (20 Mbit/s) + \
         uncached tokens at {PREFILL}/ms + cached tokens at {CACHED_PREFILL}/ms, from the mock's \
         records; threads change only the upload.\n\n\
         | run | requests | continues | refused | uploaded | TTFT median | TTFT last | TTFT sum | cache read | answer |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
    );
    for run in runs {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.1} KiB | {:.0} ms | {:.0} ms | {:.1} s | {} | {} |\n",
            run.mode.label(),
            run.requests,
            run.continued,
            run.refused,
            run.upload_bytes as f64 / 1024.0,
            median(&run.ttft_ms),
            run.ttft_ms.last().copied().unwrap_or(0.0),
            run.ttft_ms.iter().sum::<f64>() / 1000.0,
            run.cache_read,
            if run.answered { "arrived" } else { "MISSING" },
        ));
    }
    out
}

/// Runs the three modes and prints and writes the table (`docs/bench-threads.md`).
pub fn main(root: &Path, _args: &[String]) -> Result<()> {
    let runtime = super::driver::runtime()?;
    let mut runs = Vec::new();
    for mode in Mode::ALL {
        let run = runtime
            .block_on(play(mode))
            .with_context(|| format!("threads bench: {}", mode.label()))?;
        eprintln!(
            "{}: {} requests, {} bytes uploaded",
            mode.label(),
            run.requests,
            run.upload_bytes
        );
        runs.push(run);
    }
    let text = table(&runs);
    print!("{text}");
    let out = root.join("docs/bench-threads.md");
    let document = format!(
        "# Anthropic message threads: upload and time to first token\n\n\
         Written by `cargo xtask bench --only threads` (xtask/src/bench/threads.rs).\n\n{text}"
    );
    std::fs::write(&out, document).with_context(|| format!("writing {}", out.display()))?;
    println!("wrote docs/bench-threads.md");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_to_first_token_grows_with_the_upload_and_the_uncached_input() {
        let mut record = RequestRecord::received(
            1,
            strata_mock::Protocol::Anthropic,
            "/v1/messages".into(),
            MODEL.into(),
            0,
        );
        assert_eq!(ttft_ms(&record), BASE_MS);
        record.body_bytes = 25_000;
        assert_eq!(ttft_ms(&record), BASE_MS + 10.0);
        record.cache = Some(strata_mock::Accounting {
            uncached: 1_000,
            cache_read: 2_000,
            ..strata_mock::Accounting::default()
        });
        assert_eq!(ttft_ms(&record), BASE_MS + 10.0 + 100.0 + 10.0);
    }
}
