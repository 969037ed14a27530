//! Word wrapping of styled spans to a column width, with prefixes for the first and the
//! following lines (bullets, quote bars, hanging indents). Lines are wrapped here rather than
//! by the paragraph widget so the transcript knows its height and can scroll by lines.

use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar as _, UnicodeWidthStr as _};

/// Wraps `spans` at word boundaries into lines of at most `width` columns. Words longer than a
/// line are cut.
pub fn wrap_spans(
    spans: Vec<Span<'static>>,
    width: usize,
    first_prefix: &[Span<'static>],
    next_prefix: &[Span<'static>],
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut builder = LineBuilder::new(first_prefix, width);
    for span in spans {
        for token in tokens(&span.content) {
            let blank = token.chars().all(char::is_whitespace);
            let token_width = token.width();
            if blank {
                if builder.used > builder.prefix_width && builder.fits(token_width) {
                    builder.push(token, span.style);
                }
                continue;
            }
            if !builder.fits(token_width) && builder.used > builder.prefix_width {
                lines.push(builder.finish());
                builder = LineBuilder::new(next_prefix, width);
            }
            if builder.fits(token_width) {
                builder.push(token, span.style);
                continue;
            }
            // Longer than a whole line: cut it.
            for ch in token.chars() {
                let w = ch.width().unwrap_or(0);
                if !builder.fits(w) && builder.used > builder.prefix_width {
                    lines.push(builder.finish());
                    builder = LineBuilder::new(next_prefix, width);
                }
                builder.push(&ch.to_string(), span.style);
            }
        }
    }
    lines.push(builder.finish());
    lines
}

/// Cuts `spans` into lines of at most `width` columns without looking for word boundaries
/// (code), each line starting with `prefix`.
pub fn wrap_verbatim(
    spans: Vec<Span<'static>>,
    width: usize,
    prefix: &[Span<'static>],
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut builder = LineBuilder::new(prefix, width);
    for span in spans {
        for ch in span.content.chars() {
            let w = ch.width().unwrap_or(0);
            if !builder.fits(w) && builder.used > builder.prefix_width {
                lines.push(builder.finish());
                builder = LineBuilder::new(prefix, width);
            }
            builder.push(&ch.to_string(), span.style);
        }
    }
    lines.push(builder.finish());
    lines
}

/// Splits text into runs of whitespace and runs of everything else.
fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut last_blank: Option<bool> = None;
    for (at, ch) in text.char_indices() {
        let blank = ch.is_whitespace();
        if last_blank.is_some_and(|b| b != blank) {
            out.push(&text[start..at]);
            start = at;
        }
        last_blank = Some(blank);
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

struct LineBuilder {
    spans: Vec<Span<'static>>,
    used: usize,
    prefix_width: usize,
    width: usize,
}

impl LineBuilder {
    fn new(prefix: &[Span<'static>], width: usize) -> Self {
        let prefix_width = prefix.iter().map(|s| s.content.width()).sum();
        Self {
            spans: prefix.to_vec(),
            used: prefix_width,
            prefix_width,
            width,
        }
    }

    fn fits(&self, extra: usize) -> bool {
        self.used + extra <= self.width
    }

    fn push(&mut self, text: &str, style: ratatui::style::Style) {
        self.used += text.width();
        match self.spans.last_mut() {
            Some(last) if last.style == style => {
                last.content.to_mut().push_str(text);
            }
            _ => self.spans.push(Span::styled(text.to_owned(), style)),
        }
    }

    fn finish(mut self) -> Line<'static> {
        // Trailing blanks carry no information and would only push the cursor around.
        loop {
            let count = self.spans.len();
            let Some(last) = self.spans.last_mut() else {
                break;
            };
            let trimmed = last.content.trim_end().len();
            if trimmed == last.content.len() {
                break;
            }
            if trimmed == 0 && count > 1 {
                self.spans.pop();
            } else {
                last.content.to_mut().truncate(trimmed);
                break;
            }
        }
        Line::from(self.spans)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn words_wrap_at_the_width_and_long_words_are_cut() {
        let spans = vec![Span::raw("the quick brown fox abcdefghijklmno")];
        assert_eq!(
            plain(&wrap_spans(spans, 10, &[], &[])),
            vec!["the quick", "brown fox", "abcdefghij", "klmno"]
        );
    }

    #[test]
    fn wide_characters_count_two_columns() {
        let spans = vec![Span::raw("日本語の文章")];
        assert_eq!(
            plain(&wrap_spans(spans, 5, &[], &[])),
            vec!["日本", "語の", "文章"]
        );
    }

    #[test]
    fn verbatim_keeps_spaces_and_prefixes_each_line() {
        let spans = vec![Span::raw("  a  b  c")];
        let prefix = [Span::raw("| ")];
        assert_eq!(
            plain(&wrap_verbatim(spans, 6, &prefix)),
            vec!["|   a", "|  b", "| c"]
        );
    }
}
