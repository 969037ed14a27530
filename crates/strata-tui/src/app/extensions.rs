//! `/extensions` and `/hooks`: what the run loaded, from where, and how each extension is
//! doing (the lines are strata-host's, shared with rpc's `get_extensions` / `get_hooks`).
//! Also the running extensions' slash commands: `/name args` runs one on the worker (a
//! built-in of the same name wins) and shows its text, which never reaches the model.

use strata_host::Loaded;
use strata_host::loaded::ExtensionCommand;

use super::super::command;
use super::super::worker::{Command, Reply};
use super::{App, Item, Level};

/// What the worker shows for `text` (`/name args`) run as an extension's command: its text
/// under `/name (extension NAME)`, or the error naming the extension.
pub async fn extension_command_reply(loaded: &Loaded, text: &str) -> Reply {
    match loaded.run_command(text).await {
        Some(Ok(output)) => Reply::Block {
            title: format!("/{} (extension {})", output.name, output.extension),
            lines: output.text.lines().map(str::to_owned).collect(),
        },
        Some(Err(error)) => Reply::Error(error),
        // It stopped between the editor and the worker.
        None => Reply::Error(format!("no running extension serves {}", text.trim())),
    }
}

impl App {
    /// Sets what `/extensions` and `/hooks` show.
    pub fn set_loaded(&mut self, loaded: strata_host::Loaded) {
        self.loaded = Some(loaded);
    }

    pub(super) fn extensions_command(&mut self) {
        let loaded = self.loaded.clone().unwrap_or_default();
        let mut lines = loaded.extension_lines(&self.status.attributed);
        lines.extend(
            loaded
                .commands()
                .iter()
                .filter(|c| command::is_builtin(&format!("/{}", c.name)))
                .map(|c| {
                    format!(
                        "/{} of extension `{}` is not run here: the built-in /{} wins",
                        c.name, c.extension, c.name
                    )
                }),
        );
        self.items.push(Item::Block {
            title: "extensions".into(),
            lines,
        });
    }

    /// The running extensions' commands a built-in does not shadow (for `/help`, completion
    /// and the hint line).
    pub fn extension_commands(&self) -> Vec<ExtensionCommand> {
        let Some(loaded) = &self.loaded else {
            return Vec::new();
        };
        loaded
            .commands()
            .into_iter()
            .filter(|c| !command::is_builtin(&format!("/{}", c.name)))
            .collect()
    }

    /// `text` (`/name args`, no built-in) names a running extension's command: sends it to
    /// the worker and says so; false when it names none.
    pub(super) fn run_extension_command(&mut self, text: &str) -> bool {
        let Some((name, _)) = strata_host::loaded::split_command(text) else {
            return false;
        };
        if !self.extension_commands().iter().any(|c| c.name == name) {
            return false;
        }
        if self.busy.is_some() {
            self.notice(
                Level::Warning,
                "the agent is working: wait for it, or abort with Esc / Ctrl+C",
            );
            return true;
        }
        self.send(Command::RunExtension(text.trim().to_owned()));
        true
    }

    pub(super) fn hooks_command(&mut self) {
        let loaded = self.loaded.clone().unwrap_or_default();
        self.items.push(Item::Block {
            title: "hooks".into(),
            lines: loaded.hook_lines(&self.status.attributed),
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use ratatui::crossterm::event::KeyCode;

    use super::super::super::testing::{app, key, type_text};
    use super::super::Effect;
    use super::*;

    fn run(app: &mut App, text: &str) {
        type_text(app, text);
        app.on_key(key(KeyCode::Enter), Instant::now());
    }

    fn last_block(app: &App) -> (String, Vec<String>) {
        app.items
            .iter()
            .rev()
            .find_map(|item| match item {
                Item::Block { title, lines } => Some((title.clone(), lines.clone())),
                _ => None,
            })
            .unwrap_or_default()
    }

    #[test]
    fn extensions_and_hooks_list_what_the_run_loaded_and_why_one_failed() {
        let dir = tempfile::tempdir().unwrap();
        let global = dir.path().join("user");
        std::fs::create_dir_all(&global).unwrap();
        std::fs::write(
            global.join("config.toml"),
            "pi_models = false\n[extensions.gone]\ncommand = \"/nonexistent/strata-ext\"\n",
        )
        .unwrap();
        std::fs::write(
            global.join("hooks.json"),
            r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"command": "echo checked", "timeout": 5}]}]}}"#,
        )
        .unwrap();
        let sources = strata_host::Sources {
            global_dir: Some(global.clone()),
            project_dir: dir.path().to_path_buf(),
        };
        let setup = strata_host::Setup::load_in(
            sources,
            dir.path().to_path_buf(),
            &strata_host::Overrides::default(),
        )
        .unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(setup.extension_set().unwrap().start());
        let mut app = app();
        run(&mut app, "/extensions");
        let (_, lines) = last_block(&app);
        assert!(
            lines[0].starts_with("no extensions configured"),
            "{lines:?}"
        );
        app.set_loaded(setup.loaded());
        run(&mut app, "/extensions");
        let (title, lines) = last_block(&app);
        assert_eq!(title, "extensions");
        assert_eq!(
            lines[0], "gone  failed  /nonexistent/strata-ext",
            "{lines:?}"
        );
        assert_eq!(
            lines[1],
            format!("  from {}", global.join("config.toml").display())
        );
        assert!(
            lines[2].starts_with("  ! extension `gone` could not start"),
            "{lines:?}"
        );
        run(&mut app, "/hooks");
        let (title, lines) = last_block(&app);
        assert_eq!(title, "hooks");
        assert_eq!(lines[0], "PreToolUse [Bash]  echo checked", "{lines:?}");
        assert_eq!(
            lines[1],
            format!("  user {}  timeout 5s", global.join("hooks.json").display())
        );
    }

    #[test]
    fn an_extensions_command_runs_on_the_worker_shows_its_text_and_is_never_a_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let global = dir.path().join("user");
        std::fs::create_dir_all(&global).unwrap();
        let ext = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../strata-extensions/tests/ext.py");
        std::fs::write(
            global.join("config.toml"),
            format!(
                "pi_models = false\n[extensions.py]\ncommand = \"python3\"\nargs = [{:?}, \"good\", \"py\"]\ntimeout = 2\n",
                ext.display().to_string()
            ),
        )
        .unwrap();
        let sources = strata_host::Sources {
            global_dir: Some(global),
            project_dir: dir.path().to_path_buf(),
        };
        let setup = strata_host::Setup::load_in(
            sources,
            dir.path().to_path_buf(),
            &strata_host::Overrides::default(),
        )
        .unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(setup.extension_set().unwrap().start());
        let mut app = app();
        app.set_loaded(setup.loaded());

        // Listed and completed with its description and extension; `/help` is the built-in's.
        run(&mut app, "/help");
        let (_, lines) = last_block(&app);
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("/echo")
                    && l.ends_with("says its arguments back (extension py)")),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.contains("shadowed")), "{lines:?}");
        type_text(&mut app, "/ec");
        app.on_key(key(KeyCode::Tab), Instant::now());
        assert_eq!(app.editor.text(), "/echo ");
        app.editor.set_text("");
        run(&mut app, "/extensions");
        let (_, lines) = last_block(&app);
        assert!(
            lines.contains(
                &"/help of extension `py` is not run here: the built-in /help wins".to_owned()
            ),
            "{lines:?}"
        );
        app.take_effects();

        // Run on the worker, not sent to the model; the worker's reply is the extension's text.
        run(&mut app, "/echo hello there");
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::RunExtension(
                "/echo hello there".into()
            ))]
        );
        assert!(!app.items.iter().any(|i| matches!(i, Item::User(_))));
        let reply = runtime.block_on(extension_command_reply(
            &setup.loaded(),
            "/echo hello there",
        ));
        app.on_reply(reply);
        app.on_reply(Reply::Idle);
        assert_eq!(
            last_block(&app),
            (
                "/echo (extension py)".to_owned(),
                vec!["echo: hello there".to_owned()]
            )
        );
        assert!(app.busy.is_none());

        // A command that does not answer in time is an error naming the extension.
        let reply = runtime.block_on(extension_command_reply(&setup.loaded(), "/echo hang"));
        let Reply::Error(error) = reply else {
            panic!("expected an error, got {reply:?}");
        };
        assert!(
            error.starts_with("/echo: extension `py` did not answer `command`"),
            "{error}"
        );
        // Stopped after the timeout: its commands are gone, so `/echo` is unknown again.
        run(&mut app, "/echo again");
        assert!(app.take_effects().is_empty());
    }

    #[test]
    fn the_footer_and_context_say_what_hooks_and_extensions_cost_in_cache_writes() {
        use strata_accounting::Attribution;
        let mut app = app();
        let footer = |app: &App| -> String {
            crate::view::footer_lines(app, 200)
                .iter()
                .map(|line| line.to_string())
                .collect()
        };
        assert!(!footer(&app).contains("hooks/extensions"));
        // 4,000 characters each: 1,000 tokens at $3.75 per million.
        app.status.attributed = vec![
            Attribution::of("extension guard", &"x".repeat(4_000), 3.75),
            Attribution::of("echo rule", &"y".repeat(4_000), 3.75),
        ];
        assert!(
            footer(&app).contains("· hooks/extensions $0.0075"),
            "{}",
            footer(&app)
        );
        let lines = strata_accounting::attribution_lines(&app.status.attributed);
        assert_eq!(
            lines,
            vec![
                "hooks and extensions: 2000 tokens written to the cache, $0.007500 (included in the cost)",
                "  extension guard  1000 tokens  $0.003750",
                "  echo rule  1000 tokens  $0.003750",
            ]
        );
    }
}
