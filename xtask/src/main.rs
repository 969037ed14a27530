//! Workspace automation for strata: capability refresh, benchmarks, code generation checks.
//!
//! `cargo xtask refresh-capabilities [--from FILE] [--check]` regenerates
//! `crates/strata-provider/data/models.json` and `crates/strata-provider/data/schema.json` (and the trimmed catalog
//! snapshot `crates/strata-provider/data/catalog.json`) from a models.dev-format catalog merged with the
//! hand-kept `crates/strata-provider/data/providers.toml`.
//!
//! `cargo xtask bench [--quick] [--only WORKLOAD] …` runs the cache-efficiency benchmark and
//! the speed benches and rewrites `docs/benchmarks.md` (see [`xtask::bench`]).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};
use strata_provider::refresh::{
    self, CATALOG_JSON_PATH, MODELS_JSON_PATH, PROVIDERS_TOML_PATH, REFRESH_COMMAND,
    SCHEMA_JSON_PATH,
};

/// The live models.dev catalog, fetched when no `--from` file is given.
const LIVE_CATALOG_URL: &str = "https://models.dev/api.json";

const USAGE: &str = "usage: cargo xtask <command>

commands:
  refresh-capabilities [--from FILE] [--check]
      Regenerate crates/strata-provider/data/models.json and schema.json from a models.dev-format catalog
      merged with crates/strata-provider/data/providers.toml.
      --from FILE  read the catalog from FILE (models.dev api.json format) instead of the
                   live catalog; without it the live catalog is fetched and, when offline,
                   the committed snapshot crates/strata-provider/data/catalog.json is used alone
      --offline    use only the committed snapshot
      --check      write nothing; fail if regenerating would change a committed file
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("refresh-capabilities") => refresh_capabilities(&args[1..]),
        Some("bench") => xtask::bench::main(&workspace_root()?, &args[1..]),
        Some("bench-peers") => xtask::bench::peers::main(&args[1..]),
        Some("bench-mcp") => xtask::bench::mcp_churn::main(&workspace_root()?, &args[1..]),
        Some("soak") => xtask::soak::main(&workspace_root()?, &args[1..]),
        Some("tidy") => xtask::tidy::main(&workspace_root()?),
        Some("-h" | "--help") | None => {
            println!(
                "{USAGE}{}\n{}\n{}\n{}\n{}",
                xtask::bench::USAGE,
                xtask::bench::peers::USAGE,
                xtask::bench::mcp_churn::USAGE,
                xtask::soak::USAGE,
                xtask::tidy::USAGE
            );
            Ok(())
        }
        Some(other) => bail!(
            "unknown command `{other}`\n\n{USAGE}{}",
            xtask::bench::USAGE
        ),
    }
}

/// Where the catalog update comes from.
enum Source {
    File(PathBuf),
    Live,
    Offline,
}

fn refresh_capabilities(args: &[String]) -> Result<()> {
    let mut source = Source::Live;
    let mut check = false;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--from" => {
                let file = iter.next().context("--from needs a file")?;
                source = Source::File(PathBuf::from(file));
            }
            "--offline" => source = Source::Offline,
            "--check" => check = true,
            other => bail!("unknown option `{other}`\n\n{USAGE}"),
        }
    }
    let root = workspace_root()?;
    let read = |rel: &str| -> Result<String> {
        let path = root.join(rel);
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
    };
    let providers = read(PROVIDERS_TOML_PATH)?;
    let snapshot = read(CATALOG_JSON_PATH)?;
    let incoming = match &source {
        Source::File(path) => Some(
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        ),
        Source::Live => match fetch_live() {
            Ok(text) => Some(text),
            Err(e) => {
                eprintln!(
                    "note: live catalog unavailable ({e:#}); using the committed {CATALOG_JSON_PATH} alone"
                );
                None
            }
        },
        Source::Offline => None,
    };
    let outputs = refresh::regenerate(&providers, &snapshot, incoming.as_deref())?;
    let files = [
        (CATALOG_JSON_PATH, &outputs.catalog_json),
        (MODELS_JSON_PATH, &outputs.models_json),
        (SCHEMA_JSON_PATH, &outputs.schema_json),
    ];
    let mut stale = Vec::new();
    for (rel, text) in files {
        let path = root.join(rel);
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current == *text {
            println!("unchanged {rel}");
            continue;
        }
        if check {
            stale.push(rel);
        } else {
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
            println!("wrote {rel}");
        }
    }
    if !stale.is_empty() {
        bail!(
            "out of date: {} (run `{REFRESH_COMMAND}`)",
            stale.join(", ")
        );
    }
    Ok(())
}

/// Fetches the live catalog with `curl` (kept out of the build: xtask needs no TLS stack).
fn fetch_live() -> Result<String> {
    let output = Command::new("curl")
        .args([
            "--fail",
            "--silent",
            "--show-error",
            "--location",
            "--max-time",
            "60",
        ])
        .arg(LIVE_CATALOG_URL)
        .output()
        .context("running curl")?;
    if !output.status.success() {
        bail!("{}", String::from_utf8_lossy(&output.stderr).trim());
    }
    String::from_utf8(output.stdout).context("catalog is not UTF-8")
}

/// The workspace root: xtask lives one level below it.
fn workspace_root() -> Result<PathBuf> {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .context("xtask has no parent directory")?;
    Ok(root.to_path_buf())
}
