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
macro_rules! tagged_deserialize {
    ($name:ident, $tag:literal, { $($value:literal => $variant:ident($ty:ty)),* $(,)? }) => {
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                use serde::de::Error as _;
                let mut map = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
                let tag = match map.get($tag) {
                    Some(serde_json::Value::String(tag)) => tag.as_str(),
                    _ => return Ok(Self::Unknown(map)),
                };
                match tag {
                    $($value => {
                        map.shift_remove($tag);
                        serde_json::from_value::<$ty>(serde_json::Value::Object(map))
                            .map(Self::$variant)
                            .map_err(D::Error::custom)
                    })*
                    _ => Ok(Self::Unknown(map)),
                }
            }
        }
    };
}
pub(crate) use tagged_deserialize;
