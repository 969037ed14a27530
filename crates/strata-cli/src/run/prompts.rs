//! The prompts a run starts with, from the command line as Pi takes them: piped stdin, then
//! `@path` files, then the first message make the first prompt; every later message is a
//! prompt of its own, sent in turn.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use base64::Engine as _;
use strata_runtime::ImageContent;
use strata_runtime::UserInput;

/// The largest `@path` file read into a prompt: a bigger one is an error, not a silent cut.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The words after the flags, split into `@path` files and messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Words {
    /// `@path` arguments, without the `@`.
    pub files: Vec<String>,
    /// Everything else, in order.
    pub messages: Vec<String>,
}

impl Words {
    /// Splits positional arguments: a word starting with `@` names a file.
    pub fn split(words: &[String]) -> Self {
        let mut out = Self::default();
        for word in words {
            match word.strip_prefix('@').filter(|path| !path.is_empty()) {
                Some(path) => out.files.push(path.to_owned()),
                None => out.messages.push(word.clone()),
            }
        }
        out
    }
}

/// The prompts to send, in order: `piped` stdin, the files and `first` (the `-p` text or the
/// first message) make the first; the other messages follow one per prompt. Empty when
/// nothing was given.
pub fn build(
    cwd: &Path,
    piped: Option<&str>,
    first: Option<&str>,
    words: &Words,
) -> anyhow::Result<Vec<UserInput>> {
    let mut messages = words.messages.iter().map(String::as_str);
    let first = first.or_else(|| messages.next());
    let mut text = String::new();
    let mut images = Vec::new();
    if let Some(piped) = piped.filter(|p| !p.trim().is_empty()) {
        text.push_str(piped.trim_end());
        text.push_str("\n\n");
    }
    for name in &words.files {
        let path = resolve(cwd, name);
        attach(&path, &mut text, &mut images)?;
    }
    if let Some(first) = first {
        text.push_str(first);
    }
    let mut prompts = Vec::new();
    if !text.trim().is_empty() || !images.is_empty() {
        prompts.push(UserInput {
            text: text.trim_end().to_owned(),
            images,
        });
    }
    prompts.extend(messages.map(UserInput::text));
    Ok(prompts)
}

/// `~/…` from the home directory, a relative path from `cwd`.
fn resolve(cwd: &Path, name: &str) -> PathBuf {
    if let Some(rest) = name.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return Path::new(&home).join(rest);
    }
    cwd.join(name)
}

/// Adds one file to the prompt as Pi does: text inside `<file name="…">`, an image as an
/// attachment with an empty `<file>` reference; an empty file adds nothing.
fn attach(path: &Path, text: &mut String, images: &mut Vec<ImageContent>) -> anyhow::Result<()> {
    let shown = path.display();
    let meta = std::fs::metadata(path).with_context(|| format!("@{shown}: file not found"))?;
    if !meta.is_file() {
        anyhow::bail!("@{shown} is not a regular file");
    }
    if meta.len() == 0 {
        return Ok(());
    }
    if meta.len() > MAX_FILE_BYTES {
        anyhow::bail!(
            "@{shown} is {} bytes, over the {MAX_FILE_BYTES}-byte limit for a file in a prompt; let the agent read it with its tools instead",
            meta.len()
        );
    }
    let bytes = std::fs::read(path).with_context(|| format!("reading @{shown}"))?;
    if let Some(mime) = strata_runtime::image_mime_type(&bytes) {
        images.push(ImageContent {
            data: base64::engine::general_purpose::STANDARD.encode(&bytes),
            mime_type: mime.to_owned(),
            ..ImageContent::default()
        });
        text.push_str(&format!("<file name=\"{shown}\"></file>\n"));
        return Ok(());
    }
    let content = String::from_utf8(bytes).map_err(|_| {
        anyhow::anyhow!("@{shown} is neither text (UTF-8) nor an image strata reads")
    })?;
    let content = content.strip_prefix('\u{feff}').unwrap_or(&content);
    text.push_str(&format!("<file name=\"{shown}\">\n{content}\n</file>\n"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Words {
        Words::split(&list.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn stdin_then_files_then_the_first_message_make_the_first_prompt() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "fn a() {}").unwrap();
        std::fs::write(dir.path().join("empty.txt"), "").unwrap();
        let prompts = build(
            dir.path(),
            Some("diff --git\n"),
            None,
            &words(&["@a.rs", "@empty.txt", "review this", "then fix it"]),
        )
        .unwrap();
        let path = dir.path().join("a.rs");
        assert_eq!(prompts.len(), 2);
        assert_eq!(
            prompts[0].text,
            format!(
                "diff --git\n\n<file name=\"{}\">\nfn a() {{}}\n</file>\nreview this",
                path.display()
            )
        );
        assert_eq!(prompts[1].text, "then fix it");
    }

    #[test]
    fn an_image_is_attached_and_a_missing_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shot.png"), b"\x89PNG\r\n\x1a\nrest").unwrap();
        let prompts = build(
            dir.path(),
            None,
            Some("what is this?"),
            &words(&["@shot.png"]),
        )
        .unwrap();
        assert_eq!(prompts[0].images.len(), 1);
        assert_eq!(prompts[0].images[0].mime_type, "image/png");
        assert!(prompts[0].text.ends_with("></file>\nwhat is this?"));
        let err = build(dir.path(), None, None, &words(&["@nope.rs"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("nope.rs: file not found"), "{err}");
        assert!(
            build(dir.path(), None, None, &words(&[]))
                .unwrap()
                .is_empty()
        );
    }
}
