//! Opening a URL for the user (an MCP server's sign-in page), from the CLI and the TUI alike.

/// Opens `url` with `$BROWSER` when it is set (never required: the URL is printed too), and
/// says what happened.
pub fn open(url: &str) -> String {
    let Some(browser) = std::env::var_os("BROWSER").filter(|value| !value.is_empty()) else {
        return "Open it in any browser ($BROWSER is not set, so strata opens none).".to_owned();
    };
    // `$BROWSER` may list several commands separated by `:`; the first is used.
    let browser = browser.to_string_lossy().into_owned();
    let first = browser.split(':').next().unwrap_or_default();
    let mut words = first.split_whitespace();
    let Some(program) = words.next() else {
        return "Open it in any browser ($BROWSER is empty).".to_owned();
    };
    match std::process::Command::new(program)
        .args(words)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(mut child) => {
            // Reaped in the background: a browser launcher may outlive the command.
            std::thread::spawn(move || child.wait());
            format!("Opened with $BROWSER ({program}).")
        }
        Err(error) => {
            format!("$BROWSER ({program}) did not start ({error}); open the URL yourself.")
        }
    }
}
