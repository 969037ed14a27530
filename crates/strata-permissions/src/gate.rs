//! The gate a tool call passes before it runs: the policy's decision, and for `Ask` the
//! user's answer, obtained through a channel a front end serves.

use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use crate::call::{CallKind, CallView};
use crate::mode::Mode;
use crate::policy::{Decision, List, Policy, Source, Verdict};
use crate::rule::{Bases, Rule};
use crate::settings::{Places, remember_for_project};

/// The user's answer to a [`PermissionRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Answer {
    /// Run this call.
    AllowOnce,
    /// Run it, and calls the suggested rule covers, for the rest of the session.
    AllowSession,
    /// Run it, and keep the suggested rule in `.strata/permissions.json`.
    AllowProject,
    /// Refuse it; the model reads the reason.
    Deny {
        /// Why, in the user's words.
        #[serde(default)]
        reason: Option<String>,
    },
}

/// A call put to the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionRequest {
    /// Answer with this id.
    pub id: String,
    /// The tool call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The tool and what it acts on, in one line.
    pub summary: String,
    /// Why the user is asked (the rule or the mode).
    pub reason: String,
    /// The rules "always" answers add (one per part of a compound command).
    pub suggested_rules: Vec<String>,
    /// The mode in effect.
    pub mode: Mode,
}

/// A request waiting for its answer (a dropped reply counts as a refusal).
#[derive(Debug)]
pub struct PendingAsk {
    /// The request.
    pub request: PermissionRequest,
    /// Where the answer goes.
    pub reply: oneshot::Sender<Answer>,
}

/// What the gate says about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Passage {
    /// It runs.
    Run,
    /// It is refused; the text is the tool result the model reads.
    Refused(String),
}

/// What the gate did with a call, and how: for the session's record and the export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    /// Whether it runs.
    pub passage: Passage,
    /// What the rules said (`Ask` when the user was asked, or would have been).
    pub verdict: Verdict,
    /// The rule behind the verdict, if one matched.
    pub rule: Option<String>,
    /// Where the rule (or the mode) came from, in words.
    pub source: String,
    /// The user's answer, when asked.
    pub answer: Option<Answer>,
}

impl Judgement {
    /// The record kept with the call's result (`strataPermission` in its details): `None`
    /// for a call the rules simply allowed, so sessions without rules stay as they were.
    pub fn record(&self) -> Option<serde_json::Value> {
        if self.verdict == Verdict::Allow {
            return None;
        }
        let verdict = match self.verdict {
            Verdict::Deny => "deny",
            _ => "ask",
        };
        let mut record = serde_json::json!({
            "verdict": verdict,
            "ran": self.passage == Passage::Run,
            "source": self.source,
        });
        if let Some(rule) = &self.rule {
            record["rule"] = rule.clone().into();
        }
        if let Some(answer) = &self.answer
            && let Ok(value) = serde_json::to_value(answer)
        {
            record["answer"] = value;
        }
        Some(record)
    }
}

/// The policy, its mode and the way to ask, shared by the agent (which checks calls) and
/// the runtime (which switches the mode and serves the questions).
#[derive(Debug, Clone)]
pub struct Gate {
    inner: Arc<Mutex<GateState>>,
}

#[derive(Debug)]
struct GateState {
    policy: Policy,
    places: Option<Places>,
    asker: Option<mpsc::UnboundedSender<PendingAsk>>,
    /// Nobody can be asked (print mode): what to tell the model instead.
    unattended: Option<String>,
    /// Nobody can be asked and the user said yes beforehand (`--yes`): asked calls run.
    yes_to_asks: bool,
    next_id: u64,
}

impl Gate {
    /// A gate on `policy`; `places` says where project answers are kept (`None`: "always for
    /// this project" acts as "always for this session").
    pub fn new(policy: Policy, places: Option<Places>) -> Self {
        Self {
            inner: Arc::new(Mutex::new(GateState {
                policy,
                places,
                asker: None,
                unattended: None,
                yes_to_asks: false,
                next_id: 0,
            })),
        }
    }

    fn state(&self) -> MutexGuard<'_, GateState> {
        // A panic while the lock was held leaves plain data behind: keep using it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The mode in effect.
    pub fn mode(&self) -> Mode {
        self.state().policy.mode()
    }

    /// Switches the mode; the next call is judged by it.
    pub fn set_mode(&self, mode: Mode) {
        self.state().policy.set_mode(mode);
    }

    /// Where questions go (the session runtime serves them as events and Ops).
    pub fn set_asker(&self, asker: Option<mpsc::UnboundedSender<PendingAsk>>) {
        self.state().asker = asker;
    }

    /// Nobody will answer (print mode): calls the policy would ask about are refused, and the
    /// model reads `hint` (how the user can allow them) with the refusal.
    pub fn set_unattended(&self, hint: &str) {
        self.state().unattended = Some(hint.to_owned());
    }

    /// Nobody will answer, and the user allowed beforehand every call that would be asked
    /// (print mode with `--yes`): those calls run. Deny rules and plan's refusals still hold.
    pub fn set_yes_to_asks(&self) {
        self.state().yes_to_asks = true;
    }

    /// The rules and mode, one line each.
    pub fn describe(&self) -> Vec<String> {
        self.state().policy.describe()
    }

    /// The decision for `call` without asking anyone.
    pub fn decide(&self, call: &CallView<'_>) -> Decision {
        self.state().policy.decide(call)
    }

    /// Judges `call` (the tool call `call_id`), asking the user where the policy says so.
    pub async fn check(&self, call_id: &str, call: &CallView<'_>) -> Passage {
        self.judge(call_id, call).await.passage
    }

    /// [`Gate::check`], with how the call was judged.
    pub async fn judge(&self, call_id: &str, call: &CallView<'_>) -> Judgement {
        let decision = self.decide(call);
        let (passage, answer) = match decision.verdict {
            Verdict::Allow => (Passage::Run, None),
            Verdict::Deny => (
                Passage::Refused(format!(
                    "Permission denied: {} was not run — {}.",
                    call.tool, decision.reason
                )),
                None,
            ),
            Verdict::Ask => self.ask(call_id, call, &decision).await,
        };
        Judgement {
            passage,
            verdict: decision.verdict,
            rule: decision.rule,
            source: decision.source.to_string(),
            answer,
        }
    }

    async fn ask(
        &self,
        call_id: &str,
        call: &CallView<'_>,
        decision: &Decision,
    ) -> (Passage, Option<Answer>) {
        if self.state().yes_to_asks {
            return (Passage::Run, None);
        }
        let suggested_rules = suggest_rules(call);
        let (tx, rx) = oneshot::channel();
        let sent = {
            let mut state = self.state();
            state.next_id += 1;
            let request = PermissionRequest {
                id: format!("perm-{}", state.next_id),
                call_id: call_id.to_owned(),
                tool: call.tool.to_owned(),
                summary: call.summary(),
                reason: decision.reason.clone(),
                suggested_rules: suggested_rules.clone(),
                mode: state.policy.mode(),
            };
            match (&state.unattended, &state.asker) {
                (Some(hint), _) => Err(hint.clone()),
                (None, Some(asker)) => asker
                    .send(PendingAsk { request, reply: tx })
                    .map_err(|_| "the front end that answers questions has gone".to_owned()),
                (None, None) => Err("no front end answers permission questions here".to_owned()),
            }
        };
        if let Err(hint) = sent {
            return (
                Passage::Refused(format!(
                    "Permission needed: {} was not run — {}, and the user cannot be asked: {hint}.",
                    call.tool, decision.reason
                )),
                None,
            );
        }
        let answer = rx.await.unwrap_or(Answer::Deny {
            reason: Some("the question was dropped without an answer".to_owned()),
        });
        let passage = match answer.clone() {
            Answer::AllowOnce => Passage::Run,
            Answer::AllowSession => {
                self.remember(&suggested_rules, false);
                Passage::Run
            }
            Answer::AllowProject => {
                self.remember(&suggested_rules, true);
                Passage::Run
            }
            Answer::Deny { reason } => Passage::Refused(match reason {
                Some(reason) if !reason.trim().is_empty() => {
                    format!("The user refused this call ({}): {reason}", call.summary())
                }
                _ => format!("The user refused this call ({}).", call.summary()),
            }),
        };
        (passage, Some(answer))
    }

    /// Whether a user can be asked now (a front end serves the questions; not print mode).
    pub fn can_ask(&self) -> bool {
        let state = self.state();
        state.unattended.is_none() && !state.yes_to_asks && state.asker.is_some()
    }

    /// Asks whether `call`, which failed inside the OS sandbox, may run once outside it; any
    /// allowing answer allows this one run (no rule is kept). `false` when nobody can be asked.
    pub async fn ask_outside_sandbox(&self, call_id: &str, call: &CallView<'_>) -> bool {
        let (tx, rx) = oneshot::channel();
        let sent = {
            let mut state = self.state();
            state.next_id += 1;
            let request = PermissionRequest {
                id: format!("perm-{}", state.next_id),
                call_id: call_id.to_owned(),
                tool: call.tool.to_owned(),
                summary: call.summary(),
                reason: "the OS sandbox refused something it tried; run it once outside the \
                         sandbox, with your full rights"
                    .to_owned(),
                suggested_rules: Vec::new(),
                mode: state.policy.mode(),
            };
            match (&state.unattended, state.yes_to_asks, &state.asker) {
                (None, false, Some(asker)) => asker.send(PendingAsk { request, reply: tx }).is_ok(),
                _ => false,
            }
        };
        sent && matches!(
            rx.await,
            Ok(Answer::AllowOnce | Answer::AllowSession | Answer::AllowProject)
        )
    }

    /// Adds `rule` to the allow list for the session and, with `project`, to the project's
    /// answers file.
    fn remember(&self, texts: &[String], project: bool) {
        let mut state = self.state();
        let places = state.places.clone();
        let bases = Bases {
            home: places.as_ref().and_then(|p| p.home.clone()),
            root: places
                .as_ref()
                .map(|p| p.project.clone())
                .unwrap_or_default(),
            cwd: places.as_ref().map(|p| p.cwd.clone()).unwrap_or_default(),
        };
        for text in texts {
            let Ok(rule) = Rule::parse(text, &bases) else {
                continue;
            };
            let source = match (&places, project) {
                (Some(places), true) => match remember_for_project(places, text) {
                    Ok(path) => Source::StrataProject(path),
                    Err(error) => {
                        tracing::warn!("cannot keep the rule for the project: {error}");
                        Source::Session
                    }
                },
                _ => Source::Session,
            };
            state.policy.push(rule, List::Allow, source);
        }
    }
}

/// The rules an "always" answer adds: each exact simple command, the file, or the tool.
pub fn suggest_rules(call: &CallView<'_>) -> Vec<String> {
    match call.kind {
        CallKind::Command => crate::rule::split_command(call.command.unwrap_or(""))
            .into_iter()
            .map(|part| format!("Bash({part})"))
            .collect(),
        CallKind::Edit | CallKind::Read if !call.paths.is_empty() => {
            let family = if call.kind == CallKind::Edit {
                "Edit"
            } else {
                "Read"
            };
            // `//` marks an absolute path in Claude Code's syntax.
            call.paths
                .iter()
                .map(|p| format!("{family}(/{})", p.display()))
                .collect()
        }
        _ => vec![call.tool.to_owned()],
    }
}
