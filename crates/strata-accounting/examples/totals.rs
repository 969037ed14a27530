//! Prints what a session file paid: `cargo run -p strata-accounting --example totals -- FILE`.

use strata_accounting::{Totals, cache_report, records};
use strata_provider::Catalog;
use strata_session::Session;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: totals SESSION.jsonl");
        return Ok(());
    };
    let opened = Session::open(&path)?;
    let tree = opened.session.tree();
    let records = records(tree);
    let totals = Totals::of(&records);
    println!(
        "{} requests ({} keep-warm), read {}, written {} ({} for an hour), ${:.4}",
        totals.requests,
        totals.pings,
        totals.usage.cache_read,
        totals.usage.cache_write(),
        totals.usage.cache_write_1h,
        totals.cost
    );
    let report = cache_report(Some(tree), &records, &Catalog::builtin()?);
    for broke in &report.breaks {
        println!(
            "{} break at request {} ({}): read {} of {} — {}",
            if broke.cause.is_expected() {
                "expected"
            } else {
                "UNEXPECTED"
            },
            broke.request,
            broke.id,
            broke.cache_read,
            broke.previous_prompt,
            broke.cause.describe()
        );
    }
    for small in &report.below_minimum {
        println!(
            "request {}: {} tokens, under the cache minimum of {}",
            small.request, small.prompt, small.minimum
        );
    }
    Ok(())
}
