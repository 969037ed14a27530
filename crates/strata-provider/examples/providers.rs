//! Lists the built-in providers and prices one usage record.
//!
//! `cargo run -p strata-provider --example providers [PROVIDER/MODEL]`

use strata_provider::{Catalog, CatalogError, Usage};

fn main() -> Result<(), CatalogError> {
    let catalog = Catalog::builtin()?;

    println!(
        "{:<24} {:<22} {:>6}  {:<22} {:<8} {:<8} {:<8}",
        "provider", "protocol", "models", "cache", "mid-sys", "tool-add", "tool-rm"
    );
    for p in catalog.summaries() {
        println!(
            "{:<24} {:<22} {:>6}  {:<22} {:<8} {:<8} {:<8}",
            p.id,
            p.protocol.as_str(),
            p.models,
            format!("{:?}", p.cache_style),
            p.mid_conversation_system.as_str(),
            p.tool_addition.as_str(),
            p.tool_removal.as_str(),
        );
    }

    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "anthropic/claude-sonnet-4-5".to_owned());
    let Some(model) = catalog.resolve(&name) else {
        eprintln!("unknown model {name} (use provider/model)");
        return Ok(());
    };
    // A typical agent turn: most of the prompt read from cache, the new tail written.
    let usage = Usage {
        input: 1_200,
        output: 900,
        cache_read: 48_000,
        cache_write_5m: 3_500,
        cache_write_1h: 0,
        cache_storage: 0,
        cache_create: 0,
    };
    let cost = usage.cost(&model.prices);
    let caps = catalog.capabilities(&model.provider, &model.id);
    println!();
    println!(
        "{} ({}), context {} tokens",
        model.qualified_id(),
        model.name,
        model.context_window
    );
    println!(
        "  cache: {:?}, min {} tokens, mid-conversation system: {}",
        caps.cache_style, caps.min_cacheable_tokens, caps.mid_conversation_system
    );
    println!(
        "  cost ${:.6}: input {:.6}, cache read {:.6}, cache write {:.6}, output {:.6}; hit rate {:.1}%",
        cost.total(),
        cost.input,
        cost.cache_read,
        cost.cache_write(),
        cost.output,
        usage.cache_hit_rate() * 100.0
    );
    Ok(())
}
