//! Turning the path a model wrote into the file it means.

use std::path::{Path, PathBuf};

/// Resolves a model-written path against `cwd`: a leading `@` is dropped (models copy it from
/// mentions), unusual Unicode spaces become plain spaces, `~` is the home directory.
pub fn resolve_path(raw: &str, cwd: &Path) -> PathBuf {
    let trimmed = raw.strip_prefix('@').unwrap_or(raw);
    let normalized: String = trimmed
        .chars()
        .map(|c| if is_unusual_space(c) { ' ' } else { c })
        .collect();
    let expanded = expand_home(&normalized);
    if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    }
}

fn is_unusual_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

fn expand_home(path: &str) -> PathBuf {
    let home = std::env::home_dir();
    match (path, home) {
        ("~", Some(home)) => home,
        (p, Some(home)) if p.starts_with("~/") => home.join(&p[2..]),
        (p, _) => PathBuf::from(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_join_the_cwd_and_absolute_ones_stay() {
        assert_eq!(
            resolve_path("src/a.rs", Path::new("/w")),
            PathBuf::from("/w/src/a.rs")
        );
        assert_eq!(
            resolve_path("/etc/x", Path::new("/w")),
            PathBuf::from("/etc/x")
        );
    }

    #[test]
    fn at_prefix_and_odd_spaces_are_normalized() {
        assert_eq!(
            resolve_path("@my\u{00A0}file.txt", Path::new("/w")),
            PathBuf::from("/w/my file.txt")
        );
    }
}
