//! The provider's own word on why a request missed the prompt cache, and the response ids a
//! request compares against.
//!
//! Anthropic (`diagnostics.previous_message_id` → `diagnostics.cache_miss_reason`,
//! anthropic-python 2.17.0 `BetaDiagnostics`) and OpenAI (`prompt_cache_options.
//! comparison_response_id` → `prompt_cache_diagnostics`, openai-python 3.63.0 `Response`)
//! compare a request with an earlier response of the same client. Adapters send the id of the
//! session's previous response ([`LastResponses`]) and report the answer as
//! [`crate::Event::CacheDiagnosis`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::event::{Event, EventStream};

/// What the provider said about the cache reuse of one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheDiagnosis {
    /// The provider's reason as it spells it: Anthropic `model_changed`, `system_changed`,
    /// `tools_changed`, `messages_changed`, `previous_message_not_found`, `unavailable`;
    /// OpenAI `cache_hit`, `comparison_response_not_found`, `unavailable`, or a miss reason
    /// (`model_changed`, `prompt_cache_key_changed`, `tools_changed`, `input_changed`,
    /// `reasoning_effort_changed`, `context_compacted`, …).
    pub reason: String,
    /// Tokens the provider says would have been read had the prefix matched
    /// (`cache_missed_input_tokens` / `cache_missed_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed_tokens: Option<u64>,
}

/// What a provider's reason says changed, in strata's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosedChange {
    /// Another model.
    Model,
    /// The tools chapter.
    Tools,
    /// The system chapter.
    System,
    /// The conversation.
    Messages,
    /// OpenAI's `input_changed`: instructions or input items, which OpenAI does not tell apart.
    SystemOrMessages,
    /// A request parameter outside the prompt's chapters (effort, cache key, format, tier).
    Parameters,
}

impl CacheDiagnosis {
    /// A diagnosis with no token count.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            missed_tokens: None,
        }
    }

    /// What changed, when the reason names a change (`None` for a hit, an unknown previous
    /// response, or no diagnosis).
    pub fn change(&self) -> Option<DiagnosedChange> {
        Some(match self.reason.as_str() {
            "model_changed" => DiagnosedChange::Model,
            "tools_changed" => DiagnosedChange::Tools,
            "system_changed" => DiagnosedChange::System,
            "messages_changed" | "context_compacted" => DiagnosedChange::Messages,
            "input_changed" => DiagnosedChange::SystemOrMessages,
            "prompt_cache_key_changed"
            | "text_format_changed"
            | "reasoning_effort_changed"
            | "verbosity_changed"
            | "service_tier_changed" => DiagnosedChange::Parameters,
            _ => return None,
        })
    }

    /// A few words for a footer or `strata stats`: `system changed (1,234 tokens missed)`.
    pub fn describe(&self) -> String {
        let words = self.reason.replace('_', " ");
        match self.missed_tokens {
            Some(tokens) => format!("{words} ({tokens} tokens missed)"),
            None => words,
        }
    }
}

/// The id of the last response each session received from one adapter, so the next request
/// can name it for the provider's cache diagnosis. Keyed by the session id of
/// [`crate::StreamOptions`] (requests without one share the empty key).
#[derive(Debug, Clone, Default)]
pub struct LastResponses {
    ids: Arc<Mutex<HashMap<String, String>>>,
}

impl LastResponses {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The last response id seen for `session`.
    pub fn get(&self, session: Option<&str>) -> Option<String> {
        self.ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(session.unwrap_or_default())
            .cloned()
    }

    /// Remembers `id` as the last response of `session`.
    pub fn set(&self, session: Option<&str>, id: String) {
        self.ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(session.unwrap_or_default().to_owned(), id);
    }

    /// `stream`, remembering the response id its `Start` event carries.
    pub fn track(&self, session: Option<&str>, stream: EventStream) -> EventStream {
        let this = self.clone();
        let session = session.map(str::to_owned);
        Box::pin(stream.inspect(move |event| {
            if let Event::Start {
                response_id: Some(id),
                ..
            } = event
            {
                this.set(session.as_deref(), id.clone());
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_map_to_what_changed() {
        let d = CacheDiagnosis::new("system_changed");
        assert_eq!(d.change(), Some(DiagnosedChange::System));
        assert_eq!(
            CacheDiagnosis::new("input_changed").change(),
            Some(DiagnosedChange::SystemOrMessages)
        );
        assert_eq!(CacheDiagnosis::new("cache_hit").change(), None);
        assert_eq!(CacheDiagnosis::new("unavailable").change(), None);
        let missed = CacheDiagnosis {
            reason: "tools_changed".into(),
            missed_tokens: Some(1200),
        };
        assert_eq!(missed.describe(), "tools changed (1200 tokens missed)");
        let json = serde_json::to_value(&missed).unwrap();
        assert_eq!(json["missedTokens"], 1200);
    }

    #[test]
    fn last_responses_are_kept_per_session() {
        let last = LastResponses::new();
        assert_eq!(last.get(Some("a")), None);
        last.set(Some("a"), "msg_1".into());
        last.set(Some("b"), "msg_2".into());
        assert_eq!(last.get(Some("a")).as_deref(), Some("msg_1"));
        assert_eq!(last.get(None), None);
    }
}
