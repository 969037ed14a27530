//! The speed section: the workspace's own criterion benches and examples, and Pi's
//! `SessionManager` on the same file, run one after the other on this machine so that every
//! ratio compares figures taken minutes apart.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// Pi's `SessionManager` timing script, shipped in `xtask/peers/` and run from the peers'
/// install (where node finds `@mariozechner/pi-coding-agent`).
pub const PI_SCRIPT: &str = "pibench.mjs";
/// The generated 100k-entry session file.
pub const LARGE_SESSION: &str = "/tmp/strata-bench-large100k.jsonl";

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

/// Runs every speed measurement; a failing one is reported, not fatal.
pub fn measure(root: &Path) -> Speed {
    let mut speed = Speed::default();
    let large = PathBuf::from(LARGE_SESSION);
    if !large.exists() {
        let display = format!(
            "cargo run --release -p strata-session --example session_bench -- --generate {LARGE_SESSION}"
        );
        let args = [
            "run",
            "--release",
            "-q",
            "-p",
            "strata-session",
            "--example",
            "session_bench",
            "--",
            "--generate",
            LARGE_SESSION,
        ];
        if let Err(error) = run(root, &display, "cargo", &args, root) {
            speed.failures.push(format!("{error:#}"));
        }
    }
    let benches: [(&str, &str, &str); 4] = [
        ("strata-context", "context", "open_and_context"),
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
    let pi = match pi_script() {
        Ok(dir) => Some(dir),
        Err(error) => {
            speed
                .failures
                .push(format!("Pi's SessionManager not timed: {error:#}"));
            None
        }
    };
    if let Some(pi_dir) = pi.filter(|_| large.exists()) {
        for _ in 0..3 {
            let display = format!("node {PI_SCRIPT} {LARGE_SESSION}");
            match run(root, &display, "node", &[PI_SCRIPT, LARGE_SESSION], &pi_dir) {
                Ok(measured) => {
                    if let Some(ms) = pi_milliseconds(&measured.output) {
                        speed.pi_open_context_ms.push(ms);
                    }
                    speed.commands.push(measured);
                }
                Err(error) => {
                    speed.failures.push(format!("{error:#}"));
                    break;
                }
            }
        }
    }
    speed
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

/// Copies Pi's timing script into the peers' install and returns that directory; fails with
/// what to do when Pi is not installed.
fn pi_script() -> Result<PathBuf> {
    let install = crate::bench::peers::install::Install::locate()?;
    install.check(crate::bench::peers::Peer::Pi)?;
    let from = crate::bench::peers::install::scripts_dir().join(PI_SCRIPT);
    let to = install.dir.join(PI_SCRIPT);
    std::fs::copy(&from, &to)
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(install.dir)
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
    }
}
