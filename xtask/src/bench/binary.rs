//! `cargo xtask bench --only binary`: what the `demo` feature costs the `strata` binary.
//!
//! Builds `strata` in release twice from the same source, with the default features and with
//! `--no-default-features` (no strata-demo, so no in-process mock: axum, the tokenizer
//! tables), keeps each binary under `<target>/bench-binary/<variant>/`, and measures both in
//! the same run: the file size unstripped and stripped, and `strata --version` as a whole
//! process (wall time and peak resident memory), the variants taking turns so drift on a
//! shared machine falls on both alike. Figures are ratios with-demo / without-demo. The
//! section between the markers in `docs/benchmarks.md` is rewritten (added when missing).
//!
//! Both builds share the target directory's dependencies (only the CLI and the demo crate
//! differ), so the second build costs a relink rather than a second workspace build.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// `--only binary` selects this step.
pub const NAME: &str = "binary";

/// Where the section starts and ends in `docs/benchmarks.md`.
const BEGIN: &str = "<!-- bench binary: begin -->";
const END: &str = "<!-- bench binary: end -->";

/// Timed `--version` runs per variant and round, rounds, and runs before counting.
const RUNS_PER_ROUND: usize = 10;
const ROUNDS: usize = 6;
const WARMUP: usize = 3;

/// Whether the arguments after `bench` ask for this step (`--only binary`).
pub fn selected(args: &[String]) -> bool {
    args.windows(2)
        .any(|pair| pair[0] == "--only" && pair[1] == NAME)
}

/// One way of building `strata`.
#[derive(Debug, Clone, Copy)]
struct Variant {
    /// Directory name and table label.
    name: &'static str,
    /// Cargo feature flags.
    flags: &'static [&'static str],
}

const WITH_DEMO: Variant = Variant {
    name: "demo",
    flags: &[],
};
const WITHOUT_DEMO: Variant = Variant {
    name: "no-demo",
    flags: &["--no-default-features"],
};

/// What was measured of one binary.
#[derive(Debug, Clone)]
struct Measured {
    size: u64,
    stripped: Option<u64>,
    /// Wall seconds of every counted `--version` run.
    walls: Vec<f64>,
    /// The largest peak resident set of any run, KiB.
    peak_kib: u64,
}

/// Builds both variants, measures them, prints the table and rewrites the section.
pub fn main(root: &Path, args: &[String]) -> Result<()> {
    if args.iter().any(|a| a == "--probe") {
        return run_probe(args);
    }
    let target = target_dir(root);
    let out = args.windows(2).find(|pair| pair[0] == "--out").map_or_else(
        || PathBuf::from("docs/benchmarks.md"),
        |pair| PathBuf::from(&pair[1]),
    );
    let mut binaries = Vec::new();
    for variant in [WITH_DEMO, WITHOUT_DEMO] {
        binaries.push((variant, build(root, &target, variant)?));
    }
    let mut measured: Vec<Measured> = binaries
        .iter()
        .map(|(_, binary)| sizes(binary))
        .collect::<Result<_>>()?;
    for (_, binary) in &binaries {
        probe(binary, WARMUP)?;
    }
    // Round by round, the variants in turn (A B A B …).
    for _ in 0..ROUNDS {
        for ((_, binary), figures) in binaries.iter().zip(measured.iter_mut()) {
            let (walls, peak) = probe(binary, RUNS_PER_ROUND)?;
            figures.walls.extend(walls);
            figures.peak_kib = figures.peak_kib.max(peak);
        }
    }
    let [with, without] = [&measured[0], &measured[1]];
    let section = section(with, without);
    println!("{section}");
    let path = root.join(&out);
    let document = std::fs::read_to_string(&path).unwrap_or_default();
    std::fs::write(&path, replace_section(&document, &section))
        .with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {}", out.display());
    Ok(())
}

/// `CARGO_TARGET_DIR`, else the workspace's `target`.
fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map_or_else(
            || root.join("target"),
            |dir| {
                if dir.is_absolute() {
                    dir
                } else {
                    root.join(dir)
                }
            },
        )
}

/// `cargo build --release` of the binary in `variant`, copied to its own directory.
fn build(root: &Path, target: &Path, variant: Variant) -> Result<PathBuf> {
    eprintln!("building strata ({})", variant.name);
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "strata-cli",
            "--bin",
            "strata",
        ])
        .args(variant.flags)
        .current_dir(root)
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("building strata ({}) failed ({status})", variant.name);
    }
    let built = target.join("release").join("strata");
    let dir = target.join("bench-binary").join(variant.name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let kept = dir.join("strata");
    std::fs::copy(&built, &kept)
        .with_context(|| format!("copying {} to {}", built.display(), kept.display()))?;
    Ok(kept)
}

/// The file's size, and its size once `strip` has removed symbols and debug info (`None`
/// when `strip` is not installed).
fn sizes(binary: &Path) -> Result<Measured> {
    let size = std::fs::metadata(binary)
        .with_context(|| format!("reading {}", binary.display()))?
        .len();
    let stripped_path = binary.with_extension("stripped");
    let stripped = Command::new("strip")
        .arg("-o")
        .arg(&stripped_path)
        .arg(binary)
        .stderr(Stdio::null())
        .status()
        .ok()
        .filter(|status| status.success())
        .and_then(|_| std::fs::metadata(&stripped_path).ok())
        .map(|meta| meta.len());
    Ok(Measured {
        size,
        stripped,
        walls: Vec::new(),
        peak_kib: 0,
    })
}

/// Runs `binary --version` `runs` times in a probe (this program again, `--probe`), so the
/// peak resident set the kernel reports for the probe's children is of these runs alone:
/// each run's wall seconds and that peak in KiB.
fn probe(binary: &Path, runs: usize) -> Result<(Vec<f64>, u64)> {
    let me = std::env::current_exe().context("finding the xtask binary")?;
    let output = Command::new(me)
        .args(["bench", "--only", NAME, "--probe"])
        .arg(binary)
        .arg(runs.to_string())
        .stderr(Stdio::inherit())
        .output()
        .context("starting the probe")?;
    if !output.status.success() {
        bail!(
            "the probe of {} failed ({})",
            binary.display(),
            output.status
        );
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut words = text.split_whitespace();
    let peak = words
        .next()
        .and_then(|w| w.parse().ok())
        .context("the probe printed no peak")?;
    let walls = words.map(str::parse).collect::<Result<Vec<f64>, _>>()?;
    Ok((walls, peak))
}

/// `--probe BINARY RUNS`: runs `BINARY --version` RUNS times; prints the children's peak
/// resident set (KiB), then each run's wall seconds.
fn run_probe(args: &[String]) -> Result<()> {
    let position = args
        .iter()
        .position(|a| a == "--probe")
        .context("--probe needs a binary")?;
    let binary = PathBuf::from(args.get(position + 1).context("--probe needs a binary")?);
    let runs: usize = args
        .get(position + 2)
        .context("--probe needs a run count")?
        .parse()
        .context("--probe's run count")?;
    let mut walls = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let status = Command::new(&binary)
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .with_context(|| format!("starting {}", binary.display()))?;
        walls.push(started.elapsed().as_secs_f64());
        if !status.success() {
            bail!("{} --version failed ({status})", binary.display());
        }
    }
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .context("reading the children's resource usage")?;
    let walls: Vec<String> = walls.iter().map(f64::to_string).collect();
    println!("{} {}", usage.max_rss(), walls.join(" "));
    Ok(())
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.3}×", a / b)
    } else {
        "-".to_owned()
    }
}

/// The markdown section: the table, the command and how it was measured.
fn section(with: &Measured, without: &Measured) -> String {
    let (wall_with, wall_without) = (median(&with.walls), median(&without.walls));
    let stripped = |m: &Measured| m.stripped.map_or_else(|| "-".to_owned(), mib);
    let stripped_ratio = match (with.stripped, without.stripped) {
        (Some(a), Some(b)) => ratio(a as f64, b as f64),
        _ => "-".to_owned(),
    };
    let runs = ROUNDS * RUNS_PER_ROUND;
    format!(
        "{BEGIN}\n## Binary size and start-up: the `demo` feature\n\n\
         `cargo xtask bench --only binary`: `strata` built in release from the same source with \
         the default features (`demo`: strata-demo and its in-process strata-mock) and with \
         `--no-default-features`, measured in the same run. `--version` is timed as a whole \
         process, {runs} runs of each after {WARMUP} warm-up runs, the variants taking turns in \
         rounds of {RUNS_PER_ROUND}; wall is the median, peak memory the largest resident set \
         of any run. Ratios are with the demo / without.\n\n\
         | | with `demo` | without | ratio |\n|---|---|---|---|\n\
         | binary, unstripped (line tables) | {} | {} | {} |\n\
         | binary, stripped | {} | {} | {} |\n\
         | `strata --version` wall (median) | {:.2} ms | {:.2} ms | {} |\n\
         | `strata --version` peak memory | {} KiB | {} KiB | {} |\n{END}\n",
        mib(with.size),
        mib(without.size),
        ratio(with.size as f64, without.size as f64),
        stripped(with),
        stripped(without),
        stripped_ratio,
        wall_with * 1000.0,
        wall_without * 1000.0,
        ratio(wall_with, wall_without),
        with.peak_kib,
        without.peak_kib,
        ratio(with.peak_kib as f64, without.peak_kib as f64),
    )
}

/// `document` with the section between the markers replaced by `section` (appended when the
/// markers are missing).
fn replace_section(document: &str, section: &str) -> String {
    match (document.find(BEGIN), document.find(END)) {
        (Some(begin), Some(end)) if end > begin => {
            let after = &document[end + END.len()..];
            let after = after.strip_prefix('\n').unwrap_or(after);
            format!("{}{section}{after}", &document[..begin])
        }
        _ => {
            let mut out = document.trim_end().to_owned();
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(section);
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_binary_selects_the_step() {
        let args = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(selected(&args(&["--only", "binary"])));
        assert!(!selected(&args(&["--only", "short"])));
        assert!(!selected(&args(&["binary"])));
    }

    #[test]
    fn the_section_is_replaced_between_its_markers_or_appended() {
        let old = format!("# Doc\n\n{BEGIN}\nold\n{END}\n## After\n");
        let new = format!("{BEGIN}\nnew\n{END}\n");
        assert_eq!(
            replace_section(&old, &new),
            format!("# Doc\n\n{BEGIN}\nnew\n{END}\n## After\n")
        );
        assert_eq!(
            replace_section("# Doc\n", &new),
            format!("# Doc\n\n{BEGIN}\nnew\n{END}\n")
        );
    }

    #[test]
    fn ratios_and_medians() {
        assert!((median(&[3.0, 1.0, 2.0]) - 2.0).abs() < 1e-12);
        assert!((median(&[4.0, 1.0, 2.0, 3.0]) - 2.5).abs() < 1e-12);
        assert_eq!(ratio(3.0, 2.0), "1.500×");
        assert_eq!(ratio(1.0, 0.0), "-");
    }
}
