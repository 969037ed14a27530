//! The terminal UI's state: transcript, editor, footer counters, overlays. Keys and agent
//! events go in; [`Effect`]s (commands for the agent task, steering, abort) come out. Nothing
//! here touches the terminal, so every behaviour is testable by feeding events.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use strata_agent::{AgentEvent, Control};
use strata_session::{AgentMessage, StopReason};

use super::command::{self, Slash};
use super::editor::Editor;
use super::picker::{Picker, PickerItem, PickerKind, resume_path};
use super::stats::{self, Stats, ToolChangeCost, ToolCostBasis};
use super::worker::{Command, ForkAt, Reply, Status, TreeRow};
use strata_host::model::THINKING_LEVELS;

mod children;
pub mod complete;
mod cycle;
mod extension_ui;
mod extensions;
mod habits;
mod leave;
mod mcp;
mod permissions;
mod rewind;
mod settings;

pub use children::ChildStatus;
pub use extensions::extension_command_reply;
pub use mcp::McpHandle;

/// How a `/tree` row that opens a child agent keys its picker item (before the child's path).
const CHILD_KEY: &str = "child:";

/// Two Ctrl+C within this long quit.
const QUIT_WINDOW: Duration = Duration::from_millis(1500);
/// Lines PageUp / PageDown move.
const PAGE: usize = 10;

/// One thing in the transcript.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A prompt the user sent.
    User(String),
    /// Answer text (markdown).
    Assistant(String),
    /// Reasoning, shown collapsed unless expanded.
    Thinking(String),
    /// A tool call with its arguments and output.
    Tool(ToolItem),
    /// A line from strata itself.
    Notice(Notice),
    /// A titled block of preformatted lines (`/context`, `/help`).
    Block {
        /// The title.
        title: String,
        /// The lines.
        lines: Vec<String>,
    },
}

/// A message from strata, with how loud it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Info, warning or error.
    pub level: Level,
    /// The text.
    pub text: String,
}

/// How loud a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Plain information.
    Info,
    /// Something to notice.
    Warning,
    /// Something failed.
    Error,
}

/// A tool call in the transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolItem {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments: raw JSON while streaming, compact JSON once complete.
    pub arguments: String,
    /// Output so far.
    pub output: String,
    /// Where the call stands.
    pub state: ToolState,
    /// A unified diff of what the call changed (the edit tool's details).
    pub diff: Option<String>,
}

/// Where a tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolState {
    /// The model is still writing its arguments.
    Streaming,
    /// Waiting for or running the tool.
    Running,
    /// Finished.
    Done,
    /// Failed.
    Failed,
}

/// What the event loop must do for the app.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send a command to the agent task.
    Worker(Command),
    /// Queue a steering message in the running turn.
    Steer(String),
    /// Abort the running turn.
    Abort,
    /// Put text on the terminal's clipboard (OSC 52).
    Clipboard(String),
    /// Read the children of this session file for `/agents` (the UI loop reads them itself:
    /// the agent task answers only between runs).
    ListChildren(PathBuf),
    /// Read a child's session file to show it read-only.
    OpenChild(PathBuf),
    /// Answer the permission gate's question (`Op::AnswerPermission`).
    AnswerPermission {
        /// The question's id.
        id: String,
        /// The answer.
        answer: strata_runtime::permissions::Answer,
    },
}

/// The whole UI state.
#[derive(Debug)]
pub struct App {
    /// A line shown above the transcript (the demo's explanation).
    pub banner: Option<String>,
    /// The transcript.
    pub items: Vec<Item>,
    /// The prompt editor.
    pub editor: Editor,
    /// Footer counters.
    pub stats: Stats,
    /// Model, session and tool state from the agent task.
    pub status: Status,
    /// What the agent task is busy with (`None`: idle).
    pub busy: Option<String>,
    /// Tool outputs expanded.
    pub expand_tools: bool,
    /// Thinking expanded.
    pub expand_thinking: bool,
    /// Lines scrolled up from the bottom (0: follow the end).
    pub scroll: usize,
    /// A list drawn over the transcript.
    pub picker: Option<Picker>,
    /// Messages to send as prompts once the run ends (Alt+Enter while busy).
    pub follow_ups: VecDeque<String>,
    /// Steering messages sent and not yet seen in the session.
    pub steering: Vec<String>,
    /// Prompts offered one per Enter (the demo's script).
    pub offered: VecDeque<String>,
    /// A short hint under the editor.
    pub hint: Option<String>,
    /// Set when the user asked to quit.
    pub quit: bool,
    /// The steering queue and abort switch of the current agent.
    pub control: Option<Control>,
    effects: Vec<Effect>,
    /// Commands sent to the agent task and not yet answered with `Idle`.
    in_flight: usize,
    /// A prompt is running (steering reaches it); otherwise busy means compacting or moving.
    prompt_running: bool,
    /// Prompts sent behind other commands: shown when their run starts, after those
    /// commands' replies.
    deferred_prompts: VecDeque<String>,
    last_ctrl_c: Option<Instant>,
    /// Content block index of a streaming tool call → its item.
    calls: HashMap<usize, usize>,
    /// Tool-call items started in the message being streamed, in order.
    open_calls: Vec<usize>,
    /// The text or thinking item being streamed into.
    open_text: Option<usize>,
    open_thinking: Option<usize>,
    /// The session's MCP servers, for `/mcp`.
    mcp: Option<mcp::McpHandle>,
    /// The run's extensions and hooks, for `/extensions` and `/hooks`.
    loaded: Option<strata_host::Loaded>,
    /// Extensions' questions and footer texts (app/extension_ui.rs).
    extension_asks: extension_ui::ExtensionAsks,
    /// The project's files, for `@` completion.
    completion: complete::Completion,
    /// The colour theme ([`super::theme::THEMES`]).
    pub theme: &'static str,
    /// The user's config.toml, where `/settings` saves.
    pub config_file: Option<PathBuf>,
    /// What the footer says before a session is open (none can be yet).
    pub setup_note: Option<String>,
    /// The permission gate and its questions (app/permissions.rs).
    permissions: permissions::Permissions,
    /// Child agents seen, and the one viewed (app/children.rs).
    pub children: children::Children,
}

impl App {
    /// An empty app with the demo's banner and scripted prompts (if any).
    pub fn new(banner: Option<String>, offered: Vec<String>) -> Self {
        let mut app = Self {
            banner,
            items: Vec::new(),
            editor: Editor::new(),
            stats: Stats::default(),
            status: Status::default(),
            busy: None,
            expand_tools: false,
            expand_thinking: false,
            scroll: 0,
            picker: None,
            follow_ups: VecDeque::new(),
            steering: Vec::new(),
            offered: offered.into(),
            hint: None,
            quit: false,
            control: None,
            effects: Vec::new(),
            in_flight: 0,
            prompt_running: false,
            deferred_prompts: VecDeque::new(),
            last_ctrl_c: None,
            calls: HashMap::new(),
            open_calls: Vec::new(),
            open_text: None,
            open_thinking: None,
            mcp: None,
            loaded: None,
            extension_asks: Default::default(),
            completion: Default::default(),
            theme: "dark",
            config_file: None,
            setup_note: None,
            permissions: permissions::Permissions::default(),
            children: children::Children::default(),
        };
        app.offer_next();
        app
    }

    /// Takes the effects produced since the last call.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    fn notice(&mut self, level: Level, text: impl Into<String>) {
        self.items.push(Item::Notice(Notice {
            level,
            text: text.into(),
        }));
    }

    /// Opens the session picker, as `/resume` does (`strata --resume`).
    pub fn open_resume(&mut self) {
        self.send(Command::Sessions);
    }

    fn send(&mut self, command: Command) {
        self.in_flight += 1;
        self.effects.push(Effect::Worker(command));
    }

    /// Puts the next scripted prompt in an empty editor. It stays offered until a prompt is
    /// sent: a slash command typed in its place (or a cleared editor) does not use it up, so
    /// the script stays in step with the scripted model whatever the user types between.
    fn offer_next(&mut self) {
        if self.busy.is_none()
            && self.editor.is_empty()
            && let Some(next) = self.offered.front()
        {
            let next = next.clone();
            self.editor.set_text(&next);
            self.hint = Some("Enter sends the scripted prompt (edit it first if you like)".into());
        }
    }

    // ----- keys -------------------------------------------------------------------------

    /// Handles a pasted text.
    pub fn on_paste(&mut self, text: &str) {
        if let Some(picker) = &mut self.picker {
            text.chars()
                .filter(|c| !c.is_control())
                .for_each(|c| picker.type_char(c));
        } else {
            self.editor.insert_str(text);
        }
    }

    /// Handles a key press at `now`.
    pub fn on_key(&mut self, key: KeyEvent, now: Instant) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if ctrl && key.code == KeyCode::Char('c') {
            self.ctrl_c(now);
            return;
        }
        if self.picker.is_some() {
            self.picker_key(key);
            return;
        }
        self.hint = None;
        if self.habit_key(key) {
            return;
        }
        match key.code {
            KeyCode::Enter if alt => {
                if self.busy.is_some() {
                    self.follow_up();
                } else {
                    self.editor.newline();
                }
            }
            KeyCode::Enter if key.modifiers.contains(KeyModifiers::SHIFT) => self.editor.newline(),
            KeyCode::Char('j') if ctrl => self.editor.newline(),
            KeyCode::Enter => {
                let text = self.editor.text();
                if text.ends_with('\\') {
                    self.editor.backspace();
                    self.editor.newline();
                } else {
                    self.submit();
                }
            }
            KeyCode::Char('d') if ctrl => {
                if self.editor.is_empty() {
                    self.request_quit();
                } else {
                    self.editor.delete();
                }
            }
            KeyCode::Char('o') if ctrl => self.expand_tools = !self.expand_tools,
            KeyCode::Char('t') if ctrl => self.expand_thinking = !self.expand_thinking,
            KeyCode::Char('a') if ctrl => self.editor.home(),
            KeyCode::Char('e') if ctrl => self.editor.end(),
            KeyCode::Char('u') if ctrl => self.editor.delete_to_start(),
            KeyCode::Char('k') if ctrl => self.editor.delete_to_end(),
            KeyCode::Char('w') if ctrl => self.editor.delete_word(),
            KeyCode::Backspace if alt || ctrl => self.editor.delete_word(),
            // Shift+Tab is Pi's thinking key (app/habits.rs); modes cycle on Alt+M.
            KeyCode::Char('m') if alt => self.cycle_mode(),
            KeyCode::Char(ch) if !ctrl => self.editor.insert_char(ch),
            KeyCode::Backspace => self.editor.backspace(),
            KeyCode::Delete => self.editor.delete(),
            KeyCode::Left => self.editor.left(),
            KeyCode::Right => self.editor.right(),
            KeyCode::Home => self.editor.home(),
            KeyCode::End => self.editor.end(),
            KeyCode::Up => self.editor.up(),
            KeyCode::Down => self.editor.down(),
            KeyCode::PageUp => self.scroll += PAGE,
            KeyCode::PageDown => self.scroll = self.scroll.saturating_sub(PAGE),
            KeyCode::Tab if self.editor.is_command() => {
                let text = self.editor.text();
                if !text.contains(' ')
                    && let Some(done) = command::complete(&text, &self.extension_commands())
                {
                    self.editor.set_text(&done);
                }
            }
            KeyCode::Esc if self.close_child_view() => {}
            KeyCode::Esc if self.busy.is_some() => {
                self.effects.push(Effect::Abort);
                self.hint = Some("aborting…".into());
            }
            _ => {}
        }
    }

    fn ctrl_c(&mut self, now: Instant) {
        let twice = self
            .last_ctrl_c
            .is_some_and(|last| now.duration_since(last) < QUIT_WINDOW);
        self.last_ctrl_c = Some(now);
        if twice {
            self.request_quit();
            return;
        }
        if self.picker.is_some() {
            self.close_picker();
            return;
        }
        if self.busy.is_some() {
            self.effects.push(Effect::Abort);
            self.hint = Some("aborting… (Ctrl+C again quits)".into());
        } else if !self.editor.is_empty() {
            self.editor.clear();
        } else {
            self.hint = Some("Ctrl+C again quits".into());
        }
    }

    fn request_quit(&mut self) {
        if self.busy.is_some() {
            self.effects.push(Effect::Abort);
        }
        self.quit = true;
    }

    fn follow_up(&mut self) {
        let text = self.editor.submit();
        if !text.trim().is_empty() {
            self.follow_ups.push_back(text);
        }
    }

    fn submit(&mut self) {
        // A refusal waiting for its reason takes the editor's text, even none.
        if self.take_refusal_reason() || self.take_extension_input() {
            return;
        }
        let text = self.editor.text();
        if text.trim().is_empty() {
            return;
        }
        if self.editor.is_command() {
            self.editor.submit();
            match command::parse(&text) {
                Ok(slash) => self.slash(slash),
                Err(_) if self.run_extension_command(&text) => {}
                Err(error) => self.notice(Level::Error, error),
            }
            self.offer_next();
            return;
        }
        if self.shell_command(&text) {
            return;
        }
        let text = self.editor.submit();
        self.scroll = 0;
        // Any prompt sent, the scripted one or the user's own, is one step of the script.
        self.offered.pop_front();
        if self.prompt_running {
            self.steering.push(text.clone());
            self.effects.push(Effect::Steer(text));
            return;
        }
        if self.busy.is_some() {
            // Compacting or summarizing: nothing to steer, so it runs when that is done.
            self.follow_ups.push_back(text);
            return;
        }
        self.start_prompt(text);
    }

    /// Sends `prompts` at start: the first now, the others in turn as follow-ups.
    pub fn start_with(&mut self, prompts: Vec<String>) {
        let mut prompts = prompts.into_iter();
        if let Some(first) = prompts.next() {
            self.start_prompt(first);
            self.follow_ups.extend(prompts);
        }
    }

    fn start_prompt(&mut self, text: String) {
        if self.in_flight == 0 {
            self.items.push(Item::User(text.clone()));
        } else {
            self.deferred_prompts.push_back(text.clone());
        }
        self.busy = Some("working".into());
        self.prompt_running = true;
        self.send(Command::Prompt(text));
    }

    // ----- slash commands ---------------------------------------------------------------

    fn slash(&mut self, slash: Slash) {
        let allowed_while_busy = matches!(
            slash,
            Slash::Quit
                | Slash::Help
                | Slash::Hotkeys
                | Slash::Copy
                | Slash::Context
                | Slash::Agents
                | Slash::Mcp(None)
                | Slash::Extensions
                | Slash::Hooks
                | Slash::Mode(_)
        );
        if self.busy.is_some() && !allowed_while_busy {
            self.notice(
                Level::Warning,
                "the agent is working: wait for it, or abort with Esc / Ctrl+C",
            );
            return;
        }
        match slash {
            Slash::Quit => self.request_quit(),
            Slash::Mode(arg) => self.mode_command(arg),
            Slash::Rewind => self.send(Command::RewindFiles),
            Slash::Help => self.items.push(Item::Block {
                title: "commands and keys".into(),
                lines: command::help_lines(&self.extension_commands()),
            }),
            Slash::Model(Some(name)) => self.model_chosen(name),
            Slash::Model(None) => self.model_picker(),
            Slash::Thinking(Some(level)) => {
                if THINKING_LEVELS.contains(&level.as_str()) {
                    self.send(Command::Thinking(level));
                } else {
                    self.notice(
                        Level::Error,
                        format!(
                            "unknown thinking level `{level}` (one of {})",
                            THINKING_LEVELS.join(", ")
                        ),
                    );
                }
            }
            Slash::Thinking(None) => {
                let items = THINKING_LEVELS
                    .iter()
                    .map(|level| PickerItem::new(*level, "", *level))
                    .collect();
                let mut picker = Picker::new(PickerKind::Thinking, "Thinking level", items);
                picker.select_key(&self.status.thinking);
                self.picker = Some(picker);
            }
            Slash::Compact(focus) => {
                self.busy = Some("compacting".into());
                self.send(Command::Compact(focus));
            }
            Slash::Tree => self.send(Command::Tree),
            Slash::Fork => self.send(Command::ForkPoints),
            Slash::New => self.send(Command::New),
            Slash::Resume => self.open_resume(),
            Slash::Name(Some(name)) => self.send(Command::Name(name)),
            Slash::Name(None) => self.notice(Level::Error, "usage: /name text"),
            Slash::Label(label) => self.send(Command::Label(label)),
            Slash::Tools(toggles) if toggles.is_empty() => self.tools_picker(),
            Slash::Tools(toggles) => {
                let enable: Vec<String> = toggles
                    .iter()
                    .filter(|t| t.enable)
                    .map(|t| t.name.clone())
                    .collect();
                let disable: Vec<String> = toggles
                    .iter()
                    .filter(|t| !t.enable)
                    .map(|t| t.name.clone())
                    .collect();
                self.change_tools(enable, disable);
            }
            Slash::Context => {
                if let Some(cause) = &self.stats.cache_break {
                    let verdict = if cause.is_expected() {
                        "expected"
                    } else {
                        "unexpected"
                    };
                    self.notice(
                        Level::Info,
                        format!("last cache break ({verdict}): {}", cause.describe()),
                    );
                }
                self.send(Command::Context);
            }
            Slash::Mcp(args) => self.mcp_command(args),
            Slash::Extensions => self.extensions_command(),
            Slash::Hooks => self.hooks_command(),
            Slash::Agents => self.agents_command(),
            Slash::Export(path) => self.send(Command::Export(path.map(PathBuf::from))),
            Slash::Trust => self.trust_project(),
            Slash::Share(path) => self.share(path),
            Slash::Session => self.send(Command::SessionInfo),
            Slash::Copy => self.copy_last_answer(),
            Slash::Hotkeys => self.show_hotkeys(),
            Slash::Settings => self.open_settings(),
            Slash::Login(args) => self.login(args),
        }
    }

    /// A warning shown before anything else (settings an untrusted project was denied).
    pub fn warn_at_start(&mut self, text: impl Into<String>) {
        self.notice(Level::Warning, text);
    }

    /// `/trust`: saves the decision in the user's `trust.json`; it applies at the next start,
    /// since provider rows and prompts were built when this run began.
    fn trust_project(&mut self) {
        let sources = strata_host::config::Sources::from_environment();
        let Some(global) = sources.global_dir else {
            self.notice(Level::Error, "no user config directory: set HOME");
            return;
        };
        match strata_host::trust::save(&global, &sources.project_dir, true) {
            Ok(file) => self.notice(
                Level::Info,
                format!(
                    "trusted {}: its .strata/ settings apply from the next start (saved in {})",
                    sources.project_dir.display(),
                    file.display()
                ),
            ),
            Err(e) => self.notice(Level::Error, format!("could not save trust: {e:#}")),
        }
    }

    fn model_picker(&mut self) {
        let items = self
            .status
            .models
            .iter()
            .map(|m| PickerItem::new(m.name.clone(), m.detail.clone(), m.name.clone()))
            .collect();
        let mut picker = Picker::new(PickerKind::Model, "Model (type to filter)", items);
        picker.select_key(&self.status.model);
        self.picker = Some(picker);
    }

    fn tools_picker(&mut self) {
        let items = self
            .status
            .tools
            .iter()
            .map(|tool| {
                let mut item = PickerItem::new(
                    tool.name.clone(),
                    format!("≈{} tokens", stats::tokens(tool.tokens)),
                    tool.name.clone(),
                );
                item.checked = Some(tool.enabled);
                item
            })
            .collect();
        self.picker = Some(Picker::new(
            PickerKind::Tools,
            "Tools (Space toggles, Enter applies)",
            items,
        ));
    }

    /// What enabling `enable` and disabling `disable` would cost the next request.
    pub fn tool_change(&self, enable: &[String], disable: &[String]) -> ToolChangeCost {
        let live = |name: &str| {
            self.status
                .tools
                .iter()
                .any(|t| t.name == name && t.enabled)
        };
        let added: Vec<(String, u64)> = enable
            .iter()
            .filter(|name| !live(name))
            .map(|name| {
                let tokens = self
                    .status
                    .tools
                    .iter()
                    .find(|t| &t.name == name)
                    .map_or(0, |t| t.tokens);
                (name.clone(), tokens)
            })
            .collect();
        let removed: Vec<String> = disable.iter().filter(|name| live(name)).cloned().collect();
        stats::tool_change_cost(&self.cost_basis(), &added, &removed)
    }

    fn cost_basis(&self) -> ToolCostBasis {
        ToolCostBasis {
            mid_conversation_system: self.status.mid_conversation_system,
            system_reminders: self.status.system_reminders,
            tool_addition: self.status.tool_addition,
            deferred_tools: self.status.deferred_tools,
            prices: self.status.prices,
            chapter_tokens: self.status.chapter_tokens,
        }
    }

    /// The tool changes the open tools picker holds: (enable, disable).
    pub fn picked_tool_change(&self) -> Option<(Vec<String>, Vec<String>)> {
        let picker = self
            .picker
            .as_ref()
            .filter(|p| p.kind == PickerKind::Tools)?;
        let mut enable = Vec::new();
        let mut disable = Vec::new();
        for item in &picker.items {
            let live = self
                .status
                .tools
                .iter()
                .any(|t| t.name == item.key && t.enabled);
            match item.checked {
                Some(true) if !live => enable.push(item.key.clone()),
                Some(false) if live => disable.push(item.key.clone()),
                _ => {}
            }
        }
        Some((enable, disable))
    }

    fn change_tools(&mut self, enable: Vec<String>, disable: Vec<String>) {
        let known = |name: &String| self.status.tools.iter().any(|t| &t.name == name);
        if let Some(unknown) = enable.iter().chain(&disable).find(|name| !known(name)) {
            let names: Vec<&str> = self.status.tools.iter().map(|t| t.name.as_str()).collect();
            self.notice(
                Level::Error,
                format!("unknown tool `{unknown}` (known: {})", names.join(", ")),
            );
            return;
        }
        let cost = self.tool_change(&enable, &disable);
        if cost == ToolChangeCost::Nothing {
            self.notice(Level::Info, "tools unchanged");
            return;
        }
        let mut what: Vec<String> = enable.iter().map(|n| format!("+{n}")).collect();
        what.extend(disable.iter().map(|n| format!("-{n}")));
        self.notice(
            Level::Info,
            format!("tools {}: {}", what.join(" "), cost.describe()),
        );
        self.stats.tools_changed();
        self.send(Command::Tools { enable, disable });
    }

    // ----- pickers ----------------------------------------------------------------------

    fn picker_key(&mut self, key: KeyEvent) {
        let Some(picker) = self.picker.as_mut() else {
            return;
        };
        match key.code {
            KeyCode::Esc => self.close_picker(),
            KeyCode::Up => picker.step(-1),
            KeyCode::Down => picker.step(1),
            KeyCode::PageUp => picker.step(-(PAGE as isize)),
            KeyCode::PageDown => picker.step(PAGE as isize),
            KeyCode::Char(' ') if picker.kind == PickerKind::Tools => picker.toggle(),
            KeyCode::Char(ch) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                picker.type_char(ch);
            }
            KeyCode::Backspace => picker.backspace(),
            KeyCode::Enter => {
                if let Some(picker) = self.picker.take() {
                    self.choose(picker);
                }
            }
            _ => {}
        }
    }

    /// Closes the picker; a permission question closed unanswered is refused (the tool call
    /// waits for an answer).
    fn close_picker(&mut self) {
        match self.picker.take().map(|p| p.kind) {
            Some(PickerKind::Permission { request }) => self.permission_dismissed(request),
            Some(PickerKind::ExtensionAsk) => self.extension_dismissed(),
            _ => {}
        }
    }

    fn choose(&mut self, picker: Picker) {
        if picker.kind == PickerKind::Tools {
            self.picker = Some(picker);
            if let Some((enable, disable)) = self.picked_tool_change() {
                self.picker = None;
                self.change_tools(enable, disable);
            }
            return;
        }
        let Some(item) = picker.current().cloned() else {
            self.picker = Some(picker);
            return;
        };
        match picker.kind {
            PickerKind::Permission { request } => self.permission_chosen(request, &item.key),
            PickerKind::ExtensionAsk => self.extension_chosen(&item.key),
            PickerKind::Resume => self.send(Command::Resume(resume_path(&item))),
            PickerKind::Model => self.model_chosen(item.key),
            PickerKind::Thinking => self.send(Command::Thinking(item.key)),
            PickerKind::Tree => match item.key.strip_prefix(CHILD_KEY) {
                Some(path) => self.child_chosen(path),
                None => self.tree_chosen(&item.key),
            },
            PickerKind::Child => self.child_chosen(&item.key),
            PickerKind::Fork if item.key.is_empty() => self.send(Command::Fork(ForkAt::Here)),
            PickerKind::Fork => {
                let chosen = self
                    .status
                    .tree
                    .iter()
                    .find(|row| row.id.as_str() == item.key)
                    .cloned();
                if let Some(row) = chosen {
                    if let Some(text) = &row.user_text {
                        self.editor.set_text(text);
                    }
                    self.send(Command::Fork(ForkAt::Before(row.id)));
                }
            }
            PickerKind::TreeSummary {
                target,
                editor_text,
            } => {
                let summarize = item.key == "summary";
                let instructions = Some(picker.query.trim().to_owned()).filter(|q| !q.is_empty());
                if let Some(text) = editor_text {
                    self.editor.set_text(&text);
                }
                if summarize {
                    self.busy = Some("summarizing the branch".into());
                }
                self.send(Command::Navigate {
                    target,
                    summarize,
                    instructions: instructions.filter(|_| summarize),
                });
            }
            PickerKind::Settings => self.setting_chosen(&item.key),
            PickerKind::RestoreFiles => self.restore_chosen(&item.key),
            PickerKind::Tools => {}
        }
    }

    /// A tree entry was chosen: a user message is re-edited from its parent (Pi's rule),
    /// any other entry becomes the leaf. Then ask whether to summarize the branch left.
    fn tree_chosen(&mut self, key: &str) {
        let Some(row) = self
            .status
            .tree
            .iter()
            .find(|row| row.child.is_none() && row.id.as_str() == key)
        else {
            return;
        };
        let (target, editor_text) = match &row.user_text {
            Some(text) => (row.parent.clone(), Some(text.clone())),
            None => (Some(row.id.clone()), None),
        };
        let items = vec![
            PickerItem::new("Switch", "no summary", "plain"),
            PickerItem::new(
                "Switch and summarize the branch left",
                "type focus instructions first if you like",
                "summary",
            ),
        ];
        self.picker = Some(Picker::new(
            PickerKind::TreeSummary {
                target,
                editor_text,
            },
            "Leave this branch",
            items,
        ));
    }

    // ----- replies from the agent task -------------------------------------------------

    /// Handles a reply from the agent task.
    pub fn on_reply(&mut self, reply: Reply) {
        match reply {
            Reply::Attached(attached) => {
                let attached = *attached;
                self.items = attached.transcript;
                self.stats = attached.stats;
                for prompt in &attached.history {
                    self.editor.remember(prompt);
                }
                self.status = attached.status;
                self.control = attached.control;
                self.scroll = 0;
                self.children_reset();
                self.reset_stream();
            }
            Reply::Status(status) => {
                self.stats.status_arrived(status.chapter_tokens);
                // Not the first status: before it the app knows no model.
                if !self.status.model.is_empty() && status.model != self.status.model {
                    self.stats.model_switched(&self.status.model, &status.model);
                }
                self.status = *status;
            }
            Reply::Busy(what) => self.busy = Some(what),
            Reply::Idle => {
                self.in_flight = self.in_flight.saturating_sub(1);
                if self.in_flight > 0 {
                    // An earlier command finished; a later one (a prompt) is still going.
                    return;
                }
                self.busy = None;
                self.prompt_running = false;
                self.deferred_prompts.clear();
                self.reset_stream();
                if let Some(next) = self.follow_ups.pop_front() {
                    self.start_prompt(next);
                } else {
                    self.offer_next();
                }
            }
            Reply::Notice(text) => self.notice(Level::Info, text),
            Reply::Warning(text) => self.notice(Level::Warning, text),
            Reply::Error(text) => self.notice(Level::Error, text),
            Reply::Sessions(sessions) => {
                if sessions.is_empty() {
                    self.notice(Level::Info, "no other sessions in this directory");
                    return;
                }
                self.picker = Some(Picker::new(
                    PickerKind::Resume,
                    "Resume a session (type to search names and first messages)",
                    sessions,
                ));
            }
            Reply::Tree(rows) => self.open_tree(rows),
            Reply::ForkPoints(rows) => {
                let mut items = vec![PickerItem::new(
                    "At the current position",
                    "the whole branch",
                    "",
                )];
                items.extend(rows.iter().map(|row| {
                    PickerItem::new(
                        row.text.clone(),
                        "fork before it and edit it",
                        row.id.as_str(),
                    )
                }));
                self.status.tree = rows;
                self.picker = Some(Picker::new(
                    PickerKind::Fork,
                    "Fork into a new session (type to filter)",
                    items,
                ));
            }
            Reply::Block { title, lines } => self.items.push(Item::Block { title, lines }),
            Reply::OfferRestore(lines) => self.offer_restore(lines),
            Reply::Item(item) => self.items.push(item),
        }
    }

    fn open_tree(&mut self, rows: Vec<TreeRow>) {
        if rows.is_empty() {
            self.notice(Level::Info, "the session has no entries yet");
            return;
        }
        let items = rows
            .iter()
            .map(|row| {
                // A child's row opens the child; an entry's moves there.
                let key = match &row.child {
                    Some(path) => format!("{CHILD_KEY}{}", path.display()),
                    None => row.id.as_str().to_owned(),
                };
                PickerItem::new(row.text.clone(), row.detail.clone(), key)
            })
            .collect();
        let leaf = rows.iter().find(|row| row.leaf).map(|row| row.id.clone());
        self.status.tree = rows;
        let mut picker = Picker::new(
            PickerKind::Tree,
            "Session tree (Enter: go there, type to filter)",
            items,
        );
        if let Some(leaf) = leaf {
            picker.select_key(leaf.as_str());
        }
        self.picker = Some(picker);
    }

    // ----- agent events -----------------------------------------------------------------

    fn reset_stream(&mut self) {
        self.calls.clear();
        self.open_calls.clear();
        self.open_text = None;
        self.open_thinking = None;
    }

    fn tool_by_id(&mut self, id: &str) -> Option<&mut ToolItem> {
        self.items.iter_mut().rev().find_map(|item| match item {
            Item::Tool(tool) if tool.id == id => Some(tool),
            _ => None,
        })
    }

    /// Handles an event from the running agent.
    pub fn on_agent(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::AgentStart => {
                if let Some(text) = self.deferred_prompts.pop_front() {
                    self.items.push(Item::User(text));
                }
                self.busy.get_or_insert_with(|| "working".into());
                self.children_run_started();
            }
            AgentEvent::TurnStart { .. } => {
                self.busy = Some("working".into());
                self.reset_stream();
            }
            AgentEvent::TurnEnd { .. } => self.reset_stream(),
            AgentEvent::RequestStart { divergence, .. } => self.stats.request_started(divergence),
            AgentEvent::TextDelta { text } => match self.open_text {
                Some(at) => {
                    if let Some(Item::Assistant(existing)) = self.items.get_mut(at) {
                        existing.push_str(&text);
                    }
                }
                None => {
                    self.open_text = Some(self.items.len());
                    self.items.push(Item::Assistant(text));
                }
            },
            AgentEvent::ThinkingDelta { text } => match self.open_thinking {
                Some(at) => {
                    if let Some(Item::Thinking(existing)) = self.items.get_mut(at) {
                        existing.push_str(&text);
                    }
                }
                None => {
                    self.open_thinking = Some(self.items.len());
                    self.items.push(Item::Thinking(text));
                }
            },
            AgentEvent::ToolCallStart { id, name } => {
                // Text after a tool call starts a new paragraph below it.
                self.open_text = None;
                self.open_thinking = None;
                self.open_calls.push(self.items.len());
                self.items.push(Item::Tool(ToolItem {
                    id,
                    name,
                    arguments: String::new(),
                    output: String::new(),
                    state: ToolState::Streaming,
                    diff: None,
                }));
            }
            AgentEvent::ToolCallDelta { index, arguments } => {
                let at = match self.calls.get(&index) {
                    Some(at) => Some(*at),
                    None => {
                        let bound: Vec<usize> = self.calls.values().copied().collect();
                        let free = self
                            .open_calls
                            .iter()
                            .rev()
                            .find(|at| !bound.contains(at))
                            .copied();
                        if let Some(at) = free {
                            self.calls.insert(index, at);
                        }
                        free
                    }
                };
                if let Some(Item::Tool(tool)) = at.and_then(|at| self.items.get_mut(at)) {
                    tool.arguments = arguments;
                }
            }
            AgentEvent::Usage { usage, cost } => self.stats.request_finished(&usage, &cost),
            // Billed like any request, but not the answer the footer's last-request figures
            // describe.
            AgentEvent::KeepWarm { usage, cost } => {
                self.stats.ping_finished(&usage, cost.total());
            }
            AgentEvent::MessageEnd { message, .. } => self.message_end(*message),
            AgentEvent::ToolStart {
                id,
                name,
                arguments,
            } => {
                self.busy = Some(format!("running {name}"));
                match self.tool_by_id(&id) {
                    Some(tool) => tool.state = ToolState::Running,
                    None => self.items.push(Item::Tool(ToolItem {
                        id,
                        name,
                        arguments: arguments.to_string(),
                        output: String::new(),
                        state: ToolState::Running,
                        diff: None,
                    })),
                }
            }
            AgentEvent::ToolUpdate { id, text, details } => {
                if let Some(tool) = self.tool_by_id(&id) {
                    tool.output = text;
                }
                self.child_progress(&id, &details);
            }
            AgentEvent::ToolEnd { id, is_error, .. } => {
                if let Some(tool) = self.tool_by_id(&id) {
                    tool.state = if is_error {
                        ToolState::Failed
                    } else {
                        ToolState::Done
                    };
                }
            }
            AgentEvent::SystemUpdate {
                snapshot,
                sections,
                tools_added,
                tools_removed,
                ..
            } => {
                if !snapshot {
                    let mut parts = Vec::new();
                    if !sections.is_empty() {
                        parts.push(format!("sections {}", sections.join(", ")));
                    }
                    let mut tools: Vec<String> =
                        tools_added.iter().map(|t| format!("+{t}")).collect();
                    tools.extend(tools_removed.iter().map(|t| format!("-{t}")));
                    if !tools.is_empty() {
                        parts.push(format!("tools {}", tools.join(" ")));
                    }
                    self.notice(
                        Level::Info,
                        format!("system prompt patch stored: {}", parts.join("; ")),
                    );
                }
            }
            AgentEvent::Retry {
                attempt,
                wait_ms,
                error,
            } => self.notice(
                Level::Warning,
                format!(
                    "request failed ({error}); retry {attempt} in {:.1}s",
                    wait_ms as f64 / 1000.0
                ),
            ),
            AgentEvent::CompactionStart { reason } => {
                self.busy = Some("compacting".into());
                self.notice(Level::Info, format!("compacting the context ({reason})…"));
            }
            AgentEvent::CompactionEnd {
                entry_id,
                tokens_before,
                usage,
                cost,
                error,
            } => {
                if let (Some(usage), Some(cost)) = (usage, cost) {
                    self.stats.add(&usage, cost.total());
                }
                match (entry_id, error) {
                    (_, Some(error)) => {
                        self.notice(Level::Error, format!("compaction failed: {error}"))
                    }
                    (Some(entry), None) => {
                        self.stats.compaction_finished(entry.as_str());
                        self.notice(
                            Level::Info,
                            format!(
                                "compacted: ≈{} tokens of history summarized",
                                stats::tokens(tokens_before)
                            ),
                        );
                    }
                    (None, None) => self.notice(Level::Info, "nothing to compact"),
                }
            }
            AgentEvent::SteeringDelivered { .. } => {}
            AgentEvent::AgentEnd { reason } => {
                self.prompt_running = false;
                self.reset_stream();
                // An aborted run leaves no call waiting for an answer.
                self.drop_questions();
                if reason == "aborted" {
                    self.notice(Level::Warning, "aborted");
                }
            }
        }
    }

    fn message_end(&mut self, message: AgentMessage) {
        match message {
            AgentMessage::Assistant(assistant) => {
                for call in assistant.tool_calls() {
                    let arguments = call.arguments.to_string();
                    if let Some(tool) = self.tool_by_id(&call.id) {
                        tool.arguments = arguments;
                        if tool.state == ToolState::Streaming {
                            tool.state = ToolState::Running;
                        }
                    }
                }
                if matches!(assistant.stop_reason, StopReason::Error) {
                    let text = assistant
                        .error_message
                        .unwrap_or_else(|| "the request failed".into());
                    self.notice(Level::Error, text);
                }
                self.reset_stream();
            }
            AgentMessage::ToolResult(result) => {
                let text = tool_result_text(&result.content);
                let failed = result.is_error;
                let diff = result_diff(result.details.as_ref());
                self.child_result(&result.tool_call_id, result.details.as_ref(), failed);
                if let Some(tool) = self.tool_by_id(&result.tool_call_id) {
                    tool.output = text;
                    tool.diff = diff;
                    tool.state = if failed {
                        ToolState::Failed
                    } else {
                        ToolState::Done
                    };
                }
            }
            AgentMessage::User(user) => {
                let text = user.content.text_joined("\n");
                if let Some(at) = self.steering.iter().position(|s| *s == text) {
                    self.steering.remove(at);
                    self.items.push(Item::User(text));
                }
            }
            _ => {}
        }
    }
}

/// The diff and text of a tool result, as the transcript read from the session shows them.
pub use strata_runtime::read_model::{result_diff, tool_result_text};

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use serde_json::json;
    use strata_agent::AgentEvent;

    use super::super::testing::{app, assistant, ctrl, key, message_end, type_text};
    use super::*;

    fn enter(app: &mut App) {
        app.on_key(key(KeyCode::Enter), Instant::now());
    }

    #[test]
    fn resume_at_start_asks_the_worker_for_the_sessions_like_the_slash_command() {
        let mut flag = app();
        flag.open_resume();
        let mut slash = app();
        type_text(&mut slash, "/resume");
        enter(&mut slash);
        let expected = vec![Effect::Worker(Command::Sessions)];
        assert_eq!(flag.take_effects(), expected);
        assert_eq!(slash.take_effects(), expected);
    }

    #[test]
    fn a_prompt_goes_to_the_agent_and_the_transcript() {
        let mut app = app();
        type_text(&mut app, "hello");
        enter(&mut app);
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::Prompt("hello".into()))]
        );
        assert_eq!(app.items, vec![Item::User("hello".into())]);
        assert!(app.busy.is_some());
        assert!(app.editor.is_empty());
    }

    #[test]
    fn typing_while_the_agent_works_steers_and_alt_enter_queues_a_follow_up() {
        let mut app = app();
        type_text(&mut app, "first");
        enter(&mut app);
        app.take_effects();
        type_text(&mut app, "also check the tests");
        enter(&mut app);
        assert_eq!(
            app.take_effects(),
            vec![Effect::Steer("also check the tests".into())]
        );
        assert_eq!(app.steering, vec!["also check the tests".to_owned()]);
        type_text(&mut app, "then update the docs");
        app.on_key(
            KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT),
            Instant::now(),
        );
        assert!(app.take_effects().is_empty());
        assert_eq!(app.follow_ups, ["then update the docs".to_owned()]);
        // The steering message shows in the transcript when the agent stores it.
        app.on_agent(message_end(
            json!({"role": "user", "content": "also check the tests", "timestamp": 3}),
        ));
        assert!(app.steering.is_empty());
        assert_eq!(
            app.items.last(),
            Some(&Item::User("also check the tests".into()))
        );
        // When the run ends the follow-up is sent as the next prompt.
        app.on_reply(Reply::Idle);
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::Prompt(
                "then update the docs".into()
            ))]
        );
        assert!(app.follow_ups.is_empty());
        assert!(app.busy.is_some());
    }

    #[test]
    fn ctrl_c_aborts_the_run_and_twice_quits() {
        let mut app = app();
        type_text(&mut app, "go");
        enter(&mut app);
        app.take_effects();
        let start = Instant::now();
        app.on_key(ctrl('c'), start);
        assert_eq!(app.take_effects(), vec![Effect::Abort]);
        assert!(!app.quit);
        app.on_key(ctrl('c'), start + Duration::from_millis(500));
        assert!(app.quit);
    }

    #[test]
    fn ctrl_c_when_idle_clears_the_editor_and_slow_presses_do_not_quit() {
        let mut app = app();
        type_text(&mut app, "draft");
        let start = Instant::now();
        app.on_key(ctrl('c'), start);
        assert!(app.editor.is_empty());
        app.on_key(ctrl('c'), start + Duration::from_secs(5));
        assert!(!app.quit);
        app.on_key(ctrl('c'), start + Duration::from_millis(5_500));
        assert!(app.quit);
        assert!(app.take_effects().is_empty());
    }

    #[test]
    fn a_status_naming_another_model_makes_its_first_cold_request_a_break() {
        let cold = strata_provider::Usage {
            input: 30,
            output: 5,
            cache_write_5m: 9_000,
            ..Default::default()
        };
        let finish = |app: &mut App| {
            app.on_agent(AgentEvent::RequestStart {
                chapter_bytes: [10, 20, 30],
                divergence: None,
            });
            app.on_agent(AgentEvent::Usage {
                usage: cold,
                cost: strata_provider::Cost::default(),
            });
        };
        // The same model again (a /new, a status after a command): nothing is said.
        let mut app = app();
        app.on_reply(Reply::Status(Box::new(super::super::testing::status())));
        finish(&mut app);
        assert_eq!(app.stats.cache_break, None);
        // After /model the footer says why the next request wrote everything again.
        let mut other = super::super::testing::status();
        other.model = "openai/gpt-5".into();
        app.on_reply(Reply::Status(Box::new(other)));
        finish(&mut app);
        assert!(matches!(
            &app.stats.cache_break,
            Some(strata_accounting::BreakCause::ModelSwitch { to, .. }) if to == "openai/gpt-5"
        ));
    }

    #[test]
    fn a_slash_command_between_scripted_prompts_keeps_the_script_in_step() {
        let mut app = App::new(
            Some("demo".into()),
            vec!["step one".into(), "step two".into()],
        );
        // The user clears the offered prompt and runs a command instead.
        app.editor.set_text("/help");
        enter(&mut app);
        assert!(app.take_effects().is_empty());
        assert_eq!(app.editor.text(), "step one");
        enter(&mut app);
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::Prompt("step one".into()))]
        );
        app.on_reply(Reply::Idle);
        assert_eq!(app.editor.text(), "step two");
    }

    #[test]
    fn scripted_prompts_are_offered_one_per_enter() {
        let mut app = App::new(
            Some("demo".into()),
            vec!["step one".into(), "step two".into()],
        );
        assert_eq!(app.editor.text(), "step one");
        enter(&mut app);
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::Prompt("step one".into()))]
        );
        assert!(app.editor.is_empty());
        app.on_reply(Reply::Idle);
        assert_eq!(app.editor.text(), "step two");
    }

    #[test]
    fn tool_call_arguments_stream_into_their_item_and_settle_on_message_end() {
        let mut app = app();
        app.on_agent(AgentEvent::ToolCallStart {
            id: "c1".into(),
            name: "read".into(),
        });
        app.on_agent(AgentEvent::ToolCallDelta {
            index: 0,
            arguments: "{\"pa".into(),
        });
        let Some(Item::Tool(tool)) = app.items.last() else {
            panic!("no tool item");
        };
        assert_eq!(tool.arguments, "{\"pa");
        assert_eq!(tool.state, ToolState::Streaming);
        app.on_agent(message_end(assistant(
            "",
            &[("c1", "read", json!({"path": "a.rs"}))],
        )));
        app.on_agent(AgentEvent::ToolUpdate {
            id: "c1".into(),
            text: "partial".into(),
            details: serde_json::Value::Null,
        });
        app.on_agent(AgentEvent::ToolEnd {
            id: "c1".into(),
            name: "read".into(),
            is_error: true,
        });
        assert_eq!(
            app.items,
            vec![Item::Tool(ToolItem {
                id: "c1".into(),
                name: "read".into(),
                arguments: "{\"path\":\"a.rs\"}".into(),
                output: "partial".into(),
                state: ToolState::Failed,
                diff: None,
            })]
        );
    }

    #[test]
    fn tools_command_states_the_cost_and_sends_the_change() {
        let mut app = app();
        type_text(&mut app, "/tools -bash");
        enter(&mut app);
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::Tools {
                enable: vec![],
                disable: vec!["bash".into()],
            })]
        );
        let Some(Item::Notice(notice)) = app.items.last() else {
            panic!("no notice");
        };
        assert!(
            notice.text.contains("one system message is appended"),
            "{}",
            notice.text
        );
        // Adding a tool on a provider that cannot defer it rewrites after the tools chapter.
        type_text(&mut app, "/tools +grep");
        enter(&mut app);
        let Some(Item::Notice(notice)) = app.items.last() else {
            panic!("no notice");
        };
        assert!(
            notice.text.contains("rewritten from the tools chapter"),
            "{}",
            notice.text
        );
        assert!(notice.text.contains("≈11k tokens"), "{}", notice.text);
    }

    #[test]
    fn the_tools_picker_toggles_with_space_and_applies_with_enter() {
        let mut app = app();
        type_text(&mut app, "/tools");
        enter(&mut app);
        assert!(app.picker.is_some());
        app.on_key(key(KeyCode::Down), Instant::now());
        app.on_key(key(KeyCode::Char(' ')), Instant::now());
        assert_eq!(
            app.picked_tool_change(),
            Some((vec![], vec!["bash".to_owned()]))
        );
        enter(&mut app);
        assert!(app.picker.is_none());
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::Tools {
                enable: vec![],
                disable: vec!["bash".into()],
            })]
        );
    }

    #[test]
    fn commands_wait_while_the_agent_works_and_unknown_ones_are_reported() {
        let mut app = app();
        type_text(&mut app, "/nonsense");
        enter(&mut app);
        assert!(matches!(
            app.items.last(),
            Some(Item::Notice(Notice {
                level: Level::Error,
                ..
            }))
        ));
        type_text(&mut app, "go");
        enter(&mut app);
        app.take_effects();
        type_text(&mut app, "/new");
        enter(&mut app);
        assert!(app.take_effects().is_empty());
        assert!(matches!(
            app.items.last(),
            Some(Item::Notice(Notice {
                level: Level::Warning,
                ..
            }))
        ));
    }

    #[test]
    fn model_and_thinking_commands_reach_the_agent() {
        let mut app = app();
        type_text(&mut app, "/model openai/gpt-5:high");
        enter(&mut app);
        type_text(&mut app, "/thinking low");
        enter(&mut app);
        type_text(&mut app, "/thinking lots");
        enter(&mut app);
        assert_eq!(
            app.take_effects(),
            vec![
                Effect::Worker(Command::Model("openai/gpt-5:high".into())),
                Effect::Worker(Command::Thinking("low".into())),
            ]
        );
        // Without an argument, a picker; Enter chooses.
        type_text(&mut app, "/model");
        enter(&mut app);
        type_text(&mut app, "gpt");
        enter(&mut app);
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::Model("openai/gpt-5".into()))]
        );
    }

    #[test]
    fn fork_offers_the_branch_prompts_and_re_edits_the_one_chosen() {
        let mut app = app();
        type_text(&mut app, "/fork");
        enter(&mut app);
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::ForkPoints)]
        );
        let row = |id: &str, parent: &str, text: &str| TreeRow {
            id: strata_session::EntryId::new(id),
            parent: Some(strata_session::EntryId::new(parent)),
            text: format!("user: {text}"),
            detail: String::new(),
            user_text: Some(text.into()),
            leaf: false,
            child: None,
        };
        app.on_reply(Reply::ForkPoints(vec![
            row("bbbb0001", "aaaa0002", "second prompt"),
            row("aaaa0001", "0000000f", "first prompt"),
        ]));
        type_text(&mut app, "first");
        enter(&mut app);
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::Fork(ForkAt::Before(
                strata_session::EntryId::new("aaaa0001")
            )))]
        );
        assert_eq!(app.editor.text(), "first prompt");
        // The first row forks the whole branch.
        app.editor.clear();
        app.on_reply(Reply::ForkPoints(vec![]));
        enter(&mut app);
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::Fork(ForkAt::Here))]
        );
    }

    #[test]
    fn a_quick_command_finishing_during_a_run_leaves_the_app_busy() {
        let mut app = app();
        type_text(&mut app, "/name notes");
        enter(&mut app);
        type_text(&mut app, "go");
        enter(&mut app);
        assert_eq!(app.take_effects().len(), 2);
        // The /name command answers first; the prompt is still running.
        app.on_reply(Reply::Notice("session named “notes”".into()));
        app.on_reply(Reply::Idle);
        assert!(app.busy.is_some());
        // The prompt shows after the earlier command's reply, when its run starts.
        app.on_agent(AgentEvent::AgentStart);
        assert_eq!(
            app.items[app.items.len() - 2..],
            [
                Item::Notice(Notice {
                    level: Level::Info,
                    text: "session named “notes”".into()
                }),
                Item::User("go".into())
            ]
        );
        type_text(&mut app, "steer this");
        enter(&mut app);
        assert_eq!(app.take_effects(), vec![Effect::Steer("steer this".into())]);
        app.on_reply(Reply::Idle);
        assert!(app.busy.is_none());
    }

    #[test]
    fn a_prompt_typed_while_compacting_waits_for_it() {
        let mut app = app();
        type_text(&mut app, "/compact");
        enter(&mut app);
        app.take_effects();
        type_text(&mut app, "next task");
        enter(&mut app);
        assert!(app.take_effects().is_empty());
        assert_eq!(app.follow_ups, ["next task".to_owned()]);
        app.on_reply(Reply::Idle);
        assert_eq!(
            app.take_effects(),
            vec![Effect::Worker(Command::Prompt("next task".into()))]
        );
    }

    #[test]
    fn history_recalls_earlier_prompts() {
        let mut app = app();
        type_text(&mut app, "one");
        enter(&mut app);
        app.on_reply(Reply::Idle);
        app.on_key(key(KeyCode::Up), Instant::now());
        assert_eq!(app.editor.text(), "one");
    }

    #[test]
    fn backslash_enter_and_ctrl_j_insert_newlines() {
        let mut app = app();
        type_text(&mut app, "a\\");
        enter(&mut app);
        type_text(&mut app, "b");
        app.on_key(ctrl('j'), Instant::now());
        type_text(&mut app, "c");
        assert_eq!(app.editor.text(), "a\nb\nc");
        assert!(app.take_effects().is_empty());
    }
}
