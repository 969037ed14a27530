//! User additions merge over the built-in table; bad input names the field at fault.

use pretty_assertions::assert_eq;
use strata_provider::{CacheStyle, Catalog, CatalogError, ConfigFormat, Modality, Protocol};

fn merge(text: &str, format: ConfigFormat) -> Result<Catalog, CatalogError> {
    Catalog::builtin()
        .expect("built-in table loads")
        .with_user_config(text, format, "config.toml")
}

#[test]
fn adds_a_local_provider_and_models_from_toml() {
    let catalog = merge(
        r#"
[providers.my-llm]
protocol = "openai-chat"
base_url = "http://127.0.0.1:8081/v1"
auth_env = ["MY_LLM_KEY"]
[providers.my-llm.cache]
style = "automatic-prefix"
[providers.my-llm.models.qwen3-coder]
context_window = 262144
input = ["text", "image"]
prices = { input = 0.5, output = 2.0 }
[providers.my-llm.models.tiny]
"#,
        ConfigFormat::Toml,
    )
    .unwrap();
    let row = catalog.provider("my-llm").unwrap();
    assert_eq!(row.protocol, Protocol::OpenaiChat);
    assert_eq!(row.name, "my-llm");
    let model = catalog.model("my-llm", "qwen3-coder").unwrap();
    assert_eq!(model.context_window, 262_144);
    assert_eq!(model.input, vec![Modality::Text, Modality::Image]);
    assert_eq!(
        model.prices.cache_read, 0.5,
        "no discount without a multiplier"
    );
    // Pi's defaults fill what the user leaves out.
    let tiny = catalog.model("my-llm", "tiny").unwrap();
    assert_eq!((tiny.context_window, tiny.max_output), (128_000, 16_384));
    assert_eq!(
        catalog.capabilities("my-llm", "tiny").cache_style,
        CacheStyle::AutomaticPrefix
    );
}

#[test]
fn patches_a_builtin_provider_from_json() {
    let catalog = merge(
        r#"{"providers": {"anthropic": {
            "base_url": "http://127.0.0.1:9999",
            "models": {"claude-sonnet-4-5": {"context_window": 1000000},
                       "claude-next": {"prices": {"input": 4.0, "output": 20.0}}},
            "overrides": [{"models": ["claude-sonnet-4-5"], "mid_conversation_system": true}]
        }}}"#,
        ConfigFormat::Json,
    )
    .unwrap();
    let row = catalog.provider("anthropic").unwrap();
    assert_eq!(row.base_url, "http://127.0.0.1:9999");
    assert_eq!(
        row.protocol,
        Protocol::AnthropicMessages,
        "unchanged fields stay"
    );
    let sonnet = catalog.model("anthropic", "claude-sonnet-4-5").unwrap();
    assert_eq!(sonnet.context_window, 1_000_000);
    assert_eq!(sonnet.prices.input, 3.0, "unpatched prices stay");
    // A new model's cache prices follow the row's multipliers.
    let next = catalog.model("anthropic", "claude-next").unwrap();
    assert_eq!(next.prices.cache_read, 0.4);
    assert_eq!(next.prices.cache_write_5m, 5.0);
    assert_eq!(next.prices.cache_write_1h, 8.0);
    assert!(
        catalog
            .capabilities("anthropic", "claude-sonnet-4-5")
            .mid_conversation_system
    );
}

fn field_of(text: &str, format: ConfigFormat) -> String {
    let err = merge(text, format).unwrap_err();
    err.field()
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("expected a field in {err}"))
}

#[test]
fn errors_name_the_field() {
    assert_eq!(
        field_of(
            "[providers.x]\nbase_url = \"http://h\"\n",
            ConfigFormat::Toml
        ),
        "providers.x.protocol"
    );
    assert_eq!(
        field_of(
            "[providers.x]\nprotocol = \"openai-chat\"\n",
            ConfigFormat::Toml
        ),
        "providers.x.base_url"
    );
    assert_eq!(
        field_of(
            "[providers.anthropic]\nprotcol = \"openai-chat\"\n",
            ConfigFormat::Toml
        ),
        "providers.anthropic.protcol"
    );
    assert_eq!(
        field_of(
            r#"{"providers": {"anthropic": {"models": {"m": {"context": 5}}}}}"#,
            ConfigFormat::Json
        ),
        "providers.anthropic.models.m.context"
    );
    assert_eq!(
        field_of(
            r#"{"providers": {"anthropic": {"models": {"m": {"prices": {"input": -1}}}}}}"#,
            ConfigFormat::Json
        ),
        "providers.anthropic.models.m.prices.input"
    );
    assert_eq!(
        field_of(
            r#"{"providers": {"anthropic": {"overrides": [{"models": []}]}}}"#,
            ConfigFormat::Json
        ),
        "providers.anthropic.overrides[0].models"
    );
    assert_eq!(
        field_of(r#"{"provider": {}}"#, ConfigFormat::Json),
        "provider"
    );
    let err = merge(
        "[providers.x]\nprotocol = \"grpc\"\nbase_url = \"http://h\"\n",
        ConfigFormat::Toml,
    )
    .unwrap_err();
    assert_eq!(err.field(), Some("providers.x"));
    // The message names what is allowed and never echoes the value it found (issue 17).
    let message = err.to_string();
    assert!(
        message.contains("openai-chat") && !message.contains("grpc"),
        "{message}"
    );
}

#[test]
fn syntax_errors_name_the_file() {
    let err = merge("[providers.x\n", ConfigFormat::Toml).unwrap_err();
    assert!(matches!(err, CatalogError::Parse { .. }));
    assert!(err.to_string().starts_with("config.toml:"), "{err}");
}

#[test]
fn user_config_files_load_by_extension() {
    let dir = std::env::temp_dir().join(format!("strata-provider-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("models.json");
    std::fs::write(
        &path,
        r#"{"providers": {"ollama": {"models": {"qwen3:8b": {"reasoning": true}}}}}"#,
    )
    .unwrap();
    let catalog = Catalog::builtin()
        .unwrap()
        .with_user_config_file(&path)
        .unwrap();
    assert!(catalog.model("ollama", "qwen3:8b").unwrap().reasoning);
    let missing = Catalog::builtin()
        .unwrap()
        .with_user_config_file(&dir.join("absent.toml"))
        .unwrap_err();
    assert!(matches!(missing, CatalogError::Io { .. }));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_builtin_table_fits_the_user_config_schema() {
    // One schema (schema.json, from UserConfig) describes both providers.toml and user files.
    let config = strata_provider::catalog::parse_user_config(
        strata_provider::catalog::BUILTIN_PROVIDERS_TOML,
        ConfigFormat::Toml,
        "providers.toml",
    )
    .unwrap();
    assert_eq!(config.providers.len(), 41);
    assert_eq!(config.schema_version, Some(1));
    let with_hint = merge(
        r#"{"$schema": "./schema.json", "providers": {"vllm": {"models": {"m": {}}}}}"#,
        ConfigFormat::Json,
    )
    .unwrap();
    assert!(with_hint.model("vllm", "m").is_some());
}
