//! Reading what hooks answered — exit code, stderr, JSON on stdout — into one outcome per
//! event, as Claude Code documents it.

use std::path::PathBuf;

use serde_json::Value;

use crate::event::HookEvent;

/// How a hook process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStatus {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signalled,
    /// It ran past its timeout and its process group was killed.
    TimedOut,
    /// It could not be started.
    FailedToStart(String),
}

/// One hook's run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    /// The command.
    pub command: String,
    /// The file it came from.
    pub file: PathBuf,
    /// How it ended.
    pub status: RunStatus,
    /// Its stdout (lossy UTF-8, capped at [`crate::MAX_OUTPUT_BYTES`]).
    pub stdout: String,
    /// Its stderr (lossy UTF-8, capped).
    pub stderr: String,
    /// Whether stdout or stderr was cut at the cap.
    pub truncated: bool,
}

/// What a `PreToolUse` hook decided about a call (the strongest answer wins: deny, then ask,
/// then allow).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum PreToolDecision {
    /// No hook decided.
    #[default]
    None,
    /// Run it.
    Allow,
    /// Ask the user (strata's hooks cannot ask: the call is refused with the reason).
    Ask,
    /// Do not run it; the reason goes to the model as the call's result.
    Deny,
}

/// What the hooks of one event said, folded.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outcome {
    /// `PreToolUse`: the decision.
    pub decision: PreToolDecision,
    /// Blocked: for `PreToolUse` the call is denied (or asked), for `PostToolUse` the reason
    /// goes to the model, for `UserPromptSubmit` the prompt is not sent (the reason is shown
    /// to the user only), for `Stop` the model goes on with the reason.
    pub blocked: bool,
    /// Why (the blocking hooks' reasons or stderr, joined by newlines).
    pub reason: Option<String>,
    /// `PreToolUse`: the input the tool runs with instead (merged with strata's names: see
    /// [`crate::ToolNames::apply_update`]).
    pub updated_input: Option<Value>,
    /// Text for the model, added at the end of the conversation.
    pub additional_context: Vec<String>,
    /// Who said each of [`Outcome::additional_context`], in the same order: the hook's
    /// command, or `extension NAME` (what its cache writes are attributed to).
    pub context_sources: Vec<String>,
    /// `continue: false`: the run stops after this step, with this reason for the user.
    pub stop_run: Option<String>,
    /// Messages for the user only (`systemMessage`, failed hooks, timeouts).
    pub user_messages: Vec<String>,
    /// Every hook's run.
    pub runs: Vec<HookRun>,
}

impl Outcome {
    /// Folds the runs of `event`'s hooks (in config order).
    pub fn fold(event: HookEvent, runs: Vec<HookRun>) -> Self {
        let mut outcome = Outcome::default();
        let mut reasons: Vec<String> = Vec::new();
        let mut deny_reasons: Vec<String> = Vec::new();
        for run in &runs {
            let name = || format!("hook `{}` ({})", run.command, run.file.display());
            match &run.status {
                RunStatus::Exited(0) => {
                    outcome.read_stdout(event, run, &mut reasons, &mut deny_reasons)
                }
                RunStatus::Exited(2) => {
                    let text = run.stderr.trim().to_owned();
                    let reason = if text.is_empty() {
                        format!("blocked by {}", name())
                    } else {
                        text
                    };
                    match event {
                        HookEvent::PreToolUse => {
                            outcome.decision = PreToolDecision::Deny;
                            deny_reasons.push(reason);
                        }
                        HookEvent::SessionStart => outcome.user_messages.push(reason),
                        HookEvent::PostToolUse | HookEvent::UserPromptSubmit | HookEvent::Stop => {
                            outcome.blocked = true;
                            reasons.push(reason);
                        }
                    }
                }
                RunStatus::Exited(code) => outcome.user_messages.push(format!(
                    "{} failed with exit code {code}{}",
                    name(),
                    tail(&run.stderr)
                )),
                RunStatus::Signalled => outcome
                    .user_messages
                    .push(format!("{} was killed by a signal", name())),
                RunStatus::TimedOut => outcome
                    .user_messages
                    .push(format!("{} timed out and was killed", name())),
                RunStatus::FailedToStart(why) => outcome
                    .user_messages
                    .push(format!("{} could not start: {why}", name())),
            }
            if run.truncated {
                outcome.user_messages.push(format!(
                    "{}: output over {} bytes was cut",
                    name(),
                    crate::MAX_OUTPUT_BYTES
                ));
            }
        }
        if event == HookEvent::PreToolUse {
            if outcome.decision >= PreToolDecision::Ask {
                outcome.blocked = true;
                if !deny_reasons.is_empty() {
                    reasons = deny_reasons;
                }
            }
            if outcome.blocked {
                outcome.updated_input = None;
            }
        }
        if !reasons.is_empty() {
            outcome.reason = Some(reasons.join("\n"));
        }
        outcome.runs = runs;
        outcome
    }

    /// A hook that exited 0: JSON on stdout is an answer; plain text is context for the
    /// prompt and session events and ignored otherwise (as in Claude Code).
    fn read_stdout(
        &mut self,
        event: HookEvent,
        run: &HookRun,
        reasons: &mut Vec<String>,
        deny_reasons: &mut Vec<String>,
    ) {
        let text = run.stdout.trim();
        let json = text
            .starts_with('{')
            .then(|| serde_json::from_str::<Value>(text).ok())
            .flatten();
        let Some(answer) = json else {
            if !text.is_empty()
                && matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
            {
                self.additional_context.push(text.to_owned());
                self.context_sources.push(run.command.clone());
            }
            return;
        };
        let string = |value: &Value, key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .filter(|s| !s.is_empty())
        };
        if answer.get("continue").and_then(Value::as_bool) == Some(false) {
            self.stop_run = Some(
                string(&answer, "stopReason").unwrap_or_else(|| "stopped by a hook".to_owned()),
            );
        }
        if let Some(message) = string(&answer, "systemMessage") {
            self.user_messages.push(message);
        }
        let reason = string(&answer, "reason");
        match answer.get("decision").and_then(Value::as_str) {
            Some("block") => match event {
                HookEvent::PreToolUse => {
                    self.raise(PreToolDecision::Deny);
                    deny_reasons.extend(reason.clone());
                }
                HookEvent::SessionStart => {}
                _ => {
                    self.blocked = true;
                    reasons.push(reason.clone().unwrap_or_else(|| "blocked by a hook".into()));
                }
            },
            Some("approve") if event == HookEvent::PreToolUse => self.raise(PreToolDecision::Allow),
            _ => {}
        }
        let Some(specific) = answer.get("hookSpecificOutput").filter(|s| {
            // An answer meant for another event is not this one's.
            s.get("hookEventName")
                .and_then(Value::as_str)
                .is_none_or(|name| name == event.name())
        }) else {
            return;
        };
        if let Some(context) = string(specific, "additionalContext") {
            self.additional_context.push(context);
            self.context_sources.push(run.command.clone());
        }
        if event == HookEvent::PreToolUse {
            let why = string(specific, "permissionDecisionReason");
            match specific.get("permissionDecision").and_then(Value::as_str) {
                Some("deny") => {
                    self.raise(PreToolDecision::Deny);
                    deny_reasons.push(why.unwrap_or_else(|| "denied by a hook".into()));
                }
                Some("ask") => {
                    self.raise(PreToolDecision::Ask);
                    deny_reasons.push(why.unwrap_or_else(|| {
                        "a hook asked for the user's approval, and strata's hooks cannot ask".into()
                    }));
                }
                Some("allow") => self.raise(PreToolDecision::Allow),
                _ => {}
            }
            if let Some(updated) = specific.get("updatedInput").filter(|v| v.is_object()) {
                self.updated_input = Some(updated.clone());
            }
        }
    }

    fn raise(&mut self, decision: PreToolDecision) {
        self.decision = self.decision.max(decision);
    }
}

/// The last line of stderr, for a failure notice.
fn tail(stderr: &str) -> String {
    stderr
        .trim()
        .lines()
        .last()
        .map(|line| format!(": {line}"))
        .unwrap_or_default()
}
