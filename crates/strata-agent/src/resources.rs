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
    context_files_noting(global_dir, cwd).0
}

/// Instruction files are read as untrusted input: at most this many bytes each.
pub const MAX_CONTEXT_FILE_BYTES: u64 = 256 * 1024;

/// [`context_files`], with one note per file that was found but not read (a symlink leading
/// out of its directory, something other than a regular file, a file over
/// [`MAX_CONTEXT_FILE_BYTES`]), for the program to show once at start.
pub fn context_files_noting(
    global_dir: Option<&Path>,
    cwd: &Path,
) -> (Vec<ContextFile>, Vec<String>) {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(global) = global_dir {
        dirs.push(global.to_path_buf());
    }
    let mut ancestors: Vec<PathBuf> = cwd.ancestors().map(Path::to_path_buf).collect();
    ancestors.reverse();
    dirs.extend(ancestors);

    let mut files = Vec::new();
    let mut notes = Vec::new();
    for (index, dir) in dirs.iter().enumerate() {
        // The user's own directory may link anywhere (dotfiles); project files may not.
        let users_own = index == 0 && global_dir.is_some();
        let mut seen_here: Vec<String> = Vec::new();
        for name in CONTEXT_FILE_NAMES {
            let path = dir.join(name);
            let content = match read_instructions(dir, &path, users_own) {
                Ok(Some(content)) => content,
                Ok(None) => continue,
                Err(note) => {
                    notes.push(format!("not reading {}: {note}", path.display()));
                    continue;
                }
            };
            if seen_here.contains(&content) {
                continue;
            }
            seen_here.push(content.clone());
            files.push(ContextFile { path, content });
        }
    }
    (files, notes)
}

/// The text of the instructions file `path` in `dir`: `Ok(None)` when there is none, `Err`
/// with the reason when one is there but is not read. A symlink must stay inside `dir`
/// (a link to `~/.aws/credentials` is refused), only regular files are read (a FIFO is
/// opened without blocking and refused; links in the user's own config directory may point
/// anywhere), and a file over [`MAX_CONTEXT_FILE_BYTES`] is
/// refused rather than cut (half an instruction can read as a different one).
fn read_instructions(dir: &Path, path: &Path, users_own: bool) -> Result<Option<String>, String> {
    use std::io::Read as _;
    let Ok(link) = std::fs::symlink_metadata(path) else {
        return Ok(None);
    };
    if link.file_type().is_symlink() && !users_own {
        let target = std::fs::canonicalize(path).map_err(|e| format!("a broken symlink ({e})"))?;
        let home = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if !target.starts_with(&home) {
            return Err(format!(
                "a symlink to {}, outside {}",
                target.display(),
                home.display()
            ));
        }
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits());
    }
    let file = options.open(path).map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".to_owned());
    }
    if meta.len() > MAX_CONTEXT_FILE_BYTES {
        return Err(format!(
            "{} bytes, over the {} KiB instruction files may hold",
            meta.len(),
            MAX_CONTEXT_FILE_BYTES / 1024
        ));
    }
    let mut bytes = Vec::new();
    // The length can grow after the check: never read more than the limit.
    file.take(MAX_CONTEXT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_CONTEXT_FILE_BYTES {
        return Err(format!(
            "over the {} KiB instruction files may hold",
            MAX_CONTEXT_FILE_BYTES / 1024
        ));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| "not UTF-8 text".to_owned())
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

    #[test]
    fn instruction_files_are_read_as_untrusted_input() {
        let root = tempfile::tempdir().unwrap();
        let secret = root.path().join("secret");
        std::fs::write(&secret, "aws_secret_access_key = hunter2").unwrap();
        let project = root.path().join("project");
        std::fs::create_dir_all(&project).unwrap();
        // A link out of the project is refused; one inside it is followed.
        std::os::unix::fs::symlink(&secret, project.join("AGENTS.md")).unwrap();
        let (files, notes) = context_files_noting(None, &project);
        assert!(
            files.iter().all(|f| !f.content.contains("hunter2")),
            "{files:?}"
        );
        assert!(notes.iter().any(|n| n.contains("outside")), "{notes:?}");
        std::fs::remove_file(project.join("AGENTS.md")).unwrap();
        std::fs::write(project.join("RULES.md"), "be brief").unwrap();
        std::os::unix::fs::symlink(project.join("RULES.md"), project.join("AGENTS.md")).unwrap();
        let (files, _) = context_files_noting(None, &project);
        assert!(files.iter().any(|f| f.content == "be brief"), "{files:?}");
        // A FIFO does not block start-up; /dev/zero is not a regular file.
        std::fs::remove_file(project.join("AGENTS.md")).unwrap();
        nix::unistd::mkfifo(&project.join("AGENTS.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let sub = project.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        std::os::unix::fs::symlink("/dev/zero", sub.join("CLAUDE.md")).unwrap();
        let (files, notes) = context_files_noting(None, &sub);
        assert!(files.is_empty(), "{files:?}");
        assert_eq!(notes.len(), 2, "{notes:?}");
        // Over the limit: refused with a note naming the limit.
        let big = root.path().join("big");
        std::fs::create_dir_all(&big).unwrap();
        std::fs::write(big.join("AGENTS.md"), vec![b'a'; 300 * 1024]).unwrap();
        let (files, notes) = context_files_noting(None, &big);
        assert!(files.is_empty());
        assert!(notes.iter().any(|n| n.contains("256 KiB")), "{notes:?}");
    }
}
