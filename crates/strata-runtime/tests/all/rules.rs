//! The rules layer through the runtime's Ops: a question answered with
//! `Op::AnswerPermission`, the mode switched with `Op::SetPermissionMode`, and files put back
//! with `Op::RewindFiles` in a git project, the session file only ever appended to.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use pretty_assertions::assert_eq;
use strata_agent::{AgentEvent, CacheSettings, ToolRules};
use strata_permissions::{Answer, Gate, Mode, Policy};
use strata_runtime::{Op, RuntimeEvent};
use strata_session::EntryId;

use crate::support::{agent_in, start_agent};

fn gate(project: &Path, mode: Mode) -> Gate {
    let root = std::fs::canonicalize(project).unwrap();
    Gate::new(Policy::new(mode, vec![root]), None)
}

const TWICE: &str = r#"
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "echo ok >> ok.txt" }
[[turn]]
text = "Ran it."
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "echo ok >> ok.txt" }
[[turn]]
text = "Ran it again."
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "echo ok >> ok.txt" }
[[turn]]
text = "Refused."
"#;

fn asked(events: &[RuntimeEvent]) -> Vec<strata_permissions::PermissionRequest> {
    events
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::PermissionRequested { request } => Some(request.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_question_answered_for_the_session_is_not_asked_again_and_plan_refuses_it() {
    let mut project = PathBuf::new();
    let mut run = start_agent(TWICE, |route, dir| {
        project = dir.join("project");
        std::fs::create_dir(&project).unwrap();
        let mut agent = agent_in(route, dir, &project, CacheSettings::default());
        agent.set_tool_rules(ToolRules {
            gate: Some(gate(&project, Mode::Ask)),
            ..ToolRules::default()
        });
        agent
    })
    .await;
    run.send(Op::Prompt("run it".into()));
    let seen = run
        .until(|e| matches!(e, RuntimeEvent::PermissionRequested { .. }))
        .await;
    let request = asked(&seen).remove(0);
    assert_eq!(request.tool, "bash");
    assert_eq!(request.mode, Mode::Ask);
    assert_eq!(request.suggested_rules, ["Bash(echo ok >> ok.txt)"]);
    assert!(
        !project.join("ok.txt").exists(),
        "nothing runs before the answer"
    );
    run.send(Op::AnswerPermission {
        id: request.id.clone(),
        answer: Answer::AllowSession,
    });
    run.settled().await;
    assert_eq!(
        std::fs::read_to_string(project.join("ok.txt")).unwrap(),
        "ok\n"
    );

    // The session rule covers the same command: it runs unasked.
    run.send(Op::Prompt("again".into()));
    let seen = run.settled().await;
    assert!(asked(&seen).is_empty(), "{:?}", asked(&seen));
    assert_eq!(
        std::fs::read_to_string(project.join("ok.txt")).unwrap(),
        "ok\nok\n"
    );

    // An answer nobody asked for is an error, not a silent success.
    run.send(Op::AnswerPermission {
        id: request.id,
        answer: Answer::AllowOnce,
    });
    run.until(|e| matches!(e, RuntimeEvent::Failed { op, .. } if *op == strata_runtime::OpName::AnswerPermission))
        .await;

    // Plan refuses commands whatever the session allowed.
    run.send(Op::SetPermissionMode(Mode::Plan));
    run.until(|e| matches!(e, RuntimeEvent::PermissionModeChanged { mode: Mode::Plan }))
        .await;
    run.send(Op::Prompt("once more".into()));
    let seen = run.settled().await;
    assert!(asked(&seen).is_empty());
    assert_eq!(
        std::fs::read_to_string(project.join("ok.txt")).unwrap(),
        "ok\nok\n"
    );
    let refused = seen.iter().any(|e| {
        matches!(
            e,
            RuntimeEvent::Agent {
                event: AgentEvent::ToolEnd { is_error: true, .. }
            }
        )
    });
    assert!(refused, "the plan refusal is the tool's result");
}

#[tokio::test]
async fn set_permission_mode_without_a_gate_fails_clearly() {
    let mut run = start_agent("[[turn]]\ntext = \"hi\"\n", |route, dir| {
        agent_in(route, dir, dir, CacheSettings::default())
    })
    .await;
    run.send(Op::SetPermissionMode(Mode::Plan));
    let seen = run
        .until(|e| matches!(e, RuntimeEvent::Failed { .. }))
        .await;
    let Some(RuntimeEvent::Failed { op, error }) = seen.last() else {
        unreachable!()
    };
    assert_eq!(*op, strata_runtime::OpName::SetPermissionMode);
    assert!(error.contains("no permission gate"), "{error}");
}

/// An edit, two writes (a new file and a tracked one) and a bash command that modifies,
/// deletes and creates tracked, untracked and binary files.
const CHANGES: &str = r#"
[[turn]]
[[turn.tool_call]]
tool = "edit"
args = { path = "a.txt", edits = [{ oldText = "alpha", newText = "ALPHA" }] }
[[turn]]
[[turn.tool_call]]
tool = "write"
args = { path = "b.txt", content = "bravo, new\n" }
[[turn.tool_call]]
tool = "write"
args = { path = "c.txt", content = "charlie, rewritten\n" }
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "printf 'changed by bash\\n' > d.txt && rm e.txt && printf 'new\\n' > f.txt && printf 'golf, again\\n' > g.txt && printf '\\377\\000\\002' > bin.dat" }
[[turn]]
text = "Done."
"#;

fn git(project: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .current_dir(project)
        .output()
        .unwrap();
    assert!(status.status.success(), "git {args:?}: {status:?}");
}

/// Every file of the project but `.git`, with its bytes.
fn files(project: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(path.strip_prefix(root).unwrap().to_path_buf(), bytes);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(project, project, &mut out);
    out
}

/// The ids of the session's entries, with each message's role.
fn entries(session: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(session)
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let role = value["message"]["role"].as_str().unwrap_or("").to_owned();
            (value["id"].as_str().unwrap().to_owned(), role)
        })
        .collect()
}

#[tokio::test]
async fn rewinding_files_back_and_forth_restores_every_byte_and_only_appends_to_the_session() {
    if Command::new("git").arg("--version").output().is_err() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let mut project = PathBuf::new();
    let mut session_file = PathBuf::new();
    let mut run = start_agent(CHANGES, |route, dir| {
        project = dir.join("project");
        std::fs::create_dir(&project).unwrap();
        for (name, bytes) in [
            ("a.txt", &b"alpha\n"[..]),
            ("c.txt", b"charlie\n"),
            ("d.txt", b"delta\n"),
            ("e.txt", b"echo\n"),
            ("bin.dat", &[0, 1, 2, 255]),
        ] {
            std::fs::write(project.join(name), bytes).unwrap();
        }
        git(&project, &["init", "-q"]);
        git(&project, &["add", "."]);
        git(&project, &["commit", "-qm", "start"]);
        // Untracked before the command, changed by it.
        std::fs::write(project.join("g.txt"), "golf\n").unwrap();
        session_file = dir.join("first.jsonl");
        let mut agent = agent_in(route, dir, &project, CacheSettings::default());
        agent.set_tool_rules(ToolRules {
            gate: None,
            sandbox: None,
            checkpoints: true,
        });
        agent
    })
    .await;
    let start = files(&project);
    run.send(Op::Prompt("change things".into()));
    run.settled().await;
    let end = files(&project);
    assert_eq!(end[Path::new("a.txt")], b"ALPHA\n");
    assert_eq!(end[Path::new("bin.dat")], [0o377, 0, 2]);
    assert!(!end.contains_key(Path::new("e.txt")));
    assert!(end.contains_key(Path::new("f.txt")));

    let listed = entries(&session_file);
    let user = listed
        .iter()
        .find(|(_, role)| role == "user")
        .unwrap()
        .0
        .clone();
    let first_result = listed
        .iter()
        .find(|(_, role)| role == "toolResult")
        .unwrap()
        .0
        .clone();
    let leaf = listed.last().unwrap().0.clone();

    let mut expected_after_edit = start.clone();
    expected_after_edit.insert("a.txt".into(), b"ALPHA\n".to_vec());

    for (target, want) in [
        (&user, &start),
        (&leaf, &end),
        (&first_result, &expected_after_edit),
        (&user, &start),
    ] {
        let before = std::fs::read(&session_file).unwrap();
        run.send(Op::RewindFiles {
            target: Some(EntryId::new(target)),
        });
        let seen = run
            .until(|e| {
                matches!(
                    e,
                    RuntimeEvent::FilesRestored { .. } | RuntimeEvent::Failed { .. }
                )
            })
            .await;
        let Some(RuntimeEvent::FilesRestored { report }) = seen.last() else {
            panic!("{seen:?}")
        };
        assert!(report.not_restorable.is_empty(), "{report:?}");
        assert_eq!(&files(&project), want, "files at {target}");
        // The restore is recorded by appending; nothing before it changed.
        let after = std::fs::read(&session_file).unwrap();
        assert!(after.len() > before.len());
        assert_eq!(
            after[..before.len()],
            before[..],
            "the session was only appended to"
        );
        let text = String::from_utf8(after[before.len()..].to_vec()).unwrap();
        assert!(text.contains("strata.files_restored"), "{text}");
        assert!(text.contains(target.as_str()), "{text}");
    }
}

const ONE_EDIT: &str = r#"
[[turn]]
[[turn.tool_call]]
tool = "edit"
args = { path = "a.txt", edits = [{ oldText = "alpha", newText = "ALPHA" }] }
[[turn]]
text = "Done."
"#;

#[tokio::test]
async fn a_fork_carries_the_checkpoints_it_needs_to_rewind() {
    let mut project = PathBuf::new();
    let mut first = PathBuf::new();
    let mut run = start_agent(ONE_EDIT, |route, dir| {
        project = dir.join("project");
        first = dir.join("first.jsonl");
        std::fs::create_dir(&project).unwrap();
        std::fs::write(project.join("a.txt"), "alpha\n").unwrap();
        let mut agent = agent_in(route, dir, &project, CacheSettings::default());
        agent.set_tool_rules(ToolRules {
            gate: None,
            sandbox: None,
            checkpoints: true,
        });
        agent
    })
    .await;
    run.send(Op::Prompt("edit it".into()));
    run.settled().await;
    assert_eq!(
        std::fs::read_to_string(project.join("a.txt")).unwrap(),
        "ALPHA\n"
    );
    let leaf = entries(&first).last().unwrap().0.clone();
    run.send(Op::Fork {
        leaf: Some(EntryId::new(&leaf)),
    });
    let (fork, _) = run.session_changed().await;
    let user = entries(&fork)
        .into_iter()
        .find(|(_, role)| role == "user")
        .unwrap()
        .0;
    run.send(Op::RewindFiles {
        target: Some(EntryId::new(&user)),
    });
    let seen = run
        .until(|e| {
            matches!(
                e,
                RuntimeEvent::FilesRestored { .. } | RuntimeEvent::Failed { .. }
            )
        })
        .await;
    let Some(RuntimeEvent::FilesRestored { report }) = seen.last() else {
        panic!("{seen:?}")
    };
    assert_eq!(report.restored.len(), 1, "{report:?}");
    assert_eq!(
        std::fs::read_to_string(project.join("a.txt")).unwrap(),
        "alpha\n",
        "rewound in the fork, from the checkpoints it carried"
    );
}

/// A command that fails inside the (stand-in) sandbox and works outside it, twice.
const SANDBOXED: &str = r#"
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "if [ -n \"$IN_SANDBOX\" ]; then echo 'out.txt: Permission denied' >&2; exit 1; fi; echo outside >> out.txt" }
[[turn]]
text = "First."
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "if [ -n \"$IN_SANDBOX\" ]; then echo 'out.txt: Permission denied' >&2; exit 1; fi; echo outside >> out.txt" }
[[turn]]
text = "Second."
"#;

/// The tool results on the session's path, text and error flag.
fn tool_results(session: &Path) -> Vec<(String, bool)> {
    std::fs::read_to_string(session)
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|entry| entry["message"]["role"] == "toolResult")
        .map(|entry| {
            (
                entry["message"]["content"].to_string(),
                entry["message"]["isError"] == true,
            )
        })
        .collect()
}

#[tokio::test]
async fn a_command_the_sandbox_refused_runs_once_outside_it_when_the_user_allows() {
    let mut project = PathBuf::new();
    let mut first = PathBuf::new();
    let mut run = start_agent(SANDBOXED, |route, dir| {
        project = dir.join("project");
        first = dir.join("first.jsonl");
        std::fs::create_dir(&project).unwrap();
        let mut agent = agent_in(route, dir, &project, CacheSettings::default());
        // A stand-in for the Landlock helper: it marks the shell as sandboxed, and the
        // command refuses itself there, as a write outside the sandbox's reach fails.
        let sandbox = strata_tools::Sandbox {
            program: "/usr/bin/env".into(),
            args: vec!["IN_SANDBOX=1".into()],
            limits: "a stand-in".into(),
        };
        agent.set_tool_rules(ToolRules {
            gate: Some(gate(&project, Mode::Auto)),
            sandbox: Some(sandbox),
            checkpoints: false,
        });
        agent
    })
    .await;
    run.send(Op::Prompt("write it".into()));
    let seen = run
        .until(|e| matches!(e, RuntimeEvent::PermissionRequested { .. }))
        .await;
    let request = asked(&seen).remove(0);
    assert!(
        request.reason.contains("outside the sandbox"),
        "{request:?}"
    );
    assert!(request.suggested_rules.is_empty());
    assert!(!project.join("out.txt").exists());
    run.send(Op::AnswerPermission {
        id: request.id,
        answer: Answer::AllowOnce,
    });
    run.settled().await;
    assert_eq!(
        std::fs::read_to_string(project.join("out.txt")).unwrap(),
        "outside\n"
    );
    let results = tool_results(&first);
    assert!(
        !results[0].1,
        "the rerun's result replaced the refusal: {results:?}"
    );
    assert!(results[0].0.contains("run once"), "{results:?}");

    // Refused: the sandboxed failure stays, with the sandbox's note.
    run.send(Op::Prompt("again".into()));
    let seen = run
        .until(|e| matches!(e, RuntimeEvent::PermissionRequested { .. }))
        .await;
    let request = asked(&seen).remove(0);
    run.send(Op::AnswerPermission {
        id: request.id,
        answer: Answer::Deny { reason: None },
    });
    run.settled().await;
    assert_eq!(
        std::fs::read_to_string(project.join("out.txt")).unwrap(),
        "outside\n"
    );
    let results = tool_results(&first);
    assert!(results[1].1, "{results:?}");
    assert!(results[1].0.contains("OS sandbox"), "{results:?}");
}
