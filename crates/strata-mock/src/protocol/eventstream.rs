//! AWS event-stream framing (`application/vnd.amazon.eventstream`): a prelude with lengths
//! and a CRC32, typed headers, the payload, and a CRC32 of the whole message.

use bytes::{BufMut, Bytes, BytesMut};

/// Header value type 7: a UTF-8 string.
const STRING_TYPE: u8 = 7;

/// Encodes one message with string headers.
pub fn encode(headers: &[(&str, &str)], payload: &[u8]) -> Bytes {
    let mut header_bytes = BytesMut::new();
    for (name, value) in headers {
        header_bytes.put_u8(u8::try_from(name.len()).unwrap_or(u8::MAX));
        header_bytes.put_slice(&name.as_bytes()[..name.len().min(255)]);
        header_bytes.put_u8(STRING_TYPE);
        header_bytes.put_u16(u16::try_from(value.len()).unwrap_or(u16::MAX));
        header_bytes.put_slice(&value.as_bytes()[..value.len().min(usize::from(u16::MAX))]);
    }
    let total = 12 + header_bytes.len() + payload.len() + 4;
    let mut out = BytesMut::with_capacity(total);
    out.put_u32(u32::try_from(total).unwrap_or(u32::MAX));
    out.put_u32(u32::try_from(header_bytes.len()).unwrap_or(u32::MAX));
    let prelude_crc = crc32fast::hash(&out[..8]);
    out.put_u32(prelude_crc);
    out.put_slice(&header_bytes);
    out.put_slice(payload);
    let message_crc = crc32fast::hash(&out);
    out.put_u32(message_crc);
    out.freeze()
}

/// An event message (`:message-type event`) with a JSON payload.
pub fn event(event_type: &str, payload: &serde_json::Value) -> Bytes {
    encode(
        &[
            (":event-type", event_type),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// An exception message (`:message-type exception`).
pub fn exception(exception_type: &str, message: &str) -> Bytes {
    encode(
        &[
            (":exception-type", exception_type),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        serde_json::json!({"message": message})
            .to_string()
            .as_bytes(),
    )
}

/// A decoded message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// String headers, in order.
    pub headers: Vec<(String, String)>,
    /// The payload.
    pub payload: Vec<u8>,
}

/// A frame that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The prelude CRC does not match.
    #[error("prelude CRC mismatch")]
    PreludeCrc,
    /// The message CRC does not match.
    #[error("message CRC mismatch")]
    MessageCrc,
    /// Lengths or header encoding are inconsistent.
    #[error("malformed frame: {0}")]
    Malformed(&'static str),
}

/// Decodes one message from the front of `buf`; `Ok(None)` when more bytes are needed.
/// Returns the message and how many bytes it used.
pub fn decode(buf: &[u8]) -> Result<Option<(Message, usize)>, DecodeError> {
    if buf.len() < 12 {
        return Ok(None);
    }
    let be32 = |at: usize| u32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
    let total = be32(0) as usize;
    let headers_len = be32(4) as usize;
    if total < 16 || headers_len > total - 16 {
        return Err(DecodeError::Malformed("lengths"));
    }
    if crc32fast::hash(&buf[..8]) != be32(8) {
        return Err(DecodeError::PreludeCrc);
    }
    if buf.len() < total {
        return Ok(None);
    }
    if crc32fast::hash(&buf[..total - 4]) != be32(total - 4) {
        return Err(DecodeError::MessageCrc);
    }
    let mut headers = Vec::new();
    let mut at = 12;
    let end = 12 + headers_len;
    while at < end {
        let name_len = usize::from(buf[at]);
        let name = buf
            .get(at + 1..at + 1 + name_len)
            .ok_or(DecodeError::Malformed("header name"))?;
        at += 1 + name_len;
        if buf.get(at) != Some(&STRING_TYPE) {
            return Err(DecodeError::Malformed("header type"));
        }
        let len_bytes = buf
            .get(at + 1..at + 3)
            .ok_or(DecodeError::Malformed("header length"))?;
        let value_len = usize::from(u16::from_be_bytes([len_bytes[0], len_bytes[1]]));
        let value = buf
            .get(at + 3..at + 3 + value_len)
            .ok_or(DecodeError::Malformed("header value"))?;
        at += 3 + value_len;
        headers.push((
            String::from_utf8_lossy(name).into_owned(),
            String::from_utf8_lossy(value).into_owned(),
        ));
    }
    Ok(Some((
        Message {
            headers,
            payload: buf[end..total - 4].to_vec(),
        },
        total,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_bad_crcs_are_caught() {
        let frame = event("messageStart", &serde_json::json!({"role": "assistant"}));
        let (message, used) = decode(&frame).unwrap().unwrap();
        assert_eq!(used, frame.len());
        assert_eq!(
            message.headers[0],
            (":event-type".into(), "messageStart".into())
        );
        assert_eq!(message.payload, br#"{"role":"assistant"}"#);
        assert_eq!(decode(&frame[..frame.len() - 1]).unwrap(), None);
        let mut broken = frame.to_vec();
        let last = broken.len() - 1;
        broken[last] ^= 0xff;
        assert_eq!(decode(&broken), Err(DecodeError::MessageCrc));
    }
}
