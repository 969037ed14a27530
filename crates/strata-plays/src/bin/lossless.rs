//! `strata-play-lossless`: lossless syntactic compaction (see the crate's README). It owns the
//! `compaction` slot and answers each compaction with a digest of what happened — the user's
//! requests, files read and changed, commands and exit codes, errors — and no prose, with no
//! model call.

use serde_json::{Value, json};
use strata_extension_client::{Handler, Manifest, Ui, run};
use strata_plays::digest::Digest;

struct Lossless;

impl Handler for Lossless {
    fn memory(&mut self, slot: &str, params: &Value, _ui: &mut Ui<'_>) -> Value {
        if slot != "compaction" {
            return json!({});
        }
        let mut digest = Digest::continuing(params["previousSummary"].as_str());
        let messages = params["messages"].as_array().cloned().unwrap_or_default();
        digest.absorb(&messages, false);
        json!({ "summary": digest.render() })
    }
}

fn main() -> std::io::Result<()> {
    let manifest = Manifest {
        name: "lossless".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        slots: vec!["compaction".into()],
        ..Manifest::default()
    };
    run(manifest, Lossless)
}
