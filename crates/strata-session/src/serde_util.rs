//! Serde helpers that keep JSON as Pi wrote it.

use serde::{Deserialize, Deserializer, Serializer};

/// Deserializes a present field as `Some`, even when it is `null`, so `null` survives re-serialization.
pub(crate) fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// Deserializes a list without spare capacity: a block is a few hundred bytes, a list of one or
/// two would otherwise reserve four, and an open session holds thousands of lists.
pub(crate) fn exact_vec<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let mut list = Vec::<T>::deserialize(deserializer)?;
    list.shrink_to_fit();
    Ok(list)
}

/// Serializes an `f64` as JavaScript's `JSON.stringify` does: whole numbers without a fraction.
pub(crate) fn js_number<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.fract() == 0.0 && value.abs() < 9_007_199_254_740_992.0 {
        serializer.serialize_i64(*value as i64)
    } else {
        serializer.serialize_f64(*value)
    }
}

/// Implements `Deserialize` for an enum tagged by one string field, with an `Unknown(Map)` fallback
/// that keeps any other tag (or a missing one) as raw JSON.
///
/// Pi and strata write the tag first (`{"type":"text","text":…}`): then the rest of the object
/// is read straight into the variant's type, with no JSON tree built in between (a message's
/// blocks are most of a session's bytes). Any other layout, an unknown tag, or a second copy of
/// the tag further on (the last one decides, as in `JSON.parse`) takes the general path: the
/// whole object as a map, dispatched on the tag it holds.
macro_rules! tagged_deserialize {
    ($name:ident, $tag:literal, { $($value:literal => $variant:ident($ty:ty)),* $(,)? }) => {
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct TaggedVisitor;

                impl<'de> serde::de::Visitor<'de> for TaggedVisitor {
                    type Value = $name;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        write!(f, "an object tagged by `{}`", $tag)
                    }

                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut access: A,
                    ) -> Result<$name, A::Error> {
                        use serde::de::Error as _;
                        let mut map = serde_json::Map::<String, serde_json::Value>::new();
                        if let Some(first) = access.next_key::<std::borrow::Cow<'de, str>>()? {
                            let value: serde_json::Value = access.next_value()?;
                            if first == $tag
                                && let serde_json::Value::String(tag) = &value
                            {
                                match tag.as_str() {
                                    $($value => {
                                        let parsed = <$ty as serde::Deserialize>::deserialize(
                                            serde::de::value::MapAccessDeserializer::new(access),
                                        )?;
                                        if !parsed.extra.contains_key($tag) {
                                            return Ok($name::$variant(parsed));
                                        }
                                        // A second tag: rebuild the object and dispatch on it.
                                        let serde_json::Value::Object(rest) =
                                            serde_json::to_value(&parsed).map_err(A::Error::custom)?
                                        else {
                                            return Err(A::Error::custom("block is not an object"));
                                        };
                                        map.insert(first.into_owned(), value);
                                        map.extend(rest);
                                        return $name::from_tagged_map(map).map_err(A::Error::custom);
                                    })*
                                    _ => {}
                                }
                            }
                            map.insert(first.into_owned(), value);
                            while let Some((key, value)) =
                                access.next_entry::<String, serde_json::Value>()?
                            {
                                map.insert(key, value);
                            }
                        }
                        $name::from_tagged_map(map).map_err(A::Error::custom)
                    }
                }

                deserializer.deserialize_map(TaggedVisitor)
            }
        }

        impl $name {
            /// The general path: the whole object as a map, dispatched on its tag.
            fn from_tagged_map(
                mut map: serde_json::Map<String, serde_json::Value>,
            ) -> Result<Self, serde_json::Error> {
                let tag = match map.get($tag) {
                    Some(serde_json::Value::String(tag)) => tag.as_str(),
                    _ => return Ok(Self::Unknown(map)),
                };
                match tag {
                    $($value => {
                        map.shift_remove($tag);
                        serde_json::from_value::<$ty>(serde_json::Value::Object(map))
                            .map(Self::$variant)
                    })*
                    _ => Ok(Self::Unknown(map)),
                }
            }
        }
    };
}
pub(crate) use tagged_deserialize;
