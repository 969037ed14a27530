//! Plays the demo's six sessions and prints the bill.
//! `cargo run -p strata-demo --example play`

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let catalog = strata_provider::Catalog::builtin()?;
    let dir = tempfile::tempdir()?;
    let mut print = |line: &str| println!("{line}");
    let report = strata_demo::play_all(&catalog, dir.path(), Some(&mut print)).await?;
    strata_demo::print_tables(&report, &mut std::io::stdout())?;
    Ok(())
}
