//! `edit`: exact text replacements in one file, matched against the original, written atomically.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::access::{Access, canonical_path};
use crate::args::{parse_args, schema_for};
use crate::atomic::atomic_write;
use crate::diff::unified_diff;
use crate::path::resolve_path;
use crate::tool::{ABORTED_MESSAGE, Tool, ToolCall, ToolContext, ToolOutput, UpdateSender};

const DESCRIPTION: &str = "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.";

/// Arguments of `edit`.
#[derive(Debug, Deserialize, JsonSchema)]
struct EditArgs {
    /// Path to the file to edit (relative or absolute)
    #[serde(alias = "file_path")]
    path: String,
    /// One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead.
    edits: Vec<Replacement>,
}

/// One replacement.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Replacement {
    /// Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call.
    old_text: String,
    /// Replacement text for this targeted edit.
    new_text: String,
}

/// The `edit` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct EditTool;

/// Accepts the shapes models send besides the schema's: `edits` as a JSON string, and a single
/// top-level `oldText`/`newText` pair (the older one-edit form).
fn normalize_arguments(arguments: &Value) -> Value {
    let mut args = arguments.clone();
    let Value::Object(map) = &mut args else {
        return args;
    };
    if let Some(Value::String(encoded)) = map.get("edits")
        && let Ok(decoded @ Value::Array(_)) = serde_json::from_str::<Value>(encoded)
    {
        map.insert("edits".to_owned(), decoded);
    }
    let legacy = (map.get("oldText"), map.get("newText"));
    if let (Some(Value::String(_)), Some(Value::String(_))) = legacy {
        let old_text = map.remove("oldText").unwrap_or(Value::Null);
        let new_text = map.remove("newText").unwrap_or(Value::Null);
        let single = json!({ "oldText": old_text, "newText": new_text });
        match map.get_mut("edits") {
            Some(Value::Array(edits)) => edits.push(single),
            _ => {
                map.insert("edits".to_owned(), Value::Array(vec![single]));
            }
        }
    }
    args
}

fn parse(arguments: &Value) -> Result<EditArgs, ToolOutput> {
    let args: EditArgs = parse_args("edit", &normalize_arguments(arguments))?;
    if args.edits.is_empty() {
        return Err(ToolOutput::error(
            "Invalid arguments for edit: field `edits`: must contain at least one replacement",
        ));
    }
    Ok(args)
}

#[async_trait]
impl Tool for EditTool {
    fn name(&self) -> &str {
        "edit"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        schema_for::<EditArgs>()
    }

    fn prompt_snippet(&self) -> Option<&str> {
        Some(
            "Change files by exact text replacement; several separate changes to one file in one call",
        )
    }

    fn prompt_guidelines(&self) -> &[&str] {
        &[
            "Use edit for targeted changes; every edits[].oldText must match the file exactly.",
            "For several separate changes to one file, send one edit call with several entries in edits[].",
            "Each edits[].oldText is matched against the file as it was before the call, not after earlier edits; edits must not overlap, so merge nearby changes into one.",
            "Keep each oldText as short as it can be while still unique in the file.",
        ]
    }

    fn access(&self, arguments: &Value, ctx: &ToolContext) -> Access {
        match parse(arguments) {
            Ok(args) => Access::Write(vec![canonical_path(
                &resolve_path(&args.path, &ctx.cwd),
                &ctx.cwd,
            )]),
            Err(_) => Access::None,
        }
    }

    async fn execute(
        &self,
        call: ToolCall,
        ctx: &ToolContext,
        _updates: Option<UpdateSender>,
    ) -> ToolOutput {
        let args = match parse(&call.arguments) {
            Ok(args) => args,
            Err(error) => return error,
        };
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error(ABORTED_MESSAGE);
        }
        let path = resolve_path(&args.path, &ctx.cwd);
        let bytes = match tokio::fs::read(&path).await {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return ToolOutput::error(format!(
                    "Could not edit file: {}. File not found.",
                    args.path
                ));
            }
            Err(e) => {
                return ToolOutput::error(format!("Could not edit file: {}. {e}.", args.path));
            }
        };
        let Ok(raw) = String::from_utf8(bytes) else {
            return ToolOutput::error(format!(
                "Could not edit file: {}. It is not valid UTF-8 text.",
                args.path
            ));
        };
        let (bom, content) = match raw.strip_prefix('\u{FEFF}') {
            Some(rest) => ("\u{FEFF}", rest),
            None => ("", raw.as_str()),
        };
        let ending = line_ending(content);
        let original = normalize_to_lf(content);
        let updated = match apply_edits(&original, &args.edits, &args.path) {
            Ok(updated) => updated,
            Err(message) => return ToolOutput::error(message),
        };
        // The last moment a cancel can still leave the file as it was.
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error(ABORTED_MESSAGE);
        }
        let final_text = format!("{bom}{}", restore_line_endings(&updated, ending));
        let write_path = path.clone();
        let written =
            tokio::task::spawn_blocking(move || atomic_write(&write_path, final_text.as_bytes()))
                .await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return ToolOutput::error(format!("Could not write {}: {e}", args.path));
            }
            Err(e) => return ToolOutput::error(format!("Could not write {}: {e}", args.path)),
        }
        let (diff, first_changed_line) = unified_diff(&args.path, &original, &updated);
        ToolOutput::text(format!(
            "Successfully replaced {} block(s) in {}.",
            args.edits.len(),
            args.path
        ))
        .with_details(json!({ "diff": diff, "firstChangedLine": first_changed_line }))
    }
}

/// `\r\n` if the first line break is one, else `\n`.
fn line_ending(content: &str) -> &'static str {
    match content.find('\n') {
        Some(i) if i > 0 && content.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

fn restore_line_endings(text: &str, ending: &str) -> String {
    if ending == "\n" {
        text.to_owned()
    } else {
        text.replace('\n', ending)
    }
}

/// Applies every replacement to `original` (LF line endings). Each `oldText` must occur exactly
/// once in the original and no two may overlap; the error names the offending edit.
fn apply_edits(original: &str, edits: &[Replacement], path: &str) -> Result<String, String> {
    let single = edits.len() == 1;
    let mut matches: Vec<(usize, usize, usize, String)> = Vec::with_capacity(edits.len());
    for (index, edit) in edits.iter().enumerate() {
        let old_text = normalize_to_lf(&edit.old_text);
        let new_text = normalize_to_lf(&edit.new_text);
        if old_text.is_empty() {
            return Err(if single {
                format!("oldText must not be empty in {path}.")
            } else {
                format!("edits[{index}].oldText must not be empty in {path}.")
            });
        }
        // Overlapping occurrences count: "aa" in "aaa" could mean either place.
        let found = occurrences(original, &old_text);
        match found.as_slice() {
            [] => {
                return Err(if single {
                    format!(
                        "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
                    )
                } else {
                    format!(
                        "Could not find edits[{index}] in {path}. The oldText must match exactly including all whitespace and newlines."
                    )
                });
            }
            [at] => matches.push((*at, old_text.len(), index, new_text)),
            many => {
                let count = many.len();
                return Err(if single {
                    format!(
                        "Found {count} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
                    )
                } else {
                    format!(
                        "Found {count} occurrences of edits[{index}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
                    )
                });
            }
        }
    }
    matches.sort_by_key(|m| m.0);
    for pair in matches.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if a.0 + a.1 > b.0 {
            return Err(format!(
                "edits[{}] and edits[{}] overlap in {path}. Merge them into one edit or target disjoint regions.",
                a.2, b.2
            ));
        }
    }
    let mut result = String::with_capacity(original.len());
    let mut cursor = 0;
    for (at, len, _, new_text) in &matches {
        result.push_str(&original[cursor..*at]);
        result.push_str(new_text);
        cursor = at + len;
    }
    result.push_str(&original[cursor..]);
    if result == original {
        return Err(if single {
            format!("No changes made to {path}. The replacement produced identical content.")
        } else {
            format!("No changes made to {path}. The replacements produced identical content.")
        });
    }
    Ok(result)
}

/// Start of every occurrence of `needle`, overlapping ones included (`aa` occurs twice in `aaa`).
fn occurrences(haystack: &str, needle: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = haystack[from..].find(needle) {
        let at = from + i;
        found.push(at);
        from = at + haystack[at..].chars().next().map_or(1, char::len_utf8);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(old: &str, new: &str) -> Replacement {
        Replacement {
            old_text: old.to_owned(),
            new_text: new.to_owned(),
        }
    }

    #[test]
    fn edits_apply_to_the_original_not_incrementally() {
        let out = apply_edits("a b c", &[r("c", "a"), r("a", "c")], "f").unwrap();
        assert_eq!(out, "c b a");
    }

    #[test]
    fn overlapping_match_counts_as_a_second_occurrence() {
        let err = apply_edits("aaa", &[r("aa", "b")], "f").unwrap_err();
        assert!(err.starts_with("Found 2 occurrences"), "{err}");
    }

    #[test]
    fn overlapping_edits_are_refused() {
        let err = apply_edits("abcdef", &[r("abcd", "x"), r("cdef", "y")], "f").unwrap_err();
        assert!(err.contains("edits[0] and edits[1] overlap"), "{err}");
    }

    #[test]
    fn legacy_single_edit_and_string_encoded_edits_are_accepted() {
        let legacy = normalize_arguments(&json!({"path": "f", "oldText": "a", "newText": "b"}));
        assert_eq!(
            legacy,
            json!({"path": "f", "edits": [{"oldText": "a", "newText": "b"}]})
        );
        let encoded = normalize_arguments(
            &json!({"path": "f", "edits": "[{\"oldText\":\"a\",\"newText\":\"b\"}]"}),
        );
        assert_eq!(
            encoded,
            json!({"path": "f", "edits": [{"oldText": "a", "newText": "b"}]})
        );
    }

    #[test]
    fn crlf_is_detected_from_the_first_line_break() {
        assert_eq!(line_ending("a\r\nb\n"), "\r\n");
        assert_eq!(line_ending("a\nb\r\n"), "\n");
        assert_eq!(line_ending("a"), "\n");
    }
}
