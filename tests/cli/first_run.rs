//! A newcomer's first runs: no config at all, with or without a key in the environment, and
//! resuming a session without naming its model again.

use std::process::{Command, Output};

use crate::support::{demo_mock, project, text};

/// Every variable that could give strata a credential or a model, outside the test's say.
const KEY_VARIABLES: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "DEEPSEEK_API_KEY",
    "XAI_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "OPENROUTER_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_PROFILE",
    "STRATA_API_KEY",
    "STRATA_MODEL",
    "XDG_CONFIG_HOME",
    "PI_CODING_AGENT_DIR",
];

/// `strata ARGS` in `dir` with `HOME=dir`, no inherited credentials, and `vars` set.
pub(crate) fn fresh(dir: &std::path::Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_strata"));
    command.current_dir(dir).args(args).env("HOME", dir);
    for var in KEY_VARIABLES {
        command.env_remove(var);
    }
    for (name, value) in vars {
        command.env(name, value);
    }
    command.output().expect("strata runs")
}

#[test]
fn with_no_key_and_no_config_the_error_says_what_to_do() {
    let dir = project();
    let out = fresh(dir.path(), &["-p", "hi", "--no-session"], &[]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("no provider has a key"), "{err}");
    assert!(err.contains("export ANTHROPIC_API_KEY="), "{err}");
    assert!(err.contains("OPENAI_API_KEY"), "{err}");
    // The config file's real path, and the way to try strata without a key.
    let config = dir.path().join(".config/strata/config.toml");
    assert!(err.contains(&config.display().to_string()), "{err}");
    assert!(
        err.contains("`strata demo`") && err.contains("`strata models`"),
        "{err}"
    );
}

#[test]
fn a_key_in_the_environment_chooses_a_default_model_and_says_why() {
    let server = demo_mock();
    let dir = project();
    let url = server.base_url();
    let out = fresh(
        dir.path(),
        &["-p", "fix the greeting", "--base-url", &url, "--no-session"],
        &[("ANTHROPIC_API_KEY", "k")],
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "ANTHROPIC_API_KEY is set, so anthropic/claude-sonnet-4-6 is Anthropic's default"
        ),
        "{err}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests.iter().all(|r| r.model == "claude-sonnet-4-6"));
    // Another provider's key chooses that provider's default.
    let server = demo_mock();
    let url = server.base_url();
    let out = fresh(
        dir.path(),
        &["-p", "fix the greeting", "--base-url", &url, "--no-session"],
        &[("DEEPSEEK_API_KEY", "k")],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.model == "deepseek-v4-pro")
    );
}

#[test]
fn continuing_a_session_takes_its_model_without_naming_it() {
    let server = demo_mock();
    let dir = project();
    let url = server.base_url();
    let first = fresh(
        dir.path(),
        &[
            "-p",
            "fix the greeting",
            "--model",
            "openai/gpt-4.1",
            "--base-url",
            &url,
        ],
        &[("OPENAI_API_KEY", "k")],
    );
    assert!(first.status.success(), "{}", text(&first.stderr));
    let before = server.requests().len();
    // An Anthropic key is present too: the session's own model still wins over the default.
    let second = fresh(
        dir.path(),
        &["-c", "-p", "and now?", "--base-url", &url],
        &[("OPENAI_API_KEY", "k"), ("ANTHROPIC_API_KEY", "k")],
    );
    let err = text(&second.stderr);
    assert!(
        err.contains("openai/gpt-4.1 is the model this session used"),
        "{err}"
    );
    let later = &server.requests()[before..];
    assert!(!later.is_empty(), "{err}");
    assert!(later.iter().all(|r| r.model == "gpt-4.1"), "{later:?}");
}

#[test]
fn bare_ids_and_patterns_choose_the_model_and_typos_get_did_you_mean() {
    let server = demo_mock();
    let dir = project();
    let url = server.base_url();
    let out = fresh(
        dir.path(),
        &[
            "-p",
            "fix the greeting",
            "--model",
            "sonnet-4-5",
            "--base-url",
            &url,
            "--no-session",
        ],
        &[("ANTHROPIC_API_KEY", "k")],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.model == "claude-sonnet-4-5")
    );
    let typo = fresh(
        dir.path(),
        &[
            "-p",
            "hi",
            "--model",
            "anthropic/claude-sonet-4-5",
            "--no-session",
        ],
        &[("ANTHROPIC_API_KEY", "k")],
    );
    assert!(!typo.status.success());
    let err = text(&typo.stderr);
    assert!(
        err.contains("did you mean `anthropic/claude-sonnet-4-5`?"),
        "{err}"
    );
    assert!(!err.contains("guessed"), "{err}");
}

#[test]
fn positional_messages_and_at_files_run_as_pi_runs_them() {
    let server = demo_mock();
    let dir = project();
    let url = server.base_url();
    std::fs::write(dir.path().join("notes.md"), "the greeting has a typo\n").unwrap();
    // No terminal on stdout: the messages run as with -p, the second after the first.
    let out = fresh(
        dir.path(),
        &[
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--base-url",
            &url,
            "--no-session",
            "@notes.md",
            "fix the greeting",
            "and say so",
        ],
        &[("ANTHROPIC_API_KEY", "k")],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let bodies: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body.as_ref().map(ToString::to_string).unwrap_or_default())
        .collect();
    let notes = dir.path().join("notes.md");
    let file = format!(
        "<file name=\\\"{}\\\">\\nthe greeting has a typo\\n\\n</file>\\nfix the greeting",
        notes.display()
    );
    assert!(bodies[0].contains(&file), "{}", bodies[0]);
    assert!(
        bodies.last().unwrap().contains("and say so"),
        "the second message was sent in turn"
    );
    // A missing file stops the run before anything is sent.
    let before = server.requests().len();
    let missing = fresh(
        dir.path(),
        &[
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--base-url",
            &url,
            "@nope.md",
            "hi",
        ],
        &[("ANTHROPIC_API_KEY", "k")],
    );
    assert!(!missing.status.success());
    assert!(text(&missing.stderr).contains("nope.md: file not found"));
    assert_eq!(server.requests().len(), before);
}

#[test]
fn thinking_export_and_list_models_flags_work_as_pi_documents_them() {
    let server = demo_mock();
    let dir = project();
    let url = server.base_url();
    let session = dir.path().join("s.jsonl");
    let out = fresh(
        dir.path(),
        &[
            "-p",
            "fix the greeting",
            "--model",
            "anthropic/claude-sonnet-4-5:low",
            "--thinking",
            "high",
            "--base-url",
            &url,
            "--session",
            session.to_str().unwrap(),
        ],
        &[("ANTHROPIC_API_KEY", "k")],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stored = std::fs::read_to_string(&session).unwrap();
    assert!(
        stored.contains(r#""thinkingLevel":"high""#),
        "--thinking wins over the suffix: {stored}"
    );
    // --export SESSION OUTPUT writes the HTML and prints its path.
    let html = dir.path().join("s.html");
    let out = fresh(
        dir.path(),
        &[
            "--export",
            session.to_str().unwrap(),
            html.to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), html.display().to_string());
    assert!(std::fs::read_to_string(&html).unwrap().contains("<html"));
    // --list-models lists only what a key makes usable, filtered by the search.
    let out = fresh(
        dir.path(),
        &["--list-models", "sonnet-4"],
        &[("ANTHROPIC_API_KEY", "k")],
    );
    let listed = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(listed.contains("anthropic/claude-sonnet-4-5 "), "{listed}");
    assert!(!listed.contains("openai/"), "{listed}");
    assert!(!listed.contains("claude-opus"), "{listed}");
}

#[test]
fn models_lists_the_usable_ones_first_and_says_why_the_rest_are_not() {
    let dir = project();
    let out = fresh(
        dir.path(),
        &["models", "--offline", "--json"],
        &[("DEEPSEEK_API_KEY", "k")],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first_unusable = rows.iter().position(|r| r["key"].is_null()).unwrap();
    assert!(first_unusable > 0);
    assert!(
        rows[..first_unusable]
            .iter()
            .all(|r| r["provider"] == "deepseek" || r["key"] == "no key needed")
    );
    assert_eq!(rows[0]["key"], "DEEPSEEK_API_KEY is set");
    assert!(rows[first_unusable..].iter().all(|r| r["key"].is_null()));
    let table = fresh(
        dir.path(),
        &["models", "--offline"],
        &[("DEEPSEEK_API_KEY", "k")],
    );
    let table = text(&table.stdout);
    assert!(table.contains("# usable now ("), "{table}");
    assert!(table.contains("# not usable now ("), "{table}");
}

#[test]
fn config_names_its_files_and_the_model_a_run_would_use() {
    let dir = project();
    let out = fresh(dir.path(), &["config"], &[("DEEPSEEK_API_KEY", "k")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    let user = dir.path().join(".config/strata/config.toml");
    assert!(
        shown.contains(&format!("# user config:    {} (not found)", user.display())),
        "{shown}"
    );
    assert!(shown.contains("# project config: "), "{shown}");
    assert!(
        shown.contains(&format!(
            "# sessions:       {}",
            dir.path().join(".strata/sessions").display()
        )),
        "{shown}"
    );
    assert!(
        shown.contains("model = deepseek/deepseek-v4-pro  # not set: no model is configured and DEEPSEEK_API_KEY is set"),
        "{shown}"
    );
    let none = fresh(dir.path(), &["config"], &[]);
    assert!(text(&none.stdout).contains("# model: not set, and no provider has a key"));
}

#[test]
fn stats_skips_a_missing_folder_and_providers_name_their_key_variables() {
    let dir = project();
    let present = dir.path().join("sessions");
    std::fs::create_dir_all(&present).unwrap();
    let missing = dir.path().join("no-such-folder");
    let out = fresh(
        dir.path(),
        &[
            "stats",
            present.to_str().unwrap(),
            missing.to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no-such-folder: not found, skipped"));
    let none = fresh(dir.path(), &["stats", missing.to_str().unwrap()], &[]);
    assert!(!none.status.success());
    let providers = fresh(dir.path(), &["providers"], &[("DEEPSEEK_API_KEY", "k")]);
    let table = text(&providers.stdout);
    let row = |id: &str| {
        table
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        row("deepseek").contains("DEEPSEEK_API_KEY (set)"),
        "{table}"
    );
    assert!(row("anthropic").contains("ANTHROPIC_API_KEY "), "{table}");
    assert!(!row("anthropic").contains("(set)"), "{table}");
}
