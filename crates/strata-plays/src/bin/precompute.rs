//! `strata-play-precompute`: background pre-computed compaction (see the crate's README). It
//! owns the `precompute` slot: while the agent is idle after a run, strata sends it the part
//! the next compaction would summarise, and it prepares the summary then (a digest with each
//! task's outcome, no model call, nothing written to the provider's cache); the compaction
//! that follows takes it without waiting.

use serde_json::{Value, json};
use strata_extension_client::{Handler, Manifest, Ui, run};
use strata_plays::digest::Digest;

struct Precompute;

impl Handler for Precompute {
    fn memory(&mut self, slot: &str, params: &Value, _ui: &mut Ui<'_>) -> Value {
        if slot != "precompute" {
            return json!({});
        }
        let mut digest = Digest::continuing(params["previousSummary"].as_str());
        let messages = params["messages"].as_array().cloned().unwrap_or_default();
        digest.absorb(&messages, true);
        json!({ "summary": digest.render() })
    }
}

fn main() -> std::io::Result<()> {
    let manifest = Manifest {
        name: "precompute".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        slots: vec!["precompute".into()],
        ..Manifest::default()
    };
    run(manifest, Precompute)
}
