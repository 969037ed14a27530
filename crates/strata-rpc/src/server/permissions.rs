//! The rules layer over rpc (strata's; Pi's protocol has no permissions): a permission
//! question goes out as Pi's `extension_ui_request` `select` (allow once / for the session /
//! for the project / deny), a "deny" is followed by an `input` for the reason, and the
//! `extension_ui_response` goes back as `Op::AnswerPermission`; `set_permission_mode
//! {mode}` switches the mode; mode changes and file restores are `strata_*` records.

use serde_json::{Value, json};
use strata_runtime::Op;
use strata_runtime::permissions::{Answer, Mode, PermissionRequest};

use super::{Finish, Host, Server};
use crate::protocol::{Id, failure};

/// The options of the `select`, in the order shown.
pub const ALLOW_ONCE: &str = "Allow once";
/// Allows the call and the suggested rules for the rest of the session.
pub const ALLOW_SESSION: &str = "Always allow in this session";
/// Allows the call and keeps the suggested rules in the project.
pub const ALLOW_PROJECT: &str = "Always allow in this project";
/// Refuses the call (an `input` for the reason follows).
pub const DENY: &str = "Deny";

/// The suffix of the `input` request asking why a call was refused.
const REASON_SUFFIX: &str = "/reason";

/// A question sent and waiting for its `extension_ui_response`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pending {
    /// The `select`.
    Choice,
    /// The `input` for a refusal's reason.
    Reason,
}

/// The `extension_ui_request` for `request`.
pub(crate) fn select_record(request: &PermissionRequest) -> Value {
    let mut title = format!("Allow {}? ({})", request.summary, request.reason);
    if !request.suggested_rules.is_empty() {
        title.push_str(&format!(
            " — \"always\" adds {}",
            request.suggested_rules.join(", ")
        ));
    }
    json!({
        "type": "extension_ui_request",
        "id": request.id,
        "method": "select",
        "title": title,
        "options": [ALLOW_ONCE, ALLOW_SESSION, ALLOW_PROJECT, DENY],
    })
}

/// The `strata_*` record of a rules-layer event, for rpc and json mode (`None` for others).
pub fn rules_record(event: &strata_runtime::RuntimeEvent) -> Option<Value> {
    use strata_runtime::RuntimeEvent;
    match event {
        RuntimeEvent::PermissionRequested { request } => Some(json!({
            "type": "strata_permission_requested",
            "request": request,
        })),
        RuntimeEvent::PermissionModeChanged { mode } => Some(json!({
            "type": "strata_permission_mode_changed",
            "mode": mode,
        })),
        RuntimeEvent::FilesRestored { report } => Some(json!({
            "type": "strata_files_restored",
            "restored": report.restored,
            "removed": report.removed,
            "notRestorable": report.not_restorable,
        })),
        _ => None,
    }
}

impl<H: Host> Server<H> {
    /// Puts the gate's question to the client.
    pub(crate) fn ask_permission(&mut self, request: &PermissionRequest) {
        self.permission_asks
            .insert(request.id.clone(), Pending::Choice);
        self.out.send(&select_record(request));
    }

    /// An `extension_ui_response`: the answer to a permission question, or (for an id that
    /// asks nothing) ignored, as Pi ignores answers nobody waits for.
    pub(crate) fn permission_response(
        &mut self,
        id: Option<String>,
        value: Option<String>,
        cancelled: bool,
    ) {
        let Some(id) = id else { return };
        let Some(stage) = self.permission_asks.remove(&id) else {
            return;
        };
        let answer = match (stage, value.as_deref()) {
            (Pending::Choice, Some(ALLOW_ONCE)) if !cancelled => Answer::AllowOnce,
            (Pending::Choice, Some(ALLOW_SESSION)) if !cancelled => Answer::AllowSession,
            (Pending::Choice, Some(ALLOW_PROJECT)) if !cancelled => Answer::AllowProject,
            (Pending::Choice, Some(DENY)) if !cancelled => {
                let reason_id = format!("{id}{REASON_SUFFIX}");
                self.permission_asks
                    .insert(reason_id.clone(), Pending::Reason);
                self.out.send(&json!({
                    "type": "extension_ui_request",
                    "id": reason_id,
                    "method": "input",
                    "title": "Why refuse it? The model reads this (empty: no reason).",
                }));
                return;
            }
            (Pending::Reason, reason) => Answer::Deny {
                reason: reason
                    .filter(|r| !cancelled && !r.trim().is_empty())
                    .map(str::to_owned),
            },
            // Dismissed, or an option that is not one of ours: refused.
            (Pending::Choice, _) => Answer::Deny { reason: None },
        };
        let question = id.strip_suffix(REASON_SUFFIX).unwrap_or(&id).to_owned();
        self.send(Op::AnswerPermission {
            id: question,
            answer,
        });
    }

    /// `set_permission_mode {mode}`: answered once the runtime has switched (or failed to);
    /// during a run at once, since the switch acts at once (the next call is judged by it).
    pub(crate) fn set_permission_mode(&mut self, id: Id, kind: &str, mode: &str, busy: bool) {
        let Some(mode) = Mode::parse(mode) else {
            self.out.send(&failure(
                &id,
                kind,
                format!("unknown permission mode `{mode}` (expected plan, ask, edits or auto)"),
            ));
            return;
        };
        let op = Op::SetPermissionMode(mode);
        if busy {
            self.send(op);
            self.out.send(&crate::protocol::success(
                &id,
                kind,
                Some(json!({"mode": mode})),
            ));
            return;
        }
        self.request(id, kind, vec![op], Finish::PermissionMode(mode));
    }
}
