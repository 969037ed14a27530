//! The wire: one JSON object per LF-terminated line on the output, responses shaped as Pi's.

use serde_json::{Map, Value, json};
use tokio::io::{AsyncWrite, AsyncWriteExt as _};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// Hands records to the writer task, one line each, in the order sent (shared by every task
/// that answers: the command loop and running `bash` commands).
#[derive(Debug, Clone)]
pub struct Out {
    lines: UnboundedSender<Option<String>>,
}

impl Out {
    /// An `Out` and the writer that puts its records on `output` (run it as a task; it ends
    /// after [`Out::close`], once everything sent before is written and flushed).
    pub fn new<W>(output: W) -> (Self, Writer<W>) {
        let (lines, queued) = unbounded_channel();
        (Self { lines }, Writer { output, queued })
    }

    /// Writes one record. A closed output means the client left; nothing is left to tell it.
    pub fn send(&self, record: &Value) {
        let Ok(mut line) = serde_json::to_string(record) else {
            return;
        };
        line.push('\n');
        let _ = self.lines.send(Some(line));
    }

    /// Writes several records in order.
    pub fn send_all(&self, records: &[Value]) {
        for record in records {
            self.send(record);
        }
    }

    /// Ends the writer after the records sent so far.
    pub fn close(&self) {
        let _ = self.lines.send(None);
    }
}

/// Writes the records an [`Out`] sends, each flushed as it goes.
#[derive(Debug)]
pub struct Writer<W> {
    output: W,
    queued: UnboundedReceiver<Option<String>>,
}

impl<W: AsyncWrite + Unpin> Writer<W> {
    /// Writes until [`Out::close`] (or every `Out` is dropped), then returns the output.
    pub async fn run(mut self) -> W {
        while let Some(Some(line)) = self.queued.recv().await {
            if self.output.write_all(line.as_bytes()).await.is_err()
                || self.output.flush().await.is_err()
            {
                // The client left: drain so senders never notice.
                while let Some(Some(_)) = self.queued.recv().await {}
                break;
            }
        }
        self.output
    }
}

/// A command's correlation id, echoed in its response.
pub type Id = Option<Value>;

/// `{"id", "type": "response", "command", "success": true, "data"}` (`data` omitted when
/// `None`, as Pi omits it).
pub fn success(id: &Id, command: &str, data: Option<Value>) -> Value {
    let mut response = head(id, command);
    response.insert("success".into(), json!(true));
    if let Some(data) = data {
        response.insert("data".into(), data);
    }
    Value::Object(response)
}

/// `{"id", "type": "response", "command", "success": false, "error"}`.
pub fn failure(id: &Id, command: &str, error: impl Into<String>) -> Value {
    let mut response = head(id, command);
    response.insert("success".into(), json!(false));
    response.insert("error".into(), json!(error.into()));
    Value::Object(response)
}

fn head(id: &Id, command: &str) -> Map<String, Value> {
    let mut response = Map::new();
    if let Some(id) = id {
        response.insert("id".into(), id.clone());
    }
    response.insert("type".into(), json!("response"));
    response.insert("command".into(), json!(command));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn records_are_written_as_lines_in_order_until_closed() {
        let (out, writer) = Out::new(Vec::new());
        let task = tokio::spawn(writer.run());
        out.send(&json!({"a": 1}));
        let other = out.clone();
        other.send_all(&[json!({"b": "x\u{2028}y"}), json!(null)]);
        out.close();
        out.send(&json!({"after": "close"}));
        let written = String::from_utf8(task.await.unwrap()).unwrap();
        assert_eq!(written, "{\"a\":1}\n{\"b\":\"x\u{2028}y\"}\nnull\n");
    }

    #[test]
    fn responses_have_pi_shape() {
        let id = Some(json!("req_1"));
        assert_eq!(
            success(&id, "get_state", Some(json!({"a": 1}))),
            json!({"id": "req_1", "type": "response", "command": "get_state", "success": true, "data": {"a": 1}})
        );
        assert_eq!(
            success(&None, "abort", None),
            json!({"type": "response", "command": "abort", "success": true})
        );
        assert_eq!(
            failure(&id, "set_model", "Model not found: a/b"),
            json!({"id": "req_1", "type": "response", "command": "set_model", "success": false, "error": "Model not found: a/b"})
        );
    }
}
