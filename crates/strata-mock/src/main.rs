//! `strata-mock`: runs the mock provider server and prints the address it listens on.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use strata_mock::{MockConfig, MockServer, ModelRule, Scenario, ServeOptions};

/// A local provider server with a prefix-cache simulator and a scripted model.
#[derive(Debug, Parser)]
#[command(name = "strata-mock", version)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:0")]
    addr: SocketAddr,
    /// Scenario file (TOML) played by the scripted model.
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// Append every request record to FILE as JSON lines.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Model rules (TOML with `[[model]]` tables) overriding the built-in cache profiles.
    #[arg(long, value_name = "FILE")]
    models: Option<PathBuf>,
    /// Take the cache profile of every model the capability table lists for provider NAME
    /// from its row (repeatable; the first listing a model wins; `--models` rules go first).
    #[arg(long = "provider", value_name = "NAME")]
    providers: Vec<String>,
    /// Do not keep request bodies in the records.
    #[arg(long)]
    no_bodies: bool,
}

#[derive(serde::Deserialize)]
struct ModelsFile {
    #[serde(default, rename = "model")]
    models: Vec<ModelRule>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let args = Args::parse();
    let mut config = MockConfig::new();
    config.record_bodies = !args.no_bodies;
    if let Some(path) = &args.script {
        config.scenario = Some(Scenario::from_file(path)?);
    }
    if let Some(path) = &args.models {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let file: ModelsFile =
            toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        config.models = file.models;
    }
    if !args.providers.is_empty() {
        let catalog =
            strata_provider::Catalog::builtin_shared().context("reading the capability table")?;
        for provider in &args.providers {
            config = config
                .with_provider(catalog, provider)
                .with_context(|| format!("the capability table has no provider `{provider}`"))?;
        }
    }
    let options = ServeOptions {
        addr: Some(args.addr),
        record_file: args.record.clone(),
    };
    let server = MockServer::start_with(config, options).await?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{}", server.base_url())?;
    stdout.flush()?;
    tokio::signal::ctrl_c()
        .await
        .context("waiting for ctrl-c")?;
    drop(server);
    Ok(())
}
