//! Tool processes of a run: they die with strata however it stops, they do not see provider
//! keys, and they leave no temporary files behind.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use crate::support::{mock_with, project};

/// A scenario whose one turn runs `command` with bash, then answers "done".
fn bash_scenario(command: &str) -> strata_mock::Scenario {
    let toml = format!(
        "name = \"bash\"\n[[turn]]\ntext = \"Running it.\"\n[[turn.tool_call]]\ntool = \"bash\"\nargs = {{ command = {command:?} }}\n\n[[turn]]\ntext = \"done\"\n"
    );
    strata_mock::Scenario::from_toml(&toml, "test").unwrap()
}

fn strata_command(dir: &Path, temp: &Path, url: &str, session: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_strata"));
    command
        .current_dir(dir)
        .args([
            "-p",
            "go",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--base-url",
            url,
            "--session",
            session.to_str().unwrap(),
        ])
        .env("HOME", dir)
        .env("TMPDIR", temp)
        .env("ANTHROPIC_API_KEY", "sk-ant-test-secret-1234")
        .env("OPENAI_API_KEY", "sk-openai-test-secret")
        .env("MY_TOOL_SETTING", "visible")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .env_remove("STRATA_API_KEY");
    command
}

fn wait_for_file(path: &Path) -> String {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn group_alive(pgid: i32) -> bool {
    killpg(Pid::from_raw(pgid), None).is_ok()
}

#[test]
fn a_signal_during_a_bash_tool_kills_its_process_group_and_removes_temp_files() {
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        let dir = project();
        let temp = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("group.pid");
        // A background job in the same group, and a foreground sleep: both must die.
        let script = format!(
            "sleep 300 & echo $$ > {}; seq 1 100000; sleep 300",
            pid_file.display()
        );
        let server = mock_with(bash_scenario(&script));
        let session = dir.path().join("s.jsonl");
        let mut child = strata_command(dir.path(), temp.path(), &server.base_url(), &session)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pgid: i32 = wait_for_file(&pid_file).trim().parse().unwrap();
        assert!(group_alive(pgid));
        // The full-output file of `seq` is being written to the run's temp dir.
        std::thread::sleep(Duration::from_millis(300));
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(128 + signal as i32), "{signal}");
        let start = Instant::now();
        while group_alive(pgid) && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !group_alive(pgid),
            "{signal}: the tool's group outlived strata"
        );
        let left: Vec<_> = std::fs::read_dir(temp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "{signal}: temp files left: {left:?}");
        // The session is intact up to where the run was stopped.
        let text = std::fs::read_to_string(&session).unwrap();
        assert!(
            text.lines()
                .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
        );
    }
}

#[test]
fn sigkill_of_strata_during_a_bash_tool_leaves_no_orphan() {
    let dir = project();
    let temp = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("group.pid");
    // A background job that outlives its shell, and a foreground sleep: SIGKILL runs no
    // handler in strata, so only the watchdog can end them.
    let script = format!("sleep 300 & echo $$ > {}; sleep 300", pid_file.display());
    let server = mock_with(bash_scenario(&script));
    let session = dir.path().join("s.jsonl");
    let mut child = strata_command(dir.path(), temp.path(), &server.base_url(), &session)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pgid: i32 = wait_for_file(&pid_file).trim().parse().unwrap();
    assert!(group_alive(pgid));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(Signal::SIGKILL as i32)
    );
    let start = Instant::now();
    while group_alive(pgid) && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !group_alive(pgid),
        "the tool's group outlived a SIGKILLed strata"
    );
}

#[test]
fn tool_commands_do_not_inherit_provider_keys_unless_allowed() {
    let dir = project();
    let temp = tempfile::tempdir().unwrap();
    let server = mock_with(bash_scenario("env"));
    let session = dir.path().join("s.jsonl");
    let out = strata_command(dir.path(), temp.path(), &server.base_url(), &session)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stored = std::fs::read_to_string(&session).unwrap();
    assert!(stored.contains("MY_TOOL_SETTING=visible"), "env ran");
    assert!(
        !stored.contains("sk-ant-test-secret-1234"),
        "the key reached the session"
    );
    assert!(!stored.contains("sk-openai-test-secret"));

    // A project cannot pass a key on, even a trusted one: only the user's config can.
    crate::support::project_config(dir.path(), "tool_env_allow = [\"OPENAI_API_KEY\"]\n");
    let from_project = dir.path().join("project.jsonl");
    let out = strata_command(dir.path(), temp.path(), &server.base_url(), &from_project)
        .arg("--trust")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stored = std::fs::read_to_string(&from_project).unwrap();
    assert!(stored.contains("MY_TOOL_SETTING=visible"), "env ran");
    assert!(
        !stored.contains("sk-openai-test-secret"),
        "a project passed a key on"
    );
    std::fs::remove_file(dir.path().join(".strata/config.toml")).unwrap();

    // Passed on on purpose: `tool_env_allow` in the user's config.
    std::fs::create_dir_all(dir.path().join(".config/strata")).unwrap();
    std::fs::write(
        dir.path().join(".config/strata/config.toml"),
        "tool_env_allow = [\"OPENAI_API_KEY\"]\n",
    )
    .unwrap();
    let allowed = dir.path().join("allowed.jsonl");
    let out = strata_command(dir.path(), temp.path(), &server.base_url(), &allowed)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stored = std::fs::read_to_string(&allowed).unwrap();
    assert!(stored.contains("OPENAI_API_KEY=sk-openai-test-secret"));
    assert!(!stored.contains("sk-ant-test-secret-1234"));
}

#[test]
fn a_long_output_leaves_no_file_after_a_normal_exit() {
    let dir = project();
    let temp = tempfile::tempdir().unwrap();
    let server = mock_with(bash_scenario("seq 1 100000"));
    let session = dir.path().join("s.jsonl");
    let out = strata_command(dir.path(), temp.path(), &server.base_url(), &session)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stored = std::fs::read_to_string(&session).unwrap();
    assert!(stored.contains("fullOutputPath"), "the output was spilled");
    let left: Vec<_> = std::fs::read_dir(temp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "temp files left: {left:?}");
}
