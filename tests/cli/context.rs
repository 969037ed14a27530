//! `strata context`: Pi's shape for every Pi fixture, strata's JSON and text views.

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::{fixture, strata, strata_ok, workspace};

/// Pi 0.73's fixtures (`pi/`) and Pi 1.6's (`pi1/`).
const PI_FIXTURES: &[&str] = &[
    "pi/branches",
    "pi/compactions",
    "pi/every-entry-type",
    "pi/images",
    "pi/legacy-v1",
    "pi/legacy-v2",
    "pi/strata-entries",
    "pi1/system-and-compactions",
    "pi1/context-edits",
    "pi1/late-system",
    "pi1/legacy-v1-no-api",
];

/// `--format pi` prints exactly what Pi's `buildSessionContext` returned for the file's own
/// leaf and for a sample of other leaves (the library test covers every leaf).
#[test]
fn pi_format_matches_pi_for_every_fixture() {
    for name in PI_FIXTURES {
        let session = fixture(&format!("{name}.jsonl"));
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(fixture(&format!("{name}.expected.json"))).unwrap(),
        )
        .unwrap();
        let expected = expected.as_object().unwrap();
        let session = session.to_str().unwrap();
        let actual: Value =
            serde_json::from_str(&strata_ok(&["context", session, "--format", "pi"])).unwrap();
        assert_eq!(actual, expected["$default"], "{name}: default leaf");
        // Pi gives legacy entries random ids when it migrates them, so only the default leaf
        // of a legacy file is comparable by id (the library test maps them by position).
        if name.contains("/legacy") {
            continue;
        }
        for (leaf, want) in expected.iter().filter(|(k, _)| *k != "$default").step_by(3) {
            let actual: Value = serde_json::from_str(&strata_ok(&[
                "context", session, "--format", "pi", "--leaf", leaf,
            ]))
            .unwrap();
            assert_eq!(&actual, want, "{name}: leaf {leaf}");
        }
    }
}

/// The bundled tour (strata's own additions) in text: the compaction's folded snapshot, the
/// removed tool, the summary first and the kept tail after it.
#[test]
fn text_view_of_the_tour_shows_snapshot_tools_and_entry_ids() {
    let tour = workspace().join("examples/sessions/tour.jsonl");
    let text = strata_ok(&["context", tour.to_str().unwrap()]);
    assert!(text.contains("leaf a100001a"), "{text}");
    assert!(text.contains("compaction a1000019"), "{text}");
    assert!(text.contains("grep"), "{text}");
    // The kept tail starts at the user message the compaction names.
    let summary = text.find("compactionSummary").expect("summary line");
    let kept = text.find("a1000010").expect("first kept entry");
    assert!(summary < kept, "{text}");
    // Entries before the kept tail are not sent.
    assert!(!text.contains("a1000004"), "{text}");
}

/// `--format json` has the system sections, the tool ledger, the model and thinking level.
#[test]
fn json_view_has_system_tools_model_and_thinking() {
    let tour = workspace().join("examples/sessions/tour.jsonl");
    let json: Value = serde_json::from_str(&strata_ok(&[
        "context",
        tour.to_str().unwrap(),
        "--format",
        "json",
        "--leaf",
        "a1000016",
    ]))
    .unwrap();
    let text = json.to_string();
    for needle in [
        "\"intro\"",
        "\"cwd\"",
        "claude-sonnet-4-5",
        "medium",
        "\"grep\"",
        "\"write\"",
    ] {
        assert!(text.contains(needle), "{needle} missing in {text}");
    }
}

/// Errors name the file; an unknown leaf names the id.
#[test]
fn errors_name_the_file_and_the_id() {
    let missing = strata(&["context", "/nonexistent/session.jsonl"]);
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("/nonexistent/session.jsonl"), "{stderr}");

    let tour = workspace().join("examples/sessions/tour.jsonl");
    let unknown = strata(&["context", tour.to_str().unwrap(), "--leaf", "zzzzzzzz"]);
    assert!(!unknown.status.success());
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        stderr.contains("zzzzzzzz") && stderr.contains("tour.jsonl"),
        "{stderr}"
    );
}

/// A malformed middle line is reported with file and line on stderr; the rest still builds.
#[test]
fn malformed_line_is_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.jsonl");
    let tour = std::fs::read_to_string(workspace().join("examples/sessions/tour.jsonl")).unwrap();
    let mut lines: Vec<&str> = tour.lines().collect();
    lines.insert(3, "{\"type\":\"message\",\"id\":");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let output = strata(&["context", path.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("damaged.jsonl") && stderr.contains('4'),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("leaf a100001a"));
}

/// `--format request` renders for the session's provider: the request, the chapter report
/// with divergence from another leaf, and Anthropic's wire body.
#[test]
fn request_format_shows_request_report_and_wire_body() {
    let tour = workspace().join("examples/sessions/tour.jsonl");
    let tour = tour.to_str().unwrap();
    let out: Value = serde_json::from_str(&strata_ok(&[
        "context",
        tour,
        "--format",
        "request",
        "--leaf",
        "a1000016",
        "--against",
        "a1000013",
    ]))
    .unwrap();
    assert_eq!(out["provider"], "anthropic");
    assert_eq!(out["model"], "claude-sonnet-4-5");
    // a1000016 extends a1000013: the earlier request is a byte prefix of the later one.
    assert_eq!(out["report"]["divergence"]["kind"], "extends");
    let tools = out["request"]["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "read"));
    assert!(
        out["wire"]["url"]
            .as_str()
            .unwrap()
            .ends_with("/v1/messages")
    );
    assert!(out["wire"]["body"]["messages"].is_array());
    let bytes = |c: &str| out["report"][c]["bytes"].as_u64().unwrap();
    assert!(bytes("tools") > 0 && bytes("system") > 0 && bytes("messages") > 0);

    // The same leaf against itself: identical.
    let same: Value = serde_json::from_str(&strata_ok(&[
        "context",
        tour,
        "--format",
        "request",
        "--leaf",
        "a1000016",
        "--against",
        "a1000016",
    ]))
    .unwrap();
    assert_eq!(same["report"]["divergence"]["kind"], "identical");

    assert_eq!(out["wire"]["protocol"], "anthropic-messages");
    assert_wire_is_exact(&out);
}

/// `--format request` for another provider: its own adapter builds the wire body.
fn request_for(provider: &str, model: &str) -> Value {
    let tour = workspace().join("examples/sessions/tour.jsonl");
    let text = strata_ok(&[
        "context",
        tour.to_str().unwrap(),
        "--format",
        "request",
        "--provider",
        provider,
        "--model",
        model,
    ]);
    let out: Value = serde_json::from_str(&text).unwrap();
    // Rendered for the chosen model, not the session's.
    assert_eq!(out["request"]["model"], model);
    out
}

/// The printed body re-serializes to exactly the byte count the adapter built: nothing was
/// reordered or dropped on the way to the terminal.
fn assert_wire_is_exact(out: &Value) {
    let body = serde_json::to_string(&out["wire"]["body"]).unwrap();
    assert_eq!(
        body.len() as u64,
        out["wire"]["bytes"].as_u64().unwrap(),
        "{body}"
    );
}

/// The session id the tour renders with as its cache key.
fn tour_cache_key(out: &Value) -> &str {
    out["request"]["cache_key"].as_str().unwrap()
}

/// Chat Completions (Mistral): the system chapter is the first `system` message, the cache
/// key travels as `prompt_cache_key`, tools are `function` objects.
#[test]
fn request_format_prints_the_chat_completions_body() {
    let out = request_for("mistral", "devstral-medium-latest");
    assert_eq!(out["wire"]["protocol"], "openai-chat");
    assert_eq!(
        out["wire"]["url"],
        "https://api.mistral.ai/v1/chat/completions"
    );
    let body = &out["wire"]["body"];
    assert_eq!(body["model"], "devstral-medium-latest");
    assert_eq!(body["stream"], true);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert!(messages.iter().any(|m| m["role"] == "user"));
    assert!(messages.iter().any(|m| m["role"] == "assistant"));
    assert_eq!(body["prompt_cache_key"], tour_cache_key(&out));
    let tools = body["tools"].as_array().unwrap();
    assert!(
        tools
            .iter()
            .any(|t| t["type"] == "function" && t["function"]["name"] == "read")
    );
    assert!(body.get("system").is_none() && body.get("input").is_none());
    assert_wire_is_exact(&out);
}

/// Responses: OpenAI puts the system chapter in `input` as a `developer` item with the cache
/// key in the body; the ChatGPT-plan Codex endpoint takes it as `instructions`.
#[test]
fn request_format_prints_the_responses_body() {
    let openai = request_for("openai", "gpt-5.4");
    assert_eq!(openai["wire"]["protocol"], "openai-responses");
    assert_eq!(openai["wire"]["url"], "https://api.openai.com/v1/responses");
    let body = &openai["wire"]["body"];
    assert_eq!(body["model"], "gpt-5.4");
    let input = body["input"].as_array().unwrap();
    assert_eq!(input[0]["role"], "developer");
    assert_eq!(input[0]["content"][0]["type"], "input_text");
    assert!(body.get("instructions").is_none());
    assert!(body.get("messages").is_none());
    assert_eq!(body["prompt_cache_key"], tour_cache_key(&openai));
    assert!(
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "read")
    );
    // gpt-5.4 loads tools through tool search: the hosted search tool sits just before the
    // deferred placeholder, so tools added later append behind both.
    let tools = body["tools"].as_array().unwrap();
    let search = tools
        .iter()
        .position(|t| t["type"] == "tool_search")
        .expect("the hosted tool_search tool");
    assert_eq!(tools[search + 1]["defer_loading"], true);
    assert!(
        tools[..search]
            .iter()
            .all(|t| t.get("defer_loading").is_none())
    );
    assert_wire_is_exact(&openai);

    let codex = request_for("openai-codex", "gpt-5.4");
    assert_eq!(
        codex["wire"]["url"],
        "https://chatgpt.com/backend-api/codex/responses"
    );
    let body = &codex["wire"]["body"];
    assert!(!body["instructions"].as_str().unwrap().is_empty());
    assert!(
        body["input"]
            .as_array()
            .unwrap()
            .iter()
            .all(|item| item["role"] != "developer" && item["role"] != "system")
    );
    assert_wire_is_exact(&codex);
}

/// Gemini: `contents` with `user` / `model` turns and the system chapter as
/// `systemInstruction`, streamed from AI Studio's `models/{id}` path.
#[test]
fn request_format_prints_the_gemini_body() {
    let out = request_for("google", "gemini-2.5-flash");
    assert_eq!(out["wire"]["protocol"], "google-generative-ai");
    assert_eq!(
        out["wire"]["url"],
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    let body = &out["wire"]["body"];
    let contents = body["contents"].as_array().unwrap();
    assert!(contents.iter().any(|c| c["role"] == "user"));
    assert!(contents.iter().any(|c| c["role"] == "model"));
    assert!(
        !body["systemInstruction"]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .is_empty()
    );
    let declarations = body["tools"][0]["functionDeclarations"].as_array().unwrap();
    assert!(declarations.iter().any(|d| d["name"] == "read"));
    assert!(body.get("messages").is_none() && body.get("system").is_none());
    assert_wire_is_exact(&out);
}

/// Vertex needs a project and a region: taken from the environment when set, shown as their
/// `{VAR}` placeholders when not (the body does not depend on them).
#[test]
fn request_format_fills_vertex_urls_from_the_environment_or_shows_placeholders() {
    let tour = workspace().join("examples/sessions/tour.jsonl");
    let run = |vars: &[(&str, &str)]| -> Value {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_strata"));
        command
            .args([
                "context",
                tour.to_str().unwrap(),
                "--format",
                "request",
                "--provider",
                "google-vertex",
                "--model",
                "gemini-2.5-flash",
            ])
            .env_remove("GOOGLE_CLOUD_PROJECT")
            .env_remove("GCLOUD_PROJECT")
            .env_remove("GOOGLE_CLOUD_LOCATION");
        for (name, value) in vars {
            command.env(name, value);
        }
        let output = command.output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let unset = run(&[]);
    assert_eq!(
        unset["wire"]["url"],
        "https://{GOOGLE_CLOUD_LOCATION}-aiplatform.googleapis.com/v1/projects/{GOOGLE_CLOUD_PROJECT}/locations/{GOOGLE_CLOUD_LOCATION}/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    let set = run(&[
        ("GCLOUD_PROJECT", "my-project"),
        ("GOOGLE_CLOUD_LOCATION", "europe-west4"),
    ]);
    assert_eq!(
        set["wire"]["url"],
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/my-project/locations/europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(set["wire"]["body"], unset["wire"]["body"]);
    assert!(set["wire"]["body"]["systemInstruction"].is_object());
}

/// Bedrock Converse (Claude): `system` blocks and `toolConfig` each end in a `cachePoint`,
/// and the URL names the model's `converse-stream` path.
#[test]
fn request_format_prints_the_bedrock_converse_body() {
    let model = "anthropic.claude-3-7-sonnet-20250219-v1:0";
    let out = request_for("amazon-bedrock", model);
    assert_eq!(out["wire"]["protocol"], "bedrock-converse");
    let url = out["wire"]["url"].as_str().unwrap();
    assert!(
        url.starts_with("https://bedrock-runtime.")
            && url.ends_with("/model/anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse-stream"),
        "{url}"
    );
    let body = &out["wire"]["body"];
    let system = body["system"].as_array().unwrap();
    assert!(!system[0]["text"].as_str().unwrap().is_empty());
    assert!(system.last().unwrap().get("cachePoint").is_some());
    let tools = body["toolConfig"]["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["toolSpec"]["name"] == "read"));
    assert!(tools.last().unwrap().get("cachePoint").is_some());
    let messages = body["messages"].as_array().unwrap();
    assert!(
        messages
            .iter()
            .all(|m| m["role"] == "user" || m["role"] == "assistant")
    );
    let last = messages.last().unwrap()["content"].as_array().unwrap();
    assert!(last.last().unwrap().get("cachePoint").is_some());
    assert_wire_is_exact(&out);
}

/// A model the catalog does not list has no exact wire body: the neutral request is printed
/// and stderr says why.
#[test]
fn request_format_without_a_catalog_model_prints_no_wire_body() {
    let tour = workspace().join("examples/sessions/tour.jsonl");
    let output = strata(&[
        "context",
        tour.to_str().unwrap(),
        "--format",
        "request",
        "--provider",
        "openai",
        "--model",
        "gpt-unlisted",
    ]);
    assert!(output.status.success());
    let out: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(out["model"], "gpt-unlisted");
    assert!(out["request"]["messages"].is_array());
    assert!(out.get("wire").is_none());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("openai/gpt-unlisted"), "{stderr}");
}

/// An entry with a field of the wrong type is left out of the context and reported once on
/// stderr, naming file, line and field; the command succeeds.
#[test]
fn wrongly_typed_entry_is_reported_once_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wrong-type.jsonl");
    let text = "{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n\
         {\"type\":\"message\",\"id\":\"u1\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}\n\
         {\"type\":\"message\",\"id\":\"u2\",\"parentId\":\"u1\",\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"x\",\"timestamp\":\"soon\"}}\n\
         {\"type\":\"message\",\"id\":\"u3\",\"parentId\":\"u2\",\"timestamp\":\"2026-01-01T00:00:02.000Z\",\"message\":{\"role\":\"user\",\"content\":\"later\",\"timestamp\":3}}\n";
    std::fs::write(&path, text).unwrap();
    let output = strata(&["context", path.to_str().unwrap(), "--format", "pi"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("wrong-type.jsonl:3:") && stderr.contains("`message.timestamp`"),
        "{stderr}"
    );
    let context: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let contents: Vec<&str> = context["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|message| message["content"].as_str())
        .collect();
    assert_eq!(contents, ["hi", "later"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}
