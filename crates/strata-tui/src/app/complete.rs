//! `@` file completion in the editor, as Pi has it: typing `@` and part of a path offers the
//! project's files (`.gitignore` respected, strata-tools' walk) fuzzily matched; Up and Down
//! choose among them and Tab puts the chosen one in. The prompt keeps `@path` as written: Pi's editor sends the reference and
//! the model reads the file with its tools (only `@file` arguments on the command line are
//! inlined).

use std::path::Path;

use super::App;

/// Most files listed for completion (a huge tree is cut, not walked forever).
const MAX_FILES: usize = 20_000;

/// Suggestions shown under the editor.
pub const SHOWN: usize = 6;

/// The project's files, listed when `@` is first typed, and the suggestion chosen.
#[derive(Debug, Default)]
pub struct Completion {
    files: Option<Vec<String>>,
    /// The query the choice was made for, and the suggestion's index.
    chosen: (String, usize),
}

impl Completion {
    /// Lists the files under `root` unless already listed.
    pub fn load(&mut self, root: &Path) {
        if self.files.is_none() {
            self.files = Some(strata_tools::project_files(root, MAX_FILES));
        }
    }
}

impl App {
    /// The `@word` the cursor ends: its length in chars (with the `@`) and the text after `@`.
    pub fn at_query(&self) -> Option<(usize, String)> {
        let (row, col) = self.editor.cursor();
        let line = self.editor.lines().get(row)?;
        let before: String = line.chars().take(col).collect();
        let word = before.rsplit(char::is_whitespace).next()?;
        let query = word.strip_prefix('@')?;
        Some((word.chars().count(), query.to_owned()))
    }

    /// Whether the project's files have been listed (after an `@` was typed, or Tab).
    pub fn files_listed(&self) -> bool {
        self.completion.files.is_some()
    }

    /// The suggestion chosen for `query` (the first until Up or Down moves).
    pub fn chosen_suggestion(&self, query: &str) -> usize {
        let (for_query, index) = &self.completion.chosen;
        if for_query == query { *index } else { 0 }
    }

    /// Up / Down while suggestions show: choose another. False when none show.
    pub(super) fn move_suggestion(&mut self, step: isize) -> bool {
        let Some((_, query)) = self.at_query().filter(|_| self.files_listed()) else {
            return false;
        };
        let count = self.file_matches(&query, SHOWN).len();
        if count == 0 {
            return false;
        }
        let at = self.chosen_suggestion(&query) as isize + step;
        self.completion.chosen = (query, at.rem_euclid(count as isize) as usize);
        true
    }

    /// Up to `limit` project paths matching `query`, best first.
    pub fn file_matches(&self, query: &str, limit: usize) -> Vec<&str> {
        let Some(files) = &self.completion.files else {
            return Vec::new();
        };
        let mut scored: Vec<(i64, &str)> = files
            .iter()
            .filter_map(|path| fuzzy_score(path, query).map(|score| (score, path.as_str())))
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.len().cmp(&b.1.len())));
        scored.into_iter().take(limit).map(|(_, p)| p).collect()
    }

    /// `@` was typed: list the files (once) so the suggestions can show.
    pub(super) fn at_typed(&mut self) {
        if self.status.cwd.as_os_str().is_empty() {
            return;
        }
        let cwd = self.status.cwd.clone();
        self.completion.load(&cwd);
    }

    /// Tab after `@…`: the best match replaces the word (a directory stays open for more).
    /// Returns false when there is nothing to complete.
    pub(super) fn complete_at(&mut self) -> bool {
        let Some((length, query)) = self.at_query() else {
            return false;
        };
        // Text pasted or recalled from the history: list the files now.
        self.at_typed();
        let chosen = self.chosen_suggestion(&query);
        let Some(best) = self
            .file_matches(&query, SHOWN)
            .get(chosen)
            .map(|p| (*p).to_owned())
        else {
            return false;
        };
        for _ in 0..length {
            self.editor.backspace();
        }
        self.editor.insert_str(&format!("@{best}"));
        if !best.ends_with('/') {
            self.editor.insert_char(' ');
        }
        true
    }
}

/// How well `path` matches `query`: every query char in order (case-insensitive), more for
/// runs, for matches at the start of a name part and in the file name; `None` when it does
/// not match.
fn fuzzy_score(path: &str, query: &str) -> Option<i64> {
    if query.is_empty() {
        return Some(0);
    }
    let lower = path.to_lowercase();
    let chars: Vec<char> = lower.chars().collect();
    let name_start = lower
        .trim_end_matches('/')
        .rfind('/')
        .map_or(0, |i| lower[..=i].chars().count());
    let mut score = 0i64;
    let mut at = 0usize;
    let mut previous: Option<usize> = None;
    for wanted in query.to_lowercase().chars() {
        let found = (at..chars.len()).find(|&i| chars[i] == wanted)?;
        score += 1;
        if previous.is_some_and(|p| p + 1 == found) {
            score += 5;
        }
        if found == 0 || matches!(chars[found - 1], '/' | '_' | '-' | '.') {
            score += 3;
        }
        if found >= name_start {
            score += 2;
        }
        previous = Some(found);
        at = found + 1;
    }
    if lower[..].contains(&query.to_lowercase()) {
        score += 10;
    }
    Some(score)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_runs_rank_before_scattered_letters() {
        assert!(
            fuzzy_score("src/greeting.rs", "greet") > fuzzy_score("src/grammar/eat.rs", "greet")
        );
        assert!(fuzzy_score("src/greeting.rs", "sgr").is_some());
        assert_eq!(fuzzy_score("src/greeting.rs", "xyz"), None);
        assert_eq!(fuzzy_score("a", ""), Some(0));
    }
}

#[cfg(test)]
mod completion_tests {
    use std::time::Instant;

    use ratatui::crossterm::event::KeyCode;

    use super::SHOWN;
    use crate::testing::{app, key, type_text};

    #[test]
    fn tab_after_at_puts_in_the_best_matching_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/greeting.rs"), "").unwrap();
        std::fs::write(dir.path().join("README.md"), "").unwrap();
        let mut app = app();
        app.status.cwd = dir.path().to_path_buf();
        type_text(&mut app, "fix @grt");
        assert_eq!(app.file_matches("grt", 5), vec!["src/greeting.rs"]);
        app.on_key(key(KeyCode::Tab), Instant::now());
        assert_eq!(app.editor.text(), "fix @src/greeting.rs ");
        // A directory stays open for the rest of the path.
        type_text(&mut app, "@sr");
        app.on_key(key(KeyCode::Tab), Instant::now());
        assert_eq!(app.editor.text(), "fix @src/greeting.rs @src/");
        // Down chooses the next suggestion (wrapping); Tab puts it in.
        app.editor.clear();
        type_text(&mut app, "@r");
        let shown = app.file_matches("r", SHOWN).len();
        assert!(shown >= 2, "{:?}", app.file_matches("r", SHOWN));
        let second = app.file_matches("r", SHOWN)[1].to_owned();
        app.on_key(key(KeyCode::Down), Instant::now());
        assert_eq!(app.chosen_suggestion("r"), 1);
        app.on_key(key(KeyCode::Tab), Instant::now());
        assert!(app.editor.text().starts_with(&format!("@{second}")));
        assert!(app.take_effects().is_empty());
    }
}
