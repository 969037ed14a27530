//! The provider key stays out of the tools' reach and out of `ps`: a bash tool looks for it in
//! strata's `/proc` files and in every command line, whichever way the key was given.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use crate::support::{mock_with, project, text};

const KEY: &str = "sk-ant-probe-4f1e9c2b7d";

/// What the tool runs: who its parent is, whether the parent's environment and memory can be
/// opened, the key's lines in that environment, the parent's command line as `ps` shows it,
/// and how many command lines or variables anywhere hold the key (`[p]`: grep's own command
/// line does not match itself).
const PROBE: &str = "echo \"parent=$(cat /proc/$PPID/comm)\"; \
    if cat /proc/$PPID/environ >/dev/null 2>&1; then r=READ; else r=REFUSED; fi; echo \"environ=$r\"; \
    tr '\\0' '\\n' < /proc/$PPID/environ | grep -e 'sk-ant-[p]robe'; \
    if (exec 3< /proc/$PPID/mem) 2>/dev/null; then r=OPENED; else r=REFUSED; fi; echo \"mem=$r\"; \
    echo \"ps=$(ps -o args= -p $PPID)\"; \
    echo \"ps-hits=$(ps -eo args | grep -c -e 'sk-ant-[p]robe')\"; \
    echo \"env-hits=$(env | grep -c -e 'sk-ant-[p]robe')\"";

/// A scenario whose one turn runs the probe with bash, then answers "done".
fn probe_scenario() -> strata_mock::Scenario {
    let toml = format!(
        "name = \"probe\"\n[[turn]]\ntext = \"Looking.\"\n[[turn.tool_call]]\ntool = \"bash\"\nargs = {{ command = {PROBE:?} }}\n\n[[turn]]\ntext = \"done\"\n"
    );
    strata_mock::Scenario::from_toml(&toml, "test").unwrap()
}

/// `strata -p go` in `dir` against `url`, with no key anywhere unless the caller adds one.
fn strata_in(dir: &Path, url: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_strata"));
    with_run_args(&mut command, dir, url);
    command
}

/// The arguments and environment of [`strata_in`].
fn with_run_args(command: &mut Command, dir: &Path, url: &str) {
    command
        .current_dir(dir)
        .args([
            "-p",
            "go",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--base-url",
            url,
        ])
        .env("HOME", dir)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .env_remove("STRATA_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("STRATA_SESSIONS_DIR");
}

/// Runs `command` with `stdin` as its input.
fn run_with_stdin(command: &mut Command, stdin: &str) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// `strata` in `dir` against `url` as an ordinary user: root (the usual user of a container)
/// holds `CAP_SYS_PTRACE`, which reads any process's `/proc` files whatever strata does, so
/// as root the run goes to `nobody` (given `dir`). A shell in between execs strata, as a
/// user's shell would: the kernel leaves a process non-dumpable right after a change of
/// user, which would hide strata's files without strata doing anything.
fn unprivileged_strata(dir: &Path, url: &str) -> Command {
    use std::os::unix::fs::MetadataExt as _;
    use std::os::unix::process::CommandExt as _;
    const NOBODY: u32 = 65534;
    if std::fs::metadata("/proc/self").unwrap().uid() != 0 {
        return strata_in(dir, url);
    }
    fn give_away(path: &Path) {
        std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).unwrap();
        if path.is_dir() {
            for entry in std::fs::read_dir(path).unwrap() {
                give_away(&entry.unwrap().path());
            }
        }
    }
    give_away(dir);
    let mut command = Command::new("/bin/sh");
    command
        .args(["-c", "exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_strata")])
        .uid(NOBODY)
        .gid(NOBODY);
    with_run_args(&mut command, dir, url);
    command
}

/// Adds a way of giving the key to a command run in a directory.
type Give = dyn Fn(&mut Command, &Path);

/// Runs the probe with the key given by `give` (with or without the bash sandbox), and
/// returns what the tool saw.
fn probe(give: &Give, stdin: &str, sandbox: bool) -> String {
    let dir = project();
    if !sandbox {
        // Landlock keeps a sandboxed tool from strata's /proc files on its own; without it
        // (turned off, or a kernel without Landlock) strata's own protection is what holds.
        std::fs::create_dir_all(dir.path().join(".config/strata")).unwrap();
        std::fs::write(
            dir.path().join(".config/strata/config.toml"),
            "[permissions.sandbox]\nenabled = false\n",
        )
        .unwrap();
    }
    let server = mock_with(probe_scenario());
    let session = dir.path().join("s.jsonl");
    let mut command = unprivileged_strata(dir.path(), &server.base_url());
    command.args(["--session", session.to_str().unwrap()]);
    give(&mut command, dir.path());
    let out = run_with_stdin(&mut command, stdin);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains(KEY), "{}", text(&out.stderr));
    let whole = std::fs::read_to_string(&session).unwrap();
    assert!(!whole.contains(KEY), "the key is in the session");
    // The probe's output, as the tool result stored it.
    let stored = whole
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|entry| entry["message"]["role"] == "toolResult")
        .and_then(|entry| {
            entry["message"]["content"][0]["text"]
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_default();
    // The probe ran where it should: under strata, with ps working.
    assert!(stored.contains("parent=strata"), "{stored}");
    assert!(
        stored.contains("ps=/") && stored.contains("strata -p go --model"),
        "ps showed no strata: {stored}"
    );
    assert!(stored.contains("ps-hits=0"), "{stored}");
    assert!(stored.contains("env-hits=0"), "{stored}");
    assert!(stored.contains("environ=REFUSED"), "{stored}");
    assert!(stored.contains("mem=REFUSED"), "{stored}");
    stored
}

#[test]
fn a_tool_finds_the_key_neither_in_stratas_proc_files_nor_in_any_command_line() {
    let ways: [(&str, Box<Give>, &str); 4] = [
        (
            "environment",
            Box::new(|c: &mut Command, _: &Path| {
                c.env("ANTHROPIC_API_KEY", KEY);
            }),
            "",
        ),
        (
            "--api-key VALUE",
            Box::new(|c: &mut Command, _: &Path| {
                c.args(["--api-key", KEY]);
            }),
            "",
        ),
        (
            "--api-key-file PATH",
            Box::new(|c: &mut Command, dir: &Path| {
                let file = dir.join("key.txt");
                std::fs::write(&file, format!("{KEY}\n")).unwrap();
                c.arg("--api-key-file").arg(file);
            }),
            "",
        ),
        (
            "--api-key-file -",
            Box::new(|c: &mut Command, _: &Path| {
                c.args(["--api-key-file", "-"]);
            }),
            KEY,
        ),
    ];
    for (way, give, stdin) in ways {
        for sandbox in [false, true] {
            let stored = probe(&give, stdin, sandbox);
            assert!(
                !stored.contains(KEY),
                "{way} (sandbox {sandbox}): the tool saw the key:\n{stored}"
            );
            if way == "--api-key VALUE" {
                // strata handed the value to itself: the flag is gone from its command line.
                assert!(stored.contains("--api-key-fd"), "{way}: {stored}");
            }
        }
    }
}

/// A listener answering every request 401 and keeping each request's head.
fn header_recorder() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let heads = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&heads);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            kept.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&head).to_lowercase());
            let body =
                r#"{"type":"error","error":{"type":"authentication_error","message":"probe"}}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, heads)
}

#[test]
fn a_key_from_a_file_stdin_or_a_handed_over_flag_is_the_one_sent() {
    let dir = project();
    let file = dir.path().join("key.txt");
    std::fs::write(&file, "sk-from-file\n").unwrap();
    let cases: [(&[&str], &str, &str); 3] = [
        (
            &["--api-key-file", file.to_str().unwrap()],
            "",
            "sk-from-file",
        ),
        (&["--api-key-file", "-"], "sk-from-stdin\n", "sk-from-stdin"),
        (&["--api-key", "sk-from-flag"], "", "sk-from-flag"),
    ];
    for (args, stdin, sent) in cases {
        let (url, heads) = header_recorder();
        let mut command = strata_in(dir.path(), &url);
        command.arg("--no-session").args(args);
        // The file wins over the environment variable.
        command.env("STRATA_API_KEY", "sk-from-env");
        let out = run_with_stdin(&mut command, stdin);
        assert!(!out.status.success(), "the 401 is a failure");
        let heads = heads.lock().unwrap().clone();
        assert!(
            !heads.is_empty(),
            "{args:?}: nothing was sent: {}",
            text(&out.stderr)
        );
        for head in heads {
            assert!(
                head.contains(&format!("x-api-key: {sent}\r\n")),
                "{args:?}: {head}"
            );
        }
    }
}

#[test]
fn an_empty_or_missing_key_file_is_an_error_naming_it() {
    let dir = project();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "\n").unwrap();
    let out = strata_in(dir.path(), "http://127.0.0.1:9")
        .args(["--no-session", "--api-key-file", empty.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("--api-key-file {}", empty.display())) && err.contains("empty"),
        "{err}"
    );
    let missing = dir.path().join("missing.txt");
    let out = strata_in(dir.path(), "http://127.0.0.1:9")
        .args(["--no-session", "--api-key-file", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("--api-key-file {}", missing.display()))
            && err.contains("No such file"),
        "{err}"
    );
}
