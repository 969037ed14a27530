//! Cost of loading the embedded table and of the lookups render and the CLI make per turn.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use strata_provider::{Catalog, Usage};

fn bench_catalog(c: &mut Criterion) {
    c.bench_function("catalog_builtin_load", |b| {
        b.iter(|| Catalog::builtin().map(|c| black_box(c.models().count())))
    });

    let Ok(catalog) = Catalog::builtin() else {
        return;
    };
    c.bench_function("capabilities_with_overrides", |b| {
        b.iter(|| {
            black_box(catalog.capabilities(black_box("anthropic"), black_box("claude-opus-4-8")))
        })
    });
    c.bench_function("model_lookup_and_cost", |b| {
        let usage = Usage {
            input: 1_200,
            output: 900,
            cache_read: 48_000,
            cache_write_5m: 3_500,
            cache_write_1h: 0,
            cache_storage: 0,
            cache_create: 0,
        };
        b.iter(|| {
            catalog
                .model(
                    black_box("openrouter"),
                    black_box("anthropic/claude-sonnet-4.5"),
                )
                .map(|m| black_box(usage.cost(&m.prices).total()))
        })
    });
    c.bench_function("summaries_41_rows", |b| {
        b.iter(|| black_box(catalog.summaries().len()))
    });
}

criterion_group!(benches, bench_catalog);
criterion_main!(benches);
