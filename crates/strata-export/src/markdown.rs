//! Message text as HTML: CommonMark (with tables, strikethrough and task lists) by
//! pulldown-cmark. Raw HTML in the text is shown escaped, never interpreted; links keep only
//! safe schemes; images become links (the page fetches nothing); fenced code is highlighted.

use pulldown_cmark::{CodeBlockKind, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

use crate::highlight::code_block;

/// `text` rendered as HTML.
pub fn markdown(text: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM;
    let mut events = Vec::new();
    let mut code: Option<(Option<String>, String)> = None;
    for event in Parser::new_ext(text, options) {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let language = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .map(str::to_owned)
                        .filter(|l| !l.is_empty()),
                    CodeBlockKind::Indented => None,
                };
                code = Some((language, String::new()));
            }
            Event::Text(text) if code.is_some() => {
                if let Some((_, body)) = code.as_mut() {
                    body.push_str(&text);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((language, body)) = code.take() {
                    events.push(Event::Html(CowStr::from(code_block(
                        &body,
                        language.as_deref(),
                    ))));
                }
            }
            // Raw HTML is text the model or user wrote: shown, not interpreted.
            Event::Html(raw) | Event::InlineHtml(raw) => events.push(Event::Text(raw)),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => events.push(Event::Start(Tag::Link {
                link_type,
                dest_url: safe_url(dest_url),
                title,
                id,
            })),
            Event::Start(Tag::Image {
                dest_url,
                title,
                id,
                ..
            }) => events.push(Event::Start(Tag::Link {
                link_type: LinkType::Inline,
                dest_url: safe_url(dest_url),
                title,
                id,
            })),
            Event::End(TagEnd::Image) => events.push(Event::End(TagEnd::Link)),
            other => events.push(other),
        }
    }
    let mut out = String::with_capacity(text.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut out, events.into_iter());
    out
}

/// A link target kept only for web, mail and in-page links; anything else (`javascript:`,
/// `data:`, …) becomes `#`.
fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let lower = url.trim().to_ascii_lowercase();
    let scheme = lower.split_once(':').map(|(scheme, _)| scheme);
    match scheme {
        None => url,
        Some("http" | "https" | "mailto") => url,
        Some(s) if s.contains('/') || s.contains('#') || s.contains('?') => url,
        Some(_) => CowStr::from("#"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_code_and_lists_render_and_raw_html_is_escaped() {
        let html = markdown(
            "## Goal\n\nFix `greet()`.\n\n- one\n- two\n\n```rust\nfn main() {}\n```\n\n<script>alert(1)</script>\n",
        );
        assert!(html.contains("<h2>Goal</h2>"), "{html}");
        assert!(html.contains("<code>greet()</code>"), "{html}");
        assert!(html.contains("<li>one</li>"), "{html}");
        assert!(html.contains("<span class=\"tok-k\">fn</span>"), "{html}");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }

    #[test]
    fn unsafe_links_are_disarmed_and_images_are_not_fetched() {
        let html =
            markdown("[x](javascript:alert(1)) [y](https://e.test/a) ![i](https://e.test/i.png)");
        assert!(html.contains("<a href=\"#\">x</a>"), "{html}");
        assert!(
            html.contains("<a href=\"https://e.test/a\">y</a>"),
            "{html}"
        );
        assert!(!html.contains("<img"), "{html}");
    }
}
