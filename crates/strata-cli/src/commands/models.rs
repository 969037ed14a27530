//! `strata models [PROVIDER]`: every model usable now — the built-in table, the user's config,
//! Pi's models.json and what local servers say they serve — with window, prices and cache.

use std::io::Write as _;

use serde::Serialize;
use strata_host::rows::{Discovery, Lesson};
use strata_runtime::{Catalog, Model};

use crate::args::{ModelsArgs, RunArgs};
use strata_host::Setup;

/// One model as listed.
#[derive(Debug, Serialize)]
struct Listed {
    provider: String,
    id: String,
    /// Context window in tokens (`None`: the server reports none).
    context_window: Option<u64>,
    max_output: Option<u64>,
    /// USD per million tokens: input, output, cache read, cache write.
    prices: Option<[f64; 4]>,
    cache: &'static str,
    mid_conversation_system: bool,
    tool_changes: bool,
    /// Where the entry came from: `built-in`, a config file, Pi's file, or `served`.
    source: String,
    /// Where the provider's key comes from (`None`: no key, the model is not usable now).
    key: Option<String>,
    /// Features the provider refused for this model, still in force.
    learned: Vec<Lesson>,
}

fn listed(catalog: &Catalog, model: &Model) -> Listed {
    let caps = catalog.capabilities(&model.provider, &model.id);
    let p = &model.prices;
    Listed {
        provider: model.provider.clone(),
        id: model.id.clone(),
        context_window: Some(model.context_window),
        max_output: Some(model.max_output),
        prices: Some([p.input, p.output, p.cache_read, p.cache_write_5m]),
        cache: caps.cache_style.short_name(),
        mid_conversation_system: caps.mid_conversation_system,
        tool_changes: caps.tool_addition && caps.tool_removal,
        source: catalog
            .model_origins(&model.provider, &model.id)
            .join(" + "),
        key: None,
        learned: Vec::new(),
    }
}

/// `--list-models [SEARCH]`: the usable models matching SEARCH, as Pi lists them.
pub fn list_models(search: Option<String>, run: &RunArgs) -> anyhow::Result<()> {
    let args = ModelsArgs {
        provider: None,
        offline: false,
        base_url: None,
        json: false,
        search,
        usable: true,
    };
    self::run(&args, run)
}

/// Whether `row` matches every word of `search`, in `provider/id` (case-insensitive).
fn matches(search: Option<&str>, row: &Listed) -> bool {
    let Some(search) = search else {
        return true;
    };
    let name = format!("{}/{}", row.provider, row.id).to_lowercase();
    search
        .to_lowercase()
        .split_whitespace()
        .all(|word| name.contains(word))
}

pub fn run(args: &ModelsArgs, run: &RunArgs) -> anyhow::Result<()> {
    let setup = Setup::load(&run.overrides())?;
    let catalog = &setup.catalog;
    if let Some(provider) = &args.provider
        && catalog.provider(provider).is_none()
    {
        anyhow::bail!("unknown provider `{provider}` (see `strata providers`)");
    }
    let wanted = |id: &str| args.provider.as_deref().is_none_or(|p| p == id);
    let mut rows: Vec<Listed> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    for row in catalog.providers().filter(|r| wanted(&r.id)) {
        rows.extend(catalog.models_of(&row.id).map(|m| listed(catalog, m)));
        if row.server.is_none() || args.offline {
            continue;
        }
        let url = args
            .base_url
            .clone()
            .unwrap_or_else(|| row.base_url.clone());
        let key = setup.key_for_listing(row, &url, args.base_url.is_some());
        let Some(discovery) = Discovery::new(row, &url, key.as_ref()) else {
            continue;
        };
        match runtime.block_on(discovery.list()) {
            Ok(served) => {
                let caps = catalog.capabilities(&row.id, "");
                for model in served {
                    if catalog.model(&row.id, &model.id).is_some() {
                        continue;
                    }
                    let window = match model.context_window {
                        Some(w) => Some(w),
                        None => runtime
                            .block_on(discovery.context_window(&model.id))
                            .ok()
                            .flatten(),
                    };
                    rows.push(Listed {
                        provider: row.id.clone(),
                        id: model.id,
                        context_window: window,
                        max_output: None,
                        prices: None,
                        cache: caps.cache_style.short_name(),
                        mid_conversation_system: caps.mid_conversation_system,
                        tool_changes: caps.tool_addition && caps.tool_removal,
                        source: format!("served by {url}"),
                        key: None,
                        learned: Vec::new(),
                    });
                }
            }
            Err(e) if args.provider.is_some() => notes.push(format!("{}: {e}", row.id)),
            Err(_) => {}
        }
    }
    // Usable models first (a key is present), each group in the table's order.
    let mut keys: std::collections::BTreeMap<String, Option<String>> = Default::default();
    for row in &mut rows {
        let key = keys
            .entry(row.provider.clone())
            .or_insert_with(|| {
                catalog.provider(&row.provider).and_then(|r| {
                    if r.server.is_some() && r.auth_env.is_empty() {
                        Some("no key needed".to_owned())
                    } else {
                        setup.credential_source(r)
                    }
                })
            })
            .clone();
        row.key = key;
    }
    let lessons = strata_host::factory::learned_in_force(catalog);
    for row in &mut rows {
        let of_row = |l: &&Lesson| l.provider == row.provider && l.model == row.id;
        row.learned = lessons.iter().filter(of_row).cloned().collect();
    }
    rows.retain(|row| matches(args.search.as_deref(), row) && (!args.usable || row.key.is_some()));
    rows.sort_by_key(|row| row.key.is_none());
    let usable = rows.iter().filter(|r| r.key.is_some()).count();
    let mut out = std::io::stdout().lock();
    if args.json {
        for row in &rows {
            serde_json::to_writer(&mut out, row)?;
            writeln!(out)?;
        }
        return Ok(());
    }
    writeln!(
        out,
        "{:<44} {:>9} {:>8} {:>8} {:>8} {:<9} {:<7} source",
        "model", "context", "$in/M", "$out/M", "$read/M", "cache", "mid-sys"
    )?;
    let count = |n: Option<u64>| n.map_or_else(|| "?".to_owned(), |n| n.to_string());
    if usable == 0 {
        writeln!(
            out,
            "# no model is usable now: no provider has a key (set one of the variables `strata providers` lists)"
        )?;
    } else {
        writeln!(out, "# usable now ({usable}): their provider has a key")?;
    }
    for (index, row) in rows.iter().enumerate() {
        if index == usable && usable > 0 {
            writeln!(
                out,
                "# not usable now ({}): no key for their provider (`strata providers` lists each provider's variables)",
                rows.len() - usable
            )?;
        }
        let [input, output, read, _] = row.prices.unwrap_or([f64::NAN; 4]);
        let price = |v: f64| {
            if v.is_nan() {
                "-".to_owned()
            } else {
                format!("{v:.2}")
            }
        };
        writeln!(
            out,
            "{:<44} {:>9} {:>8} {:>8} {:>8} {:<9} {:<7} {}",
            format!("{}/{}", row.provider, row.id),
            count(row.context_window),
            price(input),
            price(output),
            price(read),
            row.cache,
            if row.mid_conversation_system {
                "yes"
            } else {
                "no"
            },
            row.source
        )?;
        for lesson in &row.learned {
            writeln!(out, "{}", lesson.note())?;
        }
    }
    for note in notes {
        writeln!(out, "# {note}")?;
    }
    let served: Vec<&str> = catalog
        .providers()
        .filter(|r| r.server.is_some() && wanted(&r.id))
        .map(|r| r.id.as_str())
        .collect();
    if !served.is_empty() {
        writeln!(
            out,
            "# {} take any model id (`--model {}/<id>`); their servers' lists are shown when they answer",
            served.join(", "),
            served[0]
        )?;
    }
    Ok(())
}
