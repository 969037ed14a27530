//! Escaping and the few HTML building blocks the renderer repeats.

/// Text made safe for element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// `<details class="…">` with an escaped summary and `body` (already HTML); `open` unfolds it.
pub fn details(class: &str, summary: &str, body: &str, open: bool) -> String {
    format!(
        "<details class=\"{class}\"{}><summary>{}</summary>{body}</details>",
        if open { " open" } else { "" },
        escape(summary)
    )
}

/// `<details class="…">` whose summary is already HTML.
pub fn details_html(class: &str, summary: &str, body: &str, open: bool) -> String {
    format!(
        "<details class=\"{class}\"{}><summary>{summary}</summary>{body}</details>",
        if open { " open" } else { "" },
    )
}

/// `2026-12-05T08:51:17.843Z` → (`2026-12-05`, `08:51:17`); `None` for another shape.
pub fn date_and_time(timestamp: &str) -> Option<(&str, &str)> {
    let date = timestamp.get(..10)?;
    let time = timestamp.get(11..19)?;
    (timestamp.as_bytes().get(10) == Some(&b'T')
        && date.bytes().all(|b| b.is_ascii_digit() || b == b'-')
        && time.bytes().all(|b| b.is_ascii_digit() || b == b':'))
    .then_some((date, time))
}

/// Preformatted, escaped text.
pub fn pre(text: &str) -> String {
    format!("<pre>{}</pre>", escape(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_characters_are_escaped() {
        assert_eq!(
            escape("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
        assert_eq!(
            details("c", "<b>", "<i>x</i>", false),
            "<details class=\"c\"><summary>&lt;b&gt;</summary><i>x</i></details>"
        );
    }
}
