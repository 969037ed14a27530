//! The rules layer from the `strata` binary: `--permission-mode`, a question in `-p` refused
//! with how to allow it (or run with `--yes`), bash in the Landlock sandbox with only `strata`
//! installed, and `strata config` listing the rules with their files.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::{mock_with, project, text};

/// One turn running `command` with bash, then "done".
fn bash_scenario(command: &str) -> strata_mock::Scenario {
    let toml = format!(
        "name = \"bash\"\n[[turn]]\n[[turn.tool_call]]\ntool = \"bash\"\nargs = {{ command = {command:?} }}\n\n[[turn]]\ntext = \"done\"\n"
    );
    strata_mock::Scenario::from_toml(&toml, "test").unwrap()
}

/// `strata -p go` in `dir` (also its HOME) against `url`, with `extra` flags.
fn run(dir: &Path, url: &str, extra: &[&str]) -> Output {
    crate::support::go_with_env_key(dir, url, "sk-ant-test", extra)
}

/// The tool result the model read in the request after the bash call.
fn tool_result(server: &strata_mock::MockServer) -> String {
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "a call and the answer after it");
    let body = requests[1].body.clone().unwrap();
    let messages = body["messages"].as_array().unwrap();
    messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|block| block["type"] == "tool_result")
        .map(|block| block["content"].to_string())
        .collect()
}

#[test]
fn in_print_mode_an_asked_command_is_refused_with_how_to_allow_it_and_yes_runs_it() {
    let dir = project();
    let server = mock_with(bash_scenario("echo ran > ran.txt"));
    let out = run(
        dir.path(),
        &server.base_url(),
        &["--permission-mode", "ask"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!dir.path().join("ran.txt").exists());
    let result = tool_result(&server);
    assert!(result.contains("Permission needed"), "{result}");
    assert!(result.contains("--yes"), "{result}");

    let server = mock_with(bash_scenario("echo ran > ran.txt"));
    let out = run(
        dir.path(),
        &server.base_url(),
        &["--permission-mode", "ask", "--yes"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(dir.path().join("ran.txt").exists());
}

#[test]
fn plan_mode_refuses_the_command_and_a_deny_rule_holds_against_yes() {
    let dir = project();
    let server = mock_with(bash_scenario("echo ran > ran.txt"));
    let out = run(
        dir.path(),
        &server.base_url(),
        &["--permission-mode", "plan"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!dir.path().join("ran.txt").exists());
    let result = tool_result(&server);
    assert!(result.contains("Permission denied"), "{result}");
    // The request told the model the mode, after the prompt.
    let body = server.requests()[0].body.clone().unwrap().to_string();
    assert!(body.contains("Permission mode: plan"), "{body}");

    // A Claude Code user settings file's deny rule, taken as it is.
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    std::fs::write(
        dir.path().join(".claude/settings.json"),
        r#"{"permissions": {"deny": ["Bash(echo:*)"]}}"#,
    )
    .unwrap();
    let server = mock_with(bash_scenario("echo ran > ran.txt"));
    let out = run(dir.path(), &server.base_url(), &["--yes"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!dir.path().join("ran.txt").exists());
    let result = tool_result(&server);
    assert!(result.contains("Bash(echo:*)"), "{result}");
}

#[test]
fn bash_runs_in_the_sandbox_through_the_strata_binary() {
    if strata_runtime::permissions::sandbox::probe()
        == strata_runtime::permissions::sandbox::Availability::None
    {
        println!("skipped: this kernel has no Landlock; strata says so at start instead");
        return;
    }
    let dir = project();
    // Outside the project and outside the temp dirs the sandbox leaves writable.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let escape = outside.path().join("escape.txt");
    let command = format!(
        "echo inside > inside.txt; echo out > {}; echo status $?",
        escape.display()
    );
    let server = mock_with(bash_scenario(&command));
    let out = run(dir.path(), &server.base_url(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        dir.path().join("inside.txt").exists(),
        "the project is writable"
    );
    assert!(!escape.exists(), "a write outside the project was refused");
    let result = tool_result(&server);
    assert!(result.contains("Permission denied"), "{result}");
    assert!(
        result.contains("status 2") || result.contains("status 1"),
        "{result}"
    );
    assert!(
        !text(&out.stderr).contains("unsandboxed"),
        "{}",
        text(&out.stderr)
    );

    // Turned off in the user's config: it runs, and strata said so at start.
    std::fs::create_dir_all(dir.path().join(".config/strata")).unwrap();
    std::fs::write(
        dir.path().join(".config/strata/config.toml"),
        "[permissions.sandbox]\nenabled = false\n",
    )
    .unwrap();
    let server = mock_with(bash_scenario(&command));
    let out = run(dir.path(), &server.base_url(), &[]);
    assert!(escape.exists());
    assert!(
        text(&out.stderr).contains("bash commands run unsandboxed"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn strata_config_lists_each_rule_with_the_file_it_came_from() {
    let dir = project();
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    std::fs::write(
        dir.path().join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(git diff:*)"]}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join(".config/strata")).unwrap();
    std::fs::write(
        dir.path().join(".config/strata/config.toml"),
        "[permissions]\nmode = \"edits\"\ndeny = [\"Read(~/.aws/**)\"]\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir.path())
        .arg("config")
        .env("HOME", dir.path())
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    assert!(listed.contains("# permission mode: edits"), "{listed}");
    let claude = dir.path().join(".claude/settings.json");
    assert!(
        listed.contains(&format!("# allow Bash(git diff:*) — {}", claude.display())),
        "{listed}"
    );
    let config = dir.path().join(".config/strata/config.toml");
    assert!(
        listed.contains(&format!(
            "# deny Read(~/.aws/**) — [permissions] in {}",
            config.display()
        )),
        "{listed}"
    );
    assert!(listed.contains("# bash sandbox: "), "{listed}");
}

#[test]
fn an_mcp_server_named_in_the_sandbox_config_cannot_write_outside_the_project() {
    if strata_runtime::permissions::sandbox::probe()
        == strata_runtime::permissions::sandbox::Availability::None
    {
        println!("skipped: this kernel has no Landlock; strata says so at start instead");
        return;
    }
    let Some(python) = crate::support::mcp_python() else {
        return;
    };
    let dir = project();
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let escape = outside.path().join("escape.txt");
    let server_script = crate::support::fixture("mcp/write_server.py");
    let added = Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir.path())
        .args(["mcp", "add", "files", "--"])
        .args([&python, &server_script])
        .env("HOME", dir.path())
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    assert!(added.status.success(), "{}", text(&added.stderr));
    let scenario = |escape: &Path| {
        let toml = format!(
            "name = \"mcp-write\"\n[[turn]]\n\
             [[turn.tool_call]]\ntool = \"mcp__files__write\"\nargs = {{ path = \"inside.txt\", text = \"in\" }}\n\
             [[turn.tool_call]]\ntool = \"mcp__files__write\"\nargs = {{ path = {:?}, text = \"out\" }}\n\n\
             [[turn]]\ntext = \"done\"\n",
            escape.display().to_string()
        );
        strata_mock::Scenario::from_toml(&toml, "test").unwrap()
    };
    let config = dir.path().join(".config/strata/config.toml");
    let user_config = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{user_config}\n[permissions.sandbox]\nmcp_servers = [\"files\"]\n"),
    )
    .unwrap();

    let server = mock_with(scenario(&escape));
    let out = run(dir.path(), &server.base_url(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result = tool_result(&server);
    assert!(
        dir.path().join("inside.txt").exists(),
        "the project stays writable: {result}"
    );
    assert!(!escape.exists(), "the write outside was refused: {result}");
    assert!(result.contains("refused"), "{result}");

    // The same server not named: it writes where it likes, which is what the sandbox stopped.
    std::fs::write(&config, &user_config).unwrap();
    let server = mock_with(scenario(&escape));
    let out = run(dir.path(), &server.base_url(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(escape.exists(), "{}", tool_result(&server));
}
