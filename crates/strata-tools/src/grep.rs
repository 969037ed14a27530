//! `grep` (off by default): regex search over file contents, .gitignore respected.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::access::{Access, canonical_path};
use crate::args::{lenient, parse_args, schema_for};
use crate::path::resolve_path;
use crate::tool::{ABORTED_MESSAGE, Tool, ToolCall, ToolContext, ToolOutput, UpdateSender};
use crate::truncate::{format_size, truncate_head, truncate_line};
use crate::walk::{relative, walk};

const DESCRIPTION: &str = "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. Output is truncated to 100 matches or 50KB, whichever comes first. Long lines are truncated to 500 chars.";
const DEFAULT_LIMIT: u64 = 100;
const BINARY_SNIFF_BYTES: usize = 8192;

/// Arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct GrepArgs {
    /// Search pattern (regex or literal string)
    pattern: String,
    /// Directory or file to search (default: current directory)
    #[serde(default)]
    path: Option<String>,
    /// Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'
    #[serde(default)]
    glob: Option<String>,
    /// Case-insensitive search (default: false)
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    ignore_case: Option<bool>,
    /// Treat pattern as literal string instead of regex (default: false)
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    literal: Option<bool>,
    /// Number of lines to show before and after each match (default: 0)
    #[serde(default, deserialize_with = "lenient::opt_u64")]
    context: Option<u64>,
    /// Maximum number of matches to return (default: 100)
    #[serde(default, deserialize_with = "lenient::opt_u64")]
    limit: Option<u64>,
}

/// The `grep` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct GrepTool;

#[async_trait]
impl Tool for GrepTool {
    fn name(&self) -> &str {
        "grep"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        schema_for::<GrepArgs>()
    }

    fn prompt_snippet(&self) -> Option<&str> {
        Some("Search file contents with a regex (respects .gitignore)")
    }

    fn access(&self, arguments: &Value, ctx: &ToolContext) -> Access {
        match parse_args::<GrepArgs>("grep", arguments) {
            Ok(args) => {
                let root = resolve_path(args.path.as_deref().unwrap_or("."), &ctx.cwd);
                Access::Read(vec![canonical_path(&root, &ctx.cwd)])
            }
            Err(_) => Access::None,
        }
    }

    async fn execute(
        &self,
        call: ToolCall,
        ctx: &ToolContext,
        _updates: Option<UpdateSender>,
    ) -> ToolOutput {
        let args: GrepArgs = match parse_args("grep", &call.arguments) {
            Ok(args) => args,
            Err(error) => return error,
        };
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error(ABORTED_MESSAGE);
        }
        let shown = args.path.clone().unwrap_or_else(|| ".".to_owned());
        let root = resolve_path(&shown, &ctx.cwd);
        if !root.exists() {
            return ToolOutput::error(format!("Path not found: {shown}"));
        }
        let pattern = if args.literal.unwrap_or(false) {
            regex::escape(&args.pattern)
        } else {
            args.pattern.clone()
        };
        let build = |multi_line: bool| {
            RegexBuilder::new(&pattern)
                .case_insensitive(args.ignore_case.unwrap_or(false))
                .multi_line(multi_line)
                .build()
        };
        let (regex, candidates) = match (build(false), build(true)) {
            (Ok(regex), Ok(candidates)) => (regex, candidates),
            (Err(e), _) | (_, Err(e)) => {
                return ToolOutput::error(format!("Invalid regex pattern: {e}"));
            }
        };
        let glob = match args.glob.as_deref().map(file_glob).transpose() {
            Ok(glob) => glob,
            Err(e) => return ToolOutput::error(format!("Invalid glob pattern: {e}")),
        };
        let search = Search {
            root,
            regex,
            candidates,
            glob,
            context: usize::try_from(args.context.unwrap_or(0)).unwrap_or(usize::MAX),
            limit: usize::try_from(args.limit.unwrap_or(DEFAULT_LIMIT).max(1))
                .unwrap_or(usize::MAX),
            max_line_chars: ctx.limits.grep_max_line_chars,
            max_bytes: ctx.limits.max_bytes,
        };
        let cancel = ctx.cancel.clone();
        match tokio::task::spawn_blocking(move || search.run(&cancel)).await {
            Ok(Some(output)) => output,
            Ok(None) => ToolOutput::error(ABORTED_MESSAGE),
            Err(e) => ToolOutput::error(format!("grep failed: {e}")),
        }
    }
}

/// A glob filter: without a `/` it matches the file name at any depth, with one the path
/// relative to the search root.
pub(crate) struct FileGlob {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl FileGlob {
    pub(crate) fn is_match(&self, rel_path: &str) -> bool {
        if self.whole_path {
            self.matcher.is_match(rel_path)
        } else {
            let name = rel_path.rsplit('/').next().unwrap_or(rel_path);
            self.matcher.is_match(name)
        }
    }
}

pub(crate) fn file_glob(pattern: &str) -> Result<FileGlob, globset::Error> {
    let whole_path = pattern.contains('/');
    let pattern = match pattern.strip_prefix('/') {
        Some(anchored) => anchored.to_owned(),
        None if whole_path && !pattern.starts_with("**/") => format!("**/{pattern}"),
        None => pattern.to_owned(),
    };
    let matcher = GlobBuilder::new(&pattern)
        .literal_separator(true)
        .build()?
        .compile_matcher();
    Ok(FileGlob {
        matcher,
        whole_path,
    })
}

struct Search {
    root: PathBuf,
    /// The pattern, matched against one line at a time.
    regex: Regex,
    /// The same pattern with `^`/`$` at line boundaries, run over a whole file to find
    /// candidate lines.
    candidates: Regex,
    glob: Option<FileGlob>,
    context: usize,
    limit: usize,
    max_line_chars: usize,
    max_bytes: usize,
}

#[derive(Default)]
struct Found {
    lines: Vec<String>,
    matches: usize,
    limit_reached: bool,
    lines_truncated: bool,
}

impl Search {
    /// `None` if cancelled.
    fn run(&self, cancel: &CancellationToken) -> Option<ToolOutput> {
        let mut found = Found::default();
        if self.root.is_file() {
            let name = self
                .root
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            self.search_file(&self.root, &name, &mut found);
        } else {
            let completed = walk(&self.root, cancel, |entry| {
                if entry.is_dir {
                    return true;
                }
                let rel = relative(&entry.path, &self.root);
                if self.glob.as_ref().is_some_and(|g| !g.is_match(&rel)) {
                    return true;
                }
                self.search_file(&entry.path, &rel, &mut found);
                !found.limit_reached
            });
            if !completed {
                return None;
            }
        }
        Some(self.format(found))
    }

    fn search_file(&self, path: &Path, shown: &str, found: &mut Found) {
        let Ok(bytes) = std::fs::read(path) else {
            return;
        };
        if bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
            return;
        }
        let text = String::from_utf8_lossy(&bytes);
        let matching = self.matching_lines(&text);
        if matching.is_empty() {
            return;
        }
        let lines: Vec<&str> = if self.context > 0 {
            text.lines().collect()
        } else {
            Vec::new()
        };
        let mut printed_until = 0usize; // 1-indexed last line already shown
        for (number, line) in matching {
            if found.matches >= self.limit {
                found.limit_reached = true;
                return;
            }
            found.matches += 1;
            if self.context == 0 {
                self.push_line(found, shown, number, line, true);
                continue;
            }
            let first = number
                .saturating_sub(self.context)
                .max(1)
                .max(printed_until + 1);
            let last = (number + self.context).min(lines.len());
            for current in first..=last {
                let is_match = current == number || self.regex.is_match(lines[current - 1]);
                self.push_line(found, shown, current, lines[current - 1], is_match);
            }
            printed_until = printed_until.max(last);
        }
    }

    fn push_line(&self, found: &mut Found, shown: &str, number: usize, line: &str, is_match: bool) {
        let clean = line.replace('\r', "");
        let (text, cut) = truncate_line(&clean, self.max_line_chars);
        found.lines_truncated |= cut;
        found.lines.push(if is_match {
            format!("{shown}:{number}: {text}")
        } else {
            format!("{shown}-{number}- {text}")
        });
    }

    /// The lines (1-indexed number, text without line ending) on which the pattern matches,
    /// at most one more than the limit. The multi-line regex runs over the whole text to find
    /// candidate lines fast; each candidate is confirmed against the line alone, so the result
    /// is exactly a line-by-line search.
    fn matching_lines<'t>(&self, text: &'t str) -> Vec<(usize, &'t str)> {
        let mut found = Vec::new();
        let mut pos = 0usize;
        let mut counted_to = 0usize;
        let mut line_number = 1usize;
        while pos < text.len() && found.len() <= self.limit {
            let Some(candidate) = self.candidates.find_at(text, pos) else {
                break;
            };
            let at = candidate.start();
            let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1).max(pos);
            line_number +=
                memchr::memchr_iter(b'\n', &text.as_bytes()[counted_to..line_start]).count();
            counted_to = line_start;
            let line_end = text[line_start..]
                .find('\n')
                .map_or(text.len(), |i| line_start + i);
            let line = text[line_start..line_end]
                .strip_suffix('\r')
                .unwrap_or(&text[line_start..line_end]);
            if self.regex.is_match(line) {
                found.push((line_number, line));
            }
            pos = line_end + 1;
        }
        found
    }

    fn format(&self, found: Found) -> ToolOutput {
        if found.matches == 0 {
            return ToolOutput::text("No matches found");
        }
        let raw = found.lines.join("\n");
        let cut = truncate_head(&raw, usize::MAX, self.max_bytes);
        let mut output = cut.content.clone();
        let mut details = Map::new();
        let mut notices = Vec::new();
        if found.limit_reached {
            notices.push(format!(
                "{} matches limit reached. Use limit={} for more, or refine pattern",
                self.limit,
                self.limit.saturating_mul(2)
            ));
            details.insert("matchLimitReached".to_owned(), json!(self.limit));
        }
        if cut.truncated {
            notices.push(format!(
                "{} limit reached",
                format_size(self.max_bytes as u64)
            ));
            details.insert("truncation".to_owned(), json!(cut));
        }
        if found.lines_truncated {
            notices.push(format!(
                "Some lines truncated to {} chars. Use read tool to see full lines",
                self.max_line_chars
            ));
            details.insert("linesTruncated".to_owned(), json!(true));
        }
        if !notices.is_empty() {
            output.push_str(&format!("\n\n[{}]", notices.join(". ")));
        }
        let details = if details.is_empty() {
            Value::Null
        } else {
            Value::Object(details)
        };
        ToolOutput::text(output).with_details(details)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(pattern: &str, limit: usize) -> Search {
        Search {
            root: PathBuf::new(),
            regex: RegexBuilder::new(pattern).build().unwrap(),
            candidates: RegexBuilder::new(pattern).multi_line(true).build().unwrap(),
            glob: None,
            context: 0,
            limit,
            max_line_chars: 500,
            max_bytes: 50 * 1024,
        }
    }

    /// The whole-text search must find exactly what a line-by-line search finds.
    #[test]
    fn candidate_search_equals_a_line_by_line_search() {
        for text in [
            "fn a() {\r\n}\n\nlet x = 1;\nfn b() {}\n  fn c\n}\nend",
            "fn a() {\n}\n\n",
            "",
            "\n",
        ] {
            for pattern in [
                "^fn", r"\}$", r"[^x]+", "fn", r"\s*", "^$", r"x\n", "end$", r"\bfn\b", "zzz",
                "(?s).",
            ] {
                let s = search(pattern, usize::MAX - 1);
                let fast: Vec<(usize, &str)> = s.matching_lines(text);
                let naive: Vec<(usize, &str)> = text
                    .lines()
                    .enumerate()
                    .filter(|(_, line)| s.regex.is_match(line))
                    .map(|(i, line)| (i + 1, line))
                    .collect();
                assert_eq!(fast, naive, "pattern {pattern:?} in {text:?}");
            }
        }
    }

    #[test]
    fn candidate_search_stops_one_past_the_limit() {
        let text = "a\na\na\na\n";
        assert_eq!(search("a", 2).matching_lines(text).len(), 3);
    }

    #[test]
    fn globs_without_a_slash_match_names_at_any_depth() {
        let glob = file_glob("*.rs").unwrap();
        assert!(glob.is_match("src/deep/main.rs"));
        let glob = file_glob("src/*.rs").unwrap();
        assert!(glob.is_match("src/main.rs"));
        assert!(glob.is_match("crates/x/src/main.rs"));
        assert!(!glob.is_match("src/deep/main.rs"));
        let anchored = file_glob("/src/*.rs").unwrap();
        assert!(!anchored.is_match("crates/x/src/main.rs"));
    }
}
