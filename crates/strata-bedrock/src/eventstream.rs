//! Sans-IO decoder for AWS event-stream framing (`application/vnd.amazon.eventstream`).
//!
//! A message is: total length (u32), headers length (u32), CRC32 of those 8 bytes, the
//! headers, the payload, and a CRC32 of everything before it. Bytes go in through
//! [`EventStreamDecoder::push`] in chunks of any size (a frame may be split anywhere);
//! whole messages come out of [`EventStreamDecoder::next_message`].

use std::collections::BTreeMap;

use bytes::{Buf, BytesMut};

/// Largest message accepted (the service limit is 16 MiB; a bigger length is corruption).
const MAX_MESSAGE: usize = 16 * 1024 * 1024;
/// Prelude (12 bytes) plus the trailing CRC (4 bytes).
const OVERHEAD: usize = 16;

/// A decoded header value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderValue {
    /// Boolean (types 0 and 1).
    Bool(bool),
    /// Any integer type, widened.
    Int(i64),
    /// Byte array (type 6).
    Bytes(Vec<u8>),
    /// UTF-8 string (type 7).
    String(String),
    /// Timestamp in milliseconds since the epoch (type 8).
    Timestamp(i64),
    /// UUID (type 9).
    Uuid([u8; 16]),
}

/// One decoded message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventMessage {
    /// Headers by name.
    pub headers: BTreeMap<String, HeaderValue>,
    /// The payload (JSON for Bedrock).
    pub payload: Vec<u8>,
}

impl EventMessage {
    /// A string header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        match self.headers.get(name) {
            Some(HeaderValue::String(s)) => Some(s),
            _ => None,
        }
    }
}

/// Why bytes could not be decoded; the stream cannot continue after one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The prelude CRC did not match.
    #[error("event-stream prelude CRC mismatch (expected {expected:08x}, got {actual:08x})")]
    PreludeCrc {
        /// CRC in the frame.
        expected: u32,
        /// CRC computed.
        actual: u32,
    },
    /// The message CRC did not match.
    #[error("event-stream message CRC mismatch (expected {expected:08x}, got {actual:08x})")]
    MessageCrc {
        /// CRC in the frame.
        expected: u32,
        /// CRC computed.
        actual: u32,
    },
    /// Lengths in the prelude are impossible.
    #[error("event-stream frame has invalid lengths (total {total}, headers {headers})")]
    Length {
        /// Total length field.
        total: usize,
        /// Headers length field.
        headers: usize,
    },
    /// A header could not be read.
    #[error("event-stream header is malformed: {0}")]
    Header(String),
}

/// Accumulates bytes and yields whole messages.
#[derive(Debug, Default)]
pub struct EventStreamDecoder {
    buffer: BytesMut,
}

impl EventStreamDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// Bytes received but not yet part of a whole message.
    pub fn buffered(&self) -> usize {
        self.buffer.len()
    }

    /// The next whole message, `Ok(None)` when more bytes are needed.
    pub fn next_message(&mut self) -> Result<Option<EventMessage>, FrameError> {
        self.next_raw()?.map(RawMessage::decode).transpose()
    }

    /// The next whole, CRC-checked message with its headers still encoded (read them in
    /// place with [`RawMessage::string_header`]); `Ok(None)` when more bytes are needed.
    pub fn next_raw(&mut self) -> Result<Option<RawMessage>, FrameError> {
        if self.buffer.len() < 12 {
            return Ok(None);
        }
        let total = read_u32(&self.buffer[0..4]) as usize;
        let headers_len = read_u32(&self.buffer[4..8]) as usize;
        let prelude_crc = read_u32(&self.buffer[8..12]);
        let actual = crc32fast::hash(&self.buffer[0..8]);
        if actual != prelude_crc {
            return Err(FrameError::PreludeCrc {
                expected: prelude_crc,
                actual,
            });
        }
        if !(OVERHEAD..=MAX_MESSAGE).contains(&total) || headers_len > total - OVERHEAD {
            return Err(FrameError::Length {
                total,
                headers: headers_len,
            });
        }
        if self.buffer.len() < total {
            return Ok(None);
        }
        let frame = self.buffer.split_to(total);
        let message_crc = read_u32(&frame[total - 4..]);
        let actual = crc32fast::hash(&frame[..total - 4]);
        if actual != message_crc {
            return Err(FrameError::MessageCrc {
                expected: message_crc,
                actual,
            });
        }
        Ok(Some(RawMessage { frame, headers_len }))
    }
}

/// A whole, CRC-checked message whose headers are read in place, without allocating.
#[derive(Debug, Clone)]
pub struct RawMessage {
    frame: BytesMut,
    headers_len: usize,
}

impl RawMessage {
    fn headers(&self) -> &[u8] {
        &self.frame[12..12 + self.headers_len]
    }

    /// The payload bytes.
    pub fn payload(&self) -> &[u8] {
        &self.frame[12 + self.headers_len..self.frame.len() - 4]
    }

    /// The value of the string header `name`, if present; a malformed header section is an
    /// error even when `name` comes before the damage.
    pub fn string_header(&self, name: &str) -> Result<Option<&str>, FrameError> {
        let short = || FrameError::Header("header runs past its section".into());
        let mut b = self.headers();
        let mut found = None;
        while !b.is_empty() {
            let name_len = usize::from(b[0]);
            let (this, rest) = b[1..].split_at_checked(name_len).ok_or_else(short)?;
            let (&kind, rest) = rest.split_first().ok_or_else(short)?;
            let (value, rest) = match kind {
                0 | 1 => (None, rest),
                2 => (None, rest.get(1..).ok_or_else(short)?),
                3 => (None, rest.get(2..).ok_or_else(short)?),
                4 => (None, rest.get(4..).ok_or_else(short)?),
                5 | 8 => (None, rest.get(8..).ok_or_else(short)?),
                9 => (None, rest.get(16..).ok_or_else(short)?),
                6 | 7 => {
                    let len = rest.get(..2).ok_or_else(short)?;
                    let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
                    let (value, rest) = rest[2..].split_at_checked(len).ok_or_else(short)?;
                    ((kind == 7).then_some(value), rest)
                }
                other => {
                    return Err(FrameError::Header(format!(
                        "header `{}` has unknown type {other}",
                        String::from_utf8_lossy(this)
                    )));
                }
            };
            if found.is_none() && this == name.as_bytes() {
                found = value;
            }
            b = rest;
        }
        found
            .map(|v| {
                std::str::from_utf8(v)
                    .map_err(|_| FrameError::Header(format!("header `{name}` is not UTF-8")))
            })
            .transpose()
    }

    /// The message with every header decoded.
    pub fn decode(self) -> Result<EventMessage, FrameError> {
        let headers = parse_headers(self.headers())?;
        let payload = self.payload().to_vec();
        Ok(EventMessage { headers, payload })
    }
}

fn read_u32(b: &[u8]) -> u32 {
    let mut buf = b;
    buf.get_u32()
}

fn parse_headers(mut b: &[u8]) -> Result<BTreeMap<String, HeaderValue>, FrameError> {
    let short = || FrameError::Header("header runs past its section".into());
    let mut headers = BTreeMap::new();
    while b.has_remaining() {
        let name_len = usize::from(b.get_u8());
        if b.remaining() < name_len + 1 {
            return Err(short());
        }
        let name = String::from_utf8(b[..name_len].to_vec())
            .map_err(|_| FrameError::Header("header name is not UTF-8".into()))?;
        b.advance(name_len);
        let kind = b.get_u8();
        let need = |b: &[u8], n: usize| {
            if b.remaining() < n {
                Err(short())
            } else {
                Ok(())
            }
        };
        let value =
            match kind {
                0 => HeaderValue::Bool(true),
                1 => HeaderValue::Bool(false),
                2 => {
                    need(b, 1)?;
                    HeaderValue::Int(i64::from(b.get_i8()))
                }
                3 => {
                    need(b, 2)?;
                    HeaderValue::Int(i64::from(b.get_i16()))
                }
                4 => {
                    need(b, 4)?;
                    HeaderValue::Int(i64::from(b.get_i32()))
                }
                5 => {
                    need(b, 8)?;
                    HeaderValue::Int(b.get_i64())
                }
                6 | 7 => {
                    need(b, 2)?;
                    let len = usize::from(b.get_u16());
                    need(b, len)?;
                    let raw = b[..len].to_vec();
                    b.advance(len);
                    if kind == 6 {
                        HeaderValue::Bytes(raw)
                    } else {
                        HeaderValue::String(String::from_utf8(raw).map_err(|_| {
                            FrameError::Header(format!("header `{name}` is not UTF-8"))
                        })?)
                    }
                }
                8 => {
                    need(b, 8)?;
                    HeaderValue::Timestamp(b.get_i64())
                }
                9 => {
                    need(b, 16)?;
                    let mut uuid = [0u8; 16];
                    b.copy_to_slice(&mut uuid);
                    HeaderValue::Uuid(uuid)
                }
                other => {
                    return Err(FrameError::Header(format!(
                        "header `{name}` has unknown type {other}"
                    )));
                }
            };
        headers.insert(name, value);
    }
    Ok(headers)
}

/// Encodes a message with string headers (for fixtures, tests and local servers).
pub fn encode_message(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut header_bytes = Vec::new();
    for (name, value) in headers {
        let name = &name.as_bytes()[..name.len().min(255)];
        let value = &value.as_bytes()[..value.len().min(usize::from(u16::MAX))];
        header_bytes.push(name.len() as u8);
        header_bytes.extend_from_slice(name);
        header_bytes.push(7);
        header_bytes.extend_from_slice(&(value.len() as u16).to_be_bytes());
        header_bytes.extend_from_slice(value);
    }
    let total = (OVERHEAD + header_bytes.len() + payload.len()) as u32;
    let mut out = Vec::with_capacity(total as usize);
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&(header_bytes.len() as u32).to_be_bytes());
    let prelude_crc = crc32fast::hash(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&header_bytes);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn sample() -> Vec<u8> {
        let mut bytes = encode_message(
            &[
                (":event-type", "contentBlockDelta"),
                (":message-type", "event"),
            ],
            br#"{"delta":{"text":"h\u00e9"}}"#,
        );
        bytes.extend(encode_message(&[(":event-type", "messageStop")], b"{}"));
        bytes
    }

    #[test]
    fn decodes_frames_split_at_every_offset() {
        let bytes = sample();
        for split in 0..bytes.len() {
            let mut d = EventStreamDecoder::new();
            let mut got = Vec::new();
            d.push(&bytes[..split]);
            while let Some(m) = d.next_message().unwrap() {
                got.push(m);
            }
            d.push(&bytes[split..]);
            while let Some(m) = d.next_message().unwrap() {
                got.push(m);
            }
            assert_eq!(got.len(), 2, "split at {split}");
            assert_eq!(got[0].header(":event-type"), Some("contentBlockDelta"));
            assert_eq!(got[1].payload, b"{}");
            assert_eq!(d.buffered(), 0);
        }
    }

    #[test]
    fn corrupt_crc_is_an_error() {
        let mut bytes = sample();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        let mut d = EventStreamDecoder::new();
        d.push(&bytes);
        assert!(d.next_message().unwrap().is_some());
        assert!(matches!(
            d.next_message(),
            Err(FrameError::MessageCrc { .. })
        ));
        let mut d = EventStreamDecoder::new();
        let mut bad = sample();
        bad[8] ^= 1;
        d.push(&bad);
        assert!(matches!(
            d.next_message(),
            Err(FrameError::PreludeCrc { .. })
        ));
    }

    #[test]
    fn headers_read_in_place_match_the_decoded_ones() {
        let bytes = encode_message(
            &[
                (":event-type", "contentBlockDelta"),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            b"{}",
        );
        let mut d = EventStreamDecoder::new();
        d.push(&bytes);
        let raw = d.next_raw().unwrap().unwrap();
        assert_eq!(
            raw.string_header(":event-type").unwrap(),
            Some("contentBlockDelta")
        );
        assert_eq!(raw.string_header(":message-type").unwrap(), Some("event"));
        assert_eq!(raw.string_header(":exception-type").unwrap(), None);
        assert_eq!(raw.payload(), b"{}");
        let decoded = raw.decode().unwrap();
        assert_eq!(decoded.header(":content-type"), Some("application/json"));
    }

    #[test]
    fn typed_headers_decode() {
        // :flag bool-true, n int32 = 7, then a string.
        let mut headers = Vec::new();
        headers.extend([5, b':', b'f', b'l', b'a', b'g', 0]);
        headers.extend([1, b'n', 4, 0, 0, 0, 7]);
        let parsed = parse_headers(&headers).unwrap();
        assert_eq!(parsed.get(":flag"), Some(&HeaderValue::Bool(true)));
        assert_eq!(parsed.get("n"), Some(&HeaderValue::Int(7)));
        assert!(parse_headers(&[3, b'a']).is_err());
    }
}
