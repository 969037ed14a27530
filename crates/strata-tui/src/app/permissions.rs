//! The rules layer in the terminal UI: the permission mode (`/mode`, Alt+M cycles; Shift+Tab is Pi's thinking key; as in
//! Claude Code; the footer shows any mode but `auto`), the gate's rules (`/mode` without an
//! argument lists them with their files), and the question the gate puts — allow once, always
//! for the session, always for the project, or deny with a reason the model reads.

use std::collections::VecDeque;

use strata_runtime::permissions::{Answer, Gate, Mode, PermissionRequest};

use super::{App, Effect, Item, Level};
use crate::picker::{Picker, PickerItem, PickerKind};

/// The gate the session runs with and the questions waiting for the user.
#[derive(Debug, Default)]
pub struct Permissions {
    /// The gate (`None`: every call runs; `/mode` says so).
    gate: Option<Gate>,
    /// Questions that arrived while another was on screen.
    waiting: VecDeque<PermissionRequest>,
    /// The question whose refusal waits for its reason, typed in the editor.
    reason_for: Option<PermissionRequest>,
}

/// The picker's keys, in the order shown.
const ONCE: &str = "once";
const SESSION: &str = "session";
const PROJECT: &str = "project";
const DENY: &str = "deny";

impl App {
    /// Sets the gate the session's agent runs with.
    pub fn set_permissions(&mut self, gate: Option<Gate>) {
        self.permissions.gate = gate;
    }

    /// The mode to show in the footer: any but `auto` (which is strata's behaviour without
    /// rules, and says nothing).
    pub fn shown_mode(&self) -> Option<Mode> {
        let mode = self.permissions.gate.as_ref()?.mode();
        (mode != Mode::Auto).then_some(mode)
    }

    /// Alt+M: the next mode (auto → edits → ask → plan → auto), at once, also mid-run.
    pub(super) fn cycle_mode(&mut self) {
        let Some(gate) = &self.permissions.gate else {
            self.hint = Some("no permission gate in this session".into());
            return;
        };
        let next = gate.mode().next();
        gate.set_mode(next);
        self.hint = Some(format!("permission mode: {next} (Alt+M cycles)"));
    }

    /// `/mode [plan|ask|edits|auto]`: sets the mode, or lists it and the rules.
    pub(super) fn mode_command(&mut self, arg: Option<String>) {
        let Some(gate) = self.permissions.gate.clone() else {
            self.notice(
                Level::Warning,
                "this session has no permission gate: every tool call runs",
            );
            return;
        };
        match arg {
            None => self.items.push(Item::Block {
                title: "permission mode and rules".into(),
                lines: gate.describe(),
            }),
            Some(name) => match name.parse::<Mode>() {
                Ok(mode) => {
                    gate.set_mode(mode);
                    self.notice(
                        Level::Info,
                        format!(
                            "permission mode: {mode} (the model is told with the next request)"
                        ),
                    );
                }
                Err(error) => self.notice(Level::Error, error),
            },
        }
    }

    /// A question from the gate: shown at once, or after the one on screen.
    pub fn permission_requested(&mut self, request: PermissionRequest) {
        self.permissions.waiting.push_back(request);
        self.show_next_question();
    }

    pub(super) fn permission_question_on_screen(&self) -> bool {
        self.permissions.reason_for.is_some()
            || self
                .picker
                .as_ref()
                .is_some_and(|p| matches!(p.kind, PickerKind::Permission { .. }))
    }

    pub(super) fn show_next_question(&mut self) {
        if self.permission_question_on_screen() || self.extension_question_on_screen() {
            return;
        }
        let Some(request) = self.permissions.waiting.pop_front() else {
            return;
        };
        let rules = request.suggested_rules.join(", ");
        let items = vec![
            PickerItem::new("Allow once", "", ONCE),
            PickerItem::new("Always allow in this session", rules.clone(), SESSION),
            PickerItem::new("Always allow in this project", rules, PROJECT),
            PickerItem::new("Deny, and say why", "the model reads the reason", DENY),
        ];
        let title = format!("Allow {}? ({})", request.summary, request.reason);
        // The question comes first: a list the user had open is closed.
        self.picker = Some(Picker::new(
            PickerKind::Permission { request },
            title,
            items,
        ));
    }

    /// The user chose `key` for `request` in the picker.
    pub(super) fn permission_chosen(&mut self, request: PermissionRequest, key: &str) {
        let answer = match key {
            ONCE => Answer::AllowOnce,
            SESSION => Answer::AllowSession,
            PROJECT => Answer::AllowProject,
            _ => {
                self.hint = Some(
                    "type why the call is refused (the model reads it) and press Enter; \
                     Enter alone refuses without a reason"
                        .into(),
                );
                self.permissions.reason_for = Some(request);
                return;
            }
        };
        let said = match answer {
            Answer::AllowSession => "allowed for this session",
            Answer::AllowProject => "allowed for this project (.strata/permissions.json)",
            _ => "allowed once",
        };
        self.notice(Level::Info, format!("{}: {said}", request.summary));
        self.answer(request, answer);
    }

    /// Esc on the question: refused without a reason.
    pub(super) fn permission_dismissed(&mut self, request: PermissionRequest) {
        self.notice(Level::Info, format!("{}: refused", request.summary));
        self.answer(request, Answer::Deny { reason: None });
    }

    /// The editor's text as the reason of a refusal, when one is awaited; `false` otherwise.
    pub(super) fn take_refusal_reason(&mut self) -> bool {
        let Some(request) = self.permissions.reason_for.take() else {
            return false;
        };
        let text = self.editor.submit();
        let reason = (!text.trim().is_empty()).then(|| text.trim().to_owned());
        let said = match &reason {
            Some(reason) => format!("{}: refused — {reason}", request.summary),
            None => format!("{}: refused", request.summary),
        };
        self.notice(Level::Info, said);
        self.answer(request, Answer::Deny { reason });
        true
    }

    /// Forgets the questions of a run that ended (an abort refused what waited).
    pub(super) fn drop_questions(&mut self) {
        self.drop_extension_questions();
        self.permissions.waiting.clear();
        if self.permissions.reason_for.take().is_some() {
            self.hint = None;
        }
        if self
            .picker
            .as_ref()
            .is_some_and(|p| matches!(p.kind, PickerKind::Permission { .. }))
        {
            self.picker = None;
        }
    }

    fn answer(&mut self, request: PermissionRequest, answer: Answer) {
        self.effects.push(Effect::AnswerPermission {
            id: request.id,
            answer,
        });
        self.show_next_question();
        self.show_next_extension_question();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use strata_runtime::permissions::{Answer, Gate, Mode, PermissionRequest, Policy};

    use super::super::{App, Effect};

    fn app_with_gate() -> (App, Gate) {
        let gate = Gate::new(Policy::new(Mode::Auto, vec![]), None);
        let mut app = App::new(None, Vec::new());
        app.set_permissions(Some(gate.clone()));
        (app, gate)
    }

    fn key(app: &mut App, code: KeyCode, modifiers: KeyModifiers) {
        app.on_key(KeyEvent::new(code, modifiers), Instant::now());
    }

    fn request(id: &str) -> PermissionRequest {
        PermissionRequest {
            id: id.into(),
            call_id: "call-1".into(),
            tool: "bash".into(),
            summary: "bash: rm -rf build".into(),
            reason: "permission mode ask".into(),
            suggested_rules: vec!["Bash(rm -rf build)".into()],
            mode: Mode::Ask,
        }
    }

    fn answers(app: &mut App) -> Vec<(String, Answer)> {
        app.take_effects()
            .into_iter()
            .filter_map(|effect| match effect {
                Effect::AnswerPermission { id, answer } => Some((id, answer)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn alt_m_cycles_the_modes_and_the_footer_shows_all_but_auto() {
        let (mut app, gate) = app_with_gate();
        assert_eq!(app.shown_mode(), None);
        let mut seen = Vec::new();
        for _ in 0..4 {
            key(&mut app, KeyCode::Char('m'), KeyModifiers::ALT);
            seen.push(gate.mode());
        }
        assert_eq!(seen, [Mode::Edits, Mode::Ask, Mode::Plan, Mode::Auto]);
        key(&mut app, KeyCode::Char('m'), KeyModifiers::ALT);
        assert_eq!(app.shown_mode(), Some(Mode::Edits));
    }

    #[test]
    fn slash_mode_sets_the_mode_or_lists_the_rules() {
        let (mut app, gate) = app_with_gate();
        app.editor.set_text("/mode plan");
        key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(gate.mode(), Mode::Plan);
        app.editor.set_text("/mode");
        key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        let listed = app.items.iter().any(|item| {
            matches!(item, super::Item::Block { lines, .. }
                if lines.iter().any(|l| l == "permission mode: plan"))
        });
        assert!(listed, "{:?}", app.items);
        app.editor.set_text("/mode bogus");
        key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(gate.mode(), Mode::Plan);
    }

    #[test]
    fn each_choice_answers_its_question_and_the_next_waits_its_turn() {
        let (mut app, _) = app_with_gate();
        app.permission_requested(request("perm-1"));
        app.permission_requested(request("perm-2"));
        app.permission_requested(request("perm-3"));
        // Enter on the first row: allowed once; the second question shows.
        key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(answers(&mut app), [("perm-1".into(), Answer::AllowOnce)]);
        assert!(app.picker.is_some());
        // Down to "for the session".
        key(&mut app, KeyCode::Down, KeyModifiers::NONE);
        key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(answers(&mut app), [("perm-2".into(), Answer::AllowSession)]);
        // Deny with a reason typed in the editor.
        for _ in 0..3 {
            key(&mut app, KeyCode::Down, KeyModifiers::NONE);
        }
        key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        assert!(answers(&mut app).is_empty(), "waits for the reason");
        for ch in "not on main".chars() {
            key(&mut app, KeyCode::Char(ch), KeyModifiers::NONE);
        }
        key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(
            answers(&mut app),
            [(
                "perm-3".into(),
                Answer::Deny {
                    reason: Some("not on main".into())
                }
            )]
        );
        assert!(app.editor.is_empty(), "the reason is not sent as a prompt");
    }

    #[test]
    fn a_run_that_ends_takes_its_questions_with_it() {
        let (mut app, _) = app_with_gate();
        app.permission_requested(request("perm-1"));
        app.permission_requested(request("perm-2"));
        app.on_agent(strata_agent::AgentEvent::AgentEnd {
            reason: "aborted".into(),
        });
        assert!(app.picker.is_none());
        key(&mut app, KeyCode::Esc, KeyModifiers::NONE);
        assert!(answers(&mut app).is_empty(), "nothing left to answer");
    }

    #[test]
    fn esc_refuses_the_question_without_a_reason() {
        let (mut app, _) = app_with_gate();
        app.permission_requested(request("perm-9"));
        key(&mut app, KeyCode::Esc, KeyModifiers::NONE);
        assert_eq!(
            answers(&mut app),
            [("perm-9".into(), Answer::Deny { reason: None })]
        );
        assert!(app.picker.is_none());
    }
}
