//! The interactive terminal UI (ratatui + crossterm).
//!
//! Three parts that never mix: `app::App` holds the state and turns keys and agent events
//! into effects; `view` draws an `&App`; this module runs the loop that reads the terminal,
//! forwards effects to the agent task (`worker`) and draws. The agent task owns the agent,
//! because a prompt needs it mutably for the whole run; steering and abort go through its
//! shared `Control` so they work while a run is going.

mod app;
mod children;
mod command;
mod editor;
mod first_run;
mod info;
mod login;
mod markdown;
mod models;
mod picker;
mod shell;
pub mod stats;
mod theme;
mod view;
mod worker;
mod wrap;

#[cfg(test)]
mod screens;
#[cfg(test)]
mod testing;

use std::io::Stdout;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{
    self, DisableBracketedPaste, EnableBracketedPaste, Event, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use ratatui::crossterm::execute;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// Whether the terminal UI puts the permission gate's questions to the user (otherwise such
/// calls are refused with how to allow them).
pub const ANSWERS_PERMISSIONS: bool = true;

use app::{App, Effect};
use strata_host::Setup;
use worker::{UiEvent, Worker};

/// How the UI starts: prompts offered in the editor one per Enter, and a banner.
#[derive(Debug, Clone, Default)]
pub struct TuiOptions {
    /// Prompts put in the editor one at a time (the next after each run ends).
    pub queued_prompts: Vec<String>,
    /// Text shown above the transcript.
    pub banner: Option<String>,
    /// Open the session picker first (`--resume`).
    pub resume: bool,
    /// Prompts sent at start, in turn (`strata "fix the test"`).
    pub initial_prompts: Vec<String>,
}

/// Runs the terminal UI until the user quits; without a model to choose (no key anywhere),
/// the first screen comes first and says what to do.
pub fn run(
    setup: Setup,
    runtime: &tokio::runtime::Runtime,
    options: TuiOptions,
) -> anyhow::Result<()> {
    let setup = if first_run::needed(&setup) {
        match first_run::run(setup)? {
            Some(setup) => setup,
            None => return Ok(()),
        }
    } else {
        setup
    };
    run_with(setup, runtime, options)
}

/// Runs the terminal UI with scripted prompts and a banner until the user quits.
pub fn run_with(
    setup: Setup,
    runtime: &tokio::runtime::Runtime,
    options: TuiOptions,
) -> anyhow::Result<()> {
    let built = {
        let _guard = runtime.enter();
        setup.build_agent()?
    };
    let (ui_tx, ui_rx) = unbounded_channel();
    let (command_tx, command_rx) = unbounded_channel();
    let mcp = app::McpHandle {
        manager: setup.mcp_manager(),
        runtime: runtime.handle().clone(),
        sign_ins: Default::default(),
    };
    // Why this model, when the user did not choose it, is said with the start's notices.
    let notices: Vec<String> = setup
        .notices
        .iter()
        .cloned()
        .chain(built.why.clone())
        .collect();
    let gate = setup.rules.gate.clone();
    let resumable = !setup.run.no_session;
    let theme = setup.config.theme.clone();
    let config_file = login::config_file(&setup);
    let header = info::header(&setup, &built.agent.config().model.qualified_id());
    let loaded = setup.loaded();
    // Extensions' questions reach the app with the agent's events (before they start).
    if let Some(mut calls) = setup.extension_ui().take() {
        let ui = ui_tx.clone();
        runtime.spawn(async move {
            while let Some(call) = calls.recv().await {
                if ui.send(UiEvent::Extension(call)).is_err() {
                    break;
                }
            }
        });
    }
    // Their commands are known from their handshakes: started now (their questions are
    // routed above), `/name` works before the first prompt, as Pi's do.
    let starting = loaded.clone();
    runtime.spawn(async move { starting.start_extensions().await });
    let worker = Worker::new(setup, built, ui_tx);
    let shell_cancel = worker.shell_cancel.clone();
    let task = runtime.spawn(worker.serve(command_rx));
    // The start-up header opens the transcript, above the demo's explanation if any.
    let banner = match options.banner {
        Some(banner) => format!("{header}\n\n{banner}"),
        None => header,
    };
    let mut app = App::new(Some(banner), options.queued_prompts);
    app.config_file = config_file;
    match theme.as_deref().map(theme::parse) {
        Some(Ok(theme)) => app.theme = theme,
        Some(Err(error)) => app.warn_at_start(format!("config.toml: {error}")),
        None => {}
    }
    app.set_permissions(gate);
    let mcp_manager = mcp.manager.clone();
    app.set_mcp(mcp);
    app.set_loaded(loaded);
    for notice in notices {
        app.warn_at_start(notice);
    }
    if options.resume {
        app.open_resume();
    }
    app.start_with(options.initial_prompts);
    let result = {
        let mut terminal = TerminalGuard::enter()?;
        event_loop(
            &mut terminal.terminal,
            &mut app,
            ui_rx,
            &command_tx,
            &shell_cancel,
        )
    };
    // Closing the command channel ends the task once the current command finishes.
    drop(command_tx);
    if let Some(control) = &app.control {
        control.abort();
    }
    runtime.block_on(async {
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        // Stdio servers (and what they started) end with the session.
        mcp_manager.shutdown().await;
    });
    // Left on the restored screen, as Pi leaves its transcript: what the session cost and how
    // to come back to it.
    if result.is_ok()
        && let Some(summary) = app.exit_summary(resumable)
    {
        println!("{summary}");
    }
    result
}

/// Raw mode, alternate screen and bracketed paste for as long as it lives; restored on drop
/// and by the panic hook, so neither an error nor a panic leaves the terminal unusable.
struct TerminalGuard {
    terminal: Terminal<CrosstermBackend<Stdout>>,
    /// Key disambiguation was switched on and must be switched off again.
    enhanced: bool,
}

impl TerminalGuard {
    fn enter() -> anyhow::Result<Self> {
        let terminal = ratatui::try_init().context("setting up the terminal")?;
        let mut stdout = std::io::stdout();
        // A paste arrives as one event, so its newlines do not send it.
        let _ = execute!(stdout, EnableBracketedPaste);
        // Where the terminal can, tell Shift+Enter from Enter (new line vs send).
        let enhanced = ratatui::crossterm::terminal::supports_keyboard_enhancement()
            .unwrap_or(false)
            && execute!(
                stdout,
                PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
            )
            .is_ok();
        Ok(Self { terminal, enhanced })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let mut stdout = std::io::stdout();
        if self.enhanced {
            let _ = execute!(stdout, PopKeyboardEnhancementFlags);
        }
        let _ = execute!(stdout, DisableBracketedPaste);
        ratatui::restore();
    }
}

fn event_loop(
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
    app: &mut App,
    mut ui_rx: UnboundedReceiver<UiEvent>,
    commands: &tokio::sync::mpsc::UnboundedSender<worker::Command>,
    shell: &shell::ShellCancel,
) -> anyhow::Result<()> {
    let mut tick: usize = 0;
    // The runtime that asked the last permission question, where its answer goes.
    let mut asking: Option<strata_runtime::RuntimeHandle> = None;
    let mut last_tick = Instant::now();
    let mut dirty = true;
    loop {
        if dirty {
            let mut max_scroll = None;
            terminal
                .draw(|frame| max_scroll = view::draw(frame, app, tick))
                .context("drawing the screen")?;
            if let Some(max) = max_scroll {
                app.scroll = app.scroll.min(max);
                if app.scroll == max {
                    app.reached_top();
                }
            }
            dirty = false;
        }
        if event::poll(Duration::from_millis(30)).context("reading the terminal")? {
            // Take everything that is queued so a paste or fast typing draws once.
            loop {
                match event::read().context("reading the terminal")? {
                    Event::Key(key) => app.on_key(key, Instant::now()),
                    Event::Paste(text) => app.on_paste(&text),
                    Event::Resize(..) => {}
                    _ => continue,
                }
                dirty = true;
                if !event::poll(Duration::ZERO).unwrap_or(false) {
                    break;
                }
            }
        }
        loop {
            match ui_rx.try_recv() {
                Ok(UiEvent::Agent(event)) => app.on_agent(event),
                Ok(UiEvent::Reply(reply)) => app.on_reply(reply),
                Ok(UiEvent::Extension(call)) => app.extension_ui(call),
                Ok(UiEvent::Permission(request, runtime)) => {
                    asking = Some(runtime);
                    app.permission_requested(request);
                }
                Err(tokio::sync::mpsc::error::TryRecvError::Empty) => break,
                Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => {
                    anyhow::bail!("the agent task stopped unexpectedly");
                }
            }
            dirty = true;
        }
        for effect in app.take_effects() {
            match effect {
                Effect::Worker(command) => {
                    commands
                        .send(command)
                        .map_err(|_| anyhow::anyhow!("the agent task stopped"))?;
                }
                Effect::Steer(text) => {
                    if let Some(control) = &app.control {
                        control.steer(text);
                    }
                }
                Effect::Abort => {
                    if let Some(control) = &app.control {
                        control.abort();
                    }
                    shell.cancel();
                }
                Effect::Clipboard(text) => {
                    use std::io::Write as _;
                    let mut stdout = std::io::stdout();
                    let _ = stdout.write_all(info::osc52(&text).as_bytes());
                    let _ = stdout.flush();
                }
                Effect::ListChildren(parent) => app.children_listed(children::list(&parent)),
                Effect::OpenChild(path) => app.show_child(children::open(&path)),
                Effect::AnswerPermission { id, answer } => {
                    if let Some(runtime) = &asking {
                        let _ = runtime.send(strata_runtime::Op::AnswerPermission { id, answer });
                    }
                }
            }
        }
        if app.quit {
            return Ok(());
        }
        if app.busy.is_some() && last_tick.elapsed() >= Duration::from_millis(100) {
            tick = tick.wrapping_add(1);
            last_tick = Instant::now();
            dirty = true;
        }
    }
}
