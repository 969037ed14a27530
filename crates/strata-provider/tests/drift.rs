//! The committed generated files equal what the committed inputs generate.

use std::path::PathBuf;

use strata_provider::refresh::{
    self, CATALOG_JSON_PATH, MODELS_JSON_PATH, PROVIDERS_TOML_PATH, REFRESH_COMMAND,
    SCHEMA_JSON_PATH,
};

fn workspace_file(rel: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn generated_provider_data_is_up_to_date() {
    let outputs = refresh::regenerate(
        &workspace_file(PROVIDERS_TOML_PATH),
        &workspace_file(CATALOG_JSON_PATH),
        None,
    )
    .unwrap_or_else(|e| panic!("regenerating failed: {e}"));
    for (rel, fresh) in [
        (CATALOG_JSON_PATH, &outputs.catalog_json),
        (MODELS_JSON_PATH, &outputs.models_json),
        (SCHEMA_JSON_PATH, &outputs.schema_json),
    ] {
        assert!(
            workspace_file(rel) == *fresh,
            "{rel} is out of date with its inputs: run `{REFRESH_COMMAND}` and commit the result"
        );
    }
}

#[test]
fn embedded_copies_are_the_committed_files() {
    assert_eq!(
        strata_provider::catalog::BUILTIN_PROVIDERS_TOML,
        workspace_file(PROVIDERS_TOML_PATH)
    );
    assert_eq!(
        strata_provider::catalog::BUILTIN_MODELS_JSON,
        workspace_file(MODELS_JSON_PATH)
    );
}

#[test]
fn a_row_with_an_unknown_protocol_is_rejected_by_name() {
    let table = workspace_file(PROVIDERS_TOML_PATH).replacen(
        "protocol = \"openai-chat\"\nbase_url = \"https://api.deepseek.com\"",
        "protocol = \"openai-completions\"\nbase_url = \"https://api.deepseek.com\"",
        1,
    );
    let err = refresh::regenerate(&table, &workspace_file(CATALOG_JSON_PATH), None).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("providers.deepseek"), "{text}");
    assert!(text.contains("openai-completions"), "{text}");
}

#[test]
fn a_model_naming_an_unknown_provider_is_rejected() {
    let models = r#"{"generated_by": "", "models": [{"provider": "nobody", "id": "m", "name": "m",
        "context_window": 1, "max_output": 1, "input": ["text"], "reasoning": false,
        "prices": {"input": 0, "output": 0, "cache_read": 0, "cache_write_5m": 0, "cache_write_1h": 0}}]}"#;
    let err = strata_provider::Catalog::from_sources(
        strata_provider::catalog::BUILTIN_PROVIDERS_TOML,
        models,
    )
    .unwrap_err();
    assert_eq!(err.field(), Some("models[0].provider"));
    assert!(
        err.to_string().contains("unknown provider `nobody`"),
        "{err}"
    );
}

#[test]
fn a_fresh_catalog_replaces_only_the_providers_it_has() {
    let fresh = r#"{"deepseek": {"id": "deepseek", "models": {"deepseek-v5": {
        "id": "deepseek-v5", "name": "DeepSeek V5", "tool_call": true, "reasoning": true,
        "modalities": {"input": ["text"], "output": ["text"]},
        "cost": {"input": 0.5, "output": 1.0, "cache_read": 0.01},
        "limit": {"context": 1000000, "output": 65536}}}},
        "some-unused-provider": {"models": {}}}"#;
    let outputs = refresh::regenerate(
        &workspace_file(PROVIDERS_TOML_PATH),
        &workspace_file(CATALOG_JSON_PATH),
        Some(fresh),
    )
    .unwrap();
    let catalog = strata_provider::Catalog::from_sources(
        strata_provider::catalog::BUILTIN_PROVIDERS_TOML,
        &outputs.models_json,
    )
    .unwrap();
    let ids: Vec<_> = catalog
        .models_of("deepseek")
        .map(|m| m.id.as_str())
        .collect();
    // The fresh catalog's model, plus the two the table itself prices (off-peak, [DS-PK]).
    assert!(ids.contains(&"deepseek-v5"), "{ids:?}");
    assert!(
        ids.iter()
            .all(|id| ["deepseek-v5", "deepseek-v4-flash", "deepseek-v4-pro"].contains(id)),
        "{ids:?}"
    );
    assert!(catalog.model("anthropic", "claude-sonnet-4-5").is_some());
    assert!(!outputs.catalog_json.contains("some-unused-provider"));
}
