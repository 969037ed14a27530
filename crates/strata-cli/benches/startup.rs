//! Start-up cost of the `strata` binary, as a user meets it.
//!
//! - `startup/version`: `strata --version`, spawn to exit (target ≤ 20 ms wall).
//! - `startup/print_to_first_request`: `strata -p hi` against an in-process strata-mock, from
//!   spawn until the mock has recorded the first request (the child is reaped after the clock
//!   stops).
//! - `startup/pi_version`: `node pi --version` (Pi 0.73.1), when node and Pi are installed, for
//!   the ratio. `PI_BIN` overrides where Pi's entry script is looked for.
//!
//! Peak memory is measured apart from the timings: each command runs once under a fresh copy of
//! this bench process, which reports `getrusage(RUSAGE_CHILDREN).ru_maxrss`, so every figure is
//! that one command's high-water mark (target ≤ 15 MiB for `--version`).
//!
//! `cargo bench -p strata-cli --bench startup`

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use criterion::Criterion;
use strata_mock::{MockConfig, MockServer};

/// The release binary cargo built for this bench.
const STRATA: &str = env!("CARGO_BIN_EXE_strata");
/// Set in the copy of this process that measures one command's peak memory (not `STRATA_`:
/// strata reads those as configuration).
const RSS_CHILD_ENV: &str = "STARTUP_BENCH_RSS_CHILD";
const PI_DEFAULT: &str = "/work/pi-ref/node_modules/.bin/pi";
const MODEL: &str = "anthropic/claude-sonnet-4-5";
/// Longest a `-p` run may take to reach the mock before the bench gives up on it.
const FIRST_REQUEST_LIMIT: Duration = Duration::from_secs(20);

/// A scratch home, so no user configuration or session store is read or written.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Option<Self> {
        tempfile::tempdir().ok().map(|dir| Self { dir })
    }

    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        let home = self.dir.path();
        command
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env_remove("STRATA_API_KEY")
            .current_dir(home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    }
}

fn version_command(sandbox: &Sandbox) -> Command {
    let mut command = sandbox.command(Path::new(STRATA));
    command.arg("--version");
    command
}

fn print_command(sandbox: &Sandbox, base_url: &str) -> Command {
    let mut command = sandbox.command(Path::new(STRATA));
    command.args([
        "-p",
        "hi",
        "--no-session",
        "--model",
        MODEL,
        "--base-url",
        base_url,
        "--api-key",
        "x",
    ]);
    command
}

/// Pi's entry script and `node`, when both are there.
fn pi_command(sandbox: &Sandbox) -> Option<Command> {
    let script =
        std::env::var_os("PI_BIN").map_or_else(|| PathBuf::from(PI_DEFAULT), PathBuf::from);
    if !script.exists() {
        return None;
    }
    let node_works = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !node_works {
        return None;
    }
    let mut command = sandbox.command(Path::new("node"));
    command.arg(script).arg("--version");
    Some(command)
}

/// Runs `command` to completion; false when it could not start or failed.
fn run(command: &mut Command) -> bool {
    command.status().is_ok_and(|status| status.success())
}

/// Spawns a `-p` run and returns how long it took for the mock to see its first request.
fn time_to_first_request(mock: &MockServer, command: &mut Command) -> Option<Duration> {
    mock.reset();
    let start = Instant::now();
    let mut child = command.spawn().ok()?;
    let reached = loop {
        if !mock.requests().is_empty() {
            break Some(start.elapsed());
        }
        if start.elapsed() > FIRST_REQUEST_LIMIT {
            let _ = child.kill();
            break None;
        }
        if let Ok(Some(_)) = child.try_wait() {
            // Exited: the request may have been recorded just now.
            break (!mock.requests().is_empty()).then(|| start.elapsed());
        }
        std::thread::sleep(Duration::from_micros(100));
    };
    let _ = child.wait();
    reached
}

/// In the measuring copy: runs the command in the arguments once, prints its peak RSS in KiB and
/// whether it succeeded (its error output when not).
fn report_child_peak() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((program, rest)) = args.split_first() else {
        return ExitCode::FAILURE;
    };
    let Ok(output) = Command::new(program)
        .args(rest)
        .env_remove(RSS_CHILD_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
    else {
        return ExitCode::FAILURE;
    };
    match nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN) {
        Ok(usage) => {
            // Linux reports ru_maxrss in KiB.
            println!("{}", usage.max_rss());
            if !output.status.success() {
                println!(
                    "{}: {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                );
            }
            ExitCode::SUCCESS
        }
        Err(_) => ExitCode::FAILURE,
    }
}

/// Peak RSS in MiB of one run of `command`, measured in a fresh copy of this process, and the
/// command's failure if it failed.
fn peak_rss_mib(command: &Command) -> Option<(f64, Option<String>)> {
    let me = std::env::current_exe().ok()?;
    let mut measure = Command::new(me);
    measure
        .env(RSS_CHILD_ENV, "1")
        .arg(command.get_program())
        .args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => measure.env(key, value),
            None => measure.env_remove(key),
        };
    }
    if let Some(dir) = command.get_current_dir() {
        measure.current_dir(dir);
    }
    let output = measure.stderr(Stdio::null()).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let report = String::from_utf8_lossy(&output.stdout);
    let mut lines = report.lines();
    let kib: f64 = lines.next()?.trim().parse().ok()?;
    let failure = lines.next().map(str::to_owned);
    Some((kib / 1024.0, failure))
}

fn print_peak(label: &str, command: &Command) {
    match peak_rss_mib(command) {
        Some((mib, None)) => println!("peak RSS {label}: {mib:.1} MiB"),
        Some((mib, Some(failure))) => {
            println!("peak RSS {label}: {mib:.1} MiB (it failed: {failure})")
        }
        None => println!("peak RSS {label}: not measured"),
    }
}

fn benches(c: &mut Criterion) {
    let Some(sandbox) = Sandbox::new() else {
        eprintln!("no temporary directory");
        return;
    };
    let mock = match MockServer::start_in_thread(MockConfig::new()) {
        Ok(mock) => mock,
        Err(error) => {
            eprintln!("cannot start strata-mock: {error}");
            return;
        }
    };
    let base_url = mock.base_url();

    if !run(&mut version_command(&sandbox)) {
        eprintln!("{STRATA} --version failed");
        return;
    }
    // One untimed run warms the mock (first-request set-up) and checks the command works.
    if time_to_first_request(&mock, &mut print_command(&sandbox, &base_url)).is_none() {
        eprintln!("{STRATA} -p never reached the mock at {base_url}");
        return;
    }

    print_peak("strata --version", &version_command(&sandbox));
    print_peak(
        "strata -p hi (whole run)",
        &print_command(&sandbox, &base_url),
    );
    let pi = pi_command(&sandbox);
    match &pi {
        Some(command) => print_peak("node pi --version", command),
        None => println!("Pi not measured: node or {PI_DEFAULT} missing (set PI_BIN)"),
    }

    let mut group = c.benchmark_group("startup");
    group.sample_size(30);
    group.bench_function("version", |b| {
        b.iter(|| black_box(run(&mut version_command(&sandbox))))
    });
    group.bench_function("print_to_first_request", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let mut command = print_command(&sandbox, &base_url);
                // A run that never reaches the mock counts as the whole limit: visible, not hidden.
                total += time_to_first_request(&mock, &mut command).unwrap_or(FIRST_REQUEST_LIMIT);
            }
            total
        })
    });
    if let Some(mut command) = pi {
        group.sample_size(10);
        group.bench_function("pi_version", |b| b.iter(|| black_box(run(&mut command))));
    }
    group.finish();
}

fn main() -> ExitCode {
    if std::env::var_os(RSS_CHILD_ENV).is_some() {
        return report_child_peak();
    }
    let mut criterion = Criterion::default().configure_from_args();
    benches(&mut criterion);
    criterion.final_summary();
    ExitCode::SUCCESS
}
