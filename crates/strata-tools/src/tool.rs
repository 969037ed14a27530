//! The `Tool` trait and the values that flow in and out of a tool call.

use std::path::PathBuf;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::access::Access;
use crate::environment::ToolEnvironment;

/// One call of a tool, as the model asked for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id of the call; the result carries it back.
    pub id: String,
    /// The name of the tool to run.
    pub name: String,
    /// The arguments, as the model sent them (a JSON object).
    pub arguments: Value,
}

impl ToolCall {
    /// A call of `name` with `arguments`, identified by `id`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// One block of a tool result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ToolContent {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// MIME type, e.g. `image/png`.
        #[serde(rename = "mimeType")]
        media_type: String,
        /// The image bytes, base64 (standard alphabet, padded).
        data: String,
    },
}

impl ToolContent {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The text of a text block; `None` for an image.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            Self::Image { .. } => None,
        }
    }
}

/// What a tool call returns to the model (content) and to the UI and session (details).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The blocks the model sees.
    pub content: Vec<ToolContent>,
    /// Structured facts for UIs and the session (diff, truncation, full output path, …);
    /// `Value::Null` when there are none.
    pub details: Value,
    /// Whether the call failed; the model sees the content as an error result.
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result with one text block and no details.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![ToolContent::text(text)],
            details: Value::Null,
            is_error: false,
        }
    }

    /// A failed result with one text block: the message the model reads.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: vec![ToolContent::text(message)],
            details: Value::Null,
            is_error: true,
        }
    }

    /// The same result with `details` set.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// All text blocks joined by newlines (images left out).
    pub fn text_content(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(ToolContent::as_text)
            .collect();
        texts.join("\n")
    }
}

/// The text every tool returns when the call was cancelled.
pub const ABORTED_MESSAGE: &str = "Operation aborted";

/// Default timeout of a bash command whose call gives none (10 minutes): a command that
/// hangs (a prompt waiting for input, a server in the foreground) cannot hold a run forever.
pub const DEFAULT_BASH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Default most bytes of one full-output file (64 MiB).
pub const DEFAULT_MAX_OUTPUT_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Limits that bound what a tool reads and returns.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolLimits {
    /// Most lines of text in one result (read, bash).
    pub max_lines: usize,
    /// Most bytes of text in one result.
    pub max_bytes: usize,
    /// Largest image `read` returns inline; larger ones are described, not sent.
    pub max_image_bytes: u64,
    /// Longest grep match line shown, in characters.
    pub grep_max_line_chars: usize,
    /// Timeout for bash commands whose call gives none; `None` lets them run until done or
    /// cancelled (Pi's behaviour). Default: [`DEFAULT_BASH_TIMEOUT`].
    pub bash_default_timeout: Option<std::time::Duration>,
    /// Most bytes bash saves to a truncated command's full-output file; later output is
    /// counted but not kept, so a runaway command cannot fill the disk.
    pub max_output_file_bytes: u64,
}

impl Default for ToolLimits {
    fn default() -> Self {
        Self {
            max_lines: crate::truncate::DEFAULT_MAX_LINES,
            max_bytes: crate::truncate::DEFAULT_MAX_BYTES,
            // Anthropic rejects images over 5 MB; base64 adds a third, so stay below.
            max_image_bytes: 3_750_000,
            grep_max_line_chars: 500,
            bash_default_timeout: Some(DEFAULT_BASH_TIMEOUT),
            max_output_file_bytes: DEFAULT_MAX_OUTPUT_FILE_BYTES,
        }
    }
}

/// Where and under which limits a tool call runs.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The directory relative paths and shell commands start from.
    pub cwd: PathBuf,
    /// Cancelled when the user aborts: tools stop and return an aborted error result.
    pub cancel: CancellationToken,
    /// Where bash keeps the full output of truncated commands.
    pub temp_dir: PathBuf,
    /// Output limits.
    pub limits: ToolLimits,
    /// Which environment variables tool processes inherit (credentials are dropped).
    pub environment: ToolEnvironment,
    /// The session the call was made in, set by the loop running it: tools that act on the
    /// conversation itself (delegation to a child agent) read it; file tools ignore it.
    pub caller: Option<CallerSession>,
    /// The OS sandbox bash commands run in (`None`: unsandboxed).
    pub sandbox: Option<Sandbox>,
    /// Where work that outlives the call posts its message to the conversation, when the
    /// loop's driver delivers such messages (`None`: the call must finish its work itself).
    pub mailbox: Option<crate::Mailbox>,
}

/// The session a tool call was made in, as the loop running the call knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerSession {
    /// The session file (appended to as the conversation goes on).
    pub path: PathBuf,
    /// The session's id (its header's `id`, the provider's cache-routing key).
    pub id: String,
    /// The entry holding the call: the assistant message that asked for it.
    pub entry_id: Option<String>,
    /// The model the call came from, `provider/id`.
    pub model: String,
}

/// A program that runs a command inside an OS sandbox: bash runs `program args… shell -c
/// script` instead of `shell -c script` (strata's Landlock helper, or bubblewrap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// The wrapper.
    pub program: PathBuf,
    /// Its arguments, ending where the command begins (`--`).
    pub args: Vec<std::ffi::OsString>,
    /// What the sandbox forbids, in one sentence, for a command it refused.
    pub limits: String,
}

impl ToolContext {
    /// A context in `cwd` with a fresh cancellation token, the system temp dir and default limits.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            cancel: CancellationToken::new(),
            temp_dir: std::env::temp_dir(),
            limits: ToolLimits::default(),
            environment: ToolEnvironment::default(),
            caller: None,
            sandbox: None,
            mailbox: None,
        }
    }
}

/// How tool calls run, set once per agent: limits, the environment policy and where temp
/// files go; each call's [`ToolContext`] is made from it.
#[derive(Debug, Clone, Default)]
pub struct ToolSettings {
    /// Output limits and the default bash timeout.
    pub limits: ToolLimits,
    /// Which environment variables tool processes inherit.
    pub environment: ToolEnvironment,
    /// Where bash keeps full-output files (`None`: the system temp dir); a front end gives
    /// a directory it removes on exit.
    pub temp_dir: Option<PathBuf>,
}

impl ToolSettings {
    /// A context for one batch of calls in `cwd`, with a fresh cancellation token.
    pub fn context(&self, cwd: impl Into<PathBuf>) -> ToolContext {
        let mut ctx = ToolContext::new(cwd);
        ctx.limits = self.limits.clone();
        ctx.environment = self.environment.clone();
        if let Some(dir) = &self.temp_dir {
            ctx.temp_dir = dir.clone();
        }
        ctx
    }
}

/// Receives partial results while a tool runs (bash streams its output this way).
pub type UpdateSender = tokio::sync::mpsc::UnboundedSender<ToolOutput>;

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// JSON Schema of the arguments; byte-stable across runs, since it is part of the cached prefix.
    fn parameters(&self) -> Value;

    /// One line for the system prompt's list of tools; `None` means use the description.
    fn prompt_snippet(&self) -> Option<&str> {
        None
    }

    /// Guideline bullets the system prompt carries while this tool is active.
    fn prompt_guidelines(&self) -> &[&str] {
        &[]
    }

    /// Which paths a call reads and writes, so that a batch can run independent calls together.
    /// The default claims everything: the call runs alone.
    fn access(&self, _arguments: &Value, _ctx: &ToolContext) -> Access {
        Access::Exclusive
    }

    /// Runs the call. Failures come back as error results, never as panics or `Err`.
    async fn execute(
        &self,
        call: ToolCall,
        ctx: &ToolContext,
        updates: Option<UpdateSender>,
    ) -> ToolOutput;

    /// Whether the tool is declared for on-demand loading (the provider's tool search,
    /// `defer_loading`) from the first request on, where the row allows; off by default.
    /// Large MCP servers set it so that their tools do not sit in every request.
    fn defer_loading(&self) -> bool {
        false
    }

    /// The definition sent to the provider: name, description, parameters.
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters(),
        }
    }
}

/// A tool as the provider sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Tool name.
    pub name: String,
    /// Tool description.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Value,
}
