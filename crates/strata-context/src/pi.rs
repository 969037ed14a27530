//! The context as Pi's `buildSessionContext` returns it: `{messages, thinkingLevel, model}`.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value, json};

use crate::chain::ModelRef;
use crate::flatten::Context;

/// Writes [`to_pi_json`]'s value as `serde_json::to_writer_pretty` prints it, byte for byte,
/// straight from the context: no JSON tree of the messages is built on the way. Wrap `writer`
/// in a buffer: the output is written a few bytes at a time.
pub fn write_pi_json(context: &Context, writer: impl std::io::Write) -> serde_json::Result<()> {
    serde_json::to_writer_pretty(writer, &PiContext(context))
}

/// [`to_pi_json`]'s shape as a `Serialize` view of a context.
struct PiContext<'a>(&'a Context);

impl Serialize for PiContext<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let context = self.0;
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("messages", &PiMessages(context))?;
        map.serialize_entry("thinkingLevel", &context.thinking_level)?;
        map.serialize_entry("model", &context.model.as_ref().map(PiModel))?;
        map.end()
    }
}

/// The messages with the system messages among them, in [`to_pi_json`]'s order.
struct PiMessages<'a>(&'a Context);

impl Serialize for PiMessages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let context = self.0;
        let mut seq = serializer
            .serialize_seq(Some(context.messages.len() + context.system_messages.len()))?;
        let mut systems = context.system_messages.iter().peekable();
        for (index, message) in context.messages.iter().enumerate() {
            while let Some(system) = systems.next_if(|system| system.after_messages <= index) {
                seq.serialize_element(system.message.as_ref())?;
            }
            seq.serialize_element(message.message.as_ref())?;
        }
        for system in systems {
            seq.serialize_element(system.message.as_ref())?;
        }
        seq.end()
    }
}

/// `{provider, modelId}`, each left out when empty, as [`to_pi_json`] writes it.
struct PiModel<'a>(&'a ModelRef);

impl Serialize for PiModel<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let model = self.0;
        let fields =
            usize::from(!model.provider.is_empty()) + usize::from(!model.model_id.is_empty());
        let mut map = serializer.serialize_map(Some(fields))?;
        if !model.provider.is_empty() {
            map.serialize_entry("provider", &model.provider)?;
        }
        if !model.model_id.is_empty() {
            map.serialize_entry("modelId", &model.model_id)?;
        }
        map.end()
    }
}

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
