//! The dynamic-tools policy: per request, only the live tools the model is guessed to need.

use pretty_assertions::assert_eq;
use serde_json::json;
use strata_context::{RenderOptions, RenderPolicy, guessed_tools, render_with};

use super::support::{Script, full, tools};

fn names(request: &strata_provider::Request) -> Vec<&str> {
    request
        .tools
        .iter()
        .map(|tool| tool.name.as_str())
        .collect()
}

#[test]
fn the_array_holds_recently_called_and_named_tools_and_changes_with_them() {
    let mut script = Script::new();
    script.entry(
        "model_change",
        json!({"provider": "anthropic", "modelId": "claude-opus-4-8"}),
    );
    script.system(
        json!({"intro": "hi"}),
        &tools(&["read", "bash", "grep", "find"]),
        &[],
    );
    script.user("look around");
    let options = RenderOptions::new().policy(RenderPolicy::DynamicTools);
    let first = render_with(&script.context(), &full(), &options);
    // Nothing called or named yet: the first live tool stands in.
    assert_eq!(names(&first.request), ["read"]);

    script.calls(&[("c1", "grep")]);
    script.result("c1", "grep", "src/lib.rs:1");
    script.user("now use find and bash");
    let second = render_with(&script.context(), &full(), &options);
    assert_eq!(names(&second.request), ["bash", "grep", "find"]);
    assert_eq!(guessed_tools(&script.context()), ["bash", "grep", "find"]);

    // The strata policy keeps every declared tool whatever was called (then its placeholder).
    let strata = render_with(&script.context(), &full(), &RenderOptions::new());
    assert_eq!(
        names(&strata.request),
        [
            "read",
            "bash",
            "grep",
            "find",
            strata_context::render::DEFERRED_PLACEHOLDER
        ]
    );
    // Fewer tool tokens per request, and the tools chapter differs from one request to the next.
    assert!(second.bytes.tools.len() < strata.bytes.tools.len());
    assert!(!second.bytes.tools.starts_with(&first.bytes.tools));
}

#[test]
fn calls_older_than_the_recent_window_drop_out() {
    let mut script = Script::new();
    script.system(json!({"intro": "hi"}), &tools(&["read", "grep"]), &[]);
    script.user("start");
    script.calls(&[("g", "grep")]);
    script.result("g", "grep", "hit");
    for turn in 0..strata_context::DYNAMIC_TOOLS_RECENT_MESSAGES {
        let id = format!("r{turn}");
        script.calls(&[(id.as_str(), "read")]);
        script.result(&id, "read", "text");
    }
    assert_eq!(guessed_tools(&script.context()), ["read"]);
}
