//! Starts an extension, prints what it declared, and shuts it down:
//! `cargo run -p strata-extensions --example list -- python3 my_extension.py`.

use std::time::Duration;

use strata_extensions::{Extension, ExtensionSpec};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let program = args.next().ok_or("usage: list PROGRAM [ARGS...]")?;
    let spec = ExtensionSpec {
        name: program.clone(),
        program: program.into(),
        args: args.collect(),
        cwd: std::env::current_dir()?,
        timeout: Duration::from_secs(10),
    };
    let extension = Extension::start(spec, None, None).await?;
    println!("{}", serde_json::to_string_pretty(extension.manifest())?);
    extension.shutdown().await;
    Ok(())
}
