//! Pi's habits in the editor: its keys (Ctrl+P, Shift+Tab, Ctrl+L, Ctrl+X, `@` and Tab),
//! `!cmd` / `!!cmd`,
//! and the commands `/session`, `/copy`, `/hotkeys` and `/share`.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{App, Effect, Item, Level};
use crate::command;
use crate::worker::Command;

impl App {
    /// Keys handled before the editor's own; true when the key was used up.
    pub(super) fn habit_key(&mut self, key: KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            // Shift+Ctrl+P reaches strata only where the terminal reports Shift with Ctrl.
            KeyCode::Char('p') if ctrl => self.cycle_model(shift),
            KeyCode::Char('P') if ctrl => self.cycle_model(true),
            KeyCode::BackTab => self.cycle_thinking(),
            KeyCode::Char('l') if ctrl && self.busy.is_none() => self.model_picker(),
            KeyCode::Char('x') if ctrl => self.copy_last_answer(),
            KeyCode::Tab if self.at_query().is_some() => return self.complete_at(),
            KeyCode::Up => return self.move_suggestion(-1),
            KeyCode::Down => return self.move_suggestion(1),
            KeyCode::Char('@') if !ctrl => {
                self.at_typed();
                return false;
            }
            _ => return false,
        }
        true
    }

    /// `!cmd` runs a shell command whose output joins the context; `!!cmd` one whose output
    /// does not. False when `text` is not a shell command.
    pub(super) fn shell_command(&mut self, text: &str) -> bool {
        let (exclude, command) = match text.strip_prefix("!!") {
            Some(rest) => (true, rest),
            None => match text.strip_prefix('!') {
                Some(rest) => (false, rest),
                None => return false,
            },
        };
        let command = command.trim().to_owned();
        self.editor.submit();
        if command.is_empty() {
            self.notice(
                Level::Error,
                "!command runs it and adds its output to the context; !!command keeps it out",
            );
            return true;
        }
        if self.busy.is_some() {
            self.notice(
                Level::Warning,
                "the agent is working: run the command when it is done",
            );
            self.editor.set_text(text);
            return true;
        }
        self.busy = Some(format!("running {command}"));
        self.send(Command::Shell { command, exclude });
        true
    }

    /// `/copy`: the last answer to the terminal's clipboard (OSC 52).
    pub(super) fn copy_last_answer(&mut self) {
        let last = self.items.iter().rev().find_map(|item| match item {
            Item::Assistant(text) if !text.trim().is_empty() => Some(text.clone()),
            _ => None,
        });
        let Some(text) = last else {
            self.notice(Level::Info, "nothing to copy: no answer yet");
            return;
        };
        self.notice(
            Level::Info,
            format!(
                "copied the last answer ({} characters) to the clipboard through the terminal (OSC 52: tmux needs `set -g set-clipboard on`, some terminals ask first)",
                text.chars().count()
            ),
        );
        self.effects.push(Effect::Clipboard(text));
    }

    /// `/hotkeys`: the keys alone.
    pub(super) fn show_hotkeys(&mut self) {
        self.items.push(Item::Block {
            title: "keys".into(),
            lines: command::KEYS
                .iter()
                .map(|line| (*line).to_owned())
                .collect(),
        });
    }

    /// `/share`: strata has no hosted sharing; the HTML export is the file to share.
    pub(super) fn share(&mut self, path: Option<String>) {
        self.notice(
            Level::Info,
            "strata uploads nothing (Pi's /share makes a gist): writing the self-contained HTML export to share yourself",
        );
        self.send(Command::Export(path.map(Into::into)));
    }
}

impl App {
    /// `/login`: without a key, what to do; `/login PROVIDER KEY` stores the key.
    pub(super) fn login(&mut self, args: Option<String>) {
        let words: Vec<String> = args
            .as_deref()
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        match words.as_slice() {
            [] => self.send(Command::LoginHelp),
            [provider] => {
                self.editor.set_text(&format!("/login {provider} "));
                self.hint = Some(format!("paste {provider}'s key, then Enter"));
            }
            [provider, key] => {
                // Up must not bring the key back.
                self.editor.forget_last();
                self.send(Command::Login {
                    provider: provider.clone(),
                    key: key.clone(),
                });
            }
            _ => self.notice(Level::Error, "usage: /login PROVIDER KEY"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use ratatui::crossterm::event::KeyCode;

    use super::*;
    use crate::testing::{app, key, type_text};

    fn enter(app: &mut App) {
        app.on_key(key(KeyCode::Enter), Instant::now());
    }

    #[test]
    fn bang_runs_a_shell_command_and_double_bang_keeps_it_out_of_the_context() {
        let mut app = app();
        type_text(&mut app, "!git status");
        enter(&mut app);
        // One at a time: a second command waits in the editor until the first is done.
        type_text(&mut app, "!!ls -a");
        enter(&mut app);
        assert_eq!(app.editor.text(), "!!ls -a");
        app.on_reply(crate::worker::Reply::Idle);
        assert!(app.busy.is_none());
        enter(&mut app);
        assert_eq!(
            app.take_effects(),
            vec![
                Effect::Worker(Command::Shell {
                    command: "git status".into(),
                    exclude: false
                }),
                Effect::Worker(Command::Shell {
                    command: "ls -a".into(),
                    exclude: true
                }),
            ]
        );
        assert!(
            !app.items.iter().any(|i| matches!(i, Item::User(_))),
            "not a prompt: {:?}",
            app.items
        );
        assert!(app.busy.is_some());
    }

    #[test]
    fn copy_puts_the_last_answer_on_the_clipboard_and_says_so() {
        let mut app = app();
        type_text(&mut app, "/copy");
        enter(&mut app);
        assert!(app.take_effects().is_empty());
        app.items.push(Item::Assistant("first".into()));
        app.items.push(Item::Assistant("the answer".into()));
        type_text(&mut app, "/copy");
        enter(&mut app);
        assert_eq!(
            app.take_effects(),
            vec![Effect::Clipboard("the answer".into())]
        );
        assert!(matches!(app.items.last(), Some(Item::Notice(n)) if n.text.contains("OSC 52")));
        assert!(crate::info::osc52("hi").ends_with("aGk=\x07"));
    }

    #[test]
    fn login_stores_with_a_key_and_asks_for_one_without() {
        let mut app = app();
        type_text(&mut app, "/login anthropic");
        enter(&mut app);
        assert_eq!(app.editor.text(), "/login anthropic ");
        type_text(&mut app, "sk-test");
        enter(&mut app);
        type_text(&mut app, "/login");
        enter(&mut app);
        assert_eq!(
            app.take_effects(),
            vec![
                Effect::Worker(Command::Login {
                    provider: "anthropic".into(),
                    key: "sk-test".into()
                }),
                Effect::Worker(Command::LoginHelp),
            ]
        );
        assert!(!app.editor.history().iter().any(|h| h.contains("sk-test")));
    }
}
