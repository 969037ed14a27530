//! The memory plays of `strata-plays` run as real extensions beside a bench run: the
//! strategy's play is started once per run and given to every agent of it (a restart keeps
//! it), as the host gives a configured extension.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use strata_agent::Agent;
use strata_extensions::{ExtensionSet, ExtensionSpec};

use crate::bench::strategy::Strategy;

/// The play's binary beside this program's (same profile), built when missing.
fn binary(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding the bench's own binary")?;
    let dir = exe
        .parent()
        .context("the bench's binary has no directory")?;
    let path = dir.join(name);
    if !path.exists() {
        let mut build = std::process::Command::new(
            std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()),
        );
        build.args(["build", "--quiet", "--package", "strata-plays", "--bins"]);
        if !cfg!(debug_assertions) {
            build.arg("--release");
        }
        let status = build.status().context("building strata-plays")?;
        if !status.success() || !path.exists() {
            bail!(
                "{} is missing (cargo build -p strata-plays)",
                path.display()
            );
        }
    }
    Ok(path)
}

/// The strategy's play, not started yet (`None`: the strategy runs none).
pub fn for_strategy(strategy: Strategy, cwd: &Path) -> Result<Option<Arc<ExtensionSet>>> {
    let Some(name) = strategy.play() else {
        return Ok(None);
    };
    let spec = ExtensionSpec {
        name: name.trim_start_matches("strata-play-").to_owned(),
        program: binary(name)?,
        args: Vec::new(),
        cwd: cwd.to_path_buf(),
        timeout: Duration::from_secs(30),
    };
    Ok(Some(Arc::new(ExtensionSet::new(vec![spec], None))))
}

/// Gives `agent` the play: its hooks, its start with the first prompt, its memory slots.
pub fn attach(agent: &mut Agent, set: Option<&Arc<ExtensionSet>>, cwd: &Path) {
    let Some(set) = set else {
        return;
    };
    agent.set_hooks(strata_host::extensions::hook_runner(
        strata_hooks::HookSet::default(),
        cwd,
        Some(set),
    ));
    agent.set_tool_source(Some(Arc::new(set.tool_source(None))));
    agent.set_memory_plays(Some(Arc::new(strata_host::extensions::ExtensionMemory(
        Arc::clone(set),
    ))));
}

/// Between two prompts, with a play that prepares while the agent is idle: waits (real time,
/// at most a few seconds) for it to finish, as a user reading the answer and typing the next
/// prompt gives it the time to. The mock's clock does not move meanwhile.
pub async fn user_pause(agent: &Agent, set: Option<&Arc<ExtensionSet>>) {
    if set.is_none() {
        return;
    }
    for _ in 0..500 {
        if !agent.precompute_pending() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
