//! Ctrl+P / Shift+Ctrl+P cycle the models that have credentials now, Shift+Tab the thinking
//! levels the model takes (Pi's keys). Both go through the commands `/model` and `/thinking`
//! send; a model switch says first what it does to the cache.

use strata_host::model::THINKING_LEVELS;

use super::{App, Level};
use crate::stats;
use crate::worker::{Command, ModelOption};

impl App {
    /// Switches to the next (or previous) usable model.
    pub(super) fn cycle_model(&mut self, backward: bool) {
        if self.busy.is_some() {
            self.hint = Some("the agent is working: switch models when it is done".into());
            return;
        }
        let usable: Vec<&ModelOption> = self.status.models.iter().filter(|m| m.usable).collect();
        if usable.len() < 2 {
            self.notice(
                Level::Info,
                "no other model has credentials: /login stores a key, or set a provider's key variable (/model lists them)",
            );
            return;
        }
        let at = usable.iter().position(|m| m.name == self.status.model);
        let next = match (at, backward) {
            (Some(i), false) => (i + 1) % usable.len(),
            (Some(i), true) => (i + usable.len() - 1) % usable.len(),
            (None, _) => 0,
        };
        let chosen = usable[next].clone();
        let note = self.switch_note(&chosen);
        self.notice(Level::Info, format!("model → {}: {note}", chosen.name));
        self.send(Command::Model(chosen.name));
    }

    /// A model chosen in `/model`'s list: one without credentials is refused with what to
    /// do, before anything is sent; a switch says what it does to the cache.
    pub(super) fn model_chosen(&mut self, name: String) {
        match self.status.models.iter().find(|m| m.name == name).cloned() {
            Some(option) if !option.usable => {
                self.notice(Level::Error, format!("{name}: {}", option.detail));
            }
            Some(option) => {
                let note = self.switch_note(&option);
                self.notice(Level::Info, format!("model → {name}: {note}"));
                self.send(Command::Model(name));
            }
            None => self.send(Command::Model(name)),
        }
    }

    /// What switching to `to` does to the cache, in one clause.
    pub fn switch_note(&self, to: &ModelOption) -> String {
        if to.name == self.status.model {
            return "the current model: nothing changes".to_owned();
        }
        stats::switch_note(
            &to.prices,
            self.status.chapter_tokens,
            self.stats.requests > 0,
        )
    }

    /// Steps the thinking level up, from `xhigh` back to `off`; a model that does not reason
    /// stays `off`.
    pub(super) fn cycle_thinking(&mut self) {
        if self.busy.is_some() {
            self.hint = Some("the agent is working: change thinking when it is done".into());
            return;
        }
        if !self.status.reasoning {
            self.hint = Some(format!(
                "{} does not reason: thinking stays off",
                self.status.model
            ));
            return;
        }
        let at = THINKING_LEVELS
            .iter()
            .position(|level| *level == self.status.thinking);
        let next = THINKING_LEVELS[at.map_or(0, |i| (i + 1) % THINKING_LEVELS.len())];
        // Shown at once; the status the command brings back confirms it.
        self.status.thinking = next.to_owned();
        self.send(Command::Thinking(next.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::super::{Effect, Item};
    use super::*;
    use crate::testing::{app, key, type_text};

    fn last_notice(app: &App) -> String {
        match app.items.last() {
            Some(Item::Notice(notice)) => notice.text.clone(),
            other => panic!("no notice: {other:?}"),
        }
    }

    #[test]
    fn ctrl_p_cycles_the_models_with_credentials_and_says_what_the_switch_costs() {
        let mut app = app();
        app.status
            .models
            .push(crate::testing::option("openai/o3", true, 2.0));
        app.stats.requests = 1;
        let ctrl_p = KeyEvent::new(KeyCode::Char('p'), KeyModifiers::CONTROL);
        app.on_key(ctrl_p, Instant::now());
        // gemini has no key: never offered; the cache note prices the whole prompt at the
        // new model's cache-write rate (11.6k tokens × $1.25/MTok).
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::Model("openai/gpt-5".into()))]
        );
        let note = last_notice(&app);
        assert!(
            note.starts_with("model → openai/gpt-5: discards the cache"),
            "{note}"
        );
        assert!(note.contains("≈12k tokens, ≈$0.015 at its"), "{note}");
        // Shift+Ctrl+P goes the other way: from sonnet back to o3 (wrapping).
        let back = KeyEvent::new(
            KeyCode::Char('p'),
            KeyModifiers::CONTROL | KeyModifiers::SHIFT,
        );
        app.on_key(back, Instant::now());
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::Model("openai/o3".into()))]
        );
    }

    #[test]
    fn the_model_list_says_what_switching_to_the_selected_model_does_to_the_cache() {
        let mut app = app();
        app.stats.requests = 2;
        app.on_key(
            KeyEvent::new(KeyCode::Char('l'), KeyModifiers::CONTROL),
            Instant::now(),
        );
        app.on_key(key(KeyCode::Down), Instant::now());
        let screen = crate::testing::screen(&app, 120, 30);
        assert!(
            screen.contains("switching discards the cache: the next request writes the whole prompt again (≈12k tokens, ≈$0.015"),
            "{screen}"
        );
        // The models with a key come first; the one without says what is missing.
        let gpt = screen.find("openai/gpt-5").unwrap();
        let gemini = screen.find("google/gemini-2.5-pro").unwrap();
        assert!(gpt < gemini, "{screen}");
        assert!(
            screen.contains("no key: set GEMINI_API_KEY or /login google"),
            "{screen}"
        );
    }

    #[test]
    fn a_model_without_credentials_is_refused_in_the_picker_with_what_to_do() {
        let mut app = app();
        type_text(&mut app, "/model");
        app.on_key(key(KeyCode::Enter), Instant::now());
        type_text(&mut app, "gemini");
        app.on_key(key(KeyCode::Enter), Instant::now());
        assert!(app.take_effects().is_empty());
        assert_eq!(
            last_notice(&app),
            "google/gemini-2.5-pro: no key: set GEMINI_API_KEY or /login google"
        );
        // Named on the command line of /model, the same.
        app.items.clear();
        type_text(&mut app, "/model google/gemini-2.5-pro");
        app.on_key(key(KeyCode::Enter), Instant::now());
        assert!(app.take_effects().is_empty());
        assert!(last_notice(&app).contains("no key: set GEMINI_API_KEY"));
    }

    #[test]
    fn shift_tab_steps_the_thinking_level_and_wraps_and_stays_off_without_reasoning() {
        let mut app = app();
        for expected in ["high", "xhigh", "off", "minimal"] {
            app.on_key(key(KeyCode::BackTab), Instant::now());
            assert_eq!(
                app.take_effects(),
                vec![Effect::Worker(Command::Thinking(expected.into()))]
            );
            assert_eq!(app.status.thinking, expected);
        }
        app.status.reasoning = false;
        app.on_key(key(KeyCode::BackTab), Instant::now());
        assert!(app.take_effects().is_empty());
        assert!(
            app.hint
                .as_deref()
                .is_some_and(|h| h.contains("does not reason"))
        );
    }
}
