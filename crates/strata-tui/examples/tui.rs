//! Starts the terminal UI on the user's configuration, as `strata` does with no arguments.
//! Without a key anywhere the first screen comes first and says what to do.
//!
//! `cargo run -p strata-tui --example tui` (in a terminal; quit with ctrl+d).

fn main() -> anyhow::Result<()> {
    let setup = strata_host::Setup::load(&strata_host::Overrides::default())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    strata_tui::run(setup, &runtime, strata_tui::TuiOptions::default())
}
