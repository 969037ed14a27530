//! The unified diff an edit reports.

use similar::{ChangeTag, TextDiff};

/// Context lines around each change.
const CONTEXT_LINES: usize = 3;

/// A unified diff of `old` → `new` labelled with `path`, and the first changed line of the new
/// text (1-indexed), if anything changed.
pub fn unified_diff(path: &str, old: &str, new: &str) -> (String, Option<usize>) {
    let diff = TextDiff::from_lines(old, new);
    // Every change before the first difference is an equal line, so its position is the line.
    let first_changed = diff
        .iter_all_changes()
        .position(|change| change.tag() != ChangeTag::Equal)
        .map(|position| position + 1);
    let text = diff
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    (text, first_changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_shows_removed_and_added_lines_with_hunk_header() {
        let (diff, first) = unified_diff("f.txt", "a\nb\nc\n", "a\nB\nc\n");
        assert_eq!(
            diff,
            "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
        assert_eq!(first, Some(2));
    }

    #[test]
    fn identical_texts_have_an_empty_diff() {
        let (diff, first) = unified_diff("f", "a\n", "a\n");
        assert_eq!(diff, "");
        assert_eq!(first, None);
    }
}
