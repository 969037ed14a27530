//! Prints the HTML page of a session file.
//! `cargo run -p strata-export --example page -- FILE.jsonl > page.html`

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let file = std::env::args()
        .nth(1)
        .ok_or("usage: page FILE.jsonl (a strata or Pi session)")?;
    let opened = strata_session::Session::open(&file)?;
    print!(
        "{}",
        strata_export::page(&opened.session, &opened.diagnostics)
    );
    Ok(())
}
