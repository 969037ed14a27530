//! The page: a header (name, ids, totals), then the tree — linear runs of entries, and at
//! each fork one collapsible block per branch, the branch holding the current leaf unfolded.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use serde_json::Value;
use strata_session::{Delegated, Diagnostic, EntryKind, Session, Tree};

use crate::chart::chart;
use crate::html::{date_and_time, details, escape, pre};
use crate::markdown::markdown;
use crate::tools::{tool_call, tool_result};

const STYLE: &str = include_str!("style.css");
const SCRIPT: &str = include_str!("script.js");

/// The whole HTML document for `session`.
pub fn page(session: &Session, diagnostics: &[Diagnostic]) -> String {
    let tree = session.tree();
    let on_path: HashSet<String> = tree
        .leaf()
        .map(|leaf| {
            tree.path_to_root(leaf)
                .into_iter()
                .map(|id| id.as_str().to_owned())
                .collect()
        })
        .unwrap_or_default();
    let title = title(tree);
    let mut toc = String::new();
    let delegated = strata_session::delegated_by_entry(session.path());
    let tree_html = entries(tree, &on_path, &delegated, &mut toc);
    let mut body = String::new();
    let _ = write!(
        body,
        "<aside class=\"sidebar\"><input id=\"search\" type=\"search\" placeholder=\"Search the session\" aria-label=\"Search the session\">\
         <p class=\"search-count\" id=\"search-count\"></p><ol class=\"toc\" id=\"toc\">{toc}</ol></aside><div class=\"content\">"
    );
    body.push_str(&header(session, &title, diagnostics));
    body.push_str("<main id=\"tree\">");
    body.push_str(&tree_html);
    body.push_str("</main></div>");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n{body}\n\
         <script>\n{SCRIPT}</script>\n</body>\n</html>\n",
        escape(&title)
    )
}

/// The session's name; without one, its first user message's first line; else its id.
fn title(tree: &Tree) -> String {
    if let Some(name) = tree.name() {
        return name.to_owned();
    }
    let first_user = tree
        .iter()
        .filter(|e| matches!(e.kind(), EntryKind::Message(strata_session::Role::User)))
        .filter_map(|e| entry_json(&e))
        .map(|v| plain_text(&v["message"]["content"]))
        .find(|text| !text.trim().is_empty());
    match first_user {
        Some(text) => clip(
            text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""),
            80,
        ),
        None => format!("Session {}", tree.header().id),
    }
}

/// A timestamp as a reader says it: `2026-12-05 08:51:17 UTC` (as written when not ISO).
fn readable(timestamp: &str) -> String {
    match date_and_time(timestamp) {
        Some((date, time)) => format!("{date} {time} UTC"),
        None => timestamp.to_owned(),
    }
}

/// The text of message content (a string or text blocks), for titles, the sidebar and search.
fn plain_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str().or_else(|| b["thinking"].as_str()))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

fn clip(text: &str, chars: usize) -> String {
    let mut out: String = text.chars().take(chars).collect();
    if text.chars().count() > chars {
        out.push('…');
    }
    out
}

fn header(session: &Session, title: &str, diagnostics: &[Diagnostic]) -> String {
    let tree = session.tree();
    let head = tree.header();
    let records = strata_accounting::records(tree);
    let totals = strata_accounting::Totals::of(&records);
    // Without the table (it is compiled in, so never in practice) the report has no minimums.
    let report = strata_provider::Catalog::builtin_shared()
        .map(|catalog| strata_accounting::cache_report(Some(tree), &records, catalog))
        .unwrap_or_default();
    let mut out = String::from("<header>");
    let _ = write!(out, "<h1>{}</h1><dl class=\"facts\">", escape(title));
    let mut fact = |name: &str, value: &str| {
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", escape(name), escape(value));
    };
    fact("Session", &head.id);
    fact("File", &session.path().display().to_string());
    fact("Working directory", &head.cwd);
    fact("Created", &readable(&head.timestamp));
    if let Some(millis) = tree.iter().last().and_then(|e| e.timestamp_millis()) {
        fact(
            "Last entry",
            &readable(&strata_session::format_iso_millis(millis)),
        );
    }
    if let Some(parent) = &head.parent_session {
        fact("Forked from", parent);
    }
    fact("Entries", &tree.len().to_string());
    if let Some(rate) = totals.hit_rate() {
        fact(
            "Cache",
            &format!(
                "{:.0}% of prompt tokens read from cache · {} unexpected break(s), {} expected",
                rate * 100.0,
                report.unexpected().count(),
                report.expected().count()
            ),
        );
    }
    fact(
        "Requests",
        &format!(
            "{} — input {} · output {} · cache read {} · cache write {} · ${:.4}",
            totals.requests,
            totals.usage.input,
            totals.usage.output,
            totals.usage.cache_read,
            totals.usage.cache_write(),
            totals.cost
        ),
    );
    out.push_str("</dl>");
    match tree.leaf() {
        Some(leaf) => {
            let _ = write!(
                out,
                "<p class=\"leaf-note\">Current leaf: <a href=\"#entry-{0}\">{0}</a></p>",
                escape(leaf.as_str())
            );
        }
        None => out.push_str("<p class=\"leaf-note\">No current leaf (empty session).</p>"),
    }
    if !diagnostics.is_empty() {
        let list: String = diagnostics
            .iter()
            .map(|d| format!("<li>{}</li>", escape(&d.to_string())))
            .collect();
        out.push_str(&details(
            "diagnostics",
            &format!("{} damaged line(s) skipped or repaired", diagnostics.len()),
            &format!("<ul>{list}</ul>"),
            false,
        ));
    }
    out.push_str(
        "<nav class=\"controls\"><button data-action=\"expand\">Expand all</button>\
         <button data-action=\"collapse\">Collapse all</button>\
         <button data-action=\"path\">Current path only</button>\
         <button data-action=\"leaf\">Go to leaf</button></nav></header>",
    );
    out.push_str(&chart(&records, &report));
    out
}

fn entry_json(entry: &strata_session::EntryRef<'_>) -> Option<Value> {
    entry
        .entry()
        .ok()
        .and_then(|e| serde_json::to_value(e).ok())
}

/// Pieces still to write: an entry (and below it its descendants) at a fork depth, or
/// literal markup.
enum Work {
    Entry(String, usize),
    Markup(String),
}

/// The tree depth-first, without recursion (a linear session may hold thousands of entries);
/// `toc` gets one sidebar line per entry, indented by how many forks lie above it.
fn entries(
    tree: &Tree,
    on_path: &HashSet<String>,
    delegated: &BTreeMap<String, Vec<Delegated>>,
    toc: &mut String,
) -> String {
    let mut out = String::new();
    let mut work: Vec<Work> = Vec::new();
    let roots = shown_children(tree, tree.roots());
    push_children(&mut work, &roots, on_path, "root", 0);
    while let Some(item) = work.pop() {
        match item {
            Work::Markup(markup) => out.push_str(&markup),
            Work::Entry(id, depth) => {
                let (html, line) = entry(tree, &id, on_path);
                out.push_str(&html);
                if let Some(children) = delegated.get(&id) {
                    out.push_str(&children_html(children, 1));
                }
                toc.push_str(&toc_line(&id, depth, &line, on_path.contains(&id)));
                let children = shown_children(tree, tree.children(id.as_str()));
                push_children(&mut work, &children, on_path, &id, depth);
            }
        }
    }
    out
}

/// Children nested deeper than this are listed, not transcribed (delegation is 1 deep by
/// default; this only bounds a page built from a pathological folder).
const MAX_CHILD_DEPTH: usize = 4;

/// The child agents an entry spawned: for each, what it was asked, how it started and why,
/// when, its file and size, and its conversation from its task on (collapsed; a fork's copy
/// of the parent's conversation is the page above, so it is left out).
fn children_html(children: &[Delegated], depth: usize) -> String {
    let mut out = format!(
        "<div class=\"children\"><p class=\"note\">Delegated to {} child agent{}:</p>",
        children.len(),
        if children.len() == 1 { "" } else { "s" }
    );
    for child in children {
        let summary = format!(
            "{} — started {} · {} messages · {}",
            child.title(),
            readable(&child.summary.created),
            child.summary.message_count,
            child.path().display()
        );
        let mut body = String::new();
        if let Some(reason) = &child.reason {
            body.push_str(&note(&format!("Started {}: {reason}", child.start)));
        }
        match strata_session::Session::open(child.path()) {
            Ok(opened) if depth <= MAX_CHILD_DEPTH => {
                body.push_str(&child_transcript(&opened.session, &child.entry_id));
                let grandchildren = strata_session::delegated_from(child.path());
                if !grandchildren.is_empty() {
                    body.push_str(&children_html(&grandchildren, depth + 1));
                }
            }
            Ok(_) => {}
            Err(error) => body.push_str(&note(&format!("Cannot read the child: {error}"))),
        }
        out.push_str(&details("child", &summary, &body, false));
    }
    out.push_str("</div>");
    out
}

/// A child's branch to its leaf after `spawning` (the parent's entry a fork copied up to).
fn child_transcript(session: &Session, spawning: &str) -> String {
    let tree = session.tree();
    let Some(leaf) = tree.leaf() else {
        return note("The child wrote nothing yet.");
    };
    let branch = tree.branch(leaf.as_str());
    let start = branch
        .iter()
        .position(|e| e.id().as_str() == spawning)
        .map_or(0, |at| at + 1);
    let on_path: HashSet<String> = branch.iter().map(|e| e.id().as_str().to_owned()).collect();
    let mut out = String::from("<div class=\"child-body\">");
    for entry_ref in &branch[start..] {
        if entry_ref.kind() == EntryKind::Leaf {
            continue;
        }
        // Marked as the child's, so the page's "go to leaf" finds the parent's leaf.
        let html = entry(tree, entry_ref.id().as_str(), &on_path)
            .0
            .replacen(
                "<section class=\"entry ",
                "<section class=\"entry child-entry ",
                1,
            )
            .replacen(
                "<span class=\"badge leaf-badge\">current leaf</span>",
                "<span class=\"badge leaf-badge\">the child's last entry</span>",
                1,
            );
        out.push_str(&html);
    }
    out.push_str("</div>");
    out
}

/// Children worth drawing: a `leaf` entry only says where the user stood, so it is no branch.
fn shown_children(tree: &Tree, children: Vec<&strata_session::EntryId>) -> Vec<String> {
    children
        .into_iter()
        .filter(|id| {
            tree.get(id.as_str())
                .is_none_or(|e| e.kind() != EntryKind::Leaf)
        })
        .map(|id| id.as_str().to_owned())
        .collect()
}

/// One sidebar line: the entry's kind and the start of its text, searchable.
fn toc_line(id: &str, depth: usize, (kind, text): &(String, String), on_path: bool) -> String {
    // Markdown's marks (`code`, **bold**, # headings) are noise in a one-line snippet.
    let words: Vec<String> = text
        .split_whitespace()
        .map(|word| word.trim_start_matches('#').replace(['`', '*'], ""))
        .filter(|word| !word.is_empty())
        .collect();
    let snippet = clip(&words.join(" "), 90);
    format!(
        "<li class=\"toc-{}{}\" style=\"--depth:{}\" data-search=\"{}\"><a href=\"#entry-{}\"><span class=\"toc-kind\">{}</span> {}</a></li>",
        css_name(kind),
        if on_path { " on-path" } else { "" },
        depth.min(12),
        escape(&format!("{kind} {text}").to_lowercase()),
        escape(id),
        escape(kind),
        escape(&snippet)
    )
}

/// One child continues the run; several open a fork with one block per branch.
fn push_children(
    work: &mut Vec<Work>,
    children: &[String],
    on_path: &HashSet<String>,
    parent: &str,
    depth: usize,
) {
    match children {
        [] => {}
        [only] => work.push(Work::Entry(only.clone(), depth)),
        _ => {
            work.push(Work::Markup("</div>".to_owned()));
            let count = children.len();
            for (index, child) in children.iter().enumerate().rev() {
                let current = on_path.contains(child);
                work.push(Work::Markup("</div></details>".to_owned()));
                work.push(Work::Entry(child.clone(), depth + 1));
                work.push(Work::Markup(format!(
                    "<details class=\"branch{}\"{}><summary>Branch {} of {count} from {}{}</summary><div class=\"branch-body\">",
                    if current { " on-path" } else { "" },
                    if current { " open" } else { "" },
                    index + 1,
                    escape(parent),
                    if current { " — holds the current leaf" } else { "" },
                )));
            }
            work.push(Work::Markup(format!(
                "<div class=\"fork\" data-branches=\"{count}\">"
            )));
        }
    }
}

/// An entry's section, and its sidebar kind and text.
fn entry(tree: &Tree, id: &str, on_path: &HashSet<String>) -> (String, (String, String)) {
    let Some(reference) = tree.get(id) else {
        return (String::new(), (String::new(), String::new()));
    };
    let value = entry_json(&reference)
        .unwrap_or_else(|| serde_json::from_str(reference.raw_line()).unwrap_or(Value::Null));
    let kind = value["type"].as_str().unwrap_or("unknown");
    let role = value["message"]["role"].as_str();
    let is_leaf = tree.leaf().is_some_and(|leaf| leaf.as_str() == id);
    let mut classes = vec!["entry".to_owned(), css_name(kind)];
    if let Some(role) = role {
        classes.push(format!("role-{}", css_name(role)));
    }
    if on_path.contains(id) {
        classes.push("on-path".to_owned());
    }
    if is_leaf {
        classes.push("leaf".to_owned());
    }
    let mut out = format!(
        "<section class=\"{}\" id=\"entry-{}\">",
        classes.join(" "),
        escape(id)
    );
    let stamp = value["timestamp"].as_str().unwrap_or("");
    let _ = write!(
        out,
        "<div class=\"meta\"><span class=\"kind\">{}</span> <a class=\"id\" href=\"#entry-{1}\">{1}</a> <time datetime=\"{2}\" title=\"{3}\">{4}</time>",
        escape(role.unwrap_or(kind)),
        escape(id),
        escape(stamp),
        escape(&readable(stamp)),
        escape(date_and_time(stamp).map_or(stamp, |(_, time)| time)),
    );
    if let Some(label) = tree.label_of(id) {
        let _ = write!(
            out,
            " <span class=\"badge label\">label: {}</span>",
            escape(label)
        );
    }
    if is_leaf {
        out.push_str(" <span class=\"badge leaf-badge\">current leaf</span>");
    }
    out.push_str("</div>");
    out.push_str(&entry_body(kind, &value));
    out.push_str("</section>");
    (out, toc_text(kind, role, &value))
}

/// What the sidebar says of an entry: its kind or role, and its text, command or summary.
fn toc_text(kind: &str, role: Option<&str>, value: &Value) -> (String, String) {
    let message = &value["message"];
    let text = match (kind, role) {
        ("message", Some("assistant")) => {
            let mut parts = vec![plain_text(&message["content"])];
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] == "toolCall" {
                    let args = &block["arguments"];
                    parts.push(format!(
                        "{} {}",
                        block["name"].as_str().unwrap_or(""),
                        args["command"]
                            .as_str()
                            .or_else(|| args["path"].as_str())
                            .unwrap_or("")
                    ));
                }
            }
            parts.join(" ")
        }
        ("message", Some("toolResult")) => format!(
            "{}: {}",
            message["toolName"].as_str().unwrap_or(""),
            plain_text(&message["content"])
        ),
        ("message", Some("bashExecution")) => {
            format!("$ {}", message["command"].as_str().unwrap_or(""))
        }
        ("message", _) => plain_text(&message["content"]),
        ("compaction" | "branch_summary", _) => value["summary"].as_str().unwrap_or("").to_owned(),
        ("model_change", _) => format!(
            "{}/{}",
            value["provider"].as_str().unwrap_or(""),
            value["modelId"].as_str().unwrap_or("")
        ),
        ("session_info", _) => value["name"].as_str().unwrap_or("").to_owned(),
        ("custom" | "custom_message", _) => value["customType"].as_str().unwrap_or("").to_owned(),
        _ => String::new(),
    };
    // Search reads the first few hundred characters; the sidebar shows fewer.
    (
        role.unwrap_or(kind).to_owned(),
        text.chars().take(400).collect(),
    )
}

fn entry_body(kind: &str, value: &Value) -> String {
    match kind {
        "message" => message(&value["message"]),
        "compaction" => {
            let first = value["firstKeptEntryId"].as_str().unwrap_or("");
            let mut out = format!(
                "<div class=\"summary compaction-summary\"><p class=\"note\">Compaction: {} tokens summarized; kept from <a href=\"#entry-{1}\">{1}</a></p><div class=\"markdown\">{2}</div>",
                value["tokensBefore"].as_u64().unwrap_or(0),
                escape(first),
                markdown(value["summary"].as_str().unwrap_or(""))
            );
            if let Some(details_value) = value.get("details").filter(|d| !d.is_null()) {
                out.push_str(&details(
                    "data",
                    "Details",
                    &pre(&pretty(details_value)),
                    false,
                ));
            }
            // Pi 1.x's checkpoint: the prompt and tools the compacted context starts from.
            if let Some(checkpoint) = value.get("systemMessage").filter(|m| m.is_object()) {
                out.push_str(&system(checkpoint));
            }
            out.push_str("</div>");
            out
        }
        "branch_summary" => format!(
            "<div class=\"summary branch-summary\"><p class=\"note\">Summary of the branch left at {}</p><div class=\"markdown\">{}</div></div>",
            escape(value["fromId"].as_str().unwrap_or("")),
            markdown(value["summary"].as_str().unwrap_or(""))
        ),
        "model_change" => note(&format!(
            "Model → {}/{}",
            value["provider"].as_str().unwrap_or("?"),
            value["modelId"].as_str().unwrap_or("?")
        )),
        "thinking_level_change" => note(&format!(
            "Thinking level → {}",
            value["thinkingLevel"].as_str().unwrap_or("?")
        )),
        "label" => match value["label"].as_str() {
            Some(label) => note(&format!(
                "Label “{label}” set on {}",
                value["targetId"].as_str().unwrap_or("?")
            )),
            None => note(&format!(
                "Label cleared on {}",
                value["targetId"].as_str().unwrap_or("?")
            )),
        },
        "session_info" => match value["name"].as_str() {
            Some(name) => note(&format!("Session named “{name}”")),
            None => note("Session name cleared"),
        },
        "custom" => details(
            "data",
            &format!(
                "Custom entry: {}",
                value["customType"].as_str().unwrap_or("?")
            ),
            &pre(&pretty(&value["data"])),
            false,
        ),
        "custom_message" => format!(
            "<p class=\"note\">Custom message: {}{}</p>{}",
            escape(value["customType"].as_str().unwrap_or("?")),
            if value["display"] == false {
                " (hidden in Pi's UI)"
            } else {
                ""
            },
            content(&value["content"])
        ),
        "system" => system(value),
        "usage" => {
            let usage = &value["usage"];
            note(&format!(
                "Usage ({}): {}/{} · input {} · output {} · cache read {} · cache write {} · ${:.4} (not in context)",
                value["kind"].as_str().unwrap_or("?"),
                value["provider"].as_str().unwrap_or("?"),
                value["model"].as_str().unwrap_or("?"),
                usage["input"].as_u64().unwrap_or(0),
                usage["output"].as_u64().unwrap_or(0),
                usage["cacheRead"].as_u64().unwrap_or(0),
                usage["cacheWrite"].as_u64().unwrap_or(0),
                usage["cost"]["total"].as_f64().unwrap_or(0.0),
            ))
        }
        "context_edit" if value.get("targetId").is_some() => {
            let target = value["targetId"].as_str().unwrap_or("?");
            match &value["replacement"] {
                Value::Null => note(&format!("Context edit: {target} omitted from context")),
                replacement => details(
                    "data",
                    &format!("Context edit: {target}'s content replaced in context"),
                    &content(&replacement["content"]),
                    false,
                ),
            }
        }
        // strata's shape before Pi 1.x.
        "context_edit" => note(&format!(
            "Context edit: {} {}",
            value["action"].as_str().unwrap_or("?"),
            value["targets"]
                .as_array()
                .map(|t| t
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", "))
                .unwrap_or_default()
        )),
        "leaf" => note("Leaf moved here"),
        _ => details(
            "data",
            &format!("Entry of type {kind}"),
            &pre(&pretty(value)),
            false,
        ),
    }
}

fn system(value: &Value) -> String {
    let sections = value["sections"].as_object();
    let added: Vec<&str> = value["toolsAdded"]
        .as_array()
        .map(|t| t.iter().filter_map(|d| d["name"].as_str()).collect())
        .unwrap_or_default();
    // Pi 1.x names removed tools as `{name}`; strata's earlier entries as strings.
    let removed: Vec<&str> = value["toolsRemoved"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|tool| tool.as_str().or_else(|| tool["name"].as_str()))
                .collect()
        })
        .unwrap_or_default();
    let mut body = String::new();
    if let Some(text) = value["content"].as_str().filter(|text| !text.is_empty()) {
        body.push_str(&pre(text));
    }
    for (name, text) in sections.into_iter().flatten() {
        body.push_str(&details(
            "section",
            &format!(
                "Section {name}{}",
                if text.is_null() { " removed" } else { "" }
            ),
            &pre(text.as_str().unwrap_or("")),
            false,
        ));
    }
    if let Some(tools) = value["toolsAdded"].as_array() {
        for tool in tools {
            body.push_str(&details(
                "tool-definition",
                &format!("Tool {}", tool["name"].as_str().unwrap_or("?")),
                &pre(&pretty(tool)),
                false,
            ));
        }
    }
    details(
        "system",
        &format!(
            "System prompt: {} section(s){}{}",
            sections.map_or(0, serde_json::Map::len),
            if added.is_empty() {
                String::new()
            } else {
                format!(", tools added: {}", added.join(", "))
            },
            if removed.is_empty() {
                String::new()
            } else {
                format!(", tools removed: {}", removed.join(", "))
            },
        ),
        &body,
        false,
    )
}

fn message(message: &Value) -> String {
    match message["role"].as_str().unwrap_or("") {
        "system" => system(message),
        "user" => content(&message["content"]),
        "assistant" => assistant(message),
        "toolResult" => {
            let tool = message["toolName"].as_str().unwrap_or("?");
            // A call the permission rules refused or put to the user says so in its title.
            let name = match crate::permissions::mark(&message["details"]) {
                Some(mark) => format!("{tool} — {mark}"),
                None => tool.to_owned(),
            };
            let name = name.as_str();
            let error = message["isError"] == true;
            let output = plain_text(&message["content"]);
            let mut body = output_blocks(&message["content"]);
            if let Some(extra) = message.get("details").filter(|d| !d.is_null()) {
                body.push_str(&details("data", "Details", &pre(&pretty(extra)), false));
            }
            tool_result(name, error, &output, output.lines().count(), &body)
        }
        "bashExecution" => {
            let mut status = Vec::new();
            if message["cancelled"] == true {
                status.push("cancelled".to_owned());
            }
            if let Some(code) = message["exitCode"].as_i64() {
                status.push(format!("exit {code}"));
            }
            if message["truncated"] == true {
                status.push("truncated".to_owned());
            }
            if message["excludeFromContext"] == true {
                status.push("not sent to the model".to_owned());
            }
            details(
                "bash",
                &format!(
                    "$ {}{}",
                    message["command"].as_str().unwrap_or(""),
                    if status.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", status.join(", "))
                    }
                ),
                &pre(message["output"].as_str().unwrap_or("")),
                false,
            )
        }
        "custom" | "hookMessage" => format!(
            "<p class=\"note\">Custom message: {}</p>{}",
            escape(message["customType"].as_str().unwrap_or("?")),
            content(&message["content"])
        ),
        "branchSummary" | "compactionSummary" => format!(
            "<div class=\"summary markdown\">{}</div>",
            markdown(message["summary"].as_str().unwrap_or(""))
        ),
        _ => details("data", "Message", &pre(&pretty(message)), false),
    }
}

fn assistant(message: &Value) -> String {
    let mut out = String::new();
    for block in message["content"].as_array().into_iter().flatten() {
        match block["type"].as_str().unwrap_or("") {
            "text" => out.push_str(&rendered(block["text"].as_str().unwrap_or(""))),
            "thinking" => {
                let redacted = block["redacted"] == true;
                let summary = if redacted {
                    "Thinking (redacted)"
                } else {
                    "Thinking"
                };
                out.push_str(&details(
                    "thinking",
                    summary,
                    &pre(block["thinking"].as_str().unwrap_or("")),
                    false,
                ));
            }
            "toolCall" => out.push_str(&tool_call(block)),
            _ => out.push_str(&other_block(block)),
        }
    }
    let usage = &message["usage"];
    let _ = write!(
        out,
        "<div class=\"usage\">{} · input {} · output {} · cache read {} · cache write {} · ${:.4} · {}</div>",
        escape(&format!(
            "{}/{}",
            message["provider"].as_str().unwrap_or("?"),
            message["model"].as_str().unwrap_or("?")
        )),
        usage["input"].as_u64().unwrap_or(0),
        usage["output"].as_u64().unwrap_or(0),
        usage["cacheRead"].as_u64().unwrap_or(0),
        usage["cacheWrite"].as_u64().unwrap_or(0),
        usage["cost"]["total"].as_f64().unwrap_or(0.0),
        escape(message["stopReason"].as_str().unwrap_or("?")),
    );
    if let Some(error) = message["errorMessage"].as_str() {
        let _ = write!(out, "<div class=\"error-message\">{}</div>", escape(error));
    }
    out
}

/// User and custom content: a string or text and image blocks, the text as markdown.
fn content(value: &Value) -> String {
    match value {
        Value::String(s) => rendered(s),
        Value::Array(blocks) => blocks
            .iter()
            .map(|block| match block["type"].as_str().unwrap_or("") {
                "text" => rendered(block["text"].as_str().unwrap_or("")),
                _ => other_block(block),
            })
            .collect(),
        Value::Null => String::new(),
        other => pre(&pretty(other)),
    }
}

/// Tool output: text as it was printed (not markdown), images inline.
fn output_blocks(value: &Value) -> String {
    match value {
        Value::String(s) => pre(s),
        Value::Array(blocks) => blocks
            .iter()
            .map(|block| match block["type"].as_str().unwrap_or("") {
                "text" => pre(block["text"].as_str().unwrap_or("")),
                _ => other_block(block),
            })
            .collect(),
        Value::Null => String::new(),
        other => pre(&pretty(other)),
    }
}

/// Message text rendered as markdown.
fn rendered(text: &str) -> String {
    format!("<div class=\"text markdown\">{}</div>", markdown(text))
}

fn other_block(block: &Value) -> String {
    if block["type"] == "image" {
        return image(block);
    }
    details("data", "Content block", &pre(&pretty(block)), false)
}

/// An inline image (a data URL: the page fetches nothing), or a note when the data is not
/// plain base64 of an image type.
fn image(block: &Value) -> String {
    let mime = block["mimeType"].as_str().unwrap_or("");
    let data = block["data"].as_str().unwrap_or("");
    let base64 = data
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    let safe_mime = mime.starts_with("image/")
        && mime[6..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if base64 && safe_mime && !data.is_empty() {
        format!(
            "<img class=\"image\" alt=\"{0}\" src=\"data:{0};base64,{1}\">",
            escape(mime),
            escape(data)
        )
    } else {
        note(&format!("[image {mime}, {} bytes of data]", data.len()))
    }
}

fn note(text: &str) -> String {
    format!("<p class=\"note\">{}</p>", escape(text))
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// A CSS class from a type or role name (letters, digits, '-').
fn css_name(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}
