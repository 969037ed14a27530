//! Prints what the guard thinks of a command:
//! `cargo run -p strata-plays --example decide -- 'rm -rf /tmp/x'`.

use strata_plays::guard::{is_destructive, outside_paths};

fn main() -> std::io::Result<()> {
    let command = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let project = std::env::current_dir()?;
    println!(
        "destructive: {}, outside the project: {:?}",
        is_destructive(&command),
        outside_paths(&command, &project, None)
    );
    Ok(())
}
