//! Restoring files after a move in the tree (`/tree`, `/fork`): when the files strata's tools
//! changed are not as they were at the entry now current, the files that would change are
//! listed and a picker offers to restore them (what `/rewind` does) or keep them.

use super::{App, Item};
use crate::picker::{Picker, PickerItem, PickerKind};
use crate::worker::Command;

/// The picker's keys.
const RESTORE: &str = "restore";
const KEEP: &str = "keep";

impl App {
    /// The worker found the files differ from the entry moved to: `lines` say how.
    pub(super) fn offer_restore(&mut self, lines: Vec<String>) {
        let count = lines
            .iter()
            .filter(|line| !line.starts_with("not restorable"))
            .count();
        self.items.push(Item::Block {
            title: "the files differ from this entry".into(),
            lines,
        });
        let files = if count == 1 { "file" } else { "files" };
        self.picker = Some(Picker::new(
            PickerKind::RestoreFiles,
            "Restore the files too?",
            vec![
                PickerItem::new(
                    "Restore files to this point",
                    format!("{count} {files}, as /rewind does"),
                    RESTORE,
                ),
                PickerItem::new("Keep the files as they are", "/rewind later", KEEP),
            ],
        ));
    }

    /// The answer to [`App::offer_restore`]'s picker.
    pub(super) fn restore_chosen(&mut self, key: &str) {
        if key == RESTORE {
            self.send(Command::RewindFiles);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use ratatui::crossterm::event::KeyCode;

    use super::super::{App, Effect, Item};
    use crate::testing::{app, key};
    use crate::worker::{Command, Reply};

    fn offered() -> App {
        let mut app = app();
        app.on_reply(Reply::OfferRestore(vec![
            "/p/a.txt: changed since".into(),
            "/p/b.txt: did not exist here".into(),
        ]));
        app
    }

    #[test]
    fn the_offer_lists_the_files_and_restores_them_when_chosen() {
        let mut app = offered();
        assert!(app.items.iter().any(|item| matches!(
            item,
            Item::Block { lines, .. } if lines.len() == 2
        )));
        let picker = app.picker.as_ref().unwrap();
        assert_eq!(picker.items[0].label, "Restore files to this point");
        assert!(picker.items[0].detail.starts_with("2 files"));
        app.on_key(key(KeyCode::Enter), Instant::now());
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::RewindFiles)]
        );
    }

    #[test]
    fn keeping_the_files_or_escaping_restores_nothing() {
        let mut app = offered();
        app.on_key(key(KeyCode::Down), Instant::now());
        app.on_key(key(KeyCode::Enter), Instant::now());
        assert!(app.picker.is_none());
        assert_eq!(app.take_effects(), vec![]);
        let mut app = offered();
        app.on_key(key(KeyCode::Esc), Instant::now());
        assert!(app.picker.is_none());
        assert_eq!(app.take_effects(), vec![]);
    }
}
