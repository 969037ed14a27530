//! Tool calls and results as a reader wants them: the command or path in the summary line,
//! edits as coloured diffs, written files and commands highlighted, outputs collapsible with
//! their first line shown.

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::highlight::{code_block, language_of_path};
use crate::html::{details_html, escape};

/// Longest command or path shown in a summary line before it is cut with `…`.
const SUMMARY_CHARS: usize = 120;

/// One `toolCall` block of an assistant message.
pub fn tool_call(block: &Value) -> String {
    let name = block["name"].as_str().unwrap_or("?");
    let args = &block["arguments"];
    let text = |key: &str| args[key].as_str();
    let path = text("path").or_else(|| text("file_path"));
    let (target, body) = match name {
        "bash" => {
            let command = text("command").unwrap_or("");
            (
                format!("$ {}", first_line(command)),
                code_block(command, Some("sh")),
            )
        }
        "edit" => (path.unwrap_or("").to_owned(), edit_body(args, path)),
        "write" => (
            path.unwrap_or("").to_owned(),
            code_block(
                text("content").unwrap_or(""),
                path.and_then(language_of_path),
            ),
        ),
        _ => {
            let target = path
                .or_else(|| text("pattern"))
                .or_else(|| text("command"))
                .or_else(|| text("query"))
                .or_else(|| text("url"))
                .map(first_line)
                .unwrap_or_default();
            (target, code_block(&pretty(args), Some("json")))
        }
    };
    let summary = format!(
        "<span class=\"tool-name\">Tool call: {}</span> <code class=\"tool-target\">{}</code>",
        escape(name),
        escape(&target)
    );
    details_html("tool-call", &summary, &body, name == "edit")
}

/// A tool result: its name, the first line of its output and its size in the summary; the
/// output itself folded.
pub fn tool_result(name: &str, error: bool, first: &str, lines: usize, body: &str) -> String {
    let summary = format!(
        "<span class=\"tool-name\">Result of {}{}</span> <span class=\"preview\">{}</span> <span class=\"lines\">{lines} line{}</span>",
        escape(name),
        if error { " (error)" } else { "" },
        escape(&first_line(first)),
        if lines == 1 { "" } else { "s" }
    );
    details_html(
        if error {
            "tool-result error"
        } else {
            "tool-result"
        },
        &summary,
        body,
        error,
    )
}

/// Pi's `edit` takes `oldText`/`newText`, or a list of such `edits`; older shapes say
/// `old_string`/`new_string`.
fn edit_body(args: &Value, path: Option<&str>) -> String {
    fn pair(edit: &Value) -> Option<(&str, &str)> {
        let old = edit["oldText"]
            .as_str()
            .or_else(|| edit["old_string"].as_str());
        let new = edit["newText"]
            .as_str()
            .or_else(|| edit["new_string"].as_str());
        old.zip(new)
    }
    let mut pairs: Vec<(&str, &str)> = args["edits"]
        .as_array()
        .map(|edits| edits.iter().filter_map(pair).collect())
        .unwrap_or_default();
    pairs.extend(pair(args));
    if pairs.is_empty() {
        return code_block(&pretty(args), Some("json"));
    }
    pairs
        .iter()
        .map(|(old, new)| diff(old, new, path))
        .collect()
}

/// A line diff of `old` → `new`: removed lines `diff-del`, added `diff-add`, the rest
/// `diff-ctx`.
pub fn diff(old: &str, new: &str, path: Option<&str>) -> String {
    let diff = TextDiff::from_lines(old, new);
    let mut out = String::from("<pre class=\"diff\">");
    if let Some(path) = path {
        out.push_str(&format!(
            "<span class=\"diff-file\">{}</span>",
            escape(path)
        ));
    }
    for change in diff.iter_all_changes() {
        let (class, sign) = match change.tag() {
            ChangeTag::Delete => ("diff-del", '-'),
            ChangeTag::Insert => ("diff-add", '+'),
            ChangeTag::Equal => ("diff-ctx", ' '),
        };
        let line = change.value();
        out.push_str(&format!(
            "<span class=\"{class}\">{sign} {}</span>",
            escape(line.strip_suffix('\n').unwrap_or(line))
        ));
    }
    out.push_str("</pre>");
    out
}

fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let more = text.lines().filter(|l| !l.trim().is_empty()).count() > 1;
    let mut cut: String = line.chars().take(SUMMARY_CHARS).collect();
    if more || line.chars().count() > SUMMARY_CHARS {
        cut.push('…');
    }
    cut
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_is_a_coloured_diff_under_its_path_and_bash_shows_its_command() {
        let edit = serde_json::json!({"type": "toolCall", "name": "edit", "arguments":
            {"path": "src/a.rs", "oldText": "fn a() {}\nlet x = 1;\n", "newText": "fn a() {}\nlet x = 2;\n"}});
        let html = tool_call(&edit);
        assert!(
            html.contains("<code class=\"tool-target\">src/a.rs</code>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"diff-del\">- let x = 1;</span>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"diff-add\">+ let x = 2;</span>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"diff-ctx\">  fn a() {}</span>"),
            "{html}"
        );
        let bash = serde_json::json!({"type": "toolCall", "name": "bash", "arguments":
            {"command": "cargo test <x>\necho done"}});
        let html = tool_call(&bash);
        assert!(html.contains("$ cargo test &lt;x&gt;…"), "{html}");
        assert!(html.contains("language-sh"), "{html}");
    }
}
