//! One play of the demo session: strata-mock in process with the bundled scenario, a fresh
//! copy of the repository, and the agent driven through prompts, a tool-set change, two
//! compactions and a tree navigation.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_agent::{Agent, AgentConfig, AgentEvent};
use strata_compaction::{CompactionReason, CompactionSettings};
use strata_context::RenderPolicy;
use strata_mock::{MockConfig, MockServer, ModelProfile, ModelRule, RequestRecord};
use strata_provider::{Catalog, Usage};
use strata_runtime::{ModelRoute, Routing as _};
use strata_session::{AgentMessage, ContentBlock, EntryId, Session, WriteOptions};
use strata_tools::ToolSet;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::bundle;
use crate::error::{DemoError, Doing as _};

/// A provider and model the demo runs on, with the cache model it shows.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// Provider id in the capability table.
    pub provider: &'static str,
    /// Model id.
    pub model: &'static str,
    /// How that provider caches, in a few words.
    pub cache: &'static str,
}

/// The three cache models the demo prices.
pub const TARGETS: [Target; 3] = [
    Target {
        provider: "anthropic",
        model: "claude-opus-4-8",
        cache: "explicit breakpoints",
    },
    Target {
        provider: "openai",
        model: "gpt-5.5",
        cache: "automatic prefix",
    },
    Target {
        provider: "deepseek",
        model: "deepseek-v4-flash",
        cache: "disk cache",
    },
];

/// What one step of the session does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Send the scenario's next user prompt.
    Prompt,
    /// Turn the `write` tool off.
    DisableWrite,
    /// Compact by hand, as `/compact` does.
    Compact,
    /// Remember the current leaf (where the tree navigation returns to).
    Mark,
    /// Go back to the mark with a branch summary, as `/tree` does.
    ReturnToMark,
}

/// The session's shape; the prompts come from the scenario in order.
const STEPS: [Step; 11] = [
    Step::Prompt,
    Step::DisableWrite,
    Step::Prompt,
    Step::Compact,
    // This prompt edits AGENTS.md: the next one starts with a system prompt change.
    Step::Prompt,
    Step::Mark,
    Step::Prompt,
    Step::ReturnToMark,
    Step::Prompt,
    Step::Compact,
    Step::Prompt,
];

/// Keep this much recent context word for word when compacting: small, because the demo's
/// session is tiny and would otherwise have nothing to summarise.
pub const KEEP_RECENT_TOKENS: u64 = 100;

/// What one play produced.
#[derive(Debug)]
pub struct Play {
    /// Every request as strata-mock recorded and accounted it, in order.
    pub records: Vec<RequestRecord>,
    /// Usage of each answered turn request as the agent's adapter read it from the wire.
    pub client_usage: Vec<Usage>,
    /// The text of every `sh test.sh` tool result, in order.
    pub test_runs: Vec<String>,
    /// The session file.
    pub session_file: PathBuf,
    /// The working copy.
    pub repo: PathBuf,
}

/// Where progress lines go: printed as the session goes, or nowhere.
pub type Progress<'a> = Option<&'a mut (dyn FnMut(&str) + Send)>;

/// Plays the session on `target` with `policy` in `dir` (the working copy goes to
/// `dir/textkit`, the session to `dir/session.jsonl`).
pub async fn play(
    catalog: &Catalog,
    target: Target,
    policy: RenderPolicy,
    dir: &Path,
    mut progress: Progress<'_>,
) -> Result<Play, DemoError> {
    let repo = dir.join("textkit");
    bundle::write_repo(&repo)?;
    let scenario = bundle::scenario()?;
    let prompts: Vec<String> = scenario
        .user_prompts()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let server = start_mock(catalog, target).await?;
    server.load_scenario(scenario);

    let session_file = dir.join("session.jsonl");
    if session_file.exists() {
        std::fs::remove_file(&session_file)
            .doing(|| format!("replacing {}", session_file.display()))?;
    }
    let session = Session::create(
        &session_file,
        &repo.display().to_string(),
        WriteOptions::default(),
    )
    .doing(|| format!("creating {}", session_file.display()))?;
    let mut agent = agent(catalog, target, policy, &server, &repo, session)?;
    let mut events = agent.subscribe();
    let mut seen = Seen::default();
    let mut prompts = prompts.into_iter();
    let mut mark: Option<EntryId> = None;
    let mut say = |line: &str| {
        if let Some(progress) = progress.as_mut() {
            progress(line);
        }
    };
    for step in STEPS {
        match step {
            Step::Prompt => {
                let prompt = prompts.next().doing(|| {
                    "the demo scenario has fewer prompts than the demo sends".to_owned()
                })?;
                say(&format!("\n› {prompt}"));
                let run = agent.prompt(prompt).await;
                seen.drain(&mut events, &mut say);
                let run = run.doing(|| "running a prompt".to_owned())?;
                if run.reason != "stop" {
                    return Err(DemoError::new(format!(
                        "the agent stopped with `{}`",
                        run.reason
                    )));
                }
            }
            Step::DisableWrite => {
                agent.set_tools(ToolSet::builtins(&["read", "bash", "edit"]));
                say(
                    "  ⚙ the user turns `write` off. Where the provider allows it, strata keeps the tools array and announces the change in the conversation, so the cached prefix stays; a naive renderer cuts the tool and rewrites the prefix",
                );
            }
            Step::Compact => {
                say(
                    "  ⟳ compact (by hand, as /compact does: the session is far below the window, so the demo compacts to show a summary request that reads its input from the cache)",
                );
                let compacted = agent.compact(CompactionReason::Manual, None).await;
                seen.drain(&mut events, &mut say);
                compacted
                    .doing(|| "compacting".to_owned())?
                    .doing(|| "compaction found nothing to summarise".to_owned())?;
            }
            Step::Mark => mark = agent.session().leaf().cloned(),
            Step::ReturnToMark => {
                say(
                    "  ↶ /tree: back to before the last question, with a summary of the branch left behind",
                );
                let moved = agent.navigate(mark.as_ref(), true, None).await;
                seen.drain(&mut events, &mut say);
                moved.doing(|| "navigating the session tree".to_owned())?;
            }
        }
    }
    drop(agent);
    Ok(Play {
        records: server.requests(),
        client_usage: seen.usage,
        test_runs: seen.test_runs,
        session_file,
        repo,
    })
}

/// strata-mock with the target's cache profile taken from the capability table.
pub async fn start_mock(catalog: &Catalog, target: Target) -> Result<MockServer, DemoError> {
    let row = catalog
        .provider(target.provider)
        .doing(|| format!("the capability table has no `{}`", target.provider))?;
    let protocol = row.endpoint(target.model).protocol;
    let capabilities = row.capabilities(target.model);
    let profile = ModelProfile::from_capabilities(protocol.into(), target.model, &capabilities);
    let config = MockConfig::new().with_model(ModelRule {
        protocol: Some(protocol.into()),
        pattern: target.model.to_owned(),
        profile,
    });
    MockServer::start(config)
        .await
        .doing(|| "starting strata-mock".to_owned())
}

/// The route to `target` on the in-process mock: no key, no network, no user configuration.
pub fn route(catalog: &Catalog, target: Target, base_url: String) -> Result<ModelRoute, DemoError> {
    let what = || {
        format!(
            "routing {}/{} to strata-mock",
            target.provider, target.model
        )
    };
    ModelRoute::to_base_url(
        catalog,
        target.provider,
        target.model,
        &base_url,
        "strata-demo",
    )
    .doing(what)
}

fn agent(
    catalog: &Catalog,
    target: Target,
    policy: RenderPolicy,
    server: &MockServer,
    repo: &Path,
    session: Session,
) -> Result<Agent, DemoError> {
    let route = route(catalog, target, server.base_url())?;
    let config = AgentConfig {
        max_tokens: Some(4096),
        render_policy: policy,
        compaction: CompactionSettings {
            keep_recent_tokens: KEEP_RECENT_TOKENS,
            ..CompactionSettings::default()
        },
        ..route.agent_config(repo)
    };
    let mut agent = Agent::new(
        session,
        Arc::clone(&route.provider),
        ToolSet::default_set(),
        config,
    );
    agent
        .session_mut()
        .append_model_change(&route.model.provider, &route.model.id)
        .doing(|| "recording the model".to_owned())?;
    Ok(agent)
}

/// What the event stream showed so far.
#[derive(Debug, Default)]
struct Seen {
    usage: Vec<Usage>,
    test_runs: Vec<String>,
    /// Tool call id → the command, for bash calls.
    commands: Vec<(String, String)>,
}

impl Seen {
    /// Reads every queued event, printing what a person watching wants to see.
    fn drain(&mut self, events: &mut UnboundedReceiver<AgentEvent>, say: &mut dyn FnMut(&str)) {
        while let Ok(event) = events.try_recv() {
            match event {
                AgentEvent::Usage { usage, .. } => self.usage.push(usage),
                AgentEvent::ToolStart {
                    id,
                    name,
                    arguments,
                } => {
                    let text = |key: &str| {
                        arguments
                            .get(key)
                            .and_then(serde_json::Value::as_str)
                            .unwrap_or_default()
                            .to_owned()
                    };
                    let shown = match name.as_str() {
                        "bash" => {
                            let command = text("command");
                            self.commands.push((id, command.clone()));
                            command
                        }
                        "grep" => format!("{} {}", text("pattern"), text("path")),
                        _ => text("path"),
                    };
                    say(&format!("  ▸ {name} {shown}"));
                }
                AgentEvent::MessageEnd { message, .. } => match *message {
                    AgentMessage::ToolResult(result) => {
                        let output = strata_session::join_text(&result.content, "");
                        let is_test = self.commands.iter().any(|(id, command)| {
                            *id == result.tool_call_id && command.contains("test.sh")
                        });
                        if is_test {
                            self.test_runs.push(output.clone());
                            for line in output.lines().filter(|l| !l.trim().is_empty()) {
                                say(&format!("      {line}"));
                            }
                        }
                    }
                    AgentMessage::Assistant(reply) => {
                        let calls = reply
                            .content
                            .iter()
                            .any(|block| matches!(block, ContentBlock::ToolCall(_)));
                        let text = strata_session::join_text(&reply.content, "");
                        if !calls && !text.is_empty() {
                            say(&format!("  ◂ {text}"));
                        }
                    }
                    _ => {}
                },
                AgentEvent::CompactionEnd {
                    tokens_before,
                    error,
                    ..
                } => match error {
                    Some(error) => say(&format!("    compaction failed: {error}")),
                    None => say(&format!(
                        "    compacted: a ~{tokens_before}-token context now starts from a summary"
                    )),
                },
                AgentEvent::SystemUpdate {
                    sections,
                    tools_added,
                    tools_removed,
                    snapshot: false,
                    ..
                } => {
                    let mut changed = sections;
                    changed.extend(tools_added.iter().map(|t| format!("+{t}")));
                    changed.extend(tools_removed.iter().map(|t| format!("-{t}")));
                    say(&format!(
                        "    system patch appended to the conversation: {}",
                        changed.join(", ")
                    ));
                }
                AgentEvent::Retry { attempt, error, .. } => {
                    say(&format!("    retry {attempt}: {error}"));
                }
                _ => {}
            }
        }
    }
}
