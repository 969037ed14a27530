//! `strata mcp` and MCP servers in a print-mode run of the binary.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::{demo_mock, mcp_python as python, project, text, workspace};

fn strata_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir)
        .args(args)
        .env("HOME", dir)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .output()
        .expect("strata runs")
}

fn print_run(dir: &Path, url: &str) -> Output {
    strata_in(
        dir,
        &[
            "-p",
            "fix the greeting",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--base-url",
            url,
            "--api-key",
            "k",
        ],
    )
}

#[test]
fn a_server_that_cannot_start_is_listed_as_failed_and_reported_by_a_run_that_still_works() {
    let dir = project();
    let added = strata_in(
        dir.path(),
        &[
            "mcp",
            "add",
            "broken",
            "--",
            "/nonexistent/strata-test-mcp-server",
        ],
    );
    assert!(added.status.success(), "{}", text(&added.stderr));
    let config = std::fs::read_to_string(dir.path().join(".config/strata/config.toml")).unwrap();
    assert!(config.contains("[mcp.servers.broken]"), "{config}");

    let list = strata_in(dir.path(), &["mcp", "list"]);
    assert!(!list.status.success(), "an enabled server did not connect");
    let stdout = text(&list.stdout);
    assert!(stdout.contains("broken  failed  0 tools"), "{stdout}");
    assert!(stdout.contains("cannot start"), "{stdout}");

    let shown = text(&strata_in(dir.path(), &["config"]).stdout);
    assert!(
        shown.contains("mcp server broken = /nonexistent/strata-test-mcp-server"),
        "{shown}"
    );

    let server = demo_mock();
    let run = print_run(dir.path(), &server.base_url());
    let stderr = text(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(
        stderr.contains("MCP server \"broken\" is not connected"),
        "{stderr}"
    );

    let removed = strata_in(dir.path(), &["mcp", "remove", "broken"]);
    assert!(removed.status.success(), "{}", text(&removed.stderr));
    let again = strata_in(dir.path(), &["mcp", "remove", "broken"]);
    assert!(!again.status.success());
}

#[test]
fn project_mcp_files_wait_for_trust() {
    let dir = project();
    std::fs::write(
        dir.path().join(".mcp.json"),
        r#"{"mcpServers": {"local": {"command": "/nonexistent/local-mcp"}}}"#,
    )
    .unwrap();
    let list = strata_in(dir.path(), &["mcp", "list"]);
    let stdout = text(&list.stdout);
    assert!(
        stdout.contains("not read (project not trusted)"),
        "{stdout}"
    );
    assert!(!stdout.contains("local  failed"), "{stdout}");
    let trusted = format!(
        "trusted_projects = [{:?}]\n",
        dir.path().display().to_string()
    );
    std::fs::create_dir_all(dir.path().join(".config/strata")).unwrap();
    std::fs::write(dir.path().join(".config/strata/config.toml"), trusted).unwrap();
    let list = strata_in(dir.path(), &["mcp", "list"]);
    let stdout = text(&list.stdout);
    assert!(stdout.contains("local  failed"), "{stdout}");
    assert!(stdout.contains(".mcp.json"), "{stdout}");
}

#[test]
fn a_python_sdk_server_s_tools_reach_the_request() {
    let Some(python) = python() else {
        return;
    };
    let dir = project();
    let script = workspace().join("crates/strata-mcp/tests/fixtures/churn_server.py");
    let added = strata_in(
        dir.path(),
        &[
            "mcp",
            "add",
            "churn",
            "--",
            python.to_str().unwrap(),
            script.to_str().unwrap(),
        ],
    );
    assert!(added.status.success(), "{}", text(&added.stderr));
    let list = strata_in(dir.path(), &["mcp", "list"]);
    let stdout = text(&list.stdout);
    assert!(list.status.success(), "{stdout}{}", text(&list.stderr));
    assert!(stdout.contains("churn  connected  4 tools"), "{stdout}");
    // The default exposure says why: four small tools cost less declared than searched.
    assert!(
        stdout.contains("auto: declared (declared ~0.2k, mcp_tool_search ~"),
        "{stdout}"
    );

    let server = demo_mock();
    let run = print_run(dir.path(), &server.base_url());
    assert!(run.status.success(), "{}", text(&run.stderr));
    let requests = server.requests();
    let body = requests[0].body.as_ref().expect("bodies are recorded");
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    let first_mcp = names.iter().position(|n| n.starts_with("mcp__")).unwrap();
    assert_eq!(
        &names[first_mcp..first_mcp + 4],
        [
            "mcp__churn__alpha",
            "mcp__churn__beta",
            "mcp__churn__churn",
            "mcp__churn__slow"
        ],
        "after the built-ins, in the server's order: {names:?}"
    );
}

#[test]
fn strata_config_masks_mcp_credentials_and_header_values() {
    let dir = tempfile::tempdir().unwrap();
    let config_dir = dir.path().join(".config/strata");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(
        config_dir.join("config.toml"),
        "[providers.anthropic]\nheaders = { x-team = \"hdr-secret\" }\n\
         [mcp.servers.gh]\ncommand = \"gh-server\"\n\
         args = [\"--token\", \"arg-secret\", \"--api-key=eq-secret\", \"--verbose\"]\n\
         env = { GITHUB_TOKEN = \"env-secret\" }\n",
    )
    .unwrap();
    for args in [&["config"][..], &["config", "--json"][..]] {
        let out = strata_in(dir.path(), args);
        let shown = text(&out.stdout);
        assert!(out.status.success(), "{}", text(&out.stderr));
        for secret in ["hdr-secret", "arg-secret", "eq-secret", "env-secret"] {
            assert!(!shown.contains(secret), "{args:?} shows {secret}: {shown}");
        }
        assert!(
            shown.contains("gh-server --token *** --api-key=*** --verbose"),
            "{shown}"
        );
    }
}

#[test]
fn a_project_mcp_server_gets_no_provider_key_unless_the_users_config_hands_it_over() {
    let Some(python) = python() else {
        return;
    };
    let dir = project();
    let key = "sk-ant-test-must-not-leak";
    let script = workspace().join("tests/fixtures/mcp/env_server.py");
    let server_json = serde_json::json!({ "command": python, "args": [script] });
    // A trusted project's own server: it runs, without the key.
    std::fs::write(
        dir.path().join(".mcp.json"),
        serde_json::json!({ "mcpServers": { "envs": server_json } }).to_string(),
    )
    .unwrap();
    let user_config = dir.path().join(".config/strata/config.toml");
    std::fs::create_dir_all(user_config.parent().unwrap()).unwrap();
    let trusted = format!(
        "trusted_projects = [{:?}]\n",
        dir.path().display().to_string()
    );
    std::fs::write(&user_config, &trusted).unwrap();
    let scenario = strata_mock::Scenario::from_toml(
        "name = \"env\"\n[[turn]]\n[[turn.tool_call]]\ntool = \"mcp__envs__env\"\n\
         args = { name = \"ANTHROPIC_API_KEY\" }\n\n[[turn]]\ntext = \"done\"\n",
        "test",
    )
    .unwrap();
    let result_of = |server: &strata_mock::MockServer| -> String {
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "a call and the answer after it");
        requests[1].body.as_ref().unwrap()["messages"].to_string()
    };
    let server = crate::support::mock_with(scenario.clone());
    let run = crate::support::go_with_env_key(dir.path(), &server.base_url(), key, &[]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let seen = result_of(&server);
    assert!(seen.contains("ANTHROPIC_API_KEY unset"), "{seen}");
    assert!(!seen.contains(key), "{seen}");

    // The user's own entry names the variable in its env: handed over.
    std::fs::remove_file(dir.path().join(".mcp.json")).unwrap();
    std::fs::write(
        &user_config,
        format!(
            "{trusted}\n[mcp.servers.envs]\ncommand = {:?}\nargs = [{:?}]\n\
             env = {{ ANTHROPIC_API_KEY = \"${{ANTHROPIC_API_KEY}}\" }}\n",
            python.display().to_string(),
            script.display().to_string()
        ),
    )
    .unwrap();
    let server = crate::support::mock_with(scenario);
    let run = crate::support::go_with_env_key(dir.path(), &server.base_url(), key, &[]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let seen = result_of(&server);
    assert!(seen.contains(&format!("ANTHROPIC_API_KEY={key}")), "{seen}");
}
