//! Command hooks at the loop's points (strata-hooks runs them; this module turns their
//! answers into what the agent does and appends).
//!
//! Cache-safe by contract: whatever a hook gives the model is appended at the end of the
//! conversation as a marked `custom_message` (custom type [`HOOK_CUSTOM_TYPE`], a user
//! message to the provider, Pi-readable) or as a refused call's result. Hooks never touch the
//! tools or system chapters, so the request before their text stays byte-identical.

use std::sync::Arc;

use serde_json::{Value, json};
use strata_accounting::{ATTRIBUTION_FIELD, Attribution};
use strata_hooks::{HookEvent, HookInput, HookRunner, OpCall, Outcome, ToolNames};
use strata_session::{EntryId, MessageContent, ToolCall};
use strata_tools::ToolOutput;
use tokio::sync::mpsc;

use super::Agent;
use crate::error::AgentError;

/// The `customType` of the entries hooks add.
pub const HOOK_CUSTOM_TYPE: &str = "strata.hook";

/// How many times in a row `Stop` hooks may send the model back to work within one run
/// (each one sees `stop_hook_active: true`); then the run stops anyway, with a notice.
pub const MAX_STOP_CONTINUATIONS: usize = 5;

/// Something a hook said for the user only (never for the model): a `systemMessage`, a hook
/// that failed or timed out, a blocked prompt's reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookNotice {
    /// The event the hook ran for.
    pub event: &'static str,
    /// What to show.
    pub text: String,
}

/// Who said something for the user: a hook (by its event), an extension (by name), or the
/// memory slots (a claim refused because another extension owns the slot).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NoticeSource {
    /// A hook that ran for `event` (`UserPromptSubmit`, `PreToolUse`, …).
    Hook {
        /// The event.
        event: String,
    },
    /// The extension configured as `name`.
    Extension {
        /// Its name in `[extensions.NAME]`.
        name: String,
    },
    /// The memory slots: the text names the owner and the extension refused.
    MemorySlots,
}

impl std::fmt::Display for NoticeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Hook { event } => write!(f, "hook {event}"),
            Self::Extension { name } => write!(f, "extension {name}"),
            Self::MemorySlots => f.write_str("memory slots"),
        }
    }
}

/// Something for the user only, from a hook or an extension: every one is a warning (Claude
/// Code's `systemMessage` is "a warning message shown to the user"; the rest are failures).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Who said it.
    pub source: NoticeSource,
    /// What to show.
    pub text: String,
}

/// Where the problems of an agent's extensions wait for the user (a crash, a hang, garbage
/// on stdout, a flood): the host hands the run's extensions over as one.
pub trait ExtensionProblems: Send + Sync {
    /// The problems since the last call, oldest first: the extension's name and what went
    /// wrong.
    fn take_problems(&self) -> Vec<(String, String)>;
}

/// Text a hook gives the model, with who said it (a hook's command, `extension NAME`).
pub(super) type HookText = (String, String);

/// The texts of `outcome` with their sources.
fn texts_of(outcome: &Outcome) -> Vec<HookText> {
    outcome
        .context_sources
        .iter()
        .cloned()
        .zip(outcome.additional_context.iter().cloned())
        .collect()
}

/// Who a blocking reason is from: the one hook that ran, else the event's hooks together.
fn reason_source(outcome: &Outcome, event: HookEvent) -> String {
    match outcome.runs.as_slice() {
        [one] => one.command.clone(),
        _ => format!("{} hooks", event.name()),
    }
}

/// What the `PreToolUse` hooks let a call do.
pub(super) enum ToolGate {
    /// Run with these arguments (the model's, or a hook's `updatedInput` over them).
    Run(Value),
    /// Do not run; the result the model reads.
    Refuse(ToolOutput),
}

/// What the `UserPromptSubmit` hooks said.
pub(super) enum PromptGate {
    /// Send the prompt, then these texts.
    Send(Vec<HookText>),
    /// Do not send it (the reason is for the user).
    Blocked(String),
}

impl Agent {
    /// Runs command hooks (the `SessionStart`, `UserPromptSubmit`, `PreToolUse`,
    /// `PostToolUse` and `Stop` events) from now on; `None` runs none. Build the runner from
    /// a `HookSet` loaded with the project's trust (`strata_hooks::HookSet::load`).
    pub fn set_hooks(&mut self, hooks: Option<HookRunner>) {
        self.hooks = hooks;
    }

    /// What hooks said for the user since the last call (failures, timeouts,
    /// `systemMessage`s, blocked prompts), oldest first.
    pub fn take_hook_notices(&mut self) -> Vec<HookNotice> {
        std::mem::take(&mut self.hook_notices)
    }

    /// Where the agent's extensions send operations (`op`): the session runtime takes the
    /// receiver when it starts on this agent ([`Agent::take_extension_ops`]) and queues what
    /// arrives like a front end's operations; the agent never reads it.
    pub fn set_extension_ops(&mut self, ops: Option<mpsc::Receiver<OpCall>>) {
        *self
            .extension_ops
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = ops;
    }

    /// The extensions' operations, once (`None`: no extensions, or taken already).
    pub fn take_extension_ops(&mut self) -> Option<mpsc::Receiver<OpCall>> {
        self.extension_ops
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Collects the problems of the agent's extensions from `problems` ([`Agent::take_notices`]
    /// hands them out); `None` collects none.
    pub fn set_extension_problems(&mut self, problems: Option<Arc<dyn ExtensionProblems>>) {
        self.extension_problems = problems;
    }

    /// Everything for the user since the last call: what hooks said
    /// ([`Agent::take_hook_notices`]), the extensions' problems, then the refused slot claims
    /// ([`Agent::take_memory_notices`]), each oldest first.
    pub fn take_notices(&mut self) -> Vec<Notice> {
        let hooks = self.take_hook_notices().into_iter().map(|n| Notice {
            source: NoticeSource::Hook {
                event: n.event.to_owned(),
            },
            text: n.text,
        });
        let extensions = self
            .extension_problems
            .as_ref()
            .map(|p| p.take_problems())
            .unwrap_or_default()
            .into_iter()
            .map(|(name, text)| Notice {
                source: NoticeSource::Extension { name },
                text,
            });
        let memory = self.take_memory_notices().into_iter().map(|text| Notice {
            source: NoticeSource::MemorySlots,
            text,
        });
        hooks.chain(extensions).chain(memory).collect()
    }

    /// Runs the `SessionStart` hooks (`source`: `startup`, `resume`, `clear` or `compact`)
    /// and appends what they add for the model. Returns the entry written, if any.
    pub async fn session_start(&mut self, source: &str) -> Result<Option<EntryId>, AgentError> {
        let Some(input) = self.hook_input(HookEvent::SessionStart) else {
            return Ok(None);
        };
        let input = input.with("source", source).with_subject(source);
        let outcome = self.run_hooks(&input).await;
        self.append_hook_context(HookEvent::SessionStart, &texts_of(&outcome))
    }

    /// `UserPromptSubmit`: may block the prompt or add context after it.
    pub(super) async fn hooks_before_prompt(&mut self, prompt: &str) -> PromptGate {
        let Some(input) = self.hook_input(HookEvent::UserPromptSubmit) else {
            return PromptGate::Send(Vec::new());
        };
        let outcome = self.run_hooks(&input.with("prompt", prompt)).await;
        if outcome.blocked {
            let reason = outcome
                .reason
                .unwrap_or_else(|| "blocked by a hook".to_owned());
            self.notice(
                HookEvent::UserPromptSubmit,
                format!("prompt blocked: {reason}"),
            );
            return PromptGate::Blocked(reason);
        }
        PromptGate::Send(texts_of(&outcome))
    }

    /// `PreToolUse`, per call in order: run, run with a rewritten input, or refuse with the
    /// reason the model reads. Context a hook adds is kept for after the results.
    pub(super) async fn hooks_before_tools(&mut self, calls: &[ToolCall]) -> Vec<ToolGate> {
        let mut gates = Vec::with_capacity(calls.len());
        for call in calls {
            let Some(input) = self.hook_input(HookEvent::PreToolUse) else {
                gates.push(ToolGate::Run(call.arguments.clone()));
                continue;
            };
            let input = tool_input(input, call, &call.arguments);
            let outcome = self.run_hooks(&input).await;
            self.pending_hook_context.extend(texts_of(&outcome));
            if outcome.blocked {
                let reason = outcome
                    .reason
                    .unwrap_or_else(|| "denied by a PreToolUse hook".to_owned());
                gates.push(ToolGate::Refuse(
                    ToolOutput::error(reason).with_details(json!({"blockedBy": "PreToolUse"})),
                ));
                continue;
            }
            let arguments = outcome
                .updated_input
                .as_ref()
                .and_then(|updated| ToolNames::apply_update(&call.name, &call.arguments, updated))
                .unwrap_or_else(|| call.arguments.clone());
            gates.push(ToolGate::Run(arguments));
        }
        gates
    }

    /// `PostToolUse` for the calls that ran, then one marked message after the batch's
    /// results with everything hooks said to the model (their own context, `PreToolUse`'s
    /// context, a `decision: block` reason).
    pub(super) async fn hooks_after_tools(
        &mut self,
        ran: &[(&ToolCall, &Value, &ToolOutput)],
    ) -> Result<(), AgentError> {
        let mut texts = std::mem::take(&mut self.pending_hook_context);
        for (call, arguments, output) in ran {
            let Some(input) = self.hook_input(HookEvent::PostToolUse) else {
                break;
            };
            let response = json!({
                "output": output.text_content(),
                "is_error": output.is_error,
                "details": output.details,
            });
            let input = tool_input(input, call, arguments).with("tool_response", response);
            let outcome = self.run_hooks(&input).await;
            if let Some(reason) = outcome.reason.clone().filter(|_| outcome.blocked) {
                texts.push((reason_source(&outcome, HookEvent::PostToolUse), reason));
            }
            texts.extend(texts_of(&outcome));
        }
        self.append_hook_context(HookEvent::PostToolUse, &texts)?;
        Ok(())
    }

    /// `Stop`: the reason the model should go on with (appended), or `None` to stop.
    pub(super) async fn hooks_at_stop(
        &mut self,
        final_text: &str,
        continuations: usize,
    ) -> Result<bool, AgentError> {
        let Some(input) = self.hook_input(HookEvent::Stop) else {
            return Ok(false);
        };
        let input = input
            .with("stop_hook_active", continuations > 0)
            .with("last_assistant_message", final_text);
        let outcome = self.run_hooks(&input).await;
        if !outcome.blocked {
            return Ok(false);
        }
        if continuations >= MAX_STOP_CONTINUATIONS {
            self.notice(
                HookEvent::Stop,
                format!("Stop hooks asked to go on {continuations} times in a row: stopped"),
            );
            return Ok(false);
        }
        let source = reason_source(&outcome, HookEvent::Stop);
        let reason = outcome.reason.unwrap_or_default();
        Ok(self
            .append_hook_context(HookEvent::Stop, &[(source, reason)])?
            .is_some())
    }

    /// Context texts after the prompt (`UserPromptSubmit`).
    pub(super) fn append_prompt_context(&mut self, texts: &[HookText]) -> Result<(), AgentError> {
        self.append_hook_context(HookEvent::UserPromptSubmit, texts)?;
        Ok(())
    }

    /// A `continue: false` a hook answered, taken once.
    pub(super) fn take_hook_stop(&mut self) -> Option<String> {
        self.hook_stop.take()
    }

    fn hook_input(&self, event: HookEvent) -> Option<HookInput> {
        let hooks = self.hooks.as_ref()?;
        hooks.has(event).then(|| {
            HookInput::new(
                event,
                self.session.header().id.clone(),
                self.session.path().display().to_string(),
                self.config.cwd.display().to_string(),
            )
        })
    }

    async fn run_hooks(&mut self, input: &HookInput) -> Outcome {
        let Some(hooks) = self.hooks.clone() else {
            return Outcome::default();
        };
        let outcome = hooks.run(input).await;
        for message in &outcome.user_messages {
            self.notice(input.event, message.clone());
        }
        if let Some(reason) = &outcome.stop_run {
            self.hook_stop = Some(reason.clone());
        }
        outcome
    }

    fn notice(&mut self, event: HookEvent, text: String) {
        tracing::warn!(event = event.name(), "{text}");
        self.hook_notices.push(HookNotice {
            event: event.name(),
            text,
        });
    }

    /// One marked `custom_message` at the end with `texts` (nothing when there are none);
    /// its details attribute each text's cache writes to who said it.
    fn append_hook_context(
        &mut self,
        event: HookEvent,
        texts: &[HookText],
    ) -> Result<Option<EntryId>, AgentError> {
        let texts: Vec<(&str, &str)> = texts
            .iter()
            .map(|(source, text)| (source.as_str(), text.trim()))
            .filter(|(_, text)| !text.is_empty())
            .collect();
        if texts.is_empty() {
            return Ok(None);
        }
        let joined: Vec<&str> = texts.iter().map(|(_, text)| *text).collect();
        let text = format!(
            "<system-reminder>\n{} hook feedback:\n{}\n</system-reminder>",
            event.name(),
            joined.join("\n")
        );
        let write = self.cache_prices().write;
        let attributed = Attribution::merged(
            texts
                .iter()
                .map(|(source, text)| Attribution::of(*source, text, write))
                .collect(),
        );
        let id = self.session.append_custom_message(
            HOOK_CUSTOM_TYPE,
            MessageContent::Text(text),
            true,
            Some(json!({
                "event": event.name(),
                ATTRIBUTION_FIELD: Attribution::to_value(&attributed),
            })),
        )?;
        Ok(Some(id))
    }
}

/// The tool fields of a hook input, with Claude Code's names beside strata's.
fn tool_input(input: HookInput, call: &ToolCall, arguments: &Value) -> HookInput {
    input
        .with("tool_name", ToolNames::hook_name(&call.name))
        .with("tool_input", ToolNames::hook_input(&call.name, arguments))
        .with("tool_use_id", call.id.clone())
        .with_subject(call.name.clone())
        .with_subject(ToolNames::hook_name(&call.name))
}
