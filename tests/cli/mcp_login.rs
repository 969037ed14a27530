//! `strata mcp login|logout` against the official Python SDK's OAuth server (the fixture in
//! `crates/strata-mcp/tests/fixtures/auth_server.py`), with `$BROWSER` set to a script that
//! fetches the authorization URL and follows its redirects as a browser would.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::support::{mcp_python as python, project, text, workspace};

fn strata(dir: &Path, args: &[&str], browser: Option<&Path>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_strata"));
    command
        .current_dir(dir)
        .args(args)
        .env("HOME", dir)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .env_remove("BROWSER");
    if let Some(browser) = browser {
        command.env("BROWSER", browser);
    }
    command.output().expect("strata runs")
}

/// The fixture server on a free port, killed when dropped.
struct AuthServer(Child);

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn auth_server(python: &Path) -> (AuthServer, String) {
    auth_server_with(python, &[])
}

/// The fixture with its optional arguments after the port.
fn auth_server_with(python: &Path, args: &[&str]) -> (AuthServer, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(python)
        .arg(workspace().join("crates/strata-mcp/tests/fixtures/auth_server.py"))
        .arg(port.to_string())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..150 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    (AuthServer(child), format!("http://127.0.0.1:{port}/mcp"))
}

/// A project with the fixture server added as `docs` (`strata mcp add docs --url …`).
fn project_with_docs_server(python: &Path) -> (AuthServer, tempfile::TempDir) {
    let (server, url) = auth_server(python);
    let dir = project();
    let added = strata(dir.path(), &["mcp", "add", "docs", "--url", &url], None);
    assert!(added.status.success(), "{}", text(&added.stderr));
    (server, dir)
}

/// A `$BROWSER` that opens the URL with Python's urllib (redirects followed).
fn scripted_browser(dir: &Path, python: &Path) -> PathBuf {
    let path = dir.join("browser.sh");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nexec {} -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1]).read()' \"$1\"\n",
            python.display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

#[test]
fn login_signs_in_through_the_browser_and_logout_forgets_it() {
    let Some(python) = python() else {
        return;
    };
    let (_server, dir) = project_with_docs_server(&python);

    let list = strata(dir.path(), &["mcp", "list"], None);
    let stdout = text(&list.stdout);
    assert!(!list.status.success());
    assert!(stdout.contains("docs  needs sign-in  0 tools"), "{stdout}");
    assert!(stdout.contains("strata mcp login docs"), "{stdout}");

    // No browser configured and nobody signing in: the URL is printed, the wait ends clearly.
    let waited = strata(dir.path(), &["mcp", "login", "docs", "--wait", "2"], None);
    let stdout = text(&waited.stdout);
    assert!(!waited.status.success());
    assert!(stdout.contains("/authorize?"), "{stdout}");
    assert!(stdout.contains("$BROWSER is not set"), "{stdout}");
    assert!(
        text(&waited.stderr).contains("no sign-in finished within 2 s"),
        "{}",
        text(&waited.stderr)
    );

    let browser = scripted_browser(dir.path(), &python);
    let login = strata(
        dir.path(),
        &["mcp", "login", "docs", "--wait", "30"],
        Some(&browser),
    );
    let stdout = text(&login.stdout);
    assert!(login.status.success(), "{stdout}{}", text(&login.stderr));
    assert!(stdout.contains("Opened with $BROWSER"), "{stdout}");
    assert!(stdout.contains("signed in to \"docs\""), "{stdout}");
    assert!(stdout.contains("connected: 4 tools"), "{stdout}");
    let token_file = dir.path().join(".config/strata/mcp-tokens/docs.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(
        !dir.path().join(".strata/mcp-tokens").exists(),
        "never in the project"
    );

    let list = strata(dir.path(), &["mcp", "list"], None);
    let stdout = text(&list.stdout);
    assert!(list.status.success(), "{stdout}");
    assert!(stdout.contains("docs  connected  4 tools"), "{stdout}");
    assert!(
        stdout.contains(&format!("  signed in (tokens in {})", token_file.display())),
        "{stdout}"
    );

    let logout = strata(dir.path(), &["mcp", "logout", "docs"], None);
    assert!(logout.status.success(), "{}", text(&logout.stderr));
    assert!(text(&logout.stdout).contains("signed out of \"docs\""));
    assert!(!token_file.exists());
    let list = strata(dir.path(), &["mcp", "list"], None);
    assert!(text(&list.stdout).contains("docs  needs sign-in"));
}

#[test]
fn login_takes_a_client_secret_from_stdin_and_logout_revokes_and_forgets_it_when_asked() {
    use std::io::Write as _;
    let Some(python) = python() else {
        return;
    };
    let callback_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let (_server, url) =
        auth_server_with(&python, &["3600", &callback_port, "--secret", "cli-secret"]);
    let dir = project();
    let added = strata(
        dir.path(),
        &[
            "mcp",
            "add",
            "docs",
            "--url",
            &url,
            "--client-id",
            "strata-confidential",
            "--callback-port",
            &callback_port,
        ],
        None,
    );
    assert!(added.status.success(), "{}", text(&added.stderr));
    let browser = scripted_browser(dir.path(), &python);
    let mut login = Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir.path())
        .args(["mcp", "login", "docs", "--client-secret", "--wait", "30"])
        .env("HOME", dir.path())
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .env("BROWSER", &browser)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    login
        .stdin
        .take()
        .unwrap()
        .write_all(b"cli-secret\n")
        .unwrap();
    let login = login.wait_with_output().unwrap();
    let stdout = text(&login.stdout);
    assert!(login.status.success(), "{stdout}{}", text(&login.stderr));
    let tokens = dir.path().join(".config/strata/mcp-tokens");
    let client_file = tokens.join("docs.client.json");
    assert!(
        stdout.contains(&format!(
            "client secret stored in {}",
            client_file.display()
        )),
        "{stdout}"
    );
    assert!(stdout.contains("connected: 4 tools"), "{stdout}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&client_file)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let config = std::fs::read_to_string(dir.path().join(".config/strata/config.toml")).unwrap();
    assert!(!config.contains("cli-secret"), "{config}");
    assert!(
        !std::fs::read_to_string(tokens.join("docs.json"))
            .unwrap()
            .contains("cli-secret")
    );

    let logout = strata(dir.path(), &["mcp", "logout", "docs"], None);
    let stdout = text(&logout.stdout);
    assert!(logout.status.success(), "{}", text(&logout.stderr));
    let revoke = url.replace("/mcp", "/revoke");
    assert!(
        stdout.starts_with(&format!(
            "signed out of \"docs\": tokens revoked at {revoke} (removed "
        )),
        "{stdout}"
    );
    assert!(client_file.exists(), "the secret stays unless asked");
    let forget = strata(
        dir.path(),
        &["mcp", "logout", "docs", "--forget-client"],
        None,
    );
    let stdout = text(&forget.stdout);
    assert!(forget.status.success(), "{}", text(&forget.stderr));
    assert!(
        stdout.contains("no stored sign-in for \"docs\"")
            && stdout.contains("client secret forgotten"),
        "{stdout}"
    );
    assert!(!client_file.exists());

    // The secret from a variable the entry names: nothing is stored.
    let config_path = dir.path().join(".config/strata/config.toml");
    let config = std::fs::read_to_string(&config_path).unwrap();
    let with_env = config.replace(
        "callback_port = ",
        "client_secret_env = \"DOCS_SECRET\", callback_port = ",
    );
    assert_ne!(config, with_env, "{config}");
    std::fs::write(&config_path, with_env).unwrap();
    let login = Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir.path())
        .args(["mcp", "login", "docs", "--wait", "30"])
        .env("HOME", dir.path())
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .env("BROWSER", &browser)
        .env("DOCS_SECRET", "cli-secret")
        .output()
        .unwrap();
    let stdout = text(&login.stdout);
    assert!(login.status.success(), "{stdout}{}", text(&login.stderr));
    assert!(stdout.contains("connected: 4 tools"), "{stdout}");
    assert!(!client_file.exists());
}

#[test]
fn add_writes_a_pre_registered_client_and_a_torn_token_file_is_listed() {
    let dir = project();
    let added = strata(
        dir.path(),
        &[
            "mcp",
            "add",
            "docs",
            "--url",
            "http://127.0.0.1:9/mcp",
            "--client-id",
            "my-client",
            "--callback-port",
            "8976",
        ],
        None,
    );
    assert!(added.status.success(), "{}", text(&added.stderr));
    let config = std::fs::read_to_string(dir.path().join(".config/strata/config.toml")).unwrap();
    assert!(
        config.contains(r#"oauth = { client_id = "my-client", callback_port = 8976 }"#),
        "{config}"
    );
    let tokens = dir.path().join(".config/strata/mcp-tokens");
    std::fs::create_dir_all(&tokens).unwrap();
    std::fs::write(tokens.join("docs.json"), "{\"server_url\"").unwrap();
    let list = strata(dir.path(), &["mcp", "list"], None);
    let stdout = text(&list.stdout);
    assert!(
        stdout.contains("docs.json is not a valid token file"),
        "{stdout}"
    );
    let logout = strata(dir.path(), &["mcp", "logout", "docs"], None);
    assert!(logout.status.success(), "{}", text(&logout.stderr));
    assert!(!tokens.join("docs.json").exists());
    let stdio = strata(
        dir.path(),
        &["mcp", "add", "local", "--client-id", "x", "--", "local-mcp"],
        None,
    );
    assert!(!stdio.status.success(), "--client-id needs --url");
}

#[test]
fn rpc_mcp_login_answers_with_the_url_and_the_server_connects_after_the_browser() {
    use std::io::{BufRead as _, Write as _};
    let Some(python) = python() else {
        return;
    };
    let (_server, dir) = project_with_docs_server(&python);
    let mock = crate::support::demo_mock();
    let base_url = mock.base_url();
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir.path())
        .args([
            "--mode",
            "rpc",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--base-url",
            &base_url,
            "--api-key",
            "k",
        ])
        .env("HOME", dir.path())
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .env_remove("STRATA_SESSIONS_DIR")
        .env_remove("BROWSER")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (lines_tx, lines) = std::sync::mpsc::channel::<serde_json::Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if let Ok(value) = serde_json::from_str(&line)
                && lines_tx.send(value).is_err()
            {
                return;
            }
        }
    });
    let mut ask = |id: &str, command: serde_json::Value| -> serde_json::Value {
        let mut command = command;
        command["id"] = id.into();
        writeln!(stdin, "{command}").unwrap();
        loop {
            let line = lines.recv_timeout(Duration::from_secs(60)).unwrap();
            if line["type"] == "response" && line["id"] == id {
                return line;
            }
        }
    };
    let unknown = ask(
        "0",
        serde_json::json!({"type": "mcp_login", "server": "nosuch"}),
    );
    assert_eq!(unknown["success"], false, "{unknown}");
    let login = ask(
        "1",
        serde_json::json!({"type": "mcp_login", "server": "docs"}),
    );
    assert_eq!(login["success"], true, "{login}");
    let authorization_url = login["data"]["authorizationUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        authorization_url.contains("code_challenge_method=S256"),
        "{login}"
    );
    let browsed = Command::new(&python)
        .args([
            "-c",
            "import sys, urllib.request; urllib.request.urlopen(sys.argv[1]).read()",
            &authorization_url,
        ])
        .status()
        .unwrap();
    assert!(browsed.success());
    let mut state = serde_json::Value::Null;
    for attempt in 0..100 {
        let servers = ask(
            &format!("s{attempt}"),
            serde_json::json!({"type": "get_mcp_servers"}),
        );
        state = servers["data"]["servers"][0].clone();
        if state["state"] == "connected" {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(state["state"], "connected", "{state}");
    assert_eq!(state["tools"].as_array().map(Vec::len), Some(4), "{state}");
    let logout = ask(
        "2",
        serde_json::json!({"type": "mcp_logout", "server": "docs"}),
    );
    assert_eq!(logout["success"], true, "{logout}");
    assert_eq!(logout["data"]["removed"], true, "{logout}");
    assert!(
        logout["data"]["revocation"]
            .as_str()
            .is_some_and(|said| said.starts_with("tokens revoked at ")),
        "{logout}"
    );
    assert_eq!(
        logout["data"]["tools"].as_array().map(Vec::len),
        Some(4),
        "{logout}"
    );
    let token_file = logout["data"]["tokenFile"].as_str().unwrap().to_owned();
    assert!(!Path::new(&token_file).exists(), "{token_file} still there");
    for attempt in 0..100 {
        let servers = ask(
            &format!("o{attempt}"),
            serde_json::json!({"type": "get_mcp_servers"}),
        );
        state = servers["data"]["servers"][0].clone();
        if state["state"] != "connected" {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_ne!(state["state"], "connected", "{state}");
    let again = ask(
        "3",
        serde_json::json!({"type": "mcp_logout", "server": "docs"}),
    );
    assert_eq!(again["data"]["removed"], false, "{again}");
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
}
