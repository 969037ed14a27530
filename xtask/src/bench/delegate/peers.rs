//! The peers' side of the delegate workload: Claude Code's and Pi's (pi-subagents) own
//! subagents driven through the same script against the same mock, and their rows beside
//! strata's `auto`.

use super::*;

/// What the document says of how the peers are driven.
pub(super) const PEERS_DRIVEN: &str = "Each peer plays the same script against the same mock with its own \
     delegation tool, children in the foreground (both run them in the background by default, \
     which would interleave the parent's and the child's requests), from the pinned install \
     (`cargo xtask bench-peers --install`):\n\n\
     - **Claude Code 2.1.332**: its `Agent` tool (the name in its requests' tool list; `Task` \
     before 2.1), `subagent_type` `general-purpose` (`fresh`: the subagent's own system \
     prompt, the task as its first message) or `fork` (2.1.332's fork: the parent's history, \
     then a fork boilerplate and the task); `grep` as the shell command giving the same \
     answer, since it declares no grep tool. It speaks only Anthropic Messages \
     (`ANTHROPIC_BASE_URL`), so it is measured on `anthropic-5m` only: on `openai` and \
     `deepseek` it cannot be driven, and those rows are absent, not zero.\n\
     - **Pi 1.6 with pi-subagents 0.67.0**: the extension (`node_modules/pi-subagents/index.ts`, \
     loaded with `--extension`) gives the parent its `subagent` tool, called with the builtin \
     `delegate` agent (\"inherits the parent model with no default reads\"), `context` `fresh` \
     or `fork`, `async: false`; the children are sessions inside the parent's Pi process \
     (pi-subagents runs foreground children in-process), so they reach the mock through the \
     same `models.json`. Measured on all three caches (Pi speaks Anthropic Messages, OpenAI \
     Responses and Chat Completions).\n\n\
     What differs from strata's runs, as the harnesses are: each parent's own system prompt \
     and tools (the first request's size, below the table), each child's prompt, and how each \
     marks its cache. What the figures rest on:\n\n\
     - Claude Code's first system block is a billing line \
     (`x-anthropic-billing-header: cc_version=…; cc_entrypoint=sdk-cli;`) that its children \
     send with `cc_is_subagent=true;` added. A Claude Code fork's request is otherwise the \
     parent's (same tools, same other system blocks, the parent's messages), but to \
     strata-mock, which caches bytes, that line makes every child, fork included, share no \
     cached prefix with its parent: each fork writes the parent's whole history again. \
     Whether Anthropic's servers leave that line out of the cache key is not known here; if \
     they do, Claude Code's fork rows are too dear here, while its fresh rows change by no \
     more than the first child's reading the tools and first system blocks it shares with the \
     parent (less than the 5.3k tokens its later children read from a sibling).\n\
     - pi-subagents' fork sends the parent's history under the child's own system prompt (a \
     child-subagent preamble in place of Pi's) and the `delegate` agent's tool list (`grep`, \
     `find`, `ls`, `contact_supervisor` in place of the parent's `subagent` tools), and on \
     OpenAI its own `prompt_cache_key`: as the harness is, its fork shares no cached prefix \
     with the parent either, and costs more than its fresh child on every cache.\n\
     - pi-subagents' foreground children do not load the parent's extensions, so the bench's \
     clock extension does not move the mock's clock before a Pi child's requests; the whole \
     run stays under five virtual minutes, so no cache entry expires either way.\n\n";

/// How to read the goal's second half against these figures.
pub(super) const PEER_GOAL_READING: &str = "The script is the same for every harness (same calls, same \
     answers, children the same length), so what separates the costs is what each harness \
     sends around it: the parent's prompt and tools, the child's prompt, where the cache \
     breakpoints sit and whether a child reads the parent's cached prefix.";

/// Claude Code's delegation tool in 2.1.332 (the tool list of its requests; `Task` in earlier
/// versions).
pub const CLAUDE_TASK_TOOL: &str = "Agent";

/// pi-subagents' delegation tool.
pub const PI_TASK_TOOL: &str = "subagent";

/// pi-subagents' builtin agent that "inherits the parent model with no default reads": the
/// closest to a general-purpose child, as Claude Code's `general-purpose`.
pub const PI_AGENT: &str = "delegate";

/// A peer harness with its own subagents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerHarness {
    /// Claude Code 2.1.332 and its `Agent` tool.
    ClaudeCode,
    /// Pi 1.6 with pi-subagents 0.67.0 and its `subagent` tool.
    PiSubagents,
}

impl PeerHarness {
    /// Both, in table order.
    pub const ALL: [Self; 2] = [Self::ClaudeCode, Self::PiSubagents];

    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::PiSubagents => "pi + pi-subagents",
        }
    }

    /// How its children can start, by the bench's names: both have a fresh child and a fork.
    pub fn starts(self) -> [&'static str; 2] {
        ["fresh", "fork"]
    }

    /// Whether it can be measured on `cache_model`: Claude Code speaks only Anthropic
    /// Messages; Pi also OpenAI Responses and Chat Completions.
    pub fn speaks(self, cache_model: CacheModel) -> bool {
        match self {
            Self::ClaudeCode => wire(cache_model).0 == strata_mock::Protocol::Anthropic,
            Self::PiSubagents => true,
        }
    }

    /// The delegation call of `handler` as this harness's tool takes it, starting the child
    /// `start` (`fresh` or `fork`), in the foreground: both run children in the background by
    /// default, which would interleave the parent's and the child's requests.
    fn delegation(self, call: &mut ToolCallSpec, start: &str) {
        let prompt = call.args.get("prompt").cloned().unwrap_or_default();
        match self {
            Self::ClaudeCode => {
                call.tool = CLAUDE_TASK_TOOL.to_owned();
                let agent_type = if start == "fork" {
                    "fork"
                } else {
                    "general-purpose"
                };
                call.args
                    .insert("subagent_type".to_owned(), Value::String(agent_type.into()));
                call.args
                    .insert("run_in_background".to_owned(), Value::Bool(false));
            }
            Self::PiSubagents => {
                call.tool = PI_TASK_TOOL.to_owned();
                call.args = Map::from_iter([
                    ("agent".to_owned(), Value::String(PI_AGENT.to_owned())),
                    ("task".to_owned(), prompt),
                    ("context".to_owned(), Value::String(start.to_owned())),
                    ("async".to_owned(), Value::Bool(false)),
                ]);
            }
        }
    }
}

/// The script as a peer plays it: its delegation tool (see `PeerHarness::delegation`),
/// `grep` as the shell command giving the same answer (neither parent has a grep tool on), the
/// other calls as roles strata-mock resolves against its declared tools; requests for another
/// model (side requests) get the mock's fixed reply.
pub fn peer_scenario(harness: PeerHarness, shape: Shape, model: &str, start: &str) -> Scenario {
    let mut script = scenario(true, shape);
    let convert = |call: &mut ToolCallSpec| {
        if call.tool == "task" {
            harness.delegation(call, start);
        } else if call.tool == "grep" {
            let scripted = crate::bench::workload::ScriptedCall {
                tool: call.tool.clone(),
                args: call.args.clone(),
            };
            let peer = crate::bench::peers::script::peer_call(&scripted, false);
            call.tool = peer.tool;
            call.args = peer.args;
        }
    };
    for turn in &mut script.turns {
        turn.tool_calls.iter_mut().for_each(convert);
    }
    script.model = Some(model.to_owned());
    script
}

/// Where pi-subagents' extension is in the install.
pub(super) fn pi_subagents_extension(install: &crate::bench::peers::Install) -> Result<PathBuf> {
    let path = install
        .dir
        .join("node_modules")
        .join("pi-subagents")
        .join("index.ts");
    if !path.exists() {
        bail!(
            "pi-subagents is not installed in {} (run `cargo xtask bench-peers --install`)",
            install.dir.display()
        );
    }
    Ok(path)
}

/// Plays the workload with `harness`'s own subagents starting `start` on `cache_model`: the
/// install of `cargo xtask bench-peers --install` (`$STRATA_PEERS_DIR`).
pub fn run_peer(
    harness: PeerHarness,
    shape: Shape,
    cache_model: CacheModel,
    start: &str,
) -> Result<(Run, Option<String>, Split)> {
    use crate::bench::peers::{Install, Launch, Peer, PeerSession, claude, pi};
    let install = Install::locate()?;
    let (_, model_id) = cache_model.qualified_model();
    let (protocol, body_shape, api, path) = wire(cache_model);
    if !harness.speaks(cache_model) {
        bail!("{} does not speak {protocol:?}", harness.name());
    }
    let script = peer_scenario(harness, shape, model_id, start);
    let scripted_turns = script.turns.len();
    let mut profile = strata_mock::config::builtin_profile(protocol, model_id);
    profile.context_window = CONTEXT_WINDOW;
    let config = MockConfig::new()
        .with_scenario(script)
        .with_model(strata_mock::ModelRule {
            protocol: Some(protocol),
            pattern: model_id.to_owned(),
            profile,
        });
    let server = Arc::new(MockServer::start_in_thread(config).context("starting strata-mock")?);
    let endpoint = endpoint(cache_model, CONTEXT_WINDOW, Arc::new(|| {}))?;
    let (increment, min_tokens) = cache_model.granularity(&endpoint.capabilities);
    let mut rows = Rows::new(
        model_id,
        endpoint.model.prices,
        IdealCache::new(body_shape, increment, min_tokens),
    );
    rows.scripted_turns = Some(scripted_turns);
    let cwd = tempfile::tempdir().context("creating the working directory")?;
    let home = tempfile::tempdir().context("creating the harness home")?;
    seed(cwd.path())?;
    let launch = Launch {
        install: &install,
        cwd: cwd.path(),
        home: home.path(),
        base_url: server.base_url(),
        api_base_url: format!("{}{path}", server.base_url()),
        api,
        model: model_id,
        window: CONTEXT_WINDOW,
        max_tokens: 4096,
        reserve_tokens: strata_compaction::DEFAULT_RESERVE_TOKENS,
        keep_recent_tokens: strata_compaction::DEFAULT_KEEP_RECENT_TOKENS,
        seconds_between_requests: SECONDS_BETWEEN_REQUESTS,
        start_tools: &[],
        one_hour_cache: false,
    };
    let mut session: Box<dyn PeerSession> = match harness {
        PeerHarness::ClaudeCode => {
            install.check(Peer::ClaudeCode)?;
            Box::new(claude::start(&launch)?)
        }
        PeerHarness::PiSubagents => {
            install.check(Peer::Pi)?;
            Box::new(pi::start_with(
                &launch,
                &[pi_subagents_extension(&install)?],
            )?)
        }
    };
    let outcome = session.prompt(&prompt(), Instant::now() + Duration::from_secs(600));
    if let Some(dir) = std::env::var_os("STRATA_BENCH_DUMP") {
        // To see what the harness sent: every request's body and cache figures.
        for record in server.requests() {
            eprintln!(
                "  request {} {} {} turn {:?} {:?}",
                record.seq,
                record.model,
                record.status,
                record.turn,
                record
                    .cache
                    .map(|c| (c.input_tokens, c.cache_read, c.cache_write))
            );
            if let Some(body) = &record.body {
                let _ = std::fs::write(
                    Path::new(&dir).join(format!("{}-{}.json", start, record.seq)),
                    body.to_string(),
                );
            }
        }
    }
    let records = server.requests();
    let split = Split::of(
        &records,
        model_id,
        &child_of_turns(shape),
        &endpoint.model.prices,
    );
    rows.take(records)?;
    let _ = session.finish();
    if std::env::var_os("STRATA_BENCH_KEEP_PEER_HOME").is_some() {
        // To read what the peer stored (its sessions, its stderr) after the run.
        eprintln!("the peer's home is kept in {}", home.keep().display());
    }
    let outcome =
        outcome.with_context(|| format!("{} on the delegate workload", harness.name()))?;
    let failure = outcome
        .errors
        .first()
        .or(outcome.provider_error.as_ref())
        .cloned()
        .or_else(|| task_failure(cwd.path(), shape, &outcome.stop_reason, &outcome.final_text));
    let run = Run {
        // The workload never nears a compaction.
        prepared_compactions: 0,
        harness: harness.name().to_owned(),
        strategy: start.to_owned(),
        workload: shape.name().to_owned(),
        cache_model: cache_model.name().to_owned(),
        requests: rows.rows,
        tasks_completed: usize::from(failure.is_none()),
        tasks_total: 1,
        compactions: outcome.compactions,
        restarts: Vec::new(),
    };
    Ok((run, failure, split))
}

/// The sentence of the document giving each harness's first request, in input tokens.
pub(super) const FIRST_REQUEST_SIZES: &str = "The parent's first request (its system prompt, tools and \
     the user's prompt), in input tokens on the first cache above: ";

/// A peer's figures as the document shows them: measured by this run of the bench, or carried
/// from the document it replaces when the peers could not run here.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerRow {
    /// The workload.
    pub workload: String,
    /// The cache model.
    pub cache_model: String,
    /// The harness (`claude-code`, `pi + pi-subagents`).
    pub harness: String,
    /// How its children started (`fresh`, `fork`).
    pub start: String,
    /// Its cost, USD.
    pub cost: f64,
    /// The table's cells after the ratio to `auto` (output, requests, re-reads, hit rate,
    /// written, task right), as shown.
    pub cells: String,
    /// Whether its task was right.
    pub right: bool,
    /// Its bill split (only when measured here).
    pub split: Option<Split>,
    /// The parent's first request, input tokens (only when measured here).
    pub first_input: Option<u64>,
    /// Carried from the previous document, not measured by this run.
    pub carried: bool,
}

impl PeerRow {
    /// The row of a peer run measured now.
    pub fn measured(run: &Run, failure: Option<&str>, split: Split) -> Self {
        let totals = run.totals();
        let cells = format!(
            "{:.4} | {} | {} | {} | {} | {}",
            totals.bill.output,
            totals.requests,
            totals.refetches,
            crate::bench::table::percent(totals.hit_rate()),
            crate::bench::table::thousands(totals.cache_write),
            match failure {
                None => "yes".to_owned(),
                Some(why) => format!("no: {}", why.replace('|', "/")),
            },
        );
        Self {
            workload: run.workload.clone(),
            cache_model: run.cache_model.clone(),
            harness: run.harness.clone(),
            start: run.strategy.clone(),
            cost: totals.cost,
            cells,
            right: failure.is_none(),
            split: Some(split),
            first_input: run.requests.first().map(|row| row.input),
            carried: false,
        }
    }

    /// The peer rows of an earlier document's peer table (its lines
    /// `| workload | cache | harness start | cost | ratio | cells… |`).
    pub fn carried_from(document: &str) -> Vec<Self> {
        // `strata 1,657, claude-code 11,137, pi + pi-subagents 5,933.`
        let sizes: Vec<(&str, u64)> = document
            .lines()
            .find_map(|line| line.strip_prefix(FIRST_REQUEST_SIZES))
            .map(|list| {
                list.trim_end_matches('.')
                    .split(", ")
                    .filter_map(|item| {
                        let (name, tokens) = item.rsplit_once(' ')?;
                        Some((name, tokens.replace(',', "").parse().ok()?))
                    })
                    .collect()
            })
            .unwrap_or_default();
        document
            .lines()
            .filter_map(|line| {
                let cells: Vec<&str> = line
                    .trim()
                    .strip_prefix('|')?
                    .strip_suffix('|')?
                    .split('|')
                    .map(str::trim)
                    .collect();
                let [workload, cache_model, who, cost, _ratio, rest @ ..] = cells.as_slice() else {
                    return None;
                };
                let harness = PeerHarness::ALL
                    .into_iter()
                    .find(|h| who.starts_with(&format!("{} ", h.name())))?;
                let start = who[harness.name().len()..].trim();
                if rest.len() != 6 || !harness.starts().contains(&start) {
                    return None;
                }
                Some(Self {
                    workload: (*workload).to_owned(),
                    cache_model: (*cache_model).to_owned(),
                    harness: harness.name().to_owned(),
                    start: start.to_owned(),
                    cost: cost.parse().ok()?,
                    cells: rest.join(" | "),
                    right: rest[5] == "yes",
                    split: None,
                    first_input: sizes
                        .iter()
                        .find(|(name, _)| *name == harness.name())
                        .map(|(_, tokens)| *tokens),
                    carried: true,
                })
            })
            .collect()
    }
}

/// The share of a fresh-child peer's cost `auto` must stay within (the goal's second half).
pub const PEER_GOAL: f64 = 0.6;

/// Per peer run that starts its children fresh: `auto`'s cost as a share of it on the same
/// workload and cache, and whether that is within [`PEER_GOAL`].
pub fn peer_verdicts(runs: &[StrataRun], peers: &[PeerRow]) -> Vec<(bool, String)> {
    peers
        .iter()
        .filter(|peer| peer.start == "fresh")
        .filter_map(|peer| {
            let auto = cost_of(runs, &peer.workload, &peer.cache_model, Mode::Auto)?;
            let cost = peer.cost;
            let share = auto / cost;
            let met = share <= PEER_GOAL;
            Some((
                met,
                format!(
                    "{} / {}: auto ${auto:.4} is {share:.2}x {} fresh ${cost:.4} — {}{}",
                    peer.workload,
                    peer.cache_model,
                    peer.harness,
                    if met {
                        format!("within {PEER_GOAL}x")
                    } else {
                        format!(
                            "NOT within {PEER_GOAL}x (it would have to cost ${:.4} or less)",
                            cost * PEER_GOAL
                        )
                    },
                    if peer.right {
                        ""
                    } else {
                        "; the peer's task was not right"
                    }
                ),
            ))
        })
        .collect()
}

/// The peers' rows, against strata's `auto` on the same workload and cache.
pub fn peer_table(runs: &[StrataRun], peers: &[PeerRow]) -> String {
    let mut out = String::from(
        "| workload | cache | harness | cost (USD) | strata auto ÷ it | output (USD) | requests | re-reads | hit rate | written | task right |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for peer in peers {
        let auto = cost_of(runs, &peer.workload, &peer.cache_model, Mode::Auto);
        let ratio = auto.filter(|_| peer.cost > 0.0).map_or_else(
            || "–".to_owned(),
            |auto| format!("{:.2}x", auto / peer.cost),
        );
        let _ = writeln!(
            out,
            "| {} | {} | {} {} | {:.4} | {} | {} |",
            peer.workload, peer.cache_model, peer.harness, peer.start, peer.cost, ratio, peer.cells,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_earlier_documents_peer_rows_are_carried_with_their_first_request() {
        let document = format!(
            "| delegate | anthropic-5m | strata auto | 0.7293 | 1.00x | 0.0328 | 38 | 20 | 0 | 4 fresh | 74.57% | 90,276 | yes |\n\
             | delegate | anthropic-5m | claude-code fresh | 1.0768 | 0.68x | 0.0353 | 38 | 0 | 82.09% | 121,918 | yes |\n\
             | delegate-lean | openai | pi + pi-subagents fork | 0.7333 | 0.80x | 0.0305 | 30 | 0 | 77.37% | 102,912 | no: wrong |\n\
             \n{FIRST_REQUEST_SIZES}strata 1,657, claude-code 11,137, pi + pi-subagents 5,933.\n"
        );
        let rows = PeerRow::carried_from(&document);
        assert_eq!(rows.len(), 2, "strata's own row is not a peer's: {rows:?}");
        assert_eq!(rows[0].harness, "claude-code");
        assert_eq!(rows[0].start, "fresh");
        assert_eq!(rows[0].cost, 1.0768);
        assert!(rows[0].right);
        assert_eq!(rows[0].first_input, Some(11_137));
        assert_eq!(rows[0].cells, "0.0353 | 38 | 0 | 82.09% | 121,918 | yes");
        assert_eq!(
            (rows[1].workload.as_str(), rows[1].cache_model.as_str()),
            ("delegate-lean", "openai")
        );
        assert_eq!(
            (rows[1].harness.as_str(), rows[1].start.as_str()),
            ("pi + pi-subagents", "fork")
        );
        assert!(!rows[1].right);
        assert_eq!(rows[1].first_input, Some(5_933));
        assert!(rows.iter().all(|row| row.carried && row.split.is_none()));
    }
}
