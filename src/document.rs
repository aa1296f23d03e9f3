//! A line of a file parsed in Rust (serde_json, insertion order kept), read through the same
//! `Node` view as Python objects, so `vthread scan FILE` makes no Python object for a message.
//!
//! serde_json is the fast path, not the judge: every line it refuses (a lone surrogate
//! escape, `NaN`, a number out of a double's range, nesting over 128 levels, invalid UTF-8)
//! goes back to Python's `json` module, which the CLI's contract names, so a refusal costs
//! time and never changes an answer. Where serde_json accepts a line, it reads it as `json`
//! does: duplicate keys keep the first position and the last value, integers under 19 digits
//! are exact, other numbers are correctly rounded doubles (feature `float_roundtrip`).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyString;
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::canonical::{self, Member};
use crate::node::{Key, Node, SEED_OTHER, SEED_UTF8};

/// Append a parsed value's canonical encoding.
pub fn push_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(flag) => out.extend_from_slice(if *flag { b"true" } else { b"false" }),
        Value::Number(number) => {
            if let Some(small) = number.as_i64() {
                canonical::push_i64(out, small);
            } else if let Some(large) = number.as_u64() {
                canonical::push_double(out, large as f64); // rounds to nearest, ties even
            } else {
                canonical::push_double(out, number.as_f64().unwrap_or(f64::NAN));
            }
        }
        Value::String(text) => canonical::push_str(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (position, item) in items.iter().enumerate() {
                if position > 0 {
                    out.push(b',');
                }
                push_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            if map
                .keys()
                .any(|key| canonical::array_index(key.as_bytes()).is_some())
            {
                let members = map
                    .iter()
                    .map(|(key, item)| {
                        let mut text = Vec::new();
                        canonical::push_str(&mut text, key);
                        let mut encoded = Vec::new();
                        push_value(&mut encoded, item);
                        (
                            canonical::array_index(key.as_bytes()),
                            Member {
                                key: text,
                                value: encoded,
                            },
                        )
                    })
                    .collect();
                canonical::push_object(out, members);
            } else {
                out.push(b'{');
                for (position, (key, item)) in map.iter().enumerate() {
                    if position > 0 {
                        out.push(b',');
                    }
                    canonical::push_str(out, key);
                    out.push(b':');
                    push_value(out, item);
                }
                out.push(b'}');
            }
        }
    }
}

impl Node for &Value {
    fn field(&self, key: Key) -> PyResult<Option<Self>> {
        Ok(match self {
            Value::Object(map) => map.get(key.as_str()),
            _ => None,
        })
    }

    fn is_mapping(&self) -> PyResult<bool> {
        Ok(self.is_object())
    }

    fn is_text(&self, expected: &str) -> bool {
        self.as_str() == Some(expected)
    }

    fn is_nonempty_text(&self) -> bool {
        self.as_str().is_some_and(|text| !text.is_empty())
    }

    fn is_string(&self) -> bool {
        Value::is_string(self)
    }

    fn starts_with_underscore(&self) -> bool {
        self.as_str().is_some_and(|text| text.starts_with('_'))
    }

    fn push_canonical(&self, out: &mut Vec<u8>) -> PyResult<()> {
        push_value(out, self);
        Ok(())
    }

    fn screen(&self, scratch: &mut Vec<u8>) -> PyResult<u64> {
        // A parsed string has one representation (UTF-8, no lone surrogates), so its bytes
        // screen it; screens are compared only within one thread of one input.
        if let Value::String(text) = self {
            return Ok(xxh3_64_with_seed(text.as_bytes(), SEED_UTF8));
        }
        scratch.clear();
        push_value(scratch, self);
        Ok(xxh3_64_with_seed(scratch, SEED_OTHER))
    }

    fn to_python(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self {
            Value::String(text) => Ok(PyString::new(py, text).into_any().unbind()),
            _ => Err(PyTypeError::new_err("only texts are handed back to Python")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical_of(text: &str) -> String {
        let value: Value = serde_json::from_str(text).unwrap();
        let mut out = Vec::new();
        push_value(&mut out, &value);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn parsed_values_encode_canonically() {
        assert_eq!(canonical_of(r#"{"b":1,"1":2.0}"#), r#"{"1":2,"b":1}"#);
        assert_eq!(
            canonical_of(r#"[1.0,-0.0,1e16,0.1,"é🎉"]"#),
            r#"[1,0,1e+16,0.1,"\u00e9\ud83c\udf89"]"#
        );
        assert_eq!(canonical_of(r#"{"a":1,"b":2,"a":3}"#), r#"{"a":3,"b":2}"#);
        assert_eq!(
            canonical_of("18446744073709551615"),
            "1.8446744073709552e+19"
        );
    }

    #[test]
    fn refusals_go_back_to_python() {
        for text in [r#""\ud800""#, "NaN", "1e400", "[1,]"] {
            assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
        }
    }
}
