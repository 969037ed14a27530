//! `/extensions` and `/hooks`: what the run loaded, from where, and how each extension is
//! doing (the lines are strata-host's, shared with rpc's `get_extensions` / `get_hooks`).

use super::{App, Item};

impl App {
    /// Sets what `/extensions` and `/hooks` show.
    pub fn set_loaded(&mut self, loaded: strata_host::Loaded) {
        self.loaded = Some(loaded);
    }

    pub(super) fn extensions_command(&mut self) {
        let loaded = self.loaded.clone().unwrap_or_default();
        self.items.push(Item::Block {
            title: "extensions".into(),
            lines: loaded.extension_lines(&self.status.attributed),
        });
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
    fn the_footer_and_context_say_what_hooks_and_extensions_cost_in_cache_writes() {
        use strata_accounting::Attribution;
        let mut app = app();
        let footer = |app: &App| -> String {
            crate::tui::view::footer_lines(app, 200)
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
        let lines = crate::tui::stats::attribution_lines(&app.status.attributed);
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
