//! The context as Pi's `buildSessionContext` returns it: `{messages, thinkingLevel, model}`.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value, json};

use strata_session::canonical::reindent_canonical;
use strata_session::{LazyMessage, SpanReader};

use crate::chain::ModelRef;
use crate::flatten::Context;

/// Writes [`to_pi_json`]'s value pretty-printed, straight from the context: no JSON tree of the
/// messages is built on the way. Wrap `writer` in a buffer: the output is written a few bytes
/// at a time.
///
/// A message kept as JSON ([`crate::build_for_print`]) is printed from those bytes,
/// re-indented, where they are exactly what Pi's `JSON.stringify` prints for the message they
/// parse to: the bytes Pi prints, key order included. Any other message is printed typed, as
/// `serde_json::to_writer_pretty` prints it, which can differ from Pi in key order (a line's
/// keys in another order than strata's types list them) and in fields a type fills in.
pub fn write_pi_json(context: &Context, writer: impl std::io::Write) -> serde_json::Result<()> {
    let threads = if ordered_messages(context).len() < PARALLEL_FROM {
        1
    } else {
        crate::parallel::threads()
    };
    write_in_parts(context, writer, threads)
}

/// Contexts with fewer messages than this are printed on the calling thread.
const PARALLEL_FROM: usize = 4 * CHUNK;

/// Messages one thread prints at a time.
const CHUNK: usize = 64;

/// The messages in [`to_pi_json`]'s order: each system message where it was appended.
fn ordered_messages(context: &Context) -> Vec<&LazyMessage> {
    let mut ordered = Vec::with_capacity(context.messages.len() + context.system_messages.len());
    let mut systems = context.system_messages.iter().peekable();
    for (index, message) in context.messages.iter().enumerate() {
        while let Some(system) = systems.next_if(|system| system.after_messages <= index) {
            ordered.push(&system.message);
        }
        ordered.push(&message.message);
    }
    ordered.extend(systems.map(|system| &system.message));
    ordered
}

/// [`write_pi_json`]'s bytes with the messages printed in chunks by up to `threads` threads
/// ([`crate::parallel::write_chunks`]). Pretty-printing is position-independent but for the
/// indent, which [`NestedPretty`] starts at the array's depth.
fn write_in_parts(
    context: &Context,
    mut writer: impl std::io::Write,
    threads: usize,
) -> serde_json::Result<()> {
    let messages = ordered_messages(context);
    let io = serde_json::Error::io;
    if messages.is_empty() {
        writer.write_all(b"{\n  \"messages\": [],").map_err(io)?;
    } else {
        writer.write_all(b"{\n  \"messages\": [").map_err(io)?;
        crate::parallel::write_chunks(&messages, CHUNK, threads, &mut writer, &PiMessagePrinter)?;
        writer.write_all(b"\n  ],").map_err(io)?;
    }
    writer.write_all(b"\n  \"thinkingLevel\": ").map_err(io)?;
    serde_json::to_writer(&mut writer, &context.thinking_level)?;
    writer.write_all(b",\n  \"model\": ").map_err(io)?;
    let mut serializer =
        serde_json::Serializer::with_formatter(&mut writer, NestedPretty::at_depth(1));
    context
        .model
        .as_ref()
        .map(PiModel)
        .serialize(&mut serializer)?;
    writer.write_all(b"\n}").map_err(io)
}

/// Prints chunks of the messages as elements of the `messages` array.
struct PiMessagePrinter;

impl crate::parallel::ChunkPrinter<&LazyMessage> for PiMessagePrinter {
    type Error = serde_json::Error;

    /// Chunk `index`: each message on a new line, indented two levels, separated by commas
    /// (also from the chunk before).
    fn print(
        &self,
        index: usize,
        chunk: &[&LazyMessage],
        out: &mut Vec<u8>,
    ) -> serde_json::Result<()> {
        let mut reader = SpanReader::default();
        for (position, message) in chunk.iter().enumerate() {
            if index > 0 || position > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"\n    ");
            // Kept as JSON that is already what Pi prints: its bytes, re-indented in place.
            if let Some(json) = message.line_json()
                && reindent_canonical(json.as_bytes(), 2, out)
            {
                continue;
            }
            // Kept in the session file: read with the spans after it, checked again.
            if let Some(span) = message.file_span() {
                let next = chunk[position + 1..]
                    .iter()
                    .filter_map(|message| message.file_span());
                let bytes = reader.bytes(span, next).map_err(serde_json::Error::io)?;
                if reindent_canonical(bytes, 2, out) {
                    continue;
                }
                return Err(serde_json::Error::io(std::io::Error::other(
                    "the session file changed while its context was printed",
                )));
            }
            // Printed in place at the array's depth: no copy of it printed alone and
            // indented after, which read and wrote every byte of the output a second time.
            let mut serializer =
                serde_json::Serializer::with_formatter(&mut *out, NestedPretty::at_depth(2));
            message.get().serialize(&mut serializer)?;
        }
        Ok(())
    }

    fn io_error(&self, error: std::io::Error) -> serde_json::Error {
        serde_json::Error::io(error)
    }
}

/// `serde_json`'s `PrettyFormatter` with a two-space indent for a value that starts `depth`
/// levels deep: the bytes `to_writer_pretty` writes for it where it stands in a larger value.
struct NestedPretty {
    depth: usize,
    has_value: bool,
}

impl NestedPretty {
    fn at_depth(depth: usize) -> Self {
        Self {
            depth,
            has_value: false,
        }
    }

    fn newline_and_indent<W: ?Sized + std::io::Write>(
        &self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        const SPACES: &[u8; 64] =
            b"                                                                ";
        writer.write_all(b"\n")?;
        let mut left = self.depth * 2;
        while left > 0 {
            let step = left.min(SPACES.len());
            writer.write_all(&SPACES[..step])?;
            left -= step;
        }
        Ok(())
    }

    fn begin<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        open: &[u8],
    ) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        writer.write_all(open)
    }

    fn end<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        close: &[u8],
    ) -> std::io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.newline_and_indent(writer)?;
        }
        writer.write_all(close)
    }

    fn item<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if !first {
            writer.write_all(b",")?;
        }
        self.newline_and_indent(writer)
    }
}

impl serde_json::ser::Formatter for NestedPretty {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.begin(writer, b"[")
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.end(writer, b"]")
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(writer, first)
    }

    fn end_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        _writer: &mut W,
    ) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.begin(writer, b"{")
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        self.end(writer, b"}")
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(writer, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        _writer: &mut W,
    ) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
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

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    /// A session of `messages` messages of every role, with awkward text, a model and a
    /// thinking level (or neither).
    fn session(messages: usize, settings: bool) -> strata_session::Tree {
        let mut text = String::from(
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}"#,
        );
        text.push('\n');
        let mut parent = "null".to_owned();
        if settings {
            text.push_str(r#"{"type":"thinking_level_change","id":"t0","parentId":null,"timestamp":"2026-01-15T10:00:00.000Z","thinkingLevel":"high"}"#);
            text.push('\n');
            parent = "\"t0\"".to_owned();
        }
        for n in 0..messages {
            let id = format!("m{n}");
            let body = match n % 3 {
                0 => format!(
                    r#"{{"role":"user","content":"line {n}\n\"quoted\" caf\u00e9 \u0001 {{[]}}","timestamp":{n}}}"#
                ),
                1 => format!(
                    r#"{{"role":"assistant","content":[{{"type":"text","text":"a\tb"}},{{"type":"toolCall","id":"c{n}","name":"ls","arguments":{{"path":"/","deep":{{"x":[1,2.5,null,true]}}}}}}],"provider":"p","model":"m","api":"x","usage":{{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"toolUse","timestamp":{n}}}"#
                ),
                _ => format!(
                    r#"{{"role":"toolResult","toolCallId":"c{}","toolName":"ls","content":[],"isError":false,"details":{{}},"timestamp":{n}}}"#,
                    n - 1
                ),
            };
            let _ = writeln!(
                text,
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-15T10:00:01.000Z","message":{body}}}"#
            );
            parent = format!("\"{id}\"");
        }
        let (tree, diagnostics) =
            strata_session::Tree::parse(std::path::Path::new("t.jsonl"), text.into_bytes())
                .expect("tree");
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        tree
    }

    #[test]
    fn the_nested_formatter_prints_what_the_pretty_printer_prints_in_place() {
        // Deeper than one write of indent spaces, with empty and non-empty containers.
        let mut value = serde_json::json!({"a": [], "b": {}, "c": [1, "x\ny", {"d": null}]});
        for depth in 0..40 {
            value = serde_json::json!([value, {"k": depth}]);
        }
        let wrapped = serde_json::json!({ "outer": [value.clone()] });
        let whole = serde_json::to_string_pretty(&wrapped).expect("json");
        let mut nested = Vec::new();
        let mut serializer =
            serde_json::Serializer::with_formatter(&mut nested, NestedPretty::at_depth(2));
        value.serialize(&mut serializer).expect("json");
        let nested = String::from_utf8(nested).expect("utf-8");
        assert_eq!(whole, format!("{{\n  \"outer\": [\n    {nested}\n  ]\n}}"));
        assert!(
            nested.contains(&format!("\n{}", " ".repeat(80))),
            "indents past 64 spaces"
        );
    }

    #[test]
    fn printing_in_parts_prints_what_the_printer_prints() {
        for (messages, settings) in [(0, false), (1, true), (7, true), (600, true), (600, false)] {
            let tree = session(messages, settings);
            let context = crate::build(&tree, tree.leaf()).expect("context");
            assert_eq!(ordered_messages(&context).len(), messages);
            let expected = serde_json::to_vec_pretty(&to_pi_json(&context)).expect("json");
            for threads in [1, 2, 3, 5] {
                let mut printed = Vec::new();
                write_in_parts(&context, &mut printed, threads).expect("printed");
                assert_eq!(
                    String::from_utf8_lossy(&printed),
                    String::from_utf8_lossy(&expected),
                    "{messages} messages on {threads} threads"
                );
            }
            let mut printed = Vec::new();
            write_pi_json(&context, &mut printed).expect("printed");
            assert_eq!(printed, expected);
        }
    }
}
