//! Triggers at the right token count.

use strata_compaction::{CompactionSettings, estimate_context_tokens, should_compact};
use strata_session::AgentMessage;

use crate::support::{TestSession, assistant, user};

fn estimate(messages: Vec<AgentMessage>) -> u64 {
    let mut session = TestSession::new();
    for message in messages {
        session.push(message);
    }
    let tree = session.session.tree();
    let context = strata_context::build(tree, tree.leaf()).expect("context");
    estimate_context_tokens(&context)
}

#[test]
fn compacts_one_token_past_window_minus_reserve() {
    let settings = CompactionSettings::default();
    let window = 200_000;
    let threshold = window - settings.reserve_tokens; // 183616
    // Real usage of the last answer + chars/4 of the 400-char prompt after it.
    let at = estimate(vec![
        user("start"),
        assistant("ok", threshold - 100),
        user(&"x".repeat(400)),
    ]);
    assert_eq!(at, threshold);
    assert!(!should_compact(at, window, &settings));
    let past = estimate(vec![
        user("start"),
        assistant("ok", threshold - 100),
        user(&"x".repeat(401)),
    ]);
    assert_eq!(past, threshold + 1);
    assert!(should_compact(past, window, &settings));
}

#[test]
fn an_error_turn_usage_is_not_trusted() {
    let mut failed = match assistant("", 190_000) {
        AgentMessage::Assistant(message) => message,
        _ => unreachable!(),
    };
    failed.stop_reason = strata_session::StopReason::Error;
    let tokens = estimate(vec![
        user("start"),
        assistant("ok", 1000),
        user(&"y".repeat(40)),
        AgentMessage::Assistant(failed),
    ]);
    assert_eq!(tokens, 1000 + 10);
    assert!(!should_compact(
        tokens,
        200_000,
        &CompactionSettings::default()
    ));
}

#[test]
fn percent_trigger_and_per_model_override() {
    let mut settings = CompactionSettings::default();
    settings.models.insert(
        "anthropic/small".into(),
        toml::from_str("trigger_percent = 50.0").expect("override"),
    );
    let small = settings.for_model("anthropic", "small");
    let tokens = estimate(vec![user("a"), assistant("b", 50_001)]);
    assert!(should_compact(tokens, 100_000, &small));
    assert!(!should_compact(tokens, 100_000, &settings));
}
