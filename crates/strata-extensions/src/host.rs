//! One extension process: spawn, handshake, requests with timeouts, the reader that contains
//! whatever the process writes.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use strata_extension_client::{Manifest, Message, PROTOCOL_VERSION, ToolResult};
use strata_hooks::{HookEvent, HookInput, HookResponder, HookRun, OpCall, Outcome, RunStatus};
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{Semaphore, mpsc, oneshot};

/// The largest message strata reads from an extension; a longer line is dropped (read and
/// discarded, never held in memory) and reported.
pub const MAX_MESSAGE_BYTES: usize = 8 << 20;

/// Messages waiting to be written to one extension's stdin; more means it is not reading.
const WRITE_QUEUE: usize = 256;

/// UI requests of one extension waiting for the user at once; more is a flood.
const UI_IN_FLIGHT: usize = 4;

/// How to start an extension.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtensionSpec {
    /// Its name in reports, slots and lists (the config's, not what it calls itself).
    pub name: String,
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Where it runs.
    pub cwd: PathBuf,
    /// How long the handshake and each request may take.
    pub timeout: Duration,
}

/// A UI request from an extension.
#[derive(Debug, Clone, PartialEq)]
pub enum UiRequest {
    /// Yes or no: answer `{"confirmed": bool}`.
    Confirm {
        /// Title.
        title: String,
        /// Question.
        message: String,
    },
    /// One of several: answer `{"index": n}` or `{"index": null}`.
    Select {
        /// Title.
        title: String,
        /// The options.
        options: Vec<String>,
    },
    /// A line of text: answer `{"text": "..."}` or `{"text": null}`.
    Input {
        /// Title.
        title: String,
        /// Placeholder.
        placeholder: String,
    },
    /// A message to show (no answer).
    Notify {
        /// The message.
        message: String,
        /// `info`, `warning` or `error`.
        level: String,
    },
    /// The extension's footer text (no answer).
    Status {
        /// The text (`""` clears it).
        text: String,
    },
}

impl UiRequest {
    /// The answer to `ui/confirm`.
    pub fn confirmed(yes: bool) -> Value {
        json!({ "confirmed": yes })
    }

    /// The answer to `ui/select`: the option's index, or none.
    pub fn selected(index: Option<usize>) -> Value {
        json!({ "index": index })
    }

    /// The answer to `ui/input`: the text, or none.
    pub fn text(text: Option<String>) -> Value {
        json!({ "text": text })
    }

    /// The answer when no one answers (dismissed, or no one to ask): not confirmed, nothing
    /// selected, no text.
    pub fn unanswered(&self) -> Value {
        match self {
            UiRequest::Confirm { .. } => Self::confirmed(false),
            UiRequest::Select { .. } => Self::selected(None),
            UiRequest::Input { .. } => Self::text(None),
            UiRequest::Notify { .. } | UiRequest::Status { .. } => json!({}),
        }
    }
}

/// Where an extension's requests to strata go: UI requests to a front end, operations to the
/// session runtime (`None`: no one takes them).
#[derive(Debug, Clone, Default)]
pub struct Outlets {
    /// UI requests.
    pub ui: Option<mpsc::Sender<UiCall>>,
    /// Operations.
    pub ops: Option<mpsc::Sender<OpCall>>,
}

/// A UI request for a front end, with the way to answer it (`None` for notify and status).
#[derive(Debug)]
pub struct UiCall {
    /// Which extension asks.
    pub extension: String,
    /// What it asks.
    pub request: UiRequest,
    /// Send the answer here; dropping it answers "no one to ask" (confirm false, nothing
    /// selected, no text).
    pub reply: Option<oneshot::Sender<Value>>,
}

impl UiCall {
    /// Answers it (nothing for notify and status; an extension that stopped waiting is not
    /// an error).
    pub fn answer(self, value: Value) {
        if let Some(reply) = self.reply {
            let _ = reply.send(value);
        }
    }
}

/// Something wrong with an extension, reported once per extension and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionReport {
    /// The extension's name.
    pub extension: String,
    /// What happened.
    pub problem: String,
}

/// Why a request to an extension failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ExtensionError {
    /// It could not be started.
    #[error("extension `{name}` could not start: {why}")]
    Start {
        /// Its name.
        name: String,
        /// Why.
        why: String,
    },
    /// Its handshake answer was not a manifest.
    #[error("extension `{name}` answered `initialize` with no manifest: {why}")]
    Handshake {
        /// Its name.
        name: String,
        /// Why.
        why: String,
    },
    /// It is no longer running (it exited, or strata stopped it).
    #[error("extension `{name}` is not running")]
    Stopped {
        /// Its name.
        name: String,
    },
    /// It did not answer in time (it has been stopped).
    #[error("extension `{name}` did not answer `{method}` within {timeout:?}; stopped")]
    Timeout {
        /// Its name.
        name: String,
        /// The request.
        method: String,
        /// The limit.
        timeout: Duration,
    },
    /// It answered with an error.
    #[error("extension `{name}` failed `{method}`: {message}")]
    Rpc {
        /// Its name.
        name: String,
        /// The request.
        method: String,
        /// Its message.
        message: String,
    },
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

/// Reports each (extension, kind) once.
#[derive(Clone)]
struct Reporter {
    name: String,
    sent: Arc<Mutex<HashSet<&'static str>>>,
    out: Option<mpsc::UnboundedSender<ExtensionReport>>,
    /// The latest problem, kept for status lists (`/extensions`) after the report is taken.
    last: Arc<Mutex<Option<String>>>,
}

impl Reporter {
    fn once(&self, kind: &'static str, problem: String) {
        let first = self
            .sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(kind);
        if first {
            tracing::warn!(extension = %self.name, "{problem}");
            *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(problem.clone());
            if let Some(out) = &self.out {
                let _ = out.send(ExtensionReport {
                    extension: self.name.clone(),
                    problem,
                });
            }
        }
    }
}

/// A running extension.
pub struct Extension {
    spec: ExtensionSpec,
    manifest: Manifest,
    writer: mpsc::Sender<String>,
    pending: Pending,
    next_id: AtomicU64,
    alive: Arc<AtomicBool>,
    child: Arc<Mutex<Option<Child>>>,
    group: Option<i32>,
    reporter: Reporter,
}

impl std::fmt::Debug for Extension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extension")
            .field("name", &self.spec.name)
            .field("alive", &self.is_alive())
            .finish_non_exhaustive()
    }
}

impl Extension {
    /// Starts `spec`'s process and runs the handshake (within its timeout). UI requests go to
    /// `ui` (`None`: no one to ask); problems go to `reports`, once each.
    pub async fn start(
        spec: ExtensionSpec,
        ui: Option<mpsc::Sender<UiCall>>,
        reports: Option<mpsc::UnboundedSender<ExtensionReport>>,
    ) -> Result<Self, ExtensionError> {
        Self::start_with(spec, Outlets { ui, ops: None }, reports).await
    }

    /// [`Extension::start`] with its operations going to `outlets.ops` as well.
    pub async fn start_with(
        spec: ExtensionSpec,
        outlets: Outlets,
        reports: Option<mpsc::UnboundedSender<ExtensionReport>>,
    ) -> Result<Self, ExtensionError> {
        let mut command = Command::new(&spec.program);
        command
            .args(&spec.args)
            .current_dir(&spec.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|error| ExtensionError::Start {
            name: spec.name.clone(),
            why: error.to_string(),
        })?;
        let group = child.id().and_then(|id| i32::try_from(id).ok());
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ExtensionError::Start {
                name: spec.name.clone(),
                why: "no pipes".into(),
            });
        };
        let reporter = Reporter {
            name: spec.name.clone(),
            sent: Arc::default(),
            out: reports,
            last: Arc::default(),
        };
        let (writer, mut lines) = mpsc::channel::<String>(WRITE_QUEUE);
        // The writer: a process that stops reading blocks this task only.
        tokio::spawn(async move {
            let mut stdin = stdin;
            while let Some(line) = lines.recv().await {
                if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
        });
        let pending: Pending = Arc::default();
        let alive = Arc::new(AtomicBool::new(true));
        tokio::spawn(read_loop(
            stdout,
            Arc::clone(&pending),
            Arc::clone(&alive),
            writer.clone(),
            outlets,
            reporter.clone(),
        ));
        let mut extension = Self {
            spec,
            manifest: Manifest::default(),
            writer,
            pending,
            next_id: AtomicU64::new(0),
            alive,
            child: Arc::new(Mutex::new(Some(child))),
            group,
            reporter,
        };
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "cwd": extension.spec.cwd.display().to_string(),
        });
        let answer = extension.request("initialize", params).await?;
        let manifest = answer
            .get("manifest")
            .cloned()
            .ok_or_else(|| "no `manifest` field".to_owned())
            .and_then(|m| serde_json::from_value::<Manifest>(m).map_err(|e| e.to_string()));
        match manifest {
            Ok(manifest) => extension.manifest = manifest,
            Err(why) => {
                extension.stop();
                return Err(ExtensionError::Handshake {
                    name: extension.spec.name.clone(),
                    why,
                });
            }
        }
        Ok(extension)
    }

    /// Its configured name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// What it declared.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Whether it is still running and answering.
    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// How it was started.
    pub fn spec(&self) -> &ExtensionSpec {
        &self.spec
    }

    /// The latest problem reported about it (an exit, a timeout, garbage), if any.
    pub fn last_problem(&self) -> Option<String> {
        self.reporter
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sends a request and waits for the answer, at most the spec's timeout. An extension
    /// that does not answer in time, or whose stdin is full, is stopped and reported.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ExtensionError> {
        if !self.is_alive() {
            return Err(self.stopped());
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst) + 1;
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, tx);
        let line = Message::request(id, method, params).to_line();
        if self.writer.try_send(line).is_err() {
            self.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
            self.reporter.once(
                "stdin",
                format!(
                    "extension `{}` stopped reading its input; stopped",
                    self.spec.name
                ),
            );
            self.stop();
            return Err(self.stopped());
        }
        match tokio::time::timeout(self.spec.timeout, rx).await {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(message))) => Err(ExtensionError::Rpc {
                name: self.spec.name.clone(),
                method: method.to_owned(),
                message,
            }),
            Ok(Err(_)) => Err(self.stopped()),
            Err(_) => {
                self.pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
                let error = ExtensionError::Timeout {
                    name: self.spec.name.clone(),
                    method: method.to_owned(),
                    timeout: self.spec.timeout,
                };
                self.reporter.once("timeout", error.to_string());
                self.stop();
                Err(error)
            }
        }
    }

    /// Asks it about a hook event it declared in `hooks` (`None` when it did not). The answer
    /// is read exactly as a command hook's JSON; a failure is a non-blocking one.
    pub async fn hook(&self, input: &HookInput) -> Option<Outcome> {
        if !self.declares(input.event) {
            return None;
        }
        Some(Outcome::fold(input.event, vec![self.hook_run(input).await]))
    }

    fn declares(&self, event: HookEvent) -> bool {
        self.manifest.hooks.iter().any(|h| h == event.name())
    }

    /// Its answer as a command hook's run.
    async fn hook_run(&self, input: &HookInput) -> HookRun {
        let params = json!({"event": input.event.name(), "input": input.to_json()});
        let mut run = HookRun {
            command: format!("extension {}", self.spec.name),
            file: PathBuf::from(&self.spec.name),
            status: RunStatus::Exited(0),
            stdout: String::new(),
            stderr: String::new(),
            truncated: false,
        };
        match self.request("hook", params).await {
            Ok(answer) => run.stdout = answer.to_string(),
            Err(error) => run.status = RunStatus::FailedToStart(error.to_string()),
        }
        run
    }

    /// Tells it about a runtime event, if it subscribed (`*` or the name). Never waits: an
    /// extension that does not keep up misses events (reported once).
    pub fn notify_event(&self, name: &str, data: &Value) {
        if !self.is_alive() || !self.manifest.events.iter().any(|e| e == "*" || e == name) {
            return;
        }
        let line = Message::notification("event", json!({"name": name, "data": data})).to_line();
        if self.writer.try_send(line).is_err() {
            self.reporter.once(
                "events",
                format!(
                    "extension `{}` is not keeping up; events dropped",
                    self.spec.name
                ),
            );
        }
    }

    /// Runs one of its slash commands; the text to show.
    pub async fn command(&self, name: &str, args: &str) -> Result<String, ExtensionError> {
        let answer = self
            .request("command", json!({"name": name, "args": args}))
            .await?;
        Ok(answer
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned())
    }

    /// Calls one of its tools.
    pub async fn call_tool(&self, name: &str, arguments: &Value) -> ToolResult {
        match self
            .request("tool", json!({"name": name, "arguments": arguments}))
            .await
            .and_then(|v| {
                serde_json::from_value::<ToolResult>(v).map_err(|e| ExtensionError::Rpc {
                    name: self.spec.name.clone(),
                    method: "tool".into(),
                    message: e.to_string(),
                })
            }) {
            Ok(result) => result,
            Err(error) => ToolResult {
                text: error.to_string(),
                is_error: true,
            },
        }
    }

    /// Asks it to exit (`shutdown`, bounded by the timeout), then kills what is left.
    pub async fn shutdown(&self) {
        let _ = self.request("shutdown", json!({})).await;
        self.stop();
    }

    /// Kills its process group; pending requests fail at once.
    pub fn stop(&self) {
        self.alive.store(false, Ordering::SeqCst);
        if let Some(group) = self.group {
            let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
        }
        if let Some(mut child) = self
            .child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = child.start_kill();
            // Reaped in the background.
            tokio::spawn(async move {
                let _ = child.wait().await;
            });
        }
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    fn stopped(&self) -> ExtensionError {
        ExtensionError::Stopped {
            name: self.spec.name.clone(),
        }
    }
}

impl HookResponder for Extension {
    fn answers(&self, event: HookEvent) -> bool {
        self.is_alive() && self.declares(event)
    }

    fn answer<'a>(
        &'a self,
        input: &'a HookInput,
    ) -> Pin<Box<dyn Future<Output = HookRun> + Send + 'a>> {
        Box::pin(self.hook_run(input))
    }
}

impl Drop for Extension {
    fn drop(&mut self) {
        if let Some(group) = self.group
            && self.is_alive()
        {
            let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
        }
    }
}

/// One line, or why there is none.
enum Line {
    Message(Vec<u8>),
    TooLong(usize),
    End,
}

/// Reads up to the next newline, holding at most `cap` bytes.
async fn read_line_capped(reader: &mut BufReader<impl AsyncRead + Unpin>, cap: usize) -> Line {
    let mut line = Vec::new();
    let mut seen = 0_usize;
    loop {
        let buffer = match reader.fill_buf().await {
            Ok(buffer) => buffer,
            Err(_) => return Line::End,
        };
        if buffer.is_empty() {
            return if seen == 0 {
                Line::End
            } else if seen > cap {
                Line::TooLong(seen)
            } else {
                Line::Message(line)
            };
        }
        let (chunk, done) = match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => (buffer.get(..at).unwrap_or_default(), Some(at + 1)),
            None => (buffer, None),
        };
        seen += chunk.len();
        if seen <= cap {
            line.extend_from_slice(chunk);
        } else {
            line = Vec::new();
        }
        let used = done.unwrap_or(buffer.len());
        reader.consume(used);
        if done.is_some() {
            return if seen > cap {
                Line::TooLong(seen)
            } else {
                Line::Message(line)
            };
        }
    }
}

/// Reads everything the extension writes, answers its requests, and fails the pending
/// requests when it exits.
async fn read_loop(
    stdout: impl AsyncRead + Unpin,
    pending: Pending,
    alive: Arc<AtomicBool>,
    writer: mpsc::Sender<String>,
    outlets: Outlets,
    reporter: Reporter,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let in_flight = Arc::new(Semaphore::new(UI_IN_FLIGHT));
    loop {
        let bytes = match read_line_capped(&mut reader, MAX_MESSAGE_BYTES).await {
            Line::End => break,
            Line::TooLong(size) => {
                reporter.once(
                    "too-long",
                    format!(
                        "extension `{}` sent a message of {size} bytes (limit {MAX_MESSAGE_BYTES}); dropped",
                        reporter.name
                    ),
                );
                continue;
            }
            Line::Message(bytes) => bytes,
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(message) = serde_json::from_slice::<Message>(&bytes) else {
            reporter.once(
                "garbage",
                format!(
                    "extension `{}` wrote a line that is not a JSON-RPC message; ignored",
                    reporter.name
                ),
            );
            continue;
        };
        match (message.id, message.method.as_deref()) {
            (Some(id), None) => {
                let waiting = pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
                if let Some(waiting) = waiting {
                    let answer = match message.error {
                        Some(error) => Err(error.message),
                        None => Ok(message.result.unwrap_or(Value::Null)),
                    };
                    let _ = waiting.send(answer);
                }
            }
            (id, Some("op")) => {
                let op = message.params.unwrap_or(Value::Null);
                forward_op(id, op, &writer, outlets.ops.as_ref(), &reporter);
            }
            (id, Some(method)) => {
                let params = message.params.unwrap_or(Value::Null);
                handle_request(
                    id,
                    method,
                    &params,
                    &writer,
                    outlets.ui.as_ref(),
                    &in_flight,
                    &reporter,
                );
            }
            (None, None) => {}
        }
    }
    if alive.swap(false, Ordering::SeqCst) {
        reporter.once("exit", format!("extension `{}` exited", reporter.name));
    }
    pending
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
}

/// Hands an `op` to the runtime and answers the extension once it is taken or refused: `{}`,
/// or an error saying why (no runtime here, too many waiting, not an operation extensions
/// may send).
fn forward_op(
    id: Option<u64>,
    op: Value,
    writer: &mpsc::Sender<String>,
    ops: Option<&mpsc::Sender<OpCall>>,
    reporter: &Reporter,
) {
    let refuse = |why: String| {
        if let Some(id) = id {
            let _ = writer.try_send(Message::error(id, -32000, why).to_line());
        }
    };
    let Some(ops) = ops else {
        return refuse("no session runtime takes operations here".to_owned());
    };
    let (reply, answer) = match id {
        Some(_) => {
            let (tx, rx) = oneshot::channel();
            (Some(tx), Some(rx))
        }
        None => (None, None),
    };
    let call = OpCall {
        extension: reporter.name.clone(),
        op,
        reply,
    };
    if ops.try_send(call).is_err() {
        reporter.once(
            "op-flood",
            format!(
                "extension `{}` sends operations faster than the session takes them; extra ones refused",
                reporter.name
            ),
        );
        return refuse("too many operations waiting".to_owned());
    }
    let (Some(id), Some(answer)) = (id, answer) else {
        return;
    };
    let writer = writer.clone();
    tokio::spawn(async move {
        let line = match answer.await {
            Ok(Ok(())) => Message::response(id, json!({})),
            Ok(Err(why)) => Message::error(id, -32000, why),
            Err(_) => Message::error(id, -32000, "the session runtime has ended"),
        };
        let _ = writer.try_send(line.to_line());
    });
}

fn handle_request(
    id: Option<u64>,
    method: &str,
    params: &Value,
    writer: &mpsc::Sender<String>,
    ui: Option<&mpsc::Sender<UiCall>>,
    in_flight: &Arc<Semaphore>,
    reporter: &Reporter,
) {
    let text = |key: &str| {
        params
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let request = match method {
        "ui/confirm" => UiRequest::Confirm {
            title: text("title"),
            message: text("message"),
        },
        "ui/select" => UiRequest::Select {
            title: text("title"),
            options: params
                .get("options")
                .and_then(Value::as_array)
                .map(|o| {
                    o.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
        },
        "ui/input" => UiRequest::Input {
            title: text("title"),
            placeholder: text("placeholder"),
        },
        "ui/notify" => UiRequest::Notify {
            message: text("message"),
            level: text("level"),
        },
        "ui/status" => UiRequest::Status { text: text("text") },
        other => {
            if let Some(id) = id {
                let _ = writer
                    .try_send(Message::error(id, -32601, format!("no method {other}")).to_line());
            }
            return;
        }
    };
    let flood = || {
        reporter.once(
            "flood",
            format!(
                "extension `{}` sends more UI requests than can be shown; extra ones dropped",
                reporter.name
            ),
        );
    };
    let Some(id) = id else {
        // notify and status: shown if there is room, never waited for.
        if let Some(ui) = ui
            && ui
                .try_send(UiCall {
                    extension: reporter.name.clone(),
                    request,
                    reply: None,
                })
                .is_err()
        {
            flood();
        }
        return;
    };
    let no_one = request.unanswered();
    let (Some(ui), Ok(permit)) = (ui, Arc::clone(in_flight).try_acquire_owned()) else {
        if ui.is_some() {
            flood();
        }
        let _ = writer.try_send(Message::response(id, no_one).to_line());
        return;
    };
    let (reply, answer) = oneshot::channel();
    if ui
        .try_send(UiCall {
            extension: reporter.name.clone(),
            request,
            reply: Some(reply),
        })
        .is_err()
    {
        flood();
        let _ = writer.try_send(Message::response(id, no_one).to_line());
        return;
    }
    let writer = writer.clone();
    tokio::spawn(async move {
        let value = answer.await.unwrap_or(no_one);
        let _ = writer.try_send(Message::response(id, value).to_line());
        drop(permit);
    });
}
