//! What hooks and extensions say for the user leaves the runtime as `Notice` events, once
//! each, before the run's end (print mode exits on it) — and an extension problem that
//! arrives while the runtime is idle is said with the next operation.

use std::path::Path;
use std::sync::{Arc, Mutex};

use strata_agent::{CacheSettings, ExtensionProblems, NoticeSource};
use strata_hooks::{HookFiles, HookRunner, HookSet, HooksSettings};
use strata_runtime::{Op, RunEnd, RuntimeEvent};

use crate::support::{agent, run_end, start_agent};

/// The project's `.claude/settings.json` with these `UserPromptSubmit` hook commands.
fn prompt_hooks(dir: &Path, commands: &[&str]) -> HookRunner {
    let hooks: Vec<_> = commands
        .iter()
        .map(|c| serde_json::json!({"type": "command", "command": c}))
        .collect();
    let settings = serde_json::json!({"hooks": {"UserPromptSubmit": [{"hooks": hooks}]}});
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    std::fs::write(dir.join(".claude/settings.json"), settings.to_string()).unwrap();
    let defaults = HooksSettings::default();
    let files = HookFiles::standard(&defaults, None, None, dir);
    HookRunner::new(HookSet::load(&files, &defaults, true), dir)
}

/// The notices among `events`, as `(source, text)`, and where the run ended among them.
fn notices(events: &[RuntimeEvent]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::Notice { source, text } => Some((source.to_string(), text.clone())),
            _ => None,
        })
        .collect()
}

fn position(events: &[RuntimeEvent], wanted: impl Fn(&RuntimeEvent) -> bool) -> usize {
    events.iter().position(wanted).expect("the event")
}

#[tokio::test]
async fn a_system_message_and_a_failing_hook_are_notices_before_the_run_ends() {
    let mut r = start_agent("[[turn]]\ntext = \"hi\"\n", |route, dir| {
        let mut agent = agent(route, dir, CacheSettings::default());
        agent.set_hooks(Some(prompt_hooks(
            dir,
            &[
                r#"echo '{"systemMessage": "remember the style guide"}'"#,
                "echo broken >&2; exit 3",
            ],
        )));
        agent
    })
    .await;
    r.send(Op::Prompt("hello".into()));
    let events = r.settled().await;
    assert_eq!(run_end(&events), RunEnd::Stop);
    let said = notices(&events);
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(
        said.iter()
            .all(|(source, _)| source == "hook UserPromptSubmit")
    );
    assert!(said.iter().any(|(_, t)| t == "remember the style guide"));
    assert!(
        said.iter()
            .any(|(_, t)| t.contains("exit code 3") && t.contains("broken")),
        "{said:?}"
    );
    let last_notice = events
        .iter()
        .rposition(|e| matches!(e, RuntimeEvent::Notice { .. }))
        .unwrap();
    assert!(last_notice < position(&events, |e| matches!(e, RuntimeEvent::RunEnded { .. })));
    // Said once: another operation brings none back.
    r.send(Op::SetSessionName("again".into()));
    let later = r
        .until(|e| matches!(e, RuntimeEvent::SessionNamed { .. }))
        .await;
    assert!(notices(&later).is_empty(), "{later:?}");
}

#[tokio::test]
async fn a_blocked_prompt_says_why() {
    let mut r = start_agent("[[turn]]\ntext = \"hi\"\n", |route, dir| {
        let mut agent = agent(route, dir, CacheSettings::default());
        agent.set_hooks(Some(prompt_hooks(
            dir,
            &["grep -q password && { echo 'no secrets in prompts' >&2; exit 2; }; exit 0"],
        )));
        agent
    })
    .await;
    r.send(Op::Prompt("my password is hunter2".into()));
    let events = r.settled().await;
    assert_eq!(
        notices(&events),
        [(
            "hook UserPromptSubmit".to_owned(),
            "prompt blocked: no secrets in prompts".to_owned()
        )]
    );
    assert!(r.server.requests().is_empty());
}

/// Problems a test puts in, as the extension set collects them.
#[derive(Default)]
struct Problems(Mutex<Vec<(String, String)>>);

impl ExtensionProblems for Problems {
    fn take_problems(&self) -> Vec<(String, String)> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

#[tokio::test]
async fn an_extension_problem_is_said_once_with_its_name_even_between_runs() {
    let problems = Arc::new(Problems::default());
    let source = Arc::clone(&problems);
    let mut r = start_agent("[[turn]]\ntext = \"hi\"\n", move |route, dir| {
        let mut agent = agent(route, dir, CacheSettings::default());
        agent.set_extension_problems(Some(source));
        agent
    })
    .await;
    r.send(Op::Prompt("hello".into()));
    let events = r.settled().await;
    assert!(notices(&events).is_empty(), "{events:?}");
    // The extension dies while nothing runs: the next operation's events say so, once.
    problems
        .0
        .lock()
        .unwrap()
        .push(("memo".to_owned(), "exited with status 1".to_owned()));
    r.send(Op::SetSessionName("one".into()));
    let events = r
        .until(|e| matches!(e, RuntimeEvent::SessionNamed { .. }))
        .await;
    let notice = events.iter().find_map(|e| match e {
        RuntimeEvent::Notice { source, text } => Some((source.clone(), text.clone())),
        _ => None,
    });
    assert_eq!(
        notice,
        Some((
            NoticeSource::Extension {
                name: "memo".to_owned()
            },
            "exited with status 1".to_owned()
        ))
    );
    assert_eq!(notices(&events).len(), 1);
    r.send(Op::SetSessionName("two".into()));
    let later = r
        .until(|e| matches!(e, RuntimeEvent::SessionNamed { .. }))
        .await;
    assert!(notices(&later).is_empty(), "{later:?}");
}
