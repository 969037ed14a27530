//! Pi 1.x's `--mode json` stream (Pi's docs/json.md): the session header, then the runtime's
//! events as the same session events rpc sends, so a script written for `pi --mode json` reads
//! strata's output unchanged.
//!
//! strata's own request and cache events (`request_start`, `usage`, `keep_warm`,
//! `system_update`) have no Pi counterpart; they are written beside Pi's records with their type
//! prefixed `strata_`, never instead of one. A reader that skips unknown types (as Pi's docs ask
//! of every reader) sees exactly Pi's stream.

use serde_json::{Value, json};
use strata_runtime::{Agent, AgentEvent};
use strata_runtime::{RunEnd, RuntimeEvent};

use crate::events::{EventMapper, Origin};

/// The prefix of strata's records that Pi's stream has no shape for.
pub const EXTRA_PREFIX: &str = "strata_";

/// Turns one session runtime's events into Pi's json-mode records.
#[derive(Debug)]
pub struct JsonStream {
    mapper: EventMapper,
    thinking_level: String,
}

impl JsonStream {
    /// A stream for `agent`'s session (before it is handed to the runtime), and the session
    /// header Pi writes as the first record.
    pub fn start(agent: &mut Agent, max_retries: u32) -> (Self, Value) {
        let config = agent.config();
        let origin = Origin {
            api: config.api.clone(),
            provider: config.model.provider.clone(),
            model: config.model.id.clone(),
        };
        let session = agent.session();
        let header = header_record(session.header());
        let path = session.path().to_path_buf();
        let thinking_level = agent
            .thinking()
            .map_or_else(|_| "off".to_owned(), |level| level.as_str().to_owned());
        let stream = Self {
            mapper: EventMapper::new(origin, max_retries, path),
            thinking_level,
        };
        (stream, header)
    }

    /// The records one runtime event becomes (often none).
    pub fn records(&mut self, event: RuntimeEvent) -> Vec<Value> {
        match event {
            RuntimeEvent::Agent { event } => {
                let extra = strata_extra(&event);
                let mut out = self.mapper.handle(event);
                out.extend(extra);
                out
            }
            RuntimeEvent::RunEnded {
                end,
                error,
                continues,
                ..
            } => {
                if continues {
                    // Pi reports a follow-up as part of the same run.
                    self.mapper.continue_run();
                    Vec::new()
                } else {
                    self.mapper
                        .finish_run(error.as_deref(), end == RunEnd::Aborted)
                }
            }
            RuntimeEvent::QueueChanged { texts } | RuntimeEvent::QueueCleared { texts } => {
                vec![json!({
                    "type": "queue_update",
                    "steering": texts.steering,
                    "followUp": texts.follow_up,
                })]
            }
            RuntimeEvent::ModelChanged {
                thinking: level, ..
            }
            | RuntimeEvent::ThinkingChanged { level } => {
                let level = level.as_str();
                if self.thinking_level == level {
                    return Vec::new();
                }
                level.clone_into(&mut self.thinking_level);
                vec![json!({"type": "thinking_level_changed", "level": level})]
            }
            RuntimeEvent::SessionNamed { name } => {
                vec![json!({"type": "session_info_changed", "name": name})]
            }
            RuntimeEvent::EntryAppended { entry } => {
                vec![json!({"type": "entry_appended", "entry": entry})]
            }
            RuntimeEvent::Record { record } => vec![record],
            RuntimeEvent::Notice { source, text } => {
                vec![crate::events::notice_record(&source, &text)]
            }
            RuntimeEvent::Accepted { .. }
            | RuntimeEvent::Settled
            | RuntimeEvent::SessionChanged { .. }
            | RuntimeEvent::Compacted { .. }
            | RuntimeEvent::Navigated { .. }
            | RuntimeEvent::Labelled { .. }
            | RuntimeEvent::Answered { .. }
            | RuntimeEvent::BashOutput { .. }
            | RuntimeEvent::BashEnded { .. }
            | RuntimeEvent::Failed { .. } => Vec::new(),
            // strata's own records: the rules layer has no shape in Pi's stream.
            RuntimeEvent::PermissionRequested { .. }
            | RuntimeEvent::PermissionModeChanged { .. }
            | RuntimeEvent::FilesRestored { .. } => {
                crate::server::rules_record(&event).into_iter().collect()
            }
        }
    }
}

/// The header as Pi writes it as the stream's first record: `type` first, then its fields.
fn header_record(header: &strata_runtime::SessionHeader) -> Value {
    let mut record = serde_json::Map::new();
    record.insert("type".into(), json!("session"));
    if let Ok(Value::Object(fields)) = serde_json::to_value(header) {
        record.extend(fields);
    }
    Value::Object(record)
}

/// strata's record for an agent event Pi's stream has no shape for: its own serialisation with
/// the type prefixed.
fn strata_extra(event: &AgentEvent) -> Option<Value> {
    if !matches!(
        event,
        AgentEvent::RequestStart { .. }
            | AgentEvent::Usage { .. }
            | AgentEvent::KeepWarm { .. }
            | AgentEvent::SystemUpdate { .. }
    ) {
        return None;
    }
    let mut value = serde_json::to_value(event).ok()?;
    let kind = value.get("type")?.as_str()?.to_owned();
    value["type"] = Value::String(format!("{EXTRA_PREFIX}{kind}"));
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_runtime::{Cost, Usage};

    #[test]
    fn strata_events_without_a_pi_shape_are_prefixed_and_others_are_not_extra() {
        let usage = AgentEvent::Usage {
            usage: Usage::default(),
            cost: Cost::default(),
        };
        let extra = strata_extra(&usage).unwrap();
        assert_eq!(extra["type"], "strata_usage");
        assert!(extra.get("usage").is_some());
        assert!(strata_extra(&AgentEvent::TextDelta { text: "x".into() }).is_none());
        assert!(strata_extra(&AgentEvent::AgentStart).is_none());
    }
}
