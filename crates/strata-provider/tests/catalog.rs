//! The built-in table: 41 rows, known protocols, capability resolution with overrides.

use pretty_assertions::assert_eq;
use strata_provider::{
    CacheStyle, CacheTtl, Catalog, Feature, ParamLocation, Protocol, ReasoningStyle, SystemRole,
    Usage, UsageDialect,
};

const EXPECTED: [&str; 41] = [
    // The 31 providers Pi 0.73 ships.
    "amazon-bedrock",
    "anthropic",
    "azure-openai-responses",
    "cerebras",
    "cloudflare-ai-gateway",
    "cloudflare-workers-ai",
    "deepseek",
    "fireworks",
    "github-copilot",
    "google",
    "google-vertex",
    "groq",
    "huggingface",
    "kimi-coding",
    "minimax",
    "minimax-cn",
    "mistral",
    "moonshotai",
    "moonshotai-cn",
    "openai",
    "openai-codex",
    "opencode",
    "opencode-go",
    "openrouter",
    "vercel-ai-gateway",
    "xai",
    "xiaomi",
    "xiaomi-token-plan-ams",
    "xiaomi-token-plan-cn",
    "xiaomi-token-plan-sgp",
    "zai",
    // Ten more that users ask for.
    "ollama",
    "lm-studio",
    "vllm",
    "llama-cpp",
    "together",
    "deepinfra",
    "alibaba-dashscope",
    "siliconflow",
    "volcengine-ark",
    "nvidia-nim",
];

fn catalog() -> Catalog {
    Catalog::builtin().expect("built-in table loads")
}

#[test]
fn table_has_exactly_the_41_providers() {
    let catalog = catalog();
    let mut got: Vec<&str> = catalog.providers().map(|r| r.id.as_str()).collect();
    let mut want = EXPECTED.to_vec();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
}

#[test]
fn every_row_names_a_known_protocol_crate() {
    for row in catalog().providers() {
        for protocol in row.protocols() {
            assert!(Protocol::ALL.contains(&protocol), "{}: {protocol}", row.id);
            assert!(protocol.crate_name().starts_with("strata-"));
        }
        assert!(!row.base_url.is_empty(), "{} has no base URL", row.id);
        assert!(!row.name.is_empty(), "{} has no name", row.id);
    }
}

#[test]
fn every_model_belongs_to_a_row_and_has_sane_figures() {
    let catalog = catalog();
    let mut count = 0;
    for model in catalog.models() {
        count += 1;
        assert!(
            catalog.provider(&model.provider).is_some(),
            "{}",
            model.qualified_id()
        );
        assert!(model.context_window > 0, "{}", model.qualified_id());
        let p = model.prices;
        for v in [
            p.input,
            p.output,
            p.cache_read,
            p.cache_write_5m,
            p.cache_write_1h,
        ] {
            assert!(v.is_finite() && v >= 0.0, "{}: {p:?}", model.qualified_id());
        }
    }
    assert!(count > 900, "only {count} models");
}

#[test]
fn anthropic_mid_conversation_models_follow_the_docs() {
    let catalog = catalog();
    let yes = catalog.capabilities("anthropic", "claude-opus-4-8");
    assert!(yes.mid_conversation_system);
    assert!(yes.tool_addition && yes.tool_removal);
    let header: Vec<_> = yes.headers_for(Feature::ToolChanges).collect();
    assert_eq!(header.len(), 1);
    assert_eq!(header[0].header, "anthropic-beta");
    assert_eq!(header[0].value, "mid-conversation-tool-changes-2026-07-01");
    for id in [
        "claude-sonnet-5-5",
        "claude-haiku-5-5",
        "claude-fable-5-1",
        "claude-opus-5",
    ] {
        assert!(
            catalog
                .capabilities("anthropic", id)
                .mid_conversation_system,
            "{id}"
        );
    }
    // Sonnet 5 is excluded by the page; older models have none of it.
    for id in [
        "claude-sonnet-5",
        "claude-sonnet-4-5",
        "claude-opus-4-7",
        "claude-3-5-haiku-latest",
    ] {
        let caps = catalog.capabilities("anthropic", id);
        assert!(!caps.mid_conversation_system, "{id}");
        assert!(!caps.tool_addition && !caps.tool_removal, "{id}");
    }
}

#[test]
fn anthropic_cache_facts_and_minimums() {
    let catalog = catalog();
    let caps = catalog.capabilities("anthropic", "claude-sonnet-4-5");
    assert_eq!(caps.cache_style, CacheStyle::ExplicitBreakpoints);
    assert_eq!(caps.max_breakpoints, 4);
    assert_eq!(
        caps.ttl_options,
        vec![CacheTtl::FiveMinutes, CacheTtl::OneHour]
    );
    assert_eq!(caps.min_cacheable_tokens, 1024);
    assert_eq!(caps.price_multipliers.cache_read, 0.1);
    assert_eq!(caps.price_multipliers.cache_write_1h, 2.0);
    assert_eq!(caps.reasoning, ReasoningStyle::AnthropicBudget);
    assert_eq!(
        catalog
            .capabilities("anthropic", "claude-haiku-4-5")
            .min_cacheable_tokens,
        4096
    );
    assert_eq!(
        catalog
            .capabilities("anthropic", "claude-3-haiku-20240307")
            .min_cacheable_tokens,
        2048
    );
    assert_eq!(
        catalog
            .capabilities("anthropic", "claude-opus-5")
            .min_cacheable_tokens,
        512
    );
    assert_eq!(
        catalog
            .capabilities("anthropic", "claude-opus-4-7")
            .reasoning,
        ReasoningStyle::AnthropicAdaptive
    );
    assert!(
        catalog
            .capabilities("anthropic", "claude-sonnet-4-5")
            .deferred_tool_placeholder
    );
    assert!(
        !catalog
            .capabilities("anthropic", "claude-3-7-sonnet-20250219")
            .deferred_tools
    );
}

#[test]
fn other_providers_match_the_corrected_seed_table() {
    let catalog = catalog();
    // OpenAI: newer models add tools through tool search; removal still rewrites.
    let gpt = catalog.capabilities("openai", "gpt-5.5");
    assert!(gpt.tool_addition && gpt.deferred_tools && !gpt.tool_removal);
    assert!(!gpt.mid_conversation_system);
    assert_eq!(gpt.system_role, SystemRole::Developer);
    let key = gpt.cache_key.expect("openai has a cache key");
    assert_eq!(
        (key.location, key.name.as_str()),
        (ParamLocation::Body, "prompt_cache_key")
    );
    assert!(!catalog.capabilities("openai", "gpt-4.1").tool_addition);
    assert_eq!(
        catalog.capabilities("openai", "gpt-4o").system_role,
        SystemRole::System
    );
    // DeepSeek v4-pro: neither.
    let ds = catalog.capabilities("deepseek", "deepseek-v4-pro");
    assert!(!ds.mid_conversation_system && !ds.tool_addition && !ds.tool_removal);
    assert_eq!(ds.wire.usage_dialect, UsageDialect::DeepseekHitMiss);
    // Moonshot: four models take mid-conversation system messages; kimi-k3 adds tools.
    let mids = [
        "kimi-k2-thinking",
        "kimi-k2-thinking-turbo",
        "kimi-k2.5",
        "kimi-k2.6",
    ];
    let accepting: Vec<_> = catalog
        .models_of("moonshotai")
        .filter(|m| {
            catalog
                .capabilities("moonshotai", &m.id)
                .mid_conversation_system
        })
        .map(|m| m.id.clone())
        .collect();
    assert_eq!(accepting, mids.map(String::from).to_vec());
    assert!(catalog.capabilities("moonshotai", "kimi-k3").tool_addition);
    assert!(!catalog.capabilities("moonshotai", "kimi-k3").tool_removal);
    // Bedrock, Google, Mistral: neither.
    for (provider, model) in [
        (
            "amazon-bedrock",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
        ),
        ("google", "gemini-2.5-pro"),
        ("mistral", "devstral-2512"),
    ] {
        let caps = catalog.capabilities(provider, model);
        assert!(
            !caps.mid_conversation_system && !caps.tool_addition && !caps.tool_removal,
            "{provider}/{model}"
        );
    }
}

#[test]
fn per_model_overrides_change_protocol_and_cache_style() {
    let catalog = catalog();
    let claude = catalog
        .endpoint("github-copilot", "claude-sonnet-4.5")
        .unwrap();
    assert_eq!(claude.protocol, Protocol::AnthropicMessages);
    let gpt = catalog.endpoint("github-copilot", "gpt-5.2").unwrap();
    assert_eq!(gpt.protocol, Protocol::OpenaiResponses);
    let gemini = catalog
        .endpoint("github-copilot", "gemini-2.5-pro")
        .unwrap();
    assert_eq!(gemini.protocol, Protocol::OpenaiChat);
    assert_eq!(
        catalog
            .endpoint("opencode", "claude-opus-4-7")
            .unwrap()
            .base_url,
        "https://opencode.ai/zen"
    );
    let nova = catalog.capabilities("amazon-bedrock", "amazon.nova-pro-v1:0");
    assert_eq!(nova.cache_style, CacheStyle::None);
    let claude = catalog.capabilities(
        "amazon-bedrock",
        "us.anthropic.claude-haiku-4-5-20251001-v1:0",
    );
    assert_eq!(claude.cache_style, CacheStyle::ExplicitBreakpoints);
    assert_eq!(claude.min_cacheable_tokens, 4096);
}

#[test]
fn shared_builtin_is_loaded_once() {
    let a = Catalog::builtin_shared().unwrap();
    let b = Catalog::builtin_shared().unwrap();
    assert!(std::ptr::eq(a, b));
    assert_eq!(a.providers().count(), 41);
}

#[test]
fn unknown_provider_gets_conservative_capabilities() {
    let caps = catalog().capabilities("no-such-provider", "m");
    assert_eq!(caps, strata_provider::Capabilities::default());
    assert!(catalog().endpoint("no-such-provider", "m").is_none());
}

#[test]
fn models_resolve_by_qualified_name_and_price_usage() {
    let catalog = catalog();
    let opus = catalog
        .resolve("anthropic/claude-opus-4-8")
        .expect("hand-kept model");
    assert_eq!(opus.prices.cache_write_1h, 10.0);
    let routed = catalog
        .resolve("openrouter/anthropic/claude-sonnet-4.5")
        .expect("ids may contain a slash");
    assert_eq!(routed.provider, "openrouter");
    let sonnet = catalog.model("anthropic", "claude-sonnet-4-5").unwrap();
    assert_eq!(sonnet.prices.cache_write_5m, 3.75);
    assert_eq!(sonnet.prices.cache_write_1h, 6.0);
    let usage = Usage {
        input: 2_000,
        output: 1_000,
        cache_read: 50_000,
        cache_write_5m: 10_000,
        cache_write_1h: 0,
    };
    let cost = usage.cost(&sonnet.prices);
    assert!((cost.total() - (0.006 + 0.015 + 0.015 + 0.0375)).abs() < 1e-9);
}

#[test]
fn summaries_count_per_model_support() {
    use strata_provider::Support;
    let summaries = catalog().summaries();
    assert_eq!(summaries.len(), 41);
    let get = |id: &str| summaries.iter().find(|s| s.id == id).unwrap().clone();
    let anthropic = get("anthropic");
    assert_eq!(anthropic.mid_conversation_system, Support::Some);
    assert_eq!(anthropic.tool_removal, Support::Some);
    let deepseek = get("deepseek");
    assert_eq!(deepseek.mid_conversation_system, Support::None);
    assert_eq!(deepseek.models, 2);
    assert_eq!(get("openai").tool_removal, Support::None);
    assert_eq!(get("openai").tool_addition, Support::Some);
    assert_eq!(get("ollama").models, 0);
    let copilot = get("github-copilot");
    assert_eq!(copilot.protocols.len(), 3);
    let json = serde_json::to_value(&anthropic).unwrap();
    assert_eq!(json["protocol"], "anthropic-messages");
    assert_eq!(json["mid_conversation_system"], "some");
}
