//! `/settings`: thinking level, theme and auto-compaction in one list; Enter steps the chosen
//! setting to its next value, applied at once and saved in the user's config.toml (through
//! strata-host's config editing): `thinking` (where new sessions start), `theme`,
//! `[compaction] enabled`.

use super::{App, Level};
use crate::picker::{Picker, PickerItem, PickerKind};
use crate::theme;
use crate::worker::Command;

impl App {
    /// Opens the list, the row `selected` (a setting's key) selected.
    pub(super) fn open_settings_at(&mut self, selected: &str) {
        let on_off = |on: bool| if on { "on" } else { "off" };
        let items = vec![
            PickerItem::new(
                format!("thinking level: {}", self.status.thinking),
                "this session and new ones (saved in your config; Shift+Tab: this session)",
                "thinking",
            ),
            PickerItem::new(
                format!("theme: {}", self.theme),
                format!("{} (saved in your config)", theme::THEMES.join(" / ")),
                "theme",
            ),
            PickerItem::new(
                format!("auto-compaction: {}", on_off(self.status.auto_compaction)),
                "[compaction] enabled (saved in your config)",
                "compaction",
            ),
        ];
        let mut picker = Picker::new(
            PickerKind::Settings,
            "Settings (Enter changes, Esc closes)",
            items,
        );
        picker.select_key(selected);
        self.picker = Some(picker);
    }

    pub(super) fn open_settings(&mut self) {
        self.open_settings_at("thinking");
    }

    /// Enter on a setting: its next value, applied and (theme, compaction) saved.
    pub(super) fn setting_chosen(&mut self, key: &str) {
        match key {
            "thinking" => {
                let before = self.status.thinking.clone();
                self.cycle_thinking();
                let level = strata_host::model::THINKING_LEVELS.iter().find(|level| {
                    **level == self.status.thinking && self.status.thinking != before
                });
                if let Some(level) = level {
                    self.save_setting(&["thinking"], Saved::Text(level));
                }
            }
            "theme" => {
                let at = theme::THEMES.iter().position(|t| *t == self.theme);
                let next = theme::THEMES[at.map_or(0, |i| (i + 1) % theme::THEMES.len())];
                self.theme = next;
                self.save_setting(&["theme"], Saved::Text(next));
            }
            "compaction" => {
                let enabled = !self.status.auto_compaction;
                self.status.auto_compaction = enabled;
                self.send(Command::AutoCompaction(enabled));
                self.save_setting(&["compaction", "enabled"], Saved::Flag(enabled));
            }
            _ => {}
        }
        self.open_settings_at(key);
    }

    fn save_setting(&mut self, keys: &[&str], value: Saved) {
        let Some(path) = self.config_file.clone() else {
            self.notice(Level::Error, "no user config directory: set HOME");
            return;
        };
        let (saved, shown) = match value {
            Saved::Text(text) => (
                strata_host::config_edit::set_value(&path, keys, text),
                format!("\"{text}\""),
            ),
            Saved::Flag(flag) => (
                strata_host::config_edit::set_value(&path, keys, flag),
                flag.to_string(),
            ),
        };
        match saved {
            Ok(()) => self.notice(
                Level::Info,
                format!("{} = {shown} saved in {}", keys.join("."), path.display()),
            ),
            Err(e) => self.notice(Level::Error, format!("could not save the setting: {e:#}")),
        }
    }
}

/// A value `/settings` saves.
enum Saved {
    Text(&'static str),
    Flag(bool),
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use ratatui::crossterm::event::KeyCode;

    use super::super::Effect;
    use super::*;
    use crate::testing::{app, key, type_text};

    #[test]
    fn settings_change_the_theme_and_compaction_and_save_them() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        let mut app = app();
        app.config_file = Some(file.clone());
        type_text(&mut app, "/settings");
        app.on_key(key(KeyCode::Enter), Instant::now());
        app.on_key(key(KeyCode::Enter), Instant::now());
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::Thinking("high".into()))]
        );
        app.on_key(key(KeyCode::Down), Instant::now());
        app.on_key(key(KeyCode::Enter), Instant::now());
        assert_eq!(app.theme, "light");
        // The list stays open on the same row, showing the new value.
        let picker = app.picker.as_ref().unwrap();
        assert_eq!(picker.current().unwrap().label, "theme: light");
        app.on_key(key(KeyCode::Down), Instant::now());
        app.on_key(key(KeyCode::Enter), Instant::now());
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::AutoCompaction(false))]
        );
        let saved: toml::Table = std::fs::read_to_string(&file).unwrap().parse().unwrap();
        assert_eq!(saved["theme"].as_str(), Some("light"));
        assert_eq!(saved["thinking"].as_str(), Some("high"));
        assert_eq!(saved["compaction"]["enabled"].as_bool(), Some(false));
    }
}
