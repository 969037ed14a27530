//! Extensions asking the user (docs/extensions.md, "extension → strata"): `ui/confirm` and
//! `ui/select` are a picker, `ui/input` is the editor (Enter answers), `ui/notify` a notice and
//! `ui/status` the extension's text in the footer. One question at a time, after any
//! permission question on screen; Esc (or a run that ends) answers with the unanswered
//! default: not confirmed, nothing selected, no text.

use std::collections::{BTreeMap, VecDeque};

use strata_host::extensions::{UiCall, UiRequest};

use super::{App, Level};
use crate::picker::{Picker, PickerItem, PickerKind};

/// Questions from extensions and their footer texts.
#[derive(Debug, Default)]
pub struct ExtensionAsks {
    /// Questions that arrived while another was on screen.
    waiting: VecDeque<UiCall>,
    /// The question on screen (a picker, or the editor for `ui/input`).
    current: Option<UiCall>,
    /// Each extension's `ui/status` text, by name.
    pub statuses: BTreeMap<String, String>,
}

const YES: &str = "yes";
const NO: &str = "no";

impl App {
    /// A UI request from an extension.
    pub fn extension_ui(&mut self, call: UiCall) {
        match &call.request {
            UiRequest::Notify { message, level } => {
                let level = match level.as_str() {
                    "error" => Level::Error,
                    "warning" => Level::Warning,
                    _ => Level::Info,
                };
                self.notice(level, format!("{}: {message}", call.extension));
            }
            UiRequest::Status { text } if text.is_empty() => {
                self.extension_asks.statuses.remove(&call.extension);
            }
            UiRequest::Status { text } => {
                self.extension_asks
                    .statuses
                    .insert(call.extension.clone(), text.clone());
            }
            _ => {
                self.extension_asks.waiting.push_back(call);
                self.show_next_extension_question();
            }
        }
    }

    /// Whether an extension's question is on screen.
    pub(super) fn extension_question_on_screen(&self) -> bool {
        self.extension_asks.current.is_some()
    }

    pub(super) fn show_next_extension_question(&mut self) {
        // A permission question (the tool call waits for it) goes first.
        if self.extension_question_on_screen() || self.permission_question_on_screen() {
            return;
        }
        let Some(call) = self.extension_asks.waiting.pop_front() else {
            return;
        };
        let name = call.extension.clone();
        match &call.request {
            UiRequest::Confirm { title, message } => {
                let items = vec![
                    PickerItem::new("Yes", "", YES),
                    PickerItem::new("No", "", NO),
                ];
                let title = format!("{name}: {title} — {message}");
                self.picker = Some(Picker::new(PickerKind::ExtensionAsk, title, items));
            }
            UiRequest::Select { title, options } => {
                let items = options
                    .iter()
                    .enumerate()
                    .map(|(index, option)| PickerItem::new(option, "", index.to_string()))
                    .collect();
                let title = format!("{name}: {title}");
                self.picker = Some(Picker::new(PickerKind::ExtensionAsk, title, items));
            }
            UiRequest::Input { title, placeholder } => {
                let placeholder = if placeholder.is_empty() {
                    String::new()
                } else {
                    format!(" ({placeholder})")
                };
                self.hint = Some(format!(
                    "{name} asks: {title}{placeholder} — type the answer and press Enter"
                ));
            }
            UiRequest::Notify { .. } | UiRequest::Status { .. } => {}
        }
        self.extension_asks.current = Some(call);
    }

    /// The user chose the row `key` of an extension's picker.
    pub(super) fn extension_chosen(&mut self, key: &str) {
        let Some(call) = self.extension_asks.current.take() else {
            return;
        };
        let answer = match &call.request {
            UiRequest::Confirm { .. } => UiRequest::confirmed(key == YES),
            UiRequest::Select { .. } => UiRequest::selected(key.parse().ok()),
            _ => call.request.unanswered(),
        };
        call.answer(answer);
        self.next_question();
    }

    /// Esc on an extension's picker: the unanswered default.
    pub(super) fn extension_dismissed(&mut self) {
        if let Some(call) = self.extension_asks.current.take() {
            let unanswered = call.request.unanswered();
            call.answer(unanswered);
        }
        self.next_question();
    }

    /// The editor's text as the answer to a `ui/input`, when one is awaited; `false`
    /// otherwise. Enter alone answers no text.
    pub(super) fn take_extension_input(&mut self) -> bool {
        let awaited = self
            .extension_asks
            .current
            .as_ref()
            .is_some_and(|call| matches!(call.request, UiRequest::Input { .. }));
        if !awaited {
            return false;
        }
        let text = self.editor.submit();
        let text = (!text.trim().is_empty()).then(|| text.trim().to_owned());
        self.hint = None;
        if let Some(call) = self.extension_asks.current.take() {
            call.answer(UiRequest::text(text));
        }
        self.next_question();
        true
    }

    /// Answers every question left with its default (a run that ended, leaving).
    pub(super) fn drop_extension_questions(&mut self) {
        let picker_is_ours = self
            .picker
            .as_ref()
            .is_some_and(|p| p.kind == PickerKind::ExtensionAsk);
        if picker_is_ours {
            self.picker = None;
        }
        let current = self.extension_asks.current.take();
        if current
            .as_ref()
            .is_some_and(|call| matches!(call.request, UiRequest::Input { .. }))
        {
            self.hint = None;
        }
        for call in current
            .into_iter()
            .chain(self.extension_asks.waiting.drain(..))
        {
            let unanswered = call.request.unanswered();
            call.answer(unanswered);
        }
    }

    /// The footer's extension texts (`name: text`), in name order.
    pub fn extension_statuses(&self) -> Vec<String> {
        self.extension_asks
            .statuses
            .iter()
            .map(|(name, text)| format!("{name}: {text}"))
            .collect()
    }

    fn next_question(&mut self) {
        self.show_next_question();
        self.show_next_extension_question();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use ratatui::crossterm::event::KeyCode;
    use serde_json::{Value, json};
    use tokio::sync::oneshot;

    use super::*;
    use crate::app::Item;
    use crate::testing::{app, key, type_text};

    fn ask(app: &mut App, request: UiRequest) -> oneshot::Receiver<Value> {
        let (reply, answer) = oneshot::channel();
        app.extension_ui(UiCall {
            extension: "guard".into(),
            request,
            reply: Some(reply),
        });
        answer
    }

    fn press(app: &mut App, code: KeyCode) {
        app.on_key(key(code), Instant::now());
    }

    fn confirm() -> UiRequest {
        UiRequest::Confirm {
            title: "Destructive command".into(),
            message: "rm -rf /tmp/x".into(),
        }
    }

    #[test]
    fn confirm_and_select_are_pickers_one_at_a_time_and_esc_answers_nothing() {
        let mut app = app();
        let mut first = ask(&mut app, confirm());
        let mut second = ask(
            &mut app,
            UiRequest::Select {
                title: "Which one?".into(),
                options: vec!["alpha".into(), "beta".into()],
            },
        );
        let picker = app.picker.as_ref().unwrap();
        assert_eq!(picker.kind, PickerKind::ExtensionAsk);
        assert_eq!(picker.title, "guard: Destructive command — rm -rf /tmp/x");
        assert!(second.try_recv().is_err(), "the select waits its turn");
        // Enter on "Yes".
        press(&mut app, KeyCode::Enter);
        assert_eq!(first.try_recv().unwrap(), json!({"confirmed": true}));
        // The select shows next; Down, Enter: the second option.
        assert_eq!(app.picker.as_ref().unwrap().title, "guard: Which one?");
        press(&mut app, KeyCode::Down);
        press(&mut app, KeyCode::Enter);
        assert_eq!(second.try_recv().unwrap(), json!({"index": 1}));
        assert!(app.picker.is_none());
        // Esc on a confirm: not confirmed.
        let mut third = ask(&mut app, confirm());
        press(&mut app, KeyCode::Esc);
        assert_eq!(third.try_recv().unwrap(), json!({"confirmed": false}));
    }

    #[test]
    fn input_takes_the_editors_text_and_is_not_sent_as_a_prompt() {
        let mut app = app();
        let mut answer = ask(
            &mut app,
            UiRequest::Input {
                title: "Why?".into(),
                placeholder: "a reason".into(),
            },
        );
        assert_eq!(
            app.hint.as_deref(),
            Some("guard asks: Why? (a reason) — type the answer and press Enter")
        );
        type_text(&mut app, "because");
        press(&mut app, KeyCode::Enter);
        assert_eq!(answer.try_recv().unwrap(), json!({"text": "because"}));
        assert!(app.editor.is_empty());
        assert!(app.take_effects().is_empty(), "no prompt was sent");
    }

    #[test]
    fn notify_is_a_notice_status_is_in_the_footer_and_a_run_end_answers_what_waits() {
        let mut app = app();
        app.extension_ui(UiCall {
            extension: "guard".into(),
            request: UiRequest::Notify {
                message: "blocked rm".into(),
                level: "warning".into(),
            },
            reply: None,
        });
        assert!(matches!(
            app.items.last(),
            Some(Item::Notice(notice)) if notice.text == "guard: blocked rm" && notice.level == Level::Warning
        ));
        let status = |text: &str| UiCall {
            extension: "guard".into(),
            request: UiRequest::Status { text: text.into() },
            reply: None,
        };
        app.extension_ui(status("watching"));
        let footer: String = crate::view::footer_lines(&app, 200)
            .iter()
            .map(|line| line.to_string())
            .collect();
        assert!(footer.contains("guard: watching"), "{footer}");
        app.extension_ui(status(""));
        assert!(app.extension_statuses().is_empty());
        let mut waiting = ask(&mut app, confirm());
        app.on_agent(strata_agent::AgentEvent::AgentEnd {
            reason: "aborted".into(),
        });
        assert_eq!(waiting.try_recv().unwrap(), json!({"confirmed": false}));
        assert!(app.picker.is_none());
    }
}
