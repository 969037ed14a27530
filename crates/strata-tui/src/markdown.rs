//! Markdown as terminal lines: headings, emphasis, code spans, fenced code, lists, quotes and
//! rules, wrapped to a width. Written for text that is still streaming: an unclosed fence or
//! emphasis simply runs to the end of what has arrived.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr as _;

use super::wrap::wrap_spans;

/// Style of inline code and code blocks.
const CODE: Style = Style::new().fg(Color::Yellow);
/// Style of headings.
const HEADING: Style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
/// Style of the decorations (bullets, quote bars, fences).
const MUTED: Style = Style::new().fg(Color::DarkGray);

/// Renders `text` as lines at most `width` columns wide, each styled on top of `base`.
pub fn render(text: &str, width: u16, base: Style) -> Vec<Line<'static>> {
    let width = usize::from(width.max(8));
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    for raw in text.lines() {
        let trimmed = raw.trim_start();
        if let Some(marker) = &fence {
            if trimmed.starts_with(marker.as_str()) && trimmed.trim_end() == marker.as_str() {
                fence = None;
                continue;
            }
            code_line(raw, width, &mut out);
            continue;
        }
        if let Some(marker) = fence_marker(trimmed) {
            let lang = trimmed[marker.len()..].trim();
            fence = Some(marker);
            let label = if lang.is_empty() { "code" } else { lang };
            out.push(Line::from(Span::styled(format!("┌ {label}"), MUTED)));
            continue;
        }
        if trimmed.is_empty() {
            out.push(Line::default());
        } else if let Some((level, heading)) = heading(trimmed) {
            let mut style = base.patch(HEADING);
            if level == 1 {
                style = style.add_modifier(Modifier::UNDERLINED);
            }
            out.extend(wrap_spans(inline(heading, style), width, &[], &[]));
        } else if is_rule(trimmed) {
            out.push(Line::from(Span::styled("─".repeat(width.min(60)), MUTED)));
        } else if let Some(quoted) = trimmed.strip_prefix('>') {
            let bar = [Span::styled("│ ", MUTED)];
            let style = base.add_modifier(Modifier::ITALIC);
            out.extend(wrap_spans(
                inline(quoted.trim_start(), style),
                width,
                &bar,
                &bar,
            ));
        } else if let Some((marker, rest)) = list_item(trimmed) {
            let indent = " ".repeat(raw.len() - trimmed.len());
            let first = [
                Span::raw(indent.clone()),
                Span::styled(marker.clone(), MUTED),
            ];
            let hang = [Span::raw(" ".repeat(indent.len() + marker.width()))];
            out.extend(wrap_spans(inline(rest, base), width, &first, &hang));
        } else {
            out.extend(wrap_spans(inline(raw, base), width, &[], &[]));
        }
    }
    if fence.is_some() {
        // Still streaming inside a block: show where it stands.
        out.push(Line::from(Span::styled("┆", MUTED)));
    }
    out
}

/// A line of a fenced block: kept verbatim (tabs as four spaces), cut into `width` pieces.
fn code_line(raw: &str, width: usize, out: &mut Vec<Line<'static>>) {
    let text = raw.replace('\t', "    ");
    let gutter = [Span::styled("│ ", MUTED)];
    let spans = vec![Span::styled(text, CODE)];
    out.extend(super::wrap::wrap_verbatim(spans, width, &gutter));
}

fn fence_marker(trimmed: &str) -> Option<String> {
    for ch in ['`', '~'] {
        let count = trimmed.chars().take_while(|c| *c == ch).count();
        if count >= 3 {
            return Some(ch.to_string().repeat(count));
        }
    }
    None
}

fn heading(trimmed: &str) -> Option<(usize, &str)> {
    let level = trimmed.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&level) {
        let rest = &trimmed[level..];
        if let Some(text) = rest.strip_prefix(' ') {
            return Some((level, text.trim()));
        }
    }
    None
}

fn is_rule(trimmed: &str) -> bool {
    let compact: String = trimmed.chars().filter(|c| !c.is_whitespace()).collect();
    compact.len() >= 3
        && ['-', '*', '_']
            .iter()
            .any(|mark| compact.chars().all(|c| c == *mark))
}

/// `- item`, `* item`, `+ item`, `1. item`, `2) item`: the marker to show and the item text.
fn list_item(trimmed: &str) -> Option<(String, &str)> {
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = trimmed.strip_prefix(bullet) {
            if let Some(done) = rest.strip_prefix("[x] ").or(rest.strip_prefix("[X] ")) {
                return Some(("☑ ".into(), done));
            }
            if let Some(open) = rest.strip_prefix("[ ] ") {
                return Some(("☐ ".into(), open));
            }
            return Some(("• ".into(), rest));
        }
    }
    let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && digits < 10 {
        let rest = &trimmed[digits..];
        for close in [". ", ") "] {
            if let Some(text) = rest.strip_prefix(close) {
                return Some((format!("{}{close}", &trimmed[..digits]), text));
            }
        }
    }
    None
}

/// Inline markup: `**bold**`, `__bold__`, `*italic*`, `_italic_`, `` `code` ``, `~~strike~~`,
/// `[text](url)`.
pub fn inline(text: &str, base: Style) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut current = String::new();
    let mut bold = false;
    let mut italic = false;
    let mut strike = false;
    let style_of = |bold: bool, italic: bool, strike: bool| {
        let mut style = base;
        if bold {
            style = style.add_modifier(Modifier::BOLD);
        }
        if italic {
            style = style.add_modifier(Modifier::ITALIC);
        }
        if strike {
            style = style.add_modifier(Modifier::CROSSED_OUT);
        }
        style
    };
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let flush = |current: &mut String, spans: &mut Vec<Span<'static>>, style: Style| {
            if !current.is_empty() {
                spans.push(Span::styled(std::mem::take(current), style));
            }
        };
        match c {
            '`' => {
                if let Some(len) = chars[i + 1..].iter().position(|x| *x == '`') {
                    flush(&mut current, &mut spans, style_of(bold, italic, strike));
                    let code: String = chars[i + 1..i + 1 + len].iter().collect();
                    spans.push(Span::styled(code, base.patch(CODE)));
                    i += len + 2;
                    continue;
                }
                current.push(c);
            }
            '*' | '_' if next == Some(c) => {
                flush(&mut current, &mut spans, style_of(bold, italic, strike));
                bold = !bold;
                i += 2;
                continue;
            }
            '~' if next == Some('~') => {
                flush(&mut current, &mut spans, style_of(bold, italic, strike));
                strike = !strike;
                i += 2;
                continue;
            }
            '*' if italic || next.is_some_and(|n| !n.is_whitespace()) => {
                flush(&mut current, &mut spans, style_of(bold, italic, strike));
                italic = !italic;
            }
            '_' if (italic && next.is_none_or(|n| !n.is_alphanumeric()))
                || (!italic
                    && prev.is_none_or(|p| !p.is_alphanumeric())
                    && next.is_some_and(|n| !n.is_whitespace())) =>
            {
                flush(&mut current, &mut spans, style_of(bold, italic, strike));
                italic = !italic;
            }
            '[' => {
                if let Some((label, url, used)) = link(&chars[i..]) {
                    flush(&mut current, &mut spans, style_of(bold, italic, strike));
                    let style = style_of(bold, italic, strike)
                        .fg(Color::Blue)
                        .add_modifier(Modifier::UNDERLINED);
                    spans.push(Span::styled(label.clone(), style));
                    if url != label {
                        spans.push(Span::styled(format!(" ({url})"), MUTED));
                    }
                    i += used;
                    continue;
                }
                current.push(c);
            }
            _ => current.push(c),
        }
        i += 1;
    }
    if !current.is_empty() {
        spans.push(Span::styled(current, style_of(bold, italic, strike)));
    }
    spans
}

/// `[label](url)` at the start of `chars`: label, url and the chars consumed.
fn link(chars: &[char]) -> Option<(String, String, usize)> {
    let close = chars.iter().position(|c| *c == ']')?;
    if chars.get(close + 1) != Some(&'(') {
        return None;
    }
    let end = chars[close + 2..].iter().position(|c| *c == ')')? + close + 2;
    let label: String = chars[1..close].iter().collect();
    let url: String = chars[close + 2..end].iter().collect();
    if label.is_empty() || url.contains(' ') {
        return None;
    }
    Some((label, url, end + 1))
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
    fn headings_lists_and_fences_are_laid_out() {
        let text = "# Title\n\nSome **bold** and `code`.\n\n- one\n- two\n1. first\n```rust\nfn main() {}\n```\n> quoted\n---";
        let lines = render(text, 40, Style::default());
        assert_eq!(
            plain(&lines),
            vec![
                "Title",
                "",
                "Some bold and code.",
                "",
                "• one",
                "• two",
                "1. first",
                "┌ rust",
                "│ fn main() {}",
                "│ quoted",
                "─".repeat(40).as_str(),
            ]
        );
        assert!(
            lines[0].spans[0]
                .style
                .add_modifier
                .contains(Modifier::BOLD)
        );
    }

    #[test]
    fn emphasis_and_code_spans_get_their_styles() {
        let spans = inline("a **b** *c* `d` snake_case_name", Style::default());
        let texts: Vec<&str> = spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(
            texts,
            vec!["a ", "b", " ", "c", " ", "d", " snake_case_name"]
        );
        assert!(spans[1].style.add_modifier.contains(Modifier::BOLD));
        assert!(spans[3].style.add_modifier.contains(Modifier::ITALIC));
        assert_eq!(spans[5].style.fg, Some(Color::Yellow));
        assert!(!spans[6].style.add_modifier.contains(Modifier::ITALIC));
    }

    #[test]
    fn links_show_their_target() {
        let spans = inline("see [docs](https://x.y/z)", Style::default());
        let texts: Vec<&str> = spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(texts, vec!["see ", "docs", " (https://x.y/z)"]);
    }

    #[test]
    fn list_items_wrap_under_their_text() {
        let lines = render("- alpha beta gamma delta", 14, Style::default());
        assert_eq!(plain(&lines), vec!["• alpha beta", "  gamma delta"]);
    }

    #[test]
    fn an_unclosed_fence_while_streaming_stays_code() {
        let lines = render("```\nlet x = 1;", 30, Style::default());
        assert_eq!(plain(&lines), vec!["┌ code", "│ let x = 1;", "┆"]);
    }
}
