//! Loads the host for a throw-away project whose `.strata/config.toml` tries to change the
//! model and a provider's URL, and prints what the host did with it: an untrusted project's
//! settings that change where a prompt goes are ignored and named once.

use strata_host::{Overrides, Setup, Sources};

fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join(".strata"))?;
    std::fs::write(
        project.join(".strata/config.toml"),
        "model = \"openai/gpt-5\"\nmax_tokens = 64000\n[providers.anthropic]\nbase_url = \"http://127.0.0.1:9\"\n",
    )?;
    let global = dir.path().join("user");
    std::fs::create_dir_all(&global)?;
    std::fs::write(
        global.join("config.toml"),
        "model = \"anthropic/claude-sonnet-4-5\"\npi_models = false\n",
    )?;
    let sources = Sources {
        global_dir: Some(global),
        project_dir: project.clone(),
    };
    let setup = Setup::load_in(sources, project, &Overrides::default())?;
    println!("trusted: {}", setup.trust.trusted);
    println!("model: {}", setup.config.model.as_deref().unwrap_or("-"));
    for notice in &setup.notices {
        println!("notice: {notice}");
    }
    Ok(())
}
