//! Entry ids and their generation.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The id of a session entry: 8 hex characters in files written by Pi or strata, any string in others.
///
/// Short ids (up to 14 bytes, which covers the 8-hex ids Pi and strata draw) are stored inline in
/// 16 bytes, so a tree of 100,000 entries allocates nothing per id.
#[derive(Clone)]
pub struct EntryId(Repr);

const INLINE: usize = 14;

#[derive(Clone)]
enum Repr {
    Inline {
        len: u8,
        bytes: [u8; INLINE],
    },
    /// A thin pointer keeps the whole id at 16 bytes.
    Shared(Arc<String>),
}

impl EntryId {
    /// Wraps a string as an entry id.
    #[inline]
    pub fn new(id: impl AsRef<str>) -> Self {
        let id = id.as_ref();
        if id.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..id.len()].copy_from_slice(id.as_bytes());
            Self(Repr::Inline {
                len: id.len() as u8,
                bytes,
            })
        } else {
            Self(Repr::Shared(Arc::new(id.to_owned())))
        }
    }

    /// An id of `len` bytes stored in place, as an index record keeps it: `None` unless the
    /// bytes past `len` are zero and the id is UTF-8.
    #[inline]
    pub(crate) fn from_padded(len: u8, bytes: &[u8; INLINE]) -> Option<Self> {
        let used = usize::from(len);
        if used > INLINE {
            return None;
        }
        let mut wide = [0u8; 16];
        wide[..INLINE].copy_from_slice(bytes);
        let word = u128::from_le_bytes(wide);
        // Nothing past the id (as `new` pads it), and all of it ASCII or else valid UTF-8.
        let padding_clear = used == INLINE || word >> (8 * used) == 0;
        let ascii = word & 0x8080_8080_8080_8080_8080_8080_8080_8080 == 0;
        (padding_clear && (ascii || std::str::from_utf8(&bytes[..used]).is_ok()))
            .then_some(Self(Repr::Inline { len, bytes: *bytes }))
    }

    /// The id's bytes, without the UTF-8 check `as_str` makes (for hashing and comparing).
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Repr::Shared(text) => text.as_bytes(),
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            // The bytes were copied from a `str`, so they are valid UTF-8.
            Repr::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            Repr::Shared(text) => text,
        }
    }
}

impl PartialEq for EntryId {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            // Inline bytes past the length are always zero (`new` pads them), so two short
            // ids are equal when their whole 15 bytes are: two word compares, no `memcmp`
            // call (a search along a long path makes a hundred thousand of them).
            (
                Repr::Inline { len, bytes },
                Repr::Inline {
                    len: other_len,
                    bytes: other_bytes,
                },
            ) => len == other_len && bytes == other_bytes,
            // No UTF-8 check per comparison: the bytes are the text's.
            _ => self.as_bytes() == other.as_bytes(),
        }
    }
}

impl Eq for EntryId {}

impl std::hash::Hash for EntryId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Must hash as `str` does, for lookups by `&str` through `Borrow<str>`.
        self.as_str().hash(state);
    }
}

impl PartialOrd for EntryId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for EntryId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // `str` orders by its bytes.
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl fmt::Debug for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AsRef<str> for EntryId {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for EntryId {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for EntryId {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl From<String> for EntryId {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

impl PartialEq<str> for EntryId {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for EntryId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for EntryId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EntryId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Straight from the parser's text: `Cow<str>` (or `String`) would allocate a copy of
        // every id and parent id first, two a line.
        struct IdVisitor;

        impl serde::de::Visitor<'_> for IdVisitor {
            type Value = EntryId;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an entry id")
            }

            fn visit_str<E: serde::de::Error>(self, id: &str) -> Result<EntryId, E> {
                Ok(EntryId::new(id))
            }
        }

        deserializer.deserialize_str(IdVisitor)
    }
}

/// 64 random bits from the standard library's randomly keyed hasher (seeded by the OS).
pub(crate) fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    if let Ok(elapsed) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        hasher.write_u128(elapsed.as_nanos());
    }
    hasher.finish()
}

/// A random version 4 UUID in its usual text form.
pub(crate) fn uuid_v4() -> String {
    let high = random_u64();
    let low = random_u64();
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&high.to_be_bytes());
    bytes[8..].copy_from_slice(&low.to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    format_uuid(&bytes)
}

/// A version 7 UUID (millisecond clock first, then random bits), as Pi uses for session ids.
pub(crate) fn uuid_v7(unix_millis: u64) -> String {
    let mut bytes = [0u8; 16];
    bytes[..6].copy_from_slice(&unix_millis.to_be_bytes()[2..]);
    let random_high = random_u64().to_be_bytes();
    let random_low = random_u64().to_be_bytes();
    bytes[6..8].copy_from_slice(&random_high[..2]);
    bytes[8..].copy_from_slice(&random_low);
    bytes[6] = (bytes[6] & 0x0f) | 0x70;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    format_uuid(&bytes)
}

fn format_uuid(bytes: &[u8; 16]) -> String {
    let mut out = String::with_capacity(36);
    for (index, byte) in bytes.iter().enumerate() {
        if matches!(index, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// A fresh 8-hex id not yet used, as Pi draws them: up to 100 tries, then a full UUID.
pub(crate) fn fresh_id(taken: impl Fn(&str) -> bool) -> EntryId {
    for _ in 0..100 {
        let candidate = format!("{:08x}", random_u64() as u32);
        if !taken(&candidate) {
            return EntryId::from(candidate);
        }
    }
    EntryId::from(uuid_v4())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_deserialize_from_plain_and_escaped_text_and_refuse_other_types() {
        let id: EntryId = serde_json::from_str(r#""a1b2c3d4""#).unwrap();
        assert_eq!(id.as_str(), "a1b2c3d4");
        let escaped: EntryId =
            serde_json::from_str(r#""a\u0062\"long-enough-to-be-shared""#).unwrap();
        assert_eq!(escaped.as_str(), "ab\"long-enough-to-be-shared");
        let error = serde_json::from_str::<EntryId>("7").unwrap_err();
        assert!(
            error.to_string().contains("expected an entry id"),
            "{error}"
        );
    }

    #[test]
    fn fresh_ids_are_eight_hex_and_avoid_taken_ones() {
        let id = fresh_id(|_| false);
        assert_eq!(id.as_str().len(), 8);
        assert!(id.as_str().chars().all(|c| c.is_ascii_hexdigit()));
        let fallback = fresh_id(|_| true);
        assert_eq!(fallback.as_str().len(), 36);
    }

    #[test]
    fn ids_are_equal_exactly_when_their_text_is() {
        let texts = [
            "",
            "a",
            "ab",
            "a\0",
            "0123456789abc",
            "0123456789abcd",
            "0123456789abce",
            "0123456789abcde",
            "0123456789abcdf",
            "é",
        ];
        for a in texts {
            for b in texts {
                assert_eq!(EntryId::new(a) == EntryId::new(b), a == b, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn padded_ids_are_the_ids_new_makes_and_refuse_stray_bytes() {
        for text in ["", "a", "e12", "0123456789abcd", "é1"] {
            let mut bytes = [0u8; INLINE];
            bytes[..text.len()].copy_from_slice(text.as_bytes());
            let id = EntryId::from_padded(text.len() as u8, &bytes).expect("an id");
            assert_eq!(id, EntryId::new(text));
            assert_eq!(id.as_str(), text);
        }
        let mut stray = [0u8; INLINE];
        stray[..3].copy_from_slice(b"abc");
        stray[5] = b'x';
        assert!(
            EntryId::from_padded(3, &stray).is_none(),
            "a byte past the id"
        );
        assert!(
            EntryId::from_padded(15, &[b'a'; INLINE]).is_none(),
            "too long"
        );
        let mut invalid = [0u8; INLINE];
        invalid[0] = 0xff;
        assert!(EntryId::from_padded(1, &invalid).is_none(), "not UTF-8");
    }

    #[test]
    fn ids_take_sixteen_bytes() {
        assert_eq!(std::mem::size_of::<EntryId>(), 16);
        assert_eq!(EntryId::new("0123456789abcd").as_str(), "0123456789abcd");
        assert_eq!(EntryId::new("0123456789abcde").as_str(), "0123456789abcde");
    }

    #[test]
    fn short_and_long_ids_compare_and_hash_as_their_text() {
        use std::collections::HashMap;
        let long = "0190a000-0000-7000-8000-000000000001";
        let mut map = HashMap::new();
        map.insert(EntryId::new("ab12cd34"), 1);
        map.insert(EntryId::new(long), 2);
        assert_eq!(map.get("ab12cd34"), Some(&1));
        assert_eq!(map.get(long), Some(&2));
        assert_eq!(EntryId::new(long).as_str(), long);
        assert_eq!(EntryId::new("").as_str(), "");
        assert!(EntryId::new("0") < EntryId::new(long));
    }

    #[test]
    fn uuids_have_their_version_nibble() {
        assert_eq!(&uuid_v4()[14..15], "4");
        let v7 = uuid_v7(0x0190_a000_0000);
        assert!(v7.starts_with("0190a000-0000-7"), "{v7}");
    }
}

/// A fast hasher for entry ids (short random hex strings). Session files are the user's own, so
/// flooding resistance buys nothing here, while SipHash costs a noticeable share of opening a
/// large file.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl IdHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for IdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}
