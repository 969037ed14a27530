//! The context as Pi's `buildSessionContext` returns it: `{messages, thinkingLevel, model}`.

use serde_json::{Map, Value, json};

use crate::flatten::Context;

/// The context in Pi's shape: `{messages, thinkingLevel, model}`, `model` being
/// `{provider, modelId}` or `null`. System prompt and tools have no place in it.
pub fn to_pi_json(context: &Context) -> Value {
    let messages: Vec<Value> = context
        .messages
        .iter()
        .map(|message| message.message.to_json())
        .collect();
    let model = match &context.model {
        Some(model) => json!({ "provider": model.provider, "modelId": model.model_id }),
        None => Value::Null,
    };
    let mut object = Map::new();
    object.insert("messages".into(), Value::Array(messages));
    object.insert(
        "thinkingLevel".into(),
        Value::String(context.thinking_level.clone()),
    );
    object.insert("model".into(), model);
    Value::Object(object)
}

/// strata's own JSON of the context: messages with entry ids, system prompt, tool ledger,
/// model and thinking level.
pub fn to_json(context: &Context) -> Value {
    serde_json::to_value(context).unwrap_or_else(|error| json!({ "error": error.to_string() }))
}
