//! The prompt editor: multi-line text with a cursor, and the history of submitted prompts.

/// Editable text as lines of chars, with a cursor (line, column in chars).
#[derive(Debug, Clone)]
pub struct Editor {
    lines: Vec<String>,
    row: usize,
    col: usize,
    history: Vec<String>,
    /// Position while browsing history (`None`: editing a fresh draft).
    browsing: Option<usize>,
    /// The draft kept while browsing history.
    draft: String,
}

impl Editor {
    /// An empty editor.
    pub fn new() -> Self {
        Self {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            history: Vec::new(),
            browsing: None,
            draft: String::new(),
        }
    }

    /// The whole text, lines joined by `\n`.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    /// The lines.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// Cursor position: line and column in chars.
    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    /// Whether there is no text.
    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// Replaces the text, cursor at the end.
    pub fn set_text(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_owned).collect();
        if self.lines.is_empty() {
            self.lines.push(String::new());
        }
        self.row = self.lines.len() - 1;
        self.col = self.current().chars().count();
    }

    /// Empties the editor and leaves history browsing.
    pub fn clear(&mut self) {
        self.set_text("");
        self.browsing = None;
    }

    /// Takes the text out (empty afterwards) and records it in the history.
    pub fn submit(&mut self) -> String {
        let text = self.text();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.clear();
        text
    }

    /// Adds an earlier prompt to the history (e.g. the session's own user messages).
    pub fn remember(&mut self, text: &str) {
        if !text.trim().is_empty() && self.history.last().map(String::as_str) != Some(text) {
            self.history.push(text.to_owned());
        }
    }

    /// Drops the last remembered entry (a command holding a secret, such as `/login`'s key).
    pub fn forget_last(&mut self) {
        self.history.pop();
    }

    /// The prompts remembered, oldest first.
    #[cfg(test)]
    pub fn history(&self) -> &[String] {
        &self.history
    }

    fn current(&self) -> &str {
        self.lines.get(self.row).map_or("", String::as_str)
    }

    fn byte_at(&self, col: usize) -> usize {
        let line = self.current();
        line.char_indices()
            .nth(col)
            .map_or(line.len(), |(at, _)| at)
    }

    /// Inserts text at the cursor (newlines split lines).
    pub fn insert_str(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        for (index, piece) in text.split('\n').enumerate() {
            if index > 0 {
                self.newline();
            }
            for ch in piece.chars() {
                self.insert_char(ch);
            }
        }
    }

    /// Inserts one char at the cursor.
    pub fn insert_char(&mut self, ch: char) {
        let at = self.byte_at(self.col);
        if let Some(line) = self.lines.get_mut(self.row) {
            line.insert(at, if ch == '\t' { ' ' } else { ch });
            self.col += 1;
        }
    }

    /// Splits the line at the cursor.
    pub fn newline(&mut self) {
        let at = self.byte_at(self.col);
        let rest = self
            .lines
            .get_mut(self.row)
            .map(|line| line.split_off(at))
            .unwrap_or_default();
        self.lines.insert(self.row + 1, rest);
        self.row += 1;
        self.col = 0;
    }

    /// Deletes the char before the cursor, joining lines at a line start.
    pub fn backspace(&mut self) {
        if self.col > 0 {
            let start = self.byte_at(self.col - 1);
            let end = self.byte_at(self.col);
            if let Some(line) = self.lines.get_mut(self.row) {
                line.replace_range(start..end, "");
            }
            self.col -= 1;
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.current().chars().count();
            if let Some(previous) = self.lines.get_mut(self.row) {
                previous.push_str(&line);
            }
        }
    }

    /// Deletes the char under the cursor, joining the next line at a line end.
    pub fn delete(&mut self) {
        let len = self.current().chars().count();
        if self.col < len {
            let start = self.byte_at(self.col);
            let end = self.byte_at(self.col + 1);
            if let Some(line) = self.lines.get_mut(self.row) {
                line.replace_range(start..end, "");
            }
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            if let Some(line) = self.lines.get_mut(self.row) {
                line.push_str(&next);
            }
        }
    }

    /// Deletes the word before the cursor (Ctrl+W).
    pub fn delete_word(&mut self) {
        let chars: Vec<char> = self.current().chars().collect();
        let mut start = self.col;
        while start > 0 && chars[start - 1].is_whitespace() {
            start -= 1;
        }
        while start > 0 && !chars[start - 1].is_whitespace() {
            start -= 1;
        }
        if start == self.col {
            self.backspace();
            return;
        }
        let (from, to) = (self.byte_at(start), self.byte_at(self.col));
        if let Some(line) = self.lines.get_mut(self.row) {
            line.replace_range(from..to, "");
        }
        self.col = start;
    }

    /// Deletes from the line start to the cursor (Ctrl+U).
    pub fn delete_to_start(&mut self) {
        let to = self.byte_at(self.col);
        if let Some(line) = self.lines.get_mut(self.row) {
            line.replace_range(..to, "");
        }
        self.col = 0;
    }

    /// Deletes from the cursor to the line end (Ctrl+K).
    pub fn delete_to_end(&mut self) {
        let from = self.byte_at(self.col);
        if let Some(line) = self.lines.get_mut(self.row) {
            line.truncate(from);
        }
    }

    /// Moves one char left (to the previous line's end at a line start).
    pub fn left(&mut self) {
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.current().chars().count();
        }
    }

    /// Moves one char right (to the next line's start at a line end).
    pub fn right(&mut self) {
        if self.col < self.current().chars().count() {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    /// To the line start.
    pub fn home(&mut self) {
        self.col = 0;
    }

    /// To the line end.
    pub fn end(&mut self) {
        self.col = self.current().chars().count();
    }

    /// One line up; on the first line, the previous prompt from the history.
    pub fn up(&mut self) {
        if self.row > 0 {
            self.row -= 1;
            self.col = self.col.min(self.current().chars().count());
            return;
        }
        let next = match self.browsing {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text();
                self.history.len() - 1
            }
            Some(0) => return,
            Some(at) => at - 1,
        };
        self.browsing = Some(next);
        let text = self.history[next].clone();
        self.set_text(&text);
        // Stay on the first line so another Up goes further back.
        self.row = 0;
        self.col = self.current().chars().count();
    }

    /// One line down; on the last line, the next prompt from the history (then the draft).
    pub fn down(&mut self) {
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = self.col.min(self.current().chars().count());
            return;
        }
        let Some(at) = self.browsing else {
            return;
        };
        if at + 1 < self.history.len() {
            self.browsing = Some(at + 1);
            let text = self.history[at + 1].clone();
            self.set_text(&text);
        } else {
            self.browsing = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        }
    }

    /// Whether the text is a slash command (one line starting with `/`).
    pub fn is_command(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].starts_with('/')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_newlines_and_deleting_edit_the_text() {
        let mut editor = Editor::new();
        editor.insert_str("héllo");
        editor.newline();
        editor.insert_str("wörld");
        assert_eq!(editor.text(), "héllo\nwörld");
        assert_eq!(editor.cursor(), (1, 5));
        editor.home();
        editor.backspace();
        assert_eq!(editor.text(), "héllowörld");
        assert_eq!(editor.cursor(), (0, 5));
        editor.delete();
        assert_eq!(editor.text(), "hélloörld");
        editor.delete_word();
        assert_eq!(editor.text(), "örld");
        editor.end();
        editor.insert_str(" a\r\nb");
        assert_eq!(editor.text(), "örld a\nb");
    }

    #[test]
    fn history_walks_back_and_returns_to_the_draft() {
        let mut editor = Editor::new();
        editor.insert_str("first");
        assert_eq!(editor.submit(), "first");
        editor.insert_str("second\nline two");
        editor.submit();
        editor.insert_str("draft");
        editor.up();
        assert_eq!(editor.text(), "second\nline two");
        assert_eq!(editor.cursor().0, 0);
        editor.up();
        assert_eq!(editor.text(), "first");
        editor.up();
        assert_eq!(editor.text(), "first");
        editor.down();
        assert_eq!(editor.text(), "second\nline two");
        editor.down(); // moves to the second line of that prompt
        editor.down();
        assert_eq!(editor.text(), "draft");
        assert_eq!(editor.history(), ["first", "second\nline two"]);
    }

    #[test]
    fn a_repeated_prompt_is_remembered_once() {
        let mut editor = Editor::new();
        editor.insert_str("same");
        editor.submit();
        editor.insert_str("same");
        editor.submit();
        editor.insert_str("   ");
        editor.submit();
        assert_eq!(editor.history(), ["same"]);
    }
}
