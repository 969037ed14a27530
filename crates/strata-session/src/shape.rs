//! The shapes typed reads accept, as data: what [`crate::fast::canonical`] checks a message's JSON
//! against, so that a message kept as its line's JSON ([`crate::LazyMessage`]) is one the
//! typed read would have kept. The tables come from the same macro invocations as the
//! `Deserialize` impls (`fields_deserialize!`, `tagged_deserialize!`), field for field.

/// The JSON a type's `Deserialize` accepts (from canonical JSON, which has no repeated keys
/// and no exponents).
#[derive(Debug)]
pub(crate) enum Kind {
    /// Any JSON (`serde_json::Value`).
    Any,
    /// A string (`String`, `StopReason`).
    Str,
    /// An integer (`i64`: canonical numbers have at most 15 digits, so always in range).
    Int,
    /// A non-negative integer (`u64`).
    UInt,
    /// Any number (`f64`).
    Float,
    /// `true` or `false`.
    Bool,
    /// `null` or `inner` (`Option<T>`).
    Nullable { inner: &'static Kind },
    /// A list of `item` (`Vec<T>`).
    List { item: &'static Kind },
    /// A string or a list of `item` (`MessageContent`).
    TextOrList { item: &'static Kind },
    /// An object with these fields; any other key takes any value (`fields_deserialize!`).
    Fields { fields: &'static [Field] },
    /// An object whose first key is `tag`, a string: a known one's fields follow, an unknown
    /// one's anything (`tagged_deserialize!` with `checked`). Other layouts are refused.
    Tagged {
        tag: &'static str,
        variants: &'static [(&'static str, &'static [Field])],
    },
}

/// One field of a [`Kind::Fields`] object.
#[derive(Debug)]
pub(crate) struct Field {
    pub key: &'static str,
    pub kind: &'static Kind,
    /// A missing required field fails the read.
    pub required: bool,
}

/// A `fields_deserialize!` struct's fields, which a tagged enum's variants are made of.
pub(crate) trait HasFields {
    const FIELDS: &'static [Field];
}

/// A type whose accepted JSON is known as a [`Kind`].
pub(crate) trait Shaped {
    const KIND: Kind;
}

/// At most this many fields: a check notes the fields it saw in one 64-bit word.
pub(crate) const MAX_FIELDS: usize = 64;

macro_rules! shaped {
    ($($ty:ty => $kind:expr),* $(,)?) => {
        $(impl Shaped for $ty {
            const KIND: Kind = $kind;
        })*
    };
}
shaped!(
    serde_json::Value => Kind::Any,
    String => Kind::Str,
    i64 => Kind::Int,
    u64 => Kind::UInt,
    f64 => Kind::Float,
    bool => Kind::Bool,
);

impl<T: Shaped> Shaped for Option<T> {
    const KIND: Kind = Kind::Nullable { inner: &T::KIND };
}

impl<T: Shaped> Shaped for Vec<T> {
    const KIND: Kind = Kind::List { item: &T::KIND };
}
