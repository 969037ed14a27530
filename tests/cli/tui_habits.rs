//! Pi's habits in the terminal UI, driven through tmux against strata-mock: Ctrl+P and
//! Shift+Tab, `!cmd` / `!!cmd`, `@` completion, `/session`, `/copy`, `/settings`, `/share`,
//! the start-up header and footer, and the first run without credentials with `/login`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use strata_mock::{MockConfig, MockServer, Scenario};

use crate::support::tmux_available;
use crate::tui::{Tmux, project, quoted, strata_command_on, type_line};

const ANSWERS: &str = r#"
name = "tui-habits"

[[turn]]
text = "The command printed **hello-from-shell**."

[[turn]]
text = "Second answer."
"#;

fn mock() -> MockServer {
    let server = MockServer::start_in_thread(MockConfig::new()).expect("mock starts");
    server.load_scenario(Scenario::from_toml(ANSWERS, "habits.toml").expect("scenario parses"));
    server
}

const LIMIT: Duration = Duration::from_secs(30);

/// Every `*.jsonl` under `dir`.
fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn keys_shell_commands_and_the_header_and_footer_work_as_pi_users_expect() {
    if !tmux_available() {
        return;
    }
    let server = mock();
    let dir = project();
    // A checkout on a branch, as git writes it (no git process is needed to read it).
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/feature-x\n").unwrap();
    let tmux = Tmux::new();
    let command = strata_command_on(
        dir.path(),
        &server.base_url(),
        "anthropic/claude-sonnet-4-5",
    );
    tmux.start(dir.path(), &command);
    // The header: version, model and what was loaded; the footer: directory and branch.
    tmux.wait_for_all(
        "the header and footer",
        LIMIT,
        &[
            &format!(
                "strata {} · anthropic/claude-sonnet-4-5",
                env!("CARGO_PKG_VERSION")
            ),
            "instructions: ~/AGENTS.md",
            "MCP servers: none",
            "│ ~ (feature-x)",
            "thinking medium",
        ],
    );

    // Shift+Tab steps the thinking level; Ctrl+P moves to the next model with a key (the
    // session's provider: the flag's key), saying what the switch does to the cache.
    tmux.ok(&["send-keys", "-t", "strata", "BTab"]);
    tmux.wait_for_all("thinking high", LIMIT, &["thinking high"]);
    tmux.ok(&["send-keys", "-t", "strata", "C-p"]);
    let switched = tmux.wait_for_all(
        "the model switch",
        LIMIT,
        &[
            "· model → anthropic/",
            "nothing is cached yet",
            "· model: anthropic/",
        ],
    );
    let footer = switched
        .lines()
        .find(|line| line.contains(" · thinking "))
        .unwrap_or_else(|| panic!("no footer: {switched}"));
    assert!(!footer.contains("claude-sonnet-4-5 "), "{footer}");

    // !cmd: its output joins the context; !!cmd: shown, kept, never sent.
    type_line(&tmux, "!echo hello-from-shell");
    tmux.wait_for_all(
        "the shell output",
        LIMIT,
        &["✓ ! echo hello-from-shell", "│ hello-from-shell"],
    );
    type_line(&tmux, "!!echo secret-local");
    tmux.wait_for_all(
        "the local output",
        LIMIT,
        &["!! (not sent to the model)", "│ secret-local"],
    );
    type_line(&tmux, "what did the command print?");
    tmux.wait_for_all(
        "the answer",
        LIMIT,
        &["The command printed hello-from-shell."],
    );
    let requests = server.requests();
    let body = requests[0]
        .body
        .as_ref()
        .expect("body recorded")
        .to_string();
    assert!(body.contains("hello-from-shell"), "{body}");
    assert!(!body.contains("secret-local"), "{body}");
    // Esc stops a command as it stops a run.
    type_line(&tmux, "!sleep 30; echo never");
    tmux.wait_for_all(
        "the command running",
        LIMIT,
        &["running sleep 30; echo never"],
    );
    tmux.ok(&["send-keys", "-t", "strata", "Escape"]);
    tmux.wait_for_all("the command stopped", LIMIT, &["✗ ! sleep 30; echo never"]);
    // The session records Pi's bashExecution messages, the second excluded.
    let files = session_files(&dir.path().join(".strata/sessions"));
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let bash: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|entry| entry["message"]["role"] == "bashExecution")
        .collect();
    assert_eq!(bash.len(), 3, "{text}");
    assert_eq!(bash[0]["message"]["command"], "echo hello-from-shell");
    assert_eq!(bash[0]["message"]["output"], "hello-from-shell");
    assert_eq!(bash[0]["message"]["exitCode"], 0);
    assert_eq!(bash[0]["message"].get("excludeFromContext"), None);
    assert_eq!(bash[1]["message"]["excludeFromContext"], true);
    assert_eq!(bash[2]["message"]["cancelled"], true);
    assert_eq!(bash[2]["message"]["exitCode"], serde_json::Value::Null);
}

#[test]
fn completion_session_copy_settings_and_share_in_a_real_terminal() {
    if !tmux_available() {
        return;
    }
    let server = mock();
    let dir = project();
    let tmux = Tmux::new();
    let command = strata_command_on(
        dir.path(),
        &server.base_url(),
        "anthropic/claude-sonnet-4-5",
    );
    tmux.start(dir.path(), &command);
    // OSC 52 from the program reaches tmux's paste buffer.
    tmux.ok(&["set-option", "-s", "set-clipboard", "on"]);
    tmux.wait_for_all(
        "the editor",
        LIMIT,
        &["prompt (/ for commands)", "no requests yet"],
    );

    // @ offers the project's files; Tab puts the best match in.
    tmux.ok(&["send-keys", "-t", "strata", "-l", "what is in @greet"]);
    tmux.wait_for_all("the suggestions", LIMIT, &["@ src/greeting.rs"]);
    tmux.ok(&["send-keys", "-t", "strata", "Tab"]);
    tmux.wait_for_all("the completion", LIMIT, &["❯ what is in @src/greeting.rs"]);
    tmux.ok(&["send-keys", "-t", "strata", "Enter"]);
    tmux.wait_for_all(
        "the answer",
        LIMIT,
        &["The command printed hello-from-shell."],
    );
    // Pi's editor sends the reference as typed; the model reads the file itself.
    let body = server.requests()[0].body.as_ref().unwrap().to_string();
    assert!(body.contains("what is in @src/greeting.rs"), "{body}");

    type_line(&tmux, "/copy");
    tmux.wait_for_all("the copy notice", LIMIT, &["copied the last answer"]);
    tmux.wait_for("the clipboard", LIMIT, |_| {
        tmux.run(&["show-buffer"])
            .stdout
            .starts_with(b"The command printed **hello-from-shell**.")
    });

    type_line(&tmux, "/session");
    tmux.wait_for_all(
        "the session facts",
        LIMIT,
        &[
            "  file      ",
            "  id        ",
            "messages  1 user · 1 assistant",
            "  cost      $",
        ],
    );

    type_line(&tmux, "/settings");
    tmux.wait_for_all(
        "the settings",
        LIMIT,
        &[
            "thinking level: medium",
            "theme: dark",
            "auto-compaction: on",
        ],
    );
    tmux.ok(&["send-keys", "-t", "strata", "Down"]);
    tmux.ok(&["send-keys", "-t", "strata", "Enter"]);
    tmux.wait_for_all("the new theme", LIMIT, &["theme: light"]);
    tmux.ok(&["send-keys", "-t", "strata", "Escape"]);
    // Typing before the panel has closed would reach the terminal as Esc+/ (Alt+/).
    tmux.wait_for("the settings closed", LIMIT, |screen| {
        !screen.contains("Settings (Enter")
    });
    let config = dir.path().join(".config/strata/config.toml");
    let saved: toml::Table = std::fs::read_to_string(&config).unwrap().parse().unwrap();
    assert_eq!(saved["theme"].as_str(), Some("light"));

    type_line(&tmux, "/share");
    tmux.wait_for_all(
        "the export",
        LIMIT,
        &["strata uploads nothing", "· exported to "],
    );
    type_line(&tmux, "/hotkeys");
    tmux.wait_for_all(
        "the keys",
        LIMIT,
        &["Ctrl+P       next model", "Shift+Tab    next thinking"],
    );
}

/// `strata` in `dir` with no credentials anywhere: a clean environment, HOME in `dir`.
fn bare_command(dir: &Path, args: &str) -> String {
    format!(
        "env -i PATH={} HOME={} TERM=xterm-256color LANG=C.UTF-8 {} {args} 2>{}; echo $? > {}",
        quoted(&std::env::var("PATH").unwrap_or_default()),
        quoted(&dir.display().to_string()),
        quoted(env!("CARGO_BIN_EXE_strata")),
        quoted(&dir.join("stderr.log").display().to_string()),
        quoted(&dir.join("exit-status").display().to_string()),
    )
}

#[test]
fn without_credentials_the_first_screen_says_what_to_do_and_login_stores_a_key_for_the_next_run() {
    if !tmux_available() {
        return;
    }
    let server = mock();
    let dir = project();
    let tmux = Tmux::new();
    tmux.start(dir.path(), &bare_command(dir.path(), ""));
    // Keep the pane after strata exits, to see it leave.
    tmux.ok(&["set-option", "-t", "strata", "remain-on-exit", "on"]);
    let config = dir.path().join(".config/strata/config.toml");
    tmux.wait_for_all(
        "the first screen",
        LIMIT,
        &[
            "strata needs a key for a model provider",
            "export ANTHROPIC_API_KEY=",
            "/login PROVIDER KEY",
            "config.toml",
            "anthropic ANTHROPIC_API_KEY|",
            "no credentials yet",
        ],
    );
    type_line(&tmux, "/login anthropic sk-from-login");
    // Either the session opens on a model chosen from the new key, or strata says how to
    // choose one; both after the key is stored.
    tmux.wait_for("the key stored", LIMIT, |screen| {
        screen.contains("stored anthropic's key") || screen.contains("· thinking ")
    });
    let text = std::fs::read_to_string(&config).unwrap();
    let saved: toml::Table = text.parse().unwrap();
    assert_eq!(
        saved["providers"]["anthropic"]["api_key"].as_str(),
        Some("sk-from-login")
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&config).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    tmux.ok(&["send-keys", "-t", "strata", "C-c"]);
    tmux.ok(&["send-keys", "-t", "strata", "C-c"]);
    tmux.wait_for("strata to exit", LIMIT, |_| {
        dir.path().join("exit-status").exists()
    });
    drop(tmux);

    // The next run, still with nothing in the environment, uses the stored key.
    let next = Tmux::new();
    let args = format!(
        "--model anthropic/claude-sonnet-4-5 --base-url {}",
        quoted(&server.base_url())
    );
    next.start(dir.path(), &bare_command(dir.path(), &args));
    next.wait_for_all(
        "the editor",
        LIMIT,
        &["prompt (/ for commands)", "no requests yet"],
    );
    type_line(&next, "hello");
    next.wait_for_all(
        "the answer",
        LIMIT,
        &["The command printed hello-from-shell."],
    );
    assert_eq!(server.requests().len(), 1);
}
