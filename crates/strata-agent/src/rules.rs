//! The rules layer in the tool loop (strata-permissions): the permission gate a call passes
//! before it runs, the OS sandbox bash runs in, and the file checkpoints behind rewind.
//!
//! `run_tools` makes one call here before the batch (`ToolRules::screen`) and one after
//! (`Screened::finish`); the mode reaches the model as the `permissions` system section,
//! stored as a patch at the end of the conversation, never as a change of the tools array.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::json;
use strata_permissions::checkpoint::{BashSnap, Checkpoints, FileSnap, RestoreReport};
use strata_permissions::{CallKind, CallView, Gate, Mode, Passage};
use strata_session::{AgentMessage, EntryId, EntryKind, Role};
use strata_tools::{Access, ToolContext, ToolOutput, ToolSet};

use crate::agent::Agent;
use crate::error::AgentError;

/// The `customType` of the entry a file restore appends.
pub const FILES_RESTORED_CUSTOM_TYPE: &str = "strata.files_restored";

/// The key of a tool result's details under which the gate's judgement is kept when the rules
/// did not simply allow the call (refused, or asked): the export marks such calls. Details
/// never reach the model.
pub const PERMISSION_DETAILS_KEY: &str = "strataPermission";

/// The name of the system section that states the mode.
pub const PERMISSIONS_SECTION: &str = "permissions";

/// What the rules layer does around tool calls. The default does nothing (every call runs,
/// unsandboxed, unrecorded): strata's behaviour before the rules layer.
#[derive(Debug, Clone, Default)]
pub struct ToolRules {
    /// The permission gate (`None`: every call runs).
    pub gate: Option<Gate>,
    /// The sandbox bash runs in (`None`: unsandboxed).
    pub sandbox: Option<strata_tools::Sandbox>,
    /// Record file changes beside the session file for rewind.
    pub checkpoints: bool,
}

/// What happened to a batch before it ran.
pub(crate) struct Screened {
    /// Per call: the refusal the model reads, or `None` when the call runs.
    refused: Vec<Option<ToolOutput>>,
    /// Per call: what its checkpoint needs from before.
    before: Vec<Before>,
    /// Per call: the gate's judgement, where the rules did not simply allow it.
    judged: Vec<Option<serde_json::Value>>,
    store: Option<Checkpoints>,
}

enum Before {
    Nothing,
    Files(FileSnap),
    Bash(BashSnap),
}

/// How the rules see one call: its kind from what the tool says it touches.
fn view<'a>(tools: &ToolSet, call: &'a strata_tools::ToolCall, ctx: &ToolContext) -> CallView<'a> {
    let Some(tool) = tools.get(&call.name) else {
        return CallView::new(&call.name, CallKind::Other);
    };
    match tool.access(&call.arguments, ctx) {
        Access::Read(paths) => CallView::files(&call.name, CallKind::Read, paths),
        Access::Write(paths) => CallView::files(&call.name, CallKind::Edit, paths),
        Access::Shell => CallView {
            command: call.arguments.get("command").and_then(|c| c.as_str()),
            ..CallView::new(&call.name, CallKind::Command)
        },
        Access::Delegate => CallView {
            // Claude Code's models name the agent `subagent_type`.
            agent: ["agent", "subagent_type"]
                .iter()
                .find_map(|key| call.arguments.get(*key).and_then(|a| a.as_str())),
            ..CallView::new(&call.name, CallKind::Delegate)
        },
        Access::None | Access::Exclusive => CallView {
            url: call.arguments.get("url").and_then(|u| u.as_str()),
            ..CallView::new(&call.name, CallKind::Other)
        },
    }
}

impl ToolRules {
    /// Sets the sandbox on `ctx`, passes every call through the gate (asking where the mode
    /// says so; an abort refuses what waits for an answer) and snapshots what the calls that
    /// run are about to change.
    pub(crate) async fn screen(
        &self,
        tools: &ToolSet,
        calls: &[strata_tools::ToolCall],
        ctx: &mut ToolContext,
        session_file: &Path,
    ) -> Screened {
        ctx.sandbox = self.sandbox.clone();
        let store = self.checkpoints.then(|| Checkpoints::beside(session_file));
        let mut refused = Vec::with_capacity(calls.len());
        let mut before = Vec::with_capacity(calls.len());
        let mut judged = Vec::with_capacity(calls.len());
        for call in calls {
            let view = view(tools, call, ctx);
            // A call of a tool that does not exist fails on its own; nothing to judge.
            let (passage, record) = match (&self.gate, tools.get(&call.name)) {
                (Some(gate), Some(_)) => tokio::select! {
                    biased;
                    () = ctx.cancel.cancelled() => (Passage::Refused(
                        strata_tools::ABORTED_MESSAGE.to_owned()), None),
                    judged = gate.judge(&call.id, &view) => {
                        let record = judged.record();
                        (judged.passage, record)
                    }
                },
                _ => (Passage::Run, None),
            };
            if let Passage::Refused(text) = passage {
                let mut output = ToolOutput::error(text);
                note(&mut output, record);
                refused.push(Some(output));
                before.push(Before::Nothing);
                judged.push(None);
                continue;
            }
            judged.push(record);
            refused.push(None);
            let snap = match (&store, view.kind) {
                (Some(store), CallKind::Edit) => store.before_files(&view.paths).map(Before::Files),
                (Some(store), CallKind::Command) => store.before_bash(&ctx.cwd).map(Before::Bash),
                _ => Ok(Before::Nothing),
            };
            before.push(snap.unwrap_or_else(|error| {
                tracing::warn!("no checkpoint for {}: {error}", call.id);
                Before::Nothing
            }));
        }
        Screened {
            refused,
            before,
            judged,
            store,
        }
    }
}

impl ToolRules {
    /// Offers to run once outside the sandbox each command that failed inside it (where a
    /// user can be asked): an allowed rerun's result replaces the sandboxed one, marked so.
    pub(crate) async fn retry_outside_sandbox(
        &self,
        tools: &ToolSet,
        calls: &[strata_tools::ToolCall],
        ctx: &ToolContext,
        mut outputs: Vec<ToolOutput>,
    ) -> Vec<ToolOutput> {
        let (Some(gate), Some(_)) = (&self.gate, &ctx.sandbox) else {
            return outputs;
        };
        if !gate.can_ask() {
            return outputs;
        }
        for (call, output) in calls.iter().zip(outputs.iter_mut()) {
            let refused = output.is_error
                && output.content.iter().any(|block| {
                    block
                        .as_text()
                        .is_some_and(|t| t.contains(strata_tools::SANDBOX_NOTE))
                });
            if !refused {
                continue;
            }
            let view = view(tools, call, ctx);
            if view.kind != CallKind::Command || !gate.ask_outside_sandbox(&call.id, &view).await {
                continue;
            }
            let mut open = ctx.clone();
            open.sandbox = None;
            let Some(mut rerun) = tools.run_batch(vec![call.clone()], &open).await.pop() else {
                continue;
            };
            rerun.content.push(strata_tools::ToolContent::text(
                "\n\n[The OS sandbox refused this command; the user allowed it to run once \
                 outside the sandbox, and this is that run's result.]",
            ));
            *output = rerun;
        }
        outputs
    }
}

impl Screened {
    /// The calls that run, with their positions in the batch.
    pub(crate) fn to_run(
        &self,
        calls: Vec<strata_tools::ToolCall>,
    ) -> (Vec<strata_tools::ToolCall>, Vec<usize>) {
        calls
            .into_iter()
            .enumerate()
            .filter(|(i, _)| self.refused.get(*i).is_some_and(Option::is_none))
            .map(|(i, call)| (call, i))
            .unzip()
    }

    /// Every call's output in batch order (refusals where they were refused), after recording
    /// what the calls that ran changed.
    pub(crate) fn finish(
        self,
        calls: &[strata_tools::ToolCall],
        ran: Vec<ToolOutput>,
    ) -> Vec<ToolOutput> {
        let mut ran = ran.into_iter();
        let mut outputs = Vec::with_capacity(self.refused.len());
        let steps = self.refused.into_iter().zip(self.before).zip(self.judged);
        for (((refusal, before), judged), call) in steps.zip(calls) {
            if let Some(refusal) = refusal {
                outputs.push(refusal);
                continue;
            }
            if let Some(store) = &self.store {
                let recorded = match &before {
                    Before::Nothing => Ok(Vec::new()),
                    Before::Files(snap) => store.after_files(&call.id, snap),
                    Before::Bash(snap) => store.after_bash(&call.id, snap),
                };
                if let Err(error) = recorded {
                    tracing::warn!("cannot record the changes of {}: {error}", call.id);
                }
            }
            let mut output = ran
                .next()
                .unwrap_or_else(|| ToolOutput::error("the tool returned no result"));
            note(&mut output, judged);
            outputs.push(output);
        }
        outputs
    }
}

/// Keeps the gate's judgement in the result's details (beside what the tool put there).
fn note(output: &mut ToolOutput, record: Option<serde_json::Value>) {
    let Some(record) = record else { return };
    match &mut output.details {
        serde_json::Value::Null => {
            output.details = json!({ PERMISSION_DETAILS_KEY: record });
        }
        serde_json::Value::Object(map) => {
            map.insert(PERMISSION_DETAILS_KEY.to_owned(), record);
        }
        // A tool's own details of another shape stay as they are.
        _ => {}
    }
}

/// The text of the `permissions` section for `mode`: `None` in auto unless an earlier mode was
/// stated (then auto is stated too, so the model does not keep following the old one).
pub(crate) fn mode_section(mode: Mode, stated_before: bool) -> Option<String> {
    match mode.instructions() {
        Some(text) => Some(text.to_owned()),
        None if stated_before => Some(
            "Permission mode: auto. Tool calls run without asking, except where the user's \
             rules deny them or ask first."
                .to_owned(),
        ),
        None => None,
    }
}

impl Agent {
    /// The rules layer around tool calls.
    pub fn tool_rules(&self) -> &ToolRules {
        &self.rules
    }

    /// Sets the rules layer (the gate, the sandbox, checkpoints).
    pub fn set_tool_rules(&mut self, rules: ToolRules) {
        self.rules = rules;
    }

    /// Switches the permission mode; the model reads it at the end of the next request (the
    /// `permissions` section, stored as a patch). Without a gate nothing changes.
    pub fn set_permission_mode(&mut self, mode: Mode) -> bool {
        match &self.rules.gate {
            Some(gate) => {
                gate.set_mode(mode);
                true
            }
            None => false,
        }
    }

    /// What [`Agent::rewind_files`] would do for `target` (`None`: the leaf), nothing written
    /// or recorded: the front ends offer the restore after a move when it lists a file.
    pub fn preview_rewind(&self, target: Option<&EntryId>) -> Result<RestoreReport, AgentError> {
        let session = self.session();
        let on_path = tool_calls_to(session, target.or(session.leaf()));
        Checkpoints::beside(session.path())
            .preview(&on_path)
            .map_err(|e| AgentError::Rules(format!("reading the file checkpoints: {e}")))
    }

    /// Puts the files strata changed back as they were at `target` (`None`: the leaf), from
    /// the checkpoints beside the session file, and records the restore as a `custom` entry
    /// (`strata.files_restored`). Changes that cannot be undone are listed in the report.
    pub fn rewind_files(&mut self, target: Option<&EntryId>) -> Result<RestoreReport, AgentError> {
        let session = self.session();
        let target = target.or(session.leaf()).cloned();
        let on_path = tool_calls_to(session, target.as_ref());
        let store = Checkpoints::beside(session.path());
        let report = store
            .restore(&on_path)
            .map_err(|e| AgentError::Rules(format!("restoring files: {e}")))?;
        let paths = |list: &[PathBuf]| -> Vec<String> {
            list.iter().map(|p| p.display().to_string()).collect()
        };
        self.session_mut().append_custom(
            FILES_RESTORED_CUSTOM_TYPE,
            Some(json!({
                "target": target.as_ref().map(EntryId::as_str),
                "restored": paths(&report.restored),
                "removed": paths(&report.removed),
                "notRestorable": report.not_restorable,
            })),
        )?;
        Ok(report)
    }
}

/// The ids of the tool calls whose results lie on the path from the root to `target` (`None`:
/// before the first entry, so none): the calls whose file changes hold at that point.
pub fn tool_calls_to(
    session: &strata_session::Session,
    target: Option<&EntryId>,
) -> HashSet<String> {
    let mut calls = HashSet::new();
    let Some(target) = target else {
        return calls;
    };
    for entry in session.tree().walk_to_root(target.as_str()) {
        if entry.kind() != EntryKind::Message(Role::ToolResult) {
            continue;
        }
        if let Ok(strata_session::Entry::Message(message)) = entry.entry()
            && let AgentMessage::ToolResult(result) = message.message.get()
        {
            calls.insert(result.tool_call_id.clone());
        }
    }
    calls
}
