//! The context as Pi's `buildSessionContext` returns it: `{messages, thinkingLevel, model}`.

use serde_json::{Map, Value, json};

use crate::flatten::Context;

/// The context in Pi's shape: `{messages, thinkingLevel, model}`, `model` being
/// `{provider, modelId}` or `null`. System prompt and tools have no place in it.
pub fn to_pi_json(context: &Context) -> Value {
    // Pi lists its system messages among the others, each where it was appended.
    let mut messages = Vec::with_capacity(context.messages.len() + context.system_messages.len());
    let mut systems = context.system_messages.iter().peekable();
    for (index, message) in context.messages.iter().enumerate() {
        while let Some(system) = systems.next_if(|system| system.after_messages <= index) {
            messages.push(system.message.to_json());
        }
        messages.push(message.message.to_json());
    }
    messages.extend(systems.map(|system| system.message.to_json()));
    let model = match &context.model {
        // An assistant message without `provider` or `model` (early v1 files) leaves the
        // field out, as Pi's `undefined` does.
        Some(model) => {
            let mut object = Map::new();
            if !model.provider.is_empty() {
                object.insert("provider".into(), json!(model.provider));
            }
            if !model.model_id.is_empty() {
                object.insert("modelId".into(), json!(model.model_id));
            }
            Value::Object(object)
        }
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
