//! Editing strata's config files in place: one key set, the file's comments and other
//! settings kept. `/settings` and `/login` in the terminal UI and `strata mcp add` write
//! through here.

use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

use anyhow::Context as _;

/// Sets `keys` (a table path, then the key: `["compaction", "enabled"]`) to `value` in the
/// TOML file at `path`, creating the file and the tables as needed.
pub fn set_value(
    path: &Path,
    keys: &[&str],
    value: impl Into<toml_edit::Value>,
) -> anyhow::Result<()> {
    let document = with_value(path, keys, value.into())?;
    write_document(path, &document)
}

/// [`set_value`] for a secret (an API key): the file is made readable by its owner only
/// (mode 0600) before the secret is written to it.
pub fn set_secret(path: &Path, keys: &[&str], secret: &str) -> anyhow::Result<()> {
    let document = with_value(path, keys, secret.into())?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    if path.exists() {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("making {} private", path.display()))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(document.to_string().as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

fn with_value(
    path: &Path,
    keys: &[&str],
    value: toml_edit::Value,
) -> anyhow::Result<toml_edit::DocumentMut> {
    let Some((last, tables)) = keys.split_last() else {
        anyhow::bail!("no key to set in {}", path.display());
    };
    let mut document = read_document(path)?;
    let mut table = document.as_table_mut();
    let mut walked = Vec::new();
    for key in tables {
        walked.push(*key);
        let entry = table.entry(key).or_insert_with(|| {
            let mut new = toml_edit::Table::new();
            new.set_implicit(true);
            toml_edit::Item::Table(new)
        });
        table = entry.as_table_mut().with_context(|| {
            format!(
                "`{}` in {} is not a table",
                walked.join("."),
                path.display()
            )
        })?;
    }
    table.insert(last, toml_edit::Item::Value(value));
    Ok(document)
}

/// The file as an editable document (empty when it does not exist).
pub(crate) fn read_document(path: &Path) -> anyhow::Result<toml_edit::DocumentMut> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(error).with_context(|| format!("reading {}", path.display())),
    };
    text.parse()
        .with_context(|| format!("{} is not valid TOML", path.display()))
}

/// Writes the document, creating the file's directory.
pub(crate) fn write_document(path: &Path, document: &toml_edit::DocumentMut) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, document.to_string())
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_set_in_place_and_a_secret_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("strata/config.toml");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "# mine\nmodel = \"a/b\"\n").unwrap();
        set_value(&path, &["compaction", "enabled"], false).unwrap();
        set_value(&path, &["theme"], "light").unwrap();
        set_secret(&path, &["providers", "anthropic", "api_key"], "sk-1").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine\nmodel = \"a/b\"\n"), "{text}");
        let table: toml::Table = text.parse().unwrap();
        assert_eq!(table["compaction"]["enabled"].as_bool(), Some(false));
        assert_eq!(table["theme"].as_str(), Some("light"));
        assert_eq!(
            table["providers"]["anthropic"]["api_key"].as_str(),
            Some("sk-1")
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(&path, "theme = 3\n[compaction]\n").unwrap();
        assert!(set_value(&path, &["theme", "x"], true).is_err());
    }
}
