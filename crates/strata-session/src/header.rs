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
}
