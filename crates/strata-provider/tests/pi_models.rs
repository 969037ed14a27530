//! Pi's `models.json` (comments, trailing commas, compat flags) merges as table rows.

use pretty_assertions::assert_eq;
use strata_provider::pi::parse_pi_models;
use strata_provider::{AuthScheme, Catalog, CatalogError, Protocol, ReasoningStyle, SystemRole};

fn fixture() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/pi-models/models.json"
    );
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn a_pi_file_becomes_rows_models_and_overrides() {
    let builtin = Catalog::builtin().unwrap();
    let pi = parse_pi_models(&fixture(), "models.json", &builtin).unwrap();
    let catalog = builtin
        .merge_user_config(pi.config.clone(), "models.json")
        .unwrap();

    let row = catalog.provider("my-ollama").unwrap();
    assert_eq!(row.name, "Ollama on the desk");
    assert_eq!(row.protocol, Protocol::OpenaiChat);
    assert_eq!(row.base_url, "http://127.0.0.1:11434/v1");
    assert_eq!(row.wire.max_tokens_field, "max_tokens");
    assert_eq!(row.system_role, SystemRole::System);
    assert_eq!(row.reasoning, ReasoningStyle::None);
    assert_eq!(pi.api_keys["my-ollama"], "ollama");
    assert_eq!(catalog.row_origins("my-ollama"), ["models.json"]);

    let coder = catalog.model("my-ollama", "qwen3-coder:30b").unwrap();
    assert_eq!((coder.context_window, coder.max_output), (65_536, 8192));
    assert_eq!(coder.name, "Qwen3 Coder 30B");
    assert_eq!(
        (
            coder.prices.input,
            coder.prices.output,
            coder.prices.cache_read
        ),
        (0.1, 0.4, 0.01)
    );
    assert!(
        !coder.reasoning,
        "a map with every level null turns reasoning off"
    );
    let coder_wire = catalog.capabilities("my-ollama", "qwen3-coder:30b").wire;
    assert!(
        coder_wire.requires_tool_result_name,
        "model-level compat becomes a per-model override"
    );
    assert_eq!(
        coder_wire.max_tokens_field, "max_tokens",
        "and keeps the provider's compat"
    );
    let small = catalog.model("my-ollama", "llama3.2:3b").unwrap();
    assert_eq!(small.context_window, 128_000, "Pi's default window");
    assert_eq!(
        small.prices.input, 0.0,
        "Pi prices an unpriced custom model at zero"
    );

    let gateway = catalog.provider("gateway").unwrap();
    assert_eq!(gateway.auth, AuthScheme::Bearer);
    assert_eq!(gateway.auth_env, ["GATEWAY_KEY"]);
    assert_eq!(
        gateway.headers.get("x-team").map(String::as_str),
        Some("infra")
    );
    assert!(
        !gateway.headers.contains_key("x-secret"),
        "commands are not run"
    );
    assert!(
        !pi.api_keys.contains_key("gateway"),
        "a $NAME key is an env var, not a literal"
    );

    let anthropic = catalog.provider("anthropic").unwrap();
    assert_eq!(anthropic.base_url, "http://127.0.0.1:9000");
    assert_eq!(anthropic.protocol, Protocol::AnthropicMessages);
    assert_eq!(
        anthropic.auth,
        AuthScheme::XApiKey,
        "a built-in row keeps its auth"
    );
    let sonnet = catalog.model("anthropic", "claude-sonnet-4-5").unwrap();
    assert_eq!(sonnet.context_window, 1_000_000);
    assert_eq!(sonnet.prices.input, 6.0);
    assert_eq!(sonnet.prices.output, 15.0, "unset cost fields stay");
    assert!(catalog.model("anthropic", "claude-nonexistent").is_none());
    assert_eq!(
        catalog.provider("mistral-direct").unwrap().protocol,
        Protocol::OpenaiChat
    );
    assert!(catalog.provider("judge").is_none());

    let ignored = pi.ignored.join("\n");
    for expected in [
        "providers.my-ollama.compat.vllmPriority",
        "providers.my-ollama.models[1].samplingParams",
        "providers.gateway.headers.x-secret",
        "providers.gateway.models[0].thinkingLevelMap",
        "providers.anthropic.modelOverrides.claude-nonexistent",
        "providers.judge.api",
    ] {
        assert!(
            ignored.contains(expected),
            "{expected} missing from:\n{ignored}"
        );
    }
}

#[test]
fn bad_pi_files_name_the_line_or_field_without_the_value() {
    let builtin = Catalog::builtin().unwrap();
    let err = parse_pi_models(
        "{\n \"providers\": {\n  \"x\": }\n}",
        "models.json",
        &builtin,
    )
    .unwrap_err();
    assert!(matches!(err, CatalogError::Parse { .. }));
    assert!(err.to_string().contains("line 3"), "{err}");
    let err = parse_pi_models(
        r#"{"providers": {"x": {"baseUrl": "http://h", "api": "openai-completions",
            "models": [{"id": "m", "contextWindow": "sk-secret-value"}]}}}"#,
        "models.json",
        &builtin,
    )
    .unwrap_err();
    assert_eq!(err.field(), Some("providers.x.models[0].contextWindow"));
    assert!(!err.to_string().contains("sk-secret"), "{err}");
}

#[test]
fn a_new_anthropic_protocol_provider_caches_as_pi_does() {
    // Pi puts cache breakpoints on every anthropic-messages provider; so does strata.
    let builtin = Catalog::builtin().unwrap();
    let text = r#"{"providers": {"gateway": {"baseUrl": "http://127.0.0.1:9", "api": "anthropic-messages",
        "apiKey": "k", "models": [{"id": "claude-sonnet-4-5", "contextWindow": 200000}]}}}"#;
    let pi = parse_pi_models(text, "models.json", &builtin).unwrap();
    let catalog = builtin
        .clone()
        .merge_user_config(pi.config, "models.json")
        .unwrap();
    let caps = catalog.capabilities("gateway", "claude-sonnet-4-5");
    assert_eq!(
        caps.cache_style,
        strata_provider::CacheStyle::ExplicitBreakpoints
    );
    assert_eq!(
        catalog.provider("gateway").unwrap().cache,
        builtin.provider("anthropic").unwrap().cache
    );
    // Another protocol keeps the conservative default.
    let text = r#"{"providers": {"chat": {"baseUrl": "http://127.0.0.1:9", "api": "openai-completions",
        "models": [{"id": "m"}]}}}"#;
    let pi = parse_pi_models(text, "models.json", &builtin).unwrap();
    let catalog = builtin
        .clone()
        .merge_user_config(pi.config, "models.json")
        .unwrap();
    assert_ne!(
        catalog.capabilities("chat", "m").cache_style,
        strata_provider::CacheStyle::ExplicitBreakpoints
    );
}

#[test]
fn pi_s_mid_conversation_effort_flag_maps_to_the_rows() {
    let builtin = Catalog::builtin().unwrap();
    let text = r#"{"providers": {"gw": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-responses", "apiKey": "k",
        "compat": {"supportsMidConvoEffort": true},
        "models": [{"id": "big"}, {"id": "small", "compat": {"supportsMidConvoEffort": false}}]
    }}}"#;
    let pi = parse_pi_models(text, "models.json", &builtin).unwrap();
    let catalog = builtin.merge_user_config(pi.config, "models.json").unwrap();
    assert!(catalog.capabilities("gw", "big").mid_conversation_effort);
    assert!(!catalog.capabilities("gw", "small").mid_conversation_effort);
}

#[test]
fn a_new_responses_provider_keys_reasons_and_instructs_as_pi_does() {
    // Pi's openai-responses sends any provider prompt_cache_key, store: false, a reasoning
    // model's effort and a developer message; its compat flags turn them off.
    let builtin = Catalog::builtin().unwrap();
    let text = r#"{"providers": {"gw": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-responses",
        "apiKey": "k", "models": [{"id": "gpt-5.2", "reasoning": true}]},
        "plain": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-responses", "apiKey": "k",
        "compat": {"promptCacheKeyMode": "disabled", "supportsDeveloperRole": false},
        "models": [{"id": "m"}]}}}"#;
    let pi = parse_pi_models(text, "models.json", &builtin).unwrap();
    let catalog = builtin.merge_user_config(pi.config, "models.json").unwrap();
    let caps = catalog.capabilities("gw", "gpt-5.2");
    assert_eq!(
        caps.cache_key.as_ref().map(|key| key.name.as_str()),
        Some("prompt_cache_key")
    );
    assert_eq!(caps.reasoning, ReasoningStyle::OpenaiEffort);
    assert_eq!(caps.system_role, SystemRole::Developer);
    assert!(caps.wire.supports_store);
    assert_eq!(
        caps.cache_style,
        strata_provider::CacheStyle::AutomaticPrefix
    );
    assert!(caps.ttl_options.is_empty(), "Pi asks for no retention");
    let plain = catalog.capabilities("plain", "m");
    assert!(plain.cache_key.is_none());
    assert_eq!(plain.system_role, SystemRole::System);
    assert_eq!(plain.reasoning, ReasoningStyle::OpenaiEffort);
}
