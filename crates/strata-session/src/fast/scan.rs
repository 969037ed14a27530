//! A fast scan of one entry line: checks that it is one JSON object and picks out `type`, `id`,
//! `parentId`, `timestamp` and the message `role` without building a JSON tree.
//!
//! The structure check is exact for strings, objects and arrays; scalars are checked loosely
//! (a token of number/literal characters). A line that passes here but is not JSON fails later,
//! when the entry is parsed, with an error naming its line.

use std::borrow::Cow;

/// The fields the tree needs, borrowed from the line where no escapes are involved.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Scanned<'a> {
    pub entry_type: Option<Cow<'a, str>>,
    pub id: Option<Cow<'a, str>>,
    pub parent: Parent<'a>,
    pub timestamp: Option<Cow<'a, str>>,
    pub role: Option<Cow<'a, str>>,
}

/// The `parentId` field.
#[derive(Debug, Default, PartialEq)]
pub(crate) enum Parent<'a> {
    /// No such field.
    #[default]
    Absent,
    /// `null`.
    Null,
    /// A string.
    Id(Cow<'a, str>),
    /// Something else (treated as no parent).
    Other,
}

/// Why a line is not an entry object.
#[derive(Debug, PartialEq)]
pub(crate) struct ScanError {
    pub reason: &'static str,
    pub offset: usize,
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

type ScanResult<T> = Result<T, ScanError>;

const MAX_DEPTH: usize = 160;

/// Strings scanned byte by byte before falling back to a vector search.
const SHORT_STRING: usize = 16;

impl<'a> Cursor<'a> {
    fn fail<T>(&self, reason: &'static str) -> ScanResult<T> {
        Err(ScanError {
            reason,
            offset: self.pos,
        })
    }

    fn skip_ws(&mut self) {
        // A line break ends the line: inside an entry it is an error, not whitespace.
        while let Some(b' ' | b'\t' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn expect(&mut self, byte: u8, reason: &'static str) -> ScanResult<()> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            self.fail(reason)
        }
    }

    /// Reads a string at the cursor (which is on its opening quote); returns its raw bytes
    /// (between the quotes).
    ///
    /// Searches for quotes only and counts the backslashes before each, so the common `\n`
    /// escapes of code and logs cost nothing.
    fn raw_string(&mut self) -> ScanResult<&'a [u8]> {
        self.expect(b'"', "expected a string")?;
        let start = self.pos;
        // Keys, ids and small values end within a few bytes: a byte loop is cheaper there than
        // setting up a vector search. It stops at the first byte that needs the general path.
        // A local index: stepping `self.pos` itself stores it to memory on every byte.
        let bytes = self.bytes;
        let short_end = (start + SHORT_STRING).min(bytes.len());
        let mut at = start;
        while at < short_end {
            match bytes[at] {
                b'"' => {
                    self.pos = at + 1;
                    return Ok(&bytes[start..at]);
                }
                b'\\' | b'\n' => break,
                _ => at += 1,
            }
        }
        self.pos = at;
        loop {
            let Some(offset) = memchr::memchr2(b'"', b'\n', &self.bytes[self.pos..]) else {
                self.pos = self.bytes.len();
                return self.fail("unterminated string");
            };
            let quote = self.pos + offset;
            if self.bytes[quote] == b'\n' {
                self.pos = quote;
                return self.fail("line ends inside a string");
            }
            let backslashes = self.bytes[start..quote]
                .iter()
                .rev()
                .take_while(|&&b| b == b'\\')
                .count();
            self.pos = quote + 1;
            if backslashes % 2 == 0 {
                return Ok(&self.bytes[start..quote]);
            }
        }
    }

    fn string(&mut self) -> ScanResult<Cow<'a, str>> {
        let start = self.pos;
        let raw = self.raw_string()?;
        let escaped = if raw.len() <= SHORT_STRING {
            raw.contains(&b'\\')
        } else {
            memchr::memchr(b'\\', raw).is_some()
        };
        if escaped {
            let quoted = &self.bytes[start..self.pos];
            match serde_json::from_slice::<String>(quoted) {
                Ok(text) => Ok(Cow::Owned(text)),
                Err(_) => Err(ScanError {
                    reason: "invalid string escape",
                    offset: start,
                }),
            }
        } else {
            match std::str::from_utf8(raw) {
                Ok(text) => Ok(Cow::Borrowed(text)),
                Err(_) => Err(ScanError {
                    reason: "invalid UTF-8 in string",
                    offset: start,
                }),
            }
        }
    }

    /// Reads an object key as bytes: keys are only compared with ASCII names, so the UTF-8 check
    /// `string` makes is not needed (lines are checked as a whole when indexed).
    fn key(&mut self) -> ScanResult<Cow<'a, [u8]>> {
        let start = self.pos;
        let raw = self.raw_string()?;
        if !raw.contains(&b'\\') {
            return Ok(Cow::Borrowed(raw));
        }
        match serde_json::from_slice::<String>(&self.bytes[start..self.pos]) {
            Ok(text) => Ok(Cow::Owned(text.into_bytes())),
            Err(_) => Err(ScanError {
                reason: "invalid string escape",
                offset: start,
            }),
        }
    }

    fn scalar(&mut self) -> ScanResult<&'a [u8]> {
        let start = self.pos;
        let length = self.bytes[start..]
            .iter()
            .position(|&byte| !(byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'+' | b'.')))
            .unwrap_or(self.bytes.len() - start);
        self.pos = start + length;
        let token = &self.bytes[start..self.pos];
        let ok = match token.first() {
            Some(b't') => token == b"true",
            Some(b'f') => token == b"false",
            Some(b'n') => token == b"null",
            Some(b'-' | b'0'..=b'9') => true,
            _ => false,
        };
        if ok {
            Ok(token)
        } else {
            Err(ScanError {
                reason: "expected a value",
                offset: start,
            })
        }
    }

    /// Skips one value of any kind, checking brackets and strings.
    fn skip_value(&mut self) -> ScanResult<()> {
        match self.peek() {
            Some(b'"') => self.raw_string().map(|_| ()),
            Some(b'{' | b'[') => self.skip_container(),
            _ => self.scalar().map(|_| ()),
        }
    }

    fn skip_container(&mut self) -> ScanResult<()> {
        // The closers expected, innermost last; serde_json refuses nesting deeper than 128 anyway.
        let mut closers = [0u8; MAX_DEPTH];
        let mut depth = 0usize;
        loop {
            let Some(byte) = self.peek() else {
                return self.fail("unterminated object or array");
            };
            match byte {
                b'"' => {
                    self.raw_string()?;
                }
                b'{' | b'[' => {
                    if depth == MAX_DEPTH {
                        return self.fail("nested too deeply");
                    }
                    closers[depth] = if byte == b'{' { b'}' } else { b']' };
                    depth += 1;
                    self.pos += 1;
                }
                b'}' | b']' => {
                    if depth == 0 || closers[depth - 1] != byte {
                        return self.fail("mismatched bracket");
                    }
                    depth -= 1;
                    self.pos += 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                b',' | b':' | b' ' | b'\t' | b'\r' => self.pos += 1,
                b'\n' => return self.fail("line ends inside a value"),
                _ => {
                    self.scalar()?;
                }
            }
        }
    }

    /// Reads the `role` of a message object when it is the first key, then skips the object.
    fn message_role(&mut self) -> ScanResult<Option<Cow<'a, str>>> {
        let start = self.pos;
        let mut role = None;
        if self.peek() == Some(b'{') {
            self.pos += 1;
            self.skip_ws();
            if self.peek() == Some(b'"') {
                let key = self.key()?;
                self.skip_ws();
                if *key == *b"role" && self.peek() == Some(b':') {
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek() == Some(b'"') {
                        role = Some(self.string()?);
                    }
                }
            }
        }
        self.pos = start;
        self.skip_value()?;
        Ok(role)
    }
}

/// Scans one line holding one entry object.
pub(crate) fn scan_entry(line: &[u8]) -> ScanResult<Scanned<'_>> {
    let (scanned, end) = scan_line(line)?;
    if end != line.len() {
        return Err(ScanError {
            reason: "text after the object",
            offset: end,
        });
    }
    Ok(scanned)
}

/// Scans the entry object at the start of `bytes` (the rest of a file), which must end its line;
/// returns the fields and where the line ends (the offset of its `\n`, or the end of `bytes`).
/// This finds the line's end in the same pass, so no separate search for newlines is needed.
pub(crate) fn scan_line(bytes: &[u8]) -> ScanResult<(Scanned<'_>, usize)> {
    let line = bytes;
    let mut cursor = Cursor { bytes, pos: 0 };
    let mut scanned = Scanned::default();
    cursor.skip_ws();
    cursor.expect(b'{', "expected `{`")?;
    cursor.skip_ws();
    if cursor.peek() == Some(b'}') {
        cursor.pos += 1;
    } else {
        loop {
            cursor.skip_ws();
            let key = cursor.key()?;
            cursor.skip_ws();
            cursor.expect(b':', "expected `:`")?;
            cursor.skip_ws();
            let is_string = cursor.peek() == Some(b'"');
            match &*key {
                b"type" if is_string => scanned.entry_type = Some(cursor.string()?),
                b"id" if is_string => scanned.id = Some(cursor.string()?),
                b"timestamp" if is_string => scanned.timestamp = Some(cursor.string()?),
                b"parentId" if is_string => scanned.parent = Parent::Id(cursor.string()?),
                b"parentId" => {
                    let start = cursor.pos;
                    cursor.skip_value()?;
                    scanned.parent = if &line[start..cursor.pos] == b"null" {
                        Parent::Null
                    } else {
                        Parent::Other
                    };
                }
                b"message" => scanned.role = cursor.message_role()?,
                b"type" | b"id" | b"timestamp" => {
                    // A non-string value: the field counts as absent.
                    cursor.skip_value()?;
                    match &*key {
                        b"type" => scanned.entry_type = None,
                        b"id" => scanned.id = None,
                        _ => scanned.timestamp = None,
                    }
                }
                _ => cursor.skip_value()?,
            }
            cursor.skip_ws();
            match cursor.peek() {
                Some(b',') => cursor.pos += 1,
                Some(b'}') => {
                    cursor.pos += 1;
                    break;
                }
                _ => return cursor.fail("expected `,` or `}`"),
            }
        }
    }
    cursor.skip_ws();
    match cursor.peek() {
        None | Some(b'\n') => Ok((scanned, cursor.pos)),
        Some(_) => cursor.fail("text after the object"),
    }
}

/// Reads the tree fields from the first keys of a line as Pi and strata write them (`type`,
/// `id`, `parentId`, `timestamp`, then `message` with `role` first), without looking at the rest
/// of the line; `None` when the line is laid out otherwise, or is not an object closed at its
/// end. The caller then runs the full [`scan_entry`].
///
/// The rest of the line is checked when the entry is parsed: an open reads only the lines its
/// path needs, so it cannot afford to walk every byte of every line.
pub(crate) fn scan_prefix(line: &[u8]) -> Option<Scanned<'_>> {
    let mut cursor = Cursor {
        bytes: line,
        pos: 0,
    };
    let last = line
        .iter()
        .rposition(|byte| !matches!(byte, b' ' | b'\t' | b'\r'))?;
    if line[last] != b'}' {
        return None;
    }
    cursor.skip_ws();
    cursor.expect(b'{', "").ok()?;
    let mut scanned = Scanned::default();
    let mut have_parent = false;
    loop {
        if cursor.peek() != Some(b'"') {
            return None;
        }
        let key = cursor.key().ok()?;
        cursor.expect(b':', "").ok()?;
        let is_string = cursor.peek() == Some(b'"');
        match &*key {
            b"type" if is_string && scanned.entry_type.is_none() => {
                scanned.entry_type = Some(cursor.string().ok()?);
            }
            b"id" if is_string && scanned.id.is_none() => scanned.id = Some(cursor.string().ok()?),
            b"timestamp" if is_string && scanned.timestamp.is_none() => {
                scanned.timestamp = Some(cursor.string().ok()?);
            }
            b"parentId" if !have_parent => {
                have_parent = true;
                if is_string {
                    scanned.parent = Parent::Id(cursor.string().ok()?);
                } else if line.get(cursor.pos..cursor.pos + 4) == Some(b"null") {
                    cursor.pos += 4;
                    scanned.parent = Parent::Null;
                } else {
                    return None;
                }
            }
            b"message"
                if scanned.entry_type.as_deref() == Some("message")
                    && scanned.id.is_some()
                    && have_parent =>
            {
                cursor.expect(b'{', "").ok()?;
                if cursor.peek() != Some(b'"') || &*cursor.key().ok()? != b"role" {
                    return None;
                }
                cursor.expect(b':', "").ok()?;
                if cursor.peek() != Some(b'"') {
                    return None;
                }
                scanned.role = Some(cursor.string().ok()?);
                return Some(scanned);
            }
            _ => return None,
        }
        match cursor.peek() {
            Some(b',') => cursor.pos += 1,
            // Every key was read: the object ends here, at the line's end.
            Some(b'}') if cursor.pos == last => return Some(scanned),
            _ => return None,
        }
        let complete = scanned.id.is_some() && have_parent && scanned.timestamp.is_some();
        match scanned.entry_type.as_deref() {
            Some("message") | None => {}
            Some(_) if complete => return Some(scanned),
            Some(_) => {}
        }
    }
}

/// The tree fields of a line laid out exactly as Pi and strata write it, with no escapes in
/// the leading strings: `{"type":"T","id":"I","parentId":"P"|null,"timestamp":"S",` and, for a
/// message, `"message":{"role":"R"` next. Literal comparisons only, no per-key dispatch: this is
/// what nearly every line of a large file takes at open. `None` for any other layout; the
/// caller then takes [`scan_prefix`], which answers the same wherever this one does.
pub(crate) fn scan_pi_layout(line: &[u8]) -> Option<Scanned<'_>> {
    pi_layout(line, true)
}

/// [`scan_pi_layout`] without the `timestamp` (passed over, not read): what indexing needs.
pub(crate) fn scan_pi_tree_fields(line: &[u8]) -> Option<Scanned<'_>> {
    pi_layout(line, false)
}

fn pi_layout(line: &[u8], with_timestamp: bool) -> Option<Scanned<'_>> {
    let last = line
        .iter()
        .rposition(|byte| !matches!(byte, b' ' | b'\t' | b'\r'))?;
    if line[last] != b'}' {
        return None;
    }
    let line = &line[..=last];
    let rest = line.strip_prefix(br#"{"type":""#)?;
    let (entry_type, rest) = plain_string(rest)?;
    let rest = rest.strip_prefix(br#","id":""#)?;
    let (id, rest) = plain_string(rest)?;
    let rest = rest.strip_prefix(br#","parentId":"#)?;
    let (parent, rest) = match rest.strip_prefix(b"\"") {
        Some(quoted) => {
            let (parent, rest) = plain_string(quoted)?;
            (Parent::Id(Cow::Borrowed(parent)), rest)
        }
        None => (Parent::Null, rest.strip_prefix(b"null")?),
    };
    let rest = rest.strip_prefix(br#","timestamp":""#)?;
    let (timestamp, rest) = if with_timestamp {
        let (timestamp, rest) = plain_string(rest)?;
        (Some(Cow::Borrowed(timestamp)), rest)
    } else {
        let end = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[end] != b'"' {
            return None;
        }
        (None, &rest[end + 1..])
    };
    let mut scanned = Scanned {
        entry_type: Some(Cow::Borrowed(entry_type)),
        id: Some(Cow::Borrowed(id)),
        parent,
        timestamp,
        role: None,
    };
    if entry_type == "message" {
        let rest = rest.strip_prefix(br#","message":{"role":""#)?;
        let (role, _) = plain_string(rest)?;
        scanned.role = Some(Cow::Borrowed(role));
        return Some(scanned);
    }
    match rest {
        [b',', ..] | [b'}'] => Some(scanned),
        _ => None,
    }
}

/// A string's text up to its closing quote (the opening one already taken) and what follows
/// it; `None` when it holds an escape, or is not UTF-8.
fn plain_string(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let end = memchr::memchr2(b'"', b'\\', bytes)?;
    if bytes[end] != b'"' {
        return None;
    }
    let text = std::str::from_utf8(&bytes[..end]).ok()?;
    Some((text, &bytes[end + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the prefix scan answers, it answers as the full scan does.
    #[test]
    fn the_prefix_scan_agrees_with_the_full_scan_or_declines() {
        let lines: [&[u8]; 10] = [
            br#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-15T10:00:00.000Z","message":{"role":"user","content":"x"}}"#,
            br#"{"type":"message","id":"a\u0031","parentId":"p\"q","timestamp":"t","message":{"role":"toolResult","content":[]}}  "#,
            br#"{"type":"model_change","id":"b2","parentId":"a1","timestamp":"t","provider":"p","modelId":"m"}"#,
            br#"{"type":"compaction","id":"c3","parentId":"b2","timestamp":"t","summary":"s","firstKeptEntryId":"a1","tokensBefore":5}"#,
            br#"{"type":"message","id":"d4","parentId":"c3","timestamp":"t","message":{"content":"x","role":"user"}}"#,
            br#"{"id":"e5","type":"custom","parentId":null,"timestamp":"t","customType":"x"}"#,
            br#"{"type":"custom","id":"f6","parentId":7,"timestamp":"t","customType":"x"}"#,
            br#"{"type":"message","id":"g7","parentId":null,"timestamp":"t","message":{"role":"us"#,
            br#"{"type":"leaf","id":"h8","parentId":"g7","timestamp":"t"}"#,
            br#"{"type":"message","id":"dead{"type":"message","id":"i9","parentId":null}"#,
        ];
        let mut answered = 0;
        for line in lines {
            if let Some(prefix) = scan_prefix(line) {
                answered += 1;
                let full = scan_entry(line).unwrap();
                assert_eq!(prefix.entry_type, full.entry_type);
                assert_eq!(prefix.id, full.id);
                assert_eq!(prefix.parent, full.parent);
                assert_eq!(prefix.role, full.role);
            }
        }
        // The first four and the `leaf` entry are laid out as Pi writes them.
        assert_eq!(answered, 6);
        assert!(scan_prefix(lines[7]).is_none());
        assert!(scan_prefix(lines[9]).is_none());
    }

    /// The literal layout scan answers exactly as the prefix scan wherever it answers, and
    /// answers for the lines Pi and strata write.
    #[test]
    fn the_layout_scan_agrees_with_the_prefix_scan_or_declines() {
        let lines: [&[u8]; 14] = [
            br#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-15T10:00:00.000Z","message":{"role":"user","content":"x"}}"#,
            br#"{"type":"message","id":"a\u0031","parentId":"p\"q","timestamp":"t","message":{"role":"toolResult","content":[]}}  "#,
            br#"{"type":"model_change","id":"b2","parentId":"a1","timestamp":"t","provider":"p","modelId":"m"}"#,
            br#"{"type":"compaction","id":"c3","parentId":"b2","timestamp":"t","summary":"s","firstKeptEntryId":"a1","tokensBefore":5}"#,
            br#"{"type":"message","id":"d4","parentId":"c3","timestamp":"t","message":{"content":"x","role":"user"}}"#,
            br#"{"id":"e5","type":"custom","parentId":null,"timestamp":"t","customType":"x"}"#,
            br#"{"type":"custom","id":"f6","parentId":7,"timestamp":"t","customType":"x"}"#,
            br#"{"type":"message","id":"g7","parentId":null,"timestamp":"t","message":{"role":"us"#,
            br#"{"type":"leaf","id":"h8","parentId":"g7","timestamp":"t"}"#,
            br#"{"type":"message","id":"dead{"type":"message","id":"i9","parentId":null}"#,
            br#"{"type":"leaf","id":"h8","parentId":"g7","timestamp":"t"} x"#,
            br#"{"type":"leaf","id":"h8","parentId":"g7","timestamp":"t"x}"#,
            br#"{"type":"message","id":"j1","parentId":"g7","timestamp":"t\u0031","message":{"role":"user"}}"#,
            br#"{"type":"message","id":"k2","parentId":nul,"timestamp":"t","message":{"role":"user"}}"#,
        ];
        let mut answered = 0;
        for line in lines {
            if let Some(layout) = scan_pi_layout(line) {
                answered += 1;
                let prefix = scan_prefix(line).expect("the prefix scan answers too");
                assert_eq!(layout.entry_type, prefix.entry_type);
                assert_eq!(layout.id, prefix.id);
                assert_eq!(layout.parent, prefix.parent);
                assert_eq!(layout.timestamp, prefix.timestamp);
                assert_eq!(layout.role, prefix.role);
                let fields = scan_pi_tree_fields(line).expect("the tree fields too");
                assert_eq!(fields.timestamp, None);
                assert_eq!(
                    (fields.entry_type, fields.id, fields.parent, fields.role),
                    (layout.entry_type, layout.id, layout.parent, layout.role)
                );
            } else {
                assert!(scan_pi_tree_fields(line).is_none());
            }
        }
        // Pi's own layout without escapes: lines 0, 2, 3 and 8.
        assert_eq!(answered, 4);
        // Every cut of a Pi line that the layout scan still answers for keeps a closing brace
        // last and agrees with the prefix scan.
        let full = lines[0];
        for cut in 1..full.len() {
            if let Some(layout) = scan_pi_layout(&full[..cut]) {
                let prefix = scan_prefix(&full[..cut]).expect("prefix scan");
                assert_eq!(layout.id, prefix.id, "cut {cut}");
                assert_eq!(layout.role, prefix.role, "cut {cut}");
            }
        }
    }

    #[test]
    fn picks_out_the_tree_fields_in_any_order() {
        let line = br#"{"type":"custom","customType":"x","data":{"a":[1,{"b":"}"}]},"id":"ab12cd34","parentId":null,"timestamp":"2026-01-15T10:00:00.000Z"}"#;
        let scanned = scan_entry(line).unwrap();
        assert_eq!(scanned.entry_type.as_deref(), Some("custom"));
        assert_eq!(scanned.id.as_deref(), Some("ab12cd34"));
        assert_eq!(scanned.parent, Parent::Null);
        assert_eq!(
            scanned.timestamp.as_deref(),
            Some("2026-01-15T10:00:00.000Z")
        );
    }

    #[test]
    fn reads_the_message_role_and_escaped_strings() {
        let line = br#"{"type":"message","id":"a\u0062","parentId":"p\"q","message":{"role":"toolResult","content":[{"type":"text","text":"a \"quoted\" \\ }]"}]}}"#;
        let scanned = scan_entry(line).unwrap();
        assert_eq!(scanned.id.as_deref(), Some("ab"));
        assert_eq!(scanned.parent, Parent::Id(Cow::Borrowed("p\"q")));
        assert_eq!(scanned.role.as_deref(), Some("toolResult"));
    }

    #[test]
    fn counts_backslashes_before_quotes() {
        let line = br#"{"type":"a\\","id":"b\\\"c","x":"\\\\","parentId":null}"#;
        let scanned = scan_entry(line).unwrap();
        assert_eq!(scanned.entry_type.as_deref(), Some("a\\"));
        assert_eq!(scanned.id.as_deref(), Some("b\\\"c"));
        assert_eq!(scanned.parent, Parent::Null);
        assert!(scan_entry(br#"{"type":"a\"}"#).is_err());
    }

    #[test]
    fn rejects_every_proper_prefix_of_an_object() {
        let line = br#"{"type":"message","id":"ab","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"hi"}],"n":-1.5e3,"t":true}}"#;
        assert!(scan_entry(line).is_ok());
        for cut in 0..line.len() {
            assert!(
                scan_entry(&line[..cut]).is_err(),
                "prefix of {cut} bytes accepted"
            );
        }
    }

    #[test]
    fn finds_the_end_of_the_line_in_the_same_pass() {
        let text = b"{\"type\":\"a\",\"id\":\"b\"} \r\n{\"type\":\"c\"}\n";
        let (scanned, end) = scan_line(text).unwrap();
        assert_eq!(scanned.id.as_deref(), Some("b"));
        assert_eq!(text[end], b'\n');
        assert_eq!(end, 23);
        // A string or value cut by a line break fails at the break, never reads the next line.
        assert!(scan_line(b"{\"type\":\"a\n\"}\n").is_err());
        assert!(scan_line(b"{\"type\":[1,\n2]}\n").is_err());
        assert!(scan_line(b"{\"type\":\"a\"} x\n").is_err());
        // An escape never carries a string over a line break.
        assert!(scan_line(b"{\"type\":\"a\\\n\"}\n").is_err());
        assert!(scan_line(b"{\"type\":\"abcdefghijklmnopqrstuvwxyz\\\n\"}\n").is_err());
        assert!(scan_line(b"{\"type\":\"a\\").is_err());
        let long = format!("{{\"type\":\"{}\\\\\",\"id\":\"x\"}}\n", "y".repeat(40));
        let (scanned, end) = scan_line(long.as_bytes()).unwrap();
        assert_eq!(scanned.id.as_deref(), Some("x"));
        assert_eq!(end, long.len() - 1);
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            &b"not json"[..],
            b"{\"a\" 1}",
            b"{\"a\":1,}",
            b"{\"a\":[1}",
            b"{} x",
            b"[1]",
            b"{\"a\":bogus}",
        ] {
            assert!(scan_entry(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
