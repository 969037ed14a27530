//! Start-up of the peer harnesses for the speed table: wall time and peak RSS of
//! `<harness> --version`, the median of a few runs, measured with GNU time (`/usr/bin/time`)
//! where it is installed (std cannot read a child's peak RSS).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// One harness's start-up.
#[derive(Debug, Clone, PartialEq)]
pub struct Startup {
    /// The harness.
    pub harness: String,
    /// What `--version` printed.
    pub version: String,
    /// Median wall time, seconds.
    pub seconds: f64,
    /// Median peak RSS, MiB, when GNU time is there to measure it.
    pub peak_rss_mib: Option<f64>,
    /// Runs measured.
    pub runs: usize,
}

const GNU_TIME: &str = "/usr/bin/time";

/// Measures `bin --version` `runs` times.
pub fn measure(harness: &str, bin: &Path, runs: usize) -> Result<Startup> {
    let gnu_time = Path::new(GNU_TIME).exists();
    let mut seconds = Vec::new();
    let mut rss = Vec::new();
    let mut version = String::new();
    for _ in 0..runs.max(1) {
        let mut command = if gnu_time {
            let mut command = Command::new(GNU_TIME);
            command.args(["-f", "%M"]).arg(bin);
            command
        } else {
            Command::new(bin)
        };
        command.arg("--version");
        let started = Instant::now();
        let out = command
            .output()
            .with_context(|| format!("running {} --version", bin.display()))?;
        seconds.push(started.elapsed().as_secs_f64());
        if !out.status.success() {
            bail!("{} --version failed ({})", bin.display(), out.status);
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Pi prints its version on stderr, before GNU time's own last line.
        let own_stderr = if gnu_time {
            stderr
                .trim_end()
                .rsplit_once('\n')
                .map_or("", |(own, _)| own)
        } else {
            &stderr
        };
        version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if version.is_empty() {
            version = own_stderr.trim().to_owned();
        }
        if gnu_time {
            rss.push(peak_kib(&stderr)? / 1024.0);
        }
    }
    Ok(Startup {
        harness: harness.to_owned(),
        version,
        seconds: median(&mut seconds),
        peak_rss_mib: (!rss.is_empty()).then(|| median(&mut rss)),
        runs: seconds.len(),
    })
}

/// Start-up of each peer harness where it is installed (see [`super::Install::locate`]); a
/// peer that cannot run gives the reason instead. For the speed table.
pub fn measure_peers(runs: usize) -> Vec<(super::Peer, Result<Startup>)> {
    let install = super::Install::locate();
    super::Peer::ALL
        .into_iter()
        .map(|peer| {
            let startup = install
                .as_ref()
                .map_err(|e| anyhow::anyhow!("{e:#}"))
                .and_then(|install| {
                    install.check(peer)?;
                    measure(peer.name(), &install.bin(peer.bin()), runs)
                });
            (peer, startup)
        })
        .collect()
}

/// The KiB figure GNU time's `-f %M` prints as the last line of stderr.
fn peak_kib(stderr: &str) -> Result<f64> {
    let line = stderr.lines().last().unwrap_or_default().trim();
    line.parse::<f64>()
        .with_context(|| format!("reading the peak RSS from {line:?}"))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_peak_parse() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(peak_kib("warning\n138936\n").unwrap(), 138936.0);
        assert!(peak_kib("nothing").is_err());
    }

    #[test]
    fn a_command_is_timed_and_its_version_read() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("fake-harness");
        std::fs::write(&bin, "#!/bin/sh\necho 9.8.7\n").unwrap();
        let on_stderr = dir.path().join("stderr-harness");
        std::fs::write(&on_stderr, "#!/bin/sh\necho 0.1.2 >&2\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        for file in [&bin, &on_stderr] {
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        assert_eq!(measure("stderr", &on_stderr, 1).unwrap().version, "0.1.2");
        let startup = measure("fake", &bin, 3).unwrap();
        assert_eq!(startup.version, "9.8.7");
        assert_eq!(startup.runs, 3);
        assert!(
            startup.seconds > 0.0 && startup.seconds < 5.0,
            "{startup:?}"
        );
        if Path::new(GNU_TIME).exists() {
            let rss = startup.peak_rss_mib.unwrap();
            assert!(rss > 0.1 && rss < 100.0, "{startup:?}");
        }
    }
}
