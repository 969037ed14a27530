//! The rules-layer guard's decision: is a shell command destructive, and does it reach
//! outside the project?

use std::path::{Component, Path, PathBuf};

/// Command words (with the flags that make them destructive, `None`: always).
const DESTRUCTIVE: &[(&str, Option<&[&str]>)] = &[
    ("rm", Some(&["-r", "-R", "-f", "--recursive", "--force"])),
    ("rmdir", None),
    ("dd", None),
    ("mkfs", None),
    ("shred", None),
    ("chmod", Some(&["-R", "--recursive"])),
    ("chown", Some(&["-R", "--recursive"])),
    ("mv", None),
];

/// Whether `command` has a destructive part (a `git reset --hard`, a `git clean`, or a word
/// from the list with its flags), judged per `;`, `&&`, `||` and `|` segment.
pub fn is_destructive(command: &str) -> bool {
    segments(command).iter().any(|words| {
        let Some((first, rest)) = words.split_first() else {
            return false;
        };
        if first == "git" {
            let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
            return rest.first() == Some(&"clean")
                || (rest.first() == Some(&"reset") && rest.contains(&"--hard"));
        }
        DESTRUCTIVE.iter().any(|(word, flags)| {
            (first == word || first.starts_with(&format!("{word}.")))
                && flags.is_none_or(|flags| {
                    rest.iter().any(|arg| {
                        flags.contains(&arg.as_str())
                            || (arg.starts_with('-')
                                && !arg.starts_with("--")
                                && flags.iter().any(|f| {
                                    f.len() == 2 && arg.contains(f.chars().nth(1).unwrap_or(' '))
                                }))
                    })
                })
        })
    })
}

/// The path arguments of `command` that resolve outside `project` (`~` is `home`).
pub fn outside_paths(command: &str, project: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let project = normalize(project);
    segments(command)
        .into_iter()
        .flat_map(|words| words.into_iter().skip(1))
        .filter(|word| !word.starts_with('-'))
        .filter_map(|word| {
            let word = word
                .split_once('=')
                .map_or(word.as_str(), |(key, value)| {
                    if key == "of" || key == "if" {
                        value
                    } else {
                        word.as_str()
                    }
                })
                .to_owned();
            let path = if let Some(rest) = word
                .strip_prefix("~")
                .or_else(|| word.strip_prefix("$HOME"))
            {
                home?.join(rest.trim_start_matches('/'))
            } else if word.starts_with('/') {
                PathBuf::from(&word)
            } else if word.contains("..") {
                project.join(&word)
            } else {
                return None;
            };
            let path = normalize(&path);
            (!path.starts_with(&project)).then_some(path)
        })
        .collect()
}

/// Words per command segment, quotes removed.
fn segments(command: &str) -> Vec<Vec<String>> {
    command
        .split([';', '|', '&', '\n'])
        .map(|segment| {
            segment
                .split_whitespace()
                .map(|w| w.trim_matches(['"', '\'']).to_owned())
                .filter(|w| !w.is_empty() && w != "sudo")
                .collect::<Vec<_>>()
        })
        .filter(|words| !words.is_empty())
        .collect()
}

/// `.` and `..` resolved without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}
