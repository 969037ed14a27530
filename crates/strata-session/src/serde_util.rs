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

/// An object key, borrowed from the input where it can be (a key without escapes): matching a
/// key to a field then allocates nothing. `Cow<str>` itself always copies.
pub(crate) struct FieldKey<'de>(pub(crate) std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for FieldKey<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;

        impl<'de> serde::de::Visitor<'de> for KeyVisitor {
            type Value = FieldKey<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object key")
            }

            fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Self::Value, E> {
                Ok(FieldKey(std::borrow::Cow::Borrowed(key)))
            }

            fn visit_str<E>(self, key: &str) -> Result<Self::Value, E> {
                Ok(FieldKey(std::borrow::Cow::Owned(key.to_owned())))
            }

            fn visit_string<E>(self, key: String) -> Result<Self::Value, E> {
                Ok(FieldKey(std::borrow::Cow::Owned(key)))
            }
        }

        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Implements `Deserialize` for a struct of named fields plus `extra`, the map of every other
/// key, in one pass over the object. `#[serde(flatten)]` on `extra` would first copy the whole
/// object into serde's buffer and read the struct out of that: for message lines, which are
/// most of a session's bytes, that copy was the larger part of parsing.
///
/// Each field is `name: Type = "key"` and then `required` (missing is an error), `default`
/// (missing is `Default::default()`) or `default with path` (as `default`, read through
/// `path`, a `deserialize_with` function). A key given twice takes its last value, as
/// `JSON.parse` does.
macro_rules! fields_deserialize {
    ($name:ident { $($field:ident: $ty:ty = $key:literal $rule:ident $(with $with:path)?),* $(,)? }) => {
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct FieldsVisitor;

                impl<'de> serde::de::Visitor<'de> for FieldsVisitor {
                    type Value = $name;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("struct ", stringify!($name)))
                    }

                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut access: A,
                    ) -> Result<$name, A::Error> {
                        $(let mut $field: Option<$ty> = None;)*
                        let mut extra = serde_json::Map::new();
                        while let Some($crate::serde_util::FieldKey(key)) = access.next_key()? {
                            match &*key {
                                $($key => {
                                    $field = Some($crate::serde_util::fields_deserialize!(
                                        @value access $ty $(, $with)?
                                    ));
                                })*
                                _ => {
                                    let value: serde_json::Value = access.next_value()?;
                                    extra.insert(key.into_owned(), value);
                                }
                            }
                        }
                        Ok($name {
                            $($field: $crate::serde_util::fields_deserialize!(
                                @finish $field $key $rule
                            ),)*
                            extra,
                        })
                    }
                }

                deserializer.deserialize_map(FieldsVisitor)
            }
        }

        impl $crate::shape::HasFields for $name {
            const FIELDS: &'static [$crate::shape::Field] = &[$($crate::shape::Field {
                key: $key,
                kind: &<$ty as $crate::shape::Shaped>::KIND,
                required: $crate::serde_util::fields_deserialize!(@required $rule),
            }),*];
        }

        impl $crate::shape::Shaped for $name {
            const KIND: $crate::shape::Kind = $crate::shape::Kind::Fields {
                fields: <$name as $crate::shape::HasFields>::FIELDS,
            };
        }

        const _: () = assert!([$($key),*].len() <= $crate::shape::MAX_FIELDS);
    };
    (@required required) => { true };
    (@required default) => { false };
    (@value $access:ident $ty:ty) => { $access.next_value::<$ty>()? };
    (@value $access:ident $ty:ty, $with:path) => {{
        struct With($ty);

        impl<'a> serde::Deserialize<'a> for With {
            fn deserialize<D: serde::Deserializer<'a>>(deserializer: D) -> Result<Self, D::Error> {
                $with(deserializer).map(With)
            }
        }

        $access.next_value::<With>()?.0
    }};
    (@finish $field:ident $key:literal required) => {
        $field.ok_or_else(|| <A::Error as serde::de::Error>::missing_field($key))?
    };
    (@finish $field:ident $key:literal default) => { $field.unwrap_or_default() };
}
pub(crate) use fields_deserialize;

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
///
/// `checked` before the variants also gives the enum's [`crate::shape::Kind`] (each variant's
/// type a [`fields_deserialize!`] struct): the layout above with a known tag is checked as that
/// variant's fields, an unknown tag takes any fields; any other layout is refused (the caller
/// parses it).
macro_rules! tagged_deserialize {
    ($name:ident, $tag:literal, checked { $($value:literal => $variant:ident($ty:ty)),* $(,)? }) => {
        $crate::serde_util::tagged_deserialize!($name, $tag, { $($value => $variant($ty)),* });

        impl $crate::shape::Shaped for $name {
            const KIND: $crate::shape::Kind = $crate::shape::Kind::Tagged {
                tag: $tag,
                variants: &[$(($value, <$ty as $crate::shape::HasFields>::FIELDS)),*],
            };
        }
    };
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
                        if let Some($crate::serde_util::FieldKey(first)) = access.next_key()? {
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
