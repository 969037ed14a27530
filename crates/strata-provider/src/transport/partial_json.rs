//! Best-effort parsing of a JSON document that is still arriving (tool-call arguments).
//!
//! [`parse_partial`] returns the value the text so far describes: open strings, arrays and
//! objects are closed, a key without a value and an unfinished literal are left out, and a
//! number keeps the digits that are certain. A UI calls it on every argument delta to show
//! e.g. a file's content while the model is still writing it. The final arguments are parsed
//! strictly by [`parse_arguments`] instead.

use serde_json::{Map, Number, Value};

/// The value described by the JSON prefix `text`, or `None` when nothing is complete yet.
pub fn parse_partial(text: &str) -> Option<Value> {
    let mut parser = Partial {
        bytes: text.as_bytes(),
        text,
        pos: 0,
        depth: 0,
    };
    parser.skip_ws();
    parser.value().map(|(v, _)| v)
}

/// Why final tool-call arguments could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool call `{name}` ({id}) has invalid JSON arguments: {message}")]
pub struct ArgumentsError {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// What the JSON parser said.
    pub message: String,
}

/// Parses the complete arguments of a tool call; empty text means `{}` (a call without arguments).
pub fn parse_arguments(id: &str, name: &str, text: &str) -> Result<Value, ArgumentsError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(text).map_err(|e| ArgumentsError {
        id: id.to_owned(),
        name: name.to_owned(),
        message: e.to_string(),
    })
}

struct Partial<'a> {
    bytes: &'a [u8],
    text: &'a str,
    pos: usize,
    /// Arrays and objects open around the current position.
    depth: usize,
}

/// Deepest nesting parsed (serde_json's own limit); deeper input is cut there, so that a
/// hostile `[[[[…` cannot overflow the stack.
const MAX_DEPTH: usize = 128;

/// Whether a parsed value ran to its natural end (`true`) or was cut by the end of input.
type Complete = bool;

impl Partial<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.bytes.len() && self.bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn value(&mut self) -> Option<(Value, Complete)> {
        match self.peek()? {
            b'{' | b'[' if self.depth >= MAX_DEPTH => {
                self.pos = self.bytes.len();
                None
            }
            b'{' => {
                self.depth += 1;
                let object = self.object();
                self.depth -= 1;
                Some(object)
            }
            b'[' => {
                self.depth += 1;
                let array = self.array();
                self.depth -= 1;
                Some(array)
            }
            b'"' => {
                let (s, done) = self.string();
                Some((Value::String(s), done))
            }
            b't' => self.literal("true", Value::Bool(true)),
            b'f' => self.literal("false", Value::Bool(false)),
            b'n' => self.literal("null", Value::Null),
            _ => self.number(),
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Option<(Value, Complete)> {
        let rest = &self.bytes[self.pos..];
        if rest.starts_with(word.as_bytes()) {
            self.pos += word.len();
            Some((value, true))
        } else {
            // An unfinished literal is not a value yet; anything else is not JSON.
            self.pos = self.bytes.len();
            None
        }
    }

    fn number(&mut self) -> Option<(Value, Complete)> {
        let start = self.pos;
        while self.pos < self.bytes.len()
            && matches!(
                self.bytes[self.pos],
                b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'
            )
        {
            self.pos += 1;
        }
        let at_end = self.pos >= self.bytes.len();
        let mut digits = &self.text[start..self.pos];
        if at_end {
            // More digits may follow: keep only what is certain (drop a dangling `.`, `e`, `-`).
            digits = digits.trim_end_matches(['.', 'e', 'E', '-', '+']);
            if let Some(i) = digits.find(['e', 'E']) {
                digits = &digits[..i];
            }
        }
        if digits.is_empty() {
            self.pos = self.bytes.len();
            return None;
        }
        let value = serde_json::from_str::<Number>(digits)
            .ok()
            .map(Value::Number);
        if value.is_none() {
            self.pos = self.bytes.len();
        }
        value.map(|v| (v, !at_end))
    }

    fn string(&mut self) -> (String, Complete) {
        self.pos += 1; // opening quote
        let mut out = String::new();
        loop {
            let Some(rel) = memchr::memchr2(b'"', b'\\', &self.bytes[self.pos..]) else {
                out.push_str(&self.text[self.pos..]);
                self.pos = self.bytes.len();
                return (out, false);
            };
            let at = self.pos + rel;
            out.push_str(&self.text[self.pos..at]);
            if self.bytes[at] == b'"' {
                self.pos = at + 1;
                return (out, true);
            }
            // Escape sequence; an unfinished one is dropped.
            // `at + 1` follows an ASCII backslash, so it is a char boundary; the escaped
            // character may be several bytes long (an invalid escape, kept as written).
            let Some(kind) = self.text[at + 1..].chars().next() else {
                self.pos = self.bytes.len();
                return (out, false);
            };
            self.pos = at + 1 + kind.len_utf8();
            match kind {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'u' => match self.unicode_escape() {
                    Some(c) => out.push(c),
                    None => {
                        self.pos = self.bytes.len();
                        return (out, false);
                    }
                },
                other => out.push(other),
            }
        }
    }

    /// Reads the 4 hex digits after `\u` (and a low surrogate after a high one).
    fn unicode_escape(&mut self) -> Option<char> {
        let hex = |p: &mut Self| -> Option<u32> {
            let digits = p.text.get(p.pos..p.pos + 4)?;
            let v = u32::from_str_radix(digits, 16).ok()?;
            p.pos += 4;
            Some(v)
        };
        let high = hex(self)?;
        if (0xD800..0xDC00).contains(&high) {
            let rest = &self.bytes[self.pos..];
            if rest.len() < 2 && b"\\u".starts_with(rest) {
                return None; // the low surrogate has not arrived yet
            }
            if !rest.starts_with(b"\\u") {
                return Some(char::REPLACEMENT_CHARACTER);
            }
            self.pos += 2;
            let low = hex(self)?;
            let c = 0x10000 + ((high - 0xD800) << 10) + (low.wrapping_sub(0xDC00) & 0x3FF);
            return Some(char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER));
        }
        Some(char::from_u32(high).unwrap_or(char::REPLACEMENT_CHARACTER))
    }

    fn array(&mut self) -> (Value, Complete) {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None => return (Value::Array(items), false),
                Some(b']') => {
                    self.pos += 1;
                    return (Value::Array(items), true);
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(_) => {}
            }
            match self.value() {
                Some((v, done)) => {
                    items.push(v);
                    if !done {
                        return (Value::Array(items), false);
                    }
                }
                None => return (Value::Array(items), false),
            }
        }
    }

    fn object(&mut self) -> (Value, Complete) {
        self.pos += 1;
        let mut map = Map::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None => return (Value::Object(map), false),
                Some(b'}') => {
                    self.pos += 1;
                    return (Value::Object(map), true);
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(b'"') => {}
                Some(_) => {
                    self.pos = self.bytes.len();
                    return (Value::Object(map), false);
                }
            }
            let (key, key_done) = self.string();
            if !key_done {
                return (Value::Object(map), false);
            }
            self.skip_ws();
            if self.peek() != Some(b':') {
                self.pos = self.bytes.len();
                return (Value::Object(map), false);
            }
            self.pos += 1;
            self.skip_ws();
            match self.value() {
                Some((v, done)) => {
                    map.insert(key, v);
                    if !done {
                        return (Value::Object(map), false);
                    }
                }
                None => return (Value::Object(map), false),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn prefixes_of_a_document_parse_best_effort() {
        let cases: [(&str, Option<Value>); 16] = [
            ("", None),
            ("{", Some(json!({}))),
            ("{\"pa", Some(json!({}))),
            ("{\"path\"", Some(json!({}))),
            ("{\"path\":", Some(json!({}))),
            ("{\"path\": \"src/ma", Some(json!({"path": "src/ma"}))),
            ("{\"path\": \"a\\", Some(json!({"path": "a"}))),
            ("{\"path\": \"a\\n", Some(json!({"path": "a\n"}))),
            ("{\"path\": \"a\\u00", Some(json!({"path": "a"}))),
            ("{\"path\": \"a\\u00e9", Some(json!({"path": "a\u{e9}"}))),
            ("{\"n\": 12", Some(json!({"n": 12}))),
            ("{\"n\": 1.", Some(json!({"n": 1}))),
            ("{\"n\": -", Some(json!({}))),
            ("{\"ok\": tr", Some(json!({}))),
            (
                "{\"ok\": true, \"xs\": [1, \"b",
                Some(json!({"ok": true, "xs": [1, "b"]})),
            ),
            (
                "{\"a\": {\"b\": [{\"c\": null}]}}",
                Some(json!({"a": {"b": [{"c": null}]}})),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_partial(text), expected, "{text:?}");
        }
    }

    #[test]
    fn every_prefix_of_a_real_document_is_some_and_grows_to_the_whole() {
        let doc = r#"{"command": "grep -n \"fn main\" src/*.rs", "timeout": 30, "env": {"A": "\u00e9\ud83d\ude00"}, "flags": [true, false, null]}"#;
        let full: Value = serde_json::from_str(doc).unwrap();
        for end in 1..=doc.len() {
            if !doc.is_char_boundary(end) {
                continue;
            }
            let v = parse_partial(&doc[..end]);
            assert!(v.is_some(), "prefix {end}");
        }
        assert_eq!(parse_partial(doc), Some(full));
    }

    #[test]
    fn final_arguments_are_strict_and_name_the_call() {
        assert_eq!(parse_arguments("c1", "read", "").unwrap(), json!({}));
        assert_eq!(
            parse_arguments("c1", "read", "{\"a\":1}").unwrap(),
            json!({"a": 1})
        );
        let err = parse_arguments("c1", "read", "{\"a\":").unwrap_err();
        assert_eq!((err.id.as_str(), err.name.as_str()), ("c1", "read"));
        assert!(err.to_string().contains("`read` (c1)"), "{err}");
    }
}
