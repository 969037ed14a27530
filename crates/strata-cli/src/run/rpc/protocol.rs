//! The wire: one JSON object per LF-terminated line on stdout, responses shaped as Pi's.

use std::io::Write as _;

use serde_json::{Map, Value, json};

/// Writes records to stdout, one line each, flushed (shared by every task).
#[derive(Debug, Clone, Copy, Default)]
pub struct Out;

impl Out {
    /// Writes one record. A closed stdout means the client left; nothing is left to tell it.
    pub fn send(self, record: &Value) {
        let Ok(mut line) = serde_json::to_string(record) else {
            return;
        };
        line.push('\n');
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(line.as_bytes());
        let _ = stdout.flush();
    }

    /// Writes several records in order.
    pub fn send_all(self, records: &[Value]) {
        for record in records {
            self.send(record);
        }
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
