//! Project trust: whether a project's `.strata/` settings that redirect traffic or change what
//! the model is told apply. Other code (MCP servers, project skills) asks [`decide`] or reads
//! `Setup::trust` instead of deciding on its own.
//!
//! A project is trusted when the run says so (`--trust`), when the user's own config lists it
//! (`trusted_projects = ["~/src/app"]`, a parent directory trusts everything under it), or
//! when `strata trust` / the TUI's `/trust` saved it in `trust.json` beside the user's
//! config.toml. A project can never trust itself: its own file's `trusted_projects` is ignored.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// The trust decision for one project directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectTrust {
    /// The project directory (canonical when it exists).
    pub project_dir: PathBuf,
    /// Whether its gated settings apply.
    pub trusted: bool,
    /// What decided.
    pub source: TrustSource,
}

impl ProjectTrust {
    /// `dir`, trusted by nothing.
    pub fn untrusted(dir: &Path) -> Self {
        Self {
            project_dir: dir.to_path_buf(),
            trusted: false,
            source: TrustSource::Untrusted,
        }
    }
}

/// What made the decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TrustSource {
    /// `--trust` on the command line, for this run.
    Flag,
    /// An entry of `trusted_projects` in the user's config.toml.
    UserConfig {
        /// The entry that matched.
        entry: PathBuf,
    },
    /// An entry saved by `strata trust` or `/trust`.
    TrustFile {
        /// The file.
        file: PathBuf,
        /// The entry that matched.
        entry: PathBuf,
    },
    /// Nothing trusts it.
    Untrusted,
}

/// `trust.json`: directories the user trusted from strata itself.
#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    trusted: Vec<PathBuf>,
}

/// The file `strata trust` writes, beside the user's config.toml.
pub fn trust_file(global_dir: &Path) -> PathBuf {
    global_dir.join("trust.json")
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `~/x` with the home directory filled in.
fn expand_home(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => Path::new(&home).join(rest),
        _ => path.to_path_buf(),
    }
}

fn read_trust_file(global_dir: &Path) -> Vec<PathBuf> {
    std::fs::read_to_string(trust_file(global_dir))
        .ok()
        .and_then(|text| serde_json::from_str::<TrustFile>(&text).ok())
        .map(|file| file.trusted)
        .unwrap_or_default()
}

/// Decides trust for `project_dir` from the flag, the user's own config table and
/// `trust.json` (never from the project's files).
pub fn decide(
    global_dir: Option<&Path>,
    user_config: Option<&toml::Table>,
    project_dir: &Path,
    flag: bool,
) -> ProjectTrust {
    let project_dir = canonical(project_dir);
    let covers = |entry: &Path| project_dir.starts_with(canonical(&expand_home(entry)));
    let source = if flag {
        TrustSource::Flag
    } else if let Some(entry) = user_config
        .and_then(|t| t.get("trusted_projects"))
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(toml::Value::as_str)
        .map(PathBuf::from)
        .find(|entry| covers(entry))
    {
        TrustSource::UserConfig { entry }
    } else if let Some((file, entry)) = global_dir.and_then(|dir| {
        read_trust_file(dir)
            .into_iter()
            .find(|entry| covers(entry))
            .map(|entry| (trust_file(dir), entry))
    }) {
        TrustSource::TrustFile { file, entry }
    } else {
        TrustSource::Untrusted
    };
    ProjectTrust {
        trusted: source != TrustSource::Untrusted,
        project_dir,
        source,
    }
}

/// Saves `dir` as trusted (or removes it with `trusted = false`) in `trust.json`, written to a
/// temporary file and renamed so a crash never leaves half a file. Returns the file.
pub fn save(global_dir: &Path, dir: &Path, trusted: bool) -> anyhow::Result<PathBuf> {
    let dir = canonical(dir);
    let mut entries = read_trust_file(global_dir);
    entries.retain(|entry| canonical(entry) != dir);
    if trusted {
        entries.push(dir);
    }
    entries.sort();
    std::fs::create_dir_all(global_dir)
        .with_context(|| format!("creating {}", global_dir.display()))?;
    let path = trust_file(global_dir);
    let text = serde_json::to_string_pretty(&TrustFile { trusted: entries })?;
    let temp = path.with_extension("json.tmp");
    std::fs::write(&temp, format!("{text}\n"))
        .with_context(|| format!("writing {}", temp.display()))?;
    std::fs::rename(&temp, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_comes_from_the_user_side_only() {
        let home = tempfile::tempdir().unwrap();
        let global = home.path().join("config");
        let project = home.path().join("src/app");
        std::fs::create_dir_all(&project).unwrap();
        let nothing = decide(Some(&global), None, &project, false);
        assert!(!nothing.trusted);
        assert_eq!(nothing.source, TrustSource::Untrusted);
        assert!(decide(Some(&global), None, &project, true).trusted);

        let parent = home.path().join("src").display().to_string();
        let table: toml::Table =
            toml::from_str(&format!("trusted_projects = [{parent:?}]")).unwrap();
        let by_config = decide(Some(&global), Some(&table), &project, false);
        assert!(by_config.trusted, "a parent entry covers the project");
        assert!(matches!(by_config.source, TrustSource::UserConfig { .. }));
        let sibling = home.path().join("srcx");
        std::fs::create_dir_all(&sibling).unwrap();
        assert!(!decide(Some(&global), Some(&table), &sibling, false).trusted);

        let file = save(&global, &project, true).unwrap();
        let saved = decide(Some(&global), None, &project, false);
        assert!(
            matches!(saved.source, TrustSource::TrustFile { .. }),
            "{saved:?}"
        );
        save(&global, &project, false).unwrap();
        assert!(!decide(Some(&global), None, &project, false).trusted);
        assert!(
            std::fs::read_to_string(file)
                .unwrap()
                .contains("\"trusted\": []")
        );
    }
}
