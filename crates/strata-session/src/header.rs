//! The session header (the first line of a file).

use serde::{Deserialize, Serialize};

use crate::message::Extra;

/// The version strata writes (Pi's `CURRENT_SESSION_VERSION`).
pub const CURRENT_VERSION: u32 = 3;

/// `{"type":"session","version":3,"id","timestamp","cwd","parentSession"?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    /// Format version; absent means 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The session's id (a UUID).
    pub id: String,
    /// When the session was created, ISO 8601.
    #[serde(default)]
    pub timestamp: String,
    /// The working directory the session belongs to.
    #[serde(default)]
    pub cwd: String,
    /// The file this session was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

impl SessionHeader {
    /// The format version, 1 when the header has none.
    pub fn effective_version(&self) -> u32 {
        self.version.unwrap_or(1)
    }

    /// The header as one JSON line (no newline), `type` first.
    pub fn to_json_line(&self) -> Result<String, serde_json::Error> {
        #[derive(Serialize)]
        struct Tagged<'a> {
            #[serde(rename = "type")]
            entry_type: &'static str,
            #[serde(flatten)]
            header: &'a SessionHeader,
        }
        serde_json::to_string(&Tagged {
            entry_type: "session",
            header: self,
        })
    }

    /// Parses a header line; `None` when the line is not a `session` object with a string `id`.
    pub fn parse(line: &str) -> Option<Self> {
        let mut map: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(line).ok()?;
        if map.get("type").and_then(serde_json::Value::as_str) != Some("session") {
            return None;
        }
        map.shift_remove("type");
        serde_json::from_value(serde_json::Value::Object(map)).ok()
    }

    /// Why `line` is not a header, for an error message (call it when [`Self::parse`] failed).
    pub fn problem(line: &str) -> String {
        use serde_json::Value;
        let map = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return "the first line is not a JSON object".to_owned(),
            Err(_) => return "the first line is not JSON".to_owned(),
        };
        match map.get("type") {
            Some(Value::String(kind)) if kind == "session" => {}
            Some(Value::String(kind)) => {
                return format!("the first line is a `{kind}` entry, not a `session` header");
            }
            _ => return "the first line has no `\"type\": \"session\"`".to_owned(),
        }
        let field = |name: &str, wanted: &str, value: &Value| {
            format!(
                "the header's `{name}` is {}, not {wanted}",
                json_kind(value)
            )
        };
        match map.get("version") {
            None | Some(Value::Null) => {}
            Some(Value::Number(n)) if n.as_u64().is_some_and(|v| u32::try_from(v).is_ok()) => {}
            Some(other) => return field("version", "a whole number", other),
        }
        match map.get("id") {
            Some(Value::String(_)) => {}
            None => return "the header has no `id`".to_owned(),
            Some(other) => return field("id", "a string", other),
        }
        for name in ["timestamp", "cwd", "parentSession"] {
            match map.get(name) {
                None | Some(Value::String(_)) => {}
                Some(Value::Null) if name == "parentSession" => {}
                Some(other) => return field(name, "a string", other),
            }
        }
        "the header does not parse".to_owned()
    }
}

/// "a string", "a number", … for messages about a JSON value of the wrong kind.
fn json_kind(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(_) => "a boolean".to_owned(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::SessionHeader;

    #[test]
    fn problems_name_the_field_and_what_was_found() {
        let problem = |line: &str| {
            assert!(SessionHeader::parse(line).is_none(), "{line} parsed");
            SessionHeader::problem(line)
        };
        assert_eq!(
            problem(r#"{"type":"session","version":"3","id":"a"}"#),
            "the header's `version` is the string \"3\", not a whole number"
        );
        assert_eq!(
            problem(r#"{"type":"session","version":3}"#),
            "the header has no `id`"
        );
        assert_eq!(
            problem(r#"{"type":"message","id":"a"}"#),
            "the first line is a `message` entry, not a `session` header"
        );
        assert_eq!(problem("not json"), "the first line is not JSON");
        assert_eq!(
            problem(r#"{"type":"session","id":"a","cwd":7}"#),
            "the header's `cwd` is the number 7, not a string"
        );
    }
}
