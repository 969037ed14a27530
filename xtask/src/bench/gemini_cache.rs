//! `cargo xtask bench --only gemini-cache`: Gemini explicit caches (`cachedContents`) against
//! implicit caching on a long tool loop. One prompt whose answer reads `READS` files one call
//! at a time, played through the agent (strata-agent, the Google adapter) against strata-mock
//! on `gemini-2.5-flash`, with the row's `explicit_cache` flag off and on, each under two
//! implicit caches: the mock's (a deterministic prefix cache that always hits above the
//! model's minimum, Google's best case) and none (every implicit lookup misses, the worst case
//! Google's "no cost saving guarantee" allows).
//!
//! Cost is counted twice, and the two must agree: what strata recorded (the agent's usage
//! events, create requests and storage included) and what the mock billed (its request records,
//! every cache created at the input price, and storage per token-hour for the lifetime asked),
//! both at the catalog's prices for the model.

use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use strata_agent::{Agent, AgentConfig, AgentEvent, CacheSettings};
use strata_google::GoogleProvider;
use strata_mock::{CacheConfig, MockConfig, MockServer, ModelProfile, ModelRule, Scenario};
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{ApiKey, Catalog, Prices, StreamOptions};
use strata_session::{Session, WriteOptions};
use strata_tools::ToolSet;

/// The `--only` name.
pub const NAME: &str = "gemini-cache";
/// Files the loop reads, one tool call each.
const READS: usize = 40;
/// Lines of each file.
const LINES: usize = 60;
/// The row and model played.
const ROW: &str = "google";
const MODEL: &str = "gemini-2.5-flash";

/// Whether the arguments ask for this bench.
pub fn selected(args: &[String]) -> bool {
    args.windows(2)
        .any(|pair| pair[0] == "--only" && pair[1] == NAME)
}

/// One run's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mode {
    explicit: bool,
    implicit_hits: bool,
}

impl Mode {
    const ALL: [Mode; 4] = [
        Mode {
            explicit: false,
            implicit_hits: true,
        },
        Mode {
            explicit: true,
            implicit_hits: true,
        },
        Mode {
            explicit: false,
            implicit_hits: false,
        },
        Mode {
            explicit: true,
            implicit_hits: false,
        },
    ];

    fn label(self) -> String {
        format!(
            "{}, implicit cache {}",
            if self.explicit {
                "explicit caches"
            } else {
                "implicit only"
            },
            if self.implicit_hits { "hits" } else { "misses" }
        )
    }
}

/// One run's figures.
#[derive(Debug, Clone, PartialEq)]
struct Figures {
    mode: Mode,
    requests: usize,
    refused: usize,
    creates: usize,
    created_tokens: u64,
    storage_token_hours: f64,
    cache_read: u64,
    strata_cost: f64,
    mock_cost: f64,
    answered: bool,
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

/// What the mock billed at `prices`: uncached, cached and output tokens of every answered
/// request, each cache created at the input price, and its storage.
fn mock_bill(server: &MockServer, prices: &Prices) -> f64 {
    let per = |tokens: u64, price: f64| tokens as f64 * price / 1e6;
    let requests: f64 = server
        .requests()
        .iter()
        .filter_map(|r| r.cache.map(|c| (c, r.output_tokens)))
        .map(|(c, out)| {
            per(c.uncached + c.cache_write, prices.input)
                + per(c.cache_read, prices.cache_read)
                + per(out, prices.output)
        })
        .sum();
    requests
        + per(server.cached_content_created_tokens(), prices.input)
        + server.cached_content_storage_token_hours() * prices.cache_storage / 1e6
}

async fn play(mode: Mode) -> Result<Figures> {
    let scenario = Scenario::from_toml(&scenario(), "gemini cache bench")?;
    let mut config = MockConfig::new().with_scenario(scenario);
    if !mode.implicit_hits {
        config = config.with_model(ModelRule {
            protocol: Some(strata_mock::Protocol::Gemini),
            pattern: MODEL.into(),
            profile: ModelProfile {
                cache: CacheConfig::none(),
                ..strata_mock::config::builtin_profile(strata_mock::Protocol::Gemini, MODEL)
            },
        });
    }
    let server = MockServer::start(config)
        .await
        .context("starting strata-mock")?;
    let catalog = Catalog::builtin().context("reading the capability table")?;
    let mut row = catalog.provider(ROW).context("no google row")?.clone();
    row.features.explicit_cache = mode.explicit;
    let model = catalog
        .model(ROW, MODEL)
        .with_context(|| format!("no model {MODEL}"))?;
    let prices = model.prices;
    let client = HttpClient::new(&TransportConfig::default())?;
    let provider = Arc::new(GoogleProvider::new(row.clone(), client));
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
        api: "google-generative-ai".into(),
        model,
        max_tokens: Some(4096),
        global_dir: None,
        custom_intro: None,
        append_system_prompt: None,
        stream: StreamOptions {
            base_url: Some(format!("{}/v1beta", server.base_url())),
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
    let cost = Arc::new(Mutex::new(0.0_f64));
    let sum = Arc::clone(&cost);
    let mut events = agent.subscribe();
    let watcher = tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if let AgentEvent::Usage { cost, .. } = event
                && let Ok(mut total) = sum.lock()
            {
                *total += cost.total();
            }
        }
    });
    let answer = agent
        .prompt("Read every part file, one at a time, then say you are done.")
        .await?
        .final_text;
    drop(agent);
    // The agent is gone, so the channel closes once every event is read.
    watcher.await.context("the usage watcher")?;
    let records = server.requests();
    let mut names: Vec<&str> = records
        .iter()
        .filter_map(|r| r.cached_content.as_deref())
        .collect();
    names.dedup();
    let strata_cost = cost.lock().map(|c| *c).unwrap_or(f64::NAN);
    Ok(Figures {
        mode,
        requests: records.len(),
        refused: records.iter().filter(|r| r.status != 200).count(),
        creates: names.len(),
        created_tokens: server.cached_content_created_tokens(),
        storage_token_hours: server.cached_content_storage_token_hours(),
        cache_read: records
            .iter()
            .filter_map(|r| r.cache.map(|c| c.cache_read))
            .sum(),
        strata_cost,
        mock_cost: mock_bill(&server, &prices),
        answered: answer == "All parts read.",
    })
}

/// The rows as a Markdown table, with the command.
fn table(runs: &[Figures]) -> String {
    let mut out = format!(
        "Command: `cargo xtask bench --only {NAME}`\n\n\
         {READS} reads of {LINES}-line files in one prompt on `{ROW}/{MODEL}` (strata-mock), \
         priced at the catalog's rates for the model (storage from the table's \
         `cache.explicit.storage_price`). Requests are generateContent calls plus cache \
         creates.\n\n\
         | run | generate requests | creates | refused | created tokens | storage (token-hours) | cache read | cost, strata | cost, mock bill | answer |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
    );
    for run in runs {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.0} | {} | ${:.5} | ${:.5} | {} |\n",
            run.mode.label(),
            run.requests,
            run.creates,
            run.refused,
            run.created_tokens,
            run.storage_token_hours,
            run.cache_read,
            run.strata_cost,
            run.mock_cost,
            if run.answered { "arrived" } else { "MISSING" },
        ));
    }
    out
}

/// Runs the four modes and prints and writes the table (`docs/bench-gemini-cache.md`, below
/// the document's hand-written part, which is kept).
pub fn main(root: &Path, _args: &[String]) -> Result<()> {
    let runtime = super::driver::runtime()?;
    let mut runs = Vec::new();
    for mode in Mode::ALL {
        let run = runtime
            .block_on(play(mode))
            .with_context(|| format!("gemini cache bench: {}", mode.label()))?;
        eprintln!(
            "{}: {} requests, ${:.5} (mock ${:.5})",
            mode.label(),
            run.requests,
            run.strata_cost,
            run.mock_cost
        );
        runs.push(run);
    }
    let text = table(&runs);
    print!("{text}");
    let out = root.join("docs/bench-gemini-cache.md");
    let marker = "<!-- figures: written by the bench below this line -->";
    let head = std::fs::read_to_string(&out)
        .ok()
        .and_then(|doc| doc.split_once(marker).map(|(head, _)| head.to_owned()))
        .unwrap_or_else(|| {
            "# Gemini explicit caches: what they cost on strata's workload\n\n".to_owned()
        });
    let document = format!("{head}{marker}\n\n{text}");
    std::fs::write(&out, document).with_context(|| format!("writing {}", out.display()))?;
    println!("wrote docs/bench-gemini-cache.md");
    Ok(())
}
