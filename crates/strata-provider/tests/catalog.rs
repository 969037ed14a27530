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
    let accepting = |provider: &str| -> Vec<String> {
        catalog
            .models_of(provider)
            .filter(|m| {
                catalog
                    .capabilities(provider, &m.id)
                    .mid_conversation_system
            })
            .map(|m| m.id.clone())
            .collect()
    };
    // OpenAI: the tool-search models take developer messages mid-conversation and add tools
    // through deferred tools; removal still rewrites the array.
    let gpt = catalog.capabilities("openai", "gpt-5.5");
    assert!(gpt.mid_conversation_system);
    assert!(gpt.tool_addition && gpt.deferred_tools && !gpt.tool_removal);
    assert_eq!(gpt.system_role, SystemRole::Developer);
    let key = gpt.cache_key.expect("openai has a cache key");
    assert_eq!(
        (key.location, key.name.as_str()),
        (ParamLocation::Body, "prompt_cache_key")
    );
    assert_eq!(
        accepting("openai"),
        ["gpt-5.4", "gpt-5.4-mini", "gpt-5.4-pro", "gpt-5.5"],
        "the tool-search ids only (not nano, not 5.5-pro)"
    );
    for id in ["gpt-4.1", "gpt-5.2", "gpt-5.4-nano", "gpt-5.5-pro"] {
        let caps = catalog.capabilities("openai", id);
        assert!(!caps.mid_conversation_system && !caps.tool_addition, "{id}");
    }
    assert!(
        catalog
            .capabilities("openai", "gpt-5.6-sol")
            .mid_conversation_system
    );
    assert!(
        catalog
            .capabilities("openai-codex", "gpt-5.4")
            .mid_conversation_system
    );
    assert_eq!(
        catalog.capabilities("openai", "gpt-4o").system_role,
        SystemRole::System
    );
    // Proxies pass the OpenAI developer messages through; OpenRouter takes plain text.
    assert!(
        catalog
            .capabilities("opencode", "gpt-5.5")
            .mid_conversation_system
    );
    assert!(
        catalog
            .capabilities("github-copilot", "gpt-5.4")
            .mid_conversation_system
    );
    let routed = catalog.capabilities("openrouter", "openai/gpt-5.5");
    assert!(routed.mid_conversation_system && !routed.tool_addition);
    assert!(
        !catalog
            .capabilities("openrouter", "openai/gpt-5.2")
            .mid_conversation_system
    );
    // DeepSeek: v4-pro takes system text mid-conversation, no tool changes; flash neither.
    let pro = catalog.capabilities("deepseek", "deepseek-v4-pro");
    assert!(pro.mid_conversation_system && !pro.tool_addition && !pro.tool_removal);
    assert_eq!(pro.wire.usage_dialect, UsageDialect::DeepseekHitMiss);
    assert_eq!(accepting("deepseek"), ["deepseek-v4-pro"]);
    // Moonshot: K2.6, K2.7-code (and highspeed) and K3 take system messages (the seed's four);
    // only K3 adds tools.
    for provider in ["moonshotai", "moonshotai-cn"] {
        assert_eq!(
            accepting(provider),
            ["kimi-k2.6"],
            "{provider}: catalog models"
        );
        for id in ["kimi-k2.7-code", "kimi-k2.7-code-highspeed", "kimi-k3"] {
            assert!(
                catalog.capabilities(provider, id).mid_conversation_system,
                "{provider}/{id}"
            );
        }
        let k3 = catalog.capabilities(provider, "kimi-k3");
        assert!(k3.tool_addition && !k3.tool_removal);
        assert!(!catalog.capabilities(provider, "kimi-k2.6").tool_addition);
        assert!(
            !catalog
                .capabilities(provider, "kimi-k2.5")
                .mid_conversation_system
        );
    }
    assert!(accepting("kimi-coding").is_empty());
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
        cache_storage: 0,
        cache_create: 0,
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
    assert_eq!(deepseek.mid_conversation_system, Support::Some);
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

#[test]
fn every_default_model_is_a_model_its_row_lists() {
    let catalog = Catalog::builtin().unwrap();
    let mut with_default = 0;
    for row in catalog.providers() {
        if let Some(id) = &row.default_model {
            with_default += 1;
            assert!(
                catalog.model(&row.id, id).is_some(),
                "{}: default_model `{id}` is not in the table",
                row.id
            );
        }
    }
    // The providers a newcomer most likely holds a key for all have one.
    assert!(
        with_default >= 10,
        "{with_default} rows name a default model"
    );
}
