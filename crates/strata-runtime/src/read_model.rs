//! The one read model: every [`Query`] answered from the session the agent holds (its tree in
//! memory, the context the agent built), so the TUI, rpc and any other front end see the same
//! transcript, tree, stats and state; [`entries`] reads them as Pi's session commands do.

pub mod entries;

/// A session's context as `strata context` prints it: built at a leaf (for printing, Pi's
/// messages kept as their lines' JSON), as text or Pi's JSON.
pub mod context {
    pub use strata_context::{Context, build, build_for_print, to_text, write_pi_json};
}

use std::collections::BTreeMap;

use strata_agent::Agent;
use strata_session::{
    AgentMessage, ContentBlock, Delegated, Entry, EntryId, EntryKind, Role, Session,
};

use crate::error::RuntimeError;
use crate::query::{
    Answer, ChapterSize, ContextReport, Query, RoleCounts, RowKind, SessionStats, ToolCallItem,
    TranscriptItem, TreeRow,
};

/// Answers `query` from `agent` (`status`: the runtime's state, for [`Query::State`]).
/// [`Query::State`] and [`Query::Stats`] count inline: the runtime settles a first pass under
/// way first.
pub(crate) fn answer(
    agent: &mut Agent,
    query: Query,
    counting: &mut Counting,
    status: impl FnOnce(&mut Agent, &mut Counting) -> crate::Status,
) -> Answer {
    let result = match query {
        Query::State => Ok(Answer::State(Box::new(status(agent, counting)))),
        Query::Messages => agent
            .context()
            .map(|context| Answer::Messages {
                messages: context
                    .messages
                    .iter()
                    .map(|m| m.message.to_json())
                    .collect(),
            })
            .map_err(RuntimeError::from),
        Query::Transcript {
            after,
            last,
            before,
        } => {
            let window = transcript_window(
                agent.session(),
                after.as_ref(),
                before.as_ref(),
                last.unwrap_or(usize::MAX),
            );
            Ok(Answer::Transcript {
                items: window.items,
                earlier: window.earlier,
                first: window.first,
            })
        }
        Query::Tree => Ok(Answer::Tree {
            rows: tree_rows(agent.session()),
        }),
        Query::ForkPoints => Ok(Answer::ForkPoints {
            rows: fork_points(agent.session()),
        }),
        Query::ForkPoint { entry } => {
            return fork_point(agent.session(), &entry).map_or_else(
                |error| Answer::Failed { error },
                |(parent, text)| Answer::ForkPoint { parent, text },
            );
        }
        Query::Entries { since } => {
            return entries::entries(agent.session(), since.as_ref())
                .unwrap_or_else(|error| Answer::Failed { error });
        }
        Query::EntryTree => Ok(entries::entry_tree(agent.session())),
        Query::UserMessages => Ok(Answer::UserMessages {
            messages: entries::user_messages(agent.session()),
        }),
        Query::Compaction { entry } => {
            return entries::compaction(agent.session(), entry.as_ref())
                .unwrap_or_else(|error| Answer::Failed { error });
        }
        Query::Attributions => Ok(Answer::Attributions {
            attributed: attributions(agent.session().tree()),
        }),
        Query::Stats => Ok(Answer::Stats(Box::new(
            counting.counter().count(agent.session()),
        ))),
        Query::NextRequest => {
            next_request(agent).map(|report| Answer::NextRequest(Box::new(report)))
        }
        Query::RewindPreview { target } => agent
            .preview_rewind(target.as_ref())
            .map(Answer::RewindPreview)
            .map_err(RuntimeError::from),
    };
    result.unwrap_or_else(|error| Answer::Failed {
        error: error.to_string(),
    })
}

/// The branch at the session's leaf as transcript items, from the entry after `after` on
/// (all of it when `after` is `None` or not on the branch).
pub fn transcript(session: &Session, after: Option<&EntryId>) -> Vec<TranscriptItem> {
    transcript_window(session, after, None, usize::MAX).items
}

/// A part of the branch as transcript items: [`Query::Transcript`]'s answer.
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptWindow {
    /// The items, oldest first.
    pub items: Vec<TranscriptItem>,
    /// Entries of the branch before the window (after `after`).
    pub earlier: usize,
    /// The window's first entry.
    pub first: Option<EntryId>,
}

/// The branch's entries after `after` and before `before`, at most the `last` of them, as
/// transcript items. Only the window's lines are read, so the end of a 100k-entry session
/// costs what its last screens cost. A window never starts on a tool result: it takes the
/// call the result belongs to with it.
pub fn transcript_window(
    session: &Session,
    after: Option<&EntryId>,
    before: Option<&EntryId>,
    last: usize,
) -> TranscriptWindow {
    let tree = session.tree();
    let Some(leaf) = session.leaf() else {
        return TranscriptWindow {
            items: Vec::new(),
            earlier: 0,
            first: None,
        };
    };
    let branch = tree.branch(leaf.as_str());
    let start = after
        .and_then(|after| branch.iter().position(|e| e.id() == after))
        .map_or(0, |at| at + 1);
    let end = before
        .and_then(|before| branch.iter().position(|e| e.id() == before))
        .map_or(branch.len(), |at| at.max(start));
    let mut from = end.saturating_sub(last).max(start);
    // Results belong under their call: step back to the assistant message that made it.
    while from > start && from < end && branch[from].kind() == EntryKind::Message(Role::ToolResult)
    {
        from -= 1;
    }
    let mut items = Vec::new();
    for entry in &branch[from..end] {
        let Ok(entry) = entry.entry() else {
            continue;
        };
        match entry {
            Entry::Message(message) => push_message(&mut items, message.message.into_message()),
            Entry::Compaction(compaction) => items.push(TranscriptItem::Compaction {
                tokens_before: compaction.tokens_before,
            }),
            Entry::BranchSummary(summary) => items.push(TranscriptItem::BranchSummary {
                summary: summary.summary,
            }),
            // The model a session starts with is the footer's; only later switches are news.
            Entry::ModelChange(change) if !items.is_empty() || from > 0 => {
                items.push(TranscriptItem::ModelChange {
                    provider: change.provider,
                    model: change.model_id,
                });
            }
            _ => {}
        }
    }
    TranscriptWindow {
        items,
        earlier: from - start,
        first: (from < end).then(|| branch[from].id().clone()),
    }
}

fn push_message(items: &mut Vec<TranscriptItem>, message: AgentMessage) {
    match message {
        AgentMessage::User(user) => items.push(TranscriptItem::User {
            text: user.content.text_joined("\n"),
        }),
        AgentMessage::Assistant(assistant) => {
            for block in assistant.content {
                match block {
                    ContentBlock::Text(text) if !text.text.trim().is_empty() => {
                        items.push(TranscriptItem::Assistant { text: text.text });
                    }
                    ContentBlock::Thinking(thinking) if !thinking.thinking.is_empty() => {
                        items.push(TranscriptItem::Thinking {
                            text: thinking.thinking,
                        });
                    }
                    ContentBlock::ToolCall(call) => {
                        items.push(TranscriptItem::Tool(ToolCallItem {
                            id: call.id,
                            name: call.name,
                            arguments: call.arguments.to_string(),
                            output: String::new(),
                            diff: None,
                            failed: None,
                        }));
                    }
                    _ => {}
                }
            }
            if let Some(error) = assistant.error_message {
                items.push(TranscriptItem::Error { text: error });
            }
        }
        AgentMessage::ToolResult(result) => {
            let found = items.iter_mut().rev().find_map(|item| match item {
                TranscriptItem::Tool(tool) if tool.id == result.tool_call_id => Some(tool),
                _ => None,
            });
            if let Some(tool) = found {
                tool.output = tool_result_text(&result.content);
                tool.diff = result_diff(result.details.as_ref());
                tool.failed = Some(result.is_error);
            }
        }
        AgentMessage::BashExecution(bash) => items.push(TranscriptItem::Bash {
            command: bash.command,
            output: bash.output,
            exit_code: bash.exit_code.flatten(),
            cancelled: bash.cancelled,
            excluded: bash.exclude_from_context == Some(true),
        }),
        AgentMessage::BranchSummary(summary) => items.push(TranscriptItem::BranchSummary {
            summary: summary.summary,
        }),
        _ => {}
    }
}

/// The diff a tool result's details carry (edit and write tools), when not blank.
pub fn result_diff(details: Option<&serde_json::Value>) -> Option<String> {
    details
        .and_then(|details| details.get("diff"))
        .and_then(serde_json::Value::as_str)
        .filter(|diff| !diff.trim().is_empty())
        .map(str::to_owned)
}

/// The text of a tool result's blocks (images named, not shown).
pub fn tool_result_text(content: &[ContentBlock]) -> String {
    let mut parts = Vec::new();
    for block in content {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::Image(image) => parts.push(format!("[image {}]", image.mime_type)),
            _ => {}
        }
    }
    parts.join("\n")
}

/// The tree depth first: the entries a picker shows, indented only where the tree forks,
/// and under each entry the child sessions it spawned (as `strata tree` lists them).
pub fn tree_rows(session: &Session) -> Vec<TreeRow> {
    let tree = session.tree();
    let leaf = session.leaf();
    let mut rows = Vec::new();
    let mut stack: Vec<(EntryId, usize)> = Vec::new();
    let push_children = |stack: &mut Vec<(EntryId, usize)>, children: &[&EntryId], depth| {
        if let [only] = children {
            stack.push(((*only).clone(), depth));
            return;
        }
        for child in children.iter().rev() {
            stack.push(((*child).clone(), depth + 1));
        }
    };
    push_children(&mut stack, &tree.roots(), 0);
    let delegated: BTreeMap<String, Vec<Delegated>> =
        strata_session::delegated_by_entry(session.path());
    // The path to the leaf is marked so the current branch stands out.
    let on_path: Vec<EntryId> = leaf
        .map(|leaf| {
            tree.path_to_root(leaf.as_str())
                .into_iter()
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    // The leaf may be a label or leaf-move entry: its nearest shown ancestor is marked.
    let shown_leaf: Option<EntryId> = leaf.and_then(|leaf| {
        tree.walk_to_root(leaf.as_str())
            .find(|e| e.entry().ok().and_then(|e| describe(&e)).is_some())
            .map(|e| e.id().clone())
    });
    while let Some((id, depth)) = stack.pop() {
        let children = tree.children(&id);
        if let Ok(entry) = tree.entry(&id)
            && let Some(row) = describe(&entry)
        {
            rows.push(TreeRow {
                parent: tree.parent_of(&id).cloned(),
                depth,
                row,
                label: tree.label_of(&id).map(str::to_owned),
                on_path: on_path.contains(&id),
                leaf: shown_leaf.as_ref() == Some(&id),
                id: id.clone(),
            });
        }
        for child in delegated.get(id.as_str()).into_iter().flatten() {
            rows.push(TreeRow {
                id: id.clone(),
                parent: Some(id.clone()),
                depth,
                row: RowKind::Child {
                    path: child.path().to_path_buf(),
                    title: child.title(),
                    messages: child.summary.message_count,
                },
                label: None,
                on_path: false,
                leaf: false,
            });
        }
        push_children(&mut stack, &children, depth);
    }
    rows
}

/// The user messages on the path to the leaf, newest first.
pub fn fork_points(session: &Session) -> Vec<TreeRow> {
    let tree = session.tree();
    let Some(leaf) = session.leaf() else {
        return Vec::new();
    };
    tree.walk_to_root(leaf.as_str())
        .filter(|entry| entry.kind() == EntryKind::Message(Role::User))
        .filter_map(|entry| {
            let row = describe(&entry.entry().ok()?)?;
            Some(TreeRow {
                id: entry.id().clone(),
                parent: entry.parent_id().cloned(),
                depth: 0,
                row,
                label: None,
                on_path: true,
                leaf: false,
            })
        })
        .collect()
}

/// Where a fork before the user message `entry` starts (its parent) and the message's text
/// (Pi's errors for an unknown entry and for one that is no user message).
pub fn fork_point(session: &Session, entry: &EntryId) -> Result<(Option<EntryId>, String), String> {
    let tree = session.tree();
    let found = tree
        .entry(entry)
        .map_err(|_| "Invalid entry ID for forking".to_owned())?;
    let Entry::Message(message) = found else {
        return Err(format!(
            "Invalid entry ID for forking: {entry} is not a user message"
        ));
    };
    let AgentMessage::User(user) = &*message.message else {
        return Err(format!(
            "Invalid entry ID for forking: {entry} is not a user message"
        ));
    };
    Ok((tree.parent_of(entry).cloned(), user.content.text_joined("")))
}

/// What a tree row shows of an entry (`None`: not shown).
fn describe(entry: &Entry) -> Option<RowKind> {
    match entry {
        Entry::Message(message) => match &*message.message {
            AgentMessage::User(user) => Some(RowKind::User {
                text: user.content.text_joined("\n"),
            }),
            AgentMessage::Assistant(assistant) => Some(RowKind::Assistant {
                text: strata_session::join_text(&assistant.content, " "),
                tools: assistant.tool_calls().map(|c| c.name.clone()).collect(),
            }),
            AgentMessage::ToolResult(_) => None,
            AgentMessage::System(system) => {
                let mut changes: Vec<String> = system
                    .section_changes()
                    .map(|(name, text)| match text {
                        Some(_) => name.to_owned(),
                        None => format!("-{name}"),
                    })
                    .collect();
                changes.extend(system.tools_added().iter().map(|t| format!("+{}", t.name)));
                changes.extend(system.tools_removed().map(|name| format!("-{name}")));
                Some(RowKind::System { changes })
            }
            other => Some(RowKind::Message {
                role: other.role().to_owned(),
            }),
        },
        Entry::Compaction(compaction) => Some(RowKind::Compaction {
            tokens_before: compaction.tokens_before,
        }),
        Entry::BranchSummary(summary) => Some(RowKind::BranchSummary {
            summary: summary.summary.clone(),
        }),
        Entry::ModelChange(change) => Some(RowKind::ModelChange {
            provider: change.provider.clone(),
            model: change.model_id.clone(),
        }),
        _ => None,
    }
}

/// Every request the file records (all branches: all were paid), keep-warm pings and
/// summaries included; the last answer's figures; what the children cost; messages by role.
pub fn stats(session: &Session) -> SessionStats {
    StatsCounter::default().count(session)
}

/// How far behind the session's end a count may be and still be made where it is asked for;
/// a longer first pass (a resumed long session) runs on a thread of its own, so the session
/// opens at once and its totals follow. At about 3 µs an entry, 5,000 entries are 15 ms.
pub const COUNT_INLINE_ENTRIES: usize = 5_000;

/// The runtime's [`StatsCounter`], with a long first pass counted beside it: the file is
/// opened again read-only on a blocking thread and counted there, and the counter it gives
/// goes on from where that pass stopped (the file only grows, in the same order).
#[derive(Debug, Default)]
pub struct Counting {
    counter: StatsCounter,
    pass: Option<Pass>,
}

/// A first pass under way over one file.
#[derive(Debug)]
struct Pass {
    path: std::path::PathBuf,
    done: tokio::sync::oneshot::Receiver<Option<StatsCounter>>,
}

impl Counting {
    /// The session's totals as they stand, or `None` while a first pass over it runs (one is
    /// started here when the count is more than [`COUNT_INLINE_ENTRIES`] behind).
    pub fn totals(&mut self, session: &Session) -> Option<strata_accounting::Totals> {
        self.adopt();
        if let Some(pass) = &self.pass {
            if pass.path == session.path() {
                return None;
            }
            self.pass = None;
        }
        let behind = session
            .tree()
            .len()
            .saturating_sub(self.counter.counted_in(session.path()));
        if behind > COUNT_INLINE_ENTRIES && tokio::runtime::Handle::try_current().is_ok() {
            let path = session.path().to_path_buf();
            let (tx, done) = tokio::sync::oneshot::channel();
            let file = path.clone();
            tokio::task::spawn_blocking(move || {
                // A file that no longer opens is counted where it is asked for, as before.
                let counter = Session::open(&file).ok().map(|opened| {
                    let mut counter = StatsCounter::default();
                    counter.count(&opened.session);
                    counter
                });
                let _ = tx.send(counter);
            });
            self.pass = Some(Pass { path, done });
            return None;
        }
        Some(self.counter.count(session).totals)
    }

    /// Waits for a first pass under way and takes its count: the stats read next are whole.
    pub async fn settle(&mut self) {
        if let Some(pass) = self.pass.take()
            && let Ok(Some(counter)) = pass.done.await
        {
            self.counter = counter;
        }
    }

    /// Ends when a first pass under way ends (never when none is), its count taken.
    pub async fn passed(&mut self) {
        match &mut self.pass {
            Some(pass) => {
                if let Ok(Some(counter)) = (&mut pass.done).await {
                    self.counter = counter;
                }
                self.pass = None;
            }
            None => std::future::pending().await,
        }
    }

    /// The counter itself, for reads that need no pass under way.
    pub fn counter(&mut self) -> &mut StatsCounter {
        &mut self.counter
    }

    fn adopt(&mut self) {
        use tokio::sync::oneshot::error::TryRecvError;
        if let Some(pass) = &mut self.pass {
            match pass.done.try_recv() {
                Ok(Some(counter)) => {
                    self.counter = counter;
                    self.pass = None;
                }
                Ok(None) | Err(TryRecvError::Closed) => self.pass = None,
                Err(TryRecvError::Empty) => {}
            }
        }
    }
}

/// [`SessionStats`] counted over a session file's entries in order, going on from where the
/// last count stopped: a file only grows, so the runtime counts each entry once however often
/// its status and stats are asked for (a full pass over a long session at every operation
/// cost more than the operation). Another file is counted afresh.
#[derive(Debug, Default)]
pub struct StatsCounter {
    path: std::path::PathBuf,
    entries: usize,
    totals: strata_accounting::Totals,
    /// The last answer's tokens and dollars.
    last: Option<(strata_provider::Usage, f64)>,
    children_cost: f64,
    attributed: BTreeMap<String, strata_accounting::Attribution>,
    messages: RoleCounts,
}

impl StatsCounter {
    /// How many entries of the file at `path` are counted (0 for another file).
    pub fn counted_in(&self, path: &std::path::Path) -> usize {
        if self.path == path { self.entries } else { 0 }
    }

    /// The stats of `session` as it stands, counting only the entries not counted before.
    pub fn count(&mut self, session: &Session) -> SessionStats {
        let tree = session.tree();
        if self.path != session.path() || tree.len() < self.entries {
            *self = Self {
                path: session.path().to_path_buf(),
                ..Self::default()
            };
        }
        let start = self.entries;
        for record in strata_accounting::records_from(tree, start) {
            if record.kind == strata_accounting::RequestKind::Answer {
                self.last = Some((record.usage, record.cost));
            }
            self.totals.add(&record);
        }
        for entry in tree.iter().skip(start) {
            match entry.kind() {
                EntryKind::Message(Role::User) => self.messages.user += 1,
                EntryKind::Message(Role::Assistant) => self.messages.assistant += 1,
                EntryKind::Message(Role::ToolResult) => self.messages.tool_results += 1,
                EntryKind::Message(Role::BashExecution) => self.messages.bash += 1,
                _ => {}
            }
        }
        // The children's requests are in their own files; their results say what they cost.
        for decision in strata_session::delegation_results_from(tree, start) {
            self.children_cost += decision.cost;
        }
        // A background child's result only says it started; the message its end posted names
        // its file, which holds what it cost (a file that cannot be read adds nothing).
        for child in strata_session::notified_children_from(tree, start) {
            if let Ok(opened) = Session::open(&child.session) {
                let records = strata_accounting::records_from(opened.session.tree(), 0);
                // A fork's file opens with a copy of the parent's path up to the spawning
                // entry, whose requests the parent already counted.
                let spawning =
                    opened.session.header().extra[strata_session::SPAWNED_BY_FIELD]["entryId"]
                        .as_str();
                let own = spawning
                    .and_then(|id| records.iter().position(|record| record.id == id))
                    .map_or(0, |at| at + 1);
                self.children_cost += records[own..].iter().map(|r| r.cost).sum::<f64>();
            }
        }
        strata_accounting::add_attributions(&mut self.attributed, tree, start);
        self.entries = tree.len();
        SessionStats {
            totals: self.totals,
            last: self.last.map(|(usage, _)| usage),
            last_cost: self.last.map_or(0.0, |(_, cost)| cost),
            children_cost: self.children_cost,
            attributed: strata_accounting::sorted_attributions(&self.attributed),
            messages: self.messages,
            entries: tree.len(),
        }
    }
}

/// The request the agent would send next, rendered from the session as it stands with the
/// options the agent's own requests use.
pub fn next_request(agent: &mut Agent) -> Result<ContextReport, RuntimeError> {
    let capabilities = agent.config().capabilities.clone();
    let dialect = agent.dialect()?;
    let config = agent.config();
    let options = strata_context::RenderOptions {
        policy: config.render_policy,
        cache_key: Some(agent.session().header().id.clone()),
        max_tokens: config.max_tokens,
        ttl: config.capabilities.cache_ttl(config.cache.retention),
        dialect,
    };
    let settings = config
        .compaction
        .for_model(&config.model.provider, &config.model.id);
    let policy = strata_agent::policy::explain_compaction(&settings)
        .into_iter()
        .chain([strata_agent::policy::explain_system_changes(&capabilities)])
        .collect();
    let children = {
        let session = agent.session();
        delegation_lines(session.tree(), session.leaf().map(EntryId::as_str))
    };
    let context = agent.context()?;
    let thinking = context.thinking_level.parse().unwrap_or_default();
    let rendered = strata_context::render_with(context, &capabilities, &options);
    let report = rendered.report(None);
    let chapters: Vec<ChapterSize> = [
        ("tools", report.tools),
        ("system", report.system),
        ("messages", report.messages),
    ]
    .into_iter()
    .chain((report.deferred.bytes > 0).then_some(("deferred", report.deferred)))
    .map(|(name, digest)| ChapterSize {
        name: name.to_owned(),
        bytes: digest.bytes as u64,
        hash: digest.hash,
    })
    .collect();
    let request = &rendered.request;
    let breakpoints = request
        .breakpoints
        .iter()
        .map(|bp| {
            let at = match bp.position {
                strata_provider::BreakpointPosition::Tools => "after tools".to_owned(),
                strata_provider::BreakpointPosition::System => "after system".to_owned(),
                strata_provider::BreakpointPosition::Message { index } => {
                    format!("after message {}", index + 1)
                }
            };
            let ttl = serde_json::to_value(bp.ttl)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            format!("{at} ({ttl})")
        })
        .collect();
    Ok(ContextReport {
        chapters,
        policy,
        breakpoints,
        tools: request.tools.len(),
        system_blocks: request.system.len(),
        messages: request.messages.len(),
        notes: report
            .notes
            .iter()
            .filter_map(|note| serde_json::to_string(note).ok())
            .collect(),
        children,
        thinking,
    })
}

/// The children spawned on the branch to `leaf`, each with how it started and why (the
/// `auto` estimate, as its delegation result records it): empty when there were none.
/// `strata context` and the TUI's `/context` say the same.
pub fn delegation_lines(tree: &strata_session::Tree, leaf: Option<&str>) -> Vec<String> {
    let decisions = strata_session::spawn_decisions(tree, leaf);
    if decisions.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![
        String::new(),
        "children spawned on this branch (how each started, and why):".to_owned(),
    ];
    for decision in decisions {
        lines.push(format!(
            "  {} [{}, {}, ${:.4}]: {}",
            if decision.description.is_empty() {
                decision.tool_call_id.as_str()
            } else {
                decision.description.as_str()
            },
            decision.start,
            decision.outcome,
            decision.cost,
            decision.reason
        ));
    }
    lines
}

/// What each hook and extension cost in cache writes, summed over the session's entries
/// (`/extensions`, `/hooks` and their rpc queries).
pub fn attributions(tree: &strata_session::Tree) -> Vec<strata_accounting::Attribution> {
    strata_accounting::attributions(tree)
}

/// Pi 1.x's estimate of the context right after the compaction `id`: every message of the
/// context rebuilt there, estimated from its text (the kept answers' usage describes the
/// context before it). `None` when `id` is not a compaction the tree can rebuild from.
pub fn tokens_after_compaction(tree: &strata_session::Tree, id: &EntryId) -> Option<u64> {
    let context = strata_context::build(tree, Some(id)).ok()?;
    Some(
        context
            .messages
            .iter()
            .map(|m| strata_compaction::estimate_message_tokens(&m.message))
            .sum(),
    )
}
