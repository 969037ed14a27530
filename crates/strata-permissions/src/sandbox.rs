//! The OS sandbox for the bash tool: on Linux, Landlock.
//!
//! A sandboxed command runs as `strata-sandbox [--write DIR]… [--hide DIR]… [--net] -- PROGRAM
//! ARGS…` (or the strata binary's hidden `__sandbox` mode, which runs [`helper_main`]): the
//! helper applies a Landlock ruleset to itself and then execs the program, so the ruleset
//! binds the shell and everything it starts, and strata needs no `unsafe` `pre_exec`.
//!
//! The ruleset: everything readable and executable except the hidden directories (the
//! user's secrets: `~/.ssh`, `~/.aws`, `~/.gnupg`, `~/.config/gcloud`, …); writes only
//! beneath the writable directories (the project and temp) and to `/dev/null`-style devices;
//! with Landlock ABI 4 or later (Linux 6.7) no TCP bind or connect unless the network is
//! allowed. Landlock allows by hierarchy, so hiding a directory means granting its siblings
//! one by one: names inside a hidden directory can still be listed, their contents not read,
//! and files created after the sandbox starts beside a hidden directory are not readable.
//! UDP and Unix sockets are not restricted by Landlock.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus,
};
use serde::Deserialize;

/// The newest ABI strata asks for (best effort below it).
const ABI_WANTED: ABI = ABI::V5;

/// Secrets directories under `$HOME` hidden by default.
pub const DEFAULT_HIDDEN: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker",
    ".password-store",
    ".netrc",
    ".config/gh",
];

/// `[permissions.sandbox]` in strata's config.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Run bash in the sandbox (default true where the platform has one).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Let sandboxed commands open TCP connections.
    #[serde(default)]
    pub network: bool,
    /// More writable directories (`~/` for home).
    #[serde(default)]
    pub writable: Vec<String>,
    /// More hidden directories (`~/` for home).
    #[serde(default)]
    pub hidden: Vec<String>,
    /// MCP stdio servers that run in the sandbox too, by name (`*`: every one).
    #[serde(default)]
    pub mcp_servers: Vec<String>,
}

impl SandboxConfig {
    /// Whether the MCP server `name` runs in the sandbox.
    pub fn sandboxes_mcp(&self, name: &str) -> bool {
        self.mcp_servers.iter().any(|n| n == "*" || n == name)
    }
}

/// What a sandboxed command may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// Directories written beneath.
    pub writable: Vec<PathBuf>,
    /// Directories (or files) nothing in the sandbox reads.
    pub hidden: Vec<PathBuf>,
    /// TCP allowed.
    pub network: bool,
}

impl SandboxPolicy {
    /// The policy for `project`: it and the temp dirs writable, the default secrets hidden,
    /// plus what `config` adds.
    pub fn for_project(project: &Path, config: &SandboxConfig) -> Self {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let expand = |p: &str| match (p.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => project.join(p),
        };
        let mut writable = vec![project.to_path_buf(), std::env::temp_dir()];
        if Path::new("/tmp").is_dir() {
            writable.push(PathBuf::from("/tmp"));
        }
        writable.extend(config.writable.iter().map(|p| expand(p)));
        let mut hidden: Vec<PathBuf> = match &home {
            Some(home) => DEFAULT_HIDDEN.iter().map(|d| home.join(d)).collect(),
            None => Vec::new(),
        };
        hidden.extend(config.hidden.iter().map(|p| expand(p)));
        Self {
            writable: writable.into_iter().map(|p| canonical(&p)).collect(),
            hidden: hidden.into_iter().map(|p| canonical(&p)).collect(),
            network: config.network,
        }
    }

    /// The helper's arguments before `--`.
    pub fn helper_args(&self) -> Vec<OsString> {
        let mut args = Vec::new();
        for dir in &self.writable {
            args.push(OsString::from("--write"));
            args.push(dir.clone().into_os_string());
        }
        for dir in &self.hidden {
            args.push(OsString::from("--hide"));
            args.push(dir.clone().into_os_string());
        }
        if self.network {
            args.push(OsString::from("--net"));
        }
        args.push(OsString::from("--"));
        args
    }

    /// Reads the helper's arguments; returns the policy and the command after `--`.
    pub fn from_helper_args(args: &[OsString]) -> Result<(Self, Vec<OsString>), String> {
        let mut policy = Self {
            writable: Vec::new(),
            hidden: Vec::new(),
            network: false,
        };
        let mut i = 0;
        while i < args.len() {
            let arg = args[i].to_string_lossy();
            match arg.as_ref() {
                "--write" | "--hide" => {
                    let Some(value) = args.get(i + 1) else {
                        return Err(format!("{arg} needs a directory"));
                    };
                    let list = if arg == "--write" {
                        &mut policy.writable
                    } else {
                        &mut policy.hidden
                    };
                    list.push(PathBuf::from(value));
                    i += 2;
                }
                "--net" => {
                    policy.network = true;
                    i += 1;
                }
                "--" => {
                    let command = args[i + 1..].to_vec();
                    if command.is_empty() {
                        return Err("no command after --".to_owned());
                    }
                    return Ok((policy, command));
                }
                other => return Err(format!("unknown argument {other}")),
            }
        }
        Err("expected -- and a command".to_owned())
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// What the platform offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    /// Landlock with TCP rules (ABI 4+): files and network are restricted.
    Full,
    /// Landlock without network rules (ABI 1–3): files are restricted, the network is not.
    FilesOnly,
    /// No Landlock (not Linux, an old kernel, or Landlock disabled at boot).
    None,
}

impl Availability {
    /// One sentence for the start-up notice.
    pub fn describe(self, network_allowed: bool) -> String {
        match self {
            Self::Full if network_allowed => "bash runs in a Landlock sandbox: writes only in \
                 the project and temp, secrets directories unreadable, network allowed"
                .to_owned(),
            Self::Full => "bash runs in a Landlock sandbox: writes only in the project and \
                 temp, secrets directories unreadable, no TCP connections"
                .to_owned(),
            Self::FilesOnly => "bash runs in a Landlock sandbox for files only (writes only in \
                 the project and temp, secrets directories unreadable); this kernel's Landlock \
                 cannot restrict the network, so commands reach any host"
                .to_owned(),
            Self::None => "no OS sandbox is available here (Landlock is missing or disabled): \
                 bash commands run unsandboxed, with your full rights to files and network"
                .to_owned(),
        }
    }
}

/// Asks the kernel what Landlock supports, without restricting this process.
pub fn probe() -> Availability {
    let supports = |abi: ABI, net: bool| {
        let ruleset = Ruleset::default().set_compatibility(CompatLevel::HardRequirement);
        let ruleset = if net {
            ruleset.handle_access(AccessNet::from_all(abi))
        } else {
            ruleset.handle_access(AccessFs::from_all(abi))
        };
        ruleset.and_then(|r| r.create()).is_ok()
    };
    if !cfg!(target_os = "linux") || !supports(ABI::V1, false) {
        Availability::None
    } else if supports(ABI::V4, true) {
        Availability::Full
    } else {
        Availability::FilesOnly
    }
}

/// The [`strata_tools::Sandbox`] wrapper for `policy`: `helper` (the `strata-sandbox` binary,
/// or the strata binary with `helper_args` starting with its hidden `__sandbox` mode) and
/// the policy's arguments.
pub fn wrapper(
    policy: &SandboxPolicy,
    helper: PathBuf,
    leading_args: &[&str],
) -> strata_tools::Sandbox {
    let mut args: Vec<OsString> = leading_args.iter().map(OsString::from).collect();
    args.extend(policy.helper_args());
    let limits = if policy.network {
        "writes only in the project and temp, secrets directories unreadable"
    } else {
        "writes only in the project and temp, secrets directories unreadable, no TCP network"
    };
    strata_tools::Sandbox {
        program: helper,
        args,
        limits: limits.to_owned(),
    }
}

/// Restricts this process (and what it execs) to `policy`.
pub fn restrict_self(policy: &SandboxPolicy) -> Result<RulesetStatus, String> {
    let read = AccessFs::from_read(ABI_WANTED);
    let all = AccessFs::from_all(ABI_WANTED);
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(|e| e.to_string())?;
    if !policy.network {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(|e| e.to_string())?;
    }
    let mut created = ruleset.create().map_err(|e| e.to_string())?;
    for dir in readable_roots(Path::new("/"), &policy.hidden) {
        let Ok(fd) = PathFd::new(&dir) else { continue };
        // A file gets the file rights only; a directory everything readable beneath it.
        let access = if dir.is_dir() {
            read
        } else {
            read & AccessFs::from_file(ABI_WANTED)
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| e.to_string())?;
    }
    for dir in &policy.writable {
        let Ok(fd) = PathFd::new(dir) else { continue };
        created = created
            .add_rule(PathBeneath::new(fd, all))
            .map_err(|e| e.to_string())?;
    }
    for device in [
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/tty",
        "/dev/ptmx",
    ] {
        let Ok(fd) = PathFd::new(device) else {
            continue;
        };
        created = created
            .add_rule(PathBeneath::new(fd, AccessFs::from_file(ABI_WANTED)))
            .map_err(|e| e.to_string())?;
    }
    let status = created.restrict_self().map_err(|e| e.to_string())?;
    Ok(status.ruleset)
}

/// The paths to grant read access beneath so that everything under `dir` is readable except
/// `hidden`: `dir` itself where nothing hidden lies under it, else its entries one by one.
fn readable_roots(dir: &Path, hidden: &[PathBuf]) -> Vec<PathBuf> {
    if hidden.iter().any(|h| dir.starts_with(h)) {
        return Vec::new();
    }
    if !hidden.iter().any(|h| h.starts_with(dir)) {
        return vec![dir.to_path_buf()];
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut roots = Vec::new();
    for entry in entries.flatten() {
        roots.extend(readable_roots(&entry.path(), hidden));
    }
    roots
}

/// The helper's entry point: reads `args` (after the program name or `__sandbox`),
/// restricts itself and execs the command. Returns only on failure, with the message.
pub fn helper_main(args: &[OsString]) -> String {
    use std::os::unix::process::CommandExt;
    let (policy, command) = match SandboxPolicy::from_helper_args(args) {
        Ok(parsed) => parsed,
        Err(error) => return format!("strata sandbox: {error}"),
    };
    match restrict_self(&policy) {
        Ok(RulesetStatus::NotEnforced) => {
            return "strata sandbox: Landlock is not available; refusing to run the command \
                    unsandboxed"
                .to_owned();
        }
        Ok(_) => {}
        Err(error) => return format!("strata sandbox: cannot apply the ruleset: {error}"),
    }
    let error = std::process::Command::new(&command[0])
        .args(&command[1..])
        .exec();
    format!(
        "strata sandbox: cannot run {}: {error}",
        command[0].to_string_lossy()
    )
}
