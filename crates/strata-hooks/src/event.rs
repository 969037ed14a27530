//! The events strata runs hooks for, and the JSON a hook reads on stdin.

use serde::Serialize;
use serde_json::{Map, Value};

/// An event strata runs hooks for (Claude Code's and Codex's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum HookEvent {
    /// Before a tool call runs: may deny it or rewrite its input. Matcher: the tool name.
    PreToolUse,
    /// After a tool call ran: may add context or say something to the model. Matcher: the
    /// tool name.
    PostToolUse,
    /// A user prompt, before it is sent: may block it or add context.
    UserPromptSubmit,
    /// The model finished without tool calls: may make it continue with a reason.
    Stop,
    /// A session started or resumed: may add context. Matcher: the source (`startup`,
    /// `resume`, `clear`, `compact`).
    SessionStart,
}

/// Events Claude Code or Codex define that strata reads without running (reported once).
const KNOWN_NOT_RUN: &[&str] = &[
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUseFailure",
    "Notification",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "SessionEnd",
    "StopFailure",
    "Interrupt",
    "TaskCreated",
    "TaskCompleted",
    "TeammateIdle",
    "InstructionsLoaded",
    "ConfigChange",
    "CwdChanged",
    "FileChanged",
    "WorktreeCreate",
    "WorktreeRemove",
    "Elicitation",
    "ElicitationResult",
];

impl HookEvent {
    /// Every event strata runs.
    pub const ALL: [HookEvent; 5] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SessionStart,
    ];

    /// The name in config files and in `hook_event_name`.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SessionStart => "SessionStart",
        }
    }

    /// The event of a config key (`None` for an event strata does not run).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|event| event.name() == name)
    }

    /// Whether another harness defines `name` (strata reads it and says it does not run it).
    pub fn is_known_elsewhere(name: &str) -> bool {
        KNOWN_NOT_RUN.contains(&name)
    }

    /// Whether the config's `matcher` applies to this event.
    pub fn uses_matcher(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse | HookEvent::PostToolUse | HookEvent::SessionStart
        )
    }
}

/// What a hook reads on stdin: the fields every event has, then the event's own.
#[derive(Debug, Clone, PartialEq)]
pub struct HookInput {
    /// The event.
    pub event: HookEvent,
    /// The session's id.
    pub session_id: String,
    /// The session file (strata's, in Pi's format: not Claude Code's transcript format).
    pub transcript_path: String,
    /// The working directory.
    pub cwd: String,
    /// What the matcher is tried against (any may match): strata's and Claude Code's tool
    /// name for tool events, the source for `SessionStart`, nothing otherwise.
    pub subjects: Vec<String>,
    /// The event's own fields (`tool_name`, `tool_input`, `prompt`, ...).
    pub fields: Map<String, Value>,
}

impl HookInput {
    /// An input with the common fields and no event fields yet.
    pub fn new(
        event: HookEvent,
        session_id: impl Into<String>,
        transcript_path: impl Into<String>,
        cwd: impl Into<String>,
    ) -> Self {
        Self {
            event,
            session_id: session_id.into(),
            transcript_path: transcript_path.into(),
            cwd: cwd.into(),
            subjects: Vec::new(),
            fields: Map::new(),
        }
    }

    /// Adds an event field.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.fields.insert(key.to_owned(), value.into());
        self
    }

    /// Adds a name the matcher is tried against.
    pub fn with_subject(mut self, subject: impl Into<String>) -> Self {
        self.subjects.push(subject.into());
        self
    }

    /// The JSON object written to the hook's stdin.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("session_id".into(), self.session_id.clone().into());
        object.insert(
            "transcript_path".into(),
            self.transcript_path.clone().into(),
        );
        object.insert("cwd".into(), self.cwd.clone().into());
        object.insert("hook_event_name".into(), self.event.name().into());
        // strata's own permission gate decides separately; hooks see the default mode.
        object.insert("permission_mode".into(), "default".into());
        for (key, value) in &self.fields {
            object.insert(key.clone(), value.clone());
        }
        Value::Object(object)
    }
}
