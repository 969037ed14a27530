//! `strata sessions`: the sessions of a working directory, or of all, newest first.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use strata_runtime::sessions::{
    Delegated, SessionStore, SessionSummary, delegated_from, format_iso_millis, spawned_by,
};

use crate::args::SessionsArgs;

pub fn run(args: &SessionsArgs) -> anyhow::Result<()> {
    let root = match &args.root {
        Some(root) => root.clone(),
        None => {
            let home = std::env::var_os("HOME").map(PathBuf::from).context(
                "HOME is not set; pass --root or set STRATA_SESSIONS_DIR to find the sessions",
            )?;
            SessionStore::default_root(&home)
        }
    };
    let store = SessionStore::new(root.clone());
    let mut sessions = if args.all {
        store
            .list_all()
            .with_context(|| format!("listing sessions under {}", root.display()))?
    } else {
        let cwd = match &args.cwd {
            Some(cwd) => cwd.clone(),
            None => std::env::current_dir().context("reading the current directory")?,
        };
        let cwd = std::path::absolute(&cwd).unwrap_or(cwd);
        store.list(&cwd.to_string_lossy()).with_context(|| {
            format!(
                "listing sessions of {} under {}",
                cwd.display(),
                root.display()
            )
        })?
    };
    sessions.sort_by_key(|s| std::cmp::Reverse(s.modified));
    let mut out = std::io::stdout().lock();
    if args.json {
        for summary in &sessions {
            let mut value = serde_json::to_value(summary)?;
            if let Some(object) = value.as_object_mut() {
                object.insert("path".into(), summary.path.display().to_string().into());
                let children: Vec<serde_json::Value> = children(&summary.path)
                    .iter()
                    .map(|child| {
                        serde_json::json!({
                            "path": child.summary.path.display().to_string(),
                            "id": child.summary.id,
                            "messageCount": child.summary.message_count,
                            // The header's field as written (fields strata does not read too).
                            "spawnedBy": spawned_by(child.path()),
                        })
                    })
                    .collect();
                if !children.is_empty() {
                    object.insert("children".into(), children.into());
                }
            }
            writeln!(out, "{value}")?;
        }
        return Ok(());
    }
    if sessions.is_empty() {
        writeln!(out, "no sessions under {}", root.display())?;
        return Ok(());
    }
    for summary in &sessions {
        writeln!(out, "{}", line(summary, args.all))?;
        for child in children(&summary.path) {
            writeln!(out, "{}", child_line(&child))?;
        }
    }
    Ok(())
}

/// `  └ child (start agent): description  msgs  path`, indented by depth.
fn child_line(child: &Delegated) -> String {
    format!(
        "{}└ {}",
        "  ".repeat(usize::try_from(child.depth).unwrap_or(1)),
        child.line()
    )
}

/// The sessions delegated from `parent`, depth first (a child's own children after it).
fn children(parent: &std::path::Path) -> Vec<Delegated> {
    let mut found = Vec::new();
    for child in delegated_from(parent) {
        let path = child.path().to_path_buf();
        found.push(child);
        found.extend(children(&path));
    }
    found
}

/// `modified  messages  size  title  [cwd]  path` on one line.
fn line(summary: &SessionSummary, with_cwd: bool) -> String {
    let title = summary
        .name
        .clone()
        .or_else(|| summary.first_message.clone())
        .unwrap_or_else(|| "(no messages)".into());
    let title: String = title.split_whitespace().collect::<Vec<_>>().join(" ");
    let title = if title.chars().count() > 60 {
        format!("{}…", title.chars().take(59).collect::<String>())
    } else {
        title
    };
    let modified = format_iso_millis(summary.modified);
    let when = modified.get(..16).unwrap_or(&modified).replace('T', " ");
    let cwd = if with_cwd {
        format!("  {}", summary.cwd)
    } else {
        String::new()
    };
    format!(
        "{when}  {:>5} msgs  {:>9}  {title:<60}{cwd}  {}",
        summary.message_count,
        human_size(summary.size),
        summary.path.display()
    )
}

fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
