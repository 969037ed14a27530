//! Keeping the provider key out of reach of what strata starts and of `ps`.
//!
//! Tools run as the user, so they could read strata's own environment through
//! `/proc/<strata pid>/environ` (or its memory through `/proc/<pid>/mem`): strata makes its
//! process non-dumpable at start, which the kernel answers by refusing those files to every
//! process without `CAP_SYS_PTRACE`. Tools start from `execve`, which makes them dumpable
//! again, so nothing of theirs changes.
//!
//! A command line is world-readable (`/proc/<pid>/cmdline`, `ps`) whatever the dumpable flag
//! says. `--api-key-file PATH` (`-` for stdin) keeps the key out of it; `--api-key VALUE` is
//! handed over at once: strata writes the value into a pipe and executes itself again (same
//! pid) with the hidden `--api-key-fd N` in its place, so the value is in the command line
//! only for the moment before that.

use std::ffi::OsString;
use std::io::{Read as _, Write as _};
use std::path::Path;

use anyhow::{Context as _, Result, bail};

use crate::args::RunArgs;

/// The flag whose value `ps` would show.
const KEY_FLAG: &str = "--api-key";
/// The hidden flag that takes the key's pipe after the handover.
const FD_FLAG: &str = "--api-key-fd";
/// A key is a line; more than this is not a key (and `/dev/zero` must not fill memory).
const MAX_KEY_BYTES: u64 = 16 * 1024;

/// Makes this process non-dumpable, so processes of the same user (the tools strata runs)
/// cannot read its environment or memory through `/proc`. Best effort: an error here leaves
/// strata as it was, which is no reason to refuse to run.
pub fn protect_process() {
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_dumpable(false);
}

/// When the key was given as `--api-key VALUE` on the command line of a run, executes strata
/// again with the value in a pipe instead. Returns only when there is nothing to hand over or
/// the handover failed, with a warning to print in the second case.
pub fn hand_over_command_line_key() -> Option<String> {
    let args: Vec<OsString> = std::env::args_os().collect();
    let (rest, key) = key_in_command_line(&args)?;
    let failure = match exec_with_key_in_pipe(&args, &rest, &key) {
        Ok(never) => match never {},
        Err(err) => err,
    };
    Some(format!(
        "the --api-key value stays visible to `ps` ({failure:#}); --api-key-file PATH or \
         STRATA_API_KEY keep it out of the command line"
    ))
}

/// The arguments without `--api-key VALUE` (or `--api-key=VALUE`), and the value, when clap
/// reads the run's key from the command line (not a subcommand's, not after `--`).
fn key_in_command_line(args: &[OsString]) -> Option<(Vec<OsString>, String)> {
    use clap::CommandFactory as _;
    let matches = crate::args::Cli::command()
        .try_get_matches_from(args)
        .ok()?;
    if matches.subcommand().is_some()
        || matches.value_source("api_key") != Some(clap::parser::ValueSource::CommandLine)
    {
        return None;
    }
    let key = matches.get_one::<String>("api_key")?.clone();
    let mut rest = Vec::with_capacity(args.len());
    let mut iter = args.iter().skip(1);
    while let Some(arg) = iter.next() {
        if arg == "--" {
            rest.push(arg.clone());
            rest.extend(iter.by_ref().cloned());
            break;
        }
        if arg == KEY_FLAG {
            iter.next();
            continue;
        }
        if arg
            .to_str()
            .is_some_and(|text| text.starts_with("--api-key="))
        {
            continue;
        }
        rest.push(arg.clone());
    }
    Some((rest, key))
}

/// Writes `key` into a pipe whose reading end stays open across `exec`, and executes this
/// binary with `rest` and `--api-key-fd N`. Returns only on failure.
fn exec_with_key_in_pipe(
    args: &[OsString],
    rest: &[OsString],
    key: &str,
) -> Result<std::convert::Infallible> {
    use std::os::fd::AsRawFd as _;
    use std::os::unix::process::CommandExt as _;
    if key.len() as u64 > MAX_KEY_BYTES {
        bail!("it is longer than {MAX_KEY_BYTES} bytes");
    }
    // nix's pipe() sets no close-on-exec flag: the reading end is inherited by the new image.
    let (reader, writer) = nix::unistd::pipe().context("creating a pipe")?;
    nix::fcntl::fcntl(
        &writer,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )
    .context("marking the pipe's writing end close-on-exec")?;
    // Far below the pipe's buffer, so this write does not wait for a reader.
    let mut writer = std::fs::File::from(writer);
    writer
        .write_all(key.as_bytes())
        .context("writing the key into the pipe")?;
    drop(writer);
    let program = std::env::current_exe().context("finding strata's own executable")?;
    let mut command = std::process::Command::new(program);
    if let Some(name) = args.first() {
        command.arg0(name);
    }
    command
        .args(rest)
        .arg(FD_FLAG)
        .arg(reader.as_raw_fd().to_string());
    let err = command.exec();
    drop(reader);
    Err(err).context("executing strata again")
}

/// Fills `run.api_key` from `--api-key-fd` or `--api-key-file` when one was given; they win
/// over `STRATA_API_KEY` (clap's fallback for `--api-key`).
pub fn read_key_sources(run: &mut RunArgs) -> Result<()> {
    if let Some(fd) = run.api_key_fd {
        // Read through /proc/self/fd (reading needs no ownership of the raw descriptor),
        // then close the inherited one so no tool inherits the pipe.
        let key = read_key(Path::new(&format!("/proc/self/fd/{fd}")))
            .with_context(|| format!("reading the key handed over on fd {fd}"))?;
        let _ = nix::unistd::close(fd);
        run.api_key = Some(key);
    } else if let Some(path) = &run.api_key_file {
        let key = if path.as_os_str() == "-" {
            read_key_from(std::io::stdin().lock()).context("reading the key from stdin")?
        } else {
            read_key(path).with_context(|| format!("--api-key-file {}", path.display()))?
        };
        run.api_key = Some(key);
    }
    Ok(())
}

/// The key in the file at `path`.
fn read_key(path: &Path) -> Result<String> {
    let file = std::fs::File::open(path)?;
    read_key_from(file)
}

/// The first line of `reader`, trimmed: a key file written with `echo` ends in a newline.
fn read_key_from(reader: impl std::io::Read) -> Result<String> {
    let mut bytes = Vec::new();
    reader.take(MAX_KEY_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_KEY_BYTES {
        bail!("more than {MAX_KEY_BYTES} bytes: not a key");
    }
    let text = String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("the key is not UTF-8"))?;
    let key = text.lines().next().unwrap_or("").trim();
    if key.is_empty() {
        bail!("no key in it (empty)");
    }
    Ok(key.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_run_key_is_cut_out_of_the_command_line_in_both_spellings() {
        let (rest, key) =
            key_in_command_line(&os(&["strata", "-p", "hi", "--api-key", "sk-1", "--yes"]))
                .unwrap();
        assert_eq!(key, "sk-1");
        assert_eq!(rest, os(&["-p", "hi", "--yes"]));
        let (rest, key) =
            key_in_command_line(&os(&["strata", "--api-key=sk-2", "--", "--api-key", "x"]))
                .unwrap();
        assert_eq!(key, "sk-2");
        assert_eq!(rest, os(&["--", "--api-key", "x"]));
    }

    #[test]
    fn nothing_is_handed_over_without_a_command_line_key() {
        assert!(key_in_command_line(&os(&["strata", "-p", "hi"])).is_none());
        assert!(key_in_command_line(&os(&["strata", "--", "--api-key", "x"])).is_none());
        assert!(key_in_command_line(&os(&["strata", "providers"])).is_none());
        // A command line clap refuses is left for clap to report.
        assert!(key_in_command_line(&os(&["strata", "--api-key"])).is_none());
    }

    #[test]
    fn a_key_file_gives_its_first_line_and_refuses_empty_or_huge_input() {
        assert_eq!(read_key_from(&b"sk-abc\n"[..]).unwrap(), "sk-abc");
        assert_eq!(
            read_key_from(&b"  sk-abc \r\nmore\n"[..]).unwrap(),
            "sk-abc"
        );
        let empty = read_key_from(&b"\n"[..]).unwrap_err().to_string();
        assert!(empty.contains("empty"), "{empty}");
        let huge = read_key_from(std::io::repeat(b'a'))
            .unwrap_err()
            .to_string();
        assert!(huge.contains("not a key"), "{huge}");
    }
}
