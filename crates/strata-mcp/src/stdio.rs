//! A stdio server as a transport whose line limit answers for what it drops.
//!
//! The SDK's stdio reader caps one message at 16 MiB (so a server that never writes a newline
//! cannot exhaust memory) and drops a longer line with a log record only: the request it
//! answered then waits out its timeout and reads as "did not answer" although the server
//! answered at once. [`ChildTransport`] keeps the SDK's reader and cap but reads the child's
//! stdout through [`Oversize`], which follows each line's top-level `id` in constant memory
//! and, right after a line over the cap, hands the reader a JSON-RPC error for that id that
//! says how large the answer was.

use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::task::{Context, Poll, ready};

use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

/// The most one message from a stdio server may hold, its newline included: the SDK's cap,
/// which matches its HTTP client's largest event.
pub const MAX_MESSAGE_BYTES: usize = DEFAULT_MAX_LINE_LENGTH;

/// The key in the `data` of the error [`Oversize`] writes, holding the line's length in
/// bytes; [`oversized`] reads it back.
const OVERSIZED_KEY: &str = "strataOversizedBytes";

/// How long a server gets to exit once its stdin closed, and again after SIGTERM.
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// A started stdio server: its stdin and (guarded) stdout as the SDK's transport, and the
/// process, killed with its group when dropped.
pub struct ChildTransport {
    child: Option<Box<dyn ChildWrapper>>,
    transport: AsyncRwTransport<RoleClient, Oversize<ChildStdout>, ChildStdin>,
}

impl ChildTransport {
    /// Starts `command` with piped stdin, stdout and stderr; the stderr is returned for the
    /// caller to drain.
    pub fn spawn(
        mut command: CommandWrap,
        server: &str,
    ) -> io::Result<(Self, Option<ChildStderr>)> {
        command
            .command_mut()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn()?;
        let stdin = child.inner_mut().stdin().take();
        let stdout = child.inner_mut().stdout().take();
        let stderr = child.inner_mut().stderr().take();
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            return Err(io::Error::other(
                "the server's stdin or stdout is not a pipe",
            ));
        };
        let transport = AsyncRwTransport::new(
            Oversize::new(stdout, MAX_MESSAGE_BYTES, server.to_owned()),
            stdin,
        )
        .with_max_line_length(MAX_MESSAGE_BYTES);
        Ok((
            Self {
                child: Some(child),
                transport,
            },
            stderr,
        ))
    }

    /// The process id (the group's id: the child leads its group).
    pub fn id(&self) -> Option<u32> {
        self.child.as_ref()?.id()
    }

    /// The MCP stdio shutdown: close stdin, wait; SIGTERM, wait; kill.
    async fn shut_down(&mut self) -> io::Result<()> {
        self.transport.close().await?;
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        if tokio::time::timeout(EXIT_WAIT, child.wait()).await.is_ok() {
            self.child = None;
            return Ok(());
        }
        #[cfg(unix)]
        if child
            .signal(nix::sys::signal::Signal::SIGTERM as i32)
            .is_ok()
            && tokio::time::timeout(EXIT_WAIT, child.wait()).await.is_ok()
        {
            self.child = None;
            return Ok(());
        }
        let killed = Box::into_pin(child.kill()).await;
        self.child = None;
        killed
    }
}

impl Drop for ChildTransport {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // `kill` also reaps; without a runtime the signal alone is sent.
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(async move {
                        let _ = Box::into_pin(child.kill()).await;
                    });
                }
                Err(_) => {
                    let _ = child.start_kill();
                }
            }
        }
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.shut_down()
    }
}

/// The message of an error [`Oversize`] wrote in place of a dropped answer, if `error` is one.
pub fn oversized(error: &rmcp::model::ErrorData) -> Option<String> {
    error
        .data
        .as_ref()?
        .get(OVERSIZED_KEY)?
        .as_u64()
        .map(|_| error.message.to_string())
}

/// Reads a server's stdout unchanged, and after each line longer than `limit` (newline
/// included) that answers a request, adds one line: a JSON-RPC error for the same id saying
/// the answer was too large. The reader downstream drops the long line by the same rule, so
/// the request gets this error instead of waiting.
pub struct Oversize<R> {
    inner: R,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    pending: Vec<u8>,
    sent: usize,
    line: LineScan,
    limit: u64,
    server: String,
}

impl<R> Oversize<R> {
    /// Wraps `inner`; `server` names the server in the errors.
    pub fn new(inner: R, limit: usize, server: String) -> Self {
        Self {
            inner,
            buf: vec![0; 64 * 1024].into_boxed_slice(),
            start: 0,
            end: 0,
            pending: Vec::new(),
            sent: 0,
            line: LineScan::default(),
            limit: u64::try_from(limit).unwrap_or(u64::MAX),
            server,
        }
    }

    /// Passes on at most `room` buffered bytes, stopping after a line that needs an answer.
    fn pass_on(&mut self, room: usize) -> usize {
        let stop = self.end.min(self.start + room);
        let mut taken = 0;
        for &byte in &self.buf[self.start..stop] {
            taken += 1;
            self.line.feed(byte);
            if byte == b'\n' {
                let line = std::mem::take(&mut self.line);
                if line.len > self.limit {
                    match line.answer(&self.server, self.limit) {
                        Some(answer) => {
                            self.pending = answer;
                            self.sent = 0;
                            break;
                        }
                        None => tracing::warn!(
                            server = self.server,
                            bytes = line.len,
                            "a message over the stdio limit that answers no request was dropped"
                        ),
                    }
                }
            }
        }
        taken
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Oversize<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.sent < this.pending.len() {
                let n = out.remaining().min(this.pending.len() - this.sent);
                out.put_slice(&this.pending[this.sent..this.sent + n]);
                this.sent += n;
                if this.sent == this.pending.len() {
                    this.pending.clear();
                    this.sent = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.start < this.end {
                let from = this.start;
                let taken = this.pass_on(out.remaining());
                out.put_slice(&this.buf[from..from + taken]);
                this.start += taken;
                return Poll::Ready(Ok(()));
            }
            let mut read = ReadBuf::new(&mut this.buf);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            let filled = read.filled().len();
            if filled == 0 {
                return Poll::Ready(Ok(()));
            }
            this.start = 0;
            this.end = filled;
        }
    }
}

/// Where a line's top-level object is, byte by byte.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Top {
    /// Before the opening brace, or after a `,` at depth 1.
    #[default]
    ExpectKey,
    InKey,
    ExpectColon,
    InValue,
}

/// Which top-level member's value is being read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Field {
    #[default]
    Other,
    Id,
}

/// What one line has shown so far: its length, its top-level `id` (raw, capped) and whether
/// it has a `method` (a request or notification, not an answer). Constant memory.
#[derive(Debug, Default)]
struct LineScan {
    len: u64,
    depth: u32,
    in_string: bool,
    escaped: bool,
    top: Top,
    field: Field,
    key: Vec<u8>,
    id: Vec<u8>,
    has_method: bool,
}

/// Longest top-level key kept (longer ones are none of `id`, `method`).
const KEY_CAP: usize = 8;
/// Longest raw id kept; a longer one is not answered.
const ID_CAP: usize = 256;

fn push_capped(into: &mut Vec<u8>, byte: u8, cap: usize) {
    if into.len() <= cap {
        into.push(byte);
    }
}

impl LineScan {
    fn feed(&mut self, byte: u8) {
        self.len += 1;
        let capture = self.depth == 1 && self.top == Top::InValue && self.field == Field::Id;
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                if self.depth == 1 && self.top == Top::InKey {
                    self.field = match self.key.as_slice() {
                        b"id" => Field::Id,
                        _ => Field::Other,
                    };
                    if self.field == Field::Id {
                        self.id.clear();
                    }
                    if self.key == b"method" {
                        self.has_method = true;
                    }
                    self.top = Top::ExpectColon;
                    return;
                }
            }
            if self.depth == 1 && self.top == Top::InKey {
                push_capped(&mut self.key, byte, KEY_CAP);
            } else if capture {
                push_capped(&mut self.id, byte, ID_CAP);
            }
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.top == Top::ExpectKey {
                    self.top = Top::InKey;
                    self.key.clear();
                    return;
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.top = Top::ExpectKey;
                    return;
                }
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    return;
                }
            }
            b':' if self.depth == 1 && self.top == Top::ExpectColon => {
                self.top = Top::InValue;
                return;
            }
            b',' if self.depth == 1 && self.top == Top::InValue => {
                self.top = Top::ExpectKey;
                self.field = Field::Other;
                return;
            }
            _ => {}
        }
        if capture && !byte.is_ascii_whitespace() {
            push_capped(&mut self.id, byte, ID_CAP);
        }
    }

    /// The error line answering this (too long) line, when it answers a request.
    fn answer(&self, server: &str, limit: u64) -> Option<Vec<u8>> {
        if self.has_method || self.id.len() > ID_CAP {
            return None;
        }
        let id: Value = serde_json::from_slice(&self.id).ok()?;
        if !(id.is_number() || id.is_string()) {
            return None;
        }
        let message = format!(
            "MCP server \"{server}\" answered with {}, more than the {} one stdio message may hold; the answer was dropped (ask the tool for less: a narrower query or a page)",
            mib(self.len),
            mib(limit)
        );
        let error = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32603, "message": message, "data": {OVERSIZED_KEY: self.len}},
        });
        let mut line = serde_json::to_vec(&error).ok()?;
        line.push(b'\n');
        Some(line)
    }
}

fn mib(bytes: u64) -> String {
    #[expect(
        clippy::cast_precision_loss,
        reason = "a size shown to one decimal place"
    )]
    let mib = bytes as f64 / (1024.0 * 1024.0);
    if bytes.is_multiple_of(1024 * 1024) {
        format!("{mib:.0} MiB")
    } else {
        format!("{mib:.1} MiB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn through(input: &[u8], limit: usize) -> String {
        let mut reader = Oversize::new(input, limit, "big".into());
        let mut out = Vec::new();
        reader.read_to_end(&mut out).await.unwrap();
        String::from_utf8(out).unwrap()
    }

    fn error_lines(output: &str) -> Vec<Value> {
        output
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|message| message.get("error").is_some())
            .collect()
    }

    #[tokio::test]
    async fn a_long_answer_is_followed_by_an_error_for_its_id_wherever_the_id_is() {
        let long = "x".repeat(200);
        let id_last = format!(
            "{{\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{long}\"}}]}},\"jsonrpc\":\"2.0\",\"id\":7}}\n"
        );
        let id_first =
            format!("{{\"jsonrpc\":\"2.0\", \"id\" : \"a\\\"b\", \"result\":\"{long}\"}}\n");
        let short = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n";
        let input = format!("{short}{id_last}{short}{id_first}");
        let output = through(input.as_bytes(), 100).await;
        // Every byte read is passed on unchanged, in order.
        assert!(output.starts_with(&format!("{short}{id_last}")));
        let errors = error_lines(&output);
        assert_eq!(errors.len(), 2, "{output}");
        assert_eq!(errors[0]["id"], 7);
        assert_eq!(errors[1]["id"], "a\"b");
        let message = errors[0]["error"]["message"].as_str().unwrap();
        assert!(message.contains("MCP server \"big\""), "{message}");
        assert_eq!(
            errors[0]["error"]["data"][OVERSIZED_KEY],
            u64::try_from(id_last.len()).unwrap()
        );
        // The error follows the long line directly.
        let after_long = output.split_once(&id_last).unwrap().1;
        let next: Value = serde_json::from_str(after_long.lines().next().unwrap()).unwrap();
        assert_eq!(next["id"], 7);
    }

    #[tokio::test]
    async fn lines_within_the_limit_and_long_requests_get_no_error() {
        let nested_id = format!(
            "{{\"jsonrpc\":\"2.0\",\"result\":{{\"id\":9,\"pad\":\"{}\"}}}}\n",
            "y".repeat(200)
        );
        let request = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"sampling/createMessage\",\"params\":\"{}\"}}\n",
            "z".repeat(200)
        );
        let fits = "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n";
        let input = format!("{nested_id}{request}{fits}");
        let output = through(input.as_bytes(), 100).await;
        assert_eq!(output, input);
        // The limit counts the newline, as the SDK's reader does.
        let exact = through(fits.as_bytes(), fits.len()).await;
        assert_eq!(exact, fits);
        let over = through(fits.as_bytes(), fits.len() - 1).await;
        assert_eq!(error_lines(&over).len(), 1);
    }

    /// Hands out `bytes` 64 at a time, not ready every other poll (as a pipe would).
    struct Trickle {
        bytes: Vec<u8>,
        at: usize,
        ready: bool,
    }

    impl AsyncRead for Trickle {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            out: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let this = self.get_mut();
            this.ready = !this.ready;
            if !this.ready || this.at == this.bytes.len() {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let n = (this.bytes.len() - this.at).min(64).min(out.remaining());
            out.put_slice(&this.bytes[this.at..this.at + n]);
            this.at += n;
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn the_sdk_reader_hands_the_error_to_the_caller() {
        let long = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{}\"}}]}}}}\n",
            "q".repeat(3000)
        );
        let stdout = Trickle {
            bytes: long.into_bytes(),
            at: 0,
            ready: false,
        };
        let mut transport: AsyncRwTransport<RoleClient, _, _> =
            AsyncRwTransport::new(Oversize::new(stdout, 1000, "big".into()), tokio::io::sink())
                .with_max_line_length(1000);
        let message = transport.receive().await.unwrap();
        let value = serde_json::to_value(&message).unwrap();
        assert_eq!(value["id"], 1);
        assert!(
            value["error"]["message"]
                .as_str()
                .unwrap()
                .contains("more than the")
        );
    }
}
