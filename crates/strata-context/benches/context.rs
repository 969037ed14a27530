//! Context assembly benchmarks (placeholder until the generated-session benches land).

fn main() {}
