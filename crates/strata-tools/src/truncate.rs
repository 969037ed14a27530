//! Cutting long text to a line and byte budget, keeping the head (files) or the tail (commands).

use serde::Serialize;

/// Default most lines in one result.
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Default most bytes in one result (50 KB).
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;

/// Which limit cut the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TruncatedBy {
    /// The line limit.
    Lines,
    /// The byte limit.
    Bytes,
}

/// The result of cutting text, with the counts a note and a UI need.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// The text kept.
    #[serde(skip)]
    pub content: String,
    /// Whether anything was cut.
    pub truncated: bool,
    /// Which limit cut it, if any.
    pub truncated_by: Option<TruncatedBy>,
    /// Lines in the whole text.
    pub total_lines: usize,
    /// Bytes in the whole text.
    pub total_bytes: usize,
    /// Lines kept.
    pub output_lines: usize,
    /// Bytes kept.
    pub output_bytes: usize,
    /// Tail mode only: the one kept line is the end of a longer line.
    pub last_line_partial: bool,
    /// Head mode only: the first line alone is over the byte limit, so nothing was kept.
    pub first_line_exceeds_limit: bool,
    /// The line limit applied.
    pub max_lines: usize,
    /// The byte limit applied.
    pub max_bytes: usize,
}

impl Truncation {
    fn whole(content: &str, max_lines: usize, max_bytes: usize, total_lines: usize) -> Self {
        Self {
            content: content.to_owned(),
            truncated: false,
            truncated_by: None,
            total_lines,
            total_bytes: content.len(),
            output_lines: total_lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines,
            max_bytes,
        }
    }
}

/// Keeps the first whole lines that fit both limits; never a partial line.
pub fn truncate_head(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let lines: Vec<&str> = content.split('\n').collect();
    let total_lines = lines.len();
    if total_lines <= max_lines && content.len() <= max_bytes {
        return Truncation::whole(content, max_lines, max_bytes, total_lines);
    }
    let first_len = lines.first().map_or(0, |l| l.len());
    if first_len > max_bytes {
        return Truncation {
            content: String::new(),
            truncated: true,
            truncated_by: Some(TruncatedBy::Bytes),
            total_lines,
            total_bytes: content.len(),
            output_lines: 0,
            output_bytes: 0,
            last_line_partial: false,
            first_line_exceeds_limit: true,
            max_lines,
            max_bytes,
        };
    }
    let mut kept = 0usize;
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    for (i, line) in lines.iter().enumerate().take(max_lines) {
        let cost = line.len() + usize::from(i > 0);
        if bytes + cost > max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        bytes += cost;
        kept += 1;
    }
    if kept >= max_lines {
        by = TruncatedBy::Lines;
    }
    let text = lines[..kept].join("\n");
    Truncation {
        output_bytes: text.len(),
        content: text,
        truncated: true,
        truncated_by: Some(by),
        total_lines,
        total_bytes: content.len(),
        output_lines: kept,
        last_line_partial: false,
        first_line_exceeds_limit: false,
        max_lines,
        max_bytes,
    }
}

/// Keeps the last whole lines that fit both limits; if even the last line is too long, keeps
/// its end.
pub fn truncate_tail(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let lines: Vec<&str> = content.split('\n').collect();
    let total_lines = lines.len();
    if total_lines <= max_lines && content.len() <= max_bytes {
        return Truncation::whole(content, max_lines, max_bytes, total_lines);
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    let mut last_line_partial = false;
    for line in lines.iter().rev() {
        if kept.len() >= max_lines {
            break;
        }
        let cost = line.len() + usize::from(!kept.is_empty());
        if bytes + cost > max_bytes {
            by = TruncatedBy::Bytes;
            if kept.is_empty() {
                let tail = tail_of_str(line, max_bytes);
                bytes = tail.len();
                kept.push(tail);
                last_line_partial = true;
            }
            break;
        }
        kept.push(line);
        bytes += cost;
    }
    if kept.len() >= max_lines && bytes <= max_bytes && !last_line_partial {
        by = TruncatedBy::Lines;
    }
    kept.reverse();
    let text = kept.join("\n");
    Truncation {
        output_bytes: text.len(),
        content: text,
        truncated: true,
        truncated_by: Some(by),
        total_lines,
        total_bytes: content.len(),
        output_lines: kept.len(),
        last_line_partial,
        first_line_exceeds_limit: false,
        max_lines,
        max_bytes,
    }
}

/// The last at most `max_bytes` bytes of `s`, starting on a character boundary.
fn tail_of_str(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut start = s.len() - max_bytes;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// The first at most `max_chars` characters of a line, with `... [truncated]` if cut.
pub fn truncate_line(line: &str, max_chars: usize) -> (String, bool) {
    match line.char_indices().nth(max_chars) {
        None => (line.to_owned(), false),
        Some((cut, _)) => (format!("{}... [truncated]", &line[..cut]), true),
    }
}

/// `512B`, `1.5KB`, `2.0MB`.
pub fn format_size(bytes: u64) -> String {
    const KB: u64 = 1024;
    if bytes < KB {
        format!("{bytes}B")
    } else if bytes < KB * KB {
        format!("{:.1}KB", bytes as f64 / KB as f64)
    } else {
        format!("{:.1}MB", bytes as f64 / (KB * KB) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched() {
        let t = truncate_head("a\nb", 10, 100);
        assert!(!t.truncated);
        assert_eq!(t.content, "a\nb");
        assert_eq!(t.total_lines, 2);
    }

    #[test]
    fn head_keeps_first_lines_by_line_limit() {
        let t = truncate_head("1\n2\n3\n4", 2, 100);
        assert_eq!(t.content, "1\n2");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!((t.output_lines, t.total_lines), (2, 4));
    }

    #[test]
    fn head_keeps_whole_lines_by_byte_limit() {
        let t = truncate_head("aaaa\nbbbb\ncccc", 100, 10);
        assert_eq!(t.content, "aaaa\nbbbb");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
    }

    #[test]
    fn head_flags_an_oversized_first_line() {
        let t = truncate_head(&"x".repeat(20), 100, 10);
        assert!(t.first_line_exceeds_limit);
        assert_eq!(t.content, "");
    }

    #[test]
    fn tail_keeps_last_lines() {
        let t = truncate_tail("1\n2\n3\n4", 2, 100);
        assert_eq!(t.content, "3\n4");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
    }

    #[test]
    fn tail_keeps_the_end_of_an_oversized_last_line_on_a_char_boundary() {
        let t = truncate_tail("a\nééééé", 100, 5);
        assert!(t.last_line_partial);
        assert_eq!(t.content, "éé");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
    }

    #[test]
    fn line_truncation_counts_characters() {
        assert_eq!(
            truncate_line("héllo", 2),
            ("hé... [truncated]".to_owned(), true)
        );
        assert_eq!(truncate_line("hé", 2), ("hé".to_owned(), false));
    }

    #[test]
    fn sizes_read_like_pi() {
        assert_eq!(format_size(512), "512B");
        assert_eq!(format_size(51200), "50.0KB");
        assert_eq!(format_size(3 * 1024 * 1024), "3.0MB");
    }
}
