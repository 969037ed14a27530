//! `cargo xtask soak`: scripted `strata -p` runs against strata-mock with random faults and
//! random kills, checking after every run what must survive anything.
//!
//! Each run resumes one session of a small pool (so damage, if any, accumulates), queues a
//! random fault of every kind the mock injects — HTTP errors before the first byte; cut
//! streams, malformed events and in-stream errors before or after it; slow streams — and
//! sometimes sends SIGINT, SIGTERM, SIGHUP or SIGKILL (kill -9) at a random moment, often
//! while a bash tool is running (the script alternates full-output spills, sleeps and
//! background jobs). After the run:
//! - the session opens, and its bytes up to the length it had before the run are unchanged;
//! - no process started by the run is left (tool processes carry a marker variable, looked
//!   for in every process's environment);
//! - the run's temp dir (its `TMPDIR`) is empty: no spill file left.
//!
//! After SIGKILL only the session checks hold strata to account: a process killed outright
//! cannot clean up after itself, so tool processes or spill files it leaves are counted
//! apart (`left_after_sigkill`) and removed by the soak, not reported as failures.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use strata_mock::{Fault, FaultKind, MockConfig, MockServer, Scenario};

/// Usage of `cargo xtask soak`.
pub const USAGE: &str = "  soak [--runs N] [--sessions N] [--seed S] [--strata PATH]
      Run N (default 200) scripted `strata -p` runs against strata-mock with random faults
      and random SIGINT/SIGTERM/SIGHUP/SIGKILL kills over a pool of sessions (default 20); check
      that every session opens with its earlier bytes unchanged, that no tool process
      outlives a run and that no temp file is left. Builds target/debug/strata unless
      --strata names a binary.
";

/// What the soak is told to do.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// Number of runs.
    pub runs: usize,
    /// Number of session files the runs share.
    pub sessions: usize,
    /// Seed of the random choices (faults, kills, sessions).
    pub seed: u64,
    /// The strata binary.
    pub strata: PathBuf,
}

/// What happened in the whole soak.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct SoakReport {
    /// Runs made.
    pub runs: usize,
    /// Runs by fault kind queued (`none` for a clean run).
    pub faults: std::collections::BTreeMap<String, usize>,
    /// Signals sent while strata still ran, by name.
    pub kills: std::collections::BTreeMap<String, usize>,
    /// Runs by exit: `code 0`, `code 1`, `code 130`, ….
    pub exits: std::collections::BTreeMap<String, usize>,
    /// Runs that reached a bash tool (its output was recorded or it was killed in it).
    pub runs_with_tools: usize,
    /// Runs killed while a tool process was alive.
    pub killed_during_tool: usize,
    /// Sessions that failed to open after a run.
    pub sessions_unopenable: Vec<String>,
    /// Runs after which a session's earlier bytes had changed.
    pub prefix_changed: Vec<String>,
    /// Processes found alive after a run, with their command line.
    pub orphans: Vec<String>,
    /// Files left in a run's temp dir.
    pub temp_files_left: Vec<String>,
    /// Runs that did not exit within the deadline (killed by the soak).
    pub hung: Vec<String>,
    /// Tool processes and temp files found after a kill -9 (nothing of strata's can run then).
    pub left_after_sigkill: usize,
    /// Provider requests the mock answered.
    pub requests: usize,
    /// Wall time of the whole soak, in seconds.
    pub seconds: f64,
}

impl SoakReport {
    /// Whether every check held.
    pub fn passed(&self) -> bool {
        self.sessions_unopenable.is_empty()
            && self.prefix_changed.is_empty()
            && self.orphans.is_empty()
            && self.temp_files_left.is_empty()
            && self.hung.is_empty()
    }
}

/// `cargo xtask soak …`.
pub fn main(workspace: &Path, args: &[String]) -> Result<()> {
    let mut runs = 200;
    let mut sessions = 20;
    let mut seed = 17;
    let mut strata = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut value = |name: &str| {
            iter.next()
                .with_context(|| format!("{name} needs a value"))
                .cloned()
        };
        match arg.as_str() {
            "--runs" => runs = value("--runs")?.parse().context("--runs")?,
            "--sessions" => sessions = value("--sessions")?.parse().context("--sessions")?,
            "--seed" => seed = value("--seed")?.parse().context("--seed")?,
            "--strata" => strata = Some(PathBuf::from(value("--strata")?)),
            other => bail!("soak: unknown argument {other:?}\n{USAGE}"),
        }
    }
    let strata = match strata {
        Some(path) => path,
        None => build_strata(workspace)?,
    };
    // Runs start in a project directory elsewhere: a relative path would not resolve there.
    let strata = std::fs::canonicalize(&strata)
        .with_context(|| format!("the strata binary {}", strata.display()))?;
    let options = SoakOptions {
        runs,
        sessions: sessions.max(1),
        seed,
        strata,
    };
    let report = soak(&options)?;
    print_report(&options, &report);
    if !report.passed() {
        bail!("the soak found problems (see above)");
    }
    Ok(())
}

fn build_strata(workspace: &Path) -> Result<PathBuf> {
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(workspace)
        .args(["build", "-p", "strata-cli", "--bin", "strata"])
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("building strata failed");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    Ok(target.join("debug/strata"))
}

/// The script: turns cycle through a full-output spill, a sleep (a window for kills), a
/// background job (which must die with strata) and a final answer.
fn scenario() -> Result<Scenario> {
    let mut toml = String::from("name = \"soak\"\n");
    for turn in 0..2000 {
        let text = match turn % 4 {
            0 => {
                "[[turn]]\ntext = \"Listing.\"\n[[turn.tool_call]]\ntool = \"bash\"\nargs = { command = \"seq 1 200000\" }\n"
            }
            1 => {
                "[[turn]]\ntext = \"Waiting.\"\n[[turn.tool_call]]\ntool = \"bash\"\nargs = { command = \"echo start; sleep 1.5; echo end\" }\n"
            }
            2 => {
                "[[turn]]\ntext = \"Background.\"\n[[turn.tool_call]]\ntool = \"bash\"\nargs = { command = \"sleep 120 & echo started $!\" }\n"
            }
            _ => "[[turn]]\ntext = \"Done for now.\"\n",
        };
        toml.push_str(text);
    }
    Scenario::from_toml(&toml, "soak").map_err(|e| anyhow::anyhow!("{e}"))
}

/// A random fault: every kind the mock injects, the stream ones before (0 events) or after
/// the first byte.
fn random_fault(rng: &mut fastrand::Rng) -> Option<(String, Fault)> {
    let events = |rng: &mut fastrand::Rng| if rng.bool() { 0 } else { rng.usize(1..12) };
    let kind = match rng.usize(0..9) {
        0 => return None,
        1 => FaultKind::RateLimit {
            retry_after_secs: rng.u64(0..2),
        },
        2 => FaultKind::ServerError,
        3 => FaultKind::Overloaded,
        4 => FaultKind::ContextLength,
        5 => FaultKind::CutAfter {
            events: events(rng),
        },
        6 => FaultKind::Malformed {
            at_event: events(rng),
        },
        7 => FaultKind::StreamError {
            after_events: events(rng),
        },
        _ => FaultKind::Slow {
            delay_ms: rng.u64(1..40),
        },
    };
    let name = fault_name(&kind);
    Some((name, Fault::next(kind).times(rng.usize(1..4))))
}

fn fault_name(kind: &FaultKind) -> String {
    match kind {
        FaultKind::RateLimit { .. } => "rate_limit".into(),
        FaultKind::ServerError => "server_error".into(),
        FaultKind::Overloaded => "overloaded".into(),
        FaultKind::ContextLength => "context_length".into(),
        FaultKind::CutAfter { events: 0 } => "cut_after (before first byte)".into(),
        FaultKind::CutAfter { .. } => "cut_after (after first byte)".into(),
        FaultKind::Malformed { at_event: 0 } => "malformed (first event)".into(),
        FaultKind::Malformed { .. } => "malformed (later event)".into(),
        FaultKind::StreamError { after_events: 0 } => "stream_error (before first byte)".into(),
        FaultKind::StreamError { .. } => "stream_error (after first byte)".into(),
        FaultKind::Slow { .. } => "slow".into(),
        // Never drawn: a hang or a stall costs the 120 s first-byte / idle timeout per try,
        // past the soak's per-run limit; the transport's own tests cover them.
        FaultKind::Hang => "hang".into(),
        FaultKind::StallAfter { .. } => "stall_after".into(),
    }
}

/// Runs the soak and reports what it saw.
pub fn soak(options: &SoakOptions) -> Result<SoakReport> {
    let started = Instant::now();
    let mut rng = fastrand::Rng::with_seed(options.seed);
    let root = tempfile::tempdir().context("creating the soak directory")?;
    let project = root.path().join("project");
    std::fs::create_dir_all(project.join("src")).context("creating the project")?;
    std::fs::write(
        project.join("src/lib.rs"),
        "pub fn answer() -> u32 { 42 }\n",
    )?;
    let server = MockServer::start_in_thread(MockConfig::new())
        .map_err(|e| anyhow::anyhow!("starting strata-mock: {e}"))?;
    let script = scenario()?;
    let mut report = SoakReport {
        runs: options.runs,
        ..SoakReport::default()
    };
    for run in 0..options.runs {
        let session = root.path().join(format!(
            "session-{:02}.jsonl",
            rng.usize(0..options.sessions)
        ));
        report.requests += server.requests().len();
        server.reset();
        server.load_scenario(script.clone());
        let fault = random_fault(&mut rng);
        let fault_label = fault
            .as_ref()
            .map_or_else(|| "none".to_owned(), |(name, _)| name.clone());
        *report.faults.entry(fault_label.clone()).or_default() += 1;
        if let Some((_, fault)) = fault {
            server.push_fault(fault);
        }
        let kill = (rng.u8(0..10) < 4).then(|| {
            let signal = match rng.u8(0..4) {
                0 => nix::sys::signal::Signal::SIGINT,
                1 => nix::sys::signal::Signal::SIGTERM,
                2 => nix::sys::signal::Signal::SIGHUP,
                // kill -9: no handler runs; the session must still open, keep its bytes, and
                // resume (a fold cut between its lines is completed by appending).
                _ => nix::sys::signal::Signal::SIGKILL,
            };
            (Duration::from_millis(rng.u64(50..3000)), signal)
        });
        let label = format!("run {run} ({fault_label}, {})", session.display());
        let outcome = one_run(options, &server, &project, &session, run, kill)
            .with_context(|| label.clone())?;
        *report.exits.entry(outcome.exit).or_default() += 1;
        if let Some(signal) = &outcome.killed_with {
            *report.kills.entry(signal.clone()).or_default() += 1;
        }
        report.runs_with_tools += usize::from(outcome.reached_tool);
        report.killed_during_tool += usize::from(outcome.killed_during_tool);
        if outcome.hung {
            report.hung.push(label.clone());
        }
        match strata_session::Session::open(&session) {
            Ok(_) => {}
            Err(error) if !session.exists() && outcome.prefix.is_empty() => {
                // Killed before the session was created: nothing to open, nothing lost.
                let _ = error;
            }
            Err(error) => report.sessions_unopenable.push(format!("{label}: {error}")),
        }
        let after = std::fs::read(&session).unwrap_or_default();
        if !after.starts_with(&outcome.prefix) {
            report.prefix_changed.push(label.clone());
        }
        // After kill -9 nothing of strata's ran: its tools' processes and temp files are
        // left by the kernel's rules, not strata's (counted apart, cleaned up by the soak).
        let killed_hard = outcome.killed_with.as_deref() == Some("SIGKILL");
        for orphan in outcome.orphans {
            if killed_hard {
                report.left_after_sigkill += 1;
            } else {
                report.orphans.push(format!("{label}: {orphan}"));
            }
        }
        for file in outcome.temp_left {
            if killed_hard {
                report.left_after_sigkill += 1;
            } else {
                report.temp_files_left.push(format!("{label}: {file}"));
            }
        }
        if (run + 1) % 20 == 0 {
            eprintln!(
                "soak: {} of {} runs, {:.0}s",
                run + 1,
                options.runs,
                started.elapsed().as_secs_f64()
            );
        }
    }
    report.requests += server.requests().len();
    // Every session once more, at the end.
    for entry in std::fs::read_dir(root.path())?.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "jsonl")
            && let Err(error) = strata_session::Session::open(&path)
        {
            report
                .sessions_unopenable
                .push(format!("final check {}: {error}", path.display()));
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// What one run did.
struct RunOutcome {
    exit: String,
    killed_with: Option<String>,
    reached_tool: bool,
    killed_during_tool: bool,
    hung: bool,
    /// The session's bytes before the run.
    prefix: Vec<u8>,
    orphans: Vec<String>,
    temp_left: Vec<String>,
}

/// Longest a run may take before the soak calls it hung.
const RUN_DEADLINE: Duration = Duration::from_secs(90);

fn one_run(
    options: &SoakOptions,
    server: &MockServer,
    project: &Path,
    session: &Path,
    run: usize,
    kill: Option<(Duration, nix::sys::signal::Signal)>,
) -> Result<RunOutcome> {
    let prefix = std::fs::read(session).unwrap_or_default();
    let temp = tempfile::tempdir().context("creating the run's TMPDIR")?;
    let marker = format!("strata-soak-{}-{run}", std::process::id());
    let mut child = Command::new(&options.strata)
        .current_dir(project)
        .args([
            "-p",
            "continue the task",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--base-url",
            &server.base_url(),
            "--api-key",
            "soak-key",
            "--session",
        ])
        .arg(session)
        .env("HOME", project)
        .env("TMPDIR", temp.path())
        .env("STRATA_SOAK_MARKER", &marker)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .env_remove("STRATA_API_KEY")
        .env_remove("STRATA_SESSIONS_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting strata")?;
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let started = Instant::now();
    let mut killed_with = None;
    let mut killed_during_tool = false;
    let mut reached_tool = false;
    let mut hung = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        let tools_alive = !processes_with_marker(&marker, child.id()).is_empty();
        reached_tool |= tools_alive;
        if let Some((at, signal)) = kill
            && killed_with.is_none()
            && started.elapsed() >= at
        {
            killed_during_tool = tools_alive;
            let _ = nix::sys::signal::kill(pid, signal);
            killed_with = Some(signal.as_str().to_owned());
        }
        if started.elapsed() > RUN_DEADLINE {
            hung = true;
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let exit = match (
        status.code(),
        std::os::unix::process::ExitStatusExt::signal(&status),
    ) {
        (Some(code), _) => format!("code {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "unknown".to_owned(),
    };
    // Killed groups are gone at once; give the kernel a moment to reap them.
    let mut orphans = processes_with_marker(&marker, 0);
    let waited = Instant::now();
    while !orphans.is_empty() && waited.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(50));
        orphans = processes_with_marker(&marker, 0);
    }
    for orphan in &orphans {
        if let Some(pid) = orphan.split(':').next().and_then(|p| p.trim().parse().ok()) {
            // Clean up after a failure so that later runs are judged on their own.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    let session_text = std::fs::read_to_string(session).unwrap_or_default();
    reached_tool |= session_text.len() > prefix.len()
        && session_text[prefix.len().min(session_text.len())..].contains("\"toolResult\"");
    let temp_left = std::fs::read_dir(temp.path())
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path().display().to_string())
                .collect()
        })
        .unwrap_or_default();
    Ok(RunOutcome {
        exit,
        killed_with,
        reached_tool,
        killed_during_tool,
        hung,
        prefix,
        orphans,
        temp_left,
    })
}

/// `pid: command line` of every process (but `except`) whose environment holds the marker.
fn processes_with_marker(marker: &str, except: u32) -> Vec<String> {
    let needle = format!("STRATA_SOAK_MARKER={marker}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == except {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ
            .split(|&b| b == 0)
            .any(|var| var == needle.as_bytes())
        {
            // A zombie has no environment left to read, so this is a live process.
            let command = std::fs::read(entry.path().join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            found.push(format!("{pid}: {}", command.trim()));
        }
    }
    found
}

fn print_report(options: &SoakOptions, report: &SoakReport) {
    println!(
        "soak: {} runs over {} sessions (seed {}), {} provider requests, {:.0}s",
        report.runs, options.sessions, options.seed, report.requests, report.seconds
    );
    println!("faults queued:");
    for (name, count) in &report.faults {
        println!("  {count:>4}  {name}");
    }
    println!("signals sent while strata ran:");
    for (name, count) in &report.kills {
        println!("  {count:>4}  {name}");
    }
    println!(
        "  {:>4}  of them while a tool process was alive",
        report.killed_during_tool
    );
    println!("exits:");
    for (name, count) in &report.exits {
        println!("  {count:>4}  {name}");
    }
    println!("runs that reached a bash tool: {}", report.runs_with_tools);
    println!(
        "tool processes and temp files left by kill -9 (cleaned up by the soak): {}",
        report.left_after_sigkill
    );
    let checks: [(&str, &Vec<String>); 5] = [
        ("sessions that did not open", &report.sessions_unopenable),
        ("runs that changed earlier bytes", &report.prefix_changed),
        ("orphaned processes", &report.orphans),
        ("temp files left", &report.temp_files_left),
        ("runs that hung", &report.hung),
    ];
    for (name, found) in checks {
        println!("{name}: {}", found.len());
        for item in found.iter().take(10) {
            println!("  {item}");
        }
    }
    println!("{}", if report.passed() { "PASS" } else { "FAIL" });
}
