//! What local servers answer when a client asks which models they serve: an OpenAI-style
//! `GET /v1/models` list (with vLLM's `max_model_len` per entry when a window is set) and
//! llama.cpp's `GET /props` (`default_generation_settings.n_ctx`, the first served model's
//! window). Their chat usage is the OpenAI dialect the chat route already speaks:
//! llama.cpp and vLLM both report cached prompt tokens as `prompt_tokens_details.cached_tokens`.

use serde_json::{Value, json};

/// A model the mock says it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedModel {
    /// Model id.
    pub id: String,
    /// Context window to report, if any.
    pub context_window: Option<u64>,
}

/// The `/v1/models` body.
pub fn model_list(served: &[ServedModel]) -> Value {
    let data: Vec<Value> = served
        .iter()
        .map(|m| {
            let mut entry = json!({"id": m.id, "object": "model", "owned_by": "strata-mock"});
            if let Some(window) = m.context_window {
                entry["max_model_len"] = json!(window);
            }
            entry
        })
        .collect();
    json!({"object": "list", "data": data})
}

/// The `/props` body (no window when none is set).
pub fn props(served: &[ServedModel]) -> Value {
    let mut settings = json!({"params": {}});
    if let Some(window) = served.first().and_then(|m| m.context_window) {
        settings["n_ctx"] = json!(window);
    }
    json!({"default_generation_settings": settings, "total_slots": 1})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_props_carry_the_windows_set() {
        let served = [
            ServedModel {
                id: "a".into(),
                context_window: Some(8192),
            },
            ServedModel {
                id: "b".into(),
                context_window: None,
            },
        ];
        let list = model_list(&served);
        assert_eq!(list["data"][0]["max_model_len"], 8192);
        assert!(list["data"][1].get("max_model_len").is_none());
        assert_eq!(props(&served)["default_generation_settings"]["n_ctx"], 8192);
        assert!(
            props(&[])["default_generation_settings"]
                .get("n_ctx")
                .is_none()
        );
    }
}
