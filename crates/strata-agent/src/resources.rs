//! What the system prompt reads from disk: context files (AGENTS.md, CLAUDE.md) and skills.
//!
//! Everything here is read once when the prompt is built; the result is stored in the session
//! (as the `system` snapshot), so a later change on disk becomes a patch instead of silently
//! changing the cached prefix.

use std::path::{Path, PathBuf};

/// The file names read as project instructions, in the order they are read per directory.
pub const CONTEXT_FILE_NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// One instructions file and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// Absolute path as found.
    pub path: PathBuf,
    /// The file's text.
    pub content: String,
}

/// A skill: a directory with a `SKILL.md` whose front matter names and describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// `name` from the front matter (the directory name when absent).
    pub name: String,
    /// `description` from the front matter.
    pub description: String,
    /// Path of the skill's `SKILL.md`, read on demand by the model.
    pub path: PathBuf,
}

/// Context files from the global config dir, then from the filesystem root down to `cwd`
/// (outermost first). In each directory AGENTS.md and CLAUDE.md are both read, except that a
/// CLAUDE.md with the same text as the AGENTS.md beside it (often a symlink) is read once.
pub fn context_files(global_dir: Option<&Path>, cwd: &Path) -> Vec<ContextFile> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(global) = global_dir {
        dirs.push(global.to_path_buf());
    }
    let mut ancestors: Vec<PathBuf> = cwd.ancestors().map(Path::to_path_buf).collect();
    ancestors.reverse();
    dirs.extend(ancestors);

    let mut files = Vec::new();
    for dir in dirs {
        let mut seen_here: Vec<String> = Vec::new();
        for name in CONTEXT_FILE_NAMES {
            let path = dir.join(name);
            let Ok(content) = std::fs::read_to_string(&path) else {
                continue;
            };
            if seen_here.contains(&content) {
                continue;
            }
            seen_here.push(content.clone());
            files.push(ContextFile { path, content });
        }
    }
    files
}

/// Skills under `roots`: every `SKILL.md` found (recursively, skipping hidden directories),
/// sorted by name then path so the prompt's bytes do not depend on directory order.
pub fn skills(roots: &[PathBuf]) -> Vec<Skill> {
    let mut found = Vec::new();
    for root in roots {
        collect_skills(root, 0, &mut found);
    }
    found.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.path.cmp(&b.path)));
    found.dedup_by(|a, b| a.path == b.path);
    found
}

/// Depth limit of the skill search, so a skills root pointing at a huge tree stays cheap.
const MAX_SKILL_DEPTH: usize = 4;

fn collect_skills(dir: &Path, depth: usize, found: &mut Vec<Skill>) {
    if depth > MAX_SKILL_DEPTH {
        return;
    }
    let skill_file = dir.join("SKILL.md");
    if let Ok(text) = std::fs::read_to_string(&skill_file) {
        let fallback = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let front = front_matter(&text);
        let name = front.name.unwrap_or(fallback);
        if !name.is_empty() && !front.disabled {
            found.push(Skill {
                name,
                description: front.description.unwrap_or_default(),
                path: skill_file,
            });
        }
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut subdirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    subdirs.sort();
    for sub in subdirs {
        collect_skills(&sub, depth + 1, found);
    }
}

#[derive(Debug, Default)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    disabled: bool,
}

/// The `name`, `description` and `disable-model-invocation` keys of a `---` front matter
/// block; single-line values, optionally quoted. Anything else is ignored.
fn front_matter(text: &str) -> FrontMatter {
    let mut out = FrontMatter::default();
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("---") {
        return out;
    }
    for line in lines {
        if line.trim() == "---" {
            break;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = unquote(value.trim());
        match key.trim() {
            "name" => out.name = Some(value),
            "description" => out.description = Some(value),
            "disable-model-invocation" => out.disabled = value == "true",
            _ => {}
        }
    }
    out
}

fn unquote(value: &str) -> String {
    let bytes = value.as_bytes();
    if bytes.len() >= 2
        && ((bytes[0] == b'"' && bytes[bytes.len() - 1] == b'"')
            || (bytes[0] == b'\'' && bytes[bytes.len() - 1] == b'\''))
    {
        return value[1..value.len() - 1].to_owned();
    }
    value.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_files_read_global_then_root_to_cwd_and_skip_duplicates() {
        let root = tempfile::tempdir().unwrap();
        let global = root.path().join("global");
        let project = root.path().join("project");
        let sub = project.join("sub");
        std::fs::create_dir_all(&global).unwrap();
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(global.join("AGENTS.md"), "global rules").unwrap();
        std::fs::write(project.join("AGENTS.md"), "project rules").unwrap();
        std::fs::write(project.join("CLAUDE.md"), "project rules").unwrap();
        std::fs::write(sub.join("CLAUDE.md"), "sub rules").unwrap();

        let files = context_files(Some(&global), &sub);
        let texts: Vec<&str> = files.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(texts, ["global rules", "project rules", "sub rules"]);
        assert!(files[2].path.ends_with("sub/CLAUDE.md"));
    }

    #[test]
    fn skills_come_from_front_matter_sorted_and_disabled_ones_are_left_out() {
        let root = tempfile::tempdir().unwrap();
        let write = |dir: &str, text: &str| {
            let d = root.path().join(dir);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("SKILL.md"), text).unwrap();
        };
        write(
            "zeta",
            "---\nname: zeta\ndescription: \"Last one\"\n---\nbody",
        );
        write(
            "group/alpha",
            "---\nname: alpha\ndescription: First: with colon\n---\n",
        );
        write(
            "hidden",
            "---\nname: hidden\ndisable-model-invocation: true\n---\n",
        );
        write("bare", "no front matter");

        let found = skills(&[root.path().to_path_buf()]);
        let names: Vec<&str> = found.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["alpha", "bare", "zeta"]);
        assert_eq!(found[0].description, "First: with colon");
        assert_eq!(found[2].description, "Last one");
    }
}
