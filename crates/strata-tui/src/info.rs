//! What the screen says about where it is: the git branch (read from `.git/HEAD`, no git
//! process), the working directory with `~`, `/session`'s facts, and the start-up header.

use std::path::{Path, PathBuf};

use super::stats;

/// The branch checked out in `dir` or the nearest parent holding `.git`: the name from
/// `.git/HEAD` (`ref: refs/heads/NAME`), the short hash when detached, following a `.git`
/// file (worktrees) to its directory. `None` outside a repository.
pub fn git_branch(dir: &Path) -> Option<String> {
    let git = dir
        .ancestors()
        .map(|d| d.join(".git"))
        .find(|g| g.exists())?;
    let git_dir = if git.is_file() {
        let text = std::fs::read_to_string(&git).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        let target = PathBuf::from(target);
        if target.is_absolute() {
            target
        } else {
            git.parent()?.join(target)
        }
    } else {
        git
    };
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    match head.strip_prefix("ref:") {
        Some(reference) => {
            let reference = reference.trim();
            Some(
                reference
                    .strip_prefix("refs/heads/")
                    .unwrap_or(reference)
                    .to_owned(),
            )
        }
        None => Some(head.chars().take(8).collect()),
    }
}

/// `path` with the home directory written `~`.
pub fn tilde(path: &Path) -> String {
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from)
        && !home.as_os_str().is_empty()
        && let Ok(rest) = path.strip_prefix(&home)
    {
        return if rest.as_os_str().is_empty() {
            "~".to_owned()
        } else {
            format!("~/{}", rest.display())
        };
    }
    path.display().to_string()
}

/// `/session`: the file, id, name, messages by role, tokens and cost of every request the
/// file records (all branches: all were paid).
pub fn session_lines(
    state: &strata_runtime::Status,
    stats: &strata_runtime::SessionStats,
) -> Vec<String> {
    let counts = stats.messages;
    let totals = stats.totals;
    let usage = totals.usage;
    let rate = totals
        .hit_rate()
        .map_or_else(|| "–".to_owned(), |r| format!("{:.0}%", r * 100.0));
    vec![
        format!("file      {}", state.session_path.display()),
        format!("id        {}", state.session_id),
        format!(
            "name      {}",
            state
                .session_name
                .as_deref()
                .unwrap_or("(none: /name sets one)")
        ),
        format!(
            "messages  {} user · {} assistant · {} tool results · {} shell commands ({} entries in all)",
            counts.user, counts.assistant, counts.tool_results, counts.bash, stats.entries
        ),
        format!(
            "tokens    {} in · {} cache read · {} cache write · {} out ({} requests, {rate} read from the cache)",
            stats::tokens(usage.input),
            stats::tokens(usage.cache_read),
            stats::tokens(usage.cache_write()),
            stats::tokens(usage.output),
            totals.requests
        ),
        format!("cost      {}", stats::dollars(totals.cost)),
    ]
}

/// The OSC 52 escape that puts `text` on the terminal's clipboard (the terminal, or tmux with
/// `set-clipboard on`, does the copying: no clipboard library, and it works over ssh).
pub fn osc52(text: &str) -> String {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{encoded}\x07")
}

/// The start-up header, as Pi opens its transcript: the version and model, what was loaded
/// (instruction files, skills, MCP servers), and the keys to know.
pub fn header(setup: &strata_host::Setup, model: &str) -> String {
    let global = setup.sources.global_dir.as_deref();
    let files: Vec<String> = strata_agent::resources::context_files(global, &setup.cwd)
        .iter()
        .map(|file| tilde(&file.path))
        .collect();
    let skills: Vec<String> = strata_agent::resources::skills(
        &strata_agent::prompt::skill_roots_for(global, &setup.cwd, setup.trust.trusted),
    )
    .into_iter()
    .map(|skill| skill.name)
    .collect();
    let servers: Vec<String> = setup
        .mcp_manager()
        .status()
        .into_iter()
        .map(|server| server.name)
        .collect();
    let list = |items: &[String]| {
        if items.is_empty() {
            "none".to_owned()
        } else {
            items.join(", ")
        }
    };
    [
        format!("strata {} · {model}", env!("CARGO_PKG_VERSION")),
        format!("instructions: {}", list(&files)),
        format!(
            "skills: {} · MCP servers: {}",
            list(&skills),
            list(&servers)
        ),
        "/help commands · Ctrl+P model · Shift+Tab thinking · !cmd shell · @ files".to_owned(),
    ]
    .join("\n")
}
