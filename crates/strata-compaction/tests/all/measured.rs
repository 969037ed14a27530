//! Measured on strata-mock with Anthropic pricing: the cache-friendly summary request costs
//! less than the serialized transcript for a 150k-token session.

use serde_json::json;
use strata_compaction::{CompactionSettings, SummaryMode, compact, estimate_message_tokens};
use strata_context::{RenderOptions, render_with};
use strata_mock::{MockConfig, MockServer, Scenario};
use strata_provider::{Catalog, Provider, StreamOptions};

use crate::anthropic_wire::AnthropicWire;
use crate::support::{
    TestSession, anthropic_capabilities, assistant, prepare_due, sections, tool, tool_call,
    tool_result, user,
};

const WORDS: [&str; 24] = [
    "cache",
    "prefix",
    "session",
    "render",
    "token",
    "budget",
    "compaction",
    "summary",
    "branch",
    "request",
    "provider",
    "adapter",
    "stream",
    "usage",
    "window",
    "breakpoint",
    "system",
    "chapter",
    "ledger",
    "entry",
    "tool",
    "result",
    "message",
    "context",
];

/// Deterministic prose of about `chars` characters.
fn prose(seed: &mut u64, chars: usize) -> String {
    let mut text = String::with_capacity(chars + 16);
    while text.len() < chars {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let word = WORDS[(*seed >> 33) as usize % WORDS.len()];
        text.push_str(word);
        text.push(if (*seed >> 20).is_multiple_of(11) {
            '\n'
        } else {
            ' '
        });
    }
    text
}

#[tokio::test]
async fn cache_friendly_summary_costs_less_than_the_transcript() {
    let catalog = Catalog::builtin().expect("catalog");
    let model = catalog
        .model("anthropic", "claude-sonnet-4-5")
        .expect("claude-sonnet-4-5 in the catalog");
    let server = MockServer::start(MockConfig::new()).await.expect("mock");
    let provider = AnthropicWire::new(server.base_url());

    // A 150k-token coding session: tool calls reading files, long results.
    let mut session = TestSession::new();
    let tools = ["read", "bash", "edit", "write"].map(tool).to_vec();
    session
        .session
        .append_system(sections("v1"), tools, Vec::new())
        .expect("system");
    let mut seed = 7u64;
    let mut turn = 0;
    // chars/4 of everything pushed (the assistants carry no usage here). This prose takes
    // about 0.68 BPE tokens per chars/4 unit: 222k units make a prompt of 150k+ tokens.
    let mut estimated = 0;
    while estimated < 222_000 {
        let mut messages = vec![user(&prose(&mut seed, 300))];
        for call in 0..3 {
            let id = format!("t{turn}c{call}");
            let path = format!("src/f{turn}_{call}.rs");
            messages.push(tool_call(&id, "read", json!({"path": path}), 0));
            messages.push(tool_result(&id, "read", &prose(&mut seed, 4000)));
        }
        messages.push(assistant(&prose(&mut seed, 600), 0));
        for message in messages {
            estimated += estimate_message_tokens(&message);
            session.push(message);
        }
        turn += 1;
    }
    let capabilities = anthropic_capabilities();
    let tree = session.session.tree();
    let leaf = session.leaf();

    // The session's last turn: the request that produced the final answer wrote the cache.
    let parent = tree.parent_of(leaf.as_str()).cloned().expect("parent");
    let last_turn = strata_context::build(tree, Some(&parent)).expect("context");
    let last_turn_request =
        render_with(&last_turn, &capabilities, &RenderOptions::default()).request;
    let primed = provider
        .complete(&model, &last_turn_request, &StreamOptions::default())
        .await
        .expect("last turn");
    let session_tokens = primed.usage.prompt_tokens();
    assert!(
        (150_000..170_000).contains(&session_tokens),
        "{:?}",
        primed.usage
    );
    println!("session: {session_tokens} prompt tokens in the last turn's request");

    // The scripted model answers every request with the same summary, whatever the number of
    // assistant turns in it, so both forms pay for the same output.
    let summary = format!("## Goal\\n{}", prose(&mut seed, 1500).replace('\n', " "));
    let scenario: String = (0..turn * 4 + 8)
        .map(|_| format!("[[turn]]\ntext = \"{summary}\"\n"))
        .collect();
    server.load_scenario(Scenario::from_toml(&scenario, "summaries").expect("scenario"));
    let context = crate::support::context(&session);
    let main = render_with(&context, &capabilities, &RenderOptions::default()).request;
    let mut figures = Vec::new();
    for mode in [SummaryMode::CacheFriendly, SummaryMode::Transcript] {
        let settings = CompactionSettings {
            summary_mode: mode,
            ..CompactionSettings::default()
        };
        let preparation = prepare_due(&session, &settings);
        let result = compact(
            &provider,
            &model,
            &main,
            &preparation,
            &settings,
            &StreamOptions::default(),
        )
        .await
        .expect("compact");
        assert_eq!(result.mode, mode);
        println!(
            "{mode:?}: input {} cache_read {} cache_write {} output {} -> ${:.4}",
            result.usage.input,
            result.usage.cache_read,
            result.usage.cache_write(),
            result.usage.output,
            result.cost.total()
        );
        figures.push(result);
    }
    let (friendly, transcript) = (&figures[0], &figures[1]);
    assert_eq!(
        friendly.usage.cache_write(),
        0,
        "the summary request writes no cache entry"
    );
    assert!(friendly.usage.cache_read > 145_000, "{:?}", friendly.usage);
    assert_eq!(
        transcript.usage.cache_read + transcript.usage.cache_write(),
        0
    );
    // The cache-friendly form asks for both parts of the split turn in one answer, the
    // transcript form in two; the scripted model answers every request with the same text,
    // so the outputs differ by a request and the inputs are compared on their own.
    let input_cost = |result: &strata_compaction::CompactionResult| {
        result.cost.total() - result.usage.output as f64 * model.prices.output / 1_000_000.0
    };
    assert!(
        input_cost(friendly) < input_cost(transcript),
        "input: cache-friendly ${:.4} vs transcript ${:.4}",
        input_cost(friendly),
        input_cost(transcript)
    );
    assert!(
        friendly.cost.total() < transcript.cost.total(),
        "cache-friendly ${:.4} vs transcript ${:.4}",
        friendly.cost.total(),
        transcript.cost.total()
    );
}
