//! The terminal UI driven through a real terminal (tmux), against strata-mock.
//!
//! tmux runs the built `strata` in a detached pane of a fixed size; the test types a prompt,
//! presses Enter, and reads the pane back with `capture-pane`. Skipped, with a message, where
//! tmux is not installed.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use strata_mock::{MockConfig, MockServer, Scenario};

use crate::support::{tmux_available, trusted_project_config};

/// One read of a file, then a markdown answer; the answer to the second prompt.
const SCENARIO: &str = r#"
name = "tui-read-and-answer"

[[turn]]
thinking = "The user asks about the greeting. Read the file first."
text = "Let me read it."
[[turn.tool_call]]
tool = "read"
args = { path = "src/greeting.rs" }

[[turn]]
text = "**Found it**: the greeting says `Helo` instead of `Hello`."

[[turn]]
text = "Not yet: `Helo` is still there."
"#;

/// A tmux server of its own (its own socket), killed when dropped.
pub(crate) struct Tmux {
    socket: String,
}

impl Tmux {
    /// A server of its own per test: tests run in parallel in one process.
    pub(crate) fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self {
            socket: format!("strata-tui-test-{}-{n}", std::process::id()),
        }
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("-u")
            .args(args)
            .env("LANG", "C.UTF-8")
            .env("LC_ALL", "C.UTF-8")
            .output()
            .expect("tmux runs")
    }

    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    pub(crate) fn capture(&self) -> String {
        self.ok(&["capture-pane", "-p", "-t", "strata"])
    }

    /// Captures the pane until `done` holds, or fails after `limit` showing the last screen.
    pub(crate) fn wait_for(
        &self,
        what: &str,
        limit: Duration,
        done: impl Fn(&str) -> bool,
    ) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if done(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < limit,
                "timed out waiting for {what}; the pane shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Tmux {
    /// Captures the pane until every one of `needles` is on it. A capture can catch a frame
    /// half drawn, so whatever the test asserts on is waited for rather than checked once.
    /// Starts `command` in a detached 120×40 pane named `strata`, in `dir`.
    pub(crate) fn start(&self, dir: &Path, command: &str) {
        let cwd = dir.display().to_string();
        self.ok(&[
            "new-session",
            "-d",
            "-s",
            "strata",
            "-x",
            "120",
            "-y",
            "40",
            "-c",
            &cwd,
            command,
        ]);
    }

    pub(crate) fn wait_for_all(&self, what: &str, limit: Duration, needles: &[&str]) -> String {
        self.wait_for(what, limit, |screen| {
            needles.iter().all(|needle| screen.contains(needle))
        })
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// Types a line into the editor and presses Enter.
pub(crate) fn type_line(tmux: &Tmux, text: &str) {
    tmux.ok(&["send-keys", "-t", "strata", "-l", text]);
    tmux.ok(&["send-keys", "-t", "strata", "Enter"]);
}

/// A mock server playing [`SCENARIO`].
pub(crate) fn scenario_mock() -> MockServer {
    let server = MockServer::start_in_thread(MockConfig::new()).expect("mock starts");
    server.load_scenario(Scenario::from_toml(SCENARIO, "tui.toml").expect("scenario parses"));
    server
}

/// Single-quotes `text` for the shell tmux starts the command with.
pub(crate) fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

pub(crate) fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/greeting.rs"),
        "pub fn greet() -> &'static str { \"Helo\" }\n",
    )
    .unwrap();
    // Project rules long enough that the system prompt passes the provider's minimum cacheable
    // length, so the second request reads the first one's prefix from the cache.
    let rules: String = (1..=120)
        .map(|n| {
            format!("- Rule {n}: keep functions short, name things plainly, test behaviour.\n")
        })
        .collect();
    std::fs::write(
        dir.path().join("AGENTS.md"),
        format!("# Project rules\n\n{rules}"),
    )
    .unwrap();
    dir
}

fn strata_command(dir: &Path, url: &str) -> String {
    strata_command_on(dir, url, "anthropic/claude-sonnet-4-5")
}

pub(crate) fn strata_command_on(dir: &Path, url: &str, model: &str) -> String {
    let parts = [
        "env".to_owned(),
        "-u".into(),
        "XDG_CONFIG_HOME".into(),
        "-u".into(),
        "STRATA_MODEL".into(),
        format!("HOME={}", quoted(&dir.display().to_string())),
        "TERM=xterm-256color".into(),
        quoted(env!("CARGO_BIN_EXE_strata")),
        "--model".into(),
        model.into(),
        "--base-url".into(),
        quoted(url),
        "--api-key".into(),
        "k".into(),
        // strata's own error line, if it fails, read back by the test.
        format!(
            "2>{}",
            quoted(&dir.join("stderr.log").display().to_string())
        ),
    ];
    format!(
        "{}; echo $? > {}",
        parts.join(" "),
        quoted(&dir.join("exit-status").display().to_string())
    )
}

#[test]
fn a_prompt_typed_in_a_real_terminal_streams_the_answer_and_fills_the_footer() {
    if !tmux_available() {
        return;
    }
    let server = scenario_mock();
    let dir = project();
    let tmux = Tmux::new();
    let command = strata_command(dir.path(), &server.base_url());
    tmux.start(dir.path(), &command);
    // Keep the pane after strata exits, to read how it ended.
    tmux.ok(&["set-option", "-t", "strata", "remain-on-exit", "on"]);

    // The editor is drawn at once; the footer fills in when the session is attached.
    tmux.wait_for_all(
        "the editor and footer",
        Duration::from_secs(20),
        &[
            "prompt (/ for commands)",
            "anthropic/claude-sonnet-4-5 · thinking",
            "no requests yet",
        ],
    );

    tmux.ok(&[
        "send-keys",
        "-t",
        "strata",
        "-l",
        "what does the greeting say?",
    ]);
    tmux.ok(&["send-keys", "-t", "strata", "Enter"]);
    // The prompt, the collapsed thinking, the tool call with its argument and output, the
    // answer; the footer: model and thinking, context, the last request's tokens, the
    // session's rate and cost. Two requests: the second read the first one's prefix from the
    // cache.
    let done = tmux.wait_for_all(
        "the answer",
        Duration::from_secs(30),
        &[
            "❯ what does the greeting say?",
            "∴ thinking (1 line, Ctrl+T shows)",
            "✓ read path: src/greeting.rs",
            "│ pub fn greet()",
            "Found it: the greeting says Helo instead of Hello.",
            "prompt (/ for commands)",
            "anthropic/claude-sonnet-4-5 · thinking",
            "context ",
            " cache hit · $",
        ],
    );
    let last = done
        .lines()
        .find(|line| line.contains(" last: "))
        .unwrap_or_else(|| panic!("no footer line: {done}"));
    assert!(last.contains(" in · "), "{last}");
    assert!(last.contains(" cache read · "), "{last}");
    assert!(last.contains(" cache write · "), "{last}");
    assert!(last.contains(" out · $"), "{last}");
    assert!(last.contains("session: "), "{last}");
    assert!(last.contains("cache hit · $"), "{last}");
    assert!(!last.contains("cache broke"), "{last}");
    assert!(!last.contains(" 0 cache read"), "{last}");
    assert!(!last.contains("session: 0% cache hit"), "{last}");
    assert_eq!(server.requests().len(), 2);

    // Slash commands: /context lists the chapters; /tools says what removing bash costs on this
    // provider (Claude Sonnet 4.5 has no mid-conversation system messages, so the tools array
    // is rewritten), and the next request's footer names the chapter where the cache broke.
    type_line(&tmux, "/context");
    tmux.wait_for_all(
        "/context",
        Duration::from_secs(10),
        &[
            "context: the next request",
            "  tools ",
            "  system ",
            "  messages ",
            "breakpoints: after tools",
            "last request: extended the one before at byte",
        ],
    );
    type_line(&tmux, "/tools -bash");
    tmux.wait_for_all(
        "the cost of /tools",
        Duration::from_secs(10),
        &["tools -bash: the tools array stays; a reminder goes with the next message"],
    );
    type_line(&tmux, "/name tui test");
    type_line(&tmux, "is it fixed now?");
    // The row has no mid-conversation system messages, so the tool change goes to the model
    // as a marked reminder after the user's message (`system_reminders`, the table's
    // default): the tools array and the system prompt stay, the request reads the previous
    // prefix from the cache, and the scripted answer plays (the reminder is the model's to
    // read, never shown as the user's words or echoed back).
    let second = tmux.wait_for_all(
        "the second answer",
        Duration::from_secs(30),
        &[
            "❯ is it fixed now?",
            "Not yet: Helo is still there.",
            "“tui test”",
            "prompt (/ for commands)",
        ],
    );
    // (/context's explanation above names the mechanism; the reminder itself never shows.)
    assert!(
        !second
            .lines()
            .any(|line| line.trim_start().starts_with("<system-reminder>")),
        "{second}"
    );
    let last = second
        .lines()
        .find(|line| line.contains(" last: "))
        .unwrap_or_else(|| panic!("no footer line: {second}"));
    assert!(!last.contains("cache broke"), "{last}");
    assert!(!last.contains(" 0 cache read"), "{last}");
    assert_eq!(server.requests().len(), 3);
    // The request after the tool change reads the whole previous request from the cache.
    let requests = server.requests();
    let accounting = |n: usize| requests[n].cache.expect("accounted");
    assert_eq!(
        requests[2].turn,
        Some(2),
        "the scripted second answer played"
    );
    assert!(
        accounting(2).cache_read >= accounting(1).input_tokens * 95 / 100,
        "read {} of the previous {} tokens",
        accounting(2).cache_read,
        accounting(1).input_tokens
    );

    // /new starts an empty session; /resume lists this directory's sessions from the store
    // (named, with their first message) and brings the first one back with its transcript.
    type_line(&tmux, "/new");
    tmux.wait_for("the new session", Duration::from_secs(10), |screen| {
        screen.contains("· new session") && !screen.contains("what does the greeting say?")
    });
    type_line(&tmux, "/resume");
    tmux.wait_for_all(
        "the session list",
        Duration::from_secs(10),
        &["Resume a session", "tui test — what does the greeting say?"],
    );
    tmux.ok(&["send-keys", "-t", "strata", "-l", "greeting"]);
    tmux.ok(&["send-keys", "-t", "strata", "Enter"]);
    tmux.wait_for_all(
        "the resumed session",
        Duration::from_secs(10),
        &[
            "· resumed",
            "❯ what does the greeting say?",
            "❯ is it fixed now?",
            "“tui test”",
        ],
    );

    // Ctrl+C twice quits, leaving the terminal as it was and exiting with success.
    tmux.ok(&["send-keys", "-t", "strata", "C-c"]);
    tmux.ok(&["send-keys", "-t", "strata", "C-c"]);
    // strata's exit status, written by the shell that started it: tmux 3.3 sometimes marks
    // the pane dead before it has reaped the process and never fills #{pane_dead_status}.
    let status_file = dir.path().join("exit-status");
    let start = Instant::now();
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file)
            && text.ends_with('\n')
        {
            break text.trim().to_owned();
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "strata did not exit; pane:\n{}",
            tmux.capture()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        status,
        "0",
        "strata exited with {status}; stderr: {}; pane:\n{}",
        std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default(),
        tmux.capture()
    );
    tmux.wait_for("the pane to close", Duration::from_secs(10), |_| {
        tmux.ok(&["display-message", "-p", "-t", "strata", "#{pane_dead}"])
            .trim()
            == "1"
    });
    // The alternate screen is gone: the pane shows the normal screen again.
    let after = tmux.capture();
    assert!(!after.contains("prompt (/ for commands)"), "{after}");
    // The session was written under HOME.
    let sessions = dir.path().join(".strata/sessions");
    assert!(sessions.exists(), "no session directory");
}

#[test]
fn an_idle_terminal_session_pings_its_cache_and_counts_the_ping() {
    if !tmux_available() {
        return;
    }
    let server = scenario_mock();
    let dir = project();
    // One ping, 1 s after the last request (5-minute lifetime, 299 s margin).
    trusted_project_config(
        dir.path(),
        "[cache]\nkeep_warm_margin_secs = 299\nkeep_warm_max_pings = 1\n",
    );
    let tmux = Tmux::new();
    // Thinking off: Sonnet 4.5's thinking budget would change with a one-token cap.
    let command = strata_command_on(
        dir.path(),
        &server.base_url(),
        "anthropic/claude-sonnet-4-5:off",
    );
    tmux.start(dir.path(), &command);
    tmux.wait_for_all(
        "the editor",
        Duration::from_secs(20),
        &["prompt (/ for commands)"],
    );
    type_line(&tmux, "what does the greeting say?");
    tmux.wait_for_all(
        "the answer",
        Duration::from_secs(30),
        &["Found it: the greeting says Helo instead of Hello."],
    );
    // The footer counts the ping with the session's cost.
    tmux.wait_for_all("the ping", Duration::from_secs(30), &["· 1 keep-warm ping"]);
    let records = server.requests();
    assert_eq!(records.len(), 3);
    let ping = &records[2];
    // Anthropic rows warm with `max_tokens: 0` (no output at all).
    assert_eq!(ping.body.as_ref().unwrap()["max_tokens"], 0);
    assert_eq!(
        ping.body.as_ref().unwrap()["messages"],
        records[1].body.as_ref().unwrap()["messages"],
        "the last request again"
    );
    assert!(ping.cache.unwrap().cache_read > 0);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(server.requests().len(), 3, "one ping, the configured limit");
}

/// A bash call the ask mode puts to the user, then an answer.
const ASKED: &str = r#"
name = "tui-permission"

[[turn]]
text = "Running it."
[[turn.tool_call]]
tool = "bash"
args = { command = "echo ran > ran.txt" }

[[turn]]
text = "Ran it."
"#;

#[test]
fn the_ask_mode_puts_the_call_to_the_user_and_alt_m_changes_the_mode() {
    if !tmux_available() {
        return;
    }
    let server = MockServer::start_in_thread(MockConfig::new()).expect("mock starts");
    server.load_scenario(Scenario::from_toml(ASKED, "tui.toml").expect("scenario parses"));
    let dir = project();
    let tmux = Tmux::new();
    let command = strata_command(dir.path(), &server.base_url())
        .replace(" --api-key k ", " --api-key k --permission-mode ask ");
    tmux.start(dir.path(), &command);
    tmux.wait_for_all(
        "the footer with the mode",
        Duration::from_secs(20),
        &["prompt (/ for commands)", "⏵ ask mode"],
    );
    type_line(&tmux, "run it");
    tmux.wait_for_all(
        "the question",
        Duration::from_secs(30),
        &[
            "Allow bash",
            "Allow once",
            "Always allow in this session",
            "Always allow in this project",
            "Deny, and say why",
        ],
    );
    assert!(
        !dir.path().join("ran.txt").exists(),
        "nothing ran before the answer"
    );
    tmux.ok(&["send-keys", "-t", "strata", "Enter"]);
    tmux.wait_for_all(
        "the answer",
        Duration::from_secs(30),
        &["allowed once", "Ran it."],
    );
    assert!(dir.path().join("ran.txt").exists());
    // Alt+M: ask → plan, shown in the footer at once.
    tmux.ok(&["send-keys", "-t", "strata", "M-m"]);
    tmux.wait_for_all("plan mode", Duration::from_secs(10), &["⏵ plan mode"]);
}

#[test]
fn an_extensions_command_typed_before_any_prompt_shows_its_text_and_asks_no_model() {
    if !tmux_available() {
        return;
    }
    let server = scenario_mock();
    let dir = project();
    crate::support::asker_extension(dir.path());
    let tmux = Tmux::new();
    tmux.start(dir.path(), &strata_command(dir.path(), &server.base_url()));
    tmux.wait_for_all(
        "the editor",
        Duration::from_secs(20),
        &["prompt (/ for commands)"],
    );
    // Started at launch in the background: the hint line offers the command once the
    // extension answered its handshake (retyping the last letter redraws it).
    tmux.ok(&["send-keys", "-t", "strata", "-l", "/echo"]);
    tmux.wait_for("the hint line", Duration::from_secs(20), |screen| {
        let shown = screen.contains("/echo says its arguments back (extension asker)");
        if !shown {
            tmux.ok(&["send-keys", "-t", "strata", "BSpace"]);
            tmux.ok(&["send-keys", "-t", "strata", "-l", "o"]);
        }
        shown
    });
    type_line(&tmux, " hi there");
    tmux.wait_for_all(
        "the command's text",
        Duration::from_secs(20),
        &["/echo (extension asker)", "echo: hi there"],
    );
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}
