//! The boundary is data: operations recorded as JSON and replayed against a fresh runtime on
//! a fresh mock write the same session file and report the same events.

use std::collections::HashMap;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::Value;
use strata_agent::CacheSettings;
use strata_provider::ThinkingLevel;
use strata_runtime::{
    Answer, BashRecord, ModelRef, Op, OpName, Query, QueueMode, RuntimeEvent, UserInput,
};
use strata_session::EntryId;

use crate::support::{Running, agent, start_agent};

const SCENARIO: &str = r#"
[[turn]]
text = "Reading it."
[[turn.tool_call]]
tool = "read"
args = { path = "a.txt" }
[[turn]]
text = "It says hello."
[[turn]]
text = "Second answer."
[[turn]]
text = "Third answer."
"#;

/// The recording: every kind of operation that names no entry id (ids are drawn at random,
/// so a replay cannot name the ones a recording saw).
fn recording() -> Vec<Op> {
    vec![
        Op::SetThinking(ThinkingLevel::Low),
        Op::SetSteeringMode(QueueMode::All),
        Op::Prompt(UserInput::text("read a.txt")),
        Op::SetSessionName("replayed".into()),
        Op::RecordBash(Box::new(BashRecord {
            command: "echo hi".into(),
            output: "hi\n".into(),
            exit_code: Some(0),
            cancelled: false,
            truncated: false,
            full_output_path: None,
            timestamp: 1_700_000_000_000,
            exclude_from_context: false,
        })),
        Op::LabelLeaf(Some("checkpoint".into())),
        Op::AppendCustom {
            custom_type: "replay-note".into(),
            data: Some(serde_json::json!({"step": 6})),
        },
        Op::SetModel(ModelRef::new("anthropic", "claude-3-5-haiku-latest")),
        Op::Prompt(UserInput::text("two")),
        Op::SetTools(vec!["read".into(), "bash".into()]),
        Op::SetAutoCompaction(false),
        Op::Navigate {
            target: None,
            summarize: false,
            instructions: None,
        },
        Op::Prompt(UserInput::text("three")),
        Op::Query {
            id: 1,
            query: Query::Transcript {
                after: None,
                last: None,
                before: None,
            },
        },
        Op::Query {
            id: 2,
            query: Query::Stats,
        },
    ]
}

/// Runs `ops` on a fresh runtime on a fresh mock; returns the session file and the events,
/// both as text with the run's own ids, times and directory put in canonical form.
async fn play(ops: Vec<Op>) -> (Vec<Value>, Vec<Value>) {
    // One directory for both plays: its path is in the prompt, and the mock counts the
    // tokens of its characters, so two random directories would bill differently.
    let fixed = std::env::temp_dir().join(format!("strata-replay-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fixed);
    std::fs::create_dir_all(&fixed).unwrap();
    let mut run: Running = start_agent(SCENARIO, |route, _| {
        std::fs::write(fixed.join("a.txt"), "hello\n").unwrap();
        agent(route, &fixed, CacheSettings::default())
    })
    .await;
    for op in ops {
        run.send(op);
    }
    let events = run
        .until(|e| matches!(e, RuntimeEvent::Answered { id: 2, .. }))
        .await;
    let agent = run.stop().await;
    let path = agent.session().path().to_path_buf();
    let dir = path.parent().unwrap().to_path_buf();
    let file = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_dir_all(&fixed);
    let mut canon = Canon::new(&dir);
    let lines = file.lines().map(|line| canon.text(line)).collect();
    // Events are data too: each reads back as the event it was.
    for event in &events {
        let json = serde_json::to_string(event).unwrap();
        let read: RuntimeEvent =
            serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
        assert_eq!(&read, event, "{json}");
    }
    let mut canon = Canon::new(&dir);
    let events = events
        .iter()
        .map(|event| canon.text(&serde_json::to_string(event).unwrap()))
        .collect();
    (lines, events)
}

/// Ids in order of first appearance, times and the temporary directory made canonical.
struct Canon {
    dir: String,
    ids: HashMap<String, String>,
}

impl Canon {
    fn new(dir: &Path) -> Self {
        Self {
            dir: dir.display().to_string(),
            ids: HashMap::new(),
        }
    }

    fn text(&mut self, text: &str) -> Value {
        let mut value: Value = serde_json::from_str(&text.replace(&self.dir, "<dir>")).unwrap();
        self.walk(&mut value);
        value
    }

    fn walk(&mut self, value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    match key.as_str() {
                        "timestamp" | "duration_ms" | "elapsed_ms" => *value = Value::Null,
                        "id" | "parentId" | "targetId" | "entry" | "leaf" | "target"
                        | "firstKeptEntryId" | "fromId" | "parent_id" | "entry_id" | "first"
                            if value.is_string() =>
                        {
                            let next = format!("#{}", self.ids.len());
                            let seen = value.as_str().unwrap_or_default().to_owned();
                            let id = self.ids.entry(seen).or_insert(next).clone();
                            *value = Value::String(id);
                        }
                        _ => self.walk(value),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.walk(item)),
            _ => {}
        }
    }
}

#[tokio::test]
async fn recorded_operations_replayed_on_a_fresh_runtime_write_the_same_session_and_events() {
    let ops = recording();
    let recorded = serde_json::to_string_pretty(&ops).unwrap();
    let replayed: Vec<Op> = serde_json::from_str(&recorded).unwrap();
    assert_eq!(replayed, ops, "the operations round-trip through JSON");

    let (first_file, first_events) = play(ops).await;
    let (second_file, second_events) = play(replayed).await;
    assert_eq!(first_file, second_file);
    assert_eq!(first_events, second_events);

    // What was played is in the file: the name, the command, the label, the model switch.
    let types: Vec<&str> = first_file
        .iter()
        .filter_map(|line| line["type"].as_str())
        .collect();
    for wanted in ["session_info", "label", "custom", "model_change", "leaf"] {
        assert!(types.contains(&wanted), "{wanted} in {types:?}");
    }
    assert!(
        first_file
            .iter()
            .any(|line| line["message"]["role"] == "bashExecution"),
        "the recorded command"
    );
    // And the reads answered: the transcript after the move holds only the last prompt.
    let transcript = first_events
        .iter()
        .find(|event| event["type"] == "answered" && event["id"] == 1)
        .expect("the transcript's answer");
    assert_eq!(transcript["answer"]["answer"], "transcript");
    let items = transcript["answer"]["items"].as_array().unwrap();
    assert_eq!(items[0]["item"], "user");
    assert_eq!(items[0]["text"], "three");
}

#[test]
fn queries_answers_and_failures_round_trip_through_json() {
    let queries = [
        Query::State,
        Query::Messages,
        Query::Transcript {
            after: Some(EntryId::new("a0000001")),
            last: None,
            before: None,
        },
        Query::Transcript {
            after: None,
            last: Some(200),
            before: Some(EntryId::new("u0000009")),
        },
        Query::Tree,
        Query::ForkPoints,
        Query::ForkPoint {
            entry: EntryId::new("u0000001"),
        },
        Query::Stats,
        Query::NextRequest,
        Query::RewindPreview { target: None },
    ];
    for query in queries {
        let json = serde_json::to_string(&query).unwrap();
        assert_eq!(
            serde_json::from_str::<Query>(&json).unwrap(),
            query,
            "{json}"
        );
    }
    let answer = Answer::ForkPoint {
        parent: Some(EntryId::new("m0000001")),
        text: "read it".into(),
    };
    let json = serde_json::to_string(&answer).unwrap();
    assert_eq!(serde_json::from_str::<Answer>(&json).unwrap(), answer);
    let failed = RuntimeEvent::Failed {
        op: OpName::LabelLeaf,
        error: "nothing to label yet".into(),
    };
    assert_eq!(
        serde_json::to_value(&failed).unwrap(),
        serde_json::json!({"type": "failed", "op": "label", "error": "nothing to label yet"})
    );
}
