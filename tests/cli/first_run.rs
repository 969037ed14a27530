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
fn fresh(dir: &std::path::Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
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
