//! Decoding a call's JSON arguments into a tool's argument struct.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tool::ToolOutput;

/// Decodes `arguments` into `T`; on failure, an error result naming the tool and the field.
pub(crate) fn parse_args<T: DeserializeOwned>(
    tool: &str,
    arguments: &Value,
) -> Result<T, ToolOutput> {
    let arguments = if arguments.is_null() {
        &Value::Object(serde_json::Map::new())
    } else {
        arguments
    };
    serde_path_to_error::deserialize(arguments).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let message = if path == "." {
            format!("Invalid arguments for {tool}: {inner}")
        } else {
            format!("Invalid arguments for {tool}: field `{path}`: {inner}")
        };
        ToolOutput::error(message)
    })
}

/// The JSON Schema of an argument struct, reduced to what every provider accepts:
/// no `$schema`, no title, subschemas inlined, `Option` not spelled as a null type,
/// no integer/number `format` annotations, no `"default": null`.
pub(crate) fn schema_for<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.meta_schema = None;
            settings.inline_subschemas = true;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut value {
        map.remove("title");
        map.remove("description");
    }
    simplify(&mut value);
    value
}

fn simplify(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get("type") {
                let non_null: Vec<Value> = types
                    .iter()
                    .filter(|t| t.as_str() != Some("null"))
                    .cloned()
                    .collect();
                if non_null.len() == 1 {
                    map.insert(
                        "type".to_owned(),
                        non_null.into_iter().next().unwrap_or(Value::Null),
                    );
                }
            }
            let numeric = matches!(
                map.get("type").and_then(Value::as_str),
                Some("integer" | "number")
            );
            if numeric {
                map.remove("format");
            }
            // `#[serde(default)]` on an `Option` says nothing the `required` list does not.
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            for child in map.values_mut() {
                simplify(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(simplify),
        _ => {}
    }
}

/// Serde helpers that accept what models actually send: `10`, `10.0` and `"10"` for a count,
/// `true` and `"true"` for a flag.
pub(crate) mod lenient {
    use serde::{Deserialize, Deserializer, de::Error};
    use serde_json::Value;

    /// An optional non-negative whole number.
    pub(crate) fn opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        let value = Option::<Value>::deserialize(d)?;
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => number_to_u64(&n).map(Some).ok_or_else(|| {
                D::Error::custom(format!("expected a non-negative whole number, got {n}"))
            }),
            Some(Value::String(s)) => s.trim().parse::<u64>().map(Some).map_err(|_| {
                D::Error::custom(format!("expected a non-negative whole number, got \"{s}\""))
            }),
            Some(other) => Err(D::Error::custom(format!(
                "expected a non-negative whole number, got {other}"
            ))),
        }
    }

    fn number_to_u64(n: &serde_json::Number) -> Option<u64> {
        if let Some(u) = n.as_u64() {
            return Some(u);
        }
        let f = n.as_f64()?;
        (f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64).then_some(f as u64)
    }

    /// An optional non-negative number (seconds).
    pub(crate) fn opt_f64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        let value = Option::<Value>::deserialize(d)?;
        let parsed = match value {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
            Some(_) => None,
        };
        match parsed {
            Some(f) if f.is_finite() && f >= 0.0 => Ok(Some(f)),
            _ => Err(D::Error::custom("expected a non-negative number")),
        }
    }

    /// An optional flag.
    pub(crate) fn opt_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
        let value = Option::<Value>::deserialize(d)?;
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(other) => Err(D::Error::custom(format!(
                "expected true or false, got {other}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    struct Args {
        #[expect(dead_code, reason = "decoded to check the error path only")]
        path: String,
        #[serde(default, deserialize_with = "lenient::opt_u64")]
        limit: Option<u64>,
    }

    #[test]
    fn missing_field_is_named() {
        let err = parse_args::<Args>("read", &json!({})).unwrap_err();
        assert!(err.is_error);
        assert!(
            err.text_content().contains("`path`"),
            "{}",
            err.text_content()
        );
    }

    #[test]
    fn wrong_type_names_the_field_path() {
        let err = parse_args::<Args>("read", &json!({"path": 3})).unwrap_err();
        assert!(
            err.text_content().contains("field `path`"),
            "{}",
            err.text_content()
        );
        let err = parse_args::<Args>("read", &json!({"path": "a", "limit": -1})).unwrap_err();
        assert!(
            err.text_content().contains("field `limit`"),
            "{}",
            err.text_content()
        );
    }

    #[test]
    fn numbers_are_accepted_in_the_shapes_models_send() {
        for v in [json!(10), json!(10.0), json!("10")] {
            let args: Args = parse_args("read", &json!({"path": "a", "limit": v})).unwrap();
            assert_eq!(args.limit, Some(10));
        }
    }
}
