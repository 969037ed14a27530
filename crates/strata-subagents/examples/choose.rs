//! Prints how `auto` would start a child on three caches, for a few parent sizes:
//!
//! ```text
//! cargo run -p strata-subagents --example choose
//! ```

use std::time::Duration;

use strata_provider::{CacheRetention, Catalog};
use strata_subagents::{CacheModel, SpawnInputs, SpawnMode, choose};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let catalog = Catalog::builtin()?;
    for (provider, model) in [
        ("anthropic", "claude-sonnet-4-5"),
        ("openai", "gpt-5.2"),
        ("deepseek", "deepseek-v4-pro"),
    ] {
        let row = catalog.provider(provider).ok_or("no row")?;
        let model = catalog.model(provider, model).ok_or("no model")?;
        let cache =
            CacheModel::for_model(&row.capabilities(&model.id), &model, CacheRetention::Auto);
        println!("{}", model.qualified_id());
        for parent in [6_000, 30_000, 120_000] {
            let inputs = SpawnInputs {
                parent_prefix_tokens: parent,
                parent_prefix_age: Duration::from_secs(20),
                fresh_prefix_tokens: 4_000,
                // Its tools and system chapters are the parent's.
                fresh_shared_tokens: 3_000,
                expected_requests: 6,
                fork_blocked: None,
            };
            println!("  {}", choose(SpawnMode::Auto, &inputs, &cache).reason);
        }
    }
    Ok(())
}
